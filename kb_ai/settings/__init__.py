"""Settings: one object, built once at each entry point and passed down.

Precedence, highest first: command-line option, environment (``KB_AI_<NAME>``), the
knowledge base's ``kb-ai.toml``, the default (kb_ai/settings/loading.py). Every setting
has a help string, and what its value must be is one table (kb_ai/settings/fields.py);
an unknown key in kb-ai.toml is an error that names the keys that exist.
"""

from kb_ai.settings.fields import (
    CHECKS,
    FIELDS,
    LOCAL_DEFAULTS,
    REVIEW_POLICIES,
    ROLES,
    STRUCTURED_MODES,
    TOML_KEYS,
    Settings,
    describe_settings,
)
from kb_ai.settings.loading import load_settings, read_kb_file

__all__ = [
    "CHECKS",
    "FIELDS",
    "LOCAL_DEFAULTS",
    "REVIEW_POLICIES",
    "ROLES",
    "STRUCTURED_MODES",
    "TOML_KEYS",
    "Settings",
    "describe_settings",
    "load_settings",
    "read_kb_file",
]
