"""One output policy for every command that writes: nothing a command reads, and nothing that is not its own,
is ever replaced.

Each command declares, in one place (its ``writes(args)``), what it writes (:class:`Output`) and what it
reads (:class:`Input`); :meth:`Writes.check` applies the rules below *before any work starts*, so a refused
command has read nothing expensive and deleted nothing:

* an output (or a file its writer derives from it: ``<run>.meta.json``, the lock ``.<run>.lock``, ...) is
  never one of the inputs (or their side files), never inside an input folder (except where the input's
  kind keeps it, e.g. ``<index>/dense``), and never a folder that contains an input. Paths are compared
  resolved (symbolic links followed) and with ``samefile`` (hard links);
* two outputs never name the same path;
* an existing folder is replaced only with ``--overwrite``, and only when it holds the manifest of the very
  kind being written (a dense index over a dense index, an LTR model over an LTR model) or is empty; a kind
  that lists what it writes (a hybrid index) refuses to delete anything else unless ``overwrite_all``,
  and says what it will delete;
* an existing file is replaced only by a file output of its own kind: runs and reports replace an earlier
  run or report without ``--overwrite`` (``Output.replace``), anything else needs ``--overwrite``; a kind
  that can be recognised (a TREC run) replaces only a file that looks like one. A folder is never replaced by
  a file.

The refusals are :class:`~hybrid.core.errors.InputError` (one line, exit 2 under ``run_cli``); their
wording is catalogued in ``docs/errors.md``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hybrid.core.errors import InputError, OutputExistsError

log = logging.getLogger(__name__)

PathLike = str | Path
#: Replacements already announced in this process (a command checks, then the library it calls checks again).
_ANNOUNCED: set[tuple[str, str, tuple[str, ...]]] = set()


@dataclass(frozen=True)
class Kind:
    """What an output is, as the policy recognises an existing one on disk.

    ``manifests``: a folder kind; a folder holding one of these files is of this kind (when ``format`` is
    given, the manifest's JSON must also hold that key and value: a generic name like ``model.json``).
    ``own``: the names inside such a folder its writer makes; anything else is foreign (None: not listed,
    everything inside is the artifact's). ``looks_like``: a file kind's test of an existing file.
    """

    name: str
    manifests: tuple[str, ...] = ()
    format: tuple[str, str] | None = None
    own: Callable[[str], bool] | None = None
    looks_like: Callable[[Path], bool] | None = None

    @property
    def a(self) -> str:
        """The name with its indefinite article ("a dense index", "an LTR model")."""
        return f"{'an' if self.name[0] in 'aeioAEIO' or self.name.startswith(('LTR', 'HTML')) else 'a'} {self.name}"

    @property
    def directory(self) -> bool:
        return bool(self.manifests)

    def holds_manifest(self, folder: Path) -> bool:
        for name in self.manifests:
            manifest = folder / name
            if not manifest.is_file():
                continue
            if self.format is None:
                return True
            try:
                meta = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(meta, dict) and meta.get(self.format[0]) == self.format[1]:
                return True
        return False

    def foreign(self, folder: Path) -> list[str]:
        """The entries of ``folder`` that its writer does not make (sorted); none when ``own`` is not listed."""
        if self.own is None:
            return []
        return sorted(entry.name for entry in folder.iterdir() if not self.own(entry.name))


def _looks_like_run(path: Path) -> bool:
    """An empty file, or one whose first non-blank line has the six columns of a TREC run."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    for line in head.splitlines():
        if line.strip():
            return len(line.split()) == 6
    return True


def _looks_like_json(path: Path) -> bool:
    """An empty file, or one whose first non-blank character opens a JSON object or list."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    return not head or head[:1] in (b"{", b"[")


#: Any file (a report, a table, an export): replaced when it is a file, never when it is a folder.
FILE = Kind("file")
#: A TREC run (``qid Q0 docid rank score tag``), with its side files.
RUN = Kind("TREC run", looks_like=_looks_like_run)
#: A JSON document (results of an evaluation).
JSON = Kind("JSON document", looks_like=_looks_like_json)
#: The files a run writer derives from its run's name (``hybrid.core.formats.runs.write_run_set``).
RUN_SIDES = ("{name}.meta.json", ".{name}.lock")


@dataclass(frozen=True)
class Output:
    """One path a command writes. ``sides``: name templates (``{name}`` = this path's name) of the files its
    writer derives from it, in the same folder; ``replace``: an existing output of the same kind is replaced
    without ``--overwrite`` (runs, reports, a training checkpoint the command resumes from)."""

    option: str
    path: PathLike | None
    kind: Kind = FILE
    sides: tuple[str, ...] = ()
    replace: bool = False


@dataclass(frozen=True)
class Input:
    """One path a command reads. ``sides``: its side files (name templates, as :class:`Output`'s), protected
    too where they exist; ``keeps``: names inside this input folder where outputs belong (``dense`` inside a
    hybrid index)."""

    option: str
    path: PathLike | None
    sides: tuple[str, ...] = ()
    keeps: tuple[str, ...] = ()


def run_output(option: str, path: PathLike | None) -> Output:
    """A TREC run written with its meta and lock (``write_run_set``); an earlier run there is replaced."""
    return Output(option, path, RUN, RUN_SIDES, replace=True)


def run_input(option: str, path: PathLike | None) -> Input:
    """A TREC run read, with its meta and lock."""
    return Input(option, path, RUN_SIDES)


def _sides(path: Path, templates: Iterable[str]) -> list[Path]:
    return [path.with_name(t.format(name=path.name)) for t in templates]


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _same(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return _real(a) == _real(b)


@dataclass
class Writes:
    """A command's outputs and inputs, and the options that decide what may be replaced."""

    command: str
    outputs: list[Output]
    inputs: list[Input] = field(default_factory=list)
    overwrite: bool = False
    overwrite_all: bool = False
    #: the option that allows deleting foreign entries (``--overwrite-all``), named in the refusal
    overwrite_all_option: str = "--overwrite-all"

    def check(self) -> None:
        """Refuse, before any work starts, every output that would destroy an input or data not its own."""
        outputs = [(o, Path(o.path)) for o in self.outputs if o.path]
        written: list[tuple[str, Path]] = []
        for output, path in outputs:
            written.append((output.option, path))
            written += [(f"{output.option} side file {side.name}", side) for side in _sides(path, output.sides)]
        protected = [(i, Path(i.path)) for i in self.inputs if i.path]
        read: list[tuple[Input, str, Path]] = []
        for source, path in protected:
            read.append((source, source.option, path))
            read += [(source, f"{source.option} side file {side.name}", side) for side in _sides(path, source.sides)]
        read = [(s, name, p) for s, name, p in read if os.path.lexists(p)]
        for i, (name, path) in enumerate(written):
            for other, earlier in written[:i]:
                if _same(path, earlier):
                    raise InputError(path, None, f"{name} and {other} name the same file; give each its own")
            for source, what, existing in read:
                _check_against(name, path, source, what, existing)
        for output, path in outputs:
            self._check_existing(output, path)

    def _check_existing(self, output: Output, path: Path) -> None:
        if not os.path.lexists(path):
            return
        kind, option = output.kind, output.option
        if kind.directory:
            if path.is_symlink() or not path.is_dir():
                raise InputError(path, None, f"exists and is not a directory; --overwrite replaces only {kind.a}")
            if not (self.overwrite or output.replace):
                raise OutputExistsError(path, None, "already exists (pass --overwrite to replace it)")
            if not any(path.iterdir()):
                return
            if not kind.holds_manifest(path):
                raise InputError(path, None, f"is not {kind.a} (no {kind.manifests[0]}) and not empty; "
                                             f"--overwrite replaces only {kind.a}: remove the directory yourself "
                                             f"or choose another {option}")
            foreign = kind.foreign(path)
            if foreign and not self.overwrite_all:
                raise InputError(path, None, f"holds {', '.join(foreign[:8])}, which {self.command} did not write; "
                                             f"--overwrite would delete them: move them out of the folder, or pass "
                                             f"{self.overwrite_all_option} to delete them too")
            if output.replace and not self.overwrite:
                return
            everything = sorted(entry.name for entry in path.iterdir())
            if (self.command, str(path), tuple(everything)) in _ANNOUNCED:  # the library checks again: say it once
                return
            _ANNOUNCED.add((self.command, str(path), tuple(everything)))
            log.warning("%s: replacing the %s %s (deletes %s once the new one is complete)", self.command, kind.name,
                        path, ", ".join(everything[:12]) + (" ..." if len(everything) > 12 else ""))
            return
        if path.is_dir():
            raise InputError(path, None, "is a directory; give the name of a file to write")
        if not (self.overwrite or output.replace):
            raise OutputExistsError(path, None, "already exists (pass --overwrite to replace it)")
        if kind.looks_like is not None and not kind.looks_like(path):
            raise InputError(path, None, f"exists and is not {kind.a}; {option} replaces only {kind.a}: "
                                         f"remove the file yourself or choose another {option}")


def _check_against(name: str, path: Path, source: Input, what: str, existing: Path) -> None:
    """Refuse an output that is the input ``existing``, lies inside it, or contains it."""
    if _same(path, existing):
        raise InputError(path, None, f"{name} is the same file as {what}; refusing to overwrite an input")
    out, into = _real(path), _real(existing)
    if into in out.parents:
        inside = out.relative_to(into).parts[0]
        if what != source.option or inside not in source.keeps:
            raise InputError(path, None, f"{name} is inside {what} ({existing}); refusing to write into an input")
    if out in into.parents:
        raise InputError(path, None, f"{name} contains {what} ({existing}); replacing it would delete an input: "
                                     "write somewhere outside it")


def inputs_of(args: object, names: Iterable[str], runs: Iterable[str] = ()) -> list[Input]:
    """The inputs named by attributes of parsed arguments (``dev_run`` -> ``--dev-run``); those in ``runs``
    are TREC runs, read with their side files. Attributes that are absent or None are left out."""
    runs = set(runs)
    found = []
    for name in names:
        value = getattr(args, name, None)
        if value:
            option = "--" + name.replace("_", "-")
            found.append(run_input(option, value) if name in runs else Input(option, value))
    return found
