"""Agent hooks: which KB a session belongs to, the snapshot, capture, fail-open, install."""

import json
import os
import re
import subprocess
import sys
import time
from contextlib import closing

import pytest

from compiler.queue import TaskQueue
from kb_ai.cli.agent_hooks.install import install, installed_events, settings_path, uninstall
from kb_ai.hooks.hint import prompt_hint
from kb_ai.hooks.locate import find_kb
from kb_ai.hooks.run import run_hook
from kb_ai.hooks.snapshot import build_snapshot
from tests.conftest import needs_shared_data, shared_data
from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article, write_indexes

TRANSCRIPTS = shared_data("transcripts", "claude_code")


def make_kb(root, articles=()):
    kb = KnowledgeBase.init(root)
    for path, title, summary in articles:
        kind = path.split("/")[1]
        write_article(
            kb,
            Article(path, title, kind, summary, [], [], "2026-01-01", "2026-01-01", f"{summary}\n"),
        )
    write_indexes(kb, build_catalog(kb))
    return kb


LESSONS = [
    (
        "wiki/pitfall/flaky-claim-test.md",
        "Flaky claim test",
        "Run the jobs tests with --count 50 before pushing.",
    ),
    (
        "wiki/convention/deploy-from-main.md",
        "Deploy from main only",
        "Deploys go out from main through the deploy workflow.",
    ),
    ("wiki/concept/jobs-table.md", "Jobs table", "Background jobs live in PostgreSQL."),
]


