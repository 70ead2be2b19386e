"""Records what Salt 3007.8 answers for the state functions and top-file options below.

Each case is a state tree, minion options and a list of calls made one after the other on
the same minion (same cachedir), so `state.request` / `state.run_request` and a pause file
written by `state.soft_kill` are seen by the next call. Every call is
`salt-call --local --out json --retcode-passthrough` in a throwaway root; `{TMP}` stands
for a scratch directory. Timings are dropped. The tree layout and the minion options are
those of ../compile/gen.py (files keyed `<saltenv>/<path>`, `pillar/<path>` for pillar).

Writes cases.json (the inputs) and recorded.json (Salt's answers: per case, one
`{"retcode", "return"}` per call). Regenerate:

    /work/saltvenv/bin/python states/tests/data/state_funcs/gen.py [CASE ...]
"""

import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "compile"))
import gen as compile_gen  # noqa: E402  the tree, the options and the scrubbing

SALT_CALL = compile_gen.SALT_CALL
TREE = compile_gen.TREE

SIMPLE = "base:\n  '*':\n    - common\n    - web\n"

MATCHERS_TOP = """
base:
  'os:Deb.*':
    - match: grain_pcre
    - grainmatch
  'os:Red.*':
    - match: grain_pcre
    - never
  'role:d.*':
    - match: pillar_pcre
    - db
  'role:x.*':
    - match: pillar_pcre
    - never
  'role:db':
    - match: pillar_exact
    - listed
  'role:d*':
    - match: pillar_exact
    - never2
  '10.1.0.0/16':
    - match: ipcidr
    - pcrematch
  '192.168.0.0/24':
    - match: ipcidr
    - never3
  '10.1.2.3':
    - match: ipcidr
    - debian
"""

KILL = {
    "base/k.sls": "first:\n  cmd.run:\n    - name: touch {TMP}/started; sleep 6\nsecond:\n  test.succeed_without_changes\nthird:\n  test.succeed_without_changes\n",
}

NAMES = {
    "base/n.sls": "many:\n  test.succeed_without_changes:\n    - names:\n      - one\n      - two\nother:\n  test.nop:\n    - require:\n      - test: many\n",
}

DEV = {
    "base/top.sls": "base:\n  '*':\n    - common\ndev:\n  '*':\n    - devonly\n",
    "dev/devonly.sls": "dev_state:\n  test.succeed_without_changes\n",
    "dev/top.sls": "dev:\n  '*':\n    - devonly\n",
}

