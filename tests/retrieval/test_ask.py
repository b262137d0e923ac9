"""Answering from the wiki, against a fake of our own LLM boundary."""

import asyncio
import os
import re
from contextlib import closing
from dataclasses import replace

import pytest

import wiki.search as search_module
from kb_ai.errors import LLMTransientError, NotFoundError, PathEscapeError, UsageError
from retrieval import (
    NOT_COVERED,
    Asker,
    Catalog,
    EmptyWikiError,
    SelectionError,
    Turn,
    ask,
    estimate_tokens,
)
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from tests.retrieval import unplaced
from wiki import Article, build_catalog, commit_all, git, open_state, write_article, write_indexes
from wiki.indexing import refresh_search_index

ENOUGH = {"enough": True, "search": []}  # the follow-up step: the pages read are enough


def make_wiki(kb, articles):
    for path, title, summary, body in articles:
        kind = path.split("/")[1]
        write_article(
            kb,
            Article(path, title, kind, summary, [], ["raw/x.md"], "2026-01-01", "2026-01-01", body),
        )
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)


DNS = (
    "wiki/decision/dns-out-of-puppet.md",
    "DNS out of puppet",
    "Why DNS records moved to Terraform.",
    "We moved DNS records out of the puppet module into Terraform because puppet runs were slow.\n",
)
BACKUP = (
    "wiki/howto/backups.md",
    "Backups",
    "How nightly backups run.",
    "Backups run nightly at 02:00 and are kept for 30 days.\n",
)


def run(coro):
    return asyncio.run(coro)


