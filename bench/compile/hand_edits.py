"""What looking for hand edits costs a compile, per article it rewrites: in a wiki of
``--articles`` articles with ``--commits`` kb-ai commits of history (five articles each),
the time to decide that an article holds no person's change, with kb-ai's last blob id
remembered (state.db) and without (a walk through the article's history), and the time
of one three-way merge (`git merge-file`, twice: marked and proposal).

    python -m bench.compile.hand_edits --articles 500 --commits 3000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def build(root: Path, articles: int, commits: int) -> list[str]:
    from wiki import KnowledgeBase
    from wiki.git import TRAILER

    KnowledgeBase.init(root)
    env = {**os.environ, "GIT_COMMITTER_NAME": "kb-ai", "GIT_COMMITTER_EMAIL": "kb-ai@localhost"}
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    stream = []
    message = f"compile: 5 source(s)\n\n{TRAILER}: yes\n".encode()
    for c in range(commits):
        stream.append(b"commit refs/heads/main\ncommitter kb-ai <kb-ai@localhost> ")
        stream.append(f"{1_700_000_000 + c} +0000\ndata {len(message)}\n".encode() + message)
        if c == 0:
            stream.append(f"from {head}\n".encode())
        for k in range(5):
            n = (c * 5 + k) % articles
            data = f"---\ntitle: A {n}\n---\n\nVersion {c} of article {n}.\n".encode()
            stream.append(f"M 100644 inline wiki/topic/a{n}.md\ndata {len(data)}\n".encode())
            stream.append(data)
        stream.append(b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=b"".join(stream),
                   env=env, check=True)  # fmt: skip
    branch = subprocess.run(["git", "branch", "--show-current"], cwd=root, capture_output=True,
                            text=True, check=True).stdout.strip()  # fmt: skip
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
    if branch and branch != "main":
        subprocess.run(["git", "branch", "-q", "-f", branch, "main"], cwd=root, check=True)
    return [f"wiki/topic/a{n}.md" for n in range(articles)]


def main() -> None:
    from wiki import KnowledgeBase
    from wiki.hand_edits import blob_id, find_hand_edit, merge_texts

    parser = argparse.ArgumentParser()
    parser.add_argument("--articles", type=int, default=500)
    parser.add_argument("--commits", type=int, default=3000)
    parser.add_argument("--sample", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = build(Path(tmp) / "kb", args.articles, args.commits)
        kb = KnowledgeBase.open(Path(tmp) / "kb")
        sample = paths[:: max(1, len(paths) // args.sample)][: args.sample]
        known = {p: blob_id(kb.resolve(p).read_text(encoding="utf-8")) for p in sample}
        timings = {}
        for label, blobs in (("history walk", {}), ("remembered blob", known)):
            seconds = []
            for p in sample:
                started = time.perf_counter()
                assert find_hand_edit(kb, p, blobs.get(p)) is None
                seconds.append(time.perf_counter() - started)
            timings[label] = seconds
        text = kb.resolve(sample[0]).read_text(encoding="utf-8")
        merges = []
        for _ in range(20):
            started = time.perf_counter()
            merge_texts(kb, text, text + "\nA person's line.\n", text.replace("Version", "V"))
            merges.append(time.perf_counter() - started)
    print(f"{args.articles} articles, {args.commits} commits, {len(sample)} articles looked at")
    for label, seconds in timings.items():
        print(f"  {label}: median {statistics.median(seconds) * 1000:.2f} ms, "
              f"max {max(seconds) * 1000:.2f} ms per article")  # fmt: skip
    print(f"  three-way merge: median {statistics.median(merges) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
