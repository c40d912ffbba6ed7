"""Model inputs of the reader: ``[CLS] query-with-<m>-markers [SEP] passage [SEP]``.

With document context (``context_tokens > 0``) the query side also carries the leads of both documents:
``[CLS] query [SEP] query-document lead [SEP] passage-document lead [SEP] passage [SEP]`` (see
:mod:`ltr.reader.context`); the passage side, and so span prediction, is unchanged.

The query is the mention's context with ``<m>``/``</m>`` around the mention, cut to at most
``max_query_tokens`` tokens around the mention (CoreSearch: 64). The passage gets the rest of
``max_length`` (CoreSearch: 256 in all); a passage that does not fit is split into overlapping
windows (``stride`` = tokens shared by consecutive windows, as in HF's QA pipelines), each window a
separate model input for the same pair. Every passage token keeps its character offsets into the
original passage text, so a predicted token span maps back to exact characters of the passage.

Tokenisation goes through the HF *fast* tokenizer's pair API (``truncation="only_second"`` with
overflowing windows), which works for any local checkpoint, whatever its special-token template.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from hybrid.core.errors import ConfigError
from hybrid.core.records import Topic

MARK_OPEN, MARK_CLOSE = "<m>", "</m>"


@dataclass(frozen=True)
class EncodingConfig:
    max_length: int = 256  # whole input, special tokens included
    max_query_tokens: int = 64  # query side, markers included
    stride: int = 128  # overlap between consecutive passage windows (clamped to half a window)
    max_span_tokens: int = 10  # L: longest span the decoder may return
    context_tokens: int = 0  # per document lead on the query side (0: no document context)
    context_sentences: int = 2  # lead sentences of each document (when context_tokens > 0)

    def __post_init__(self) -> None:
        if self.max_query_tokens < 3:
            raise ConfigError(None, None, f"max_query_tokens must be >= 3, got {self.max_query_tokens}")
        if self.max_length < self.max_query_tokens + 8:
            raise ConfigError(None, None, f"max_length {self.max_length} leaves no room for a passage after "
                                          f"{self.max_query_tokens} query tokens")
        if self.stride < 0 or self.max_span_tokens < 1:
            raise ConfigError(None, None, "stride must be >= 0 and max_span_tokens >= 1")
        if self.context_tokens < 0 or self.context_sentences < 1:
            raise ConfigError(None, None, "context_tokens must be >= 0 and context_sentences >= 1")
        if self.max_length < self.max_query_tokens + 2 * (self.context_tokens + 1) + 8:
            raise ConfigError(None, None, f"max_length {self.max_length} leaves no room for a passage after "
                                          f"{self.max_query_tokens} query and 2 x {self.context_tokens} context tokens")

    @property
    def uses_context(self) -> bool:
        return self.context_tokens > 0

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Window:
    """One model input: a (query, passage window) pair. Positions index ``input_ids``."""

    pair: int  # index of the (query, passage) pair this window belongs to
    input_ids: list[int]
    token_type_ids: list[int] | None
    passage_positions: list[int]  # positions of passage tokens, in order
    offsets: list[tuple[int, int]]  # char offsets in the passage text, one per passage position
    query_open: int  # position of <m>
    query_close: int  # position of </m>
    gold_start: int = -1  # position of the gold span's first/last token; -1: not in this window
    gold_end: int = -1

    def char_span(self, start: int, end: int) -> tuple[int, int]:
        """Char offsets [a, b) in the passage of the token span [start, end] (input positions)."""
        index = {p: i for i, p in enumerate(self.passage_positions)}
        return self.offsets[index[start]][0], self.offsets[index[end]][1]


def add_marker_tokens(tokenizer) -> int:
    """Register ``<m>``/``</m>`` as special tokens (never split); returns how many were new."""
    known = set(tokenizer.all_special_tokens)
    new = [t for t in (MARK_OPEN, MARK_CLOSE) if t not in known]
    if not new:
        return 0
    return tokenizer.add_special_tokens({"additional_special_tokens": new}, replace_extra_special_tokens=False)


def marker_ids(tokenizer) -> tuple[int, int]:
    ids = tokenizer.convert_tokens_to_ids([MARK_OPEN, MARK_CLOSE])
    if any(i is None or i == tokenizer.unk_token_id for i in ids):
        raise ConfigError(None, None, "tokenizer lacks the <m>/</m> marker tokens (call add_marker_tokens)")
    return ids[0], ids[1]


def query_string(tokenizer, topic: Topic, max_tokens: int) -> str:
    """The marked query, cut at token boundaries to at most ``max_tokens`` tokens around the mention."""
    marked = topic.marked(MARK_OPEN, MARK_CLOSE)
    open_id, close_id = marker_ids(tokenizer)
    enc = tokenizer(marked, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    if len(ids) <= max_tokens:
        return marked
    i, j = ids.index(open_id), ids.index(close_id)
    if j - i + 1 > max_tokens:  # the mention alone is too long: keep its head, close the marker
        head = marked[offsets[i][0] : offsets[i + max_tokens - 3][1]]
        return f"{head} {MARK_CLOSE}"
    lo = max(0, i - (max_tokens - (j - i + 1)) // 2)
    hi = min(len(ids), lo + max_tokens)
    lo = max(0, hi - max_tokens)
    while True:  # re-tokenising a cut string can add tokens (a word cut in its middle): shrink until it fits
        cut = marked[offsets[lo][0] : offsets[hi - 1][1]]
        if len(tokenizer(cut, add_special_tokens=False)["input_ids"]) <= max_tokens or hi - lo <= j - i + 1:
            return cut
        if i - lo >= hi - 1 - j:
            lo += 1
        else:
            hi -= 1


def cut_tokens(tokenizer, text: str, max_tokens: int) -> str:
    """``text`` cut at a token boundary to its first ``max_tokens`` tokens."""
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    if len(enc["input_ids"]) <= max_tokens:
        return text
    return text[: enc["offset_mapping"][max_tokens - 1][1]] if max_tokens > 0 else ""


def first_segment(tokenizer, topic: Topic, config: EncodingConfig, context: tuple[str, str] | None = None) -> str:
    """The query side of an input: the marked query, then (with document context) the lead of the query's
    document and the lead of the candidate's, each cut to ``context_tokens`` and separated by the
    tokenizer's separator. The passage side stays the passage alone, so span prediction never sees a lead."""
    query = query_string(tokenizer, topic, config.max_query_tokens)
    if not config.uses_context:
        return query
    if context is None:
        raise ConfigError(None, None, "this reader was trained with document context: give each pair the leads of "
                                      "the query's and the candidate's documents (ltr.reader.context.LeadContext)")
    sep = f" {tokenizer.sep_token} " if tokenizer.sep_token else " | "
    query_lead, passage_lead = (cut_tokens(tokenizer, " ".join(c.split()), config.context_tokens) for c in context)
    return f"{query}{sep}{query_lead}{sep}{passage_lead}"


