"""A compiled-looking wiki for the truth benchmarks: each article fed by one or two sources
whose raw copy and extraction are on disk, the indexes and state tables in step, all in
git. Built without a model (the articles are what the extractions say), cached under
bench/out/truth/ (git-ignored)."""

from __future__ import annotations

import json
import random
import shutil
from contextlib import closing
from pathlib import Path

from bench._common import REPO

OUT = REPO / "bench" / "out" / "truth"
VERSION = 1
DIRECT_ABOVE = 2_000
TYPES = ("decision", "concept", "topic", "howto", "person", "project")
WORDS = [
    "billing",
    "cache",
    "deploy",
    "queue",
    "schema",
    "replica",
    "shard",
    "token",
    "backup",
    "rollout",
    "canary",
    "ledger",
    "gateway",
    "webhook",
    "scheduler",
    "invoice",
    "quota",
    "region",
    "cluster",
    "search",
    "index",
    "session",
    "audit",
]


def build(size: int) -> Path:
    """The cached knowledge base of ``size`` articles (built on first use)."""
    from wiki import (
        Article,
        ExtractionRecord,
        KnowledgeBase,
        RawSource,
        commit_all,
        entry_for,
        write_article,
        write_extraction,
        write_indexes,
        write_raw,
    )
    from wiki.articles import article_text
    from wiki.indexing import rebuild_tables
    from wiki.repair import INDEX_FINGERPRINT
    from wiki.state import open_state, set_meta

    root = OUT / f"kb-{size}-v{VERSION}"
    if (root / ".complete").is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    kb = KnowledgeBase.init(root)
    rng = random.Random(size)
    articles = []
    for i in range(size):
        a, b = rng.sample(WORDS, 2)
        slug = f"{a}-{b}-{i}"
        facts = [
            f"The {a} service keeps {rng.randint(10, 900)} {b} records per region.",
            f"Team {b.title()} moved the {a} job to {rng.randint(2020, 2026)}-0{rng.randint(1, 9)}.",
            f"The {b} limit is {rng.randint(10, 500)} requests per minute.",
        ]
        text = f"# {a} {b} {i}\n\n" + " ".join(facts) + "\n"
        raw = RawSource(slug, f"{a} {b} {i}", f"/notes/{slug}.md", "note", "0" * 64, "", text)
        data = {"summary": facts[0], "facts": facts, "topics": [a, b]}
        record = ExtractionRecord(f"raw/{slug}.md", "0" * 64, "bench", "1", "", data)
        sources = [f"raw/{slug}.md"]
        if i and rng.random() < 0.3:  # some articles draw on an earlier source too
            sources.append(articles[rng.randrange(len(articles))].sources[0])
        links = (
            f" See [[{articles[-1].path.rsplit('/', 1)[-1][:-3]}|the previous one]]."
            if articles
            else ""
        )
        body = f"## {a.title()} {b}\n\n" + "\n".join(f"- {f}" for f in facts) + links + "\n"
        article = Article(
            f"wiki/{TYPES[i % len(TYPES)]}/{slug}.md",
            f"{a.title()} {b} {i}",
            TYPES[i % len(TYPES)],
            facts[0],
            [a, b],
            sources,
            "2026-01-15",
            "2026-01-15",
            body,
        )
        if size > DIRECT_ABOVE:  # thousands of fsyncs: the files are written plainly
            _plain(kb.root / f"raw/{slug}.md", raw_text(raw))
            _plain(kb.root / f"extraction/{slug}.md", extraction_text(record))
            _plain(kb.root / article.path, article_text(article))
            articles.append(article)
        else:
            write_raw(kb, raw)
            write_extraction(kb, slug, record)
            articles.append(write_article(kb, article))
    fingerprint = write_indexes(kb, [entry_for(a) for a in articles])
    with closing(open_state(kb)) as conn:
        set_meta(conn, INDEX_FINGERPRINT, fingerprint)
        rebuild_tables(conn, articles)
    commit_all(kb, f"{size} articles for the truth benchmarks")
    (root / ".complete").write_text(json.dumps({"size": size}))
    return root


def _plain(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def raw_text(src) -> str:
    from wiki._frontmatter import dump_document

    meta = {"title": src.title, "origin": src.origin, "kind": src.kind,
            "checksum": src.checksum, "ingested_at": src.ingested_at}  # fmt: skip
    return dump_document(meta, src.text)


def extraction_text(rec) -> str:
    from wiki._frontmatter import dump_document

    meta = {"source": rec.source, "source_checksum": rec.source_checksum, "model": rec.model,
            "prompt_version": rec.prompt_version, "extracted_at": rec.extracted_at}  # fmt: skip
    data = json.dumps(rec.data, indent=2, ensure_ascii=False)
    return dump_document(meta, f"# Extraction of {rec.source}\n\n```json\n{data}\n```\n")
