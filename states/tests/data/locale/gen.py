"""Record what Salt 3007.8's `locale` states answer (`salt/states/locale.py`) on Debian
without a running systemd, where Salt's `locale` module reads and writes
`/etc/default/locale` (`update-locale`, then `LANG=` replaced or appended), lists locales
with `locale -a`, and generates one by enabling it in `/etc/locale.gen` and running
`locale-gen`.

Changed and put back afterwards, whatever happens: `/etc/default/locale`, `/etc/locale.gen`,
and `/usr/lib/locale/locale-archive` (absent before: `locale-gen` builds it).
`cases.json` also keeps the two /etc files as Salt left them (`etc`).

Regenerate (from the repository root, as root, on a host where only C, C.utf8 and POSIX
are generated and `en_US.UTF-8 UTF-8` is commented out in /etc/locale.gen):

    /work/saltvenv/bin/python states/tests/data/locale/gen.py
"""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

SYS = "locale.system"
PRE = "locale.present"
ARCHIVE = "/usr/lib/locale/locale-archive"
ETC = ["/etc/default/locale", "/etc/locale.gen"]

STEPS = [
    ("system_test", SYS, [{"name": "C.UTF-8"}], True),
    ("system", SYS, [{"name": "C.UTF-8"}], False),
    ("system_again", SYS, [{"name": "C.UTF-8"}], False),
    ("system_again_test", SYS, [{"name": "C.UTF-8"}], True),
    ("system_other", SYS, [{"name": "en_US.UTF-8"}], False),
    ("present_c", PRE, [{"name": "C.UTF-8"}], False),
    ("present_c_spelled", PRE, [{"name": "C.utf8"}], True),
    ("present_test", PRE, [{"name": "en_US.UTF-8"}], True),
    ("present", PRE, [{"name": "en_US.UTF-8"}], False),
    ("present_again", PRE, [{"name": "en_US.UTF-8"}], False),
    ("present_again_spelled", PRE, [{"name": "en_US.utf8"}], True),
    ("unsupported_test", PRE, [{"name": "xx_YY.UTF-8"}], True),
    ("unsupported", PRE, [{"name": "xx_YY.UTF-8"}], False),
]


def main():
    if os.path.exists(ARCHIVE):
        sys.exit(f"{ARCHIVE} exists here: not recording")
    saved = {}
    for path in ETC:
        with open(path) as f:
            saved[path] = f.read()
    try:
        scratch = sysrec.record(HERE, STEPS)
        shutil.rmtree(scratch, ignore_errors=True)
        after = {}
        for path in ETC:
            with open(path) as f:
                after[path] = f.read()
    finally:
        for path, text in saved.items():
            with open(path, "w") as f:
                f.write(text)
        if os.path.exists(ARCHIVE):
            os.unlink(ARCHIVE)
    out = os.path.join(HERE, "cases.json")
    with open(out) as f:
        rec = json.load(f)
    rec["etc"] = after
    with open(out, "w") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")
    subprocess.run(["locale", "-a"], check=True)


if __name__ == "__main__":
    main()
