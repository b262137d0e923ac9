"""Languages: the script a question and a catalog are written in, and the search terms
a question needs in the catalog's language when the two differ.

An English question over a Chinese wiki shares no word with it: the shortlist ranks
pages by words the question does not have, and the abstain check (terms.py) declines it
as "not covered" before any model is asked. So before the shortlist, when the script
most of the question is written in is not the one most of the catalog is written in,
the model is asked once, under a bounded schema, for search terms in the catalog's
language(s); they are searched beside the question and count as the question's words.

Scripts are told apart by Unicode: Latin (accented letters included), CJK (Han and
kana: Chinese and Japanese share the ideographs the search cuts into bigrams), Hangul,
and every other script by its Unicode name (Cyrillic, Greek, Arabic, ...). Which one
dominates is weighed in tokens, not characters (candidates.py's measured ratios), so a
Chinese question with one English product name in it is still a Chinese question.

The reply is untrusted: at most ``MAX_TERMS`` terms of at most ``MAX_TERM_CHARS``
printable characters, and the caller keeps only the terms whose words the search index
holds (a term no page has cannot find a page, only cost a search).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kb_ai.prompts import PromptLibrary
from retrieval.candidates import CHARS_PER_TOKEN, CJK_CHARS_PER_TOKEN, OTHER_CHARS_PER_TOKEN

__all__ = [
    "MAX_TERMS",
    "TERMS_SCHEMA",
    "catalog_languages",
    "dominant_script",
    "parse_terms",
    "script_tokens",
    "terms_prompt",
]

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")

MAX_TERMS = 8
MAX_TERM_CHARS = 40
# A script counts as one of the catalog's languages from this share of its tokens on.
LANGUAGE_SHARE = 0.2

TERMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "terms": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_TERM_CHARS},
            "maxItems": MAX_TERMS,
        }
    },
    "required": ["terms"],
    "additionalProperties": False,
}

_LATIN_CLASS = "A-Za-z\u00c0-\u024f"
_CJK_CLASS = (
    "\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0003134f"
)
_HANGUL_CLASS = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_LATIN = re.compile(f"[{_LATIN_CLASS}]")
_CJK = re.compile(f"[{_CJK_CLASS}]")
_HANGUL = re.compile(f"[{_HANGUL_CLASS}]")
# Runs of each, counted by their lengths: a catalog sample is some 60,000 characters, and
# one match per run costs a fraction of one per character.
_LATIN_RUN = re.compile(f"[{_LATIN_CLASS}]+")
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_HANGUL_RUN = re.compile(f"[{_HANGUL_CLASS}]+")
# A letter (or a numeral other than a digit) of none of the three: only a text that has
# one can have letters of another script, so only such a text is read letter by letter.
_OTHER_LETTER = re.compile(f"[^\\W\\d_{_LATIN_CLASS}{_CJK_CLASS}{_HANGUL_CLASS}]")
_LINK = re.compile(r"\]\([^)\s]*\)")
_TITLE = re.compile(r"^- \[(.{1,200}?)\]\(")

DESCRIPTIONS = {
    "latin": "a language written in the Latin alphabet (such as English)",
    "cjk": "Chinese or Japanese (Han characters)",
    "hangul": "Korean (Hangul)",
}


def script_tokens(text: str) -> Counter[str]:
    """Estimated tokens of the letters of ``text`` in each script (digits, punctuation
    and spaces belong to no script)."""
    counts: Counter[str] = Counter()
    latin = _run_chars(_LATIN_RUN, text)
    if latin:
        counts["latin"] = latin / CHARS_PER_TOKEN
    if text.isascii():
        return counts
    cjk = _run_chars(_CJK_RUN, text)
    if cjk:
        counts["cjk"] = cjk / CJK_CHARS_PER_TOKEN
    hangul = _run_chars(_HANGUL_RUN, text)
    if hangul:
        counts["hangul"] = hangul / OTHER_CHARS_PER_TOKEN
    if _OTHER_LETTER.search(text) and latin + cjk + hangul < sum(map(str.isalpha, text)):
        for ch in text:
            if ch.isalpha() and not (_LATIN.match(ch) or _CJK.match(ch) or _HANGUL.match(ch)):
                name = unicodedata.name(ch, "")
                counts[name.split(" ", 1)[0].lower() or "unknown"] += 1 / OTHER_CHARS_PER_TOKEN
    return counts


def _run_chars(runs: re.Pattern[str], text: str) -> int:
    return sum(map(len, runs.findall(text)))


def dominant_script(text: str) -> str | None:
    """The script most of ``text``'s tokens are in; None when it has no letters."""
    counts = script_tokens(text)
    return counts.most_common(1)[0][0] if counts else None


def catalog_languages(lines: list[str], question_script: str) -> tuple[list[str], list[str]]:
    """For a question in ``question_script``: the catalog's scripts to ask search terms
    in (its dominant one and any other of at least ``LANGUAGE_SHARE`` of its tokens, the
    question's own left out) and a few of its titles as examples. ([], []) when the
    catalog's dominant script is the question's: its words are the catalog's words."""
    counts = script_tokens("\n".join(_LINK.sub("]", line) for line in lines))
    total = sum(counts.values())
    if not total or counts.most_common(1)[0][0] == question_script:
        return [], []
    scripts = [
        s for s, n in counts.most_common() if n >= LANGUAGE_SHARE * total and s != question_script
    ]
    titles = [m.group(1) for line in lines if (m := _TITLE.match(line))]
    step = max(len(titles) // 8, 1)
    return [DESCRIPTIONS.get(s, f"the {s} script") for s in scripts], titles[::step][:8]


def parse_terms(data: object) -> list[str]:
    """The search terms of a reply, bounded and cleaned; [] for anything malformed."""
    raw = data.get("terms") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        return []
    found: list[str] = []
    for term in raw[: MAX_TERMS * 2]:
        if not isinstance(term, str) or len(term) > MAX_TERM_CHARS:
            continue
        clean = " ".join("".join(ch for ch in term if ch.isprintable()).split())
        if clean and clean.casefold() not in (t.casefold() for t in found):
            found.append(clean)
    return found[:MAX_TERMS]


def terms_prompt(question: str, sample: Callable[[], list[str]]) -> list[dict] | None:
    """The messages asking for search terms in the catalog's language(s), or None when
    the question is written in the catalog's dominant script (or in no script: digits).
    ``sample`` gives catalog lines (Catalog.sample), read only when needed."""
    script = dominant_script(question)
    if script is None:
        return None
    languages, titles = catalog_languages(sample(), script)
    if not languages:
        return None
    return PROMPTS.render(
        "terms", question=question, languages=languages, titles=titles, max_terms=MAX_TERMS
    )
