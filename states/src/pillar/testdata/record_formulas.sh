#!/usr/bin/env bash
# Records Salt 3007.8's pillar for each public formula's test pillars and pillar.example:
# `record_formulas.sh FORMULAS_DIR` writes `formulas/<formula>__<name>.json` beside this
# script, one per `<formula>/test/salt/pillar/<name>.sls` and `<formula>/pillar.example`
# (name `pillar.example`), each compiled alone as `example.sls` under `'*'` by
# `record.sh` (minion `web1`, `os_family: Debian`). Run with SALT_CALL pointing at a
# salt-call 3007.8 (a venv: `pip install salt==3007.8` plus its requirements/base.txt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
formulas=$(cd "$1" && pwd)
out="$here/formulas"
mkdir -p "$out"
record() {
  local src=$1 name=$2
  local tree
  tree=$(mktemp -d)
  printf "base:\n  '*':\n    - example\n" > "$tree/top.sls"
  cp "$src" "$tree/example.sls"
  "$here/record.sh" "$tree" > "$out/$name.json"
  rm -rf "$tree"
}
for f in "$formulas"/*/; do
  formula=$(basename "$f")
  for sls in "$f"test/salt/pillar/*.sls; do
    [ -e "$sls" ] || continue
    record "$sls" "${formula}__$(basename "$sls" .sls)"
  done
  if [ -e "$f/pillar.example" ]; then
    record "$f/pillar.example" "${formula}__pillar.example"
  fi
done
