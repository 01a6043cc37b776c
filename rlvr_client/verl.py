"""verl to RLVR Studio: a tracking backend named ``rlvr`` (live), and a reader of verl's rollout dump (``rlvr import``).

Written against verl's source (volcengine/verl, v0.9.1 and main of 2026-01; verl itself needs Ray, vLLM
and CUDA, so it is not installed here, and the tests use files in its formats):

- ``verl/utils/tracking.py`` ``Tracking``: a fixed list ``supported_backend`` (anything else fails an
  assert) and one adapter per backend with ``log(data, step)`` and ``finish()``; the trainer calls
  ``Tracking.log(metrics, step)`` once a step and ``Tracking.finish(exit_code)`` (v0.9) or ``__del__``
  (earlier) at the end. ``install`` adds ``rlvr`` to that list; set ``VERL_USE_EXTERNAL_MODULES`` to this
  module and verl imports it in every process (``verl/__init__.py``; docs/integrations/verl.md).
- ``verl/trainer/ppo/ray_trainer.py`` ``_dump_generations``: with ``trainer.rollout_data_dir`` set, one
  ``<step>.jsonl`` per step, a line per completion: ``input``, ``output`` (decoded with
  ``skip_special_tokens=True``), ``gts``, ``score`` (the summed token-level score), ``step``, then every
  reward extra info of that length (``acc``, ``pred``, ``overlong_reward``, ...). Lines are in batch order
  after ``_balance_batch`` reordered it, so a prompt's completions are grouped here by their input text.
  The dump holds text only: no token ids, logprobs, entropies or advantages.
- ``FileLogger`` (``trainer.logger=[file]``): ``{"step": N, "data": {metric: value}}`` lines, the
  ``--metrics`` file of ``rlvr import --format verl``.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.abc
import importlib.machinery
import json
import logging
import math
import os
import statistics
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from rlvr_client.jsonl_import import (
    MAX_NAME,
    MAX_TEXT,
    STEP_FILE,
    ImportFileError,
    Item,
    Limits,
    Metrics,
    Reader,
    Reading,
    Rollout,
    RunHeader,
    number_or_none,
    plain_json,
    prompt_id_for,
    step_of,
    text_of,
)
from rlvr_client.run import IngestRun, start_run
from rlvr_client.wire import IngestError, rollout_payload

logger = logging.getLogger("rlvr.ingest.verl")
BACKEND = "rlvr"  # the name in verl's trainer.logger list
THIS_MODULE = "rlvr_client.verl"

# verl's metric -> our stable name (DESIGN.md "Stable names"); verl's computation named where it differs.
METRIC_KEYS: dict[str, str] = {
    "critic/score/mean": "rollout/reward_mean",  # the reward function's score (before any in-reward KL penalty)
    "actor/pg_loss": "actor/pg_loss",
    "actor/entropy": "actor/entropy",
    "actor/kl_loss": "actor/kl",  # KL to the reference in the loss (actor.kl_loss_type, default low_var_kl = k3)
    "actor/pg_clipfrac": "actor/clip_frac",
    "actor/grad_norm": "actor/grad_norm",
    "actor/lr": "actor/lr",
    "response_length/mean": "rollout/response_len_mean",
    "response_length/max": "rollout/response_len_max",
    "response_length/clip_ratio": "rollout/truncated_frac",  # share of responses at max_response_length
    "timing_s/step": "perf/step_s",
    "timing_s/gen": "perf/gen_s",
    "timing_s/reward": "perf/verify_s",
    "timing_s/update_actor": "perf/train_s",
    "perf/max_memory_allocated_gb": "perf/peak_memory_gb",
}
PREFIX_KEYS: tuple[tuple[str, str], ...] = (("val-core/", "eval/"),)  # val-core/<data_source>/<var>/<metric>
OTHER_PREFIX = "verl/"  # every other verl metric keeps its name under this prefix
# Dump line fields other than the reward extra infos (ray_trainer._dump_generations's base_data).
DUMP_FIELDS = ("input", "output", "gts", "score", "step")
UNKNOWN_FINISH = "unknown"  # the dump does not say whether a completion ended at EOS or at the length limit
DUMP_CHUNK = 512  # rollouts handed to the client at once (a verl step often has thousands)


# --- metrics -----------------------------------------------------------------------------------------


def metric_name(key: str) -> str:
    """Our name for one of verl's metric keys."""
    if key in METRIC_KEYS:
        return METRIC_KEYS[key]
    for prefix, ours in PREFIX_KEYS:
        if key.startswith(prefix):
            return ours + key[len(prefix) :]
    return OTHER_PREFIX + key


