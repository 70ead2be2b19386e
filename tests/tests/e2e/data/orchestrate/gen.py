"""Record what Salt 3007.8's orchestrate runner answers for the trees in `tree/`.

Regenerate (from the repository root, as root: the minions run states):

    /work/saltvenv/bin/python tests/tests/e2e/data/orchestrate/gen.py [CASE ...]

With case names, only those cases are recorded again (the others are kept as they are).
It starts a real salt-master (id `lab_master`, file_roots `tree/`) and two real salt-minions
(`db1`, `web1`) on 127.0.0.1 with non-default ports and everything under a temporary root_dir,
then for each case runs `salt-run state.orchestrate MODS [ARGS]` twice: once with `--out json`
(the return, the exit status and every event the master's bus carried meanwhile) and once with
the default outputter (the text salt-run prints, without colour). Everything it started is
stopped by pid at the end. The output is `recorded.json` beside this file.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = "/work/saltvenv/bin"
PORT = int(os.environ.get("ORCH_RECORD_PORT", "47505"))

# (case name, salt-run arguments after the function)
CASES = [
    ("deploy", ["orch.deploy"]),
    ("deploy_test", ["orch.deploy", "test=True"]),
    ("good", ["orch.good"]),
    ("tolerant", ["orch.tolerant"]),
    ("failhard", ["orch.failhard"]),
    ("nomatch", ["orch.nomatch"]),
    ("missing_sls", ["orch.nosuch"]),
    ("high", ["orch.high"]),
]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def start(args, log):
    # Each daemon leads its own process group, so that its children go with it.
    return subprocess.Popen(args, stdout=log, stderr=log, start_new_session=True)


def stop(procs):
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + 15
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Listener:
    """Every event of the master's bus while a case runs."""

    def __init__(self, conf):
        import salt.config
        import salt.utils.event

        opts = salt.config.client_config(conf)
        self.ev = salt.utils.event.get_event(
            "master", opts["sock_dir"], opts=opts, listen=True
        )
        self.events = []
        self.running = True
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while self.running:
            e = self.ev.get_event(full=True, wait=0.2)
            if e:
                self.events.append({"tag": e["tag"], "data": e["data"]})

    def finish(self):
        time.sleep(1.5)
        self.running = False
        self.thread.join()
        return self.events


def main():
    root = tempfile.mkdtemp(prefix="orch-record.")
    conf = f"{root}/etc/salt"
    write(
        f"{conf}/master",
        f"""root_dir: {root}
id: lab_master
interface: 127.0.0.1
publish_port: {PORT}
ret_port: {PORT + 1}
auto_accept: True
user: root
file_roots:
  base:
    - {HERE}/tree
pillar_roots:
  base:
    - {HERE}/pillar
log_level_logfile: warning
""",
    )
    procs = []
    log = open(f"{root}/daemons.log", "w")
    try:
        procs.append(start([f"{BIN}/salt-master", "-c", conf, "-l", "quiet"], log))
        time.sleep(6)
        for mid in ("db1", "web1"):
            d = f"{root}/{mid}"
            write(
                f"{d}/minion",
                f"""root_dir: {d}
master: 127.0.0.1
publish_port: {PORT}
master_port: {PORT + 1}
id: {mid}
user: root
log_level_logfile: warning
""",
            )
            procs.append(start([f"{BIN}/salt-minion", "-c", d, "-l", "quiet"], log))
        for _ in range(60):
            out = subprocess.run(
                [f"{BIN}/salt", "-c", conf, "*", "test.ping", "--out", "json", "--static", "-t", "10"],
                capture_output=True,
                text=True,
            ).stdout
            try:
                if len(json.loads(out)) == 2:
                    break
            except ValueError:
                pass
            time.sleep(2)
        else:
            sys.exit("the salt minions did not answer")
        # With case names as arguments, only those are recorded again, into the existing file.
        only = sys.argv[1:]
        path = os.path.join(HERE, "recorded.json")
        recorded = {}
        if only:
            with open(path) as f:
                recorded = json.load(f)
        for name, args in CASES:
            if only and name not in only:
                continue
            listener = Listener(f"{conf}/master")
            js = subprocess.run(
                [f"{BIN}/salt-run", "-c", conf, "state.orchestrate", *args, "--out", "json"],
                capture_output=True,
                text=True,
            )
            events = listener.finish()
            text = subprocess.run(
                [f"{BIN}/salt-run", "-c", conf, "state.orchestrate", *args, "--no-color"],
                capture_output=True,
                text=True,
            )
            try:
                parsed = json.loads(js.stdout)
            except ValueError:
                # Not one JSON document (salt-run printed something else): kept as text.
                parsed = {"__unparsed__": js.stdout}
            recorded[name] = {
                "command": ["salt-run", "state.orchestrate", *args],
                "json": parsed,
                "json_exit": js.returncode,
                "text": text.stdout,
                "text_exit": text.returncode,
                "events": events,
            }
            print(f"{name}: exit {js.returncode}/{text.returncode}, {len(events)} events", file=sys.stderr)
        with open(path, "w") as f:
            json.dump(recorded, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        stop(procs)
        log.close()
        subprocess.run(["rm", "-rf", root])


if __name__ == "__main__":
    main()
