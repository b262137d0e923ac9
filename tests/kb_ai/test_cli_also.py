"""`also`: other knowledge bases consulted beside the project's, read only, through the
real CLI against the stand-in model server; a git URL is a bare repository on disk,
cloned and pulled with the git CLI."""

import json
import shutil
import subprocess
import threading

import pytest
from click.testing import CliRunner

from kb_ai.cli import main
from tests.conftest import compile_notes
from tests.fakes.kb_responder import stage_of
from wiki import KnowledgeBase

PROJECT = {
    "backups.md": "# Nightly backups\n\nBackups of the main database run nightly at 02:00. "
    "Backup copies are kept for thirty days in a separate account.\n",
}
TEAM = {
    "review.md": "# Code review rule\n\nEvery change needs two approvals before it is merged. "
    "Reviewers answer within one working day.\n",
    "backups.md": "# Nightly backups\n\nTeam backups of laptops run weekly on Fridays. "
    "Backup copies of laptops are kept for ninety days.\n",
}
REVIEW = "also/team/wiki/concept/code-review-rule.md"


def cli(kb_root, *args):
    return CliRunner().invoke(main, ["--kb", str(kb_root), *args], catch_exceptions=False)


def run(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def compiled(tmp_path, name, notes):
    kb = KnowledgeBase.init(tmp_path / name)
    (tmp_path / f"{name}-notes").mkdir()
    compile_notes(kb, notes, tmp_path / f"{name}-notes")
    return kb


@pytest.fixture
def team(tmp_path, fake_model):
    return compiled(tmp_path, "team", TEAM)


@pytest.fixture
def project(tmp_path, fake_model):
    return compiled(tmp_path, "project", PROJECT)


def listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git/" not in str(p))


def test_a_folder_named_with_also_is_consulted_and_its_citations_say_so(project, team):
    before = listing(team.root)
    result = cli(project.root, "--also", str(team.root), "ask", "--json",
                 "How many approvals does a change need before it is merged?")  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["citations"] == [{"title": "Code review rule", "path": REVIEW, "kb": "team"}]
    assert f"[Code review rule]({REVIEW}#L" in data["answer"] and "two approvals" in data["answer"]
    shown = cli(
        project.root, "--also", str(team.root), "ask", "How many approvals does a change need?"
    )
    assert f"[Code review rule]({REVIEW})  from knowledge base team" in shown.stdout
    assert listing(team.root) == before  # read only: nothing written into it
    assert (project.root / ".kb-ai" / "also" / "team.db").is_file()  # its index is ours


def test_the_projects_page_wins_a_tie(project, team, fake_model):
    asked = len(fake_model.requests)
    result = cli(project.root, "--also", str(team.root), "ask", "--json",
                 "How long are nightly backups kept?")  # fmt: skip
    data = json.loads(result.stdout)
    assert [c["path"] for c in data["citations"]] == ["wiki/concept/nightly-backups.md"]
    assert (
        "02:00" in data["answer"]
        and "ninety" not in data["answer"]
        and "laptops" not in data["answer"]
    )
    (select,) = [r for r in fake_model.requests[asked:] if stage_of(r) == "select"]
    offered = select["messages"][-1]["content"]
    assert "also/team/wiki/concept/nightly-backups.md" not in offered  # same title: ours
    assert "wiki/concept/nightly-backups.md" in offered


def test_a_git_url_is_cloned_then_pulled_off_the_questions_path(
    project, team, tmp_path, monkeypatch
):
    from kb_ai.service import also

    bare = tmp_path / "team.git"
    run("clone", "--quiet", "--bare", str(team.root), str(bare), cwd=tmp_path)
    config = project.root / "kb-ai.toml"
    config.write_text(config.read_text() + f'also = ["{bare}"]\n', encoding="utf-8")
    first = cli(project.root, "ask", "--json", "How many approvals does a change need?")
    assert first.exit_code == 0, first.output
    assert [c["kb"] for c in json.loads(first.stdout)["citations"]] == ["team"]
    assert (project.root / ".kb-ai" / "also" / "team" / "wiki").is_dir()
    # the team adds a page and pushes it; the project's copy is pulled once it is old
    run("remote", "add", "origin", str(bare), cwd=team.root)
    (tmp_path / "t2").mkdir()
    compile_notes(team, {"deploys.md": "# Deploy freeze\n\nNo deploys happen on Fridays "
                         "after 15:00 during the release freeze.\n"}, tmp_path / "t2")  # fmt: skip
    run("push", "--quiet", "origin", "main", cwd=team.root)
    release, pulls = threading.Event(), []

    def held_pull(url, root):  # the remote answers only once the question is answered
        pulls.append(url)
        assert release.wait(30)
        real_pull(url, root)

    real_pull = also.pull
    monkeypatch.setattr(also, "pull", held_pull)
    monkeypatch.setenv("KB_AI_ALSO_PULL_SECONDS", "0")
    question = "Do deploys happen on Fridays during the release freeze?"
    during = cli(project.root, "ask", "--json", question)
    assert during.exit_code == 0, during.output  # answered while the pull waits
    assert pulls == [str(bare)]
    assert "deploy-freeze" not in during.stdout  # from the copy as it was
    release.set()
    also.wait_for_pulls(30)
    monkeypatch.setenv("KB_AI_ALSO_PULL_SECONDS", "600")
    later = cli(project.root, "ask", "--json", question)
    assert later.exit_code == 0, later.output
    assert later.stderr == "", later.stderr
    cited = json.loads(later.stdout)["citations"]
    assert cited == [
        {"title": "Deploy freeze", "path": "also/team/wiki/concept/deploy-freeze.md", "kb": "team"}
    ]
    assert pulls == [str(bare)]  # pulled at most once every also_pull_seconds


def test_a_pull_that_fails_keeps_the_copy_and_the_next_question_says_so(
    project, team, tmp_path, monkeypatch
):
    from kb_ai.service import also

    bare = tmp_path / "team.git"
    run("clone", "--quiet", "--bare", str(team.root), str(bare), cwd=tmp_path)
    assert cli(project.root, "--also", str(bare), "ask", "How many approvals?").exit_code == 0
    shutil.rmtree(bare)  # the remote is gone
    monkeypatch.setenv("KB_AI_ALSO_PULL_SECONDS", "0")
    assert cli(project.root, "--also", str(bare), "ask", "How many approvals?").exit_code == 0
    also.wait_for_pulls(30)
    monkeypatch.setenv("KB_AI_ALSO_PULL_SECONDS", "600")
    result = cli(project.root, "--also", str(bare), "ask", "--json",
                 "How many approvals does a change need?")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Knowledge base team could not be pulled; its copy here is used." in result.stderr
    assert json.loads(result.stdout)["citations"][0]["kb"] == "team"


def test_a_folder_that_is_no_knowledge_base_and_a_remote_out_of_reach(project, tmp_path):
    (tmp_path / "plain").mkdir()
    bad = cli(project.root, "--also", str(tmp_path / "plain"), "ask", "How long are backups kept?")
    assert bad.exit_code == 2 and "is not a kb-ai knowledge base" in bad.output
    gone = tmp_path / "nowhere.git"
    result = cli(
        project.root, "--also", str(gone), "ask", "--json", "How long are nightly backups kept?"
    )
    assert result.exit_code == 0, result.output
    assert "Knowledge base nowhere" in result.stderr and "left out" in result.stderr
    assert json.loads(result.stdout)["citations"][0]["path"] == "wiki/concept/nightly-backups.md"


def test_the_mcp_tool_consults_also_and_names_the_knowledge_base(project, team):
    import anyio
    from mcp import Client

    from kb_ai.cli.mcp_server import build_server
    from kb_ai.service import Actor, open_kb

    okb = open_kb(project.root, overrides={"also": [str(team.root)]}, actor=Actor.agent("test"))

    async def go():
        async with Client(build_server(okb=okb)) as client:
            return await client.call_tool(
                "ask", {"question": "How many approvals does a change need?"}
            )

    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["citations"] == [
        {"title": "Code review rule", "path": REVIEW, "kb": "team"}
    ]
    assert f"- [Code review rule]({REVIEW}) (from knowledge base team)" in result.content[0].text


def test_the_agent_hooks_offer_the_also_knowledge_bases_pages_after_the_projects(project, team):
    """kb-ai.toml's also reaches the session-start snapshot and the prompt hint (hooks in
    processes of their own, as an agent runs them), once a question has opened it."""
    import sys

    def hook(name, event):
        return subprocess.run(
            [sys.executable, "-P", "-m", "kb_ai.hooks", name],
            input=json.dumps({"session_id": event.pop("session", "s"), **event}),
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout

    with (project.root / "kb-ai.toml").open("a", encoding="utf-8") as f:
        f.write(f"\nalso = [{json.dumps(str(team.root))}]\n")
    cwd = {"cwd": str(project.root)}
    assert "(team)" not in hook("session-start", {**cwd, "session": "before"})  # not opened yet
    assert cli(project.root, "ask", "How many approvals does a change need?").exit_code == 0
    lines = hook("session-start", {**cwd, "session": "after"}).splitlines()
    ours = next(i for i, line in enumerate(lines) if line.startswith("- concept: Nightly backups"))
    theirs = next(i for i, line in enumerate(lines) if line.startswith("- concept (team): "))
    assert ours < theirs and "Code review rule" in lines[theirs]
    assert not any(line.startswith("- concept (team): Nightly backups") for line in lines)  # tie
    hint = hook("prompt", {**cwd, "prompt": "how many approvals does a merged change need?"})
    assert f'"Code review rule" ({REVIEW})' in hint
    tie = hook("prompt", {**cwd, "prompt": "how long are nightly backups kept?"})
    assert "(wiki/concept/nightly-backups.md)" in tie and "also/team" not in tie
    # the shell hook: first through the Python hook, which starts writing the hint file;
    # then from that file (with no Python to hand over to, so the answer is awk's)
    from kb_ai.hooks.hintfile import is_fresh
    from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK
    from tests.kb_ai.test_hooks_hint_shell import ENV, wait_fresh

    def shell_hook(prompt, python):
        return subprocess.run(
            [POSIX_SH, str(SHELL_HOOK), "--python", python, "prompt"],
            input=json.dumps({**cwd, "prompt": prompt}),
            capture_output=True,
            text=True,
            env=ENV,
            cwd=project.root,
            timeout=60,
        ).stdout

    assert not is_fresh(project.root)
    assert shell_hook("how long are nightly backups kept?", sys.executable) == tie
    assert wait_fresh(project.root)
    for prompt, python_said in (
        ("how many approvals does a merged change need?", hint),
        ("how long are nightly backups kept?", tie),
    ):
        assert shell_hook(prompt, "/nonexistent/python") == python_said
