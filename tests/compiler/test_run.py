"""The compile run against a fake of our own LLM boundary: what a user sees in the wiki."""

import asyncio
import os
import random
from contextlib import closing

import pytest

from compiler import Compiler, kb_status
from kb_ai.errors import LLMOutputError, LLMTimeoutError
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import all_sources, git, list_articles, load_catalog, open_state, read_article


def compile_paths(kb, settings, llm, *paths, force=False):
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    return asyncio.run(compiler.compile_paths([str(p) for p in paths], force=force))


def write_note(d, name, text):
    p = d / name
    p.write_text(text, encoding="utf-8")
    return p


DNS_NOTE = """# DNS moves out of the puppet module

We decided to move DNS records out of the puppet module into Terraform.
The puppet module had grown to 4,000 lines and every change needed a puppet run.

Steps:
- export the zone from puppet
- import it with terraform import
- delete the puppet resources
"""


def test_one_source_makes_one_article_in_three_calls_and_one_commit(kb, settings, fake_llm, notes):
    src = write_note(notes, "dns.md", DNS_NOTE)
    result = compile_paths(kb, settings, fake_llm, src)

    assert result.compiled == [str(src.resolve())]
    assert fake_llm.stages() == ["extract", "classify", "write"]
    assert len(result.created) == 1
    path = result.created[0]
    article = read_article(kb, path)
    assert path.startswith("wiki/decision/")
    assert "terraform import" in article.body
    assert article.sources == ["raw/dns-moves-out-of-the-puppet-module.md"]
    # the master index carries the line the ask stage reads
    index = kb.master_index_path.read_text()
    assert f"- [{article.title}]({path}) — " in index
    assert (kb.root / "raw/dns-moves-out-of-the-puppet-module.md").is_file()
    assert (kb.root / "extraction/dns-moves-out-of-the-puppet-module.md").is_file()
    assert "compile" in kb.log_path.read_text()
    log = git(kb, "log", "--format=%s").splitlines()
    assert len(log) == 2 and log[0].startswith("compile: 1 source(s), 1 created")
    assert git(kb, "status", "--porcelain").strip() == ""
    assert result.commit and result.usage.calls == 3


def test_unchanged_sources_cost_nothing_and_make_no_commit(kb, settings, fake_llm, notes):
    src = write_note(notes, "dns.md", DNS_NOTE)
    compile_paths(kb, settings, fake_llm, notes)
    again = FakeLLM(responder_handler)
    result = compile_paths(kb, settings, again, notes)
    assert again.calls == []
    assert result.skipped == [str(src.resolve())]
    assert result.commit is None
    assert len(git(kb, "log", "--format=%s").splitlines()) == 2


def test_changed_source_rewrites_its_article_from_the_current_material(
    kb, settings, fake_llm, notes
):
    src = write_note(notes, "dns.md", DNS_NOTE)
    first = compile_paths(kb, settings, fake_llm, src)
    src.write_text(DNS_NOTE.replace("4,000 lines", "6,500 lines"), encoding="utf-8")
    llm = FakeLLM(responder_handler)
    result = compile_paths(kb, settings, llm, src)

    assert result.updated == first.created and result.created == []
    write_call = next(c for c in llm.calls if c.stage == "write")
    prompt = write_call.messages[-1]["content"]
    # written from what the source says now, not patched onto the old text
    assert "<article>" not in prompt and "4,000 lines" not in prompt
    body = read_article(kb, first.created[0]).body
    assert "6,500 lines" in body and "4,000 lines" not in body


