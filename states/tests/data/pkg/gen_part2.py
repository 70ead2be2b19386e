"""Record what Salt 3007.8 answers for the second part of the `pkg` states: `pkg.held`,
`pkg.unheld`, `pkg.uptodate`, `pkg.installed` with `hold` and with `sources`, and
`pkg.purged` of an installed package. Needs root, apt and the Debian mirror (it installs,
holds and purges `hello`).

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/pkg/gen_part2.py

Each step is one `salt-call --local state.apply` of a one-state SLS, in this order (the
steps depend on each other); the state's `name`, `result`, `comment` and `changes` go to
`part2.json` with the state function and its arguments. `sources` steps install the `.deb`
that `apt-get download hello` puts in `/tmp/saltq-pkg-sources` (the Rust test downloads it
there too).
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import HERE, run  # noqa: E402

SRC_DIR = "/tmp/saltq-pkg-sources"


def hello_deb():
    os.makedirs(SRC_DIR, exist_ok=True)
    subprocess.run(["apt-get", "-q", "download", "hello"], cwd=SRC_DIR, check=True)
    debs = sorted(f for f in os.listdir(SRC_DIR) if f.startswith("hello_"))
    return os.path.join(SRC_DIR, debs[-1])


def steps(deb):
    src = [{"hello": deb}]
    return [
        ("h01_cleanup", "pkg.purged", [{"name": "x"}, {"pkgs": ["hello", "sl"]}], False),
        ("h02_held_empty", "pkg.held", [{"name": "x"}, {"pkgs": []}], False),
        ("h03_unheld_empty", "pkg.unheld", [{"name": "x"}, {"pkgs": []}], False),
        ("h04_held_test", "pkg.held", [{"name": "hello"}], True),
        ("h05_unheld_not_held", "pkg.unheld", [{"name": "hello"}], False),
        ("h06_installed_hold_test", "pkg.installed", [{"name": "hello"}, {"hold": True}], True),
        ("h07_installed_hold", "pkg.installed", [{"name": "hello"}, {"hold": True}], False),
        ("h08_held_already", "pkg.held", [{"name": "hello"}], False),
        ("h09_installed_hold_again", "pkg.installed", [{"name": "hello"}, {"hold": True}], False),
        ("h10_unheld_test", "pkg.unheld", [{"name": "hello"}], True),
        ("h11_unheld", "pkg.unheld", [{"name": "hello"}], False),
        ("h12_unheld_again", "pkg.unheld", [{"name": "hello"}], False),
        ("h13_held", "pkg.held", [{"name": "x"}, {"pkgs": ["hello"]}], False),
        ("h14_installed_unhold", "pkg.installed", [{"name": "hello"}, {"hold": False}], False),
        ("h15_uptodate_pkgs_test", "pkg.uptodate", [{"name": "x"}, {"pkgs": ["hello"]}], True),
        ("h16_uptodate_pkgs", "pkg.uptodate", [{"name": "x"}, {"pkgs": ["hello"]}], False),
        ("h17_uptodate_bad_refresh", "pkg.uptodate", [{"name": "x"}, {"refresh": "yes"}], False),
        ("h18_purged_installed", "pkg.purged", [{"name": "hello"}], False),
        ("h19_sources_test", "pkg.installed", [{"name": "x"}, {"sources": src}], True),
        ("h20_sources", "pkg.installed", [{"name": "x"}, {"sources": src}], False),
        ("h21_sources_again", "pkg.installed", [{"name": "x"}, {"sources": src}], False),
        ("h22_pkgs_and_sources", "pkg.installed", [{"name": "x"}, {"pkgs": ["hello"]}, {"sources": src}], False),
        ("h23_sources_missing", "pkg.installed", [{"name": "x"}, {"sources": [{"sl": "/tmp/saltq-pkg-sources/nosuch.deb"}]}], False),
        ("h24_cleanup", "pkg.purged", [{"name": "hello"}], False),
    ]


def main():
    deb = hello_deb()
    records = []
    for cid, fun, args, test in steps(deb):
        got = run([(cid, fun, args)], test)
        records.append({"id": cid, "fun": fun, "args": args, "test": test, "ret": got[cid]})
        print(cid, json.dumps(got[cid]), file=sys.stderr)
    with open(os.path.join(HERE, "part2.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
