"""The JSON API through Starlette's TestClient, with the compile worker running and the
model faked at kb-ai's LLM boundary."""

from kb_ai.errors import LLMTimeoutError
from tests.web.conftest import NOTE, make_client, wait_for
from web.services import Limits
from wiki import list_articles


def assert_error(response, status, words):
    assert response.status_code == status, response.text
    body = response.json()
    assert body["ok"] is False and body["status"] == status
    assert words.lower() in body["error"].lower(), body["error"]
    return body


def test_healthz_reports_the_queue(client):
    body = client.get("/healthz").json()
    assert body["ok"] is True and body["queue"]["queued"] == 0 and body["workers"] == 1


def test_a_pasted_note_is_queued_then_compiled_into_an_article(client, kb):
    r = client.post("/api/submit", json=NOTE)
    assert r.status_code == 202
    task = r.json()["tasks"][0]
    assert task["title"] == "Nightly backups" and not task["duplicate"]
    done = wait_for(client, task["id"])
    assert done["state"] == "done", done["error"]
    assert list((kb.state_dir / "inbox").iterdir()) == []  # compiled: the copy is gone
    assert done["result"]["created"] == ["wiki/concept/nightly-backups.md"]
    tree = client.get("/api/wiki").json()
    assert tree["count"] == 1
    assert tree["types"][0]["articles"][0]["path"] == "wiki/concept/nightly-backups.md"
    art = client.get("/api/article", params={"path": "wiki/concept/nightly-backups.md"}).json()
    assert art["article"]["title"] == "Nightly backups" and '<p data-lines="' in art["html"]
    assert art["sources"][0]["url"].startswith("/sources/raw/")
    hist = client.get("/api/history", params={"path": "concept/nightly-backups.md"}).json()
    assert len(hist["history"]) == 1
    diff = client.get(
        "/api/diff",
        params={"path": "wiki/concept/nightly-backups.md", "sha": hist["history"][0]["sha"]},
    ).json()
    assert "+title: Nightly backups" in diff["diff"]


def test_the_same_content_twice_is_one_task(client):
    first = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    again = client.post("/api/submit", json={**NOTE, "title": "Other title"}).json()["tasks"][0]
    assert again["id"] == first["id"] and again["duplicate"] is True


def test_bad_submissions_are_refused_with_one_error_shape(client):
    assert_error(client.post("/api/submit", json={"title": "x", "content": "  \n"}), 400, "empty")
    assert_error(client.post("/api/submit", json=["a"]), 400, "JSON object")
    assert_error(
        client.post("/api/submit", content=b"{nope", headers={"content-type": "application/json"}),
        400,
        "not valid JSON",
    )
    assert_error(
        client.post("/api/submit", content=b"hi", headers={"content-type": "text/plain"}),
        415,
        "Cannot read",
    )
    assert_error(client.post("/api/submit", data={"title": "x"}), 400, "Nothing to submit")
    assert client.get("/api/tasks").json()["tasks"] == []


def test_uploads_queue_the_text_files_and_refuse_binary_ones_by_name(settings, model, kb):
    with make_client(settings, model, start_worker=False) as client:
        uploads_are_checked(client, kb)


