"""Servers on one database and one wiki remote follow a push at once: the writer sends a
NOTIFY after each push and every follower LISTENs, so polling is only the fallback."""

from kb_ai.service.remote import init_from_remote
from tests.remotes import bare
from tests.web.conftest import Model, make_client
from tests.web.test_remote import compile_note, settings_of, wait_until


def test_a_push_is_served_by_the_other_server_long_before_its_next_poll(
    tmp_path, pg_url, monkeypatch
):
    monkeypatch.setenv("KB_AI_DATABASE_URL", pg_url)
    model = Model()
    remote = bare(tmp_path / "wiki.git")
    init_from_remote(tmp_path / "writer", str(remote))
    init_from_remote(tmp_path / "reader", str(remote))
    # one round when it starts, the next only after ten minutes: a notification or nothing
    reader_settings = settings_of(tmp_path / "reader", wiki_follow_seconds=600)

    with make_client(reader_settings, model, start_worker=False) as reader:
        wait_until(lambda: reader.app.state.services.follower.rounds >= 1)
        result = compile_note(tmp_path / "writer", model, tmp_path, "backups",
                              "# Nightly backups\n\nBackups run nightly at 02:00.\n")  # fmt: skip
        (path,) = result.created

        page = wait_until(lambda: (r := reader.get(f"/{path}")).status_code == 200 and r, 20)
        assert "Nightly backups" in page.text
