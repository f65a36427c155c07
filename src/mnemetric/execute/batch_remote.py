"""The Batch API side of :class:`~mnemetric.execute.batch.BatchExecutor`: upload, create, find, poll, cancel, download.

Through the official ``openai`` SDK (``files`` and ``batches``) against any server that speaks them (OpenAI;
tests/support's loopback server). Each step writes the ledger (:mod:`mnemetric.llm.batch_ledger`) before the
next starts: the input file id before the batch is created, the batch id as soon as it exists. A batch the
ledger names but the server does not know (deleted, another account, expired files) is a
:class:`BatchError` naming it and the ledger, never a silent resubmission.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from mnemetric.llm.sdk import openai

from mnemetric.errors import MnemetricError
from mnemetric.llm.batch_files import URLS, read_results, request_line
from mnemetric.llm.batch_ledger import Ledger, Slot
from mnemetric.llm.cache import strip_url_credentials, url_secrets

TERMINAL: Final = ("completed", "expired", "cancelled", "failed")
COMPLETION_WINDOW: Final = "24h"
SLOT_METADATA: Final = "mnemetric_slot"


class BatchError(MnemetricError):
    """A batch cannot be used as the ledger says (failed, cancelled, deleted, unreadable): names it."""


class BatchPending(MnemetricError):
    """Requests were submitted (or exported) and their replies are not in yet: rerun to collect them."""

    exit_code = 3


def _scrub(text: str, url: str | None) -> str:
    for secret in url_secrets(url):
        text = text.replace(secret, "***")
    key = os.environ.get("OPENAI_API_KEY")
    return text.replace(key, "***") if key and len(key) >= 4 else text


class Remote:
    """One server's files and batches (``transport_url`` as the calls give it, credentials included)."""

    def __init__(self, transport_url: str | None, ledger: Ledger, *, timeout: float = 120.0, max_attempts: int = 6):
        self.url = transport_url
        self.shown = strip_url_credentials(transport_url or "") or "$OPENAI_BASE_URL"
        self.ledger = ledger
        try:
            self.sdk = openai.OpenAI(base_url=transport_url, timeout=timeout, max_retries=max(0, max_attempts - 1))
        except openai.OpenAIError as exc:
            raise BatchError(f"no API key for the Batch API at {self.shown}: set OPENAI_API_KEY (SDK said: {exc})") \
                from None

    def _fail(self, slot: Slot, what: str, exc: BaseException) -> BatchError:
        detail = _scrub(str(exc), self.url)
        return BatchError(f"batch {slot.name} (ledger {self.ledger.path}, slot {slot.slot}): {what} at {self.shown} "
                          f"failed: {detail}")

    def _missing(self, slot: Slot, what: str) -> BatchError:
        return BatchError(
            f"batch {slot.name} (ledger {self.ledger.path}, slot {slot.slot}): {what} is not on the server "
            f"{self.shown} (deleted, another account or project, or its files expired after 30 days)\n"
            f"  fix: `mnemetric batch forget {slot.name}` drops it from the ledger; its {slot.requests} request(s) "
            "are then submitted again on the next run (and paid again if the batch had run)")

    # -- submitting ------------------------------------------------------------------------------
    def upload(self, slot: Slot, payloads: Mapping[str, Mapping[str, Any]]) -> Slot:
        """Upload the slot's input file (``purpose=batch``); the ledger records its id (state uploaded)."""
        data = b"".join(request_line(k, p) for k, p in payloads.items())
        try:
            made = self.sdk.files.create(file=(f"{slot.slot}.jsonl", data, "application/jsonl"), purpose="batch")
        except openai.OpenAIError as exc:
            raise self._fail(slot, "uploading the input file", exc) from None
        return self.ledger.update(slot.slot, state="uploaded", input_file_id=made.id)

    def create(self, slot: Slot) -> Slot:
        """Create the batch of an uploaded slot (or adopt the one already made from its file); state submitted."""
        found = self.find(slot)
        if found is None:
            try:
                found = self.sdk.batches.create(input_file_id=slot.input_file_id, endpoint=URLS[slot.kind],
                                                completion_window=COMPLETION_WINDOW,
                                                metadata={SLOT_METADATA: slot.slot})
            except openai.OpenAIError as exc:
                raise self._fail(slot, "creating the batch", exc) from None
        return self.record(slot, found, state="submitted", batch_id=found.id)

    def find(self, slot: Slot) -> Any | None:
        """The batch made from this slot's input file, if the server has one (a run killed between create
        and the ledger write)."""
        try:
            for batch in self.sdk.batches.list(limit=100):
                meta = batch.metadata or {}
                if batch.input_file_id == slot.input_file_id or meta.get(SLOT_METADATA) == slot.slot:
                    return batch
        except openai.OpenAIError as exc:
            raise self._fail(slot, "listing batches", exc) from None
        return None

    # -- following -------------------------------------------------------------------------------
    def record(self, slot: Slot, batch: Any, **extra: Any) -> Slot:
        counts = batch.request_counts
        return self.ledger.update(slot.slot, remote_status=batch.status,
                                  completed=int(counts.completed) if counts else 0,
                                  failed=int(counts.failed) if counts else 0, **extra)

    def _call(self, slot: Slot, doing: str, method: Any) -> Any:
        """``method(batch_id)`` (retrieve or cancel); the ledger follows the batch it returns."""
        try:
            batch = method(slot.batch_id)
        except openai.NotFoundError:
            raise self._missing(slot, "the batch") from None
        except openai.OpenAIError as exc:
            raise self._fail(slot, f"{doing} the batch", exc) from None
        self.record(slot, batch)
        return batch

    def retrieve(self, slot: Slot) -> Any:
        """The batch as the server has it now (the ledger follows)."""
        return self._call(slot, "retrieving", self.sdk.batches.retrieve)

    def cancel(self, slot: Slot) -> Any:
        return self._call(slot, "cancelling", self.sdk.batches.cancel)

    def download(self, slot: Slot, batch: Any, known: set[str]) -> list:
        """Every result line of the batch's output and error files, checked before anything is stored
        (:func:`mnemetric.llm.batch_files.read_results`); a file shorter than the batch's counts is
        truncated. Raises BatchError / InputError naming the batch, file and line."""
        seen: dict[str, str] = {}
        lines = []
        for label, file_id in (("output", batch.output_file_id), ("error", batch.error_file_id)):
            if not file_id:
                continue
            try:
                data = self.sdk.files.content(file_id).content
            except openai.NotFoundError:
                raise self._missing(slot, f"its {label} file {file_id}") from None
            except openai.OpenAIError as exc:
                raise self._fail(slot, f"downloading its {label} file {file_id}", exc) from None
            lines += read_results(data, file=f"batch {batch.id} {label} file {file_id}", known=known, seen=seen)
        counts = batch.request_counts
        expected = (int(counts.completed) + int(counts.failed)) if counts else 0
        if len(lines) < expected:  # any ending: an expired or cancelled batch's files hold what finished too
            raise BatchError(f"batch {batch.id}: its output and error files hold {len(lines)} result line(s) but the "
                             f"batch reports {expected} (completed + failed): a file is truncated. Nothing was stored"
                             "; rerun to download again")
        return lines
