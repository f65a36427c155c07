"""The memory-context token budget of LongMemEval-V2: pluggable counters and upstream's prefix cut.

Facts from github.com/xiaowu0162/LongMemEval-V2 at be15ea6e995462f3391c1a610892df3f67dfa7bd,
evaluation/harness.py count_memory_context_tokens / truncate_memory_context (lines 336-438; code ours):

* Only the memory items are counted. An empty list counts 0. Otherwise the items become ONE user message
  of content parts (a text item → ``{"type": "text", "text": value}``, an image item →
  ``{"type": "image"}`` with the image opened and converted to RGB), rendered with the processor's chat
  template (``tokenize=False, add_generation_prompt=False``), the processor is run on that text and the
  images, and the count is the length of ``input_ids`` — so template tokens and expanded image tokens
  count. The processor is always ``Qwen/Qwen3.5-9B`` (whatever the reader model).
* Budget: default 200,000 tokens (run_eval ``--memory-context-max-tokens``); it must be > 0. If the whole
  list fits it is kept; else the longest whole-item PREFIX that fits is found by binary search —
  ``lo = 0, hi = n; while lo < hi: mid = (lo + hi + 1) // 2; lo = mid if count(prefix mid) <= budget
  else hi = mid - 1`` — each prefix counted on its own (memoised; count(0) = 0). Returned: the kept
  prefix, the original count and the kept prefix's count; was_truncated = original > final.

Counters (conf options under conf/v2/token_counter/, built by ``_target_``):
:class:`QwenProcessorCounter` is the official one; it is loaded from a local folder or the
Hugging Face cache only (``local_files_only``), never downloaded here, and needs ``transformers``,
``pillow``, ``torch`` and ``torchvision``. :class:`O200kCounter` is an offline stand-in for the bundled
sample: o200k_base tokens of each text item, plus a fixed count per image and per message (our numbers,
not upstream's); a run that uses it is not official.

The Qwen/Qwen3.5-9B folder names a ``Qwen3VLProcessor`` (tokenizer, Qwen2-VL image processor, chat
template, and a video processor that needs torchvision). Without a working torchvision,
:func:`load_official_counter` builds that processor class from the folder's tokenizer, chat template and
image processor with the video half left out (:func:`_processor_without_video`); the count still runs
through the processor's own ``__call__`` (an image is ``t*h*w // merge_size**2`` placeholder tokens of its
smart_resize grid, the same function in the pil and torchvision image processors). That counter is marked
NOT official, its note says why: the equivalence is argued from transformers' code, not tested against the
full processor.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mnemetric.errors import ConfigError

DEFAULT_MAX_TOKENS = 200_000
OFFICIAL_PROCESSOR = "Qwen/Qwen3.5-9B"
COUNTER_EXTRA = "qwen-counter"
"""The pyproject extra that installs the official counter's packages."""
COUNTER_PACKAGES = (("transformers", "transformers"), ("PIL", "pillow"), ("torch", "torch"))
"""(module, distribution) the official counter imports."""
PROCESSOR_FILES = ("tokenizer.json", "tokenizer_config.json", "preprocessor_config.json")
"""The Qwen/Qwen3.5-9B processor files the counter reads (plus a chat template: :data:`CHAT_TEMPLATE_FILES`, or
one inside tokenizer_config.json); no model weights."""
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
HOW_TO_GET_PROCESSOR = (
    f"install the counter's packages (pip install 'mnemetric[{COUNTER_EXTRA}]', plus torchvision built for the "
    "installed torch for the video half) and put the Qwen/Qwen3.5-9B processor files "
    f"({', '.join(PROCESSOR_FILES)}, {CHAT_TEMPLATE_FILES[0]}; no weights) in the Hugging Face cache on a machine "
    "with network access (hf download Qwen/Qwen3.5-9B --exclude '*.safetensors'), or set the folder that holds "
    "them (-S v2.token_counter.path=<folder>); or choose the o200k counter (-S v2/token_counter=o200k: the run "
    "is then marked not official)")


class TokenCounter(Protocol):
    name: str
    official: bool
    note: str | None
    """Why this counter stands in for the official one (added to the not-official reasons), or None."""

    def count(self, items: Sequence[dict[str, str]]) -> int:
        """Tokens of the items as one user message (0 for no items)."""


