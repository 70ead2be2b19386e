#!/usr/bin/env bash
# The Helm chart's tests: Helm's own engine (helm-python-sdk: lint, render) and the Kubernetes API
# schemas (kubernetes-validate), run by pytest in a venv under target/chart-venv that is built from
# tests/chart/requirements.txt and rebuilt when that file changes. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=target/chart-venv
REQ=tests/chart/requirements.txt
if [ ! -x "$VENV/bin/python" ] || ! cmp -s "$REQ" "$VENV/requirements.txt"; then
  python3 -m venv --clear "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
  cp "$REQ" "$VENV/requirements.txt"
fi
# No .pytest_cache or __pycache__ in the source tree.
export PYTHONDONTWRITEBYTECODE=1
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/chart "$@"
