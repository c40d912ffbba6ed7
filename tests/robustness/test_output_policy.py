"""One output policy (issue 36 §1): no command that writes destroys an input or data that is not its own.

Every writer is run in-process (its ``main(argv)`` under ``run_cli``) with its output pointed at each kind of
thing it must never replace: an input file, an input folder, a folder holding an input, a path inside an input
folder, a symbolic link to an input, a foreign non-empty folder (with ``--overwrite``) and an artifact of
another kind (with ``--overwrite``). Each must be refused with one line and exit 2 before any work starts,
and every file of the workspace must be left exactly as it was.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from documented import assert_documented

from hybrid.cli.common import run_cli
from hybrid.core.errors import InputError
from hybrid.core.outputs import RUN, Input, Kind, Output, Writes, run_input, run_output

RUN_LINE = "q1 Q0 a:0 1 1.0 t\n"


@pytest.fixture
def ws(tmp_path, tiny_index, tiny_corpus, data_dir) -> Path:
    """A workspace: the inputs under data/, a copy of the tiny index under index/, and artifacts of each kind."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(tiny_corpus, data / "corpus.jsonl")
    shutil.copy(data_dir / "tiny_topics.tsv", data / "topics.tsv")
    shutil.copy(data_dir / "tiny_qrels.txt", data / "qrels.txt")
    for name in ("run.trec", "run2.trec"):
        (data / name).write_text(RUN_LINE)
        (data / f"{name}.meta.json").write_text("{}\n")
    (data / "judged.txt").write_text("a:0\n")
    (data / "items.tsv").write_text("item\tcoreferent\tnote\tquery\tquery_lead\thit\thit_lead\n")
    (data / "answers.tsv").write_text("item\tcoreferent\tnote\n")
    (data / "results.json").write_text('{"note": "an evaluation"}\n')
    shutil.copytree(tiny_index, tmp_path / "index")
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.tex").write_text("years of work\n")
    for kind, manifest in (("dense", "dense-index.json"), ("ltr", "ltr-model.json"), ("encoder", "hybrid-encoder.json"),
                           ("reader", "reader.json")):
        folder = tmp_path / "artifacts" / kind
        folder.mkdir(parents=True)
        (folder / manifest).write_text(json.dumps({"kind": "hybrid-reader" if kind == "reader" else kind}) + "\n")
        (folder / "weights.bin").write_bytes(b"\0" * 16)
    return tmp_path


def snapshot(root: Path) -> dict[str, object]:
    """Every file (bytes), folder and link (target) under ``root``."""
    found: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = ("link", os.readlink(path))
        elif path.is_dir():
            found[key] = "dir"
        else:
            found[key] = path.read_bytes()
    return found


@dataclass
class Writer:
    """A command that writes: its main, the argv for an output (``{ws}`` = the workspace), and what it reads."""

    name: str
    module: str
    argv: Callable[[Path, str], list[str]]
    overwrite: bool  # has --overwrite
    file_input: str  # an input file it reads (relative to the workspace)
    dir_input: str | None = "index"  # an input folder it reads
    other_kind: str | None = None  # an artifact of another kind its output may not replace
    output_dir: bool = False  # writes named files into a folder it does not replace

    def main(self):
        return importlib.import_module(self.module).main


def d(ws: Path, name: str) -> str:
    return str(ws / "data" / name)


COMMON_LTR = lambda ws: ["--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"),  # noqa: E731
                         "--run", d(ws, "run.trec")]

