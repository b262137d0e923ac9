"""The write checks: a stand-in writer that misbehaves the way small models do, and what
the wiki takes in (issue 13)."""

from __future__ import annotations

import asyncio

from compiler import Compiler
from tests.compiler.conftest import responder_handler
from tests.fakes.fake_llm import FakeLLM
from wiki import list_articles, read_article

NOTE = """# DNS moves out of the puppet module

We decided to move DNS records out of the puppet module into Terraform.
The puppet module had grown to 4,000 lines and every change needed a puppet run.

Steps:
- export the zone from puppet
- import it with terraform import
- delete the puppet resources
"""

GOOD_BODY = (
    "We decided to move DNS records out of the puppet module into Terraform. The puppet "
    "module had grown to 4,000 lines and every change needed a puppet run.\n\n"
    "## Steps\n\n- export the zone from puppet\n- import it with terraform import\n"
    "- delete the puppet resources"
)
GOOD = {
    "title": "DNS in Terraform",
    "summary": "Why DNS records moved from the puppet module to Terraform.",
    "tags": ["dns"],
    "body": GOOD_BODY,
}


def writer(*replies):
    """A stand-in model: the KB responder for every stage but write, whose replies are
    ``replies`` in order (the last one repeated)."""
    queue = list(replies)

    def handler(stage, messages, schema):
        if stage != "write":
            return responder_handler(stage, messages, schema)
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        return {**GOOD, **reply}

    return FakeLLM(handler)


def compile_note(kb, settings, notes, llm):
    src = notes / "dns.md"
    src.write_text(NOTE, encoding="utf-8")
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: llm)
    return asyncio.run(compiler.compile_paths([str(src)]))


def write_prompts(llm):
    return [c.messages[-1]["content"] for c in llm.calls if c.stage == "write"]


def assert_refused(kb, result, llm, reason):
    assert result.created == [] and result.compiled == []
    assert "refused by kb-ai's checks" in result.failed[0].error
    assert reason in result.failed[0].error
    assert list_articles(kb) == []
    prompts = write_prompts(llm)
    assert len(prompts) == 2, "asked once more, with the findings"
    assert "refused by these checks" in prompts[1] and reason in prompts[1]
    assert "failed" in kb.log_path.read_text()


def assert_kept_once(kb, result, llm, sentence):
    """Two replies unusable in shape: what is whole and grounded is kept, each once."""
    assert result.failed == [] and len(result.created) == 1
    body = read_article(kb, result.created[0]).body
    assert body.count(sentence) == 1
    assert body.rstrip().endswith(".")
    assert len(write_prompts(llm)) == 2, "asked once more, with the findings"
    assert "refused by these checks" in write_prompts(llm)[1]
    assert "kept its whole sentences, each once" in kb.log_path.read_text()


def test_a_paragraph_repeated_to_the_cap_and_cut_mid_word_is_kept_once(kb, settings, notes):
    para = "We decided to move DNS records out of the puppet module into Terraform."
    body = ("\n\n".join([para] * 60))[:3000]
    llm = writer({"body": body})
    result = compile_note(kb, settings, notes, llm)
    assert_kept_once(kb, result, llm, para)
    assert "ends mid-sentence" in write_prompts(llm)[1]


def test_the_summary_pasted_fifteen_times_is_kept_once(kb, settings, notes):
    summary = "We decided to move DNS records out of the puppet module into Terraform."
    llm = writer({"body": "\n\n".join([summary] * 15)})
    result = compile_note(kb, settings, notes, llm)
    assert_kept_once(kb, result, llm, summary)
    assert "paragraph repeated 15 times" in write_prompts(llm)[1]


def test_a_second_reply_that_passes_is_taken(kb, settings, notes):
    para = "We decided to move DNS records out of the puppet module into Terraform."
    llm = writer({"body": "\n\n".join([para] * 15)}, {})
    result = compile_note(kb, settings, notes, llm)
    assert result.failed == [] and len(result.created) == 1
    article = read_article(kb, result.created[0])
    assert article.body.count(para) == 1
    assert len(write_prompts(llm)) == 2


def test_html_paragraphs_become_markdown(kb, settings, notes):
    html = (
        "<markdown><p>We decided to move DNS records out of the puppet module into "
        "<b>Terraform</b>.</p><h2>Steps</h2><ul><li>export the zone from puppet</li>"
        "<li>import it with terraform import</li></ul></markdown>"
    )
    llm = writer({"body": html})
    result = compile_note(kb, settings, notes, llm)
    assert result.failed == []
    body = read_article(kb, result.created[0]).body
    assert "<" not in body
    assert "## Steps\n\n- export the zone from puppet" in body and "**Terraform**" in body
    assert len(write_prompts(llm)) == 1
    assert "converted to Markdown" in kb.log_path.read_text()


