"""Fuzz every input parser with mutated files: the only acceptable failure is a clear InputError.

Valid seed files of each format (corpus JSONL, topics TSV and JSONL, qrels, runs, TOML configs) are
mutated at the byte level (flips, inserted tabs/newlines/NULs/invalid UTF-8/markers, deleted,
duplicated or swapped spans and lines) and at the JSON level (values replaced by other types, keys
dropped, misspelt or added, offsets moved), then read by the real parser. Outcomes:

* ``ok``: parsed; the result must satisfy the format's invariants (offsets inside the text and
  matching the mention, one clean mention per topic, ids without whitespace, finite scores, runs
  that round-trip through write_run);
* ``rejected``: :class:`~hybrid.core.errors.InputError` naming the file;
* ``crash``: anything else (or a broken invariant) - a bug.

Usage::

    python tests/robustness/fuzz_parsers.py --cases 20000 --seed 0 [--report benchmarks/results/robustness.md]

The test suite runs the same engine on a few thousand cases (test_fuzz_parsers.py, beside this file).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hybrid.core.errors import InputError
from hybrid.core.formats.config import load_config
from hybrid.core.formats.corpus import read_corpus
from hybrid.core.formats.qrels import read_qrels
from hybrid.core.formats.runs import read_run, write_run
from hybrid.core.formats.topics import CLOSE, OPEN, read_topics

PASSAGES = {"a:0": "Tara Reid entered rehab on Tuesday.", "b:1": "The quake hit Yushu."}

SEEDS: dict[str, list[str]] = {
    "corpus.jsonl": [
        json.dumps({"id": "a:0", "doc_id": "a", "sent_id": 0, "text": PASSAGES["a:0"], "topic": 1,
                    "mentions": [{"start": 0, "end": 9, "text": "Tara Reid", "kind": "entity", "chain": "a#c0"},
                                 {"start": 10, "end": 17, "text": "entered", "kind": "event", "tag": "ACTION"}]}),
        json.dumps({"id": "a:1", "doc_id": "a", "sent_id": 1, "text": "She left.", "mentions": []}),
        json.dumps({"id": "b:1", "text": PASSAGES["b:1"]}),
        json.dumps({"id": "c:0", "contents": "Übergrößen für Straße – 東京 ✓", "mentions": [
            {"start": 0, "end": 10, "kind": "entity"}]}),
    ],
    "topics.tsv": [
        "q1\tTara Reid <m> entered </m> rehab on Tuesday.\ta",
        "q2\t<m> Tara Reid </m> entered rehab.",
        "q3\tThe quake hit <m> Yushu </m>.\tb",
    ],
    "topics.jsonl": [
        json.dumps({"qid": "q1", "text": "Tara Reid <m> entered </m> rehab.", "doc_id": "a", "kind": "event"}),
        json.dumps({"qid": "q2", "passage_id": "a:0", "start": 0, "end": 9, "mention": "Tara Reid", "split": "dev"}),
        json.dumps({"qid": 3, "text": "<m> quake </m> hit", "examples": ["a <m> b </m> c"], "tag": "X"}),
    ],
    "qrels.txt": ["q1 0 a:0 1", "q1 0 b:1 0", "q2\t0\tb:1\t2"],
    "run.trec": ["q1 Q0 a:0 1 12.5 bm25", "q1 Q0 b:1 2 3.25 bm25", "q2 Q0 b:1 1 -1.0 bm25"],
    "config.toml": ['[index]', 'corpus = "c.jsonl"', "threads = 2", "[index.annotation]", "context_window = 1",
                    'ner = "heuristic"', "gold_ner = false"],
}

ROOT = Path(__file__).resolve().parents[1]
#: The project's other TOML loaders (recipes, LTR feature sets, regression specs), seeded with bundled files.
BUNDLED = {
    "recipe.toml": ROOT / "hybrid" / "configs" / "recipes" / "multifield.toml",
    "featureset.toml": ROOT / "ltr" / "configs" / "default.toml",
    "regress.toml": ROOT / "regressions" / "sample.toml",
}
for _name, _path in BUNDLED.items():
    if _path.is_file():
        SEEDS[_name] = _path.read_text(encoding="utf-8").splitlines()

INTERESTING = [b"\t", b"\n", b"\r", b"\r\n", b"\x00", b"\x0b", b"\x1c", b"\xff", b"\xe9", b"\xc3", b"\xef\xbb\xbf",
               b"\x1f\x8b", b'"', b"{", b"}", b"[", b"]", b":", b",", b"\\", b"\\u", b"\\ud800", b"\\udfff",
               b"<m>", b"</m>", b"<m> ", b" </m>", b"<M>", b"< m >", b" ", b"  ", b"\xc2\xa0", b"\xe2\x80\xa8",
               b"NaN", b"Infinity", b"-0", b"1e999", b"99999999999999999999", b"null", b"true", b"[]", b"{}",
               b"=", b"#", b"'", b"nan", b"inf", b"Q0"]
KEYS = ["id", "doc_id", "text", "contents", "mentions", "mention", "sent_id", "start", "end", "kind", "tag", "chain",
        "qid", "passage_id", "examples", "Text", "ID", "starts", "qId", "cluster", "x"]


def _random_value(rng: random.Random, depth: int = 0):
    choice = rng.randrange(12)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.randint(-5, 60)
    if choice == 3:
        return rng.choice([0.5, -1e300, 2**70])
    if choice == 4 and depth < 3:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if choice == 5 and depth < 3:
        return {rng.choice(KEYS): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    if choice == 6:
        return rng.choice(["", " ", "\t", "a b", "<m>", "</m>", "<m> x </m>", "a <m> b </m> c", "\ud800", "\x00"])
    return "".join(rng.choice("ab <>/m\t\n\u00e9\u2028 ") for _ in range(rng.randint(0, 8)))


def mutate_json_line(line: str, rng: random.Random) -> str:
    """Structure-aware mutation: change one value, drop/add/misspell one key, or move an offset."""
    try:
        obj = json.loads(line)
    except ValueError:
        return line
    target = obj
    if isinstance(obj.get("mentions"), list) and obj["mentions"] and rng.random() < 0.5:
        target = rng.choice(obj["mentions"])
        if not isinstance(target, dict):
            return json.dumps(obj)
    op = rng.randrange(5)
    keys = list(target)
    if op == 0 and keys:
        target[rng.choice(keys)] = _random_value(rng)
    elif op == 1 and keys:
        del target[rng.choice(keys)]
    elif op == 2:
        target[rng.choice(KEYS)] = _random_value(rng)
    elif op == 3 and keys:
        key = rng.choice(keys)
        target[key.upper() if rng.random() < 0.5 else key + "s"] = target.pop(key)
    else:
        for key in ("start", "end"):
            if isinstance(target.get(key), int):
                target[key] += rng.choice([-2, -1, 1, 2, 100])
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5)


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        at = rng.randint(0, len(data))
        if op == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            data[at:at] = rng.choice(INTERESTING)
        elif op == 2 and data:
            del data[at : at + rng.randint(1, 8)]
        elif op == 3 and data:
            span = data[at : at + rng.randint(1, 16)]
            data[at:at] = span
        elif op == 4:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 5:
            data = data[:at]
        else:
            lines = bytes(data).split(b"\n")
            rng.shuffle(lines)
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def make_case(fmt: str, rng: random.Random) -> bytes:
    lines = list(SEEDS[fmt])
    if rng.random() < 0.3:  # duplicate a line (duplicate ids) or take lines from another format
        source = lines if rng.random() < 0.7 else SEEDS[rng.choice(list(SEEDS))]
        lines.insert(rng.randint(0, len(lines)), rng.choice(source))
    if fmt.endswith(".jsonl") and rng.random() < 0.6:
        k = rng.randrange(len(lines))
        lines[k] = mutate_json_line(lines[k], rng)
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")  # raw surrogates: invalid UTF-8
    if rng.random() < 0.7 or not fmt.endswith(".jsonl"):
        data = mutate_bytes(data, rng)
    return data


# -- readers and the invariants an accepted file must satisfy ---------------------------------------------


def check_corpus(path: Path) -> None:
    for p in read_corpus(path):
        assert p.id and not any(c.isspace() for c in p.id + p.doc_id), p.id
        assert p.text.strip() and OPEN not in p.text and CLOSE not in p.text
        p.text.encode("utf-8")
        spans = set()
        for m in p.mentions or []:
            assert 0 <= m.start < m.end <= len(p.text) and p.text[m.start : m.end] == m.text and m.text.strip()
            assert (m.start, m.end) not in spans
            spans.add((m.start, m.end))


def check_topics(path: Path) -> None:
    topics = read_topics(path, resolve=PASSAGES.get)
    assert topics and len({t.qid for t in topics}) == len(topics)
    for t in [*topics, *(e for topic in topics for e in topic.examples)]:
        assert 0 <= t.start < t.end <= len(t.text) and t.mention == t.mention.strip() != ""
        assert not any(c.isspace() for c in t.qid)
        t.text.encode("utf-8")
        if t.passage_id is None or t.text != PASSAGES.get(t.passage_id):
            assert OPEN not in t.text and CLOSE not in t.text and "\t" not in t.text and "\n" not in t.text


def check_qrels(path: Path) -> None:
    qrels = read_qrels(path)
    assert qrels and all(isinstance(r, int) for judged in qrels.values() for r in judged.values())


def check_run(path: Path) -> None:
    run = read_run(path)
    out = path.with_name("roundtrip.trec")
    write_run(run, out, tag="fuzz")
    again = read_run(out)
    assert {q: [h.docid for h in hs] for q, hs in run.items()} == {q: [h.docid for h in hs] for q, hs in again.items()}


def check_config(path: Path) -> None:
    from indexes.lucene import IndexConfig

    config = load_config(path, IndexConfig, section="index")
    assert isinstance(config.threads, int) and isinstance(config.annotation.context_window, int)


def check_recipe(path: Path) -> None:
    from hybrid.recipes import load_recipe

    load_recipe(str(path))


def check_featureset(path: Path) -> None:
    from ltr.featureset import load_featureset

    load_featureset(path)


def check_regress(path: Path) -> None:
    from hybrid.cli.regress import load

    load(path)


CHECKS: dict[str, Callable[[Path], None]] = {
    "corpus.jsonl": check_corpus, "topics.tsv": check_topics, "topics.jsonl": check_topics,
    "qrels.txt": check_qrels, "run.trec": check_run, "config.toml": check_config,
    "recipe.toml": check_recipe, "featureset.toml": check_featureset, "regress.toml": check_regress,
}
CHECKS = {name: check for name, check in CHECKS.items() if name in SEEDS}


@dataclass
class FuzzReport:
    outcomes: Counter = field(default_factory=Counter)  # (format, outcome) -> count
    crashes: list[tuple[str, bytes, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def cases(self) -> int:
        return sum(self.outcomes.values())

    def table(self) -> str:
        rows = ["| format | cases | parsed (invariants hold) | rejected with InputError | crashes |",
                "|---|---|---|---|---|"]
        for fmt in CHECKS:
            ok, bad, crash = (self.outcomes[fmt, o] for o in ("ok", "rejected", "crash"))
            rows.append(f"| {fmt} | {ok + bad + crash} | {ok} | {bad} | {crash} |")
        return "\n".join(rows)


def fuzz(cases: int, seed: int = 0, formats: list[str] | None = None) -> FuzzReport:
    """Run ``cases`` mutated inputs, spread over ``formats``; deterministic given ``seed``."""
    rng = random.Random(seed)
    formats = formats or list(CHECKS)
    report = FuzzReport()
    started = time.perf_counter()
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None  # in memory: write_run's fsync costs nothing
    with tempfile.TemporaryDirectory(prefix="fuzz-", dir=shm) as tmp:
        for n in range(cases):
            fmt = formats[n % len(formats)]
            data = make_case(fmt, rng)
            path = Path(tmp) / fmt
            path.write_bytes(data)
            try:
                CHECKS[fmt](path)
                outcome = "ok"
            except InputError as error:
                outcome = "rejected"
                if error.path != str(path):
                    report.crashes.append((fmt, data, f"InputError names {error.path!r}, not the file: {error}"))
                    outcome = "crash"
            except Exception:  # noqa: BLE001 - any other exception is exactly what the fuzzer looks for
                outcome = "crash"
                report.crashes.append((fmt, data, traceback.format_exc(limit=4)))
            report.outcomes[fmt, outcome] += 1
    report.seconds = time.perf_counter() - started
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--report", help="also append the table to this markdown file")
    args = p.parse_args(argv)
    report = fuzz(args.cases, args.seed)
    text = (f"{report.cases} cases, seed {args.seed}, {report.seconds:.1f} s "
            f"({report.cases / report.seconds:.0f} cases/s)\n\n{report.table()}\n")
    print(text)
    for fmt, data, trace in report.crashes[:5]:
        print(f"--- crash in {fmt}: {data[:300]!r}\n{trace}", file=sys.stderr)
    if args.report:
        with open(args.report, "a", encoding="utf-8") as out:
            out.write(text)
    return 1 if report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
