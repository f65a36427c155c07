"""The ``extractive`` reader: offline and deterministic, a floor rather than a claim.

It splits the retrieved context into sentences and returns the one sharing the most content
words with the question (ties: earliest in retrieved order). With no sentence sharing at least
``min_overlap`` content words it answers that the history does not say.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mnemetric.longmemeval.contexts import ContextItem

_SENT = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")
STOP = frozenset("""a an the and or but if of to in on at for with from by about as is are was were be been am
do does did i you he she it we they me my your our their this that these those what which who whom when where
why how much many any some all can could would should will shall may might have has had not no yes so than then
there here up down out over again just also very too into onto ever""".split())
UNKNOWN = "I don't know: the conversation history does not mention this."


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOP}


@dataclass(frozen=True)
class ExtractiveReader:
    name: str = "extractive"
    min_overlap: int = 2
    roles: tuple[str, ...] = ("user", "assistant")

    def answer(self, question: str, items: Sequence[ContextItem]) -> str:
        want = content_words(question)
        best, best_score = None, 0
        for item in items:
            for m in item.messages:
                if m.role not in self.roles:
                    continue
                for sentence in _SENT.split(m.content):
                    score = len(want & content_words(sentence))
                    if score > best_score:
                        best, best_score = sentence.strip(), score
        return best if best is not None and best_score >= self.min_overlap else UNKNOWN
