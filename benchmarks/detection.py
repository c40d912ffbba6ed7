"""Mention detection on ECB+ dev: how many gold mentions an automatic candidate finds, by kind.

On the curated dev sentences (passages of ``corpus.jsonl`` with ``split == "dev"`` and a non-empty
``mentions`` list), for each detector:

* ``recall_overlap``: share of gold mentions that a candidate of the same kind overlaps;
* ``recall_exact``: share matched exactly (same start and end);
* ``precision_overlap`` / ``precision_exact``: share of candidates of a kind that overlap / exactly
  match a gold mention of that kind.

Every dev passage is parsed once with the annotator's pipeline (the whole document, so document-level
verb lemmas are what indexing sees), then each detector runs on the same parses. ``rules`` variants
are ablations of :func:`features.detect.rule_mentions`. Issue 25's targets for the default detector:
overlap >= 0.92 and exact >= 0.75 for both kinds.

    python benchmarks/detection.py --corpus ../shared/data/ecbplus/corpus.jsonl \
        --output benchmarks/results/detection
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import time
from collections import Counter
from pathlib import Path

from features.annotate import AnnotationConfig, Annotator, make_detector
from features.detect import DOC_VERB_LEMMAS, lemma, rule_mentions
from hybrid.core.records import ENTITY, EVENT

KINDS = (EVENT, ENTITY)


def detectors() -> dict:
    out = {
        "heuristic": make_detector("heuristic"),
        "rules": make_detector("rules"),
        "rules -particles": functools.partial(rule_mentions, particles=False),
        "rules +verb preps": functools.partial(rule_mentions, verb_preps=True),
        "rules -nouns": functools.partial(rule_mentions, nouns=False),
    }
    for name in ("learned", "union"):
        try:
            out[name] = make_detector(name)
        except Exception as exc:  # noqa: BLE001 - a missing or untrained head is reported, not fatal
            print(f"{name}: not available ({exc})")
    return out


def overlaps(a: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(s < a[1] and a[0] < e for s, e in spans)


def evaluate(passages: list[dict], docs: list, detector) -> dict:
    counts: Counter = Counter()
    for passage, doc in zip(passages, docs, strict=True):
        if not passage.get("mentions"):
            continue
        found = detector(doc)
        for kind in KINDS:
            gold = [(m["start"], m["end"]) for m in passage["mentions"] if m.get("kind") == kind]
            cands = sorted({(m.start, m.end) for m in found if m.kind == kind})
            counts[kind, "gold"] += len(gold)
            counts[kind, "cand"] += len(cands)
            counts[kind, "gold_overlap"] += sum(overlaps(g, cands) for g in gold)
            counts[kind, "gold_exact"] += sum(g in cands for g in gold)
            counts[kind, "cand_overlap"] += sum(overlaps(c, gold) for c in cands)
            counts[kind, "cand_exact"] += sum(c in gold for c in cands)
    out = {}
    for kind in KINDS:
        g, c = counts[kind, "gold"], max(counts[kind, "cand"], 1)
        out[kind] = {
            "gold": g, "candidates": counts[kind, "cand"],
            "recall_overlap": round(counts[kind, "gold_overlap"] / g, 4),
            "recall_exact": round(counts[kind, "gold_exact"] / g, 4),
            "precision_overlap": round(counts[kind, "cand_overlap"] / c, 4),
            "precision_exact": round(counts[kind, "cand_exact"] / c, 4),
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="../shared/data/ecbplus/corpus.jsonl")
    p.add_argument("--split", default="dev")
    p.add_argument("--output", default="benchmarks/results/detection")
    args = p.parse_args()
    passages = [json.loads(line) for line in open(args.corpus, encoding="utf-8")]
    passages = [x for x in passages if x.get("split") == args.split]
    annotator = Annotator(AnnotationConfig())
    started = time.time()
    docs = list(annotator.parse((x["text"] for x in passages), len(passages)))
    parse_seconds = time.time() - started
    lemmas: dict[str, set[str]] = {}
    for x, doc in zip(passages, docs, strict=True):
        lemmas.setdefault(x["doc_id"], set()).update(lemma(t) for t in doc if t.pos_ == "VERB")
    for x, doc in zip(passages, docs, strict=True):
        doc.user_data[DOC_VERB_LEMMAS] = lemmas[x["doc_id"]]
    results = {}
    full_docs = None
    for name, det in detectors().items():
        if name in ("learned", "union"):  # their pipeline keeps the lemmatizer the rules do without
            if full_docs is None:
                full = Annotator(AnnotationConfig(detect=name))
                full_docs = list(full.parse((x["text"] for x in passages), len(passages)))
                for x, doc in zip(passages, full_docs, strict=True):
                    doc.user_data[DOC_VERB_LEMMAS] = lemmas[x["doc_id"]]
            results[name] = evaluate(passages, full_docs, det)
        else:
            results[name] = evaluate(passages, docs, det)
    curated = sum(1 for x in passages if x.get("mentions"))
    meta = {
        "command": "python benchmarks/detection.py --corpus " + args.corpus + " --output " + args.output,
        "split": args.split, "passages_parsed": len(passages), "curated_passages": curated,
        "annotation_sources": annotator.sources(), "parse_seconds": round(parse_seconds, 1),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
                   "(shared with other jobs)",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "targets": {"recall_overlap": 0.92, "recall_exact": 0.75},
        "results": results,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output + ".json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"# Mention detection on ECB+ {args.split} ({curated} curated sentences)", "",
        f"Command: `{meta['command']}`  ", f"Machine: {meta['machine']}; {meta['date']}  ",
        f"Parser: {meta['annotation_sources'].get('spacy_model')} ({len(passages)} {args.split} passages parsed in "
        f"{meta['parse_seconds']} s)", "",
        "Recall = share of gold mentions a same-kind candidate overlaps / matches exactly; precision = share of "
        "candidates overlapping / matching a same-kind gold mention. Targets (issue 25): overlap >= 0.92, "
        "exact >= 0.75, both kinds.", "",
        "| detector | kind | gold | candidates | recall overlap | recall exact | precision overlap | precision exact |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, by_kind in results.items():
        for kind, r in by_kind.items():
            lines.append(f"| {name} | {kind} | {r['gold']} | {r['candidates']} | {r['recall_overlap']:.3f} | "
                         f"{r['recall_exact']:.3f} | {r['precision_overlap']:.3f} | {r['precision_exact']:.3f} |")
    Path(args.output + ".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
