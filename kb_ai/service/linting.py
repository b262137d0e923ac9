"""Lint through the application layer: the mechanical checks (and their repairs,
committed by the actor), and on request the model's."""

from __future__ import annotations

from compiler.lint_deep import deep_lint
from compiler.lint_identity import identity_findings, merge_revisions
from kb_ai.service.opened import OpenKb
from wiki.lint import WARNING, Finding
from wiki.repair import LintReport, lint_and_fix


def lint(okb: OpenKb, *, fix: bool = False) -> LintReport:
    """The wiki's health, with no model call; ``fix``: repair what is mechanical and
    commit it (blocking: files, SQLite, git)."""
    if fix:
        okb.note("lint --fix")
    # one document that became several: merged first (a commit of its own), then listed
    merges, merged = merge_revisions(okb.kb) if fix else ([], None)
    report = lint_and_fix(okb.kb, fix=fix)
    report.findings += identity_findings(okb.kb)
    report.fixed += [
        Finding("duplicate-title", WARNING, path, f"merged into {m.kept}: revisions of one source")
        for m in merges
        for path in m.gone
    ]
    report.commit = report.commit or merged
    return report


async def deep_findings(okb: OpenKb, *, budget: int = 20) -> list[Finding]:
    """The model's findings over the whole wiki (contradictions, unsupported claims),
    in at most ``budget`` calls."""
    return await deep_lint(okb.kb, okb.settings, budget=budget, llm_factory=okb.llm_factory)
