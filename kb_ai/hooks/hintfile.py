"""The prompt hint precomputed, for the shell hook (kb_ai/hooks/kb-ai-hook.sh with
kb_ai/hooks/hint.awk), which answers a prompt with one awk run and no Python at all.

The Python hint (kb_ai/hooks/hint.py) asks SQLite for bm25 over the search index. For a
query that is an OR of single words, FTS5's bm25 of an article is a sum over the words
of a part that depends on that word and that article only (how often the word occurs in
each column, weighted; the article's length; how many articles have the word). So each
(stemmed word, article) part can be worked out here once, by FTS5's own formula over
its own counts (fts5vocab), and a prompt's score is the sum of a few parts read back:
the same doubles in the same order, hence the same ranking. What is written, in
``.kb-ai/hint/<generation>/`` (``.kb-ai/hint/current`` names the one to read):

- ``meta``: the hint's wording and bounds, and the stop words (from hint.py and
  kb_ai/lexicon.py: the awk program holds no copy);
- ``docs``: each article as ``scope id offered item``: scope 0 the project, 1.. each
  ``also`` knowledge base in order; ids in path order within a scope (so a tie is
  broken by path, as the SQL does); ``item`` the page as the hint names it, for those
  the master index lists (and, for an ``also`` page, whose title the project lacks);
- ``t/<first two letters>``: ``stem scope id whole head``, the article's bm25 part for
  the stem over whole articles and over heads, for every ASCII stem in the index;
- ``sources``: the files the hint was made from; the hint is stale once one of them
  is newer than ``meta`` (whose time is set to when the build began).

Anything the shell cannot answer the same way (a non-ASCII prompt, a stale or missing
hint) goes to the Python hook, which also writes a new hint when it finds it stale.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import sys
import time
from collections import defaultdict
from pathlib import Path

from kb_ai.hooks import hint
from kb_ai.hooks.catalog import MASTER_INDEX, index_lines, shelves
from kb_ai.lexicon import (
    BM25_B,
    BM25_K1,
    CHANGED_SUFFIX,
    COLUMNS,
    HEAD_COLUMNS,
    HEAD_WEIGHTS,
    STOP_WORDS,
    WEIGHTS,
)

#: What reading the indexes and writing the hint file can meet: a file or folder that
#: cannot be read or written, a damaged or locked database, undecodable text or JSON.
_FAULTS = (OSError, sqlite3.Error, ValueError)

HINT_DIR = Path(".kb-ai") / "hint"
CURRENT = "current"
SHELF_LIMIT = hint.MAX_PAGES  # an also knowledge base's best pages taken, as hint.py does
_ASCII_TERM = re.compile(r"[a-z0-9]+")
# the build's start, set back a little: file times come from a coarser clock
_CLOCK_SLACK_NS = 50_000_000


def sources(root: Path) -> list[Path]:
    """The files the hint depends on: settings, the recorded shelves, and per knowledge
    base its master index and its search index's change mark."""
    state = root / ".kb-ai"
    found = [
        root / "kb-ai.toml",
        state / "also" / "shelves.json",
        root / MASTER_INDEX,
        state / f"state.db{CHANGED_SUFFIX}",
    ]
    for name, shelf_root in shelves(root):
        found += [shelf_root / MASTER_INDEX, state / "also" / f"{name}.db{CHANGED_SUFFIX}"]
    return found


def current(root: Path) -> Path | None:
    """The hint generation the shell hook would read, or None."""
    base = root / HINT_DIR
    try:
        name = (base / CURRENT).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    gen = base / name
    return gen if name and "/" not in name and (gen / "meta").is_file() else None


def is_fresh(root: Path) -> bool:
    """Whether the hint file would answer as the Python hint does now: it exists and
    none of its sources changed since it was made (the shell hook's own test)."""
    gen = current(root)
    if gen is None:
        return False
    try:
        made = (gen / "meta").stat().st_mtime_ns
        listed = (gen / "sources").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    for source in listed:
        try:
            if os.stat(source).st_mtime_ns > made:
                return False
        except OSError:
            continue
    return True


