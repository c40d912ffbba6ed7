"""Shared command-line plumbing: logging, clean error exits, parsers, argument checks.

What a command may write is decided by the output policy, :mod:`hybrid.core.outputs`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable

from hybrid.core.backend import BACKENDS
from hybrid.core.errors import ConfigError, IndexMissingError, InputError
from hybrid.core.precision import PRECISIONS


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    """Run ``main``; user errors print one clear line and exit 2 (no traceback)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in ("hybrid", "indexes", "features", "ltr"):
        logging.getLogger(name).setLevel(logging.INFO)
    try:
        return main(argv)
    except (InputError, ConfigError, IndexMissingError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - only Lucene's own damage reports are turned into a line
        damage = lucene_damage(error)
        if damage is None:
            raise
        print(f"error: {damage}", file=sys.stderr)
        return 2


#: Java exceptions by which Lucene reports a damaged index when a query reads it (postings, stored fields, doc
#: values): a file corrupted or truncated after the index was opened. Any other Java exception is a bug.
LUCENE_DAMAGE = ("CorruptIndexException", "EOFException", "IndexFormatTooOldException",
                 "IndexFormatTooNewException", "NoSuchFileException", "FileNotFoundException")


def java_heap() -> str:
    """The running JVM's heap limit in words, for messages about a search that ran out of it.

    Anserini's batch search runs queries on a thread pool and loses a task's own exception (an OutOfMemoryError
    among them: a batch of deep searches holds every hit's stored document), so the limit is all that can be said.
    """
    limit = os.environ.get("HYBRID_JVM_HEAP")
    try:
        import jnius  # deferred: only reached after a Java exception, when the JVM is running

        mib = jnius.autoclass("java.lang.Runtime").getRuntime().maxMemory() / 2**20
    except Exception:  # noqa: BLE001 - a message helper must never raise
        return f"HYBRID_JVM_HEAP={limit}" if limit else "the JVM's default heap"
    size = f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"
    return f"the heap is {size}" + (f", HYBRID_JVM_HEAP={limit}" if limit else "")


def lucene_damage(error: BaseException) -> str | None:
    """One line for a Java exception (through pyjnius) by which Lucene says an index file is damaged; its message
    names the file (``resource=...``). None for anything else."""
    if type(error).__module__.split(".")[0] != "jnius":
        return None
    detail = (getattr(error, "innermessage", None) or str(error)).strip().splitlines()
    if detail and "is not equal to completedTaskCount" in detail[0]:  # Anserini's batch search lost a task's error
        return (f"Lucene failed on some queries ({detail[0].strip()[:120]}): either the Java heap ran out "
                f"({java_heap()}: raise it with HYBRID_JVM_HEAP, e.g. HYBRID_JVM_HEAP=8g; unset, the JVM takes a "
                "quarter of the memory) or the index is damaged: check it with HYBRID_VERIFY=full (every Lucene file's "
                "checksum is verified on open) or rebuild it with `python -m hybrid.index --index IDX --overwrite`")
    names = [str(getattr(error, "classname", "") or "")]
    names += [line.split(":")[0].strip() for line in (getattr(error, "stacktrace", None) or [])
              if "Exception" in str(line).split(":")[0]]
    if not any(name.rsplit(".", 1)[-1] in LUCENE_DAMAGE for name in names):
        return None
    detail = detail[0] if detail else type(error).__name__
    return (f"Lucene found a damaged index file while searching ({names[0].rsplit('.', 1)[-1]}: {detail[:300]}); "
            "rebuild the index with `python -m hybrid.index --index IDX --overwrite`")


# -- parsers ---------------------------------------------------------------------------------------------------


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown in --help; descriptions and epilogs (module docs with examples) kept as written.

    No default is appended to a flag (``store_true``/``store_false``: its help says what it switches; "(default:
    True)" on ``--no-x`` reads as if ``--no-x`` were on), to an option without one, or to a help text that
    already states its default in words ("default: equal weights").
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or isinstance(action.const, bool) and action.nargs == 0:
            return action.help
        if action.help and "default" in action.help:
            return action.help
        return super()._get_help_string(action)


def make_parser(prog: str, doc: str | None, epilog: bool = False, **kwargs) -> argparse.ArgumentParser:
    """The parser every CLI uses: no abbreviated options (``--k`` is not ``--k1``), defaults shown in --help.

    ``doc`` is the module docstring: its first line is the description, and with ``epilog`` the whole of it
    (the examples) follows the options.
    """
    doc = doc or ""
    return argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0], epilog=doc if epilog else None,
                                   formatter_class=HelpFormatter, allow_abbrev=False, **kwargs)


