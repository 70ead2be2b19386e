"""Record what Salt 3007.8's `debconf.set`/`debconf.set_file` answer
(`salt/states/debconfmod.py` over `salt/modules/debconfmod.py`) on a debconf database of the
scratch directory's own: `DEBCONF_SYSTEMRC` names `@DIR@/debconf.conf`, whose File drivers
keep the answers in `@DIR@/config.dat`, so the host's debconf is not touched (Salt and saltq
both run debconf-set-selections / debconf-get-selections, which read that variable).

Regenerate (from the repository root; Salt 3007.8 in a venv, SALT_CALL naming its salt-call;
debconf-utils installed):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/debconf/gen.py
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

CONF = """Config: configdb
Templates: templatedb

Name: configdb
Driver: File
Filename: @DIR@/config.dat

Name: templatedb
Driver: File
Filename: @DIR@/templates.dat
"""

SETUP = {
    "debconf.conf": CONF,
    "sel.txt": "saltq-rec saltq-rec/fromfile string from a file\n",
    "sel.j2": "saltq-rec saltq-rec/templated string {{ v }}\n",
}

PKG = "saltq-rec"
S = "debconf.set"
F = "debconf.set_file"


def data(**answers):
    return {"data": {f"{PKG}/{k}": v for k, v in answers.items()}}


STEPS = [
    ("set_test", S, [{"name": PKG}, data(q1={"type": "string", "value": "hello"},
                                         q2={"type": "boolean", "value": True})], True),
    ("set", S, [{"name": PKG}, data(q1={"type": "string", "value": "hello"},
                                    q2={"type": "boolean", "value": True})], False),
    ("set_again", S, [{"name": PKG}, data(q1={"type": "string", "value": "hello"},
                                          q2={"type": "boolean", "value": True})], False),
    ("set_again_test", S, [{"name": PKG}, data(q1={"type": "string", "value": "hello"})], True),
    ("set_partial", S, [{"name": PKG}, data(q1={"type": "string", "value": "hello"},
                                            q3={"type": "select", "value": "b"},
                                            q2={"type": "boolean", "value": False})], False),
    ("set_password", S, [{"name": PKG}, data(pw={"type": "password", "value": "s3cret"})],
     False),
    ("set_int", S, [{"name": PKG}, data(n={"type": "string", "value": 5})], False),
    ("set_int_again", S, [{"name": PKG}, data(n={"type": "string", "value": 5})], False),
    ("file_test", F, [{"name": "f"}, {"source": "@DIR@/sel.txt"}], True),
    ("file", F, [{"name": "f"}, {"source": "@DIR@/sel.txt"}], False),
    ("file_after", S, [{"name": PKG}, data(fromfile={"type": "string", "value": "from a file"})],
     False),
    ("file_missing", F, [{"name": "f"}, {"source": "@DIR@/nope.txt"}], False),
    ("file_bad_context", F, [{"name": "f"}, {"source": "@DIR@/sel.j2"}, {"context": "x"}],
     False),
    ("file_bad_defaults", F, [{"name": "f"}, {"source": "@DIR@/sel.j2"}, {"defaults": [1]}],
     False),
    ("file_template", F, [{"name": "f"}, {"source": "@DIR@/sel.j2"}, {"template": "jinja"},
                          {"context": {"v": "rendered"}}], False),
    ("template_after", S, [{"name": PKG},
                           data(templated={"type": "string", "value": "rendered"})], False),
]


def prepare(scratch):
    os.environ["DEBCONF_SYSTEMRC"] = scratch + "/debconf.conf"


if __name__ == "__main__":
    sysrec.record(HERE, STEPS, setup=SETUP, prepare=prepare)