WRITERS = [
    Writer("index", "hybrid.index", lambda ws, out: ["--corpus", d(ws, "corpus.jsonl"), "--index", out, "--quiet"],
           True, "data/corpus.jsonl", None, "artifacts/dense"),
    Writer("index_dense", "hybrid.index_dense", lambda ws, out: ["--index", str(ws / "index"), "--output", out,
                                                                 "--quiet"], True, "index/hybrid-index.json",
           other_kind="artifacts/ltr"),
    Writer("train_dense", "hybrid.train_dense",
           lambda ws, out: ["--index", str(ws / "index"), "--corpus", d(ws, "corpus.jsonl"), "--topics",
                            d(ws, "topics.tsv"), "--output", out, "--quiet"], True, "data/topics.tsv",
           other_kind="artifacts/reader"),
    Writer("ltr train", "hybrid.ltr", lambda ws, out: ["train", *COMMON_LTR(ws), "--qrels", d(ws, "qrels.txt"),
                                                       "--output", out, "--quiet"], True, "data/run.trec",
           other_kind="artifacts/dense"),
    Writer("ltr rerank", "hybrid.ltr", lambda ws, out: ["rerank", *COMMON_LTR(ws), "--model", str(ws / "artifacts/ltr"),
                                                        "--output", out], False, "data/run.trec",
           other_kind="data/results.json"),
    Writer("ltr export", "hybrid.ltr", lambda ws, out: ["export", *COMMON_LTR(ws), "--output", out], False,
           "data/run.trec"),
    Writer("recipe_train", "hybrid.recipe_train",
           lambda ws, out: [d(ws, "recipe.toml"), "--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"),
                            "--qrels", d(ws, "qrels.txt"), "--artifacts", str(ws)], True, "data/qrels.txt",
           other_kind="artifacts/dense"),
    Writer("reader train", "hybrid.reader",
           lambda ws, out: ["train", "--pool", str(ws / "pool.jsonl"), "--index", str(ws / "index"), "--corpus",
                            d(ws, "corpus.jsonl"), "--queries", d(ws, "topics.tsv"), "--output", out],
           True, "data/corpus.jsonl", other_kind="artifacts/encoder"),
    Writer("reader rerank", "hybrid.reader",
           lambda ws, out: ["rerank", "--model", str(ws / "artifacts/reader"), "--run", d(ws, "run.trec"),
                            "--topics", d(ws, "topics.tsv"), "--index", str(ws / "index"), "--output", out],
           False, "data/topics.tsv", other_kind="data/results.json"),
    Writer("collect run", "hybrid.cli.collect",
           lambda ws, out: ["run", "--corpus", d(ws, "corpus.jsonl"), "--name", "x", "--output", out, "--no-progress"],
           False, "data/corpus.jsonl", None, "data/results.json"),
    Writer("collect train", "hybrid.cli.collect",
           lambda ws, out: ["train", "--index", str(ws / "index"), "--events", d(ws, "topics.tsv"), "--qrels",
                            d(ws, "qrels.txt"), "--output", out, "--no-progress"], True, "data/qrels.txt",
           other_kind="artifacts/ltr"),
    Writer("search", "hybrid.search", lambda ws, out: ["--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"),
                                                       "--output", out, "--quiet"], False, "data/topics.tsv",
           other_kind="data/results.json"),
    Writer("fuse", "hybrid.fuse", lambda ws, out: ["--runs", d(ws, "run.trec"), d(ws, "run2.trec"), "--output", out,
                                                   "--quiet"], False, "data/run2.trec", None, "data/results.json"),
    Writer("report", "hybrid.report", lambda ws, out: ["--run", d(ws, "run.trec"), "--qrels", d(ws, "qrels.txt"),
                                                       "--topics", d(ws, "topics.tsv"), "--index", str(ws / "index"),
                                                       "--output", out], False, "data/qrels.txt",
           other_kind="data/run2.trec"),
    Writer("experiment", "hybrid.experiment",
           lambda ws, out: ["--topics", d(ws, "topics.tsv"), "--qrels", d(ws, "qrels.txt"), "--recipes", "bm25",
                            "--index", str(ws / "index"), "--output-dir", out], False, "data/topics.tsv",
           output_dir=True),
    Writer("compare", "hybrid.compare", lambda ws, out: [d(ws, "run.trec"), d(ws, "run2.trec"), "--qrels",
                                                         d(ws, "qrels.txt"), "--output-dir", out], False,
           "data/run.trec", None, output_dir=True),
    Writer("fewshot", "hybrid.fewshot", lambda ws, out: ["--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"),
                                                         "--qrels", d(ws, "qrels.txt"), "--output", out], False,
           "data/qrels.txt", other_kind="data/run2.trec"),
    Writer("pool make", "hybrid.pool",
           lambda ws, out: ["make", "--runs", f"a={d(ws, 'run.trec')}", "--qrels", d(ws, "qrels.txt"), "--judged",
                            d(ws, "judged.txt"), "--topics", d(ws, "topics.tsv"), "--corpus", d(ws, "corpus.jsonl"),
                            "--output-dir", out], True, "data/judged.txt", None, output_dir=True),
    Writer("pool merge", "hybrid.pool",
           lambda ws, out: ["merge", "--items", d(ws, "items.tsv"), "--answers", d(ws, "answers.tsv"), "--output", out],
           False, "data/answers.tsv", None),
]

