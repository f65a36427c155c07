"""Opt-in: a rendered report becomes a non-trivial PNG in headless Chromium (skips without Chromium).

Also checks, with or without Chromium, that scripts/screenshot.py says how to install it when it
is missing.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mnemetric.report import (
    Curve,
    CurvePoint,
    Custody,
    Equivalence,
    Headline,
    Interval,
    Report,
    TypeResult,
    render_report,
)

from tests.conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = ROOT / "scripts" / "screenshot.py"


def small_report() -> Report:
    return Report(
        title="Chromium check",
        equivalence=Equivalence(False, ("lexical judge",)),
        custody=Custody("sample", "bundled", "ab" * 32, True, "full", "cd" * 32, "mnemetric.longmemeval-session/v3",
                        "bm25", None, "extractive", "mnemetric-lexical-v1", None, "ef" * 32),
        headline=(Headline("overall", 0.2326, Interval(0.1163, 0.3721), 43, "percentile bootstrap"),),
        per_type=(TypeResult("single-session-user", 0.625, Interval(0.222, 1.0), 8),
                  TypeResult("multi-session", 0.125, Interval(0.0, 0.429), 8)),
        curves=(Curve("session", (CurvePoint(1, 0.47), CurvePoint(5, 0.86), CurvePoint(50, 1.0))),),
    )


def png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, inflated scanline bytes) of a PNG, read by hand (signature, IHDR, IDAT)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_missing_chromium_is_a_clear_message(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<!DOCTYPE html><p>x</p>", encoding="utf-8")
    proc = run_script(str(page), str(tmp_path / "p.png"), "--chromium", str(tmp_path / "no-chromium"))
    assert proc.returncode == 2
    assert "apt-get install -y chromium" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "p.png").exists()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install -y chromium)")
def test_report_renders_to_a_non_trivial_png(tmp_path):
    page, out = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(render_report(small_report()), encoding="utf-8")
    proc = run_script(str(page), str(out), "--width", "1000", "--height", "1400")
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    width, height, pixels = png_pixels(data)
    assert (width, height) == (1000, 1400)
    assert len(data) > 20_000                      # a blank 1000x1400 page compresses to ~5 KB
    # A single-colour picture inflates to a handful of byte values (filter bytes + one colour);
    # text, bars and lines in several colours give many.
    assert len(set(pixels)) > 64
