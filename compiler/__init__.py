"""The compile pipeline: sources -> extract -> classify -> write -> index -> commit."""

from compiler.run import Compiler, CompileResult, Failure
from compiler.status import kb_status

__all__ = ["CompileResult", "Compiler", "Failure", "kb_status"]
