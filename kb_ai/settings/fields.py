"""The settings' fields: each with its default and help string (``Settings``), the
defaults a model on this machine's CPU changes (``LOCAL_DEFAULTS``), and the one table of
what a value must be (``CHECKS``), which kb_ai/settings/loading.py applies."""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb_ai.errors import ConfigError
from kb_ai.pgurl import url_problem
from kb_ai.stages import STAGES, own_stages, stage_of

JUDGE_MODES = ("auto", "on", "off")
STRUCTURED_MODES = ("auto", "json_schema", "json_object", "prompt")
REVIEW_POLICIES = ("none", "contributors", "hand-edited", "all")
ROLES = ("reader", "contributor", "reviewer", "admin")
TRANSPORTS = ("auto", "http", "litellm")


def _timeout(stage: str) -> Any:
    st = STAGES[stage]
    return _setting(st.timeout_s, f"Seconds per {st.call}.")


def _max_tokens(stage: str) -> Any:
    st = STAGES[stage]
    return _setting(st.max_tokens, f"Most tokens of the reply to a {st.call} (0: not sent).")


def _setting(default: Any, help: str, env: bool = True) -> Any:
    return field(default=default, metadata={"help": help, "env": env})


@dataclass(frozen=True)
class Settings:
    kb_dir: Path = _setting(Path("kb"), "The knowledge base directory.", env=False)
    model: str | None = _setting(
        None,
        "The model, as litellm names it: openai/gpt-4o-mini, anthropic/claude-..., "
        "ollama_chat/qwen2.5, or openai/<name> with api_base for any OpenAI-compatible server.",
    )
    model_source: str | None = _setting(
        None,
        "Where the model came from (an option, the environment, kb-ai.toml, detection).",
        env=False,
    )
    detect_model: bool = _setting(
        True,
        "When no model is named, use a hosted provider whose key is in the environment, else "
        "an Ollama server on localhost, else the embedded local model (false: require one).",
    )
    local_context_tokens: int = _setting(
        8_192, "Context window of a local GGUF model (prompt and reply, in tokens)."
    )
    local_threads: int = _setting(
        0,
        "Threads a local model generates with (0: half the CPUs, at least one; reading the "
        "prompt always uses them all).",
    )
    api_base: str | None = _setting(None, "Base URL of an OpenAI-compatible endpoint.")
    api_key: str | None = _setting(
        None, "API key for that endpoint (or the provider's own variable)."
    )
    transport: str = _setting(
        "auto",
        "How kb-ai reaches the model: http (the OpenAI wire format spoken directly), litellm, "
        "or auto: http for an OpenAI-compatible server named by api_base (openai/<name>), "
        "litellm for every other provider.",
    )
    structured_output: str = _setting(
        "auto",
        "How JSON replies are requested: json_schema, json_object (with the schema), prompt "
        "(schema in the prompt only), or auto (chosen per provider).",
    )
    max_concurrency: int = _setting(8, "Model calls in flight at once.")
    database_url: str | None = _setting(
        None,
        "A PostgreSQL database (postgresql://user@host:5432/db) for the state several "
        "servers and workers share: the task queue and its leases, the compile lock, chat "
        "sessions, people and the audit log, the compile runs, the model call log and the "
        "response cache. "
        "Unset: everything stays in .kb-ai/state.db.",
    )
    trusted_user_header: str | None = _setting(
        None,
        "Behind a sign-on proxy (oauth2-proxy, Authelia, ...): the request header that names "
        "the signed-in person, e.g. X-Forwarded-User; believed only from trusted_proxies.",
    )
    trusted_proxies: str = _setting(
        "",
        "The reverse proxies (addresses or networks, comma-separated, e.g. 10.0.0.5, "
        "172.16.0.0/12) whose trusted_user_header, X-Forwarded-For and X-Forwarded-Proto "
        "are believed; unset: X-Forwarded-* from loopback only, the user header from none.",
    )
    default_role: str = _setting(
        "reader",
        "The role of a person a sign-on proxy names who is not in kb-ai users: reader, "
        "contributor, reviewer or admin.",
    )
    questions_per_minute: float = _setting(
        0.0,
        "Questions one person (or token) may ask the server a minute, with bursts of as "
        "many; more get 429 with Retry-After (0: no limit).",
    )
    max_retries: int = _setting(3, "Retries of a call that timed out or got a 429/5xx.")
    retry_backoff: float = _setting(1.0, "Seconds before the first retry; doubles each time.")
    breaker_threshold: int = _setting(
        5, "Consecutive failed calls after which the endpoint is treated as down for the run."
    )
    breaker_cooldown: float = _setting(
        30.0,
        "Seconds the endpoint is treated as down before one call may try it again (a "
        "long-lived server or MCP client recovers when the model comes back); 0: never.",
    )
    breaker_timeouts: int = _setting(
        2,
        "Timed-out attempts in a row (no reply in between) after which the endpoint is "
        "treated as down, and calls still waiting on it are stopped: a hanging endpoint "
        "fails a run within about two stage timeouts. 0: timeouts count like other failures.",
    )
    retry_after_max: float = _setting(
        60.0,
        "Most seconds to wait when a 429 or 503 asks for a pause (Retry-After); the wait "
        "is never shorter than retry_backoff's.",
    )
    max_tokens_extract: int = _max_tokens("extract")
    max_tokens_classify: int = _max_tokens("classify")
    max_tokens_write: int = _max_tokens("write")
    max_tokens_select: int = _max_tokens("select")
    max_tokens_rewrite: int = _max_tokens("rewrite")
    max_tokens_answer: int = _max_tokens("answer")
    max_tokens_judge: int = _max_tokens("judge")
    max_tokens_lint: int = _max_tokens("lint")
    max_prompt_chars: int = _setting(
        4_000_000,
        "Characters a prompt may have (about a million tokens, the largest context windows); "
        "a longer one is not sent, and the call fails saying which stage and how big.",
    )
    max_reply_chars: int = _setting(
        200_000,
        "Characters a model reply may have, whatever the stage; a longer one fails the call "
        "before it is stored or sent on. Each JSON field is held to twice its schema bound "
        "(plus 100 characters or 8 items).",
    )
    timeout_extract: float = _timeout("extract")
    timeout_classify: float = _timeout("classify")
    timeout_write: float = _timeout("write")
    timeout_select: float = _timeout("select")
    timeout_rewrite: float = _timeout("rewrite")
    timeout_answer: float = _timeout("answer")
    timeout_judge: float = _timeout("judge")
    timeout_lint: float = _timeout("lint")
    max_source_bytes: int = _setting(5_000_000, "Sources larger than this are refused.")
    max_transcript_bytes: int = _setting(
        50_000_000,
        "Agent transcripts (JSONL, .traj) up to this size are accepted even when larger than "
        "max_source_bytes: most of their bytes are tool output that normalising drops.",
    )
    session_quiet_seconds: float = _setting(
        60.0,
        "An agent session that is still going (Codex's Stop after each turn) is compiled once "
        "it has been quiet this long, so it compiles at most once per quiet period.",
    )
    capture_retry_seconds: float = _setting(
        60.0, "Seconds before a failed session capture is compiled again; doubles each time."
    )
    capture_max_attempts: int = _setting(
        8, "Attempts at compiling a captured session before it waits for `kb-ai hooks retry`."
    )
    lesson_start: float = _setting(
        0.5, "Confidence of a lesson (pitfall or convention) the first session shows."
    )
    lesson_step: float = _setting(
        0.05, "Confidence a lesson gains each time a later session shows it again."
    )
    lesson_max: float = _setting(0.9, "The most confidence a lesson's sightings can give it.")
    lesson_decay: float = _setting(
        0.05, "Confidence a lesson loses for every lesson_decay_days it goes unseen."
    )
    lesson_decay_days: float = _setting(
        30.0, "Days unseen that cost a lesson lesson_decay of its confidence."
    )
    lesson_threshold: float = _setting(
        0.55,
        "Below this confidence a lesson stays out of the session-start snapshot; one that "
        "falls below it after being seen again, or fades, is marked deprecated (never deleted).",
    )
    learn_review: bool = _setting(
        False,
        "Hold the lessons sessions teach for a person's approval (`kb-ai learned approve`) "
        "before any reaches the session-start snapshot.",
    )
    chunk_chars: int = _setting(24_000, "Sources longer than this are extracted in chunks.")
    # documents (compiler/documents): PDF, Office, sheets, pages, archives, URLs
    max_document_bytes: int = _setting(
        50_000_000,
        "Documents (PDF, Office, archives, fetched pages), uploaded or not, up to this size "
        "are read; their converted text is held to max_source_bytes.",
    )
    convert_timeout: float = _setting(
        120.0,
        "Seconds one document's conversion may take (in a process of its own, stopped past "
        "it: that document fails, the run goes on); 0 converts in kb-ai's own process, "
        "without a limit.",
    )
    max_sheet_rows: int = _setting(
        5_000, "Rows kept of each spreadsheet sheet or CSV file; the source says what was cut."
    )
    max_archive_members: int = _setting(500, "Files a zip archive may hold.")
    max_archive_bytes: int = _setting(
        200_000_000, "Uncompressed bytes a zip archive may hold, all members together."
    )
    max_archive_ratio: int = _setting(
        100, "Largest compression ratio of a zip member (a higher one is a zip bomb)."
    )
    fetch_timeout: float = _setting(20.0, "Seconds to fetch a URL, redirects included.")
    fetch_max_redirects: int = _setting(5, "Redirects followed when fetching a URL.")
    fetch_allow: tuple[str, ...] = _setting(
        (),
        "Hosts or networks (CIDR) that URLs may reach although they are loopback, private, "
        "link-local or metadata addresses, e.g. ['127.0.0.1', 'wiki.internal'].",
    )
    catalog_budget_chars: int = _setting(
        12_000, "Characters of catalog shown to the classify stage (ranked slice)."
    )
    max_new_articles_per_source: int = _setting(
        2,
        "New articles one source may create (at least 1); past that, its material goes into "
        "the articles it updates or creates first.",
    )
    write_material_chars: int = _setting(
        300_000,
        "Characters of material one write call is shown (about 75,000 tokens), and never "
        "more than max_prompt_chars allows: past it, the items most related to the article "
        "first; the run's log says what was left out. 0: no bound but max_prompt_chars.",
    )
    patch_threshold_chars: int = _setting(
        12_000, "Articles longer than this are merged by section patches, not rewritten."
    )
    select_k: int = _setting(6, "Pages the model may pick to answer a question.")
    selection_budget_tokens: int = _setting(
        6_000, "Token budget of the selection prompt; larger catalogs are shortlisted first."
    )
    coverage_threshold: float = _setting(
        0.5,
        "Share of a question's content terms (weighed by rarity) the best sentences of the "
        "pages read must hold for it to count as covered (with its names, and an answer of "
        "the kind it asks for); below it the answer says the wiki does not cover it "
        "(retrieval/coverage.py). 0 turns the check off.",
    )
    coverage_judge: str = _setting(
        "auto",
        "After the evidence check passes, ask the model whether one of the few best "
        "sentences read answers the question; when none does, the answer says the wiki does "
        "not cover it (retrieval/judge.py). on, off, or auto: on for every model but one "
        "running in process on the CPU (local/...), where the 1.5B and 0.5B models measured "
        "declined few more questions, or lost right answers, for a call of seconds a question.",
    )
    read_chars: int = _setting(16_000, "Characters of each page read to answer; the rest is cut.")
    corpus_budget_tokens: int = _setting(
        50_000,
        "Tokens of article text a corpus may hold to be read whole for each question asked "
        "of it (kb-ai ask --corpus): no page selection, the same prompt head every time; a "
        "larger corpus is answered by selecting pages inside it. 0: always select.",
    )
    second_hop_pages: int = _setting(
        3, "Pages the model may ask for in each follow-up after the first reading."
    )
    max_hops: int = _setting(
        2,
        "Follow-up rounds after the first reading: search terms the model learned from the"
        " pages (a bridge entity) or pages they link to. 0 turns follow-ups off.",
    )
    small_model: bool = _setting(
        False,
        "Treat the model as small: each source becomes an article in its own words (the"
        " model only names it), and answers are extracted (the model picks sentences of"
        " the pages read and kb-ai quotes them) instead of written. Always so for local"
        " models.",
    )
    review: bool = _setting(
        False,
        "Commit each compile run to a branch review/<run id> for a person to approve"
        ' (kb-ai review), instead of to main: the same as review_policy = "all".',
    )
    review_policy: str = _setting(
        "none",
        "Which compile runs wait on a review/<run id> branch for a reviewer: none, "
        "contributors (runs submitted by a person whose role is contributor, or whom a "
        "sign-on proxy names with no role of their own), hand-edited (runs that merge into "
        "an article a person edited), all.",
    )
    review_self_approve: bool = _setting(
        False,
        "Whether a reviewer may approve or reject a run they submitted themselves (people "
        "of a served knowledge base; the CLI user at the terminal owns the files anyway).",
    )
    wiki_remote: str | None = _setting(
        None,
        "The git remote that holds the wiki of record (a URL or a path): each commit is "
        "pushed there, and `kb-ai serve` follows what others push. `kb-ai init --remote "
        "URL` sets it up in the work tree's git, so this is only needed to change it.",
    )
    wiki_follow_seconds: float = _setting(
        3.0,
        "How often `kb-ai serve` fetches the wiki remote, takes in what others pushed and "
        "pushes what is still waiting here (0: only after this server's own commits).",
    )
    web_editor: str = _setting(
        "web user",
        "The author name of what the web UI commits (the editor's saves, approvals):"
        " the server has one shared token, so it cannot tell people apart.",
    )
    also: tuple[str, ...] = _setting(
        (),
        "Other knowledge bases that ask, chat and MCP consult beside this one, read only: "
        "folders (relative ones to this knowledge base) or git URLs, cloned into "
        ".kb-ai/also/; e.g. ['../team-kb', 'https://git.example.org/team/kb.git'].",
    )
    also_pull_seconds: float = _setting(
        600.0,
        "A git URL of also is pulled, in the background, once its copy here is older than "
        "this (seconds); a question never waits for the pull.",
    )
    categories: tuple[str, ...] = _setting(
        (), "Article types of this knowledge base, frozen on first compile.", env=False
    )

    def timeout(self, stage: str) -> float:
        """Seconds per call of ``stage`` (kb_ai/stages.py names its setting)."""
        return float(getattr(self, stage_of(stage).timeout_setting))

    def max_tokens(self, stage: str) -> int | None:
        """max_tokens to send for a stage; None for a stage without a setting, or 0."""
        setting = stage_of(stage).max_tokens_setting
        return int(getattr(self, setting)) or None if setting else None

    @property
    def state_dir(self) -> Path:
        return self.kb_dir / ".kb-ai"

    def require_model(self) -> str:
        if not self.model:
            raise ConfigError(
                "No model configured",
                hint="pass --model, set KB_AI_MODEL (e.g. KB_AI_MODEL=openai/gpt-4o-mini with "
                'OPENAI_API_KEY), add model = "..." to kb-ai.toml, or install the small '
                "embedded model that runs on this machine: pip install 'kb-ai[local]'",
            )
        return self.model

    @property
    def answers_extractively(self) -> bool:
        """Small models pick sentences rather than write (see retrieval/extractive.py)."""
        return self.is_local or self.small_model

    @property
    def judges_coverage(self) -> bool:
        """Whether the coverage judge runs (``coverage_judge``; auto: see its help and
        README, chosen on bench/ask/coverage.py --judge)."""
        if self.coverage_judge != "auto":
            return self.coverage_judge == "on"
        return not self.is_local

    @property
    def writes_from_sources(self) -> bool:
        """Small models name each source and keep its text as the article
        (compiler/source_article.py) rather than write articles."""
        return self.is_local or self.small_model

    @property
    def is_local(self) -> bool:
        """The model runs in this process (llama.cpp): ``local/<file.gguf>`` or local/default."""
        return bool(self.model and self.model.startswith("local/"))


FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
TOML_KEYS = sorted(name for name in FIELDS if name not in ("kb_dir", "model_source"))

# Defaults that differ when the model runs in process on the CPU (a few dozen tokens a
# second, prompt included): one call at a time (llama.cpp runs one context), smaller
# prompts, longer timeouts. Any of them set explicitly wins.
LOCAL_DEFAULTS: dict[str, Any] = {
    "max_concurrency": 1,
    "chunk_chars": 6_000,
    "catalog_budget_chars": 4_000,
    "selection_budget_tokens": 1_500,
    "read_chars": 4_000,
    "corpus_budget_tokens": 2_500,
    "select_k": 3,
    "second_hop_pages": 0,
    "max_hops": 0,
    "max_retries": 0,
    # each stage's timeout and reply budget on the CPU (kb_ai/stages.py)
    **{s.timeout_setting: s.local_timeout_s for s in own_stages()},
    **{
        s.max_tokens_setting: s.local_max_tokens
        for s in STAGES.values()
        if s.max_tokens_setting and s.local_max_tokens is not None
    },
}


#: A check of one setting's value: (its name, the value) -> the error to raise, or None.
Check = Callable[[str, Any], "ConfigError | None"]


def _one_of(choices: tuple[str, ...], example: str = "") -> Check:
    def check(name: str, value: Any) -> ConfigError | None:
        if value in choices:
            return None
        return ConfigError(
            f"{name} must be one of {', '.join(choices)}", hint=f"got {value!r}{example}"
        )

    return check


