"""Extracts the cases of Salt's requisite tests as JSON (on stdout).

The result is a third-party input kept outside the project, at
../shared/third-party/salt-tests/requisites-cases.json beside the checkout (the tests and
gen.py read it there); run this to check or remake that file.

Origin: Salt 3007.8, tests/pytests/functional/modules/state/requisites/*.py
(https://github.com/saltstack/salt, Apache-2.0). Only the inputs are taken from
there: each test's SLS files and its state.sls / state.single call. What Salt
answers is recorded by gen.py from the real Salt, not copied from the tests.

Regenerate (the tests come from Salt's sdist, `pip download salt==3007.8 --no-binary :all:`):

    tar xzf salt-3007.8.tar.gz salt-3007.8/tests/pytests/functional/modules/state/requisites
    /work/saltvenv/bin/python states/tests/data/requisites/extract.py \
        salt-3007.8/tests/pytests/functional/modules/state/requisites \
        > /tmp/requisites-cases.json
    diff /tmp/requisites-cases.json ../shared/third-party/salt-tests/requisites-cases.json
"""

import ast
import itertools
import json
import pathlib
import sys
import textwrap

# What the tests' helpers stand for in the recorded trees: `{TMP}` is a fresh directory
# given to each case by gen.py and by our tests alike.
HELPERS = {
    "shell_test_true": "true",
    "shell_test_false": "false",
}


def const(node, env):
    """The value of a literal node, with names from `env`, or raise ValueError."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise ValueError(node.id)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [const(e, env) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {const(k, env): const(v, env) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return f"{const(node.left, env)}/{const(node.right, env)}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = node.func.attr
        if name in HELPERS:
            return HELPERS[name]
        if name == "format":
            base = const(node.func.value, env)
            kw = {k.arg: const(k.value, env) for k in node.keywords}
            return base.format(**kw)
        if name == "dedent":
            return textwrap.dedent(const(node.args[0], env))
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                out.append(str(const(part.value, env)))
            else:
                out.append(part.value)
        return "".join(out)
    raise ValueError(ast.dump(node)[:80])


def calls(fn):
    """Every call node in the function, in source order."""
    return sorted(
        (n for n in ast.walk(fn) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    )


def params(fn):
    """The parametrize expansions of a test: a list of {argname: value}."""
    out = [{}]
    for deco in fn.decorator_list:
        if (
            isinstance(deco, ast.Call)
            and isinstance(deco.func, ast.Attribute)
            and deco.func.attr == "parametrize"
        ):
            names = [n.strip() for n in const(deco.args[0], {}).split(",")]
            rows = const(deco.args[1], {})
            expanded = []
            for base, row in itertools.product(out, rows):
                row = row if len(names) > 1 else [row]
                expanded.append({**base, **dict(zip(names, row))})
            out = expanded
    return out


def cases_of(path, fn):
    for n, pvals in enumerate(params(fn)):
        env = {"tmp_path": "{TMP}", "state_tree": "{TREE}", **pvals}
        files, skipped = {}, []
        case_calls = []
        # Twice: a name may be assigned in a branch the walk reaches after its use
        # (the else branch, the non-Windows one, is reached last and wins).
        for node in [*ast.walk(fn), *ast.walk(fn)]:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    try:
                        env[target.id] = const(node.value, env)
                    except ValueError:
                        pass
        for call in calls(fn):
            f = call.func
            if isinstance(f, ast.Attribute) and f.attr == "temp_file":
                try:
                    name = const(call.args[0], env)
                    text = textwrap.dedent(const(call.args[1], env))
                    files[name] = text
                except ValueError as e:
                    skipped.append(f"temp_file: {e}")
            if (
                isinstance(f, ast.Attribute)
                and f.attr in ("sls", "single")
                and isinstance(f.value, ast.Name)
                and f.value.id in ("state", "state_mod")
            ):
                args = [const(a, env) for a in call.args]
                kwargs = {
                    k.arg: const(k.value, env)
                    for k in call.keywords
                    if not k.arg.startswith("__pub")
                }
                case_calls.append({"fun": f"state.{f.attr}", "args": args, "kwargs": kwargs})
        if not case_calls:
            continue
        base = f"{path.name}::{fn.name}"
        if len(params(fn)) > 1:
            base += f"[{n}]"
        for i, c in enumerate(case_calls):
            name = base if len(case_calls) == 1 else f"{base}#{i}"
            yield {"name": name, "files": files, "call": c, "extract_notes": skipped}


def main():
    root = pathlib.Path(sys.argv[1])
    out = []
    for path in sorted(root.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for fn in tree.body:
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
                out.extend(cases_of(path, fn))
    json.dump(out, sys.stdout, indent=1, sort_keys=False)
    print()


if __name__ == "__main__":
    main()
