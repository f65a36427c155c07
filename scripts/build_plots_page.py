"""Build .dvc/plots/mnemetric_page.html: a `dvc plots` HTML template that works offline.

Why: dvc_render (1.0.2, ``VegaRenderer.SCRIPTS``) fills the template's scripts placeholder with
three ``<script src="https://cdn.jsdelivr.net/npm/...">`` tags, so the page DVC writes stays blank
without network. This script inlines vega, vega-lite and vega-embed taken from their npm tarballs
at pinned versions and leaves the scripts placeholder OUT of the template, so DVC has nowhere to
put the CDN tags (dvc_render's ``HTML`` only requires the plot-divs placeholder; see
``dvc_render/html.py``). DVC reads the template from ``plots.html_template`` in .dvc/config,
relative to .dvc/ (``dvc/commands/plots.py: _html_template_path``).

Versions: dvc_render 1.0.2 loads vega 5.20.2, vega-lite 5.2.0 and vega-embed 6.18.2 — a set that
does not even satisfy its own peer ranges (vega-lite 5.2.0 declares ``vega ^5.21.0``). We pin the
newest releases of the same major lines, whose builds are still UMD scripts that set the globals
``vega``, ``vegaLite`` and ``vegaEmbed`` used by DVC's ``vegaEmbed('#id', spec)`` calls:
vega 5.33.1, vega-lite 5.23.0 (peer ``vega ^5.24.0``), vega-embed 6.29.0 (peer ``vega ^5.21.0``).
The next majors (vega 6, vega-lite 6, vega-embed 7) ship ES modules only.

Integrity: each tarball must match the registry's ``dist.integrity`` recorded below (sha512,
Subresource-Integrity form); a different tarball is refused. Licenses (BSD-3-Clause) are copied
into the page from each tarball's LICENSE; the vega tarball ships none, so its text (vega/vega
LICENSE at tag v5.33.1, commit fe508bbd2973445a35a8730701eaca45339233a8) is recorded here, with
its sha256.

Usage::

    python scripts/build_plots_page.py                     # download from the npm registry
    python scripts/build_plots_page.py --tarballs DIR      # use DIR/<pkg>-<version>.tgz (still verified)

Writes .dvc/plots/mnemetric_page.html and .dvc/plots/mnemetric_page.lock.json (atomically).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import sys
import tarfile
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mnemetric.errors import IntegrityError, MnemetricError  # noqa: E402
from mnemetric.io import atomic_open, sha256_text, write_json_atomic  # noqa: E402

PAGE = ROOT / ".dvc" / "plots" / "mnemetric_page.html"
LOCK = ROOT / ".dvc" / "plots" / "mnemetric_page.lock.json"


@dataclass(frozen=True)
class Pin:
    """One npm package inlined into the page."""

    package: str
    version: str
    integrity: str
    """The registry's dist.integrity for the tarball (``sha512-<base64>``)."""
    build_file: str
    """Path inside the tarball of the minified UMD build that is inlined."""
    global_name: str
    """The global the build defines (checked in the page by tests/test_plots_page.py)."""

    @property
    def tarball_name(self) -> str:
        return f"{self.package}-{self.version}.tgz"

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


PINS: tuple[Pin, ...] = (
    Pin("vega", "5.33.1",
        "sha512-1fArfVDUqVbb5z8n+/nVQb+VNBzx8svY6CrsyTK4Ujm4yrd9I1auoKxBAPXLCavY1LcrbHUskQbGUP8gXOzyQw==",
        "package/build/vega.min.js", "vega"),
    Pin("vega-lite", "5.23.0",
        "sha512-l4J6+AWE3DIjvovEoHl2LdtCUkfm4zs8Xxx7INwZEAv+XVb6kR6vIN1gt3t2gN2gs/y4DYTs/RPoTeYAuEg6mA==",
        "package/build/vega-lite.min.js", "vegaLite"),
    Pin("vega-embed", "6.29.0",
        "sha512-PmlshTLtLFLgWtF/b23T1OwX53AugJ9RZ3qPE2c01VFAbgt3/GSNI/etzA/GzdrkceXFma+FDHNXUppKuM0U6Q==",
        "package/build/vega-embed.min.js", "vegaEmbed"),
)

