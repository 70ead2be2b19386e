"""Record what Salt 3007.8 answers for PPAs (`ppa: owner/name`, `name: ppa:owner/name`) in
pkgrepo.managed/pkgrepo.absent and pkg.get_repo, on this Debian host's grains and on Ubuntu
grains (`os: Ubuntu`, `oscodename: jammy`, set in the minion config). No python3-apt or
software-properties in Salt's environment and no apt-add-repository on the host, so Salt on
Ubuntu takes its own path: the PPA's line is `deb http://ppa.launchpad.net/<owner>/<name>/
ubuntu <codename> main`, and configuring it asks Launchpad for the signing key, which needs
the network (none here: Salt's answer is the connection error).

Regenerate (from the repository root, as root):

    /work/saltvenv/bin/python states/tests/data/pkgrepo_ppa/gen.py

Nothing is written on the host (every configuring step fails before writing); the test
checks that no sources file appeared. cases.json: {"phases": [{"grains": {...} or null,
"steps": [{id, kind, fun, args, test, ret}]}]}.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"
UBUNTU = {"os": "Ubuntu", "os_family": "Debian", "oscodename": "jammy", "osrelease": "22.04",
          "osfinger": "Ubuntu-22.04", "osmajorrelease": 22}

DEBIAN_STEPS = [
    ("p01_name_ppa_test", "state", "pkgrepo.managed", [{"name": "ppa:saltq/test"}, {"refresh": False}], True),
    ("p02_name_ppa", "state", "pkgrepo.managed", [{"name": "ppa:saltq/test"}, {"refresh": False}], False),
    ("p03_ppa_arg", "state", "pkgrepo.managed", [{"ppa": "saltq/test"}, {"refresh": False}], False),
    ("p04_absent", "state", "pkgrepo.absent", [{"name": "ppa:saltq/test"}], False),
    ("p05_get_repo", "exec", "pkg.get_repo", [["repo", "ppa:saltq/test"]], False),
]
UBUNTU_STEPS = [
    ("u01_ppa_test", "state", "pkgrepo.managed", [{"ppa": "saltq/test"}, {"refresh": False}], True),
    ("u02_ppa", "state", "pkgrepo.managed", [{"ppa": "saltq/test"}, {"refresh": False}], False),
    ("u03_name_ppa_test", "state", "pkgrepo.managed", [{"name": "ppa:saltq/test"}, {"refresh": False}], True),
    ("u04_absent", "state", "pkgrepo.absent", [{"ppa": "saltq/test"}], False),
    ("u05_get_repo", "exec", "pkg.get_repo", [["repo", "ppa:saltq/test"]], False),
]


def run(conf, sid, kind, fun, args, test):
    if kind == "state":
        with open(conf + "/srv/step.sls", "w") as f:
            json.dump({"saltq-ppa" if sid != "p01_name_ppa_test" else sid: {fun: args}}, f)
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", "state.apply", "step"]
        if test:
            cmd.append("test=True")
    else:
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", fun]
        cmd += [f"{k}={json.dumps(v)}" for k, v in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
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
    phases = []
    for grains, steps in ((None, DEBIAN_STEPS), (UBUNTU, UBUNTU_STEPS)):
        with tempfile.TemporaryDirectory() as conf:
            os.makedirs(conf + "/srv")
            minion = {"file_client": "local", "file_roots": {"base": [conf + "/srv"]},
                      "cachedir": conf + "/cache", "root_dir": conf, "pki_dir": conf + "/pki",
                      "log_file": conf + "/log", "user": "root", "id": "labminion"}
            if grains:
                minion["grains"] = grains
            with open(conf + "/minion", "w") as f:
                json.dump(minion, f)
            out = []
            for sid, kind, fun, args, test in steps:
                got = run(conf, sid, kind, fun, args, test)
                print(sid, json.dumps(got), file=sys.stderr)
                out.append({"id": sid, "kind": kind, "fun": fun, "args": args, "test": test, "ret": got})
            phases.append({"grains": grains, "steps": out})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump({"phases": phases}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
