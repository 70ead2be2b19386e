"""Records what Salt 3007.8 answers for the compiler and runner cases below.

The cases (state trees, minion options, the call) are ours; what Salt answers is
recorded from the real Salt with `salt-call --local --out json`. Files are keyed
`<saltenv>/<path>` (`pillar/<path>` goes to the pillar roots). `{TMP}` stands for a
scratch directory, put back in what Salt answered. Timings are dropped.

Writes cases.json (the inputs) and recorded.json (Salt's answers). Regenerate:

    /work/saltvenv/bin/python states/tests/data/compile/gen.py
"""

import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).parent
SALT_CALL = "/work/saltvenv/bin/salt-call"

TOP_BASIC = """
base:
  '*':
    - common
  'minion':
    - web
  'G@os:Debian and not web*':
    - match: compound
    - debian
  'os:Debian':
    - match: grain
    - grainmatch
  'minion,other':
    - match: list
    - listed
  '^min.*n$':
    - match: pcre
    - pcrematch
  'role:db':
    - match: pillar
    - db
  'group1':
    - match: nodegroup
    - grouped
  'nomatch*':
    - never
"""

TREE = {
    "base/common.sls": "common_state:\n  test.nop\n",
    "base/web/init.sls": "include:\n  - .nginx\n  - ..common\nweb_state:\n  test.succeed_without_changes: []\n",
    "base/web/nginx.sls": "nginx:\n  test.nop:\n    - order: 5\n",
    "base/debian.sls": "debian_state:\n  test.nop\n",
    "base/grainmatch.sls": "grain_state:\n  test.nop\n",
    "base/listed.sls": "listed_state:\n  test.nop\n",
    "base/pcrematch.sls": "pcre_state:\n  test.nop\n",
    "base/db.sls": "db_state:\n  test.nop\n",
    "base/grouped.sls": "grouped_state:\n  test.nop\n",
    "pillar/top.sls": "base:\n  '*':\n    - data\n",
    "pillar/data.sls": "role: db\n",
}

CONFIG = {
    "grains": {"os": "Debian", "roles": ["web"]},
    "nodegroups": {"group1": "L@minion,foo"},
}


def with_top(top, extra=None):
    files = dict(TREE)
    files["base/top.sls"] = top
    files.update(extra or {})
    return files


# Inputs taken from Salt's tests/pytests/functional/modules/state/test_state.py
# (Salt 3007.8, Apache-2.0); Salt's answers are recorded, not copied.
RECURSE_SLS_ONE = """
snmpd:
  pkg:
    - installed
  service:
    - running
    - require:
      - pkg: snmpd
    - watch:
      - file: /etc/snmp/snmpd.conf

/etc/snmp/snmpd.conf:
  file:
    - managed
    - source: salt://snmpd/snmpd.conf.jinja
    - template: jinja
    - user: root
    - group: root
    - mode: "0600"
    - require:
      - pkg: snmpd
"""

FROM_SALT_TESTS = [
    {
        "name": "salt_test_catch_recurse",
        "files": {"base/recurse-fail.sls": """
mysql:
  service:
    - running
    - require:
      - file: /etc/mysql/my.cnf

/etc/mysql/my.cnf:
  file:
    - managed
    - source: salt://master.cnf
    - require:
      - service: mysql
"""},
        "call": ["state.sls", "recurse-fail"],
    },
    {"name": "salt_test_no_recurse", "files": {"base/recurse-ok.sls": RECURSE_SLS_ONE}, "call": ["state.show_sls", "recurse-ok"]},
    {"name": "salt_test_no_recurse_low", "files": {"base/recurse-ok.sls": RECURSE_SLS_ONE}, "call": ["state.show_low_sls", "recurse-ok"]},
    {
        "name": "salt_test_unicode",
        "files": {"base/issue-46672.sls": "echo1:\n  cmd.run:\n    - name: \"echo 'This is \u00c6 test!'\"\n"},
        "call": ["state.sls", "issue-46672"],
    },
    {
        "name": "salt_test_integer_name",
        "files": {"base/12345.sls": "always-passes:\n  test.succeed_without_changes\n"},
        "call": ["state.sls", "12345"],
    },
    {
        "name": "salt_test_issue_62264",
        "files": {"base/issue-62264.sls": """
stuff:
  cmd.run:
    - name: echo hello

thing_test:
  cmd.run:
    - name: echo world
    - require_in:
      - /stuff/*
      - test: service_running

service_running:
  test.succeed_without_changes:
    - require:
      - cmd: stuff
"""},
        "call": ["state.sls", "issue-62264"],
    },
    {
        "name": "salt_test_retry_option",
        "files": {"base/retry.sls": """
file_test:
  file.exists:
    - name: /path/to/a/non-existent/file.txt
    - retry:
        until: True
        attempts: 3
        interval: 1
        splay: 0
"""},
        "call": ["state.sls", "retry"],
    },
]