def add_quiet(p: argparse.ArgumentParser, help: str = "no progress bars") -> None:
    """The one ``--quiet`` every command takes (progress bars off: :func:`hybrid.core.progress.progress`)."""
    p.add_argument("--quiet", action="store_true", help=help)


def add_precision(p: argparse.ArgumentParser, what: str) -> None:
    """The one ``--precision`` of commands that run an encoder or the reader (see :mod:`hybrid.core.precision`)."""
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help=f"inference precision of {what}: fp32 (exact, the default), or bf16 / fp16 autocast, about "
                        "2x faster on a GPU and on CPUs with native bf16 (AVX512-BF16, AMX), slower on other CPUs; "
                        "vectors move by ~1e-3 (BENCHMARKS.md: what it does to retrieval)")


def add_backend(p: argparse.ArgumentParser, what: str) -> None:
    """The one ``--backend`` of commands that run the bi-encoder or the reader (see :mod:`hybrid.core.backend`)."""
    p.add_argument("--backend", choices=BACKENDS, default="torch",
                   help=f"inference backend of {what}: torch (the default; any device and precision), or onnx "
                        "(ONNX Runtime on the CPU, fp32: the transformer about 2x faster there, vectors and reader "
                        "scores within ~1e-5; a reader's heads stay in torch; needs pip install 'hybrid[onnx]'). "
                        "Training always runs in torch")


def add_significance(p: argparse.ArgumentParser) -> None:
    """``--correction`` and ``--permutations``: how a command's paired tests against a baseline are run."""
    from hybrid.evaluation.significance import CORRECTIONS, PERMUTATIONS  # deferred: importing it loads scipy

    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction of the p-values over the runs compared with the baseline")
    p.add_argument("--permutations", type=positive_int, default=PERMUTATIONS,
                   help="random sign patterns of Fisher's randomization test (exact when 2^queries is at most this)")


def add_subparser(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    """A sub-command parser with the same rules as :func:`make_parser` (argparse does not pass them down)."""
    kwargs.setdefault("formatter_class", HelpFormatter)
    return sub.add_parser(name, allow_abbrev=False, **kwargs)


# -- argument types (argparse ``type=``): a bad value is a usage error (exit 2) before any work starts ----------


def _number(text: str, kind: type, what: str) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if kind is float and (value != value or abs(value) == float("inf")):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    if kind is int and abs(value) >= 2**31:  # counts reach Java ints and int32 arrays, where they would overflow
        raise argparse.ArgumentTypeError(f"must be {what} below 2**31 (2147483648), got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (counts: hits, threads, batch sizes, shards)."""
    value = _number(text, int, "an integer >= 1")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int, "an integer >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0 (BM25 k1 and b, weights, rates)."""
    value = _number(text, float, "a finite number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def unit_float(text: str) -> float:
    """A number in [0, 1] (BM25 b)."""
    value = _number(text, float, "a number between 0 and 1")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def run_tag(text: str) -> str:
    """A TREC run tag: one non-empty token (the run file's sixth column)."""
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        raise argparse.ArgumentTypeError(f"must be one word without whitespace (a TREC run column), got {text!r}")
    return text


def output_file(text: str) -> str:
    """A file to write: not an existing directory."""
    if not text:
        raise argparse.ArgumentTypeError("must name a file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory; give the name of a file to write")
    return text


def format_table(table: dict[str, dict[str, float]], measures: tuple[str, ...]) -> str:
    """Means by group as every command prints them: a row per group (``all``, then each kind) with its number of
    queries (``#q``), a column per measure (``table``: group -> measure -> mean, as hybrid.core.measures.evaluate
    gives it)."""
    head = f"{'group':10s} {'#q':>6s} " + " ".join(f"{m:>9s}" for m in measures)
    rows = [head]
    for group, values in table.items():
        rows.append(f"{group:10s} {int(values['#q']):6d} " + " ".join(f"{values[m]:9.4f}" for m in measures))
    return "\n".join(rows)
