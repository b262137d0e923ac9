"""What converting in a process of its own costs (convert_timeout, issue 16): per file,
the seconds of a conversion in kb-ai's own process against the same conversion sent to
the converter process (already started: it serves a whole run); once per run, starting
that process; once per conversion over the limit, starting it again.

    python -m bench.documents.isolation          # writes bench/documents/isolation.md
                                                 # and its section of docs/benchmarks-documents.md
    python -m bench.documents.isolation --quick  # one repetition, prints only

Both sides convert each file once before they are timed (the converters' imports are
paid once per process either way); the figures are medians of the repetitions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.documents.run import DATA, DOC, SKIP

SECTION = "## Conversion in a process of its own (convert_timeout)"
RESULT = Path(__file__).with_name("isolation.md")


def timed(convert, data: bytes, name: str, reps: int) -> float:  # noqa: ANN001
    from kb_ai.errors import DocumentError

    times = []
    for i in range(reps + 1):
        started = time.perf_counter()
        with contextlib.suppress(DocumentError):  # refusing is a conversion too
            convert(data, name)
        if i:  # the first one pays the imports
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(reps: int) -> dict:
    from compiler.documents import ConvertProcess, convert_document, format_of

    rows = []
    with ConvertProcess(600.0) as converter:
        started = time.perf_counter()
        converter.start()
        start_seconds = time.perf_counter() - started
        for path in sorted(DATA.iterdir()):
            if path.suffix in SKIP or format_of(path.name) in (None, "zip"):
                continue
            data = path.read_bytes()
            own = timed(convert_document, data, path.name, reps)
            isolated = timed(converter.convert, data, path.name, reps)
            rows.append({"file": path.name, "bytes": len(data), "own": own, "isolated": isolated})
    return {"start_seconds": start_seconds, "rows": rows}


def write(result: dict) -> str:
    rows = result["rows"]
    added = [r["isolated"] - r["own"] for r in rows]
    lines = [
        SECTION,
        "",
        f"`python -m bench.documents.isolation`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, 2 CPUs shared with other sessions. Each document is "
        "converted in a process of its own so that one over `convert_timeout` can be "
        "stopped (a thread cannot be). The process is started once per run (or per batch "
        "of the web queue) and serves every document of it; it is started again only "
        "after a conversion over the limit killed it.",
        "",
        "Starting the converter process (a fresh Python importing kb-ai): "
        f"**{result['start_seconds']:.2f} s**, "
        "once per run that converts a document.",
        "",
        "| file | bytes | in kb-ai's process (s) | in the converter process (s) | added (ms) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['bytes']:,} | {r['own']:.3f} | {r['isolated']:.3f} | "
            f"{(r['isolated'] - r['own']) * 1000:.1f} |"
        )
    lines += [
        "",
        f"Added per document: median **{statistics.median(added) * 1000:.1f} ms**; single "
        f"files from {min(added) * 1000:.0f} to {max(added) * 1000:.0f} ms (a negative "
        "figure: the converter process was the faster one; the spread is the shared "
        "machine's noise as much as the cost).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    result = measure(1 if args.quick else 5)
    print(json.dumps(result, indent=1))
    if args.quick:
        return
    save_section(SECTION, write(result), RESULT)


def save_section(title: str, section: str, saved: Path) -> None:
    """``section`` kept beside the benchmark (run.py appends it when it rewrites the page)
    and put in docs/benchmarks-documents.md in place of the section of that title."""
    saved.write_text(section, encoding="utf-8")
    text = DOC.read_text(encoding="utf-8")
    if title in text:  # replaced up to the next section of the page
        head, rest = text.split(title, 1)
        tail = rest[rest.find("\n## ") :] if "\n## " in rest else ""
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {saved} and {DOC}")


if __name__ == "__main__":
    main()
