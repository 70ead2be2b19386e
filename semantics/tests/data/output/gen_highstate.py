#!/usr/bin/env python3
"""Golden files for saltq's `highstate` outputter, made by real Salt 3007.8.

Two steps, both run with Salt's virtualenv Python:

  /work/saltvenv/bin/python semantics/tests/data/output/gen_highstate.py --record
      Runs `salt-call --local --out json state.apply <sls>` (with and without
      test=True) on the throwaway state trees in SCENARIOS below, in a fresh
      directory under /tmp, and writes each minion return to
      highstate/returns/<scenario>.json as {"retcode": N, "return": {...}}.
      Start times and durations change from run to run, so this step is only
      re-run when a scenario changes.

  /work/saltvenv/bin/python semantics/tests/data/output/gen_highstate.py
      Feeds every recorded return, the hand-written corner cases in HANDMADE
      (the shapes the outputter must also cope with: compile errors, strings,
      orchestration, odd fields) and seeded random state runs (random_*),
      through
      `salt.output.display_output(data, out="highstate", opts=..., _retcode=...)`
      under each option set of VARIANTS, and writes highstate/cases/<case>.json:
        {"input": <what the salt CLI hands the outputter: {minion: return}>,
         "variants": [{"opts": {<the Salt opts set>}, "retcode": N,
                       "expected": "<exact stdout>"}, ...]}
      `opts` holds only keys set on top of salt.config.master_config(None)
      (whose defaults are state_output full, state_verbose True,
      state_output_profile True). "Exact stdout" is what display_output
      prints: the text right-stripped plus one newline, or nothing.

Salt is the oracle; nothing of it is copied into saltq.
"""

import contextlib
import copy
import io
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap

import salt.config
import salt.output
import salt.version

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "highstate")
RETURNS_DIR = os.path.join(OUT_DIR, "returns")
CASES_DIR = os.path.join(OUT_DIR, "cases")
SALT_CALL = os.path.join(os.path.dirname(sys.executable), "salt-call")
WORK = "/tmp/saltq-highstate-gen"

LONG_WARNING = (
    "The 'runas' argument is deprecated and will be removed in Salt 3009; use "
    "'user' instead, which behaves the same way for every state in the tree. "
    "See https://docs.saltproject.io/en/latest/ref/states/all/salt.states.cmd.html "
    "for the well-known self-explanatory details."
)

# name -> (sls files {relative path: text}, files to create first {path: text},
#          sls to apply, extra salt-call arguments). "@W@" is the work directory.
SCENARIOS = {
    "basic": (
        {
            "basic.sls": """
succeed_changes:
  test.succeed_with_changes
succeed_nochanges:
  test.succeed_without_changes
fail_nochanges:
  test.fail_without_changes
fail_changes:
  test.fail_with_changes
named differently:
  test.succeed_with_changes:
    - name: the real name
multi line comment:
  test.configurable_test_state:
    - comment: |
        first line
        second line
          indented third
    - changes: False
warned:
  test.configurable_test_state:
    - warnings:
      - short warning
      - %s
nop:
  test.nop
"""
            % json.dumps(LONG_WARNING)
        },
        {},
        "basic",
        [],
    ),
    "files": (
        {
            "files.sls": """
new file:
  file.managed:
    - name: @W@/new.txt
    - contents: |
        hello
        world
changed file:
  file.managed:
    - name: @W@/motd
    - contents: |
        Welcome to web1
        Managed by salt
same file:
  file.managed:
    - name: @W@/same.txt
    - contents: same
@W@/dir/sub:
  file.directory:
    - makedirs: True
@W@/gone.txt:
  file.absent
append:
  file.append:
    - name: @W@/motd
    - text: appended line
""",
        },
        {"motd": "Welcome\nto the old motd\n", "same.txt": "same\n", "gone.txt": "x\n"},
        "files",
        [],
    ),
    "cmds": (
        {
            "cmds.sls": """
echo hello:
  cmd.run
failing command:
  cmd.run:
    - name: 'echo to stdout; echo to stderr >&2; exit 3'
skipped by unless:
  cmd.run:
    - name: echo never
    - unless: 'true'
needs the failure:
  cmd.run:
    - name: echo after
    - require:
      - cmd: failing command
watch it:
  test.succeed_without_changes:
    - onchanges:
      - cmd: echo hello
""",
        },
        {},
        "cmds",
        [],
    ),
    "many": (
        {
            "many.sls": "\n".join(
                f"{name}:\n  test.{fun}\n"
                for name, fun in [
                    ("zulu", "succeed_without_changes"),
                    ("alpha", "succeed_with_changes"),
                    ("mike", "succeed_without_changes"),
                    ("bravo", "fail_without_changes"),
                    ("yankee", "succeed_with_changes"),
                    ("charlie", "succeed_without_changes"),
                    ("x-ray", "succeed_without_changes"),
                    ("delta", "succeed_with_changes"),
                    ("whiskey", "succeed_without_changes"),
                    ("echo", "succeed_without_changes"),
                    ("victor", "fail_with_changes"),
                    ("foxtrot", "succeed_without_changes"),
                    ("uniform", "succeed_without_changes"),
                ]
            )
        },
        {},
        "many",
        [],
    ),
    "names": (
        {
            "names.sls": """
mix-matched results:
  cmd.run:
    - names:
      - "true"
      - "false"
      - /bin/true
      - /bin/false
several files:
  file.managed:
    - contents: x
    - names:
      - @W@/a.txt
      - @W@/b.txt
      - @W@/c.txt
""",
        },
        {},
        "names",
        [],
    ),
    "parallel": (
        {
            "parallel.sls": """
sleep one:
  cmd.run:
    - name: sleep 0.2
    - parallel: True
sleep two:
  cmd.run:
    - name: sleep 0.3
    - parallel: True
after:
  test.succeed_with_changes
""",
        },
        {},
        "parallel",
        [],
    ),
    "broken_yaml": ({"broken.sls": "a:\n  b: [\n"}, {}, "broken", []),
    "broken_states": (
        {
            "badfun.sls": """
no such function:
  test.no_such_function
bad requisite:
  test.nop:
    - require:
      - test: does not exist
""",
        },
        {},
        "badfun",
        [],
    ),
    "no_top": ({}, {}, None, []),
}
# The same trees in test mode: result None where something would change.
TEST_MODE = ["basic", "files", "cmds"]


