"""The web side of claims a reader can check: the article page marks each block with the
lines of its file (what a citation's #L12-L18 names), the chat's citations carry those
lines, and Status shows the last scores of `kb-ai eval`."""

import asyncio
import re

from kb_ai.service import Actor, open_kb
from kb_ai.service.evaluating import evaluate
from tests.web.conftest import csrf_token, sse

BACKUPS = "wiki/concept/nightly-backups.md"


def test_each_block_of_an_article_says_the_lines_of_its_file(compiled, kb):
    page = compiled.get(f"/{BACKUPS}").text
    lines = (kb.root / BACKUPS).read_text(encoding="utf-8").split("\n")
    marked = re.findall(r'<p data-lines="(\d+)-(\d+)">(.*?)</p>', page, re.S)
    assert marked
    for start, end, html in marked:
        held = "\n".join(lines[int(start) - 1 : int(end)])
        assert re.sub(r"<[^>]+>", "", html).split()[0] in held


def test_a_source_page_marks_its_blocks_with_the_lines_of_the_raw_file(compiled, kb):
    (raw,) = [p for p in (kb.root / "raw").glob("*.md")]
    page = compiled.get(f"/sources/raw/{raw.name}").text
    lines = raw.read_text(encoding="utf-8").split("\n")
    marked = re.findall(r'<p data-lines="(\d+)-(\d+)">([^<]*)', page)
    assert any("nightly at 02:00" in text for _, _, text in marked)
    for start, end, text in marked:
        assert text.split()[0] in "\n".join(lines[int(start) - 1 : int(end)])


def test_a_chat_answer_cites_the_lines_that_hold_its_claim(compiled, kb):
    token = csrf_token(compiled)
    with compiled.stream(
        "POST",
        "/api/ask",
        json={"question": "When do backups of the main database run nightly?"},
        headers={"X-KB-AI-CSRF": token},
    ) as r:
        events = list(sse(r))
    done = next(data for event, data in events if event == "done")
    (claim,) = done["claims"]
    lines = (kb.root / BACKUPS).read_text(encoding="utf-8").split("\n")
    span = claim["span"]
    assert "02:00" in "\n".join(lines[span["start"] - 1 : span["end"]])
    assert f"({BACKUPS}#L{span['start']}" in done["answer"] and claim["supported"]


def test_status_shows_the_last_scores_of_each_golden_set(compiled, kb, settings, model, tmp_path):
    assert "No golden questions asked yet" in compiled.get("/status").text
    golden = tmp_path / "backups-golden.yaml"
    golden.write_text(
        "questions:\n"
        "  - question: When do backups of the main database run nightly?\n"
        "    expect: ['02:00']\n"
        "  - question: What colour is the office carpet?\n"
        "    expect: not covered\n"
        "  - question: Which engineer restores the nightly backups?\n"
        "    expect: [Priya]\n",
        encoding="utf-8",
    )
    okb = open_kb(settings=settings, actor=Actor.cli_user(kb.root), llm_factory=model.factory)
    run = asyncio.run(evaluate(okb, golden))
    assert run.score == 0.667
    page = compiled.get("/status").text
    row = page.split('<tr data-set="backups-golden">', 1)[1].split("</tr>", 1)[0]
    assert "67%</b> of 3" in row
    assert "1 right, 1 right abstention" in row and "regression" not in row
