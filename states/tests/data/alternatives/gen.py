"""Record what Salt 3007.8's `alternatives.install/remove/set/auto` answer
(`salt/states/alternatives.py` over `salt/modules/alternatives.py`) with update-alternatives
on this host (as root: Salt reads /etc/alternatives, so no --altdir): a group of the
recording's own, `saltq-rec-alt` (link /usr/local/bin/saltq-rec-alt, choices /usr/bin/true
and /usr/bin/false), removed again at the end. The Rust test replays the steps on a group
with a name of its own and removes it.

Regenerate (from the repository root, as root; Salt 3007.8 in a venv):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/alternatives/gen.py
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

NAME = "saltq-rec-alt"
LINK = "/usr/local/bin/saltq-rec-alt"
T = "/usr/bin/true"
F = "/usr/bin/false"


def clean():
    subprocess.run(["update-alternatives", "--remove-all", NAME], capture_output=True, check=False)
    if os.path.lexists(LINK):
        os.unlink(LINK)


def inst(path, prio):
    return [{"name": NAME}, {"link": LINK}, {"path": path}, {"priority": prio}]


STEPS = [
    ("remove_missing", "alternatives.remove", [{"name": NAME}, {"path": T}], False),
    ("set_missing_group", "alternatives.set", [{"name": NAME}, {"path": T}], False),
    ("install_test", "alternatives.install", inst(T, 10), True),
    ("install", "alternatives.install", inst(T, 10), False),
    ("install_again", "alternatives.install", inst(T, 10), False),
    ("install_again_test", "alternatives.install", inst(T, 10), True),
    ("install_lower", "alternatives.install", inst(F, 5), False),
    ("auto_already", "alternatives.auto", [{"name": NAME}], False),
    ("set_test", "alternatives.set", [{"name": NAME}, {"path": F}], True),
    ("set", "alternatives.set", [{"name": NAME}, {"path": F}], False),
    ("set_again", "alternatives.set", [{"name": NAME}, {"path": F}], False),
    ("set_unknown", "alternatives.set", [{"name": NAME}, {"path": "/usr/bin/saltq-nope"}], False),
    ("auto_test", "alternatives.auto", [{"name": NAME}], True),
    ("auto", "alternatives.auto", [{"name": NAME}], False),
    ("auto_again", "alternatives.auto", [{"name": NAME}], False),
    ("install_higher", "alternatives.install", inst(F, 20), False),
    ("remove_test", "alternatives.remove", [{"name": NAME}, {"path": F}], True),
    ("remove", "alternatives.remove", [{"name": NAME}, {"path": F}], False),
    ("remove_last", "alternatives.remove", [{"name": NAME}, {"path": T}], False),
    ("remove_again", "alternatives.remove", [{"name": NAME}, {"path": T}], False),
]

if __name__ == "__main__":
    clean()
    try:
        sysrec.record(HERE, STEPS)
    finally:
        clean()
