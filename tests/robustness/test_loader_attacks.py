"""The loaders of encoders, readers, TREC runs and topics against truncation, garbage, wrong shapes and foreign
artifacts (issue 36 §3): each case ends in one line naming the file and what to do (an InputError from the
library, exit 2 from the commands), never a traceback and never a silently wrong result.

The tiny artifacts are saved once per module; each case damages a copy. Runs are attacked through the commands
that read them (``hybrid.eval``, ``hybrid.fuse``, ``hybrid.report``), topics through ``hybrid.search``.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from documented import assert_documented

from features.encoder import ENCODER_CONFIG, BiEncoder, EncoderConfig
from hybrid.cli.common import run_cli
from hybrid.core.errors import IndexMissingError, InputError

USER_ERRORS = (InputError, IndexMissingError)  # ConfigError is an InputError


@pytest.fixture(scope="module")
def encoder_dir(tiny_bert, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("enc") / "encoder"
    BiEncoder.load(tiny_bert, EncoderConfig(), device="cpu").save(path)
    return path


@pytest.fixture(scope="module")
def reader_dir(tiny_bert, tmp_path_factory) -> Path:
    from ltr.reader.store import new_reader, save_reader

    path = tmp_path_factory.mktemp("reader") / "reader"
    save_reader(new_reader(tiny_bert), path)
    return path


@pytest.fixture(scope="module")
def foreign(tmp_path_factory, sparse_index, tiny_bert) -> dict[str, Path]:
    """Artifacts of other kinds: an LTR model, a dense index, an empty folder, a file."""
    from indexes.faiss_index import build_dense_index
    from ltr.model import MODEL_FILE

    root = tmp_path_factory.mktemp("foreign")
    (root / "ltr").mkdir()
    (root / "ltr" / MODEL_FILE).write_text(json.dumps({"learner": "linear", "weights": [1.0]}))
    build_dense_index(sparse_index, BiEncoder.load(tiny_bert, device="cpu"), root / "dense", progress=False)
    (root / "empty").mkdir()
    (root / "file.json").write_text("{}\n")
    return {"an LTR model": root / "ltr", "a dense index": root / "dense", "an empty folder": root / "empty",
            "a file": root / "file.json", "a hybrid index": sparse_index.path}


def refused(load: Callable[[], object], where: Path) -> str:
    """Loading fails with a user error whose one-line message names ``where``; returns the message."""
    with pytest.raises(USER_ERRORS) as caught:
        load()
    message = str(caught.value)
    assert str(where) in message and "\n" not in message, message
    return message


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garbage(path: Path) -> None:
    path.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, max(path.stat().st_size, 64), dtype=np.uint8)))


DAMAGE: dict[str, Callable[[Path], None]] = {"truncated": truncate, "garbage": garbage,
                                              "empty": lambda p: p.write_bytes(b""), "missing": Path.unlink}
ENCODER_FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", ENCODER_CONFIG]
READER_FILES = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "reader.json"]


def load_encoder(path: Path):
    return BiEncoder.load(path, device="cpu")


def load_reader(path: Path):
    from ltr.reader.store import load_reader as load

    return load(path, device="cpu")


# -- bi-encoder folders ------------------------------------------------------------------------------------------


def test_the_saved_files_are_the_ones_attacked(encoder_dir, reader_dir):
    assert sorted(p.name for p in encoder_dir.iterdir()) == sorted(ENCODER_FILES)
    assert sorted(p.name for p in reader_dir.iterdir()) == sorted(READER_FILES)


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("part", ENCODER_FILES)
def test_a_damaged_encoder_file_is_refused(encoder_dir, tmp_path, part, damage):
    if (part, damage) == (ENCODER_CONFIG, "missing"):
        pytest.skip("without its description the folder is a plain Hugging Face checkpoint (a training base)")
    copy = shutil.copytree(encoder_dir, tmp_path / "encoder")
    DAMAGE[damage](copy / part)
    refused(lambda: load_encoder(copy), copy)


@pytest.mark.parametrize("change", [lambda m: [m], lambda m: m.update(encoder=[1]), lambda m: m.pop("encoder"),
                                    lambda m: m["encoder"].update(pooling="median"),
                                    lambda m: m.update(fingerprint=7)], ids=["list", "encoder-list", "no-encoder",
                                                                              "pooling", "fingerprint-int"])
def test_an_encoder_description_of_the_wrong_shape_is_refused(encoder_dir, tmp_path, change):
    copy = shutil.copytree(encoder_dir, tmp_path / "encoder")
    meta = json.loads((copy / ENCODER_CONFIG).read_text())
    meta = change(meta) or meta
    (copy / ENCODER_CONFIG).write_text(json.dumps(meta))
    refused(lambda: load_encoder(copy), copy)


def test_a_reader_folder_is_not_an_encoder(reader_dir):
    """A reader holds a BERT (under ``encoder.``) and a config.json: transformers would load it as an encoder of
    random weights with a warning; it must be refused naming the folder."""
    message = refused(lambda: load_encoder(reader_dir), reader_dir)
    assert "holds the weights of another model" in message
    assert_documented("holds the weights of another model")


@pytest.mark.parametrize("kind", ["an LTR model", "a dense index", "an empty folder", "a file", "a hybrid index"])
def test_another_artifact_is_not_an_encoder(foreign, kind):
    with pytest.raises(USER_ERRORS) as caught:
        load_encoder(foreign[kind])
    assert str(foreign[kind]) in str(caught.value) and "\n" not in str(caught.value)


# -- reader folders ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("part", READER_FILES)
def test_a_damaged_reader_file_is_refused(reader_dir, tmp_path, part, damage):
    copy = shutil.copytree(reader_dir, tmp_path / "reader")
    DAMAGE[damage](copy / part)
    refused(lambda: load_reader(copy), copy)


@pytest.mark.parametrize("change", [lambda m: [m], lambda m: m.update(heads=[1]), lambda m: m.update(files=[1]),
                                    lambda m: m.update(kind="hybrid-encoder"), lambda m: m.update(encoding=5)],
                         ids=["list", "heads-list", "files-list", "kind", "encoding-int"])
def test_a_reader_description_of_the_wrong_shape_is_refused(reader_dir, tmp_path, change):
    copy = shutil.copytree(reader_dir, tmp_path / "reader")
    meta = json.loads((copy / "reader.json").read_text())
    meta = change(meta) or meta
    (copy / "reader.json").write_text(json.dumps(meta))
    refused(lambda: load_reader(copy), copy)


@pytest.mark.parametrize("kind", ["an encoder", "an LTR model", "a dense index", "an empty folder", "a file"])
def test_another_artifact_is_not_a_reader(foreign, encoder_dir, kind):
    path = encoder_dir if kind == "an encoder" else foreign[kind]
    with pytest.raises(USER_ERRORS) as caught:
        load_reader(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


# -- TREC runs, through the commands that read them ---------------------------------------------------------------


def run_variants(data_dir: Path) -> dict[str, bytes]:
    run = (data_dir / "tiny_run.trec").read_bytes()
    first = run.splitlines()[0].split()
    return {
        "cut mid-line": run[: len(run) // 2 + 3], "garbage": bytes(np.random.default_rng(0).integers(0, 256, 300,
                                                                                                    dtype=np.uint8)),
        "gzip": gzip.compress(run), "UTF-16": run.decode().encode("utf-16"), "NUL": run.replace(b"\n", b"\0\n", 1),
        "five columns": b" ".join(first[:5]) + b"\n", "seven columns": b" ".join([*first, b"x"]) + b"\n",
        "NaN score": b" ".join([*first[:4], b"nan", first[5]]) + b"\n",
        "rank 1.5": b" ".join([*first[:3], b"1.5", *first[4:]]) + b"\n",
        "qrels": (data_dir / "tiny_qrels.txt").read_bytes(), "topics": (data_dir / "tiny_topics.tsv").read_bytes(),
        "corpus": (data_dir / "tiny_corpus.jsonl").read_bytes(), "a run meta": b'{"run_sha256": "0"}\n',
    }


RUN_READERS = {
    "eval": ("hybrid.eval", lambda ws, run, data: [str(data / "tiny_qrels.txt"), str(run)]),
    "fuse": ("hybrid.fuse", lambda ws, run, data: ["--runs", str(run), str(data / "tiny_run.trec"), "--output",
                                                   str(ws / "fused.trec"), "--quiet"]),
    "report": ("hybrid.report", lambda ws, run, data: ["--run", str(run), "--qrels", str(data / "tiny_qrels.txt"),
                                                       "--topics", str(data / "tiny_topics.tsv"), "--index",
                                                       str(ws / "index"), "--output", str(ws / "r.html")]),
}


def command(module: str, argv: list[str], capsys) -> tuple[int, str]:
    import importlib

    try:
        rc = run_cli(importlib.import_module(module).main, argv)
    except SystemExit as exit:
        rc = exit.code
    return rc, capsys.readouterr().err


def assert_one_line(rc: int, err: str, where: Path) -> None:
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert rc == 2 and len(errors) == 1 and "Traceback" not in err and str(where) in errors[0], err


@pytest.fixture(scope="module")
def run_ws(tmp_path_factory, tiny_index) -> Path:
    ws = tmp_path_factory.mktemp("runs")
    (ws / "index").symlink_to(tiny_index)
    return ws


@pytest.mark.parametrize("reader", RUN_READERS)
@pytest.mark.parametrize("variant", sorted(run_variants(Path(__file__).parents[1] / "data")))
def test_a_bad_run_file_is_one_line(reader, variant, run_ws, data_dir, capsys):
    run = run_ws / f"{variant.replace(' ', '-')}-{reader}.trec"
    run.write_bytes(run_variants(data_dir)[variant])
    module, argv = RUN_READERS[reader]
    assert_one_line(*command(module, argv(run_ws, run, data_dir), capsys), run)


@pytest.fixture(scope="module")
def run_with_meta(tmp_path_factory, data_dir) -> Path:
    from hybrid.core.formats.runs import read_run, write_run_set

    folder = tmp_path_factory.mktemp("meta-run")
    run = folder / "run.trec"
    write_run_set(read_run(data_dir / "tiny_run.trec"), run, "tiny", meta={"note": "written with its meta"})
    return run


@pytest.mark.parametrize("reader", RUN_READERS)
@pytest.mark.parametrize("cut", ["at a line end", "to nothing"])
def test_a_run_cut_short_at_a_line_end_is_refused_by_its_meta(reader, cut, run_with_meta, run_ws, data_dir,
                                                              capsys):
    """A run cut at a line end (or emptied) still parses; the sha256 its meta records is what tells."""
    folder = run_ws / f"cut-{reader}-{cut.replace(' ', '-')}"
    folder.mkdir()
    run = folder / "run.trec"
    shutil.copy(run_with_meta, run)
    shutil.copy(f"{run_with_meta}.meta.json", f"{run}.meta.json")
    lines = run.read_bytes().splitlines(keepends=True)
    run.write_bytes(b"".join(lines[: len(lines) // 2]) if cut == "at a line end" else b"")
    module, argv = RUN_READERS[reader]
    rc, err = command(module, argv(run_ws, run, data_dir), capsys)
    assert_one_line(rc, err, run)
    assert "the run's sha256 differs from the one recorded" in err


def test_a_whole_run_with_its_meta_is_read(run_with_meta):
    from hybrid.core.formats.runs import read_run

    assert read_run(run_with_meta)


# -- topics, through hybrid.search --------------------------------------------------------------------------------


TOPIC_VARIANTS = {
    "jsonl": {"cut mid-line": None, "garbage": b"\x82\x00\xff\x10", "gzip": None, "UTF-16": None, "empty": b"",
              "a list": b"[1, 2]\n", "wrong types": b'{"qid": 5, "text": ["a"]}\n',
              "no mention": b'{"qid": "q1", "text": "no mention here"}\n',
              "span outside": b'{"qid": "q1", "passage_id": "a1:0", "start": 5, "end": 99999}\n',
              "span reversed": b'{"qid": "q1", "passage_id": "a1:0", "start": 5, "end": 2}\n',
              "unknown passage": b'{"qid": "q1", "passage_id": "zz:9", "start": 0, "end": 2}\n',
              "a corpus": "corpus", "a run": "run", "a qrels file": "qrels", "TSV topics": "tsv"},
    "tsv": {"cut mid-mention": None, "garbage": b"\x82\x00\xff\x10", "gzip": None, "UTF-16": None, "empty": b"",
            "no mention": b"q1\tno mention here\n", "unclosed": b"q1\tan <m> open mention\n",
            "duplicate qid": "duplicate", "a corpus": "corpus", "a run": "run", "a qrels file": "qrels",
            "JSONL topics": "jsonl"},
}


def topic_bytes(fmt: str, variant: str, data_dir: Path) -> bytes:
    own = (data_dir / f"tiny_topics.{fmt}").read_bytes()
    value = TOPIC_VARIANTS[fmt][variant]
    files = {"corpus": "tiny_corpus.jsonl", "run": "tiny_run.trec", "qrels": "tiny_qrels.txt",
             "tsv": "tiny_topics.tsv", "jsonl": "tiny_topics.jsonl"}
    if isinstance(value, bytes):
        return value
    if value in files:
        return (data_dir / files[value]).read_bytes()
    if value == "duplicate":
        return own.splitlines(keepends=True)[0] * 2
    if variant == "gzip":
        return gzip.compress(own)
    if variant == "UTF-16":
        return own.decode().encode("utf-16")
    if fmt == "tsv":  # cut inside the second topic's mention
        second = own.splitlines(keepends=True)[1]
        return own.splitlines(keepends=True)[0] + second[: second.index(b"</m>") - 2]
    return own[: len(own) // 2]


CASES = [(fmt, variant) for fmt in TOPIC_VARIANTS for variant in TOPIC_VARIANTS[fmt]]


@pytest.mark.parametrize(("fmt", "variant"), CASES, ids=[f"{f}-{v}" for f, v in CASES])
def test_a_bad_topics_file_is_one_line(fmt, variant, run_ws, data_dir, capsys):
    topics = run_ws / f"{variant.replace(' ', '-')}.{fmt}"
    topics.write_bytes(topic_bytes(fmt, variant, data_dir))
    rc, err = command("hybrid.search", ["--index", str(run_ws / "index"), "--topics", str(topics), "--recipe",
                                        "bm25", "--output", str(run_ws / f"s-{fmt}.trec"), "--quiet"], capsys)
    assert_one_line(rc, err, topics)


def test_tsv_topics_cut_after_the_mention_are_warned_about(tmp_path, data_dir, caplog):
    """Cut after ``</m>`` a TSV line still parses (a JSONL one is broken JSON): the missing line end is told."""
    from hybrid.core.formats.topics import read_topics

    whole = (data_dir / "tiny_topics.tsv").read_bytes()
    cut = tmp_path / "cut.tsv"
    cut.write_bytes(whole[: whole.rindex(b"\t")])  # the last topic without its doc_id
    with caplog.at_level(logging.WARNING):
        topics = read_topics(cut)
    assert topics[-1].doc_id is None
    assert f"{cut}:{len(topics)}: the last line has no line end" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        read_topics(data_dir / "tiny_topics.tsv")
    assert "no line end" not in caplog.text
    assert_documented("the last line has no line end", "the run's sha256 differs from the one recorded")
