"""CPU per document of the checks a compile runs on the event loop, without the model:
extraction fidelity, the write checks and links, on the 38 decision records with the
stand-in model's replies (tests/fakes/kb_responder).

    python -m bench.compile.check_costs

Prints process CPU milliseconds per document for each; the article checked is the
extraction's facts as a list under a heading, as a writer's reply would quote them.
"""

from __future__ import annotations

import json
import time

from bench.compile.corpus import ADR_DIR, adr_files
from tests.fakes import kb_responder


def main() -> None:
    from compiler.checks import accept_summary, evidence_for, review_body
    from compiler.extract import Extraction
    from compiler.fidelity import check_extraction
    from compiler.links import LinkTargets, link_mentions

    paths = adr_files(ADR_DIR)
    docs = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        prompt = f"Source: {path.stem} (note)\n<source>\n{text}\n</source>"
        request = {"messages": [{"role": "user", "content": prompt}]}
        docs.append((text, json.dumps(kb_responder.extract(request))))
    checked: list[Extraction] = []

    def fidelity() -> None:
        for text, reply in docs:
            checked.append(check_extraction(Extraction.from_data(json.loads(reply)), text))

    def write_checks() -> None:
        for ex in checked:
            material = ex.to_markdown()
            body = "## Summary\n\n" + "\n".join(f"- {f}" for f in ex.facts[:12])
            body += "\n\n" + ex.summary
            evidence = evidence_for([material, "raw/x.md"], "", ex.title)
            told = "Write an article from the material. Say so when it does not cover a thing."
            review = review_body(body, evidence=evidence, material=[material], told=told)
            accept_summary(ex.summary[:190], review.body, evidence)

    targets = LinkTargets.of([(f"wiki/x/{p.stem}.md", p.stem.replace("-", " ")) for p in paths])

    def links() -> None:
        for ex in checked:
            link_mentions(ex.summary + "\n" + "\n".join(ex.facts), targets, "wiki/x/a.md")

    for name, step in (("extraction fidelity", fidelity), ("write checks", write_checks),
                       ("links", links)):  # fmt: skip
        cpu0 = time.process_time()
        step()
        print(f"{name}: {(time.process_time() - cpu0) * 1000 / len(docs):.2f} ms per document")


if __name__ == "__main__":
    main()
