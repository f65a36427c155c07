"""The generated files' bytes: one JSON list of instances, streamed, written atomically or only hashed.

Serialisation rule (fixed by the committed sample's sha256): ``json.dumps(records, indent=2,
ensure_ascii=False) + "\\n"`` over ``Instance.to_record()`` of each instance (upstream key order;
has_answer only where set; an integer answer stays a bare JSON number). ``json_list_chunks`` yields
exactly those bytes one instance at a time, so a 500 × 48 synthetic set never sits in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator

from mnemetric.longmemeval.instance import Instance
from mnemetric.io import atomic_open

DEFAULT_OUT = os.path.join("data", "sample", "longmemeval_sample.json")


def json_list_chunks(records: Iterable[object]) -> Iterator[str]:
    """The text of ``json.dumps(list(records), indent=2, ensure_ascii=False) + "\\n"``, in pieces."""
    n = 0
    for record in records:
        yield "[\n  " if n == 0 else ",\n  "
        yield json.dumps(record, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        n += 1
    yield "\n]\n" if n else "[]\n"


def _records(instances: Iterable[Instance], counter: list[int]) -> Iterator[dict]:
    for instance in instances:
        counter[0] += 1
        yield instance.to_record()


def write_instances(path: str | os.PathLike[str], instances: Iterable[Instance]) -> tuple[int, str]:
    """Write ``instances`` to ``path`` atomically; return (count, sha256 of the bytes written)."""
    counter, digest = [0], hashlib.sha256()
    with atomic_open(path, "wb") as fh:
        for chunk in json_list_chunks(_records(instances, counter)):
            data = chunk.encode("utf-8")
            digest.update(data)
            fh.write(data)
    return counter[0], digest.hexdigest()


def instances_sha256(instances: Iterable[Instance]) -> tuple[int, str]:
    """(count, sha256) of the bytes ``write_instances`` would write; nothing touches the disk."""
    counter, digest = [0], hashlib.sha256()
    for chunk in json_list_chunks(_records(instances, counter)):
        digest.update(chunk.encode("utf-8"))
    return counter[0], digest.hexdigest()
