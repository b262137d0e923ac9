"""MCP over HTTP on a server with people: a reader's token may ask, no token may not."""

import pytest
from mcp.shared.exceptions import MCPError

from kb_ai.service import open_kb, people
from tests.kb_ai.test_mcp import BACKUPS, asking, kb, model, over_http, serving  # noqa: F401


def test_a_readers_token_asks_over_mcp_and_no_token_is_refused(kb, model):  # noqa: F811
    from kb_ai.cli.serve import mcp_mount
    from kb_ai.settings import load_settings
    from web import create_app

    settings = load_settings(kb.root)
    _, token = people.add(open_kb(settings=settings), "Rita Reader", "reader")
    routes, lifespans = mcp_mount(settings)
    app = create_app(settings, start_worker=False, extra_routes=routes, extra_lifespans=lifespans)
    asked = len(model.requests)
    with serving(app) as url:
        statuses: list[int] = []
        with pytest.raises(ExceptionGroup) as caught:
            over_http(
                url, asking("How long are nightly backups kept?"), token=None, statuses=statuses
            )
        assert caught.group_contains(MCPError) and set(statuses) == {401}
        assert len(model.requests) == asked  # nothing reached the model
        result = over_http(url, asking("How long are nightly backups kept?"), token=token)
    assert not result.is_error
    assert f"[Nightly backups]({BACKUPS})" in result.content[0].text


def test_a_persons_questions_over_mcp_share_their_limit_with_the_api(kb, model):  # noqa: F811
    """questions_per_minute holds per person over MCP too, one share with /api/ask: past
    it the tool error says 429 and how long to wait; someone else still gets answers."""
    import httpx2

    from kb_ai.cli.serve import mcp_mount
    from kb_ai.service.fairness import QuestionBuckets
    from kb_ai.settings import load_settings
    from web import create_app

    kb.config_path.write_text(kb.config_path.read_text() + "questions_per_minute = 2\n")
    settings = load_settings(kb.root)
    okb = open_kb(settings=settings)
    _, rita = people.add(okb, "Rita Reader", "reader")
    _, pat = people.add(okb, "Pat Reader", "reader")
    questions = QuestionBuckets(settings.questions_per_minute)
    routes, lifespans = mcp_mount(settings, questions)
    app = create_app(
        settings, start_worker=False, extra_routes=routes, extra_lifespans=lifespans,
        questions=questions,
    )  # fmt: skip
    question = "How long are nightly backups kept?"
    with serving(app) as url:
        first = over_http(url, asking(question), token=rita)
        assert not first.is_error
        api = httpx2.post(
            f"{url}/api/ask", json={"question": question, "save": False},
            headers={"authorization": f"Bearer {rita}"}, timeout=30,
        )  # fmt: skip
        assert api.status_code == 200  # her second question of the minute
        third = over_http(url, asking(question), token=rita)
        other = over_http(url, asking(question), token=pat)
    assert third.is_error and third.structured_content["status"] == 429
    assert third.structured_content["kind"] == "TooManyQuestionsError"
    assert third.structured_content["retry_after"] > 0
    assert "questions_per_minute" in third.structured_content["hint"]
    assert not other.is_error and f"[Nightly backups]({BACKUPS})" in other.content[0].text
