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
