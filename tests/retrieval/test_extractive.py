"""Extractive answers for small models: the model picks sentence ids of the pages read,
and the answer is exactly those sentences, quoted, with their citations."""

import asyncio
import json
import re
from dataclasses import replace

from retrieval import Asker, ask
from retrieval.extractive import NOT_COVERED, PartialPicks, Quoter, number_sentences
from retrieval.pages import Page
from tests.fakes.fake_llm import FakeLLM
from tests.retrieval import unplaced
from tests.retrieval.test_ask import ENOUGH, make_wiki

QUEUE = (
    "wiki/decision/queue-choice.md",
    "Queue choice",
    "Why the job queue runs on PostgreSQL.",
    "# Queue choice\n\nWe chose PostgreSQL over MongoDB for the job queue. "
    "The reason is that we already run PostgreSQL and need transactions. "
    "Dana owns the queue.\n\n## Retries\n\n- A failed job is retried 5 times.\n"
    "- The backoff doubles after each attempt.\n\n```sh\nkb-ai run --retries 5\n```\n",
)
DEPLOY = (
    "wiki/howto/deploy.md",
    "Deploy",
    "How to deploy.",
    "Deploys run from the main branch. Anyone on the team may deploy on weekdays.\n",
)


def sentences_of(llm_call):
    """id -> sentence, as the pick prompt showed them to the model."""
    text = llm_call.messages[-1]["content"]
    return dict(re.findall(r'^(s\d+) \(".*?"\): (.+)$', text, re.M))


def small(settings):
    return replace(settings, small_model=True)


def test_the_answer_is_the_picked_sentences_verbatim_with_their_citations(kb, settings):
    make_wiki(kb, [QUEUE, DEPLOY])
    shown = {}

    def model(stage, messages, schema):
        if stage == "select":
            return {"paths": [QUEUE[0], DEPLOY[0]]}
        if stage == "follow":
            return ENOUGH
        if stage == "select":  # a follow-up's selection: nothing more
            return {"paths": []}
        ids = schema["properties"]["sentences"]["items"]["enum"]
        shown.update(sentences_of(type("C", (), {"messages": messages})))
        assert set(ids) == set(shown)  # the enum is exactly the numbered sentences
        dana = next(i for i, s in shown.items() if "Dana" in s)
        chose = next(i for i, s in shown.items() if "chose PostgreSQL" in s)
        return {"sentences": [dana, chose]}  # quoted in the order picked

    answer = asyncio.run(
        ask(kb, small(settings), FakeLLM(model), "Why PostgreSQL, and who owns it?")
    )
    assert unplaced(answer.answer) == (
        "Dana owns the queue. We chose PostgreSQL over MongoDB for the job queue. "
        "[Queue choice](wiki/decision/queue-choice.md)"
    )
    assert [c.path for c in answer.citations] == [QUEUE[0]]
    # only sentences sharing a word with the question are offered (headings never)
    assert set(shown.values()) == {
        "Dana owns the queue.",
        "We chose PostgreSQL over MongoDB for the job queue.",
        "The reason is that we already run PostgreSQL and need transactions.",
    }
    assert not any("Deploy" in s or "retried" in s for s in shown.values())


def test_invented_and_repeated_ids_are_dropped_and_runs_from_each_page_are_cited(kb, settings):
    make_wiki(kb, [QUEUE, DEPLOY])
    chose = "chose PostgreSQL"
    llm = FakeLLM(
        picking(
            lambda m: ["s999", _id_of(m, chose), _id_of(m, chose), "banana", _id_of(m, "Deploys")]
        )
    )
    llm.enqueue({"paths": [QUEUE[0], DEPLOY[0]]})
    answer = asyncio.run(ask(kb, small(settings), llm, "Where do deploys and the queue run?"))
    assert unplaced(answer.answer) == (
        "We chose PostgreSQL over MongoDB for the job queue. "
        "[Queue choice](wiki/decision/queue-choice.md) "
        "Deploys run from the main branch. [Deploy](wiki/howto/deploy.md)"
    )
    assert {c.path for c in answer.citations} == {QUEUE[0], DEPLOY[0]}


