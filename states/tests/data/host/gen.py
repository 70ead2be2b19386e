"""Record what Salt 3007.8's `host` states answer (`salt/states/host.py`), on a hosts file
of its own (`hosts.file: @DIR@/hosts`), never the real /etc/hosts.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/host/gen.py

Each step is one `salt-call --local state.apply` in order; `cases.json` also keeps the hosts
file Salt left, which the Rust test compares byte for byte.
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

SETUP = {
    "hosts": "# The test's hosts file\n127.0.0.1\tlocalhost\n::1 localhost ip6-localhost # loopback\n"
    "10.0.0.5 db db.lan\n\n10.0.0.6 cache\n",
}

P = "host.present"
A = "host.absent"
O = "host.only"
STEPS = [
    ("present_new_test", P, [{"name": "web"}, {"ip": "10.0.0.7"}], True),
    ("present_new", P, [{"name": "web"}, {"ip": "10.0.0.7"}], False),
    ("present_again", P, [{"name": "web"}, {"ip": "10.0.0.7"}], False),
    ("present_existing_ip", P, [{"name": "web2"}, {"ip": "10.0.0.5"}], False),
    ("present_two_ips_test", P, [{"name": "multi"}, {"ip": ["10.0.0.8", "10.0.0.5"]}], True),
    ("present_comment", P, [{"name": "api"}, {"ip": "10.0.0.9"}, {"comment": "the api"}], False),
    ("present_comment_change", P, [{"name": "api"}, {"ip": "10.0.0.9"}, {"comment": "new api"}], False),
    ("present_other_ip_warns", P, [{"name": "db"}, {"ip": "10.0.0.10"}], False),
    ("present_clean_test", P, [{"name": "db"}, {"ip": "10.0.0.10"}, {"clean": True}], True),
    ("present_clean", P, [{"name": "db"}, {"ip": "10.0.0.10"}, {"clean": True}], False),
    ("absent_missing", A, [{"name": "nosuch"}, {"ip": "10.0.0.5"}], False),
    ("absent_test", A, [{"name": "web2"}, {"ip": "10.0.0.5"}], True),
    ("absent", A, [{"name": "web2"}, {"ip": "10.0.0.5"}], False),
    ("absent_list", A, [{"name": "cache"}, {"ip": ["10.0.0.6", "10.0.0.99"]}], False),
    ("only_same", O, [{"name": "127.0.0.1"}, {"hostnames": "localhost"}], False),
    ("only_test", O, [{"name": "10.0.0.7"}, {"hostnames": ["www", "web"]}], True),
    ("only", O, [{"name": "10.0.0.7"}, {"hostnames": ["www", " web "]}], False),
    ("only_new_ip", O, [{"name": "10.0.0.11"}, {"hostnames": "fresh"}], False),
    ("only_clear", O, [{"name": "10.0.0.11"}, {"hostnames": []}], False),
]

if __name__ == "__main__":
    scratch = sysrec.record(
        HERE, STEPS, setup=SETUP, opts={"hosts.file": "@DIR@/hosts"}, files=["hosts"]
    )
    shutil.rmtree(scratch, ignore_errors=True)
