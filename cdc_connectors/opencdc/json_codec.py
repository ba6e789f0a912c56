"""OpenCDC JSON, as Conduit writes and reads it.

- Keys ``position``, ``operation``, ``metadata``, ``key``, ``payload`` with
  ``before`` and ``after``.
- ``position`` is standard padded base64. ``operation`` is ``create``,
  ``update``, ``delete`` or ``snapshot``; reading also takes ``Operation(N)``
  and integers. ``metadata`` values must be strings.
- Raw data is a base64 string (or, with ``raw_as_string``, the bytes as a
  UTF-8 string); structured data is an object; absent data is ``null``. On
  read, a string is raw data, an object structured data, ``null`` none.
- Inside structured data, bytes are written as base64 strings and
  ``Decimal`` values as exact JSON numbers.
- Output is byte-stable, as Conduit's (Go sorts map keys): the record's own
  keys in the order above, metadata and structured data keys sorted.
- Numbers are exact or refused: integers must fit in 64 bits, on read and on
  write (orjson would read a larger one as a double); NaN and infinities
  have no JSON form. Structured data nests at most :data:`MAX_DEPTH` levels.
  Anything else is a :class:`CodecError` (see :mod:`.structured`).
"""

from __future__ import annotations

import binascii
import json
import math
import re
from base64 import b64encode
from collections.abc import Iterator
from decimal import Decimal
from typing import IO, Any

import orjson

from cdc_connectors.errors import CodecError
from cdc_connectors.opencdc import structured
from cdc_connectors.opencdc.data import Change, Data
from cdc_connectors.opencdc.jsonkinds import json_kind
from cdc_connectors.opencdc.metadata import Metadata, checked_metadata
from cdc_connectors.opencdc.operation import Operation
from cdc_connectors.opencdc.record import Record, checked_position

#: Containers orjson writes nested at most (it refuses the 255th level).
MAX_DEPTH = 254