def test_results_do_not_depend_on_completion_order(kb, settings, notes, tmp_path):
    for i in range(6):
        write_note(
            notes,
            f"n{i}.md",
            f"# Topic {i % 3}\n\nThe fact number {i} is about topic {i % 3} of the system.\n",
        )

    def run(seed, root):
        from kb_ai.settings import load_settings
        from wiki import KnowledgeBase

        rng = random.Random(seed)

        class Jittery(FakeLLM):
            async def complete(self, *a, **k):
                await asyncio.sleep(rng.random() / 50)
                return await super().complete(*a, **k)

        kb2 = KnowledgeBase.init(root)
        s = load_settings(kb2.root, {"model": "fake/model"}, environ={})
        compile_paths(kb2, s, Jittery(responder_handler), notes)
        return {p: read_article(kb2, p).body for p in list_articles(kb2)}

    a = run(1, tmp_path / "a")
    b = run(2, tmp_path / "b")
    assert a == b
    # three subjects, each created once: the first source creates, later ones merge in
    assert len(a) == 3
    body = a["wiki/concept/topic-0.md"]
    assert body.index("raw/topic-0.md") < body.index("raw/topic-0-2.md")


def test_a_failed_write_fails_its_source_and_is_retried_next_run(kb, settings, notes):
    src = write_note(notes, "dns.md", DNS_NOTE)

    def flaky(stage, messages, schema):
        if stage == "write":
            return LLMTimeoutError("fake/model did not answer within 300 s")
        return responder_handler(stage, messages, schema)

    result = compile_paths(kb, settings, FakeLLM(flaky), src)
    assert result.compiled == [] and result.created == []
    assert "did not answer" in result.failed[0].error
    assert list_articles(kb) == []
    with closing(open_state(kb)) as conn:
        assert all_sources(conn)[str(src.resolve())]["status"] == "failed"

    retry = FakeLLM(responder_handler)
    result = compile_paths(kb, settings, retry, src)
    assert result.compiled == [str(src.resolve())]
    # the extraction paid for by the failed run is reused
    assert retry.stages() == ["classify", "write"]


@pytest.mark.parametrize(
    "path, reason",
    [
        ("wiki/../raw/x.md", "outside wiki/"),
        ("/etc/passwd", "outside wiki/"),
        ("../../escape.md", "outside wiki/"),
    ],
)
def test_a_path_the_model_invents_fails_the_source_and_writes_nothing(
    kb, settings, notes, path, reason
):
    src = write_note(notes, "dns.md", DNS_NOTE)

    def rogue(stage, messages, schema):
        if stage == "classify":
            return {
                "articles": [
                    {
                        "action": "update",
                        "path": path,
                        "type": "concept",
                        "title": "x",
                        "reason": "",
                    }
                ]
            }
        return responder_handler(stage, messages, schema)

    result = compile_paths(kb, settings, FakeLLM(rogue), src)
    assert reason in result.failed[0].error
    assert list_articles(kb) == []
    assert not (kb.root.parent / "escape.md").exists()


def test_an_empty_article_is_refused(kb, settings, notes):
    src = write_note(notes, "dns.md", DNS_NOTE)

    def empty(stage, messages, schema):
        if stage == "write":
            return {"title": "", "summary": "", "tags": [], "body": "   "}
        return responder_handler(stage, messages, schema)

    result = compile_paths(kb, settings, FakeLLM(empty), src)
    assert "empty article" in result.failed[0].error
    assert list_articles(kb) == []


def test_garbage_from_the_model_fails_the_source_with_the_reason(kb, settings, notes):
    src = write_note(notes, "dns.md", DNS_NOTE)
    llm = FakeLLM(lambda stage, m, s: "I am sorry, I cannot do that.")
    result = compile_paths(kb, settings, llm, src)
    assert result.failed and result.failed[0].source == str(src.resolve())
    assert result.failed[0].error