#: The policy's reasons (hybrid.core.outputs), and argparse's check of a file option that is a folder.
REFUSALS = ("refusing to overwrite an input", "refusing to write into an input", "would delete an input",
            "name the same file", "already exists (pass --overwrite", "and not empty; --overwrite replaces only",
            "exists and is not a", "is a directory; give the name of a file", "did not write")

CASES = ("input file", "input folder", "folder holding an input", "inside an input folder", "link to an input",
         "foreign folder", "another kind")


def target(writer: Writer, case: str, ws: Path) -> Path | None:
    """The output path of ``case`` (None when the case does not apply to this writer)."""
    if case == "input file":
        return ws / writer.file_input
    if case == "input folder":
        return ws / writer.dir_input if writer.dir_input else None
    if case == "folder holding an input":  # a folder that receives named files may hold inputs beside them
        return None if writer.output_dir else ws / "data"
    if case == "inside an input folder":
        return ws / writer.dir_input / "new" if writer.dir_input else None
    if case == "link to an input":
        link = ws / "link"
        link.symlink_to(ws / writer.file_input)
        return link
    if case == "foreign folder":
        return None if writer.output_dir else ws / "thesis"
    return ws / writer.other_kind if writer.other_kind else None


def recipe(ws: Path, output: Path) -> None:
    """The recipe recipe_train trains: its ltr model goes to ``output`` (relative to --artifacts = the workspace)."""
    model = os.path.relpath(output, ws) if output.resolve() != ws.resolve() else "."
    (ws / "data" / "recipe.toml").write_text(
        'name = "r"\n[system]\ntype = "pipeline"\nfirst = "bm25"\n'
        f'rerankers = [{{type = "ltr", model = "{model}", featureset = "default", learner = "logistic"}}]\n')


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("writer", WRITERS, ids=[w.name for w in WRITERS])
def test_every_writer_refuses_to_destroy(writer: Writer, case: str, ws: Path, capsys) -> None:
    output = target(writer, case, ws)
    if output is None:
        pytest.skip(f"{writer.name} has no {case} to write over")
    if writer.name == "recipe_train":
        recipe(ws, output)
    before = snapshot(ws)
    argv = writer.argv(ws, str(output)) + (["--overwrite"] if writer.overwrite else [])
    try:
        rc = run_cli(writer.main(), argv)
    except SystemExit as exit:  # argparse's own check of a file option (``output_file``): a usage error
        rc = exit.code
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len([line for line in err.splitlines() if "error: " in line]) == 1 and "Traceback" not in err, err
    assert any(reason in err for reason in REFUSALS), err  # refused by the policy, not by a later failure
    assert snapshot(ws) == before


# -- the reproductions, one by one ----------------------------------------------------------------------


def refused(main, argv: list[str], capsys, fragment: str) -> None:
    rc = run_cli(main, argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and fragment in err, err


def test_index_overwrite_keeps_what_the_index_did_not_write(ws, tiny_corpus, capsys):
    from hybrid.cli.index import main

    index = ws / "index"
    (index / "dense").mkdir()
    (index / "dense" / "dense-index.json").write_text("{}\n")
    (index / "notes.txt").write_text("mine\n")
    before = snapshot(ws)
    refused(main, ["--corpus", str(tiny_corpus), "--index", str(index), "--overwrite", "--quiet"], capsys,
            "holds dense, notes.txt, which hybrid.index did not write; --overwrite would delete them")
    assert snapshot(ws) == before
    assert_documented("which hybrid.index did not write; --overwrite would delete them: move them out of the "
                      "folder, or pass --overwrite-all to delete them too")
    refused(main, ["--corpus", str(tiny_corpus), "--index", str(index), "--overwrite-all", "--quiet"], capsys,
            "--overwrite-all goes with --overwrite")


def test_index_overwrite_all_replaces_the_whole_folder(ws, tiny_corpus, caplog):
    from hybrid.cli.index import main

    index = ws / "index"
    (index / "notes.txt").write_text("mine\n")
    assert main(["--corpus", str(tiny_corpus), "--index", str(index), "--overwrite", "--overwrite-all",
                 "--quiet"]) == 0
    assert not (index / "notes.txt").exists() and (index / "hybrid-index.json").is_file()
    assert "deletes hybrid-index.json, mentions, notes.txt, passages" in caplog.text  # told before it happens


def test_index_dense_may_write_into_its_own_place_in_the_index(ws):
    from hybrid.cli.index_dense import parser, writes

    index = ws / "index"
    writes(parser().parse_args(["--index", str(index)]), index).check()  # <index>/dense: no error
    with pytest.raises(InputError, match=r"--output is inside --index .*; refusing to write into an input"):
        writes(parser().parse_args(["--index", str(index), "--output", str(index / "passages")]), index).check()
    assert_documented("; refusing to write into an input")


def test_index_dense_refuses_the_corpus_folder_its_index_records(ws, capsys):
    from hybrid.cli.index_dense import main

    corpus_dir = Path(json.loads((ws / "index/hybrid-index.json").read_text())["config"]["corpus"]).parent
    before = snapshot(corpus_dir)
    refused(main, ["--index", str(ws / "index"), "--output", str(corpus_dir), "--overwrite"], capsys,
            "--output contains the index's corpus")
    assert snapshot(corpus_dir) == before


def test_recipe_train_refuses_to_replace_a_dense_index(ws, capsys):
    """A recipe whose ltr model is "dense/index" (a dense index there) must not delete that index."""
    from hybrid.cli.recipe_train import main

    (ws / "dense").mkdir()
    shutil.copytree(ws / "artifacts" / "dense", ws / "dense" / "ecbplus")
    recipe(ws, ws / "dense" / "ecbplus")
    before = snapshot(ws)
    refused(main, [d(ws, "recipe.toml"), "--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"), "--qrels",
                   d(ws, "qrels.txt"), "--artifacts", str(ws), "--overwrite"], capsys,
            "is not an LTR model (no ltr-model.json) and not empty; --overwrite replaces only an LTR model")
    assert snapshot(ws) == before


