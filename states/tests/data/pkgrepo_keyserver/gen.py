"""Record what Salt 3007.8's aptpkg does with signing keys from a keyserver: pkgrepo.managed
with `keyid`/`keyserver` and `aptkey: False` (the key fetched with `gpg --recv-keys` into
the repository line's `signed-by` keyring), pkgrepo.absent with `keyid` (`pkg.del_repo_key`
removing that keyring), and the execution functions `pkg.add_repo_key`,
`pkg.get_repo_keys`, `pkg.del_repo_key` on a key directory of their own.

Regenerate (from the repository root, as root; no network needed):

    /work/saltvenv/bin/python states/tests/data/pkgrepo_keyserver/gen.py

The keyserver is a tiny HKP server on 127.0.0.1 started here, answering
`/pks/lookup?op=get&search=0x<KEYID>` with an armored key made with gpg in a throwaway
GNUPGHOME (any other key id: 404). Salt runs with a throwaway GNUPGHOME too, so root's
~/.gnupg is untouched; its dirmngr is stopped at the end. In cases.json the keyserver's URL
is `@KEYSERVER@`; `key` is the armored key and `keyid` its long id, for the test's own
server. After each step: the sources file's text (`null`: absent), and the names of the
files in /etc/apt/keyrings starting `saltq-rec-ks` and in the exec steps' key directory
(gpg leaves `<keyring>~` backups). The keyrings gpg writes are keybox files, as Salt leaves
them.
"""

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"
LIST = "/etc/apt/sources.list.d/saltq-rec-ks.list"
KEYRINGS = "/etc/apt/keyrings"
KEYDIR = "/tmp/saltq-rec-ks-keys"
LINE = "deb [signed-by=/etc/apt/keyrings/saltq-rec-ks.gpg] file:///tmp/saltq-rec-ks ./"
LINE2 = "deb [signed-by=/etc/apt/keyrings/saltq-rec-ks2.gpg] file:///tmp/saltq-rec-ks2 ./"
UNKNOWN = "0000000012345678"
KS = "@KEYSERVER@"


def steps(keyid):
    base = [{"name": LINE}, {"file": LIST}, {"refresh": False}, {"aptkey": False}]
    base2 = [{"name": LINE2}, {"file": LIST}, {"refresh": False}, {"aptkey": False}]
    kd = {"aptkey": False, "keydir": KEYDIR}
    return [
        ("k01_managed_test", "state", "pkgrepo.managed", base + [{"keyid": keyid}, {"keyserver": KS}], True),
        ("k02_managed", "state", "pkgrepo.managed", base + [{"keyid": keyid}, {"keyserver": KS}], False),
        ("k03_managed_again", "state", "pkgrepo.managed", base + [{"keyid": keyid}, {"keyserver": KS}], False),
        ("k04_keyid_without_keyserver", "state", "pkgrepo.managed", base2 + [{"keyid": keyid}], False),
        ("k05_unknown_key", "state", "pkgrepo.managed", base2 + [{"keyid": UNKNOWN}, {"keyserver": KS}], False),
        ("k06_absent_test", "state", "pkgrepo.absent", [{"name": LINE}, {"keyid": keyid}, {"aptkey": False}], True),
        ("k07_absent", "state", "pkgrepo.absent", [{"name": LINE}, {"keyid": keyid}, {"aptkey": False}], False),
        ("k08_absent_again", "state", "pkgrepo.absent", [{"name": LINE}, {"keyid": keyid}, {"aptkey": False}], False),
        ("k09_add_repo_key", "exec", "pkg.add_repo_key",
         [["keyserver", KS], ["keyid", keyid], ["aptkey", False], ["keydir", KEYDIR], ["keyfile", "ks.gpg"]], False),
        ("k10_add_repo_key_again", "exec", "pkg.add_repo_key",
         [["keyserver", KS], ["keyid", keyid], ["aptkey", False], ["keydir", KEYDIR], ["keyfile", "ks.gpg"]], False),
        ("k11_get_repo_keys", "exec", "pkg.get_repo_keys", list(kd.items()), False),
        ("k12_keyid_without_keyserver", "exec", "pkg.add_repo_key",
         [["keyid", UNKNOWN], ["aptkey", False], ["keydir", KEYDIR]], False),
        ("k13_add_unknown_key", "exec", "pkg.add_repo_key",
         [["keyserver", KS], ["keyid", UNKNOWN], ["aptkey", False], ["keydir", KEYDIR], ["keyfile", "unknown.gpg"]], False),
        ("k14_keyserver_without_keyfile", "exec", "pkg.add_repo_key",
         [["keyserver", KS], ["keyid", UNKNOWN], ["aptkey", False], ["keydir", KEYDIR]], False),
        ("k15_del_repo_key", "exec", "pkg.del_repo_key", [["keyid", keyid]] + list(kd.items()), False),
        ("k16_del_repo_key_again", "exec", "pkg.del_repo_key", [["keyid", keyid]] + list(kd.items()), False),
        ("k17_del_repo_key_no_keyid", "exec", "pkg.del_repo_key", list(kd.items()), False),
    ]


