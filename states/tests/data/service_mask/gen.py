"""Record what Salt 3007.8's `service.masked`/`service.unmasked` answer
(`salt/states/service.py` over `salt/modules/systemd_service.py`) on this host, as root,
for a unit of the recording's own that does not exist (`saltq-rec-unit`: masking it only
makes the /etc/systemd/system/saltq-rec-unit.service -> /dev/null link), unmasked again at
the end. The Rust test replays the steps on a unit named for its run and removes the link.

Regenerate (from the repository root, as root; Salt 3007.8 in a venv):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/service_mask/gen.py
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

UNIT = "saltq-rec-unit"
LINKS = [f"/etc/systemd/system/{UNIT}.service", f"/run/systemd/system/{UNIT}.service"]


def clean():
    for link in LINKS:
        if os.path.islink(link):
            os.unlink(link)


M = "service.masked"
U = "service.unmasked"

STEPS = [
    ("unmasked_already", U, [{"name": UNIT}], False),
    ("masked_test", M, [{"name": UNIT}], True),
    ("masked", M, [{"name": UNIT}], False),
    ("masked_again", M, [{"name": UNIT}], False),
    ("masked_again_test", M, [{"name": UNIT}], True),
    ("unmasked_test", U, [{"name": UNIT}], True),
    ("unmasked", U, [{"name": UNIT}], False),
    ("unmasked_again", U, [{"name": UNIT}], False),
    ("runtime_masked_test", M, [{"name": UNIT}, {"runtime": True}], True),
    ("runtime_unmasked", U, [{"name": UNIT}, {"runtime": True}], False),
]

if __name__ == "__main__":
    clean()
    try:
        sysrec.record(HERE, STEPS)
    finally:
        clean()
