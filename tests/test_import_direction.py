"""The direction of imports (DESIGN.md): web, kb_ai.cli, kb_ai.mcp -> compiler, retrieval ->
wiki, kb_ai.llm. Checked on the source with ``ast``, so a violation fails even when it sits
in a function that no test calls."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# package -> (forbidden module prefixes, allowed exceptions)
RULES = {
    "wiki": (("kb_ai", "compiler", "retrieval", "web"), ("kb_ai.errors",)),
    "kb_ai/llm": (("wiki", "compiler", "retrieval", "web"), ()),
    "compiler": (("web", "kb_ai.cli"), ()),
    "retrieval": (("web", "kb_ai.cli"), ()),
}


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``source``, relative ones made absolute.

    ``from a import b`` counts as ``a.b``, so ``from kb_ai import errors`` is kb_ai.errors.
    """
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def violations(source: str, module: str, is_package: bool, forbidden, allowed) -> list[str]:
    def under(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return [
        f"{module}:{line} imports {name}"
        for line, name in sorted(imported_modules(source, module, is_package))
        if any(under(name, p) for p in forbidden) and not any(under(name, a) for a in allowed)
    ]


def python_files(package: str) -> list[Path]:
    path = ROOT / package
    return sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


@pytest.mark.parametrize("package", sorted(RULES))
def test_imports_go_one_way(package):
    forbidden, allowed = RULES[package]
    files = [f for f in python_files(package) if f.is_file()]
    assert files, f"no Python files found for {package}"
    problems = []
    for file in files:
        rel = file.relative_to(ROOT).with_suffix("")
        is_package = rel.name == "__init__"
        module = ".".join(rel.parent.parts if is_package else rel.parts)
        problems += violations(
            file.read_text(encoding="utf-8"), module, is_package, forbidden, allowed
        )
    assert problems == []


def test_the_check_sees_absolute_relative_and_nested_imports():
    source = (
        "import os\n"
        "from kb_ai.errors import KbAiError\n"
        "from kb_ai import errors, settings\n"
        "def late():\n"
        "    import compiler.run\n"
        "    from . import catalog\n"
    )
    assert violations(source, "wiki.articles", False, *RULES["wiki"]) == [
        "wiki.articles:3 imports kb_ai.settings",
        "wiki.articles:5 imports compiler.run",
    ]
    assert imported_modules("from ..cli import main", "kb_ai.llm.client", False) == [
        (1, "kb_ai.cli.main")
    ]
    assert imported_modules("from .client import LLM", "kb_ai.llm", True) == [
        (1, "kb_ai.llm.client.LLM")
    ]
