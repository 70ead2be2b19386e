"""Record what Salt 3007.8's `kmod` states answer (`salt/states/kmod.py`) on a host that
has no kernel modules to manage: a container without `lsmod` (the `kmod` package), without
`/proc/modules` and without `/lib/modules`. Salt's `kmod` module then raises "Command
'lsmod' cannot be found" from the first `kmod.mod_list`, in test mode too, so every state
fails with that error (as a traceback in Salt's comment).

Regenerate (from the repository root, on such a host):

    /work/saltvenv/bin/python states/tests/data/kmod/gen.py
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

P = "kmod.present"
A = "kmod.absent"
STEPS = [
    ("present_test", P, [{"name": "dummy"}], True),
    ("present", P, [{"name": "dummy"}], False),
    ("present_persist", P, [{"name": "dummy"}, {"persist": True}], False),
    ("present_mods", P, [{"name": "net"}, {"mods": ["dummy", "veth"]}], False),
    ("absent_test", A, [{"name": "dummy"}], True),
    ("absent", A, [{"name": "dummy"}, {"persist": True}, {"comment": False}], False),
]

if __name__ == "__main__":
    if shutil.which("lsmod") or os.path.exists("/proc/modules"):
        sys.exit("this host has lsmod or /proc/modules: not the host this recording is of")
    scratch = sysrec.record(HERE, STEPS)
    shutil.rmtree(scratch, ignore_errors=True)