def test_a_question_no_sentence_shares_a_word_with_is_not_covered_without_a_pick(kb, settings):
    make_wiki(kb, [QUEUE, DEPLOY])
    llm = FakeLLM(picking(lambda m: ["s1"])).enqueue({"paths": [DEPLOY[0]]})
    answer = asyncio.run(ask(kb, small(settings), llm, "What is the office wifi password?"))
    assert answer.answer.startswith(NOT_COVERED) and answer.citations == []
    assert "answer" not in llm.stages()


def test_no_sentence_picked_is_a_plain_not_covered_with_no_citation(kb, settings):
    make_wiki(kb, [QUEUE, DEPLOY])
    llm = FakeLLM(picking(lambda m: [])).enqueue({"paths": [DEPLOY[0]]})
    answer = asyncio.run(ask(kb, small(settings), llm, "Who approves weekend deploys?"))
    assert answer.answer.startswith(NOT_COVERED) and answer.citations == []
    assert not answer.covered


def test_a_small_models_wrong_pick_is_made_up_for_by_the_best_matching_page(kb, settings):
    """The 0.5B model often picks the wrong page (5 of 10 questions on the example notes):
    the page the question's words match best is read beside its pick."""

    def weekday_ids(messages):
        shown = sentences_of(type("C", (), {"messages": messages}))
        return [i for i, s in shown.items() if "weekdays" in s]

    make_wiki(kb, [QUEUE, DEPLOY])
    llm = FakeLLM(picking(weekday_ids)).enqueue({"paths": [QUEUE[0]]})  # the wrong page
    answer = asyncio.run(ask(kb, small(settings), llm, "Who may deploy on weekdays?"))
    assert answer.read == [DEPLOY[0]]  # (the queue page shares no word: not read)
    assert unplaced(answer.answer) == (
        "Anyone on the team may deploy on weekdays. [Deploy](wiki/howto/deploy.md)"
    )
    # a larger model's pick is taken as it is
    llm = FakeLLM(lambda stage, m, schema: ENOUGH if stage == "follow" else "Not covered.")
    answer = asyncio.run(ask(kb, settings, llm.enqueue({"paths": [QUEUE[0]]}), "Who may deploy?"))
    assert DEPLOY[0] not in answer.read


def test_a_local_model_answers_extractively_and_streams_sentence_by_sentence(kb, settings):
    make_wiki(kb, [QUEUE, DEPLOY])
    local = replace(settings, model="local/default")
    assert local.answers_extractively and not settings.answers_extractively
    pick = picking(lambda m: [_id_of(m, "retried 5"), _id_of(m, "backoff doubles")])
    llm = FakeLLM(pick).enqueue({"paths": [QUEUE[0]]})

    async def deltas():
        return [e.text async for e in Asker(kb, local, llm).events("How are failed jobs retried, what backoff?")
                if e.type == "delta"]  # fmt: skip

    pieces = asyncio.run(deltas())
    assert len(pieces) > 1
    assert unplaced("".join(pieces)) == (
        "A failed job is retried 5 times. The backoff doubles after each attempt. "
        "[Queue choice](wiki/decision/queue-choice.md)"
    )


