"""Record what Salt 3007.8's `ssh_known_hosts.present`/`absent` answer
(`salt/states/ssh_known_hosts.py` over `salt/modules/ssh.py`) on a known_hosts file in the
scratch directory (`config: @DIR@/known_hosts`), keys given (no ssh-keyscan).

Regenerate (from the repository root; Salt 3007.8 in a venv, SALT_CALL naming its salt-call):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/ssh_known_hosts/gen.py

`ssh-keygen -H` hashes host names with a random salt, so the test compares hashed names
(`|1|salt|hash`) as such, not their bytes.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

K1 = "AAAAC3NzaC1lZDI1NTE5AAAAIGwL6OrlTM1WAGPzEhxZij/R+yrGW6A7/vMxJ6uWQzpA"
K2 = "AAAAC3NzaC1lZDI1NTE5AAAAIKVK0R0a1o6WQSp9vyCd8No79AW/HiY/qlO39IAh2YRJ"
CONF = "@DIR@/known_hosts"
P = "ssh_known_hosts.present"
A = "ssh_known_hosts.absent"


def host(name, *extra, config=CONF):
    out = [{"name": name}]
    if config:
        out.append({"config": config})
    return out + list(extra)


ENC = {"enc": "ssh-ed25519"}
NOHASH = {"hash_known_hosts": False}

STEPS = [
    ("absent_no_file", A, host("one.example"), False),
    ("relative_config", P, host("one.example", {"key": K1}, ENC, config="kh"), False),
    ("relative_config_absent", A, host("one.example", config="kh"), False),
    ("key_and_fingerprint_test", P, host("one.example", {"key": K1}, {"fingerprint": "aa"}), True),
    ("key_without_enc_test", P, host("one.example", {"key": K1}), True),
    ("add_test", P, host("one.example", {"key": K1}, ENC), True),
    ("add", P, host("one.example", {"key": K1}, ENC, NOHASH), False),
    ("add_again", P, host("one.example", {"key": K1}, ENC, NOHASH), False),
    ("add_again_test", P, host("one.example", {"key": K1}, ENC), True),
    ("update_test", P, host("one.example", {"key": K2}, ENC), True),
    ("update", P, host("one.example", {"key": K2}, ENC, NOHASH), False),
    ("second_host", P, host("two.example", {"key": K1}, ENC, NOHASH), False),
    ("absent_test", A, host("one.example"), True),
    ("absent", A, host("one.example"), False),
    ("absent_again", A, host("one.example"), False),
    ("hashed_add", P, host("three.example", {"key": K2}, ENC), False),
    ("hashed_again", P, host("three.example", {"key": K2}, ENC), False),
    ("hashed_absent", A, host("three.example"), False),
]

if __name__ == "__main__":
    sysrec.record(HERE, STEPS)
