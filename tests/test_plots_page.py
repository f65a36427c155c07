"""The committed offline `dvc plots` page (.dvc/plots/mnemetric_page.html) and its Vega-Lite templates.

URL rule (why some URLs may stay): the page must not *load* anything from the network, so
* outside the inlined library code and the license comments there is no URL at all, no
  ``src=``/``href=`` attribute, no ``<link>``, no ``@import``/``url(``;
* inside each library, the URL strings are exactly the reviewed list below — constants that are
  never fetched when DVC's page renders inline data (XML namespace names, ``$schema``
  identifiers, the text of a warning, the "Open in Vega Editor" link that the page switches off, a
  bundled license comment, and the "is this argument a URL?" prefixes). A new URL in an updated
  library fails this test until someone has looked at it.
"""

from __future__ import annotations

import base64
import configparser
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

PLOTS = ROOT / ".dvc" / "plots"
PAGE = PLOTS / "mnemetric_page.html"
LOCK = PLOTS / "mnemetric_page.lock.json"
URL = re.compile(r"""https?://[^\s"'`)\\<>]*""")
ALLOWED_URLS = {
    "vega": {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", "http://www.w3.org/2000/xmlns/"},
    "vega-lite": {"https://vega.github.io/schema/vega/v5.json",               # $schema of compiled specs
                  "https://github.com/vega/vega-lite/issues/2415"},           # text of a warning
    "vega-embed": {"https://vega.github.io/editor/",                          # editor action (disabled)
                   "https://github.com/Starcounter-Jack/JSON-Patch",          # bundled license comment
                   "http://", "https://"},                                    # startsWith() URL checks
}
SCRIPT_BLOCK = re.compile(r'<script data-package="([^"]+)"(?: data-version="([^"]+)")?>\n(.*?)\n</script>', re.S)


def load_build():
    spec = importlib.util.spec_from_file_location("build_plots_page", ROOT / "scripts" / "build_plots_page.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses resolve string annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def lock() -> dict:
    return json.loads(LOCK.read_text(encoding="utf-8"))


def libraries(page: str) -> dict[str, tuple[str | None, str]]:
    return {m.group(1): (m.group(2), m.group(3)) for m in SCRIPT_BLOCK.finditer(page)}


def outside_libraries(page: str) -> str:
    """The page without the library script bodies and without HTML comments."""
    stripped = SCRIPT_BLOCK.sub(lambda m: "" if m.group(2) else m.group(0), page)
    return re.sub(r"<!--.*?-->", "", stripped, flags=re.S)


def test_placeholders_as_dvc_needs(page):
    # dvc_render.html.HTML requires "{plot_divs}"; it fills "{scripts}" with CDN <script src> tags,
    # so the template leaves that one out on purpose; "{refresh_tag}" (dvc plots --open refresh) stays.
    assert page.count("{plot_divs}") == 1 and page.count("{refresh_tag}") == 1
    assert "{scripts}" not in page
    rest = outside_libraries(page)
    assert rest.index("<body>") < rest.index("{plot_divs}") < rest.index("</body>")
    assert rest.index("<head>") < rest.index("{refresh_tag}") < rest.index("</head>")


def test_no_url_outside_libraries_and_license_comments(page):
    rest = outside_libraries(page)
    assert "vegaEmbed" in rest                                   # the defaults wrapper is kept in `rest`
    assert not re.search(r"https?:|//[a-z0-9.-]+\.[a-z]{2,}", rest, re.I), URL.findall(rest)
    assert not re.search(r"\b(?:src|href)\s*=|<link\b|@import|url\(", rest, re.I)


def test_urls_inside_libraries_are_the_reviewed_constants(page):
    libs = libraries(page)
    assert set(libs) == {"vega", "vega-lite", "vega-embed", "mnemetric-embed-defaults"}
    for package, allowed in ALLOWED_URLS.items():
        assert set(URL.findall(libs[package][1])) == allowed, package
    assert URL.findall(libs["mnemetric-embed-defaults"][1]) == []


def test_inlined_files_match_the_lock_and_the_pins(page, lock):
    build, libs = load_build(), libraries(page)
    assert [p["package"] for p in lock["packages"]] == ["vega", "vega-lite", "vega-embed"]
    for entry, pin in zip(lock["packages"], build.PINS, strict=True):
        version, body = libs[entry["package"]]
        assert version == entry["version"] == pin.version
        assert entry["integrity"] == pin.integrity
        assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", entry["integrity"])
        assert hashlib.sha256(body.encode("utf-8")).hexdigest() == entry["sha256"]
        assert entry["tarball"] == f"{pin.package}-{pin.version}.tgz"
        assert pin.spec == f"{pin.package}@{pin.version}"
        assert f"{entry['global']}" in body[:600]                # the UMD header names its global
        assert "sourceMappingURL" not in body[-200:]


def test_dvc_renderer_versions_are_met_or_newer_in_the_same_major(lock):
    from dvc_render.vega import VegaRenderer

    expected = dict(re.findall(r"npm/([a-z-]+)@([0-9.]+)", VegaRenderer.SCRIPTS))
    assert set(expected) == {"vega", "vega-lite", "vega-embed"}
    for entry in lock["packages"]:
        ours = tuple(int(x) for x in entry["version"].split("."))
        theirs = tuple(int(x) for x in expected[entry["package"]].split("."))
        assert ours[0] == theirs[0] and ours >= theirs, entry["package"]


def test_license_headers_precede_each_library(page, lock):
    for entry in lock["packages"]:
        start = page.index(f'<script data-package="{entry["package"]}"')
        comment = page[page.rindex("<!--", 0, start):start]
        assert f"{entry['package']} {entry['version']}" in comment and "BSD-3-Clause" in comment
        assert "Redistribution and use in source and binary forms" in comment
        assert "University of Washington Interactive Data Lab" in comment
        text = comment.split("BSD-3-Clause:\n", 1)[1].rsplit("\n-->", 1)[0] + "\n"
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == entry["license_sha256"]


def test_editor_action_is_switched_off_after_vega_embed_loads(page):
    defaults = page.index('<script data-package="mnemetric-embed-defaults">')
    assert page.index('<script data-package="vega-embed"') < defaults < page.rindex("</head>")
    assert "editor: false" in page[defaults:page.index("</script>", defaults)]


def test_dvc_config_points_at_the_template():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / ".dvc" / "config")
    assert cfg["plots"]["html_template"] == "plots/mnemetric_page.html"
    assert (ROOT / ".dvc" / cfg["plots"]["html_template"]).resolve() == PAGE.resolve()


def test_integrity_form_and_refusal(tmp_path, monkeypatch):
    build = load_build()
    # npm's SRI form of the empty input: base64 of SHA-512("") (a published test vector).
    assert build.integrity_of(b"") == ("sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==")
    data = b"some bytes"
    assert build.integrity_of(data) == "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    # a changed tarball on disk is refused; nothing is written
    for pin in build.PINS:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            member = tarfile.TarInfo(pin.build_file)
            body = b"window.x = 1;"
            member.size = len(body)
            tar.addfile(member, io.BytesIO(body))
        (tmp_path / pin.tarball_name).write_bytes(buf.getvalue())
    monkeypatch.setattr(build, "PAGE", tmp_path / "out" / "page.html")
    monkeypatch.setattr(build, "LOCK", tmp_path / "out" / "page.lock.json")
    with pytest.raises(build.IntegrityError, match="differs from the pinned"):
        build.fetch_tarball(build.PINS[0], tmp_path)
    assert build.main(["--tarballs", str(tmp_path)]) == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not os.environ.get("MNEMETRIC_NPM_TARBALLS"),
                    reason="set MNEMETRIC_NPM_TARBALLS to a folder with the pinned npm tarballs to rebuild the page")
