"""Record what Salt 3007.8 answers when `salt-call --local` applies the public memcached
formula's `memcached.config` (../shared/third-party/formulas/memcached: saltstack-formulas/
memcached-formula at ba7fdda4165bc49f9f3a6fe9ad9f5c21381bb6d8, Apache-2.0 licence beside it).
That sls includes `memcached` and so uses all four of `pkg.installed` (with `runas`),
`service.running` (with `enable`, `require_in` and `watch_in`), `user.present` (`createhome:
False`, a shell) and `file.managed` (a jinja template importing a macro, written in the old
`file: [managed, ...]` form).

The package and its init script are Debian's real `memcached` (from the mirror; the host's
policy-rc.d keeps its postinst from starting it, `service.running` starts it, on loopback).
The pillar points what the formula lets it point: the config file into
/tmp/saltq-formula-memcached, and the user to `saltq-fmc`. Needs root, apt and the mirror,
and a host without a running systemd (Salt then manages services with `debian_service`).

Regenerate (from the repository root), with Salt 3007.8 in a virtualenv as in
tests/tests/e2e/data/states/gen.py:

    /work/saltvenv/bin/python tests/tests/e2e/data/formula_memcached/gen.py

`recorded.json` holds the pillar and Salt's answers by state for `test=True`, then for real,
then for a second real run, then for the formula's `memcached.uninstall` (`service.dead`,
`pkg.removed`) with `test=True` and for real (timings and run numbers left out), with the
text of the rendered config file. Everything is undone at the end (memcached stopped and
purged, the users it and the formula made removed, the sandbox removed).

Then the formula as it comes, without pillar (`defaults` in `recorded.json`): Debian's
`memcache` user gets the formula's shell, Debian's /etc/memcached.conf is rewritten (its diff
is Debian's file against the template: a new Debian release of the file means recording
again), and all is undone as above.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "../../../../.."))
# A third-party input beside the checkout, not in the project.
FORMULA = os.path.realpath(os.path.join(REPO, "../shared/third-party/formulas/memcached"))
if not os.path.isdir(FORMULA):
    raise SystemExit(f"the third-party formula is missing: {FORMULA}")
SALT_CALL = os.path.join(os.path.dirname(sys.executable), "salt-call")
SANDBOX = "/tmp/saltq-formula-memcached"
USER = "saltq-fmc"
PKG_USER = "memcache"
PIDFILE = "/run/memcached/memcached.pid"
DEFAULT_CONF = "/etc/memcached.conf"
DEFAULT_LOG = "/var/log/memcached.log"

PILLAR = {
    "memcached": {
        "lookup": {"config_file": f"{SANDBOX}/memcached.conf"},
        "user": USER,
        "log_file": f"{SANDBOX}/memcached.log",
        "memory_cap": 32,
    }
}


def apply(test, sls="memcached.config", pillar=None):
    with tempfile.TemporaryDirectory() as d:
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {FORMULA}\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: web1\n"
            )
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply",
               sls, "pillar=" + json.dumps(PILLAR if pillar is None else pillar)]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        got = json.loads(out)["local"]
    return by_state(got)


def by_state(got):
    """Salt's answer keyed `<id> <module>.<function>` (one ID may hold several states), with
    `order` listing those keys in the order they ran."""
    out = {}
    for tag, ret in got.items():
        module, sid, _name, fun = tag.split("_|-")
        out[f"{sid} {module}.{fun}"] = dict(
            {k: ret[k] for k in ("name", "result", "comment", "changes")},
            order=ret["__run_num__"],
        )
    ran = sorted(out, key=lambda k: out[k]["order"])
    for ret in out.values():
        del ret["order"]
    out["order"] = ran
    return out


def ids(name):
    """The uid and gid of user `name`."""
    uid = subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True)
    gid = subprocess.run(["id", "-g", name], capture_output=True, text=True, check=True)
    return int(uid.stdout), int(gid.stdout)


def installed_version(pkg):
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                         text=True, check=True)
    return out.stdout


def placeholders(run, uid, gid, version):
    """What depends on the host and the mirror's day as `{uid}`, `{gid}` and `{version}`: the
    created user's uid and gid, the version of memcached the mirror had."""
    changes = run.get("memcached_user user.present", {}).get("changes")
    if changes and "uid" in changes:
        assert (changes["uid"], changes["gid"]) == (uid, gid), changes
        changes["uid"], changes["gid"] = "{uid}", "{gid}"
    for key, side in (("memcached pkg.installed", "new"),
                      ("memcached-uninstall pkg.removed", "old")):
        changes = run.get(key, {}).get("changes")
        if changes and changes["memcached"][side] == version:
            changes["memcached"][side] = "{version}"


def stop_by_pidfile(path):
    """SIGTERM the process `path` names and wait (5 s at most) for it to go."""
    try:
        pid = int(open(path).read().strip())
        os.kill(pid, 15)
    except (OSError, ValueError):
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)


def user_exists(name):
    return subprocess.run(["id", name], capture_output=True).returncode == 0


def clean_up():
    """Undo what the runs did: memcached stopped (after pkg.removed the init script no longer
    stops the daemon: no binary, exit 0; and service.dead did nothing), purged, the users and
    the sandbox removed."""
    subprocess.run(["service", "memcached", "stop"], capture_output=True)
    stop_by_pidfile(PIDFILE)
    subprocess.run(["apt-get", "-q", "-y", "purge", "memcached"], capture_output=True,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    for who in (USER, PKG_USER):
        subprocess.run(["userdel", who], capture_output=True)
    shutil.rmtree(SANDBOX, ignore_errors=True)
    shutil.rmtree(os.path.dirname(PIDFILE), ignore_errors=True)
    if os.path.exists(DEFAULT_LOG):
        os.remove(DEFAULT_LOG)


def main():
    for path in (os.path.dirname(PIDFILE), DEFAULT_CONF, DEFAULT_LOG):
        if os.path.exists(path):
            sys.exit(f"{path} exists already: is memcached installed or running?")
    for who in (USER, PKG_USER):
        if user_exists(who):
            sys.exit(f"user {who} exists already: this records a host without it")
    os.makedirs(SANDBOX, exist_ok=True)
    try:
        test = apply(True)
        real = apply(False)
        conf = open(f"{SANDBOX}/memcached.conf").read()
        again = apply(False)
        uid, gid = ids(USER)
        version = installed_version("memcached")
        # The formula's own uninstall sls, as the last step: service.dead, pkg.removed.
        gone_test = apply(True, "memcached.uninstall")
        gone = apply(False, "memcached.uninstall")
        for run in (test, real, again, gone_test, gone):
            placeholders(run, uid, gid, version)
    finally:
        clean_up()
    # The formula as it comes, no pillar: Debian's own memcache user (its shell changed),
    # Debian's /etc/memcached.conf (rewritten, a diff).
    try:
        d_test = apply(True, pillar={})
        d_real = apply(False, pillar={})
        d_conf = open(DEFAULT_CONF).read()
        d_again = apply(False, pillar={})
        for run in (d_test, d_real, d_again):
            placeholders(run, None, None, version)
    finally:
        clean_up()
    with open(os.path.join(HERE, "recorded.json"), "w") as f:
        json.dump({"pillar": PILLAR, "sandbox": SANDBOX, "users": [USER, PKG_USER],
                   "test": test, "real": real, "conf": conf, "again": again,
                   "uninstall_test": gone_test, "uninstall": gone,
                   "defaults": {"test": d_test, "real": d_real, "conf": d_conf,
                                "again": d_again}},
                  f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps({"test": test, "real": real, "again": again}, indent=1))


if __name__ == "__main__":
    main()
