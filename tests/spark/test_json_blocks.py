"""Arrow's JSON reader over one block: a member of two kinds is refused, not retyped."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.json as pajson
import pytest

from cdc_connectors.spark.json_blocks import one_block


def test_a_text_is_one_block_between_a_mebibyte_and_two_gibibytes() -> None:
    assert one_block(b"{}").block_size == 1 << 20
    assert one_block(b"x" * (3 << 20)).block_size == (3 << 20) + 1

    class Huge(bytes):
        def __len__(self) -> int:
            return 2**31 + 5

    assert one_block(Huge()).block_size == 2**31 - 1
    assert one_block(b"{}").use_threads is False


@pytest.mark.parametrize("later", [b"1", b"true"])
def test_a_member_of_two_kinds_a_mebibyte_apart_is_refused(later: bytes) -> None:
    pad = b"x" * 2000
    lines = [b'{"a":%d,"pad":"%s"}' % (n, pad) for n in range(1500)]
    lines[100] = lines[100][:-1] + b',"z":"s"}'
    lines[1400] = lines[1400][:-1] + b',"z":' + later + b"}"
    text = b"\n".join(lines)
    schema = pa.schema([("a", pa.int64()), ("pad", pa.string())])
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
    with pytest.raises(pa.ArrowInvalid, match="changed from string"):
        pajson.read_json(pa.BufferReader(text), read_options=one_block(text), parse_options=options)