def record():
    """Runs each scenario with salt-call and stores the returns."""
    os.makedirs(RETURNS_DIR, exist_ok=True)
    runs = [(name, False) for name in SCENARIOS] + [(name, True) for name in TEST_MODE]
    for name, test in runs:
        sls_files, before, sls, extra = SCENARIOS[name]
        shutil.rmtree(WORK, ignore_errors=True)
        for sub in ("conf", "srv", "cache", "w"):
            os.makedirs(os.path.join(WORK, sub))
        w = os.path.join(WORK, "w")
        with open(os.path.join(WORK, "conf", "minion"), "w") as fh:
            fh.write(
                "file_client: local\n"
                f"file_roots:\n  base:\n    - {WORK}/srv\n"
                f"cachedir: {WORK}/cache\nroot_dir: {WORK}\npki_dir: {WORK}/pki\n"
                f"log_file: {WORK}/log\nuser: root\nid: web1\n"
            )
        for rel, text in sls_files.items():
            with open(os.path.join(WORK, "srv", rel), "w") as fh:
                fh.write(text.replace("@W@", w))
        for rel, text in before.items():
            with open(os.path.join(w, rel), "w") as fh:
                fh.write(text)
        cmd = [SALT_CALL, "--local", "-c", os.path.join(WORK, "conf"), "--out", "json",
               "--retcode-passthrough", "state.apply"]
        if sls:
            cmd.append(sls)
        cmd += extra
        if test:
            cmd.append("test=True")
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=WORK)
        ret = json.loads(proc.stdout)["local"]
        text = json.dumps(ret, indent=1, ensure_ascii=False).replace(w, "/srv/www")
        out = name + ("_test" if test else "")
        with open(os.path.join(RETURNS_DIR, f"{out}.json"), "w", encoding="utf-8") as fh:
            json.dump({"command": " ".join(cmd[3:]).replace(WORK, "$W"),
                       "retcode": proc.returncode, "return": json.loads(text)},
                      fh, ensure_ascii=False, indent=1)
            fh.write("\n")
        print(f"recorded {out}: retcode {proc.returncode}")
    shutil.rmtree(WORK, ignore_errors=True)


def state(sid, fun, result, changes=None, comment="", run_num=0, name=None, **extra):
    """A state return as the state engine builds it."""
    mod, _, f = fun.partition(".")
    name = sid if name is None else name
    ret = {
        "name": name,
        "changes": {} if changes is None else changes,
        "result": result,
        "comment": comment,
        "__sls__": "hand",
        "__run_num__": run_num,
        "start_time": "10:00:00.%06d" % run_num,
        "duration": 1.25 + run_num,
        "__id__": sid,
    }
    ret.update(extra)
    return {f"{mod}_|-{sid}_|-{name}_|-{f}": ret}


