"""Documents through the web app: an uploaded PDF compiles with its pages marked, the
source view shows them and links to the original; a URL is fetched by the server,
which refuses addresses on its own network unless kb-ai.toml allows them."""

import dataclasses
import re

import pytest

from tests.conftest import needs_shared_data, shared_data
from tests.web.conftest import html_site, make_client, wait_for

DATA = shared_data("documents")
pytestmark = needs_shared_data("documents")
PAGE = (
    b"<html><head><title>On-call handbook</title></head><body><nav>Home | Jobs</nav><main>"
    b"<h1>On-call handbook</h1><p>The on-call engineer answers pages within fifteen minutes "
    b"and hands over every Monday at 10:00 in the platform channel.</p>"
    b"<p>Escalate to the team lead after thirty minutes without progress.</p></main></body></html>"
)


@pytest.fixture
def page_url():
    with html_site(PAGE, "/handbook.html") as url:
        yield url


def test_an_uploaded_pdf_compiles_and_its_source_shows_pages_and_the_original(client, kb):
    pdf = (DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes()
    files = [("files", ("estimate.pdf", pdf, "application/pdf"))]
    r = client.post("/api/submit", files=files)
    assert r.status_code == 202, r.text
    task = wait_for(client, r.json()["tasks"][0]["id"])
    assert task["state"] == "done", task["error"]
    raw = next((kb.root / "raw").glob("*.md"))
    page = client.get(f"/sources/raw/{raw.name}").text
    assert 'id="page-1"' in page and 'id="page-3"' in page
    link = re.search(r'href="(/originals/raw/[^"]+\.pdf)"', page).group(1)
    original = client.get(link)
    assert original.status_code == 200 and original.content == pdf
    assert original.headers["content-type"] == "application/pdf"
    # the article cites the source down to its pages, and links to the first of them
    article = client.get("/" + task["result"]["created"][0]).text
    assert f'href="/sources/raw/{raw.name}#page-1"' in article and "(pages 1-3)" in article


def test_a_bad_document_fails_its_task_with_the_cause(client):
    files = [("files", ("locked.pdf", (DATA / "libreoffice-writer-password.pdf").read_bytes(),
                        "application/pdf"))]  # fmt: skip
    task = client.post("/api/submit", files=files).json()["tasks"][0]
    failed = wait_for(client, task["id"])
    assert failed["state"] == "failed" and "password-protected" in failed["error"]


def test_the_submit_page_lists_the_types_and_has_a_url_field(client):
    page = client.get("/submit").text
    assert 'id="url"' in page and 'name="url"' in page
    for label in ("PDF", "Word", "PowerPoint", "Excel", "zip"):
        assert label in page


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/x", "http://10.0.0.1/", "http://169.254.169.254/latest/"]
)
def test_the_server_refuses_urls_on_its_own_network(client, url):
    r = client.post("/api/submit", json={"url": url})
    assert r.status_code == 400
    assert "refused" in r.json()["error"] and "address" in r.json()["error"]
    assert client.get("/api/tasks").json()["tasks"] == []


def test_a_url_allowed_in_the_settings_is_fetched_and_compiled(settings, model, kb, page_url):
    allowed = dataclasses.replace(settings, fetch_allow=("127.0.0.1",))
    with make_client(allowed, model) as client:
        r = client.post("/api/submit", json={"url": page_url})
        assert r.status_code == 202, r.text
        task = wait_for(client, r.json()["tasks"][0]["id"])
        assert task["state"] == "done", task["error"]
    raw = next((kb.root / "raw").glob("*.md")).read_text(encoding="utf-8")
    assert f"origin: {page_url}" in raw
    assert "fifteen minutes" in raw and "Home | Jobs" not in raw


def test_an_uploaded_zip_compiles_each_readable_member_as_a_source(client, kb):
    files = [("files", ("bundle.zip", (DATA / "test_files.zip").read_bytes(), "application/zip"))]
    task = client.post("/api/submit", files=files).json()["tasks"][0]
    done = wait_for(client, task["id"], timeout=60.0)
    assert done["state"] == "done", done["error"]
    origins = sorted(
        line.split(": ", 1)[1]
        for p in (kb.root / "raw").glob("*.md")
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.startswith("origin: ")
    )
    members = [o.rsplit("#", 1)[1] for o in origins]
    # the image is not a document kb-ai reads; every other member is a source of its own
    assert members == ["test.docx", "test.pptx", "test.xlsx", "test_blog.html",
                       "test_serp.html", "test_wikipedia.html"]  # fmt: skip


