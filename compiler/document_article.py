"""The document article of a long document: its outline, each section with the pages it
spans, and links to the subject articles the document fed. Built by kb-ai from the
converted text and the run's plan, with no model call (nothing in it can be invented):
the subject articles carry what the document says, this one shows how it is laid out
and where each part of it went.

A document is long when it was extracted in more than one piece and its outline (the
two top heading levels) has at least three entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date

from compiler.documents.sections import outline_sections, pages_of
from compiler.hand_edits import Held, look_at, store_merged
from compiler.recovery import journaled
from compiler.state import Plan, Work
from wiki import Article, KnowledgeBase, derive_keys, read_article

KIND = "reference"


def document_article(
    path: str,
    title: str,
    raw_path: str,
    text: str,
    fed: list[tuple[str, str]],
    *,
    existing: Article | None = None,
    today: date | None = None,
) -> Article | None:
    """The document article at ``path`` of the document whose converted ``text`` is in
    ``raw_path``; ``fed``: (path, title) of the subject articles it fed. None when the
    document has no outline worth one."""
    sections = outline_sections(text)
    if len(sections) < 3:
        return None
    day = (today or date.today()).isoformat()
    lines = ["## Outline", ""]
    lines += [f"{'  ' * s.level}- {s.title}{pages_of(s)}" for s in sections]
    if fed:
        lines += ["", "## Articles from this document", ""]
        lines += [f"- [[{p}|{t}]]" for p, t in fed]
    body = "\n".join(lines) + "\n"
    pages = [s.last for s in sections if s.last is not None]
    size = f" ({max(pages)} pages)" if pages else ""
    return Article(
        path=path,
        title=f"{title}: outline",
        type=KIND,
        summary=f"The outline of {title}{size}, and the articles compiled from it."[:200],
        tags=["document"],
        sources=[raw_path],
        created=existing.created if existing else day,
        updated=day,
        body=body,
        keys=derive_keys(body),
    )


def write_document_articles(
    kb: KnowledgeBase,
    work: Sequence[Work],
    plan: Plan,
    written: Mapping[str, Article],
) -> tuple[dict[str, tuple[Article, bool]], list[Held]]:
    """The document article of each long document the run compiled, written once the
    subject articles it links to are: path -> (the article stored, whether it existed);
    and those not written because a person's edit of them meets the update (review)."""
    outlines: dict[str, tuple[Article, bool]] = {}
    held: list[Held] = []
    for i, w in enumerate(work):
        src = w.source
        if not w.usable or src.kind != "document" or len(src.chunks) < 2:
            continue
        fed = [(p, written[p].title) for p in plan.articles_of(i) if p in written]
        if not fed:
            continue
        # named apart from the subject articles (the writer often names one after the document)
        path = f"wiki/{KIND}/{w.slug}-outline.md"
        if path in plan.articles:  # the writer chose this path for a subject of its own
            continue
        existing = read_article(kb, path) if kb.resolve(path, under="wiki").is_file() else None
        if existing is not None and existing.sources != [w.raw_path]:
            continue  # an article of other sources took the path: left as it is
        article = document_article(path, src.title, w.raw_path, src.text, fed, existing=existing)
        if article is None:
            continue
        with journaled(kb, path):
            look = look_at(kb, path) if existing else None
            stored = store_merged(kb, article, look, [])
        if isinstance(stored, Held):
            held.append(stored)
            continue
        outlines[path] = (stored.article, existing is not None)
    return outlines, held
