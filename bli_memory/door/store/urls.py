"""Database URLs as people may see them: `mask_url` hides the password wherever a URL is shown."""

from __future__ import annotations

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


def is_postgres_url(text: str) -> bool:
    """Whether `text` names a PostgreSQL database (`postgresql://` or `postgres://`)."""
    return text.startswith(("postgresql://", "postgres://"))
