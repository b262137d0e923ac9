"""The prompt hint of the shell hook (kb_ai/hooks/kb-ai-hook.sh with hint.awk, over the
hint file kb_ai/hooks/hintfile.py writes): the same line as the Python hint for ASCII
prompts, the Python hook where it cannot answer the same way, nothing on any fault."""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from kb_ai.hooks.hintfile import current, is_fresh, write_hint
from kb_ai.hooks.run import POSIX_SH, SHELL_HOOK, shell_hook_usable
from tests.conftest import needs_shared_data, shared_data
from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article, write_indexes
from wiki.indexing import refresh_search_index
from wiki.slugs import slugify

pytestmark = pytest.mark.skipif(not shell_hook_usable(), reason="no POSIX /bin/sh here")
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
ADR = shared_data("adr_govuk")
AWK = SHELL_HOOK.with_name("hint.awk")
NO_PYTHON = "/nonexistent/python"  # the shell hook's fallback then prints nothing


def shell(event, cwd, *, python=sys.executable, agent="claude-code", extra=(), env=None):
    return subprocess.run(
        [POSIX_SH, str(SHELL_HOOK), "--python", python, "prompt", "--agent", agent, *extra],
        input=event if isinstance(event, str) else json.dumps(event),
        capture_output=True,
        text=True,
        env=env or ENV,
        cwd=cwd,
        timeout=60,
    )


def python(event, cwd, *, agent="claude-code"):
    return subprocess.run(
        [sys.executable, "-P", "-m", "kb_ai.hooks", "prompt", "--agent", agent],
        input=event if isinstance(event, str) else json.dumps(event),
        capture_output=True,
        text=True,
        env=ENV,
        cwd=cwd,
        timeout=60,
    )


def adr_kb(root: Path) -> tuple[KnowledgeBase, list[str]]:
    """The real decision records, one article each, indexed by the real search index."""
    kb = KnowledgeBase.init(root)
    titles = []
    for path in sorted(ADR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), path.stem)
        body = text.split("\n", 1)[-1]
        summary = " ".join(body.split())[:180]
        write_article(kb, Article(f"wiki/decision/{slugify(title)}.md", title, "decision",
                                  summary, [], [], "2026-01-01", "2026-01-01", body))  # fmt: skip
        titles.append(title)
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    return kb, titles


def wait_fresh(root: Path, seconds: float = 60.0) -> bool:
    """Whether the hint file the Python hook started writing (in a process of its own)
    is there and fresh within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not is_fresh(root):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _deploy_kb(tmp_path: Path) -> KnowledgeBase:
    """A knowledge base of one article, "Deploy from main", indexed for search."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    body = "Deploys go out from main."
    write_article(kb, Article("wiki/howto/d.md", "Deploy from main", "howto", body, [], [],
                              "2026-01-01", "2026-01-01", body))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    return kb


def fresh_hint(kb: KnowledgeBase) -> Path:
    """A hint file made after every source was written (their times a little older)."""
    time.sleep(0.1)
    gen = write_hint(kb.root)
    assert gen is not None and is_fresh(kb.root)
    return gen


@pytest.fixture(scope="module")
def adr(tmp_path_factory):
    if not ADR.is_dir():
        pytest.skip(f"{ADR} is not here")
    kb, titles = adr_kb(tmp_path_factory.mktemp("adr") / "kb")
    fresh_hint(kb)
    return kb, titles


def prompts_of(titles: list[str]) -> list[str]:
    """Questions an agent's user might type: from each record's title words, alone, in
    pairs across records, with JSON escapes and punctuation."""
    words = [re.findall(r"[A-Za-z][A-Za-z0-9]+", t) for t in titles]
    out = [f"how did we decide about {' '.join(w[:3]).lower()}?" for w in words]
    out += [
        f"Why {' '.join(a[-2:])} and not {' '.join(b[:2])}?"
        for a, b in zip(words, words[1:], strict=False)
    ]
    out += [f'Is "{w[0]}" still\n\tthe rule (see {w[-1]}s)?' for w in words if w]
    return out


