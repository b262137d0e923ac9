"""Redaction: what must never be stored in raw/ or sent to a model.

Two things are removed from every source's text before it goes anywhere:

- ``<private>...</private>`` spans (any case, across lines; an unclosed one runs to the
  end of the text), replaced by ``[private]``;
- likely secrets, replaced by ``[REDACTED]``: provider keys recognised by their prefix
  and shape (OpenAI, Anthropic, GitHub, AWS, Slack, Google, Stripe, Hugging Face, npm),
  JWTs, ``Authorization:`` / ``Bearer`` credentials, PEM private key blocks, the
  password of ``scheme://user:password@host``, and literal values assigned to names
  like ``password``, ``api_key``, ``secret`` or ``token`` (also across a type
  annotation: ``password: str = "..."``).

The patterns aim at few false positives: ordinary prose, git SHAs, UUIDs, base64 in code
and code that merely *names* a secret (``password = getpass()``,
``api_key = os.environ["KEY"]``) are left alone. Replacing a marker again is a no-op, so
redacting twice counts nothing new.
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED]"
PRIVATE = "[private]"

_PRIVATE_SPAN = re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.I | re.S)

_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END \1PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)

# Provider keys, by prefix and shape. Each must stand alone as a token.
_TOKEN_SHAPES = [
    r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_\-]{20,}",  # Anthropic
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI (checked for digits below)
    r"gh[pousr]_[A-Za-z0-9]{36,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained tokens
    r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}",  # AWS access key ids
    r"xox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack tokens
    r"xapp-\d-[A-Za-z0-9\-]{10,}",  # Slack app tokens
    r"AIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access tokens
    r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"npm_[A-Za-z0-9]{36}",  # npm
    r"glpat-[A-Za-z0-9_\-]{20}",  # GitLab
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
]
_TOKENS = re.compile(r"(?<![A-Za-z0-9_\-])(?:" + "|".join(_TOKEN_SHAPES) + r")(?![A-Za-z0-9_\-])")

_SLACK_WEBHOOK = re.compile(r"(https://hooks\.slack\.com/services/)[A-Za-z0-9/]+")

_AUTH_HEADER = re.compile(
    r"(\b(?:Proxy-)?Authorization\s*[:=]\s*[\"']?(?:Bearer|Basic|Token|Bot|Digest)?\s*)"
    r"([A-Za-z0-9._~+/=\-]{8,})",
    re.I,
)
_BEARER = re.compile(r"(\bBearer\s+)([A-Za-z0-9._~+/\-]{20,}=*)")

# scheme://user:password@host (the password may not hold '/', '@' or whitespace)
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.\-]*://[^\s:/@\[\]]+:)([^\s/@]+)(@)", re.I)

_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:password|passwd|passphrase|pwd|secret|api[_\-]?key|apikey|"
    r"access[_\-]?key|private[_\-]?key|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|"
    r"client[_\-]?secret|token|credentials?)"
)
# name = "literal" / name: 'literal' / "name": "literal"
_ASSIGN_QUOTED = re.compile(
    r"(?<![A-Za-z0-9])(" + _SECRET_NAME + r")(\"?'?\s*(?<![=!<>:])(?::|=|:=)(?!=)\s*)"
    r"(\"|')([^\"'\n]{4,200})(\3)",
    re.I,
)
# name: Type = "literal" (a Python or TypeScript annotation between name and value)
_ASSIGN_ANNOTATED = re.compile(
    r"(?<![A-Za-z0-9])(" + _SECRET_NAME + r")(\s*:\s*[A-Za-z_][\w.\[\], |]{0,60}?\s*=(?!=)\s*)"
    r"(\"|')([^\"'\n]{4,200})(\3)",
    re.I,
)
# name=value / name: value, unquoted (env files, YAML, INI, command lines)
_ASSIGN_BARE = re.compile(
    r"(?<![A-Za-z0-9\"'])(" + _SECRET_NAME + r")(\s*(?<![=!<>])(?:=|:)(?!=)[ \t]*)"
    r"([^\s\"'`,;()\[\]{}<>]{4,200})",
    re.I,
)
_FLAG = re.compile(
    r"(--(?:password|passwd|token|api-key|apikey|secret|client-secret)[ =])"
    r"([^\s\"'`-][^\s\"'`]{3,})",
    re.I,
)

_PLACEHOLDER = re.compile(
    r"^(?:\$|%|\{|<|\*+$|x+$|\.\.\.|…|REDACTED|\[REDACTED\]|\[private\]|null$|none$|true$|"
    r"false$|undefined$|str$|bytes$|int$|string$|optional|secretstr)",
    re.I,
)
_CODE_LIKE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def redact(text: str) -> tuple[str, int]:
    """``text`` without private spans and likely secrets, and how many were removed."""
    count = 0

    def sub(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], s: str) -> str:
        def counted(m: re.Match[str]) -> str:
            nonlocal count
            out = repl(m)
            if out != m.group(0):
                count += 1
            return out

        return pattern.sub(counted, s)

    text = sub(_PRIVATE_SPAN, lambda m: PRIVATE, text)
    text = sub(_PEM, lambda m: REDACTED, text)
    text = sub(_TOKENS, _token, text)
    text = sub(_SLACK_WEBHOOK, lambda m: m.group(1) + REDACTED, text)
    text = sub(_AUTH_HEADER, _keep_prefix, text)
    text = sub(_BEARER, _keep_prefix, text)
    text = sub(_URL_PASSWORD, _url_password, text)
    text = sub(_ASSIGN_QUOTED, _quoted, text)
    text = sub(_ASSIGN_ANNOTATED, _quoted, text)
    text = sub(_ASSIGN_BARE, _bare, text)
    text = sub(_FLAG, _keep_prefix, text)
    return text, count


def _token(m: re.Match[str]) -> str:
    value = m.group(0)
    if value.startswith("sk-") and not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)):
        return value  # "sk-" followed by plain words, e.g. a slug
    return REDACTED


def _keep_prefix(m: re.Match[str]) -> str:
    if _PLACEHOLDER.match(m.group(2)):
        return m.group(0)
    return m.group(1) + REDACTED


def _url_password(m: re.Match[str]) -> str:
    if _PLACEHOLDER.match(m.group(2)):
        return m.group(0)
    return m.group(1) + REDACTED + m.group(3)


def _quoted(m: re.Match[str]) -> str:
    value = m.group(4)
    if _PLACEHOLDER.match(value.strip()) or value.strip() == "":
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{REDACTED}{m.group(5)}"


def _bare(m: re.Match[str]) -> str:
    name, op, value = m.group(1), m.group(2), m.group(3)
    if _PLACEHOLDER.match(value) or _CODE_LIKE.match(value):
        return m.group(0)
    if re.match(r"\[|[ \t]*=(?!=)", m.string[m.end() :]):
        return m.group(0)  # a type annotation ("TOKEN: Final[str] = ..."), not a value
    env_style = name.isupper() or name.startswith(("-", "."))
    literal = bool(re.search(r"[0-9!@#%^&*+/=~]", value))
    if not (env_style or literal):
        return m.group(0)  # a plain word: "token: the next one", password=password
    return f"{name}{op}{REDACTED}"