def merge(*dicts):
    out = {}
    for d in dicts:
        out.update(d)
    return out


SIMPLE = merge(
    state("one", "test.succeed_with_changes", True, {"k": "v"}, "ok", 0),
    state("two", "test.fail_without_changes", False, None, "bad", 1),
)

# (name, data handed to the outputter, retcode the CLI passes)
HANDMADE = [
    ("compile_errors", {"web1": [
        "Rendering SLS 'base:broken' failed: mapping values are not allowed here",
        "State 'x' in SLS 'y' is not formed as a list",
        "esc \x1b[31m in error",
    ]}, 1),
    ("compile_errors_not_strings", {"web1": ["text", 5, None, {"a": [1]}]}, 1),
    ("string_return", {"web1": "first line\nsecond line\n"}, 0),
    ("empty_string_return", {"web1": ""}, 0),
    ("int_return", {"web1": 5}, 0),
    ("bool_return", {"web1": True}, 0),
    ("none_return", {"web1": None}, 0),
    ("float_return", {"web1": 2.5}, 0),
    ("empty_dict_return", {"web1": {}}, 0),
    ("top_string", "just a string", 0),
    ("top_none", None, 0),
    ("top_list", [1, "two"], 0),
    ("top_int", 3, 0),
    ("top_empty_dict", {}, 0),
    ("esc_in_host", {"we\x1bb1": SIMPLE}, 0),
    ("two_minions", {"web1": SIMPLE, "db1": merge(
        state("db", "pkg.installed", True, None, "All specified packages are already installed", 0),
    )}, 2),
    ("missing_run_num", {"web1": merge(
        SIMPLE,
        {"test_|-lost_|-lost_|-nop": {"name": "lost", "changes": {}, "result": True,
                                       "comment": "no run num"}},
        {"test_|-lost2_|-lost2_|-nop": {"result": None, "changes": {"a": 1}}},
    )}, 0),
    ("missing_changes_falls_back", {"web1": {"test_|-x_|-x_|-nop": {
        "result": True, "comment": "c", "__run_num__": 0, "name": "x"}}}, 0),
    ("not_state_entries", {"web1": merge(
        SIMPLE, {"changes": {"a": 1}, "no_result": {"comment": "x", "__run_num__": 9},
                 "scalar": 5, "list": [1]})}, 0),
    ("odd_fields", {"web1": merge(
        state("list comment", "test.nop", True, None, ["first", "second\nthird"], 0),
        state("dict comment", "test.nop", True, None, {"a": 1}, 1),
        state("int comment", "test.nop", True, None, 42, 2),
        state("null comment", "test.nop", True, None, None, 3),
        state("data list", "test.nop", True, None, "c", 4, data=["x", 1]),
        state("data dict", "test.nop", True, None, "c", 5, data={"k": "v", "n": [1]}),
        state("data scalar", "test.nop", True, None, "c", 6, data=7),
        state("no times", "test.nop", True, None, "c", 7),
        state("string duration", "test.nop", True, None, "c", 8, duration="3.5 ms"),
        state("bad duration", "test.nop", True, None, "c", 9, duration="abc"),
        state("int duration", "test.nop", True, None, "c", 10, duration=7),
        state("whitespace comment", "test.nop", True, None, "  \n padded \n\n", 11),
        state("changes not dict", "test.nop", True, ["a", "b"], "c", 12),
        state("changes string", "test.nop", True, "text", "c", 13),
        state("result string", "test.nop", "yes", None, "c", 14),
        state("result zero", "test.nop", 0, None, "c", 15),
        state("result one", "test.nop", 1, {"a": 1}, "c", 16),
        state("diff change", "file.managed", True,
              {"diff": "--- \n+++ \n@@ -1 +1 @@\n-old\n+new\n", "mode": "0644"}, "c", 17),
        state("esc comment", "test.nop", False, None, "red \x1b[31m here", 18),
        state("unicode", "test.nop", True, {"é": "日本"}, "héllo wörld", 19),
    )}, 2),
    ("no_times_at_all", {"web1": {
        "test_|-a_|-a_|-nop": {"name": "a", "changes": {}, "result": True, "comment": "x",
                               "__run_num__": 0},
        "test_|-b_|-b_|-nop": {"name": "b", "changes": {"c": 1}, "result": None,
                               "comment": "x", "__run_num__": 1, "start_time": "t"},
    }}, 0),
    ("long_durations", {"web1": merge(
        state("slow", "cmd.run", True, None, "c", 0, duration=999.0),
        state("slower", "cmd.run", True, None, "c", 1, duration=0.5),
        state("parallel one", "cmd.run", True, None, "c", 2, duration=2000.25,
              __parallel__=True),
        state("parallel two", "cmd.run", True, None, "c", 3, duration=1500.0,
              __parallel__=True),
    )}, 0),
    ("big_counts", {"web1": merge(*[
        state(f"s{i:03}", "test.nop", i % 7 != 3, {"n": i} if i % 5 == 0 else None,
              "c", i) for i in range(120)
    ])}, 2),
    ("warnings_many", {"web1": merge(
        state("w1", "test.configurable_test_state", True, None, "c", 0,
              warnings=["one", "two-part hyphenated-words wrapping across-the line " * 3,
                        "tab\there", "x" * 100]),
        state("w2", "test.configurable_test_state", False, {"a": 1}, "c", 1,
              warnings=["second warning"]),
    )}, 2),
    ("tag_with_extra_parts", {"web1": {
        "cmd_|-id_|-with_|-pipes_|-name_|-run": {
            "name": "n", "changes": {}, "result": True, "comment": "c", "__run_num__": 0,
            "start_time": "t", "duration": 1.0},
    }}, 0),
    ("orchestration_name", {"master_master": merge(
        state("deploy", "salt.state", True, {"web1": SIMPLE, "web2": {
            "test_|-x_|-x_|-nop": {"name": "x", "changes": {}, "result": True,
                                   "comment": "", "__run_num__": 0}}},
              "States ran successfully.", 0, name="state.sls"),
        state("orch", "salt.runner", True, {}, "c", 1, name="state.orch"),
        state("empty orch", "salt.runner", False, {"web3": ["compile error"]}, "c", 2,
              name="state.orchestrate"),
    ), "retcode": 0}, 0),
    ("function_out_highstate", {"master_master": merge(
        state("run states", "salt.function", True,
              {"ret": {"web1": SIMPLE}, "out": "highstate"}, "Function ran successfully.", 0),
        state("run nested", "salt.function", True,
              {"ret": {"web1": True}, "out": "nested"}, "Function ran successfully.", 1),
    )}, 0),
    ("lookup_jid_envelope", {"web1": {"jid": "20261125231000000000", "fun": "state.apply",
                                       "return": {"data": {"web1": SIMPLE}}}}, 0),
    ("return_envelope", {"return": {"web1": SIMPLE}}, 0),
    ("data_envelope", {"data": {"web1": SIMPLE}}, 0),
    ("orchestration_two_levels", {"master_master": merge(
        state("outer", "salt.runner", True, {"inner_master": merge(
            state("inner", "salt.state", False, {"web1": SIMPLE}, "inner failed", 0,
                  name="state.sls"),
        ), "retcode": 1}, "outer", 0, name="state.orchestrate"),
    )}, 1),
    ("compress_gives_up", {"web1": merge(
        state("mix", "cmd.run", True, {"pid": 1}, "c", 0, name="true"),
        state("mix", "cmd.run", True, {"pid": 3}, "c", 1, name="/bin/true"),
        state("mix", "cmd.run", True, None, "c", 2, name="/bin/echo"),
    ), "web2": ["a compile error"]}, 2),
    ("compress_then_falls_back", {"web1": merge(
        state("mix", "cmd.run", True, {"pid": 1}, "c", 0, name="true"),
        state("mix", "cmd.run", True, {"pid": 3}, "c", 1, name="/bin/true"),
        {"test_|-bad_|-bad_|-nop": {"result": True, "__run_num__": 2, "__id__": "bad",
                                    "__sls__": "hand", "changes": {}, "duration": 1.0,
                                    "start_time": "x"}},
    )}, 0),
    ("warnings_tabular_pct", {"web1": merge(
        state("w", "test.configurable_test_state", None, {"a": 1}, "c", 0,
              warnings=["careful", "very-long-" * 12]),
        state("ok", "test.nop", True, None, "fine", 1),
        state("bad", "test.nop", False, None, "broken", 2),
    )}, 2),
    ("duplicate_names_compress", {"web1": merge(
        state("mix", "cmd.run", True, {"pid": 1}, "c", 0, name="true"),
        state("mix", "cmd.run", False, {"pid": 2}, "c", 1, name="false"),
        state("mix", "cmd.run", True, {"pid": 3}, "c", 2, name="/bin/true"),
        state("mix", "cmd.run", True, None, "c", 3, name="/bin/echo"),
        state("mix", "cmd.run", False, None, "c", 4, name="/bin/false"),
    )}, 2),
]

