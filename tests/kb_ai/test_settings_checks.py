"""What a setting's value must be (kb_ai/settings/fields.py CHECKS), wherever it comes
from: a bad value in kb-ai.toml, the environment or an option is a ConfigError naming the
setting and saying what it takes; a good one loads."""

import pytest

from kb_ai.errors import ConfigError
from kb_ai.settings import CHECKS, load_settings

BAD = {  # (a bad value, what the error says of it)
    "api_base": ("localhost:8000/v1", "is not an http(s) URL"),
    "transport": ("grpc", "must be one of auto, http, litellm"),
    "coverage_judge": ("maybe", "must be one of auto, on, off"),
    "structured_output": ("xml", "must be one of auto, json_schema"),
    "review_policy": ("some", "must be one of none, contributors"),
    "default_role": ("owner", "must be one of reader, contributor, reviewer, admin"),
    "trusted_proxies": ("10.0.0.5, proxy.local", "'proxy.local' is not an address or network"),
    "database_url": ("mysql://db/kb", "must be a PostgreSQL URL"),
    "questions_per_minute": (-1, "must be 0 (no limit) or more"),
    "wiki_follow_seconds": (-5, "must be 0 (no polling) or more"),
    "max_concurrency": (0, "must be at least 1"),
    "max_new_articles_per_source": (0, "must be at least 1"),
}
GOOD = {
    "api_base": "http://localhost:8000/v1",
    "transport": "http",
    "coverage_judge": "off",
    "structured_output": "prompt",
    "review_policy": "contributors",
    "default_role": "reviewer",
    "trusted_proxies": "10.0.0.5, 172.16.0.0/12",
    "database_url": "postgresql://root@127.0.0.1:5432/kb",
    "questions_per_minute": 0,
    "wiki_follow_seconds": 0,
    "max_concurrency": 4,
    "max_new_articles_per_source": 2,
}


def test_every_check_of_the_table_is_tried_here():
    assert sorted(BAD) == sorted(CHECKS) == sorted(GOOD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_from_any_source_is_refused_naming_the_setting(tmp_path, name):
    value, said = BAD[name]
    toml = f'"{value}"' if isinstance(value, str) else str(value)
    (tmp_path / "kb-ai.toml").write_text(f"{name} = {toml}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as from_file:
        load_settings(tmp_path, environ={})
    (tmp_path / "kb-ai.toml").unlink()
    with pytest.raises(ConfigError) as from_env:
        load_settings(tmp_path, environ={f"KB_AI_{name.upper()}": str(value)})
    with pytest.raises(ConfigError) as from_option:
        load_settings(tmp_path, {name: value}, environ={})
    for caught in (from_file, from_env, from_option):
        assert name in caught.value.message and said in caught.value.message


@pytest.mark.parametrize("name", sorted(GOOD))
def test_a_good_value_loads(tmp_path, name):
    settings = load_settings(tmp_path, {name: GOOD[name]}, environ={})
    assert getattr(settings, name) == GOOD[name]
