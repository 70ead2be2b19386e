"""Record what Salt 3007.8's `timezone.system` answers (`salt/states/timezone.py`) on Debian
without a running systemd, in the two ways such a host can be:

- `timedatectl/`: the `timedatectl` program is installed but cannot talk to systemd (this
  machine, and CI's). Salt's `timezone` module uses `timedatectl` whenever it is on the
  PATH, so `get_hwclock` fails and the state fails with that error.
- `files/`: no `timedatectl`: Salt reads `/etc/timezone` and `/etc/localtime` and changes
  the zone by linking `/etc/localtime` and writing `/etc/timezone`. To record it,
  `/usr/bin/timedatectl` is moved aside while Salt runs, and put back afterwards.

The zone goes from `Etc/UTC` to `Etc/GMT` (the same offset, another abbreviation) and back.
`/etc/localtime`, `/etc/timezone` and `/usr/bin/timedatectl` are restored whatever happens.

Regenerate (from the repository root, as root, on a host whose zone is Etc/UTC):

    /work/saltvenv/bin/python states/tests/data/timezone/gen.py
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

S = "timezone.system"
TIMEDATECTL = "/usr/bin/timedatectl"
HIDDEN = TIMEDATECTL + ".saltq-hidden"

WITH_TIMEDATECTL = [
    ("same_test", S, [{"name": "Etc/UTC"}], True),
    ("same", S, [{"name": "Etc/UTC"}], False),
    ("change", S, [{"name": "Etc/GMT"}], False),
    ("unknown", S, [{"name": "Nowhere/Saltq"}], False),
]

FILES = [
    ("same_test", S, [{"name": "Etc/UTC"}], True),
    ("same", S, [{"name": "Etc/UTC"}], False),
    ("same_link_name", S, [{"name": "UTC"}], False),
    ("same_not_utc", S, [{"name": "Etc/UTC"}, {"utc": False}], False),
    ("change_test", S, [{"name": "Etc/GMT"}], True),
    ("change", S, [{"name": "Etc/GMT"}], False),
    ("again", S, [{"name": "Etc/GMT"}], False),
    ("back_test", S, [{"name": "Etc/UTC"}, {"utc": False}], True),
    ("back", S, [{"name": "Etc/UTC"}], False),
    ("unknown", S, [{"name": "Nowhere/Saltq"}], False),
    ("unknown_test", S, [{"name": "Nowhere/Saltq"}], True),
]


def main():
    if os.readlink("/etc/localtime") != "/usr/share/zoneinfo/Etc/UTC":
        sys.exit("/etc/localtime is not /usr/share/zoneinfo/Etc/UTC here: not recording")
    with open("/etc/timezone") as f:
        timezone = f.read()
    try:
        if os.path.exists(TIMEDATECTL):
            scratch = sysrec.record(os.path.join(HERE, "timedatectl"), WITH_TIMEDATECTL)
            shutil.rmtree(scratch, ignore_errors=True)
            os.rename(TIMEDATECTL, HIDDEN)
        scratch = sysrec.record(os.path.join(HERE, "files"), FILES)
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        if os.path.exists(HIDDEN):
            os.rename(HIDDEN, TIMEDATECTL)
        if os.path.lexists("/etc/localtime"):
            os.unlink("/etc/localtime")
        os.symlink("/usr/share/zoneinfo/Etc/UTC", "/etc/localtime")
        with open("/etc/timezone", "w") as f:
            f.write(timezone)


if __name__ == "__main__":
    main()
