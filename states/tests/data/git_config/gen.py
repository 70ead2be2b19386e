"""Record what Salt 3007.8's `git.config_set`/`git.config_unset` answer (`salt/states/git.py`
over `salt/modules/git.py`) on a repository in the scratch directory (`@DIR@/repo`, made by
`git init` before the first step; the Rust test makes its own the same way).

Regenerate (from the repository root; Salt 3007.8 in a venv, SALT_CALL naming its salt-call):

    SALT_CALL=/tmp/salt-venv-h7/bin/salt-call /tmp/salt-venv-h7/bin/python \
        states/tests/data/git_config/gen.py
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

sysrec.SALT_CALL = os.environ.get("SALT_CALL", sysrec.SALT_CALL)

REPO = {"repo": "@DIR@/repo"}
S = "git.config_set"
U = "git.config_unset"


def prepare(scratch):
    subprocess.run(["git", "init", "-q", scratch + "/repo"], check=True)


STEPS = [
    ("no_repo", S, [{"name": "user.email"}, {"value": "a@b.c"}], False),
    ("both", S, [{"name": "user.email"}, {"value": "a"}, {"multivar": ["b"]}, REPO], False),
    ("bad_kwarg", S, [{"name": "user.email"}, {"value": "a"}, {"colour": 1}, REPO], False),
    ("add_test", S, [{"name": "user.email"}, {"value": "a@b.c"}, REPO], True),
    ("add", S, [{"name": "user.email"}, {"value": "a@b.c"}, REPO], False),
    ("add_again", S, [{"name": "user.email"}, {"value": "a@b.c"}, REPO], False),
    ("change_test", S, [{"name": "user.email"}, {"value": "x@y.z"}, REPO], True),
    ("change", S, [{"name": "user.email"}, {"value": "x@y.z"}, REPO], False),
    ("int_value", S, [{"name": "core.abbrev"}, {"value": 12}, REPO], False),
    ("multivar", S, [{"name": "foo.bar"}, {"multivar": ["one", "two", 3]}, REPO], False),
    ("multivar_again", S, [{"name": "foo.bar"}, {"multivar": "one,two,3"}, REPO], False),
    ("multivar_reorder_test", S, [{"name": "foo.bar"}, {"multivar": ["two", "one", "3"]},
                                  REPO], True),
    ("unset_multi_test", U, [{"name": "foo.bar"}, REPO], True),
    ("unset_multi", U, [{"name": "foo.bar"}, REPO], False),
    ("unset_regex_multi", U, [{"name": "foo.bar"}, {"value_regex": "o"}, REPO], False),
    ("unset_value_regex", U, [{"name": "foo.bar"}, {"value_regex": "^3$"}, REPO], False),
    ("unset_all_test", U, [{"name": "foo.bar"}, {"all": True}, REPO], True),
    ("unset_all", U, [{"name": "foo.bar"}, {"all": True}, REPO], False),
    ("unset_missing", U, [{"name": "foo.bar"}, REPO], False),
    ("unset_key_regex", U, [{"name": "user\\..+"}, {"all": True}, REPO], False),
    ("unset_no_repo", U, [{"name": "foo.bar"}], False),
]

if __name__ == "__main__":
    sysrec.record(HERE, STEPS, prepare=prepare)