@dataclass
class O200kCounter:
    """Offline stand-in: message overhead + o200k_base tokens of each text + a fixed count per image."""

    image_tokens: int = 256
    message_tokens: int = 4
    name: str = "o200k-standin"
    official: bool = False
    note: str | None = None
    _enc: Any = field(default=None, init=False, repr=False)

    def count(self, items: Sequence[dict[str, str]]) -> int:
        if not items:
            return 0
        if self._enc is None:
            import bpe_openai

            self._enc = bpe_openai.get_encoding("o200k_base")
        total = self.message_tokens
        for item in items:
            total += self.image_tokens if item["type"] == "image" else len(self._enc.encode(item["value"]))
        return total

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the loaded encoder (not picklable; a worker loads its own on first use)."""
        return {**self.__dict__, "_enc": None}


@dataclass
class QwenProcessorCounter:
    """The official counter: the Qwen/Qwen3.5-9B processor, with its chat template and image tokens."""

    processor: Any
    source: str
    name: str = "qwen3.5-9b-processor"
    official: bool = True
    note: str | None = None

    def count(self, items: Sequence[dict[str, str]]) -> int:
        if not items:
            return 0
        from PIL import Image

        parts: list[dict[str, str]] = []
        images = []
        for item in items:
            if item["type"] == "text":
                parts.append({"type": "text", "text": item["value"]})
                continue
            parts.append({"type": "image"})
            with Image.open(item["value"]) as im:
                images.append(im.convert("RGB"))
        text = self.processor.apply_chat_template([{"role": "user", "content": parts}], tokenize=False,
                                                  add_generation_prompt=False)
        encoded = self.processor(text=text, images=images or None, return_tensors="pt")
        return int(encoded["input_ids"].shape[-1])


def load_official_counter(path: str | os.PathLike[str] | None = None,
                          name: str = "qwen3.5-9b-processor") -> QwenProcessorCounter:
    """conf/v2/token_counter/qwen.yaml: the Qwen/Qwen3.5-9B processor from ``path`` (a local folder) or the
    HF cache; never downloads.

    A missing package or processor is a ConfigError that says how to get it (:data:`HOW_TO_GET_PROCESSOR`).
    """
    source = os.fspath(path) if path is not None else OFFICIAL_PROCESSOR
    try:
        import PIL  # noqa: F401
        from transformers import AutoProcessor
    except ImportError as exc:
        raise ConfigError("token_counter", f"the official counter needs transformers and pillow ({exc.name} is "
                          "not installed)", fix=HOW_TO_GET_PROCESSOR) from None
    try:
        with hub_offline():
            processor = AutoProcessor.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError("token_counter", f"the {OFFICIAL_PROCESSOR} processor is not available locally "
                          f"({source}): {_first_line(exc)}", fix=HOW_TO_GET_PROCESSOR) from None
    except (ImportError, RuntimeError) as exc:  # a sub-processor's backend (torchvision) is missing or broken
        processor = _processor_without_video(source, exc)
        note = (f"the {OFFICIAL_PROCESSOR} processor was loaded without its video processor ({_first_line(exc)}): "
                "same tokenizer, chat template and image processor, not verified against the full processor; "
                "install torchvision built for the installed torch for the official counter")
        return QwenProcessorCounter(processor, source, name=f"{name}-no-video", official=False, note=note)
    return QwenProcessorCounter(processor, source, name=name)


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Hugging Face offline mode while the processor loads: ``local_files_only`` alone still lets
    transformers 5 open a connection to the Hub (measured: one connect to huggingface.co:443 when the
    processor is not cached). HF_HUB_OFFLINE is read at import, so the loaded constant is set too;
    both are restored afterwards."""
    import huggingface_hub.constants as hub

    saved_env, saved_const = os.environ.get("HF_HUB_OFFLINE"), hub.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"], hub.HF_HUB_OFFLINE = "1", True
    try:
        yield
    finally:
        hub.HF_HUB_OFFLINE = saved_const
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _processor_without_video(source: str, cause: BaseException) -> Any:
    """The folder's ``Qwen3VLProcessor`` built from its tokenizer (with the chat template) and image processor,
    with no video processor: the attributes ``Qwen3VLProcessor.__init__`` (transformers 5) sets, without its
    class check of the video half (which fails when torchvision is missing). Another class: ConfigError."""
    import transformers
    from transformers import AutoImageProcessor, AutoTokenizer

    declared = _declared_processor_class(source)
    if declared != "Qwen3VLProcessor":
        raise ConfigError("token_counter", f"the processor at {source} needs a missing package "
                          f"({_first_line(cause)}) and is {declared or 'of an unknown class'}, not the "
                          "Qwen3VLProcessor of Qwen/Qwen3.5-9B", fix=HOW_TO_GET_PROCESSOR) from None
    try:
        with hub_offline():
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
            image_processor = AutoImageProcessor.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError, ImportError) as exc:
        raise ConfigError("token_counter", f"the {OFFICIAL_PROCESSOR} processor at {source} cannot be loaded "
                          f"({_first_line(exc)})", fix=HOW_TO_GET_PROCESSOR) from None
    processor = transformers.Qwen3VLProcessor.__new__(transformers.Qwen3VLProcessor)
    processor.tokenizer, processor.image_processor, processor.video_processor = tokenizer, image_processor, None
    processor.chat_template = tokenizer.chat_template
    for kind, default in (("image", "<|image_pad|>"), ("video", "<|video_pad|>"),
                          ("vision_start", "<|vision_start|>"), ("vision_end", "<|vision_end|>")):
        token = getattr(tokenizer, f"{kind}_token", None) or default
        setattr(processor, f"{kind}_token", token)
        setattr(processor, f"{kind}_token_id",
                getattr(tokenizer, f"{kind}_token_id", None) or tokenizer.convert_tokens_to_ids(token))
    return processor


