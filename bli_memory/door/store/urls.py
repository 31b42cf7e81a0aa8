"""Database URLs as people may see them: `mask_url` hides the password wherever a URL is shown, and
`scrub` hides it in any text that may quote it (libpq's and psycopg's messages quote the part of a
URL they could not read: a percent-encoded password, the whole URL for a broken IPv6 host)."""

from __future__ import annotations

from urllib.parse import unquote

#: what stands for a password in a shown URL.
MASK = "***"
#: query parameters of a libpq URL that hold a secret.
SECRET_PARAMETERS = ("password", "sslpassword")


def mask_url(url: str) -> str:
    """`url` with its password (`user:PASSWORD@`, or a `password=` parameter) replaced by `***`.

    Reads the URL by hand rather than with urllib: a password with an unescaped `@`, `/` or `#` in
    it must be hidden too, not shown because the URL does not parse. Everything between the scheme
    and the last `@` before the query is taken as user and password."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    head, question, query = rest.partition("?")
    userinfo, at, host = head.rpartition("@")
    if at and ":" in userinfo:
        head = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
    if question:
        parameters = []
        for pair in query.split("&"):
            key, equals, _ = pair.partition("=")
            parameters.append(f"{key}={MASK}" if equals and key.lower() in SECRET_PARAMETERS else pair)
        query = "&".join(parameters)
    return f"{scheme}://{head}{question}{query}"


def url_secrets(url: str) -> list[str]:
    """Every password `url` carries (`user:PASSWORD@`, `password=`, `sslpassword=`), as written and
    percent-decoded, longest first. Read by hand, as `mask_url` does: it must work on a URL that
    does not parse, since that is when its text gets quoted in an error."""
    _, separator, rest = url.partition("://")
    if not separator:
        return []
    head, _, query = rest.partition("?")
    userinfo, at, _ = head.rpartition("@")
    found = [userinfo.split(":", 1)[1]] if at and ":" in userinfo else []
    for pair in query.split("&") if query else []:
        key, equals, value = pair.partition("=")
        if equals and key.lower() in SECRET_PARAMETERS:
            found.append(value)
    secrets = {form for value in found for form in (value, unquote(value)) if form}
    return sorted(secrets, key=len, reverse=True)


def scrub(text: str, *urls: str) -> str:
    """`text` with every password of `urls` (`url_secrets`) replaced by `***`: for a line that may
    quote a URL, or a piece of one, whatever shape the quoting library gave it."""
    for url in urls:
        for secret in url_secrets(url):
            text = text.replace(secret, MASK)
    return text


def is_postgres_url(text: str) -> bool:
    """Whether `text` names a PostgreSQL database (`postgresql://` or `postgres://`)."""
    return text.startswith(("postgresql://", "postgres://"))
