"""The compile pipeline: sources -> extract -> classify -> write -> index -> commit."""

from compiler.result import CompileResult, Failure
from compiler.run import Compiler
from compiler.status import kb_status

__all__ = ["CompileResult", "Compiler", "Failure", "kb_status"]
