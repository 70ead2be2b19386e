"""Records what Salt 3007.8 renders from four public formulas' SLS files and templates,
with the grains of a Debian 12 host and two pillars each (none, and one setting the
formula's options):

- saltstack-formulas/ntp-formula at 2478ba3ea7dc68d8af6a49a377bdc738562f5358 (formulas/ntp/);
- saltstack-formulas/nginx-formula at 67871d08efe75cc9f8c3c4d9ccff83442687377b
  (formulas/nginx/, without its two binary keyring files);
- saltstack-formulas/template-formula at ae16a8d345c959dbbcee7ba7aae4ee391b3a7823
  (formulas/template/: map.jinja over libmapstack, import_yaml, slsutil.merge);
- saltstack-formulas/openssh-formula at 49520e699a23ac744e179fd88bb15295485eabb0
  (formulas/openssh/: the same map stack, and the sshd_config/ssh_config templates).

The minion's opts carry `__cli: salt-minion` (the template formula reads it).

The formulas are third-party inputs, read (with their LICENSE) from
../shared/third-party/formulas/<formula> beside the checkout; only Salt's answers are kept here.
Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/formulas/gen.py

It writes states/tests/data/formulas/<formula>.json.
"""

import json
import os
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../../../.."))
# The formulas themselves: third-party inputs beside the checkout, not in the project.
FORMULAS_DIR = os.path.realpath(os.path.join(REPO, "../shared/third-party/formulas"))
if not os.path.isdir(FORMULAS_DIR):
    raise SystemExit(f"the third-party formulas are missing: {FORMULAS_DIR}")

GRAINS = {
    "id": "minion1",
    "os": "Debian",
    "os_family": "Debian",
    "osrelease": "12",
    "osfinger": "Debian-12",
    "osmajorrelease": 12,
    "oscodename": "bookworm",
    "kernel": "Linux",
}
NTP_PILLARS = {
    "empty": {},
    "custom": {
        "ntp": {
            "ntp_conf": "salt://ntp/ntp.conf",
            "ntpd_conf": "salt://ntp/ntpd.conf",
            "lookup": {"service": "ntpsec"},
            "ng": {
                "lookup": {"package": "ntpsec"},
                "settings": {
                    "ntpd": True,
                    "ntp_conf": {
                        "server": ["time1.example.com", "time2.example.com"],
                        "tinker": ["panic 0"],
                    },
                },
            },
        }
    },
}
NTP_SLS = ["ntp", "ntp.server", "ntp.ntpdate", "ntp.ng", "ntp.ng._mapdata", "ntp.local_server"]
NTP_TEMPLATE = "ntp/ng/files/ntp.conf"
NTP_CONTEXT = {
    "source": "salt://ntp/ng/files/ntp.conf",
    "config": {
        "server": ["0.pool.ntp.org", "1.pool.ntp.org"],
        "restrict": ["default noquery nopeer", "127.0.0.1"],
        "driftfile": ["/var/lib/ntp/ntp.drift"],
        "tinker": ["panic 0", "stepout 60"],
    },
}


NGINX_PILLARS = {
    "empty": {},
    "custom": {
        "nginx": {
            "install_from_repo": False,
            "lookup": {"package": "nginx-full", "webuser": "www"},
            "service": {"enable": True},
            "server": {
                "config": {
                    "worker_processes": 4,
                    "events": {"worker_connections": 768},
                    "http": {"sendfile": "on", "include": ["/etc/nginx/mime.types"]},
                }
            },
            "servers": {
                "managed": {
                    "default": {
                        "enabled": True,
                        "config": [
                            {"server": [{"listen": 80}, {"server_name": "localhost"}]}
                        ],
                    }
                }
            },
            "snippets": {"letsencrypt": [{"location ^~ /.well-known/": [{"root": "/var/www"}]}]},
        }
    },
}
NGINX_SLS = [
    "nginx." + name[: -len(".sls")] if name != "init.sls" else "nginx"
    for name in sorted(os.listdir(os.path.join(FORMULAS_DIR, "nginx", "nginx")))
    if name.endswith(".sls")
] + [
    "nginx.ng." + name[: -len(".sls")] if name != "init.sls" else "nginx.ng"
    for name in sorted(os.listdir(os.path.join(FORMULAS_DIR, "nginx", "nginx", "ng")))
    if name.endswith(".sls")
]

def all_sls(top):
    """Every SLS file under formulas/<top>, as SLS names."""
    base = os.path.join(FORMULAS_DIR, top)
    names = []
    for dirpath, _, files in sorted(os.walk(base)):
        for name in sorted(files):
            if not name.endswith(".sls"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), base)[: -len(".sls")]
            if rel.endswith("/init"):
                rel = rel[: -len("/init")]
            names.append(rel.replace("/", "."))
    return names


