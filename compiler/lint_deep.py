"""`kb-ai lint --deep`: the model reads the wiki for what no mechanical check can see.

Articles are grouped with those they share a source or a tag with (where a
contradiction can hide), and sent in batches that fit ``batch_chars``, each with the
extractions of its sources; at most ``budget`` calls are made, related groups first.
The reply is untrusted: a finding must name articles of its own batch and quote a
statement that one of them really contains, or it is dropped; its text is cut short.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from compiler.documents.citations import base_path
from compiler.extract import Extraction
from kb_ai.errors import KbAiError, LLMError
from kb_ai.llm import LLM, open_llm
from kb_ai.prompts import PromptLibrary
from kb_ai.settings import Settings
from wiki import Article, KnowledgeBase, list_articles, read_article, read_extraction
from wiki.lint import WARNING, Finding

PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")
KINDS = {"contradiction": "contradiction", "unsupported": "unsupported-claim"}
MAX_ISSUES = 20
MAX_TEXT = 300
LINT_SCHEMA = {
    "type": "object",
    "properties": {
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": sorted(KINDS)},
                    "paths": {"type": "array", "items": {"type": "string"}},
                    "statement": {"type": "string"},
                    "why": {"type": "string"},
                },
                "required": ["kind", "paths", "statement", "why"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["issues"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Shown:
    """One article as a batch shows it to the model."""

    path: str
    title: str
    body: str
    material: str

    @property
    def size(self) -> int:
        return len(self.body) + len(self.material) + len(self.title) + 40


async def deep_lint(
    kb: KnowledgeBase,
    settings: Settings,
    *,
    budget: int,
    batch_chars: int = 24_000,
    llm_factory: Callable[..., LLM] = open_llm,
) -> list[Finding]:
    """The model's findings over the whole wiki, in at most ``budget`` calls."""
    articles = _readable(kb)
    if not articles:
        return []
    batches = plan_batches(
        [_shown(kb, a, batch_chars) for a in _related_order(articles)], batch_chars
    )
    llm = llm_factory(settings, db_path=kb.state_db)
    findings: list[Finding] = []
    try:
        for batch in batches[:budget]:
            findings += await _check_batch(llm, batch)
    finally:
        if hasattr(llm, "aclose"):
            await llm.aclose()
    if len(batches) > budget:
        findings.append(
            Finding(
                "deep-budget",
                WARNING,
                "wiki",
                f"checked {budget} of {len(batches)} batches; raise --budget to read the rest",
            )
        )
    return findings


def plan_batches(shown: Sequence[Shown], batch_chars: int) -> list[list[Shown]]:
    """``shown`` cut into consecutive batches of at most ``batch_chars`` (one article at least)."""
    batches: list[list[Shown]] = []
    size = 0
    for item in shown:
        if not batches or size + item.size > batch_chars:
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += item.size
    return batches


async def _check_batch(llm: LLM, batch: list[Shown]) -> list[Finding]:
    messages = PROMPTS.render("lint", articles=batch)
    try:
        reply = await llm.complete(messages, stage="lint", schema=LINT_SCHEMA, schema_name="issues")
    except LLMError as exc:
        paths = ", ".join(a.path for a in batch[:3])
        return [
            Finding(
                "deep-failed", WARNING, batch[0].path, f"the model check of {paths} failed: {exc}"
            )
        ]
    return checked_issues(reply.data, batch)


def checked_issues(data: object, batch: list[Shown]) -> list[Finding]:
    """The model's issues that hold up: known kind, paths of the batch, a real quote."""
    issues = data.get("issues") if isinstance(data, dict) else None
    if not isinstance(issues, list):
        return []
    by_path = {a.path: a for a in batch}
    findings = []
    for issue in issues[:MAX_ISSUES]:
        if not isinstance(issue, dict) or issue.get("kind") not in KINDS:
            continue
        paths = [p for p in issue.get("paths") or [] if isinstance(p, str) and p in by_path]
        statement = _one_line(issue.get("statement"))
        if not paths or len(statement) < 8:
            continue
        quoted_in = [p for p in paths if _squash(statement) in _squash(by_path[p].body)]
        if not quoted_in:
            continue  # a statement no article of the batch makes: invented
        others = [p for p in paths if p != quoted_in[0]]
        why = _one_line(issue.get("why"))[:MAX_TEXT]
        also = f" (against {', '.join(others)})" if others else ""
        findings.append(
            Finding(
                KINDS[issue["kind"]],
                WARNING,
                quoted_in[0],
                f'"{statement[:MAX_TEXT]}"{also}: {why}',
            )
        )
    return findings


def _readable(kb: KnowledgeBase) -> list[Article]:
    out = []
    for rel in list_articles(kb):
        try:
            out.append(read_article(kb, rel))
        except (KbAiError, UnicodeDecodeError):
            continue  # the structural lint reports it
    return out


def _related_order(articles: list[Article]) -> list[Article]:
    """Articles ordered so that those sharing a source or a tag sit next to each other."""
    seen: set[str] = set()
    ordered: list[Article] = []
    by_key: dict[str, list[Article]] = {}
    for a in articles:
        for key in [*map(base_path, a.sources), *(f"tag:{t}" for t in a.tags)]:
            by_key.setdefault(key, []).append(a)
    for a in articles:
        stack = [a]
        while stack:
            item = stack.pop()
            if item.path in seen:
                continue
            seen.add(item.path)
            ordered.append(item)
            for key in [*map(base_path, item.sources), *(f"tag:{t}" for t in item.tags)]:
                stack.extend(reversed(by_key.get(key, [])))
    return ordered


def _shown(kb: KnowledgeBase, article: Article, batch_chars: int) -> Shown:
    parts = []
    for source in map(base_path, article.sources):  # an entry may name pages: "#pages=3-5"
        slug = source.removeprefix("raw/").removesuffix(".md")
        try:
            data = read_extraction(kb, f"extraction/{slug}.md").data
        except (KbAiError, OSError, UnicodeDecodeError):
            continue
        parts.append(f"({source})\n" + Extraction.from_data(data).to_markdown())
    cap = batch_chars // 2
    return Shown(article.path, article.title, article.body[:cap], "\n\n".join(parts)[:cap])


def _one_line(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _squash(text: str) -> str:
    return " ".join(text.replace("*", "").replace("`", "").casefold().split())
