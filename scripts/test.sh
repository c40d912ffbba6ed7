#!/usr/bin/env bash
# The test command: set up (idempotent) and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check hybrid features indexes ltr tests benchmarks
python -m pytest -q tests "$@"
