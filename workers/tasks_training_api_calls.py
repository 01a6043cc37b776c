"""One Tinker call run on its model's ``TrainingSession`` (workers/tasks_training_api.py holds the session).

Each function takes the queued payload (checked on the web side by trainer/training_api/limits.py, checked
again by the session), returns ``(json_result, proto_result)`` for the call's row, and writes the run's records:
forward_backward sums for the next step's metrics and its datums as rollouts (tokens, the trainer's logprobs,
the sampler's logprobs, the advantages the client sent), optim_step metrics, samples as rollouts, checkpoints.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from trainer.sinks import RolloutRecord
from webapp.training_api import records
from webapp.training_api.wire import WireSequence, write_forward_backward_output, write_sample_response

Result = tuple[Any, bytes | None]


def run_call(server: Any, call: Any) -> Result:
    """Dispatch ``call`` by kind; ``server`` is the model's ModelServer (session, folders, snapshot cache)."""
    if call.kind == "create_model":
        if server.session is None:
            from webapp.training_api.models import TinkerModel

            server.session = server.create_session(
                TinkerModel.objects.select_related("run__experiment__project").get(pk=server.model_id)
            )
        if "from_state" in call.payload:  # create_training_client_from_state answers a LoadWeightsResponse
            return {
                "path": call.payload["from_state"],
                "model_id": server.model_id,
                "type": "load_weights",
            }, None
        return {"model_id": server.model_id, "type": "create_model"}, None
    session = server.ensure_session()
    handler = HANDLERS[call.kind]
    return handler(server, session, call.payload)


def _forward(server: Any, session: Any, payload: dict[str, Any], *, backward: bool) -> Result:
    from trainer.training_api.types import ApiDatum

    data = [ApiDatum(input_tokens=list(d["tokens"]), inputs=dict(d["inputs"])) for d in payload["data"]]
    run = session.forward_backward if backward else session.forward
    result = run(data, payload["loss_fn"], payload["loss_fn_config"])
    outputs = [{k: v.tolist() for k, v in output.items()} for output in result.outputs]
    if backward:
        records.forward_backward_done(
            model_id=server.model_id,
            loss_sum=float(result.metrics.get("loss:sum", 0.0)),
            datums=len(data),
            tokens=sum(len(d.input_tokens) for d in data),
        )
        rollouts = _datum_rollouts(session.tokenizer, payload, outputs)
        records.rollouts_done(model_id=server.model_id, records=rollouts)
    return None, write_forward_backward_output(outputs, result.metrics)


def _datum_rollouts(
    tokenizer: Any, payload: dict[str, Any], outputs: list[dict[str, list[float]]]
) -> list[RolloutRecord]:
    """The datums an RL loss trained on, as rollouts: the prompt is the part before the first token with a
    nonzero advantage (or weight), the completion the targets from there, with their per-token channels."""
    out = []
    for index, (datum, output) in enumerate(zip(payload["data"], outputs, strict=True)):
        inputs = datum["inputs"]
        weights = inputs.get("advantages") or inputs.get("weights") or []
        start = next((t for t, w in enumerate(weights) if w != 0), None)
        if start is None or index >= records.MAX_ROLLOUTS_PER_CALL:
            continue
        targets = [int(t) for t in inputs["target_tokens"][start:]]
        channels = {"logprob": output.get("logprobs", [])[start:]}
        if "logprobs" in inputs:
            channels["old_logprob"] = [float(v) for v in inputs["logprobs"][start:]]
        if "advantages" in inputs:
            channels["advantage"] = [float(v) for v in inputs["advantages"][start:]]
        channels["loss_mask"] = [1.0 if w != 0 else 0.0 for w in weights[start:]]
        nonzero = [w for w in weights[start:] if w != 0]
        prompt = [int(t) for t in datum["tokens"][: start + 1]]
        details = {"tinker": {"call": "forward_backward", "loss_fn": payload["loss_fn"], "datum": index}}
        out.append(
            _record(tokenizer, prompt, targets, channels, "eos", sum(nonzero) / len(nonzero), details, index)
        )
    return out


