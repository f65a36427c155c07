"""Readers: answer a question from the retrieved context (extractive offline floor, or a chat model)."""

from .extractive import ExtractiveReader
from .prompt import build_prompt, render_history

__all__ = ["ExtractiveReader", "build_prompt", "render_history"]
