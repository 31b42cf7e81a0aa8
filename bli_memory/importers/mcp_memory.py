"""The MCP reference memory server (`@modelcontextprotocol/server-memory`): its `memory.jsonl`.

One JSON object a line: `{"type": "entity", "name", "entityType", "observations": [text, ...]}` or
`{"type": "relation", "from", "to", "relationType"}`. Each observation becomes one memory,
`<name>: <observation>`, and each relation one, `<from> <relationType> <to>`. The format keeps no
timestamps, so the memories are dated by the import.
"""

from __future__ import annotations

import json
from typing import Any

from bli_memory.importers.records import (
    Parsed,
    Record,
    decode_text,
    describe_json_error,
    lone_surrogate,
    text_of,
)


def parse(data: bytes) -> Parsed:
    parsed = Parsed()
    for number, line in enumerate(decode_text(data).split("\n"), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            item = json.loads(line)
        except (ValueError, RecursionError) as exc:
            parsed.skip(where, describe_json_error(exc))
            continue
        if not isinstance(item, dict):
            parsed.skip(where, "not a JSON object")
        elif (unsendable := lone_surrogate(item)) is not None:
            parsed.skip(where, unsendable)
        elif item.get("type") == "entity":
            _entity(where, item, parsed)
        elif item.get("type") == "relation":
            _relation(where, item, parsed)
        else:
            parsed.skip(where, '`type` is neither "entity" nor "relation"')
    return parsed


def _entity(where: str, item: dict[str, Any], parsed: Parsed) -> None:
    name = text_of(item.get("name"))
    observations = item.get("observations")
    if name is None:
        parsed.skip(where, "an entity without a `name`")
        return
    if not isinstance(observations, list):
        parsed.skip(where, "an entity without an `observations` list")
        return
    entity_type = text_of(item.get("entityType"))
    for index, observation in enumerate(observations, start=1):
        text = text_of(observation)
        if text is None:
            parsed.skip(f"{where} observation {index}", "not a text")
            continue
        metadata: dict[str, Any] = {"entity": name}
        if entity_type is not None:
            metadata["entityType"] = entity_type
        parsed.records.append(
            Record(content=f"{name}: {text}", original_id=f"entity\x00{name}\x00{text}", metadata=metadata)
        )


def _relation(where: str, item: dict[str, Any], parsed: Parsed) -> None:
    parts = [text_of(item.get(name)) for name in ("from", "relationType", "to")]
    if any(part is None for part in parts):
        parsed.skip(where, "a relation needs `from`, `to` and `relationType`")
        return
    source, relation, target = parts
    parsed.records.append(
        Record(
            content=f"{source} {relation} {target}",
            original_id=f"relation\x00{source}\x00{relation}\x00{target}",
            metadata={"relation": {"from": source, "relationType": relation, "to": target}},
        )
    )
