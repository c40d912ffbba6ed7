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

Pairs are encoded from pre-tokenised pieces (:class:`PairEncoder`): the HF *fast* tokenizer's Rust backend
(:mod:`features.tokens`) tokenises each distinct query side and each distinct passage once,
and every window is assembled from their token ids with the tokenizer's own pair template (read from one probe
pair, so any local checkpoint works, whatever its special tokens), windowed as its pair API
(``truncation="only_second"`` with overflowing windows) would.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import chain

import numpy as np
import torch

from features.tokens import require_fast, token_ids, token_ids_and_offsets
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
        return self.offsets[self.passage_positions.index(start)][0], self.offsets[self.passage_positions.index(end)][1]


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
    (ids,), (offsets,) = token_ids_and_offsets(tokenizer, [marked])
    return _cut_query(tokenizer, marked, ids, offsets, marker_ids(tokenizer), max_tokens)


def _cut_query(tokenizer, marked: str, ids: list[int], offsets: list[tuple[int, int]], markers: tuple[int, int],
               max_tokens: int) -> str:
    """:func:`query_string` of the marked text ``marked`` from its token ids and offsets (no special tokens)."""
    if len(ids) <= max_tokens:
        return marked
    open_id, close_id = markers
    i, j = ids.index(open_id), ids.index(close_id)
    if j - i + 1 > max_tokens:  # the mention alone is too long: keep its head, close the marker
        head = marked[offsets[i][0] : offsets[i + max_tokens - 3][1]]
        return f"{head} {MARK_CLOSE}"
    lo = max(0, i - (max_tokens - (j - i + 1)) // 2)
    hi = min(len(ids), lo + max_tokens)
    lo = max(0, hi - max_tokens)
    while True:  # re-tokenising a cut string can add tokens (a word cut in its middle): shrink until it fits
        cut = marked[offsets[lo][0] : offsets[hi - 1][1]]
        if len(token_ids(tokenizer, [cut])[0]) <= max_tokens or hi - lo <= j - i + 1:
            return cut
        if i - lo >= hi - 1 - j:
            lo += 1
        else:
            hi -= 1


def cut_tokens(tokenizer, text: str, max_tokens: int) -> str:
    """``text`` cut at a token boundary to its first ``max_tokens`` tokens."""
    (ids,), (offsets,) = token_ids_and_offsets(tokenizer, [text])
    return _cut_text(text, ids, offsets, max_tokens)


def _cut_text(text: str, ids: list[int], offsets: list[tuple[int, int]], max_tokens: int) -> str:
    """:func:`cut_tokens` of ``text`` from its token ids and offsets (no special tokens)."""
    if len(ids) <= max_tokens:
        return text
    return text[: offsets[max_tokens - 1][1]] if max_tokens > 0 else ""


def token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """Indices (first, last) of the tokens covering chars [start, end), or None if not fully covered."""
    inside = [k for k, (a, b) in enumerate(offsets) if b > start and a < end and b > a]
    if not inside or offsets[inside[0]][0] > start or offsets[inside[-1]][1] < end:
        return None
    return inside[0], inside[-1]


class PairEncoder:
    """Windows of (query, passage) pairs assembled from pre-tokenised pieces.

    The tokenizer's pair call tokenises each side of a pair alone, then adds the template's special tokens
    and cuts the second side into overflowing windows. This encoder does the same from pieces it tokenises
    once: each distinct query side (the marked query, cut by :func:`query_string`; with document context,
    followed by the two leads cut by :func:`cut_tokens`, separated by the tokenizer's separator) and each
    distinct passage text (one batched call, with character offsets). Windows are then slices of token ids:
    the same ids, token types, offsets and windows as the pair call (tests/ltr/test_reader_encoding.py
    compares them), with no per-pair tokenisation. Pieces are kept for the encoder's life (one
    :func:`ltr.reader.infer.score_pairs` call), so a passage shared by many queries is tokenised once.

    The stride is clamped to half the passage room of the pair's own query side (``stride < room`` is what
    the tokenizer's windowing requires), so a pair's windows do not depend on the other pairs encoded with it.
    """

    def __init__(self, tokenizer, config: EncodingConfig):
        require_fast(tokenizer)
        self.tokenizer, self.config = tokenizer, config
        self.open_id, self.close_id = marker_ids(tokenizer)
        probe = tokenizer("x", "y")
        sequence = probe.sequence_ids(0)
        ids = probe["input_ids"]
        first = [p for p, s in enumerate(sequence) if s == 0]
        second = [p for p, s in enumerate(sequence) if s == 1]
        self._prefix = ids[: first[0]]
        self._middle = ids[first[-1] + 1 : second[0]]
        self._suffix = ids[second[-1] + 1 :]
        types = probe.get("token_type_ids")
        # Token types of the template's parts (each side of a pair has one type): prefix, first side, middle,
        # second side, suffix.
        self._types = None if types is None else (
            types[: first[0]], types[first[0]], types[first[-1] + 1 : second[0]], types[second[0]],
            types[second[-1] + 1 :])
        self._sep = f" {tokenizer.sep_token} " if tokenizer.sep_token else " | "
        self._queries: dict[tuple[str, tuple[str, str] | None], tuple[list[int], int, int]] = {}
        self._leads: dict[str, str] = {}
        self._passages: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}

    def _tokenise(self, topics: list[Topic], passages: list[str],
                  contexts: list[tuple[str, str]] | None) -> list[tuple[str, tuple[str, str] | None]]:
        """Tokenise the query sides and passages not seen yet (one batched backend call for each kind of piece);
        the pairs' query keys.

        A query side is the marked query, cut by :func:`query_string`, then (with document context) the lead of
        the query's document and the lead of the candidate's, each cut to ``context_tokens`` by :func:`cut_tokens`.
        The passage side stays the passage alone, so span prediction never sees a lead."""
        keys = []
        new: dict[tuple[str, tuple[str, str] | None], None] = {}
        for i, topic in enumerate(topics):
            context = contexts[i] if self.config.uses_context and contexts is not None else None
            key = (topic.marked(MARK_OPEN, MARK_CLOSE), context)
            if key not in self._queries:
                if self.config.uses_context and context is None:
                    raise ConfigError(None, None, "this reader was trained with document context: give each pair the "
                                                  "leads of the query's and the candidate's documents "
                                                  "(ltr.reader.context.LeadContext)")
                new[key] = None
            keys.append(key)
        if new:
            marked = list(dict.fromkeys(key[0] for key in new))
            markers = (self.open_id, self.close_id)
            cut = {text: _cut_query(self.tokenizer, text, ids, offsets, markers, self.config.max_query_tokens)
                   for text, ids, offsets in zip(marked, *token_ids_and_offsets(self.tokenizer, marked), strict=True)}
            if self.config.uses_context:
                leads = list(dict.fromkeys(lead for key in new for lead in key[1] if lead not in self._leads))
                texts = [" ".join(lead.split()) for lead in leads]
                for lead, text, ids, offsets in zip(leads, texts, *token_ids_and_offsets(self.tokenizer, texts),
                                                    strict=True):
                    self._leads[lead] = _cut_text(text, ids, offsets, self.config.context_tokens)
                segments = [f"{cut[query]}{self._sep}{self._leads[ours]}{self._sep}{self._leads[theirs]}"
                            for query, (ours, theirs) in new]
            else:
                segments = [cut[query] for query, _ in new]
            for key, ids in zip(new, token_ids(self.tokenizer, segments), strict=True):
                q_open = ids.index(self.open_id)
                q_close = ids.index(self.close_id, q_open + 1)
                self._queries[key] = (ids, q_open, q_close)
        fresh = list(dict.fromkeys(p for p in passages if p not in self._passages))
        for text, ids, offsets in zip(fresh, *token_ids_and_offsets(self.tokenizer, fresh), strict=True):
            self._passages[text] = (ids, offsets)
        return keys

    def encode(self, topics: list[Topic], passages: list[str], gold: list[tuple[int, int] | None] | None = None,
               contexts: list[tuple[str, str]] | None = None) -> list[Window]:
        """Windows for pairs (topics[i], passages[i]), in pair order (a pair's windows in passage order);
        ``gold[i]`` = char span of the gold mention in passages[i]; ``contexts[i]`` = (lead of the query's
        document, lead of passages[i]'s), needed when ``config.uses_context``."""
        if len(topics) != len(passages) or any(x is not None and len(x) != len(passages) for x in (gold, contexts)):
            raise ValueError("topics, passages (and gold, contexts) must have the same length")
        if not topics:
            return []
        if self.config.uses_context and contexts is None:
            raise ConfigError(None, None, "this reader was trained with document context: give each pair the leads "
                                          "of the query's and the candidate's documents "
                                          "(ltr.reader.context.LeadContext)")
        keys = self._tokenise(topics, passages, contexts)
        max_length = self.config.max_length
        prefix, middle, suffix = self._prefix, self._middle, self._suffix
        windows: list[Window] = []
        for pair, key in enumerate(keys):
            query, q_open, q_close = self._queries[key]
            ids, offsets = self._passages[passages[pair]]
            head = prefix + query + middle
            room = max_length - len(head) - len(suffix)
            stride = min(self.config.stride, max(room // 2, 0))
            n = len(ids)
            if n > room and room < 1:
                raise ConfigError(None, None, f"a query side of {len(query)} tokens leaves {room} passage tokens "
                                              f"in max_length {max_length}")
            for start in range(0, max(n, 1), max(room - stride, 1)):
                stop = min(start + room, n)
                window = Window(pair=pair, input_ids=head + ids[start:stop] + suffix, token_type_ids=None,
                                passage_positions=list(range(len(head), len(head) + stop - start)),
                                offsets=offsets[start:stop], query_open=len(prefix) + q_open,
                                query_close=len(prefix) + q_close)
                if self._types is not None:
                    t_prefix, t_query, t_middle, t_passage, t_suffix = self._types
                    window.token_type_ids = (t_prefix + [t_query] * len(query) + t_middle
                                             + [t_passage] * (stop - start) + t_suffix)
                if gold is not None and gold[pair] is not None:
                    found = token_span(window.offsets, *gold[pair])
                    if found is not None:
                        window.gold_start = window.passage_positions[found[0]]
                        window.gold_end = window.passage_positions[found[1]]
                windows.append(window)
                if stop == n:
                    break
        return windows


def encode_pairs(tokenizer, topics: list[Topic], passages: list[str], config: EncodingConfig,
                 gold: list[tuple[int, int] | None] | None = None,
                 contexts: list[tuple[str, str]] | None = None) -> list[Window]:
    """Windows for pairs (topics[i], passages[i]) (see :meth:`PairEncoder.encode`)."""
    return PairEncoder(tokenizer, config).encode(topics, passages, gold, contexts)


def collate(windows: list[Window], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad a list of windows to the longest one (dynamic padding keeps short ECB+ sentences cheap).

    Each field is filled in one array operation over the windows' concatenated tokens (no tensor per window)."""
    n = len(windows)
    lengths = np.fromiter((len(w.input_ids) for w in windows), dtype=np.int64, count=n)
    width = int(lengths.max())
    filled = np.arange(width) < lengths[:, None]  # row-major order of the filled cells = the windows' token order
    input_ids = np.full((n, width), pad_id, dtype=np.int64)
    input_ids[filled] = np.fromiter(chain.from_iterable(w.input_ids for w in windows), dtype=np.int64,
                                    count=int(lengths.sum()))
    passage_mask = np.zeros((n, width), dtype=bool)
    passage_lengths = [len(w.passage_positions) for w in windows]
    passage_mask[np.repeat(np.arange(n), passage_lengths),
                 np.fromiter(chain.from_iterable(w.passage_positions for w in windows), dtype=np.int64,
                             count=sum(passage_lengths))] = True
    batch = {
        "input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(filled.astype(np.int64)),
        "passage_mask": torch.from_numpy(passage_mask),
        "query_open": torch.tensor([w.query_open for w in windows]),
        "query_close": torch.tensor([w.query_close for w in windows]),
        "gold_start": torch.tensor([w.gold_start for w in windows]),
        "gold_end": torch.tensor([w.gold_end for w in windows]),
    }
    if windows[0].token_type_ids is not None:
        types = np.zeros((n, width), dtype=np.int64)
        types[filled] = np.fromiter(chain.from_iterable(w.token_type_ids for w in windows), dtype=np.int64,
                                    count=int(lengths.sum()))
        batch["token_type_ids"] = torch.from_numpy(types)
    return batch
