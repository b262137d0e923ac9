"""Kept prompt states of the embedded model: a prompt's head is read once, not per question.

llama.cpp keeps the attention state (the KV cache) of the last prompt it read, and
llama-cpp-python reuses it for the longest run of tokens a new prompt shares with it. A
question makes two calls, the page pick (system text and catalog first, the question
last) and the sentence pick, so each call replaced what the next question's first call
could have reused. :class:`PromptStates` keeps one state per kind of prompt (its first
:data:`HEAD_TOKENS` tokens) and hands llama-cpp-python the one sharing the most tokens
with the prompt about to be read; with a directory (the knowledge base's
``.kb-ai/llm-states``) each kind is also kept on disk, so a new ``kb-ai ask`` process
starts from it instead of reading the catalog again.

What makes a kept state safe to use: the state of the first N tokens of a prompt depends
only on those tokens and the model, and llama-cpp-python reuses only the tokens the new
prompt shares with the state's own token list (a changed catalog line ends the shared run
there; the rest is read again). A file on disk is used only when its header names this
model file (path, size, modification time), this llama-cpp-python version and context
size, and its bytes match the sha256 the header gives; anything else is deleted and the
prompt is read from the start. A state that llama.cpp refuses resets the context.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FORMAT = 1
# A prompt's kind: its first tokens (the chat template's opening and the system text).
HEAD_TOKENS = 32
# A kept state is restored only when it spares this many tokens: fewer are read in less
# time than a restore of the state takes.
MIN_REUSE = 64
# Kinds kept in memory, and files kept on disk (older kinds, from another version's
# prompts, are removed first).
RAM_SLOTS = 4
DISK_FILES = 8
_HEADER_MAX = 4096


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def model_identity(path: Path) -> str:
    """The model file as kept states name it: a changed file is another model."""
    st = path.stat()
    return f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}"


def llama_class() -> type:
    """llama_cpp.Llama whose saved state leaves out the logits buffer and counts the
    tokens it reads. llama-cpp-python's own save_state copies n_batch x vocabulary
    floats (311 MB for Qwen2.5) that a model run without ``logits_all`` never reads: its
    sampler reads the logits of the last decode, and a restored prompt always decodes at
    least its last token again."""
    import numpy as np
    from llama_cpp import Llama, LlamaState
    from llama_cpp import llama_cpp as ll

    class KeepingLlama(Llama):
        read_tokens = 0  # tokens decoded (prompt and generated), for benchmarks

        def eval(self, tokens: Sequence[int]) -> None:
            type(self).read_tokens += len(tokens)
            super().eval(tokens)

        def save_state(self) -> Any:
            ctx = self._ctx.ctx
            size = ll.llama_state_get_size(ctx)
            buf = (ctypes.c_uint8 * size)()
            n = ll.llama_state_get_data(ctx, buf, size)
            if n > size:
                raise RuntimeError("llama.cpp wrote more state than it asked room for")
            return LlamaState(
                input_ids=self.input_ids[: self.n_tokens].copy(),
                scores=np.zeros((0, 0), dtype=np.single),
                n_tokens=self.n_tokens,
                llama_state=memoryview(buf)[:n].tobytes(),
                llama_state_size=n,
                seed=self._seed,
            )

        def load_state(self, state: Any) -> None:
            size = state.llama_state_size
            buf = (ctypes.c_uint8 * size).from_buffer_copy(state.llama_state)
            if ll.llama_state_set_data(self._ctx.ctx, buf, size) != size:
                self.forget()
                log.warning("llama.cpp refused a kept prompt state; reading the prompt anew")
                if isinstance(self.cache, PromptStates):
                    self.cache.drop(state)
                return
            n = state.n_tokens
            self.input_ids[:n] = state.input_ids[:n]
            self.n_tokens = n
            self._requires_eval = True
            self._seed = state.seed

        def forget(self) -> None:
            """An empty context: the next prompt is read from its first token."""
            mem = ll.llama_get_memory(self._ctx.ctx)
            if mem is not None:
                ll.llama_memory_clear(mem, True)
            self.n_tokens = 0
            self._requires_eval = True

    return KeepingLlama


class PromptStates:
    """llama-cpp-python's cache protocol (``Llama.cache``): looked up with a prompt's
    tokens before it is read, given the state after each reply. See the module docstring."""

    def __init__(self, llama: Any, model: str, n_ctx: int) -> None:
        import llama_cpp

        self.llama = llama
        self.header = {"format": FORMAT, "llama_cpp": llama_cpp.__version__, "model": model,
                       "n_ctx": n_ctx}  # fmt: skip
        self.ram: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        # the whole last prompt (and reply) of each kind, which its kept state may be cut from
        self.last: dict[tuple[int, ...], list[int]] = {}
        self.directory: Path | None = None
        self.loaded_from_disk = 0  # files used, for tests and benchmarks
        # tokens of the last reply with its prompt (the live context may be cut after it)
        self.replied: int | None = None

    # llama-cpp-python tests ``if self.cache:``; kept states or not, lookups are wanted.
    def __bool__(self) -> bool:
        return True

    @property
    def cache_size(self) -> int:
        return sum(s.llama_state_size for s in self.ram.values())

    def __contains__(self, key: Sequence[int]) -> bool:
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __getitem__(self, key: Sequence[int]) -> Any:
        key = list(key)
        head = tuple(key[:HEAD_TOKENS])
        if head not in self.ram and self.directory is not None:
            state = self._read(head)
            if state is not None:
                self._remember(head, state, self.last[head])
        best, shared = None, 0
        for state in self.ram.values():
            n = common_prefix(state.input_ids.tolist(), key)
            if n > shared:
                best, shared = state, n
        if best is None or shared < MIN_REUSE:
            raise KeyError("no kept state shares enough of this prompt")
        return best

    def __setitem__(self, key: Sequence[int], state: Any) -> None:
        key = list(key)
        self.replied = len(key)
        head = tuple(key[:HEAD_TOKENS])
        previous = self.last.get(head)
        if previous is not None:
            # When the last two prompts of this kind shared too little to be worth a
            # restore, only that little is kept (a small file that still holds the whole
            # prompt, to compare the next one with); otherwise all of it (a page pick
            # after a catalog line changed shares the new line with the next one).
            stable = common_prefix(previous, key)
            if stable < MIN_REUSE and stable < state.n_tokens:
                state = self._truncated(stable)
        self._remember(head, state, key)
        if self.directory is not None:
            self._write(head, state, key)

    def drop(self, state: Any) -> None:
        for head, kept in list(self.ram.items()):
            if kept is state:
                del self.ram[head]
                self.last.pop(head, None)
                if self.directory is not None:
                    self._path(head).unlink(missing_ok=True)

    def clear(self) -> None:
        """Forget the states in memory (the files stay): as a new process starts."""
        self.ram.clear()
        self.last.clear()

    def _remember(self, head: tuple[int, ...], state: Any, last: list[int]) -> None:
        self.ram[head] = state
        self.last[head] = last
        self.ram.move_to_end(head)
        while len(self.ram) > RAM_SLOTS:
            gone, _ = self.ram.popitem(last=False)
            self.last.pop(gone, None)

    def _truncated(self, n: int) -> Any:
        """The live context cut to its first ``n`` tokens, saved (the reply is over: the
        next prompt is matched against what is left)."""
        llama = self.llama
        n = max(0, min(n, llama.n_tokens))
        llama._ctx.kv_cache_seq_rm(-1, n, -1)
        llama.n_tokens = n
        llama._requires_eval = True
        return llama.save_state()

    def _path(self, head: tuple[int, ...]) -> Path:
        assert self.directory is not None
        digest = hashlib.sha256(json.dumps([self.header, list(head)]).encode()).hexdigest()
        return self.directory / f"{digest[:32]}.state"

    def _write(self, head: tuple[int, ...], state: Any, last: list[int]) -> None:
        import numpy as np

        assert self.directory is not None
        tokens = np.asarray(state.input_ids[: state.n_tokens], dtype="<i4").tobytes()
        payload = tokens + np.asarray(last, dtype="<i4").tobytes() + state.llama_state
        header = dict(self.header, n_tokens=state.n_tokens, n_last=len(last),
                      state_bytes=state.llama_state_size,
                      sha256=hashlib.sha256(payload).hexdigest())  # fmt: skip
        path = self._path(head)
        partial = path.with_name(f"{path.name}.{os.getpid()}.part")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with partial.open("wb") as f:
                f.write(json.dumps(header).encode() + b"\n")
                f.write(payload)
            partial.replace(path)
            files = sorted(self.directory.glob("*.state"), key=lambda p: p.stat().st_mtime_ns)
            for old in files[:-DISK_FILES]:
                old.unlink(missing_ok=True)
        except OSError as exc:  # a full or read-only disk: the next process reads it all
            log.info("could not keep a prompt state in %s: %s", self.directory, exc)
        finally:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)

    def _read(self, head: tuple[int, ...]) -> Any:
        """The state kept on disk for this kind, or None (and the file deleted) when it is
        missing, stale or damaged."""
        import numpy as np
        from llama_cpp import LlamaState

        path = self._path(head)
        try:
            with path.open("rb") as f:
                line = f.readline(_HEADER_MAX)
                payload = f.read()
        except OSError:
            return None
        why = ""
        try:
            header = json.loads(line)
            n, size = int(header["n_tokens"]), int(header["state_bytes"])
            m = int(header["n_last"])
        except (ValueError, KeyError, TypeError, AttributeError):
            header, n, m, size = {}, 0, 0, 0
            why = "its header is unreadable"
        n_ctx = self.header["n_ctx"]
        if not why and any(header.get(k) != v for k, v in self.header.items()):
            why = "it was kept for another model, llama.cpp or context size"
        elif not why and (
            not 0 < n <= m <= n_ctx + 1 or size <= 0 or len(payload) != 4 * (n + m) + size
        ):
            why = "its length does not match its header"
        elif not why and hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            why = "its bytes do not match their checksum"
        if not why:
            tokens = np.frombuffer(payload[: 4 * n], dtype="<i4").astype(np.intc)
            last = np.frombuffer(payload[4 * n : 4 * (n + m)], dtype="<i4").tolist()
            if tuple(last[:HEAD_TOKENS]) != head or last[:n] != tokens.tolist():
                why = "it holds another prompt"
        if why:
            log.info("not using the prompt state %s: %s", path, why)
            path.unlink(missing_ok=True)
            return None
        self.loaded_from_disk += 1
        self.last[head] = last
        return LlamaState(
            input_ids=tokens,
            scores=np.zeros((0, 0), dtype=np.single),
            n_tokens=n,
            llama_state=payload[4 * (n + m) :],
            llama_state_size=size,
            seed=0,
        )