def test_each_picked_sentence_is_shown_while_a_slow_model_is_still_writing_its_pick(kb, settings):
    # Issue 18: with the local model nothing showed until the whole pick call was over.
    make_wiki(kb, [QUEUE, DEPLOY])
    pick = picking(lambda m: [_id_of(m, "retried 5"), _id_of(m, "backoff doubles")])
    llm = FakeLLM(pick, chunk_delay=0.02).enqueue({"paths": [QUEUE[0]]})
    seen = []  # (type, stage or text, whether the model had finished its pick by then)

    async def run():
        asker = Asker(kb, small(settings), llm)
        async for e in asker.events("How are failed jobs retried, what backoff?"):
            picked = [c.finished for c in llm.calls if c.stage == "answer"]
            seen.append(
                (e.type, getattr(e, "stage", None) or getattr(e, "text", None), any(picked))
            )

    asyncio.run(run())
    kinds = [kind for kind, _, _ in seen]
    assert ("status", "choosing", False) in seen  # said before the model is asked
    assert kinds.index("delta") > seen.index(("status", "choosing", False))
    early = [text for kind, text, finished in seen if kind == "delta" and not finished]
    assert early == ["A failed job is retried 5 times.", " The backoff doubles after each attempt."]
    assert unplaced("".join(text for kind, text, _ in seen if kind == "delta")) == (
        "A failed job is retried 5 times. The backoff doubles after each attempt. "
        "[Queue choice](wiki/decision/queue-choice.md)"
    )
    assert llm.calls[-1].verdict == "accepted"


def test_a_pick_not_in_the_plain_form_is_quoted_once_the_whole_reply_has_come(kb, settings):
    # Without a grammar a model may write a code fence first: nothing is guessed from it
    # while it streams, and the whole reply is still read.
    make_wiki(kb, [QUEUE, DEPLOY])

    def fenced(stage, messages, schema):
        reply = picking(lambda m: [_id_of(m, "retried 5"), "s99"])(stage, messages, schema)
        return f"```json\n{json.dumps(reply)}\n```" if stage == "answer" else reply

    llm = FakeLLM(fenced).enqueue({"paths": [QUEUE[0]]})

    async def run():
        asker = Asker(kb, small(settings), llm)
        return [
            (e.text, llm.calls[-1].finished)
            async for e in asker.events("How often is a failed job retried?")
            if e.type == "delta"
        ]

    deltas = asyncio.run(run())
    assert all(finished for _, finished in deltas)
    assert unplaced("".join(text for text, _ in deltas)) == (
        "**5 times**\n\n"  # the one value asked for leads
        "A failed job is retried 5 times. [Queue choice](wiki/decision/queue-choice.md)"
    )


def test_a_streamed_id_counts_only_once_its_closing_quote_has_come():
    pages = number_sentences(
        [Page("wiki/a.md", "A", " ".join(f"S{i}." for i in range(1, 13)), False)]
    )
    partial = PartialPicks(pages)
    assert partial.feed('{"sentences": ["s1') == []  # it may yet be s12
    assert [s.text for s in partial.feed('2", "s99", "s12", "s')] == ["S12."]  # s99: unknown
    assert [s.text for s in partial.feed('3"')] == ["S3."]
    assert [s.text for s in partial.finish({"sentences": ["s12", "s3", "s4"]})] == ["S4."]


def test_sentences_are_numbered_across_pages_and_composed_in_the_order_picked():
    pages = [
        Page(
            "wiki/a.md",
            "A",
            "One. Two has 2.5 units! Three?\n| k | v |\n|---|---|\n| x | 1 |",
            False,
        ),
        Page("wiki/b.md", "B", "# Head\n\nFour.", False),
    ]
    numbered = number_sentences(pages)
    assert [(s.id, s.text) for p in numbered for s in p.sentences] == [
        ("s1", "One."),
        ("s2", "Two has 2.5 units!"),
        ("s3", "Three?"),
        ("s4", "x | 1"),
        ("s5", "Four."),
    ]  # fmt: skip  (a header row is quoted with its rows, not alone)
    b4, a1 = numbered[4].sentences[0], numbered[0].sentences[0]
    quoter = Quoter()
    pieces = [*quoter.add(b4), *quoter.add(a1), *quoter.end()]
    assert "".join(pieces) == "Four. [B](wiki/b.md) One. [A](wiki/a.md)"
    assert Quoter().end() == [NOT_COVERED]


