"""Within-document coreference chains.

Gold ``chain`` ids are used when the corpus has them. Otherwise a documented heuristic links
mentions of one document (union-find) when any of these holds:

* same normalised text (case-folded, function words dropped);
* both are entity names and one's tokens end the other's (``Reid`` ~ ``Tara Reid``);
* one is the acronym of the other (``WHO`` ~ ``World Health Organization``);
* both are events with the same head-word stem (first 5 letters: ``attacked`` ~ ``attack``).

Pronouns are never linked by the heuristic (it cannot resolve them).
"""

from __future__ import annotations

from features.strings import acronyms, head_word, is_pronoun, token_set, tokens
from hybrid.core.records import EVENT, Mention


class UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def _linked(a: Mention, b: Mention) -> bool:
    if is_pronoun(a.text) or is_pronoun(b.text):
        return False
    if a.kind != b.kind and a.kind is not None and b.kind is not None:
        return False
    ta, tb = token_set(a.text), token_set(b.text)
    if ta and ta == tb:
        return True
    if a.kind == EVENT:
        ha, hb = head_word(a.text), head_word(b.text)
        return len(ha) >= 4 and len(hb) >= 4 and ha[:5] == hb[:5]
    wa, wb = [w.lower() for w in tokens(a.text)], [w.lower() for w in tokens(b.text)]
    if wa and wb and a.text[:1].isupper() and b.text[:1].isupper():
        short, long_ = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
        if long_[-len(short) :] == short:
            return True
    acr_a, acr_b = set(acronyms(a.text)), set(acronyms(b.text))
    return bool(acr_a & acr_b) and (len(wa) == 1 or len(wb) == 1)


def link_keys(m: Mention) -> set[tuple[str, object]]:
    """Keys two mentions must share for :func:`_linked` to hold (same token set, event head stem, last
    word of a name, an acronym): comparing only mentions that share a key keeps chaining linear-ish in
    the number of mentions instead of quadratic (a raw document has hundreds of candidates)."""
    if is_pronoun(m.text):
        return set()
    ts = token_set(m.text)
    keys: set[tuple[str, object]] = {("tokens", frozenset(ts))} if ts else set()
    if m.kind in (EVENT, None):
        keys.add(("head", head_word(m.text)[:5]))
    words = tokens(m.text)
    if words and m.text[:1].isupper():
        keys.add(("last", words[-1].lower()))
    keys.update(("acronym", a) for a in acronyms(m.text))
    return keys


def candidate_pairs(mentions: list[Mention]) -> list[tuple[int, int]]:
    """The pairs ``i < j`` that share a :func:`link_keys` key (a superset of the pairs :func:`_linked` links)."""
    buckets: dict[tuple[str, object], list[int]] = {}
    for n, m in enumerate(mentions):
        for key in link_keys(m):
            buckets.setdefault(key, []).append(n)
    pairs = {(a, b) for members in buckets.values() for x, a in enumerate(members) for b in members[x + 1 :]}
    return sorted(pairs)


def heuristic_chains(mentions: list[Mention]) -> list[int]:
    """Chain number for every mention of one document (mentions in document order)."""
    uf = UnionFind(len(mentions))
    for i, j in candidate_pairs(mentions):
        if _linked(mentions[i], mentions[j]):
            uf.union(i, j)
    return [uf.find(i) for i in range(len(mentions))]
