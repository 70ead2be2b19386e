"""Records what Salt 3007.8's renderers make of each case in cases.json.

Each case is a small state tree (``files``: path -> text) and the file to render (``main``,
as an SLS named ``sls``, or as a template when ``kind`` is ``template``), rendered with the
fixed grains, pillar and minion id below through Salt's own loader
(``salt.template.compile_template`` for SLS files, ``salt.utils.templates.JINJA`` for
templates). The result is the rendered data (JSON) or the error text Salt raises.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/render/gen.py

It reads states/tests/data/render/cases.json and writes recordings.json beside it.
"""

import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

GRAINS = {
    "id": "minion1",
    "os": "Debian",
    "os_family": "Debian",
    "osfinger": "Debian-12",
    "oscodename": "bookworm",
    "osmajorrelease": 12,
    "kernel": "Linux",
    "num_cpus": 4,
    "ipv4": ["127.0.0.1", "10.0.0.5"],
    "roles": ["web", "db"],
}
PILLAR = {
    "web": {"port": 8080, "users": ["alice", "bob"], "enabled": True},
    "empty": {},
    "motd": "hello",
}


def main():
    import salt.config
    import salt.loader
    import salt.template
    import salt.utils.templates

    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    out = []
    for case in cases:
        root = tempfile.mkdtemp()
        srv = os.path.join(root, "srv")
        for path, text in case["files"].items():
            full = os.path.join(srv, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)
        opts = salt.config.minion_config(None)
        opts.update(
            {
                "id": "minion1",
                "file_client": "local",
                "file_roots": {"base": [srv]},
                "cachedir": os.path.join(root, "cache"),
                "pki_dir": os.path.join(root, "pki"),
                "root_dir": root,
                "log_file": os.path.join(root, "log"),
                "grains": dict(GRAINS, **case.get("grains", {})),
                "pillar": dict(PILLAR, **case.get("pillar", {})),
            }
        )
        opts.update(case.get("opts", {}))
        funcs = salt.loader.minion_mods(opts)
        renderers = salt.loader.render(opts, funcs)
        main_path = os.path.join(srv, case["main"])
        rec = dict(case)
        try:
            if case.get("kind") == "template":
                res = salt.utils.templates.JINJA(
                    main_path,
                    to_str=True,
                    salt=funcs,
                    grains=opts["grains"],
                    opts=opts,
                    pillar=opts["pillar"],
                    saltenv="base",
                    **case.get("context", {}),
                )
                if res["result"]:
                    rec["text"] = res["data"]
                else:
                    rec["error"] = res["data"]
            else:
                data = salt.template.compile_template(
                    main_path,
                    renderers,
                    opts["renderer"],
                    opts["renderer_blacklist"],
                    opts["renderer_whitelist"],
                    saltenv="base",
                    sls=case["sls"],
                )
                rec["data"] = json.loads(json.dumps(data, default=str))
        except Exception as exc:  # the error text is what we record
            rec["error"] = str(exc)
        out.append(rec)
        print(case["name"], json.dumps(rec)[:300], file=sys.stderr)

    with open(os.path.join(HERE, "recordings.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {"grains": GRAINS, "pillar": PILLAR, "cases": out},
            fh,
            indent=1,
            ensure_ascii=False,
        )
        fh.write("\n")


if __name__ == "__main__":
    main()
