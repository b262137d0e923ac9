"""`also` through the web app: an answer streamed by /api/ask cites another knowledge
base's page with its name, the chat page names it beside the title, and the citation
leads to that page, shown read only."""

from kb_ai.settings import load_settings
from tests.web.conftest import make_client, sse
from wiki import Article, KnowledgeBase, build_catalog, commit_all, write_article
from wiki.catalog import write_indexes

RULE = "Every change needs two approvals before it is merged."


def test_an_answer_cites_the_team_knowledge_base_by_name(tmp_path, kb, model):
    team = KnowledgeBase.init(tmp_path / "team")
    write_article(team, Article("wiki/convention/code-review.md", "Code review rule", "convention",
                                RULE, ["review"], ["raw/none.md"], "2026-01-01", "2026-01-01",
                                f"# Code review rule\n\n{RULE}\n"))  # fmt: skip
    write_indexes(team, build_catalog(team))
    commit_all(team, "Add the review rule")
    ours = "wiki/convention/deploys.md"  # a page of the project's own, to edit
    write_article(kb, Article(ours, "Deploy window", "convention", "Deploys run on Tuesdays.",
                              ["deploys"], ["raw/none.md"], "2026-01-01", "2026-01-01",
                              "# Deploy window\n\nDeploys run on Tuesdays.\n"))  # fmt: skip
    kb.config_path.write_text(f'also = ["{team.root}"]\n', encoding="utf-8")
    settings = load_settings(kb.root, {"model": "fake/model", "coverage_judge": "off"}, environ={})
    with make_client(settings, model) as client:
        with client.stream(
            "POST", "/api/ask", json={"question": "How many approvals does a change need?"}
        ) as r:
            assert r.status_code == 200, r.read()
            sid = r.headers["x-session-id"]
            events = list(sse(r))
        done = events[-1][1]
        path = "also/team/wiki/convention/code-review.md"
        assert done["citations"] == [{"title": "Code review rule", "path": path, "kb": "team"}]
        page = client.get(f"/chat/{sid}").text
        assert (
            f'<a href="/{path}">Code review rule</a><span class="other-kb"> (team)</span>' in page
        )
        shown = client.get(f"/{path}")  # where the citation leads: the page, read only
        assert shown.status_code == 200 and RULE in shown.text
        assert "Knowledge base team (read only" in shown.text and "/edit/" not in shown.text
        own = client.get(f"/{ours}")  # the project's own page, by contrast, has its Edit
        assert own.status_code == 200 and 'href="/edit/convention/deploys.md"' in own.text
        assert client.get("/also/nope/wiki/convention/code-review.md").status_code == 404
        assert client.get("/also/team/wiki/convention/nope.md").status_code == 404
