#!/usr/bin/env bash
# Records Salt 3007.8's sys.list_state_functions / sys.list_state_modules answers into
# sys_states_salt3007.json (`sys_states_record.sh > sys_states_salt3007.json`): every state
# function Salt loads on this host (Debian 12, salt-call --local), and a few selections
# (a bare module, a glob with and without a dot, two modules). The test keeps, of each
# answer, the names saltq has. Made with a venv holding salt==3007.8 and its requirements.
set -euo pipefail
VENV=${SALT_VENV:-/tmp/salt-venv}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/minion" <<YAML
id: m1
file_client: local
master_type: disable
root_dir: $work/root
pki_dir: $work/root/pki
cachedir: $work/root/cache
sock_dir: $work/root/sock
log_file: $work/root/log
YAML
VENV="$VENV" WORK="$work" "$VENV/bin/python3" - <<'PY'
import json, os, subprocess
venv, work = os.environ["VENV"], os.environ["WORK"]
def call(*words):
    out = subprocess.run(
        [f"{venv}/bin/salt-call", "--local", "-c", work, "--out", "json", "-l", "quiet", *words],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out)["local"]
cases = []
for fun, args in [
    ("sys.list_state_functions", ["file"]),
    ("sys.list_state_functions", ["pkg", "service"]),
    ("sys.list_state_functions", ["file.m*"]),
    ("sys.list_state_functions", ["*.absent"]),
    ("sys.list_state_functions", ["sys"]),
    ("sys.list_state_modules", []),
    ("sys.list_state_modules", ["s*"]),
    ("sys.list_state_modules", ["file", "nope"]),
]:
    cases.append({"fun": fun, "args": args, "ret": call(fun, *args)})
print(json.dumps({
    "_recorded": "states/src/engine/sys_states_record.sh: salt-call --local with Salt 3007.8 on Debian 12",
    "all": call("sys.list_state_functions"),
    "renderers": call("sys.list_renderers"),
    "cases": cases,
}, indent=1))
PY
