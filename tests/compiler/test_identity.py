"""compiler/identity.py's decisions over a small known set, and the names documents get
when their metadata names none (bad input of issue 25)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from compiler.identity import (
    MAYBE_TEXT,
    SAME_TEXT,
    Ambiguous,
    Document,
    Known,
    Match,
    UnknownSourceError,
    body_text,
    find_revised,
    frontmatter_id,
    jaccard,
    name_of_origin,
    shingle_hashes,
)
from compiler.sources import document_title, guess_title
from kb_ai.cli import main
from wiki import list_raw, read_raw

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "notes"
DEPLOY = (EXAMPLES / "deploy-howto.md").read_text(encoding="utf-8")


class Sources:
    """KnownSources over texts in memory (what state.db and raw/ give a run)."""

    def __init__(self, **texts: tuple[str, str, str]):  # id -> (name, title, text)
        self.known = {i: Known(f"raw/{i}.md", t, n) for i, (n, t, _) in texts.items()}
        self.shingles = {
            f"raw/{i}.md": shingle_hashes(body_text(x)) for i, (_, _, x) in texts.items()
        }
        self.origins: dict[str, str] = {}

    def by_id(self, ident):
        return self.known.get(ident)

    def by_origin(self, origins):
        return next((self.known[self.origins[o]] for o in origins if o in self.origins), None)

    def named(self, name):
        return [k for k in self.known.values() if k.name == name]

    def similar(self, shingles):
        scored = [(k, self.similarity(k, shingles)) for k in self.known.values()]
        return sorted([x for x in scored if x[1] > 0], key=lambda x: -x[1])

    def similarity(self, known, shingles):
        return jaccard(shingles, self.shingles[known.raw_path])


def doc(text, name="deploy-howto.md", title="How to deploy the invoice service", **kw):
    return Document(origin=f"/elsewhere/{name}", title=title, text=text, name=name, **kw)


def test_the_same_name_and_title_is_a_revision():
    known = Sources(deploy=("deploy-howto.md", "How to deploy the invoice service", DEPLOY))
    found = find_revised(doc(DEPLOY.replace("15", "20")), known)
    assert isinstance(found, Match) and found.way == "file name and title"


def test_a_kb_id_wins_over_name_and_text():
    known = Sources(
        deploy=("deploy-howto.md", "How to deploy the invoice service", DEPLOY),
        other=("other.md", "Other", "# Other\n\nSomething else entirely.\n"),
    )
    text = "---\ntitle: x\nkb-id: 'other'  # the release notes\n---\n" + DEPLOY
    assert frontmatter_id(text) == "other"
    found = find_revised(doc(text), known)
    assert isinstance(found, Match) and found.source.id == "other" and found.way == "kb-id"
    said = find_revised(doc("# New\n\nWords.\n", name="n.md", revises="raw/deploy.md"), known)
    assert isinstance(said, Match) and said.source.id == "deploy"


def test_an_id_that_names_no_source_is_an_error_naming_it():
    known = Sources(deploy=("deploy-howto.md", "How to deploy", DEPLOY))
    with pytest.raises(UnknownSourceError, match="'gone' names no source") as err:
        find_revised(doc("---\nkb-id: gone\n---\n# X\n"), known)
    assert "raw/<id>.md" in str(err.value)


def test_a_git_rename_is_a_revision_whatever_the_text():
    known = Sources(deploy=("deploy-howto.md", "How to deploy", DEPLOY))
    known.origins["/notes/deploy-howto.md"] = "deploy"
    moved = doc("# Shipping\n\nAll new.\n", name="shipping.md", title="Shipping",
                renamed_from=("/notes/deploy-howto.md",))  # fmt: skip
    found = find_revised(moved, known)
    assert isinstance(found, Match) and found.way == "git rename"


def test_near_text_matches_one_source_and_two_alike_are_ambiguous():
    one = Sources(deploy=("a.md", "A", DEPLOY))
    revised = DEPLOY.replace("15 minutes", "25 minutes")
    found = find_revised(doc(revised, name="b.md", title="B"), one)
    assert isinstance(found, Match) and found.way == "text" and found.similarity >= SAME_TEXT
    two = Sources(deploy=("a.md", "A", DEPLOY), copy=("c.md", "C", DEPLOY + "\nOne line more.\n"))
    both = find_revised(doc(revised, name="b.md", title="B"), two)
    assert isinstance(both, Ambiguous) and {k.id for k, _ in both.candidates} == {"deploy", "copy"}
    assert "more than one source" in both.reason


def test_similarity_in_between_is_ambiguous_and_unrelated_is_new():
    known = Sources(deploy=("a.md", "A", DEPLOY))
    half = DEPLOY.split("Rolling back:")[0] + " ".join(f"word{i} other{i}" for i in range(40))
    score = jaccard(shingle_hashes(half), shingle_hashes(DEPLOY))
    assert MAYBE_TEXT <= score < SAME_TEXT
    found = find_revised(doc(half, name="b.md", title="B"), known)
    assert isinstance(found, Ambiguous) and "not nearly the same" in found.reason
    assert find_revised(doc("# Queue\n\nRabbitMQ, 4 workers.\n", "q.md", "Queue"), known) is None


def test_two_sources_of_one_name_and_title_are_ambiguous():
    known = Sources(
        a=("notes.md", "Weekly sync", "# Weekly sync\n\nPriya ships the queue on Monday.\n"),
        b=("notes.md", "Weekly sync", "# Weekly sync\n\nTom moves billing to Thursday.\n"),
    )
    found = find_revised(doc("# Weekly sync\n\nNew.\n", "notes.md", "Weekly sync"), known)
    assert isinstance(found, Ambiguous) and len(found.candidates) == 2


def test_the_name_of_an_origin_is_its_files():
    assert name_of_origin("/home/p/notes/Deploy-Howto.md") == "deploy-howto.md"
    assert name_of_origin("/a/docs.zip#guides/deploy.md") == "deploy.md"
    assert name_of_origin("submitted:0123456789abcdef#guides/deploy.md") == "deploy.md"
    assert name_of_origin("https://example.org/adr/0007.html?x=1") == "0007.html"
    assert name_of_origin("submitted:0123456789abcdef") == ""
    assert name_of_origin("session:claude-code:1234") == ""


def test_a_placeholder_metadata_title_gives_way_to_the_heading_or_file_name():
    text = "Hello, here is some text without a meaning, for a long while it goes on and on."
    for meta in ("Untitled", "untitled-2", "Microsoft Word - plan.docx", "faltungsdiagramm.dvi"):
        assert document_title(meta, text, "movie-theater-booking-2024.pdf") == (
            "Movie theater booking 2024"
        )
    assert document_title("Quarterly plan", text, "x.pdf") == "Quarterly plan"
    assert guess_title("# ***\n\n## Deploys\n\nText.", "notes") == "Deploys"
    assert guess_title("🎬\n\nwords go here and on and on.", "cinema-night") == "Cinema night"


@pytest.mark.skipif(not (DATA / "documents").is_dir(), reason="shared/data not present")
def test_a_pdf_titled_untitled_is_named_from_its_file_name(kb, fake_model, tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=DATA / "documents" / "pdflatex-4-pages.pdf")
    writer.add_metadata({"/Title": "Untitled"})
    out = io.BytesIO()
    writer.write(out)
    pdf = tmp_path / "movie-theater-booking-2024.pdf"
    pdf.write_bytes(out.getvalue())
    done = CliRunner().invoke(main, ["--kb", str(kb.root), "compile", str(pdf)])
    assert done.exit_code == 0, done.output
    assert list_raw(kb) == ["raw/movie-theater-booking-2024.md"]
    assert read_raw(kb, "raw/movie-theater-booking-2024.md").title == "Movie theater booking 2024"


def test_near_text_with_a_second_source_well_behind_matches_the_first():
    rollback = DEPLOY.split("Rolling back:")[1]
    known = Sources(
        deploy=("a.md", "A", DEPLOY), rollback=("r.md", "R", "Rolling back:" + rollback)
    )
    found = find_revised(doc(DEPLOY.replace("15 min", "25 min"), name="b.md", title="B"), known)
    assert isinstance(found, Match) and found.source.id == "deploy"
    assert known.similarity(known.known["rollback"], shingle_hashes(DEPLOY)) >= MAYBE_TEXT


def test_one_file_name_and_text_in_between_is_a_revision_of_that_source():
    known = Sources(
        deploy=("deploy-howto.md", "How to deploy", DEPLOY),
        other=("other.md", "Other", "# Other\n\nThe queue runs RabbitMQ with 4 workers.\n"),
    )
    half = "# Shipping it\n\n" + DEPLOY.split("Rolling back:")[0] + "Roll forward, always.\n"
    score = jaccard(shingle_hashes(half), shingle_hashes(DEPLOY))
    assert MAYBE_TEXT <= score < SAME_TEXT
    found = find_revised(doc(half, title="Shipping it"), known)
    assert isinstance(found, Match) and found.way == "file name and text"
    elsewhere = find_revised(doc(half, name="shipping.md", title="Shipping it"), known)
    assert isinstance(elsewhere, Ambiguous)  # the same text under another name: named