CASES = [
    # The top file.
    {"name": "top_matchers", "files": with_top(TOP_BASIC), "call": ["state.show_top"]},
    {"name": "top_none", "files": {"base/common.sls": "a:\n  test.nop\n"}, "call": ["state.show_top"]},
    {
        "name": "top_merge_envs",
        "files": with_top(
            "base:\n  '*':\n    - common\ndev:\n  '*':\n    - fromdev\n",
            {"dev/top.sls": "dev:\n  '*':\n    - devonly\nbase:\n  '*':\n    - ignored\n", "dev/fromdev.sls": "x:\n  test.nop\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "call": ["state.show_top"],
    },
    {
        "name": "top_merge_dev_only",
        "files": with_top(
            "base:\n  '*':\n    - common\n",
            {"dev/top.sls": "dev:\n  '*':\n    - devonly\nbase:\n  '*':\n    - ignored\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "call": ["state.show_top"],
    },
    {
        "name": "top_same",
        "files": with_top(
            "base:\n  '*':\n    - common\ndev:\n  '*':\n    - frombase\n",
            {"dev/top.sls": "dev:\n  '*':\n    - devonly\nbase:\n  '*':\n    - ignored\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "config": {"top_file_merging_strategy": "same"},
        "call": ["state.show_top"],
    },
    {
        "name": "top_merge_all",
        "files": with_top(
            "base:\n  '*':\n    - common\n",
            {"dev/top.sls": "base:\n  '*':\n    - web\n    - common\ndev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "config": {"top_file_merging_strategy": "merge_all"},
        "call": ["state.show_top"],
    },
    {
        "name": "top_env_order",
        "files": with_top(
            "base:\n  '*':\n    - common\n",
            {"dev/top.sls": "dev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "config": {"env_order": ["dev", "base"]},
        "call": ["state.show_top"],
    },
    {
        "name": "top_saltenv_dev",
        "files": with_top(
            "base:\n  '*':\n    - common\ndev:\n  '*':\n    - frombase\n",
            {"dev/top.sls": "dev:\n  '*':\n    - devonly\n", "dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "call": ["state.show_top", "saltenv=dev"],
    },
    {
        "name": "top_env_item",
        "files": with_top(
            "base:\n  '*':\n    - common\n    - dev: devonly\n    - nosuchenv: x\n",
            {"dev/devonly.sls": "y:\n  test.nop\n"},
        ),
        "envs": ["base", "dev"],
        "call": ["state.show_top"],
    },
    {"name": "top_malformed", "files": with_top("base:\n  '*': common\n"), "call": ["state.show_top"]},
    {"name": "top_empty_sls", "files": with_top("base:\n  '*':\n    - ''\n"), "call": ["state.show_top"]},
    # High data.
    {"name": "show_highstate", "files": with_top(TOP_BASIC), "call": ["state.show_highstate"]},
    {"name": "show_lowstate", "files": with_top(TOP_BASIC), "call": ["state.show_lowstate"]},
    {"name": "highstate_no_match", "files": with_top("base:\n  'nomatch':\n    - common\n"), "call": ["state.highstate"]},
    {"name": "highstate_no_top", "files": {"base/common.sls": "a:\n  test.nop\n"}, "call": ["state.highstate"]},
    {"name": "highstate_runs", "files": with_top("base:\n  '*':\n    - common\n    - web\n"), "call": ["state.highstate"]},
    {"name": "highstate_missing_sls", "files": with_top("base:\n  '*':\n    - common\n    - nope\n"), "call": ["state.highstate"]},
    {"name": "sls_include_relative", "files": TREE, "call": ["state.show_sls", "web"]},
    {"name": "low_sls_include_relative", "files": TREE, "call": ["state.show_low_sls", "web"]},
    {
        "name": "sls_forms",
        "files": {
            "base/forms.sls": """
short: test.nop
long:
  test:
    - nop
    - comment: hi
dotted:
  test.succeed_without_changes:
    - comment: dotted
with_names:
  test.succeed_without_changes:
    - names:
      - one
      - two:
        - comment: second
      - three
first_one:
  test.nop:
    - order: first
last_one:
  test.nop:
    - order: last
numbered:
  test.nop:
    - order: 3
negative:
  test.nop:
    - order: -1
named:
  test.nop:
    - name: explicit name
"""
        },
        "call": ["state.show_sls", "forms"],
    },
    {"name": "low_sls_forms", "same_files_as": "sls_forms", "call": ["state.show_low_sls", "forms"]},
    {"name": "run_forms", "same_files_as": "sls_forms", "call": ["state.sls", "forms"]},
    {
        "name": "sls_extend_exclude",
        "files": {
            "base/main.sls": """
include:
  - other
  - dropped
exclude:
  - sls: dropped
  - id: other_gone
extend:
  other_kept:
    test.succeed_without_changes:
      - comment: extended
      - require:
        - test: main_state
main_state:
  test.nop
""",
            "base/other.sls": "other_kept:\n  test.succeed_without_changes:\n    - comment: original\nother_gone:\n  test.nop\n",
            "base/dropped.sls": "dropped_state:\n  test.nop\n",
        },
        "call": ["state.show_sls", "main"],
    },
    {"name": "lowstate_extend_exclude", "same_files_as": "sls_extend_exclude", "top": "base:\n  '*':\n    - main\n", "call": ["state.show_lowstate"]},
    {"name": "run_extend_exclude", "same_files_as": "sls_extend_exclude", "call": ["state.sls", "main"]},
    {
        "name": "sls_include_env",
        "files": {
            "base/main.sls": "include:\n  - dev: devinc\nmain_state:\n  test.nop\n",
            "dev/devinc.sls": "dev_state:\n  test.nop\n",
        },
        "envs": ["base", "dev"],
        "call": ["state.show_sls", "main"],
    },
    {"name": "sls_conflicting_ids", "files": {"base/a.sls": "include:\n  - b\nsame:\n  test.nop\n", "base/b.sls": "same:\n  test.succeed_without_changes\n"}, "call": ["state.show_sls", "a"]},
    {"name": "sls_missing", "files": {"base/a.sls": "x:\n  test.nop\n"}, "call": ["state.show_sls", "nope"]},
    {"name": "run_missing", "files": {"base/a.sls": "x:\n  test.nop\n"}, "call": ["state.sls", "nope"]},
    {"name": "sls_missing_include", "files": {"base/a.sls": "include:\n  - gone\nx:\n  test.nop\n"}, "call": ["state.show_sls", "a"]},
    {"name": "sls_relative_too_far", "files": {"base/a.sls": "include:\n  - ..gone\nx:\n  test.nop\n"}, "call": ["state.show_sls", "a"]},
    {"name": "sls_unknown_env_include", "files": {"base/a.sls": "include:\n  - nosuch: gone\nx:\n  test.nop\n"}, "call": ["state.show_sls", "a"]},
    {"name": "sls_not_dict", "files": {"base/a.sls": "- just\n- a list\n"}, "call": ["state.show_sls", "a"]},
    {"name": "sls_id_not_dict", "files": {"base/a.sls": "x: 5\n"}, "call": ["state.show_sls", "a"]},
    {"name": "sls_multiple_decls", "files": {"base/a.sls": "x:\n  test.nop: []\n  test.succeed_without_changes: []\n"}, "call": ["state.show_sls", "a"]},
    {
        "name": "sls_verify_errors",
        "files": {
            "base/a.sls": """
trailing:
  test.nop:
nofun:
  test:
    - comment: x
toomany:
  test:
    - nop
    - succeed_without_changes
spaced:
  test:
    - "nop now"
badnames:
  test.nop:
    - names: notalist
notlist:
  test.nop:
    - require: x
"""
        },
        "call": ["state.show_sls", "a"],
    },
    {"name": "run_verify_errors", "same_files_as": "sls_verify_errors", "call": ["state.sls", "a"]},
    {"name": "sls_empty_file", "files": {"base/a.sls": "", "base/b.sls": "include:\n  - a\nx:\n  test.nop\n"}, "call": ["state.show_sls", "b"]},
    {"name": "sls_many_mods", "files": TREE, "call": ["state.show_sls", "common,debian"]},
    # The runner.
    {
        "name": "run_globals",
        "files": {
            "base/g.sls": """
onlyif_false:
  test.succeed_with_changes:
    - onlyif: 'false'
onlyif_true:
  test.succeed_with_changes:
    - onlyif:
      - 'true'
      - test -d /
unless_true:
  test.succeed_with_changes:
    - unless: 'true'
unless_mixed:
  test.succeed_with_changes:
    - unless:
      - 'true'
      - 'false'
creates_there:
  cmd.run:
    - name: echo no
    - creates: /
creates_list:
  test.succeed_with_changes:
    - creates:
      - /
      - /nonexistent-path
check_ok:
  cmd.run:
    - name: echo hi
    - check_cmd:
      - 'true'
check_fail:
  test.succeed_with_changes:
    - check_cmd:
      - 'false'
onlyif_fun:
  test.succeed_with_changes:
    - onlyif:
      - fun: test.true
unless_fun_args:
  test.succeed_with_changes:
    - unless:
      - fun: test.echo
        args:
          - ''
""",
        },
        "call": ["state.sls", "g"],
    },
    {"name": "run_globals_test", "same_files_as": "run_globals", "call": ["state.sls", "g", "test=True"]},
    {
        "name": "run_test_mode",
        "files": {
            "base/t.sls": """
changes:
  test.succeed_with_changes
nochanges:
  test.succeed_without_changes
fails:
  test.fail_with_changes
fails_quietly:
  test.fail_without_changes
command:
  cmd.run:
    - name: echo would
watcher:
  cmd.wait:
    - name: echo watched
    - watch:
      - test: changes
configurable:
  test.configurable_test_state:
    - changes: false
notify:
  test.show_notification:
    - text: hello
""",
        },
        "call": ["state.sls", "t", "test=True"],
    },
    {"name": "run_test_mode_real", "same_files_as": "run_test_mode", "call": ["state.sls", "t"]},
    {
        "name": "run_failhard_state",
        "files": {
            "base/f.sls": "one:\n  test.succeed_without_changes\ntwo:\n  test.fail_without_changes:\n    - failhard: true\nthree:\n  test.succeed_without_changes\n",
        },
        "call": ["state.sls", "f"],
    },
    {"name": "run_failhard_option", "files": {"base/f.sls": "one:\n  test.fail_without_changes\ntwo:\n  test.succeed_without_changes\n"}, "call": ["state.sls", "f", "failhard=True"]},
    {
        "name": "run_failhard_config",
        "files": {"base/f.sls": "one:\n  test.fail_without_changes\ntwo:\n  test.succeed_without_changes\n"},
        "config": {"failhard": True},
        "call": ["state.sls", "f"],
    },
    {"name": "run_failhard_config_test", "same_files_as": "run_failhard_config", "config": {"failhard": True}, "call": ["state.sls", "f", "test=True"]},
    {
        "name": "run_retry",
        "files": {
            "base/r.sls": """
retried:
  test.fail_without_changes:
    - retry:
        attempts: 2
        interval: 0
until_false:
  test.fail_without_changes:
    - retry:
        attempts: 3
        until: false
        interval: 0
bad_retry:
  test.succeed_without_changes:
    - retry:
        attempts: two
        interval: 0
""",
        },
        "call": ["state.sls", "r"],
    },
    {"name": "run_retry_test", "same_files_as": "run_retry", "call": ["state.sls", "r", "test=True"]},
    {
        "name": "run_unknown_function",
        "files": {"base/u.sls": "missing_fun:\n  test.nosuch\nmissing_mod:\n  nosuchmod.run\nok:\n  test.nop\n"},
        "call": ["state.sls", "u"],
    },
    {
        "name": "run_requisite_forms",
        "files": {
            "base/q.sls": """
include:
  - q2
by_glob:
  test.succeed_with_changes:
    - require:
      - test: 'q2_*'
by_name:
  test.nop:
    - name: the name
by_sls:
  test.nop:
    - require:
      - sls: q2
watcher:
  cmd.wait:
    - name: echo fired
    - watch:
      - test: by_glob
listened:
  test.succeed_with_changes:
    - listen_in:
      - cmd: listener
listener:
  cmd.run:
    - name: echo listener
changer:
  test.succeed_with_changes:
    - onchanges_in:
      - test: reacts
reacts:
  test.nop
pre:
  test.succeed_with_changes:
    - prereq_in:
      - test: needs_pre
needs_pre:
  test.succeed_with_changes
user:
  cmd.run:
    - name: echo used
    - use:
      - cmd: template
template:
  cmd.run:
    - name: echo template
    - cwd: /
named_req:
  test.nop:
    - require:
      - the name
""",
            "base/q2.sls": "q2_a:\n  test.nop\nq2_b:\n  test.succeed_without_changes\n",
        },
        "call": ["state.sls", "q"],
    },
    {"name": "lowstate_requisite_forms", "same_files_as": "run_requisite_forms", "top": "base:\n  '*':\n    - q\n", "call": ["state.show_lowstate"]},
    {
        "name": "run_parallel",
        "files": {
            "base/p.sls": """
first:
  cmd.run:
    - name: sleep 1; echo first
    - parallel: true
second:
  cmd.run:
    - name: sleep 1; echo second
    - parallel: true
after:
  test.nop:
    - require:
      - cmd: first
      - cmd: second
""",
        },
        "call": ["state.sls", "p"],
    },
    {
        "name": "run_cmd_forms",
        "files": {
            "base/c.sls": """
failing:
  cmd.run:
    - name: 'echo out; echo err >&2; exit 3'
in_dir:
  cmd.run:
    - name: pwd
    - cwd: /tmp
bad_dir:
  cmd.run:
    - name: pwd
    - cwd: /nonexistent-dir
with_env:
  cmd.run:
    - name: echo $GREETING
    - env:
      - GREETING: hello
bad_env:
  cmd.run:
    - name: echo x
    - env: notalist
stateful_kv:
  cmd.run:
    - name: 'echo "changed=yes comment=\\"all good\\""'
    - stateful: true
stateful_json:
  cmd.run:
    - name: 'echo "{\\"changed\\": true, \\"comment\\": \\"json\\", \\"thing\\": 1}"'
    - stateful: true
stateful_nochange:
  cmd.run:
    - name: 'echo changed=no'
    - stateful: true
wait_only:
  cmd.wait:
    - name: echo never
""",
        },
        "call": ["state.sls", "c"],
    },
    {
        "name": "run_script",
        "files": {
            "base/scripts/hello.sh": "#!/bin/sh\necho hello $1\n",
            "base/s.sls": """
hello:
  cmd.script:
    - source: salt://scripts/hello.sh
    - args: world
missing:
  cmd.script:
    - source: salt://scripts/nope.sh
by_name:
  cmd.script:
    - name: salt://scripts/hello.sh there
""",
        },
        "call": ["state.sls", "s"],
    },
    {"name": "run_script_test", "same_files_as": "run_script", "call": ["state.sls", "s", "test=True"]},
    {
        "name": "run_disabled",
        "files": {"base/d.sls": "a:\n  test.fail_without_changes\nb:\n  test.nop\nc:\n  test.fail_with_changes\n"},
        "config": {"grains": {"os": "Debian", "state_runs_disabled": ["test.fail*"]}},
        "call": ["state.sls", "d"],
    },
    {
        "name": "run_slots",
        "files": {
            "base/slots.sls": """
slot_name:
  test.succeed_without_changes:
    - name: __slot__:salt:test.echo(hello)
    - comment: __slot__:salt:test.echo(text='from a slot')~ !
    - reload_modules: true
slot_dict:
  test.show_notification:
    - text: __slot__:salt:grains.item(os).os
slot_cmd:
  test.configurable_test_state:
    - changes: false
    - comment: __slot__:salt:cmd.run("echo 'hi there'")
slot_onlyif:
  test.succeed_with_changes:
    - onlyif:
      - fun: test.echo
        args:
          - __slot__:salt:test.echo(yes)
slot_bad:
  test.show_notification:
    - text: __slot__:salt:nosuch.fun()
slot_malformed:
  test.show_notification:
    - text: __slot__:pillar:x
""",
        },
        "call": ["state.sls", "slots"],
    },
    {
        "name": "run_onfail_stop",
        "files": {
            "base/o.sls": "fails:\n  test.fail_without_changes\nhandler:\n  test.succeed_without_changes:\n    - onfail:\n      - test: fails\n    - onfail_stop: false\n",
        },
        "call": ["state.sls", "o"],
    },
    {
        "name": "run_onfail_stop_handler_fails",
        "files": {
            "base/o.sls": "fails:\n  test.fail_without_changes\nhandler:\n  test.fail_without_changes:\n    - onfail:\n      - test: fails\n    - onfail_stop: false\n",
        },
        "call": ["state.sls", "o"],
    },
    {
        "name": "run_check_pillar",
        "files": {
            "pillar/top.sls": "base:\n  '*':\n    - data\n",
            "pillar/data.sls": "role: db\nflag: true\ncount: 3\nitems: [1, 2]\nnested:\n  key: value\n",
            "base/cp.sls": """
all_fine:
  test.check_pillar:
    - present: role
    - boolean: flag
    - integer:
      - count
      - flag
    - string: nested:key
    - listing: items
    - dictionary: nested
    - verbose: true
some_bad:
  test.check_pillar:
    - present:
      - missing_key
      - role
    - string: count
    - dictionary: items
    - listing: nested:nope
""",
        },
        "call": ["state.sls", "cp"],
    },
    {"name": "single_ok", "files": {}, "call": ["state.single", "test.succeed_with_changes", "name=one"]},
    {"name": "single_test", "files": {}, "call": ["state.single", "test.succeed_with_changes", "name=one", "test=True"]},
    {"name": "single_unknown", "files": {}, "call": ["state.single", "test.nosuch", "name=one"]},
    {"name": "single_invalid", "files": {}, "call": ["state.single", "nodot", "name=one"]},
    {"name": "single_cmd_unless", "files": {}, "call": ["state.single", "cmd.run", "name=echo hi", "unless=true"]},
    {"name": "single_require_ignored", "files": {}, "call": ["state.single", "test.nop", "name=one", "require=[{test: nothere}]"]},
    {
        "name": "run_edges",
        "files": {
            "base/e.sls": """
int_names:
  test.nop:
    - names:
      - 1
      - two
bad_umask:
  test.nop:
    - umask: 999
good_umask:
  test.nop:
    - umask: '022'
self_require:
  test.nop:
    - require:
      - test: self_require
missing_sls_req:
  test.nop:
    - require:
      - sls: nope
float_order:
  test.nop:
    - order: 1.5
null_req:
  test.nop:
    - require:
      - test: null
""",
        },
        "call": ["state.sls", "e"],
    },
    {"name": "low_sls_edges", "same_files_as": "run_edges", "call": ["state.show_low_sls", "e"]},
    {
        "name": "run_test_mode_requisites",
        "files": {
            "base/tm.sls": """
changer:
  test.succeed_with_changes
onchanges_it:
  test.succeed_with_changes:
    - onchanges:
      - test: changer
prereq_it:
  test.succeed_without_changes:
    - prereq:
      - test: changer
onfail_it:
  test.succeed_without_changes:
    - onfail:
      - test: changer
watch_it:
  test.succeed_without_changes:
    - watch:
      - test: changer
""",
        },
        "call": ["state.sls", "tm", "test=True"],
    },
    {"name": "run_requisites_real", "same_files_as": "run_test_mode_requisites", "call": ["state.sls", "tm"]},
    {
        "name": "sls_no_auto_order",
        "files": {"base/n.sls": "b:\n  test.nop\na:\n  test.nop\nc:\n  test.nop:\n    - order: 1\n"},
        "config": {"state_auto_order": False},
        "call": ["state.show_low_sls", "n"],
    },
    {"name": "highstate_top_no_targets", "files": with_top("base:\n  - common\n"), "call": ["state.highstate"]},
    {"name": "highstate_top_render_error", "files": with_top("base:\n  '*':\n    - common\n  bad: [\n"), "call": ["state.highstate"]},
    {
        "name": "run_parallel_retry",
        "files": {
            "base/pr.sls": """
par_retry:
  test.fail_without_changes:
    - parallel: true
    - retry:
        attempts: 2
        interval: 0
par_retry_ok:
  test.succeed_without_changes:
    - parallel: true
    - retry:
        attempts: 2
        interval: 0
""",
        },
        "call": ["state.sls", "pr"],
    },
    {"name": "run_parallel_retry_test", "same_files_as": "run_parallel_retry", "call": ["state.sls", "pr", "test=True"]},
    {
        "name": "run_check_cmd_string",
        "files": {"base/cc.sls": "as_string:\n  test.succeed_with_changes:\n    - check_cmd: 'true'\nas_list:\n  test.succeed_with_changes:\n    - check_cmd:\n      - 'true'\n"},
        "call": ["state.sls", "cc"],
    },
    {"name": "run_cmd_forms_test", "same_files_as": "run_cmd_forms", "call": ["state.sls", "c", "test=True"]},
]


CASES.extend(FROM_SALT_TESTS)


def config(d, case):
    conf = d / "conf"
    conf.mkdir()
    (d / "tmp").mkdir()
    envs = case.get("envs", ["base"])
    roots = {e: [str(d / "srv" / e)] for e in envs}
    for e in envs:
        (d / "srv" / e).mkdir(parents=True)
    (d / "pillar").mkdir()
    opts = {
        "id": "minion",
        "file_client": "local",
        "file_roots": roots,
        "pillar_roots": {"base": [str(d / "pillar")]},
        "cachedir": str(d / "cache"),
        "root_dir": str(d),
        "pki_dir": str(d / "pki"),
        "log_file": str(d / "log"),
        "sock_dir": str(d / "sock"),
        "user": "root",
        **CONFIG,
        **case.get("config", {}),
    }
    (conf / "minion").write_text(json.dumps(opts))


def record(case):
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        config(d, case)
        tmp = str(d / "tmp")
        for name, text in case["files"].items():
            env, path = name.split("/", 1)
            dest = d / "pillar" / path if env == "pillar" else d / "srv" / env / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text.replace("{TMP}", tmp))
        proc = subprocess.run(
            [SALT_CALL, "--local", "-c", str(d / "conf"), "--out", "json", "--retcode-passthrough"]
            + case["call"],
            capture_output=True,
            text=True,
            cwd=tmp,
            env={**os.environ, "LANG": "C.UTF-8"},
            timeout=300,
        )
        try:
            out = json.loads(proc.stdout)["local"]
        except (ValueError, KeyError):
            out = {"__unparsed__": proc.stdout, "__stderr__": proc.stderr[-2000:]}
        return case["name"], {"retcode": proc.returncode, "return": scrub(out, tmp)}


def scrub(value, tmp):
    if isinstance(value, dict):
        return {
            scrub(k, tmp): scrub(v, tmp)
            for k, v in value.items()
            if k not in ("start_time", "duration")
        }
    if isinstance(value, list):
        return [scrub(v, tmp) for v in value]
    if isinstance(value, str):
        return value.replace(tmp, "{TMP}")
    return value


def main():
    by_name = {c["name"]: c for c in CASES}
    for c in CASES:
        if "same_files_as" in c:
            c["files"] = dict(by_name[c.pop("same_files_as")]["files"])
        if "top" in c:
            c["files"]["base/top.sls"] = c.pop("top")
        c.setdefault("envs", ["base"])
        c.setdefault("config", {})
    only = set(sys.argv[1:])
    cases = [c for c in CASES if not only or c["name"] in only]
    (HERE / "cases.json").write_text(
        json.dumps([{**c, "config": {**CONFIG, **c["config"]}} for c in CASES], indent=1) + "\n"
    )
    path = HERE / "recorded.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for name, rec in pool.map(record, cases):
            recorded[name] = rec
            print(name, rec["retcode"], file=sys.stderr)
    recorded = {c["name"]: recorded[c["name"]] for c in CASES if c["name"] in recorded}
    path.write_text(json.dumps(recorded, indent=1) + "\n")


if __name__ == "__main__":
    main()