def test_a_sentence_wrapped_over_lines_is_offered_and_quoted_whole():
    """Notes are often hard-wrapped: the quote is the whole sentence, not its first line
    (the example notes' "Workers poll every 2 seconds; ... this is well" was quoted cut)."""
    text = (
        "Workers poll every 2 seconds; at our volume this is well\n"
        "under 1% of database load. Jobs are retried\n5 times.\n\n"
        "- a list item that goes on\n  over two lines.\n- the next item\n"
    )
    numbered = number_sentences([Page("wiki/a.md", "A", text, False)])
    assert [s.text for p in numbered for s in p.sentences] == [
        "Workers poll every 2 seconds; at our volume this is well under 1% of database load.",
        "Jobs are retried 5 times.",
        "a list item that goes on over two lines.",
        "the next item",
    ]


def test_the_sentence_with_the_questions_rarest_word_is_offered_first():
    """The 0.5B model mostly picks the first ids: "approve" is in one sentence of the page,
    "deploy" in most, so the one about approval comes first."""
    text = (
        "Deploys go out from main. Run the deploy again with production. "
        "It needs approval from one person on the release team. Deploys stop on Fridays."
    )
    numbered = number_sentences([Page("wiki/a.md", "A", text, False)], "Who must approve a deploy?")
    assert numbered[0].sentences[0].text == (
        "It needs approval from one person on the release team."
    )


def picking(ids_for):
    """A stand-in model: enough after the first reading (the first selection is queued),
    then the sentence ids ``ids_for`` gives, invented ones included."""

    def model(stage, messages, schema):
        if stage == "follow":
            return ENOUGH
        if stage == "select":  # a follow-up's selection: nothing more
            return {"paths": []}
        assert stage == "answer" and "sentences" in schema["properties"], stage
        return {"sentences": ids_for(messages)}

    return model


def _id_of(messages, words):
    return next(
        i for i, s in sentences_of(type("C", (), {"messages": messages})).items() if words in s
    )


def test_code_spans_ellipses_and_abbreviations_stay_whole_and_transcript_noise_is_never_quoted():
    text = (
        "We claim work with `SELECT ... FOR UPDATE SKIP LOCKED`. A job is inserted with "
        "its change. Redis was ruled out, e.g. Jobs would be lost on a restart. "
        "Dr. Okafor and J. Smith agreed.\n\n"
        "User Interface: {vocalsound} Project Manager: {disfmarker}\n\n"
        "Project Manager: {vocalsound} The remote control will be yellow.\n"
    )
    pages = [Page("wiki/a.md", "Notes", text, False)]
    offered = [s.text for p in number_sentences(pages) for s in p.sentences]
    assert offered == [
        "We claim work with `SELECT ... FOR UPDATE SKIP LOCKED`.",
        "A job is inserted with its change.",
        "Redis was ruled out, e.g. Jobs would be lost on a restart.",
        "Dr. Okafor and J. Smith agreed.",
        "Project Manager: The remote control will be yellow.",
    ]


JOBS = (
    "## Options considered\n\n"
    "| option | for | against |\n|---|---|---|\n"
    "| Redis with RQ | fast, well known | one more service to run |\n"
    "| PostgreSQL with `SELECT ... FOR UPDATE SKIP LOCKED` | no new service | polling load |\n\n"
    "## Decisions\n\n"
    "- The cron host `worker-2` is decommissioned at the end of March.\n"
    "- Support gets read access to the jobs admin page.\n\n"
    "To roll back a deploy:\n\n"
    "1. Run `deploy` with the previous release tag.\n"
    "2. Watch the error rate for 15 minutes.\n"
)


def _quoted(pages, *words):
    numbered = number_sentences(pages)
    quoter = Quoter()
    pieces = []
    for w in words:
        s = next(s for p in numbered for s in p.sentences if w in s.text)
        pieces += quoter.add(s)
    return "".join([*pieces, *quoter.end()])


