"""Readers: answer a question from the retrieved context (extractive offline floor, or a chat model)."""

from mnemetric.longmemeval.reader.extractive import ExtractiveReader
from mnemetric.longmemeval.reader.prompt import build_prompt, render_history

__all__ = ["ExtractiveReader", "build_prompt", "render_history"]
