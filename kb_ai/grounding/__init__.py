"""Grounding: mechanical checks of what a model wrote against what it was given.

Shared by the compiler (before an article reaches the wiki) and retrieval (before an
answer reaches the user). Pure functions over text; no model calls, no files.

- :func:`extract_claims` / :class:`Claim`: names, numbers, dates and identifiers in a text.
- :class:`Evidence`: the material, indexed; ``evidence.unsupported(text)`` lists the claims
  of ``text`` it does not state; :func:`remove_unsupported` drops the sentences holding them
  (:func:`remove_passages` drops those any predicate picks); :func:`stated_verbatim`, a
  claim written in the material as it stands (the quick test before the index).
- :func:`negation_flips` / :class:`Negations`: sentences stating what the source negates.
- :func:`find_repetition`, :func:`ends_on_sentence`, :func:`fit_sentences`,
  :func:`split_sentences`, :func:`split_paragraphs`: the shape of a text.
- :func:`to_markdown`, :func:`is_html`, :func:`strip_wrapper`, :class:`MarkupError`: HTML
  in place of Markdown.
"""

from kb_ai.grounding.claims import Claim, extract_claims, normalise, number_value
from kb_ai.grounding.markup import MarkupError, html_tags, is_html, strip_wrapper, to_markdown
from kb_ai.grounding.shape import (
    Repeat,
    ends_on_sentence,
    find_repetition,
    fit_sentences,
    split_paragraphs,
    split_sentences,
)
from kb_ai.grounding.support import (
    Evidence,
    Flip,
    Negations,
    forget_remembered,
    negation_flips,
    remove_passages,
    remove_unsupported,
    stated_verbatim,
    unsupported_claims,
)

__all__ = [
    "Claim",
    "Evidence",
    "Flip",
    "MarkupError",
    "Negations",
    "Repeat",
    "ends_on_sentence",
    "extract_claims",
    "find_repetition",
    "forget_remembered",
    "fit_sentences",
    "html_tags",
    "is_html",
    "negation_flips",
    "normalise",
    "number_value",
    "remove_passages",
    "remove_unsupported",
    "split_paragraphs",
    "split_sentences",
    "strip_wrapper",
    "to_markdown",
    "stated_verbatim",
    "unsupported_claims",
]
