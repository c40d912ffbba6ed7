"""python -m hybrid.artifacts: a model set made by prepare on tiny models travels as one file, is verified before it
is placed, and prepares another index without training; damaged, altered and foreign packs are refused."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from prepare_kit import write_labels, write_other_collection, write_recipe, write_search_topics

from features.annotate import LEGACY
from hybrid.cli.artifacts import main as artifacts_main
from hybrid.cli.common import run_cli
from hybrid.cli.prepare import main as prepare_main
from hybrid.cli.search import main as search_main
from hybrid.core.errors import ConfigError
from hybrid.store.models import list_sets
from hybrid.store.pack import PACK_MANIFEST, import_set, packed_files
from indexes.lucene import IndexConfig, build_index


def collection_index(tiny_corpus, folder, prefix):
    corpus = write_other_collection(tiny_corpus, folder / f"{prefix}corpus.jsonl", prefix)
    build_index(IndexConfig(corpus=str(corpus), annotation=LEGACY), folder / f"{prefix}index", progress=False)
    return folder / f"{prefix}index"


@pytest.fixture(scope="module")
def prepared(tiny_corpus, tiny_bert, tmp_path_factory):
    """A set made by prepare (trained on the labelled tiny corpus, applied to an 'a-' collection), exported."""
    folder = tmp_path_factory.mktemp("made")
    corpus, topics, qrels = write_labels(tiny_corpus, folder / "labels")
    recipe = write_recipe(folder)
    index = collection_index(tiny_corpus, folder, "a-")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYBRID_CACHE", str(folder / "cache"))
        patch.delenv("HYBRID_ARTIFACTS", raising=False)
        assert prepare_main([str(recipe), "--index", str(index), "--train", str(corpus), "--train-topics",
                             str(topics), "--train-qrels", str(qrels), "--dense-base", str(tiny_bert),
                             "--dense-steps", "2", "--quiet", "--threads", "1"]) == 0
        (model_set,) = list_sets(folder / "cache" / "models")
        pack = folder / "set.tar"
        assert artifacts_main(["export", model_set.key[:6], "--output", str(pack)]) == 0
    return {"set": model_set, "pack": pack, "recipe": recipe}


def rewritten(pack, target, change):
    """A copy of ``pack`` with ``change(name, data) -> [(name, data), ...]`` applied to every member."""
    with tarfile.open(pack) as source, tarfile.open(target, "w") as out:
        for member in source:
            for name, data in change(member.name, source.extractfile(member).read()):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
    return target


def test_export_import_and_prepare_another_index_without_training(prepared, tiny_corpus, tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.setenv("HYBRID_CACHE", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("HYBRID_ARTIFACTS", raising=False)
    assert artifacts_main(["import", str(prepared["pack"])]) == 0
    placed = json.loads(capsys.readouterr().out)
    assert placed["new"] and placed["key"] == prepared["set"].key
    imported = Path(placed["imported"])
    assert (imported / "dense" / "encoder" / "model.safetensors").is_file()
    for rel in packed_files(prepared["set"]):
        assert (imported / rel).read_bytes() == (prepared["set"].path / rel).read_bytes()
    assert artifacts_main(["import", str(prepared["pack"])]) == 0  # the same set again: kept as it is
    assert json.loads(capsys.readouterr().out)["new"] is False
    assert artifacts_main(["list", "--json"]) == 0
    assert [s["key"] for s in json.loads(capsys.readouterr().out)] == [prepared["set"].key]
    # the imported set prepares a new collection: only its dense index is built, nothing is trained
    index = collection_index(tiny_corpus, tmp_path, "b-")
    assert prepare_main([str(prepared["recipe"]), "--index", str(index), "--models", placed["key"][:8],
                         "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["made"] == ["dense-index"]
    run = tmp_path / "b.trec"
    topics = write_search_topics(tmp_path / "topics.jsonl", "b-")
    assert search_main(["--index", str(index), "--recipe", str(prepared["recipe"]), "--topics", str(topics),
                        "--output", str(run), "--quiet"]) == 0
    assert run.read_text().splitlines() and all(" b-" in line for line in run.read_text().splitlines())


def altered_byte(name, data):
    if name.endswith("model.safetensors"):
        data = data[:-1] + bytes([data[-1] ^ 1])
    return [(name, data)]


@pytest.mark.parametrize("change, message", [
    (altered_byte, "differs from the pack's manifest"),
    (lambda name, data: [(name, data)] + ([("extra.txt", b"x")] if name == PACK_MANIFEST else []),
     "which its manifest does not list"),
    (lambda name, data: [] if name.endswith("ltr-model.json") else [(name, data)], "which its manifest lists"),
    (lambda name, data: [("../evil" if name.endswith("ltr-model.json") else name, data)], "not a plain file"),
    (lambda name, data: [] if name == PACK_MANIFEST else [(name, data)], "does not start with pack.json"),
])
def test_altered_packs_are_refused_and_nothing_is_placed(prepared, tmp_path, change, message):
    bad = rewritten(prepared["pack"], tmp_path / "bad.tar", change)
    with pytest.raises(ConfigError, match=message):
        import_set(bad, tmp_path / "store")
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())


def test_a_foreign_file_is_one_line_and_exit_2(tmp_path, capsys):
    foreign = tmp_path / "notes.tar"
    foreign.write_bytes(b"these are not model weights\n" * 40)
    assert run_cli(artifacts_main, ["import", str(foreign), "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a model-set pack" in err[0]
    assert not (tmp_path / "store").exists()


def test_export_never_writes_inside_the_set_it_packs(prepared, capsys):
    """Issue 36 §1: a pack written into the model set it packs would change the set while it is read (and be
    packed into later exports); refused in one line before anything is written."""
    target = Path(prepared["set"].path) / "set.tar"
    code = run_cli(artifacts_main, ["export", str(prepared["set"].path), "--output", str(target)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "the model set" in err[0]
    assert not target.exists()
