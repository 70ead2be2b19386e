"""Record what Salt 3007.8's `salt-run state.event` prints (beside gen.py, whose master set-up
it reuses; no minion is needed).

Regenerate (from the repository root, as root):

    /work/saltvenv/bin/python tests/tests/e2e/data/orchestrate/record_event.py

It starts a real salt-master on 127.0.0.1 (non-default ports, a temporary root_dir), runs
`salt-run state.event TAGMATCH count=2 [pretty=True]` while `salt-run event.send` fires three
events (two matching), and writes each case's stdout and exit status to `state_event.json`.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

CASES = [
    ("glob", ["deploy/*", "count=2"]),
    ("regex_pretty", [r"deploy/(start|stop)", "count=2", "pretty=True"]),
]
EVENTS = [
    ("deploy/start", '{"who": "ci", "n": 1}'),
    ("other/tag", '{"x": 1}'),
    ("deploy/stop", '{"who": "ci", "list": [1, "a"]}'),
]


def main():
    root = tempfile.mkdtemp(prefix="event-record.")
    conf = f"{root}/etc/salt"
    port = gen.PORT + 10
    gen.write(
        f"{conf}/master",
        f"root_dir: {root}\nid: lab_master\ninterface: 127.0.0.1\npublish_port: {port}\n"
        f"ret_port: {port + 1}\nuser: root\nlog_level_logfile: warning\n",
    )
    log = open(f"{root}/daemons.log", "w")
    procs = []
    try:
        procs.append(gen.start([f"{gen.BIN}/salt-master", "-c", conf, "-l", "quiet"], log))
        time.sleep(8)
        recorded = {}
        for name, args in CASES:
            watcher = subprocess.Popen(
                [f"{gen.BIN}/salt-run", "-c", conf, "state.event", *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            time.sleep(5)
            for tag, data in EVENTS:
                subprocess.run(
                    [f"{gen.BIN}/salt-run", "-c", conf, "event.send", tag, f"data={data}"],
                    capture_output=True,
                )
            out, _ = watcher.communicate(timeout=60)
            recorded[name] = {
                "command": ["salt-run", "state.event", *args],
                "events": EVENTS,
                "stdout": out,
                "exit": watcher.returncode,
            }
        with open(os.path.join(gen.HERE, "state_event.json"), "w") as f:
            json.dump(recorded, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        gen.stop(procs)
        log.close()
        subprocess.run(["rm", "-rf", root])


if __name__ == "__main__":
    main()
