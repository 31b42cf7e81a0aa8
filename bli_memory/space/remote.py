"""Remote normalisation: the one string that every spelling of a repository's origin URL reduces to."""

from __future__ import annotations

import os

#: WHATWG URL default ports; a non-special scheme such as ssh:// has none, so ssh's :22 stays.
WHATWG_DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
WHATWG_SPECIAL_SCHEMES = frozenset({*WHATWG_DEFAULT_PORTS, "file"})
#: characters the WHATWG path percent-encode set escapes (besides controls and non-ASCII).
WHATWG_PATH_ESCAPES = frozenset(' "<>`{}')


def normalise_remote(url: str, *, base_dir: str) -> str:
    """The string whose sha256 names a repository's space: host, port and path of the remote, lowercased.

    ``base_dir`` anchors a relative local path (git resolves it from the top of the work tree; we use
    the main repository's root so every worktree agrees).
    """
    core = _scheme_url_core(url)
    if core is None:
        if _is_scp_like(url):
            host, _, path = url.partition(":")
            core = host.rpartition("@")[2].lower() + "/" + path
        else:
            core = "file:" + os.path.normpath(os.path.join(base_dir, url))
    for mark in ("?", "#"):
        cut = core.find(mark)
        if cut >= 0:
            core = core[:cut]
    core = core.rstrip("/")
    if core.lower().endswith(".git"):
        core = core[: -len(".git")]
    while "//" in core:
        core = core.replace("//", "/")
    return core.lower()


def _is_scheme(text: str) -> bool:
    if not text or not text[0].isascii() or not text[0].isalpha():
        return False
    return all(char.isascii() and (char.isalnum() or char in "+-.") for char in text)


def _is_scp_like(url: str) -> bool:
    """git's rule: a colon before any slash is `[user@]host:path` (connect.c, not on Windows drives)."""
    colon = url.find(":")
    slash = url.find("/")
    return colon > 0 and (slash < 0 or colon < slash)


def _scheme_url_core(url: str) -> str | None:
    """``host[:port]/path`` of a ``scheme://`` URL the way a WHATWG parser sees it; None otherwise."""
    mark = url.find("://")
    if mark <= 0 or not _is_scheme(url[:mark]):
        return None
    scheme = url[:mark].lower()
    rest = url[mark + 3 :]
    if scheme in WHATWG_SPECIAL_SCHEMES:
        rest = rest.replace("\\", "/")
    end = len(rest)
    for stop in "/?#":
        found = rest.find(stop)
        if 0 <= found < end:
            end = found
    authority, tail = rest[:end], rest[end:]
    if scheme == "file":
        return "file:" + _percent_decode(_remove_dot_segments(_split_path_tail(tail)[0]))
    host_port = authority.rpartition("@")[2]
    host, port = host_port, ""
    bracket = host_port.rfind("]")
    colon = host_port.rfind(":")
    if colon > bracket:
        host, port = host_port[:colon], host_port[colon + 1 :]
    if not host and scheme in WHATWG_SPECIAL_SCHEMES:
        return None
    port_text = ""
    if port:
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            return None
        if int(port) != WHATWG_DEFAULT_PORTS.get(scheme):
            port_text = f":{int(port)}"
    path, query = _split_path_tail(tail)
    path = _remove_dot_segments(_percent_encode_path(path))
    return host.lower() + port_text + "/" + path.lstrip("/") + query


def _split_path_tail(tail: str) -> tuple[str, str]:
    for index, char in enumerate(tail):
        if char in "?#":
            return tail[:index], tail[index:]
    return tail, ""


def _percent_encode_path(path: str) -> str:
    out: list[str] = []
    for char in path:
        if char in WHATWG_PATH_ESCAPES or ord(char) < 0x21 or ord(char) > 0x7E:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        else:
            out.append(char)
    return "".join(out)


def _percent_decode(text: str) -> str:
    if "%" not in text:
        return text
    raw = bytearray()
    index = 0
    while index < len(text):
        chunk = text[index : index + 3]
        if len(chunk) == 3 and chunk[0] == "%" and all(c in "0123456789abcdefABCDEF" for c in chunk[1:]):
            raw.append(int(chunk[1:], 16))
            index += 3
        else:
            raw.extend(text[index].encode("utf-8"))
            index += 1
    return raw.decode("utf-8", "replace")


def _remove_dot_segments(path: str) -> str:
    """WHATWG drops `.` and resolves `..` path segments (also spelled %2e)."""
    if "." not in path:
        return path
    segments: list[str] = []
    parts = path.split("/")
    for index, part in enumerate(parts):
        lowered = part.lower()
        last = index == len(parts) - 1
        if lowered in ("..", ".%2e", "%2e.", "%2e%2e"):
            if len(segments) > 1:
                segments.pop()
            if last:
                segments.append("")
        elif lowered in (".", "%2e"):
            if last:
                segments.append("")
        else:
            segments.append(part)
    return "/".join(segments)
