"""Redaction: what must never be stored in raw/ or sent to a model.

Two things are removed from every source's text before it goes anywhere:

- ``<private>...</private>`` spans (any case, across lines; an unclosed one runs to the
  end of the text), replaced by ``[private]``;
- likely secrets, replaced by ``[REDACTED]``: provider keys recognised by their prefix
  and shape (OpenAI, Anthropic, GitHub, AWS, Slack, Google, Stripe, Hugging Face, npm),
  JWTs, ``Authorization:`` / ``Bearer`` credentials, PEM private key blocks, the
  password of ``scheme://user:password@host`` and of ``curl -u user:password``, literal
  values assigned to names like ``password``, ``api_key``, ``secret`` or ``token`` (also
  across a type annotation: ``password: str = "..."``; a plain word too when
  ``password: word`` is a line of its own), a password stated in prose ("the password
  for the db is X", when X looks like one or is quoted), and a 40-character AWS secret
  access key within 200 characters of an access key id or the word AWS.

The patterns aim at few false positives: ordinary prose, git SHAs, UUIDs, base64 in code
and code that merely *names* a secret (``password = getpass()``,
``api_key = os.environ["KEY"]``) are left alone. Replacing a marker again is a no-op, so
redacting twice counts nothing new.
"""

from __future__ import annotations

import functools
import json
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
# Standing alone means no letter or digit either side: a separator ("-", "_", ".", "/")
# may touch it, as in a file name ("creds-ghp_....md") or an identifier.
_TOKENS = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(_TOKEN_SHAPES) + r")(?![A-Za-z0-9])")

_SLACK_WEBHOOK = re.compile(r"(https://hooks\.slack\.com/services/)[A-Za-z0-9/]+")

_AUTH_HEADER = re.compile(
    r"(\b(?:Proxy-)?Authorization\s*[:=]\s*[\"']?(?:Bearer|Basic|Token|Bot|Digest)?\s*)"
    r"([A-Za-z0-9._~+/=\-]{8,})",
    re.I,
)
# "Bearer <token>" in a header or in prose ("use bearer token tok_9f..."), any case
_BEARER = re.compile(
    r"(\bbearer\s+(?:token\s+)?(?:[:=]\s*)?[\"'`]?)([A-Za-z0-9._~+/\-]{12,}=*)", re.I
)

# scheme://user:password@host (the password may not hold '/', '@' or whitespace)
_URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.\-]*://[^\s:/@\[\]]+:)([^\s/@]+)(@)", re.I)

_SECRET_NAME = (
    r"[A-Za-z0-9_.\-]*?(?:password|passwd|passphrase|pwd|secret|api[_\-]?key|apikey|"
    r"access[_\-]?key|private[_\-]?key|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|"
    r"client[_\-]?secret|secret[_\-]?key(?:[_\-]?base)?|account[_\-]?key|"
    r"shared[_\-]?access[_\-]?key|token|credentials?|"
    # "pass" as a name of its own or its last part: DB_PASS, smtp.pass, &pass= (not bypass)
    r"(?<![A-Za-z0-9])pass(?![A-Za-z0-9]))"
)
# What every assignment below holds: a secret name's last word (each alternative of
# _SECRET_NAME ends in one of these), then at most two quotes, space, and ":" or "=".
# The three patterns cost some 1.5 ms on a 1,500-character note (their lazy name prefix
# is tried at every word); this search a tenth of it, and most notes have no match.
_ASSIGNED = re.compile(
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|key|token|credentials?|base)[\"']{0,2}\s*[:=]",
    re.I,
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
# curl -u user:password / --user user:password (the user name is kept)
_CURL_USER = re.compile(
    r"(\bcurl\b[^\n|;&]*?\s(?:-u|--user)(?:\s+|=)[\"']?[^\s:\"']+:)([^\s\"']{4,})"
)
# An AWS secret access key: 40 characters of base64, recognised by its shape and by its
# neighbourhood (an access key id or the word AWS near it; alone it is any base64).
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")
_AWS_WORD = re.compile(r"(?<![a-z])aws", re.I)
_AWS_NEAR = 200  # characters either side of the word AWS (a key id: anywhere in the text)
# A password stated in prose: "the password is X", "the password for the db was `X`"
_PROSE_PASSWORD = re.compile(
    r"(\b(?:password|passphrase|passwd|pwd)\b[^.\n\"'`]{0,40}?\s(?:is|was|=)\s+(?:now\s+)?"
    r"([\"'`]?))([^\s\"'`]{4,200}?)(\2)(?=[.,;:!?)]*(?:\s|$))",
    re.I,
)
# .netrc: "machine host login user password X", on one line or several
_NETRC = re.compile(
    r"(\bmachine[ \t]+\S+(?:\s+(?:login|account|port)[ \t]+\S+)*\s+password[ \t]+)([^\s\"'`]+)"
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
    # A pattern is tried only when the word it cannot match without is in the text (a
    # scan each, ~0.2 ms of a note's 0.33 ms, and most notes hold none of them). What
    # follows only replaces with markers, which hold none of these words and cannot join
    # two pieces into one: a word not in the text now never is.
    low = text.lower()
    # before the key ids it looks for go; a key id anywhere in the text is context enough
    key_id = ("akia" in low or "asia" in low) and _AWS_KEY_ID.search(text) is not None
    if key_id or "aws" in low:  # (else _aws_secret keeps every match)
        text = sub(_AWS_SECRET, lambda m: _aws_secret(m, key_id), text)
    text = sub(_TOKENS, _token, text)
    text = sub(_SLACK_WEBHOOK, lambda m: m.group(1) + REDACTED, text)
    if "authorization" in low:
        text = sub(_AUTH_HEADER, _keep_prefix, text)
    if "bearer" in low:
        text = sub(_BEARER, _bearer, text)
    if "://" in low:
        text = sub(_URL_PASSWORD, _url_password, text)
    if _ASSIGNED.search(text):  # what all three need, found at a fraction of their cost
        text = sub(_ASSIGN_QUOTED, _quoted, text)
        text = sub(_ASSIGN_ANNOTATED, _quoted, text)
        text = sub(_ASSIGN_BARE, _bare, text)
    if "machine" in low:
        text = sub(_NETRC, _keep_prefix, text)
    text = sub(_FLAG, _keep_prefix, text)
    if "curl" in low:
        text = sub(_CURL_USER, _keep_prefix, text)
    if "pass" in low or "pwd" in low:
        text = sub(_PROSE_PASSWORD, _prose, text)
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


def _bearer(m: re.Match[str]) -> str:
    """A bearer credential: 20 characters or more after "Bearer" as a header writes it,
    else a value with a digit and a letter (prose: "the bearer of this letter")."""
    value = m.group(2)
    header = m.group(1).startswith("Bearer") and len(value) >= 20
    if not header and not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)):
        return m.group(0)
    return _keep_prefix(m)


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
    query = m.string[m.start() - 1 : m.start()] in ("?", "&", ";")  # a URL's ?pass=...
    env_style = name.isupper() or name.startswith(("-", ".")) or query
    literal = bool(re.search(r"[0-9!@#%^&*+/=~]", value)) or _mixed_case(value)
    if not (env_style or literal or _config_entry(m)):
        return m.group(0)  # a plain word: "token: the next one", password=password
    return f"{name}{op}{REDACTED}"


