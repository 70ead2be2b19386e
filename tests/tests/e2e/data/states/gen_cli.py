"""Records what Salt 3007.8's `salt` CLI prints for `state.apply` of ./tree, for
tests/tests/e2e/states.rs: the default highstate text (no `--out`) and the exit status.

Regenerate (from the repository root, as root: the minion runs states):

    /work/saltvenv/bin/python tests/tests/e2e/data/states/gen_cli.py

It starts a real salt-master (file_roots ./tree) and a real salt-minion web1 (grain role: web)
on 127.0.0.1 with non-default ports and everything under a temporary root_dir, then runs
`salt web1 state.apply [ARGS] pillar={"out": OUT}` for each case below, OUT a folder of its
own, with stdout not a terminal (as the test runs saltq). The text is kept with OUT replaced
by {out}; times of day and durations are left for the test to normalise. Everything it started
is stopped by pid at the end. Writes cli_recorded.json beside this file.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = "/work/saltvenv/bin"
PORT = int(os.environ.get("STATES_RECORD_PORT", "47605"))

# (case name, arguments after `salt web1`, whether OUT holds fail-please, OUT reused from)
CASES = [
    ("first", ["state.apply"], False, None),
    ("second", ["state.apply"], False, "first"),
    ("onfail", ["state.apply", "common,web"], True, "first"),
    ("test", ["state.apply", "test=True"], False, None),
    ("extend_error", ["state.apply", "web.extra"], False, "first"),
    ("terse", ["state.apply", "--state-output=terse"], False, "first"),
]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def start(args, log):
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


def main():
    root = tempfile.mkdtemp(prefix="states-cli-record.")
    conf = f"{root}/etc/salt"
    write(
        f"{conf}/master",
        f"""root_dir: {root}
interface: 127.0.0.1
publish_port: {PORT}
ret_port: {PORT + 1}
auto_accept: True
user: root
file_roots:
  base:
    - {HERE}/tree
log_level_logfile: warning
""",
    )
    d = f"{root}/web1"
    write(
        f"{d}/minion",
        f"""root_dir: {d}
master: 127.0.0.1
publish_port: {PORT}
master_port: {PORT + 1}
id: web1
user: root
log_level_logfile: warning
grains:
  role: web
""",
    )
    procs = []
    log = open(f"{root}/daemons.log", "w")
    recorded = {}
    try:
        procs.append(start([f"{BIN}/salt-master", "-c", conf, "-l", "quiet"], log))
        time.sleep(6)
        procs.append(start([f"{BIN}/salt-minion", "-c", d, "-l", "quiet"], log))
        for _ in range(60):
            out = subprocess.run(
                [f"{BIN}/salt", "-c", conf, "web1", "test.ping", "--out", "json", "--static", "-t", "10"],
                capture_output=True,
                text=True,
            ).stdout
            try:
                if json.loads(out).get("web1") is True:
                    break
            except ValueError:
                pass
            time.sleep(2)
        else:
            sys.exit("the salt minion did not answer")
        outs = {}
        for name, args, fail, reuse in CASES:
            out = outs[reuse] if reuse else os.path.join(root, "out-" + name)
            outs[name] = out
            os.makedirs(out, exist_ok=True)
            flag = os.path.join(out, "fail-please")
            if fail:
                open(flag, "w").close()
            p = subprocess.run(
                [f"{BIN}/salt", "-c", conf, "web1", *args, 'pillar={"out": "%s"}' % out, "-t", "60"],
                capture_output=True,
                text=True,
            )
            if fail:
                os.remove(flag)
            recorded[name] = {
                "command": ["salt", "web1", *args, 'pillar={"out": "{out}"}'],
                "text": p.stdout.replace(out, "{out}"),
                "exit": p.returncode,
            }
            print(f"{name}: exit {p.returncode}", file=sys.stderr)
        with open(os.path.join(HERE, "cli_recorded.json"), "w") as f:
            json.dump(recorded, f, indent=1, sort_keys=True)
            f.write("\n")
    finally:
        stop(procs)
        log.close()
        subprocess.run(["rm", "-rf", root])


if __name__ == "__main__":
    main()