def uploads_are_checked(client, kb):
    files = [
        (
            "files",
            (
                "../../etc/on-call.md",
                b"# On call\n\nThe rota changes every Monday at 09:00.\n",
                "text/markdown",
            ),
        ),
        ("files", ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png")),
        ("files", ("latin.txt", "caf\xe9 notes".encode("latin-1"), "text/plain")),
    ]
    r = client.post("/api/submit", files=files)
    assert r.status_code == 202
    body = r.json()
    [task] = body["tasks"]
    assert task["filename"] == "on-call.md" and task["title"] == "On call"
    assert {x["filename"] for x in body["rejected"]} == {"photo.png", "latin.txt"}
    assert any("binary" in x["error"] for x in body["rejected"])
    assert any("UTF-8" in x["error"] for x in body["rejected"])
    assert sorted(p.name for p in (kb.state_dir / "inbox").iterdir()) == [f"{task['id']}.txt"]
    assert not (kb.root.parent / "etc").exists()
    only_binary = client.post("/api/submit", files=[files[1]])
    assert_error(only_binary, 400, "binary")


def test_upload_limits_on_size_and_count(settings, model):
    with make_client(settings, model, limits=Limits(max_file_bytes=1_000, max_files=2)) as c:
        big = [("files", ("big.md", b"x" * 1_001, "text/markdown"))]
        body = assert_error(c.post("/api/submit", files=big), 413, "over the 1,000-byte limit")
        assert body["rejected"][0]["filename"] == "big.md"
        assert_error(
            c.post("/api/submit", json={"title": "t", "content": "y" * 1_001}), 413, "limit"
        )
        many = [("files", (f"n{i}.md", f"note {i}".encode(), "text/markdown")) for i in range(3)]
        r = c.post("/api/submit", files=many)
        assert r.status_code == 400 and r.json()["ok"] is False
        huge = c.post("/api/submit", content=b"x" * 5_000_000,
                      headers={"content-type": "multipart/form-data; boundary=b"})  # fmt: skip
        assert_error(huge, 413, "byte limit")
        assert c.get("/api/tasks").json()["tasks"] == []


def test_unknown_tasks_and_wrong_actions(client):
    assert_error(client.get("/api/tasks/nope"), 404, "No task")
    assert_error(client.post("/api/tasks/nope/retry"), 404, "No task")
    assert_error(client.delete("/api/tasks/nope"), 404, "No task")
    task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    wait_for(client, task["id"])
    assert_error(client.post(f"/api/tasks/{task['id']}/retry"), 400, "only failed tasks")
    assert client.delete(f"/api/tasks/{task['id']}").json() == {"ok": True, "deleted": task["id"]}
    assert client.get("/api/tasks").json()["tasks"] == []


SECRET = "sk-proj-Zq3vX9mB2nL7kT4wR8yH1cF6"


def test_a_secret_in_a_title_never_reaches_the_state_the_api_or_the_status_page(client, kb):
    """Titles are redacted like sources; the submitted copy is deleted once compiled."""
    typed = client.post(
        "/api/submit",
        json={
            "title": f"Deploy key {SECRET}",
            **{"content": "# Deploys\n\nDeploys run from the release branch every Friday.\n"},
        },
    )
    heading = f"# Rotate {SECRET}\n\nKeys are rotated every ninety days.\n".encode()
    uploaded = client.post("/api/submit", files={"files": ("keys.md", heading, "text/markdown")})
    tasks = [r.json()["tasks"][0] for r in (typed, uploaded)]
    assert [t["title"] for t in tasks] == ["Deploy key [REDACTED]", "Rotate [REDACTED]"]
    for task in tasks:
        assert wait_for(client, task["id"])["state"] == "done"
    assert SECRET not in client.get("/api/tasks").text
    assert SECRET not in client.get("/status").text
    for path in kb.state_dir.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path
    assert list((kb.state_dir / "inbox").iterdir()) == []


def test_a_deleted_task_takes_its_copy_along_and_a_failed_one_keeps_it(settings, model, kb):
    inbox = kb.state_dir / "inbox"
    with make_client(settings, model, start_worker=False) as client:
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        assert (inbox / f"{task['id']}.txt").read_bytes() == NOTE["content"].encode()
        assert client.delete(f"/api/tasks/{task['id']}").status_code == 200
        assert list(inbox.iterdir()) == []
    model.handler = lambda *a: LLMTimeoutError("fake/model did not answer within 180 s")
    with make_client(settings, model) as client:
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        assert wait_for(client, task["id"])["state"] == "failed"
        assert [p.name for p in inbox.iterdir()] == [f"{task['id']}.txt"]  # to retry


def test_a_model_that_is_down_fails_tasks_with_the_reason_and_retry_compiles_them(client, model):
    model.handler = lambda *a: LLMTimeoutError("fake/model did not answer within 180 s")
    task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
    failed = wait_for(client, task["id"])
    assert failed["state"] == "failed" and "did not answer within 180 s" in failed["error"]
    model.handler = __import__("tests.web.conftest", fromlist=["respond"]).respond
    assert client.post(f"/api/tasks/{task['id']}/retry").json()["task"]["state"] == "queued"
    done = wait_for(client, task["id"])
    assert done["state"] == "done" and done["attempts"] == 2


def test_article_paths_that_leave_the_wiki_are_refused(compiled):
    for bad in ("../kb-ai.toml", "wiki/../../../etc/passwd", "/etc/passwd", "..\\..\\kb-ai.toml"):
        r = compiled.get("/api/article", params={"path": bad})
        assert r.status_code in (400, 404) and r.json()["ok"] is False, bad
    assert_error(
        compiled.get("/api/article", params={"path": "wiki/concept/none.md"}), 404, "no article"
    )
    assert_error(compiled.get("/api/article"), 400, "No article path")
    assert_error(compiled.get("/api/source", params={"path": "../kb-ai.toml"}), 400, "outside")
    assert_error(
        compiled.get(
            "/api/diff", params={"path": "wiki/concept/nightly-backups.md", "sha": "--output=x"}
        ),
        404,
        "not a commit",
    )
    assert_error(compiled.get("/api/nothing-here"), 404, "Not found")


def test_the_queue_streams_its_changes(client):
    with client.stream("GET", "/api/tasks/events") as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        from tests.web.conftest import sse

        events = sse(r)
        kind, first = next(events)
        assert kind == "tasks" and first["tasks"] == []
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        seen = set()
        for _kind, snap in events:
            states = {t["id"]: t["state"] for t in snap["tasks"]}
            seen.add(states.get(task["id"]))
            if states.get(task["id"]) == "done":
                break
        assert "done" in seen and snap["counts"]["done"] == 1


def test_no_articles_on_disk_means_an_empty_tree(client, kb):
    assert client.get("/api/wiki").json() == {"ok": True, "types": [], "count": 0}
    assert list_articles(kb) == []
