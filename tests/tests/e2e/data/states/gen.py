"""Records what Salt 3007.8 answers for the e2e state tree in ./tree, for tests/tests/e2e/states.rs.

Salt is the oracle; nothing of it is copied into saltq. Run with Salt 3007.8 in a virtualenv:
    python3 -m venv /work/saltvenv
    /work/saltvenv/bin/pip install salt==3007.8 pyyaml jinja2 markupsafe msgpack looseversion \
        packaging distro psutil tornado pyzmq requests cryptography pycryptodomex jmespath
    /work/saltvenv/bin/python tests/tests/e2e/data/states/gen.py

Each run is `salt-call --local` as minion web1 (grain role: web) with file_roots = ./tree and
`pillar='{"out": OUT}'`, OUT a fresh temporary folder. Results are keyed by state tag with
start_time and duration dropped, OUT replaced by {out} and pids by {pid}; `retcode` is salt-call's
(--retcode-passthrough). Writes recorded.json beside this file.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = os.path.join(os.path.dirname(sys.executable), "salt-call")


def config(root):
    conf = os.path.join(root, "conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "minion"), "w") as f:
        f.write(
            f"""id: web1
file_client: local
file_roots:
  base:
    - {HERE}/tree
pillar_roots:
  base:
    - {root}/pillar
root_dir: {root}
cachedir: {root}/cache
pki_dir: {root}/pki
log_file: {root}/log
sock_dir: {root}/sock
user: root
grains:
  role: web
"""
        )
    return conf


def call(conf, out, *args):
    p = subprocess.run(
        [SALT_CALL, "--local", "-c", conf, "--out", "json", "--retcode-passthrough",
         *args, 'pillar={"out": "%s"}' % out],
        capture_output=True, text=True,
    )
    try:
        data = json.loads(p.stdout)["local"]
    except (ValueError, KeyError):
        sys.exit(f"{args}: {p.stdout}{p.stderr}")
    return normalize(data, out), p.returncode


def normalize(v, out):
    if isinstance(v, dict):
        return {normalize(k, out): ("{pid}" if k == "pid" else normalize(x, out))
                for k, x in v.items() if k not in ("start_time", "duration")}
    if isinstance(v, list):
        return [normalize(x, out) for x in v]
    if isinstance(v, str):
        return v.replace(out, "{out}")
    return v


def files(out):
    found = {}
    for d, _, names in os.walk(out):
        for n in names:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, out)
            with open(p) as f:
                found[rel] = {"contents": f.read(), "mode": oct(os.stat(p).st_mode & 0o777)}
    return found


def main():
    cases = {}
    with tempfile.TemporaryDirectory() as root:
        conf = config(root)
        out = os.path.join(root, "out")
        os.makedirs(out)
        cases["first"] = dict(zip(("ret", "retcode"), call(conf, out, "state.apply")))
        cases["first"]["files"] = files(out)
        cases["second"] = dict(zip(("ret", "retcode"), call(conf, out, "state.apply")))
        open(os.path.join(out, "fail-please"), "w").close()
        cases["onfail"] = dict(zip(("ret", "retcode"), call(conf, out, "state.apply", "common,web")))
        cases["extend_error"] = dict(
            zip(("ret", "retcode"), call(conf, out, "state.apply", "web.extra")))
        os.remove(os.path.join(out, "fail-please"))
        fresh = os.path.join(root, "fresh")
        os.makedirs(fresh)
        cases["test"] = dict(zip(("ret", "retcode"), call(conf, fresh, "state.apply", "test=True")))
        cases["test"]["files"] = files(fresh)
        cases["show_top"] = dict(zip(("ret", "retcode"), call(conf, out, "state.show_top")))
        cases["show_sls"] = dict(zip(("ret", "retcode"), call(conf, out, "state.show_sls", "web")))
    with open(os.path.join(HERE, "recorded.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)
        f.write("\n")


main()