def test_a_table_row_is_quoted_as_a_small_markdown_table_under_its_header():
    pages = [Page("wiki/q.md", "Queue choice", JOBS, False)]
    assert _quoted(pages, "polling load") == (
        "| option | for | against |\n|---|---|---|\n"
        "| PostgreSQL with `SELECT ... FOR UPDATE SKIP LOCKED` | no new service | polling load |"
        "\n\n[Queue choice](wiki/q.md)"
    )
    # two rows of one table share its header; a sentence after it starts a paragraph
    assert _quoted(pages, "Redis with RQ", "polling load", "read access") == (
        "| option | for | against |\n|---|---|---|\n"
        "| Redis with RQ | fast, well known | one more service to run |\n"
        "| PostgreSQL with `SELECT ... FOR UPDATE SKIP LOCKED` | no new service | polling load |"
        "\n\nSupport gets read access to the jobs admin page. [Queue choice](wiki/q.md)"
    )
    # the model is shown what the cells mean
    row = next(s for p in number_sentences(pages) for s in p.sentences if "Redis" in s.text)
    assert (
        row.shown
        == "Redis with RQ | fast, well known | one more service to run (columns: option | for | against)"
    )


def test_a_list_item_is_quoted_with_its_lists_lead_in():
    pages = [Page("wiki/q.md", "Queue choice", JOBS, False)]
    assert _quoted(pages, "previous release tag", "error rate") == (
        "To roll back a deploy:\n1. Run `deploy` with the previous release tag.\n"
        "2. Watch the error rate for 15 minutes. [Queue choice](wiki/q.md)"
    )
    # a list with no lead-in line: its items are quoted as sentences
    assert _quoted(pages, "worker-2") == (
        "The cron host `worker-2` is decommissioned at the end of March. [Queue choice](wiki/q.md)"
    )


def test_chinese_sentences_end_at_their_own_stops_so_a_long_passage_is_quoted_in_part():
    """A Chinese passage has no space after 。: it was one "sentence", and one over 600
    characters was never offered ("广茂铁路全长多少公里？" was declined although the page
    read says 全长364.6公里)."""
    filler = "沿线设有多个车站，货运以煤炭和矿石为主，客运列车每天往返多次。" * 20
    text = f"广茂铁路是广东省的一条铁路。{filler}广茂铁路全长364.6公里，1991年建成通车。"
    assert len(text) > 600
    numbered = number_sentences(
        [Page("wiki/g.md", "广茂铁路", text, False)], "广茂铁路全长多少公里？"
    )
    assert numbered[0].sentences[0].text == "广茂铁路全长364.6公里，1991年建成通车。"
    quoter = Quoter("广茂铁路全长多少公里？")
    assert "".join([*quoter.add(numbered[0].sentences[0]), *quoter.end()]) == (
        "**364.6公里**\n\n广茂铁路全长364.6公里，1991年建成通车。 [广茂铁路](wiki/g.md)"
    )


def test_a_one_line_lead_is_the_one_value_asked_for_and_none_when_it_is_not_clear():
    page = Page(
        "wiki/r.md", "Retries", "Failed jobs are retried 5 times. Jobs ran 3 or 4 times.", False
    )
    first, second = [s for p in number_sentences([page]) for s in p.sentences]
    quoter = Quoter("How many times are failed jobs retried?")
    assert quoter.add(first)[0] == "**5 times**\n\nFailed jobs are retried 5 times."
    # two values: no lead is safe; a question that does not open asking for one: none
    assert Quoter("How many times did jobs run?").add(second) == ["Jobs ran 3 or 4 times."]
    assert Quoter("Why, and how many times, are jobs retried?").add(first) == [first.text]


# A product-design meeting written as the AMI meeting corpus writes its transcripts: one
# speaker turn a line, {vocalsound}-style marks, turns of nothing but noise, stops spaced
# off their words (our own text, in that format).
MEETING = (
    "wiki/concept/remote-kick-off.md",
    "Remote control kick-off",
    "The kick-off meeting of the remote control project.",
    "Project Manager: Okay . {vocalsound} Right . Um {disfmarker} this is the kick-off "
    "meeting for our project .\n"
    "User Interface: {vocalsound}\n"
    "Project Manager: So {disfmarker} we are designing a new remote control , and it "
    "should sell for twenty five Euro .\n"
    "Marketing: Mm-hmm .\n"
    "User Interface: {vocalsound} {disfmarker}\n"
    "Industrial Designer: Uh {disfmarker} I think the case should be made of rubber , "
    "{vocalsound} so it does not break when you drop it .\n"
    "Marketing: {vocalsound} {vocalsound}\n"
    "Project Manager: Okay . So we decided : the case is rubber , and the remote is yellow .\n",
)