def test_search_refuses_an_output_in_the_index_and_the_recipe(ws, capsys):
    from hybrid.cli.search import main

    (ws / "data" / "r.toml").write_text('name = "r"\n[system]\ntype = "bm25"\n')
    before = snapshot(ws)
    refused(main, ["--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"), "--output",
                   str(ws / "index" / "hybrid-index.json"), "--quiet"], capsys, "is inside --index")
    refused(main, ["--index", str(ws / "index"), "--topics", d(ws, "topics.tsv"), "--recipe", d(ws, "r.toml"),
                   "--output", d(ws, "r.toml"), "--quiet"], capsys, "--output is the same file as --recipe")
    assert snapshot(ws) == before


def test_fuse_refuses_the_meta_of_an_input_run(ws, capsys):
    from hybrid.cli.fuse import main

    before = snapshot(ws)
    refused(main, ["--runs", d(ws, "run.trec"), d(ws, "run2.trec"), "--output", d(ws, "run.trec.meta.json")], capsys,
            "--output is the same file as --runs")
    assert snapshot(ws) == before


def test_report_collect_and_export_refuse_their_inputs(ws, capsys):
    from hybrid.cli.collect import main as collect
    from hybrid.cli.ltr import main as ltr
    from hybrid.cli.report import main as report

    before = snapshot(ws)
    refused(report, ["--run", d(ws, "run.trec"), "--qrels", d(ws, "qrels.txt"), "--topics", d(ws, "topics.tsv"),
                     "--index", str(ws / "index"), "--output", d(ws, "qrels.txt")], capsys,
            "--output is the same file as --qrels")
    refused(collect, ["run", "--corpus", d(ws, "corpus.jsonl"), "--name", "x", "--output", d(ws, "corpus.jsonl")],
            capsys, "--output is the same file as --corpus")
    refused(ltr, ["export", *COMMON_LTR(ws), "--output", d(ws, "run.trec")], capsys,
            "--output is the same file as --run")
    assert snapshot(ws) == before


# -- what is still allowed ----------------------------------------------------------------------------------------


def test_a_run_replaces_an_earlier_run_but_not_another_file(ws, tiny_index, data_dir, capsys):
    from hybrid.cli.search import main

    out = ws / "out.trec"
    out.write_text(RUN_LINE)
    argv = ["--index", str(tiny_index), "--topics", str(data_dir / "tiny_topics.tsv"), "--hits", "2", "--model", "bm25",
            "--quiet"]
    assert main([*argv, "--output", str(out)]) == 0 and out.read_text() != RUN_LINE
    capsys.readouterr()
    refused(main, [*argv, "--output", d(ws, "results.json")], capsys,
            "exists and is not a TREC run; --output replaces only a TREC run")
    assert_documented("exists and is not a TREC run; --output replaces only a TREC run")