def write_hint(root: Path) -> Path | None:
    """Write a new hint generation for the knowledge base at ``root`` and make it
    current; returns it, or None when it could not be written (the shell hook then
    hands prompts to the Python hook)."""
    started = time.time_ns() - _CLOCK_SLACK_NS
    base = root / HINT_DIR
    gen_name = f"{time.time_ns()}-{os.getpid()}"
    tmp = base / f".{gen_name}.tmp"
    try:
        source_list = sources(root)
        titles = {path: title for path, _, title, _ in index_lines(root)}
        own = {t.casefold() for t in titles.values()}
        scopes: list[tuple[Path, dict[str, str], str, set[str]]] = [
            (root / hint.STATE_DB, titles, "", set())
        ]
        for name, shelf_root in shelves(root):
            shelf_titles = {p: t for p, _, t, _ in index_lines(shelf_root)}
            scopes.append((root / ".kb-ai" / "also" / f"{name}.db", shelf_titles, name, own))
        (tmp / "t").mkdir(parents=True)
        buckets: dict[str, list[str]] = defaultdict(list)
        docs: list[str] = []
        for scope, (db, scope_titles, name, taken) in enumerate(scopes):
            parts, paths = _bm25_parts(db)
            for doc_id, path in enumerate(paths):
                title = scope_titles.get(path)
                offered = title is not None and title.casefold() not in taken
                shown = f"also/{name}/{path}" if name else path
                item = hint.hint_item(title, shown) if offered and title is not None else ""
                docs.append(f"{scope}\t{doc_id}\t{int(offered)}\t{item}")
            for (stem, doc_id), (whole, head) in parts.items():
                buckets[stem[:2]].append(f"{stem}\t{scope}\t{doc_id}\t{whole!r}\t{head!r}")
        for bucket, lines in buckets.items():
            (tmp / "t" / bucket).write_text("\n".join(lines) + "\n", encoding="utf-8")
        (tmp / "docs").write_text("".join(d + "\n" for d in docs), encoding="utf-8")
        (tmp / "sources").write_text("".join(f"{p}\n" for p in source_list), encoding="utf-8")
        limits = " ".join(
            str(hint.PROJECT_LIMIT if s == 0 else SHELF_LIMIT) for s in range(len(scopes))
        )
        meta = {
            "head": hint.HEAD,
            "tail": hint.TAIL,
            "max_bytes": hint.MAX_BYTES,
            "max_pages": hint.MAX_PAGES,
            "max_terms": hint.MAX_TERMS,
            "prompt_chars": hint.PROMPT_CHARS,
            "limits": limits,
            "stop": " ".join(sorted(STOP_WORDS)),
        }
        (tmp / "meta").write_text("".join(f"{k}\t{v}\n" for k, v in meta.items()), "utf-8")
        os.utime(tmp / "meta", ns=(started, started))
        gen = base / gen_name
        tmp.rename(gen)
        pointer = base / f".{CURRENT}.{gen_name}"
        pointer.write_text(gen_name + "\n", encoding="ascii")
        os.replace(pointer, base / CURRENT)
    except _FAULTS:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        return None
    _prune(base, keep={gen_name})
    return gen


def refresh(root: Path) -> None:
    """Write the hint again unless it is fresh. Never raises: the process start_writing
    starts (after a compile, or a prompt that found it stale) must not fail for it."""
    try:
        if not is_fresh(root):
            write_hint(root)
    except _FAULTS:  # the prompt hook fails open; the hint waits for the next write
        return


WRITING = ".writing"  # in .kb-ai/hint/: a writer was started this minute
WRITING_SECONDS = 60.0