def _declared_processor_class(source: str) -> str | None:
    """``processor_class`` of processor_config.json, else preprocessor_config.json, else tokenizer_config.json
    of the folder (or HF cache snapshot); None when none says."""
    import json

    for file_name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        path = _local_file(source, file_name)
        if path is not None:
            with open(path, encoding="utf-8") as fh:
                declared = json.load(fh).get("processor_class")
            if declared:
                return str(declared)
    return None


def _local_file(source: str, file_name: str) -> str | None:
    """``file_name`` in the folder ``source``, or in the HF cache snapshot of repo id ``source``; None if absent."""
    if os.path.isdir(source):
        path = os.path.join(source, file_name)
        return path if os.path.isfile(path) else None
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(source, file_name)
    return found if isinstance(found, str) else None


OFFICIAL_COUNTER_TARGET = "mnemetric.longmemeval_v2.tokens.load_official_counter"


def preflight_counter(cfg: Any) -> None:
    """Before a download: when ``cfg`` (the ``v2.token_counter`` section) is the official counter, check that its
    packages are installed and the processor files are at hand (``path``, else the HF cache), without importing
    the packages; a ConfigError names the extra to install and every missing file (:data:`HOW_TO_GET_PROCESSOR`).
    Other counters need nothing. The full load (:func:`load_official_counter`) still happens when the run starts."""
    import importlib.util

    if not isinstance(cfg, dict) or cfg.get("_target_") != OFFICIAL_COUNTER_TARGET:
        return
    missing = [dist for module, dist in COUNTER_PACKAGES if importlib.util.find_spec(module) is None]
    if missing:
        raise ConfigError("v2.token_counter", f"the official token counter ({OFFICIAL_PROCESSOR} processor) needs "
                          f"{', '.join(missing)}, not installed (the '{COUNTER_EXTRA}' extra); checked before any "
                          "download", fix=HOW_TO_GET_PROCESSOR)
    source = os.fspath(cfg["path"]) if cfg.get("path") else OFFICIAL_PROCESSOR
    if cfg.get("path") and not os.path.isdir(source):
        raise ConfigError("v2.token_counter.path", f"{source} is not a folder (the {OFFICIAL_PROCESSOR} processor "
                          "files); checked before any download", fix=HOW_TO_GET_PROCESSOR)
    absent = [f for f in PROCESSOR_FILES if _local_file(source, f) is None]
    if all(_local_file(source, f) is None for f in CHAT_TEMPLATE_FILES) and not _template_in_config(source):
        absent.append(CHAT_TEMPLATE_FILES[0])
    if absent:
        where = f"the folder {source}" if cfg.get("path") else f"the Hugging Face cache ({OFFICIAL_PROCESSOR})"
        raise ConfigError("v2.token_counter", f"the {OFFICIAL_PROCESSOR} processor files are not in {where}: "
                          f"missing {', '.join(absent)}; checked before any download", fix=HOW_TO_GET_PROCESSOR)


def _template_in_config(source: str) -> bool:
    import json

    path = _local_file(source, "tokenizer_config.json")
    if path is None:
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            return bool(json.load(fh).get("chat_template"))
    except (OSError, ValueError, AttributeError):
        return False


def auto_counter(path: str | os.PathLike[str] | None = None, name: str = "auto") -> TokenCounter:
    """conf/v2/token_counter/auto.yaml: the official counter when it is available locally; else the o200k
    stand-in whose ``note`` says why and how to get the official one (the run is then not official).
    The counter keeps its own name (``name`` is the option's)."""
    try:
        return load_official_counter(path)
    except ConfigError as exc:
        return O200kCounter(note=f"official token counter unavailable, o200k stand-in used: {exc}")


def fit_to_budget(items: Sequence[dict[str, str]], max_tokens: int,
                  count: Callable[[Sequence[dict[str, str]]], int]) -> tuple[list[dict[str, str]], int, int]:
    """(kept prefix, original count, kept count) by upstream's binary search (module docstring)."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
        raise ConfigError("memory_context_max_tokens", f"must be a positive integer, got {max_tokens!r}")
    items = list(items)
    memo: dict[int, int] = {0: 0}

    def prefix(n: int) -> int:
        if n not in memo:
            memo[n] = count(items[:n])
        return memo[n]

    original = prefix(len(items))
    if original <= max_tokens:
        return items, original, original
    lo, hi = 0, len(items)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if prefix(mid) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return items[:lo], original, prefix(lo)
