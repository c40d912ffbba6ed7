"""A toy collection for the event-collection tests: two rehab stories, two earthquake stories, one election;
entities are hand-made (no spaCy), and a bag-of-words "encoder" stands in for MiniLM."""

from __future__ import annotations

import zlib

import numpy as np

from hybrid.collect.collection import Collection, Occurrence
from hybrid.collect.kb import entity_key

DOCS = {
    "r1": ["Tara Reid checked into Promises in Malibu.", "Her publicist Jack Ketsoyan confirmed it.",
           "Reid starred in American Pie."],
    "r2": ["A publicist says Tara Reid entered Promises rehab.", "Jack Ketsoyan asked for privacy in Malibu."],
    "r3": ["American Pie star Tara Reid is in rehab at Promises.", "The clinic in Malibu treats celebrities."],
    "q1": ["An earthquake struck Yushu in Qinghai.", "China sent troops to Yushu."],
    "q2": ["Rescuers searched Yushu after the earthquake.", "Qinghai officials counted the dead."],
    "v1": ["Turkmenistan held a parliamentary election.", "Voters in Ashgabat went to the polls."],
}
NAMES = {"Tara Reid": "PERSON", "Reid": "PERSON", "Promises": "ORG", "Malibu": "GPE", "Jack Ketsoyan": "PERSON",
         "American Pie": "WORK_OF_ART", "Yushu": "GPE", "Qinghai": "GPE", "China": "GPE", "Turkmenistan": "GPE",
         "Ashgabat": "GPE", "rehab": "NP", "earthquake": "NP", "publicist": "NP"}


def occurrences(text: str) -> list[Occurrence]:
    out = []
    for name, label in NAMES.items():
        at = text.find(name)
        if at >= 0 and not (name == "Reid" and "Tara Reid" in text):
            out.append(Occurrence(entity_key(name), name, label, at, at + len(name)))
    return sorted(out, key=lambda o: (o.start, o.key))


def toy_collection() -> Collection:
    collection = Collection.from_records({"id": f"{d}:{i}", "doc_id": d, "text": t, "sent_id": i}
                                         for d, texts in DOCS.items() for i, t in enumerate(texts))
    collection.set_entities([occurrences(p.text) for p in collection.passages])
    return collection


class BagEncoder:
    """Deterministic hashed bag-of-words vectors (unit length), the encoder interface the rankers use."""

    def encode_texts(self, texts, side="passage", batch_size=64, progress=False):
        out = np.zeros((len(texts), 1024), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                out[i, zlib.crc32(word.encode()) % 1024] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