def start_writing(root: Path) -> None:
    """Unless the hint is fresh, or a writer started in the last minute is still at it,
    start ``python -m kb_ai.hooks.hintfile ROOT`` detached (its own session, no output)
    to write it. Never raises."""
    if not hasattr(os, "posix_spawn"):  # not POSIX: the Python hook answers alone
        return
    try:
        if is_fresh(root):
            return
        base = root / HINT_DIR
        base.mkdir(parents=True, exist_ok=True)
        marker = base / WRITING
        try:
            if time.time() - marker.stat().st_mtime < WRITING_SECONDS:
                return
        except FileNotFoundError:
            pass
        marker.touch()
        command = [sys.executable, "-P", "-m", "kb_ai.hooks.hintfile", str(root)]
        os.posix_spawn(
            sys.executable,
            command,
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
    except _FAULTS:  # no hint file: the Python hook answers meanwhile
        return


def _prune(base: Path, keep: set[str]) -> None:
    """Remove the generations before the one before ``keep`` (a hook may still be
    reading the one just replaced), and temporary leftovers of builds that died."""
    import shutil  # only when a hint is written: the hook's fresh check stays light

    gens = sorted(
        (p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.name,
    )
    old = [p for p in gens if p.name not in keep][:-1]
    stale_tmp = [
        p
        for p in base.iterdir()
        if p.name.startswith(".") and time.time() - p.stat().st_mtime > 600
    ]
    for path in old + stale_tmp:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _bm25_parts(db: Path) -> tuple[dict[tuple[str, int], tuple[float, float]], list[str]]:
    """((stem, id) -> (bm25 part over whole articles, over heads)), and the articles'
    paths in path order (an article's id is its place there), of the search index in
    ``db``; nothing for a missing database (the Python hint then finds nothing either)."""
    if not db.is_file():
        return {}, []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=2.0)
    try:
        rows = conn.execute("SELECT id, path FROM search_docs").fetchall()
        paths = sorted(path for _, path in rows)
        place = {path: i for i, path in enumerate(paths)}
        ids = {rowid: place[path] for rowid, path in rows}
        whole = _table_parts(conn, "search_fts", COLUMNS, WEIGHTS, ids)
        head = _table_parts(conn, "search_head", HEAD_COLUMNS, HEAD_WEIGHTS, ids)
    finally:
        conn.close()
    return {key: (value, head.get(key, 0.0)) for key, value in whole.items()}, paths


def _table_parts(
    conn: sqlite3.Connection,
    table: str,
    columns: tuple[str, ...],
    weights: tuple[float, ...],
    ids: dict[int, int],
) -> dict[tuple[str, int], float]:
    """FTS5's bm25 (sqlite's fts5_aux.c) of each ASCII stem alone in each article of
    ``table``, computed as it does: weighted frequency summed instance by instance in
    column order, the row's length over all columns, idf from the rows having the stem."""
    vocab = f"temp.vocab_{table}"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, {table}, instance)"
    )
    (rows,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    if not rows:
        return {}
    counts = conn.execute(
        f"SELECT term, doc, col, count(*) FROM {vocab} GROUP BY term, doc, col"
    ).fetchall()
    length: dict[int, int] = defaultdict(int)
    having: dict[str, set[int]] = defaultdict(set)
    per: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    column = {name: i for i, name in enumerate(columns)}
    for term, doc, col, n in counts:
        length[doc] += n
        if _ASCII_TERM.fullmatch(term):
            having[term].add(doc)
            per[(term, doc)].append((column[col], n))
    avgdl = sum(length.values()) / rows
    k1, b = BM25_K1, BM25_B
    parts: dict[tuple[str, int], float] = {}
    for (term, doc), cols in per.items():
        hits = len(having[term])
        idf = math.log((rows - hits + 0.5) / (hits + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        freq = 0.0
        for col, n in sorted(cols):
            for _ in range(n):
                freq += weights[col]
        d = float(length[doc])
        part = idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * d / avgdl)))
        if doc in ids:
            parts[(term, ids[doc])] = part
    return parts


def main(argv: list[str]) -> None:
    """``python -m kb_ai.hooks.hintfile ROOT``: write ROOT's hint file (start_writing)."""
    if len(argv) == 1:
        root = Path(argv[0])
        try:
            refresh(root)
        finally:
            (root / HINT_DIR / WRITING).unlink(missing_ok=True)


if __name__ == "__main__":
    main(sys.argv[1:])
