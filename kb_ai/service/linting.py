"""Lint through the application layer: the mechanical checks (and their repairs,
committed by the actor), and on request the model's."""

from __future__ import annotations

from compiler.lint_deep import deep_lint
from compiler.lint_identity import lint_all
from compiler.lint_thin import thin_findings
from compiler.review import waiting_hand_edits
from kb_ai.service.opened import OpenKb
from kb_ai.service.remote import publish
from wiki.lint import Finding
from wiki.repair import LintReport


def lint(okb: OpenKb, *, fix: bool = False) -> LintReport:
    """The wiki's health, with no model call; ``fix``: repair what is mechanical and
    commit it (blocking: files, SQLite, git)."""
    if fix:
        okb.note("lint --fix")
    report = lint_all(okb.kb, fix=fix)  # with what lint finds of one document made several
    if fix:
        publish(okb)
    report.findings += waiting_hand_edits(okb.kb)  # updates that met a person's change
    report.findings += thin_findings(okb.kb)  # articles that lost what their source states
    return report


async def deep_findings(okb: OpenKb, *, budget: int = 20) -> list[Finding]:
    """The model's findings over the whole wiki (contradictions, unsupported claims),
    in at most ``budget`` calls."""
    return await deep_lint(okb.kb, okb.settings, budget=budget, llm_factory=okb.llm_factory)