def _at_least(least: int, said: str, hint: str | None = None) -> Check:
    def check(name: str, value: Any) -> ConfigError | None:
        return ConfigError(f"{name} must be {said}", hint=hint) if value < least else None

    return check


def _http_url(name: str, value: Any) -> ConfigError | None:
    if not value or str(value).lower().startswith(("http://", "https://")):
        return None
    return ConfigError(
        f"{name} {value!r} is not an http(s) URL",
        hint="write the whole base URL of the OpenAI-compatible API, e.g. "
        "http://localhost:8000/v1 (vLLM, llama.cpp) or http://localhost:11434/v1 (Ollama)",
    )


def _networks(name: str, value: Any) -> ConfigError | None:
    for entry in filter(None, (p.strip() for p in str(value or "").split(","))):
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return ConfigError(
                f"{name}: {entry!r} is not an address or network",
                hint="e.g. 10.0.0.5, 172.16.0.0/12",
            )
    return None


def _postgres_url(name: str, value: Any) -> ConfigError | None:
    url = str(value or "").strip()
    found = url_problem(url) if url else None
    return ConfigError(f"{name} {found[0]}", hint=found[1]) if found else None


#: What a setting's value must be, for the settings whose type alone does not say it;
#: each value given (kb-ai.toml, environment, option) is checked when settings load.
CHECKS: dict[str, Check] = {
    "api_base": _http_url,
    "transport": _one_of(TRANSPORTS),
    "coverage_judge": _one_of(JUDGE_MODES, "; e.g. KB_AI_COVERAGE_JUDGE=off"),
    "structured_output": _one_of(STRUCTURED_MODES),
    "review_policy": _one_of(
        REVIEW_POLICIES, '; e.g. review_policy = "contributors" in kb-ai.toml'
    ),
    "default_role": _one_of(ROLES),
    "trusted_proxies": _networks,
    "database_url": _postgres_url,
    "questions_per_minute": _at_least(0, "0 (no limit) or more"),
    "wiki_follow_seconds": _at_least(0, "0 (no polling) or more"),
    "max_concurrency": _at_least(1, "at least 1"),
    "max_new_articles_per_source": _at_least(
        1, "at least 1", hint="a source about a new subject needs one new article"
    ),
}


def describe_settings() -> list[tuple[str, str, Any]]:
    """(name, help, default) for every setting, for `kb-ai config` and the README."""
    return [(f.name, f.metadata["help"], f.default) for f in FIELDS.values()]
