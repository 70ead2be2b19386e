"""Record what Salt 3007.8's `pkgrepo.managed`/`pkgrepo.absent` answer with apt (Debian,
no python3-apt in Salt's environment, so Salt's own `SourcesList`), and the sources file
and signing key each step leaves. Needs root; no network (`refresh: False`, a `file:` URI).

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/pkgrepo/gen.py

The repository line names `signed-by=/etc/apt/keyrings/saltq-rec-repo.gpg`; `key_url` is a
local ASCII-armored key made with gpg in a throwaway GNUPGHOME, named like the keyring so
that Salt does not rename it; `aptkey: False` makes Salt dearmor it into /etc/apt/keyrings
instead of apt-key's global keyring. Each step is one `salt-call --local state.apply` of a
one-state SLS; `cases.json` holds the steps, Salt's answers, the text of
`/etc/apt/sources.list.d/saltq-rec-repo.list` after each step (`null`: absent) and whether
the keyring exists. Everything is removed at the end.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = "/work/saltvenv/bin/salt-call"
LIST = "/etc/apt/sources.list.d/saltq-rec-repo.list"
KEYRING = "/etc/apt/keyrings/saltq-rec-repo.gpg"
KEYDIR = "/tmp/saltq-rec-repo-key"
KEY = f"{KEYDIR}/saltq-rec-repo.gpg"
LINE = "deb [signed-by=/etc/apt/keyrings/saltq-rec-repo.gpg] file:///tmp/saltq-rec-repo ./"
LINE2 = "deb [signed-by=/etc/apt/keyrings/saltq-rec-repo.gpg arch=amd64] file:///tmp/saltq-rec-repo2 stable main"

BASE = [{"name": LINE}, {"file": LIST}, {"refresh": False}, {"aptkey": False}]
STEPS = [
    ("r01_managed_test", "pkgrepo.managed", BASE + [{"key_url": KEY}], True),
    ("r02_managed", "pkgrepo.managed", BASE + [{"key_url": KEY}], False),
    ("r03_managed_again", "pkgrepo.managed", BASE + [{"key_url": KEY}], False),
    ("r04_disabled_test", "pkgrepo.managed", BASE + [{"disabled": True}], True),
    ("r05_disabled", "pkgrepo.managed", BASE + [{"disabled": True}], False),
    ("r06_enabled", "pkgrepo.managed", BASE + [{"enabled": True}], False),
    ("r07_second_repo", "pkgrepo.managed", [{"name": LINE2}, {"file": LIST}, {"refresh": False}, {"aptkey": False}], False),
    ("r08_absent_test", "pkgrepo.absent", [{"name": LINE}], True),
    ("r09_absent", "pkgrepo.absent", [{"name": LINE}], False),
    ("r10_absent_again", "pkgrepo.absent", [{"name": LINE}], False),
    ("r11_absent_second", "pkgrepo.absent", [{"name": LINE2}], False),
    ("r12_repo_kwarg", "pkgrepo.managed", [{"name": LINE}, {"repo": LINE}], False),
    ("r13_enabled_and_disabled", "pkgrepo.managed", BASE + [{"enabled": True}, {"disabled": True}], False),
    ("r14_key_url_and_keyid", "pkgrepo.managed", BASE + [{"key_url": KEY}, {"keyid": "ABCD"}, {"keyserver": "keyserver.example"}], True),
]


def make_key():
    os.makedirs(KEYDIR, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, GNUPGHOME=home)
        subprocess.run(
            ["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "saltq test repo <repo@saltq.invalid>", "ed25519", "sign", "never"],
            env=env, check=True, capture_output=True,
        )
        out = subprocess.run(["gpg", "--armor", "--export"], env=env, check=True, capture_output=True).stdout
    with open(KEY, "wb") as f:
        f.write(out)
    return out.decode()


def run(cid, fun, args, test):
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/srv")
        with open(f"{d}/minion", "w") as f:
            f.write(
                f"file_client: local\nfile_roots:\n  base:\n    - {d}/srv\n"
                f"cachedir: {d}/cache\nroot_dir: {d}\npki_dir: {d}/pki\n"
                f"log_file: {d}/log\nuser: root\nid: labminion\n"
            )
        with open(f"{d}/srv/one.sls", "w") as f:
            json.dump({cid: {fun: args}}, f)
        cmd = [SALT_CALL, "--local", "-c", d, "--out", "json", "state.apply", "one"]
        if test:
            cmd.append("test=True")
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        (ret,) = json.loads(out)["local"].values()
        return {k: ret[k] for k in ("name", "result", "comment", "changes")}


def main():
    key = make_key()
    records = []
    try:
        for cid, fun, args, test in STEPS:
            got = run(cid, fun, args, test)
            text = open(LIST).read() if os.path.exists(LIST) else None
            records.append({
                "id": cid, "fun": fun, "args": args, "test": test, "ret": got,
                "file": text, "keyring": os.path.exists(KEYRING),
            })
            print(cid, json.dumps(got), repr(text), file=sys.stderr)
    finally:
        for f in (LIST, KEYRING, KEY, KEY + ".decrypted"):
            if os.path.exists(f):
                os.remove(f)
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump({"key": key, "steps": records}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
