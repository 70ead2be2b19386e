"""Records Salt 3007.8's `state.show_sls` and `state.show_low_sls` answers for the four public
formulas beside this file (the same grains, pillars and SLS lists as gen.py), for
states/tests/formulas_show.rs, which asks saltq's engine the same through `state.show_sls`
and `state.show_low_sls`.

Salt is driven as its `state.show_sls` drives itself: a HighState over the formula as
`file_roots`, render_highstate of the SLS, then verify_high (and compile_high_data for the
low chunks). Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/formulas/gen_show.py

It writes states/tests/data/formulas/show.json.
"""

import json
import os
import tempfile

import salt.config
import salt.state

import gen

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out = {"grains": gen.GRAINS, "cases": []}
    for name, (pillars, sls_list, _templates) in gen.FORMULAS.items():
        root_dir = os.path.join(gen.FORMULAS_DIR, name)
        if sls_list is None:
            sls_list = gen.all_sls(name)
        for pname, pillar in pillars.items():
            tmp = tempfile.mkdtemp()
            opts = salt.config.minion_config(None)
            opts.update(
                {
                    "id": "minion1",
                    "file_client": "local",
                    "file_roots": {"base": [root_dir]},
                    "cachedir": os.path.join(tmp, "cache"),
                    "pki_dir": os.path.join(tmp, "pki"),
                    "root_dir": tmp,
                    "log_file": os.path.join(tmp, "log"),
                    "grains": gen.GRAINS,
                    "__cli": "salt-minion",
                }
            )
            for sls in sls_list:
                st = salt.state.HighState(opts, initial_pillar=json.loads(json.dumps(pillar)))
                with st:
                    high, errors = st.render_highstate({"base": [sls]})
                    errors += st.state.verify_high(high)
                    if errors:
                        show, low = errors, errors
                    else:
                        show = high
                        low = st.state.compile_high_data(high)
                out["cases"].append(
                    {
                        "formula": name,
                        "pillar_name": pname,
                        "pillar": pillar,
                        "sls": sls,
                        "show_sls": json.loads(json.dumps(show)),
                        "show_low_sls": json.loads(json.dumps(low)),
                    }
                )
    with open(os.path.join(HERE, "show.json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
