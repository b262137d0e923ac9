"""Documents through compile with the fake model: every file in shared/data/documents,
each good one a source with its converted text (and page markers for PDFs) and its
original file in raw/, each bad one refused with its cause, nothing else lost."""

import asyncio
import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from compiler import Compiler
from kb_ai.cli import main
from tests.conftest import needs_shared_data, shared_data, shared_files
from wiki import list_articles, read_article, read_raw

DATA = shared_data("documents")
pytestmark = needs_shared_data("documents")

# file -> what its refusal must say
BAD = {
    "libreoffice-writer-password.pdf": "password-protected",
    "MEDRPT-2024-PAT-3847_medical_report_scan.pdf": "no text layer",
    "random.bin": "does not know this file type",
}
GOOD = [
    p.name
    for p in shared_files(DATA)
    if p.name not in BAD and not p.name.endswith(".txt") and p.suffix != ".zip"
]


def run_compile(kb, settings, llm, *paths):
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    return asyncio.run(compiler.compile_paths([str(p) for p in paths]))


def raw_by_origin(kb):
    out = {}
    for p in sorted((kb.root / "raw").glob("*.md")):
        src = read_raw(kb, f"raw/{p.name}")
        out[src.origin] = src
    return out


def test_every_document_compiles_or_is_refused_with_its_cause(kb, settings, fake_llm):
    files = [DATA / name for name in [*GOOD, *BAD]]
    result = run_compile(kb, settings, fake_llm, *files)

    failed = {Path(f.source).name: f.error for f in result.failed}
    assert set(failed) == set(BAD), failed
    for name, cause in BAD.items():
        assert cause in failed[name]
    assert sorted(Path(p).name for p in result.compiled) == GOOD
    raws = raw_by_origin(kb)
    for name in GOOD:
        src = raws[str((DATA / name).resolve())]
        body = re.sub(r"<!--.*?-->", "", src.text)
        assert body.strip(), f"{name}: converted text is empty"
        assert src.kind == "document"
        # the original beside the converted text, byte for byte
        original = kb.root / src.original_path
        assert original.read_bytes() == (DATA / name).read_bytes()
        if name.endswith(".pdf"):
            assert "<!-- page 1 -->" in src.text
    # the thesis: 117 page markers, in order
    thesis = raws[str((DATA / "GeoTopo-komprimiert.pdf").resolve())]
    pages = [int(n) for n in re.findall(r"^<!-- page (\d+) -->$", thesis.text, re.M)]
    assert pages == list(range(1, 118))
    slides = raws[str((DATA / "test.pptx").resolve())]
    assert "<!-- slide 1 -->" in slides.text
    sheet = raws[str((DATA / "test.xlsx").resolve())]
    assert "<!-- sheet: Sheet1 -->" in sheet.text and "| Alpha | Beta |" in sheet.text
    csv = raws[str((DATA / "test_mskanji.csv").resolve())]
    assert "佐藤太郎" in csv.text  # Shift-JIS decoded
    arabic = raws[str((DATA / "habibi.pdf").resolve())]
    assert "حَبيبي habibi حَبيبي" in arabic.text  # right-to-left, in reading order
    serp = raws[str((DATA / "test_serp.html").resolve())]
    assert "Microsoft" in serp.text and len(serp.text) < 10_000  # main content, not the page
    assert result.commit and list_articles(kb)


def test_a_zip_archive_makes_each_member_a_source(kb, settings, fake_llm, tmp_path):
    result = run_compile(kb, settings, fake_llm, DATA / "test_files.zip")
    assert not result.failed
    zip_path = str((DATA / "test_files.zip").resolve())
    # the image is not a document kb-ai reads; every other member is a source of its own
    members = ["test.docx", "test.pptx", "test.xlsx", "test_blog.html", "test_serp.html",
               "test_wikipedia.html"]  # fmt: skip
    assert result.compiled == [f"{zip_path}#{m}" for m in members]
    slides = raw_by_origin(kb)[f"{zip_path}#test.pptx"]
    assert "<!-- slide 1 -->" in slides.text and slides.original_path.endswith(".pptx")