WORDS = ["web", "nginx", "/etc/motd", "pkg-list", "well-known", "x" * 40, "d\u00e9j\u00e0",
         "\u65e5\u672c", "two words", "tab\there", "dash--dash", "a-b-c", "--opt",
         "line\nbreak", "  padded  ", "trailing\n", "", "\u2028sep", "\r\nwin"]


def random_text(rnd, n):
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, n)))


def random_value(rnd, depth):
    r = rnd.random()
    if depth <= 0 or r < 0.4:
        return rnd.choice([None, True, False, 0, 7, -1.5, 12.25, random_text(rnd, 4),
                           random_text(rnd, 12)])
    if r < 0.6:
        return [random_value(rnd, depth - 1) for _ in range(rnd.randint(0, 3))]
    return {random_text(rnd, 2) or "k": random_value(rnd, depth - 1)
            for _ in range(rnd.randint(0, 3))}


def random_state(rnd, run_num):
    mod = rnd.choice(["test", "file", "cmd", "pkg", "service", "user"])
    fun = rnd.choice(["managed", "run", "installed", "running", "present", "nop"])
    sid = random_text(rnd, 2).replace("_|-", "") or "id"
    name = sid if rnd.random() < 0.6 else (random_text(rnd, 3) or "name")
    result = rnd.choice([True, True, True, False, None, "yes", 1, 0])
    r = rnd.random()
    if r < 0.35:
        changes = {}
    elif r < 0.5:
        changes = {"diff": "--- \n+++ \n@@ -1 +1 @@\n-" + random_text(rnd, 3)
                   + "\n+" + random_text(rnd, 3) + "\n"}
    elif r < 0.9:
        changes = {random_text(rnd, 1) or "c": random_value(rnd, 3)
                   for _ in range(rnd.randint(1, 3))}
    else:
        changes = random_value(rnd, 1)
    comment = random_text(rnd, 10) if rnd.random() < 0.9 else [random_text(rnd, 2)]
    ret = {"name": name, "changes": changes, "result": result, "comment": comment,
           "__sls__": "fuzz", "__run_num__": run_num, "__id__": sid}
    if rnd.random() < 0.9:
        ret["start_time"] = "%02d:%02d:%02d.%06d" % (rnd.randint(0, 23), rnd.randint(0, 59),
                                                    rnd.randint(0, 59),
                                                    rnd.randint(0, 999999))
        ret["duration"] = rnd.choice([round(rnd.uniform(0, 3000), 3), rnd.randint(0, 50)])
    if rnd.random() < 0.15:
        ret["warnings"] = [random_text(rnd, 30) for _ in range(rnd.randint(1, 2))]
    if rnd.random() < 0.1:
        ret["__parallel__"] = True
    if rnd.random() < 0.05:
        ret["data"] = random_value(rnd, 1)
    return f"{mod}_|-{sid}_|-{name}_|-{fun}", ret