def test_bad_inputs_are_reported_one_line_each_and_the_rest_compiles(
    kb, settings, fake_llm, notes, tmp_path
):
    good = write_note(notes, "dns.md", DNS_NOTE)
    (notes / "empty.md").write_text("  \n")
    (notes / "latin1.txt").write_bytes("caf\xe9 ol\xe9".encode("latin-1"))
    (notes / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (notes / "huge.md").write_text("x" * 2000)
    from dataclasses import replace

    small = replace(settings, max_source_bytes=1000)
    result = compile_paths(kb, small, fake_llm, notes, tmp_path / "missing.md")
    errors = {f.source.rsplit("/", 1)[-1]: f.error for f in result.failed}
    assert "empty" in errors["empty.md"]
    assert "UTF-8" in errors["latin1.txt"]
    assert "binary" in errors["binary.md"]
    assert "limit" in errors["huge.md"]
    assert "no such file" in errors["missing.md"]
    assert result.compiled == [str(good.resolve())]


def test_the_indexes_follow_hand_edits_and_match_a_full_rebuild(kb, settings, fake_llm, notes):
    from wiki import build_catalog, write_article, write_indexes

    first = compile_paths(kb, settings, fake_llm, write_note(notes, "dns.md", DNS_NOTE))
    edited = read_article(kb, first.created[0])
    edited.title = "DNS records live in Terraform (edited by hand)"
    write_article(kb, edited)
    later = kb.master_index_path.stat().st_mtime_ns + 5_000_000_000  # any clock resolution
    os.utime(kb.root / edited.path, ns=(later, later))

    other = "# Backups are kept for 30 days\n\nWe agreed to keep nightly backups 30 days.\n"
    second = compile_paths(kb, settings, fake_llm, write_note(notes, "backups.md", other))
    assert second.created and first.created[0] not in second.updated
    index = kb.master_index_path.read_text(encoding="utf-8")
    assert f"[DNS records live in Terraform (edited by hand)]({edited.path})" in index
    master, topics = index, kb.topics_path.read_text(encoding="utf-8")
    write_indexes(kb, build_catalog(kb))  # what reading every article would have written
    assert kb.master_index_path.read_text(encoding="utf-8") == master
    assert kb.topics_path.read_text(encoding="utf-8") == topics


def test_a_run_where_nothing_can_be_read_changes_nothing(kb, settings, fake_llm, notes):
    (notes / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (notes / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    head = git(kb, "rev-parse", "HEAD")
    log = kb.log_path.read_text(encoding="utf-8") if kb.log_path.exists() else None
    result = compile_paths(kb, settings, fake_llm, notes)
    assert sorted(f.source.rsplit("/", 1)[-1] for f in result.failed) == ["latin1.txt", "photo.md"]
    assert result.commit is None and fake_llm.calls == []
    assert git(kb, "rev-parse", "HEAD") == head
    assert (kb.log_path.read_text(encoding="utf-8") if kb.log_path.exists() else None) == log


def test_interrupt_commits_what_finished(kb, settings, notes):
    for i in range(4):
        write_note(
            notes, f"n{i}.md", f"# Subject {i}\n\nA fact about subject {i} that matters here.\n"
        )
    compiler = None

    def handler(stage, messages, schema):
        if stage == "write" and "Subject 2" in messages[-1]["content"]:
            compiler.interrupt()  # Ctrl-C while this write is in flight
        return responder_handler(stage, messages, schema)

    compiler = Compiler(
        kb, settings, llm_factory=lambda s, **k: FakeLLM(handler, max_concurrency=1)
    )
    result = asyncio.run(compiler.compile_paths([str(notes)]))
    assert result.interrupted
    # the write in flight when Ctrl-C came finished; the one not started did not run
    assert result.created == [f"wiki/concept/subject-{i}.md" for i in range(3)]
    assert [f.error for f in result.failed] == [
        "writing wiki/concept/subject-3.md failed: interrupted"
    ]
    assert result.commit
    assert sorted(list_articles(kb)) == sorted(result.created)
    assert {e.path for e in load_catalog(kb)} == set(result.created)
    assert git(kb, "status", "--porcelain").strip() == ""


def test_interrupt_while_sources_are_still_being_read(kb, settings, fake_llm, notes):
    """Ctrl-C during the first extract: sources not read yet are reported, nothing is
    half-written, and the next run compiles everything."""
    for i in range(12):  # many: the interrupt comes while some are unread
        write_note(notes, f"n{i}.md", f"# Subject {i}\n\nA fact about subject {i}.\n")
    compiler = None

    def handler(stage, messages, schema):
        compiler.interrupt()  # the first call of the run
        return responder_handler(stage, messages, schema)

    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: FakeLLM(handler))
    result = asyncio.run(compiler.compile_paths([str(notes)]))
    assert result.interrupted and not result.compiled and not result.created
    reasons = {f.source.rsplit("/", 1)[-1]: f.error for f in result.failed}
    assert sorted(reasons) == sorted(f"n{i}.md" for i in range(12))
    assert all("interrupted before it" in r for r in reasons.values())
    assert "interrupted before it was read" in reasons.values()
    assert list_articles(kb) == [] and git(kb, "status", "--porcelain").strip() == ""

    again = compile_paths(kb, settings, fake_llm, notes)
    assert len(again.compiled) == 12 and not again.failed and not again.skipped


def test_status_reports_lag_after_a_model_change_without_recompiling(kb, settings, fake_llm, notes):
    from dataclasses import replace

    src = write_note(notes, "dns.md", DNS_NOTE)
    compile_paths(kb, settings, fake_llm, src)
    report = kb_status(kb, replace(settings, model="other/model"))
    assert report["stale"]["lag"] == [str(src.resolve())]
    assert report["articles"] == 1 and report["sources"]["ok"] == 1
    src.write_text(DNS_NOTE + "\nOne more line.\n")
    report = kb_status(kb, settings)
    assert report["stale"]["changed"] == [str(src.resolve())]
    assert report["stale"]["lag"] == []


def test_categories_are_frozen_in_the_kb_file_on_first_compile(kb, settings, fake_llm, notes):
    write_note(notes, "dns.md", DNS_NOTE)
    compile_paths(kb, settings, fake_llm, notes)
    text = kb.config_path.read_text()
    assert 'categories = ["concept", "decision"' in text
    from kb_ai.settings import load_settings

    assert load_settings(kb.root, environ={}).categories[:2] == ("concept", "decision")


def test_a_long_lived_process_freezes_the_categories_once(kb, settings, fake_llm, notes):
    """The server loads its settings once; every compile it runs later must find the
    categories its first one wrote, not write them again (two lines: invalid TOML)."""
    import tomllib

    for i in range(3):
        write_note(notes, f"n{i}.md", f"# Decision {i}\n\nWe decided on option {i}.\n")
        result = compile_paths(kb, settings, fake_llm, notes)  # the same Settings each time
        assert not result.failed
    text = kb.config_path.read_text(encoding="utf-8")
    assert text.count("categories =") == 1
    assert tomllib.loads(text)["categories"][:2] == ["concept", "decision"]


def test_long_articles_are_merged_by_section_patches(kb, settings, fake_llm, notes):
    from dataclasses import replace

    src = write_note(notes, "dns.md", DNS_NOTE)
    first = compile_paths(kb, settings, fake_llm, src)
    path = first.created[0]
    before = read_article(kb, path).body
    other = write_note(
        notes,
        "more.md",
        "# DNS moves out of the puppet module\n\nThe TTL of every record is 300 seconds now.\n",
    )
    llm = FakeLLM(responder_handler)
    result = compile_paths(kb, replace(settings, patch_threshold_chars=100), llm, other)
    assert result.updated == [path]
    assert "patches" in next(c for c in llm.calls if c.stage == "write").schema["properties"]
    after = read_article(kb, path).body
    assert after.startswith(before.strip()[:200])  # untouched sections stay as they were
    assert "300 seconds" in after


def test_model_errors_in_extract_are_not_parsed_as_articles(kb, settings, notes):
    src = write_note(notes, "dns.md", DNS_NOTE)
    llm = FakeLLM(responder_handler).enqueue(LLMOutputError("reply was cut off at the token limit"))
    result = compile_paths(kb, settings, llm, src)
    assert "cut off" in result.failed[0].error
    assert list_articles(kb) == []


def test_a_title_written_where_a_new_articles_path_goes_is_ignored(kb, settings, notes):
    src = write_note(
        notes,
        "deploy.md",
        "# How to deploy\n\nDeploys go out from main through the deploy workflow.\n",
    )

    def small_model(stage, messages, schema):
        if stage == "classify":
            return {
                "articles": [
                    {
                        "action": "create",
                        "path": "How to deploy the invoice service",
                        "type": "howto",
                        "title": "Deploying",
                        "reason": "",
                    }
                ]
            }
        return responder_handler(stage, messages, schema)

    result = compile_paths(kb, settings, FakeLLM(small_model), src)
    assert result.failed == [] and result.created == ["wiki/howto/deploying.md"]


@pytest.mark.parametrize("also_the_first", [False, True], ids=["own source", "both sources"])
def test_a_compile_that_waited_for_another_builds_on_what_that_one_did(
    kb, settings, tmp_path, also_the_first
):
    """Two runs on one knowledge base (the CLI while the server's worker compiles): the
    second extracts, waits for the compile lock, then must see the first one's sources
    and slugs."""
    import threading

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first_note = write_note(tmp_path / "a", "backups.md", "# Backups\n\nNightly, kept 30 days.\n")
    second_note = write_note(tmp_path / "b", "backups.md", "# Backups\n\nOffsite copy weekly.\n")
    second_waits, second_started = threading.Event(), threading.Event()
    results = {}

    def blocking_handler(stage, messages, schema):
        if stage == "classify" and not second_started.is_set():  # the first run's
            second_started.set()  # first call under the lock (it extracts before it)
            second.start()  # the second run starts while this one holds the lock ...
            assert second_waits.wait(10)  # ... and reports that it waits for it
        return responder_handler(stage, messages, schema)

    def run_second():
        def progress(event, **info):
            if event == "waiting":
                second_waits.set()

        compiler = Compiler(kb, settings, llm_factory=lambda s, **k: second_llm, progress=progress)
        paths = [second_note, first_note] if also_the_first else [second_note]
        results["second"] = asyncio.run(compiler.compile_paths(paths))

    second_llm = FakeLLM(responder_handler)
    second = threading.Thread(target=run_second)
    results["first"] = compile_paths(kb, settings, FakeLLM(blocking_handler), first_note)
    second.join(30)

    first, later = results["first"], results["second"]
    with closing(open_state(kb)) as conn:
        rows = all_sources(conn)
    raw_first = rows[str(first_note.resolve())]["raw_path"]
    raw_second = rows[str(second_note.resolve())]["raw_path"]
    assert raw_first != raw_second  # one title, two sources: never one raw file
    assert "kept 30 days" in (kb.root / raw_first).read_text(encoding="utf-8")
    assert "Offsite copy" in (kb.root / raw_second).read_text(encoding="utf-8")
    assert first.compiled == [str(first_note.resolve())]
    # compiled meanwhile: no second pass
    assert later.skipped == ([str(first_note.resolve())] if also_the_first else [])
    assert later.compiled == [str(second_note.resolve())]
    # each source it was given is extracted before it knew; only its own is written
    assert second_llm.stages().count("extract") == (2 if also_the_first else 1)
    assert [s for s in second_llm.stages() if s != "extract"] == ["classify", "write"]


def test_a_new_article_links_to_an_article_it_mentions(kb, settings, fake_llm, notes):
    first = write_note(
        notes,
        "locking.md",
        "# Terraform state locking\n\nWe lock the Terraform state in DynamoDB so two applies"
        " never run at once.\n",
    )
    compile_paths(kb, settings, fake_llm, first)
    second = write_note(
        notes,
        "dns.md",
        DNS_NOTE + "\nThe import relies on terraform state locking, as every apply does.\n",
    )
    result = compile_paths(kb, settings, FakeLLM(responder_handler), second)

    (path,) = result.created
    body = read_article(kb, path).body
    locking = next(p for p in list_articles(kb) if "locking" in p)
    slug = locking.rsplit("/", 1)[-1][:-3]
    assert f"[[{slug}|terraform state locking]]" in body
