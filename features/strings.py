"""Mention-string features: tokens, character trigrams, acronyms, head words.

Trigram and acronym tokens are encoded so that Lucene's English analyzer (lower-casing, stop words,
Porter stemming) leaves them alone: a trigram becomes ``c`` + the zero-padded code points of its
characters, an acronym ``acr`` + its letters. Both sides (index and query) use the same encoding.
"""

from __future__ import annotations

import re

WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*", re.UNICODE)
PRONOUNS = frozenset(
    """i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves this that these those who whom
    whose which what one ones someone somebody anyone everyone nobody""".split()
)
FUNCTION_WORDS = frozenset(
    """a an the and or but if of at by for with about against between into through during before after
    above below to from up down in out on off over under again further then once here there when where why
    how all any both each few more most other some such no nor not only own same so than too very s t can
    will just don should now is are was were be been being have has had having do does did doing would
    could may might must shall as also""".split()
)


def tokens(text: str) -> list[str]:
    return WORD_RE.findall(text)


def is_pronoun(text: str) -> bool:
    words = tokens(text.lower())
    return len(words) == 1 and words[0] in PRONOUNS


def head_word(text: str) -> str:
    """The last content word, lower-cased: a cheap syntactic head for English noun/verb phrases."""
    words = [w for w in tokens(text.lower()) if w not in FUNCTION_WORDS]
    if not words:
        words = tokens(text.lower())
    return words[-1] if words else ""


def encode_chars(chars: str) -> str:
    return "c" + "".join(f"{ord(ch):07d}" for ch in chars)


def char_trigrams(text: str) -> list[str]:
    """Character trigrams of the lower-cased, space-padded mention (``#`` marks the edges)."""
    norm = " ".join(tokens(text.lower()))
    if not norm:
        return []
    # encode_chars of each three-character window, cut from the padded text's codes (7 digits a character, the
    # largest code point included) formatted once
    digits = "".join([f"{ord(ch):07d}" for ch in f"#{norm}#"])
    return ["c" + digits[i : i + 21] for i in range(0, len(digits) - 14, 7)]


def acronyms(text: str) -> list[str]:
    """Acronym keys of a mention: its initials when multi-word, itself when it looks like an acronym.

    ``World Health Organization`` -> ``acrwho``; ``WHO`` -> ``acrwho``; ``U.S.`` -> ``acrus``.
    """
    keys: list[str] = []
    compact = re.sub(r"[.\s]", "", text)
    if 2 <= len(compact) <= 8 and compact.isalpha() and compact.isupper():
        keys.append("acr" + compact.lower())
    words = [w for w in tokens(text) if w.lower() not in FUNCTION_WORDS]
    capital = [w for w in words if w[:1].isupper()]
    if len(capital) >= 2:
        keys.append("acr" + "".join(w[0] for w in capital).lower())
    return sorted(set(keys))


def token_set(text: str) -> set[str]:
    return {w for w in tokens(text.lower()) if w not in FUNCTION_WORDS}