def random_cases():
    """Seeded random state runs (the seed keeps the golden files stable)."""
    rnd = random.Random(3007)
    cases = []
    for i in range(16):
        hosts = {}
        for h in range(rnd.randint(1, 2)):
            n = rnd.randint(0, 14)
            order = list(range(n))
            rnd.shuffle(order)
            states = dict(random_state(rnd, run_num) for run_num in order)
            hosts[rnd.choice(["web1", "db1", "m\u00e9", "x" * 30]) + str(h)] = states
        cases.append((f"random_{i:02}", hosts, rnd.choice([0, 2])))
    return cases


def few_variants():
    """The option sets random and large cases are rendered with (a subset of VARIANTS)."""
    for mode in ("full", "terse", "mixed", "changes", "filter", "changes_id"):
        yield {"color": False, "state_output": mode}
    yield {"color": True}
    yield {"color": True, "state_output": "mixed"}
    yield {"color": False, "state_verbose": False}
    yield {"color": False, "state_tabular": True, "state_output": "terse"}
    yield {"color": False, "state_output_pct": True}
    yield {"color": False, "state_compress_ids": True}
    yield {"color": False, "state_output_diff": True, "state_output": "filter",
           "arg": [{"terse": "None,True", "__kwarg__": True}]}


# Option sets (on top of the master's defaults). Each case is rendered with each.
MODES = ["full", "terse", "mixed", "changes", "full_id", "terse_id", "mixed_id",
         "changes_id", "filter", "Terse", "bogus"]


