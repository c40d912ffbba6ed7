"""A deterministic synthetic corpus (JSONL lines) big enough to make index builds and searches take time.

Words are random syllable strings from a fixed vocabulary with a Zipf-like frequency, so BM25 sees
realistic term statistics; every sentence carries a few gold mentions (annotated passages take the
fast path of the annotator, which keeps building time dominated by Lucene, not by detection).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SYLLABLES = ["ka", "ri", "mo", "tu", "sel", "var", "no", "pi", "den", "lo", "qua", "ze", "bor", "fi", "gan", "he"]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def passages(n: int, seed: int = 0, per_doc: int = 10, vocab_size: int = 5000) -> list[dict]:
    rng = random.Random(seed)
    vocab = vocabulary(vocab_size, rng)
    cum, total = [], 0.0
    for rank in range(len(vocab)):
        total += 1.0 / (rank + 1)
        cum.append(total)
    out = []
    for i in range(n):
        doc, sent = divmod(i, per_doc)
        words = rng.choices(vocab, cum_weights=cum, k=rng.randint(8, 30))
        text = " ".join(words).capitalize() + "."
        mentions, offset = [], 0
        starts = []
        for word in words:
            starts.append(offset)
            offset += len(word) + 1
        for j in sorted(rng.sample(range(len(words)), k=min(3, len(words)))):
            start, end = starts[j], starts[j] + len(words[j])
            kind = "event" if j % 2 else "entity"
            mentions.append({"start": start, "end": end, "text": text[start:end], "kind": kind,
                             "chain": f"d{doc}#c{rng.randint(0, 4)}"})
        out.append({"id": f"d{doc}:{sent}", "doc_id": f"d{doc}", "sent_id": sent, "text": text, "mentions": mentions})
    return out


def write_corpus(path: str | Path, n: int, seed: int = 0) -> Path:
    path = Path(path)
    with path.open("w", encoding="utf-8") as out:
        for record in passages(n, seed):
            out.write(json.dumps(record) + "\n")
    return path


def topics_tsv(path: str | Path, records: list[dict], n: int, seed: int = 1) -> Path:
    """Query-by-example topics: a gold mention of a random passage, its document excluded."""
    rng = random.Random(seed)
    path = Path(path)
    with path.open("w", encoding="utf-8") as out:
        for q, record in enumerate(rng.sample(records, k=n)):
            m = rng.choice(record["mentions"])
            text = record["text"]
            marked = f"{text[: m['start']]}<m> {m['text']} </m>{text[m['end']:]}"
            out.write(f"q{q}\t{marked}\t{record['doc_id']}\n")
    return path
