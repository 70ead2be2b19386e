"""Records what Salt 3007.8 makes of the Jinja cases of issue #35 (value semantics, the
execution functions formulas call from templates, the version grains) in cases.json, with
the grains, pillar and loader of ../render/gen.py (which this reuses, pointed at this
folder), into recordings.json here. The saltversion/pythonversion grains are computed by
Salt itself (the venv's Python), not by the fixed grains.

Regenerate (from the repository root), with a venv holding salt==3007.8:

    SALT_VENV=/tmp/salt-venv; $SALT_VENV/bin/python states/tests/data/jinja35/record.py
"""

import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("gen", os.path.join(HERE, "..", "render", "gen.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
gen.HERE = HERE
# The version grains come from Salt's core grains; the cases see them beside the fixed ones.
import salt.grains.core  # noqa: E402

gen.GRAINS = dict(gen.GRAINS, osmajorrelease=12, **salt.grains.core.saltversion(),
                  **salt.grains.core.saltversioninfo(),
                  **salt.grains.core.pythonversion())
gen.main()
