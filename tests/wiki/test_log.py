from datetime import UTC, datetime

from wiki import append_log


def test_log_appends_one_section_per_run(kb):
    before = kb.log_path.read_text()

    append_log(
        kb,
        "compile",
        ["created wiki/a/b.md", "sources: 2\ncompiled"],
        when=datetime(2024, 5, 2, 10, 0, tzinfo=UTC),
    )
    append_log(kb, "compile", ["nothing changed"], when=datetime(2024, 5, 3, 9, 30, tzinfo=UTC))

    text = kb.log_path.read_text()
    assert text.startswith(before)
    assert text[len(before) :] == (
        "\n## 2024-05-02T10:00:00+00:00 compile\n\n"
        "- created wiki/a/b.md\n- sources: 2 compiled\n"
        "\n## 2024-05-03T09:30:00+00:00 compile\n\n- nothing changed\n"
    )


def test_log_is_created_when_missing(kb):
    kb.log_path.unlink()

    append_log(kb, "compile", ["x"])

    assert kb.log_path.read_text().startswith("# kb-ai log")
