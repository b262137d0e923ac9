"""Uploads through the API (issue 24, findings 2, 3 and 6): secrets in file names, titles
and text never reach the queue, the pages, the model or the wiki, not even the inbox copy
a failed task keeps for Retry; a UTF-16 file compiles; an over-long name is refused
saying what the limit is."""

import dataclasses
import io
import json
import subprocess
import zipfile

from kb_ai.errors import LLMTimeoutError
from tests.compiler.test_redact_everywhere import (
    FORMS,
    GITHUB_IN_NAME,
    GITHUB_IN_TITLE,
    PAGE_PASS,
    SECRETS,
)
from tests.web.conftest import html_site, make_client, respond, wait_for


def recording(model):
    """The user and system messages every model call of ``model`` is sent, as they come."""
    seen: list[dict] = []

    def handler(stage, messages, schema):
        seen.extend(messages)
        return respond(stage, messages, schema)

    model.handler = handler
    return seen


def leaks(kb, client, prompts) -> list[str]:
    places = {
        "/api/tasks": client.get("/api/tasks").text,
        "/status": client.get("/status").text,
        "prompts": json.dumps(prompts),
        "git log": subprocess.run(
            ["git", "-C", str(kb.root), "log", "--all", "-p", "--format=%B"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout,
    }
    for path in kb.root.rglob("*"):
        places[f"name {path}"] = str(path)
        if path.is_file() and ".git" not in path.relative_to(kb.root).parts:
            places[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return [f"{s} in {where}" for where, text in places.items() for s in SECRETS if s in text]


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_secrets_in_an_uploads_name_title_and_text_reach_nothing(settings, model, kb):
    prompts = recording(model)
    bundle = zipped(
        {
            f"notes/keys-{GITHUB_IN_NAME}.md": b"# Keys\n\nThe keys rotate every month.\n",
            f"photo-{GITHUB_IN_NAME}.png": b"\x89PNG",  # left out, by its name
        }
    )
    files = [
        ("files", (f"creds-{GITHUB_IN_NAME}.md", b"# Robot\n\nThe robot rotates keys.\n")),
        (
            "files",
            (
                "rotate.md",
                f"# Rotate {GITHUB_IN_TITLE} before Friday\n\nThe token expires on Friday.\n"
                "".encode(),
            ),
        ),
        ("files", ("forms.md", FORMS.encode())),
        ("files", ("bundle.zip", bundle)),
    ]
    with make_client(settings, model) as client:
        body = client.post("/api/submit", files=files).json()
        assert len(body["tasks"]) == 4, body
        for task in body["tasks"]:
            assert wait_for(client, task["id"])["state"] == "done", task
        assert [t["title"] for t in body["tasks"]][1] == "Rotate [REDACTED] before Friday"
        assert not leaks(kb, client, prompts)


def test_a_password_in_a_submitted_url_reaches_nothing(settings, model, kb):
    prompts = recording(model)
    page = (
        b"<html><head><title>Rota</title></head><body><article><h1>Rota</h1><p>The on-call "
        b"rota changes every Monday at nine, and the handover is written down in the "
        b"operations channel before noon.</p></article></body></html>"
    )
    allowed = dataclasses.replace(settings, fetch_allow=("127.0.0.1",))
    with html_site(page, "/rota") as url, make_client(allowed, model) as client:
        sent = {"url": f"{url}?user=ops&pass={PAGE_PASS}"}
        [task] = client.post("/api/submit", json=sent).json()["tasks"]
        assert wait_for(client, task["id"])["state"] == "done", task
        [raw] = kb.raw_dir.glob("*.md")
        assert "pass=[REDACTED]" in raw.read_text()  # its origin: the URL, redacted
        assert not leaks(kb, client, prompts)


def test_a_failed_tasks_inbox_copy_keeps_no_secret_and_retry_still_compiles(settings, model, kb):
    inbox = kb.state_dir / "inbox"
    with make_client(settings, model) as client:
        model.handler = lambda *a: LLMTimeoutError("fake/model did not answer within 180 s")
        files = [("files", ("forms.md", FORMS.encode()))]
        [task] = client.post("/api/submit", files=files).json()["tasks"]
        assert wait_for(client, task["id"])["state"] == "failed"
        [copy] = inbox.iterdir()
        kept = copy.read_text()
        assert "[REDACTED]" in kept and "The queue connects with" in kept
        assert not [s for s in SECRETS if s in kept]
        prompts = recording(model)
        assert client.post(f"/api/tasks/{task['id']}/retry").status_code == 200
        assert wait_for(client, task["id"])["state"] == "done"
        assert list(inbox.iterdir()) == []
        assert not leaks(kb, client, prompts)


def test_an_agent_session_keeps_its_json_when_its_copy_is_redacted(settings, model, kb):
    """A transcript's inbox copy is redacted string by string: still a transcript."""
    turn = {"type": "user", "sessionId": "5f2c", "message": {"role": "user", "content": ""}}
    lines = [
        {**turn, "message": {"role": "user", "content": f"My token is {GITHUB_IN_NAME}\nuse it"}},
        {
            "type": "assistant",
            "sessionId": "5f2c",
            "message": {"role": "assistant", "content": "The deploy robot now uses that token."},
        },
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    with make_client(settings, model, start_worker=False) as client:
        [task] = client.post("/api/submit", files=[("files", ("session.jsonl", data))]).json()[
            "tasks"
        ]
        [copy] = (kb.state_dir / "inbox").iterdir()
        kept = [json.loads(line) for line in copy.read_text().splitlines()]
        assert kept[0]["message"]["content"] == "My token is [REDACTED]\nuse it"
        assert kept[1] == lines[1] and task["state"] == "queued"


def test_a_utf16_upload_with_a_byte_order_mark_compiles(settings, model, kb):
    """What Windows Notepad writes: UTF-16 with a byte order mark, CRLF line ends."""
    text = "# Printer rota\r\n\r\nThe printer on floor two is serviced every Tuesday.\r\n"
    data = text.encode("utf-16")
    assert data.startswith(b"\xff\xfe")
    with make_client(settings, model) as client:
        [task] = client.post("/api/submit", files=[("files", ("rota.txt", data))]).json()["tasks"]
        done = wait_for(client, task["id"])
        assert done["state"] == "done", done["error"]
        [raw] = kb.raw_dir.glob("*.md")
        assert "serviced every Tuesday" in raw.read_text(encoding="utf-8")


def test_an_over_long_file_name_is_refused_saying_what_the_limit_is(settings, model):
    with make_client(settings, model, start_worker=False) as client:
        for length in (300, 5_000):
            name = "n" * length + ".md"
            r = client.post("/api/submit", files=[("files", (name, b"# Note\n\nSome text.\n"))])
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert "255-character limit" in error or "limit for a file name is 255" in error, error
            assert "Invalid multipart" not in error
        ok = client.post("/api/submit", files=[("files", ("n" * 200 + ".md", b"# Note\n\nx y\n"))])
        assert ok.status_code == 202
        assert client.get("/api/tasks").json()["tasks"][0]["filename"] == "n" * 200