def hook(*args, stdin="", env=None, cwd=None, timeout=30):
    """The CLI (``kb-ai ...``) in a process of its own."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "kb_ai", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def agent_hook(*args, stdin="", env=None, cwd=None, timeout=30):
    """The hook command ``hooks install`` writes (python -m kb_ai.hooks ...)."""
    return subprocess.run(
        [sys.executable, "-P", "-m", "kb_ai.hooks", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_kb_is_found_by_walking_up_to_a_marker_and_worktrees_share_it(tmp_path):
    kb = make_kb(tmp_path / "kb")
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / ".kb-ai").write_text(f'kb = "{kb.root}"\n')
    (repo / "README").write_text("x")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", cwd=repo)
    assert find_kb(repo / "src" / "deep", {}) == kb.root
    # a worktree whose checkout lacks the (untracked, say) marker still maps to the main repository's KB
    git("rm", "-q", "--cached", ".kb-ai", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "untrack", cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=repo)
    assert not (tmp_path / "wt" / ".kb-ai").exists()
    assert find_kb(tmp_path / "wt", {}) == kb.root
    # the walk stops at a repository root; KB_AI_DIR comes last
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", cwd=other)
    assert find_kb(other, {}) is None
    assert find_kb(other, {"KB_AI_DIR": str(kb.root)}) == kb.root
    assert find_kb(kb.root / "wiki", {}) == kb.root


def test_the_snapshot_ranks_lessons_first_and_always_ends_with_how_to_ask(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    text = build_snapshot(kb.root)
    lines = text.splitlines()
    assert len(lines) <= 5 and len(text.encode()) <= 1024
    assert "Flaky claim test" in lines[0] and "Deploy from main only" in lines[1]
    assert "Jobs table" in lines[2]  # after the lessons: the most recently changed of the rest
    assert "`ask` tool of the kb-ai MCP server" in lines[-1] and "kb-ai --kb" in lines[-1]
    many = make_kb(
        tmp_path / "many", [(f"wiki/pitfall/p{i}.md", f"Pitfall {i}", "x" * 300) for i in range(20)]
    )
    big = build_snapshot(many.root)
    assert len(big.splitlines()) <= 5 and len(big.encode()) <= 1024
    assert "`ask` tool" in big.splitlines()[-1]


def test_the_snapshot_is_not_empty_once_the_wiki_has_any_article(tmp_path):
    assert build_snapshot(make_kb(tmp_path / "empty").root) == ""
    kb = make_kb(tmp_path / "kb", [LESSONS[2]])  # a concept only: no pitfall, no convention
    lines = build_snapshot(kb.root).splitlines()
    assert lines[0].startswith("- concept: Jobs table") and "`ask` tool" in lines[-1]


def test_session_start_is_byte_identical_within_a_session(tmp_path):
    kb = make_kb(tmp_path / "kb", LESSONS)
    event = json.dumps({"session_id": "s1", "cwd": str(kb.root), "hook_event_name": "SessionStart"})
    first = agent_hook("session-start", stdin=event)
    assert first.returncode == 0 and "Flaky claim test" in first.stdout
    write_article(
        kb,
        Article(
            "wiki/pitfall/new.md",
            "A new pitfall",
            "pitfall",
            "Fresh.",
            [],
            [],
            "2026-01-02",
            "2026-01-02",
            "Fresh.\n",
        ),
    )
    write_indexes(kb, build_catalog(kb))
    again = agent_hook("session-start", stdin=event)
    assert again.stdout == first.stdout  # same session: same bytes, the prompt cache stays valid
    other = agent_hook("session-start", stdin=event.replace("s1", "s2"))
    assert "A new pitfall" in other.stdout


@pytest.mark.parametrize("setup", ["no kb", "corrupt kb", "bad json", "not a dict"])
def test_hooks_fail_open(tmp_path, setup):
    cwd = tmp_path / "project"
    cwd.mkdir()
    stdin = json.dumps(
        {
            "session_id": "s",
            "cwd": str(cwd),
            "transcript_path": str(tmp_path / "t.jsonl"),
            "prompt": "deploy?",
        }
    )
    if setup == "corrupt kb":
        kb = make_kb(cwd, LESSONS)
        (kb.state_dir / "state.db").write_bytes(b"this is not sqlite" * 100)
        kb.master_index_path.write_bytes(b"\xff\xfe garbage")
    elif setup == "bad json":
        stdin = "{not json"
    elif setup == "not a dict":
        stdin = "[1, 2]"
    for name in ("session-start", "session-end", "prompt"):
        for result in (
            hook("hook", name, stdin=stdin, cwd=cwd),
            agent_hook(name, stdin=stdin, cwd=cwd),
        ):
            assert result.returncode == 0, result.stderr
            assert result.stdout == ""


def test_the_capture_hook_imports_nothing_heavy(tmp_path):
    """The hook's start is its cost on a busy machine: no CLI, model client, templates,
    YAML, or kb-ai's wiki and compiler packages on its path (python -X importtime)."""
    kb = make_kb(tmp_path / "kb")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n")
    event = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(kb.root)}
    from wiki.lock import KbLock

    alive = KbLock(kb.state_dir / "worker.lock")  # a worker "is running": none is started
    alive.acquire(shared=True)
    for name in ("session-end", "session-start"):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-P", "-m", "kb_ai.hooks", name],
            input=json.dumps({**event, "hook_event_name": "Stop"}),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 0
        imported = {
            line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line
        }
        assert "kb_ai.hooks.run" in imported
        heavy = {"click", "litellm", "jinja2", "yaml", "httpx", "wiki", "compiler", "sqlite3"}
        assert not {m.split(".")[0] for m in imported} & heavy, sorted(imported)
    alive.release()
    assert len(list((kb.state_dir / "spool" / "new").iterdir())) == 1


def test_prompt_hint_names_up_to_three_pages_with_paths_and_no_wiki_text(tmp_path):
    many = [
        (
            f"wiki/howto/deploy-step-{i}.md",
            f"Deploy step {i} from main",
            f"Deploys step {i}: workflow x{i}.",
        )
        for i in range(6)
    ]
    kb = make_kb(tmp_path / "kb", [*LESSONS, *many])
    from wiki.indexing import refresh_search_index

    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    event = {"prompt": "how do deploys work from main?", "cwd": str(kb.root)}
    out = agent_hook("prompt", stdin=json.dumps(event)).stdout.rstrip("\n")
    assert out.count("\n") == 0 and out.startswith("kb-ai: ") and len(out.encode()) <= 300
    named = re.findall(r'"([^"]+)" \((wiki/[^)]+\.md)\)', out)
    assert 1 <= len(named) <= 3
    titles = {p: t for p, t, _ in [*LESSONS, *many]}
    assert all(titles[path] == title for title, path in named)  # real pages, real titles
    assert "workflow" not in out  # titles only: no article text
    nothing = agent_hook("prompt", stdin=json.dumps({"prompt": "zzzz qqqq", "cwd": str(kb.root)}))
    assert nothing.returncode == 0 and nothing.stdout == ""
    long_titles = make_kb(
        tmp_path / "long",
        [(f"wiki/howto/d{i}.md", "Deploy " + "very " * 40 + f"long {i}", "x.") for i in range(3)],
    )
    with closing(open_state(long_titles)) as conn:
        refresh_search_index(long_titles, conn)
    cut = run_hook("prompt", json.dumps({"prompt": "deploy long", "cwd": str(long_titles.root)}),
                   agent="codex", prompt=prompt_hint)  # fmt: skip
    assert 0 < len(cut.encode()) <= 300 and "wiki/howto/d" in cut


