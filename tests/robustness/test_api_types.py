"""The Python API refuses values of the wrong type with a TypeError / InputError that says what it takes, instead
of an AttributeError deep inside (or, for qrels given as a dict, a silently wrong score)."""

from __future__ import annotations

import pytest
from documented import assert_documented

import hybrid
from hybrid.core.errors import InputError
from hybrid.core.records import Hit


@pytest.fixture(scope="module")
def bm25(sparse_index):
    return hybrid.system({"type": "bm25"}, index=sparse_index)


@pytest.mark.parametrize("topics", [[1, 2], [None], [b"q"]])
def test_search_refuses_what_is_not_a_topic(bm25, topics):
    with pytest.raises(TypeError, match=r"topics\[0\] must be a Topic"):
        bm25.search(topics)


@pytest.mark.parametrize("hits, fragment", [(123, "takes a mapping"), ({"q": [1]}, "must be hybrid.Hit objects"),
                                            ({1: []}, "str query ids"), ({"q": "d1"}, "str query ids")])
def test_run_refuses_what_is_not_a_run(hits, fragment):
    with pytest.raises(TypeError, match=fragment):
        hybrid.Run(hits)


def test_evaluate_refuses_a_missing_run():
    with pytest.raises(TypeError, match="run must be a hybrid.Run"):
        hybrid.evaluate(None, {"q": {"d": 1}})


@pytest.mark.parametrize("qrels", [{"q": {"d": 1.5}}, {"q": {"d": "1"}}, {"q": {"d": True}}])
def test_evaluate_refuses_relevance_that_is_not_an_integer(qrels):
    run = hybrid.Run({"q": [Hit("d", 1.0)]})
    with pytest.raises(InputError, match="is not an integer"):
        hybrid.evaluate(run, qrels)
    assert_documented("relevance 1.5 is not an integer")


def test_evaluate_refuses_qrels_of_another_type():
    with pytest.raises(TypeError, match="qrels must be"):
        hybrid.evaluate(hybrid.Run({"q": [Hit("d", 1.0)]}), 7)


@pytest.mark.parametrize("relevance", ["1.5", "1_0", "\u0661", "1e0"])
def test_the_qrels_file_refuses_relevance_that_is_not_an_integer(tmp_path, relevance):
    """int() would read '1_0' as 10 and the Arabic-Indic digit one as 1: silently other judgments."""
    from hybrid.core.formats.qrels import read_qrels

    path = tmp_path / "q.txt"
    path.write_text(f"q 0 a 1\nq 0 d {relevance}\n", encoding="utf-8")
    with pytest.raises(InputError, match="is not an integer") as caught:
        read_qrels(path)
    assert f"{path}:2" in str(caught.value)


def test_writing_a_run_to_a_directory_is_refused_and_leaves_nothing(tmp_path):
    run = hybrid.Run({"q": [Hit("d", 1.0)]})
    folder = tmp_path / "dir"
    folder.mkdir()
    for target in (folder, f"{folder}/", str(tmp_path / "new") + "/"):
        with pytest.raises(InputError, match="is a directory"):
            run.write(target)
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["dir"]
    assert_documented("Run.write() path names a file to write")
