"""Record what Salt 3007.8 answers for the `group`, `user`, `ssh_auth` and `cron` states on
this machine (Debian, root, shadow utils, openssh-client, cron's `crontab`), for real: each
module's steps run in order, one `salt-call --local` each, against throwaway users and groups
with fixed names, uids and gids (47xxx) that the setup commands create and the cleanup
commands remove.

Regenerate (from the repository root, as root):

    /work/saltvenv/bin/python states/tests/data/users/gen.py            # all four
    /work/saltvenv/bin/python states/tests/data/users/gen.py cron       # one

Writes `<module>.json`: `{setup, cleanup, steps: [{id, fun, args, test, ret}]}` where `ret`
is the state's `name`, `result`, `comment` and `changes`. Normalised so a replay on another
day and in another temp dir compares: a shadow `lstchg` equal to today is `{today}`, and the
temporary crontab copy of `cron.file` is `{tmp}`. `salt://` sources come from `srv/base`.
"""

import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"
SRV = os.path.join(HERE, "srv", "base")

KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIAUoDpCmN991W1dMAPLAKlFCEr4yLZ9pvEe/yLLOC6hr"
RSA = "AAAAB3NzaC1yc2EAAAADAQABAAAAgQDsq1Ab"
# crypt.crypt("first", "$6$sqs1saltsalt")
FIRST = "$6$sqs1saltsalt$aYAyxBsDNwwapOW2MltDUpccQo8AQkQP8G3Xkr8JfS4Raf5/JhAhv1Ev3HPT6wfUeZpQPTNwSupnTtXw/wQlu/"