def variants():
    for color in (False, True):
        for mode in MODES:
            for verbose in (True, False):
                if mode in ("Terse", "bogus") and (color or not verbose):
                    continue
                opts = {"color": color}
                if mode != "full":
                    opts["state_output"] = mode
                if not verbose:
                    opts["state_verbose"] = False
                yield opts
    yield {"color": False, "state_output_diff": True}
    yield {"color": False, "state_output_profile": False}
    yield {"color": False, "state_output": "terse", "state_output_profile": False}
    yield {"color": False, "state_output_pct": True}
    yield {"color": True, "state_output_pct": True}
    yield {"color": False, "state_tabular": True, "state_output": "terse"}
    yield {"color": True, "state_tabular": True, "state_output": "mixed"}
    yield {"color": False, "state_tabular": True, "state_output": "terse",
           "state_output_profile": False}
    yield {"color": False, "state_compress_ids": True}
    yield {"color": False, "state_compress_ids": True, "state_output": "terse_id"}
    yield {"color": False, "state_verbose": "no"}
    # --state-output=filter with the CLI's exclude=/terse= keyword arguments
    # (the salt CLI's opts["arg"]) or the state_output_exclude/terse config keys.
    kw = lambda **k: [dict(k, __kwarg__=True)]  # noqa: E731
    yield {"color": False, "state_output": "filter", "arg": kw(exclude="True,")}
    yield {"color": False, "state_output": "filter", "arg": kw(exclude="None,True")}
    yield {"color": False, "state_output": "filter", "arg": kw(terse="True,False")}
    yield {"color": True, "state_output": "filter_id",
           "arg": ["x", kw(terse="True,", exclude="False,")[0]]}
    yield {"color": False, "state_output": "filter", "arg": kw(exclude=True)}
    yield {"color": False, "state_output": "filter", "arg": kw(terse=["None", "True"])}
    yield {"color": False, "state_output": "filter", "arg": kw(exclude={"False": 1})}
    yield {"color": False, "state_output": "filter", "state_output_exclude": ["True"],
           "state_output_terse": "False,None"}


def render(base, data, opts, retcode):
    o = copy.deepcopy(base)
    o.update(copy.deepcopy(opts))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        salt.output.display_output(copy.deepcopy(data), out="highstate", opts=o,
                                   _retcode=retcode)
    return buf.getvalue()


def generate():
    base = salt.config.master_config(None)
    for key in ("output", "output_indent", "color", "nested_indent", "arg"):
        base.pop(key, None)
    cases = []
    for fname in sorted(os.listdir(RETURNS_DIR)):
        with open(os.path.join(RETURNS_DIR, fname), encoding="utf-8") as fh:
            rec = json.load(fh)
        rc = rec["retcode"]
        cases.append((fname[: -len(".json")], {"web1": rec["return"]}, rc))
    cases += HANDMADE
    random_names = set()
    for case in random_cases():
        cases.append(case)
        random_names.add(case[0])
    os.makedirs(CASES_DIR, exist_ok=True)
    names = set()
    for name, data, retcode in cases:
        assert name not in names, name
        names.add(name)
        # The test decodes the same JSON text, so Salt must see what serde_json sees.
        data = json.loads(json.dumps(data))
        out = []
        few = name in random_names or name == "big_counts"
        for opts in few_variants() if few else variants():
            out.append({"opts": opts, "retcode": retcode,
                        "expected": render(base, data, opts, retcode)})
        with open(os.path.join(CASES_DIR, f"{name}.json"), "w", encoding="utf-8") as fh:
            json.dump({"input": data, "variants": out}, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
    for stale in os.listdir(CASES_DIR):
        if stale.endswith(".json") and stale[: -len(".json")] not in names:
            os.remove(os.path.join(CASES_DIR, stale))
    print(f"wrote {len(names)} cases to {CASES_DIR}")


def main():
    assert salt.version.__version__ == "3007.8", salt.version.__version__
    if sys.argv[1:] == ["--record"]:
        record()
    elif sys.argv[1:]:
        sys.exit(__doc__)
    generate()


if __name__ == "__main__":
    main()
