"""Credentials never reach a message: URLs and settings with their secrets masked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
SECRET_KEYS = ("password", "secret", "token", "user.info", "credentials")


def redact_url(url: str) -> str:
    """``url`` with any password (and any secret query parameter) replaced by ``***``.

    Several URLs separated by commas are each redacted.
    """
    return ",".join(_redact_one(part) for part in url.split(","))


def _redact_one(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = "&".join(
        f"{k}={MASK}" if is_secret(k) else f"{k}={v}" if sep else k
        for k, sep, v in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def is_secret(key: str) -> bool:
    """True for a setting name that holds a credential."""
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEYS)


def redact_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` with every credential value masked."""
    return {k: MASK if is_secret(k) else v for k, v in settings.items()}
