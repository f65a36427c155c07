"""Deterministic generator of Mnemetric's bundled LongMemEval-V2 sample (data/sample-v2/).

Everything is authored by Mnemetric (the text is in sample_content.py; no upstream data or text).
The output is laid out as an upstream data root (upstream-v2-protocol.md §2): questions.jsonl,
trajectories.jsonl (public "states" layout), haystacks/lme_v2_small.json (shared: every question of a
domain gets the identical ordered list) and haystacks/lme_v2_medium.json (per question: each list
holds the question's evidence trajectories plus others, in its own order), screenshots/<dir>/<n>.png,
plus README.md and SHA256SUMS.

Determinism: the only randomness is ``random.Random(seed)`` (haystack orders, screenshot details);
PNGs are written by hand (zlib *stored* deflate blocks, so the bytes do not depend on the zlib
build); JSON is dumped with fixed key order. One seed always gives byte-identical files.

    python -m mnemetric.longmemeval_v2.sample --out data/sample-v2
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import zlib
from collections import Counter
from pathlib import Path

from mnemetric.io import atomic_open, sha256_bytes
from mnemetric.longmemeval_v2.sample_content import APPS, QUESTIONS, TRAJECTORIES

SEED = 20251201
DEFAULT_OUT = Path("data") / "sample-v2"
WIDTH, HEIGHT = 16, 10
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_BACKGROUND, _TEXT, _ACCENT = (245, 245, 245), (170, 170, 170), (255, 179, 0)


# ------------------------------------------------------------------ PNG (by hand)


def _zlib_stored(data: bytes) -> bytes:
    """A zlib stream of uncompressed (stored) deflate blocks: header, blocks, Adler-32."""
    out = bytearray(b"\x78\x01")
    blocks = [data[i:i + 0xFFFF] for i in range(0, len(data), 0xFFFF)] or [b""]
    for n, block in enumerate(blocks):
        out += bytes([1 if n == len(blocks) - 1 else 0]) + struct.pack("<HH", len(block), len(block) ^ 0xFFFF) + block
    return bytes(out + struct.pack(">I", zlib.adler32(data)))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_rgb(pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """An 8-bit RGB PNG of ``pixels`` (rows of (r, g, b))."""
    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return _PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", _zlib_stored(raw)) + _chunk(b"IEND", b"")


def screenshot(rng: random.Random, header: tuple[int, int, int], step: int) -> bytes:
    """A tiny page picture: a header bar, three grey text lines, an accent block that moves with the step."""
    px = [[_BACKGROUND] * WIDTH for _ in range(HEIGHT)]
    for y in (0, 1):
        px[y] = [header] * WIDTH
    for y in (3, 5, 7):
        for x in range(1, 1 + rng.randint(5, WIDTH - 2)):
            px[y][x] = _TEXT
    x0 = 1 + (3 * step) % (WIDTH - 4)
    for y in (8, 9):
        for x in range(x0, x0 + 3):
            px[y][x] = _ACCENT
    return png_rgb(px)


# ------------------------------------------------------------------ records


def page_text(site: str, title: str, nodes: list[tuple[str, str]]) -> str:
    """The accessibility-tree text of one page (our own simple notation)."""
    lines = [f"RootWebArea '{site} | {title}'"]
    lines += [f"  [{i}] {role} '{name}'" for i, (role, name) in enumerate(nodes, start=1)]
    return "\n".join(lines)


def trajectory_records(rng: random.Random) -> tuple[list[dict], dict[str, bytes]]:
    """The trajectories.jsonl rows and their screenshots (path → PNG bytes)."""
    rows, files = [], {}
    for tid, domain, app, goal, outcome, steps in TRAJECTORIES:
        base, site, colour = APPS[app]
        states = []
        for step, (path, action, thought, title, nodes) in enumerate(steps):
            shot = f"screenshots/{tid}/{step}.png"
            files[shot] = screenshot(rng, colour, step)
            states.append({"url": base + path, "action": action, "thought": thought,
                           "accessibility_tree": page_text(site, title, nodes), "screenshot": shot, "step": step})
        rows.append({"id": tid, "domain": domain, "goal": goal, "start_url": states[0]["url"], "outcome": outcome,
                     "states": states})
    return rows, files


def question_records(rng: random.Random) -> tuple[list[dict], dict[str, bytes]]:
    """The questions.jsonl rows and their question images."""
    rows, files = [], {}
    for qid, domain, qtype, spec, text, answer, image, _ in QUESTIONS:
        if image is not None:
            files[image] = screenshot(rng, (33, 33, 33), len(files))
        rows.append({"id": qid, "domain": domain, "question_type": qtype, "question": text, "image": image,
                     "answer": answer, "eval_function": spec})
    return rows, files


def haystacks(rng: random.Random) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(shared, per-question): shared gives every question of a domain one ordered list; per-question
    lists hold the question's evidence plus 1..all other trajectories of its domain, each list unique."""
    by_domain: dict[str, list[str]] = {}
    for tid, domain, *_ in TRAJECTORIES:
        by_domain.setdefault(domain, []).append(tid)
    order = {d: rng.sample(ids, len(ids)) for d, ids in by_domain.items()}
    shared = {q[0]: list(order[q[1]]) for q in QUESTIONS}
    per_question: dict[str, list[str]] = {}
    used: set[tuple[str, ...]] = {tuple(ids) for ids in order.values()}
    for qid, domain, *_, evidence in QUESTIONS:
        others = [t for t in by_domain[domain] if t not in evidence]
        while True:
            chosen = [*evidence, *rng.sample(others, rng.randint(1, len(others)))]
            rng.shuffle(chosen)
            if tuple(chosen) not in used:
                break
        used.add(tuple(chosen))
        per_question[qid] = chosen
    return shared, per_question


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _json(obj) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def generate_sample(seed: int = SEED) -> dict[str, bytes]:
    """Every file of the sample: relative path → bytes (pure; README.md and SHA256SUMS included)."""
    rng = random.Random(seed)
    trajectories, shots = trajectory_records(rng)
    questions, images = question_records(rng)
    shared, per_question = haystacks(rng)
    files = {"questions.jsonl": _jsonl(questions), "trajectories.jsonl": _jsonl(trajectories),
             "haystacks/lme_v2_small.json": _json(shared), "haystacks/lme_v2_medium.json": _json(per_question),
             **shots, **images}
    files = dict(sorted(files.items()))
    files["README.md"] = readme(files, questions, trajectories, seed).encode("utf-8")
    files["SHA256SUMS"] = "".join(f"{sha256_bytes(b)}  {p}\n" for p, b in sorted(files.items())).encode("utf-8")
    return files


