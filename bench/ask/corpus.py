"""The ask benchmark's synthetic wikis: articles of six types with Zipf-drawn words, the
questions asked of them, and the cached knowledge base built from them (bench/out/ask/,
git-ignored)."""

from __future__ import annotations

import itertools
import json
import random
import shutil
import time
from contextlib import closing
from pathlib import Path

from bench._common import REPO

OUT = REPO / "bench" / "out" / "ask"
GEN_VERSION = 1  # bump when the generator changes: cached wikis are then rebuilt
DIRECT_WRITE_ABOVE = 10_000  # larger wikis skip write_article's fsyncs

# Common words of a software team's notes, most frequent first (the Zipf head).
COMMON_WORDS = """
service data team api release deploy database cache config user request queue
error test build pipeline cluster server client job schema migration index storage
network token auth session latency timeout retry backup metric alert log dashboard
incident review owner budget cost contract vendor customer invoice report search feature
flag branch merge version package dependency library container image node region zone
replica shard partition topic consumer producer event message webhook endpoint route gateway
proxy balancer certificate secret key rotation policy permission role audit compliance privacy
retention archive export import sync batch stream scheduler worker cron task ticket
sprint roadmap milestone estimate capacity quota limit threshold rollback canary rollout hotfix
patch upgrade downtime maintenance window oncall runbook postmortem escalation severity priority sla
slo uptime throughput memory disk cpu bandwidth encryption compression serialization format payload
field column table row query transaction lock deadlock consistency availability durability failover
replication snapshot restore checkpoint ledger billing payment refund discount pricing plan tier
trial onboarding signup login password profile notification email sms push template locale
translation currency timezone calendar report analytics experiment cohort funnel conversion churn retention
segment dashboard warehouse lake etl model training inference embedding prompt evaluation dataset
label annotation benchmark
"""
COMMON = list(dict.fromkeys(COMMON_WORDS.split()))
VERBS_WORDS = """
stores sends reads writes checks validates caches retries routes signs encrypts compresses
schedules batches replicates archives exports imports publishes consumes rejects throttles rotates audits
monitors indexes migrates
"""
VERBS = VERBS_WORDS.split()
TYPES = (
    ("concept", 5),
    ("decision", 3),
    ("entity", 2),
    ("howto", 2),
    ("incident", 1),
    ("meeting", 1),
)
ONSETS_WORDS = """
b br c ch d dr f fl g gr h j
k kl l m n p pl pr r s sk st
t tr v w z sh th
"""
ONSETS = ONSETS_WORDS.split()
VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ai", "ei", "ou", "ia"]
CODAS = ["", "", "n", "r", "l", "s", "t", "x", "m", "nd", "rk", "st"]


def pseudo_words(rng: random.Random, n: int, avoid: set[str]) -> list[str]:
    """n distinct made-up words (project names, jargon), none of them in ``avoid``."""
    out: dict[str, None] = {}
    while len(out) < n:
        word = "".join(
            rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
            for _ in range(rng.choice((2, 2, 3)))
        )
        if 5 <= len(word) <= 12 and word not in avoid:
            out[word] = None
    return list(out)


class Zipf:
    """Draws words with frequency ~ 1 / rank^s."""

    def __init__(self, words: list[str], s: float = 1.05) -> None:
        self.words = words
        self.cum = list(itertools.accumulate(1.0 / (r + 1) ** s for r in range(len(words))))

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum, k=k)