def test_cli_json_names_the_cause_of_each_failed_document(kb, fake_model, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in [*BAD, "test.docx"]:
        shutil.copy(DATA / name, folder / name)
    (folder / "truncated.docx").write_bytes((DATA / "test.docx").read_bytes()[:4000])
    (folder / "truncated.xlsx").write_bytes((DATA / "test.xlsx").read_bytes()[:3000])
    files = sorted(str(p) for p in folder.iterdir())
    out = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", "--json", *files])
    assert out.exit_code == 1, out.output
    report = json.loads(out.stdout)
    errors = {Path(f["source"]).name: f["error"] for f in report["failed"]}
    assert "password-protected" in errors["libreoffice-writer-password.pdf"]
    assert "no text layer" in errors["MEDRPT-2024-PAT-3847_medical_report_scan.pdf"]
    assert "does not know this file type" in errors["random.bin"]
    assert "corrupt or truncated" in errors["truncated.docx"]
    assert "corrupt or truncated" in errors["truncated.xlsx"]
    assert [Path(p).name for p in report["compiled"]] == ["test.docx"]


def test_the_thesis_is_extracted_section_by_section_and_facts_name_their_pages(
    kb, settings, fake_llm
):
    """117 pages, 35 bookmarks: one extract call per top-level section (long chapters split
    at their subsections), far fewer than pages; each fact says which pages it is from."""
    result = run_compile(kb, settings, fake_llm, DATA / "GeoTopo-komprimiert.pdf")
    assert result.compiled
    calls = [c for c in fake_llm.calls if c.stage == "extract"]
    raws = raw_by_origin(kb)
    thesis = raws[str((DATA / "GeoTopo-komprimiert.pdf").resolve())]
    assert "\n# " in thesis.text or "\n## " in thesis.text  # the outline, as headings
    assert 5 <= len(calls) < 30
    prompts = [c.messages[-1]["content"] for c in calls]
    # every piece says which page it starts on, and no page is split across two calls
    # unless it is itself longer than a call
    assert all(re.search(r"<!-- page \d+( \(continued\))? -->", p) for p in prompts)
    extraction = (kb.root / "extraction" / f"{thesis.slug}.md").read_text(encoding="utf-8")
    assert re.search(r"\(pp?\. \d+(-\d+)?\)", extraction)
    # the document's outline (its bookmarks) reaches the article, complete and in order
    assert "Outline of" in extraction and "1 Topologische Grundbegriffe" in extraction
    # the article's sources entry names the pages its text cites
    article = read_article(kb, (result.created + result.updated)[0])
    entry = next(e for e in article.sources if e.startswith(thesis.path))
    assert re.fullmatch(rf"{re.escape(thesis.path)}#pages=\d+(-\d+)?(,\d+(-\d+)?)*", entry)


def test_more_pages_of_one_section_do_not_mean_more_calls(kb, settings, fake_llm):
    """Calls grow with sections, not bytes: a PDF of 4 short pages is one call."""
    result = run_compile(kb, settings, fake_llm, DATA / "pdflatex-4-pages.pdf")
    assert result.compiled
    assert [c.stage for c in fake_llm.calls].count("extract") == 1


def test_compile_help_lists_every_document_type_and_watch_exists():
    from compiler.documents import DOCUMENT_EXTENSIONS

    text = CliRunner().invoke(main, ["compile", "--help"]).output
    missing = [ext for ext in DOCUMENT_EXTENSIONS if ext not in text]
    assert not missing, f"kb-ai compile --help does not name {missing}"
    assert "URL" in text
    watch = CliRunner().invoke(main, ["watch", "--help"])
    assert watch.exit_code == 0 and "until Ctrl-C" in watch.output


def test_a_folder_contributes_its_documents_and_feeds_but_not_other_xml(tmp_path):
    from compiler.discover import discover

    folder = tmp_path / "repo"
    folder.mkdir()
    shutil.copy(DATA / "test.docx", folder / "spec.docx")
    shutil.copy(DATA / "test_rss.xml", folder / "blog.xml")
    (folder / "pom.xml").write_text("<?xml version='1.0'?><project/>", encoding="utf-8")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    found, problems = discover([folder])
    assert sorted(c.path.name for c in found) == ["blog.xml", "spec.docx"] and not problems
