"""bench/identity/hand_edits: 50 hand edits, then a revision of each edited article's
source: how many of the person's lines are lost without a review (target 0).

75 held-out sources of bench/identity/run.py's corpus compiled (the real pipeline;
tests/fakes' stand-in model over real HTTP on loopback, OpenAI wire format, through
litellm). 50 of the articles written from one source each are then edited by a
person ("Ann Example", one commit each), five ways in turn:

- a sentence added at the end;
- a paragraph added after the article's first one;
- a word changed in a line away from what the revision changes;
- a sentence added that states the value the revision changes (the revised source
  now says otherwise: a contradiction kb-ai must hold for review);
- the very line the revision changes, edited too (an overlap: held for review).

Each source is then revised (one value of the line its article states changed, so
the article must change there) and compiled again: the first half from its folder,
the second half from another folder under the same file name (identity's way).

Counted per person's line (each line the person added or changed), on main after the
second compile: kept word for word, merged with kb-ai's update; kept on main while
kb-ai's update waits on a review branch; lost without a review (not on main, and no
pending review holds the article). And whether kb-ai's update reached each article.

    python -m bench.identity.hand_edits [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import re
import sys
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

from bench._common import REPO, load_average, machine
from bench.identity.run import corpus
from compiler import Compiler
from compiler.review import list_reviews
from kb_ai.settings import load_settings
from tests.fakes.kb_responder import respond
from tests.fakes.openai_server import FakeOpenAIServer
from wiki import KnowledgeBase, all_sources, git, list_articles, open_state, read_article

KINDS = ("sentence at the end", "paragraph after the first", "word changed elsewhere",
         "sentence stating the revised value", "the revised line edited")  # fmt: skip
ANN = ("-c", "user.name=Ann Example", "-c", "user.email=ann@example.com")
# a number as kb-ai reads one (compiler/hand_edits.py): "1.299" and "2011-05-03" are one
# number each, never "1" or "2011"; only whole integers are picked to revise
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/-]\d+)*(?![\w])")


def body_lines(text: str) -> list[int]:
    """Indexes of the lines of an article file's body a person might edit (prose, not
    its frontmatter, headings or blank lines)."""
    lines = text.splitlines()
    end = lines.index("---", 1) if lines and lines[0] == "---" else -1
    return [
        i
        for i, line in enumerate(lines)
        if i > end and line.strip() and not line.lstrip().startswith(("#", "---"))
    ]


def pick_value(text: str, source: str) -> tuple[int, str] | None:
    """A line of the article stating a number its source states (line index, number)."""
    lines = text.splitlines()
    for i in body_lines(text):
        for m in _NUMBER.finditer(lines[i]):
            if m.group().isdigit() and m.group() in _NUMBER.findall(source):
                return i, m.group()
    return None


def revise_value(source: str, value: str) -> str:
    """``source`` with every whole ``value`` (as a number of its own) 5 higher."""
    new = str(int(value) + 5)
    return _NUMBER.sub(lambda m: new if m.group() == value else m.group(), source)


def edit(text: str, kind: str, k: int, at: int, value: str) -> str:
    """``text`` as the person leaves it (see the module's docstring)."""
    lines = text.splitlines()
    mine = f"Ann's note {k}: ask the platform team in #ops before relying on this page."
    if kind == "sentence at the end":
        lines += ["", mine]
    elif kind == "paragraph after the first":
        first = body_lines(text)[0]
        lines[first + 1 : first + 1] = ["", mine]
    elif kind == "word changed elsewhere":
        far = [i for i in body_lines(text) if abs(i - at) > 3]
        if not far:
            lines += ["", mine]
        else:
            i = far[-1]
            words = lines[i].split(" ")
            j = max(range(len(words)), key=lambda n: len(words[n]))
            words[j] = words[j] + " (sic)"
            lines[i] = " ".join(words)
    elif kind == "sentence stating the revised value":
        lines += [
            "",
            f"Ann checked it by hand (note {k}): the figure is {value}, as written above.",
        ]
    else:  # the revised line edited
        lines[at] = lines[at].rstrip() + f" (Ann, note {k}: confirmed on the phone)"
    return "\n".join(lines) + "\n"


def person_lines(before: str, after: str) -> list[str]:
    a, b = before.splitlines(), after.splitlines()
    out = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("insert", "replace"):
            out += [line for line in b[j1:j2] if line.strip()]
    return out


async def run(root: Path, sources: int = 75, edits: int = 50) -> dict:
    kb = KnowledgeBase.init(root / "kb")
    docs = corpus("held-out")[:sources]
    notes = root / "notes"
    notes.mkdir()
    for name, text in docs:
        (notes / name).write_text(text, encoding="utf-8")
    with FakeOpenAIServer(respond) as server:
        settings = load_settings(kb.root, {"model": "openai/fake-model",
                                           "api_base": server.base_url, "api_key": "sk-test",
                                           "retry_backoff": 0.01}, environ={})  # fmt: skip
        first = await Compiler(kb, settings).compile_paths([notes])
        by_name = {name: text for name, text in docs}
        with closing(open_state(kb)) as conn:
            origin_of = {row["raw_path"]: o for o, row in all_sources(conn).items()}
        plan = []  # (article path, file name, kind, person's lines, revised value)
        for path in list_articles(kb):
            article = read_article(kb, path)
            if len(article.sources) != 1 or len(plan) == edits:
                continue
            name = Path(origin_of.get(article.sources[0], "")).name
            text = kb.resolve(path).read_text(encoding="utf-8")
            found = pick_value(text, by_name.get(name, ""))
            if found is None:
                continue
            at, value = found
            kind = KINDS[len(plan) % len(KINDS)]
            edited = edit(text, kind, len(plan), at, value)
            kb.resolve(path).write_text(edited, encoding="utf-8")
            git(kb, *ANN, "commit", "-q", "-m", f"Ann's edit of {path}", "--", path)
            plan.append((path, name, kind, person_lines(text, edited), value))
        # the revisions: half in place, half from another folder under the same name
        elsewhere = root / "elsewhere"
        elsewhere.mkdir()
        moved = []
        for i, (_, name, _, _, value) in enumerate(plan):
            revised = revise_value(by_name[name], value)
            if i < len(plan) // 2:
                (notes / name).write_text(revised, encoding="utf-8")
            else:
                (elsewhere / name).write_text(revised, encoding="utf-8")
                moved.append(elsewhere / name)
        started = time.monotonic()
        in_place = await Compiler(kb, settings).compile_paths([notes])
        other = await Compiler(kb, settings).compile_paths(moved)
        seconds = time.monotonic() - started
    held = set(in_place.held + other.held)
    waiting = {p for r in list_reviews(kb) for p in _review_paths(kb, r)}
    counts: Counter = Counter()
    by_kind: dict[str, Counter] = {k: Counter() for k in KINDS}
    lost_examples = []
    unheld = []  # a person's sentence stating a value the revision changed, merged
    for path, _, kind, mine, value in plan:
        shown = git(kb, "show", f"HEAD:{path}") if _on_main(kb, path) else ""
        new = str(int(value) + 5)
        updated = new in _NUMBER.findall(shown)
        for line in mine:
            if line in shown.splitlines():
                outcome = "held for review" if path in held and path in waiting else "merged"
            elif path in waiting:
                outcome = "held for review"
            else:
                outcome = "lost without a review"
                lost_examples.append((path, line))
            counts[outcome] += 1
            by_kind[kind][outcome] += 1
            if kind == KINDS[3] and outcome == "merged":  # the old value, merged beside the new
                unheld.append(f"{path} ({value} -> {new})")
        counts["articles updated with the revision"] += path not in held and updated
        counts["articles held for review"] += path in held
    return {
        "sources compiled first": len(first.compiled),
        "hand edits (one commit each)": len(plan),
        "person's lines": sum(len(p[3]) for p in plan),
        "kept word for word, merged with kb-ai's update": counts["merged"],
        "kept on main, kb-ai's update waiting for review": counts["held for review"],
        "lost without a review": counts["lost without a review"],
        "articles updated with the revision (value changed)": counts[
            "articles updated with the revision"
        ],
        "articles held for review": counts["articles held for review"],
        "articles created by the revisions": len(in_place.created) + len(other.created),
        "failed": len(in_place.failed) + len(other.failed),
        "by kind": {k: dict(v) for k, v in by_kind.items()},
        "lost (first 5)": lost_examples[:5],
        "stating the old value, merged (not held)": unheld,
        "seconds (two compiles of the revisions, stand-in model)": round(seconds, 1),
    }


def _on_main(kb: KnowledgeBase, path: str) -> bool:
    return bool(git(kb, "ls-tree", "--name-only", "HEAD", "--", path).strip())


def _review_paths(kb: KnowledgeBase, review) -> list[str]:
    out = git(kb, "diff", "--name-only", review.base, review.commit, "--", "wiki")
    return [p for p in out.splitlines() if p.endswith(".md")]


def render(figures: dict) -> str:
    m = machine()
    rows = [f"| {k} | {v} |" for k, v in figures.items() if not isinstance(v, (dict, list))]
    kinds = [
        f"| {k} | {v.get('merged', 0)} | {v.get('held for review', 0)} "
        f"| {v.get('lost without a review', 0)} |"
        for k, v in figures["by kind"].items()
    ]
    return "\n".join(
        [
            "## Hand edits, then a revision of their sources",
            "",
            "`python -m bench.identity.hand_edits --write` (bench/identity/hand_edits.py): "
            f"{m['cores']} cores, Python {m['python']}, load average {load_average():.1f} "
            "(a shared machine); the stand-in model over HTTP on loopback.",
            "",
            "| figure | value |",
            "|---|---|",
            *rows,
            "",
            "Person's lines by kind of edit:",
            "",
            "| edit | merged | held for review | lost without a review |",
            "|---|---|---|---|",
            *kinds,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = asyncio.run(run(Path(tmp)))
    print(json.dumps(figures, indent=1))
    if args.write:
        page = REPO / "docs" / "benchmarks-identity.md"
        text = page.read_text(encoding="utf-8")
        section = render(figures)
        head = "## Hand edits, then a revision of their sources"
        if head in text:
            before, _, after = text.partition(head)
            rest = after.split("\n## ", 1)
            text = before + section + ("\n## " + rest[1] if len(rest) > 1 else "")
        else:
            text = text.rstrip("\n") + "\n\n" + section
        page.write_text(text, encoding="utf-8")
        print(f"wrote {page}")


if __name__ == "__main__":
    sys.exit(main())
