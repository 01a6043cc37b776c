"""The hand-written protobuf reader and writer agree with the SDK's own generated code, and refuse what is
malformed or what this server does not read (sparse tensors, images, text loss options)."""

from __future__ import annotations

import math
import struct

import pytest

from webapp.training_api.wire import (
    WireError,
    WireSequence,
    read_forward_backward,
    write_forward_backward_output,
    write_sample_response,
)

pb = pytest.importorskip("tinker.proto.tinker_public_pb2")


def sdk_request(**config: float | str) -> bytes:
    from tinker import types
    from tinker.proto.request_conv import forward_backward_request_to_proto

    datum = types.Datum(
        model_input=types.ModelInput.from_ints([5, 6, 7]),
        loss_fn_inputs={"target_tokens": [6, 7, 8], "advantages": [0.0, 0.5, -1.25]},  # type: ignore[dict-item]
    )
    request = types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(
            data=[datum, datum], loss_fn="ppo", loss_fn_config=config
        ),
        model_id="model-x",
        seq_id=4,
    )
    return forward_backward_request_to_proto(request).SerializeToString()


def test_a_forward_backward_request_reads_as_the_sdk_wrote_it() -> None:
    request = read_forward_backward(sdk_request(clip_low_threshold=0.7), max_datums=8)

    assert (request.model_id, request.seq_id, request.loss_fn, request.forward_only) == (
        "model-x",
        4,
        "ppo",
        False,
    )
    assert request.loss_fn_config == {"clip_low_threshold": pytest.approx(0.7)}
    assert len(request.data) == 2 and request.data[1].tokens == [5, 6, 7]
    targets, advantages = request.data[0].inputs["target_tokens"], request.data[0].inputs["advantages"]
    assert (targets.dtype, targets.shape, targets.data) == ("int64", [3], [6, 7, 8])
    assert (advantages.dtype, advantages.data) == ("float32", [0.0, 0.5, -1.25])


def test_more_datums_than_allowed_text_options_and_garbage_are_refused() -> None:
    with pytest.raises(WireError, match="more than 1 datums"):
        read_forward_backward(sdk_request(), max_datums=1)
    with pytest.raises(WireError, match="numbers only"):
        read_forward_backward(sdk_request(mode="fast"), max_datums=8)
    body = sdk_request()
    with pytest.raises(WireError, match="past the end"):
        read_forward_backward(body[: len(body) // 2], max_datums=8)
    with pytest.raises(WireError):
        read_forward_backward(b"\x0f\x01", max_datums=8)  # wire type 7


def test_sparse_tensors_and_image_chunks_are_refused_by_name() -> None:
    message = pb.ForwardBackwardRequest(model_id="m", loss_fn="cross_entropy")
    datum = message.data.add()
    datum.model_input.add().image.data = b"\x89PNG"
    with pytest.raises(WireError, match="image chunk"):
        read_forward_backward(message.SerializeToString(), max_datums=8)
    message = pb.ForwardBackwardRequest(model_id="m", loss_fn="cross_entropy")
    tensor = message.data.add().loss_fn_inputs["weights"]
    tensor.sparse_csr.values = struct.pack("<f", 1.0)
    with pytest.raises(WireError, match="sparse"):
        read_forward_backward(message.SerializeToString(), max_datums=8)


def test_a_forward_backward_output_reads_back_through_the_sdk() -> None:
    from tinker.proto.response_conv import deserialize_forward_backward_output

    outputs = [{"logprobs": [-0.5, -1.0], "elementwise_loss": [0.25, 0.0]}, {"logprobs": [-2.0]}]
    decoded = deserialize_forward_backward_output(write_forward_backward_output(outputs, {"loss:sum": 1.5}))

    assert decoded.metrics == {"loss:sum": 1.5}
    assert decoded.loss_fn_outputs[0]["logprobs"].tolist() == [-0.5, -1.0]
    assert decoded.loss_fn_outputs[0]["elementwise_loss"].tolist() == [0.25, 0.0]
    assert decoded.loss_fn_outputs[1]["logprobs"].tolist() == [-2.0]


def test_a_sample_response_reads_back_through_the_sdk() -> None:
    from tinker.proto.response_conv import deserialize_sample_response

    sequences = [WireSequence([3, 4], [-0.5, -0.25], "length"), WireSequence([1], [-0.125], "stop")]
    decoded = deserialize_sample_response(write_sample_response(sequences, [math.nan, -1.5]))

    assert [(list(s.tokens), s.stop_reason) for s in decoded.sequences] == [([3, 4], "length"), ([1], "stop")]
    assert list(decoded.sequences[0].logprobs or []) == [-0.5, -0.25]
    assert decoded.prompt_logprobs is not None and decoded.prompt_logprobs[1] == -1.5