def test_a_meeting_transcript_is_quoted_turn_by_turn_with_its_speaker_and_no_noise(kb, settings):
    """Issue 28: meeting answers quoted "User Interface: {vocalsound} Project Manager:
    ..." (a turn of noise glued to the next turn) instead of the sentence that answers."""
    offered = [s.text for p in number_sentences([Page(MEETING[0], MEETING[1], MEETING[3], False)])
               for s in p.sentences]  # fmt: skip
    assert not [t for t in offered if "{" in t or "User Interface: Project" in t], offered
    assert "Marketing: Mm-hmm." in offered  # a turn with words is a sentence of its own
    assert not [t for t in offered if t.startswith("User Interface")]  # only noise: never
    # every sentence of a turn says who spoke, the second of a turn too
    assert (
        "Project Manager: So we decided: the case is rubber, and the remote is yellow." in offered
    )

    make_wiki(kb, [MEETING, DEPLOY])

    def first_offered(stage, messages, schema):  # as the 0.5B model mostly picks
        if stage == "select":
            return {"paths": [MEETING[0]]}
        if stage == "follow":
            return ENOUGH
        return {"sentences": schema["properties"]["sentences"]["items"]["enum"][:1]}

    answer = asyncio.run(
        ask(kb, small(settings), FakeLLM(first_offered), "What should the case be made of?")
    )
    assert answer.covered, answer.answer
    assert unplaced(answer.answer) == (
        "Industrial Designer: Uh I think the case should be made of rubber, so it does not "
        f"break when you drop it. [{MEETING[1]}]({MEETING[0]})"
    )
    (claim,) = answer.claims  # its citation names the turn's line, which supports it
    assert claim.supported and claim.span.text.startswith("Industrial Designer: Uh")


def test_a_note_with_a_few_labelled_lines_is_not_read_as_a_transcript():
    """A note's "Date:", "Present:", "Decided by:" each open one line: its wrapped
    sentence that goes on with "Redis: ..." stays whole."""
    text = (
        "Date: 2026-03-02\n\nPresent: Amara, Jonas\n\nDecided by: Amara\n\n"
        "We keep jobs in PostgreSQL and not in\nRedis: one service fewer to run.\n"
    )
    offered = [s.text for p in number_sentences([Page("wiki/a.md", "A", text, False)])
               for s in p.sentences]  # fmt: skip
    assert offered[-1] == "We keep jobs in PostgreSQL and not in Redis: one service fewer to run."


def test_no_before_a_number_is_an_abbreviation_and_elsewhere_ends_a_sentence():
    text = "Security said no. Sessions stay. See No. 5 and fig. 2 of the audit."
    offered = [s.text for p in number_sentences([Page("wiki/a.md", "A", text, False)])
               for s in p.sentences]  # fmt: skip
    assert offered == ["Security said no.", "Sessions stay.", "See No. 5 and fig. 2 of the audit."]


def test_a_wiki_link_in_a_sentence_is_quoted_as_its_words():
    """The compile links a page's mentions of other pages ([[slug|words]]): a quote
    showed "The [[session-cache|session cache]] TTL is now 15 minutes."."""
    text = "The [[session-cache|session cache]] TTL is now 15 minutes. See [[backups]] too."
    offered = [s.text for p in number_sentences([Page("wiki/a.md", "A", text, False)])
               for s in p.sentences]  # fmt: skip
    assert offered == ["The session cache TTL is now 15 minutes.", "See backups too."]


