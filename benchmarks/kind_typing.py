"""Event/entity typing of automatic mentions on ECB+ dev, and what the same-kind filter can hide (issue 37, part 5).

On an index annotated from raw text (``python -m hybrid.index --corpus corpus.raw.jsonl``) every mention's kind
(``event`` / ``entity``) comes from the detector, and a same-kind first stage drops candidate mentions whose kind
is not the query's. This script measures how often that automatic kind is wrong, against ECB+'s gold mentions
of the curated dev passages (``corpus.jsonl``, ``split == "dev"``, non-empty ``mentions``):

* **matching rule**: a gold mention is matched to the automatic mentions of the *same passage* whose character
  span overlaps it. Its *typed kind* is the kind of the best of them: the one with exactly its span, else the
  one with the largest character overlap divided by the union of the two spans (ties: the shorter, then the
  earlier); a gold head such as ``earthquake`` in ``the 2010 Yushu earthquake`` is matched by its own noun.
  ``both``: the detector gave that span both kinds (it does so for nouns: an ``AUTO_NP`` entity and an
  ``AUTO_EVENT_NOUN`` event); ``none``: no automatic mention overlaps it (undetected). ``any_gold_kind``:
  whether *some* overlapping automatic mention has the gold kind (what a same-kind filter needs: one mention of
  the query's kind there);
* **confusion** of gold kind x typed kind, overall and per gold tag family (ACTION, NEG_ACTION, HUMAN,
  NON_HUMAN, LOC, TIME);
* **what the filter can hide**: for every dev query (``queries.dev.jsonl``, gold kind and cluster) and every
  relevant passage (``qrels.dev.txt``), the passage's coreferent gold mentions (same cluster) are *right* when an
  automatic mention of the query's kind overlaps one of them, *wrong kind only* when only mentions of the other
  kind do, *undetected* when none does; *no mention of the kind* when the passage has no automatic mention of
  the query's kind at all (then the same-kind mention-level search cannot return it whatever it matches);
* **the query's own kind** when the topic file gives none (a user's TSV topics): the kind the engine then uses
  (``index.query_record``: the automatic kind of the indexed mention with exactly the query's span, else none,
  which searches any kind), against the gold kind.

    python benchmarks/kind_typing.py --index /work/idx/ecb-raw --corpus ../shared/data/ecbplus/corpus.jsonl \
        --topics ../shared/data/ecbplus/queries.dev.jsonl --qrels ../shared/data/ecbplus/qrels.dev.txt \
        --output benchmarks/results/kind-typing
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hybrid.api import open_index
from hybrid.api import qrels as read_qrels
from hybrid.api import topics as read_topics
from hybrid.core.atomic import atomic_write
from hybrid.core.provenance import produced_by
from hybrid.core.records import ENTITY, EVENT

KINDS = (EVENT, ENTITY)
TYPED = (EVENT, ENTITY, "both", "none")
#: Gold tag families, longest prefix first (NEG_ACTION before ACTION, NON_HUMAN before HUMAN).
FAMILIES = ("NEG_ACTION", "ACTION", "NON_HUMAN", "HUMAN", "LOC", "TIME")


@dataclass(frozen=True)
class Span:
    """A mention of one passage: its character span, kind and tag."""

    start: int
    end: int
    kind: str | None
    tag: str | None = None


def family(tag: str | None) -> str:
    """The gold tag's family (``OTHER`` when it has none of the known prefixes)."""
    t = (tag or "").upper()
    return next((f for f in FAMILIES if t.startswith(f)), "OTHER")


def overlap(a: Span, b: Span) -> int:
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def overlapping(gold: Span, auto: Iterable[Span]) -> list[Span]:
    return [m for m in auto if overlap(gold, m) > 0]


def best_match(gold: Span, auto: Iterable[Span]) -> Span | None:
    """The automatic mention a gold one is matched to (see the module's matching rule); None: undetected."""
    found = overlapping(gold, auto)
    exact = [m for m in found if (m.start, m.end) == (gold.start, gold.end)]
    if exact:
        return exact[0]

    def jaccard(m: Span) -> float:
        return overlap(gold, m) / (max(gold.end, m.end) - min(gold.start, m.start))

    return min(found, key=lambda m: (-jaccard(m), m.end - m.start, m.start), default=None)


