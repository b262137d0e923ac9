"""Raw sources: each source as submitted, normalised to text, with its provenance."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_ai.errors import UsageError
from wiki._frontmatter import dump_document, load_document
from wiki.files import atomic_write_bytes, atomic_write_text
from wiki.slugs import is_slug

if TYPE_CHECKING:
    from wiki.layout import KnowledgeBase

KINDS = ("note", "document", "transcript")
# The extension of an original kept beside its converted text: short, lower-case, never .md.
_ORIGINAL_SUFFIX = re.compile(r"\.(?!md$)[a-z0-9]{1,8}")


@dataclass
class RawSource:
    """One source in raw/<slug>.md. ``checksum`` is the sha256 of the original bytes."""

    slug: str
    title: str
    origin: str
    kind: str
    checksum: str
    ingested_at: str
    text: str
    original: bytes = b""  # a converted document's own bytes (a PDF, ...), kept beside it
    original_suffix: str = ""

    @property
    def original_path(self) -> str:
        """Where the original file is kept: "raw/<slug>.pdf" ("" for a text source)."""
        return f"raw/{self.slug}{self.original_suffix}" if self.original_suffix else ""

    @property
    def path(self) -> str:
        return f"raw/{self.slug}.md"


def write_raw(kb: KnowledgeBase, src: RawSource) -> str:
    """Store ``src`` atomically and return its KB-relative path, "raw/<slug>.md". Its
    provenance names who submitted it (``submitted_by``: the actor ``kb`` acts for)."""
    if not is_slug(src.slug):
        raise UsageError(f"{src.slug!r} is not a valid slug for a raw source")
    meta = {
        "title": src.title,
        "origin": src.origin,
        "kind": src.kind,
        "checksum": src.checksum,
        "ingested_at": src.ingested_at,
    }
    if kb.actor is not None:  # who submitted it: the actor the compile runs for
        meta["submitted_by"] = kb.actor.label
    rel = src.path
    if src.original and _ORIGINAL_SUFFIX.fullmatch(src.original_suffix):
        meta["original"] = src.original_path
        atomic_write_bytes(kb.resolve(src.original_path, under="raw"), src.original)
    atomic_write_text(kb.resolve(rel, under="raw"), dump_document(meta, src.text))
    return rel


def read_raw(kb: KnowledgeBase, rel: str) -> RawSource:
    """The raw source at ``rel`` ("raw/<slug>.md")."""
    path = kb.resolve(rel, under="raw")
    meta, text = load_document(path.read_text(encoding="utf-8"), kb.relpath(path))
    return RawSource(
        slug=path.stem,
        title=_text(meta.get("title")) or path.stem,
        origin=_text(meta.get("origin")),
        kind=_text(meta.get("kind")) or "document",
        checksum=_text(meta.get("checksum")),
        ingested_at=_text(meta.get("ingested_at")),
        text=text,
        original_suffix=_original_suffix(meta.get("original"), path.stem),
    )


def list_raw(kb: KnowledgeBase) -> list[str]:
    """The KB-relative paths of all raw sources, sorted."""
    if not kb.raw_dir.is_dir():
        return []
    return sorted(f"raw/{p.name}" for p in kb.raw_dir.glob("*.md") if not p.name.startswith("."))


def _original_suffix(value: object, slug: str) -> str:
    """The suffix of a raw source's original file, when its frontmatter names a sane one."""
    text = _text(value)
    suffix = text.removeprefix(f"raw/{slug}")
    return suffix if text.startswith(f"raw/{slug}.") and _ORIGINAL_SUFFIX.fullmatch(suffix) else ""


def _text(value: object) -> str:
    return "" if value is None else str(value)
