"""Issue 25's story, with the stand-in model server: the deploy how-to compiled, revised
and compiled from another folder, revised again and uploaded on the Submit page is one
article stating the newest value (it was three, stating 15, 20 and 30 minutes). The
Submit page's "This revises" field says what a document revises."""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner
from starlette.testclient import TestClient

from kb_ai.cli import main
from kb_ai.settings import load_settings
from tests.web.conftest import LOOPBACK, wait_for
from web import create_app
from wiki import list_articles, list_raw, read_article

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"
DEPLOY = (EXAMPLES / "deploy-howto.md").read_text(encoding="utf-8")
TITLE = "How to deploy the invoice service"
RAW = "raw/how-to-deploy-the-invoice-service.md"


def compile_folder(kb, folder: Path, text: str) -> None:
    folder.mkdir(parents=True)
    (folder / "deploy-howto.md").write_text(text, encoding="utf-8")
    done = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(folder)])
    assert done.exit_code == 0, done.output


def web_client(kb) -> TestClient:
    """The app as `kb-ai serve` runs it: its model the stand-in server of the environment."""
    settings = load_settings(kb.root, environ=dict(os.environ))
    app = create_app(settings, status_interval=0.05, worker_poll_seconds=0.05)
    return TestClient(app, base_url=LOOPBACK)


def form_csrf(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]*)"', page).group(1)


def upload(client, name: str, text: str, **fields):
    page = client.get("/submit").text
    return client.post(
        "/submit",
        data={"csrf": form_csrf(page), **fields},
        files=[("files", (name, text.encode(), "text/markdown"))],
        follow_redirects=False,
    )


def the_articles(kb):
    return [a for a in (read_article(kb, p) for p in list_articles(kb)) if a.title == TITLE]


def test_a_revision_by_folder_then_by_upload_is_one_article_with_the_newest_value(
    kb, fake_model, tmp_path
):
    compile_folder(kb, tmp_path / "notes", DEPLOY)
    compile_folder(kb, tmp_path / "copy", DEPLOY.replace("15 minutes", "20 minutes"))
    with web_client(kb) as client:
        sent = upload(client, "deploy-howto.md", DEPLOY.replace("15 minutes", "30 minutes"))
        assert sent.status_code == 303, sent.text
        task = wait_for(client, client.get("/api/tasks").json()["tasks"][0]["id"])
        assert task["state"] == "done", task["error"]
    (article,) = the_articles(kb)
    assert "30 minutes" in article.body
    assert "20 minutes" not in article.body and "15 minutes" not in article.body
    assert list_raw(kb) == [RAW] and article.sources == [RAW]


def test_the_submit_page_says_what_an_upload_revises(kb, fake_model, tmp_path):
    compile_folder(kb, tmp_path / "notes", DEPLOY)
    # another name, another title, other words: only the person knows it is a revision
    text = "# Releasing invoices\n\nReleases go out from Argo CD; watch errors for 40 minutes.\n"
    with web_client(kb) as client:
        assert 'name="revises"' in client.get("/submit").text
        sent = upload(client, "release.md", text, revises="how-to-deploy-the-invoice-service")
        assert sent.status_code == 303, sent.text
        task = wait_for(client, client.get("/api/tasks").json()["tasks"][0]["id"])
        assert task["state"] == "done", task["error"]
    assert list_raw(kb) == [RAW]
    (article,) = [read_article(kb, p) for p in list_articles(kb)]
    assert "40 minutes" in article.body and "15 minutes" not in article.body


def test_an_upload_field_naming_no_source_is_refused_before_anything_is_queued(
    kb, fake_model, tmp_path
):
    compile_folder(kb, tmp_path / "notes", DEPLOY)
    with web_client(kb) as client:
        sent = upload(client, "release.md", "# Release\n\nText.\n", revises="no-such-source")
        assert sent.status_code == 400
        assert "&#39;no-such-source&#39; names no source" in sent.text
        api = client.post(
            "/api/submit", json={"title": "x", "content": "Text.", "revises": "no-such-source"}
        )
        assert api.status_code == 400 and "names no source" in api.json()["error"]
        assert client.get("/api/tasks").json()["tasks"] == []


def test_status_says_which_source_an_upload_may_revise(kb, fake_model, tmp_path):
    compile_folder(kb, tmp_path / "notes", DEPLOY)
    half = DEPLOY.split("Rolling back:")[0] + (
        "Rolling forward is the rule here: a fix goes out as a new release through the same "
        "workflow, reviewed like any other change, and the on-call engineer writes a short "
        "note in the incident channel saying which release fixed what and why.\n"
    )
    with web_client(kb) as client:
        sent = upload(client, "deploy-notes.md", half)
        assert sent.status_code == 303, sent.text
        task = wait_for(client, client.get("/api/tasks").json()["tasks"][0]["id"])
        assert task["state"] == "done", task["error"]
        (note,) = task["result"]["identity"]
        assert f"it may revise {RAW}" in note
        assert "This revises: how-to-deploy-the-invoice-service" in note
        assert "it may revise" in client.get("/status").text
    assert len(list_raw(kb)) == 2
