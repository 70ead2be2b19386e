"""Record what Salt 3007.8 answers for `event.send`, `event.wait`, `event.fire_master`.

`salt-call --local` has no master, so a fired event answers `result: False` there: the
same as saltq with no event sink.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/event/gen.py

Each case becomes one state of a generated SLS, applied with `salt-call --local` (once
without and once with `test=True`); the state's `name`, `result`, `comment` and `changes`
are written to `cases.json` with the state function and its arguments.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"

# (id, state function, arguments as the SLS gives them, in order)
CASES = [
    ("send", "event.send", [{"name": "my/tag"}, {"data": {"a": 1}}]),
    ("send_nodata", "event.send", [{"name": "my/tag"}]),
    ("send_hidden", "event.send", [{"name": "my/tag"}, {"data": {"a": 1}}, {"show_changed": False}]),
    ("wait", "event.wait", [{"name": "my/tag"}, {"data": {"a": 1}}]),
    ("fire_master", "event.fire_master", [{"name": "my/tag"}, {"data": [1, 2]}]),
]


def run(cases, test):
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/srv")
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {d}/srv\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: labminion\n"
            )
        sls = {cid: {fun: args} for cid, fun, args in cases}
        with open(f"{d}/srv/cases.sls", "w") as f:
            json.dump(sls, f)
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply", "cases"]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        got = json.loads(out)["local"]
    by_id = {}
    for ret in got.values():
        by_id[ret["__id__"]] = {k: ret[k] for k in ("name", "result", "comment", "changes")}
        for extra in ("warnings",):
            if extra in ret:
                by_id[ret["__id__"]][extra] = ret[extra]
    return by_id


def main():
    records = []
    for test in (False, True):
        got = run(CASES, test)
        for cid, fun, args in CASES:
            records.append({"id": cid, "fun": fun, "args": args, "test": test, "ret": got[cid]})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(records)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
