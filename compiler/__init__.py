"""The compile pipeline: intake -> extract -> classify -> plan -> write -> index -> commit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compiler.result import CompileResult, Failure
    from compiler.run import Compiler, compile_run
    from compiler.status import kb_status

__all__ = ["CompileResult", "Compiler", "Failure", "compile_run", "kb_status"]

# Imported when first asked for: a process that only needs one light module of the
# package (the check process, compiler/check_process.py) does not import the pipeline.
_HOMES = {
    "CompileResult": "compiler.result",
    "Failure": "compiler.result",
    "Compiler": "compiler.run",
    "compile_run": "compiler.run",
    "kb_status": "compiler.status",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'compiler' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