MODULES = {
    "group": {
        "setup": [
            ["useradd", "-M", "-N", "-u", "47211", "sqs1m1"],
            ["useradd", "-M", "-N", "-u", "47212", "sqs1m2"],
        ],
        "cleanup": [
            ["groupdel", "sqs1g1"],
            ["groupdel", "sqs1g2"],
            ["userdel", "sqs1m1"],
            ["userdel", "sqs1m2"],
        ],
        "steps": [
            ("g01_absent_first", "group.absent", [{"name": "sqs1g1"}], False),
            ("g02_present_test", "group.present", [{"name": "sqs1g1"}, {"gid": 47201}], True),
            ("g03_present", "group.present", [{"name": "sqs1g1"}, {"gid": 47201}, {"addusers": ["sqs1m1"]}], False),
            ("g04_present_again", "group.present", [{"name": "sqs1g1"}, {"gid": 47201}], False),
            ("g05_addusers_test", "group.present", [{"name": "sqs1g1"}, {"addusers": ["sqs1m1", "sqs1m2"]}], True),
            ("g06_addusers", "group.present", [{"name": "sqs1g1"}, {"addusers": ["sqs1m1", "sqs1m2"]}], False),
            ("g07_delusers", "group.present", [{"name": "sqs1g1"}, {"delusers": ["sqs1m1", "nosuch"]}], False),
            ("g08_members", "group.present", [{"name": "sqs1g1"}, {"members": ["sqs1m1"]}], False),
            ("g09_members_empty", "group.present", [{"name": "sqs1g1"}, {"members": []}], False),
            ("g10_gid_test", "group.present", [{"name": "sqs1g1"}, {"gid": 47202}], True),
            ("g11_gid", "group.present", [{"name": "sqs1g1"}, {"gid": 47202}], False),
            ("g12_gid_taken", "group.present", [{"name": "sqs1g2"}, {"gid": 47202}], False),
            ("g13_conflict", "group.present", [{"name": "sqs1g1"}, {"members": ["a"]}, {"addusers": ["b"]}], False),
            ("g14_same_user", "group.present", [{"name": "sqs1g1"}, {"addusers": ["sqs1m1"]}, {"delusers": ["sqs1m1"]}], False),
            ("g15_bad_gid_test", "group.present", [{"name": "sqs1g1"}, {"gid": "abc"}], True),
            ("g16_bad_gid", "group.present", [{"name": "sqs1g1"}, {"gid": "abc"}], False),
            ("g17_absent_test", "group.absent", [{"name": "sqs1g1"}], True),
            ("g18_absent", "group.absent", [{"name": "sqs1g1"}], False),
            ("g19_absent_again", "group.absent", [{"name": "sqs1g1"}], False),
            ("g20_new_with_members", "group.present", [{"name": "sqs1g2"}, {"gid": 47203}, {"members": ["sqs1m1", "sqs1m2"]}], False),
            ("g21_absent_g2", "group.absent", [{"name": "sqs1g2"}], False),
        ],
    },
    "user": {
        "setup": [
            ["groupadd", "-g", "47301", "sqs1u1"],
            ["groupadd", "-g", "47302", "sqs1ux"],
            ["groupadd", "-g", "47303", "sqs1uy"],
        ],
        "cleanup": [
            ["userdel", "-r", "sqs1u1"],
            ["userdel", "-r", "sqs1u2"],
            ["groupdel", "sqs1u1"],
            ["groupdel", "sqs1ux"],
            ["groupdel", "sqs1uy"],
            ["rm", "-rf", "/home/sqs1u1", "/home/sqs1u1b"],
        ],
        "steps": [
            ("u01_absent_first", "user.absent", [{"name": "sqs1u1"}, {"purge": True}], False),
            ("u02_present_test", "user.present", [{"name": "sqs1u1"}, {"uid": 47301}, {"gid": 47301}], True),
            ("u03_present", "user.present", [{"name": "sqs1u1"}, {"uid": 47301}, {"gid": 47301}, {"groups": ["sqs1ux"]}, {"fullname": "Sq One"}, {"roomnumber": 101}, {"shell": "/bin/sh"}, {"password": FIRST}], False),
            ("u04_present_again", "user.present", [{"name": "sqs1u1"}, {"uid": 47301}, {"gid": 47301}, {"groups": ["sqs1ux"]}, {"fullname": "Sq One"}, {"roomnumber": 101}, {"shell": "/bin/sh"}, {"password": FIRST}], False),
            ("u05_change_test", "user.present", [{"name": "sqs1u1"}, {"shell": "/bin/bash"}, {"fullname": "Sq Uno"}, {"groups": ["sqs1ux", "sqs1uy"]}, {"workphone": "555"}], True),
            ("u06_change", "user.present", [{"name": "sqs1u1"}, {"shell": "/bin/bash"}, {"fullname": "Sq Uno"}, {"groups": ["sqs1ux", "sqs1uy"]}, {"workphone": "555"}], False),
            ("u07_subset_kept", "user.present", [{"name": "sqs1u1"}, {"groups": ["sqs1uy"]}, {"remove_groups": False}], False),
            ("u08_groups_removed", "user.present", [{"name": "sqs1u1"}, {"groups": ["sqs1uy"]}], False),
            ("u09_uid_refused", "user.present", [{"name": "sqs1u1"}, {"uid": 47399}], False),
            ("u10_uid_allowed", "user.present", [{"name": "sqs1u1"}, {"uid": 47399}, {"allow_uid_change": True}], False),
            ("u11_missing_group", "user.present", [{"name": "sqs1u1"}, {"groups": ["sqs1nosuch"]}], False),
            ("u12_optional_groups", "user.present", [{"name": "sqs1u1"}, {"optional_groups": ["sqs1nosuch", "sqs1ux"]}], False),
            ("u13_hash_password", "user.present", [{"name": "sqs1u1"}, {"password": "secret"}, {"hash_password": True}], False),
            ("u14_hash_password_again", "user.present", [{"name": "sqs1u1"}, {"password": "secret"}, {"hash_password": True}], False),
            ("u15_comma", "user.present", [{"name": "sqs1u1"}, {"fullname": "a,b"}], False),
            ("u16_ageing_test", "user.present", [{"name": "sqs1u1"}, {"mindays": 1}, {"maxdays": 90}, {"warndays": 5}], True),
            ("u17_ageing", "user.present", [{"name": "sqs1u1"}, {"mindays": 1}, {"maxdays": 90}, {"warndays": 5}], False),
            ("u18_lock", "user.present", [{"name": "sqs1u1"}, {"password_lock": True}], False),
            ("u19_empty_password", "user.present", [{"name": "sqs1u1"}, {"empty_password": True}], False),
            ("u20_home", "user.present", [{"name": "sqs1u1"}, {"home": "/home/sqs1u1b"}], False),
            ("u21_absent_test", "user.absent", [{"name": "sqs1u1"}], True),
            ("u22_absent", "user.absent", [{"name": "sqs1u1"}, {"purge": True}, {"force": True}], False),
            ("u23_absent_again", "user.absent", [{"name": "sqs1u1"}], False),
            ("u24_system_nohome", "user.present", [{"name": "sqs1u2"}, {"uid": 47304}, {"gid": 47302}, {"createhome": False}, {"system": True}, {"empty_password": True}], False),
            ("u25_absent_u2", "user.absent", [{"name": "sqs1u2"}], False),
        ],
    },
    "ssh_auth": {
        "setup": [
            ["groupadd", "-g", "47401", "sqs1k1"],
            ["useradd", "-m", "-u", "47401", "-g", "47401", "sqs1k1"],
        ],
        "cleanup": [["userdel", "-r", "sqs1k1"], ["groupdel", "sqs1k1"]],
        "steps": [
            ("k01_present_test", "ssh_auth.present", [{"name": KEY}, {"user": "sqs1k1"}, {"enc": "ssh-ed25519"}, {"comment": "me@host"}], True),
            ("k02_present", "ssh_auth.present", [{"name": KEY}, {"user": "sqs1k1"}, {"enc": "ssh-ed25519"}, {"comment": "me@host"}], False),
            ("k03_present_again", "ssh_auth.present", [{"name": KEY}, {"user": "sqs1k1"}, {"enc": "ssh-ed25519"}, {"comment": "me@host"}], False),
            ("k04_comment_test", "ssh_auth.present", [{"name": f"ssh-ed25519 {KEY} other comment"}, {"user": "sqs1k1"}], True),
            ("k05_comment", "ssh_auth.present", [{"name": f"ssh-ed25519 {KEY} other comment"}, {"user": "sqs1k1"}], False),
            ("k06_options", "ssh_auth.present", [{"name": f"no-pty,no-X11-forwarding ssh-ed25519 {KEY} other"}, {"user": "sqs1k1"}], False),
            ("k07_options_arg", "ssh_auth.present", [{"name": KEY}, {"user": "sqs1k1"}, {"enc": "ed25519"}, {"comment": "other"}, {"options": ["no-pty"]}], False),
            ("k08_absent_test", "ssh_auth.absent", [{"name": KEY}, {"user": "sqs1k1"}], True),
            ("k09_absent", "ssh_auth.absent", [{"name": KEY}, {"user": "sqs1k1"}], False),
            ("k10_absent_again_test", "ssh_auth.absent", [{"name": KEY}, {"user": "sqs1k1"}], True),
            ("k11_absent_again", "ssh_auth.absent", [{"name": KEY}, {"user": "sqs1k1"}], False),
            ("k12_source_test", "ssh_auth.present", [{"name": "keys"}, {"user": "sqs1k1"}, {"source": "salt://ssh/keys.pub"}], True),
            ("k13_source", "ssh_auth.present", [{"name": "keys"}, {"user": "sqs1k1"}, {"source": "salt://ssh/keys.pub"}], False),
            ("k14_source_again", "ssh_auth.present", [{"name": "keys"}, {"user": "sqs1k1"}, {"source": "salt://ssh/keys.pub"}], False),
            ("k15_source_again_test", "ssh_auth.present", [{"name": "keys"}, {"user": "sqs1k1"}, {"source": "salt://ssh/keys.pub"}], True),
            ("k16_manage", "ssh_auth.manage", [{"name": "only"}, {"user": "sqs1k1"}, {"ssh_keys": [f"ssh-ed25519 {KEY} me@host"]}], False),
            ("k17_source_absent_test", "ssh_auth.absent", [{"name": "keys"}, {"user": "sqs1k1"}, {"source": "salt://ssh/keys.pub"}], True),
            ("k18_source_absent", "ssh_auth.absent", [{"name": "keys"}, {"user": "sqs1k1"}, {"source": "salt://ssh/keys.pub"}], False),
            ("k19_no_keys_test", "ssh_auth.present", [{"name": "bad"}, {"user": "sqs1k1"}, {"source": "salt://ssh/empty.pub"}], True),
            ("k20_no_keys", "ssh_auth.present", [{"name": "bad"}, {"user": "sqs1k1"}, {"source": "salt://ssh/empty.pub"}], False),
            ("k21_missing_source", "ssh_auth.present", [{"name": "gone"}, {"user": "sqs1k1"}, {"source": "salt://ssh/missing.pub"}], False),
            ("k22_invalid_key", "ssh_auth.present", [{"name": "notbase64!"}, {"user": "sqs1k1"}], False),
            ("k23_no_user", "ssh_auth.present", [{"name": KEY}, {"user": "sqs1nosuchuser"}], False),
            ("k24_config", "ssh_auth.present", [{"name": RSA}, {"user": "sqs1k1"}, {"config": "%h/.ssh/other_keys"}, {"fingerprint_hash_type": "md5"}], False),
            ("k25_config_absent", "ssh_auth.absent", [{"name": RSA}, {"user": "sqs1k1"}, {"config": "%h/.ssh/other_keys"}], False),
        ],
    },
    "cron": {
        "setup": [["useradd", "-M", "-N", "-u", "47501", "sqs1c1"]],
        "cleanup": [["crontab", "-r", "-u", "sqs1c1"], ["userdel", "sqs1c1"]],
        "steps": [
            ("c01_present_test", "cron.present", [{"name": "/bin/true"}, {"user": "sqs1c1"}, {"minute": 5}], True),
            ("c02_present", "cron.present", [{"name": "/bin/true"}, {"user": "sqs1c1"}, {"minute": 5}], False),
            ("c03_present_again", "cron.present", [{"name": "/bin/true"}, {"user": "sqs1c1"}, {"minute": 5}], False),
            ("c04_update_test", "cron.present", [{"name": "/bin/true"}, {"user": "sqs1c1"}, {"minute": 10}], True),
            ("c05_update", "cron.present", [{"name": "/bin/true"}, {"user": "sqs1c1"}, {"minute": 10}], False),
            ("c06_identifier", "cron.present", [{"name": "/bin/echo hi"}, {"user": "sqs1c1"}, {"hour": 3}, {"identifier": "myjob"}, {"comment": "nightly"}], False),
            ("c07_identifier_cmd", "cron.present", [{"name": "/bin/echo hello"}, {"user": "sqs1c1"}, {"hour": 3}, {"identifier": "myjob"}, {"comment": "nightly"}], False),
            ("c08_commented", "cron.present", [{"name": "/bin/echo hello"}, {"user": "sqs1c1"}, {"hour": 3}, {"identifier": "myjob"}, {"comment": "nightly"}, {"commented": True}], False),
            ("c09_special", "cron.present", [{"name": "/bin/boot"}, {"user": "sqs1c1"}, {"special": "@reboot"}], False),
            ("c10_special_test", "cron.present", [{"name": "/bin/boot"}, {"user": "sqs1c1"}, {"special": "@hourly"}], True),
            ("c11_special_change", "cron.present", [{"name": "/bin/boot"}, {"user": "sqs1c1"}, {"special": "@hourly"}], False),
            ("c12_special_absent_test", "cron.absent", [{"name": "/bin/boot"}, {"user": "sqs1c1"}, {"special": "@hourly"}], True),
            ("c13_special_absent", "cron.absent", [{"name": "/bin/boot"}, {"user": "sqs1c1"}, {"special": "@hourly"}], False),
            ("c14_absent_test", "cron.absent", [{"name": "/bin/true"}, {"user": "sqs1c1"}], True),
            ("c15_absent", "cron.absent", [{"name": "/bin/true"}, {"user": "sqs1c1"}], False),
            ("c16_absent_again", "cron.absent", [{"name": "/bin/true"}, {"user": "sqs1c1"}], False),
            ("c17_env_test", "cron.env_present", [{"name": "MAILTO"}, {"user": "sqs1c1"}, {"value": "root"}], True),
            ("c18_env", "cron.env_present", [{"name": "MAILTO"}, {"user": "sqs1c1"}, {"value": "root"}], False),
            ("c19_env_again", "cron.env_present", [{"name": "MAILTO"}, {"user": "sqs1c1"}, {"value": "root"}], False),
            ("c20_env_update", "cron.env_present", [{"name": "MAILTO"}, {"user": "sqs1c1"}, {"value": "ops"}], False),
            ("c21_env_novalue", "cron.env_present", [{"name": "FOO"}, {"user": "sqs1c1"}], False),
            ("c22_env_novalue_again", "cron.env_present", [{"name": "FOO"}, {"user": "sqs1c1"}], False),
            ("c23_env_novalue_test", "cron.env_present", [{"name": "FOO"}, {"user": "sqs1c1"}], True),
            ("c24_env_absent_test", "cron.env_absent", [{"name": "MAILTO"}, {"user": "sqs1c1"}], True),
            ("c25_env_absent", "cron.env_absent", [{"name": "MAILTO"}, {"user": "sqs1c1"}], False),
            ("c26_env_absent_again", "cron.env_absent", [{"name": "MAILTO"}, {"user": "sqs1c1"}], False),
            ("c27_strip", "cron.present", [{"name": "  /bin/x  "}, {"user": "sqs1c1"}, {"dayweek": "Mon"}], False),
            ("c28_file_test", "cron.file", [{"name": "salt://cron/tab"}, {"user": "sqs1c1"}], True),
            ("c29_file", "cron.file", [{"name": "salt://cron/tab"}, {"user": "sqs1c1"}], False),
            ("c30_file_again", "cron.file", [{"name": "salt://cron/tab"}, {"user": "sqs1c1"}], False),
            ("c31_file_again_test", "cron.file", [{"name": "salt://cron/tab"}, {"user": "sqs1c1"}], True),
            ("c32_file_template", "cron.file", [{"name": "salt://cron/tab.j2"}, {"user": "sqs1c1"}, {"template": "jinja"}, {"context": {"minute": 7}}], False),
            ("c33_file_keep", "cron.file", [{"name": "salt://cron/tab"}, {"user": "sqs1c1"}, {"replace": False}], False),
            ("c34_file_no_user", "cron.file", [{"name": "salt://cron/tab"}, {"user": "sqs1nosuchuser"}], False),
            ("c35_file_missing", "cron.file", [{"name": "salt://cron/missing"}, {"user": "sqs1c1"}], False),
        ],
    },
}