def zip_of(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def test_an_uploaded_zip_reads_the_text_files_a_folder_does(client, kb):
    text = "# {0}\n\nThe {0} runbook says the on-call engineer restarts the queue at 03:00.\n"
    names = ["notes/handover.adoc", "notes/rota.org", "notes/queue.text", "notes/deploy.md"]
    bundle = zip_of({name: text.format(name.split("/")[1]).encode() for name in names})
    files = [("files", ("notes.zip", bundle, "application/zip"))]
    task = client.post("/api/submit", files=files).json()["tasks"][0]
    done = wait_for(client, task["id"], timeout=60.0)
    assert done["state"] == "done", done["error"]
    assert not done["result"].get("failed"), done["result"]
    origins = sorted(
        line.split("#", 1)[1]
        for p in (kb.root / "raw").glob("*.md")
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.startswith("origin: ")
    )
    assert origins == sorted(names)
    picker = re.search(r'<input id="files"[^>]*accept="([^"]+)"', client.get("/submit").text)
    assert {".adoc", ".org", ".text", ".md", ".pdf"} <= set(picker.group(1).split(","))


def test_a_zip_lists_each_member_that_failed_and_why_while_the_good_ones_compile(client, kb):
    docx = (DATA / "test.docx").read_bytes()
    bundle = zip_of({
        "report/invoice.pdf": (DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes(),
        "report/locked.pdf": (DATA / "libreoffice-writer-password.pdf").read_bytes(),
        "report/scan.pdf": (DATA / "MEDRPT-2024-PAT-3847_medical_report_scan.pdf").read_bytes(),
        "report/cut.docx": docx[: len(docx) // 2],
        "report/random.bin": (DATA / "random.bin").read_bytes(),
        "report/notes.docx": docx,
    })  # fmt: skip
    files = [("files", ("report.zip", bundle, "application/zip"))]
    task = client.post("/api/submit", files=files).json()["tasks"][0]
    done = wait_for(client, task["id"], timeout=60.0)
    assert done["state"] == "done", done["error"]
    failed = {f["source"]: f["error"] for f in done["result"]["failed"]}
    assert sorted(failed) == ["report/cut.docx", "report/locked.pdf", "report/random.bin",
                              "report/scan.pdf"]  # fmt: skip
    assert "password-protected" in failed["report/locked.pdf"]
    assert "no text layer" in failed["report/scan.pdf"]
    assert "corrupt or truncated" in failed["report/cut.docx"]
    assert "does not know this file type" in failed["report/random.bin"]
    origins = [
        line.split("#", 1)[1]
        for p in (kb.root / "raw").glob("*.md")
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.startswith("origin: ")
    ]
    assert sorted(origins) == ["report/invoice.pdf", "report/notes.docx"]
    status = client.get("/status").text
    assert "Not compiled: 4 of its files" in status and "password-protected" in status


def test_a_zip_none_of_whose_members_compile_fails_naming_each(client):
    bundle = zip_of({
        "locked.pdf": (DATA / "libreoffice-writer-password.pdf").read_bytes(),
        "scan.pdf": (DATA / "MEDRPT-2024-PAT-3847_medical_report_scan.pdf").read_bytes(),
    })  # fmt: skip
    files = [("files", ("bad.zip", bundle, "application/zip"))]
    task = client.post("/api/submit", files=files).json()["tasks"][0]
    failed = wait_for(client, task["id"])
    assert failed["state"] == "failed"
    assert "locked.pdf" in failed["error"] and "password-protected" in failed["error"]
    assert "scan.pdf" in failed["error"] and "no text layer" in failed["error"]


def test_a_zip_member_over_convert_timeout_is_listed_and_the_rest_compiles(
    settings, model, kb, monkeypatch
):
    from compiler.documents import isolation
    from tests.fakes.stand_in_converters import misbehaving_convert

    monkeypatch.setattr(isolation, "convert_document", misbehaving_convert)
    invoice = (DATA / "REPAIR-2022-INV-001_multipage.pdf").read_bytes()
    bundle = zip_of({"slow-scan.pdf": invoice, "invoice.pdf": invoice})
    with make_client(dataclasses.replace(settings, convert_timeout=3.0), model) as client:
        files = [("files", ("bundle.zip", bundle, "application/zip"))]
        task = client.post("/api/submit", files=files).json()["tasks"][0]
        done = wait_for(client, task["id"], timeout=60.0)
    assert done["state"] == "done", done["error"]
    [failed] = done["result"]["failed"]
    assert failed["source"] == "slow-scan.pdf"
    assert "took longer than 3 s; raise convert_timeout" in failed["error"]
    assert len(list((kb.root / "raw").glob("*.md"))) == 1
