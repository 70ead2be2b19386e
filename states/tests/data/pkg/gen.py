"""Record what Salt 3007.8 answers for `pkg.installed`, `pkg.removed`, `pkg.purged` where
nothing is installed or removed: packages already present, and test mode. Needs root and
dpkg (apt); no network.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/pkg/gen.py
    /work/saltvenv/bin/python states/tests/data/pkg/gen.py --installs   # installs.json

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
    ("installed_present", "pkg.installed", [{"name": "bash"}]),
    ("installed_present_pkgs", "pkg.installed", [{"name": "x"}, {"pkgs": ["bash", "coreutils"]}]),
    ("installed_absent", "pkg.installed", [{"name": "saltq-nosuch-pkg"}]),
    ("installed_pkgs_mixed", "pkg.installed", [{"name": "x"}, {"pkgs": ["bash", "saltq-nosuch-a", "saltq-nosuch-b"]}]),
    ("installed_version_other", "pkg.installed", [{"name": "bash"}, {"version": "0.0.1-1"}]),
    ("removed_absent", "pkg.removed", [{"name": "saltq-nosuch-pkg"}]),
    ("removed_absent_pkgs", "pkg.removed", [{"name": "x"}, {"pkgs": ["saltq-nosuch-a", "saltq-nosuch-b"]}]),
    ("purged_absent", "pkg.purged", [{"name": "saltq-nosuch-pkg"}]),
    ("installed_glob_version", "pkg.installed", [{"name": "bash"}, {"version": "5.*"}]),
    ("installed_pkgs_conditions", "pkg.installed", [{"name": "x"}, {"pkgs": [{"bash": ">=4.0"}, {"coreutils": ">=1,<100"}]}]),
    ("installed_condition_unmet", "pkg.installed", [{"name": "x"}, {"pkgs": [{"bash": "<1.0"}]}]),
    ("installed_empty_pkgs", "pkg.installed", [{"name": "x"}, {"pkgs": []}]),
    ("removed_version_mismatch", "pkg.removed", [{"name": "bash"}, {"version": "0.1"}]),
    ("latest_missing", "pkg.latest", [{"name": "saltq-nosuch-pkg"}]),
    ("latest_empty_pkgs", "pkg.latest", [{"name": "x"}, {"pkgs": []}]),
    ("watch_bad", "pkg.mod_watch", [{"name": "bash"}, {"sfun": "uptodate"}]),
    ("removed_present", "pkg.removed", [{"name": "bash"}]),
    ("purged_present", "pkg.purged", [{"name": "bash"}]),
]

# Changes that would really remove packages run only in test mode.
# (`removed_present`/`purged_present` name bash: never run outside test mode.)
TEST_ONLY = {"removed_present", "purged_present", "installed_condition_unmet"}


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
        cases = [c for c in CASES if test or c[0] not in TEST_ONLY]
        got = run(cases, test)
        for cid, fun, args in cases:
            records.append({"id": cid, "fun": fun, "args": args, "test": test, "ret": got[cid]})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(records)} cases", file=sys.stderr)


# A sequence that really installs and removes two small packages (`hello`, `sl`), each
# step one salt-call in this order; written to `installs.json`. Needs root and the Debian
# mirror; run with `--installs`.
INSTALLS = [
    ("i01_cleanup", "pkg.purged", [{"name": "x"}, {"pkgs": ["hello", "sl"]}], False),
    ("i02_installed_test", "pkg.installed", [{"name": "hello"}], True),
    ("i03_installed", "pkg.installed", [{"name": "hello"}], False),
    ("i04_installed_again", "pkg.installed", [{"name": "hello"}], False),
    ("i05_latest_current", "pkg.latest", [{"name": "hello"}], False),
    ("i06_installed_pkgs_test", "pkg.installed", [{"name": "x"}, {"pkgs": ["hello", "sl"]}], True),
    ("i07_installed_pkgs", "pkg.installed", [{"name": "x"}, {"pkgs": ["hello", "sl"]}], False),
    ("i08_removed_test", "pkg.removed", [{"name": "x"}, {"pkgs": ["hello", "sl", "saltq-nosuch-a"]}], True),
    ("i09_removed", "pkg.removed", [{"name": "x"}, {"pkgs": ["hello", "saltq-nosuch-a"]}], False),
    ("i10_latest_test", "pkg.latest", [{"name": "x"}, {"pkgs": ["hello", "sl"]}], True),
    ("i11_latest", "pkg.latest", [{"name": "x"}, {"pkgs": ["hello", "sl"]}], False),
    ("i12_purged", "pkg.purged", [{"name": "sl"}], False),
    ("i13_removed", "pkg.removed", [{"name": "hello"}], False),
    ("i14_purged_partial", "pkg.purged", [{"name": "hello"}], False),
    ("i15_latest_missing", "pkg.latest", [{"name": "saltq-nosuch-pkg"}], False),
]


def installs():
    records = []
    for cid, fun, args, test in INSTALLS:
        got = run([(cid, fun, args)], test)
        records.append({"id": cid, "fun": fun, "args": args, "test": test, "ret": got[cid]})
        print(cid, json.dumps(got[cid]), file=sys.stderr)
    with open(os.path.join(HERE, "installs.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    if "--installs" in sys.argv:
        installs()
    else:
        main()