def test_rebuild_from_pinned_tarballs_gives_the_committed_bytes(page, lock):
    build = load_build()
    text, new_lock = build.build(Path(os.environ["MNEMETRIC_NPM_TARBALLS"]))
    assert text == page
    assert new_lock == lock


# ---- the templates through DVC's own renderer --------------------------------------------------

def render_with_dvc(tmp_path, template: str, x: str, y: str, rows: list[dict]) -> tuple[str, dict]:
    from dvc_render import VegaRenderer, render_html

    renderer = VegaRenderer(rows, "plot", template=template, template_dir=str(PLOTS), x=x, y=y, title="T")
    spec = renderer.get_filled_template()
    out = tmp_path / "index.html"
    render_html([VegaRenderer(rows, "plot", template=template, template_dir=str(PLOTS), x=x, y=y, title="T")],
                out, html_template=str(PAGE))
    return out.read_text(encoding="utf-8"), spec


PER_TYPE = [{"rev": rev, "type": t, "accuracy": a, "low": lo, "high": hi, "n": 8, "method": "bootstrap"}
            for rev, rows in (("main", [("multi-session", 0.125, 0.0, 0.43), ("temporal-reasoning", 0.5, 0.2, 0.8)]),
                              ("exp-1", [("multi-session", 0.25, 0.0, 0.5), ("temporal-reasoning", 0.375, 0.1, 0.7)]))
            for t, a, lo, hi in rows]