def typed_kind(gold: Span, auto: Sequence[Span]) -> str:
    """The kind of the best-matching automatic span: ``event``, ``entity``, ``both`` (the detector gave that span
    both kinds, as it does for nouns: an ``AUTO_NP`` entity and an ``AUTO_EVENT_NOUN`` event) or ``none``."""
    match = best_match(gold, auto)
    if match is None:
        return "none"
    kinds = {m.kind for m in auto if (m.start, m.end) == (match.start, match.end) and m.kind in KINDS}
    return "both" if len(kinds) > 1 else next(iter(kinds), "none")


def passage_outcome(coreferent: Sequence[Span], auto: Sequence[Span], kind: str) -> str:
    """How a relevant passage looks to a same-kind search for ``kind``: ``right``, ``wrong_kind_only`` or
    ``undetected`` (see the module docstring)."""
    kinds = {m.kind for g in coreferent for m in overlapping(g, auto)}
    if kind in kinds:
        return "right"
    return "wrong_kind_only" if kinds else "undetected"


def confusion(pairs: Iterable[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """``{gold kind: {typed kind: count}}`` of (gold, typed) pairs."""
    counts = Counter(pairs)
    return {g: {t: counts[g, t] for t in TYPED} for g in KINDS if any(counts[g, t] for t in TYPED)}


def typing_table(gold_auto: Sequence[tuple[Span, Sequence[Span]]]) -> dict:
    """Confusion overall and per gold tag family, plus the share where some overlapping mention has the gold kind."""
    rows: dict[str, dict] = {}
    groups: dict[str, list[tuple[Span, Sequence[Span]]]] = {"all": list(gold_auto)}
    for g, auto in gold_auto:
        groups.setdefault(family(g.tag), []).append((g, auto))
    for name in ("all", *FAMILIES, "OTHER"):
        items = groups.get(name)
        if not items:
            continue
        typed = [(g.kind, typed_kind(g, auto)) for g, auto in items]
        rows[name] = {
            "gold": len(items),
            "confusion": confusion(typed),
            "typed_correct": round(sum(a == b for a, b in typed) / len(items), 4),
            "typed_both": round(sum(b == "both" for _, b in typed) / len(items), 4),
            "typed_other_kind": round(sum(b in KINDS and a != b for a, b in typed) / len(items), 4),
            "undetected": round(sum(b == "none" for _, b in typed) / len(items), 4),
            "any_gold_kind": round(sum(any(m.kind == g.kind for m in overlapping(g, auto)) for g, auto in items)
                                   / len(items), 4),
        }
    return rows


def wrong_auto_tags(gold_auto: Sequence[tuple[Span, Sequence[Span]]], top: int = 8) -> dict[str, list]:
    """For each gold kind, the automatic tags of the best matches typed as the other kind only (most frequent first)."""
    out = {}
    for kind in KINDS:
        tags = Counter(m.tag or "-" for g, auto in gold_auto if g.kind == kind and typed_kind(g, auto) not in
                       (kind, "both", "none") for m in [best_match(g, auto)] if m is not None)
        out[kind] = tags.most_common(top)
    return out


def hidden_table(queries: Sequence[dict], qrels: dict[str, dict[str, int]], gold: dict[str, list[Span]],
                 clusters: dict[str, list[str]], auto: dict[str, list[Span]]) -> dict:
    """Per query kind: relevant passages by outcome, and per-query shares of wrong-kind-only passages."""
    out = {}
    for kind in (*KINDS, "all"):
        outcomes: Counter = Counter()
        shares, any_wrong, all_wrong, n = [], 0, 0, 0
        for q in queries:
            if kind != "all" and q["kind"] != kind:
                continue
            relevant = [p for p, r in qrels.get(q["qid"], {}).items() if r > 0 and p in gold]
            if not relevant:
                continue
            n += 1
            per = []
            for pid in relevant:
                coref = [g for g, c in zip(gold[pid], clusters[pid], strict=True) if c == q["cluster"]]
                outcome = passage_outcome(coref, auto.get(pid, []), q["kind"])
                per.append(outcome)
                outcomes[outcome] += 1
                outcomes["no_mention_of_kind"] += not any(m.kind == q["kind"] for m in auto.get(pid, []))
            wrong = sum(o == "wrong_kind_only" for o in per)
            shares.append(wrong / len(per))
            any_wrong += wrong > 0
            all_wrong += wrong == len(per)
        total = sum(outcomes[o] for o in ("right", "wrong_kind_only", "undetected"))
        out[kind] = {
            "queries": n, "relevant_passages": total,
            **{o: round(outcomes[o] / max(total, 1), 4)
               for o in ("right", "wrong_kind_only", "undetected", "no_mention_of_kind")},
            "mean_query_share_wrong_kind_only": round(statistics.fmean(shares), 4) if shares else 0.0,
            "queries_with_a_wrong_kind_only_passage": round(any_wrong / max(n, 1), 4),
            "queries_all_wrong_kind_only": round(all_wrong / max(n, 1), 4),
        }
    return out


def query_kind_table(index, topics) -> dict:
    """The kind a topic without one gets (``index.query_record``: the first indexed record with exactly its span)
    against its gold kind, and how often that span carries both kinds (then the kind is the first record's)."""
    pairs, both = [], Counter()
    for topic in topics:
        detected = index.query_record(dataclasses.replace(topic, kind=None, tag=None)).kind
        pairs.append((topic.kind, detected if detected in KINDS else "none"))
        at_span = {r.kind for r in index.mention_records(topic.passage_id or "")
                   if (r.start, r.end) == (topic.start, topic.end) and r.kind in KINDS}
        both[topic.kind] += len(at_span) > 1
    n = len(pairs)
    return {
        "queries": n, "confusion": confusion(pairs),
        "span_typed_both": {kind: round(both[kind] / max(sum(t == kind for t, _ in pairs), 1), 4) for kind in KINDS},
        "same_as_gold": round(sum(a == b for a, b in pairs) / n, 4),
        "other_kind": round(sum(b in KINDS and a != b for a, b in pairs) / n, 4),
        "no_kind_any_kind_search": round(sum(b == "none" for _, b in pairs) / n, 4),
    }


def _confusion_rows(name: str, row: dict) -> list[str]:
    out = []
    for kind, typed in row["confusion"].items():
        total = sum(typed.values())
        cells = " | ".join(f"{typed[t]} ({typed[t] / total:.1%})" for t in TYPED)
        out.append(f"| {name} | {kind} | {total} | {cells} |")
    return out


def markdown(result: dict) -> str:
    typing, hidden, query = result["typing"], result["hidden"], result["query_kind"]
    lines = [
        f"# Kinds of automatic mentions on ECB+ dev ({result['gold_mentions']} gold mentions in "
        f"{result['curated_passages']} curated passages)", "",
        f"Command: `{result['command']}`  ", f"Index: `{result['index']}` (annotation: "
        f"{result['annotation_sources'].get('mention')}); {result['date']}", "",
        "Matching: a gold mention is matched to the automatic mentions of the same passage that overlap it; its "
        "typed kind is the kind of the exact-span one, else of the one with the largest overlap / union of the two "
        "spans (ties: shorter, then earlier); `both` = the detector gave that span both kinds; `none` = no automatic "
        "mention overlaps it. `any gold kind` = some "
        "overlapping automatic mention has the gold kind (what a same-kind filter needs).", "",
        "## Gold kind x automatic kind", "",
        "| gold tag family | gold kind | mentions | typed event | typed entity | typed both | undetected |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in typing.items():
        lines += _confusion_rows(name, row)
    lines += ["", "| gold tag family | mentions | typed as gold kind only | typed both | typed as the other kind "
                  "only | undetected | any gold kind |", "|---|---|---|---|---|---|---|"]
    for name, row in typing.items():
        lines.append(f"| {name} | {row['gold']} | {row['typed_correct']:.3f} | {row['typed_both']:.3f} | "
                     f"{row['typed_other_kind']:.3f} | {row['undetected']:.3f} | {row['any_gold_kind']:.3f} |")
    lines += ["", "Automatic tags of gold mentions typed as the other kind only (best match):"]
    for kind, tags in result["wrong_auto_tags"].items():
        lines.append(f"- gold {kind}: " + ", ".join(f"{t} {n}" for t, n in tags))
    lines += [
        "", "## What a same-kind search can hide (dev queries, relevant passages)", "",
        "Per relevant passage, its coreferent gold mentions: `right` = an automatic mention of the query's (gold) "
        "kind overlaps one; `wrong kind only` = only mentions of the other kind do; `undetected` = none does; "
        "`no mention of the kind` = the passage has no automatic mention of the query's kind at all.", "",
        "| query kind | queries | relevant passages | right | wrong kind only | undetected | no mention of the kind | "
        "mean share per query wrong kind only | queries with >= 1 wrong-kind-only passage | queries with all |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, row in hidden.items():
        lines.append(
            f"| {kind} | {row['queries']} | {row['relevant_passages']} | {row['right']:.3f} | "
            f"{row['wrong_kind_only']:.3f} | {row['undetected']:.3f} | {row['no_mention_of_kind']:.3f} | "
            f"{row['mean_query_share_wrong_kind_only']:.3f} | {row['queries_with_a_wrong_kind_only_passage']:.3f} | "
            f"{row['queries_all_wrong_kind_only']:.3f} |")
    lines += [
        "", "## The query's own kind when the topics give none (TSV topics)", "",
        "The engine's query record (`index.query_record`) of each dev query with its kind removed: the automatic "
        "kind of the first indexed mention with exactly the query's span, else none (the search then takes any kind). "
        "`span typed both`: the detector gave the query's span both kinds, and the first record's kind was taken.",
        "", "| gold kind | queries | detected event | detected entity | none (any kind) | span typed both |",
        "|---|---|---|---|---|---|",
    ]
    for kind, typed in query["confusion"].items():
        total = sum(typed.values())
        lines.append(f"| {kind} | {total} | " + " | ".join(f"{typed[t]} ({typed[t] / total:.1%})"
                                                          for t in (EVENT, ENTITY, "none"))
                     + f" | {query['span_typed_both'][kind]:.1%} |")
    lines.append(f"\nSame as gold {query['same_as_gold']:.3f}, the other kind {query['other_kind']:.3f}, none "
                 f"{query['no_kind_any_kind_search']:.3f} of {query['queries']} queries.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True, help="an index built from raw text (automatic kinds)")
    p.add_argument("--corpus", default="../shared/data/ecbplus/corpus.jsonl", help="the gold corpus")
    p.add_argument("--topics", default="../shared/data/ecbplus/queries.dev.jsonl")
    p.add_argument("--qrels", default="../shared/data/ecbplus/qrels.dev.txt")
    p.add_argument("--split", default="dev")
    p.add_argument("--output", default="benchmarks/results/kind-typing")
    args = p.parse_args(argv)
    index = open_index(args.index)
    gold: dict[str, list[Span]] = {}
    clusters: dict[str, list[str]] = {}
    topics_seen: set = set()
    with open(args.corpus, encoding="utf-8") as fh:
        for line in fh:
            passage = json.loads(line)
            if passage.get("split") != args.split or not passage.get("mentions"):
                continue
            topics_seen.add(passage.get("topic"))
            gold[passage["id"]] = [Span(m["start"], m["end"], m["kind"], m.get("tag")) for m in passage["mentions"]]
            clusters[passage["id"]] = [m.get("cluster", "") for m in passage["mentions"]]
    auto = {pid: [Span(r.start, r.end, r.kind, r.tag) for r in index.mention_records(pid) if r.source == "auto"]
            for pid in gold}
    gold_auto = [(g, auto[pid]) for pid, spans in gold.items() for g in spans]
    with open(args.topics, encoding="utf-8") as fh:
        queries = [json.loads(line) for line in fh if line.strip()]
    qrels = read_qrels(args.qrels)
    topics = [t for t in read_topics(args.topics, index) if t.kind in KINDS]
    result = {
        "command": "python benchmarks/kind_typing.py " + " ".join(
            f"--{k} {v}" for k, v in vars(args).items()),
        "index": args.index, "annotation_sources": index.metadata.get("annotation_sources", {}),
        "split": args.split, "topics": sorted(topics_seen), "curated_passages": len(gold),
        "gold_mentions": len(gold_auto), "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "typing": typing_table(gold_auto), "wrong_auto_tags": wrong_auto_tags(gold_auto),
        "hidden": hidden_table(queries, qrels, gold, clusters, auto),
        "query_kind": query_kind_table(index, topics),
        "produced_by": produced_by(),
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = markdown(result)
    for suffix, content in ((".json", json.dumps(result, indent=2) + "\n"), (".md", text)):
        with atomic_write(f"{out}{suffix}") as handle:
            handle.write(content)
    print(text)


if __name__ == "__main__":
    main()
