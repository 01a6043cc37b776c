"""TRL's ``GRPOTrainer`` reporting to RLVR Studio: its metrics and every completion with its per-token data.

    from rlvr_client.trl import instrument
    trainer = instrument(GRPOTrainer(...), project="my-project")   # the one line; then trainer.train()

Why ``instrument`` and not only ``trainer.add_callback(...)``, TRL's usual habit: a ``TrainerCallback`` hears
the logs (``on_log``), checkpoints and the start and end of training, but never sees a batch: the token
ids, advantages, old logprobs and entropies live in ``_generate_and_score_completions``'s output and in
``_compute_loss``'s locals. So ``instrument`` adds ``RLVRStudioCallback`` (metrics, checkpoints, start and
finish) and wraps four methods of that one trainer object (not the class, so other trainers are
untouched): ``_generate_and_score_completions`` (the generation batch), ``_calculate_rewards`` (the reward
of each function, gathered across processes), ``_compute_loss`` and ``_get_per_token_logps_and_entropies``
(the logprobs and entropies of the loss forward, computed anyway: no extra forward pass). It also wraps
``train`` so that a crash or Ctrl-C marks the run failed or cancelled. A subclass would do the same but
would not compose with the user's own GRPOTrainer subclass; the methods are private, so this follows TRL
1.16.0 (``TESTED_TRL``) and refuses, naming the method, a trainer that lacks one. ``RLVRStudioCallback``
added alone sends the metrics and checkpoints only.

Steps. A completion is sent under ``global_step + 1`` at the time it was generated: the optimizer step it
is first trained in. TRL generates once per ``steps_per_generation * num_iterations`` micro-steps and reuses
the batch: with ``steps_per_generation > gradient_accumulation_steps`` or ``num_iterations > 1`` the later
steps have no rollouts of their own (never a second copy). Eval-mode generations are not sent. The
rollouts of a generation are sent once every row has been through one loss forward (its
``steps_per_generation`` micro-batches), or at the next generation or the end of training. Only the main
process sends; the other processes' rows reach it with ``accelerate.utils.gather_object`` (a no-op on
one process; tests/integrations runs it on 2 CPU processes under torchrun, a prompt's group split
across them). Metrics are sent at each ``on_log``, under ``state.global_step``: set ``logging_steps=1``
(TRL's default is 10, each point then averages 10 steps).

Metrics (TRL's log key -> RLVR Studio key; any other key goes to ``trl/<key>``, ``eval_<key>`` to
``eval/trl/<key>``; the end-of-training ``train_runtime``, ``train_loss``, ... go to the final metrics):

    =========================  ==========================  ==============================================
    TRL                        RLVR Studio                 note
    =========================  ==========================  ==============================================
    reward                     rollout/reward_mean         weighted sum over reward functions
    reward_std                 rollout/reward_std
    rewards/<name>/mean        reward/<name>_mean          rewards/<name>/std -> trl/rewards/<name>/std
    frac_reward_zero_std       rollout/zero_std_frac       share of completions in zero-std groups
    completions/mean_length    rollout/response_len_mean
    completions/max_length     rollout/response_len_max
    completions/clipped_ratio  rollout/truncated_frac
    loss                       actor/loss                  also actor/pg_loss when beta, the entropy bonus
                                                           and the router aux loss are all 0 (then equal)
    policy_loss                actor/pg_loss               logged by TRL only with an entropy bonus
    kl                         actor/kl                    only with beta != 0
    entropy                    actor/entropy
    clip_ratio/region_mean     actor/clip_frac             clip_ratio/low_mean, ... -> trl/clip_ratio/...
    grad_norm                  actor/grad_norm
    learning_rate              actor/lr
    step_time                  perf/step_s                 TRL times training_step only (generation,
                                                           scoring, forward, backward; no optimizer step)
    num_tokens                 perf/tokens_total           cumulative prompt + completion tokens (the
                                                           run page's "tokens" x-axis)
    =========================  ==========================  ==============================================

The client adds ``perf/elapsed_s`` (seconds since the run started) to every step (rlvr_client/run.py).

Rollouts (one per completion, rlvr's ``RolloutRecord`` fields):

    =============  ====================================================================================
    field          from TRL
    =============  ====================================================================================
    group          global row index // num_generations (TRL's RepeatSampler puts a prompt's completions
    sample_index   in consecutive rows; rows of process p follow those of p - 1) / index % num_generations
    prompt_id      the dataset row's ``prompt_id`` or ``id`` column, else a hash of the prompt text
    prompt         prompt_ids decoded (special tokens kept: the chat template as the model saw it)
    completion     completion_ids decoded without special tokens, as TRL passes them to reward functions
    answer         the row's ``answer`` or ``solution`` column, else None
    finish_reason  "eos" when the last token is an EOS (or pad) id, as TRL's completions/clipped_ratio
                   counts it, else "length"
    reward         sum of reward_weights x reward per function (None when every function returned None)
    rewards        {reward_func_names[k]: rewards_per_func[:, k]} (None where a function returned None)
    advantage      output["advantages"] (a (B, T) subclass advantage: its mean over the loss mask)
    token_ids      completion_ids up to the completion's length (completion_mask; the trailing pad ids
                   stripped where mask_truncated_completions zeroed the mask)
    tokens         each id decoded alone (special tokens kept), as rlvr's own token view
    correct        None: TRL has no notion of a correct answer
    details        {}: TRL keeps no verifier details (log_extra columns are not sent)
    =============  ====================================================================================

Token channels: ``logprob`` TRL's ``sampling_per_token_logps`` (vLLM) if present, else
``old_per_token_logps`` if TRL computed them (generation and update misaligned), else the loss forward's
first ``per_token_logps`` (which TRL itself then uses as the old logprobs); ``old_logprob`` the logprobs
of the ratio's denominator (``old_per_token_logps``, else the same first-pass logprobs); ``ref_logprob``
``ref_per_token_logps`` (beta != 0); ``entropy`` the loss forward's entropies, the first time the
completion is trained on; ``advantage`` the sequence advantage on loss tokens, 0 elsewhere; ``loss_mask``
completion_mask (times tool_mask in multi-turn runs).

What TRL does not provide: correctness (``correct`` is None, no ``rollout/accuracy``), verifier details,
per-token credit (the advantage channel is flat: TRL's ``top_entropy_quantile`` mask is not reflected),
teacher channels and HISPO segments; with ``use_liger_kernel`` the loss forward is Liger's, so
``entropy`` (and ``logprob`` when TRL computed no old logprobs) are left out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import logging
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from rlvr_client.run import IngestRun, start_run
from rlvr_client.wire import IngestError

if TYPE_CHECKING:
    import torch
    from trl import GRPOTrainer

logger = logging.getLogger("rlvr.ingest")

TESTED_TRL = "1.16.0"
ROW_KEY = "rlvr_studio_row"  # added to TRL's generation batch: shuffled micro-batches name their rows by it
CHECKPOINT_PREFIX = "checkpoint"  # transformers.trainer_utils.PREFIX_CHECKPOINT_DIR
METRIC_KEYS: dict[str, str] = {
    "reward": "rollout/reward_mean",
    "reward_std": "rollout/reward_std",
    "frac_reward_zero_std": "rollout/zero_std_frac",
    "completions/mean_length": "rollout/response_len_mean",
    "completions/max_length": "rollout/response_len_max",
    "completions/clipped_ratio": "rollout/truncated_frac",
    "loss": "actor/loss",
    "policy_loss": "actor/pg_loss",
    "kl": "actor/kl",
    "entropy": "actor/entropy",
    "clip_ratio/region_mean": "actor/clip_frac",
    "grad_norm": "actor/grad_norm",
    "learning_rate": "actor/lr",
    "step_time": "perf/step_s",
    "num_tokens": "perf/tokens_total",  # TRL's cumulative prompt + completion tokens: the "tokens" x-axis
}
FINAL_KEYS = frozenset(
    {"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos", "train_loss"}
)
_REWARD_MEAN = re.compile(r"^rewards/(.+)/mean$")
_PLACEHOLDER = re.compile(r"^<[A-Z_]+>$")  # TrainingArguments.to_dict's stand-in for a secret
WRAPPED = (
    "_generate_and_score_completions",
    "_calculate_rewards",
    "_compute_loss",
    "_get_per_token_logps_and_entropies",
)


def map_metrics(logs: Mapping[str, Any], *, loss_is_pg_loss: bool = False) -> dict[str, float]:
    """TRL's ``on_log`` values under RLVR Studio's stable keys (table above); None (TRL's "no valid value")
    becomes NaN, which the client sends as null; strings are dropped."""
    out: dict[str, float] = {}
    for name, value in logs.items():
        if isinstance(value, str) or not (value is None or isinstance(value, int | float)):
            continue
        number = math.nan if value is None else float(value)
        if name.startswith("eval_"):
            out[f"eval/trl/{name.removeprefix('eval_')}"] = number
            continue
        reward = _REWARD_MEAN.match(name)
        out[METRIC_KEYS.get(name) or (f"reward/{reward.group(1)}_mean" if reward else f"trl/{name}")] = number
    if loss_is_pg_loss and "actor/loss" in out:
        out.setdefault("actor/pg_loss", out["actor/loss"])
    return out


def completion_lengths(ids: list[list[int]], mask: list[list[int]], pad_id: int | None) -> list[int]:
    """Each completion's real length in TRL's right-padded ``completion_ids`` [B, T]: the sum of its mask,
    or, where ``mask_truncated_completions`` zeroed the mask of a completion cut at the length limit (whose
    last real token is then neither EOS nor pad), its ids without the trailing pad ids."""
    lengths = []
    for row, row_mask in zip(ids, mask, strict=True):
        n = sum(row_mask)
        if n == 0:
            n = len(row)
            while n > 0 and row[n - 1] == pad_id:
                n -= 1
        lengths.append(n)
    return lengths


def changed_settings(args: TrainingArguments) -> dict[str, Any]:
    """The GRPOConfig fields that differ from their defaults (what the script set, and what TRL derived from
    it, e.g. steps_per_generation), as JSON: the whole dataclass is ~200 fields, which would bury the compare
    page's config diff. The defaults are TRL's own, for the version in the run's source_info. Left out too:
    the placeholders ``to_dict`` puts for secrets (``<HUB_TOKEN>``), an empty value for an empty default,
    and the option objects transformers builds for a field left at None (``accelerator_config``)."""
    current = _jsonable(args.to_dict())
    changed = {}
    for spec in dataclasses.fields(args):
        value = current.get(spec.name)
        if spec.name not in current or (isinstance(value, str) and _PLACEHOLDER.match(value)):
            continue
        if spec.default is not dataclasses.MISSING:
            default = _jsonable(spec.default)
        elif spec.default_factory is not dataclasses.MISSING:
            default = _jsonable(spec.default_factory())
        else:
            changed[spec.name] = value
            continue
        if default == value or (not default and not value and default is not False and value is not False):
            continue
        if default is None and isinstance(value, dict):
            continue
        changed[spec.name] = value
    return changed


def _jsonable(value: Any) -> Any:
    """A config as JSON the server takes: enums -> their value, non-finite floats -> None, unknown objects
    -> their str."""
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


class RLVRStudioCallback(TrainerCallback):
    """Starts the run at ``on_train_begin``, sends each ``on_log`` and ``on_save``, finishes at
    ``on_train_end``; only on the main process. ``instrument`` adds it and the rollout tap."""

    def __init__(
        self,
        *,
        project: str,
        name: str | None = None,
        experiment: str | None = None,
        config: Mapping[str, Any] | None = None,
        key: str | None = None,
        url: str | None = None,
        token: str | None = None,
        spool_dir: str | Path | None = None,
    ) -> None:
        self.project, self.name, self.experiment, self.config = project, name, experiment, config
        self.key, self.url, self.token, self.spool_dir = key, url, token, spool_dir
        self.run: IngestRun | None = None
        self.source_info: dict[str, Any] = {}
        self.loss_is_pg_loss = False  # set by instrument, which can see the trainer
        self.tap: RolloutTap | None = None
        self._last: dict[str, float] = {}
        self._final: dict[str, float] = {}
        self._open = False

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if not state.is_world_process_zero or self._open:
            return
        import trl

        model = kwargs.get("model")
        name_or_path = getattr(getattr(model, "config", None), "_name_or_path", "")
        output_dir = str(args.output_dir or ".")
        self.run = start_run(
            project=self.project,
            name=self.name or args.run_name or os.path.basename(os.path.abspath(output_dir)),
            experiment=self.experiment,
            config=_jsonable(
                self.config
                if self.config is not None
                else {**changed_settings(args), "model_name_or_path": name_or_path}
            ),
            source="trl",
            source_info={
                "library": "trl",
                "version": trl.__version__,
                "model": name_or_path,
                **self.source_info,
            },
            max_steps=max(int(state.max_steps), 0),
            key=self.key,
            url=self.url,
            token=self.token,
            spool_dir=self.spool_dir,
        )
        self._open, self._last, self._final = True, {}, {}
        print(
            f"RLVR Studio: logging this run to {self.run.page_url or self.run.transport.url}", file=sys.stderr
        )

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if self.run is None or not self._open or not logs:
            return
        if FINAL_KEYS & set(logs):  # the end-of-training summary: final metrics, not a chart point
            self._final.update(
                {k: v for k, v in map_metrics(logs).items() if k.removeprefix("trl/") in FINAL_KEYS}
            )
            return
        values = map_metrics(logs, loss_is_pg_loss=self.loss_is_pg_loss)
        if not any(k.startswith("eval/") for k in values):
            self._last = values
        self._send(
            f"the metrics of step {state.global_step}", self.run.log_metrics, int(state.global_step), values
        )

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.run is not None and self._open:
            folder = os.path.join(str(args.output_dir or "."), f"{CHECKPOINT_PREFIX}-{state.global_step}")
            self._send(
                "a checkpoint", self.run.log_checkpoint, int(state.global_step), os.path.abspath(folder)
            )

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.tap is not None:
            self.tap.flush()  # on every process: it gathers
        self.end("succeeded")

    def send_rollouts(self, step: int, rollouts: list[dict[str, Any]]) -> None:
        if self.run is not None and self._open and rollouts:
            self._send(f"the rollouts of step {step}", self.run.log_rollouts, step, rollouts)

    @staticmethod
    def _send(what: str, log: Callable[..., None], *args: Any) -> None:
        """A value the client refuses is told on the log, and training goes on: a report never stops a run."""
        try:
            log(*args)
        except IngestError as err:
            logger.error("RLVR Studio: %s not sent: %s", what, err)

    def end(self, status: str, error_message: str = "") -> None:
        """Finish the run (once); waits up to a minute for the server, else leaves it in the spool."""
        if self.run is None or not self._open:
            return
        self._open = False
        self.run.finish(
            status, final_metrics={**self._last, **self._final}, error_message=error_message, timeout_s=60
        )


@dataclass
class _Generation:
    """One generation batch of this process, from ``_generate_and_score_completions`` until it is sent."""

    step: int
    rows: list[dict[str, Any]]
    lengths: list[int]
    first_pass: list[tuple[list[float], list[float] | None] | None]
    passes_left: int
    needs_logprob: bool  # TRL had no old logprobs: the first loss forward's logprobs are the sampling ones
    rewards: list[list[float]] = field(default_factory=list)


class RolloutTap:
    """Collects each generation's completions from the wrapped GRPOTrainer methods and hands them to
    ``send(step, rollouts)`` on the main process (see the module docstring for where each field comes from)."""

    def __init__(self, trainer: GRPOTrainer, send: Callable[[int, list[dict[str, Any]]], None]) -> None:
        self.trainer = trainer
        self.send = send
        tokenizer = trainer.processing_class
        self.tokenizer: Any = getattr(trainer, "_tokenizer", None) or getattr(
            tokenizer, "tokenizer", tokenizer
        )
        self.pending: _Generation | None = None
        self._rewards: list[list[float]] | None = None
        self._rows_in_loss: list[int] | None = None

    @property
    def training(self) -> bool:
        return bool(self.trainer.model is not None and self.trainer.model.training)

    # --- the wrapped methods call these ----------------------------------------------------------------

    def rewards_computed(self, rewards_per_func: torch.Tensor) -> None:
        if self.training:
            self._rewards = rewards_per_func.detach().float().cpu().tolist()  # [N all processes, F]

    def generated(self, inputs: list[dict[str, Any]], output: dict[str, Any]) -> None:
        """After ``_generate_and_score_completions`` in training: the batch's rows, less what the loss adds."""
        import torch

        if not self.training:
            return
        self.flush()
        t = self.trainer
        ids = output["completion_ids"].tolist()  # [B, T]
        mask = output["completion_mask"]  # [B, T]
        lengths = completion_lengths(ids, mask.tolist(), self.tokenizer.pad_token_id)
        in_loss = (mask * output["tool_mask"] if "tool_mask" in output else mask).tolist()  # [B, T]
        advantages = output["advantages"].detach().float().cpu()  # [B], or [B, T] from a subclass
        channels = {
            name: output[key].detach().float().cpu().tolist()  # [B, T]
            for name, key in (
                ("ref_logprob", "ref_per_token_logps"),
                ("old_logprob", "old_per_token_logps"),
                ("logprob", "sampling_per_token_logps"),
            )
            if output.get(key) is not None
        }
        if "logprob" not in channels and "old_logprob" in channels:
            channels["logprob"] = channels["old_logprob"]
        elif "old_logprob" not in channels and "logprob" in channels:
            channels["old_logprob"] = channels["logprob"]
        prompts = [
            [tok for tok, keep in zip(row, keep_row, strict=True) if keep]
            for row, keep_row in zip(
                output["prompt_ids"].tolist(), output["prompt_mask"].tolist(), strict=True
            )
        ]
        token_str = _token_strings(self.tokenizer, [row[:n] for row, n in zip(ids, lengths, strict=True)])
        eos = {*getattr(t, "eos_token_ids", [self.tokenizer.eos_token_id]), self.tokenizer.pad_token_id}
        weights = t.reward_weights.tolist()
        offset = t.accelerator.process_index * len(ids)  # rows of process p follow those of p - 1
        rows = []
        for i, (row, n) in enumerate(zip(ids, lengths, strict=True)):
            g = offset + i
            scores = self._rewards[g] if self._rewards and g < len(self._rewards) else []  # [F]
            loss_mask = [float(m) for m in in_loss[i][:n]]
            if advantages.dim() == 1:
                advantage, per_token = float(advantages[i]), [float(advantages[i])] * n
            else:
                per_token = advantages[i, :n].tolist()
                kept = [a for a, m in zip(per_token, loss_mask, strict=True) if m]
                advantage = sum(kept) / len(kept) if kept else 0.0
            prompt = self.tokenizer.decode(prompts[i], skip_special_tokens=False)
            source = inputs[i] if i < len(inputs) else {}
            rows.append(
                {
                    "prompt_id": _prompt_id(source, prompt),
                    "group": g // t.num_generations,
                    "sample_index": g % t.num_generations,
                    "prompt": prompt,
                    "completion": self.tokenizer.decode(row[:n], skip_special_tokens=True),
                    "finish_reason": "eos" if n and row[n - 1] in eos else "length",
                    "reward": _weighted_sum(scores, weights),
                    "rewards": {
                        name: _number(s) for name, s in zip(t.reward_func_names, scores, strict=False)
                    },
                    "correct": None,
                    "details": {},
                    "advantage": _number(advantage),
                    "token_ids": row[:n],
                    "tokens": [token_str[tok] for tok in row[:n]],
                    "token_values": {
                        "advantage": [a if m else 0.0 for a, m in zip(per_token, loss_mask, strict=True)],
                        "loss_mask": loss_mask,
                        **{name: values[i][:n] for name, values in channels.items()},
                    },
                    "answer": _answer(source),
                }
            )
        self._rewards = None
        self.pending = _Generation(
            step=int(t.state.global_step) + 1,
            rows=rows,
            lengths=lengths,
            first_pass=[None] * len(rows),
            passes_left=int(getattr(t.args, "steps_per_generation", 1)),
            needs_logprob="logprob" not in channels,
        )
        output[ROW_KEY] = torch.arange(len(rows), device=output["completion_ids"].device)  # [B]

    @contextlib.contextmanager
    def loss_forward(self, inputs: Mapping[str, Any]) -> Iterator[None]:
        """Around ``_compute_loss``: which rows the micro-batch holds; counts the batch's training passes."""
        rows = inputs.get(ROW_KEY)
        active = self.training and self.pending is not None and rows is not None
        self._rows_in_loss = rows.tolist() if active and rows is not None else None
        try:
            yield
        finally:
            self._rows_in_loss = None
        if active and self.pending is not None:
            self.pending.passes_left -= 1
            if self.pending.passes_left <= 0:
                self.flush()

    def logps_computed(self, logps: torch.Tensor, entropies: torch.Tensor | None) -> None:
        """The loss forward's logprobs and entropies [b, T] of the rows in ``_rows_in_loss``, kept the
        first time each row is trained on (later iterations see an updated policy)."""
        if self._rows_in_loss is None or self.pending is None:
            return
        logps_rows = logps.detach().float().cpu().tolist()  # [b, T]
        entropy_rows = entropies.detach().float().cpu().tolist() if entropies is not None else None  # [b, T]
        for j, r in enumerate(self._rows_in_loss):
            if self.pending.first_pass[r] is None:
                n = self.pending.lengths[r]
                self.pending.first_pass[r] = (
                    logps_rows[j][:n],
                    entropy_rows[j][:n] if entropy_rows else None,
                )

    def flush(self) -> None:
        """Send the pending generation (gathered to the main process). Every process calls it at the same point."""
        from accelerate.utils import gather_object

        pending, self.pending = self.pending, None
        if pending is None:
            return
        for row, seen in zip(pending.rows, pending.first_pass, strict=True):
            if seen is None:
                continue
            logps, entropy = seen
            if pending.needs_logprob:
                row["token_values"]["logprob"] = row["token_values"]["old_logprob"] = logps
            if entropy is not None:
                row["token_values"]["entropy"] = entropy
        rows = gather_object(pending.rows)
        if self.trainer.accelerator.is_main_process:
            self.send(pending.step, rows)


def _token_strings(tokenizer: Any, rows: list[list[int]]) -> dict[int, str]:
    """Each distinct id decoded once (a token's string depends on it alone), special tokens kept."""
    distinct = sorted({tok for row in rows for tok in row})
    decoded = (
        tokenizer.batch_decode([[tok] for tok in distinct], skip_special_tokens=False) if distinct else []
    )
    return dict(zip(distinct, decoded, strict=True))


def _weighted_sum(scores: list[float], weights: list[float]) -> float | None:
    """TRL's logged reward: reward_weights x rewards_per_func, NaN-summed; None when every function gave None."""
    present = [(s, w) for s, w in zip(scores, weights, strict=False) if math.isfinite(s)]
    return sum(s * w for s, w in present) if present else None


def _prompt_id(row: Mapping[str, Any], prompt: str) -> str:
    for column in ("prompt_id", "id"):
        if row.get(column) is not None:
            return str(row[column])[:255]
    return "sha1-" + hashlib.sha1(prompt.encode("utf-8", "replace")).hexdigest()[:16]


def _answer(row: Mapping[str, Any]) -> str | None:
    for column in ("answer", "solution"):
        if row.get(column) is not None:
            return str(row[column])
    return None


def _wrap(trainer: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(trainer, name, None)
    if not callable(original):
        import trl

        raise IngestError(
            f"{type(trainer).__name__} has no method {name}: rlvr_client.trl follows TRL {TESTED_TRL}'s "
            f"GRPOTrainer and this is trl {trl.__version__}; install trl=={TESTED_TRL}, or add "
            "RLVRStudioCallback alone to send the metrics without the rollouts"
        )
    setattr(trainer, name, make(original))


def _tap_methods(trainer: Any, tap: RolloutTap) -> None:
    def generate(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(inputs: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            output = original(inputs, *args, **kwargs)
            tap.generated(inputs, output)
            return output

        return wrapper

    def rewards(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rewards_per_func = original(*args, **kwargs)
            tap.rewards_computed(rewards_per_func)
            return rewards_per_func

        return wrapper

    def loss(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            with tap.loss_forward(inputs):
                return original(model, inputs, *args, **kwargs)

        return wrapper

    def logps(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if kwargs.get("compute_entropy"):  # the loss forward's call (the old and ref logprobs pass False)
                tap.logps_computed(result[0], result[1])
            return result

        return wrapper

    for name, make in zip(WRAPPED, (generate, rewards, loss, logps), strict=True):
        _wrap(trainer, name, make)


def instrument(
    trainer: GRPOTrainer,
    *,
    project: str,
    name: str | None = None,
    experiment: str | None = None,
    config: Mapping[str, Any] | None = None,
    key: str | None = None,
    url: str | None = None,
    token: str | None = None,
    spool_dir: str | Path | None = None,
    send_rollouts: bool = True,
) -> GRPOTrainer:
    """Make ``trainer`` report to RLVR Studio project ``project`` (slug or id) as run ``name`` (default:
    ``args.run_name``, else the output folder's name); returns the same trainer.

    ``config`` defaults to the GRPOConfig fields set away from their defaults, plus the model path. ``key`` makes a restarted script
    (``train(resume_from_checkpoint=...)``) continue the same run; ``url``/``token`` default to
    $RLVR_URL/$RLVR_TOKEN, else ``rlvr login``'s credentials. ``send_rollouts=False`` sends metrics only."""
    import trl
    from trl import GRPOTrainer

    if trl.__version__ != TESTED_TRL:
        logger.warning(
            "RLVR Studio: the TRL integration follows trl %s; this is trl %s", TESTED_TRL, trl.__version__
        )
    if not isinstance(trainer, GRPOTrainer):
        raise IngestError(
            f"instrument() takes a trl GRPOTrainer, got {type(trainer).__name__}; for another Trainer, "
            "trainer.add_callback(RLVRStudioCallback(project=...)) sends its logged metrics"
        )
    if getattr(trainer, "_rlvr_studio_callback", None) is not None:
        raise IngestError("this trainer is already instrumented for RLVR Studio: call instrument() once")
    callback = RLVRStudioCallback(
        project=project,
        name=name,
        experiment=experiment,
        config=config,
        key=key,
        url=url,
        token=token,
        spool_dir=spool_dir,
    )
    callback.loss_is_pg_loss = (
        trainer.beta == 0.0
        and not getattr(trainer, "_entropy_bonus_enabled", False)
        and not getattr(trainer, "aux_loss_enabled", False)
    )
    callback.source_info = {"reward_funcs": list(trainer.reward_func_names)}
    if send_rollouts:
        callback.tap = RolloutTap(trainer, callback.send_rollouts)
        _tap_methods(trainer, callback.tap)
    _wrap(trainer, "train", lambda original: _reporting_failures(original, callback))
    trainer.add_callback(callback)
    trainer._rlvr_studio_callback = callback  # type: ignore[attr-defined]
    return trainer


def _reporting_failures(train: Callable[..., Any], callback: RLVRStudioCallback) -> Callable[..., Any]:
    """``trainer.train`` that marks the run cancelled (Ctrl-C) or failed (any exception) before re-raising."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return train(*args, **kwargs)
        except KeyboardInterrupt:
            callback.end("cancelled", "interrupted (KeyboardInterrupt)")
            raise
        except BaseException as err:
            callback.end("failed", f"{type(err).__name__}: {err}")
            raise

    return wrapper