@needs_shared_data("adr_govuk")
def test_the_shell_hint_names_the_same_pages_as_the_python_hint(adr):
    kb, titles = adr
    prompts = prompts_of(titles)
    named = 0
    for prompt in prompts:
        event = {"session_id": "s", "cwd": str(kb.root), "prompt": prompt}
        by_awk = shell(event, kb.root, python=NO_PYTHON)  # no Python to hand over to
        by_python = python(event, kb.root)
        assert by_awk.returncode == 0 and by_awk.stderr == ""
        assert by_awk.stdout == by_python.stdout, prompt
        named += by_awk.stdout != ""
    assert named >= len(prompts) * 0.9  # the hints were given, not left out


@needs_shared_data("adr_govuk")
def test_escapes_stop_words_and_long_prompts_are_read_as_python_reads_them(adr):
    kb, titles = adr
    word = re.findall(r"[A-Za-z]{5,}", titles[3])[0]
    cases = [
        f"{word[:2]}\\u00{ord(word[2]):x}{word[3:]} please",  # an escaped letter inside a word
        f"{word}\\\\nothing",  # an escaped backslash, then the letter n
        "what is this and why would they",  # stop words only: no hint
        "x" * 1990 + f" {word}",  # the word starts before the 2,000th character ...
        "x" * 1995 + f" {word}",  # ... or is cut there
        " ".join(f"zz{i:02d}q" for i in range(16)) + f" {word}",  # past the 16 terms
        f"{word.upper()} 42{word}",
    ]
    for prompt in cases:
        cwd = json.dumps(str(kb.root))
        raw = f'{{"cwd": {cwd}, "prompt": "{prompt}", "n": [1, {{"a": null}}]}}'
        by_awk = shell(raw, kb.root, python=NO_PYTHON)
        assert by_awk.stdout == python(raw, kb.root).stdout, prompt[-40:]
    hinted = shell({"cwd": str(kb.root), "prompt": f"{word} {word}"}, kb.root, python=NO_PYTHON)
    assert word.lower() in hinted.stdout.lower() or "wiki/decision/" in hinted.stdout


@needs_shared_data("adr_govuk")
def test_what_awk_cannot_answer_goes_to_the_python_hook(adr, tmp_path):
    kb, titles = adr
    prompt = f"how did we decide about {titles[0].lower()}?"
    ours = {"cwd": str(kb.root), "prompt": prompt}
    expected = python(ours, kb.root).stdout
    assert expected
    other_dir = tmp_path / "elsewhere"
    other_dir.mkdir()
    handed_over = [
        {**ours, "prompt": prompt + " 部署"},  # Chinese: the Python hint cuts it in pairs
        {**ours, "prompt": prompt + " caf\u00e9"},  # any letter beyond ASCII
        {**ours, "cwd": str(other_dir)},  # another directory: Python looks from there
    ]
    for event in handed_over:
        assert shell(event, kb.root, python=NO_PYTHON).stdout == ""  # awk left it alone ...
        by_shell = shell(event, kb.root)
        assert by_shell.returncode == 0
        assert by_shell.stdout == python(event, kb.root).stdout  # ... and Python answered
    assert "部署" not in shell(handed_over[0], kb.root).stdout
    # an agent the shell does not know: the Python hook's usage, exit 0
    odd = shell(ours, kb.root, agent="cursor")
    assert odd.returncode == 0 and odd.stdout == "" and "usage" in odd.stderr


