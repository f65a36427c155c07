"""Run many coroutines at most N at once, stopping new work after the first error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


async def gather_until_error(items: Sequence[T], worker: Callable[[T], Awaitable[R]], limit: int) -> list[R | None]:
    """``[await worker(item) for item in items]``, at most ``limit`` running at once.

    After the first exception no new item starts (its slot is ``None``); items already running
    finish (so what they received is kept, e.g. committed to the cache), then the first
    exception is raised. Results are in input order.
    """
    gate = asyncio.Semaphore(max(1, limit))
    errors: list[BaseException] = []

    async def one(item: T) -> R | None:
        async with gate:
            if errors:
                return None
            try:
                return await worker(item)
            except Exception as exc:
                errors.append(exc)
                return None

    results = await asyncio.gather(*(one(item) for item in items))
    if errors:
        raise errors[0]
    return list(results)
