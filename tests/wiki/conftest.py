import pytest


@pytest.fixture(autouse=True)
def no_git_identity(tmp_path_factory, monkeypatch):
    """Git as on a fresh machine: no user config, no system config, no identity."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    for name in (
        "XDG_CONFIG_HOME",
        "EMAIL",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def article_reads(monkeypatch):
    """``article_reads(module)`` returns a list that records every article ``module``
    reads from disk from then on (its ``read_article`` is watched)."""

    def watch(module):
        seen: list[str] = []
        real = module.read_article

        def counting(kb, rel):
            seen.append(rel)
            return real(kb, rel)

        monkeypatch.setattr(module, "read_article", counting)
        return seen

    return watch