def test_answers_with_validated_citations_and_returns_what_was_read(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(
        {"paths": ["/wiki/decision/dns-out-of-puppet", "wiki/nope/invented.md"]},
        "Puppet runs were slow [DNS](./wiki/decision/dns-out-of-puppet.md#why), "
        "see also [Made up](wiki/concept/made-up.md).",
    )
    answer = run(ask(kb, settings, llm, "Why did we move DNS out of puppet?"))
    assert answer.read == ["wiki/decision/dns-out-of-puppet.md"]  # the invented path was dropped
    assert [c.path for c in answer.citations] == ["wiki/decision/dns-out-of-puppet.md"]
    assert answer.citations[0].title == "DNS out of puppet"
    assert "[DNS](wiki/decision/dns-out-of-puppet.md)" in unplaced(answer.answer)
    assert "made-up" not in answer.answer and "Made up" not in answer.answer
    assert llm.stages() == ["select", "answer"]
    assert answer.usage.calls == 2
    # the answer prompt carried the page read whole, without frontmatter
    page_prompt = llm.calls[1].messages[-1]["content"]
    assert "puppet runs were slow" in page_prompt and "sources:" not in page_prompt


def test_selection_prompt_offers_catalog_paths_as_an_enum(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue({"paths": []})
    run(ask(kb, settings, llm, "Why DNS?"))
    enum = llm.calls[0].schema["properties"]["paths"]["items"]["enum"]
    assert sorted(enum) == sorted([DNS[0], BACKUP[0]])
    assert llm.calls[0].schema["properties"]["paths"]["maxItems"] == settings.select_k


def test_no_relevant_page_gives_the_not_covered_answer_without_guessing(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue({"paths": []})
    answer = run(ask(kb, settings, llm, "What is the office wifi password for backups?"))
    assert answer.answer == NOT_COVERED
    assert answer.citations == [] and answer.read == [] and not answer.covered
    assert llm.stages() == ["select"]  # no answer call without pages


def test_pages_that_do_not_answer_give_a_plain_no_and_no_citation(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(
        {"paths": [BACKUP[0]]}, ENOUGH, "The wiki does not cover the wifi password."
    )
    answer = run(ask(kb, settings, llm, "What is the wifi password for backups?"))
    assert answer.citations == [] and not answer.covered


def test_explicit_paths_answer_from_exactly_those_pages(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue("At 02:00 [Backups](wiki/howto/backups.md).")
    answer = run(ask(kb, settings, llm, "When do backups run?", paths=["howto/backups.md"]))
    assert answer.read == [BACKUP[0]] and llm.stages() == ["answer"]
    with pytest.raises(PathEscapeError):
        run(ask(kb, settings, FakeLLM(), "x", paths=["wiki/../raw/x.md"]))
    with pytest.raises(NotFoundError):
        run(ask(kb, settings, FakeLLM(), "x", paths=["wiki/howto/nope.md"]))


def test_bad_questions_and_an_empty_wiki_are_clear_errors(kb, settings):
    with pytest.raises(EmptyWikiError, match="no articles"):
        run(ask(kb, settings, FakeLLM(), "Anything?"))
    make_wiki(kb, [DNS])
    with pytest.raises(UsageError, match="empty"):
        run(ask(kb, settings, FakeLLM(), "   "))


def test_a_failed_selection_is_an_error_never_an_answer_without_context(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue(LLMTransientError("fake/model returned HTTP 503"))
    with pytest.raises(SelectionError, match="no answer was given"):
        run(ask(kb, settings, llm, "Why DNS?"))
    garbage = FakeLLM().enqueue("I think the DNS page is best.")
    with pytest.raises(Exception, match="(?i)json|selection"):
        run(ask(kb, settings, garbage, "Why DNS?"))
    assert garbage.stages() == ["select"]


def test_a_model_failing_mid_stream_is_reported_as_an_error_event(kb, settings):
    make_wiki(kb, [DNS])

    class Broken(FakeLLM):
        async def stream(self, messages, *, stage, max_tokens=None):
            yield "Puppet runs were slow. Then "
            raise LLMTransientError("connection dropped after the first words")

    llm = Broken().enqueue({"paths": [DNS[0]]})

    async def events():
        return [e async for e in Asker(kb, settings, llm).events("Why DNS?")]

    evs = run(events())
    assert [e.type for e in evs][-2:] == ["delta", "error"]
    assert "connection dropped" in str(evs[-1].error)


def _big_wiki(kb, n, extra=()):
    articles = [
        (
            f"wiki/reference/service-{i}.md",
            f"Service {i} runbook",
            f"How service {i} is deployed, monitored and restarted by the platform team.",
            f"Service {i} runs on cluster {i % 7}. Restart it with systemctl restart svc{i}.\n"
            + "Filler text about operations. " * 40,
        )
        for i in range(n)
    ]
    make_wiki(kb, [*articles, *extra])


def test_a_wiki_larger_than_the_budget_is_shortlisted_and_the_prompt_stays_within_it(kb, settings):
    deep = (
        "wiki/reference/vault.md",
        "Secrets store",
        "Where secrets live.",
        "General notes. " * 400
        + "\nThe quarterly rotation of the zanzibar certificate is owned by Priya.\n",
    )
    _big_wiki(kb, 300, [deep])
    small = replace(settings, selection_budget_tokens=2000)
    assert Catalog.load(kb).text_tokens > small.selection_budget_tokens
    llm = FakeLLM().enqueue(
        {"paths": ["wiki/reference/vault.md"]},
        "Priya owns it [Secrets store](wiki/reference/vault.md).",
    )
    answer = run(ask(kb, small, llm, "Who owns the zanzibar certificate rotation?"))
    prompt = "".join(m["content"] for m in llm.calls[0].messages)
    assert estimate_tokens(prompt) <= small.selection_budget_tokens
    # the body-only fact brought its page into the shortlist
    assert "wiki/reference/vault.md" in llm.calls[0].schema["properties"]["paths"]["items"]["enum"]
    assert answer.read == ["wiki/reference/vault.md"] and answer.citations


@pytest.mark.parametrize("asked_before", [True, False])
def test_an_edit_committed_with_git_is_found_by_the_next_question(kb, settings, asked_before):
    """A person edits an article in their editor and commits it with git (no kb-ai in
    between): the next question's search finds the new words, whether or not a question
    was asked since the last compile."""
    vault = ("wiki/reference/vault.md", "Secrets store", "Where secrets live.", "Notes.\n")
    _big_wiki(kb, 300, [vault])
    commit_all(kb, "compile: the wiki")
    small = replace(settings, selection_budget_tokens=2000)

    def offered(question):
        llm = FakeLLM().enqueue({"paths": []}, "Not said.")
        run(ask(kb, small, llm, question))
        # (no page holding the question's words: declined before any model call)
        return llm.calls[0].schema["properties"]["paths"]["items"]["enum"] if llm.calls else []

    if asked_before:
        assert vault[0] not in offered("Who owns the zanzibar certificate rotation?")
    edited = (
        (kb.root / vault[0])
        .read_text()
        .replace(
            "Notes.", "Notes. The quarterly rotation of the zanzibar certificate is owned by Priya."
        )
    )
    (kb.root / vault[0]).write_text(edited)
    git(kb, "-c", "user.name=Priya", "-c", "user.email=p@example.org", "commit", "-qam", "vault")
    assert vault[0] in offered("Who owns the zanzibar certificate rotation?")
    os.remove(kb.root / vault[0])  # deleted with git too: no longer offered, nothing breaks
    git(kb, "-c", "user.name=Priya", "-c", "user.email=p@example.org", "commit", "-qam", "rm")
    assert vault[0] not in offered("Who owns the zanzibar certificate rotation?")


def test_articles_written_during_and_between_questions_are_found_and_read(
    kb, settings, monkeypatch
):
    """A question keeps one connection to state.db over its hops, and the search keeps
    the counts of its words while nothing changes (retrieval/connection.py): a page a
    compile adds between two hops is offered to the next hop, and a page edited between
    two questions of one Asker (as `kb-ai serve` runs them) is read as it now is."""
    monkeypatch.setattr(search_module, "_ROW_BUDGET", 20)  # a large wiki's plan, at 63 pages
    ledgers = [
        (f"wiki/reference/ledger-{i}.md", f"Ledger {i}", "A ledger.", f"Ledger {i} of the port.\n")
        for i in range(3)
    ]
    _big_wiki(kb, 60, ledgers)
    small = replace(settings, selection_budget_tokens=1500)
    fleet = "wiki/entity/zeppelin-fleet.md"

    def compile_fleet(keeper: str) -> None:  # what a compile leaves: article, catalog, index
        write_article(
            kb,
            Article(
                fleet, "Airship fleet", "entity", "The airships.", [], ["raw/x.md"],
                "2026-01-01", "2026-01-01", f"The zeppelin fleet is kept by {keeper}.\n",
            ),
        )  # fmt: skip
        write_indexes(kb, build_catalog(kb))
        with closing(open_state(kb)) as conn:
            refresh_search_index(kb, conn, [fleet])

    offered: list[list[str]] = []

    def model(stage, messages, schema):
        props = (schema or {}).get("properties", {})
        if "enough" in props:  # after the first reading
            if not (kb.root / fleet).exists():
                compile_fleet("Mara")
                return {"enough": False, "search": ["zeppelin"]}
            return ENOUGH
        if "paths" in props:
            offered.append(props["paths"]["items"]["enum"])
            return {"paths": [fleet] if fleet in offered[-1] else offered[-1][:1]}
        kept = re.search(r"The zeppelin fleet is kept by \w+\.", messages[-1]["content"])
        return f"{kept.group()} [Airship fleet]({fleet})" if kept else "Not said."

    asker = Asker(kb, small, FakeLLM(model))

    async def answer(question):
        return [e.as_dict() async for e in asker.events(question) if e.type == "done"][0]

    first = run(answer("Who keeps the zeppelin ledger and fleet?"))
    assert fleet not in offered[0] and fleet in offered[1]  # added after the first search
    assert first["read"][-1] == fleet and "kept by Mara" in first["answer"]

    compile_fleet("Ines")
    second = run(answer("Who is the zeppelin fleet kept by?"))
    assert fleet in offered[2] and "kept by Ines" in second["answer"]


def test_a_chinese_question_with_a_two_character_keyword_finds_its_page(kb, settings):
    zh = (
        "wiki/concept/shu-ju-ku.md",
        "存储方案",
        "团队的存储选择。",
        "我们的数据保存在北京机房，每天备份一次。\n",
    )
    _big_wiki(kb, 200, [zh])
    small = replace(settings, selection_budget_tokens=1500)
    llm = FakeLLM().enqueue(
        {"terms": ["Beijing"]},  # the wiki is mostly English: terms in it are asked for first
        {"paths": [zh[0]]},
        ENOUGH,
        "数据保存在北京机房 [存储方案](wiki/concept/shu-ju-ku.md)。",
    )
    answer = run(ask(kb, small, llm, "北京在哪里？"))
    assert "terms" in llm.calls[0].schema["properties"]
    assert zh[0] in llm.calls[1].schema["properties"]["paths"]["items"]["enum"]
    assert [c.path for c in answer.citations] == [zh[0]]


def test_a_follow_up_is_rewritten_into_a_standalone_question_before_selection(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM(responder_handler)
    history = [
        Turn("user", "How do nightly backups run?"),
        Turn("assistant", "At 02:00 [Backups](wiki/howto/backups.md)."),
    ]
    answer = run(ask(kb, settings, llm, "How long are they kept?", history=history))
    assert llm.stages()[:2] == ["rewrite", "select"]
    assert "backups" in llm.calls[0].messages[-1]["content"].lower()
    select_prompt = llm.calls[1].messages[-1]["content"]
    assert (
        "Question: How long are they kept? (regarding: How do nightly backups run?)"
        in select_prompt
    )
    assert answer.question.startswith("How long are they kept?")


def test_a_follow_up_reads_a_linked_page(kb, settings):
    a = (
        "wiki/decision/dns-out-of-puppet.md",
        "DNS out of puppet",
        "Why DNS moved.",
        "DNS moved to Terraform; the zone layout is in [[Internal zones]].\n",
    )
    b = (
        "wiki/reference/internal-zones.md",
        "Internal zones",
        "The internal DNS zones.",
        "Zones: a.internal, b.internal.\n",
    )
    make_wiki(kb, [a, b, BACKUP])
    llm = FakeLLM().enqueue(
        {"paths": [a[0]]},
        {"enough": False, "search": [], "pages": [b[0]]},
        "Zones are a.internal [Internal zones](wiki/reference/internal-zones.md).",
    )
    answer = run(ask(kb, settings, llm, "Which internal zones did DNS move into?"))
    assert answer.read == [a[0], b[0]]
    assert llm.stages() == ["select", "select", "answer"]
    pages = llm.calls[1].schema["properties"]["pages"]
    assert pages["items"]["enum"] == [b[0]]
    assert pages["maxItems"] == settings.second_hop_pages
    assert [h["via"] for h in answer.as_dict()["hops"]] == ["search", "links"]


DEAD_ERNEST = (
    "wiki/entity/dead-ernest.md",
    "Dead Ernest",
    "A 1944 mystery novel.",
    "Dead Ernest is a 1944 mystery novel by Phoebe Atwood Taylor, set on Cape Cod.\n",
)
TAYLOR = (
    "wiki/entity/phoebe-atwood-taylor.md",
    "Phoebe Atwood Taylor",
    "An American writer of mysteries.",
    "Phoebe Atwood Taylor (1909-1976) was an American mystery writer from Boston.\n",
)


def test_the_first_selection_is_offered_the_pages_its_best_hit_names(kb, settings):
    # Taylor's page shares no word with the question: only the Dead Ernest page names
    # her, and the shortlist searches again with the names its best hit mentions.
    _big_wiki(kb, 300, [DEAD_ERNEST, TAYLOR])
    small = replace(settings, selection_budget_tokens=2000)
    llm = FakeLLM().enqueue(
        {"paths": [DEAD_ERNEST[0], TAYLOR[0]]},
        ENOUGH,
        "Boston [Phoebe Atwood Taylor](wiki/entity/phoebe-atwood-taylor.md).",
    )
    answer = run(ask(kb, small, llm, "Where was the author of Dead Ernest born?"))
    offer = llm.calls[0].schema["properties"]["paths"]["items"]["enum"]
    assert offer[0] == DEAD_ERNEST[0] and TAYLOR[0] in offer
    assert answer.read == [DEAD_ERNEST[0], TAYLOR[0]]
    assert [c.path for c in answer.citations] == [TAYLOR[0]]


def test_a_bridge_the_first_page_names_is_searched_and_read(kb, settings):
    # The model picks only the first page; it names the later one, which is searched for.
    _big_wiki(kb, 300, [DEAD_ERNEST, TAYLOR])
    small = replace(settings, selection_budget_tokens=2000)
    llm = FakeLLM().enqueue(
        {"paths": [DEAD_ERNEST[0]]},
        {"enough": False, "search": ["Phoebe Atwood Taylor"]},
        {"paths": [TAYLOR[0]]},
        ENOUGH,
        "Boston [Phoebe Atwood Taylor](wiki/entity/phoebe-atwood-taylor.md).",
    )

    answer = run(ask(kb, small, llm, "Where was the author of Dead Ernest born?"))

    first_offer = llm.calls[0].schema["properties"]["paths"]["items"]["enum"]
    second_offer = llm.calls[2].schema["properties"]["paths"]["items"]["enum"]
    assert DEAD_ERNEST[0] in first_offer
    assert TAYLOR[0] in second_offer and DEAD_ERNEST[0] not in second_offer
    assert answer.read == [DEAD_ERNEST[0], TAYLOR[0]]
    assert llm.stages() == ["select", "select", "select", "select", "answer"]
    hops = answer.as_dict()["hops"]
    assert [h["pages"] for h in hops] == [[DEAD_ERNEST[0]], [TAYLOR[0]]]
    assert "Phoebe Atwood Taylor" in hops[1]["query"]
    prompt = "".join(m["content"] for m in llm.calls[2].messages)
    assert estimate_tokens(prompt) <= small.selection_budget_tokens


def test_a_follow_up_reply_is_bounded_and_cannot_reach_pages_not_offered(kb, settings):
    _big_wiki(kb, 50, [DEAD_ERNEST, TAYLOR])
    llm = FakeLLM().enqueue(
        {"paths": [DEAD_ERNEST[0]]},
        {
            "enough": False,
            # a term over its 80 characters is dropped (one over twice that, 160, would
            # have the whole reply refused by the LLM layer's field bounds)
            "search": ["Phoebe\x00 Atwood\u202e Taylor", "x" * 150, "a", "b", "c", "d"],
            "pages": ["wiki/entity/phoebe-atwood-taylor.md", "../../etc/passwd"],
        },
        {"paths": ["../../etc/passwd", TAYLOR[0]]},
        "Boston [Phoebe Atwood Taylor](wiki/entity/phoebe-atwood-taylor.md).",
    )

    answer = run(ask(kb, settings, llm, "Where was the author of Dead Ernest born?"))

    query = answer.as_dict()["hops"][1]["query"]
    assert "Phoebe Atwood Taylor" in query and "x" * 100 not in query
    assert "\x00" not in query and "\u202e" not in query
    assert query.endswith("Phoebe Atwood Taylor a b")  # at most 3 terms
    assert answer.read == [DEAD_ERNEST[0], TAYLOR[0]]


def test_follow_ups_stop_at_max_hops_and_the_page_budget(kb, settings):
    _big_wiki(kb, 50, [DEAD_ERNEST, TAYLOR])
    wanting = {"enough": False, "search": ["cluster"]}
    services = [f"wiki/reference/service-{i}.md" for i in range(12)]

    def answer_with(max_hops: int):
        rounds = [[wanting, {"paths": services[3 * i : 3 * i + 3]}] for i in range(3)]
        llm = FakeLLM().enqueue({"paths": [DEAD_ERNEST[0]]}, *sum(rounds, []))
        tight = replace(settings, select_k=2, second_hop_pages=3, max_hops=max_hops)
        return run(ask(kb, tight, llm, "Where was the author of Dead Ernest born?"))

    # one follow-up allowed: 1 + 3 pages
    assert len(answer_with(1).read) == 4
    # many allowed: the page budget (select_k + second_hop_pages = 5) holds over them all
    assert len(answer_with(5).read) == 5


def test_no_follow_up_is_asked_when_the_pages_hold_every_word_of_the_question(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    llm = FakeLLM().enqueue({"paths": [BACKUP[0]]}, "At 02:00 [Backups](wiki/howto/backups.md).")

    run(ask(kb, settings, llm, "When do nightly backups run?"))

    assert llm.stages() == ["select", "answer"]


def test_long_pages_are_cut_with_a_visible_marker(kb, settings):
    long = ("wiki/reference/long.md", "Long", "A long page.", "word " * 5000)
    make_wiki(kb, [long])
    llm = FakeLLM().enqueue({"paths": [long[0]]}, "It is long [Long](wiki/reference/long.md).")
    run(ask(kb, replace(settings, read_chars=1000), llm, "How long is the long page?"))
    prompt = llm.calls[1].messages[-1]["content"]
    assert "cut here" in prompt and "more characters of this page were not read" in prompt
    assert prompt.count("word") < 300


def test_a_local_model_picks_a_sentence_id_and_the_answer_quotes_it_with_its_citation(kb, settings):
    make_wiki(kb, [DNS, BACKUP])
    local = replace(settings, model="local/default")
    llm = FakeLLM().enqueue({"paths": [BACKUP[0]]}, {"sentences": ["s1", "s7"]})
    answer = run(ask(kb, local, llm, "When do backups run?"))
    assert unplaced(answer.answer) == (
        "Backups run nightly at 02:00 and are kept for 30 days. [Backups](wiki/howto/backups.md)"
    )
    assert [c.path for c in answer.citations] == [BACKUP[0]]
    picks = llm.calls[1].schema["properties"]["sentences"]
    assert picks["items"]["enum"] == ["s1"] and picks["maxItems"] == 4
