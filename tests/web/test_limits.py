"""Request bodies that are too big or too deep: refused with the usual JSON error, and
refused while they are read, not after."""

import asyncio
import json

import pytest

from tests.web.conftest import make_client
from web import create_app
from web.services import Limits

DEEP = b"[" * 100_000 + b"]" * 100_000
CHUNK = 65_536


@pytest.mark.parametrize("path", ["/api/submit", "/api/ask", "/api/sessions"])
def test_deeply_nested_json_gets_the_usual_error(settings, model, path):
    with make_client(settings, model, start_worker=False) as client:
        for body in (DEEP, b'{"title": ' + DEEP + b"}"):
            r = client.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400, r.text
            assert r.json()["ok"] is False and "nested too deeply" in r.json()["error"]
        assert client.get("/api/tasks").json()["tasks"] == []


def post_in_chunks(app, path, ctype, body, *, declare=False):
    """POST ``body`` to the app in 64 KiB chunks, as a server hands them over; returns
    (status, JSON body, bytes the app asked for before it answered)."""
    chunks = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)]
    headers = [(b"host", b"127.0.0.1"), (b"content-type", ctype.encode())]
    if declare:
        headers.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": headers, "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }  # fmt: skip
    read = 0
    sent: list[dict] = []

    async def receive():
        nonlocal read
        if not chunks:  # all sent: the client waits for the answer, then gives up
            await asyncio.sleep(60)
            return {"type": "http.disconnect"}
        chunk = chunks.pop(0)
        read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(payload), read


@pytest.fixture
def small_app(settings, model):
    """A server whose documents may be 10 kB each (a JSON submission body up to about
    94 kB, a multipart one up to 1.2 MB)."""
    limits = Limits(max_file_bytes=10_000)
    return create_app(settings, llm_factory=model.factory, start_worker=False, limits=limits)


def big_json(size):
    return json.dumps({"title": "Big", "content": "a" * size}).encode()


def test_a_json_submission_is_refused_once_past_its_limit_not_after_reading_it(small_app):
    """The issue: JSON bodies up to 101 MB were read whole before the 5 MB limit applied."""
    status, body, read = post_in_chunks(small_app, "/api/submit", "application/json",
                                        big_json(3_000_000))  # fmt: skip
    assert status == 413 and body["ok"] is False and "limit" in body["error"]
    assert read <= Limits(max_file_bytes=10_000).max_json_bytes + CHUNK
    status, body, read = post_in_chunks(small_app, "/api/submit", "application/json",
                                        big_json(3_000_000), declare=True)  # fmt: skip
    assert (status, read) == (413, 0)  # a declared length over the limit: nothing read


def test_a_json_submission_within_its_limit_is_read(small_app):
    # 9,000 bytes of UTF-8 text that JSON escapes to 27 kB of body: still one document
    body = json.dumps({"title": "Accents", "content": "\u00e9" * 4_500}).encode()
    status, payload, _ = post_in_chunks(small_app, "/api/submit", "application/json", body)
    assert status == 202, payload


def test_small_json_bodies_stop_at_their_limit(small_app):
    question = json.dumps({"question": "x" * 5_000_000}).encode()
    status, body, read = post_in_chunks(small_app, "/api/ask", "application/json", question)
    assert status == 413 and body["ok"] is False
    assert read <= 1_000_000 + CHUNK


def test_a_multipart_submission_stops_at_its_limit(small_app):
    boundary = "kbaiboundary"
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; "
            f"filename=\"big.md\"\r\nContent-Type: text/markdown\r\n\r\n").encode()  # fmt: skip
    body = part + b"a" * 5_000_000 + f"\r\n--{boundary}--\r\n".encode()
    status, payload, read = post_in_chunks(
        small_app, "/api/submit", f"multipart/form-data; boundary={boundary}", body
    )
    assert status == 413 and payload["ok"] is False
    assert read <= Limits(max_file_bytes=10_000).max_body_bytes + CHUNK
