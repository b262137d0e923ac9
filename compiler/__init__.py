"""The compile pipeline: intake -> extract -> classify -> plan -> write -> index -> commit."""

from compiler.result import CompileResult, Failure
from compiler.run import Compiler, compile_run
from compiler.status import kb_status

__all__ = ["CompileResult", "Compiler", "Failure", "compile_run", "kb_status"]