def generate(size: int, seed: int = 7) -> tuple[list[dict], list[dict]]:
    """The articles of a wiki of ``size`` (plain dicts) and the questions asked of it."""
    from wiki.slugs import slugify, unique_slug

    rng = random.Random(seed * 1_000_003 + size)
    vocab_size = 1_500 + int(60 * size**0.5)  # grows with the wiki, as real jargon does
    made_up = pseudo_words(rng, vocab_size + max(30, size // 6) + 200, set(COMMON))
    jargon = made_up[:vocab_size]
    names = [w.capitalize() for w in made_up[vocab_size : vocab_size + max(30, size // 6)]]
    needle_words = made_up[vocab_size + max(30, size // 6) :]
    words = Zipf(COMMON + jargon)
    types = [t for t, _ in TYPES]
    weights = [w for _, w in TYPES]

    heads: list[dict] = []
    taken: dict[str, set[str]] = {t: set() for t in types}
    for _ in range(size):
        kind = rng.choices(types, weights)[0]
        name = (
            names[min(int(rng.paretovariate(1.2)) - 1, len(names) - 1)]
            if rng.random() < 0.3
            else rng.choice(names)
        )
        topic = " ".join(words.draw(rng, rng.choice((1, 2, 2, 3))))
        if kind == "decision":
            title = f"Use {rng.choice(jargon).capitalize()} for {name} {topic}"
        elif kind == "incident":
            title = f"{name} {topic} outage {rng.randint(2019, 2025)}-{rng.randint(1, 12):02d}"
        elif kind == "howto":
            title = f"How to {rng.choice(('set up', 'rotate', 'debug', 'scale', 'migrate'))} {name} {topic}"
        elif kind == "meeting":
            title = f"{name} {topic} sync {rng.randint(1, 52)}"
        else:
            title = f"{name} {topic}"
        slug = unique_slug(slugify(title), taken[kind])
        taken[kind].add(slug)
        heads.append({"path": f"wiki/{kind}/{slug}.md", "title": title, "type": kind, "name": name})

    def sentence(name: str) -> str:
        a, b, c, d = words.draw(rng, 4)
        shape = rng.randrange(5)
        if shape == 0:
            s = f"{name} {rng.choice(VERBS)} the {a} {b} before the {c} {d} runs"
        elif shape == 1:
            s = f"When the {a} {b} is over its {c}, the {d} {rng.choice(VERBS)} it again"
        elif shape == 2:
            s = f"We keep the {a} and the {b} {c} apart so that {name} never blocks the {d}"
        elif shape == 3:
            s = f"The {a} {rng.choice(VERBS)} every {rng.randint(2, 90)} minutes and the {b} {c} {rng.choice(VERBS)} the rest of the {d}"
        else:
            s = f"Ask the {name} {a} owners before changing the {b} {c}, because the {d} depends on it"
        return s[0].upper() + s[1:] + "."

    needles = set(rng.sample(range(size), min(size, 12)))
    articles, questions = [], []
    for i, head in enumerate(heads):
        name = head["name"]
        a, b, c = words.draw(rng, 3)
        summary = f"How {name} {rng.choice(VERBS)} the {a} {b} for the {c} team, and what to check when it fails."
        while len(summary) < 100:
            summary = summary[:-1] + f" or the {words.draw(rng, 1)[0]}."
        tags = list(dict.fromkeys(words.draw(rng, rng.randint(1, 3))))
        keys = []
        body = [f"# {head['title']}", "", "## Overview", ""]
        body.append(" ".join(sentence(name) for _ in range(rng.randint(3, 6))))
        body += ["", "## Details", ""]
        for _ in range(rng.randint(2, 4)):
            body.append(" ".join(sentence(name) for _ in range(rng.randint(3, 6))))
            body.append("")
        needle = None
        if i in needles:
            word = needle_words.pop()
            value = f"{rng.randint(3, 97)} {rng.choice(('seconds', 'replicas', 'days', 'percent'))}"
            needle = {"word": word, "value": value}
            body.insert(
                len(body) - 2, f"The {word} limit of {name} is {value}, set after the last review."
            )
        if rng.random() < 0.4:  # a table whose first cells become the catalog keys
            keys = list(
                dict.fromkeys(
                    f"{w}_{v}" for w, v in zip(words.draw(rng, 4), words.draw(rng, 4), strict=True)
                )
            )
            body += ["| setting | value |", "|---|---|"]
            body += [f"| {k} | {rng.randint(1, 500)} |" for k in keys]
            body.append("")
        links = rng.sample(heads, min(len(heads), rng.randint(1, 3)))
        body += ["## Related", ""] + [f"- [[{h['title']}]]" for h in links if h is not head]
        articles.append(
            {**head, "summary": summary, "tags": tags, "keys": keys, "body": "\n".join(body) + "\n"}
        )
        if needle:
            questions.append(
                {
                    "kind": "body fact",
                    "q": f"What is the {needle['word']} limit of {name}?",
                    "target": head["path"],
                }
            )
    for head in rng.sample(heads, min(len(heads), 5)):
        questions.append(
            {
                "kind": "title",
                "q": f"What do we know about {head['title'].lower()}?",
                "target": head["path"],
            }
        )
    for _ in range(3):
        a, b = words.draw(rng, 2)
        questions.append(
            {
                "kind": "vague",
                "q": f"Why do we retry the {a} when the {b} times out?",
                "target": None,
            }
        )
    questions.append(
        {"kind": "not covered", "q": "What is the lunch menu on Fridays?", "target": None}
    )
    questions.append({"kind": "not covered (zh)", "q": "部署流程是什么？", "target": None})
    return articles, questions


def build_wiki(size: int) -> Path:
    """The cached wiki of ``size`` articles (generated on first use)."""
    from wiki import Article, KnowledgeBase, cut_summary, entry_for, write_article, write_indexes
    from wiki.articles import article_text
    from wiki.indexing import refresh_search_index
    from wiki.state import open_state

    root = OUT / f"wiki-{size}-v{GEN_VERSION}"
    done = root / ".bench-complete.json"
    if done.is_file():
        return root
    if root.exists():
        shutil.rmtree(root)
    started = time.perf_counter()
    articles, questions = generate(size)
    generated = time.perf_counter()
    kb = KnowledgeBase.init(root)
    written = []
    stamp = "2025-01-15"
    direct = size > DIRECT_WRITE_ABOVE
    for a in articles:
        article = Article(
            path=a["path"],
            title=a["title"],
            type=a["type"],
            summary=a["summary"],
            tags=a["tags"],
            sources=[f"raw/notes/{a['path'].rsplit('/', 1)[-1]}"],
            created=stamp,
            updated=stamp,
            body=a["body"],
            keys=a["keys"],
        )
        if direct:  # plain writes: no per-file fsync and rename for 100,000 files
            article.summary = cut_summary(article.summary)
            path = root / article.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(article_text(article), encoding="utf-8")
            written.append(article)
        else:
            written.append(write_article(kb, article))
    wrote = time.perf_counter()
    write_indexes(kb, [entry_for(a) for a in written])
    indexed = time.perf_counter()
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    searched = time.perf_counter()
    (root / "questions.json").write_text(json.dumps(questions, indent=1, ensure_ascii=False))
    info = {
        "size": size,
        "generate_s": generated - started,
        "write_s": wrote - generated,
        "write": "dump_document + plain write" if direct else "write_article",
        "indexes_s": indexed - wrote,
        "search_index_s": searched - indexed,
        "master_index_bytes": kb.master_index_path.stat().st_size,
        "state_db_bytes": kb.state_db.stat().st_size,
    }
    done.write_text(json.dumps(info, indent=1))
    return root
