"""What following a wiki remote costs: a clone of a grown wiki, the push of one changed
article, a follower's round that takes it in (fetch, fast-forward, the search index by
path), the same round with nothing new, and the full index rebuild the by-path update
spares.

    python -m bench.remote.follow [--size 1000] [--repeats 10]

The remote is a bare repository on the same disk (no network: the figures are git's
and kb-ai's own work; a remote over ssh adds its round trips to each fetch and push).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path

from bench._common import load_average


def run(size: int, repeats: int) -> dict[str, object]:
    from bench.ask.corpus import build_wiki
    from kb_ai.service.remote import init_from_remote
    from wiki import KnowledgeBase, commit_all, list_articles
    from wiki.catalog import build_catalog, write_indexes
    from wiki.indexing import rebuild_tables
    from wiki.remote import publish, set_remote, sync
    from wiki.state import open_state

    work = Path(tempfile.mkdtemp(prefix="kb-remote-bench-"))
    try:
        remote = work / "wiki.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        writer_dir = work / "writer"
        shutil.copytree(build_wiki(size), writer_dir,
                        ignore=shutil.ignore_patterns(".bench-complete.json", "questions.json"))  # fmt: skip
        writer = KnowledgeBase.open(writer_dir)
        commit_all(writer, f"{size} synthetic articles")
        set_remote(writer, str(remote))
        started = time.perf_counter()
        publish(writer)
        first_push = time.perf_counter() - started

        started = time.perf_counter()
        follower = init_from_remote(work / "follower", str(remote)).kb
        clone_s = time.perf_counter() - started

        paths = list_articles(writer)
        push_s, round_s, idle_s, changed = [], [], [], []
        for i in range(repeats):
            target = writer.root / paths[(i * 37) % len(paths)]
            target.write_text(
                target.read_text(encoding="utf-8") + f"\nRevised in round {i}.\n",
                encoding="utf-8",
            )
            write_indexes(writer, build_catalog(writer))
            commit_all(writer, f"round {i}")
            started = time.perf_counter()
            pushed = publish(writer)
            push_s.append(time.perf_counter() - started)
            assert pushed is not None and pushed.pushed == 1, pushed
            started = time.perf_counter()
            got = sync(follower)
            round_s.append(time.perf_counter() - started)
            assert got is not None and got.state.error is None, got
            changed.append(len(got.changed))
            started = time.perf_counter()
            sync(follower)
            idle_s.append(time.perf_counter() - started)

        from wiki.articles import read_article, read_articles

        articles = list(read_articles(follower, list_articles(follower), read_article))
        started = time.perf_counter()
        with closing(open_state(follower)) as conn:
            rebuild_tables(conn, articles)
        rebuild_s = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"

    return {
        "articles": size,
        "load": f"{load_average():.1f}",
        "first push": f"{first_push:.2f} s",
        "clone (init --remote, state.db, search index)": f"{clone_s:.2f} s",
        "push of one changed article": ms(push_s),
        "follower round taking it in": ms(round_s) + f" ({statistics.median(changed):.0f} paths)",
        "follower round, nothing new": ms(idle_s),
        "full index rebuild (what by-path spares)": f"{rebuild_s * 1000:.0f} ms",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    for name, value in run(args.size, args.repeats).items():
        print(f"{name:48} {value}")


if __name__ == "__main__":
    main()
