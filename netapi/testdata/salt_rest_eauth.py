# Calls Salt 3007.8's salt/auth/rest.py against a loopback server answering canned replies.
# Run from a directory with etc/minion (any local minion config), with the Python of a venv
# holding salt==3007.8 and its dependencies: python salt_rest_eauth.py > salt_rest_eauth.out
import http.server, json, threading, sys
import salt.auth.rest as rest
import salt.config

REPLIES = {
    "/json-empty": (200, "application/json", b"[]"),
    "/json-list": (200, "application/json", b'["@wheel"]'),
    "/json-dict": (200, "application/json", b'{"a": 1}'),
    "/html": (200, "text/html", b"ok"),
    "/denied": (401, "text/html", b"Unauthorized"),
    "/created": (201, "application/json", b"[]"),
}

class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        code, ctype, out = REPLIES[self.path]
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        H.seen = (self.headers.get("Content-Type"), body.decode())
    def log_message(self, *a):
        pass

srv = http.server.HTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
opts = salt.config.minion_config("etc/minion")
for path in REPLIES:
    url = f"http://127.0.0.1:{srv.server_port}{path}"
    opts["external_auth"] = {"rest": {"^url": url, "alice": [".*", "@runner"]}}
    rest.__opts__ = opts
    try:
        a = rest.auth("alice", "p&w")
    except Exception as e:
        a = f"raises {type(e).__name__}"
    try:
        acl_alice = rest.acl("alice", password="p&w")
    except Exception as e:
        acl_alice = f"raises {type(e).__name__}"
    try:
        acl_bob = rest.acl("bob", password="p&w")
    except Exception as e:
        acl_bob = f"raises {type(e).__name__}"
    print(json.dumps({"reply": path, "auth": a, "acl(alice)": acl_alice, "acl(bob)": acl_bob}))
print(json.dumps({"request": H.seen}))
