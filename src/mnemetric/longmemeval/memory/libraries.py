"""What the adapters of third-party memory libraries (mem0, graphiti) share.

* :func:`require` imports a library's module or raises a :class:`~mnemetric.errors.ConfigError` naming the
  memory system and the extra to install (``pip install -e ".[mem0]"``), never an ImportError traceback.
* :func:`endpoint` says where the library sends its model calls: the harness's loopback model proxy
  (:mod:`mnemetric.llm.proxy`, when one is running: every call then goes through the response cache, the
  run's budget and its usage ledger) first, else the conf keys ``base_url`` / ``api_key_env``, else the
  ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` environment the openai SDK reads. The key never comes from params.
* Attribution (memory system, phase ``ingest`` / ``query``, question) is the harness's
  (:func:`mnemetric.longmemeval.harness.run_memory` opens ``proxy.attribute`` around each call when a proxy
  runs): an adapter knows no question id.
* A module that wraps a library lists its distributions in a module-level ``LIBRARIES`` tuple; the code
  fingerprint (:func:`mnemetric.fingerprint.fingerprint`) reads it without running the module, so the
  library's name and version land in ``data/fingerprints/memory.json`` and the run manifest, and a library
  upgrade reruns retrieval.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType

from mnemetric.errors import ConfigError


def require(module: str, *, system: str, extra: str) -> ModuleType:
    """Import ``module`` (a library's) or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError("memory", f"memory system {system!r} needs the Python package that provides "
                          f"{module!r}, which is not installed ({exc})",
                          fix=f'pip install -e ".[{extra}]"  (the project\'s {extra!r} extra)') from None


def _proxy():
    """The running model proxy (``mnemetric.llm.proxy.current()``), or None."""
    from mnemetric.llm.proxy import current

    return current()


@dataclass(frozen=True)
class Endpoint:
    base_url: str | None
    api_key: str
    proxied: bool


def endpoint(system: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY") -> Endpoint:
    """Where ``system``'s library sends model calls (module docstring): the proxy, else ``base_url`` and the
    key in ``$api_key_env``, else the SDK's environment."""
    running = _proxy()
    if running is not None:
        return Endpoint(str(running.base_url), str(running.api_key), True)
    key = os.environ.get(api_key_env)
    if not key:
        raise ConfigError("memory.api_key_env", f"memory system {system!r} calls a model, no model proxy is "
                          f"running and ${api_key_env} is not set",
                          fix=f"export {api_key_env}=... (or run it through `dvc exp run`, which starts the proxy)")
    return Endpoint(base_url or os.environ.get("OPENAI_BASE_URL"), key, False)


def chunks(n_messages: int, chunk_turns: int) -> list[range]:
    """Message index ranges a session is ingested in: the whole session (``chunk_turns`` 0) or runs of
    ``chunk_turns`` messages."""
    if chunk_turns < 0:
        raise ConfigError("memory.chunk_turns", f"must be an integer >= 0, got {chunk_turns!r}")
    step = chunk_turns or max(n_messages, 1)
    return [range(i, min(i + step, n_messages)) for i in range(0, n_messages, step)]