def _mixed_case(value: str) -> bool:
    """A capital after a small letter inside a word ("YamlPasszzgEOz"), not a Name."""
    return len(value) >= 8 and re.search(r"[a-z][A-Z]", value) is not None


_ENTRY_PREFIX = re.compile(r"[ \t]*(?:- |export )?[\"']?")


def _config_entry(m: re.Match[str]) -> bool:
    """``password: word`` as a whole line (YAML, INI, .env): a value however plain, when
    the name is one a password goes by (``token: next`` there may be a setting)."""
    text = m.string
    line_start = text.rfind("\n", 0, m.start()) + 1
    rest = text[m.end() : m.end() + 1]
    return (
        rest in ("", "\n", "\r")
        and _ENTRY_PREFIX.fullmatch(text, line_start, m.start()) is not None
        and re.search(r"pass(?:word|wd|phrase)|pwd|secret", m.group(1), re.I) is not None
    )


def _aws_secret(m: re.Match[str], key_id: bool) -> str:
    value = m.group(0)
    if not all(re.search(c, value) for c in ("[a-z]", "[A-Z]", "[0-9]")):
        return value
    near = m.string[max(0, m.start() - _AWS_NEAR) : m.end() + _AWS_NEAR]
    return REDACTED if key_id or _AWS_WORD.search(near) else value


def _prose(m: re.Match[str]) -> str:
    value, quoted = m.group(3), bool(m.group(2))
    if _PLACEHOLDER.match(value):
        return m.group(0)
    secret_like = bool(re.search(r"[0-9!@#$%^&*+/=~_]", value)) or _mixed_case(value)
    if not (quoted or secret_like):
        return m.group(0)  # "the password is stored in the vault"
    return f"{m.group(1)}{REDACTED}{m.group(4)}"


def redact_name(name: str) -> str:
    """A file name, path, URL or title without likely secrets. A path is redacted a part
    (between "/") at a time, so that the name of a file that held a secret can be found
    again by redacting the names on disk the same way (compiler.origins); a URL whole."""
    if "://" in name:
        return _redacted_name(name)
    return "/".join(_redacted_name(part) for part in name.split("/"))


@functools.lru_cache(maxsize=4096)
def _redacted_name(name: str) -> str:
    # Names come back many times in a run (each file's folders, each source's origin and
    # title as it passes from stage to stage), and each redaction runs 15 patterns.
    return redact(name)[0]


_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def redact_json(text: str) -> tuple[str, int]:
    """JSON (or JSON Lines) text with each string value redacted on its own, so the text
    stays the JSON it was (a transcript stays readable) and a secret behind an escape
    (``\\n``, ``\\u0041``) is seen as the text it stands for."""
    count = 0

    def one(m: re.Match[str]) -> str:
        nonlocal count
        literal = m.group(0)
        if len(literal) < 6:  # "" around 4 characters: shorter than any secret
            return literal
        try:
            value = json.loads(literal)
        except ValueError:
            return literal
        clean, n = redact(value)
        if not n:
            return literal
        count += n
        return json.dumps(clean, ensure_ascii=False)

    return _JSON_STRING.sub(one, text), count


def redact_submitted(text: str) -> tuple[str, int]:
    """A submission's text redacted as it is kept: a JSON document string by string; of
    JSON Lines, each line that is JSON string by string and the lines between (a note
    that merely starts with "[") as text, each run of them whole."""
    if text.lstrip()[:1] not in ("{", "["):
        return redact(text)
    if _is_json(text):
        return redact_json(text)
    out: list[str] = []
    count = 0
    run: list[str] = []  # lines that are not JSON, redacted together (a PEM block spans lines)

    def flush() -> None:
        nonlocal count
        if run:
            clean, n = redact("\n".join(run))
            out.append(clean)
            count += n
            run.clear()

    for line in text.split("\n"):
        if line.lstrip()[:1] in ("{", "[") and _is_json(line):
            flush()
            clean, n = redact_json(line)
            out.append(clean)
            count += n
        else:
            run.append(line)
    flush()
    return "\n".join(out), count


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
