"""When the article is thinner than its source: the passage of a page's own source (in
raw/) that answers the question, read as a page of its own and cited as the source.

A small model can compile a 120-turn meeting into "a meeting where the team discusses
the design": no question about it is answered from the wiki, although raw/ holds the
whole meeting. So when the pages read do not cover a question, the sources those pages
were compiled from (their frontmatter ``sources``, and only those: never a search over
all of raw/) are searched for the lines that hold most of the question's content terms;
the best run of lines of each, with a little context, becomes a Page whose path is the
source's (``raw/<slug>.md``) and whose lines are the file's, so an answer cites
``[Title (source)](raw/x.md#L40-L44)``. Whether it covers the question is decided as
for any page read (coverage.py).
"""

from __future__ import annotations

from kb_ai.errors import KbAiError
from retrieval.pages import Page
from retrieval.terms import content_terms, terms
from wiki import KnowledgeBase, body_start_line, read_article, read_raw

__all__ = ["source_passages"]

PASSAGE_LINES = 12  # the most lines a passage's best run may take
CONTEXT_LINES = 2  # lines kept on each side of it
PASSAGE_CHARS = 4_000
MAX_SOURCES = 6


def sources_of(kb: KnowledgeBase, pages: list[Page]) -> list[str]:
    """The raw sources of the wiki pages read, in page order, each once."""
    found: list[str] = []
    for page in pages:
        if not page.path.startswith("wiki/"):
            continue
        try:
            article = read_article(kb, page.path)
        except (OSError, ValueError, KbAiError):
            continue
        for entry in article.sources:
            rel = entry.partition("#")[0].strip()
            if rel.startswith("raw/") and rel.endswith(".md") and rel not in found:
                found.append(rel)
    return found[:MAX_SOURCES]


def _read(kb: KnowledgeBase, rel: str) -> tuple[str, list[str], int] | None:
    """(title, lines, line of the first) of the raw source ``rel``; None if unreadable."""
    try:
        source = read_raw(kb, rel)
        text = kb.resolve(rel, under="raw").read_text(encoding="utf-8")
    except (OSError, ValueError, KbAiError):
        return None
    return source.title, source.text.split("\n"), body_start_line(text, source.text)


def passage(question: str, rel: str, title: str, lines: list[str], first: int) -> Page | None:
    """The run of ``lines`` (at most PASSAGE_LINES, with CONTEXT_LINES each side) that
    holds the most of ``question``'s content terms; None when no line holds two of them
    (or one, for a question of one term)."""
    wanted = content_terms(question)
    if not wanted:
        return None
    held = [terms(line) & wanted for line in lines]
    best: tuple[int, int, int] | None = None  # (-terms held, length, start)
    for i, here in enumerate(held):
        if not here:
            continue
        union: set[str] = set()
        for j in range(i, min(i + PASSAGE_LINES, len(lines))):
            union |= held[j]
            if held[j]:
                key = (-len(union), j - i, i)
                best = key if best is None or key < best else best
    if best is None or -best[0] < min(2, len(wanted)):
        return None
    start = max(best[2] - CONTEXT_LINES, 0)
    end = min(best[2] + best[1] + CONTEXT_LINES, len(lines) - 1)
    while start < end and not lines[start].strip():
        start += 1
    text = "\n".join(lines[start : end + 1]).rstrip()[:PASSAGE_CHARS]
    return Page(rel, f"{title} (source)", text, False, first_line=first + start)


def source_passages(kb: KnowledgeBase, pages: list[Page], question: str) -> list[Page]:
    """The passages of the pages' own sources that hold the question's terms, best
    first (see the module); [] when none does."""
    read = {p.path for p in pages}
    found = []
    for rel in sources_of(kb, pages):
        if rel in read:
            continue
        source = _read(kb, rel)
        if source is None:
            continue
        page = passage(question, rel, *source)
        if page is not None:
            found.append((len(terms(page.text) & content_terms(question)), page))
    return [p for _, p in sorted(found, key=lambda f: -f[0])][:2]
