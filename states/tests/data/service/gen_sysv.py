"""Record what Salt 3007.8 answers on a Debian machine without a running systemd, where its
loader gives `service` the System V functions of `debian_service` (`update-rc.d`, the
`/etc/rc?.d` links, `service NAME ACTION`) and `systemctl`'s presence puts
`service.running`/`service.dead` in OFFLINE mode. Needs root.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/service/gen_sysv.py

It installs the init script `saltq-rec-svc` (start/stop/status keep a marker file under
/run), links it with `update-rc.d defaults`, runs each step below with `salt-call --local`
(state steps as a one-state SLS, execution steps as a plain call), then removes the links and
the script. `sysv.json` holds each step and Salt's answer. The Rust test builds the same
script under the same name and replays the steps.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"
NAME = "saltq-rec-svc"

SCRIPT = """#!/bin/sh
### BEGIN INIT INFO
# Provides:          {name}
# Required-Start:
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: saltq test service
### END INIT INFO
MARK=/run/{name}.running
case "$1" in
  start) touch "$MARK" ;;
  stop) rm -f "$MARK" ;;
  restart|reload|force-reload) touch "$MARK" ;;
  status) [ -f "$MARK" ] ;;
  *) echo "Usage: $0 start|stop|status" >&2; exit 3 ;;
esac
"""

# (id, kind, function, arguments, test)
STEPS = [
    ("x01_available", "exec", "service.available", [NAME], False),
    ("x02_enabled", "exec", "service.enabled", [NAME], False),
    ("x03_status_stopped", "exec", "service.status", [NAME], False),
    ("x04_start", "exec", "service.start", [NAME], False),
    ("x05_status_running", "exec", "service.status", [NAME], False),
    ("x06_reload", "exec", "service.reload", [NAME], False),
    ("x07_stop", "exec", "service.stop", [NAME], False),
    ("x08_available_missing", "exec", "service.available", ["saltq-nosuch-svc"], False),
    ("s01_enabled_already", "state", "service.enabled", [{"name": NAME}], False),
    ("s02_disabled_test", "state", "service.disabled", [{"name": NAME}], True),
    ("s03_disabled", "state", "service.disabled", [{"name": NAME}], False),
    ("s04_disabled_again", "state", "service.disabled", [{"name": NAME}], False),
    ("s05_enabled_test", "state", "service.enabled", [{"name": NAME}], True),
    ("s06_enabled", "state", "service.enabled", [{"name": NAME}], False),
    ("s07_running", "state", "service.running", [{"name": NAME}], False),
    ("s08_running_reload", "state", "service.running", [{"name": NAME}, {"reload": True}], False),
    ("s09_dead", "state", "service.dead", [{"name": NAME}], False),
    ("s10_enabled_missing", "state", "service.enabled", [{"name": "saltq-nosuch-svc"}], False),
    ("s11_enabled_missing_test", "state", "service.enabled", [{"name": "saltq-nosuch-svc"}], True),
    ("s12_disabled_missing", "state", "service.disabled", [{"name": "saltq-nosuch-svc"}], False),
    ("x09_start", "exec", "service.start", [NAME], False),
    # A watch with `reload: True`: the state's `mod_watch` reloads the running service.
    (
        "s13_watch_reload",
        "sls",
        "service.running",
        {
            "s13_trigger": {"test.succeed_with_changes": []},
            "s13_watch_reload": {
                "service.running": [
                    {"name": NAME},
                    {"reload": True},
                    {"watch": [{"test": "s13_trigger"}]},
                ]
            },
        },
        False,
    ),
    ("x10_stop", "exec", "service.stop", [NAME], False),
]


def config(d):
    os.makedirs(f"{d}/srv", exist_ok=True)
    with open(f"{d}/minion", "w") as f:
        f.write(
            f"file_client: local\nfile_roots:\n  base:\n    - {d}/srv\n"
            f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
            f"log_file: {d}/log\nuser: root\nid: labminion\n"
        )


def step(cid, kind, fun, args, test):
    with tempfile.TemporaryDirectory() as d:
        config(d)
        if kind == "exec":
            cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", fun, *args]
            out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
            return json.loads(out)["local"]
        with open(f"{d}/srv/one.sls", "w") as f:
            json.dump(args if kind == "sls" else {cid: {fun: args}}, f)
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply", "one"]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        (ret,) = [r for r in json.loads(out)["local"].values() if r["__id__"] == cid]
        return {k: ret[k] for k in ("name", "result", "comment", "changes")}


def main():
    script = f"/etc/init.d/{NAME}"
    with open(script, "w") as f:
        f.write(SCRIPT.format(name=NAME))
    os.chmod(script, 0o755)
    subprocess.run(["update-rc.d", NAME, "defaults"], check=True, capture_output=True)
    records = []
    try:
        for cid, kind, fun, args, test in STEPS:
            got = step(cid, kind, fun, args, test)
            records.append(
                {"id": cid, "kind": kind, "fun": fun, "args": args, "test": test, "ret": got}
            )
            print(cid, json.dumps(got), file=sys.stderr)
    finally:
        subprocess.run(["update-rc.d", "-f", NAME, "remove"], capture_output=True)
        os.remove(script)
        if os.path.exists(f"/run/{NAME}.running"):
            os.remove(f"/run/{NAME}.running")
    with open(os.path.join(HERE, "sysv.json"), "w") as f:
        json.dump({"script": SCRIPT, "name": NAME, "steps": records}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