CASES = [
    # state.sls_id
    {"name": "sls_id_one", "files": TREE, "calls": [["state.sls_id", "web_state", "web"]]},
    {"name": "sls_id_included", "files": TREE, "calls": [["state.sls_id", "nginx", "web"]]},
    {"name": "sls_id_missing", "files": TREE, "calls": [["state.sls_id", "nosuch", "web"]]},
    {"name": "sls_id_test", "files": TREE, "calls": [["state.sls_id", "web_state", "web", "test=True"]]},
    {"name": "sls_id_names", "files": NAMES, "calls": [["state.sls_id", "many", "n"]]},
    {"name": "sls_id_requisite", "files": NAMES, "calls": [["state.sls_id", "other", "n"]]},
    {"name": "sls_id_two_mods", "files": TREE, "calls": [["state.sls_id", "common_state", "web,debian"]]},
    {"name": "sls_id_saltenv", "files": {**TREE, **DEV}, "envs": ["base", "dev"], "calls": [["state.sls_id", "dev_state", "devonly", "saltenv=dev"]]},
    # state.test
    {"name": "test_sls", "files": TREE, "calls": [["state.test", "web"]]},
    {"name": "test_highstate", "files": {**TREE, "base/top.sls": SIMPLE}, "calls": [["state.test"]]},
    # exclude=
    {"name": "exclude_id", "files": TREE, "calls": [["state.sls", "web", "exclude=[{id: nginx}]"]]},
    {"name": "exclude_sls", "files": TREE, "calls": [["state.sls", "web", "exclude=[{sls: web.nginx}]"]]},
    {"name": "exclude_string", "files": TREE, "calls": [["state.sls", "web", "exclude=web.nginx"]]},
    {"name": "exclude_highstate", "files": {**TREE, "base/top.sls": SIMPLE}, "calls": [["state.highstate", "exclude=[{id: common_state}]"]]},
    {"name": "exclude_apply", "files": {**TREE, "base/top.sls": SIMPLE}, "calls": [["state.apply", "exclude=[{sls: common}]"]]},
    # saltenv=
    {"name": "saltenv_sls", "files": {**TREE, **DEV}, "envs": ["base", "dev"], "calls": [["state.sls", "devonly", "saltenv=dev"]]},
    {"name": "saltenv_sls_wrong_env", "files": {**TREE, **DEV}, "envs": ["base", "dev"], "calls": [["state.sls", "common", "saltenv=dev"]]},
    {"name": "saltenv_highstate", "files": {**TREE, **DEV}, "envs": ["base", "dev"], "calls": [["state.highstate", "saltenv=dev"]]},
    {"name": "saltenv_apply_sls", "files": {**TREE, **DEV}, "envs": ["base", "dev"], "calls": [["state.apply", "devonly", "saltenv=dev"]]},
    {"name": "saltenv_show_sls", "files": {**TREE, **DEV}, "envs": ["base", "dev"], "calls": [["state.show_sls", "devonly", "saltenv=dev"]]},
    # default_top
    {
        "name": "default_top_same",
        "files": {**TREE, "base/top.sls": "base:\n  '*':\n    - common\ndev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        "envs": ["base", "dev"],
        "config": {"top_file_merging_strategy": "same", "default_top": "base"},
        "calls": [["state.show_top"]],
    },
    {
        "name": "default_top_same_other",
        "files": {**TREE, "dev/top.sls": "base:\n  '*':\n    - common\ndev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        "envs": ["base", "dev"],
        "config": {"top_file_merging_strategy": "same", "default_top": "dev"},
        "calls": [["state.show_top"]],
    },
    {
        "name": "default_top_same_nothing",
        "files": {**TREE, "dev/top.sls": "dev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        "envs": ["base", "dev"],
        "config": {"top_file_merging_strategy": "same", "default_top": "dev"},
        "calls": [["state.show_top"]],
    },
    {
        "name": "default_top_merge",
        "files": {**TREE, "base/top.sls": "base:\n  '*':\n    - common\ndev:\n  '*':\n    - frombase\n", "dev/top.sls": "dev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        "envs": ["base", "dev"],
        "config": {"default_top": "dev"},
        "calls": [["state.show_top"]],
    },
    # state_top
    {
        "name": "state_top_name",
        "files": {**TREE, "base/top.sls": "base:\n  '*':\n    - never\n", "base/mytop.sls": "base:\n  '*':\n    - common\n"},
        "config": {"state_top": "mytop.sls"},
        "calls": [["state.show_top"], ["state.highstate"]],
    },
    {
        "name": "state_top_salt_url",
        "files": {**TREE, "base/tops/main.sls": "base:\n  '*':\n    - debian\n"},
        "config": {"state_top": "salt://tops/main.sls"},
        "calls": [["state.show_top"]],
    },
    {
        "name": "state_top_missing",
        "files": {**TREE, "base/top.sls": SIMPLE},
        "config": {"state_top": "nosuchtop.sls"},
        "calls": [["state.show_top"], ["state.highstate"]],
    },
    # matchers in a top file
    {
        "name": "top_more_matchers",
        "files": {**TREE, "base/top.sls": MATCHERS_TOP},
        "config": {"grains": {"os": "Debian", "roles": ["web"], "ipv4": ["127.0.0.1", "10.1.2.3"]}},
        "calls": [["state.show_top"]],
    },
    # state.request / check_request / run_request / clear_request
    {
        "name": "request_run",
        "files": TREE,
        "calls": [
            ["state.request", "web"],
            ["state.check_request"],
            ["state.run_request"],
            ["state.check_request"],
            ["state.run_request"],
        ],
    },
    {
        "name": "request_clear",
        "files": TREE,
        "calls": [
            ["state.request", "common", "name=mine"],
            ["state.request", "web"],
            ["state.check_request", "mine"],
            ["state.clear_request", "mine"],
            ["state.check_request"],
            ["state.clear_request"],
            ["state.check_request"],
            ["state.run_request", "mine"],
        ],
    },
    # state.pause / state.resume / state.soft_kill on a running run, by its jid: `&` starts
    # the run in the background and waits until its first state has begun ({TMP}/started);
    # `{JID}` is that run's jid; `wait` waits for it and records its answer.
    {
        "name": "soft_kill_running",
        "files": KILL,
        "calls": [["&", "state.sls", "k"], ["state.soft_kill", "{JID}"], ["wait"]],
    },
    {
        "name": "soft_kill_running_state",
        "files": KILL,
        "calls": [["&", "state.sls", "k"], ["state.soft_kill", "{JID}", "third"], ["wait"]],
    },
    {
        "name": "pause_resume_running",
        "files": KILL,
        "calls": [["&", "state.sls", "k"], ["state.pause", "{JID}"], ["state.resume", "{JID}"], ["wait"]],
    },
    {
        "name": "soft_kill_other_jid",
        "files": KILL,
        "calls": [["state.soft_kill", "20260101000000000002"], ["state.sls", "k"]],
    },
]


def answer(code, stdout, stderr, tmp):
    """One call's answer; a call Salt refuses (no JSON) keeps its error line."""
    try:
        out = json.loads(stdout)["local"]
    except (ValueError, KeyError):
        errors = [l for l in stderr.splitlines() if l.startswith("Passed invalid arguments")]
        out = {"__error__": errors[0] if errors else stderr[-2000:]}
    return {"retcode": code, "return": compile_gen.scrub(out, tmp)}


def record(case):
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        compile_gen.config(d, case)
        tmp = str(d / "tmp")
        for name, text in case["files"].items():
            env, path = name.split("/", 1)
            dest = d / "pillar" / path if env == "pillar" else d / "srv" / env / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text.replace("{TMP}", tmp))
        answers = []
        argv = [SALT_CALL, "--local", "-c", str(d / "conf"), "--out", "json", "--retcode-passthrough"]
        env = {**os.environ, "LANG": "C.UTF-8"}
        background, jid = None, None
        for call in case["calls"]:
            if call[0] == "&":
                background = subprocess.Popen(
                    argv + call[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp, env=env
                )
                for _ in range(600):
                    if (pathlib.Path(tmp) / "started").exists():
                        break
                    time.sleep(0.05)
                jid = next(p.name for p in (d / "cache" / "proc").iterdir())
                continue
            if call[0] == "wait":
                stdout, stderr = background.communicate(timeout=300)
                answers.append(answer(background.returncode, stdout, stderr, tmp))
                continue
            call = [w.replace("{JID}", jid or "") for w in call]
            proc = subprocess.run(argv + call, capture_output=True, text=True, cwd=tmp, env=env, timeout=300)
            answers.append(answer(proc.returncode, proc.stdout, proc.stderr, tmp))
        return case["name"], answers


def main():
    for c in CASES:
        c.setdefault("envs", ["base"])
        c.setdefault("config", {})
    only = set(sys.argv[1:])
    cases = [c for c in CASES if not only or c["name"] in only]
    (HERE / "cases.json").write_text(
        json.dumps([{**c, "config": {**compile_gen.CONFIG, **c["config"]}} for c in CASES], indent=1) + "\n"
    )
    path = HERE / "recorded.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for name, rec in pool.map(record, cases):
            recorded[name] = rec
            print(name, [r["retcode"] for r in rec], file=sys.stderr)
    recorded = {c["name"]: recorded[c["name"]] for c in CASES if c["name"] in recorded}
    path.write_text(json.dumps(recorded, indent=1) + "\n")


if __name__ == "__main__":
    main()
