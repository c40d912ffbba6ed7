"""The reader reranker's settings, declared once (:class:`hybrid.core.params.Param`) and light to import (no
torch): :class:`ltr.reader.stage.ReaderReranker`, a recipe's ``{type = "reader", ...}`` reranker
(:mod:`hybrid.recipes.builders`) and ``python -m hybrid.reader rerank`` all read their defaults here."""

from __future__ import annotations

from hybrid.core.params import Param

#: Which spans of a candidate passage the reader scores.
SPAN_SOURCES = ("predicted", "mentions")

DEPTH = Param("depth", int, 50, "head of the input run it reorders", minimum=1)
BATCH_SIZE = Param("batch_size", int, 64, "pairs scored at once", minimum=1)
SPAN_SOURCE = Param("span_source", str, "predicted", "which span a candidate is scored by: the span heads' "
                                                     "prediction (CoreSearch), or also every indexed mention of "
                                                     "the passage", choices=SPAN_SOURCES)
