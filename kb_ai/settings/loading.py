"""Settings loaded: command-line option > environment (``KB_AI_<NAME>``) > the knowledge
base's ``kb-ai.toml`` > the default, each value coerced to its field's type and checked
against the fields' table (kb_ai/settings/fields.py ``CHECKS``)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from kb_ai.errors import ConfigError
from kb_ai.settings.fields import CHECKS, FIELDS, LOCAL_DEFAULTS, TOML_KEYS, Settings


def _coerce(name: str, value: Any) -> Any:
    f = FIELDS[name]
    default = f.default
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, tuple):
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            return tuple(str(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"Setting {name!r} has an invalid value {value!r}",
            hint=f"expected a value like {default!r}",
        ) from exc
    return None if value is None else str(value)


def read_kb_file(kb_dir: Path) -> dict[str, Any]:
    """The settings stored in <kb>/kb-ai.toml, validated (unknown keys are an error)."""
    path = kb_dir / "kb-ai.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path} is not valid TOML: {exc}", hint="fix or remove the line"
        ) from exc
    unknown = sorted(set(data) - set(TOML_KEYS))
    if unknown:
        raise ConfigError(
            f"Unknown setting(s) in {path}: {', '.join(unknown)}",
            hint=f"known settings: {', '.join(TOML_KEYS)}",
        )
    return data


def load_settings(
    kb_dir: Path | str | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    *,
    detect: bool = False,
) -> Settings:
    """Build the settings: overrides (CLI) > environment > kb-ai.toml > defaults.

    With ``detect``, a missing model is looked for (see :mod:`kb_ai.models`) unless
    detect_model is off; ``model_source`` says where the model came from either way.
    """
    env = os.environ if environ is None else environ
    kb = Path(kb_dir or env.get("KB_AI_DIR") or "kb").expanduser()
    values: dict[str, Any] = {}
    source: str | None = None
    for name, value in read_kb_file(kb).items():
        values[name] = _coerce(name, value)
    if values.get("model"):
        source = f"model in {kb / 'kb-ai.toml'}"
    for name, f in FIELDS.items():
        if f.metadata.get("env") and f"KB_AI_{name.upper()}" in env:
            raw = env[f"KB_AI_{name.upper()}"]
            if raw != "":
                values[name] = _coerce(name, raw)
                if name == "model":
                    source = "KB_AI_MODEL"
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = _coerce(name, value)
            if name == "model":
                source = "--model" if value != env.get("KB_AI_MODEL") else "KB_AI_MODEL"
    if not values.get("model") and detect and values.get("detect_model", True):
        from kb_ai.models import detect_model

        found = detect_model(env)
        if found is not None:
            values["model"], source = found
    values["model_source"] = source if values.get("model") else None
    if str(values.get("model") or "").startswith("local/"):
        for name, value in LOCAL_DEFAULTS.items():
            values.setdefault(name, value)
    for name, check in CHECKS.items():
        problem = check(name, values[name]) if name in values else None
        if problem is not None:
            raise problem
    _review_policy(values, overrides or {})
    if values.get("trusted_user_header") and not str(values.get("trusted_proxies", "")).strip():
        raise ConfigError(
            "trusted_user_header is set but trusted_proxies is not: the header would be "
            "believed from no one, and everyone refused",
            hint='name the sign-on proxy\'s addresses, e.g. trusted_proxies = "127.0.0.1" '
            "when it runs on this host",
        )
    return Settings(kb_dir=kb, **values)


def _review_policy(values: dict[str, Any], overrides: dict[str, Any]) -> None:
    """review_policy from itself and the older ``review`` switch: ``--review`` and
    ``--no-review`` decide for their run; otherwise review = true means "all"."""
    policy = values.get("review_policy", "none")  # one of REVIEW_POLICIES (CHECKS)
    if overrides.get("review") is not None:  # --review / --no-review, for this run
        values["review_policy"] = "all" if overrides["review"] else "none"
    elif values.get("review"):
        if "review_policy" in values and policy != "all":
            raise ConfigError(
                f"review = true holds every run, but review_policy is {policy!r}",
                hint="keep one of them: review_policy says which runs wait for a reviewer",
            )
        values["review_policy"] = "all"
    values["review"] = values.get("review_policy") == "all"
