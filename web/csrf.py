"""Proof that a state-changing request comes from kb-ai's own pages.

Every page carries a CSRF token: a secret of the knowledge base (``.kb-ai/web-csrf``,
made on first use, so pages left open survive a server restart), which another site's
page cannot read. The forms send it as the hidden field ``csrf``; web/static/kb.js sends
it as the ``X-KB-AI-CSRF`` header. Which requests must show it is decided in
web/auth.py; the page forms check their field here (through web/uploads.py ``page_form``,
which every state-changing page route reads first), after parsing the form.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request

from wiki import atomic_write_text

FIELD = "csrf"
HEADER = "x-kb-ai-csrf"
FILE = "web-csrf"
REFUSED = (
    "This request did not come from kb-ai's own pages (no valid CSRF token): "
    "reload the page and try again"
)


def load_secret(state_dir: Path) -> str:
    """The knowledge base's CSRF token, created (readable by its owner only) if missing."""
    path = state_dir / FILE
    try:
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        token = ""
    if len(token) < 32:
        token = secrets.token_urlsafe(32)
        atomic_write_text(path, token + "\n")
        os.chmod(path, 0o600)
    return token


def matches(offered: object, secret: str) -> bool:
    """Whether ``offered`` is the token (compared in constant time)."""
    return isinstance(offered, str) and hmac.compare_digest(offered.encode(), secret.encode())


def token_of(request: Request) -> str:
    return request.app.state.csrf


def check_form(request: Request, form: FormData) -> None:
    """Refuse (403) a page form that does not carry the page's token."""
    if not matches(form.get(FIELD), token_of(request)):
        raise HTTPException(403, REFUSED)