# ------------------------------------------------------------------ README


def readme(files: dict[str, bytes], questions: list[dict], trajectories: list[dict], seed: int) -> str:
    types = Counter((q["question_type"], q["domain"]) for q in questions)
    checkers = Counter(q["eval_function"].split("|")[0] for q in questions)
    data = {p: b for p, b in files.items() if not p.startswith("screenshots/")}
    shots = {p: b for p, b in files.items() if p.startswith("screenshots/")}
    lines = [
        "# Bundled LongMemEval-V2 sample (authored by Mnemetric)", "",
        "This folder is a small dataset **authored by Mnemetric**, laid out as a LongMemEval-V2 data root. It is",
        "**not upstream data**: the apps (Fernhill Market, Fernhill Admin, Quillboard, DeskFlow), trajectories,",
        "questions, answers and screenshots were invented and written by Mnemetric's deterministic generator; no",
        "text, data or image of the LongMemEval-V2 release or of any real product is used.", "",
        "- License: MIT (the Mnemetric license), Copyright (c) Mnemetric authors.",
        f"- Generator: `src/mnemetric/longmemeval_v2/sample.py` (text in `sample_content.py`), seed {seed}.",
        "- Regenerate (byte-identical on every run; `tests/longmemeval_v2/test_sample.py` checks it):", "",
        "  ```", "  python -m mnemetric.longmemeval_v2.sample --out data/sample-v2", "  ```", "",
        "## Layout", "",
        "- `questions.jsonl`: id, domain, question_type, question, image, answer, eval_function.",
        "- `trajectories.jsonl`: id, domain, goal, start_url, outcome, states (url, action, thought,",
        "  accessibility_tree, screenshot, step).",
        "- `haystacks/lme_v2_small.json`: shared — every question of a domain gets the identical ordered list.",
        "- `haystacks/lme_v2_medium.json`: per question — each list holds the question's evidence trajectories",
        "  plus others of its domain, and every list differs.",
        f"- `screenshots/<trajectory id>/<step>.png` and `screenshots/questions/<question id>.png`: {len(shots)}",
        f"  hand-written {WIDTH}x{HEIGHT} RGB PNGs.", "",
        f"## Contents: {len(questions)} questions, {len(trajectories)} trajectories", "",
        "| question_type | web | enterprise |", "|---|---|---|",
        *(f"| {t} | {types[(t, 'web')]} | {types[(t, 'enterprise')]} |" for t in sorted({t for t, _ in types})), "",
        "| eval function | questions |", "|---|---|",
        *(f"| {name} | {n} |" for name, n in sorted(checkers.items())), "",
        "## sha256 manifest", "",
        "Data files (every file, screenshots included, is listed in `SHA256SUMS`):", "",
        "| file | bytes | sha256 |", "|---|---|---|",
        *(f"| `{p}` | {len(b)} | `{sha256_bytes(b)}` |" for p, b in data.items()),
        f"| screenshots/ ({len(shots)} files) | {sum(map(len, shots.values()))} | "
        f"`{sha256_bytes(''.join(f'{sha256_bytes(b)}  {p}' + chr(10) for p, b in shots.items()).encode())}` |", "",
        "The screenshots/ row's sha256 is that of their `SHA256SUMS` lines (in path order).", "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------ command


def write_sample(out: Path, seed: int = SEED) -> list[str]:
    """Write every file under ``out`` atomically; return files under ``out`` the generator did not write."""
    files = generate_sample(seed)
    for rel, data in files.items():
        with atomic_open(out / rel, "wb") as fh:
            fh.write(data)
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    return sorted(present - set(files))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mnemetric.longmemeval_v2.sample", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output data root (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="random seed (default: %(default)s)")
    args = parser.parse_args(argv)
    stale = write_sample(args.out, args.seed)
    print(f"wrote the LongMemEval-V2 sample to {args.out}")
    for rel in stale:
        print(f"warning: {args.out / rel} was not written by the generator (delete it if it is stale)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
