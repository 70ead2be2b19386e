"""Record what Salt 3007.8's yumpkg repository functions (`pkg.list_repos`, `pkg.get_repo`,
`pkg.mod_repo`, `pkg.del_repo`) and `pkgrepo.managed`/`pkgrepo.absent` answer on a
RedHat-family minion, with the `.repo` files each step leaves.

Regenerate (from the repository root, as root):

    /work/saltvenv/bin/python states/tests/data/pkgrepo_dnf/gen.py

This host is Debian, so Salt is told otherwise: the minion config sets the grains
`os_family: RedHat`, `os: Fedora` (config grains override the detected ones), and a `dnf`
that only fails is put first on PATH, because yumpkg's `__virtual__` loads only where a
dnf/yum binary exists. None of the recorded calls runs dnf (yumpkg's `mod_repo` does not
refresh).

Two phases:
  1. no yum/dnf config file exists (none does on Debian): the calls pass `basedir`; the ones
     that do not (and `pkgrepo.absent`, whose check after removing calls `pkg.list_repos()`
     without it) fail as Salt fails there;
  2. `/etc/dnf/dnf.conf` is written with `reposdir=@DIR@`, so Salt's default repository
     directory is the scratch directory; removed at the end.

Paths: the scratch directory is written as `@DIR@` in cases.json. An exception escaping a
state is recorded as `An exception occurred in this state: ` followed by the exception's
message (Salt puts the whole traceback there).

cases.json: {"phases": [{"dnf_conf": bool, "setup": {file: text}, "steps": [{id, kind
("state" or "exec"), fun, args (a state's SLS argument list; an execution function's
[name, value] pairs), test, ret, files: {file name: text}}]}]}.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"
DIR = "/tmp/saltq-rec-pkgrepo-dnf"
DNF_CONF = "/etc/dnf/dnf.conf"
GRAINS = {"os_family": "RedHat", "os": "Fedora", "osfinger": "Fedora-39",
          "osmajorrelease": 39, "osrelease": "39", "oscodename": "Thirty Nine"}

REPO = [{"name": "saltq-rec"}, {"humanname": "saltq recorded repo"},
        {"baseurl": "https://repo.example/fedora/39/"}, {"gpgcheck": 1},
        {"gpgkey": "https://repo.example/RPM-GPG-KEY"}]
B = [{"basedir": "@DIR@"}]

MULTI = """# Two repositories in one file
# (seeded before the steps)
[alpha]
name=Alpha repo
baseurl=https://alpha.example/$releasever/
enabled=1
# alpha's note
gpgcheck=0

[beta]
name = Beta repo
mirrorlist = https://beta.example/mirrors
gpgkey = https://beta.example/key1
  https://beta.example/key2
