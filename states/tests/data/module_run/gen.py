"""Record what Salt 3007.8 answers for `module.run` (both syntaxes), `module.wait`.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/module_run/gen.py

Each case becomes one state of a generated SLS, applied with `salt-call --local` (once
without and once with `test=True`); the state's `name`, `result`, `comment` and `changes`
are written to `cases.json` with the state function and its arguments.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"

# (id, state function, arguments as the SLS gives them, in order)
CASES = [
    ("new_kwarg", "module.run", [{"test.echo": [{"text": "hello"}]}]),
    ("new_positional", "module.run", [{"test.echo": ["hello"]}]),
    ("new_two", "module.run", [{"test.echo": [{"text": "a"}]}, {"test.true": []}]),
    ("new_none_args", "module.run", [{"test.ping": None}]),
    ("new_false", "module.run", [{"test.false": []}]),
    ("new_missing_fn", "module.run", [{"nosuch.fun": []}]),
    ("new_missing_two", "module.run", [{"nosuch.fun": []}, {"other.fun": []}, {"test.true": []}]),
    ("new_missing_arg", "module.run", [{"test.echo": []}]),
    ("new_bad_kwarg", "module.run", [{"test.echo": [{"text": "x"}, {"bogus": 1}]}]),
    ("new_kwarg_fn", "module.run", [{"test.kwarg": [{"a": 1}, {"b": "two"}]}]),
    ("new_too_many", "module.run", [{"test.true": ["extra"]}]),
    ("new_suffix", "module.run", [{"test.echo:first": [{"text": "one"}]}]),
    ("new_retcode_dict", "module.run", [{"test.echo": [{"text": {"retcode": 3}}]}]),
    ("new_result_dict", "module.run", [{"test.echo": [{"text": {"result": False, "comment": "nope"}}]}]),
    ("new_with_name", "module.run", [{"name": "ignored"}, {"test.echo": [{"text": "n"}]}]),
    ("legacy", "module.run", [{"name": "test.echo"}, {"text": "hi"}]),
    ("legacy_noargs", "module.run", [{"name": "test.ping"}]),
    ("legacy_false", "module.run", [{"name": "test.false"}]),
    ("legacy_missing", "module.run", [{"name": "test.echo"}]),
    ("legacy_unavailable", "module.run", [{"name": "nosuch.fun"}]),
    ("legacy_exception", "module.run", [{"name": "test.exception"}, {"message": "boom"}]),
    ("legacy_kwargs", "module.run", [{"name": "test.kwarg"}, {"kwargs": {"a": 1}}]),
    ("legacy_kwargs_not_dict", "module.run", [{"name": "test.kwarg"}, {"kwargs": [1]}]),
    ("legacy_dict_result", "module.run", [{"name": "test.echo"}, {"text": {"result": False}}]),
    ("legacy_m_name_extra", "module.run", [{"name": "test.echo"}, {"text": "t"}, {"other": 1}]),
    ("legacy_m_name", "module.run", [{"name": "user.info"}, {"m_name": "root"}]),
    ("legacy_name_missing", "module.run", [{"name": "user.info"}]),
    ("legacy_varargs", "module.run", [{"name": "test.arg"}, {"args": [1, "two"]}, {"kwargs": {"k": "v"}}]),
    ("legacy_varargs_not_list", "module.run", [{"name": "test.arg"}, {"args": "x"}]),
    ("legacy_default_override", "module.run", [{"name": "grains.get"}, {"key": "nosuch"}, {"default": "dflt"}]),
    ("new_default_kwarg", "module.run", [{"grains.get": [{"key": "nosuch"}, {"default": "dflt"}]}]),
    ("new_mixed_positional", "module.run", [{"grains.get": ["nosuch", "dflt"]}]),
    ("wait", "module.wait", [{"name": "test.echo"}, {"text": "w"}]),
    ("watch", "module.watch", [{"name": "test.echo"}, {"text": "w"}]),
]


def run(cases, test):
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/srv")
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {d}/srv\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: labminion\n"
            )
        sls = {cid: {fun: args} for cid, fun, args in cases}
        with open(f"{d}/srv/cases.sls", "w") as f:
            json.dump(sls, f)
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply", "cases"]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        got = json.loads(out)["local"]
    by_id = {}
    for ret in got.values():
        by_id[ret["__id__"]] = {k: ret[k] for k in ("name", "result", "comment", "changes")}
        for extra in ("warnings",):
            if extra in ret:
                by_id[ret["__id__"]][extra] = ret[extra]
    return by_id


def main():
    records = []
    for test in (False, True):
        got = run(CASES, test)
        for cid, fun, args in CASES:
            records.append({"id": cid, "fun": fun, "args": args, "test": test, "ret": got[cid]})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(records)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
