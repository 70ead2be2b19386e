"""Records Salt 3007.8's salt-api (rest_cherrypy) answers for the requests the saltq netapi
tests make, into `cases.json` beside this file; `gen.py batchkeys` records the `local_batch`
and `POST /keys` cases (two minions, local_batch enabled) into `batchkeys.json`.

Run as root (the master and minion need it) with Salt 3007.8 and CherryPy in a venv
($SALT_VENV, default /work/saltvenv), e.g.:
    pip install salt==3007.8 cherrypy tornado pyyaml distro jinja2 msgpack pyzmq looseversion
        packaging psutil requests pycryptodomex cryptography aiohttp markupsafe jmespath
    (salt from PyPI declares no dependencies here, so they are listed)
    SALT_VENV=target/salt-venv target/salt-venv/bin/python tests/tests/e2e/data/saltapi/gen.py
    SALT_VENV=target/salt-venv target/salt-venv/bin/python tests/tests/e2e/data/saltapi/gen.py batchkeys
($SALTAPI_REC_DIR, default /tmp/saltq-saltapi-rec, is the scratch directory.)

It starts salt-master (with salt-api's rest_cherrypy on plain HTTP), one salt-minion `m1` and
salt-api, all on loopback ports in a scratch directory, makes each request and records
{status, content_type, body} where body is the parsed JSON (or the text when not JSON). Tokens,
jids and times vary by run: the Rust test compares shapes after normalising them.

The eauth cases (argument-restricted entries for carol, the `auto` backend, a `pam` user created
for the run) go to `eauth_cases.json`; `gen.py eauth` records only those.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import io
import time
import urllib.error
import urllib.request

VENV = os.environ.get("SALT_VENV", "/work/saltvenv").rstrip("/") + "/bin/"
HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.environ.get("SALTAPI_REC_DIR", "/tmp/saltq-saltapi-rec")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def request(base, method, path, body=None, headers=None, ctype="application/json"):
    headers = dict(headers or {})
    headers.setdefault("Accept", "application/json")
    data = None
    if body is not None:
        if ctype == "application/json":
            data = json.dumps(body).encode()
        else:
            data = body.encode()
        headers["Content-Type"] = ctype
    req = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, ct, raw = r.status, r.headers.get("Content-Type", ""), r.read()
            hdrs = dict(r.headers)
    except urllib.error.HTTPError as e:
        status, ct, raw = e.code, e.headers.get("Content-Type", ""), e.read()
        hdrs = dict(e.headers)
    if ct.startswith("application/x-tar"):
        # A tarball (POST /keys): its members, and the header that names the file.
        with tarfile.open(fileobj=io.BytesIO(raw)) as t:
            members = [{"name": m.name, "size": m.size, "mode": m.mode} for m in t.getmembers()]
        return {"status": status, "content_type": ct, "body": {"tar": members},
                "content_disposition": hdrs.get("Content-Disposition", "")}
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    return {"status": status, "content_type": ct, "body": parsed,
            "set_cookie": "Set-Cookie" in hdrs}


def sse(base, path, token, seconds, trigger):
    """Reads GET /events for `seconds` while `trigger()` runs a job; the raw text."""
    import threading
    out = []
    req = urllib.request.Request(base + path, headers={"X-Auth-Token": token})
    r = urllib.request.urlopen(req, timeout=seconds + 5)
    ct = r.headers.get("Content-Type", "")
    sock_deadline = time.time() + seconds

    def read():
        try:
            while time.time() < sock_deadline:
                line = r.readline()
                if not line:
                    break
                out.append(line.decode())
        except Exception:
            pass

    t = threading.Thread(target=read, daemon=True)
    t.start()
    time.sleep(1)
    trigger()
    t.join(seconds + 2)
    return ct, "".join(out)


# Argument-restricted entries (Salt's `__args_check`): cmd.run only for `echo ...` in /tmp,
# test.echo only for arguments starting with "hel" (re.match anchors at the start only).
CAROL = [{"*": [{"cmd.run": {"args": ["echo .*"], "kwargs": {"cwd": "/tmp"}}},
                {"test.echo": {"args": ["hel"]}}]}]
PAM_USER, PAM_GROUP, PAM_PASSWORD = "saltqrecpam", "saltqrecpamgrp", "Rec-pw-4711"


def record_eauth(base, case):
    """Argument-restricted entries, the auto backend and pam: Salt's answers."""
    case("carol_login", "POST", "/login",
         {"username": "carol", "password": "argsonly", "eauth": "file"})
    carol = request(base, "POST", "/login",
                    {"username": "carol", "password": "argsonly", "eauth": "file"})
    hdr = {"X-Auth-Token": carol["body"]["return"][0]["token"]}

    def local(fun, arg=None, kwarg=None):
        low = {"client": "local", "tgt": "m1", "fun": fun}
        if arg is not None:
            low["arg"] = arg
        if kwarg is not None:
            low["kwarg"] = kwarg
        return [low]

    case("carol_cmd_allowed", "POST", "/", local("cmd.run", ["echo hi"], {"cwd": "/tmp"}), hdr)
    case("carol_cmd_extra_kwarg", "POST", "/",
         local("cmd.run", ["echo hi"], {"cwd": "/tmp", "python_shell": True}), hdr)
    case("carol_cmd_no_kwarg", "POST", "/", local("cmd.run", ["echo hi"]), hdr)
    case("carol_cmd_kwarg_as_string", "POST", "/", local("cmd.run", ["echo hi", "cwd=/tmp"]),
         hdr)
    case("carol_cmd_wrong_arg", "POST", "/", local("cmd.run", ["id"], {"cwd": "/tmp"}), hdr)
    case("carol_cmd_wrong_cwd", "POST", "/", local("cmd.run", ["echo hi"], {"cwd": "/"}), hdr)
    case("carol_echo_prefix", "POST", "/", local("test.echo", ["hello"]), hdr)
    case("carol_echo_refused", "POST", "/", local("test.echo", ["bye"]), hdr)
    case("carol_ping_refused", "POST", "/", local("test.ping"), hdr)
    case("auto_login", "POST", "/login",
         {"username": "dave", "password": "anything at all", "eauth": "auto"})
    dave = request(base, "POST", "/login",
                   {"username": "dave", "password": "x", "eauth": "auto"})
    case("auto_ping", "POST", "/", local("test.ping"),
         {"X-Auth-Token": dave["body"]["return"][0]["token"]})
    case("auto_login_unlisted", "POST", "/login",
         {"username": "erin", "password": "x", "eauth": "auto"})
    erin = request(base, "POST", "/login",
                   {"username": "erin", "password": "x", "eauth": "auto"})
    case("auto_unlisted_ping", "POST", "/", local("test.ping"),
         {"X-Auth-Token": erin["body"]["return"][0]["token"]})
    case("auto_login_no_password", "POST", "/login", {"username": "dave", "eauth": "auto"})
    case("pam_login", "POST", "/login",
         {"username": PAM_USER, "password": PAM_PASSWORD, "eauth": "pam"})
    case("pam_wrong_password", "POST", "/login",
         {"username": PAM_USER, "password": "wrong", "eauth": "pam"})
    pam = request(base, "POST", "/login",
                  {"username": PAM_USER, "password": PAM_PASSWORD, "eauth": "pam"})
    phdr = {"X-Auth-Token": pam["body"]["return"][0]["token"]}
    case("pam_ping", "POST", "/", local("test.ping"), phdr)
    case("pam_group_runner", "POST", "/", [{"client": "runner", "fun": "manage.status"}], phdr)


