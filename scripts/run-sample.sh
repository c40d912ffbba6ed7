#!/usr/bin/env bash
# The default job: set up (idempotent), then search the bundled ECB+ sample and evaluate the run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
python -m hybrid.search --topics sample --output sample.multifield.trec --spans sample.multifield.spans.jsonl "$@"
