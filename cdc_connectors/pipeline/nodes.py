"""A YAML document walked with its line numbers, so that every error names key and line.

PyYAML's ``compose`` keeps each node's place in the file; :class:`Node` wraps one with
its path (``pipelines[0].connectors[1].settings``) and reads typed values out of it.
Every problem is a :class:`~cdc_connectors.errors.ConfigError` that reads
``file:line: path: problem``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from cdc_connectors.errors import ConfigError


def compose(text: str, file: str) -> yaml.Node | None:
    """The node tree of ``text`` (``None`` for an empty document); bad YAML is a ConfigError."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise ConfigError(f"{file}:{line}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}:1: not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(f"{file}:1: nests too deeply to be a pipeline file") from None


def _describe(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = _scalar_value(node)
    return "null" if value is None else f"{type(value).__name__} {node.value!r}"


def _scalar_value(node: yaml.Node) -> Any:
    return yaml.SafeLoader("").construct_object(node, deep=True)


class Node:
    """One node of the document, its path and its file."""

    def __init__(self, node: yaml.Node, path: str, file: str, line: int | None = None):
        self.node = node
        self.path = path
        self.file = file
        # the line of the key that introduced the node reads better than the value's own
        self.line = line if line is not None else node.start_mark.line + 1

    def error(
        self, problem: str, *, key: str | None = None, line: int | None = None
    ) -> ConfigError:
        """A :class:`ConfigError` about this node (or its child ``key``)."""
        path = self.child_path(key) if key is not None else self.path
        where = f"{path}: " if path else ""
        return ConfigError(f"{self.file}:{line or self.line}: {where}{problem}")

    def child_path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    # ------------------------------------------------------------------ shapes

    def mapping(self) -> dict[str, Node]:
        """Key -> child node; keys must be unique strings."""
        if not isinstance(self.node, yaml.MappingNode):
            raise self.error(f"must be a mapping, not {_describe(self.node)}")
        found: dict[str, Node] = {}
        for key_node, value_node in self.node.value:
            key = _scalar_value(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise self.error(f"a key must be a string, not {_describe(key_node)}", line=line)
            if key in found:
                raise self.error("given twice", key=key, line=line)
            found[key] = Node(value_node, self.child_path(key), self.file, line)
        return found

    def items(self) -> Iterator[Node]:
        """The children of a list."""
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.error(f"must be a list, not {_describe(self.node)}")
        for index, child in enumerate(self.node.value):
            yield Node(child, self.child_path(index), self.file)

    def _scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            return self  # not a scalar: callers describe it
        return _scalar_value(self.node)

    def text(self, *, empty: bool = False) -> str:
        """A string (numbers are refused: quote them)."""
        value = self._scalar()
        if not isinstance(value, str):
            raise self.error(f"must be a string, not {_describe(self.node)}")
        if not empty and not value.strip():
            raise self.error("must not be empty")
        return value

    def setting(self) -> str:
        """A connector setting or Spark conf value: a string, number or boolean, as text."""
        value = self._scalar()
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float | str):
            return str(value)
        raise self.error(f"must be a string, number or boolean, not {_describe(self.node)}")

    def flag(self) -> bool:
        value = self._scalar()
        if not isinstance(value, bool):
            raise self.error(f"must be true or false, not {_describe(self.node)}")
        return value

    def number(self) -> float:
        value = self._scalar()
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"must be a number, not {_describe(self.node)}")
        return float(value)


class Keys:
    """The children of a mapping, taken one by one; what is left over is an unknown key."""

    def __init__(self, node: Node):
        self.node = node
        self.children = node.mapping()

    def take(self, key: str) -> Node | None:
        return self.children.pop(key, None)

    def need(self, key: str) -> Node:
        child = self.children.pop(key, None)
        if child is None:
            raise self.node.error("required", key=key)
        return child

    def done(self, known: Iterator[str] | list[str] | tuple[str, ...]) -> None:
        """A :class:`ConfigError` for the first key not taken, listing the known ones."""
        for child in self.children.values():
            listed = ", ".join(known)
            raise child.error(f"unknown key (keys here: {listed})")
