"""The bundled ECB+ sample (CC BY 3.0, see LICENSE_ECBplus.TXT) and its index, built on first use."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import features
from features.annotate import AnnotationConfig
from indexes.lucene import FORMAT_VERSION, METADATA, IndexConfig, build_index

HERE = Path(__file__).resolve().parent
#: The name that stands for the bundled sample wherever an index, topics or qrels are named.
SAMPLE = "sample"


@dataclass(frozen=True)
class SamplePaths:
    corpus: Path
    topics: Path
    topics_tsv: Path
    qrels: Path
    judged: Path | None = None  # the curated sentences, which ECB+ judges completely (hybrid.eval --judged)


def sample_paths() -> SamplePaths:
    return SamplePaths(HERE / "corpus.jsonl", HERE / "topics.jsonl", HERE / "topics.tsv", HERE / "qrels.txt",
                       HERE / "judged.txt")


def sample_path(what: str, value: str | Path | None) -> str | Path | None:
    """``value``, or the bundled sample's file when ``value`` is ``"sample"`` (``what``: topics, topics_tsv, qrels,
    corpus, judged)."""
    if value is not None and str(value) == SAMPLE:
        return getattr(sample_paths(), what)
    return value


def cache_dir() -> Path:
    root = os.environ.get("HYBRID_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "hybrid")
    return Path(root)


def sample_index(progress: bool = True) -> Path:
    """Path of the sample's hybrid index, building it (atomically) the first time."""
    corpus = sample_paths().corpus
    annotation = AnnotationConfig()  # the default job sees the sample as raw text (auto annotation)
    # The key covers the annotation config and the annotation code, so an index cached with another
    # config (gold) or by an older annotator is not reused.
    config_key = json.dumps(asdict(annotation), sort_keys=True) + _annotation_code_digest()
    key = hashlib.sha256(corpus.read_bytes() + f"v{FORMAT_VERSION}{config_key}".encode()).hexdigest()[:12]
    path = cache_dir() / f"sample-index-{key}"
    if (path / METADATA).is_file():
        return path
    try:
        build_index(IndexConfig(corpus=str(corpus), annotation=annotation), path, progress=progress)
    except (FileExistsError, OSError):
        if not (path / METADATA).is_file():  # a concurrent build finished first, or a real failure
            raise
    return path


def index_location(path: str | Path, progress: bool = True) -> Path:
    """Where the index named ``path`` lives: ``"sample"`` is the bundled sample's index (built on first use, see
    :func:`sample_index`), anything else is the path itself. Every command's ``--index`` and
    :func:`hybrid.open_index` resolve their index through here, so ``sample`` means the same index everywhere."""
    if str(path) == SAMPLE:
        return sample_index(progress=progress)
    return Path(path)


def _annotation_code_digest() -> str:
    """sha256 of the modules that turn text into mention records (a change there changes the index)."""
    root = Path(features.__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("annotate.py", "detect.py", "arguments.py", "coref.py", "ner.py", "strings.py"):
        path = root / name
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()
