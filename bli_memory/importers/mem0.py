"""mem0: the JSON of `Memory.get_all()` / `MemoryClient.get_all()`, and the OpenMemory export zip.

`get_all` answers a list of memories (v1) or `{"results": [...]}` (newer releases); each memory is
`{id, memory, hash, metadata, created_at, updated_at, user_id, agent_id, run_id, ...}`. OpenMemory's
backup export (`POST /api/v1/backup/export`) is a zip holding `memories.json` — `{user, apps,
categories, memories: [{id, content, metadata, state, created_at, updated_at, category_ids, ...}],
...}` — and `memories.jsonl.gz`; the importer reads `memories.json` and leaves out memories whose
`state` is `deleted`.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from typing import Any

from bli_memory.importers.records import (
    FormatError,
    Item,
    Parsed,
    Record,
    array_items,
    decode_text,
    keyed_array,
    text_of,
    timestamp_of,
    top_array,
    vendor_metadata,
)

ZIP_MAGIC = b"PK\x03\x04"
OPENMEMORY_MANIFEST = "memories.json"
#: a zip member's general-purpose flag for an encrypted member.
ENCRYPTED_FLAG = 0x1
#: the manifest is read whole; a larger one is not an OpenMemory export of one person.
MAX_MANIFEST_BYTES = 256 * 1024 * 1024
#: mem0's fields that name whose memory it was, kept in the metadata.
OWNER_FIELDS = ("user_id", "agent_id", "run_id", "actor_id", "role")


def parse(data: bytes) -> Parsed:
    if data.startswith(ZIP_MAGIC):
        return parse_openmemory_zip(data)
    return parse_get_all(decode_text(data))


def parse_get_all(text: str) -> Parsed:
    """`get_all`'s JSON: a list of memories, or an object with them under `results`."""
    start = top_array(text)
    if start is None:
        start = keyed_array(text, "results")
    if start is None:
        raise FormatError('not mem0 get_all JSON: expected a list of memories or {"results": [...]}')
    parsed = Parsed()
    for item in array_items(text, start):
        _get_all_item(item, parsed)
    return parsed


def _get_all_item(item: Item, parsed: Parsed) -> None:
    if item.error is not None:
        parsed.skip(item.where, item.error)
        return
    memory = item.value
    if not isinstance(memory, dict):
        parsed.skip(item.where, "not a JSON object")
        return
    content = text_of(memory.get("memory"))
    if content is None:
        parsed.skip(item.where, "no `memory` text")
        return
    original_id = memory.get("id")
    if not isinstance(original_id, str) or not original_id.strip():
        parsed.skip(item.where, "no `id`")
        return
    metadata: dict[str, Any] = {
        name: memory[name] for name in OWNER_FIELDS if isinstance(memory.get(name), str) and memory[name]
    }
    categories = memory.get("categories")
    if isinstance(categories, list) and all(isinstance(name, str) for name in categories) and categories:
        metadata["categories"] = categories
    vendor = vendor_metadata(memory.get("metadata"))
    if vendor is not None:
        metadata["vendorMetadata"] = vendor
    parsed.records.append(
        Record(
            content=content,
            original_id=original_id,
            created_at=timestamp_of(memory.get("created_at")),
            metadata=metadata,
        )
    )


def parse_openmemory_zip(data: bytes) -> Parsed:
    """OpenMemory's backup zip: the memories of `memories.json`, with their category names."""
    text = decode_text(_manifest_bytes(data))
    categories = _category_names(text)
    start = keyed_array(text, "memories")
    if start is None:
        raise FormatError(f'not an OpenMemory export: {OPENMEMORY_MANIFEST} has no "memories" list')
    parsed = Parsed()
    for item in array_items(text, start):
        _openmemory_item(item, categories, parsed)
    return parsed


def _manifest_bytes(data: bytes) -> bytes:
    """`memories.json` from the zip, read up to `MAX_MANIFEST_BYTES` whatever its header claims. A
    zip that is damaged, encrypted or compressed by a method Python cannot read is one line
    (FormatError), never a traceback."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            member = next(
                (
                    info
                    for info in archive.infolist()
                    if info.filename.rsplit("/", 1)[-1] == OPENMEMORY_MANIFEST
                ),
                None,
            )
            if member is None:
                raise FormatError(f"not an OpenMemory export: the zip holds no {OPENMEMORY_MANIFEST}")
            if member.flag_bits & ENCRYPTED_FLAG:
                raise FormatError(f"{OPENMEMORY_MANIFEST} is encrypted; export it again without a password")
            if member.file_size > MAX_MANIFEST_BYTES:
                raise FormatError(f"{OPENMEMORY_MANIFEST} is larger than {MAX_MANIFEST_BYTES} bytes")
            with archive.open(member) as opened:
                manifest = opened.read(MAX_MANIFEST_BYTES + 1)
    except NotImplementedError:
        raise FormatError(
            f"{OPENMEMORY_MANIFEST} is compressed by a method this import cannot read; export it again as a plain zip"
        ) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError) as exc:
        if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc):
            raise FormatError(
                f"{OPENMEMORY_MANIFEST} is damaged in the zip (its checksum does not match)"
            ) from None
        if isinstance(exc, zipfile.BadZipFile) and "member" not in locals():
            raise FormatError("not a readable zip file") from None
        raise FormatError(f"{OPENMEMORY_MANIFEST} is damaged in the zip ({exc})") from None
    if len(manifest) > MAX_MANIFEST_BYTES:
        raise FormatError(f"{OPENMEMORY_MANIFEST} is larger than {MAX_MANIFEST_BYTES} bytes")
    return manifest


def _category_names(text: str) -> dict[str, str]:
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError):
        return {}  # a broken manifest still gives its readable memories, without category names
    found = manifest.get("categories") if isinstance(manifest, dict) else None
    if not isinstance(found, list):
        return {}
    return {
        str(category["id"]): category["name"]
        for category in found
        if isinstance(category, dict) and "id" in category and isinstance(category.get("name"), str)
    }


def _openmemory_item(item: Item, categories: dict[str, str], parsed: Parsed) -> None:
    where = f"{OPENMEMORY_MANIFEST} {item.where}"
    if item.error is not None:
        parsed.skip(where, item.error)
        return
    memory = item.value
    if not isinstance(memory, dict):
        parsed.skip(where, "not a JSON object")
        return
    if memory.get("state") == "deleted":
        parsed.skip(where, "deleted in OpenMemory", malformed=False)
        return
    content = text_of(memory.get("content"))
    original_id = memory.get("id")
    if content is None:
        parsed.skip(where, "no `content` text")
        return
    if not isinstance(original_id, str) or not original_id.strip():
        parsed.skip(where, "no `id`")
        return
    metadata: dict[str, Any] = {}
    state = memory.get("state")
    if isinstance(state, str) and state != "active":
        metadata["state"] = state
    ids = memory.get("category_ids")
    names = [categories[str(one)] for one in ids if str(one) in categories] if isinstance(ids, list) else []
    if names:
        metadata["categories"] = names
    vendor = vendor_metadata(memory.get("metadata"))
    if vendor is not None:
        metadata["vendorMetadata"] = vendor
    parsed.records.append(
        Record(
            content=content,
            original_id=original_id,
            created_at=timestamp_of(memory.get("created_at")),
            metadata=metadata,
        )
    )