def test_list_items_and_table_rows_are_offered_for_the_words_of_their_lead_in_and_header():
    """The steps under "To roll back a release:" do not say "roll back" themselves, nor
    does a row of an "option | for | against" table say "option": they were never
    offered for a question asked in those words, although they are its answer."""
    text = (
        "Releases go out from main.\n\n"
        "To roll back a release:\n\n"
        "1. Run `deploy` with the previous tag.\n"
        "2. Watch the error rate for 15 minutes.\n\n"
        "| option | for | against |\n|---|---|---|\n"
        "| Redis with RQ | fast | one more service |\n"
        "| SQS | no operations work | ties development to AWS |\n"
    )
    pages = [Page("wiki/r.md", "Releases", text, False)]
    steps = number_sentences(pages, "How do I roll back a release?")
    offered = [s.text for p in steps for s in p.sentences]
    assert offered[:2] == [
        "Run `deploy` with the previous tag.",
        "Watch the error rate for 15 minutes.",
    ]
    quoter = Quoter("How do I roll back a release?")
    quoted = [piece for p in steps[:2] for s in p.sentences for piece in quoter.add(s)]
    assert "".join([*quoted, *quoter.end()]) == (
        "To roll back a release:\n1. Run `deploy` with the previous tag.\n"
        "2. Watch the error rate for 15 minutes. [Releases](wiki/r.md)"
    )
    rows = number_sentences(pages, "Which options did we weigh?")
    assert {s.text for p in rows for s in p.sentences} == {
        "Redis with RQ | fast | one more service",
        "SQS | no operations work | ties development to AWS",
    }


def first_picks(n, paths):
    """A small model as the 0.5B one mostly is: the first ``n`` ids offered."""

    def model(stage, messages, schema):
        if stage == "select":
            return {"paths": paths}
        if stage == "follow":
            return ENOUGH
        return {"sentences": schema["properties"]["sentences"]["items"]["enum"][:n]}

    return model


SESSIONS = (
    "wiki/concept/sessions.md",
    "Sessions",
    "How sessions work.",
    "Sessions are kept in Redis. The session cache TTL is 15 minutes since the audit. "
    "Security asked for shorter sessions.\n\n"
    "To sign a user out everywhere:\n\n"
    "1. Delete their session keys in Redis.\n2. Rotate the signing key.\n",
)
CHAT = (
    "wiki/concept/chat-session.md",
    "Coding session",
    "A chat session.",
    "*Transcript of a chat session.* The agent fixed the flaky test.\n",
)


def test_picks_that_add_nothing_the_question_asks_are_not_quoted(kb, settings):
    """Issue 28: answers were padded with sentences of another page that do not answer
    ("Who approves a production deploy?" opened with two about the jobs queue). A small
    model picking the first four ids quoted "Sessions are kept in Redis." after the TTL
    (the example notes' answer had "*Transcript of a chat session.*" too): only the sentence that answers is quoted now, and
    --json says what was left out."""
    make_wiki(kb, [SESSIONS, CHAT])
    llm = FakeLLM(first_picks(4, [SESSIONS[0], CHAT[0]]))
    answer = asyncio.run(ask(kb, small(settings), llm, "What is the session TTL now?"))
    assert unplaced(answer.answer) == (
        f"The session cache TTL is 15 minutes since the audit. [Sessions]({SESSIONS[0]})"
    )
    left = [f for f in answer.findings if f.check == "answering"]
    assert "Sessions are kept in Redis." in {f.claim for f in left}, left
    # a list's next step adds no new word of the question, and is quoted all the same;
    # so is a sentence answering the question's other half
    steps = asyncio.run(ask(kb, small(settings), llm, "How do I sign a user out everywhere?"))
    assert "1. Delete their session keys in Redis.\n2. Rotate the signing key." in steps.answer
    both = asyncio.run(
        ask(kb, small(settings), FakeLLM(first_picks(2, [SESSIONS[0], CHAT[0]])),
            "Who asked for shorter sessions, and what did the agent fix?")
    )  # fmt: skip
    assert "Security asked for shorter sessions." in both.answer, both.answer
    assert "The agent fixed the flaky test." in both.answer, both.answer