def token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Indices (first, last) of the tokens covering chars [start, end), or None if not fully covered."""
    inside = [k for k, (a, b) in enumerate(offsets) if b > start and a < end and b > a]
    if not inside or offsets[inside[0]][0] > start or offsets[inside[-1]][1] < end:
        return None
    return inside[0], inside[-1]


def encode_pairs(tokenizer, topics: list[Topic], passages: list[str], config: EncodingConfig,
                 gold: list[tuple[int, int] | None] | None = None,
                 contexts: list[tuple[str, str]] | None = None) -> list[Window]:
    """Windows for pairs (topics[i], passages[i]); ``gold[i]`` = char span of the gold mention in passages[i];
    ``contexts[i]`` = (lead of the query's document, lead of passages[i]'s), needed when ``config.uses_context``."""
    if len(topics) != len(passages) or any(x is not None and len(x) != len(passages) for x in (gold, contexts)):
        raise ValueError("topics, passages (and gold, contexts) must have the same length")
    if not topics:
        return []
    open_id, close_id = marker_ids(tokenizer)
    queries = [first_segment(tokenizer, t, config, contexts[i] if contexts is not None else None)
               for i, t in enumerate(topics)]
    longest_query = max(len(tokenizer(q, add_special_tokens=False)["input_ids"]) for q in queries)
    room = config.max_length - longest_query - tokenizer.num_special_tokens_to_add(pair=True)
    stride = min(config.stride, max(room // 2, 0))
    enc = tokenizer(queries, passages, truncation="only_second", max_length=config.max_length, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True)
    windows: list[Window] = []
    for w in range(len(enc["input_ids"])):
        pair = enc["overflow_to_sample_mapping"][w]
        ids = enc["input_ids"][w]
        seq = enc.sequence_ids(w)
        query_pos = [p for p, s in enumerate(seq) if s == 0]
        passage_pos = [p for p, s in enumerate(seq) if s == 1]
        q_open = next(p for p in query_pos if ids[p] == open_id)
        q_close = next(p for p in query_pos if ids[p] == close_id and p > q_open)
        offsets = [tuple(enc["offset_mapping"][w][p]) for p in passage_pos]
        window = Window(pair=pair, input_ids=list(ids),
                        token_type_ids=list(enc["token_type_ids"][w]) if "token_type_ids" in enc else None,
                        passage_positions=passage_pos, offsets=offsets, query_open=q_open, query_close=q_close)
        if gold is not None and gold[pair] is not None:
            found = token_span(offsets, *gold[pair])
            if found is not None:
                window.gold_start, window.gold_end = passage_pos[found[0]], passage_pos[found[1]]
        windows.append(window)
    return windows


def collate(windows: list[Window], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad a list of windows to the longest one (dynamic padding keeps short ECB+ sentences cheap)."""
    width = max(len(w.input_ids) for w in windows)
    n = len(windows)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    attention = torch.zeros((n, width), dtype=torch.long)
    passage_mask = torch.zeros((n, width), dtype=torch.bool)
    types = torch.zeros((n, width), dtype=torch.long)
    for r, w in enumerate(windows):
        input_ids[r, : len(w.input_ids)] = torch.tensor(w.input_ids)
        attention[r, : len(w.input_ids)] = 1
        passage_mask[r, w.passage_positions] = True
        if w.token_type_ids is not None:
            types[r, : len(w.token_type_ids)] = torch.tensor(w.token_type_ids)
    batch = {
        "input_ids": input_ids, "attention_mask": attention, "passage_mask": passage_mask,
        "query_open": torch.tensor([w.query_open for w in windows]),
        "query_close": torch.tensor([w.query_close for w in windows]),
        "gold_start": torch.tensor([w.gold_start for w in windows]),
        "gold_end": torch.tensor([w.gold_end for w in windows]),
    }
    if windows[0].token_type_ids is not None:
        batch["token_type_ids"] = types
    return batch
