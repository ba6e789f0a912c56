"""Credentials never reach a message: URLs, settings and texts with their secrets masked.

``redact_url`` masks the password of ``scheme://user:password@host`` and every
query parameter whose name holds a credential; ``redact_settings`` masks such
settings; ``redact_text`` scrubs given URLs and secrets out of any text (an
exception's message from a library that printed the URL it was given), and
``redact_line`` makes such a text one line fit for an error message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote

MASK = "***"
MIN_SECRET = 3
SECRET_KEYS = ("password", "secret", "token", "user.info", "credentials", "auth")
_AUTHORITY_END = "/?#"
# Where a list of URLs is cut: at a comma before a scheme, so that a comma of a password
# (unencoded) does not cut a URL in two and leave its second half unmasked.
_NEXT_URL = re.compile(r",(?=\s*[A-Za-z][A-Za-z0-9+.-]*://)")


def redact_url(url: str) -> str:
    """``url`` with any password (and any secret query parameter) replaced by ``***``.

    Several URLs separated by commas are each redacted. When it is unclear
    where the credentials end (a password holding ``/``, ``?`` or ``,``), more is
    masked rather than less.
    """
    return ",".join(_redact_one(part) for part in _NEXT_URL.split(url))


def _redact_one(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    prefix = f"{scheme}{sep}"
    end = min((i for i in (rest.find(c) for c in _AUTHORITY_END) if i >= 0), default=len(rest))
    if "@" in rest[:end]:
        userinfo, _, host = rest[:end].rpartition("@")
        tail = host + rest[end:]
    elif "@" in rest and ":" in rest.split("/", 1)[0].split("@", 1)[0]:
        # "user:pa/ss@host": the password holds a delimiter; everything to the last "@" goes
        userinfo, _, tail = rest.rpartition("@")
    else:
        return prefix + _redact_query(rest)
    user, colon, _ = userinfo.partition(":")
    masked = f"{user}:{MASK}" if colon else MASK
    return f"{prefix}{masked}@{_redact_query(tail)}"


def _redact_query(rest: str) -> str:
    """``host/path?query#fragment`` with the values of secret query parameters masked.

    Everything else is kept as written: a URL without secrets comes back unchanged.
    """
    cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=-1)
    if cut < 0 or rest[cut] != "?":
        return rest
    query, hash_, fragment = rest[cut + 1 :].partition("#")
    items = []
    for item in query.split("&"):
        key, sep, _ = item.partition("=")
        items.append(f"{key}={MASK}" if sep and is_secret(unquote(key)) else item)
    return f"{rest[:cut]}?{'&'.join(items)}{hash_}{fragment}"


def url_secrets(url: str) -> list[str]:
    """The secrets a URL holds (passwords, secret query values), as written and decoded."""
    found: list[str] = []
    for part in url.split(","):
        _, sep, rest = part.partition("://")
        rest = rest if sep else part
        if "@" in rest:
            user, colon, password = rest.rpartition("@")[0].partition(":")
            found.append(password if colon else user)
        query = rest.partition("?")[2].partition("#")[0]
        for item in query.split("&"):
            key, eq, value = item.partition("=")
            if eq and is_secret(unquote(key)):
                found.append(value)
    return [form for secret in found if secret for form in {secret, unquote(secret)} if form]


def redact_text(text: str, urls: Iterable[str] = (), secrets: Iterable[str | None] = ()) -> str:
    """``text`` with each of ``urls`` redacted and every secret (of ``urls`` too) masked.

    Secrets shorter than ``MIN_SECRET`` are masked only inside the given URLs.
    """
    url_list = [u for u in urls if u]
    for url in sorted(url_list, key=len, reverse=True):
        masked = redact_url(url)
        if masked == url:
            continue
        # where the text already shows the URL masked, it stays as it is (a URL ending in
        # an empty secret, "?token=", is the start of its own masked form)
        rest = masked[len(url) :] if masked.startswith(url) else ""
        pattern = re.escape(url) + (f"(?!{re.escape(rest)})" if rest else "")
        text = re.sub(pattern, masked.replace("\\", "\\\\"), text)
    hidden = {s for s in secrets if s and s.strip()}
    hidden.update(s for url in url_list for s in url_secrets(url))
    # also the forms a secret takes in a URL or a repr
    hidden.update(form for s in list(hidden) for form in (quote(s, safe=""), repr(s)[1:-1]))
    # a secret of one or two characters cannot be told from ordinary text
    for secret in sorted((s for s in hidden if len(s) >= MIN_SECRET), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def redact_line(text: str, urls: Iterable[str] = (), secrets: Iterable[str | None] = ()) -> str:
    """:func:`redact_text` of ``text`` as one line: every run of whitespace (newlines too)
    becomes one space, so a message quoting a multi-line answer stays one line."""
    url_list = list(urls)
    secret_list = list(secrets)
    # scrubbed before the whitespace goes and after: joined, two lines may spell a secret
    once = " ".join(redact_text(text, url_list, secret_list).split())
    return redact_text(once, url_list, secret_list)


def is_secret(key: str) -> bool:
    """True for a setting name that holds a credential."""
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEYS)


def redact_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` with every credential masked: secret keys, URL passwords, nested."""
    return {k: MASK if is_secret(str(k)) else _redact_value(v) for k, v in settings.items()}


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact_settings(value)
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value
