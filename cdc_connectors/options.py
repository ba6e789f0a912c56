"""Option values as text (format options, connector settings, query parameters)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

TRUE = frozenset({"true", "1", "yes", "on"})
FALSE = frozenset({"false", "0", "no", "off"})


def parse_bool(value: str, name: str) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``, any case).

    Raises :class:`ValueError` naming the option ``name`` for anything else.
    """
    lowered = value.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValueError(f"{name} must be true or false, not {value!r}")


class Options(dict[str, str]):
    """Settings by name in any case, as Spark reads options: ``options["Registry"]`` and
    ``options.get("registry")`` are one setting. The spelling last given is kept, so that
    messages name a setting as its user wrote it; setting a name in another case replaces
    it. A plain ``dict`` of these (``dict(options)``) is case-sensitive again."""

    def __init__(self, items: Mapping[str, str] | Iterable[tuple[str, str]] = ()):
        super().__init__()
        self.update(items)

    def spelling(self, name: str) -> str | None:
        """How ``name`` is spelt here, or ``None`` where it is not set."""
        lowered = name.lower()
        return next((key for key in dict.keys(self) if key.lower() == lowered), None)

    def __getitem__(self, name: str) -> str:
        key = self.spelling(name)
        if key is None:
            raise KeyError(name)
        return dict.__getitem__(self, key)

    def __setitem__(self, name: str, value: str) -> None:
        key = self.spelling(name)
        if key is not None and key != name:
            dict.__delitem__(self, key)
        dict.__setitem__(self, name, value)

    def __delitem__(self, name: str) -> None:
        key = self.spelling(name)
        if key is None:
            raise KeyError(name)
        dict.__delitem__(self, key)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.spelling(name) is not None

    def get(self, name: str, default: Any = None) -> Any:
        key = self.spelling(name)
        return default if key is None else dict.__getitem__(self, key)

    def pop(self, name: str, *default: Any) -> Any:
        key = self.spelling(name)
        if key is None:
            if default:
                return default[0]
            raise KeyError(name)
        return dict.pop(self, key)

    def setdefault(self, name: str, default: str) -> str:
        key = self.spelling(name)
        if key is None:
            dict.__setitem__(self, name, default)
            return default
        return dict.__getitem__(self, key)

    def update(self, *others: Any, **more: str) -> None:
        for other in (*others, more):
            pairs = other.items() if isinstance(other, Mapping) else other
            for name, value in pairs:
                self[name] = value

    def copy(self) -> Options:
        return Options(self)

    def __repr__(self) -> str:
        return f"Options({dict.__repr__(self)})"
