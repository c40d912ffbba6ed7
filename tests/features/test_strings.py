from features.strings import acronyms, char_trigrams, head_word, is_pronoun


def test_acronyms_of_phrase_and_of_acronym_agree():
    assert acronyms("World Health Organization") == ["acrwho"]
    assert acronyms("WHO") == ["acrwho"]
    assert acronyms("U.S.") == ["acrus"]
    assert acronyms("earthquake") == []


def test_trigrams_are_analyzer_proof_and_shared_by_variants():
    a, b = set(char_trigrams("Tara Reid")), set(char_trigrams("tara  reid"))
    assert a == b and len(a) == len("#tara reid#") - 2
    assert all(t.startswith("c") and t[1:].isdigit() for t in a)
    assert char_trigrams("...") == []


def test_head_word_and_pronouns():
    assert head_word("the 2010 Yushu earthquake") == "earthquake"
    assert head_word("checked into") == "checked"
    assert is_pronoun("She") and not is_pronoun("Sheen")


def test_char_trigrams_are_the_encoded_windows_of_the_padded_text():
    """Each trigram is encode_chars of one three-character window of ``#<tokens, lower-cased>#``, code points of
    any size (7 digits hold the largest, U+10FFFF) included."""
    from features.strings import char_trigrams, encode_chars, tokens

    for text in ["Tara Reid", "a", "", "  ", "U.S.", "İstanbul Straße", "東京 \U0001F600 \U0010FFFF", "don’t-stop"]:
        norm = " ".join(tokens(text.lower()))
        padded = f"#{norm}#"
        expected = [encode_chars(padded[i : i + 3]) for i in range(len(padded) - 2)] if norm else []
        assert char_trigrams(text) == expected
    assert char_trigrams("a") == ["c" + "0000035" + "0000097" + "0000035"]