enabled = 0
"""

PHASE1 = [
    ("y01_managed_test", "state", "pkgrepo.managed", REPO + B, True),
    ("y02_managed", "state", "pkgrepo.managed", REPO + B, False),
    ("y03_managed_again", "state", "pkgrepo.managed", REPO + B, False),
    ("y04_list_repos", "exec", "pkg.list_repos", {"basedir": "@DIR@"}, False),
    ("y05_get_repo", "exec", "pkg.get_repo", {"repo": "saltq-rec", "basedir": "@DIR@"}, False),
    ("y06_get_repo_missing", "exec", "pkg.get_repo", {"repo": "nope", "basedir": "@DIR@"}, False),
    ("y07_list_no_conf", "exec", "pkg.list_repos", {}, False),
    ("y08_managed_no_basedir", "state", "pkgrepo.managed", REPO, False),
    ("y09_absent_test", "state", "pkgrepo.absent", [{"name": "saltq-rec"}] + B, True),
    ("y10_absent", "state", "pkgrepo.absent", [{"name": "saltq-rec"}] + B, False),
    ("y11_del_repo_missing", "exec", "pkg.del_repo", {"repo": "saltq-rec", "basedir": "@DIR@"}, False),
]

PHASE2 = [
    ("z01_managed_test", "state", "pkgrepo.managed", REPO, True),
    ("z02_managed", "state", "pkgrepo.managed", REPO, False),
    ("z03_managed_again", "state", "pkgrepo.managed", REPO, False),
    ("z04_disabled_test", "state", "pkgrepo.managed", REPO + [{"disabled": True}], True),
    ("z05_disabled", "state", "pkgrepo.managed", REPO + [{"disabled": True}], False),
    ("z06_enabled", "state", "pkgrepo.managed", REPO + [{"enabled": True}], False),
    ("z07_mirrorlist", "state", "pkgrepo.managed",
     [{"name": "saltq-rec"}, {"humanname": "saltq recorded repo"},
      {"mirrorlist": "https://repo.example/mirrors"}, {"gpgcheck": 1},
      {"gpgkey": "https://repo.example/RPM-GPG-KEY"}], False),
    ("z08_comments", "state", "pkgrepo.managed",
     [{"name": "saltq-rec"}, {"humanname": "saltq recorded repo"},
      {"mirrorlist": "https://repo.example/mirrors"}, {"comments": ["first note", "#second note"]}], False),
    ("z09_comments_again", "state", "pkgrepo.managed",
     [{"name": "saltq-rec"}, {"humanname": "saltq recorded repo"},
      {"mirrorlist": "https://repo.example/mirrors"}, {"comments": ["first note", "#second note"]}], False),
    ("z10_alpha_gpgcheck", "state", "pkgrepo.managed",
     [{"name": "alpha"}, {"humanname": "Alpha repo"}, {"gpgcheck": True}, {"priority": 10}], False),
    ("z11_beta_again", "state", "pkgrepo.managed",
     [{"name": "beta"}, {"humanname": "Beta repo"}, {"enabled": False},
      {"mirrorlist": "https://beta.example/mirrors"}], False),
    ("z12_both_urls", "state", "pkgrepo.managed",
     [{"name": "gamma"}, {"baseurl": "https://g.example/"}, {"mirrorlist": "https://g.example/m"}], False),
    ("z13_no_url", "state", "pkgrepo.managed", [{"name": "gamma"}, {"gpgcheck": 0}], False),
    ("z14_no_humanname", "state", "pkgrepo.managed",
     [{"name": "delta"}, {"baseurl": "https://d.example/"}], False),
    ("z15_repo_kwarg", "state", "pkgrepo.managed", [{"name": "delta"}, {"repo": "delta"}], False),
    ("z16_enabled_and_disabled", "state", "pkgrepo.managed",
     [{"name": "delta"}, {"enabled": True}, {"disabled": False}], False),
    ("z17_mod_repo", "exec", "pkg.mod_repo",
     {"repo": "epsilon", "name": "Epsilon", "baseurl": "https://e.example/", "enabled": False,
      "gpgcheck": 1, "skip_if_unavailable": "True"}, False),
    ("z18_mod_repo_delete_key", "exec", "pkg.mod_repo",
     {"repo": "epsilon", "skip_if_unavailable": "", "metalink": "https://e.example/metalink"}, False),
    ("z19_mod_repo_delete_name", "exec", "pkg.mod_repo", {"repo": "epsilon", "name": ""}, False),
    ("z20_mod_repo_delete_baseurl", "exec", "pkg.mod_repo", {"repo": "epsilon", "baseurl": ""}, False),
    ("z21_mod_repo_new_no_name", "exec", "pkg.mod_repo", {"repo": "zeta", "baseurl": "https://z.example/"}, False),
    ("z22_list_repos", "exec", "pkg.list_repos", {}, False),
    ("z23_absent_test", "state", "pkgrepo.absent", [{"name": "saltq-rec"}], True),
    ("z24_absent", "state", "pkgrepo.absent", [{"name": "saltq-rec"}], False),
    ("z25_absent_again", "state", "pkgrepo.absent", [{"name": "saltq-rec"}], False),
    ("z26_absent_alpha", "state", "pkgrepo.absent", [{"name": "alpha"}], False),
    ("z27_del_repo_beta", "exec", "pkg.del_repo", {"repo": "beta"}, False),
    ("z28_del_repo_missing", "exec", "pkg.del_repo", {"repo": "beta"}, False),
    # yumpkg's mod_repo has no `filename`: it is one more option, the file is `<id>.repo`.
    ("z29_filename", "state", "pkgrepo.managed",
     [{"name": "eta"}, {"humanname": "Eta"}, {"baseurl": "https://h.example/"}, {"filename": "custom"}], False),
]


def subst(value, old, new):
    """`old` replaced by `new` in every string of a JSON-like value (keys too)."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [subst(v, old, new) for v in value]
    if isinstance(value, dict):
        return {subst(k, old, new): subst(v, old, new) for k, v in value.items()}
    return value


