"""Record what Salt 3007.8's `service` states answer (`salt/states/service.py`).

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/service/gen.py

This machine has no running systemd, so the states run here against a fake service
manager: each case's `world` says whether the service exists, runs, is enabled, and whether
starting, stopping, enabling, ... work (or raise). Salt's real state functions run with
`__salt__` holding only the `service.*` functions saltq's execution module has, each
acting on the world. `cases.json` holds the world, the state call and Salt's return; the
Rust test drives the same world.

`offline.json` is what `salt-call --local` answers on a machine with `systemctl` but no
systemd running (Salt's OFFLINE mode), for `service.running` and `service.dead`.
"""

import json
import os
import subprocess
import sys
import tempfile

import salt.states.service as svc
from salt.exceptions import CommandExecutionError

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"

BASE = {
    "available": True,
    "running": False,
    "enabled": False,
    "start": True,
    "stop": True,
    "restart": True,
    "reload": True,
    "enable": True,
    "disable": True,
    "raise": {},
}


def fake_salt(world, calls):
    def op(fun, effect=None):
        def f(name, *args, **kwargs):
            calls.append(fun)
            if fun in world["raise"]:
                raise CommandExecutionError(world["raise"][fun])
            if effect:
                return effect()
            return world[fun.split(".")[1]]

        return f

    def start():
        if world["start"]:
            world["running"] = True
        return world["start"]

    def stop():
        if world["stop"]:
            world["running"] = False
        return world["stop"]

    def restart():
        if world["restart"]:
            world["running"] = True
        return world["restart"]

    def enable():
        if world["enable"]:
            world["enabled"] = True
        return world["enable"]

    def disable():
        if world["disable"]:
            world["enabled"] = False
        return world["disable"]

    return {
        "service.available": op("service.available"),
        "service.status": op("service.status", lambda: world["running"]),
        "service.enabled": op("service.enabled", lambda: world["enabled"]),
        "service.disabled": op("service.disabled", lambda: not world["enabled"]),
        "service.start": op("service.start", start),
        "service.stop": op("service.stop", stop),
        "service.restart": op("service.restart", restart),
        "service.reload": op("service.reload"),
        "service.enable": op("service.enable", enable),
        "service.disable": op("service.disable", disable),
        "service.get_all": op("service.get_all", lambda: []),
        "service.get_running": op("service.get_running", lambda: []),
    }


# (id, state function, world changes, arguments besides name)
CASES = [
    ("running_start", "running", {}, {}),
    ("running_already", "running", {"running": True}, {}),
    ("running_missing", "running", {"available": False}, {}),
    ("running_start_fails", "running", {"start": False}, {}),
    ("running_start_raises", "running", {"raise": {"service.start": "Job for x failed"}}, {}),
    ("running_enable", "running", {}, {"enable": True}),
    ("running_enable_str", "running", {}, {"enable": "yes"}),
    ("running_enable_already", "running", {"enabled": True}, {"enable": True}),
    ("running_already_enable", "running", {"running": True}, {"enable": True}),
    ("running_already_disable", "running", {"running": True, "enabled": True}, {"enable": False}),
    ("running_enable_fails", "running", {"enable": False}, {"enable": True}),
    ("running_enable_raises", "running", {"raise": {"service.enable": "no unit"}}, {"enable": True}),
    ("running_disable", "running", {"enabled": True}, {"enable": False}),
    ("running_start_fails_enable", "running", {"start": False}, {"enable": True}),
    ("running_enabled_typo", "running", {}, {"enabled": True}),
    ("running_available_raises", "running", {"raise": {"service.available": "boom"}}, {}),
    ("dead_stop", "dead", {"running": True}, {}),
    ("dead_already", "dead", {}, {}),
    ("dead_missing", "dead", {"available": False}, {}),
    ("dead_stop_fails", "dead", {"running": True, "stop": False}, {}),
    ("dead_disable", "dead", {"running": True, "enabled": True}, {"enable": False}),
    ("dead_already_disable", "dead", {"enabled": True}, {"enable": False}),
    ("dead_already_enable", "dead", {}, {"enable": True}),
    ("enabled", "enabled", {}, {}),
    ("enabled_already", "enabled", {"enabled": True}, {}),
    ("enabled_missing", "enabled", {"available": False}, {}),
    ("enabled_fails", "enabled", {"enable": False}, {}),
    ("disabled", "disabled", {"enabled": True}, {}),
    ("disabled_already", "disabled", {}, {}),
    ("disabled_missing", "disabled", {"available": False}, {}),
    ("disabled_fails", "disabled", {"enabled": True, "disable": False}, {}),
    ("watch_restart", "mod_watch", {"running": True}, {"sfun": "running"}),
    ("watch_reload", "mod_watch", {"running": True}, {"sfun": "running", "reload": True}),
    ("watch_full_restart", "mod_watch", {"running": True}, {"sfun": "running", "full_restart": True}),
    ("watch_start", "mod_watch", {}, {"sfun": "running"}),
    ("watch_restart_fails", "mod_watch", {"running": True, "restart": False}, {"sfun": "running"}),
    ("watch_restart_raises", "mod_watch", {"running": True, "raise": {"service.restart": "bad"}}, {"sfun": "running"}),
    ("watch_stop", "mod_watch", {"running": True}, {"sfun": "dead"}),
    ("watch_already_stopped", "mod_watch", {}, {"sfun": "dead"}),
    ("watch_other", "mod_watch", {}, {"sfun": "enabled"}),
    ("watch_none", "mod_watch", {}, {}),
]


def record():
    records = []
    for test in (False, True):
        for cid, fun, change, args in CASES:
            world = json.loads(json.dumps(BASE))
            world.update(change)
            calls = []
            svc.__salt__ = fake_salt(json.loads(json.dumps(world)), calls)
            svc.__opts__ = {"test": test}
            svc.__context__ = {}
            svc.__grains__ = {"os": "Debian", "osfinger": "Debian-12"}
            svc._get_systemd_only.HAS_SYSTEMD = True
            ret = getattr(svc, fun)("web", **args)
            records.append(
                {
                    "id": cid,
                    "fun": "service." + fun,
                    "world": world,
                    "args": args,
                    "test": test,
                    "ret": ret,
                }
            )
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(records)} cases", file=sys.stderr)


def record_offline():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/srv")
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {d}/srv\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: labminion\n"
            )
        records = []
        for test in (False, True):
            for fun in ("running", "dead"):
                out = subprocess.run(
                    [SALT_CALL, "--local", "-c", d, "--out", "json", "state.single",
                     f"service.{fun}", "saltq-nosuch-svc", f"test={test}"],
                    capture_output=True, text=True, check=False,
                ).stdout
                (ret,) = json.loads(out)["local"].values()
                records.append({
                    "fun": f"service.{fun}", "name": "saltq-nosuch-svc", "test": test,
                    "ret": {k: ret[k] for k in ("name", "result", "comment", "changes")},
                })
    with open(os.path.join(HERE, "offline.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    record()
    record_offline()
