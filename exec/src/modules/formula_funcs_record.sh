#!/usr/bin/env bash
# Records Salt 3007.8's answers to the execution functions formulas call from Jinja
# (issue #35: defaults, file paths, slsutil, log, grains.filter_by/fetch, match, alternatives,
# network.interface) into formula_funcs_salt3007.json:
# `formula_funcs_record.sh > formula_funcs_salt3007.json`. Each case is one
# `salt-call --local -c DIR --out json <words>` with a masterless minion (id m1) whose static
# grains, pillar and file_roots (a formula `core` with a defaults.yaml) are below; the test
# (`formula_funcs_tests.rs`) gives saltq the same. Exceptions keep only their last line
# (`KeyError: 'x'`), without the traceback; an error salt-call reports on stderr (no JSON on
# stdout) is recorded as `{"_stderr": <its line>}`. Made with a venv:
# `python3 -m venv /tmp/salt-venv && /tmp/salt-venv/bin/pip install salt==3007.8` plus Salt's
# requirements/base.txt (pyyaml, jinja2, msgpack, looseversion, packaging, tornado, distro,
# psutil, pycryptodomex, requests, jmespath...).
set -euo pipefail
VENV=${SALT_VENV:-/tmp/salt-venv}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/states/core" "$work/pillar"
cat > "$work/minion" <<YAML
id: m1
file_client: local
master_type: disable
root_dir: $work/root
pki_dir: $work/root/pki
cachedir: $work/root/cache
sock_dir: $work/root/sock
log_file: $work/root/log
file_roots:
  base: [$work/states]
pillar_roots:
  base: [$work/pillar]
grains:
  role: webserver
  roles: [web, db]
  num: 12
  nested: {key: deep}
  ipv4: [10.1.2.3, 127.0.0.1]
YAML
cat > "$work/states/core/defaults.yaml" <<'YAML'
users:
  root: {shell: /bin/bash}
port: 80
YAML
printf "base:\n  '*': [data]\n" > "$work/pillar/top.sls"
printf "app:\n  name: foobar\n" > "$work/pillar/data.sls"

