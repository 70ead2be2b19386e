"""Records Salt 3007.8's cp.* returns for exec/src/modules/cp/tests.rs to replay.

Regenerate with:
    /work/saltvenv/bin/python exec/src/modules/cp/data/gen.py

Builds a throwaway file tree (the TREE below, in two base roots and a dev root), runs each
CASE in order with `salt-call --local --out json` (file_client: local), and writes cases.json:
[{"args": [...], "ret": ...}] with the temporary directory replaced by "{ROOT}" and a process id by "{PID}". Cases run in
order and share one cachedir, as the replay does: later cases see what earlier ones cached.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SALT_CALL = os.path.join(os.path.dirname(sys.executable), "salt-call")

# root name -> {relative path: contents}; None makes an empty directory. The destination
# directory {ROOT}/out exists before the cases run; {ROOT}/nodir does not.
TREE = {
    "srv": {
        "top.sls": "base:\n  '*':\n    - web\n",
        "hello.txt": "hello world\n",
        "script.sh": "#!/bin/sh\necho script ran \"$@\"\n",
        "web/init.sls": "include:\n  - web.conf\n",
        "web/conf.sls": "/tmp/x:\n  file.managed: []\n",
        "web/files/nginx.conf": "server {}\n",
        "web/files/empty/": None,
        "webapp.txt": "not under web/\n",
        "empty.txt": "",
    },
    "srv2": {
        "hello.txt": "shadowed by srv\n",
        "extra/only2.txt": "second root\n",
        "extra/deep/x.sls": "x: {}\n",
    },
    "dev": {
        "hello.txt": "hello dev\n",
        "dev.sls": "d: {}\n",
    },
}

CASES = [
    ["cp.list_master"],
    ["cp.list_master", "prefix=web"],
    ["cp.list_master", "prefix=web/files"],
    ["cp.list_master", "saltenv=dev"],
    ["cp.list_master", "saltenv=nosuchenv"],
    ["cp.list_master_dirs"],
    ["cp.list_master_dirs", "prefix=web"],
    ["cp.list_master_dirs", "saltenv=dev"],
    ["cp.list_states"],
    ["cp.list_states", "saltenv=dev"],
    ["cp.hash_file", "salt://hello.txt"],
    ["cp.hash_file", "salt://hello.txt", "saltenv=dev"],
    ["cp.hash_file", "salt://hello.txt?saltenv=dev"],
    ["cp.hash_file", "salt://nope.txt"],
    ["cp.hash_file", "salt://extra/only2.txt"],
    ["cp.hash_file", "salt://empty.txt"],
    ["cp.is_cached", "salt://hello.txt"],
    ["cp.cache_file", "salt://hello.txt"],
    ["cp.is_cached", "salt://hello.txt"],
    ["cp.is_cached", "salt://nope.txt"],
    ["cp.cache_file", "salt://nope.txt"],
    ["cp.cache_file", "salt://hello.txt", "saltenv=dev"],
    ["cp.cache_file", "salt://hello.txt?saltenv=dev"],
    ["cp.cache_file", "salt://empty.txt"],
    ["cp.cache_file", "salt://web"],
    ["cp.cache_files", "salt://top.sls,salt://nope.txt"],
    ["cp.cache_files", "[salt://script.sh, salt://extra/only2.txt]"],
    ["cp.cache_dir", "salt://web"],
    ["cp.cache_dir", "salt://web", "include_empty=True"],
    ["cp.cache_dir", "salt://extra", "exclude_pat=*.sls"],
    ["cp.cache_dir", "salt://nope"],
    ["cp.get_file", "salt://hello.txt", "{ROOT}/nodir/hello.txt"],
    ["cp.get_file", "salt://hello.txt", "{ROOT}/out/hello.txt"],
    ["cp.get_file", "salt://hello.txt", "{ROOT}/out/"],
    ["cp.get_file", "salt://web/files/nginx.conf", "{ROOT}/out"],
    ["cp.get_file", "salt://hello.txt", "{ROOT}/out/a/b/c.txt"],
    ["cp.get_file", "salt://hello.txt", "{ROOT}/out/a/b/c.txt", "makedirs=True"],
    ["cp.get_file", "salt://nope.txt", "{ROOT}/out/nope.txt"],
    ["cp.get_file", "salt://hello.txt", "{ROOT}/out/dev.txt", "saltenv=dev"],
    ["cp.get_file", "salt://../etc/passwd", "{ROOT}/out/passwd"],
    ["cp.get_file", "salt:///etc/passwd", "{ROOT}/out/passwd"],
    ["cp.get_file_str", "salt://hello.txt"],
    ["cp.get_file_str", "salt://nope.txt"],
    ["cp.get_dir", "salt://web", "{ROOT}/gd"],
    ["cp.get_dir", "salt://web/files/", "{ROOT}/gd2"],
    ["cp.get_dir", "salt://nope", "{ROOT}/gd3"],
    ["cmd.script", "salt://script.sh", "args=one two"],
    ["cmd.script", "salt://nope.sh"],
    ["cp.list_minion"],
    ["cp.list_minion", "saltenv=dev"],
]


def main():
    root = tempfile.mkdtemp(prefix="cprec")
    for name, files in TREE.items():
        for rel, contents in files.items():
            path = os.path.join(root, name, rel)
            if contents is None:
                os.makedirs(path, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(contents)
    os.makedirs(os.path.join(root, "out"))
    conf = os.path.join(root, "conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "minion"), "w", encoding="utf-8") as f:
        f.write(
            "id: rec\nfile_client: local\n"
            f"file_roots:\n  base:\n    - {root}/srv\n    - {root}/srv2\n"
            f"  dev:\n    - {root}/dev\n"
            f"cachedir: {root}/cache\nroot_dir: {root}\npki_dir: {root}/pki\n"
            f"log_file: {root}/log\nuser: root\n"
        )
    cases = []
    for case in CASES:
        argv = [a.replace("{ROOT}", root) for a in case]
        out = subprocess.run(
            [SALT_CALL, "--local", "-c", conf, "--out", "json", *argv],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            ret = json.loads(out.stdout)["local"]
        except (ValueError, KeyError):
            sys.exit(f"{case}: no JSON from salt-call:\n{out.stdout}\n{out.stderr}")
        if isinstance(ret, dict) and isinstance(ret.get("pid"), int) and ret["pid"]:
            ret["pid"] = "{PID}"
        text = json.dumps(ret).replace(root, "{ROOT}")
        cases.append({"args": case, "ret": json.loads(text), "retcode": out.returncode})
        print(case, "->", text[:120])
    with open(os.path.join(HERE, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tree": TREE, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