TEMPLATE_PILLARS = {
    "empty": {},
    "custom": {
        "TEMPLATE": {
            "pkg": {"name": "bash"},
            "rootgroup": "wheel",
            "config": "/etc/template-formula.conf",
            "service": {"name": "systemd-journald"},
            "subcomponent": {"config": "/etc/TEMPLATE-subcomponent-formula.conf"},
            "lookup": {"master": "template-master", "winner": "lookup", "added_in_lookup": "lookup_value"},
            "winner": "pillar",
            "added_in_pillar": "pillar_value",
        }
    },
}

OPENSSH_PILLARS = {
    "empty": {},
    "custom": {
        "sshd_config": {
            "Port": 2222,
            "PermitRootLogin": "no",
            "PasswordAuthentication": False,
            "AllowUsers": ["alice", "bob"],
            "matches": {"sftp": {"type": {"Group": "sftp"}, "options": {"ChrootDirectory": "/srv/%u"}}},
        },
        "ssh_config": {"Hosts": {"*": {"ForwardAgent": False, "SendEnv": "LANG LC_*"}}},
        "openssh": {"banner": "salt://openssh/files/default/banner", "auth": {"alice": [{"name": "ssh-ed25519 AAAAC3Nza alice@x", "present": True}]}},
    },
}
OPENSSH_TEMPLATES = [
    (
        "openssh/files/default/sshd_config",
        {"sshd_config": OPENSSH_PILLARS["custom"]["sshd_config"]},
    ),
    (
        "openssh/files/default/ssh_config",
        {"ssh_config": OPENSSH_PILLARS["custom"]["ssh_config"]},
    ),
]

FORMULAS = {
    "ntp": (NTP_PILLARS, NTP_SLS, [(NTP_TEMPLATE, NTP_CONTEXT)]),
    "nginx": (NGINX_PILLARS, NGINX_SLS, []),
    "template": (TEMPLATE_PILLARS, None, []),
    # config_ini asks file.contains_regex about the recording host's /etc/ssh/sshd_config.
    "openssh": (
        OPENSSH_PILLARS,
        [s for s in all_sls("openssh") if s != "openssh.config_ini"],
        OPENSSH_TEMPLATES,
    ),
}


def sls_path(root, sls):
    rel = sls.replace(".", "/")
    if os.path.isfile(os.path.join(root, rel + ".sls")):
        return rel + ".sls"
    return rel + "/init.sls"


def main():
    for name, (pillars, sls_list, templates) in FORMULAS.items():
        if sls_list is None:
            sls_list = all_sls(name)
        record(name, pillars, sls_list, templates)


def record(name, pillars, sls_list, templates):
    import salt.config
    import salt.loader
    import salt.template
    import salt.utils.templates

    ROOT = os.path.join(FORMULAS_DIR, name)
    out = {"grains": GRAINS, "pillars": pillars, "sls": [], "templates": []}
    for pname, pillar in pillars.items():
        root = tempfile.mkdtemp()
        opts = salt.config.minion_config(None)
        opts.update(
            {
                "id": "minion1",
                "file_client": "local",
                "file_roots": {"base": [ROOT]},
                "cachedir": os.path.join(root, "cache"),
                "pki_dir": os.path.join(root, "pki"),
                "root_dir": root,
                "log_file": os.path.join(root, "log"),
                "grains": GRAINS,
                "pillar": pillar,
                "__cli": "salt-minion",
            }
        )
        funcs = salt.loader.minion_mods(opts)
        renderers = salt.loader.render(opts, funcs)
        for sls in sls_list:
            rel = sls_path(ROOT, sls)
            rec = {"pillar": pname, "sls": sls, "source": rel}
            try:
                data = salt.template.compile_template(
                    os.path.join(ROOT, rel),
                    renderers,
                    opts["renderer"],
                    opts["renderer_blacklist"],
                    opts["renderer_whitelist"],
                    saltenv="base",
                    sls=sls,
                )
                rec["data"] = json.loads(json.dumps(data))
            except Exception as exc:  # recorded as Salt words it
                rec["error"] = str(exc)
            out["sls"].append(rec)
        for template, tcontext in templates:
            record_template(out, ROOT, template, tcontext, funcs, opts, pname, pillar)

    with open(os.path.join(HERE, name + ".json"), "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")


def record_template(out, ROOT, TEMPLATE, TEMPLATE_CONTEXT, funcs, opts, pname, pillar):
    import salt.utils.templates

    res = salt.utils.templates.JINJA(
        os.path.join(ROOT, TEMPLATE),
        to_str=True,
        salt=funcs,
        grains=GRAINS,
        opts=opts,
        pillar=pillar,
        saltenv="base",
        context=json.loads(json.dumps(TEMPLATE_CONTEXT)),
    )
    out["templates"].append(
        {
            "pillar": pname,
            "source": TEMPLATE,
            "context": json.loads(json.dumps(TEMPLATE_CONTEXT)),
            "text": res["data"] if res["result"] else None,
            "error": None if res["result"] else res["data"],
        }
    )


if __name__ == "__main__":
    main()
