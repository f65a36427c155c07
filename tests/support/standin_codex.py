"""A stand-in for the Codex CLI (`codex exec`) as upstream LongMemEval-V2's codex and agentrunbook_c memories run it:
offline, deterministic, no model. It reads only what the memory put in its sandbox and writes the output file the
memory reads back, so a differential test can run those memories unchanged on both harnesses and compare what each
harness sent the stand-in and what the reader got from it.

Invoked as ``python standin_codex.py exec -C <sandbox> ... -o <last message file> ... <prompt>`` (the command line
upstream builds). Writes ``<sandbox>/memory_module_output.json``:

* ``memory_markdown``: a digest of what it was given — its arguments with the sandbox and last-message paths
  replaced by placeholders, the sha256 of every file in the sandbox (question.json, INSTRUCTION.md, the helper
  scripts, the question image, the workspace index without its clock times) and of the trajectory summary files
  the memory rendered (agentrunbook_c), the question, and the sorted trajectory folders — so any difference in
  them reaches the reader's request;
* ``trajectory_spans``: states 0..1 of the first trajectory (sorted by id) that has two states, and state 0 of
  the last, the memory expanding them into state text and screenshots.

Prints one ``turn.completed`` JSON event (as `codex exec --json` does) and writes the last-message file.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _untimed(value):
    """A JSON value without its clock times (keys ending in ``_at_utc``: the workspace index's)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not k.endswith("_at_utc")}
    return [_untimed(v) for v in value] if isinstance(value, list) else value


def _file_digest(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".json":
        data = json.dumps(_untimed(json.loads(data)), sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest()


def digest(sandbox: Path, argv: list[str], last: str) -> str:
    args = [a.replace(str(sandbox), "<sandbox>").replace(last, "<last-message>") for a in argv]
    lines = ["# Stand-in Codex", "args: " + json.dumps(args)]
    for path in sorted(p for p in sandbox.rglob("*") if p.is_file() and "trajectories" not in p.parts):
        lines.append(f"file {path.relative_to(sandbox)} {_file_digest(path)}")
    for summary in sorted(p for p in (sandbox / "trajectories").iterdir() if p.is_file()):
        lines.append(f"file trajectories/{summary.name} {_file_digest(summary)}")
    lines.append("question: " + (sandbox / "question.json").read_text(encoding="utf-8"))
    trajectories = sandbox / "trajectories"
    lines.append("trajectories: " + " ".join(sorted(p.name for p in trajectories.iterdir() if p.is_dir())))
    return "\n".join(lines)


def spans(trajectories: Path) -> list[dict]:
    folders = sorted(p for p in trajectories.iterdir() if (p / "trajectory.json").is_file())
    counts = {p.name: len(json.loads((p / "trajectory.json").read_text(encoding="utf-8"))["states"]) for p in folders}
    out = [{"trajectory_id": t, "start_state_index": 0, "end_state_index": 1} for t in counts if counts[t] >= 2][:1]
    if folders:
        out.append({"trajectory_id": folders[-1].name, "start_state_index": 0, "end_state_index": 0})
    return out


def main(argv: list[str]) -> int:
    sandbox, last = Path(_arg(argv, "-C")), _arg(argv, "-o")
    output = {"memory_markdown": digest(sandbox, argv, last), "trajectory_spans": spans(sandbox / "trajectories")}
    (sandbox / "memory_module_output.json").write_text(json.dumps(output), encoding="utf-8")
    Path(last).write_text("done", encoding="utf-8")
    print(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
