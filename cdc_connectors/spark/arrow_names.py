"""Whether the member names Arrow's JSON reader found are text, and members found by name.

The reader takes a member name's bytes as they are, so a name that is no UTF-8 becomes a
field whose name Python cannot read (``UnicodeDecodeError`` on ``field.name``). The
per-message way refuses such a message as invalid JSON; the columns leave every batch
holding one to it.

:func:`member` finds a struct's member by its place: ``pyarrow.compute.struct_field``
reads a name starting with ``.`` as a path (``".a"`` is member ``a``), and names are data.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["member", "names_are_text"]


def member(array: Any, name: str) -> Any:
    """The member ``name`` of a struct column (array or chunked), null where the struct
    is, found by its place (a name is never read as a path)."""
    index = array.type.get_field_index(name)
    if index < 0:
        raise KeyError(f"no member {name!r} (or more than one) in {array.type}")
    return pc.struct_field(array, [index])


def names_are_text(schema: pa.Schema) -> bool:
    """Whether every field name of ``schema``, at any depth of structs, lists and maps, is
    valid UTF-8."""
    try:
        pending = [field.type for field in schema if field.name is not None]
        while pending:
            type_ = pending.pop()
            if pa.types.is_struct(type_):
                pending.extend(field.type for field in type_ if field.name is not None)
            elif pa.types.is_list(type_) or pa.types.is_large_list(type_):
                pending.append(type_.value_type)
            elif pa.types.is_map(type_):
                pending.extend((type_.key_type, type_.item_type))
    except UnicodeDecodeError:
        return False
    return True