def test_the_policy_replaces_its_own_kind_and_empty_folders(tmp_path):
    kind = Kind("thing", manifests=("thing.json",))
    own = tmp_path / "own"
    own.mkdir()
    (own / "thing.json").write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    for path in (own, empty, tmp_path / "new"):
        Writes("t", [Output("--output", path, kind)], overwrite=True).check()
    with pytest.raises(InputError, match=r"already exists \(pass --overwrite to replace it\)"):
        Writes("t", [Output("--output", own, kind)]).check()
    with pytest.raises(InputError, match="exists and is not a directory; --overwrite replaces only a thing"):
        (tmp_path / "file").write_text("x")
        Writes("t", [Output("--output", tmp_path / "file", kind)], overwrite=True).check()
    assert_documented("already exists (pass --overwrite to replace it)", "exists and is not a directory; --overwrite "
                      "replaces only a hybrid index", "is not a hybrid index (no hybrid-index.json) and not empty")


def test_a_kind_with_a_generic_manifest_checks_its_format(tmp_path):
    from hybrid.collect.ltr import EVENT_MODEL

    other = tmp_path / "m"
    other.mkdir()
    (other / "model.json").write_text('{"format": "something-else"}')
    with pytest.raises(InputError, match="is not an event-collection model"):
        Writes("t", [Output("--output", other, EVENT_MODEL)], overwrite=True).check()
    (other / "model.json").write_text('{"format": "hybrid-eventcoll-ltr"}')
    Writes("t", [Output("--output", other, EVENT_MODEL)], overwrite=True).check()


def test_side_files_and_hard_links_count(tmp_path):
    run = tmp_path / "a.trec"
    run.write_text(RUN_LINE)
    (tmp_path / ".a.trec.lock").write_text("")
    with pytest.raises(InputError, match="--output is the same file as --run side file .a.trec.lock"):
        Writes("t", [run_output("--output", tmp_path / ".a.trec.lock")], [run_input("--run", run)]).check()
    out = tmp_path / "b.trec"
    with pytest.raises(InputError, match="--output side file b.trec.meta.json is the same file as --topics"):
        (tmp_path / "b.trec.meta.json").hardlink_to(run)
        Writes("t", [run_output("--output", out)], [Input("--topics", run)]).check()
    with pytest.raises(InputError, match="--spans and --output name the same file"):
        Writes("t", [Output("--output", out, RUN), Output("--spans", tmp_path / "." / "b.trec")]).check()


def test_every_refusal_is_documented():
    assert_documented("is the same file as --topics; refusing to overwrite an input",
                      "replacing it would delete an input: write somewhere outside it",
                      "is a directory; give the name of a file to write", "name the same file; give each its own")


OWN_KIND = {"index_dense": "artifacts/dense", "train_dense": "artifacts/encoder", "ltr train": "artifacts/ltr",
            "reader train": "artifacts/reader"}


@pytest.mark.parametrize("name", sorted(OWN_KIND))
def test_a_model_is_replaced_only_with_overwrite(name, ws, capsys):
    """Without --overwrite an existing artifact, even of the command's own kind, is kept (train_dense and reader
    train replaced it silently before)."""
    writer = next(w for w in WRITERS if w.name == name)
    before = snapshot(ws)
    refused(writer.main(), writer.argv(ws, str(ws / OWN_KIND[name])), capsys,
            "already exists (pass --overwrite to replace it)")
    assert snapshot(ws) == before


def test_resuming_a_training_replaces_its_own_output(ws):
    from hybrid.cli.train_dense import parser, writes

    output = ws / "artifacts" / "encoder"
    train_dense = next(w for w in WRITERS if w.name == "train_dense")
    args = parser().parse_args(train_dense.argv(ws, str(output)))
    with pytest.raises(InputError, match="already exists"):
        writes(args).check()
    (ws / "artifacts" / "encoder-checkpoint").mkdir()
    (ws / "artifacts" / "encoder-checkpoint" / "trainer-state.json").write_text("{}")
    writes(args).check()  # the interrupted run's own encoder and checkpoint
    args.no_resume = True
    with pytest.raises(InputError, match="already exists"):
        writes(args).check()


def test_saving_a_reader_or_an_encoder_keeps_an_existing_folder(tiny_bert, tmp_path):
    """The library's defaults are safe: replacing needs overwrite=True."""
    from features.encoder import BiEncoder
    from ltr.reader.store import new_reader, save_reader

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "thesis.tex").write_text("years of work\n")
    with pytest.raises(FileExistsError):
        save_reader(new_reader(tiny_bert), taken)
    with pytest.raises(FileExistsError):
        BiEncoder.load(tiny_bert, device="cpu").save(taken)
    assert (taken / "thesis.tex").read_text() == "years of work\n"
