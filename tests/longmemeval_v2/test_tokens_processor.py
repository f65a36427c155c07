"""The official token counter (tokens.py QwenProcessorCounter) on a tiny processor folder authored here in the
Qwen/Qwen3.5-9B layout: tokenizer.json (built with the ``tokenizers`` library), tokenizer_config.json, a chat
template (ours, Qwen-style markers), a Qwen2-VL image processor config (preprocessor_config.json), a
Qwen3-VL video processor config and processor_config.json naming ``Qwen3VLProcessor``.

Counted as upstream counts (LongMemEval-V2 evaluation/harness.py count_memory_context_tokens @ be15ea6):
the items as ONE user message of text parts and image placeholders, the chat template rendered without a
generation prompt, the processor run on the text and the RGB images, len(input_ids). Expected values are
worked by hand and by a naive count written here: the word-level vocabulary and whitespace pre-tokenizer make
every word one token, and an image of height H, width W is round(H/32)*round(W/32) placeholder tokens
(patch 16, merge 2, bounds that never rescale these sizes) between vision start/end markers.

Skipped, with the reason, when transformers / pillow / torch are not importable; no marker, so the plain
suite runs it wherever the packages are installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("transformers", reason="the official token counter needs transformers (not installed)")
pytest.importorskip("PIL", reason="the official token counter needs pillow (not installed)")
pytest.importorskip("torch", reason="the official token counter needs torch (not installed)")

from PIL import Image  # noqa: E402
from tokenizers import AddedToken, Tokenizer  # noqa: E402
from tokenizers.models import WordLevel  # noqa: E402
from tokenizers.pre_tokenizers import Whitespace  # noqa: E402

from mnemetric.longmemeval_v2.tokens import auto_counter, fit_to_budget, load_official_counter  # noqa: E402

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
           "<|video_pad|>"]
WORDS = ["[UNK]", "user", "free", "shipping", "on", "orders", "Meadow", "Post", "."]
TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message.role + '\\n' -}}"
    "{%- if message.content is string -%}{{- message.content -}}{%- else -%}"
    "{%- for part in message.content -%}"
    "{%- if part.type == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part.type == 'text' -%}{{- part.text -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}")
IMAGE_CONFIG = {"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
                "size": {"shortest_edge": 32 * 32, "longest_edge": 4096 * 4096},
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor"}


def write_processor(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "unk_token": "[UNK]", "model_max_length": 262144, "processor_class": "Qwen3VLProcessor"}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    (folder / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Qwen2VLImageProcessor", **IMAGE_CONFIG}))
    (folder / "video_preprocessor_config.json").write_text(json.dumps(
        {"video_processor_type": "Qwen3VLVideoProcessor", **IMAGE_CONFIG}))
    (folder / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen3VLProcessor"}))
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_processor(tmp_path_factory.mktemp("qwen-like-processor"))


@pytest.fixture(scope="module")
def counter(folder):
    return load_official_counter(folder)


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict[tuple[int, int], str]:
    root = tmp_path_factory.mktemp("images")
    out = {}
    for width, height, mode in ((64, 32, "RGB"), (100, 50, "RGBA"), (32, 96, "P")):
        path = root / f"{width}x{height}.png"
        Image.new(mode, (width, height)).save(path)
        out[(height, width)] = str(path)
    return out


def text(value: str) -> dict[str, str]:
    return {"type": "text", "value": value}


def image(path: str) -> dict[str, str]:
    return {"type": "image", "value": path}


def torchvision_works() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - a CUDA build against a CPU torch raises RuntimeError at import
        return False
    return True


def test_loads_from_a_local_folder_and_says_how_it_was_loaded(counter, folder):
    assert counter.source == str(folder)
    if torchvision_works():
        assert (counter.name, counter.official, counter.note) == ("qwen3.5-9b-processor", True, None)
    else:  # the Qwen3-VL video processor needs torchvision: the processor is built without its video half
        assert counter.name == "qwen3.5-9b-processor-no-video" and not counter.official
        assert "without its video processor" in counter.note and "torchvision" in counter.note
    assert auto_counter(folder).name == counter.name  # auto takes it rather than the o200k stand-in


def test_worked_counts(counter, images):
    assert counter.count([]) == 0
    # <|im_start|> user free shipping <|im_end|>  (the newlines are not tokens here)
    assert counter.count([text("free shipping")]) == 5
    # + <|vision_start|> 2 pads <|vision_end|>: 32x64 is a 2x4 patch grid, 8 patches / merge 2*2 = 2 tokens
    assert counter.count([text("free shipping "), image(images[(32, 64)]), text("Meadow Post .")]) == 5 + 4 + 3
    # 50x100 (RGBA, converted to RGB) resizes to 64x96 (round(50/32)=2, round(100/32)=3): 4x6 patches -> 6 tokens
    assert counter.count([image(images[(50, 100)])]) == 3 + 2 + 6
    # 96x32 (palette PNG): 3x1 merged cells -> 3 tokens
    assert counter.count([image(images[(96, 32)]), image(images[(32, 64)])]) == 3 + (2 + 3) + (2 + 2)


def test_text_parts_are_joined_without_a_separator(counter):
    # upstream renders the parts back to back: "free" + "shipping" become the one unknown word "freeshipping"
    assert counter.count([text("free"), text("shipping")]) == 4
    assert counter.count([text("free "), text("shipping")]) == 5


def naive_count(items, sizes) -> int:
    if not items:
        return 0
    total = 3  # <|im_start|>, "user", <|im_end|>
    for item in items:
        if item["type"] == "text":
            total += len(item["value"].split())
        else:
            height, width = sizes[item["value"]]
            total += 2 + round(height / 32) * round(width / 32)
    return total


TEXTS = ["free ", "shipping on orders ", "Meadow Post . ", "unknown words here "]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(TEXTS).map(text), st.sampled_from([0, 1, 2]).map(lambda i: ("img", i))),
                max_size=6), st.integers(1, 40))
def test_count_and_cut_equal_a_naive_count(counter, images, picks, budget):
    paths = sorted(images.values())
    sizes = {path: hw for hw, path in images.items()}
    items = [image(paths[p[1]]) if isinstance(p, tuple) else p for p in picks]
    assert counter.count(items) == naive_count(items, sizes)
    kept, original, final = fit_to_budget(items, budget, counter.count)
    longest = max(n for n in range(len(items) + 1) if naive_count(items[:n], sizes) <= budget)
    assert kept == items[:longest]
    assert (original, final) == (naive_count(items, sizes), naive_count(kept, sizes))


def test_worked_cut(counter, images):
    items = [text("free shipping "), image(images[(50, 100)]), text("Meadow Post "), image(images[(32, 64)])]
    # prefix counts: 0, 5, 13, 15, 19 -> a budget of 14 keeps the first two items (13 tokens)
    kept, original, final = fit_to_budget(items, 14, counter.count)
    assert (kept, original, final) == (items[:2], 19, 13)
    assert fit_to_budget(items, 19, counter.count) == (items, 19, 19)
    assert fit_to_budget(items, 4, counter.count) == ([], 19, 0)