def _record(
    tokenizer: Any,
    prompt: list[int],
    completion: list[int],
    channels: dict[str, list[float]],
    finish: str,
    advantage: float,
    details: dict[str, Any],
    index: int,
) -> RolloutRecord:
    nan = float("nan")
    return RolloutRecord(
        step=0,  # placed at the run's next step by records.rollouts_done
        prompt_id=f"tinker-{details['tinker']['call']}",
        group=0,
        sample_index=index,
        prompt=tokenizer.decode(prompt),
        completion=tokenizer.decode(completion),
        finish_reason=finish,
        reward=nan,
        rewards={},
        correct=None,  # type: ignore[arg-type]  # the client scores its samples; the server is not told
        details=details,
        advantage=advantage,
        token_ids=completion,
        tokens=[tokenizer.decode([t]) for t in completion],
        token_values={k: [v if math.isfinite(v) else nan for v in vs] for k, vs in channels.items()},
    )


def _optim_step(server: Any, session: Any, payload: dict[str, Any]) -> Result:
    from trainer.training_api.types import AdamParams

    metrics = session.optim_step(AdamParams(**payload["adam"]))
    server.snapshot = None  # the live weights moved on from any saved sampler weights
    records.optim_step_done(model_id=server.model_id, step=int(metrics["step:max"]), metrics=metrics)
    return {"metrics": metrics, "type": "optim_step"}, None


def _sample(server: Any, session: Any, payload: dict[str, Any]) -> Result:
    from trainer.training_api.types import ApiSampling

    live = not payload["weights"] or payload["weights"] == server.snapshot  # "": a base model's sampler
    sampler = session if live else _snapshot_sampler(server, payload["weights"])
    params = ApiSampling(**payload["sampling"])
    result = sampler.sample(payload["prompt"], payload["num_samples"], params, payload["prompt_logprobs"])
    sequences = [WireSequence(s.tokens, s.logprobs, s.stop_reason) for s in result.sequences]
    prompt_lp = None
    if result.prompt_logprobs is not None:
        prompt_lp = [float("nan") if v is None else v for v in result.prompt_logprobs]
    rollouts = [
        _record(
            session.tokenizer,
            payload["prompt"],
            s.tokens,
            {"logprob": s.logprobs},
            "eos" if s.stop_reason == "stop" else "length",
            float("nan"),
            {"tinker": {"call": "sample", "weights": payload["weights"]}},
            i,
        )
        for i, s in enumerate(result.sequences)
    ]
    records.rollouts_done(model_id=server.model_id, records=rollouts)
    return None, write_sample_response(sequences, prompt_lp)


def _snapshot_sampler(server: Any, path: str) -> Any:
    """A sampler over saved sampler weights (kept loaded while the same snapshot is asked for)."""
    from trainer.errors import CheckpointError
    from trainer.training_api.sampler import Sampler

    if path not in server.samplers:
        model_id, kind, name = path.removeprefix("tinker://").split("/")
        directory = records.checkpoint_directory(model_id=model_id, kind=kind, name=name)
        if directory is None:
            raise CheckpointError(
                f"no saved weights at {path}: save them with save_weights_for_sampler first"
            )
        server.samplers = {path: Sampler.from_directory(directory, seed=0, limits=server.limits)}
    return server.samplers[path]


def _save(server: Any, session: Any, payload: dict[str, Any]) -> Result:
    kind, name = payload["kind"], payload["name"]
    directory = server.folder / kind / name
    if kind == "weights":
        session.save_state(directory)
    else:
        session.save_weights(directory)
        server.snapshot = payload["path"]
    records.checkpoint_done(
        model_id=server.model_id, kind=kind, name=name, directory=str(directory), step=int(session.steps)
    )
    if kind == "weights":
        return {"path": payload["path"], "type": "save_weights"}, None
    result = {"path": payload["path"], "type": "save_weights_for_sampler"}
    if "sampling_session_id" in payload:
        result["sampling_session_id"] = payload["sampling_session_id"]
    return result, None


def _load(server: Any, session: Any, payload: dict[str, Any]) -> Result:
    from trainer.errors import CheckpointError
    from trainer.training_api.session import new_optimizer

    directory = records.checkpoint_directory(
        model_id=payload["source_model"], kind="weights", name=payload["name"]
    )
    if directory is None or not Path(directory).is_dir():
        raise CheckpointError(f"no saved state at {payload['path']}: save it with save_state first")
    session.load_state(directory)
    if not payload["optimizer"]:  # load_state: the weights only, a fresh optimizer (Tinker's semantics)
        session.optimizer = new_optimizer(session.model)
    server.snapshot = None
    return {"path": payload["path"], "type": "load_weights"}, None


HANDLERS = {
    "forward": lambda server, session, payload: _forward(server, session, payload, backward=False),
    "forward_backward": lambda server, session, payload: _forward(server, session, payload, backward=True),
    "optim_step": _optim_step,
    "sample": _sample,
    "save": _save,
    "load": _load,
}