@needs_shared_data("transcripts", "claude_code")
def test_a_finished_session_is_compiled_in_the_background(tmp_path, fake_model):
    kb = make_kb(tmp_path / "kb")
    from compiler.sources import source_from_text
    from kb_ai.errors import SourceError

    def has_conversation(path):
        try:
            source_from_text("t", "", path.read_text(), chunk_chars=10**6, max_bytes=10**8)
        except SourceError:
            return False
        return True

    transcript = next(
        p
        for p in sorted(TRANSCRIPTS.glob("*.jsonl"), key=lambda p: p.stat().st_size)
        if has_conversation(p)
    )
    event = json.dumps(
        {
            "session_id": "real-1",
            "transcript_path": str(transcript),
            "cwd": str(kb.root),
            "hook_event_name": "SessionEnd",
        }
    )
    result = agent_hook("session-end", "--agent", "claude-code", stdin=event)
    assert result.returncode == 0 and result.stdout == ""
    deadline = time.monotonic() + 120
    state = None
    while time.monotonic() < deadline:
        with closing(open_state(kb)) as conn:
            tasks = TaskQueue(kb, conn).list()
        state = tasks[0]["state"] if tasks else None
        if state in ("done", "failed"):
            break
        time.sleep(0.3)
    with closing(open_state(kb)) as conn:
        assert state == "done", TaskQueue(kb, conn).list()[0]["error"]
    assert list((kb.root / "raw").glob("*.md"))
    assert list((kb.root / "wiki").rglob("*.md"))


SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ]
    },
}


def test_install_then_uninstall_gives_back_the_users_file_byte_for_byte(tmp_path):
    project = tmp_path / "project"
    for agent in ("claude-code", "codex"):
        path = settings_path(agent, project)
        path.parent.mkdir(parents=True, exist_ok=True)
        original = json.dumps(SETTINGS, indent=4, sort_keys=True).encode()  # not our layout
        path.write_bytes(original)
        added = install(agent, path, prompt_hint=True)
        assert "SessionStart" in added and "UserPromptSubmit" in added
        assert install(agent, path) == []  # idempotent
        data = json.loads(path.read_text())
        assert data["permissions"] == SETTINGS["permissions"]
        assert data["hooks"]["SessionStart"][0] == SETTINGS["hooks"]["SessionStart"][0]
        assert set(installed_events(path)) >= {"SessionStart", "PreCompact"}
        assert uninstall(path) >= 3
        assert path.read_bytes() == original
        assert installed_events(path) == []


def test_reinstalling_moves_an_earlier_python_capture_hook_to_the_shell_one(tmp_path):
    from kb_ai.hooks.run import shell_hook_usable

    if not shell_hook_usable():
        pytest.skip("no POSIX /bin/sh here")
    path = settings_path("codex", tmp_path)
    path.parent.mkdir(parents=True)
    original = json.dumps(SETTINGS).encode()
    path.write_bytes(original)
    install("codex", path)
    data = json.loads(path.read_text())
    old = f"{sys.executable} -P -m kb_ai.hooks session-end --agent codex"
    data["hooks"]["Stop"][0]["hooks"][0]["command"] = old  # as an earlier version wrote it
    path.write_text(json.dumps(data))
    assert install("codex", path) == ["Stop"]
    hooks = json.loads(path.read_text())["hooks"]
    assert "kb-ai-hook.sh --python" in hooks["Stop"][0]["hooks"][0]["command"]
    assert len(hooks["Stop"]) == 1  # replaced, not added
    assert install("codex", path) == []
    uninstall(path)
    assert path.read_bytes() == original


