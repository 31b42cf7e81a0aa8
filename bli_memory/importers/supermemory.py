"""Supermemory: its documents as the API lists them, with or without their memories.

Two answers of its API are read, saved to a file:
- `POST /v3/documents/list` — `{"memories": [document, ...], "pagination": {...}}` (a bare list of
  documents is read too), each document `{id, customId?, title, summary?, content?, status, type,
  containerTags, metadata, createdAt, updatedAt}`: one memory per document, its `content`, else its
  `summary`, else its `title`.
- the documents-with-memories answer its memory graph reads — `{"documents": [{id, title, summary,
  createdAt, memories: [{id, memory, createdAt, isForgotten, isLatest, spaceContainerTag, ...}]}]}`:
  one memory per latest, not forgotten memory entry; a document without entries is read as above.

Its container tags (`containerTags`, `spaceContainerTag`) are kept as `vendor_tags`: the command makes
them aliases of the space the memories land in.
"""

from __future__ import annotations

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


def parse(data: bytes) -> Parsed:
    text = decode_text(data)
    parsed = Parsed()
    start = top_array(text)
    for key in ("documents", "memories"):  # `documents` first: its documents hold `memories` lists
        if start is None:
            start = keyed_array(text, key)
    if start is None:
        raise FormatError(
            'not a Supermemory export: expected {"memories": [...]} (documents.list), '
            '{"documents": [...]} or a list of documents'
        )
    items = array_items(text, start)
    for item in items:
        _document(item, parsed)
    return parsed


def _tags(document: dict[str, Any]) -> tuple[str, ...]:
    tags = document.get("containerTags")
    found = [tag for tag in tags if isinstance(tag, str) and tag.strip()] if isinstance(tags, list) else []
    single = document.get("containerTag")  # the older, single-tag field
    if isinstance(single, str) and single.strip():
        found.append(single)
    return tuple(dict.fromkeys(found))


def _document(item: Item, parsed: Parsed) -> None:
    if item.error is not None:
        parsed.skip(item.where, item.error)
        return
    document = item.value
    if not isinstance(document, dict):
        parsed.skip(item.where, "not a JSON object")
        return
    document_id = document.get("id")
    if not isinstance(document_id, str) or not document_id.strip():
        parsed.skip(item.where, "no `id`")
        return
    entries = document.get("memories")
    if isinstance(entries, list) and entries:
        for number, entry in enumerate(entries, start=1):
            _entry(f"{item.where} memory {number}", entry, document, parsed)
        return
    content = text_of(document.get("content")) or text_of(document.get("summary"))
    content = content or text_of(document.get("title"))
    if content is None:
        parsed.skip(item.where, "no text (no `content`, `summary` or `title`)", malformed=False)
        return
    metadata: dict[str, Any] = {"documentId": document_id}
    for name in ("customId", "title", "type", "url"):
        if isinstance(document.get(name), str) and document[name]:
            metadata[name] = document[name]
    vendor = vendor_metadata(document.get("metadata"))
    if vendor is not None:
        metadata["vendorMetadata"] = vendor
    parsed.records.append(
        Record(
            content=content,
            original_id=f"document:{document_id}",
            created_at=timestamp_of(document.get("createdAt")),
            metadata=metadata,
            vendor_tags=_tags(document),
        )
    )


def _entry(where: str, entry: Any, document: dict[str, Any], parsed: Parsed) -> None:
    if not isinstance(entry, dict):
        parsed.skip(where, "not a JSON object")
        return
    if entry.get("isForgotten") is True:
        parsed.skip(where, "forgotten in Supermemory", malformed=False)
        return
    if entry.get("isLatest") is False:
        parsed.skip(where, "an older version (isLatest false)", malformed=False)
        return
    content = text_of(entry.get("memory"))
    entry_id = entry.get("id")
    if content is None:
        parsed.skip(where, "no `memory` text")
        return
    if not isinstance(entry_id, str) or not entry_id.strip():
        parsed.skip(where, "no `id`")
        return
    metadata: dict[str, Any] = {"documentId": document["id"]}
    if isinstance(document.get("title"), str) and document["title"]:
        metadata["title"] = document["title"]
    tags = list(_tags(document))
    space_tag = entry.get("spaceContainerTag")
    if isinstance(space_tag, str) and space_tag.strip():
        tags.append(space_tag)
    parsed.records.append(
        Record(
            content=content,
            original_id=f"memory:{entry_id}",
            created_at=timestamp_of(entry.get("createdAt")),
            metadata=metadata,
            vendor_tags=tuple(dict.fromkeys(tags)),
        )
    )
