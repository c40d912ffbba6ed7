#!/usr/bin/env bash
# A non-editable install works: build the wheel, install it (no deps: the venv has them) into a folder of its
# own, and from outside the checkout run the default job and the bundled recipe cmr-disck (trained on the
# sample: a packaging check, not a measurement). Catches package data the wheel leaves out.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
# the jar travels as package data (hybrid/jars/): scripts/setup.sh copies it there after `mvn package`
mkdir -p hybrid/jars && cp target/hybrid-lucene-*.jar hybrid/jars/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python -m pip wheel --no-deps --no-build-isolation -q -w "$work/dist" . >/dev/null
python -m pip install -q --no-deps --target "$work/site" "$work"/dist/hybrid_cmr-*.whl
cd "$work"
export PYTHONPATH="$work/site"
python -c "import hybrid, sys; sys.exit(0 if hybrid.__file__.startswith('$work/site') else 'hybrid imported from ' + hybrid.__file__)"
python -m hybrid.search --topics sample --output sample.trec --quiet
read -r index topics qrels < <(python -c "from hybrid.sample import sample_index, sample_paths as p; \
print(sample_index(progress=False), p().topics, p().qrels)")
python -m hybrid.recipe_train cmr-disck --index "$index" --topics "$topics" --qrels "$qrels" --artifacts art \
    --max-queries 20 >/dev/null
python -m hybrid.search --index "$index" --topics sample --recipe cmr-disck --artifacts art --output disck.trec --quiet
test -s sample.trec && test -s disck.trec
echo "wheel check: sample job and cmr-disck ran from a non-editable install"