def test_a_table_row_with_an_ellipsis_in_its_code_span_is_quoted_as_the_page_writes_it(
    kb, settings
):
    """`SELECT ... FOR UPDATE SKIP LOCKED` was tidied into `SELECT... FOR UPDATE ...` on
    its way out, and the row, the answer itself, left out as stating an identifier no page
    read has."""
    page = ("wiki/decision/queue-choice.md", "Queue choice", "Options for the queue.", JOBS)
    make_wiki(kb, [page])
    llm = FakeLLM(first_picks(1, [page[0]]))
    answer = asyncio.run(ask(kb, small(settings), llm, "Which option has no new service?"))
    assert (
        "| PostgreSQL with `SELECT ... FOR UPDATE SKIP LOCKED` | no new service |" in answer.answer
    )
    assert not [f for f in answer.findings if f.check == "grounding"], answer.findings
    assert answer.faithfulness == 1.0


CACHE = (
    "wiki/concept/caching.md",
    "Caching",
    "How the caches are set.",
    "Most caches live in Redis. The page cache is warmed at startup.\n\n"
    "## Session cache TTL\n\n"
    "It is now 15 minutes; it was 30 minutes before.\n\n"
    "## Page cache size\n\n"
    "The page cache holds 2 GB. A session cache entry is a few hundred bytes.\n",
)


def test_a_sentence_is_offered_and_quoted_for_the_words_of_the_heading_it_sits_under(kb, settings):
    """Under "## Session cache TTL", "It is now 15 minutes; it was 30 minutes before."
    holds none of the words of "What is the session cache TTL?", although a reader sees
    the heading right above it: the question was declined (no sentence read holds
    "TTL"), and the sentence was not even offered (the one of another section that says
    "session cache" was). It is the answer now, quoted without the heading."""
    make_wiki(kb, [CACHE, DEPLOY])
    llm = FakeLLM(first_picks(2, [CACHE[0]]))
    answer = asyncio.run(ask(kb, small(settings), llm, "What is the session cache TTL?"))
    assert answer.covered, answer.findings
    assert unplaced(answer.answer) == (
        f"It is now 15 minutes; it was 30 minutes before. [Caching]({CACHE[0]})"
    )
    # a sentence holding more of the question itself still comes first
    pages = [Page(CACHE[0], CACHE[1], CACHE[3], False)]
    offered = number_sentences(pages, "How big is a session cache entry?")
    assert offered[0].sentences[0].text == "A session cache entry is a few hundred bytes."


def test_a_sentence_is_read_under_its_pages_title():
    """A page's sentences speak of its title's subject without naming it ("She trained
    at ..." on the page "Ada Park"): the one that answers comes before the one that only
    names her, as if the title were a heading above them."""
    text = "Ada Park is a senior engineer on the payments team. She trained at Hebron Academy."
    pages = [Page("wiki/entity/ada-park.md", "Ada Park", text, False)]
    offered = number_sentences(pages, "Where did Ada Park train?")
    assert [s.text for p in offered for s in p.sentences] == [
        "She trained at Hebron Academy.",
        "Ada Park is a senior engineer on the payments team.",
    ]


def test_under_a_title_that_names_the_question_the_sentences_saying_it_come_first():
    """Asked "What does the wiki say about fixing the flaky jobs test?" over the page of
    that title: its title gives every sentence all the question's words, and the first ones
    in page order said none of them, so the best four (what the coverage judge is shown)
    held nothing of the question. Sentences holding its words themselves come first."""
    text = (
        "The session started on a Monday. It ran in the api repository. The agent read "
        "the logs first. It then opened the worker module. The jobs test was flaky because "
        "two workers claimed one row; fixing it took a row lock."
    )
    title = "Coding session: fixing the flaky jobs test"
    pages = [Page("wiki/concept/coding-session.md", title, text, False)]
    offered = number_sentences(pages, f"What does the wiki say about {title}?")
    assert offered[0].sentences[0].text.startswith("The jobs test was flaky")
