#!/usr/bin/env bash
# The test command: set up (idempotent), install the browser the report test renders in, run lint + the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
. .venv/bin/activate
ruff check hybrid features indexes ltr tests benchmarks
lint-imports  # the layer contract in pyproject.toml (docs/architecture.md)
bash scripts/check-wheel.sh  # a non-editable install runs the sample job and cmr-disck (package data complete)
python -m pytest tests "$@"  # -q comes from pyproject (twice would hide the closing "N passed" line)
