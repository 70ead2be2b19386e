"""Record what Salt 3007.8 answers when `salt-call --local` applies the public ntp formula's
`ntp.ng` (../shared/third-party/formulas/ntp, saltstack-formulas, Apache-2.0 licence beside it)
with a pillar that points it into a sandbox: the package `hello` instead of ntp (from the
Debian mirror), the init script `saltq-formula-svc` instead of ntpd (written here, not
enabled), and `/tmp/saltq-formula-ntp/ntp.conf` instead of /etc/ntp.conf. The formula uses
`pkg.installed`, `file.managed` (a jinja template), and `service.running` with `enable`,
`require` and `watch`. Needs root, apt and the mirror.

Regenerate (from the repository root):

    /work/saltvenv/bin/python tests/tests/e2e/data/formula_ntp/gen.py

`recorded.json` holds the pillar, the init script, and Salt's answers by state ID for
`test=True` and then for real (timings and run numbers left out), with the text of the
rendered ntp.conf. Everything is undone at the end (hello purged, script and dir removed).
"""

import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../../../../.."))
# A third-party input beside the checkout, not in the project.
FORMULA = os.path.realpath(os.path.join(REPO, "../shared/third-party/formulas/ntp"))
if not os.path.isdir(FORMULA):
    raise SystemExit(f"the third-party formula is missing: {FORMULA}")
SALT_CALL = "/work/saltvenv/bin/salt-call"
SVC = "saltq-formula-svc"
SANDBOX = "/tmp/saltq-formula-ntp"

PILLAR = {
    "ntp": {
        "ng": {
            "lookup": {
                "package": "hello",
                "service": SVC,
                "ntp_conf": f"{SANDBOX}/ntp.conf",
            },
            "settings": {
                "ntpd": True,
                "ntp_conf": {
                    "server": ["0.pool.ntp.org", "1.pool.ntp.org"],
                    "driftfile": ["/var/lib/ntp/ntp.drift"],
                },
            },
        }
    }
}

SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: stands in for ntpd in the formula test
### END INIT INFO
MARK=/run/{name}.running
case "$1" in
  start) touch "$MARK" ;;
  stop) rm -f "$MARK" ;;
  restart|reload|force-reload) touch "$MARK" ;;
  status) [ -f "$MARK" ] ;;
  *) exit 3 ;;
esac
"""


def apply(test):
    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {FORMULA}\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: web1\n"
            )
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply", "ntp.ng",
               "pillar=" + json.dumps(PILLAR)]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        got = json.loads(out)["local"]
    return {
        ret["__id__"]: {k: ret[k] for k in ("name", "result", "comment", "changes")}
        for ret in got.values()
    }


def main():
    script = f"/etc/init.d/{SVC}"
    with open(script, "w") as f:
        f.write(SCRIPT.format(name=SVC))
    os.chmod(script, 0o755)
    os.makedirs(SANDBOX, exist_ok=True)
    try:
        test = apply(True)
        real = apply(False)
        conf = open(f"{SANDBOX}/ntp.conf").read()
        again = apply(False)
    finally:
        subprocess.run(["apt-get", "-q", "-y", "purge", "hello"], capture_output=True)
        os.remove(script)
        shutil.rmtree(SANDBOX, ignore_errors=True)
        if os.path.exists(f"/run/{SVC}.running"):
            os.remove(f"/run/{SVC}.running")
    with open(os.path.join(HERE, "recorded.json"), "w") as f:
        json.dump({"pillar": PILLAR, "script": SCRIPT, "service": SVC, "sandbox": SANDBOX,
                   "test": test, "real": real, "conf": conf, "again": again},
                  f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps({"test": test, "real": real, "again": again}, indent=1))


if __name__ == "__main__":
    main()
