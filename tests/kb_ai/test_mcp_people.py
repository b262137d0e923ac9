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