def test_uninstall_removes_the_file_and_folder_install_created(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    path = settings_path("claude-code", project)
    assert path == project / ".claude" / "settings.local.json"  # per user by default
    install("claude-code", path)
    assert path.is_file()
    uninstall(path)
    assert not path.exists() and not (project / ".claude").exists()


def test_the_users_own_changes_survive_uninstall(tmp_path):
    path = settings_path("claude-code", tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(SETTINGS))
    install("claude-code", path)
    data = json.loads(path.read_text())
    data["model"] = "opus"  # the user edits the file meanwhile
    path.write_text(json.dumps(data))
    uninstall(path)
    assert json.loads(path.read_text()) == {**SETTINGS, "model": "opus"}


def test_hooks_install_cli_writes_a_marker_and_status_reports_it(tmp_path):
    kb = make_kb(tmp_path / "kb")
    project = tmp_path / "project"
    project.mkdir()
    result = hook(
        "--kb", str(kb.root), "hooks", "install", "--agent", "claude-code",
        "--project", str(project), "--mcp",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert find_kb(project, {}) == kb.root
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    # the capture hook is the POSIX sh script (it starts no Python); the snapshot is Python's
    assert command.startswith("/bin/sh ") and "kb-ai-hook.sh --python " in command
    assert f"{sys.executable} session-end --agent claude-code" in command
    start = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert start.startswith(sys.executable) and "-m kb_ai.hooks session-start" in start
    # no model for this KB: install says so plainly, and where the settings must be
    assert "Captures would fail" in result.stdout and "kb-ai.toml" in result.stdout
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["kb-ai"]["args"][-2:] == ["--kb", str(kb.root)]
    status = hook("hooks", "status", "--project", str(project))
    assert "SessionStart" in status.stdout and str(kb.root) in status.stdout
    assert "Captured sessions: 0 waiting" in status.stdout, status.stderr
    bad = hook("hooks", "install", "--agent", "claude-code", "--project", str(tmp_path / "nokb"))
    assert bad.returncode == 2 and "No knowledge base" in bad.stderr
    removed = hook("hooks", "uninstall", "--agent", "claude-code", "--project", str(project))
    assert removed.returncode == 0, removed.stderr
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()
    assert not (project / ".kb-ai").exists()  # the marker install wrote goes too


def test_shared_install_writes_the_team_file_with_commands_from_path(tmp_path):
    kb = make_kb(tmp_path / "project" / "kb")
    project = tmp_path / "project"
    result = hook(
        "--kb", str(kb.root), "hooks", "install", "--agent", "claude-code",
        "--project", str(project), "--shared", "--mcp", "--no-check",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = (project / ".claude" / "settings.json").read_text()
    assert str(tmp_path) not in text and sys.executable not in text  # nothing machine-specific
    assert "kb-ai-hook session-end --agent claude-code" in text
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["kb-ai"]
    assert server == {"command": "kb-ai", "args": ["mcp", "--kb", "kb"]}
    mine = hook(
        "--kb", str(kb.root), "hooks", "install", "--agent", "claude-code",
        "--project", str(project), "--no-check",
    )  # fmt: skip
    assert (
        "captured twice" in mine.stdout and "uninstall --agent claude-code --shared" in mine.stdout
    )


def test_install_writes_nothing_when_it_refuses(tmp_path):
    kb = make_kb(tmp_path / "kb")
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    broken = b'{"hooks": [1, 2'
    (project / ".claude" / "settings.local.json").write_bytes(broken)
    result = hook(
        "--kb", str(kb.root), "hooks", "install", "--agent", "claude-code",
        "--project", str(project), "--no-check",
    )  # fmt: skip
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert not (project / ".kb-ai").exists()  # no marker either
    assert (project / ".claude" / "settings.local.json").read_bytes() == broken


def test_uninstall_takes_back_the_marker_once_no_agent_needs_it(tmp_path):
    kb = make_kb(tmp_path / "kb")
    project = tmp_path / "project"
    project.mkdir()
    args = ["--kb", str(kb.root), "hooks", "install", "--project", str(project), "--no-check"]
    for agent in ("claude-code", "codex"):
        assert hook(*args, "--agent", agent).returncode == 0
    assert find_kb(project, {}) == kb.root
    one = hook("hooks", "uninstall", "--agent", "claude-code", "--project", str(project))
    assert one.returncode == 0, one.stderr
    assert find_kb(project, {}) == kb.root  # Codex's hooks still find the KB through it
    other = hook("hooks", "uninstall", "--agent", "codex", "--project", str(project))
    assert other.returncode == 0 and f"Removed {project / '.kb-ai'}" in other.stdout
    assert os.listdir(project) == []  # nothing install wrote is left behind
    # a marker of the user's that install replaced comes back byte for byte
    theirs = b'kb = "/somewhere/else"   # my old KB\r\n'
    (project / ".kb-ai").write_bytes(theirs)
    assert hook(*args, "--agent", "codex").returncode == 0
    assert find_kb(project, {}) == kb.root
    assert hook("hooks", "uninstall", "--agent", "codex", "--project", str(project)).returncode == 0
    assert (project / ".kb-ai").read_bytes() == theirs
    # a marker the user changed after install is theirs: kept
    (project / ".kb-ai").unlink()
    assert hook(*args, "--agent", "codex").returncode == 0
    edited = (project / ".kb-ai").read_text() + "# reviewed\n"
    (project / ".kb-ai").write_text(edited)
    kept = hook("hooks", "uninstall", "--agent", "codex", "--project", str(project))
    assert "Kept" in kept.stdout and (project / ".kb-ai").read_text() == edited


def test_status_and_retry_honour_kb_and_show_why_a_capture_failed(tmp_path):
    kb = make_kb(tmp_path / "kb")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    event = {
        "session_id": "gone-1",
        "transcript_path": str(tmp_path / "missing.jsonl"),
        "cwd": str(elsewhere),
        "hook_event_name": "SessionEnd",
    }
    from kb_ai.hooks import spool

    spool.append(kb.state_dir, spool.make_record(event, "claude-code", str(elsewhere)))
    drained = hook("--kb", str(kb.root), "worker", "--drain", cwd=elsewhere)
    assert drained.returncode == 0, drained.stderr
    status = hook("--kb", str(kb.root), "hooks", "status", cwd=elsewhere)
    assert status.returncode == 0, status.stderr
    assert "1 failed" in status.stdout and "missing.jsonl" in status.stdout
    assert "No such file" in status.stdout
    retry = hook("--kb", str(kb.root), "hooks", "retry", cwd=elsewhere)
    assert retry.returncode == 0 and "1 capture(s)" in retry.stdout


def test_codex_install_with_mcp_adds_one_server_block_and_uninstall_takes_it_out(tmp_path):
    kb = make_kb(tmp_path / "kb")
    project = tmp_path / "project"
    config = project / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('model = "o3"\n')
    args = ["--kb", str(kb.root), "hooks", "install", "--agent", "codex"]
    for _ in range(2):  # idempotent
        result = hook(*args, "--project", str(project), "--mcp", "--no-check")
        assert result.returncode == 0, result.stderr
    import tomllib

    data = tomllib.loads(config.read_text())
    assert data["model"] == "o3"
    assert data["mcp_servers"]["kb-ai"]["args"][-2:] == ["--kb", str(kb.root)]
    result = hook("hooks", "uninstall", "--agent", "codex", "--project", str(project))
    assert result.returncode == 0, result.stderr
    assert config.read_text() == 'model = "o3"\n'


def test_install_checks_the_model_sessions_will_be_compiled_with(tmp_path):
    from tests.fakes.openai_server import FakeOpenAIServer, Reply

    kb = make_kb(tmp_path / "kb")
    project = tmp_path / "project"
    project.mkdir()
    answers = {"down": False}

    def model(request):
        return Reply(status=503) if answers["down"] else Reply('{"answer": "yes"}')

    with FakeOpenAIServer(model) as server:
        with kb.config_path.open("a") as f:
            f.write(f'\nmodel = "openai/fake"\napi_base = "{server.base_url}"\napi_key = "sk"\n')
        args = ["--kb", str(kb.root), "hooks", "install", "--agent", "codex", "--project"]
        ok = hook(*args, str(project))
        assert ok.returncode == 0, ok.stderr
        assert "It answers" in ok.stdout and "Captures would fail" not in ok.stdout
        assert "IDE" not in ok.stdout  # the model is in kb-ai.toml, where hooks find it
        answers["down"] = True
        down = hook(*args, str(project))
        assert down.returncode == 0, down.stderr
        assert "Captures would fail now" in down.stdout and "kb-ai hooks retry" in down.stdout