def test_html_without_a_markdown_form_is_refused(kb, settings, notes):
    llm = writer({"body": "<table><tr><td>puppet</td><td>4,000 lines</td></tr></table>"})
    result = compile_note(kb, settings, notes, llm)
    assert_refused(kb, result, llm, "<table>")


def test_a_sentence_of_outside_knowledge_is_removed_and_logged(kb, settings, notes):
    outside = "Terraform was released by HashiCorp in 2014."
    llm = writer({"body": GOOD_BODY.replace("\n\n## Steps", f" {outside}\n\n## Steps")})
    result = compile_note(kb, settings, notes, llm)
    assert result.failed == []
    body = read_article(kb, result.created[0]).body
    assert "HashiCorp" not in body and "2014" not in body
    assert "every change needed a puppet run." in body and "terraform import" in body
    log = kb.log_path.read_text()
    assert "removed 1 ungrounded passage" in log and "2014" in log
    assert len(write_prompts(llm)) == 1, "a few ungrounded sentences need no second call"


def test_an_article_of_outside_knowledge_is_refused(kb, settings, notes):
    invented = (
        "Terraform was released by HashiCorp in 2014. It has 3,000 providers. "
        "Puppet was written by Luke Kanies in 2005. DNS dates from 1983."
    )
    llm = writer({"body": invented})
    result = compile_note(kb, settings, notes, llm)
    assert_refused(kb, result, llm, "not in the material")
    assert "2014" in write_prompts(llm)[1]


def test_a_number_changed_from_the_source_is_not_taken_in(kb, settings, notes):
    llm = writer({"body": GOOD_BODY.replace("4,000", "40,000")})
    result = compile_note(kb, settings, notes, llm)
    body = read_article(kb, result.created[0]).body
    assert "40,000" not in body and "puppet run" not in body
    assert "into Terraform." in body
    assert "number '40,000' is not in the material" in kb.log_path.read_text()


def test_a_summary_cut_mid_sentence_is_never_stored(kb, settings, notes):
    cut = "The team moved DNS records out of the puppet module because the team's"
    llm = writer({"summary": cut})
    result = compile_note(kb, settings, notes, llm)
    article = read_article(kb, result.created[0])
    assert article.summary.startswith("We decided to move DNS records")
    assert article.summary.endswith("needed a puppet run.") and "team's" not in article.summary
    assert "summary taken from the body" in kb.log_path.read_text()


def test_a_long_article_patched_with_html_and_an_invented_number_takes_neither(kb, notes):
    from kb_ai.settings import load_settings

    settings = load_settings(
        kb.root, {"model": "fake/model", "patch_threshold_chars": 100}, environ={}
    )
    first = compile_note(kb, settings, notes, writer({}))
    path = first.created[0]

    def patcher(stage, messages, schema):
        if stage == "classify":
            return {
                "articles": [
                    {
                        "action": "update",
                        "path": path,
                        "type": "decision",
                        "title": "",
                        "reason": "",
                    }
                ]
            }
        if stage == "write":
            content = (
                "<p>The zone is exported from puppet first.</p>"
                "<p>The export took 45 minutes on 12 hosts.</p>"
            )
            return {
                "summary": GOOD["summary"],
                "tags": [],
                "patches": [{"section": "Steps", "op": "append", "content": content}],
            }
        return responder_handler(stage, messages, schema)

    (notes / "more.md").write_text(
        "# Zone export\n\nThe zone is exported from puppet first.\n", encoding="utf-8"
    )
    compiler = Compiler(kb, settings, llm_factory=lambda s, **k: FakeLLM(patcher))
    result = asyncio.run(compiler.compile_paths([str(notes / "more.md")]))
    assert result.updated == [path]
    body = read_article(kb, path).body
    assert "The zone is exported from puppet first." in body
    assert "<p>" not in body and "45 minutes" not in body
    assert "terraform import" in body, "what the article said before stays"


def test_a_body_that_repeats_the_prompt_instead_of_the_material_loses_those_sentences(
    kb, settings, notes
):
    # What the 0.5B model wrote on a fresh clone: the prompt's own example, and on the
    # second reply the findings it had been given, as the article's sentences.
    example = "The material does not say who owns it."
    first = {"body": f"{GOOD_BODY}\n\n{example} Write Markdown only, never HTML."}
    echo_of_findings = "The material does not say who owns it. Say each thing once."
    second = {"body": f"{GOOD_BODY}\n\n{echo_of_findings}"}
    llm = writer(first, second)
    result = compile_note(kb, settings, notes, llm)
    assert result.failed == []
    body = read_article(kb, result.created[0]).body
    assert "who owns it" not in body and "Markdown" not in body and "each thing once" not in body
    assert "every change needed a puppet run." in body and "terraform import" in body
    assert (
        "repeats the instructions" in kb.log_path.read_text()
        or "ungrounded" in kb.log_path.read_text()
    )
