"""Records Salt 3007.8's salt-api answers for rest_tornado ("saltnado", with `websockets: True`)
and rest_cherrypy's `/ws` websocket, into `cases.json` beside this file, for the saltq test
`tests/tests/e2e/saltapi_tornado.rs`.

Run as root with Salt 3007.8, CherryPy, ws4py and websocket-client in a venv ($SALT_VENV), e.g.:
    python3 -m venv /tmp/saltvenv
    /tmp/saltvenv/bin/pip install salt==3007.8 pyyaml jinja2 markupsafe msgpack pyzmq \
        cryptography pycryptodomex requests psutil distro looseversion packaging jmespath \
        tornado aiohttp croniter python-dateutil setproctitle cherrypy ws4py websocket-client
    SALT_VENV=/tmp/saltvenv /tmp/saltvenv/bin/python tests/tests/e2e/data/saltapi_tornado/gen.py

It starts salt-master (rest_tornado and rest_cherrypy, both on plain HTTP on their own loopback
ports), one salt-minion `m1` and salt-api in a scratch directory ($SALTAPI_REC_DIR, default
/tmp/saltq-tornado-rec), makes each request without following redirects, and records
{status, content_type, location, body} (body parsed as JSON when it is). Tokens, jids and times
vary by run: the Rust test compares shapes after normalising them.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

VENV = os.environ.get("SALT_VENV", "/tmp/saltvenv").rstrip("/") + "/bin/"
HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.environ.get("SALTAPI_REC_DIR", "/tmp/saltq-tornado-rec")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def request(base, method, path, body=None, headers=None, ctype="application/json"):
    headers = dict(headers or {})
    headers.setdefault("Accept", "application/json")
    data = None
    if body is not None:
        data = json.dumps(body).encode() if ctype == "application/json" else body.encode()
        headers["Content-Type"] = ctype
    req = urllib.request.Request(base + path, data=data, headers=headers, method=method)
    try:
        with OPENER.open(req, timeout=60) as r:
            status, hdrs, raw = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, hdrs, raw = e.code, e.headers, e.read()
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    return {"status": status, "content_type": hdrs.get("Content-Type", ""),
            "location": hdrs.get("Location"), "set_cookie": "Set-Cookie" in hdrs,
            "body": parsed}


def websocket_case(url, trigger, want_tag):
    """Opens `url`, sends the ready message, runs `trigger()`, and returns the first message
    whose JSON (after a `data: ` prefix, if any) has a tag starting with `want_tag`."""
    import websocket
    try:
        ws = websocket.create_connection(url, timeout=20)
    except websocket.WebSocketBadStatusException as e:
        return {"status": e.status_code}
    ws.send("websocket client ready")
    time.sleep(1)
    trigger()
    first = []
    deadline = time.time() + 20
    while time.time() < deadline:
        msg = ws.recv()
        first.append(msg)
        text = msg[len("data: "):] if msg.startswith("data: ") else msg
        try:
            v = json.loads(text)
        except ValueError:
            continue
        if isinstance(v, dict) and str(v.get("tag", "")).startswith(want_tag):
            ws.close()
            return {"status": 101, "message": msg, "before": first[:-1][:3]}
        if isinstance(v, dict) and want_tag in v:
            ws.close()
            return {"status": 101, "message": msg, "before": first[:-1][:3]}
    ws.close()
    return {"status": 101, "message": None, "before": first[:3]}


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR + "/conf")
    tport, cport, pub, ret = free_port(), free_port(), free_port(), free_port()
    with open(DIR + "/users.txt", "w") as f:
        f.write("alice:secret\nbob:pingonly\n")
    master = {
        "root_dir": DIR, "interface": "127.0.0.1", "publish_port": pub, "ret_port": ret,
        "auto_accept": True, "user": "root", "log_file": DIR + "/master.log",
        "log_level_logfile": "info",
        "external_auth": {"file": {"^filename": DIR + "/users.txt",
                                   "alice": [".*", "@runner", "@wheel", "@jobs"],
                                   "bob": ["test.ping"]}},
        "netapi_enable_clients": ["local", "local_async", "local_batch", "runner",
                                  "runner_async", "wheel", "wheel_async"],
        "rest_tornado": {"port": tport, "address": "127.0.0.1", "disable_ssl": True,
                         "websockets": True},
        "rest_cherrypy": {"port": cport, "host": "127.0.0.1", "disable_ssl": True},
    }
    minion = {"root_dir": DIR, "master": "127.0.0.1", "master_port": ret, "publish_port": pub,
              "id": "m1", "user": "root", "log_file": DIR + "/minion.log"}
    for name, conf in (("master", master), ("minion", minion)):
        with open(f"{DIR}/conf/{name}", "w") as f:
            json.dump(conf, f)
    procs = []
    try:
        for exe in ("salt-master", "salt-minion", "salt-api"):
            procs.append(subprocess.Popen([VENV + exe, "-c", DIR + "/conf", "-l", "quiet"],
                                          start_new_session=True))
            time.sleep(2)
        base = f"http://127.0.0.1:{tport}"
        cbase = f"http://127.0.0.1:{cport}"
        login = {"username": "alice", "password": "secret", "eauth": "file"}
        for _ in range(120):
            try:
                r = request(base, "POST", "/login", login)
                if r["status"] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        token = r["body"]["return"][0]["token"]
        hdr = {"X-Auth-Token": token}
        ping = [{"client": "local", "tgt": "m1", "fun": "test.ping"}]
        for _ in range(120):
            r = request(base, "POST", "/", ping, hdr)
            if r["status"] == 200 and r["body"]["return"][0] == {"m1": True}:
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

        case("index", "GET", "/")
        case("login_get", "GET", "/login")
        case("login_json", "POST", "/login", login)
        case("login_form", "POST", "/login", "username=alice&password=secret&eauth=file",
             ctype="application/x-www-form-urlencoded")
        case("login_wrong_password", "POST", "/login",
             {"username": "alice", "password": "nope", "eauth": "file"})
        case("login_missing_eauth", "POST", "/login", {"username": "alice", "password": "x"})
        case("login_list", "POST", "/login", [login])
        case("root_no_token", "POST", "/", ping)
        case("root_bad_token", "POST", "/", ping, {"X-Auth-Token": "0123abcd"})
        case("local_ping", "POST", "/", ping, hdr)
        case("local_arg", "POST", "/", [{"client": "local", "tgt": "m1", "fun": "test.echo",
                                         "arg": "hello"}], hdr)
        case("local_list_missing", "POST", "/", [{"client": "local", "tgt": "m1,nosuch",
                                                  "tgt_type": "list", "fun": "test.ping"}], hdr)
        case("local_no_match", "POST", "/", [{"client": "local", "tgt": "nosuch*",
                                              "fun": "test.ping"}], hdr)
        case("local_async", "POST", "/", [{"client": "local_async", "tgt": "m1",
                                           "fun": "test.ping"}], hdr)
        case("runner", "POST", "/", [{"client": "runner", "fun": "test.arg",
                                      "arg": ["a"], "kwarg": {"k": 1}}], hdr)
        case("runner_async", "POST", "/", [{"client": "runner_async", "fun": "test.arg",
                                            "arg": ["a"]}], hdr)
        case("wheel", "POST", "/", [{"client": "wheel", "fun": "key.list_all"}], hdr)
        case("local_batch", "POST", "/", [{"client": "local_batch", "tgt": "*",
                                           "fun": "test.ping"}], hdr)
        case("two_chunks", "POST", "/", [ping[0], {"client": "local_async", "tgt": "m1",
                                                   "fun": "test.ping"}], hdr)
        bob = request(base, "POST", "/login",
                      {"username": "bob", "password": "pingonly", "eauth": "file"})
        bhdr = {"X-Auth-Token": bob["body"]["return"][0]["token"]}
        case("bob_ping", "POST", "/", ping, bhdr)
        case("bob_cmd_run", "POST", "/", [{"client": "local", "tgt": "*", "fun": "cmd.run",
                                           "arg": "id"}], bhdr)
        case("bob_runner", "POST", "/", [{"client": "runner", "fun": "test.arg"}], bhdr)
        case("run_eauth", "POST", "/run", [dict(ping[0], **login)])
        case("run_wrong_password", "POST", "/run",
             [dict(ping[0], username="alice", password="bad", eauth="file")])
        case("run_no_credentials", "POST", "/run", ping)
        case("minions", "GET", "/minions", headers=hdr)
        case("minion_m1", "GET", "/minions/m1", headers=hdr)
        case("minions_no_token", "GET", "/minions")
        case("minions_post", "POST", "/minions", [{"tgt": "m1", "fun": "test.ping"}], hdr)
        case("minions_post_local", "POST", "/minions",
             [{"client": "local", "tgt": "m1", "fun": "test.ping"}], hdr)
        case("jobs", "GET", "/jobs", headers=hdr)
        jid = cases["local_async"]["response"]["body"]["return"][0]["jid"]
        cases["job"] = {"request": {"method": "GET", "path": "/jobs/<jid>", "token": True},
                        "response": request(base, "GET", "/jobs/" + jid, None, hdr)}
        case("hook", "POST", "/hook/my/app", {"a": 1}, hdr)
        case("hook_no_token", "POST", "/hook", {"a": 1})
        case("logout", "POST", "/logout", None, hdr)
        case("unknown_path", "GET", "/nosuch", headers=hdr)
        case("accept_html", "GET", "/", headers={"Accept": "text/html"})
        case("accept_yaml", "GET", "/", headers={"Accept": "application/x-yaml"})
        case("events_no_token", "GET", "/events")

        def trigger():
            request(base, "POST", "/", [{"client": "local_async", "tgt": "m1",
                                         "fun": "test.ping"}], hdr)

        ws_base = f"ws://127.0.0.1:{tport}"
        cases["ws_all_events"] = {"request": {"path": "/all_events/<token>"},
                                  "response": websocket_case(
                                      f"{ws_base}/all_events/{token}", trigger, "salt/job/")}
        cases["ws_all_events_bad_token"] = {"request": {"path": "/all_events/<64 zeros>"},
                                            "response": websocket_case(
                                                f"{ws_base}/all_events/{'0' * 64}", trigger,
                                                "salt/job/")}
        cases["ws_formatted_events"] = {"request": {"path": "/formatted_events/<token>"},
                                        "response": websocket_case(
                                            f"{ws_base}/formatted_events/{token}", trigger,
                                            "jobs")}
        # rest_cherrypy's /ws: the token in the path is its session id, which is the token.
        cws = f"ws://127.0.0.1:{cport}"
        ctok = request(cbase, "POST", "/login", login)["body"]["return"][0]["token"]
        cases["cherrypy_ws"] = {"request": {"path": "/ws/<token>"},
                                "response": websocket_case(f"{cws}/ws/{ctok}", trigger,
                                                           "salt/job/")}
        cases["cherrypy_ws_bad_token"] = {"request": {"path": "/ws/<bad>"},
                                          "response": websocket_case(f"{cws}/ws/nosuch",
                                                                     trigger, "salt/job/")}
        # The grains of /minions are cut to a few keys: the test does not replay them.
        for k in ("minions", "minion_m1"):
            g = cases[k]["response"]["body"]["return"][0]["m1"]
            cases[k]["response"]["body"]["return"][0]["m1"] = {
                x: g[x] for x in ("id", "os", "kernel") if x in g}
            cases[k]["response"]["trimmed"] = ("grains cut to id, os and kernel when committed "
                                               "(the test does not replay grains)")
        with open(os.path.join(HERE, "cases.json"), "w") as f:
            json.dump(cases, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(cases)} cases")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, 15)
            except ProcessLookupError:
                pass
        time.sleep(2)
        for p in procs:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    sys.exit(main())
