"""The Files and Batches API of the loopback OpenAI server (``FakeOpenAIServer.batch``), driven by tests.

Routes (what the ``openai`` SDK's ``files`` and ``batches`` resources call): ``POST /v1/files`` (multipart
upload, any purpose), ``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches`` (list),
``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.

States move only when the test says so (:meth:`BatchAPI.advance`), or — with ``auto=True`` — one step per
retrieve (validating → in_progress → finalizing → completed; cancelling → cancelled), so no test sleeps.
When a batch reaches completed / expired / cancelled its lines are *run* through the server's own chat and
embeddings replies (non-answers and scripted per-request errors included) and its output and error files
written. Faults: ``error_for(custom_id, body)`` → an HTTP status for that request (sent the way OpenAI does
it: ``error: null`` and ``response.status_code``) or None; :meth:`advance` with ``done=`` runs only the first
lines (expired: the rest get ``batch_expired`` error lines; cancelled: no lines); ``fail`` (validation
errors); ``truncate_output`` (output files served cut in the middle of their last line); ``drop_output_lines`` (N:
output files served without their last N lines, cut exactly at a line boundary); ``extra_line`` (output files
served with a line for a custom_id not in the batch); ``repeat_line`` (output files served with their first line
twice); ``lose_output`` (output files answer 404, as a deleted file does); :meth:`delete` (the batch and its
files vanish: 404). ``hold`` (a threading.Event, set = released) blocks file-content downloads, to kill a client
in completed-but-not-downloaded.

:attr:`submitted` lists every custom_id of every batch created (a request paid twice appears twice);
:attr:`executed` the custom_ids run (billed).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    from tests.support.openai_replies import api_error
except ImportError:  # run as a script: tests/support is on the path
    from openai_replies import api_error  # type: ignore[no-redef]

PATHS = ("/v1/files", "/v1/batches")
"""The path prefixes of this API: the chat/embeddings server hands every request under them to
:meth:`BatchAPI.handle`."""
FLOW = {"validating": "in_progress", "in_progress": "finalizing", "finalizing": "completed", "cancelling": "cancelled"}
ENDED = ("completed", "expired", "cancelled", "failed")


class BatchAPI:
    """State of the fake Files and Batches API (module docstring)."""

    def __init__(self, fake: Any):
        self.fake = fake
        self.lock = threading.RLock()
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: list[str] = []
        self.executed: list[str] = []
        self.retrieves: dict[str, int] = {}
        self.downloads: list[str] = []
        self.auto = False
        self.error_for: Callable[[str, dict], int | None] | None = None
        self.truncate_output = False
        self.extra_line = False
        self.drop_output_lines = 0
        self.repeat_line = False
        self.lose_output = False
        self.endings: list[tuple[str, int | None]] = []
        """With ``auto``: how the next batches end (status, lines run) instead of completed, one per batch."""
        self.hold = threading.Event()
        self.hold.set()
        self._n = 0

    # -- driving ---------------------------------------------------------------------------------
    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}-{self._n:06d}"

    def only(self) -> str:
        """The id of the one batch created so far (tests with one batch)."""
        with self.lock:
            assert len(self.batches) == 1, list(self.batches)
            return next(iter(self.batches))

    def advance(self, batch_id: str, status: str, *, done: int | None = None,
                errors: list[dict[str, Any]] | None = None) -> None:
        """Set a batch's status; an ending status runs its lines (``done``: only the first ``done``)."""
        with self.lock:
            b = self.batches[batch_id]
            b["status"] = status
            b[f"{status}_at"] = int(time.time())
            if status == "failed":
                b["errors"] = {"object": "list", "data": errors or [{"code": "invalid_request", "message": "bad file",
                                                                      "line": 1}]}
            elif status in ENDED:
                self._run(b, done)

    def delete(self, batch_id: str) -> None:
        with self.lock:
            self.batches.pop(batch_id, None)

    def _lines(self, b: dict[str, Any]) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.files[b["input_file_id"]]["data"].decode().splitlines() if x.strip()]

    def _reply(self, line: dict[str, Any]) -> dict[str, Any]:
        body, key = line["body"], line["custom_id"]
        status = self.error_for(key, body) if self.error_for else None
        if status:
            err = api_error(f"scripted HTTP {status}", code=None)
            return {"id": self._id("batch_req"), "custom_id": key, "error": None,
                    "response": {"status_code": status, "request_id": self._id("req"), "body": err}}
        if line["url"].endswith("/embeddings"):
            payload = self.fake.embeddings_payload(body)
        else:
            kind = self.fake.non_answer_for(body) if self.fake.non_answer_for else None
            payload = self.fake.non_answer_payload(body, kind) if kind else self.fake.chat_payload(body)
        return {"id": self._id("batch_req"), "custom_id": key, "error": None,
                "response": {"status_code": 200, "request_id": self._id("req"), "body": payload}}

    def _run(self, b: dict[str, Any], done: int | None) -> None:
        lines = self._lines(b)
        ran = lines if done is None or b["status"] == "completed" else lines[:done]
        out, err = [], []
        for line in ran:
            self.executed.append(line["custom_id"])
            reply = self._reply(line)
            (out if reply["response"]["status_code"] == 200 else err).append(reply)
        if b["status"] == "expired":
            err += [{"id": self._id("batch_req"), "custom_id": x["custom_id"], "response": None,
                     "error": {"code": "batch_expired", "message": "This request could not be executed before the "
                               "completion window expired."}} for x in lines[len(ran):]]
        data = "".join(json.dumps(x) + "\n" for x in out).encode()
        b["output_file_id"] = self._store(data, "batch_output", "output.jsonl") if out else None
        b["error_file_id"] = self._store("".join(json.dumps(x) + "\n" for x in err).encode(), "batch_output") \
            if err else None
        b["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}

    def _store(self, data: bytes, purpose: str, name: str = "file.jsonl") -> str:
        fid = self._id("file")
        self.files[fid] = {"data": data, "purpose": purpose, "filename": name}
        return fid

    # -- HTTP ------------------------------------------------------------------------------------
    def handle(self, handler: Any, method: str, path: str, raw: bytes) -> None:
        parts = path.strip("/").split("/")[1:]  # drop "v1"
        with self.lock:
            if method == "GET" and len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
                pass
            else:
                status, payload = self._route(method, parts, raw, handler.headers.get("Content-Type", ""))
                handler._send(status, payload)
                return
        self.downloads.append(parts[1])
        self.hold.wait()
        with self.lock:
            f = self.files.get(parts[1])
        if f is not None and self.truncate_output and f["filename"] == "output.jsonl":  # cut on the way
            f = {**f, "data": f["data"][: len(f["data"]) - len(f["data"].rsplit(b"\n", 2)[-2]) // 2 - 1]}
        if f is not None and self.extra_line and f["filename"] == "output.jsonl":
            f = {**f, "data": f["data"] + json.dumps({"id": "batch_req_x", "custom_id": "f" * 64, "error": None, "response": {
                "status_code": 200, "request_id": "req_x", "body": {}}}).encode() + b"\n"}
        if f is not None and self.drop_output_lines and f["filename"] == "output.jsonl":
            kept = f["data"].splitlines(keepends=True)[: -self.drop_output_lines]
            f = {**f, "data": b"".join(kept)}
        if f is not None and self.repeat_line and f["filename"] == "output.jsonl":
            f = {**f, "data": f["data"] + f["data"].splitlines(keepends=True)[0]}
        if f is not None and self.lose_output and f["filename"] == "output.jsonl":
            f = None
        if f is None:
            handler._send(404, api_error(f"No such File object: {parts[1]}"))
        else:
            handler._send_bytes(200, f["data"], {"Content-Type": "application/octet-stream"})

    def _route(self, method: str, parts: list[str], raw: bytes, ctype: str) -> tuple[int, dict]:
        if method == "POST" and parts == ["files"]:
            fields = _multipart(raw, ctype)
            fid = self._store(fields["file"][1], fields.get("purpose", (None, b""))[1].decode(), fields["file"][0])
            return 200, {"id": fid, "object": "file", "bytes": len(self.files[fid]["data"]), "created_at": int(time.time()),
                         "filename": fields["file"][0], "purpose": self.files[fid]["purpose"], "status": "processed"}
        if method == "POST" and parts == ["batches"]:
            body = json.loads(raw)
            if body.get("input_file_id") not in self.files:
                return 400, api_error("no such input file")
            bid = self._id("batch")
            self.batches[bid] = {"id": bid, "object": "batch", "endpoint": body["endpoint"], "errors": None,
                                 "input_file_id": body["input_file_id"], "completion_window": body["completion_window"],
                                 "status": "validating", "output_file_id": None, "error_file_id": None,
                                 "created_at": int(time.time()), "metadata": body.get("metadata"),
                                 "request_counts": {"total": 0, "completed": 0, "failed": 0}}
            self.submitted += [x["custom_id"] for x in self._lines(self.batches[bid])]
            return 200, self.batches[bid]
        if method == "GET" and parts == ["batches"]:
            data = list(reversed(self.batches.values()))
            return 200, {"object": "list", "data": data, "has_more": False,
                         "first_id": data[0]["id"] if data else None, "last_id": data[-1]["id"] if data else None}
        if len(parts) >= 2 and parts[0] == "batches":
            b = self.batches.get(parts[1])
            if b is None:
                return 404, api_error(f"No batch found with id '{parts[1]}'.")
            if method == "POST" and parts[2:] == ["cancel"]:
                if b["status"] not in ENDED:
                    b["status"] = "cancelling"
                return 200, b
            if method == "GET" and len(parts) == 2:
                self.retrieves[b["id"]] = self.retrieves.get(b["id"], 0) + 1
                if self.auto and b["status"] == "in_progress" and self.endings:
                    status, done = self.endings.pop(0)
                    self.advance(b["id"], status, done=done)
                elif self.auto and b["status"] in FLOW:
                    self.advance(b["id"], FLOW[b["status"]], done=0)
                return 200, b
        return 404, api_error(f"Unknown path /v1/{'/'.join(parts)}")


def _multipart(raw: bytes, ctype: str) -> dict[str, tuple[str | None, bytes]]:
    """name → (filename, bytes) of a multipart/form-data body."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True))
    return out
