"""Redaction false positives: what compiler.redact removes from real text that holds no
secret (issue 12, item 6).

    python -m bench.compile.redaction           # prints every hit, with its context
    python -m bench.compile.redaction --summary # counts only

Every file under ../shared/data that decodes as text (decision records, transcripts,
Chinese Wikipedia passages, the text documents: HTML, CSV, notebooks, RSS, ...) is
redacted whole, as it is, and each span redaction changed is printed with its line, so a
person can judge each: the data is public material with no live credential in it. So are
the names of every file (as origins and titles are redacted), and every text as the web
inbox keeps it (JSON string by string, issue 24).
"""

from __future__ import annotations

import argparse
import difflib
from collections import Counter
from pathlib import Path

from compiler.redact import redact, redact_name, redact_submitted
from compiler.sources import decode_text
from kb_ai.errors import SourceError

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"


def text_files(root: Path) -> list[tuple[Path, str]]:
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        try:
            out.append((path, decode_text(path.read_bytes(), str(path))))
        except SourceError:
            continue  # binary (PDF, Word, images, ...): not text to redact
    return out


def hits(text: str) -> list[str]:
    """Each line redaction changed, before -> after."""
    clean, count = redact(text)
    if not count:
        return []
    out = []
    before, after = text.splitlines(), clean.splitlines()
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op != "equal":
            for old, new in zip(before[a0:a1], after[b0:b1], strict=False):
                out.append(f"{old.strip()[:200]}\n      -> {new.strip()[:200]}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args(argv)
    files = text_files(args.data)
    per_folder: Counter[str] = Counter()
    total = 0
    for path, text in files:
        count = redact(text)[1]
        if not count:
            continue
        total += count
        per_folder[str(path.relative_to(args.data)).split("/", 1)[0]] += count
        if not args.summary:
            print(f"== {path.relative_to(args.data)}: {count}")
            for line in hits(text):
                print(f"   {line}")
    chars = sum(len(t) for _, t in files)
    print(f"{len(files)} text files, {chars:,} characters: {total} redaction(s)")
    paths = [p for p in args.data.rglob("*")]
    renamed = [p for p in paths if redact_name(str(p)) != str(p)]
    for path in renamed:
        print(f"== name {path} -> {redact_name(str(path))}")
    print(f"{len(paths)} file and folder names: {len(renamed)} redacted")
    kept = sum(redact_submitted(text)[1] for _, text in files)
    print(f"{len(files)} texts as the inbox keeps them: {kept} redaction(s)")
    for folder, n in sorted(per_folder.items()):
        print(f"  {folder}: {n}")


if __name__ == "__main__":
    main()
