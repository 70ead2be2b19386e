"""Record what Salt 3007.8's `grains` states answer (`salt/states/grains.py`) on a grains
file of the recording's own (Salt's `<config dir>/grains`; saltq's `grains_file` option).

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/grains/gen.py

Each step is one `salt-call --local`, which reads the grains file afresh; `cases.json` keeps
the grains file Salt left (compared as YAML data by the Rust test).
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

SETUP = {
    "conf/grains": "roles:\n- web\nenv: prod\nnested:\n  a: 1\nempty_list: []\nnullg: null\n"
    "scalar: one\n",
}

G = "grains."
STEPS = [
    ("exists", G + "exists", [{"name": "roles"}], False),
    ("exists_missing", G + "exists", [{"name": "saltq_nosuch"}], False),
    ("exists_nested", G + "exists", [{"name": "nested:a"}], False),
    ("present_new_test", G + "present", [{"name": "color"}, {"value": "blue"}], True),
    ("present_new", G + "present", [{"name": "color"}, {"value": "blue"}], False),
    ("present_again", G + "present", [{"name": "color"}, {"value": "blue"}], False),
    ("present_change_test", G + "present", [{"name": "color"}, {"value": "red"}], True),
    ("present_change", G + "present", [{"name": "color"}, {"value": "red"}], False),
    ("present_complex_noforce", G + "present", [{"name": "nested"}, {"value": {"b": 2}}], False),
    ("present_complex_force", G + "present", [{"name": "nested"}, {"value": {"b": 2}}, {"force": True}], False),
    ("present_nested_new", G + "present", [{"name": "app:port"}, {"value": 8080}], False),
    ("present_delimiter", G + "present", [{"name": "app,host"}, {"value": "h1"}, {"delimiter": ","}], False),
    ("present_under_scalar", G + "present", [{"name": "scalar:x"}, {"value": 1}], False),
    ("present_list_value", G + "present", [{"name": "ports"}, {"value": [80, 443]}], False),
    ("list_present_new_test", G + "list_present", [{"name": "tags"}, {"value": "a"}], True),
    ("list_present_new", G + "list_present", [{"name": "tags"}, {"value": "a"}], False),
    ("list_present_again", G + "list_present", [{"name": "tags"}, {"value": "a"}], False),
    ("list_present_more_test", G + "list_present", [{"name": "tags"}, {"value": ["b", "c"]}], True),
    ("list_present_more", G + "list_present", [{"name": "tags"}, {"value": ["b", "c"]}], False),
    ("list_present_subset", G + "list_present", [{"name": "tags"}, {"value": ["a", "c"]}], False),
    ("list_present_not_list", G + "list_present", [{"name": "env"}, {"value": "x"}], False),
    ("list_present_empty", G + "list_present", [{"name": "empty_list"}, {"value": "x"}], False),
    ("list_absent_test", G + "list_absent", [{"name": "tags"}, {"value": ["a", "z"]}], True),
    ("list_absent", G + "list_absent", [{"name": "tags"}, {"value": ["a", "z"]}], False),
    ("list_absent_not_list", G + "list_absent", [{"name": "env"}, {"value": "prod"}], False),
    ("list_absent_missing", G + "list_absent", [{"name": "saltq_nosuch"}, {"value": "x"}], False),
    ("append_test", G + "append", [{"name": "roles"}, {"value": "db"}], True),
    ("append", G + "append", [{"name": "roles"}, {"value": "db"}], False),
    ("append_again", G + "append", [{"name": "roles"}, {"value": "db"}], False),
    ("append_not_list", G + "append", [{"name": "env"}, {"value": "x"}], False),
    ("append_convert_test", G + "append", [{"name": "env"}, {"value": "x"}, {"convert": True}], True),
    ("append_convert", G + "append", [{"name": "env"}, {"value": "x"}, {"convert": True}], False),
    ("append_missing", G + "append", [{"name": "saltq_nosuch"}, {"value": "x"}], False),
    ("append_null", G + "append", [{"name": "nullg"}, {"value": "x"}, {"convert": True}], False),
    ("absent_test", G + "absent", [{"name": "color"}], True),
    ("absent", G + "absent", [{"name": "color"}], False),
    ("absent_again", G + "absent", [{"name": "color"}], False),
    ("absent_destructive_test", G + "absent", [{"name": "color"}, {"destructive": True}], True),
    ("absent_destructive", G + "absent", [{"name": "color"}, {"destructive": True}], False),
    ("absent_missing", G + "absent", [{"name": "saltq_nosuch"}], False),
    ("absent_complex", G + "absent", [{"name": "tags"}], False),
    ("absent_complex_force", G + "absent", [{"name": "tags"}, {"force": True}, {"destructive": True}], False),
    ("absent_nested", G + "absent", [{"name": "app:port"}, {"destructive": True}], False),
]

if __name__ == "__main__":
    scratch = sysrec.record(HERE, STEPS, setup=SETUP, files=["conf/grains"])
    shutil.rmtree(scratch, ignore_errors=True)
