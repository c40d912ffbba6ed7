"""Train the learned mention detector (:mod:`features.mention_head`) on ECB+ train gold mentions.

    python -m hybrid.train_mention_head --corpus ../shared/data/ecbplus/corpus.jsonl \\
        --output features/models/mention_head.safetensors

Only curated passages (a non-empty ``mentions`` list) of ``--split train`` are used for fitting;
the topics with ``topic % --val-every == 0`` among them are held out to choose the number of epochs
and the per-kind thresholds, then the head is refit on all train passages with those settings.
Scores on ``--eval-split`` (dev) are measured last and only recorded. Seeded and deterministic
(one thread, fixed passage order); a few CPU minutes.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from features.mention_head import (
    BIO,
    COARSE_TYPES,
    DEFAULT_PATH,
    FEATURES,
    SPACY_MODEL,
    LearnedMentionDetector,
    config_path,
    detection_scores,
)
from features.train_mention_head import (
    choose_candidate_thresholds,
    choose_recall_mode,
    choose_thresholds,
    data_hash,
    detector_from,
    featurize,
    log,
    numpy_weights,
    predict,
    read_curated,
    rule_candidates,
    train,
)
from hybrid.cli.common import make_parser, run_cli
from hybrid.core.formats.runs import sha256_file
from hybrid.core.records import KINDS


def main(argv: list[str] | None = None) -> int:
    ap = make_parser("python -m hybrid.train_mention_head", __doc__, epilog=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--output", default=str(DEFAULT_PATH))
    ap.add_argument("--split", default="train")
    ap.add_argument("--eval-split", default="dev", help="scored and recorded only ('' to skip)")
    ap.add_argument(
        "--val-every", type=int, default=5, help="train topics with topic %% N == 0 choose epochs/thresholds"
    )
    ap.add_argument("--epochs", type=int, default=0, help="fixed epochs (0: choose on the held-out train topics)")
    ap.add_argument("--max-epochs", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=96)
    ap.add_argument("--kernels", type=int, nargs=2, default=(3, 3))
    ap.add_argument("--dropout", type=float, default=0.3)
    ap.add_argument("--word-dropout", type=float, default=0.25)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--min-overlap", type=float, default=0.92)
    ap.add_argument("--min-exact", type=float, default=0.75)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    import spacy
    import torch

    torch.set_num_threads(args.threads)
    t0 = time.time()
    nlp = spacy.load(SPACY_MODEL)
    train_p = read_curated(args.corpus, {args.split})
    fit_p = [p for p in train_p if int(p.get("topic", 0)) % args.val_every != 0]
    val_p = [p for p in train_p if int(p.get("topic", 0)) % args.val_every == 0]
    fit, val = featurize(nlp, fit_p), featurize(nlp, val_p, keep_docs=True)
    log.info("parsed %d fit + %d val passages in %.1fs", len(fit), len(val), time.time() - t0)
    base_config = {
        "spacy_model": SPACY_MODEL,
        "spacy_model_version": nlp.meta.get("version"),
        "spacy_version": spacy.__version__,
        "vectors_width": int(nlp.vocab.vectors.shape[1]),
        "coarse_types": {k: list(v) for k, v in COARSE_TYPES.items()},
        "features": {k: list(v) for k, v in FEATURES.items()},
        "bio": list(BIO),
    }
    hp = dict(
        seed=args.seed,
        hidden=args.hidden,
        dropout=args.dropout,
        kernels=list(args.kernels),
        word_dropout=args.word_dropout,
        lr=args.lr,
        batch_size=args.batch_size,
    )

    epochs = args.epochs
    val_scores = None
    if not epochs:

        def eval_fn(model):
            model.eval()
            det = detector_from(model, base_config)
            thr = choose_thresholds(det, val, min_overlap=args.min_overlap)
            s = detection_scores([e.gold for e in val], predict(det, val, thr))
            return {
                "thresholds": thr,
                **{
                    k: {m: round(s[k][m], 4) for m in ("overlap_recall", "exact_recall", "exact_precision")}
                    for k in KINDS
                },
            }

        _, _, evals = train(fit, args.max_epochs, eval_fn=eval_fn, **hp)

        def key(ev):
            return sum(ev[k]["exact_recall"] + ev[k]["exact_precision"] for k in KINDS)

        best = max(range(len(evals)), key=lambda i: (key(evals[i]), -i))
        epochs, val_scores = best + 1, evals[best]
        log.info("chose %d epochs on held-out train topics: %s", epochs, val_scores)
    thresholds = val_scores["thresholds"] if val_scores else {k: 0.5 for k in KINDS}
    fit_model, _, _ = train(fit, epochs, **hp)
    fit_model.eval()
    det = detector_from(fit_model, base_config)
    thresholds, span_thresholds, recall_table = choose_recall_mode(det, val, args.min_overlap, args.min_exact)
    cand_thresholds, rules = None, rule_candidates()
    if rules is not None:
        det = detector_from(fit_model, {**base_config, "thresholds": thresholds, "span_thresholds": span_thresholds})
        cand_thresholds = choose_candidate_thresholds(det, val, rules)

    all_train = fit + val
    model, losses, _ = train(all_train, epochs, **hp)
    model.eval()
    weights = numpy_weights(model)
    config = {
        **base_config,
        "thresholds": thresholds,
        "span_thresholds": span_thresholds,
        "candidate_thresholds": cand_thresholds or {k: 1.01 for k in KINDS},
        "candidate_rules": "features.detect.rule_mentions" if cand_thresholds else None,
        "training": {
            **hp,
            "epochs": epochs,
            "losses": [round(x, 5) for x in losses],
            "split": args.split,
            "passages": len(train_p),
            "val_every": args.val_every,
            "val_topics_scores": val_scores,
            "min_overlap": args.min_overlap,
            "min_exact": args.min_exact,
            "val_topics_recall_mode": recall_table,
            "data_sha256": data_hash(train_p),
            "corpus": Path(args.corpus).name,
            "torch_version": torch.__version__,
            "seconds": None,
        },
    }
    if args.eval_split:
        dev_p = read_curated(args.corpus, {args.eval_split})
        dev = featurize(nlp, dev_p, keep_docs=True)
        det = LearnedMentionDetector(weights, config)
        s = detection_scores([e.gold for e in dev], [det(e.doc) for e in dev])
        config["eval"] = {"split": args.eval_split, "passages": len(dev), "scores": s}
        runs = [("head", s)]
        if cand_thresholds:
            sc = detection_scores([e.gold for e in dev], [det(e.doc, candidates=rules(e.doc)) for e in dev])
            config["eval"]["scores_with_rule_candidates"] = sc
            runs.append(("head+rules", sc))
        for (name, s), k in ((r, k) for r in runs for k in (*KINDS, "all")):
            log.info(
                "%s %s %-6s overlap R %.3f exact R %.3f overlap P %.3f exact P %.3f",
                args.eval_split,
                name,
                k,
                s[k]["overlap_recall"],
                s[k]["exact_recall"],
                s[k]["overlap_precision"],
                s[k]["exact_precision"],
            )
    config["training"]["seconds"] = round(time.time() - t0, 1)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    from safetensors.numpy import save_file

    # one metadata key: safetensors writes its metadata map in hash order, so two keys make the bytes vary
    save_file(weights, str(out), metadata={"format": f"features.mention_head/1 {SPACY_MODEL}"})
    config["weights_sha256"] = sha256_file(out)
    config_path(out).write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    log.info("wrote %s (%d bytes) and %s", out, out.stat().st_size, config_path(out).name)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
