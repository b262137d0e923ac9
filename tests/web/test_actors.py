"""Who acts in the web app reaches git: a submission is compiled in a commit whose author
is the person who submitted it (kb-ai the committer), and log.md names them."""

from kb_ai.service import Actor
from tests.web.conftest import NOTE, make_client, wait_for
from wiki import KnowledgeBase, git

GRACE = Actor("person", "Grace Hopper", "grace@example.org")


def test_a_web_submission_is_committed_with_its_submitter_as_author(settings, model):
    with make_client(settings, model, actor=GRACE) as client:
        task = client.post("/api/submit", json=NOTE).json()["tasks"][0]
        done = wait_for(client, task["id"])
    assert done["state"] == "done", done
    kb = KnowledgeBase.open(settings.kb_dir)
    sha = done["result"]["commit"]
    assert git(kb, "show", "-s", "--format=%an|%ae|%cn|%ce", sha).strip() == (
        "Grace Hopper|grace@example.org|kb-ai|kb-ai@localhost"
    )
    assert "- by Grace Hopper <grace@example.org> (person)" in kb.log_path.read_text()


def test_submissions_by_two_people_are_two_commits_each_with_its_author(settings, model):
    """The worker never folds one person's submission into another's commit."""
    from kb_ai.service import open_kb
    from kb_ai.service.submitting import Document, submit

    ada = Actor("cli", "Ada Lovelace", "ada@example.org")
    okb = open_kb(settings=settings, actor=ada)
    submit(okb, [Document("Ada's note", b"# DNS\n\nDNS moved to Terraform in 2021.\n")])
    submit(okb.acting_as(GRACE), [Document("Grace's note", NOTE["content"].encode())])
    with make_client(settings, model) as client:
        tasks = client.get("/api/tasks").json()["tasks"]
        results = [wait_for(client, t["id"]) for t in tasks]
    kb = KnowledgeBase.open(settings.kb_dir)
    authors = {
        git(kb, "show", "-s", "--format=%an", r["result"]["commit"]).strip() for r in results
    }
    assert authors == {"Ada Lovelace", "Grace Hopper"}
