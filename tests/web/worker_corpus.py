"""A small wiki with a corpus, for the browser tests of the chat page: two decisions on
the worker (the corpus ``worker``) and one concept outside it, committed."""

from pathlib import Path

from kb_ai.service import corpora, open_kb
from wiki import Article, KnowledgeBase, build_catalog, commit_all, write_article
from wiki.catalog import write_indexes
from wiki.corpora import CorpusFilter

ARTICLES = [
    ("wiki/decision/worker-retries.md", "Worker retries", "decision",
     "We decided that the worker retries a failed capture with backoff. A capture failed "
     "twenty times in a row while the spool was locked."),
    ("wiki/decision/worker-leases.md", "Worker leases", "decision",
     "We decided that a worker holds a task lease of ten minutes. Two workers compiled the "
     "same session while the lease was missing."),
    ("wiki/concept/nightly-backups.md", "Nightly backups", "concept",
     "Backups of the main database run nightly at 02:00. Backup copies are kept for thirty "
     "days in a separate account."),
]  # fmt: skip


def articles_kb(root: Path, articles=ARTICLES) -> KnowledgeBase:
    """A knowledge base at ``root`` holding ``articles`` (path, title, type, body), committed."""
    kb = KnowledgeBase.init(root)
    for path, title, kind, body in articles:
        write_article(kb, Article(path, title, kind, body.split(".")[0], [kind], ["raw/none.md"],
                                  "2026-01-01", "2026-01-01", f"# {title}\n\n{body}\n"))  # fmt: skip
    write_indexes(kb, build_catalog(kb))
    commit_all(kb, f"Add {len(articles)} article(s)")
    return kb


def worker_corpus_kb(root: Path) -> KnowledgeBase:
    """The knowledge base at ``root`` with ARTICLES and the ``worker`` corpus built."""
    kb = articles_kb(root)
    okb = open_kb(kb.root, detect=False)
    corpora.build(okb, "worker", CorpusFilter(types=("decision",)), description="The worker")
    return kb
