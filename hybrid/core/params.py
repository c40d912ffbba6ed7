"""Defaults that several layers share, defined once.

BM25's k1 and b are Anserini's defaults (``SearchCollection.Args``: 0.9 / 0.4): plain Pyserini BM25, the
multi-field and BM25F searches, Rocchio, the safety net, the Java feature extractor and event-collection
ranking all start from them, so a study that changes them changes them here or per recipe (``k1``/``b``).
"""

from __future__ import annotations

#: BM25 term-frequency saturation (Anserini's default).
BM25_K1 = 0.9
#: BM25 length normalisation (Anserini's default).
BM25_B = 0.4
