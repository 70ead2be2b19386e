#!/usr/bin/env bash
# Records Salt 3007.8's pillar for a tree: `record.sh PILLAR_DIR [EXTRA_MINION_YAML]` prints
# `salt-call --local pillar.items --out json` (the `local` value) for minion id `web1` with
# `file_client: local`, the tree as `pillar_roots: {base: [PILLAR_DIR]}`, nodegroups
# `{webs: 'web*'}` and the extra options. The fixtures beside this script were recorded with
# it, in a venv made by `python3 -m venv /tmp/saltvenv && /tmp/saltvenv/bin/pip install
# salt==3007.8` (plus Salt's requirements/base.txt).
set -euo pipefail
SALT=${SALT_CALL:-/tmp/saltvenv/bin/salt-call}
dir=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/minion" <<YAML
id: web1
file_client: local
root_dir: $work/root
pki_dir: $work/root/pki
cachedir: $work/root/cache
log_file: $work/root/log
pillar_roots:
  base: [$dir]
file_roots:
  base: [$work/files]
nodegroups:
  webs: 'web*'
grains:
  os_family: Debian
${2:-}
YAML
"$SALT" --local -c "$work" pillar.items --out json 2>/dev/null \
  | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["local"], indent=1))'
