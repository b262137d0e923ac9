"""Questions in one language over a wiki in another (issue 17, scope 5): search terms in
the wiki's language are asked for before the shortlist, and a reply with none usable
ends in a plain "not covered"."""

import asyncio
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from retrieval import NOT_COVERED, ask
from tests.conftest import shared_data, skip_without_shared_data
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.kb_responder import schema_of
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.retrieval.test_ask import BACKUP, DNS, make_wiki
from wiki import KnowledgeBase

ROOT = Path(__file__).resolve().parents[2]
CMRC = shared_data("cmrc2018", "cmrc2018_trial.json")

# What the stand-in model knows of Chinese: the words of the question it can translate.
GLOSSARY = {"bubble fighter": "泡泡战士", "developed": "开发", "published": "发行"}


def chinese_wiki(kb, n=60):
    """The first ``n`` passages of CMRC 2018 (Chinese Wikipedia), one article each."""
    skip_without_shared_data(CMRC)
    data = json.loads(CMRC.read_text(encoding="utf-8"))["data"]
    articles = []
    for i, item in enumerate(data[:n]):
        text, title = item["paragraphs"][0]["context"], item["title"][:80]
        summary = text.split("。")[0][:200] + "。"
        articles.append((f"wiki/concept/p{i:03d}.md", title, summary, text + "\n"))
    make_wiki(kb, articles)
    return articles


def stand_in(request):
    """A model that plays each stage from its prompt: it translates the question's words
    it knows, picks the catalog lines holding the most search terms, and answers with
    the sentence of the pages that holds the most of them, written as the pages write it."""
    props = schema_of(request).get("properties", {})
    user = request["messages"][-1]["content"]
    if "terms" in props:
        question = re.search(r"^Question: (.+)$", user, re.M).group(1).lower()
        return Reply(json.dumps({"terms": [zh for en, zh in GLOSSARY.items() if en in question]}))
    if "enough" in props:
        return Reply(json.dumps({"enough": True, "search": []}))
    wanted = list(GLOSSARY.values())
    if "paths" in props:
        offered = set(props["paths"]["items"]["enum"])
        lines = re.findall(r"^- \[.+?\]\((wiki/[^)]+)\)(.*)$", user, re.M)
        scored = sorted((-sum(w in line for w in wanted), p) for p, line in lines if p in offered)
        return Reply(json.dumps({"paths": [p for s, p in scored[:1] if s < 0]}))
    best = (0, "The wiki does not cover this question.")
    for title, path, text in re.findall(
        r'<page title="(.*?)" path="(.*?)">\n(.*?)\n</page>', user, re.S
    ):
        for sentence in re.findall(r"[^。]+。", text):
            hits = sum(w in sentence for w in wanted)
            if hits > best[0]:
                best = (hits, f"{sentence.strip()} [{title}]({path})")
    return Reply(best[1])


@pytest.fixture
def server(monkeypatch):
    with FakeOpenAIServer(stand_in) as server:
        monkeypatch.setenv("KB_AI_MODEL", "openai/fake-model")
        monkeypatch.setenv("KB_AI_API_BASE", server.base_url)
        monkeypatch.setenv("KB_AI_API_KEY", "sk-test")
        monkeypatch.setenv("KB_AI_RETRY_BACKOFF", "0.01")
        # a wiki larger than the selection prompt: it is shortlisted by search
        monkeypatch.setenv("KB_AI_SELECTION_BUDGET_TOKENS", "1500")
        yield server


def ask_json(kb, question):
    result = CliRunner().invoke(
        main, ["--kb", str(kb.root), "ask", "--json", question], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def stages(server):
    keys = [set(schema_of(r).get("properties", {})) for r in server.requests]
    return ["terms" if "terms" in k else "paths" if "paths" in k else "other" for k in keys]


def test_an_english_question_over_a_chinese_wiki_reads_and_cites_its_page(tmp_path, server):
    kb = KnowledgeBase.init(tmp_path / "kb")
    page = chinese_wiki(kb)[0]
    assert page[1] == "泡泡战士" and "Nexon" in page[3]

    data = ask_json(kb, "Which company developed and published Bubble Fighter?")

    assert stages(server)[:2] == ["terms", "paths"]
    offered = schema_of(server.requests[1])["properties"]["paths"]["items"]["enum"]
    assert page[0] in offered and len(offered) < 60  # shortlisted, with the page in it
    assert data["read"] == [page[0]]
    assert data["covered"] is True
    assert data["citations"] == [{"title": page[1], "path": page[0]}]
    assert "Nexon" in data["answer"]


@pytest.mark.parametrize(
    "reply",
    [
        "Sure! Bubble Fighter is 泡泡战士.",  # not JSON
        json.dumps({"terms": ["x" * 300]}),  # over the schema's bounds
        json.dumps({"terms": ["qqzzxv", "\u0000\u0007", "щщщщ"]}),  # in no page of the wiki
    ],
)
def test_unusable_search_terms_end_in_not_covered_without_a_selection(tmp_path, server, reply):
    kb = KnowledgeBase.init(tmp_path / "kb")
    chinese_wiki(kb)
    server.responder = lambda request: Reply(reply)

    data = ask_json(kb, "Which company developed and published Bubble Fighter?")

    assert data["answer"] == NOT_COVERED and data["covered"] is False
    assert data["citations"] == [] and data["read"] == []
    assert set(stages(server)) == {"terms"}  # no page was offered to pick from


def test_a_chinese_question_over_an_english_wiki_finds_its_page(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(
        {"terms": ["backups", "kept", "retention"]},
        {"paths": [BACKUP[0]]},
        "Backups are kept for 30 days [Backups](wiki/howto/backups.md).",
    )
    answer = asyncio.run(ask(kb, settings, llm, "备份保留多久？"))
    assert [c.path for c in answer.citations] == [BACKUP[0]]
    assert answer.read == [BACKUP[0]] and answer.covered
    select = llm.calls[1].messages[-1]["content"]
    assert "Search terms in the wiki's language: backups, kept" in select
    assert "retention" not in select  # a term no page has was dropped
    assert answer.as_dict()["hops"][0]["query"] == "备份保留多久？ backups kept"


def test_a_question_in_the_wiki_s_script_costs_no_extra_call(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(
        {"paths": [BACKUP[0]]}, "Backups are kept for 30 days [Backups](wiki/howto/backups.md)."
    )
    answer = asyncio.run(ask(kb, settings, llm, "How long are backups kept?"))
    assert "terms" not in llm.calls[0].schema["properties"]
    assert answer.covered


def test_a_chinese_question_naming_an_english_product_is_still_chinese(kb, settings):
    railway = (
        "wiki/reference/chengdu-chongqing-railway.md",
        "成渝高速铁路",
        "成渝高速铁路的线路概况。",
        "成渝高速铁路全长308公里，使用CRH380 Express Service列车，设计速度为每小时350公里。\n",
    )
    make_wiki(kb, [railway])
    llm = FakeLLM().enqueue(
        {"paths": [railway[0]]},
        {"enough": True, "search": []},
        "设计速度为每小时350公里 [成渝高速铁路](wiki/reference/chengdu-chongqing-railway.md)。",
    )
    # more Latin letters (17) than Chinese characters (6), but fewer tokens: Chinese
    answer = asyncio.run(ask(kb, settings, llm, "成渝高铁 CRH380 Express Service 多快？"))
    assert "terms" not in llm.calls[0].schema["properties"]  # no call for search terms
    assert [c.path for c in answer.citations] == [railway[0]]
