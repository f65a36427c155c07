"""`mnemetric NAME ...` imports only the modules that register NAME (mnemetric.cli.HOMES) and builds only its
parser: `mnemetric validate` pays for the reader and the checks, not for numpy, the LLM client or Hydra
(the whole CLI's imports cost about 0.3 s of CPU per process; issue 16: validate no slower than json.load)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import mnemetric.cli as cli
from mnemetric.cli.registry import COMMANDS, GROUPS

from tests.conftest import ROOT

HEAVY = ("numpy", "pandas", "scipy", "torch", "openai", "httpx", "asyncio", "hydra", "omegaconf", "dvc", "yaml",
         "tqdm", "sqlite3", "mnemetric.llm", "mnemetric.execute")


def _imported_after(argv: list[str]) -> list[str]:
    """The modules a fresh interpreter holds after ``mnemetric ARGV`` (run in process, exit code 0 or 1)."""
    code = ("import json, sys\n"
            "from mnemetric.cli import main\n"
            f"code = main({argv!r})\n"
            "assert code in (0, 1), code\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_homes_name_every_command_and_the_modules_that_register_it():
    cli.build_parser()  # imports every module of MODULES
    assert set(cli.HOMES) == set(COMMANDS)
    for name, homes in cli.HOMES.items():
        setups = [s for _, _, s in GROUPS[name].values()] if name in GROUPS else [COMMANDS[name][2]]
        assert {s.__module__ for s in setups} == {f"mnemetric.cli.{m}" for m in homes}, name
    assert {m for homes in cli.HOMES.values() for m in homes} <= set(cli.MODULES)


def test_validate_imports_no_heavy_module():
    sample = ROOT / "data" / "sample" / "longmemeval_sample.json"
    loaded = _imported_after(["validate", str(sample)])
    assert "mnemetric.longmemeval.instance" in loaded  # it did the work
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
    assert [m for m in loaded if m.startswith("mnemetric.cli.")] == ["mnemetric.cli.data", "mnemetric.cli.registry"]


def test_a_command_builds_only_its_own_parser():
    parser = cli.build_parser(["validate", "x.json"])
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    assert list(sub.choices) == ["validate"]
    assert list(next(a for a in cli.build_parser()._actions if a.dest == "command").choices) == list(COMMANDS)


def test_the_re_exports_still_resolve():
    from mnemetric.cli import load_memory, memory_options
    from mnemetric.cli.retrieval import load_memory as direct

    assert load_memory is direct and callable(memory_options)


def test_validate_reads_with_few_collections_and_restores_the_threshold(monkeypatch, capsys):
    """The reader's objects have no cycle: validate raises the collector's youngest threshold while it reads
    (about 15% of its time on an M-shaped file) and puts it back after."""
    import gc

    import mnemetric.longmemeval.instance as instance

    seen = []
    real = instance.scan_file
    monkeypatch.setattr(instance, "scan_file", lambda *a: seen.append(gc.get_threshold()) or real(*a))
    before = gc.get_threshold()
    assert cli.main(["validate", str(ROOT / "data" / "sample" / "longmemeval_sample.json")]) == 0
    assert seen and seen[0][0] == 50_000 and seen[0][1:] == before[1:]
    assert gc.get_threshold() == before