def as_number(value: Any) -> float | None:
    """A float for numbers, numpy scalars and one-element tensors (None for null, NaN and infinities: orjson,
    verl's FileLogger's writer, writes NaN as null); raises TypeError for anything else."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, int | float):
        value = value.item()
    if isinstance(value, bool | int | float):
        number = float(value)
        return number if math.isfinite(number) else None
    raise TypeError(type(value).__name__)


def map_metrics(data: Mapping[str, Any]) -> tuple[dict[str, float | None], list[str]]:
    """verl's step metrics under our names, and the keys left out (not numbers, or names too long)."""
    values: dict[str, float | None] = {}
    skipped: list[str] = []
    for key, value in data.items():
        name = metric_name(str(key))
        try:
            number = as_number(value)
        except (TypeError, ValueError):
            skipped.append(str(key))
            continue
        if len(name) > MAX_NAME:
            skipped.append(str(key))
            continue
        values[name] = number
    return values, skipped


def dump_metrics(rollouts: Sequence[Rollout], *, rewards: bool) -> dict[str, float | None]:
    """What one step's dump says about the step: accuracy where the reward gave ``acc`` and, with ``rewards``
    (no verl metrics at hand), the reward mean and spread, the share of groups with one reward only, and the
    mean length of re-tokenized completions."""
    out: dict[str, float | None] = {}
    verdicts = [r.fields["correct"] for r in rollouts if r.fields.get("correct") is not None]
    if verdicts:
        out["rollout/accuracy"] = sum(verdicts) / len(verdicts)
    scores = [r.fields["reward"] for r in rollouts if r.fields.get("reward") is not None]
    if rewards and scores:
        out["rollout/reward_mean"] = statistics.fmean(scores)
        out["rollout/reward_std"] = statistics.pstdev(scores)
        groups: dict[int, set[float]] = {}
        for r in rollouts:
            if r.fields.get("reward") is not None:
                groups.setdefault(int(r.fields["group"]), set()).add(float(r.fields["reward"]))
        out["rollout/zero_std_frac"] = sum(len(g) == 1 for g in groups.values()) / len(groups)
    lengths = [len(r.fields["token_ids"]) for r in rollouts if r.fields.get("token_ids")]
    if (
        rewards and lengths
    ):  # re-tokenized (--tokenizer): verl's own response_length/mean is better when at hand
        out["rollout/response_len_mean"] = statistics.fmean(lengths)
    return out


# --- the rollout dump ------------------------------------------------------------------------------


class Retokenizer:
    """``--tokenizer``: token ids and strings for a completion's text, from a Hugging Face tokenizer.

    Re-tokenizing decoded text is not always the sequence verl sampled (the dump drops special tokens, and
    a text can have several tokenizations); logprobs and the other channels stay absent. transformers is
    imported here, only when asked for."""

    def __init__(self, path: str) -> None:
        try:
            from transformers import AutoTokenizer
        except ImportError:
            raise IngestError(
                "--tokenizer needs the transformers package (pip install transformers)"
            ) from None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
        except (OSError, ValueError) as err:
            raise IngestError(f"--tokenizer {path}: cannot load a tokenizer there: {err}") from None
        self.path = path
        self._strings: dict[int, str] = {}

    def __call__(self, text: str) -> tuple[list[int], list[str]]:
        ids = [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]
        missing = sorted({i for i in ids if i not in self._strings})
        if missing:
            decoded = self.tokenizer.batch_decode([[i] for i in missing], skip_special_tokens=False)
            self._strings.update(zip(missing, decoded, strict=True))
        return ids, [self._strings[i] for i in ids]


