"""The page headers of a Parquet column chunk, read without decoding a page: what pyarrow will allocate.

pyarrow decompresses a page into a buffer of the size its page header claims (``uncompressed_page_size``),
whatever the file's footer says about the column chunk. A crafted file can claim a small chunk in the footer
and a 2 GB page in the header, so reader.py checks both: it walks each chunk's byte range (as the footer gives
it, which is also the range pyarrow reads) page header by page header, as pyarrow does, and adds up the sizes
the headers claim. A header is Thrift compact protocol (parquet.thrift ``PageHeader``: field 2 the
uncompressed size, field 3 the compressed size); the other fields are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from trainer.errors import DataError

MAX_HEADER_BYTES = 16 << 20  # pyarrow's own default cap on a page header (statistics may hold long values)
_MAX_NESTING = 32


class _Header:
    """Thrift compact protocol over a file, from one offset, read in chunks as the parse needs bytes."""

    def __init__(self, f: IO[bytes], offset: int) -> None:
        self.f, self.offset, self.buffer, self.pos = f, offset, b"", 0

    def _load(self, need: int) -> None:
        """Read until the buffer holds ``need`` bytes from the header's start."""
        while len(self.buffer) < need:
            if need > MAX_HEADER_BYTES:
                raise ValueError(f"a page header longer than {MAX_HEADER_BYTES:,} bytes")
            self.f.seek(self.offset + len(self.buffer))
            more = self.f.read(max(1 << 16, need - len(self.buffer)))
            if not more:
                raise ValueError("the file ends inside a page header")
            self.buffer += more

    def byte(self) -> int:
        self._load(self.pos + 1)
        value = self.buffer[self.pos]
        self.pos += 1
        return value

    def skip_bytes(self, n: int) -> None:
        self._load(self.pos + n)
        self.pos += n

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise ValueError("a varint longer than 64 bits")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, kind: int, depth: int) -> None:
        if depth > _MAX_NESTING:
            raise ValueError("a page header nested too deep")
        if kind in (1, 2):  # booleans carry their value in the type
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.skip_bytes(8)
        elif kind == 8:
            self.skip_bytes(self.varint())
        elif kind in (9, 10):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            for _ in range(size):
                if element in (1, 2):  # a boolean in a list takes one byte
                    self.byte()
                else:
                    self.skip(element, depth + 1)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4, depth + 1)
                    self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct(depth + 1)
        else:
            raise ValueError(f"an unknown Thrift type {kind} in a page header")

    def struct(self, depth: int, wanted: frozenset[int] = frozenset()) -> dict[int, int]:
        found: dict[int, int] = {}
        field = 0
        while True:
            head = self.byte()
            if head == 0:
                return found
            delta, kind = head >> 4, head & 0x0F
            field = field + delta if delta else self.zigzag()
            if field in wanted and kind == 5:
                found[field] = self.zigzag()
            else:
                self.skip(kind, depth)


def page_sizes(f: IO[bytes], start: int, length: int) -> Iterator[tuple[int, int]]:
    """(uncompressed, compressed) size of every page in the column chunk at ``start`` of ``length`` bytes."""
    offset, end = start, start + length
    while offset < end:
        header = _Header(f, offset)
        try:
            fields = header.struct(0, frozenset({2, 3}))
        except ValueError as err:
            raise DataError(f"a page header at byte {offset:,} cannot be read ({err})") from None
        uncompressed, compressed = fields.get(2, -1), fields.get(3, -1)
        if uncompressed < 0 or compressed < 0:
            raise DataError(f"the page header at byte {offset:,} gives no page size")
        yield uncompressed, compressed
        offset += header.pos + compressed
