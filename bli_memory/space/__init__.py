"""The space (its tag; `containerTag` on the wire) a folder's memories land in, computed by reading git's files.

One job per module, dependencies pointing one way: `tag` (the name and how it was derived) uses
`discovery` (which repository holds the folder), `origin` (its origin URL, through `gitconfig`,
git's config reader) and `remote` (normalising that URL). How and why, measured: docs/space.md.
"""

from bli_memory.space.discovery import GitRepository, find_repository
from bli_memory.space.gitconfig import GitConfigError
from bli_memory.space.origin import origin_url
from bli_memory.space.remote import normalise_remote
from bli_memory.space.tag import (
    KIND_FOLDER,
    KIND_OVERRIDE,
    KIND_REMOTE,
    KIND_REPO_PATH,
    Space,
    container_tag,
    remote_name,
    resolve_space,
    resolve_space_of,
    space_of,
)

__all__ = [
    "KIND_FOLDER",
    "KIND_OVERRIDE",
    "KIND_REMOTE",
    "KIND_REPO_PATH",
    "GitConfigError",
    "GitRepository",
    "Space",
    "container_tag",
    "find_repository",
    "normalise_remote",
    "origin_url",
    "remote_name",
    "resolve_space",
    "resolve_space_of",
    "space_of",
]