VEGA_LICENSE_SHA256 = "63727832aaf62004a2b249c933e327f3c90caf49e41a72f4bf436edf632cbda8"
VEGA_LICENSE = """\
Copyright (c) 2015-2023, University of Washington Interactive Data Lab
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

3. Neither the name of the copyright holder nor the names of its contributors
  may be used to endorse or promote products derived from this software
  without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""

# DVC calls vegaEmbed('#id', spec) with no options. Wrap it so the action menu keeps the offline
# actions (save as SVG/PNG, view source, view compiled Vega) and drops "Open in Vega Editor",
# which needs the network. Rendering as SVG keeps text crisp in screenshots and zoomed pages.
EMBED_DEFAULTS = """\
(function () {
  "use strict";
  var embed = window.vegaEmbed;
  var defaults = {renderer: "svg",
                  actions: {export: true, source: true, compiled: true, editor: false}};
  function offlineEmbed(el, spec, opts) {
    return embed(el, spec, Object.assign({}, defaults, opts || {}));
  }
  Object.keys(embed).forEach(function (k) { offlineEmbed[k] = embed[k]; });
  window.vegaEmbed = offlineEmbed;
})();"""

STYLE = """\
body { font-family: system-ui, "DejaVu Sans", sans-serif; margin: 1.5rem; color: #1a1a1a; }
header { border-bottom: 1px solid #ccc; margin-bottom: 1rem; }
header p { color: #555; font-size: 0.9rem; }
table { border-spacing: 15px; }
body > div { margin-bottom: 2rem; }"""


def integrity_of(data: bytes) -> str:
    """npm's dist.integrity form: ``sha512-`` + base64 of the SHA-512 digest."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def verify_tarball(pin: Pin, data: bytes, source: str) -> None:
    """Refuse a tarball whose sha512 differs from the pinned dist.integrity."""
    actual = integrity_of(data)
    if actual != pin.integrity:
        raise IntegrityError(
            f"{source}: {pin.package} {pin.version} tarball integrity {actual} differs from the "
            f"pinned {pin.integrity}; refusing it (a changed or corrupted tarball)")


def fetch_tarball(pin: Pin, tarball_dir: Path | None) -> bytes:
    """The tarball's bytes, from ``tarball_dir`` when given, else from the npm registry; verified."""
    if tarball_dir is not None:
        path = tarball_dir / pin.tarball_name
        if not path.is_file():
            raise MnemetricError(f"{path}: not found (expected the npm tarball {pin.tarball_name})")
        data, source = path.read_bytes(), str(path)
    else:  # `npm pack` fetches the tarball from npm's configured registry
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(["npm", "pack", pin.spec, "--pack-destination", tmp, "--silent"],
                                  capture_output=True, text=True, timeout=300)
            path = Path(tmp) / pin.tarball_name
            if proc.returncode != 0 or not path.is_file():
                raise MnemetricError(f"npm pack {pin.spec} failed ({proc.returncode}): {proc.stderr.strip()}\n"
                                     "  fix: install Node.js/npm, or pass --tarballs DIR with the .tgz files")
            data, source = path.read_bytes(), f"npm pack {pin.spec}"
    verify_tarball(pin, data, source)
    return data


def read_member(data: bytes, name: str) -> str | None:
    """Text of one file in a .tgz, or None when the tarball has no such file."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        try:
            member = tar.getmember(name)
        except KeyError:
            return None
        fh = tar.extractfile(member)
        return None if fh is None else fh.read().decode("utf-8")


def script_text(pin: Pin, code: str) -> str:
    """The build without its trailing source-map comment (the .map file is not shipped)."""
    lines = code.rstrip("\n").split("\n")
    if lines and lines[-1].startswith("//# sourceMappingURL="):
        lines.pop()
    text = "\n".join(lines)
    for bad in ("</script", "<!--", "{plot_divs}", "{refresh_tag}", "{scripts}"):
        if bad in text.lower():
            raise IntegrityError(f"{pin.package} {pin.version}: build contains {bad!r}; cannot inline it safely")
    return text


def license_text(pin: Pin, data: bytes) -> str:
    text = read_member(data, "package/LICENSE")
    if text is None and pin.package == "vega":
        if sha256_text(VEGA_LICENSE) != VEGA_LICENSE_SHA256:
            raise IntegrityError("the recorded vega LICENSE text was edited (sha256 mismatch)")
        text = VEGA_LICENSE
    if text is None:
        raise IntegrityError(f"{pin.package} {pin.version}: tarball has no package/LICENSE")
    if "--" in text:
        raise IntegrityError(f"{pin.package}: LICENSE contains '--'; cannot put it in an HTML comment")
    return text.rstrip("\n")


def build(tarball_dir: Path | None) -> tuple[str, dict]:
    """The page text and the lock record (pure apart from fetching the pinned tarballs)."""
    blocks, locked = [], []
    for pin in PINS:
        data = fetch_tarball(pin, tarball_dir)
        code = read_member(data, pin.build_file)
        if code is None:
            raise IntegrityError(f"{pin.package} {pin.version}: tarball has no {pin.build_file}")
        script = script_text(pin, code)
        build_sha256 = sha256_text(code)
        lic = license_text(pin, data)
        blocks.append(
            f"<!-- {pin.package} {pin.version} ({pin.build_file.removeprefix('package/')}), "
            f"BSD-3-Clause:\n{lic}\n-->\n"
            f'<script data-package="{pin.package}" data-version="{pin.version}">\n{script}\n</script>')
        locked.append({"package": pin.package, "version": pin.version, "integrity": pin.integrity,
                       "tarball": pin.tarball_name, "file": pin.build_file, "global": pin.global_name,
                       "sha256": sha256_text(script), "build_file_sha256": build_sha256,
                       "license": "BSD-3-Clause",
                       "license_sha256": sha256_text(lic + "\n")})
    return page(blocks), {"page": PAGE.relative_to(ROOT).as_posix(),
                          "generator": "scripts/build_plots_page.py", "packages": locked}


def page(blocks: list[str]) -> str:
    libraries = "\n".join(blocks)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{{refresh_tag}}
<title>Mnemetric plots</title>
<!-- Generated by scripts/build_plots_page.py; do not edit by hand. Works offline: the chart
     libraries are inlined below and this template has no scripts placeholder, so DVC cannot add
     its CDN script tags. Checked by tests/test_plots_page.py. -->
<style>
{STYLE}
</style>
{libraries}
<script data-package="mnemetric-embed-defaults">
{EMBED_DEFAULTS}
</script>
</head>
<body>
<header>
<h1>Mnemetric plots</h1>
<p>Rendered by DVC with vega, vega-lite and vega-embed inlined in this page (no network needed).</p>
</header>
{{plot_divs}}
</body>
</html>
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tarballs", type=Path, default=None,
                    help="folder holding <pkg>-<version>.tgz (default: download from the npm registry)")
    args = ap.parse_args(argv)
    try:
        text, lock = build(args.tarballs)
    except (MnemetricError, OSError) as exc:
        print(f"build_plots_page: {exc}", file=sys.stderr)
        return 2
    with atomic_open(PAGE) as fh:
        fh.write(text)
    write_json_atomic(LOCK, lock)
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(text.encode())} bytes) and {LOCK.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
