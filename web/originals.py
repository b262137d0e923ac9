"""A converted document in the source view: its text cut at its page, slide and sheet
markers, each shown as a heading a citation can link to (#page-12), and its original
file (the PDF, the deck) offered for download beside it."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from compiler.documents.markers import MARKER
from kb_ai.errors import NotFoundError
from web.services import services
from wiki import KnowledgeBase

# Shown in the browser: nothing in them runs (a PDF viewer is sandboxed by the header).
INLINE_TYPES = {".pdf": "application/pdf"}


def render_marked(text: str, render: Any) -> str:
    """HTML of ``text``: each run between markers rendered by ``render`` (Markdown; given
    the run and the 0-based line of ``text`` it begins on), each marker as a small
    heading with an anchor ("page-12", "slide-3", "sheet-budget")."""
    out, last = [], 0
    for m in MARKER.finditer(text):
        out.append(render(text[last : m.start()], text.count("\n", 0, last)))
        kind, label = ("sheet", m.group(3)) if m.group(3) else (m.group(1), m.group(2))
        anchor = f"{kind}-" + re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
        shown = f"{kind} {label}" + (" (continued)" if "(continued)" in m.group(0) else "")
        out.append(
            f'<h6 class="marker" id="{escape(anchor)}"><a href="#{escape(anchor)}">'
            f"{escape(shown)}</a></h6>"
        )
        last = m.end()
    out.append(render(text[last:], text.count("\n", 0, last)))
    return "".join(out)


def original_file(kb: KnowledgeBase, rel: str) -> tuple[Any, str]:
    """(path, file name) of a raw source's original, or NotFoundError."""
    rel = (rel or "").strip().lstrip("/")
    path = kb.resolve(rel, under="raw")
    if rel.endswith(".md") or not path.is_file():
        raise NotFoundError(f"no original file {rel}")
    return path, path.name


async def original(request: Request) -> Response:
    svc = services(request)
    path, name = await svc.run(original_file, svc.kb, request.path_params["path"])
    suffix = path.suffix.lower()
    inline = suffix in INLINE_TYPES
    return FileResponse(
        path,
        media_type=INLINE_TYPES.get(suffix, "application/octet-stream"),
        filename=name,
        content_disposition_type="inline" if inline else "attachment",
        headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox"},
    )