# One case a line, split as a shell would (shlex).
cat > "$work/cases" <<'CASES'
defaults.merge '{a: 1, b: {c: 2, l: [1]}}' '{b: {d: 3, l: [2]}}'
defaults.merge '{a: {l: [1]}}' '{a: {l: [1, 2]}}' merge_lists=True
defaults.merge '{a: 1}' null in_place=False
defaults.merge null '{a: 1}'
defaults.merge null '{a: 1}' in_place=False
defaults.deepcopy '{a: [1, {b: 2}]}'
defaults.update '{h1: {index: foo}, h2: {index: bar, extra: [x]}}' '{enabled: true, extra: [test]}'
defaults.update '{h1: {extra: [b]}}' '{extra: [a]}' merge_lists=False
defaults.update null '{a: 1}'
defaults.get core:users:root
defaults.get core:users:root:shell
defaults.get core:missing default=zz
defaults.get core
defaults.get nope:x default=fallback
file.dirname test/path/filename.config
file.dirname /a//b
file.dirname x
file.basename test/test.config
file.basename a/b/
file.join / usr local bin
file.join a/ b /c d
file.contains_regex /etc/os-release '^ID=debian'
file.contains_regex /etc/os-release 'debian$'
file.contains_regex /etc/os-release '^NOPE'
file.contains_regex /etc/os-release '^debian' lchar=ID=
file.contains_regex /nonexistent/file '.'
slsutil.serialize json '{a: 1, b: [1, 2]}'
slsutil.serialize json '{b: 1, a: {c: 2}}' sort_keys=True indent=2
slsutil.serialize yaml '{b: {c: [1, 2], d: {e: 1}}, a: x}'
slsutil.serialize yaml '{b: 1, a: [x, {y: z}], c: {}}' sort_keys=False
slsutil.serialize yaml '{a: 1, b: [1, 2]}' default_flow_style=False
slsutil.serialize yaml '[1, two, "3", null, true, 1.5]'
slsutil.serialize yaml 'plain'
slsutil.serialize python '{a: [1, 2]}'
slsutil.serialize nope '{}'
slsutil.deserialize yaml 'a: [1, 2]'
slsutil.merge '{a: {b: 1}}' '{a: {c: 2}}'
slsutil.merge '{a: {b: 1}, x: 1}' '{a: {c: 2}}' strategy=list
slsutil.merge '{a: 1, b: {c: 1}}' '{a: 3, b: {d: 4}}' strategy=overwrite
slsutil.merge '{a: [1]}' '{a: [1, 2]}' merge_lists=True
slsutil.merge_all '[{foo: Foo}, {foo: Bar, x: {y: 1}}, {x: {z: 2}}]'
slsutil.merge_all '[{l: [1]}, {l: [2]}]' merge_lists=True
slsutil.update '{foo: {a: 1}}' '{foo: {b: 2}}'
slsutil.update '{foo: {a: 1}}' '{foo: {b: 2}}' recursive_update=False
slsutil.update '{l: [1]}' '{l: [1, 2]}' merge_lists=True
slsutil.update '[1]' '{a: 1}'
log.info hello
log.error 'x y'
log.debug 1
grains.filter_by '{Debian: deb, RedHat: rh}' grain=os_family
grains.filter_by '{web*: w, default: d}' grain=role
grains.filter_by '{db*: w, default: d}' grain=role
grains.filter_by '{12: twelve, 11: eleven}' grain=num
grains.filter_by '{x*: 1, d*: 2, w*: 3}' grain=roles
grains.filter_by '{A: B, C: {D: {E: F, G: H}}}' xxx '{D: {E: I}, J: K}' C
grains.filter_by '{default: {A: {B: C}, D: E}, F: {A: {B: G}}, H: {D: I}}' xxx '{D: J}' F default
grains.filter_by '{default: {A: {B: C}, D: E}, F: {A: {B: G}}, H: {D: I}}' xxx '{D: J}' H default
grains.filter_by '{webserver: x, b: {c: 1}}' grain=role base=b
grains.filter_by '{a: 1}' merge=notadict
grains.filter_by '{a: 1}' grain=nested:key default=a
grains.fetch role
grains.fetch missing default=zz
grains.fetch nested:key
grains.fetch nested|key delimiter='|'
match.glob 'm*'
match.glob 'x*'
match.glob 'x*' minion_id=xy
match.pcre 'm\d'
match.pcre 'x'
match.list a,m1
match.list a,b
match.compound 'G@role:web* and L@m1,m2'
match.compound 'G@role:db or not m1'
match.compound 'I@app:name:foo*'
match.compound 'S@10.1.0.0/16 and E@m.'
match.compound 'bad and'
match.compound 'x* or G@roles:db' minion_id=zz
match.grain role:web*
match.grain roles:db
match.grain role
match.grain 'role|webserver' delimiter='|'
match.grain_pcre 'role:web.*'
match.grain_pcre 'role:db.*'
match.pillar app:name:foobar
match.pillar app:name:x
match.pillar_pcre 'app:name:fo+'
match.ipcidr 10.1.0.0/16
match.ipcidr 192.168.0.0/24
match.ipcidr 10.1.2.3
match.data spam:eggs
match.filter_by '{foo*: Foo!, bar*: Bar!}' minion_id=bar03
match.filter_by '{m*: {a: 1}, default: {}}' merge='{b: 2}'
match.filter_by '{x*: 1, zz: 2}' default=zz
match.filter_by '{"G@role:web*": web, default: other}'
match.filter_by '{m1: x}' tgt_type=list_
match.filter_by '{m1: x}' tgt_type=list
match.filter_by '{"role:web*": x}' tgt_type=grain
match.search_by '{web: [m1, node2], db: [node2]}'
match.search_by '{web: ["G@role:web*"], db: ["G@roles:db"], x: [nomatch]}'
match.search_by '{a: [x]}'
match.ifelse 'foo*' 'Foo!' 'm*' 'M!' dflt
match.ifelse True yes no
match.ifelse False yes no
match.ifelse a b
match.ifelse only
alternatives.show_current editor
alternatives.show_current no-such-alternative
alternatives.show_link editor
alternatives.show_link no-such-alternative
network.interface lo
network.interface nope0
network.interface_ip lo
CASES

VENV="$VENV" WORK="$work" "$VENV/bin/python3" - <<'PY'
import json, os, shlex, subprocess
from salt.utils.args import parse_input
venv, work = os.environ["VENV"], os.environ["WORK"]
cases = []
for line in open(os.path.join(work, "cases")):
    words = shlex.split(line)
    if not words:
        continue
    fun, rest = words[0], words[1:]
    # As salt-call reads its words: key=value words are keyword arguments, values YAML.
    args, kwargs = parse_input(rest, condition=False)
    proc = subprocess.run(
        [f"{venv}/bin/salt-call", "--local", "-c", work, "--out", "json", "-l", "quiet"] + words,
        capture_output=True, text=True,
    )
    out = proc.stdout
    start = out.find("{\n")
    if start < 0:
        # A TypeError inside the function: salt-call prints "Passed invalid arguments: <msg>"
        # on stderr and the docstring on stdout; the message is what is compared.
        # An error raised by the function: salt-call's line naming it.
        err = [l for l in proc.stderr.splitlines() if l.strip() and l != "Usage:"]
        marks = ("Passed invalid arguments", "Error running")
        ret = {"_stderr": next((l for l in err if l.startswith(marks)), err[-1] if err else "")}
    else:
        ret = json.loads(out[start:])["local"]
    if isinstance(ret, str) and ret.startswith("The minion function caused an exception"):
        ret = "The minion function caused an exception: " + ret.rstrip("\n").splitlines()[-1]
    cases.append({"fun": fun, "args": args, "kwargs": kwargs, "ret": ret})
doc = {
    "_recorded": "exec/src/modules/formula_funcs_record.sh: salt-call --local with Salt 3007.8, minion m1 (static grains role/roles/num/nested/ipv4, pillar app:name, salt://core/defaults.yaml)",
    "cases": cases,
}
print(json.dumps(doc, indent=1))
PY
