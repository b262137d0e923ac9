"""The selection budget's token estimate, by script."""

from __future__ import annotations

from retrieval.candidates import estimate_tokens, script_chars


def test_accented_latin_costs_what_plain_latin_costs() -> None:
    # Accented letters used to be charged a whole token each, so a catalog in French,
    # German or Norwegian showed far fewer lines than the same catalog in English.
    accented = "Søren Kierkegaard: réflexions sur l'angoisse, Straße, Łódź, café crème. " * 10
    plain = "Soren Kierkegaard: reflexions sur l'angoisse, Strasse, Lodz, cafe creme. " * 10

    assert estimate_tokens(accented) <= estimate_tokens(plain) * 1.05


def test_cjk_is_charged_a_token_a_character() -> None:
    text = "北京是中华人民共和国的首都。" * 10

    assert script_chars(text)["cjk"] == 140  # CJK punctuation included
    assert estimate_tokens(text) >= 140


def test_other_scripts_are_charged_conservatively() -> None:
    text = "Москва — столица России."

    assert estimate_tokens(text) >= len(text.replace(" ", "")) - 2
