"""Records what Salt 3007.8 renders from every public formula in ../shared/third-party/formulas
(issue #35's census): for each formula, every SLS file of its state folder through
`state.show_sls` (a HighState over the formula as `file_roots`, render_highstate, verify_high:
what `state.show_sls` does), on the grains of a Debian 12 host (gen.py's), with the formula's
`pillar.example` rendered by Salt itself as the pillar (none if it has none). It also lists the
execution functions each formula calls from its templates (`salt['mod.fun']` and
`salt.mod.fun(`), found in the text of its files.

states/tests/census.rs renders the same with saltq and prints the census. Regenerate (from the
repository root, with Salt 3007.8 in a venv):

    target/salt-venv/bin/python states/tests/data/census/record.py

It writes states/tests/data/census/salt3007.json. The formulas are third-party inputs read from
beside the checkout; only Salt's answers are kept here.
"""

import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "formulas"))

import gen  # noqa: E402  (the grains and the formulas' folder)

import salt.config  # noqa: E402
import salt.state  # noqa: E402

CALL = re.compile(r"""salt\[\s*['"]([A-Za-z_][\w]*\.[A-Za-z_]\w*)['"]\s*\]|\bsalt\.([a-z_]\w*\.[a-z_]\w*)\s*\(""")


def opts_for(root_dir, tmp):
    opts = salt.config.minion_config(None)
    opts.update(
        {
            "id": "minion1",
            "file_client": "local",
            "file_roots": {"base": [root_dir]},
            "pillar_roots": {"base": [os.path.join(tmp, "no-pillar")]},
            "cachedir": os.path.join(tmp, "cache"),
            "pki_dir": os.path.join(tmp, "pki"),
            "root_dir": tmp,
            "log_file": os.path.join(tmp, "log"),
            "grains": gen.GRAINS,
            "__cli": "salt-minion",
        }
    )
    return opts


def state_dir(formula):
    """The formula's folder of states: the one folder beside LICENSE that is not `test`."""
    base = os.path.join(gen.FORMULAS_DIR, formula)
    dirs = [
        d
        for d in sorted(os.listdir(base))
        if os.path.isdir(os.path.join(base, d)) and d not in ("test", "docs", "bin", ".github")
    ]
    if len(dirs) != 1:
        raise SystemExit(f"{formula}: cannot tell its state folder among {dirs}")
    return dirs[0]


def sls_names(formula, top):
    base = os.path.join(gen.FORMULAS_DIR, formula)
    names = []
    for dirpath, _, files in sorted(os.walk(os.path.join(base, top))):
        for name in sorted(files):
            if not name.endswith(".sls"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), base)[: -len(".sls")]
            if rel.endswith("/init"):
                rel = rel[: -len("/init")]
            names.append(rel.replace("/", "."))
    return names


def exec_calls(formula, top):
    found = set()
    for dirpath, _, files in os.walk(os.path.join(gen.FORMULAS_DIR, formula, top)):
        for name in files:
            try:
                with open(os.path.join(dirpath, name), encoding="utf-8") as fh:
                    text = fh.read()
            except (UnicodeDecodeError, OSError):
                continue
            for m in CALL.finditer(text):
                found.add(m.group(1) or m.group(2))
    return sorted(found)


PILLARS = os.path.join(HERE, "..", "..", "..", "src", "pillar", "testdata", "formulas")


def recorded_pillar(formula):
    """The formula's `pillar.example` as Salt 3007.8 compiles it (recorded for issue #33 by
    states/src/pillar/testdata/record_formulas.sh), or no pillar if it ships none."""
    path = os.path.join(PILLARS, f"{formula}__pillar.example.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        pillar = json.load(fh)
    # Where Salt's pillar compile of the example failed in part (bind, ntp, postfix), the rest
    # is still the formula's pillar; `state.show_sls` would refuse to render on `_errors`.
    pillar.pop("_errors", None)
    return pillar


def main():
    out = {"grains": gen.GRAINS, "formulas": []}
    only = set(sys.argv[1:])
    for formula in sorted(os.listdir(gen.FORMULAS_DIR)):
        if only and formula not in only:
            continue
        top = state_dir(formula)
        tmp = tempfile.mkdtemp()
        root = os.path.join(gen.FORMULAS_DIR, formula)
        opts = opts_for(root, tmp)
        pillar = recorded_pillar(formula)
        cases = []
        for sls in sls_names(formula, top):
            st = salt.state.HighState(opts, initial_pillar=json.loads(json.dumps(pillar)))
            with st:
                try:
                    high, errors = st.render_highstate({"base": [sls]})
                    errors += st.state.verify_high(high)
                except Exception as e:  # noqa: BLE001
                    high, errors = {}, [f"{type(e).__name__}: {e}"]
            show = errors if errors else high
            cases.append({"sls": sls, "rendered": not errors, "show_sls": json.loads(json.dumps(show))})
        out["formulas"].append(
            {
                "formula": formula,
                "main": top,
                "pillar": pillar,
                "exec_calls": exec_calls(formula, top),
                "cases": cases,
            }
        )
        print(f"{formula}: {len(cases)} SLS, {sum(c['rendered'] for c in cases)} rendered", file=sys.stderr)
    with open(os.path.join(HERE, "salt3007.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=None, separators=(",", ":"), sort_keys=False)
        fh.write("\n")


if __name__ == "__main__":
    main()