# orjson reads every number as an int of at most 64 bits or a double. A number it
# would change has a long run of number characters (an integer beyond 64 bits at
# least 20 digits, a decimal a double cannot hold at least 16 significant digits and
# a point: a double keeps any 15) or an exponent of three digits (beyond a double's
# range). Both are found with substring searches in C on copies of the document
# with every character of a number made "0" (regular expressions are several times
# slower than orjson's whole parse). Runs of exactly 19 digits are dropped first:
# nanosecond timestamps, in every record's metadata, and every such integer fits.
# Each remaining run is looked at; only a number that would change, inside a string
# or not, sends the document to the tokenizer, which decides.
_NUMBER_SHAPE = bytes(
    b"0"[0] if chr(c) in "0123456789" else b"."[0] if chr(c) in "-+." else b" "[0]
    for c in range(256)
)
_POINTS_AS_DIGITS = bytes.maketrans(b".", b"0")
_EXPONENT_SHAPE = bytes(
    b"0"[0] if chr(c) in "0123456789-+" else b"e"[0] if chr(c) in "eE" else b" "[0]
    for c in range(256)
)
_NINETEEN_DIGITS = b" " + b"0" * 19 + b" "
_NINETEEN_BLANK = b" " * len(_NINETEEN_DIGITS)
_LONG_RUN = b"0" * 17
_BIG_EXPONENT = b"e000"
# A number with an exponent of three digits or more where JSON has values (after ':', ','
# or '['): what the shape above found may be text inside a string (a UUID's "4e90").
_EXPONENT_NUMBER = re.compile(rb"[:,\[][ \t\n\r]*-?[0-9]+(?:\.[0-9]+)?[eE][-+]?[0-9]{3}")
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?')
# sorted keys; dates and dataclasses to ``json_default`` (which refuses them) as proto does
_SORTED = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def json_default(value: Any) -> Any:
    """orjson's ``default`` for structured data: bytes as base64, ``Decimal`` as its exact
    number; any other type is a ``TypeError`` (no JSON form)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        if not value.is_finite() or structured.decimal_problem(value):
            raise TypeError(f"{value} has no JSON form")  # the walk names the place
        return orjson.Fragment(structured.json_number(value))
    raise TypeError(f"type {type(value).__name__} has no JSON form")


def _structured_json(data: dict[str, Any], what: str) -> bytes:
    """Sorted JSON of structured data; :class:`CodecError` naming the place of what JSON
    cannot hold. orjson refuses most of it itself (integers beyond 64 bits, keys that are
    not strings, nesting past its limit) but writes NaN and infinities as ``null``: only
    output holding a ``null`` needs the walk that makes sure none came from a number."""
    try:
        out = orjson.dumps(data, default=json_default, option=_SORTED)
    except TypeError as exc:
        _check(data, what)
        structured.check_text(data, what)
        raise CodecError(f"{what} cannot be written as JSON: {exc}") from None
    if b"null" in out:
        _check(data, what)
    return out


def _check(data: dict[str, Any], what: str) -> None:
    structured.check(data, what, budget=MAX_DEPTH, limit_reason=f"JSON holds {MAX_DEPTH} levels")


def json_error(exc: orjson.JSONDecodeError, data: bytes | bytearray | memoryview | str) -> str:
    """orjson's reason for refusing ``data``; bytes that are not UTF-8 are named as such
    with their offset (orjson reports them as "surrogates not allowed" at char 0)."""
    if not isinstance(data, str) and "UTF-8" in str(exc):
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as bad:
            return f"invalid UTF-8 at byte {bad.start}"
    return str(exc)


def _exact_numbers(text: bytes, obj: Any) -> Any:
    """``obj`` as parsed by orjson, or, when that changed a number, the document parsed again
    keeping every such number exact (as :class:`~decimal.Decimal`).

    Integers beyond 64 bits are refused: OpenCDC JSON readers take integers as 64 bits.
    """
    return _parse_exact(text) if _numbers_changed(text) else obj


#: Digits, points and signs as "#", every other byte a space: runs of 17 "#" are what the
#: per-message way looks at (:data:`_NUMBER_SHAPE`), a sign counted.
_RUN_SHAPE = bytes(35 if chr(b) in "0123456789.-+" else 32 for b in range(256))
_LONG_RUN_OF_17 = b"#" * 17
_LONG_RUN_OF_16 = b"#" * 16
_EXPONENT_START = (b"e", b"E")


def long_fractions_alike(text: bytes) -> bool:
    """Whether :func:`load_exact` reads each number of 16 digits or more with a fraction
    or an exponent in ``text`` as ``orjson.loads`` does, a double (none kept exact, none
    refused); runs of digits inside strings are looked at too. For readers of many
    documents at once (Arrow's), which leave the others to it; a double holds every number
    of fewer digits."""
    shape = text.translate(_RUN_SHAPE)
    at = shape.find(_LONG_RUN_OF_16)
    while at != -1:
        end = shape.find(b" ", at)
        end = len(shape) if end == -1 else end
        if text[end : end + 1] in _EXPONENT_START:  # sixteen digits and an exponent
            stop = end + 1
            while stop < len(text) and text[stop : stop + 1] in b"+-0123456789":
                stop += 1
            end = stop
        elif end - at < len(_LONG_RUN_OF_17) or b"." not in text[at:end]:
            # fewer digits than a double may change, or an integer (Arrow reads one
            # exactly, or refuses it)
            at = shape.find(_LONG_RUN_OF_16, end)
            continue
        token = text[at:end].decode("ascii")
        try:
            if repr(float(token)) != token and _inexact(_in_range(token)):
                return False
        except (CodecError, ValueError):
            return False
        at = shape.find(_LONG_RUN_OF_16, end)
    return True


def _numbers_changed(text: bytes) -> bool:
    """Whether orjson changes a number of ``text`` (:class:`CodecError` for one refused)."""
    if _BIG_EXPONENT in text.translate(_EXPONENT_SHAPE) and _EXPONENT_NUMBER.search(text):
        return _look_at_every_number(text)
    shape = text.translate(_NUMBER_SHAPE).replace(_NINETEEN_DIGITS, _NINETEEN_BLANK)
    shape = shape.translate(_POINTS_AS_DIGITS)
    at = shape.find(_LONG_RUN)
    while at != -1:
        end = shape.find(b" ", at)
        end = len(shape) if end == -1 else end
        if text[end : end + 1] in (b"e", b"E") or not _surely_unchanged(text[at:end]):
            return _look_at_every_number(text)
        at = shape.find(_LONG_RUN, end)
    return False


_RUN = r"[0-9+.\-]"
_NOT_RUN = r"(?:[^0-9+.\-]|$)"
#: A pattern (RE2's and Python's) found in every document whose numbers :func:`load_exact`
#: may read otherwise than orjson (what ``_exact_numbers`` looks closer at): an escaped
#: surrogate (orjson refuses a lone one), a number of three exponent digits, or a run of
#: 17 or more number characters but an integer of exactly 19 digits. For readers of many
#: documents at once, which leave those it finds to :func:`load_exact`.
CLOSER_LOOK = "|".join(
    (
        r"\\[uU][dD][89a-fA-F]",
        _EXPONENT_NUMBER.pattern.decode("ascii"),
        rf"(?:^|[^0-9+.\-])(?:{_RUN}{{17,18}}{_NOT_RUN}|"
        + "|".join(rf"[0-9]{{{k}}}[+.\-]{_RUN}{{{18 - k}}}{_NOT_RUN}" for k in range(19))
        + ")",
        rf"{_RUN}{{20}}",
    )
)


def _surely_unchanged(run: bytes) -> bool:
    """True when ``run`` is no number orjson would change (False: look closer)."""
    if b"." not in run and b"e" not in run and b"E" not in run:
        if len(run.lstrip(b"-")) < 19:  # every integer of 18 digits fits in 64 bits
            return True
        try:
            return structured.MIN_INT <= int(run) <= structured.MAX_INT
        except ValueError:
            return True  # not a number: part of a string
    try:
        token = run.decode("ascii")
        as_double = float(token)
    except ValueError:
        return True  # not a number: part of a string
    return repr(as_double) == token or not _inexact(_in_range(token))


def _look_at_every_number(text: bytes) -> bool:
    """Whether a number of the document, outside strings, looked at one by one, changes as
    a double (:class:`CodecError` for an integer beyond 64 bits)."""
    changed = False
    for token in _TOKENS.findall(text):
        if token[:1] == b'"':
            continue
        if b"." not in token and b"e" not in token and b"E" not in token:
            # no leading zeros in JSON: more than 20 digits is out of range (and int()
            # refuses very long ones)
            if len(token.lstrip(b"-")) > 20 or not (
                structured.MIN_INT <= int(token) <= structured.MAX_INT
            ):
                shown = token.decode() if len(token) <= 40 else f"{token[:37].decode()}..."
                raise CodecError(
                    f"integer {shown} does not fit in 64 bits; it would be read as a double"
                )
        elif _inexact(_in_range(token.decode())):
            changed = True
    return changed


def _in_range(token: str) -> str:
    """``token``, or :class:`CodecError` when the number is beyond a double's range (as the
    writer refuses it: JSON readers would not read it back)."""
    as_double = float(token)
    if not math.isfinite(as_double) or (as_double == 0 and Decimal(token) != 0):
        shown = token if len(token) <= 40 else f"{token[:37]}..."
        raise CodecError(f"number {shown} is beyond the range of a double")
    return token


def _inexact(token: str) -> bool:
    """True when a double would not hold the number ``token`` writes."""
    return Decimal(repr(float(token))) != Decimal(token)


def _exact_float(token: str) -> float | Decimal:
    return Decimal(token) if _inexact(_in_range(token)) else float(token)


def _refuse_constant(name: str) -> Any:
    raise CodecError(f"{name} is not a JSON number")


def _parse_exact(text: bytes) -> Any:
    """The document with numbers a double would change read as ``Decimal``."""
    try:
        return json.loads(text, parse_float=_exact_float, parse_constant=_refuse_constant)
    except CodecError:
        raise
    except RecursionError:
        raise CodecError("JSON nested too deeply to read its numbers exactly") from None
    except ValueError as exc:  # orjson read it: only a number can be refused here
        raise CodecError(f"invalid JSON: {exc}") from None


def _b64decode(text: str, what: str) -> bytes:
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise CodecError(f"{what} is not valid base64: {exc}") from None


def _data_to_obj(data: Data, raw_as_string: bool, what: str) -> Any:
    if data is None:
        return None
    if isinstance(data, dict):
        return orjson.Fragment(_structured_json(data, what))
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CodecError(f"{what} must be bytes, a dict or None, not {type(data).__name__}")
    if raw_as_string:
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"{what} is not UTF-8, cannot write it as a string: {exc}") from None
    return base64_json(data)


def base64_json(data: bytes | bytearray | memoryview) -> orjson.Fragment:
    """``data`` as the JSON string of its standard base64, for ``orjson.dumps``: a fragment
    copied as it is (base64 needs no escaping), since orjson cannot write a text of 2 GiB or
    more (it crashes the process)."""
    return orjson.Fragment(b'"' + b64encode(data) + b'"')


def _data_from_obj(obj: Any, raw_as_string: bool, what: str) -> Data:
    if obj is None or isinstance(obj, dict):
        return obj
    if isinstance(obj, str):
        return obj.encode("utf-8") if raw_as_string else _b64decode(obj, what)
    raise CodecError(f"{what} must be a base64 string, an object or null, not {json_kind(obj)}")


def _metadata_json(metadata: Any) -> bytes:
    checked = checked_metadata(metadata)
    try:
        return orjson.dumps(checked, option=_SORTED)
    except TypeError:  # changed behind Metadata's back (dict.__setitem__): name the key
        checked_metadata(dict(checked))
        raise


def record_to_json(record: Record, *, raw_as_string: bool = False) -> bytes:
    """Serialize a record to OpenCDC JSON (UTF-8 bytes, no trailing newline).

    Raises :class:`CodecError` when the record has no faithful JSON form.
    """
    payload = record.payload
    doc = {
        "position": b64encode(checked_position(record.position)).decode("ascii"),
        "operation": str(Operation.parse(record.operation)),
        "metadata": orjson.Fragment(_metadata_json(record.metadata)),
        "key": _data_to_obj(record.key, raw_as_string, "key"),
        "payload": {
            "before": _data_to_obj(payload.before, raw_as_string, "payload.before"),
            "after": _data_to_obj(payload.after, raw_as_string, "payload.after"),
        },
    }
    return orjson.dumps(doc)


#: Why a ``{"key": ..., "value": ...}`` line is no record of a JSON format.
KV_LINE_HINT = 'this is a --kv line ({"key": ..., "value": ...}), not a record: read it with --kv'


def record_from_obj(obj: Any, *, raw_as_string: bool = False) -> Record:
    """A record from a parsed OpenCDC JSON object."""
    if not isinstance(obj, dict):
        raise CodecError(f"an OpenCDC record must be a JSON object, not {json_kind(obj)}")
    if "value" in obj and not obj.keys() & {"operation", "payload", "position"}:
        # Unknown members are ignored, as Conduit does; this one would become an empty record.
        raise CodecError(KV_LINE_HINT)
    position = obj.get("position")
    if position is None:
        position_bytes = b""
    elif isinstance(position, str):
        position_bytes = _b64decode(position, "position")
    else:
        raise CodecError(f"position must be a base64 string, not {json_kind(position)}")

    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise CodecError(f"metadata must be an object, not {json_kind(metadata)}")
    try:
        metadata = Metadata(metadata)
    except TypeError as exc:
        raise CodecError(str(exc)) from None

    payload = obj.get("payload")
    if payload is None:
        payload = {}
    elif not isinstance(payload, dict):
        raise CodecError(f"payload must be an object, not {json_kind(payload)}")

    return Record(
        position_bytes,
        Operation.parse(obj.get("operation")),
        metadata,
        _data_from_obj(obj.get("key"), raw_as_string, "key"),
        Change(
            _data_from_obj(payload.get("before"), raw_as_string, "payload.before"),
            _data_from_obj(payload.get("after"), raw_as_string, "payload.after"),
        ),
    )


def record_from_json(data: bytes | str, *, raw_as_string: bool = False) -> Record:
    """Parse one OpenCDC JSON document; raise :class:`CodecError` on bad input."""
    text = data.encode("utf-8") if isinstance(data, str) else data
    try:
        obj = load_exact(text)
    except orjson.JSONDecodeError as exc:
        raise CodecError(f"invalid JSON: {json_error(exc, data)}") from None
    return record_from_obj(obj, raw_as_string=raw_as_string)


def load_exact(text: bytes) -> Any:
    """A JSON document with every number exact or refused, as OpenCDC JSON reads them.

    Raises ``orjson.JSONDecodeError`` for text that is not JSON (callers name the place)
    and :class:`CodecError` for numbers that cannot be kept (integers beyond 64 bits,
    numbers beyond a double's range).
    """
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "infinity" not in str(exc):
            raise
        obj = _parse_exact(text)  # a number beyond a double's range: kept exact or refused
    return _exact_numbers(text, obj)


def read_json_lines(
    stream: IO[bytes], *, raw_as_string: bool = False, source: str = "<stream>"
) -> Iterator[Record]:
    """Records of a stream of OpenCDC JSON lines (blank lines skipped).

    Raises :class:`CodecError` at the first bad line, naming ``source`` and the
    line number, with the line's bytes attached.
    """
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield record_from_json(line, raw_as_string=raw_as_string)
        except CodecError as exc:
            raise exc.at(f"{source}:{number}", line.rstrip(b"\r\n")) from None


def write_json_lines(
    stream: IO[bytes], records: Iterator[Record] | list[Record], *, raw_as_string: bool = False
) -> int:
    """Write records as OpenCDC JSON lines; return how many were written."""
    count = 0
    for record in records:
        stream.write(record_to_json(record, raw_as_string=raw_as_string) + b"\n")
        count += 1
    return count


def data_to_bytes(data: Data) -> bytes | None:
    """The bytes of a key or payload: raw data as is, structured data as (sorted) JSON."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, dict):
        return _structured_json(data, "data")
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise CodecError(f"data must be bytes, a dict or None, not {type(data).__name__}")
