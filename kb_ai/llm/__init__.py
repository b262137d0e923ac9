"""The LLM layer: the one boundary through which kb-ai talks to models.

Importing this package does not import litellm; the first call through a litellm
transport does.
"""

from kb_ai.llm._turns import calling_as
from kb_ai.llm.client import LLMClient, open_llm
from kb_ai.llm.store import usage_totals
from kb_ai.llm.types import LLM, Completion, Usage

__all__ = ["LLM", "Completion", "LLMClient", "Usage", "calling_as", "open_llm", "usage_totals"]
