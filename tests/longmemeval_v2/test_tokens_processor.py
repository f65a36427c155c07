"""The official token counter (tokens.py QwenProcessorCounter) on a tiny processor folder authored here in the
Qwen/Qwen3.5-9B layout: tokenizer.json (built with the ``tokenizers`` library), tokenizer_config.json, a chat
template (ours, Qwen-style markers), a Qwen2-VL image processor config (preprocessor_config.json), a
Qwen3-VL video processor config and processor_config.json naming ``Qwen3VLProcessor``.

Counted as upstream counts (LongMemEval-V2 evaluation/harness.py count_memory_context_tokens @ be15ea6):
the items as ONE user message of text parts and image placeholders, the chat template rendered without a
generation prompt, the processor run on the text and the RGB images, len(input_ids). The folder declares
the tokenizer class (Qwen3_5Tokenizer, and Qwen2Tokenizer as Qwen releases often do), so transformers builds
the real byte-level BPE pipeline from our vocabulary and merges. Expected values are worked by hand and by a
naive count written here: each of WORDS is one token, other text one token per byte; an image of height H,
width W is round(H/32)*round(W/32) placeholder tokens (patch 16, merge 2, bounds that never rescale these
sizes) between vision start/end markers.

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
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers  # noqa: E402
from tokenizers.models import BPE  # noqa: E402

from mnemetric.longmemeval_v2.tokens import auto_counter, fit_to_budget, load_official_counter  # noqa: E402

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
           "<|video_pad|>"]
WORDS = ["user", "free", "Ġshipping", "Ġon", "Ġorders", "Meadow", "ĠPost", "Ġ."]
"""Whole-word tokens (byte-level spelling: Ġ is a leading space); any other text falls apart into its bytes."""
PRETOKENIZE = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
"""A Qwen-style split rule (transformers rebuilds the pre-tokenizer from the declared class anyway)."""
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
"""Ours, in the Qwen chat markup: <|im_start|>role NEWLINE content <|im_end|> NEWLINE; an image part is
<|vision_start|><|image_pad|><|vision_end|>, which the processor expands to the image's tokens."""
IMAGE_CONFIG = {"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
                "size": {"shortest_edge": 32 * 32, "longest_edge": 4096 * 4096},
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor"}


def byte_level_bpe() -> Tokenizer:
    """A byte-level BPE: the 256 byte symbols, and for each of WORDS the chain of merges that builds it."""
    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges: list[tuple[str, str]] = []
    for word in WORDS:
        built = word[0]
        for ch in word[1:]:
            merges.append((built, ch))
            built += ch
            vocab.setdefault(built, len(vocab))
    tokenizer = Tokenizer(BPE(vocab=vocab, merges=merges))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    return tokenizer


def write_processor(folder: Path, tokenizer_class: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    byte_level_bpe().save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": tokenizer_class, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "unk_token": None, "model_max_length": 262144, "processor_class": "Qwen3VLProcessor"}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    (folder / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Qwen2VLImageProcessor", **IMAGE_CONFIG}))
    (folder / "video_preprocessor_config.json").write_text(json.dumps(
        {"video_processor_type": "Qwen3VLVideoProcessor", **IMAGE_CONFIG}))
    (folder / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen3VLProcessor"}))
    return folder


@pytest.fixture(scope="module", params=["Qwen3_5Tokenizer", "Qwen2Tokenizer"])
def folder(request, tmp_path_factory) -> Path:
    return write_processor(tmp_path_factory.mktemp("qwen-like-processor"), request.param)


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
    # <|im_start|> user NEWLINE free Ġshipping <|im_end|> NEWLINE: template 5 + text 2
    assert counter.count([text("free shipping")]) == 7
    # + the trailing space (its own token) + <|vision_start|> 2 pads <|vision_end|>: 32x64 is a 2x4 patch grid,
    # 8 patches / merge 2*2 = 2 tokens; then Meadow ĠPost Ġ.
    assert counter.count([text("free shipping "), image(images[(32, 64)]), text("Meadow Post .")]) == 5 + 3 + 4 + 3
    # 50x100 (RGBA, converted to RGB) resizes to 64x96 (round(50/32)=2, round(100/32)=3): 4x6 patches -> 6 tokens
    assert counter.count([image(images[(50, 100)])]) == 5 + 2 + 6
    # 96x32 (palette PNG): 3x1 merged cells -> 3 tokens
    assert counter.count([image(images[(96, 32)]), image(images[(32, 64)])]) == 5 + (2 + 3) + (2 + 2)


def test_text_parts_are_joined_without_a_separator(counter):
    # upstream renders the parts back to back: "free" + "shipping" is the word "freeshipping": free + 8 bytes
    assert counter.count([text("free"), text("shipping")]) == 5 + 1 + 8
    assert counter.count([text("free "), text("shipping")]) == 5 + 2


TEXT_TOKENS = {"free shipping.": 3, "Meadow Post.": 3, "free on orders.": 4, "zz.": 3}
"""Texts that start with a word and end with ".", so that back to back they split where the items do; their
tokens by hand (free Ġshipping . | Meadow ĠPost . | free Ġon Ġorders . | z z .)."""


def naive_count(items, sizes) -> int:
    if not items:
        return 0
    total = 5  # <|im_start|> user NEWLINE ... <|im_end|> NEWLINE
    for item in items:
        if item["type"] == "text":
            total += TEXT_TOKENS[item["value"]]
        else:
            height, width = sizes[item["value"]]
            total += 2 + round(height / 32) * round(width / 32)
    return total


TEXTS = sorted(TEXT_TOKENS)


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
    items = [text("free shipping."), image(images[(50, 100)]), text("Meadow Post."), image(images[(32, 64)])]
    # prefix counts: 0, 8, 16, 19, 23 -> a budget of 18 keeps the first two items (16 tokens)
    kept, original, final = fit_to_budget(items, 18, counter.count)
    assert (kept, original, final) == (items[:2], 23, 16)
    assert fit_to_budget(items, 23, counter.count) == (items, 23, 23)
    assert fit_to_budget(items, 7, counter.count) == ([], 23, 0)


def test_another_processor_class_without_its_backend_is_a_config_error(tmp_path):
    if torchvision_works():
        pytest.skip("torchvision works here: every processor loads whole")
    from mnemetric.errors import ConfigError

    folder = write_processor(tmp_path / "qwen2-vl-like", "Qwen2Tokenizer")
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        path = folder / name
        path.write_text(path.read_text().replace("Qwen3VLProcessor", "Qwen2VLProcessor"))
    video = folder / "video_preprocessor_config.json"
    video.write_text(video.read_text().replace("Qwen3VLVideoProcessor", "Qwen2VLVideoProcessor"))
    with pytest.raises(ConfigError) as err:
        load_official_counter(folder)
    assert "not the Qwen3VLProcessor" in str(err.value) and "torchvision" in str(err.value)


def test_looking_for_the_official_processor_opens_no_connection(tmp_path, monkeypatch):
    """Not cached, no folder: the auto counter falls back to o200k and says why, and nothing tried the
    network (local_files_only alone let transformers 5 connect to the Hub once; hub_offline stops that)."""
    import socket

    import huggingface_hub.constants as hub

    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("this test allows no connection")

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    before = hub.HF_HUB_OFFLINE
    counter = auto_counter()
    assert counter.official is False and "not available locally" in counter.note
    assert attempts == []
    assert hub.HF_HUB_OFFLINE == before and "HF_HUB_OFFLINE" not in __import__("os").environ  # restored
