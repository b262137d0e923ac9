"""Write: one model call per touched article, creating it or merging material into it.

Short articles are rewritten whole with the new material; long ones are merged by
section patches so that what the model does not touch stays byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date

from compiler.checks import (
    REFUSE_ABOVE,
    REMOVE_WITHOUT_RETRY,
    ArticleRefusedError,
    accept_summary,
    evidence_for,
    repair_shape,
    review_body,
    summary_from_body,
)
from compiler.classify import Target
from compiler.documents.citations import base_path, with_pages
from compiler.material import Material, fit_material
from compiler.schemas import ARTICLE_SCHEMA, PATCH_SCHEMA
from kb_ai.errors import LLMOutputError
from kb_ai.grounding import MarkupError, ends_on_sentence, strip_wrapper, to_markdown
from kb_ai.llm import LLM, Completion
from kb_ai.prompts import PromptLibrary
from wiki import Article, derive_keys

_FENCE = re.compile(r"^```(?:markdown|md)?\s*\n(.*)\n```\s*$", re.S)
_FRONTMATTER = re.compile(r"^---\n.*?\n---\n", re.S)
_HEADING = re.compile(r"^(#{2,6})\s+(.+?)\s*#*\s*$")


def clean_body(body: str, title: str) -> str:
    """Undo what models wrap an article in: a fence, frontmatter, the title as a heading."""
    text = body.strip()
    m = _FENCE.match(text)
    if m:
        text = m.group(1).strip()
    text = _FRONTMATTER.sub("", text, count=1).strip()
    lines = text.splitlines()
    if lines and re.match(r"^#\s+", lines[0]):
        heading = lines[0].lstrip("#").strip().lower()
        if heading == title.strip().lower() or len(lines) > 1:
            text = "\n".join(lines[1:]).strip()
    return text


def _clean_tags(tags: object) -> list[str]:
    if not isinstance(tags, list):
        return []
    out = [re.sub(r"\s+", "-", t.strip().lower().lstrip("#")) for t in tags if isinstance(t, str)]
    return list(dict.fromkeys(t for t in out if t))[:8]


def split_sections(body: str) -> list[tuple[str | None, str]]:
    """(heading text or None for the preamble, the section's whole text incl. heading line)."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    in_code = False
    for line in body.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        m = None if in_code else _HEADING.match(line)
        if m:
            sections.append((m.group(2).strip(), [line]))
        else:
            sections[-1][1].append(line)
    return [
        (h, "\n".join(lines))
        for h, lines in sections
        if h is not None or any(x.strip() for x in lines)
    ]


def apply_patches(body: str, patches: list[dict]) -> str:
    """Apply section patches; a patch naming an unknown section adds that section, and
    op "remove" takes a section out."""
    sections = split_sections(body)
    for patch in patches:
        if not isinstance(patch, dict):
            continue
        name = str(patch.get("section") or "").strip().lstrip("#").strip()
        content = str(patch.get("content") or "").strip()
        op = patch.get("op")
        index = next(
            (i for i, (h, _) in enumerate(sections) if h and h.lower() == name.lower()), None
        )
        if op == "remove":  # what no source supports any more leaves with its section
            if index is not None:
                del sections[index]
            continue
        if not name or not content:
            continue
        if index is None:
            sections.append((name, f"## {name}\n\n{content}"))
            continue
        heading, text = sections[index]
        first_line = text.splitlines()[0]
        if op == "replace":
            content = clean_body(content, name)
            sections[index] = (heading, f"{first_line}\n\n{content}")
        else:
            sections[index] = (heading, f"{text.rstrip()}\n\n{content}")
    return "\n\n".join(text.strip() for _, text in sections).strip()


async def compile_article(
    llm: LLM,
    prompts: PromptLibrary,
    target: Target,
    material: list[Material],
    existing: Article | None,
    *,
    patch_threshold: int,
    today: date | None = None,
    notes: list[str] | None = None,
    material_chars: int = 0,
    prompt_chars: int = 0,
) -> Article:
    """Create or merge one article from the material; returns it (not yet on disk).

    The reply is checked (compiler.checks) and, when it fails, written again once with
    the findings; what the checks changed to accept it is appended to ``notes`` (for
    log.md). Raises ArticleRefusedError when the second reply fails too.

    The writer sees at most ``material_chars`` of material, and a prompt of at most
    ``prompt_chars`` (0: no bound): past them, the items most related to the article
    (compiler/material.py). The checks still hold the article to all of its material.
    """
    day = (today or date.today()).isoformat()
    title = existing.title if existing else target.title
    kind = existing.type if existing else target.type
    previous = existing.body if existing else ""
    texts = [m.text for m in material]
    shown = _fitted(prompts, title, kind, existing, material, patch_threshold,
                    material_chars, prompt_chars, notes)  # fmt: skip
    findings: list[str] = []
    evidence = None
    for attempt in (1, 2):
        draft = await _draft(llm, prompts, title, kind, existing, shown, patch_threshold, findings)
        if evidence is None:  # indexed once the call is out: the model does not wait for it
            # a source's date is material too: the writer dates facts and history lines by it
            evidence = evidence_for(
                [*texts, *(m.source for m in material), *(m.date for m in material if m.date)],
                previous,
                title,
            )
        review = review_body(
            draft.body,
            evidence=evidence,
            material=texts,
            previous=previous,
            truncated=draft.truncated,
            bound=draft.bound,
            told=draft.told,
        )
        review.problems[:0] = draft.problems
        summary, summary_problem = accept_summary(draft.data.get("summary"), review.body, evidence)
        needs_retry = bool(review.problems) or review.removed_share > REMOVE_WITHOUT_RETRY
        if attempt == 1 and needs_retry:
            findings = review.findings + ([summary_problem] if summary_problem else [])
            draft.reply.reject()
            continue
        if review.problems:
            # Twice unusable in shape (a small model repeating itself, or cut off): keep
            # what is whole and said once, if that passes every check (ungrounded
            # passages removed as for any reply, refused above the same share).
            repaired = review_body(repair_shape(review.body), evidence=evidence,
                                   material=texts, previous=previous, told=draft.told)  # fmt: skip
            if (
                repaired.body.strip()
                and not repaired.problems
                and repaired.removed_share <= REFUSE_ABOVE
            ):
                draft.reply.reject()  # not cached: the repair is ours, not the reply's
                repaired.notes.append(
                    "the second reply failed too ("
                    + "; ".join(review.problems)[:200]
                    + "): kept its whole sentences, each once"
                )
                review = repaired
                break
        if review.problems or review.removed_share > REFUSE_ABOVE or not review.body.strip():
            draft.reply.reject()
            problems = review.problems or [
                f"{len(review.removed)} of {review.sentences} passages state what the "
                "material does not (" + "; ".join(review.ungrounded[:3]) + ")"
            ]
            raise ArticleRefusedError(target.path, problems)
        draft.reply.accept()  # after the last check of the reply
        break
    body = clean_body(review.body, title)  # a converted <h1> title goes too
    if notes is not None:
        notes += review.notes
        if review.removed:
            shown = "; ".join(repr(r if len(r) <= 100 else r[:97] + "...") for r in review.removed)
            notes.append(
                f"removed {len(review.removed)} ungrounded passage(s) "
                f"({'; '.join(review.ungrounded[:4])}): {shown}"
            )
    if summary is None:
        summary = summary_from_body(body)
        if notes is not None:
            notes.append(f"summary taken from the body: {summary_problem}")
    sources = list(existing.sources) if existing else []
    for m in material:
        if not m.by_hand and all(base_path(e) != m.source for e in sources):
            sources.append(m.source)
    sources = with_pages(sources, {m.source: m.text for m in material if not m.by_hand}, body)
    # a person's lines were material too: their commits are cited beside the sources
    edits = [label for m in material if m.by_hand for label in m.cite.split(", ") if label]
    tags = _clean_tags(draft.data.get("tags")) or (list(existing.tags) if existing else [])
    return Article(
        path=existing.path if existing else target.path,
        title=title,
        type=kind,
        summary=summary,
        tags=tags,
        sources=sources,
        created=existing.created if existing else day,
        updated=day,
        body=body + "\n",
        keys=derive_keys(body),
        edits=edits,
    )


FINDINGS_ROOM = 8_000  # characters kept free in the prompt for a retry's findings


def _fitted(
    prompts: PromptLibrary,
    title: str,
    kind: str,
    existing: Article | None,
    material: list[Material],
    patch_threshold: int,
    material_chars: int,
    prompt_chars: int,
    notes: list[str] | None,
) -> list[Material]:
    """The material the writer is shown: within its budgets (see compile_article)."""
    budget = material_chars or sum(len(m.text) for m in material)
    if prompt_chars:  # what the prompt holds besides the material's text
        empty = [replace(m, text="") for m in material]
        _, messages = _messages(prompts, title, kind, existing, empty, patch_threshold, [])
        around = sum(len(str(m.get("content") or "")) for m in messages) + FINDINGS_ROOM
        budget = min(budget, prompt_chars - around)
    subject = f"{title} {existing.summary if existing else ''}"
    shown, note = fit_material(material, max(budget, 0), subject)
    if note and notes is not None:
        notes.append(note)
    return shown


def _messages(
    prompts: PromptLibrary,
    title: str,
    kind: str,
    existing: Article | None,
    material: list[Material],
    patch_threshold: int,
    findings: list[str],
) -> tuple[bool, list[dict]]:
    """(whether the article is merged by patches, the prompt's messages)."""
    if existing and len(existing.body) > patch_threshold:
        sections = [h for h, _ in split_sections(existing.body) if h]
        return True, prompts.render(
            "patch",
            title=title,
            type=kind,
            existing=existing.body,
            sections=sections,
            material=material,
            findings=findings,
        )
    return False, prompts.render(
        "write",
        title=title,
        type=kind,
        existing=existing.body if existing else "",
        material=material,
        findings=findings,
    )


@dataclass
class _Draft:
    """One reply of the writer, as a body still to be checked."""

    reply: Completion
    data: dict
    body: str
    truncated: bool
    bound: int | None
    problems: list[str]
    told: str = ""  # what the model was told besides the material: rules, examples, findings


async def _draft(
    llm: LLM,
    prompts: PromptLibrary,
    title: str,
    kind: str,
    existing: Article | None,
    material: list[Material],
    patch_threshold: int,
    findings: list[str],
) -> _Draft:
    problems: list[str] = []
    patching, messages = _messages(
        prompts, title, kind, existing, material, patch_threshold, findings
    )
    told = "\n".join([*(m["content"] for m in messages if m["role"] == "system"), *findings])
    if existing and patching:
        reply = await llm.complete(
            messages, stage="write", schema=PATCH_SCHEMA, schema_name="patches"
        )
        data = reply.data if isinstance(reply.data, dict) else {}
        patches = data.get("patches")
        if not isinstance(patches, list):
            reply.reject()
            raise LLMOutputError("the model returned no section patches")
        patches = [_markdown_patch(p, problems) for p in patches if isinstance(p, dict)]
        body = apply_patches(existing.body, patches)
        return _Draft(reply, data, body, reply.finish_reason == "length", None, problems, told)
    reply = await llm.complete(
        messages, stage="write", schema=ARTICLE_SCHEMA, schema_name="article"
    )
    data = reply.data if isinstance(reply.data, dict) else {}
    raw_body = data.get("body")
    body = clean_body(strip_wrapper(raw_body), title) if isinstance(raw_body, str) else ""
    bound = ARTICLE_SCHEMA["properties"]["body"]["maxLength"]
    return _Draft(reply, data, body, reply.finish_reason == "length", bound, problems, told)


def _markdown_patch(patch: dict, problems: list[str]) -> dict:
    """The patch with its content in Markdown (HTML converted); a problem if it cannot be."""
    content = patch.get("content")
    if not isinstance(content, str):
        return patch
    try:
        markdown = to_markdown(content)
    except MarkupError as exc:
        problems.append(f"{exc}: write Markdown, not HTML")
        return patch
    if markdown.strip() and not ends_on_sentence(markdown):
        problems.append(f"the patch to {patch.get('section')!r} ends mid-sentence")
    return {**patch, "content": markdown}