def test_a_stale_or_missing_hint_file_goes_to_python_which_writes_it_again(tmp_path):
    kb = KnowledgeBase.init(tmp_path / "kb")
    for i, (title, body) in enumerate(
        [("Deploy from main", "Deploys go out from main."), ("Jobs table", "Jobs in Postgres.")]
    ):
        write_article(kb, Article(f"wiki/howto/a{i}.md", title, "howto", body, [], [],
                                  "2026-01-01", "2026-01-01", body))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    event = {"cwd": str(kb.root), "prompt": "how do deploys work?"}
    assert current(kb.root) is None
    assert shell(event, kb.root, python=NO_PYTHON).stdout == ""  # none yet: Python's turn
    python(event, kb.root)
    time.sleep(0.5)
    assert current(kb.root) is None  # the Python hook alone (the team file's) writes none
    first = shell(event, kb.root)
    assert '"Deploy from main" (wiki/howto/a0.md)' in first.stdout
    assert wait_fresh(kb.root)  # the Python hook started its writing after answering
    time.sleep(0.1)
    # a changed article: the search index changes, and with it the hint's answer
    body = "Deploys are made by the release train. Jobs run there."
    write_article(kb, Article("wiki/howto/a1.md", "Release train", "howto", body, [], [],
                              "2026-01-01", "2026-01-01", body))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn, ["wiki/howto/a1.md"])
    assert not is_fresh(kb.root)
    assert shell(event, kb.root, python=NO_PYTHON).stdout == ""  # stale: not awk's to answer
    again = shell(event, kb.root)
    assert again.stdout == python(event, kb.root).stdout and "Release train" in again.stdout
    assert wait_fresh(kb.root)
    assert shell(event, kb.root, python=NO_PYTHON).stdout == again.stdout  # awk's again


def test_every_fault_gives_no_hint_and_exit_0(tmp_path):
    kb = _deploy_kb(tmp_path)
    gen = fresh_hint(kb)
    event = {"cwd": str(kb.root), "prompt": "deploy from main"}
    assert "wiki/howto/d.md" in shell(event, kb.root, python=NO_PYTHON).stdout
    for bad in ("", "not json", '{"prompt": "deploy"', '{"prompt": "deploy", }', "[1]",
                '{"prompt": "deploy\\x"}', '{"prompt": tru}', "\x00\x01"):  # fmt: skip
        done = shell(bad, kb.root)
        assert (done.returncode, done.stdout) == (0, ""), bad
    (gen / "meta").write_text("broken\n")  # a hint file of another shape
    os.utime(gen / "meta")  # still newer than its sources
    done = shell(event, kb.root)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    shutil.rmtree(gen / "t")
    (gen / "t").write_text("not a folder")
    assert (shell(event, kb.root).returncode, shell(event, kb.root).stdout) == (0, "")
    # no awk on the PATH: the event is still unread, and the Python hook answers
    fresh_hint(kb)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("head", "cat", "sync", "mv", "rm", "mkdir"):
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    no_awk = shell(event, kb.root, env={**ENV, "PATH": str(bin_dir)})
    assert no_awk.returncode == 0 and "wiki/howto/d.md" in no_awk.stdout


