"""Characters per token by script: what the selection budget charges a catalog line.

The shortlist is cut to a token budget before any tokenizer is at hand, so kb-ai
estimates tokens from characters. This measures the real ratio on catalog-shaped text
(one line per passage: title, first sentence, keys) with two tokenizers: cl100k_base
(from the copy litellm ships; GPT-4-class models) and the embedded Qwen2.5 model's own
(read from its GGUF with vocab_only, when kb-ai[local] is installed).

- Latin: the 38 ADRs of ../shared/data/adr_govuk and HotpotQA passage titles/sentences;
- CJK: the Chinese passages of ../shared/data/cmrc2018;
- other: the Arabic text of the MuSiQue/HotpotQA corpora's non-Latin letters is too
  thin, so Greek and Cyrillic come from the same corpora's names where present.

    python bench/ask/tokens_per_script.py
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from retrieval.candidates import estimate_tokens, script_chars  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def latin_lines() -> list[str]:
    corpus = json.loads(
        (DATA / "hotpotqa100" / "hotpotqa_train_corpus.json").read_text(encoding="utf-8")
    )
    return [
        f"- [{title}](wiki/topic/{i}.md) — {sentences[0].strip() if sentences else ''}"
        for i, (title, sentences) in enumerate(corpus.items())
    ]


def cjk_lines() -> list[str]:
    data = json.loads((DATA / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))
    lines = []
    for article in data["data"]:
        for p in article["paragraphs"]:
            first = re.split(r"(?<=。)", p["context"])[0]
            lines.append(f"- [{article['title']}](wiki/topic/{p['id']}.md) — {first}")
    return lines


def tokenizers() -> dict:
    found = {}
    try:
        import importlib.util

        import tiktoken

        spec = importlib.util.find_spec("litellm")
        if spec and spec.submodule_search_locations:
            os.environ.setdefault(
                "TIKTOKEN_CACHE_DIR",
                str(Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"),
            )
        cl100k = tiktoken.get_encoding("cl100k_base")
        found["cl100k_base"] = lambda text: len(cl100k.encode(text))
    except Exception as exc:  # noqa: BLE001 - a tokenizer missing here is reported, not fatal
        print(f"cl100k_base unavailable: {exc}", file=sys.stderr)
    try:
        from llama_cpp import Llama

        from kb_ai.llm._local import assemble

        qwen = Llama(str(assemble()), vocab_only=True, verbose=False)
        found["qwen2.5"] = lambda text: len(qwen.tokenize(text.encode(), add_bos=False))
    except Exception as exc:  # noqa: BLE001
        print(f"qwen2.5 tokenizer unavailable: {exc}", file=sys.stderr)
    return found


def main() -> None:
    sets = {
        "Latin (HotpotQA catalog lines)": latin_lines(),
        "CJK (CMRC 2018 catalog lines)": cjk_lines(),
    }
    counters = tokenizers()
    rows = []
    for name, lines in sets.items():
        text = "\n".join(lines)
        chars = script_chars(text)
        row = {
            "set": name,
            "lines": len(lines),
            "chars": len(text),
            "estimate": estimate_tokens(text),
        }
        for tok, count in counters.items():
            row[tok] = count(text)
        row["by_script"] = chars
        rows.append(row)
    print("| text | lines | chars | kb-ai estimate | " + " | ".join(counters) + " |")
    print("|---|---|---|---|" + "---|" * len(counters))
    for row in rows:
        cells = " | ".join(
            f"{row[t]:,} ({row['chars'] / row[t]:.2f} chars/token)" for t in counters
        )
        print(
            f"| {row['set']} | {row['lines']} | {row['chars']:,} | {row['estimate']:,} | {cells} |"
        )
    print()
    print("Characters by script:", {r["set"]: r["by_script"] for r in rows})


if __name__ == "__main__":
    main()
