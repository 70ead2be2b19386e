"""Records what Salt 3007.8 answers for every SLS of the tree (state trees taken from Salt's own
integration tests: ../shared/third-party/salt-tests/integration-files-base beside the checkout,
see the NOTICE there), for states/tests/corpus.rs.

Salt is the oracle; nothing of it is copied into saltq. Regenerate with Salt 3007.8 in a
virtualenv (see README.md):
    /work/saltvenv/bin/python states/tests/data/corpus/gen.py

For each SLS name of the tree (every `*.sls`, `a/init.sls` as `a`), four `salt-call --local
--out json --retcode-passthrough` calls, each with a fresh throwaway root (config, cachedir) and a
fresh output folder OUT:
    state.sls NAME            -> "sls"
    state.sls NAME test=True  -> "sls_test"
    state.show_sls NAME       -> "show_sls"
    state.show_low_sls NAME   -> "show_low_sls"
each with `pillar=PILLAR` (PILLAR below, {out} replaced by OUT). The minion is `corpus`,
file_roots is that tree. Each record is {"ret": ..., "retcode": ...}: the return with start_time and
duration dropped, pids replaced by "{pid}", and the throwaway paths replaced by "{out}", "{root}"
and "{tree}". Where Salt itself crashes with a Python exception (no JSON return), the record is
{"salt_crashed": LAST LINE OF THE TRACEBACK, "retcode": ...} instead. Writes recorded.json
beside this file.

Some SLS write to fixed paths outside the sandbox (listed in README.md): this script checks that
they leave nothing behind and removes what they leave.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../../../.."))
# A third-party input beside the checkout, not in the project.
TREE = os.path.realpath(os.path.join(REPO, "../shared/third-party/salt-tests/integration-files-base"))
if not os.path.isdir(TREE):
    raise SystemExit(f"the third-party tree is missing: {TREE}")
SALT_CALL = os.path.join(os.path.dirname(sys.executable), "salt-call")

# The pillar every run gets: the tree's SLS read these keys (include-test, to-include-test,
# issue-49043, issue-50221, issue-54755, issue-54765). Paths point into the run's OUT folder.
PILLAR = {
    "include-test": "{out}/include-test",
    "to-include-test": "{out}/to-include-test",
    "name": "{out}/named-file",
    "issue-50221": "contents from the pillar\nsecond line\n",
    "file_path": "{out}/file-path",
}

# Paths outside the sandbox that some SLS of the tree name (fail.sls, issue-7649-handle-iorder).
FIXED_PATHS = ["/tmp/foo", "/tmp/ruby-1.9.2-p320"]

CALLS = {
    "sls": ("state.sls", []),
    "sls_test": ("state.sls", ["test=True"]),
    "show_sls": ("state.show_sls", []),
    "show_low_sls": ("state.show_low_sls", []),
}


def sls_names():
    names = set()
    for d, _, files in os.walk(TREE):
        for n in files:
            if not n.endswith(".sls"):
                continue
            rel = os.path.relpath(os.path.join(d, n), TREE)[: -len(".sls")]
            if rel.endswith("/init"):
                rel = rel[: -len("/init")]
            names.add(rel.replace("/", "."))
    return sorted(names)


def config(root):
    conf = os.path.join(root, "conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "minion"), "w") as f:
        f.write(
            f"""id: corpus
file_client: local
file_roots:
  base:
    - {TREE}
pillar_roots:
  base:
    - {root}/pillar
root_dir: {root}
cachedir: {root}/cache
pki_dir: {root}/pki
log_file: {root}/log
sock_dir: {root}/sock
user: root
"""
        )
    return conf


def pillar_for(out):
    return {k: v.replace("{out}", out) for k, v in PILLAR.items()}


def normalize(v, subs):
    if isinstance(v, dict):
        return {
            normalize(k, subs): ("{pid}" if k == "pid" else normalize(x, subs))
            for k, x in v.items()
            if k not in ("start_time", "duration")
        }
    if isinstance(v, list):
        return [normalize(x, subs) for x in v]
    if isinstance(v, str):
        for real, placeholder in subs:
            v = v.replace(real, placeholder)
        return v
    return v


SHELL = "/bin/bash"


def call(name, kind):
    fun, extra = CALLS[kind]
    with tempfile.TemporaryDirectory(prefix="saltq-corpus-") as root:
        root = os.path.realpath(root)
        conf = config(root)
        out = os.path.join(root, "out")
        os.makedirs(out)
        p = subprocess.run(
            [SALT_CALL, "--local", "-c", conf, "--out", "json", "--retcode-passthrough",
             fun, name, *extra, "pillar=" + json.dumps(pillar_for(out))],
            capture_output=True, text=True, timeout=600,
            # Salt's cmd.run takes $SHELL (grains.extra.shell): pinned, and recorded, so that
            # the test can give saltq the same shell whatever the recording machine had.
            env={**os.environ, "SHELL": SHELL},
        )
        # The longest paths first: OUT lives inside the root.
        subs = [(out, "{out}"), (root, "{root}"), (TREE, "{tree}")]
        try:
            data = json.loads(p.stdout)["local"]
        except (ValueError, KeyError):
            # Salt itself crashed (a Python exception, no return): keep the exception's last
            # line, so the test can say so; there is no answer to compare with.
            last = [line for line in p.stderr.splitlines() if line.strip()][-1:]
            if not last:
                sys.exit(f"{fun} {name}: no JSON and no error: {p.stdout}")
            return {"salt_crashed": normalize(last[0], subs), "retcode": p.returncode}
        return {"ret": normalize(data, subs), "retcode": p.returncode}


def record(name):
    cases = {}
    for kind in CALLS:
        cases[kind] = call(name, kind)
    print(name, cases["sls"]["retcode"], file=sys.stderr)
    return name, cases


def main():
    left = [p for p in FIXED_PATHS if os.path.exists(p)]
    if left:
        sys.exit(f"remove {left} first: the tree's fixed paths must not exist before the run")
    with ThreadPoolExecutor(max_workers=2) as pool:
        recorded = dict(pool.map(record, sls_names()))
    made = [p for p in FIXED_PATHS if os.path.exists(p)]
    for p in made:
        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    with open(os.path.join(HERE, "recorded.json"), "w", encoding="utf-8") as f:
        json.dump(
            {"pillar": PILLAR, "minion_id": "corpus", "shell": SHELL, "sls": recorded},
            f, indent=1, sort_keys=True, ensure_ascii=False,
        )
        f.write("\n")
    print(f"{len(recorded)} SLS recorded; fixed paths left behind and removed: {made}",
          file=sys.stderr)


main()
