"""Shared by the `gen.py` scripts of the host-level state modules (host, sysctl, grains,
saltutil, archive, git, ...): runs a sequence of states with Salt 3007.8's `salt-call --local`
on a scratch directory and records each state's return.

A module's recording is a list of steps; each step is one `salt-call --local state.single`
(a fresh Salt process, as a fresh job is in saltq), in order, on the same scratch directory,
so a step sees what the steps before it did. `@DIR@` in the arguments stands for the scratch
directory and is written back as `@DIR@` in what Salt answered, so the Rust tests can replay
the steps in a temporary directory of their own.

The recording (`cases.json` beside the gen.py) holds:
  setup: {relative path: contents} written into the scratch directory first;
  opts: minion options (`hosts.file: @DIR@/hosts`, ...) given to Salt and saltq alike;
  steps: [{id, fun, args (SLS argument list), test, ret}];
  files: {relative path: contents} of the listed files after the last step.
"""

import json
import os
import shutil
import subprocess
import sys

SALT_CALL = "/work/saltvenv/bin/salt-call"


def subst(value, old, new):
    """`old` replaced by `new` in every string of a JSON-like value (keys too)."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [subst(v, old, new) for v in value]
    if isinstance(value, dict):
        return {subst(k, old, new): subst(v, old, new) for k, v in value.items()}
    return value


def record(here, steps, setup=None, opts=None, files=(), scratch=None, prepare=None):
    """Runs `steps` ((id, fun, args, test) tuples) and writes `cases.json` into `here`."""
    scratch = scratch or "/tmp/saltq-rec-" + os.path.basename(here)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    conf = scratch + "-conf"
    shutil.rmtree(conf, ignore_errors=True)
    os.makedirs(conf + "/srv")
    for rel, text in (setup or {}).items():
        # `conf/...` files go into Salt's config directory (its grains file is `conf/grains`).
        path = os.path.join(conf, rel[5:]) if rel.startswith("conf/") else os.path.join(scratch, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(subst(text, "@DIR@", scratch))
    if prepare:
        prepare(scratch)
    minion = {
        "file_client": "local",
        "file_roots": {"base": [conf + "/srv"]},
        "cachedir": conf + "/cache",
        "root_dir": conf,
        "pki_dir": conf + "/pki",
        "log_file": conf + "/log",
        "user": "root",
        "id": "labminion",
    }
    minion.update(subst(opts or {}, "@DIR@", scratch))
    with open(conf + "/minion", "w") as f:
        json.dump(minion, f)
    out_steps = []
    for sid, fun, args, test in steps:
        sls = {sid: {fun: subst(args, "@DIR@", scratch)}}
        with open(conf + "/srv/step.sls", "w") as f:
            json.dump(sls, f)
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", "state.apply", "step"]
        if test:
            cmd.append("test=True")
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
        try:
            got = json.loads(proc.stdout)["local"]
        except (ValueError, KeyError):
            sys.exit(f"{sid}: salt-call said:\n{proc.stdout}\n{proc.stderr}")
        if isinstance(got, list):
            sys.exit(f"{sid}: {got}")
        (ret,) = got.values()
        keep = {k: ret[k] for k in ("name", "result", "comment", "changes")}
        if "warnings" in ret:
            keep["warnings"] = ret["warnings"]
        keep = subst(keep, scratch, "@DIR@")
        print(sid, json.dumps(keep), file=sys.stderr)
        out_steps.append({"id": sid, "fun": fun, "args": args, "test": test, "ret": keep})
    after = {}
    for rel in files:
        path = os.path.join(conf, rel[5:]) if rel.startswith("conf/") else os.path.join(scratch, rel)
        with open(path) as f:
            after[rel] = subst(f.read(), scratch, "@DIR@")
    with open(os.path.join(here, "cases.json"), "w") as f:
        json.dump(
            {"setup": setup or {}, "opts": opts or {}, "steps": out_steps, "files": after},
            f,
            indent=1,
            sort_keys=True,
        )
        f.write("\n")
    shutil.rmtree(conf, ignore_errors=True)
    return scratch