def files():
    out = {}
    for name in sorted(os.listdir(DIR)):
        with open(os.path.join(DIR, name)) as f:
            out[name] = f.read()
    return out


def run(conf, bindir, sid, kind, fun, args, test):
    env = dict(os.environ, PYTHONHASHSEED="0", PATH=bindir + ":" + os.environ["PATH"])
    if kind == "state":
        with open(conf + "/srv/step.sls", "w") as f:
            json.dump({sid: {fun: subst(args, "@DIR@", DIR)}}, f)
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", "state.apply", "step"]
        if test:
            cmd.append("test=True")
    else:
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", fun]
        # Each argument as JSON, which salt-call's YAML reading gives back unchanged.
        cmd += [f"{k}={json.dumps(v)}"
                for k, v in subst(args, "@DIR@", DIR).items()]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    try:
        got = json.loads(proc.stdout)["local"]
    except (ValueError, KeyError):
        # salt-call prints an execution error as text, not JSON: the line that says what.
        said = [l for l in proc.stderr.splitlines()
                if l.startswith(("Error running", "Passed invalid arguments"))]
        if kind == "exec" and said:
            return subst({"error": said[-1], "retcode": proc.returncode}, DIR, "@DIR@")
        sys.exit(f"{sid}: salt-call said:\n{proc.stdout}\n{proc.stderr}")
    if kind == "state":
        (got,) = got.values()
        got = {k: got[k] for k in ("name", "result", "comment", "changes")}
        prefix = "An exception occurred in this state: Traceback"
        if got["comment"].startswith(prefix):
            last = got["comment"].strip().splitlines()[-1]
            got["comment"] = "An exception occurred in this state: " + last.split(": ", 1)[1]
    else:
        got = {"ret": got, "retcode": proc.returncode}
    return subst(got, DIR, "@DIR@")


def main():
    if os.path.exists("/etc/dnf") or os.path.exists("/etc/yum.conf") or os.path.exists("/etc/yum"):
        sys.exit("a yum/dnf configuration exists on this host: not recording over it")
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    phases = []
    with tempfile.TemporaryDirectory() as conf, tempfile.TemporaryDirectory() as bindir:
        os.makedirs(conf + "/srv")
        with open(conf + "/minion", "w") as f:
            json.dump({
                "file_client": "local", "file_roots": {"base": [conf + "/srv"]},
                "cachedir": conf + "/cache", "root_dir": conf, "pki_dir": conf + "/pki",
                "log_file": conf + "/log", "user": "root", "id": "labminion", "grains": GRAINS,
            }, f)
        with open(bindir + "/dnf", "w") as f:
            f.write("#!/bin/sh\necho 'this dnf only fails' >&2\nexit 1\n")
        os.chmod(bindir + "/dnf", 0o755)
        try:
            for dnf_conf, setup, steps in ((False, {}, PHASE1), (True, {"multi.repo": MULTI}, PHASE2)):
                shutil.rmtree(DIR, ignore_errors=True)
                os.makedirs(DIR)
                for name, text in setup.items():
                    with open(os.path.join(DIR, name), "w") as f:
                        f.write(text)
                if dnf_conf:
                    os.makedirs("/etc/dnf")
                    with open(DNF_CONF, "w") as f:
                        f.write(f"[main]\nreposdir={DIR}\n")
                out = []
                for sid, kind, fun, args, test in steps:
                    got = run(conf, bindir, sid, kind, fun, args, test)
                    print(sid, json.dumps(got), file=sys.stderr)
                    # An exec step's arguments as [name, value] pairs: their order is the
                    # order of a new repository's options, which sort_keys would lose.
                    rec_args = list(args.items()) if kind == "exec" else args
                    out.append({"id": sid, "kind": kind, "fun": fun, "args": rec_args, "test": test,
                                "ret": got, "files": files()})
                phases.append({"dnf_conf": dnf_conf, "setup": setup, "steps": out})
        finally:
            shutil.rmtree("/etc/dnf", ignore_errors=True)
            shutil.rmtree(DIR, ignore_errors=True)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump({"grains": GRAINS, "phases": phases}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
