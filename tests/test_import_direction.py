"""The direction of imports (DESIGN.md): kb_ai.cli -> web -> kb_ai.service -> compiler,
retrieval -> wiki -> the ground of kb_ai (errors, settings, models, prompts, progress,
llm/). Nothing imports kb_ai.cli, the entry points; nothing below the application layer
(kb_ai.service) imports it, and the edges wire no compile, ask or model client of their
own; and no module reaches itself again through its imports.

Checked on the source with ``ast``, so a violation fails even when it sits in a function
that no test calls: an import inside a function or under ``TYPE_CHECKING`` is still an
arrow in the plan."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kb_ai", "wiki", "compiler", "retrieval", "web", "bench")

UPPER = ("wiki", "compiler", "retrieval", "web", "bench", "tests", "kb_ai.service")
# Module prefix -> (forbidden module prefixes, allowed exceptions). The longest prefix that
# matches a module is its rule; every module of PACKAGES must have one.
RULES = {
    "kb_ai.cli": (("bench", "tests"), ()),
    "kb_ai.__main__": (UPPER, ()),
    # the agent hook's entry point: the light runtime, and the CLI's prompt hint
    "kb_ai.hooks.__main__": (UPPER, ()),
    "kb_ai": (("kb_ai.cli", *UPPER), ()),
    "kb_ai.llm": (("kb_ai.cli", *UPPER), ()),
    # the ground wiki stands on: the error tree, and the mechanical checks over text
    # (pure functions, no files, no model) that lint shares with compile and ask, and
    # the search's words and weights, which the agents' prompt hook shares, and the
    # shape of a database_url, which the settings judge too
    "wiki": (
        ("kb_ai", "compiler", "retrieval", "web", "bench", "tests"),
        ("kb_ai.errors", "kb_ai.grounding", "kb_ai.lexicon", "kb_ai.pgurl"),
    ),
    # the application layer: above compiler and retrieval, below every edge
    "kb_ai.service": (("kb_ai.cli", "web", "bench", "tests"), ()),
    "compiler": (("kb_ai.cli", "kb_ai.service", "retrieval", "web", "bench", "tests"), ()),
    "retrieval": (("kb_ai.cli", "kb_ai.service", "compiler", "web", "bench", "tests"), ()),
    "web": (("kb_ai.cli", "bench", "tests"), ()),
    "bench": (("kb_ai.cli",), ()),
}


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


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
    return [
        f"{module}:{line} imports {name}"
        for line, name in sorted(imported_modules(source, module, is_package))
        if any(under(name, p) for p in forbidden) and not any(under(name, a) for a in allowed)
    ]


def all_modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module of PACKAGES."""
    modules = {}
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            rel = file.relative_to(ROOT).with_suffix("")
            if rel.parts[:2] == ("bench", "out"):  # what benchmarks leave (git-ignored)
                continue
            is_package = rel.name == "__init__"
            modules[".".join(rel.parent.parts if is_package else rel.parts)] = (file, is_package)
    return modules


def rule_of(module: str) -> str | None:
    matching = [prefix for prefix in RULES if under(module, prefix)]
    return max(matching, key=len) if matching else None


MODULES = all_modules()


@pytest.mark.parametrize("prefix", sorted(RULES))
def test_imports_go_one_way(prefix):
    forbidden, allowed = RULES[prefix]
    problems = []
    for module, (file, is_package) in MODULES.items():
        if rule_of(module) == prefix:
            source = file.read_text(encoding="utf-8")
            problems += violations(source, module, is_package, forbidden, allowed)
    assert problems == []


# What only the application layer does: open a model client, run a compile, an ask or a
# worker, remove sources, approve runs. The edges call kb_ai.service for these; the
# model probes (doctor, the agent hooks' model check) talk to a model with no KB at all.
WIRING = (
    "kb_ai.llm.open_llm",
    "kb_ai.llm.client.open_llm",
    "compiler.Compiler",
    "compiler.run",
    "compiler.worker",
    "compiler.removal",
    "compiler.review",
    "compiler.lint_deep",
    "retrieval.Asker",
    "retrieval.ask",
)
EDGES = ("kb_ai.cli", "web")
PROBES = ("kb_ai.cli.doctor", "kb_ai.cli.agent_hooks.model_check")


def wiring_violations(source: str, module: str, is_package: bool) -> list[str]:
    return violations(source, module, is_package, WIRING, ())


def test_the_edges_wire_nothing_of_their_own():
    problems = []
    for module, (file, is_package) in MODULES.items():
        edge = any(under(module, e) for e in EDGES)
        if edge and not any(under(module, p) for p in PROBES):
            problems += wiring_violations(file.read_text(encoding="utf-8"), module, is_package)
    assert problems == []


def test_the_floor_under_the_application_layer_holds():
    """compiler, retrieval, wiki and the ground below them may not import kb_ai.service;
    the service may not import an edge."""
    below = "from kb_ai.service import open_kb\nimport kb_ai.service.asking\n"
    for module, rule in (
        ("compiler.run", "compiler"),
        ("retrieval.ask", "retrieval"),
        ("wiki.git", "wiki"),
        ("kb_ai.llm.client", "kb_ai.llm"),
        ("kb_ai.settings", "kb_ai"),
    ):
        assert rule_of(module) == rule
        assert len(violations(below, module, False, *RULES[rule])) == 2, module
    assert violations("from web.app import create_app\n", "kb_ai.service.kb", False,
                      *RULES["kb_ai.service"]) == ["kb_ai.service.kb:1 imports web.app.create_app"]  # fmt: skip
    assert (
        violations("import compiler.run\n", "kb_ai.service.kb", False, *RULES["kb_ai.service"])
        == []
    )
    assert rule_of("kb_ai.service.asking") == "kb_ai.service"
    # an edge that opened its own model client or compiler would be caught
    assert wiring_violations("from kb_ai.llm import open_llm\n", "web.streams", False) == [
        "web.streams:1 imports kb_ai.llm.open_llm"
    ]
    assert wiring_violations("from compiler import Compiler\n", "kb_ai.cli", True) == [
        "kb_ai.cli:1 imports compiler.Compiler"
    ]


def test_every_module_falls_under_a_rule():
    assert len(MODULES) > 50
    assert [module for module in MODULES if rule_of(module) is None] == []


@pytest.mark.parametrize("prefix", sorted(RULES))
def test_each_rule_still_matches_modules(prefix):
    """A rule whose package was moved or renamed would pass for nothing."""
    assert [module for module in MODULES if rule_of(module) == prefix], (
        f"the rule for {prefix} matches no module: was the package moved?"
    )


def dependencies(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (``from a import b`` is a.b when that
    is a module, else a; a parent package is not counted for importing its child)."""
    graph = {}
    for module, (file, is_package) in modules.items():
        targets = set()
        for _, name in imported_modules(file.read_text(encoding="utf-8"), module, is_package):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that reach each other through their imports (strongly
    connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iteratively: (module, its targets not yet looked at).
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_no_module_imports_itself_round_a_circle():
    assert circles(dependencies(MODULES)) == []


def test_the_circle_finder_sees_long_and_short_circles():
    graph = {
        "a": {"b"},
        "b": {"c", "d"},
        "c": {"a"},
        "d": {"e"},
        "e": {"d"},
        "f": {"a"},
    }
    assert circles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": set()}) == []


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
    assert rule_of("kb_ai.cli.agent_hooks.run") == "kb_ai.cli"
    assert rule_of("kb_ai.settings") == "kb_ai"
    assert rule_of("kb_ai.climate") == "kb_ai"  # a prefix matches whole names only