def test_bar_ci_through_dvc_render(tmp_path):
    html, spec = render_with_dvc(tmp_path, "bar_ci", "accuracy", "type", PER_TYPE)
    assert "<DVC_METRIC" not in json.dumps(spec)
    bar, rule = spec["layer"][0], spec["layer"][1]
    assert bar["encoding"]["x"]["field"] == "accuracy" and spec["encoding"]["y"]["field"] == "type"
    assert bar["encoding"]["color"]["field"] == "rev"
    assert bar["encoding"]["color"]["scale"]["domain"] == ["main", "exp-1"]
    assert spec["encoding"]["yOffset"]["field"] == "rev"
    assert rule["encoding"]["x"]["field"] == "low" and rule["encoding"]["x2"]["field"] == "high"
    assert spec["data"]["values"] == PER_TYPE
    assert "cdn.jsdelivr.net" not in html and "{plot_divs}" not in html and "{refresh_tag}" not in html
    assert html.count('<script data-package="vega"') == 1
    assert "vegaEmbed('#plot', spec)" in html


def test_recall_curve_through_dvc_render(tmp_path):
    rows = [{"rev": rev, "granularity": g, "k": k, "recall": r}
            for rev in ("main", "exp-1") for g in ("session", "turn") for k, r in ((1, 0.4), (5, 0.8))]
    html, spec = render_with_dvc(tmp_path, "recall_curve", "k", "recall", rows)
    assert "<DVC_METRIC" not in json.dumps(spec)
    enc = spec["encoding"]
    assert enc["x"]["field"] == "k" and enc["x"]["scale"]["type"] == "log" and enc["y"]["field"] == "recall"
    assert enc["color"]["field"] == "rev" and spec["layer"][1]["encoding"]["shape"]["field"] == "rev"
    assert spec["layer"][0]["encoding"]["strokeDash"]["field"] == "mnemetric_series"
    assert "datum.granularity" in spec["transform"][0]["calculate"]
    assert "cdn.jsdelivr.net" not in html


# ---- the real dvc CLI: `dvc plots show` and `dvc plots diff` with the proposed plots block ------

PLOTS_BLOCK = """\
plots:
  - per_type_accuracy:
      template: bar_ci
      x: accuracy
      y:
        metrics/plots/qa_per_type.json: type
      title: QA accuracy per question type (95% interval)
      x_label: accuracy
      y_label: question type
  - recall_all_at_k:
      template: recall_curve
      x: k
      y:
        metrics/plots/recall_all_at_k.json: recall
      title: recall_all@k by granularity
      x_label: k (log scale)
      y_label: recall_all@k
"""


def write_metrics(repo: Path, shift: float) -> None:
    plots = repo / "metrics" / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    per_type = [{"type": "multi-session", "accuracy": 0.125 + shift, "low": 0.0, "high": 0.43, "n": 8, "method": "b"},
                {"type": "knowledge-update", "accuracy": 0.25 + shift, "low": 0.0, "high": 0.6, "n": 7, "method": "b"}]
    recall = [{"granularity": g, "k": k, "recall": min(1.0, r + shift)}
              for g in ("session", "turn") for k, r in ((1, 0.4), (5, 0.7), (50, 0.9))]
    (plots / "qa_per_type.json").write_text(json.dumps(per_type), encoding="utf-8")
    (plots / "recall_all_at_k.json").write_text(json.dumps(recall), encoding="utf-8")


@pytest.mark.e2e
def test_dvc_plots_show_and_diff_are_offline(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".dvc" / "plots").mkdir(parents=True)
    shutil.copy2(ROOT / ".dvc" / "config", repo / ".dvc" / "config")
    for name in ("mnemetric_page.html", "bar_ci.json", "recall_curve.json"):
        shutil.copy2(PLOTS / name, repo / ".dvc" / "plots" / name)
    (repo / ".dvc" / ".gitignore").write_text("/config.local\n/tmp\n/cache\n")
    (repo / "dvc.yaml").write_text(PLOTS_BLOCK, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

    def run(*args: str) -> str:
        proc = subprocess.run(list(args), cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
        return proc.stdout

    run("git", "init", "-q", "-b", "main")
    write_metrics(repo, 0.0)
    run("git", "add", "-A")
    run("git", "commit", "-qm", "one")
    write_metrics(repo, 0.125)
    run("git", "commit", "-qam", "two")
    run("dvc", "plots", "show", "-o", "shown")
    run("dvc", "plots", "diff", "HEAD~1", "HEAD", "-o", "diffed")
    for folder, revs in (("shown", {"workspace"}), ("diffed", {"HEAD~1", "HEAD"})):
        html = (repo / folder / "index.html").read_text(encoding="utf-8")
        assert "cdn.jsdelivr.net" not in html
        assert not re.search(r"\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//", html, re.I)
        assert '<div id = "per_type_accuracy">' in html and '<div id = "recall_all_at_k">' in html
        assert set(re.findall(r'"rev": "([^"]+)"', html)) == revs
        assert html.count('<script data-package="vega-lite"') == 1