def today():
    return (datetime.date.today() - datetime.date(1970, 1, 1)).days


def normalise(v):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k == "lstchg" and x == today():
                out[k] = "{today}"
            else:
                out[k] = normalise(x)
        return out
    if isinstance(v, list):
        return [normalise(x) for x in v]
    if isinstance(v, str):
        return re.sub(r"/tmp/(__salt\.tmp\.|tmp)[\w-]+", "{tmp}", v)
    return v


def run_step(cid, fun, args, test):
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/srv")
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {d}/srv\n    - {SRV}\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: labminion\n"
            )
        with open(f"{d}/srv/step.sls", "w") as f:
            json.dump({cid: {fun: args}}, f)
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply", "step"]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        got = json.loads(out)["local"]
    (ret,) = got.values()
    return normalise({k: ret[k] for k in ("name", "result", "comment", "changes")})


def record(module):
    spec = MODULES[module]
    for c in spec["cleanup"]:
        subprocess.run(c, capture_output=True, check=False)
    for c in spec["setup"]:
        subprocess.run(c, check=True, capture_output=True)
    steps = []
    try:
        for cid, fun, args, test in spec["steps"]:
            ret = run_step(cid, fun, args, test)
            print(cid, json.dumps(ret), file=sys.stderr)
            steps.append({"id": cid, "fun": fun, "args": args, "test": test, "ret": ret})
    finally:
        for c in spec["cleanup"]:
            subprocess.run(c, capture_output=True, check=False)
    with open(os.path.join(HERE, f"{module}.json"), "w") as f:
        json.dump(
            {"setup": spec["setup"], "cleanup": spec["cleanup"], "steps": steps},
            f,
            indent=1,
        )
        f.write("\n")


if __name__ == "__main__":
    for m in sys.argv[1:] or list(MODULES):
        record(m)