def main():
    only_eauth = sys.argv[1:] == ["eauth"]
    subprocess.run(["groupadd", PAM_GROUP], check=True)
    subprocess.run(["useradd", "-M", "-G", PAM_GROUP, PAM_USER], check=True)
    try:
        subprocess.run(["chpasswd"], input=f"{PAM_USER}:{PAM_PASSWORD}".encode(), check=True)
        return record(only_eauth)
    finally:
        subprocess.run(["userdel", PAM_USER], check=False)
        subprocess.run(["groupdel", PAM_GROUP], check=False)


def record(only_eauth):
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    api_port, pub, ret = free_port(), free_port(), free_port()
    with open(DIR + "/users.txt", "w") as f:
        f.write("alice:secret\nbob:pingonly\ncarol:argsonly\n")
    master = {
        "root_dir": DIR,
        "interface": "127.0.0.1",
        "publish_port": pub,
        "ret_port": ret,
        "auto_accept": True,
        "user": "root",
        "log_file": DIR + "/master.log",
        "log_level_logfile": "debug",
        "external_auth": {"file": {"^filename": DIR + "/users.txt",
                                   "alice": [".*", "@runner", "@wheel", "@jobs"],
                                   "bob": ["test.ping"],
                                   "carol": CAROL},
                          "auto": {"dave": ["test.*"]},
                          "pam": {PAM_USER: ["test.*"], PAM_GROUP + "%": ["@runner"]}},
        "netapi_enable_clients": ["local", "local_async", "runner", "runner_async",
                                  "wheel", "wheel_async"],
        "rest_cherrypy": {"port": api_port, "host": "127.0.0.1", "disable_ssl": True},
    }
    minion = {
        "root_dir": DIR,
        "master": "127.0.0.1",
        "master_port": ret,
        "publish_port": pub,
        "id": "m1",
        "user": "root",
        "log_file": DIR + "/minion.log",
    }
    os.makedirs(DIR + "/conf")
    with open(DIR + "/conf/master", "w") as f:
        json.dump(master, f)
    with open(DIR + "/conf/minion", "w") as f:
        json.dump(minion, f)
    procs = []
    try:
        for exe in ("salt-master", "salt-minion", "salt-api"):
            procs.append(subprocess.Popen([VENV + exe, "-c", DIR + "/conf", "-l", "quiet"],
                                          start_new_session=True))
            time.sleep(2)
        base = f"http://127.0.0.1:{api_port}"
        for _ in range(120):
            try:
                r = request(base, "POST", "/login",
                            {"username": "alice", "password": "secret", "eauth": "file"})
                if r["status"] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        token = r["body"]["return"][0]["token"]
        hdr = {"X-Auth-Token": token}
        # Wait for the minion to answer.
        for _ in range(120):
            r = request(base, "POST", "/", [{"client": "local", "tgt": "m1",
                                             "fun": "test.ping"}], hdr)
            if r["status"] == 200 and r["body"]["return"][0].get("m1") is True:
                break
            time.sleep(1)
        cases = {}

        def case(name, method, path, body=None, headers=None, ctype="application/json"):
            cases[name] = {"request": {"method": method, "path": path, "body": body,
                                       "headers": {k: v for k, v in (headers or {}).items()
                                                   if k != "X-Auth-Token"},
                                       "token": "X-Auth-Token" in (headers or {}),
                                       "content_type": ctype},
                           "response": request(base, method, path, body, headers, ctype)}
            return cases[name]["response"]

        record_eauth(base, case)
        with open(os.path.join(HERE, "eauth_cases.json"), "w") as f:
            json.dump(cases, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(cases)} eauth cases")
        if only_eauth:
            return 0
        cases = {}

        case("login_json", "POST", "/login",
             {"username": "alice", "password": "secret", "eauth": "file"})
        case("login_form", "POST", "/login", "username=alice&password=secret&eauth=file",
             ctype="application/x-www-form-urlencoded")
        case("login_yaml", "POST", "/login", "username: alice\npassword: secret\neauth: file\n",
             ctype="application/x-yaml")
        case("login_wrong_password", "POST", "/login",
             {"username": "alice", "password": "nope", "eauth": "file"})
        case("login_unknown_user", "POST", "/login",
             {"username": "mallory", "password": "secret", "eauth": "file"})
        case("root_no_token", "POST", "/", [{"client": "local", "tgt": "*", "fun": "test.ping"}])
        case("root_bad_token", "POST", "/", [{"client": "local", "tgt": "*", "fun": "test.ping"}],
             {"X-Auth-Token": "0123abcd"})
        case("local_ping", "POST", "/", [{"client": "local", "tgt": "*", "fun": "test.ping"}], hdr)
        case("local_arg", "POST", "/", [{"client": "local", "tgt": "m1", "fun": "test.echo",
                                         "arg": "hello"}], hdr)
        case("local_full_return", "POST", "/", [{"client": "local", "tgt": "*",
                                                 "fun": "test.ping", "full_return": True}], hdr)
        case("local_list", "POST", "/", [{"client": "local", "tgt": "m1,nosuch",
                                          "tgt_type": "list", "fun": "test.ping"}], hdr)
        case("local_form", "POST", "/", "client=local&tgt=*&fun=test.ping", hdr,
             ctype="application/x-www-form-urlencoded")
        case("local_async", "POST", "/", [{"client": "local_async", "tgt": "*",
                                           "fun": "test.ping"}], hdr)
        case("local_no_match", "POST", "/", [{"client": "local", "tgt": "nosuch*",
                                              "fun": "test.ping"}], hdr)
        case("runner_manage_status", "POST", "/", [{"client": "runner",
                                                    "fun": "manage.status"}], hdr)
        case("runner_async", "POST", "/", [{"client": "runner_async",
                                            "fun": "manage.status"}], hdr)
        case("wheel_list_all", "POST", "/", [{"client": "wheel", "fun": "key.list_all"}], hdr)
        case("wheel_list_accepted", "POST", "/", [{"client": "wheel", "fun": "key.list",
                                                   "match": "accepted"}], hdr)
        case("wheel_finger", "POST", "/", [{"client": "wheel", "fun": "key.finger",
                                            "match": "m1"}], hdr)
        case("wheel_async", "POST", "/", [{"client": "wheel_async", "fun": "key.list_all"}], hdr)
        case("client_disabled", "POST", "/", [{"client": "local_batch", "tgt": "*",
                                               "fun": "test.ping"}], hdr)
        case("client_invalid", "POST", "/", [{"client": "nosuch", "tgt": "*",
                                              "fun": "test.ping"}], hdr)
        case("not_a_list", "POST", "/", "\"x\"", hdr)
        case("run_eauth", "POST", "/run", [{"client": "local", "tgt": "*", "fun": "test.ping",
                                            "username": "alice", "password": "secret",
                                            "eauth": "file"}])
        case("run_wrong_password", "POST", "/run", [{"client": "local", "tgt": "*",
                                                     "fun": "test.ping", "username": "alice",
                                                     "password": "bad", "eauth": "file"}])
        case("token", "POST", "/token",
             [{"username": "alice", "password": "secret", "eauth": "file"}])
        case("token_missing_params", "POST", "/token", [{"username": "alice"}])
        case("run_missing_credentials", "POST", "/run", [{"client": "local", "tgt": "*",
                                                          "fun": "test.ping"}])
        case("runner_jobs_list_jobs", "POST", "/", [{"client": "runner",
                                                     "fun": "jobs.list_jobs"}], hdr)
        bob = request(base, "POST", "/login",
                      {"username": "bob", "password": "pingonly", "eauth": "file"})
        case("login_bob", "POST", "/login",
             {"username": "bob", "password": "pingonly", "eauth": "file"})
        bhdr = {"X-Auth-Token": bob["body"]["return"][0]["token"]}
        case("bob_ping", "POST", "/", [{"client": "local", "tgt": "*", "fun": "test.ping"}], bhdr)
        case("bob_cmd_run", "POST", "/", [{"client": "local", "tgt": "*", "fun": "cmd.run",
                                           "arg": "id"}], bhdr)
        case("bob_runner", "POST", "/", [{"client": "runner", "fun": "manage.status"}], bhdr)
        case("bob_wheel", "POST", "/", [{"client": "wheel", "fun": "key.list_all"}], bhdr)
        case("minions", "GET", "/minions", headers=hdr)
        case("minion_m1", "GET", "/minions/m1", headers=hdr)
        case("minions_post", "POST", "/minions", [{"tgt": "*", "fun": "test.ping"}], hdr)
        jid = cases["local_async"]["response"]["body"]["return"][0]["jid"]
        time.sleep(2)
        case("jobs", "GET", "/jobs", headers=hdr)
        case("job", "GET", "/jobs/" + jid, headers=hdr)
        case("keys", "GET", "/keys", headers=hdr)
        case("key_m1", "GET", "/keys/m1", headers=hdr)
        case("hook", "POST", "/hook/my/tag", {"foo": "bar"}, hdr)
        case("hook_no_token", "POST", "/hook/my/tag", {"foo": "bar"})
        case("stats", "GET", "/stats", headers=hdr)
        case("index", "GET", "/", headers=hdr)
        case("not_found", "GET", "/nosuch", headers=hdr)
        ct, text = sse(base, "/events", token, 6, lambda: request(
            base, "POST", "/", [{"client": "local", "tgt": "m1", "fun": "test.ping"}], hdr))
        cases["events"] = {"content_type": ct, "text_head": text[:4000]}
        bob_token = bhdr["X-Auth-Token"]
        case("logout", "POST", "/logout", None, bhdr)
        case("after_logout", "POST", "/", [{"client": "local", "tgt": "*", "fun": "test.ping"}],
             {"X-Auth-Token": bob_token})
        with open(os.path.join(HERE, "cases.json"), "w") as f:
            json.dump(cases, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(cases)} cases")
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def batchkeys():
    """local_batch over two minions, and POST /keys / key.gen_accept."""
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    api_port, pub, ret = free_port(), free_port(), free_port()
    with open(DIR + "/users.txt", "w") as f:
        f.write("alice:secret\nbob:pingonly\n")
    master = {
        "root_dir": DIR, "interface": "127.0.0.1", "publish_port": pub, "ret_port": ret,
        "auto_accept": True, "user": "root", "log_file": DIR + "/master.log",
        "external_auth": {"file": {"^filename": DIR + "/users.txt",
                                   "alice": [".*", "@runner", "@wheel", "@jobs"],
                                   "bob": ["test.ping"]}},
        "netapi_enable_clients": ["local", "local_async", "local_batch", "runner",
                                  "runner_async", "wheel", "wheel_async"],
        "rest_cherrypy": {"port": api_port, "host": "127.0.0.1", "disable_ssl": True},
    }
    os.makedirs(DIR + "/conf")
    with open(DIR + "/conf/master", "w") as f:
        json.dump(master, f)
    confs = [DIR + "/conf"]
    for mid in ("m1", "m2"):
        root = f"{DIR}/{mid}"
        os.makedirs(root + "/conf")
        with open(root + "/conf/minion", "w") as f:
            json.dump({"root_dir": root, "master": "127.0.0.1", "master_port": ret,
                       "publish_port": pub, "id": mid, "user": "root",
                       "log_file": root + "/minion.log"}, f)
        confs.append(root + "/conf")
    procs = []
    try:
        procs.append(subprocess.Popen([VENV + "salt-master", "-c", confs[0], "-l", "quiet"],
                                      start_new_session=True))
        time.sleep(3)
        for c in confs[1:]:
            procs.append(subprocess.Popen([VENV + "salt-minion", "-c", c, "-l", "quiet"],
                                          start_new_session=True))
        procs.append(subprocess.Popen([VENV + "salt-api", "-c", confs[0], "-l", "quiet"],
                                      start_new_session=True))
        base = f"http://127.0.0.1:{api_port}"
        r = None
        for _ in range(120):
            try:
                r = request(base, "POST", "/login",
                            {"username": "alice", "password": "secret", "eauth": "file"})
                if r["status"] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        token = r["body"]["return"][0]["token"]
        hdr = {"X-Auth-Token": token}
        for _ in range(120):
            r = request(base, "POST", "/", [{"client": "local", "tgt": "*",
                                             "fun": "test.ping"}], hdr)
            if r["status"] == 200 and len(r["body"]["return"][0]) == 2:
                break
            time.sleep(1)
        bob = request(base, "POST", "/login",
                      {"username": "bob", "password": "pingonly", "eauth": "file"})
        bhdr = {"X-Auth-Token": bob["body"]["return"][0]["token"]}
        cases = {}

        def case(name, method, path, body=None, headers=None, ctype="application/json"):
            hs = headers or {}
            user = "bob" if hs is bhdr else "alice"
            cases[name] = {"request": {"method": method, "path": path, "body": body,
                                       "headers": {},
                                       "token": "X-Auth-Token" in hs, "user": user,
                                       "content_type": ctype},
                           "response": request(base, method, path, body, headers, ctype)}
            return cases[name]["response"]

        def batch(name, extra, headers=hdr):
            low = {"client": "local_batch", "tgt": "*", "fun": "test.ping"}
            low.update(extra)
            return case(name, "POST", "/", [low], headers)

        batch("batch_one", {"batch": "1"})
        batch("batch_half", {"batch": "50%", "fun": "test.echo", "arg": "hi"})
        batch("batch_default", {})
        batch("batch_number", {"batch": 2})
        batch("batch_bad", {"batch": "lots"})
        batch("batch_wait", {"batch": "1", "batch_wait": 1})
        batch("batch_failhard", {"batch": "1", "failhard": True, "fun": "test.retcode",
                                 "arg": 3})
        batch("batch_no_match", {"tgt": "nosuch*"})
        batch("batch_list", {"tgt": "m2,nosuch", "tgt_type": "list", "batch": "1"})
        batch("batch_full_return", {"batch": "1", "full_return": True})
        case("batch_form", "POST", "/", "client=local_batch&tgt=*&fun=test.ping&batch=1", hdr,
             ctype="application/x-www-form-urlencoded")
        batch("bob_batch_ping", {"batch": "1"}, bhdr)
        batch("bob_batch_cmd_run", {"batch": "1", "fun": "cmd.run", "arg": "id"}, bhdr)
        creds = {"username": "alice", "password": "secret", "eauth": "file"}
        case("keys_post_form", "POST", "/keys",
             "mid=k1&username=alice&password=secret&eauth=file",
             ctype="application/x-www-form-urlencoded")
        case("keys_post_json", "POST", "/keys", dict(creds, mid="k2"))
        case("keys_post_again", "POST", "/keys", dict(creds, mid="k1"))
        case("keys_post_header_token", "POST", "/keys", {"mid": "k3"}, hdr)
        case("keys_post_body_token", "POST", "/keys", {"mid": "k4", "token": token})
        case("keys_post_wrong_password", "POST", "/keys",
             {"mid": "k5", "username": "alice", "password": "nope", "eauth": "file"})
        case("keys_post_bob", "POST", "/keys",
             {"mid": "k6", "username": "bob", "password": "pingonly", "eauth": "file"})
        case("keys_post_no_mid", "POST", "/keys", creds)
        case("wheel_gen_accept", "POST", "/", [{"client": "wheel", "fun": "key.gen_accept",
                                                "id_": "k7"}], hdr)
        case("wheel_gen_accept_again", "POST", "/", [{"client": "wheel",
                                                      "fun": "key.gen_accept",
                                                      "id_": "k7"}], hdr)
        case("keys_after", "GET", "/keys", headers=hdr)
        # The audit of issue 17: a runner's full_return, and each endpoint without a token.
        case("runner_full_return", "POST", "/", [{"client": "runner", "fun": "manage.status",
                                                  "full_return": True}], hdr)
        case("runner_full_return_arg", "POST", "/", [{"client": "runner", "fun": "test.arg",
                                                      "arg": ["a"], "kwarg": {"k": 1},
                                                      "full_return": True}], hdr)
        for path in ("/keys", "/keys/m1", "/minions", "/minions/m1", "/jobs", "/stats",
                     "/events"):
            case("no_token_get" + path.replace("/", "_"), "GET", path)
        case("no_token_post_minions", "POST", "/minions", [{"tgt": "*", "fun": "test.ping"}])
        case("no_token_logout", "POST", "/logout")
        with open(os.path.join(HERE, "batchkeys.json"), "w") as f:
            json.dump(cases, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(cases)} cases")
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


if __name__ == "__main__":
    if sys.argv[1:] == ["batchkeys"]:
        sys.exit(batchkeys())
    sys.exit(main())
