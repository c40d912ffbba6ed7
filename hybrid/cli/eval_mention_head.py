"""Mention detection on ECB+ dev curated sentences: heuristic, spaCy rules, the learned head, unions.

    python -m hybrid.eval_mention_head --corpus ../shared/data/ecbplus/corpus.jsonl \\
        --output benchmarks/results/mention-head

Writes ``<output>.json`` and ``<output>.md``: per detector and kind, overlap recall (a same-kind
candidate overlaps the gold mention), exact recall (same start and end), precision (overlap, exact),
candidates per passage and the detector's own CPU time per passage (the spaCy parse, shared by every
spaCy detector, is timed apart).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

from features.detect import heuristic_mentions, rule_mentions
from features.mention_head import SPACY_MODEL, LearnedMentionDetector, detection_scores, union
from features.ner import heuristic_entities
from features.train_mention_head import _mentions, read_curated
from hybrid.cli.common import make_parser, run_cli
from hybrid.core.records import KINDS


def _machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:  # pragma: no cover
        pass
    return f"{model or platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}"


def _timed(fn, docs):
    t = time.process_time()
    out = [fn(d) for d in docs]
    return out, time.process_time() - t


def run(corpus: str, split: str, head_path: str | None) -> dict:
    import spacy

    passages = read_curated(corpus, {split})
    gold = [_mentions(p) for p in passages]
    nlp = spacy.load(SPACY_MODEL)
    t = time.process_time()
    docs = list(nlp.pipe([p["text"] for p in passages], batch_size=64))
    parse_s = time.process_time() - t
    head = LearnedMentionDetector.load(head_path)
    head.check_pipeline(nlp)
    decode_only = LearnedMentionDetector(head.weights, {**head.config, "span_thresholds": None}, head.path)

    found, seconds = {}, {}

    def heuristic(p):
        return heuristic_mentions(p["text"], heuristic_entities(p["text"]))

    found["heuristic"], seconds["heuristic"] = _timed(heuristic, passages)
    found["rules"], seconds["rules"] = _timed(rule_mentions, docs)
    found["learned"], seconds["learned"] = _timed(head, docs)
    found["learned (decode only)"], seconds["learned (decode only)"] = _timed(decode_only, docs)
    found["learned+rules"] = [union(a, b) for a, b in zip(found["learned"], found["rules"], strict=True)]
    seconds["learned+rules"] = seconds["learned"] + seconds["rules"]
    found["learned+filtered rules"], seconds["learned+filtered rules"] = _timed(
        lambda d: head(d, candidates=rule_mentions(d)), docs
    )
    n = len(passages)
    results = {
        name: {
            "scores": detection_scores(gold, f),
            "candidates_per_passage": sum(len(x) for x in f) / n,
            "ms_per_passage": 1000 * seconds[name] / n,
        }
        for name, f in found.items()
    }
    return {
        "split": split,
        "passages": n,
        "gold": {k: sum(m.kind == k for g in gold for m in g) for k in KINDS},
        "spacy_model": f"{SPACY_MODEL} {nlp.meta.get('version')}",
        "parse_ms_per_passage": 1000 * parse_s / n,
        "head": str(head.path),
        "head_thresholds": head.thresholds,
        "head_span_thresholds": head.span_thresholds,
        "head_candidate_thresholds": head.candidate_thresholds,
        "head_training": {k: head.config["training"].get(k) for k in ("epochs", "seed", "data_sha256", "seconds")},
        "detectors": results,
        "machine": _machine(),
    }


def markdown(res: dict, command: str) -> str:
    lines = [
        f"# Mention detection on ECB+ {res['split']} curated sentences",
        "",
        f"{res['passages']} passages, gold mentions: {res['gold']}. spaCy pipeline {res['spacy_model']}; "
        f"parse {res['parse_ms_per_passage']:.2f} CPU ms/passage (shared by rules and the head). "
        f"Head `{Path(res['head']).name}`: decode thresholds {res['head_thresholds']}, recall-mode span "
        f"thresholds {res['head_span_thresholds']}, rule-candidate thresholds {res['head_candidate_thresholds']}.",
        "",
        "Detectors: `heuristic` (features.detect.heuristic_mentions, no spaCy), `rules` (features.detect.rule_mentions "
        "over the parse), `learned` (the head: decoded spans + its recall mode, the default), `learned (decode only)` "
        "(without the recall mode), `X+Y` (union of the candidates), `learned+filtered rules` (the head's spans "
        "plus the rule candidates whose span probability under the head reaches the head's rule-candidate threshold).",
        "",
        "Overlap R: share of gold mentions a same-kind candidate overlaps; exact R: same start and end; "
        "P: share of candidates overlapping (exact: equal to) a same-kind gold mention.",
        "",
        "| detector | kind | overlap R | exact R | overlap P | exact P | cand./passage | ms/passage |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["detectors"].items():
        for kind in (*KINDS, "all"):
            s = r["scores"][kind]
            extra = f"{r['candidates_per_passage']:.1f} | {r['ms_per_passage']:.2f}" if kind == "all" else " | "
            lines.append(
                f"| {name} | {kind} | {s['overlap_recall']:.3f} | {s['exact_recall']:.3f} | "
                f"{s['overlap_precision']:.3f} | {s['exact_precision']:.3f} | {extra} |"
            )
    lines += ["", f"Command: `{command}`", "", f"Machine: {res['machine']}; CPU times (process time, one process).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = make_parser("python -m hybrid.eval_mention_head", __doc__, epilog=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--head", default=None, help="weights file (default: the shipped head)")
    ap.add_argument("--output", default="benchmarks/results/mention-head")
    args = ap.parse_args(argv)
    res = run(args.corpus, args.split, args.head)
    command = "python -m hybrid.eval_mention_head " + " ".join(argv if argv is not None else sys.argv[1:])
    res["command"] = command
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    md = markdown(res, command)
    out.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
