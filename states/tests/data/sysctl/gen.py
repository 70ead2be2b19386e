"""Record what Salt 3007.8's `sysctl.present` answers (`salt/states/sysctl.py`), with its
config file in the scratch directory (`config: @DIR@/sysctl.conf`).

Regenerate (from the repository root, as root, where /proc/sys is writable):

    /work/saltvenv/bin/python states/tests/data/sysctl/gen.py

Keys used, both harmless: `net.ipv4.conf.lo.arp_announce` (ARP on the loopback device,
which does no ARP) is set to 1 and back to 0; `net.ipv4.ping_group_range` is only ever
written its current value (`1 0`, spelled with other whitespace). The Rust test restores
both whatever happens.
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

KEY = "net.ipv4.conf.lo.arp_announce"
RANGE = "net.ipv4.ping_group_range"
CONF = "@DIR@/sysctl.conf"
P = "sysctl.present"


def args(name, value, config=CONF):
    out = [{"name": name}, {"value": value}]
    if config:
        out.append({"config": config})
    return out


STEPS = [
    ("missing_file_same_value_test", P, args(KEY, 0), True),
    ("change_test", P, args(KEY, 1), True),
    ("change", P, args(KEY, 1), False),
    ("again", P, args(KEY, 1), False),
    ("again_test", P, args(KEY, 1), True),
    ("back_test", P, args(KEY, 0), True),
    ("back", P, args(KEY, 0), False),
    ("spaces_test", P, args(RANGE, "1   0"), True),
    ("spaces", P, args(RANGE, "1   0"), False),
    ("spaces_again", P, args(RANGE, "1 0"), False),
    ("nosuch_test", P, args("net.saltq.nosuch", 1), True),
    ("nosuch", P, args("net.saltq.nosuch", 1), False),
    ("unreadable_config_test", P, args(KEY, 0, "@DIR@/dir.conf"), True),
]


def prepare(scratch):
    os.makedirs(os.path.join(scratch, "dir.conf"))


if __name__ == "__main__":
    if open(f"/proc/sys/{KEY.replace('.', '/')}").read().strip() != "0":
        sys.exit(f"{KEY} is not 0 here: not recording")
    try:
        scratch = sysrec.record(
            HERE, STEPS, files=["sysctl.conf"], prepare=prepare
        )
    finally:
        subprocess.run(["sysctl", "-w", f"{KEY}=0"], check=True)
    shutil.rmtree(scratch, ignore_errors=True)
