#!/usr/bin/env bash
# One-command set-up on a fresh Debian 12 machine: Python env (.venv) + the project's Java extension.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch first, pinned: an unpinned torch pulls several GB of CUDA packages.
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[dev]"
# The Java extension (pom.xml) builds offline from Debian's Maven plugin packages.
if [ -f pom.xml ]; then
  if ! dpkg -s libmaven-compiler-plugin-java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends maven default-jdk-headless maven-repo-helper \
      libmaven-compiler-plugin-java libmaven-jar-plugin-java libsurefire-java libmaven-resources-plugin-java >/dev/null
  fi
  # Compile against the Lucene inside the Anserini jar that this venv's pyserini ships (no download).
  ANSERINI_JAR=$(python -c "from hybrid.core.jvm import anserini_jar; print(anserini_jar())")
  mvn -o -q -Dmaven.repo.local=/usr/share/maven-repo -Danserini.jar="$ANSERINI_JAR" package
  # a copy inside the package, so that a wheel built from this checkout carries the jar (package data)
  mkdir -p hybrid/jars && cp target/hybrid-lucene-*.jar hybrid/jars/
fi
echo "setup done: activate with '. .venv/bin/activate'"
