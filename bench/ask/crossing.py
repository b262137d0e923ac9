"""English questions over a Chinese wiki: does `kb-ai ask` find, read and cite the page?

The wiki: the 256 passages of CMRC 2018 (Chinese Wikipedia, ../shared/data/cmrc2018),
one article each (title, first sentence as summary, the passage as body). The
questions: the first question of each of the first N passages, put into English by the
same model (bench/ask/prompts/english.j2; kept only when the English has no CJK
character). So the model translates twice, there and back: a model that keeps a name's
Chinese form in mind has it easier than a user's own English question would make it.

For each question, with the embedded model (or --model):
- shortlist: is the gold passage among the candidates the selection prompt offers, and
  would the question go on to selection rather than be declined without a model call?
  For the Chinese question (reference), the English question as kb-ai searched it
  before (no terms), and the English question with the terms kb-ai now asks for;
- end to end (`retrieval.ask`): the gold page read, cited, and seconds per question.

    python bench/ask/crossing.py [--questions 20] [--model local/default] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kb_ai.errors import LLMError  # noqa: E402
from kb_ai.llm import open_llm  # noqa: E402
from kb_ai.prompts import PromptLibrary  # noqa: E402
from kb_ai.settings import load_settings  # noqa: E402
from retrieval import Asker, Catalog, ask  # noqa: E402
from retrieval.terms import terms  # noqa: E402
from wiki import Article, KnowledgeBase, build_catalog, open_state, write_article  # noqa: E402
from wiki.catalog import write_indexes  # noqa: E402
from wiki.indexing import refresh_search_index  # noqa: E402

CMRC = ROOT.parent / "shared" / "data" / "cmrc2018" / "cmrc2018_trial.json"
PROMPTS = PromptLibrary(Path(__file__).parent / "prompts")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")


def build(kb_dir: Path) -> tuple[KnowledgeBase, list[tuple[str, str]]]:
    """The Chinese wiki, and (question, gold path) of the first question of each passage."""
    data = json.loads(CMRC.read_text(encoding="utf-8"))["data"]
    kb = KnowledgeBase.init(kb_dir)
    questions = []
    for i, item in enumerate(data):
        para = item["paragraphs"][0]
        text, path = para["context"], f"wiki/concept/p{i:03d}.md"
        summary = text.split("。")[0][:190] + "。"
        write_article(
            kb,
            Article(path, item["title"][:80], "concept", summary, [], ["raw/cmrc.md"],
                    "2026-01-01", "2026-01-01", text + "\n"),
        )  # fmt: skip
        questions.append((para["qas"][0]["question"], path))
    write_indexes(kb, build_catalog(kb))
    with closing(open_state(kb)) as conn:
        refresh_search_index(kb, conn)
    return kb, questions


async def shortlist(asker: Asker, catalog: Catalog, question: str, found: list[str]) -> list[str]:
    """The candidate paths offered for ``question`` searched with ``found`` terms; []
    when the abstain check would decline it without a model call."""
    _, paths, _ = asker.selection_prompt(question, catalog, frozenset(), found)
    wanted = terms(" ".join([question, *found]))
    return paths if paths and asker._any_shares(wanted, paths, catalog) else []


async def measure(
    kb: KnowledgeBase, questions: list[tuple[str, str]], model: str, answers: bool
) -> dict:
    settings = load_settings(kb.root, {"model": model}, detect=False)
    catalog = Catalog.load(kb, settings.selection_budget_tokens)
    rows = []
    for zh, gold in questions:
        llm = open_llm(settings, db_path=kb.state_db)
        try:
            try:
                reply = await llm.complete(
                    PROMPTS.render("english", question=zh), stage="rewrite", max_tokens=80
                )
            except LLMError as exc:  # a slow machine: say so, go on with the next
                rows.append({"zh": zh, "skipped": True, "error": str(exc)[:200]})
                print("error:", exc, flush=True)
                continue
            en = " ".join((reply.text or "").split())[:300]
            if not en or _CJK.search(en):
                rows.append({"zh": zh, "en": en, "skipped": True})
                print("skipped:", zh, "->", en, flush=True)
                continue
            asker = Asker(kb, settings, llm)
            started = time.monotonic()
            found = await asker._catalog_terms(en, catalog)
            terms_s = time.monotonic() - started
            row = {
                "zh": zh,
                "en": en,
                "terms": found,
                "terms_s": round(terms_s, 1),
                "zh_offered": gold in await shortlist(asker, catalog, zh, []),
                "en_offered": gold in await shortlist(asker, catalog, en, []),
                "terms_offered": gold in await shortlist(asker, catalog, en, found),
            }
            if not answers:
                rows.append(row)
                print(json.dumps(row, ensure_ascii=False), flush=True)
                continue
            started = time.monotonic()
            answer = await ask(kb, settings, llm, en)
            row |= {
                "seconds": round(time.monotonic() - started, 1),
                "read": gold in answer.read,
                "cited": gold in [c.path for c in answer.citations],
                "covered": answer.covered,
                "answer": answer.answer[:300],
            }
        finally:
            await llm.aclose()
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    return {"model": model, "rows": rows, "answers": answers}


def render(result: dict, load: str) -> str:
    rows = [r for r in result["rows"] if not r.get("skipped")]
    n = len(rows)

    def share(key: str) -> str:
        return f"{sum(r[key] for r in rows)} of {n}"

    ends = (
        [
            f"| end to end: gold page read | {share('read')} |",
            f"| end to end: gold page cited | {share('cited')} |",
            f"| seconds per question end to end, median | {statistics.median(r['seconds'] for r in rows):.1f} |",
        ]
        if result["answers"] and rows
        else []
    )  # fmt: skip

    return "\n".join(
        [
            "## English questions over a Chinese wiki",
            "",
            f"`python bench/ask/crossing.py`: the 256 CMRC 2018 passages as a Chinese wiki;"
            f" the first question of each of the first {len(result['rows'])} passages, put"
            f" into English by the same model ({len(result['rows']) - n} skipped: the English"
            f" kept Chinese characters, or the call timed out); model `{result['model']}`, as `kb-ai ask` runs it"
            " (selection budget, shortlist, extractive answers).",
            "",
            "| measure | result |",
            "|---|---|",
            f"| gold page offered to selection, Chinese question (reference) | {share('zh_offered')} |",
            f"| gold page offered, English question searched as it is (before) | {share('en_offered')} |",
            f"| gold page offered, English question with kb-ai's Chinese terms (after) | {share('terms_offered')} |",
            f"| seconds for the terms call, median | {statistics.median(r['terms_s'] for r in rows):.1f} |",
            *ends,
            "",
            f"Load average while measured: {load}.",
            "",
        ]
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="local/default")
    parser.add_argument(
        "--no-answers", action="store_true", help="the shortlist only, no end-to-end ask"
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the fragment here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        kb, questions = build(Path(tmp) / "kb")
        result = asyncio.run(
            measure(kb, questions[: args.questions], args.model, not args.no_answers)
        )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    fragment = render(result, load)
    print(fragment)
    if args.out:
        args.out.write_text(fragment, encoding="utf-8")
        args.out.with_suffix(".json").write_text(
            json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8"
        )


if __name__ == "__main__":
    main()