def subst(value, old, new):
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [subst(v, old, new) for v in value]
    if isinstance(value, dict):
        return {subst(k, old, new): subst(v, old, new) for k, v in value.items()}
    return value


def make_key():
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, GNUPGHOME=home)
        subprocess.run(
            ["gpg", "--batch", "--passphrase", "", "--quick-gen-key",
             "saltq keyserver test <ks@saltq.invalid>", "ed25519", "sign", "never"],
            env=env, check=True, capture_output=True,
        )
        armored = subprocess.run(["gpg", "--armor", "--export"], env=env, check=True,
                                 capture_output=True).stdout.decode()
        colons = subprocess.run(["gpg", "--with-colons", "--list-keys"], env=env, check=True,
                                capture_output=True, text=True).stdout
        subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False)
    keyid = next(l.split(":")[4] for l in colons.splitlines() if l.startswith("pub:"))
    return armored, keyid


def serve(armored, keyid):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = armored.encode()
            if self.path.startswith("/pks/lookup") and f"search=0x{keyid}".lower() in self.path.lower():
                self.send_response(200)
                self.send_header("Content-Type", "application/pgp-keys")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def listing(d, prefix=""):
    if not os.path.isdir(d):
        return None
    return sorted(n for n in os.listdir(d) if n.startswith(prefix))


def run(conf, env, sid, kind, fun, args, test):
    if kind == "state":
        with open(conf + "/srv/step.sls", "w") as f:
            json.dump({sid: {fun: args}}, f)
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", "state.apply", "step"]
        if test:
            cmd.append("test=True")
    else:
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", fun]
        cmd += [f"{k}={json.dumps(v)}" for k, v in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    try:
        got = json.loads(proc.stdout)["local"]
    except (ValueError, KeyError):
        said = [l for l in proc.stderr.splitlines()
                if l.startswith(("Error running", "Passed invalid arguments"))]
        if kind == "exec" and said:
            return {"error": said[-1], "retcode": proc.returncode}
        sys.exit(f"{sid}: salt-call said:\n{proc.stdout}\n{proc.stderr}")
    if kind == "state":
        (got,) = got.values()
        return {k: got[k] for k in ("name", "result", "comment", "changes")}
    return {"ret": got, "retcode": proc.returncode}


def main():
    for p in [LIST, KEYDIR] + [os.path.join(KEYRINGS, n) for n in listing(KEYRINGS, "saltq-rec-ks") or []]:
        if os.path.exists(p):
            sys.exit(f"{p} exists: left by another run?")
    armored, keyid = make_key()
    server = serve(armored, keyid)
    url = f"hkp://127.0.0.1:{server.server_port}"
    records = []
    with tempfile.TemporaryDirectory() as conf, tempfile.TemporaryDirectory() as home:
        os.makedirs(conf + "/srv")
        os.makedirs(KEYDIR)
        with open(conf + "/minion", "w") as f:
            json.dump({
                "file_client": "local", "file_roots": {"base": [conf + "/srv"]},
                "cachedir": conf + "/cache", "root_dir": conf, "pki_dir": conf + "/pki",
                "log_file": conf + "/log", "user": "root", "id": "labminion",
            }, f)
        env = dict(os.environ, GNUPGHOME=home, PYTHONHASHSEED="0")
        try:
            for sid, kind, fun, args, test in steps(keyid):
                got = run(conf, env, sid, kind, fun, subst(args, KS, url), test)
                got = subst(got, url, KS)
                text = open(LIST).read() if os.path.exists(LIST) else None
                rec = {"id": sid, "kind": kind, "fun": fun, "args": args, "test": test, "ret": got,
                       "file": text, "keyrings": listing(KEYRINGS, "saltq-rec-ks"),
                       "keydir": listing(KEYDIR)}
                records.append(rec)
                print(sid, json.dumps(got), rec["keyrings"], rec["keydir"], file=sys.stderr)
        finally:
            subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False)
            server.shutdown()
            for n in listing(KEYRINGS, "saltq-rec-ks") or []:
                os.remove(os.path.join(KEYRINGS, n))
            if os.path.exists(LIST):
                os.remove(LIST)
            shutil.rmtree(KEYDIR, ignore_errors=True)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump({"key": armored, "keyid": keyid, "steps": records}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
