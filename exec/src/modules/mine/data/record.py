# Records masterless mine.* answers from salt-call --local 3007.8 into masterless.json.
import json, subprocess
S = ["/tmp/saltvenv/bin/salt-call", "--local", "-c", "/tmp/minerec/root/etc/salt", "--out", "json", "-l", "quiet"]
cases = [
 ("mine.valid", [], {}), ("mine.get", ["rec", "echo_alias"], {}), ("mine.update", [], {}),
 ("mine.get", ["rec", "test.ping"], {}), ("mine.get", ["rec", "echo_alias", "list"], {}),
 ("mine.get", ["rec", ["acl_entry"]], {}), ("mine.get", ["nomatch", "echo_alias"], {}),
 ("mine.get", ["os:Debian", "echo_alias", "grain"], {}),
 ("mine.get", ["G@os:Debian and rec", "echo_alias", "compound"], {}),
 ("mine.send", ["sent_alias", "hi"], {"mine_function": "test.echo"}),
 ("mine.send", ["nosuch.fun"], {}),
 ("mine.get", ["rec", "sent_alias,acl_entry,grains.item"], {}),
 ("mine.delete", ["sent_alias"], {}), ("mine.get", ["rec", "sent_alias"], {}),
 ("mine.get", ["rec", "echo_alias", "bogus"], {}),
 ("mine.flush", [], {}), ("mine.get", ["rec", "echo_alias"], {}),
 ("mine.update", [], {"clear": True, "mine_functions": ["test.false"]}),
 ("mine.get", ["rec", "echo_alias,test.false"], {}),
]
out = []
for fun, args, kw in cases:
    argv = S + [fun] + [a if isinstance(a, str) else json.dumps(a) for a in args] + [f"{k}={json.dumps(v)}" for k, v in kw.items()]
    p = subprocess.run(argv, capture_output=True, text=True)
    case = {"fun": fun, "args": args, "kwargs": kw}
    try:
        case["ret"] = json.loads(p.stdout)["local"]
    except Exception:
        line = [l for l in (p.stdout + p.stderr).splitlines() if "Error" in l or "invalid" in l][-1]
        case["error"] = line.strip()
    out.append(case)
print(json.dumps(out, indent=1))