def _answer(value: Any, where: str) -> str | None:
    if value is None:
        return None
    text = (
        value if isinstance(value, str) else json.dumps(plain_json(value, where, "gts"), ensure_ascii=False)
    )
    if len(text) > MAX_TEXT:
        raise ImportFileError(where, "gts", f"has {len(text):,} characters; at most {MAX_TEXT:,}")
    return text


def _correct(value: Any) -> bool | None:
    """verl's ``acc`` extra info (math_dapo and the DAPO reward manager: a bool; others 0/1 numbers)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    return None


def _extra_rewards(extras: Mapping[str, Any], where: str) -> dict[str, float | None]:
    """Numeric reward extra infos named like a reward (``overlong_reward``, a judge's ``*_score``)."""
    out: dict[str, float | None] = {}
    for key, value in extras.items():
        lowered = key.lower()
        named = ("reward" in lowered or "score" in lowered) and 0 < len(key) <= MAX_NAME
        if named and isinstance(value, int | float) and not isinstance(value, bool) and len(out) < 63:
            out[key] = number_or_none(value, where, key)
    return out


def step_rollouts(
    lines: Iterable[tuple[str, Mapping[str, Any]]],
    step: int,
    retokenize: Retokenizer | None = None,
    limits: Limits | None = None,
) -> Iterator[Rollout]:
    """The rollouts of one ``<step>.jsonl``: group = the input's first appearance in the file, sample_index = its
    order within that input's lines."""
    limits = limits or Limits()
    groups: dict[str, int] = {}
    taken: dict[int, int] = {}
    for where, obj in lines:
        prompt = text_of(obj, "input", where, limit=MAX_TEXT, required=True) or ""
        completion = text_of(obj, "output", where, limit=MAX_TEXT, required=True) or ""
        if "step" in obj and step_of(obj, where) != step:
            raise ImportFileError(where, "step", f"is {obj['step']}, but the file is the dump of step {step}")
        score = number_or_none(obj.get("score"), where, "score")
        group = groups.setdefault(prompt, len(groups))
        sample_index = taken.get(group, 0)
        taken[group] = sample_index + 1
        extras = {k: v for k, v in obj.items() if k not in DUMP_FIELDS}
        fields: dict[str, Any] = {
            "group": group,
            "sample_index": sample_index,
            "prompt_id": prompt_id_for(prompt),
            "prompt": prompt,
            "completion": completion,
            "finish_reason": UNKNOWN_FINISH,
            "answer": _answer(obj.get("gts"), where),
            "reward": score,
            "rewards": {"score": score, **_extra_rewards(extras, where)},
            "correct": _correct(extras.get("acc")),
            "advantage": None,
            "details": {"verl": plain_json(extras, where, "(reward extra info)")} if extras else {},
        }
        if retokenize is not None:
            ids, tokens = retokenize(completion)
            if len(ids) > limits.tokens:
                raise ImportFileError(
                    where, "output", f"is {len(ids):,} tokens; at most {limits.tokens:,} per rollout"
                )
            fields.update(token_ids=ids, tokens=tokens)
        yield Rollout(where, step, rollout_payload(step, fields, where))


def dump_steps(path: Path) -> list[tuple[int, Path]]:
    """``(step, file)`` of a dump directory, by step."""
    found = [(int(m.group(1)), p) for p in path.iterdir() if (m := STEP_FILE.match(p.name)) and p.is_file()]
    return sorted(found)


def read_dump_dir(
    path: Path, metrics_file: Path | None = None, retokenize: Retokenizer | None = None
) -> Reader:
    """verl's ``trainer.rollout_data_dir`` as a run: each step's rollouts, the step's metrics from the
    FileLogger ``metrics_file`` (mapped by ``METRIC_KEYS``) or else computed from the dump (``dump_metrics``)."""
    steps = dump_steps(path)

    def read(reading: Reading) -> Iterator[RunHeader | Item]:
        if not steps:
            raise IngestError(f"{path} holds no <step>.jsonl files: is it verl's trainer.rollout_data_dir?")
        info: dict[str, Any] = {"library": "verl", "format": "verl-rollout-dump"}
        if retokenize is not None:
            info["tokenizer"] = retokenize.path
        yield RunHeader(name=path.resolve().name, source="verl", source_info=info)
        if metrics_file is not None:
            yield from file_logger_metrics(metrics_file, reading)
        for step, step_file in steps:
            rollouts = list(step_rollouts(reading.json_lines(step_file), step, retokenize, reading.limits))
            yield from rollouts
            derived = dump_metrics(rollouts, rewards=metrics_file is None)
            if derived:
                yield Metrics(f"{step_file} (computed)", step, derived)

    return read


def file_logger_metrics(path: Path, reading: Reading) -> Iterator[Metrics]:
    """verl's FileLogger lines ``{"step": N, "data": {...}}``; values that are not numbers are left out."""
    for where, obj in reading.json_lines(path, name=f"metrics:{path.name}"):
        data = obj.get("data")
        if not isinstance(data, dict):
            raise ImportFileError(
                where, "data", "must be an object of metric -> value (verl's FileLogger line)"
            )
        values, _ = map_metrics(data)
        yield Metrics(where, step_of(obj, where), values)


# --- the live backend --------------------------------------------------------------------------------


def _config_value(config: Mapping[str, Any], *path: str) -> Any:
    node: Any = config
    for name in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(name)
    return node


def run_key(project: str, project_name: str, experiment_name: str, config: Mapping[str, Any]) -> str:
    """$RLVR_RUN_KEY, else one key per verl training lineage: verl resumes from ``trainer.default_local_dir``
    (``resume_mode: auto``), so the same project, names and checkpoint folder continue the same run; with
    ``resume_mode: disable`` every start is a new run."""
    explicit = os.environ.get("RLVR_RUN_KEY")
    if explicit:
        return explicit
    if _config_value(config, "trainer", "resume_mode") == "disable":
        return "verl-" + uuid.uuid4().hex
    folder = str(_config_value(config, "trainer", "default_local_dir") or "")
    seed = "\0".join((project, project_name, experiment_name, folder)).encode()
    return "verl-" + hashlib.sha256(seed).hexdigest()[:40]


@dataclass
class _DumpFollower:
    """Sends each ``<step>.jsonl`` of ``trainer.rollout_data_dir`` once it is complete: at ``log(step)``
    the dumps of earlier steps (verl writes step N's before logging step N, in a background thread since
    v0.9), at ``finish`` the rest, and again any that grew since it was sent.

    A resumed job (verl restarts from its last checkpoint, at step ``first``) finds the earlier dumps in the
    folder: the process before sent them, all but perhaps the one of step ``first - 1`` (sent at the
    ``log`` after it), so older ones are left alone rather than sent again."""

    folder: Path
    limits: Limits = field(default_factory=Limits)
    sent: dict[int, int] = field(default_factory=dict)  # step -> file size when sent
    floor: int | None = None  # dumps of earlier steps belong to an earlier process

    def due(self, before_step: int | None) -> list[tuple[int, Path]]:
        if self.floor is None and before_step is not None:
            self.floor = before_step - 1
        if not self.folder.is_dir():
            return []
        out = []
        for step, path in dump_steps(self.folder):
            if (before_step is not None and step >= before_step) or (
                self.floor is not None and step < self.floor
            ):
                continue
            size = path.stat().st_size
            if self.sent.get(step) != size and (before_step is None or step not in self.sent):
                out.append((step, path))
        return out

    def read(self, step: int, path: Path) -> list[Rollout]:
        size = path.stat().st_size
        rollouts = list(step_rollouts(Reading(limits=self.limits).json_lines(path), step, limits=self.limits))
        self.sent[step] = size
        return rollouts


class RlvrTracking:
    """verl's tracking backend ``rlvr``: each ``log(data, step)`` sends the step's metrics under our names,
    plus the rollouts verl dumped (``trainer.rollout_data_dir``); ``finish`` closes the run.

    Built by verl's ``Tracking`` (after ``install``) with its three arguments; the rest comes from the
    environment: ``RLVR_URL`` / ``RLVR_TOKEN`` (else ``rlvr login``'s file), ``RLVR_PROJECT`` (default: verl's
    project_name), ``RLVR_EXPERIMENT`` (default: verl's experiment_name, which also names the run: a run
    has no name of its own), ``RLVR_RUN_KEY``, and ``RLVR_VERL_ROLLOUTS=0`` to leave the dump alone. A
    failure to send never stops training: it is logged, and what was not sent waits in the client's spool
    (``rlvr sync``)."""

    def __init__(
        self,
        project_name: str,
        experiment_name: str,
        config: Mapping[str, Any] | None = None,
        *,
        project: str | None = None,
        experiment: str | None = None,
        url: str | None = None,
        token: str | None = None,
        key: str | None = None,
        spool_dir: str | Path | None = None,
        run: IngestRun | None = None,
    ) -> None:
        plain = plain_json(json.loads(json.dumps(dict(config or {}), default=str)), "verl config", "config")
        self.config: dict[str, Any] = plain if isinstance(plain, dict) else {}
        self.max_steps = int(
            _config_value(self.config, "trainer", "total_training_steps")
            or _config_value(self.config, "actor_rollout_ref", "actor", "optim", "total_training_steps")
            or 0
        )
        self.last_step: int | None = None
        self.skipped: set[str] = set()
        self._lock = threading.Lock()
        self._finished = False
        rlvr_project = project or os.environ.get("RLVR_PROJECT") or project_name
        self.run = run or start_run(
            project=rlvr_project,
            name=experiment_name,
            config=self.config,
            source="verl",
            source_info={"library": "verl", "version": _verl_version(), "verl_project": project_name},
            experiment=experiment or os.environ.get("RLVR_EXPERIMENT") or None,
            max_steps=self.max_steps,
            url=url,
            token=token,
            key=key or run_key(rlvr_project, project_name, experiment_name, self.config),
            spool_dir=spool_dir,
        )
        folder = _config_value(self.config, "trainer", "rollout_data_dir")
        wanted = os.environ.get("RLVR_VERL_ROLLOUTS", "1") != "0"
        self.dumps = _DumpFollower(Path(str(folder))) if folder and wanted else None
        atexit.register(self._at_exit)

    def log(self, data: Mapping[str, Any], step: int) -> None:
        with self._lock:
            if self._finished:
                return
            self._guarded(lambda: self._log(data, int(step)))

    def finish(self, exit_code: int = 0, timeout_s: float = 120.0) -> None:
        """The run's outcome: succeeded for exit code 0 (verl v0.9's ``Tracking.finish``), else failed. verl
        before v0.9 only deletes its ``Tracking`` (also after a crash): a run that stopped before
        ``total_training_steps`` is then marked failed. Waits up to ``timeout_s`` for an unreachable server;
        what it did not take stays in the spool."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            self._guarded(lambda: self._send_dumps(before_step=None))
            status, message = self._outcome(exit_code)
            self._guarded(lambda: self.run.finish(status, error_message=message, timeout_s=timeout_s))

    def _log(self, data: Mapping[str, Any], step: int) -> None:
        values, skipped = map_metrics(data)
        fresh = set(skipped) - self.skipped
        if fresh:
            self.skipped |= fresh
            logger.info(
                "RLVR Studio: verl metrics that are not numbers are not sent: %s", ", ".join(sorted(fresh))
            )
        if values:
            self.run.log_metrics(step, values)
        self.last_step = step if self.last_step is None else max(self.last_step, step)
        self._send_dumps(before_step=step)

    def _send_dumps(self, before_step: int | None) -> None:
        if self.dumps is None:
            return
        for step, path in self.dumps.due(before_step):
            rollouts = self.dumps.read(step, path)
            for start in range(0, len(rollouts), DUMP_CHUNK):
                if start:  # the client cuts what is queued into one batch, and the server takes 1,024 rollouts a batch
                    self.run.flush(timeout_s=60.0, stop_when_offline=True)
                chunk = rollouts[start : start + DUMP_CHUNK]
                self.run.log_rollouts(
                    step, [{k: v for k, v in r.fields.items() if k != "step"} for r in chunk]
                )
            accuracy = dump_metrics(rollouts, rewards=False)
            if accuracy:
                self.run.log_metrics(step, accuracy)

    def _outcome(self, exit_code: int) -> tuple[str, str]:
        if exit_code != 0:
            return "failed", f"verl closed its logger with exit code {exit_code}: see verl's log"
        if _config_value(self.config, "trainer", "val_only"):
            return "succeeded", ""
        if self.max_steps and (self.last_step or 0) < self.max_steps:
            return "failed", (
                f"verl stopped at step {self.last_step or 0} of {self.max_steps} without saying why "
                "(see verl's log); a resumed run continues this one"
            )
        return "succeeded", ""

    def _guarded(self, action: Callable[[], object]) -> None:
        try:
            action()
        except (IngestError, OSError, ValueError) as err:
            logger.warning("RLVR Studio: %s (training goes on)", err)

    def _at_exit(self) -> None:
        if not self._finished:  # the process ends without verl having closed its logger
            self.finish(exit_code=1, timeout_s=10.0)


def _verl_version() -> str:
    module = sys.modules.get("verl")
    return str(getattr(module, "__version__", "")) if module is not None else ""


# --- teaching verl's Tracking the name "rlvr" ----------------------------------------------------------


def install(tracking_cls: type | None = None) -> type:
    """Add the backend ``rlvr`` to verl's ``Tracking`` (``verl.utils.tracking.Tracking`` unless given); safe to
    call twice. verl's own constructor asserts every name of ``trainer.logger`` is in ``supported_backend``
    and builds the backends it knows; this wraps it to add ours, and wraps ``finish`` (v0.9) or ``__del__``
    (earlier) to close ours."""
    if tracking_cls is None:
        from verl.utils.tracking import Tracking

        tracking_cls = Tracking
    if getattr(tracking_cls, "_rlvr_installed", False):
        return tracking_cls
    cls: Any = tracking_cls
    cls.supported_backend = [*cls.supported_backend, BACKEND]
    original_init = cls.__init__

    def __init__(
        self: Any,
        project_name: str,
        experiment_name: str,
        default_backend: Any = "console",
        config: Any = None,
    ) -> None:
        original_init(self, project_name, experiment_name, default_backend, config)
        names = [default_backend] if isinstance(default_backend, str) else list(default_backend)
        if BACKEND in names:
            self.logger[BACKEND] = RlvrTracking(project_name, experiment_name, config)

    cls.__init__ = __init__
    closer = "finish" if hasattr(cls, "finish") else "__del__"
    original_close = getattr(cls, closer, None)

    def close(self: Any, exit_code: int = 0) -> None:
        try:
            if original_close is not None:
                original_close(self, exit_code) if closer == "finish" else original_close(self)
        finally:
            backend = getattr(self, "logger", {}).get(BACKEND)
            if backend is not None:
                backend.finish(exit_code)

    setattr(cls, closer, close)
    cls._rlvr_installed = True
    return tracking_cls


class _InstallOnImport(importlib.abc.MetaPathFinder):
    """Runs ``install`` once ``verl.utils.tracking`` has been imported (verl imports this module from its own
    ``__init__``, before that module exists; importing it from there could meet a half-made package)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != "verl.utils.tracking":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            original_exec(module)
            install(module.Tracking)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        sys.meta_path.remove(self)
        return spec


def install_when_imported() -> None:
    """``install`` now if verl's tracking module is loaded, else as soon as it is."""
    module = sys.modules.get("verl.utils.tracking")
    if module is not None:
        install(module.Tracking)
    elif not any(isinstance(f, _InstallOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _InstallOnImport())


# verl imports the modules named in VERL_USE_EXTERNAL_MODULES from its __init__ (every Ray worker too):
# naming this module there is how a user turns the backend on. Imported any other way, it changes nothing.
if THIS_MODULE in os.environ.get("VERL_USE_EXTERNAL_MODULES", "").split(","):
    install_when_imported()
