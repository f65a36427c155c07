"""Render an HTML file to PNG with headless Chromium (a report page or a `dvc plots` page).

    python scripts/screenshot.py PAGE.html OUT.png [--width 1280] [--height 1600]

Chromium runs with a fresh profile (``--user-data-dir`` in a temporary folder, removed afterwards)
and, unless ``--allow-network`` is given, with every host name mapped to "not found"
(``--host-resolver-rules``), so the picture shows what the page looks like offline: a page that
loads its chart libraries from a CDN comes out blank. ``--virtual-time-budget`` lets the page's
scripts (vega-embed renders after the load event) finish before the picture is taken.

The PNG is written atomically (Chromium writes into the temporary folder; the file is then moved
into place). Exit codes: 0 written; 2 Chromium missing, the page missing, or Chromium failed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mnemetric.io import atomic_open  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
BASE_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--hide-scrollbars")
OFFLINE_FLAG = "--host-resolver-rules=MAP * ~NOTFOUND"
FETCHED = re.compile(r"""(?:\b(?:src|href)\s*=\s*["']?|url\(\s*["']?|@import\s+["'])\s*(?:https?:)?//""",
                     re.IGNORECASE)


class ScreenshotError(Exception):
    """Something the user can fix: no Chromium, no page, Chromium produced no picture."""


def fetched_url_count(html: str) -> int:
    """How many src=/href=/url()/@import references point at a network address (http(s): or //)."""
    return len(FETCHED.findall(html))


def chromium_command(chromium: str, page: Path, out: Path, profile: Path, width: int, height: int,
                     budget_ms: int, allow_network: bool) -> list[str]:
    cmd = [chromium, *BASE_FLAGS, f"--user-data-dir={profile}", f"--screenshot={out}",
           f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}"]
    if not allow_network:
        cmd.append(OFFLINE_FLAG)
    return [*cmd, page.resolve().as_uri()]


def screenshot(page: Path, out: Path, *, chromium: str = CHROMIUM, width: int = 1280, height: int = 1600,
               budget_ms: int = 5000, allow_network: bool = False, timeout_s: float = 180.0) -> int:
    """Write ``out`` (PNG) from ``page``; returns the PNG's size in bytes."""
    if not Path(chromium).is_file():
        raise ScreenshotError(f"Chromium not found at {chromium}; install it with "
                              "`apt-get install -y chromium` (Debian/Ubuntu), or pass --chromium PATH")
    if not page.is_file():
        raise ScreenshotError(f"{page}: no such HTML file")
    with tempfile.TemporaryDirectory(prefix="mnemetric-shot-") as tmp:
        shot = Path(tmp) / "shot.png"
        cmd = chromium_command(chromium, page, shot, Path(tmp) / "profile", width, height,
                               budget_ms, allow_network)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ScreenshotError(f"Chromium did not finish within {timeout_s:.0f} s") from exc
        if not shot.is_file() or shot.stat().st_size == 0:
            tail = "\n".join((proc.stderr or "").strip().splitlines()[-15:])
            raise ScreenshotError(f"Chromium (exit {proc.returncode}) wrote no screenshot of {page}:\n{tail}")
        data = shot.read_bytes()
    with atomic_open(out, "wb") as fh:
        fh.write(data)
    return len(data)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Render an HTML file to PNG with headless Chromium.")
    ap.add_argument("page", type=Path, help="the HTML file")
    ap.add_argument("out", type=Path, help="the PNG to write")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1600)
    ap.add_argument("--chromium", default=CHROMIUM, help=f"the Chromium binary (default {CHROMIUM})")
    ap.add_argument("--budget-ms", type=int, default=5000, help="virtual time for the page's scripts")
    ap.add_argument("--allow-network", action="store_true", help="let Chromium resolve host names")
    args = ap.parse_args(argv)
    try:
        if args.page.is_file():
            n = fetched_url_count(args.page.read_text(encoding="utf-8", errors="replace"))
            if n:
                print(f"screenshot: warning: {args.page} loads {n} resource(s) from the network; "
                      "offline they stay blank", file=sys.stderr)
        size = screenshot(args.page, args.out, chromium=args.chromium, width=args.width,
                          height=args.height, budget_ms=args.budget_ms, allow_network=args.allow_network)
    except ScreenshotError as exc:
        print(f"screenshot: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
