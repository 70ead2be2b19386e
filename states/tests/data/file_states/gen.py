"""Records Salt 3007.8's file states for states/tests/file_states.rs to replay.

Regenerate all (about fifteen minutes; name cases to re-record only those):
    /work/saltvenv/bin/python states/tests/data/file_states/gen.py [case ...]

Each case is a setup (files, directories, symlinks, modes under a fresh temp dir, files
under a fresh file_roots for salt:// sources, a pillar) and a list of states, run as one
SLS (JSON, so no renderer guesses) with `salt-call --local --out json state.apply`, once
with test=True and once for real, each in its own fresh copy of the setup. Recorded:
each state's result, comment and changes (the temp dir replaced by `{tmp}`, the
file_roots by `{srv}`), and after the real run the tree under the temp dir (type, mode,
contents or link target, and `owner` as user:group when it is not root:root). Written to cases.json.
"""

import grp
import json
import multiprocessing
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"

sys.path.insert(0, HERE)
from cases import CASES  # noqa: E402


def setup(root, case):
    work = os.path.join(root, "work")
    srv = os.path.join(root, "srv")
    os.makedirs(work)
    os.makedirs(srv)
    st = case.get("setup", {})
    for d in st.get("dirs", []):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    for rel, text in st.get("files", {}).items():
        p = os.path.join(work, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(text.replace("{tmp}", work))
    for rel, target in st.get("links", {}).items():
        p = os.path.join(work, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        os.symlink(target.replace("{tmp}", work), p)
    for rel, mode in st.get("modes", {}).items():
        os.chmod(os.path.join(work, rel), int(mode, 8))
    for rel, text in case.get("srv", {}).items():
        p = os.path.join(srv, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return work, srv


def subst(v, work, srv):
    if isinstance(v, str):
        return v.replace("{tmp}", work).replace("{srv}", srv)
    if isinstance(v, list):
        return [subst(x, work, srv) for x in v]
    if isinstance(v, dict):
        return {k: subst(x, work, srv) for k, x in v.items()}
    return v


def unsubst(v, work, srv):
    if isinstance(v, str):
        return v.replace(work, "{tmp}").replace(srv, "{srv}")
    if isinstance(v, list):
        return [unsubst(x, work, srv) for x in v]
    if isinstance(v, dict):
        return {unsubst(k, work, srv): unsubst(x, work, srv) for k, x in v.items()}
    return v


def tree(work):
    out = {}
    for dirpath, dirnames, filenames in os.walk(work):
        for n in sorted(dirnames + filenames):
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, work)
            st = os.lstat(p)
            mode = "%04o" % (st.st_mode & 0o7777)
            owner = "%s:%s" % (pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name)
            if os.path.islink(p):
                out[rel] = {"type": "link", "target": os.readlink(p).replace(work, "{tmp}")}
            elif os.path.isdir(p):
                out[rel] = {"type": "dir", "mode": mode}
            else:
                with open(p, "rb") as f:
                    data = f.read().decode("utf-8", "replace")
                out[rel] = {"type": "file", "mode": mode, "contents": data.replace(work, "{tmp}")}
            if owner != "root:root":
                out[rel]["owner"] = owner
    return dict(sorted(out.items()))


def run(case, test):
    root = tempfile.mkdtemp(prefix="fst")
    try:
        work, srv = setup(root, case)
        conf = os.path.join(root, "conf")
        os.makedirs(conf)
        with open(os.path.join(conf, "minion"), "w") as f:
            f.write(
                "file_client: local\nfile_roots:\n  base:\n    - %s\n"
                "pillar_roots:\n  base:\n    - %s/pillar\n"
                "cachedir: %s/cache\nroot_dir: %s\npki_dir: %s/pki\nlog_file: %s/log\n"
                "user: root\nstate_output_diff: true\n" % (srv, root, root, root, root, root)
            )
        sls = {}
        for sid, fun, args in case["states"]:
            mod, f = fun.split(".", 1)
            sls[sid] = {fun: [{k: v} for k, v in subst(args, work, srv).items()]}
        with open(os.path.join(srv, "fcase.sls"), "w") as f:
            f.write("#!json\n" + json.dumps(sls))
        cmd = [SALT_CALL, "--local", "-c", conf, "--out", "json", "state.apply", "fcase"]
        if test:
            cmd.append("test=True")
        if "pillar" in case:
            cmd.append("pillar=" + json.dumps(case["pillar"]))
        p = subprocess.run(cmd, capture_output=True, text=True)
        try:
            data = json.loads(p.stdout)["local"]
        except Exception:
            raise RuntimeError("%s: %s %s" % (case["name"], p.stdout, p.stderr))
        if isinstance(data, list):
            raise RuntimeError("%s: %s" % (case["name"], data))
        rets = sorted(data.values(), key=lambda r: r["__run_num__"])
        states = [
            {
                "result": r["result"],
                "comment": unsubst(r["comment"], work, srv),
                "changes": unsubst(r["changes"], work, srv),
            }
            for r in rets
        ]
        out = {"states": states}
        if not test:
            out["tree"] = tree(work)
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def record(case):
    rec = dict(case)
    rec["test"] = run(case, True)
    rec["real"] = run(case, False)
    return rec


def main():
    only = set(sys.argv[1:])
    cases = [c for c in CASES if not only or c["name"] in only]
    with multiprocessing.Pool(3) as pool:
        recs = pool.map(record, cases)
    path = os.path.join(HERE, "cases.json")
    if only and os.path.exists(path):
        with open(path) as f:
            old = {c["name"]: c for c in json.load(f)}
        for r in recs:
            old[r["name"]] = r
        recs = [old[c["name"]] for c in CASES if c["name"] in old]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(recs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(len(recs), "cases")


if __name__ == "__main__":
    main()
