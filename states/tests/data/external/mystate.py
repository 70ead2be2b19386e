"""An external state module for saltq's tests (its `_states/mystate.py`).

`present` answers as a Salt state would: nothing to do when the name is `ok`, else a change
(or, in test mode, `result: None`). `broken` prints something that is not a state return.
"""

import json
import sys


def present(name, value=None, **kwargs):
    test = kwargs.pop("__test__", False)
    if name == "ok":
        return {"result": True, "comment": f"{name} is already present", "changes": {}}
    if test:
        return {"result": None, "comment": [f"{name} would be set", f"to {value}"], "changes": {}}
    return {
        "result": True,
        "comment": f"{name} set",
        "changes": {name: {"old": None, "new": value}},
        "warnings": ["custom"],
    }


def main():
    if sys.argv[1] == "--list":
        print(json.dumps(["present", "broken"]))
        return
    data = json.load(sys.stdin)
    if sys.argv[1] == "broken":
        print(json.dumps(["not", "a", "dict"]))
        return
    kwargs = dict(data["kwargs"], __test__=data["test"])
    print(json.dumps(present(*data["args"], **kwargs)))


main()
