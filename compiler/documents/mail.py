"""E-mail saved as .eml (RFC 822): the headers a reader needs, then the body (plain text,
or the HTML part's main content); attachments are named, not converted."""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from compiler.documents.document import Document, clean_text, has_text
from kb_ai.errors import DocumentError

HEADERS = ("From", "To", "Cc", "Date", "Subject")


def convert_eml(data: bytes, name: str) -> Document:
    msg = BytesParser(policy=policy.default).parsebytes(data)
    if not isinstance(msg, EmailMessage) or not any(msg.get(h) for h in HEADERS):
        raise DocumentError(f"{name}: not an e-mail message (no headers)", cause="corrupt")
    lines = [f"**{h}:** {' '.join(str(msg.get(h)).split())}" for h in HEADERS if msg.get(h)]
    body = msg.get_body(preferencelist=("plain", "html"))
    text = ""
    if body is not None:
        content = body.get_content()
        if body.get_content_subtype() == "html":
            from compiler.documents.webpage import convert_html

            raw = content.encode("utf-8") if isinstance(content, str) else content
            text = convert_html(raw, name).text
        else:
            text = clean_text(str(content))
    attached = [p.get_filename() for p in msg.iter_attachments() if p.get_filename()]
    parts = ["\n".join(lines), text]
    if attached:
        parts.append("Attachments (not converted): " + ", ".join(attached))
    out = "\n\n".join(p for p in parts if p)
    if not has_text(text) and not attached:
        raise DocumentError(f"{name}: the message has no body", cause="no_text")
    subject = " ".join(str(msg.get("Subject") or "").split())
    return Document(text=out, title=subject[:120], format="eml")
