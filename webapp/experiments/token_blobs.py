"""How a step's per-token arrays are laid out in its token store object (webapp/experiments/token_store.py).

One object per (run, step, write): the concatenation of one record per rollout, each compressed on its own
so that a rollout is read back with one ranged read of its ``token_offset`` / ``token_size`` and one
decompress. A record is ``zlib(u32 n + pack_token_arrays(record) + the token strings as JSON)``, where
``n`` is the length of the packed arrays: the length prefix keeps old records readable after a channel is
appended to ``trainer.sinks.TOKEN_CHANNELS`` (``unpack_token_arrays`` reads a shorter block as "not
recorded"), which the packed block's own length could not tell apart from the JSON that follows it.

zlib level 1: on 256 rollouts x 512 tokens with five channels recorded it makes 5.9 MB into 2.0 MB in
~50 ms; level 6 saves another 5% for 1.6x the time, on the writer thread that shares the trainer's cores.
Rows of rollouts stored before the token store (``token_key`` blank) keep their arrays in
``Rollout.token_data`` and ``Rollout.tokens`` and are read from there.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from trainer.sinks import RolloutRecord, pack_token_arrays, unpack_token_arrays
from webapp.experiments.models import Rollout
from webapp.experiments.storable import clean_text
from webapp.experiments.token_store import TokenStore, token_store

ZLIB_LEVEL = 1
_LENGTH = struct.Struct("<I")
EMPTY_ARRAYS = _LENGTH.pack(0)  # pack_token_arrays of a record without tokens


@dataclass(frozen=True)
class TokenArrays:
    """A rollout's per-token arrays: ids, channel -> floats (NaN where not recorded), token strings."""

    token_ids: list[int]
    channels: dict[str, list[float]]
    tokens: list[str]


def encode_record(record: RolloutRecord) -> bytes:
    packed = pack_token_arrays(record)
    strings = json.dumps([clean_text(t) for t in record.tokens]).encode(
        "ascii"
    )  # ASCII: lone surrogates survive
    return zlib.compress(_LENGTH.pack(len(packed)) + packed + strings, ZLIB_LEVEL)


def decode_record(blob: bytes) -> TokenArrays:
    raw = zlib.decompress(blob)
    (length,) = _LENGTH.unpack_from(raw, 0)
    packed = raw[_LENGTH.size : _LENGTH.size + length]
    token_ids, channels = unpack_token_arrays(packed)
    tokens = json.loads(raw[_LENGTH.size + length :].decode("ascii"))
    return TokenArrays(token_ids=token_ids, channels=channels, tokens=tokens)


def encode_step(records: Sequence[RolloutRecord]) -> tuple[bytes, list[tuple[int, int]]]:
    """The step's object and each record's ``(offset, size)`` in it, in the order of ``records``."""
    parts = [encode_record(record) for record in records]
    spans, offset = [], 0
    for part in parts:
        spans.append((offset, len(part)))
        offset += len(part)
    return b"".join(parts), spans


def rollout_token_arrays(rollout: Rollout, store: TokenStore | None = None) -> TokenArrays:
    """One ranged read and one decompress; the inline columns for a rollout stored before the token store."""
    if not rollout.token_key:
        legacy = bytes(rollout.token_data) or EMPTY_ARRAYS  # a row with no arrays at all reads as 0 tokens
        token_ids, channels = unpack_token_arrays(legacy)
        return TokenArrays(token_ids=token_ids, channels=channels, tokens=list(rollout.tokens))
    store = store or token_store()
    return decode_record(store.read_range(rollout.token_key, rollout.token_offset, rollout.token_size))
