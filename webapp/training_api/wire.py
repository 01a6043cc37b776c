"""The protobuf messages the Tinker SDK exchanges, read and written by hand (no protobuf dependency).

The SDK (``tinker==0.38.0``) sends ``forward_backward`` as a ``tinker_public.ForwardBackwardRequest``
(``application/x-protobuf``) and reads ``ForwardBackwardOutput`` and ``SampleResponse`` results only as
protobuf; everything else is JSON. Those three messages use few wire features (varints, 64-bit doubles,
length-delimited bytes, strings, sub-messages and maps), so a small reader and writer over the protobuf wire
format (https://protobuf.dev/programming-guides/encoding/) is enough, and the web process needs no generated
code. Field numbers are those of the SDK's ``tinker/proto/tinker_public_pb2`` descriptor.

Reading is bounded: the body is already held to the request limit, every length is checked against what is
left, nesting is fixed by the schema, and a malformed message raises ``WireError`` (answered 400).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5
DTYPE_FLOAT32, DTYPE_INT64, DTYPE_INT32 = 1, 2, 3
STOP_REASON = {"stop": 0, "length": 1}


class WireError(ValueError):
    """The protobuf body is malformed or uses what this server does not read."""


# --- reading -------------------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise WireError("a varint runs past the end of the message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) for each field of one message: ints for varints and fixed
    numbers (as their raw bits), bytes for length-delimited fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == WIRE_VARINT:
            value, pos = _varint(data, pos)
            yield number, wire, value
        elif wire == WIRE_I64:
            if pos + 8 > len(data):
                raise WireError("a 64-bit field runs past the end of the message")
            yield number, wire, struct.unpack_from("<Q", data, pos)[0]
            pos += 8
        elif wire == WIRE_LEN:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise WireError("a length-delimited field runs past the end of the message")
            yield number, wire, data[pos : pos + size]
            pos += size
        elif wire == WIRE_I32:
            if pos + 4 > len(data):
                raise WireError("a 32-bit field runs past the end of the message")
            yield number, wire, struct.unpack_from("<I", data, pos)[0]
            pos += 4
        else:
            raise WireError(f"wire type {wire} (groups) is not used by the Tinker messages")


def _as_bytes(value: int | bytes, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise WireError(f"{what} should be length-delimited")
    return value


def _as_int(value: int | bytes, what: str) -> int:
    if isinstance(value, bytes):
        raise WireError(f"{what} should be a number")
    return value


def _as_double(value: int | bytes, what: str) -> float:
    return float(struct.unpack("<d", struct.pack("<Q", _as_int(value, what)))[0])


def _text(value: int | bytes, what: str) -> str:
    try:
        return _as_bytes(value, what).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError(f"{what} is not UTF-8 text") from None


@dataclass
class WireTensor:
    """A dense tensor as the SDK sends it: a flat list in row-major order and its shape."""

    dtype: str  # "float32" | "int64"
    shape: list[int]
    data: list[float] | list[int]


@dataclass
class WireDatum:
    tokens: list[int]
    inputs: dict[str, WireTensor] = field(default_factory=dict)


@dataclass
class ForwardBackwardRequest:
    model_id: str = ""
    seq_id: int = 0
    loss_fn: str = ""
    loss_fn_config: dict[str, float] = field(default_factory=dict)
    forward_only: bool = False
    data: list[WireDatum] = field(default_factory=list)


def _tensor(data: bytes, what: str) -> WireTensor:
    raw, dtype, shape = b"", 0, []
    for number, _wire, value in fields(data):
        if number == 1:
            raw = _as_bytes(value, f"{what}.dense")
        elif number == 2:
            raise WireError(f"{what} is a sparse tensor: send loss_fn_inputs as dense tensors")
        elif number == 3:
            dtype = _as_int(value, f"{what}.dtype")
        elif number == 4:
            shape.extend(_packed_varints(value, f"{what}.shape"))
    if dtype == DTYPE_FLOAT32:
        if len(raw) % 4:
            raise WireError(f"{what}: float32 data is not a whole number of values")
        floats = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        return WireTensor("float32", shape or [len(floats)], floats)
    if dtype == DTYPE_INT64:
        if len(raw) % 8:
            raise WireError(f"{what}: int64 data is not a whole number of values")
        ints = list(struct.unpack(f"<{len(raw) // 8}q", raw))
        return WireTensor("int64", shape or [len(ints)], ints)
    raise WireError(f"{what} has dtype {dtype}: send float32 or int64 tensors")


def _packed_varints(value: int | bytes, what: str) -> list[int]:
    if isinstance(value, int):
        return [value]
    out, pos = [], 0
    while pos < len(value):
        number, pos = _varint(value, pos)
        out.append(number)
    return out


def _chunk_tokens(data: bytes, what: str) -> list[int]:
    for number, _wire, value in fields(data):
        if number == 1:  # encoded_text
            for inner, _w, tokens in fields(_as_bytes(value, what)):
                if inner == 1:
                    raw = _as_bytes(tokens, f"{what}.tokens")
                    if len(raw) % 4:
                        raise WireError(f"{what}: tokens are not whole int32 values")
                    return list(struct.unpack(f"<{len(raw) // 4}i", raw))
            return []
        if number in (2, 3):
            raise WireError(
                f"{what} is an {'image' if number == 2 else 'audio'} chunk: this server trains on text tokens only"
            )
    return []


def _map_entry(data: bytes, what: str) -> tuple[str, int | bytes | None]:
    key, value = "", None
    for number, _wire, item in fields(data):
        if number == 1:
            key = _text(item, f"{what} key")
        elif number == 2:
            value = item
    return key, value


def _datum(data: bytes, index: int, max_inputs: int) -> WireDatum:
    datum = WireDatum(tokens=[])
    for number, _wire, value in fields(data):
        what = f"data.{index}"
        if number == 1:
            datum.tokens.extend(_chunk_tokens(_as_bytes(value, f"{what}.model_input"), f"{what}.model_input"))
        elif number == 2:
            key, tensor = _map_entry(_as_bytes(value, f"{what}.loss_fn_inputs"), f"{what}.loss_fn_inputs")
            if len(datum.inputs) >= max_inputs:
                raise WireError(f"{what} has more than {max_inputs} loss_fn_inputs")
            datum.inputs[key] = _tensor(
                _as_bytes(tensor or b"", f"{what}.loss_fn_inputs.{key}"), f"{what}.loss_fn_inputs.{key}"
            )
    return datum


def read_forward_backward(body: bytes, *, max_datums: int, max_inputs: int = 8) -> ForwardBackwardRequest:
    """Decode a ``ForwardBackwardRequest``; more than ``max_datums`` datums is refused while reading."""
    request = ForwardBackwardRequest()
    for number, _wire, value in fields(body):
        if number == 1:
            request.model_id = _text(value, "model_id")
        elif number == 2:
            request.seq_id = _as_int(value, "seq_id")
        elif number == 3:
            if len(request.data) >= max_datums:
                raise WireError(f"more than {max_datums} datums in one call")
            request.data.append(_datum(_as_bytes(value, "data"), len(request.data), max_inputs))
        elif number == 4:
            request.loss_fn = _text(value, "loss_fn")
        elif number == 5:
            key, number_value = _map_entry(_as_bytes(value, "loss_fn_config"), "loss_fn_config")
            request.loss_fn_config[key] = _as_double(number_value or 0, f"loss_fn_config.{key}")
        elif number == 6:
            request.forward_only = bool(value)
        elif number == 7:
            key, entry = _map_entry(_as_bytes(value, "loss_fn_config_v2"), "loss_fn_config_v2")
            for inner, _w, item in fields(_as_bytes(entry or b"", f"loss_fn_config.{key}")):
                if inner == 1:
                    request.loss_fn_config[key] = _as_double(item, f"loss_fn_config.{key}")
                elif inner == 2:
                    raise WireError(f"loss_fn_config.{key} is text: this server takes numbers only")
    return request


# --- writing -------------------------------------------------------------------------------------


def _put_varint(out: bytearray, value: int) -> None:
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def _put_len(out: bytearray, number: int, payload: bytes) -> None:
    _put_varint(out, (number << 3) | WIRE_LEN)
    _put_varint(out, len(payload))
    out += payload


def _put_int(out: bytearray, number: int, value: int) -> None:
    _put_varint(out, (number << 3) | WIRE_VARINT)
    _put_varint(out, value)


def _put_double(out: bytearray, number: int, value: float) -> None:
    _put_varint(out, (number << 3) | WIRE_I64)
    out += struct.pack("<d", value)


def _floats(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def write_forward_backward_output(
    outputs: Sequence[Mapping[str, Sequence[float]]], metrics: Mapping[str, float]
) -> bytes:
    """A ``ForwardBackwardOutput``: one ``ArrayRecord`` whose fields (``logprobs``, ``elementwise_loss``)
    are float32 ``BatchedTensor``s, each datum's values concatenated with byte offsets between them."""
    record = bytearray()
    _put_len(record, 1, b"ArrayRecord")
    names = sorted({name for output in outputs for name in output})
    for name in names:
        data, offsets, position = bytearray(), [0], 0
        for output in outputs:
            values = list(output.get(name, ()))
            data += _floats(values)
            position += 4 * len(values)
            offsets.append(position)
        tensor = bytearray()
        _put_len(tensor, 1, bytes(data))
        _put_len(tensor, 2, struct.pack(f"<{len(offsets)}q", *offsets))
        _put_int(tensor, 3, DTYPE_FLOAT32)
        entry = bytearray()
        _put_len(entry, 1, name.encode())
        _put_len(entry, 2, bytes(tensor))
        _put_len(record, 2, bytes(entry))
    _put_int(record, 3, len(outputs))
    out = bytearray()
    _put_len(out, 1, b"ArrayRecord")
    _put_len(out, 2, bytes(record))
    for key, value in metrics.items():
        entry = bytearray()
        _put_len(entry, 1, key.encode())
        _put_double(entry, 2, float(value))
        _put_len(out, 3, bytes(entry))
    return bytes(out)


@dataclass
class WireSequence:
    tokens: list[int]
    logprobs: list[float]
    stop_reason: str  # "stop" | "length"


def write_sample_response(
    sequences: Sequence[WireSequence], prompt_logprobs: Sequence[float] | None
) -> bytes:
    """A ``SampleResponse``: tokens as int32 bytes, logprobs as float32 bytes, the stop reason as its enum."""
    out = bytearray()
    for sequence in sequences:
        item = bytearray()
        _put_int(item, 1, STOP_REASON[sequence.stop_reason])
        _put_len(item, 2, struct.pack(f"<{len(sequence.tokens)}i", *sequence.tokens))
        _put_len(item, 3, _floats(sequence.logprobs))
        _put_len(out, 1, bytes(item))
    if prompt_logprobs is not None:
        _put_len(out, 2, _floats(prompt_logprobs))
    return bytes(out)