def test_awk_stems_every_word_as_sqlite_does():
    """The porter stemmer of hint.awk against FTS5's own, over the words of the shared
    data (where present) and invented ones that exercise each rule."""
    words = {
        "caresses", "ponies", "ties", "feed", "agreed", "plastered", "motoring", "sing",
        "conflated", "troubled", "sized", "hopping", "tanned", "falling", "hissing",
        "fizzed", "failing", "filing", "happy", "sky", "relational", "conditional",
        "valenci", "hesitanci", "digitizer", "conformabli", "radicalli", "differentli",
        "vileli", "analogousli", "vietnamization", "predication", "operator", "feudalism",
        "decisiveness", "hopefulness", "callousness", "formaliti", "sensitiviti",
        "sensibiliti", "triplicate", "formative", "formalize", "electriciti", "electrical",
        "hopeful", "goodness", "revival", "allowance", "inference", "airliner", "gyroscopic",
        "adjustable", "defensible", "irritant", "replacement", "adjustment", "dependent",
        "adoption", "homologou", "communism", "activate", "angulariti", "homologous",
        "effective", "bowdlerize", "probate", "rate", "cease", "controll", "roll", "gpt4o",
        "abc123ing", "yyy", "eed", "ied", "eing", "xyzzies", "a" * 70,
    }  # fmt: skip
    for path in [*shared_data("adr_govuk").glob("*.md"), *shared_data("musique50").glob("*")]:
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="ignore").lower()
            words.update(w for w in re.findall(r"[a-z0-9]+", text) if len(w) >= 3)
    words = sorted(words)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(x, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO f (rowid, x) VALUES (?, ?)", enumerate(words, 1))
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
    sqlite = {doc: term for term, doc in conn.execute("SELECT term, doc FROM v")}
    for awk in {"awk", *(a for a in ("mawk", "gawk", "original-awk", "nawk") if shutil.which(a))}:
        done = subprocess.run(
            [awk, "-v", "stem_only=1", "-f", str(AWK)],
            input="\n".join(words) + "\n",
            capture_output=True,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
            check=True,
        )
        stems = done.stdout.split("\n")[:-1]
        assert len(stems) == len(words), awk
        wrong = [
            (w, sqlite[i], s)
            for i, (w, s) in enumerate(zip(words, stems, strict=True), 1)
            if sqlite[i] != s
        ]
        assert wrong == [], (awk, wrong[:10])


def test_install_writes_the_shell_prompt_hook_and_it_answers_as_the_agent_runs_it(tmp_path):
    from kb_ai.cli.agent_hooks.install import install, settings_path

    kb = _deploy_kb(tmp_path)
    for agent in ("claude-code", "codex"):
        path = settings_path(agent, kb.root)
        path.parent.mkdir(parents=True, exist_ok=True)
        install(agent, path, prompt_hint=True)
        [entry] = json.loads(path.read_text())["hooks"]["UserPromptSubmit"]
        command = entry["hooks"][0]["command"]
        assert command.startswith(f"{POSIX_SH} ") and "kb-ai-hook.sh" in command
        event = json.dumps({"cwd": str(kb.root), "prompt": "how do we deploy?"})
        runs = [
            subprocess.run(
                command,
                shell=True,
                input=event,
                capture_output=True,
                text=True,
                env=ENV,
                cwd=kb.root,
                timeout=60,
            )  # fmt: skip
            for _ in range(2)  # the first through Python (no hint file yet), then awk
        ]
        assert [r.returncode for r in runs] == [0, 0]
        assert runs[0].stdout == runs[1].stdout == python(event, kb.root, agent=agent).stdout
        assert '"Deploy from main" (wiki/howto/d.md)' in runs[1].stdout
        assert is_fresh(kb.root)


def test_a_compile_brings_a_used_hint_file_up_to_date(tmp_path):
    """The index stage of a compile starts the hint file's writer (a process of its own)
    where a hint file is used: the new article is in the shell hook's answer soon after,
    and a knowledge base without a hint file gets none."""
    from compiler.record import update_search

    kb = _deploy_kb(tmp_path)
    before = fresh_hint(kb)
    article = Article("wiki/howto/rollback.md", "Roll back a release", "howto",
                      "Rollbacks redeploy the tag before.", [], [], "2026-01-02",
                      "2026-01-02", "Rollbacks redeploy the tag before.")  # fmt: skip
    write_article(kb, article)
    write_indexes(kb, build_catalog(kb))
    update_search(kb, {article.path: article})
    deadline = time.monotonic() + 60
    while current(kb.root) in (None, before) and time.monotonic() < deadline:
        time.sleep(0.05)  # the writer the compile started, in a process of its own
    assert current(kb.root) not in (None, before), "the compile wrote no new hint"
    event = {"cwd": str(kb.root), "prompt": "how do we roll back a release"}
    # (a writer that started within 50 ms of the change leaves it stale by design: the
    # first prompt then goes to Python, which writes it once more)
    assert "wiki/howto/rollback.md" in shell(event, kb.root).stdout
    assert wait_fresh(kb.root)
    assert "wiki/howto/rollback.md" in shell(event, kb.root, python=NO_PYTHON).stdout
    bare = _deploy_kb(tmp_path / "bare")
    update_search(bare, {})
    time.sleep(0.5)
    assert not (bare.root / ".kb-ai" / "hint").exists()
