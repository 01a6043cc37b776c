"""Process reward model (PRM) training jobs: the step labels a job may name, checked; start one; finish one.

A PRM scores every step of a solution (Lightman et al. 2023, "Let's Verify Step by Step"). The same
``POST /api/projects/<id>/reward-models/<rm id>/train/`` that trains a Bradley-Terry model trains a PRM when its body
names ``labels`` instead of ``source``; the job's ``config`` is then ``{"labels": {...}, "base_model": ...,
"hyper": {...}}`` with the hyper-parameters validated by the trainer's torch-free ``PRMHyperParams`` and every model
confined as an experiment's. The labels come from:

- ``oracle``: ``samples_per_problem`` samples of ``policy`` on ``problems`` chain-arithmetic problems (none of them a
  problem of the ``builtin:chain_arithmetic`` benchmark), cut at lines and labelled by the chain task's own step check
  (1 before the verifier's first wrong step, 0 from it on);
- ``monte_carlo``: the same samples, each step valued by ``k`` continuations of ``policy`` from its end (Wang et al.
  2024, "Math-Shepherd": the share that reach the right answer, thresholded or kept soft by the hyper-parameters);
- ``file``: an uploaded data file of the project in Math-Shepherd's or PRM800K's step-labelled format.

The worker (workers/tasks_prm.py) builds the examples with trainer.process.prm_training, trains into
RLVR_HOME/reward-models/job-<id>/ (written beside and renamed in: a folder that exists is complete) and calls
``prm_training_finish``, which creates the PRM version with its held-out figures. Cancelling and reading jobs are
the training module's (training_services.py), whatever the kind of model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.db import transaction
from django.utils import timezone
from pydantic import Field, TypeAdapter, ValidationError, model_validator

from trainer.bounds import MAX_SEED, BoundedModel
from trainer.process.prm_config import PRMHyperParams
from webapp.core.errors import InvalidInput
from webapp.datafiles.models import Dataset
from webapp.experiments.config_paths import confine_model
from webapp.rewards.models import JobStatus, RewardJob, RewardModel, RewardModelVersion, SourceKind
from webapp.rewards.services import require_family, version_create_trained
from webapp.rewards.training_services import START_TRAINING, checked_base_model, training_job_create
from webapp.teams.permissions import require_role
from webapp.teams.selectors import AnyUser

MAX_ROLLOUTS = 50_000  # problems x samples_per_problem: what one job samples before it trains
MAX_CONTINUATIONS = 400_000  # ... x k: Monte-Carlo continuations (each rollout has a few steps)


class _SampledLabels(BoundedModel):
    """Labels of a policy's own samples of chain-arithmetic problems (the fields oracle and Monte Carlo share)."""

    policy: str = Field(
        min_length=1, max_length=1000,
        description="The policy whose completions are labelled: tiny:<name>, checkpoint:<id> of this project, or a "
        "folder under the model roots.",
    )  # fmt: skip
    problems: int = Field(200, ge=2, le=20_000, description="Chain-arithmetic problems sampled.")
    samples_per_problem: int = Field(2, ge=1, le=64, description="Completions of each problem.")
    level: Literal["easy", "medium", "hard", "mixed"] = Field("easy", description="The problems' level.")
    max_new_tokens: int = Field(96, ge=8, le=2048, description="Tokens per completion.")
    temperature: float = Field(0.7, gt=0.0, le=2.0, description="Sampling temperature.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds the problems drawn and the sampling.")

    @model_validator(mode="after")
    def _bounded_work(self) -> _SampledLabels:
        if self.problems * self.samples_per_problem > MAX_ROLLOUTS:
            raise ValueError(
                f"problems x samples_per_problem is {self.problems * self.samples_per_problem:,}: at most "
                f"{MAX_ROLLOUTS:,} completions per job (fewer problems or samples)"
            )
        return self


class OracleLabels(_SampledLabels):
    source: Literal["oracle"]


class MonteCarloLabels(_SampledLabels):
    source: Literal["monte_carlo"]
    k: int = Field(4, ge=1, le=64, description="Continuations from each step's end (Math-Shepherd's N).")

    @model_validator(mode="after")
    def _bounded_continuations(self) -> MonteCarloLabels:
        if self.problems * self.samples_per_problem * self.k > MAX_CONTINUATIONS:
            raise ValueError(
                f"problems x samples_per_problem x k is {self.problems * self.samples_per_problem * self.k:,}: at "
                f"most {MAX_CONTINUATIONS:,} continuation batches per job (fewer problems, samples or k)"
            )
        return self


class FileLabels(BoundedModel):
    source: Literal["file"]
    dataset: int = Field(ge=1, le=2**63 - 1, description="An uploaded data file of this project (its id).")
    format: Literal["math_shepherd", "prm800k"] = Field(description="The file's step-label format.")
    neutral: float = Field(1.0, ge=0.0, le=1.0, description="prm800k: the label of a neutral (0) rating.")
    max_examples: int = Field(100_000, ge=1, le=100_000, description="Examples read from the file at most.")


Labels = Annotated[OracleLabels | MonteCarloLabels | FileLabels, Field(discriminator="source")]
_LABELS: TypeAdapter[OracleLabels | MonteCarloLabels | FileLabels] = TypeAdapter(Labels)


def prm_training_start(
    *,
    reward_model: RewardModel,
    actor: AnyUser,
    labels: Any,
    base_model: Any,
    hyper: Any = None,
    name: str = "",
) -> RewardJob:
    """Queue a PRM training job for a new version of ``reward_model`` (one whose versions are PRMs, or none yet)."""
    project = reward_model.project
    require_role(project=project, user=actor, minimum=START_TRAINING)
    require_family(reward_model=reward_model, process=True)
    checked = checked_labels(labels, project=project)
    config = {
        "labels": checked,
        "base_model": checked_base_model(base_model, project=project),
        "hyper": checked_prm_hyper(hyper),
    }
    return training_job_create(reward_model=reward_model, actor=actor, config=config, name=name)


def checked_labels(labels: Any, *, project: Any, resolve: bool = False) -> dict[str, Any]:
    """The labels spec with its defaults filled in, its policy confined and its data file the project's; with
    ``resolve`` (the worker) the policy is what the trainer loads and ``path`` is the data file on the server."""
    if not isinstance(labels, dict) or labels.get("source") not in ("oracle", "monte_carlo", "file"):
        message = (
            'Name where the step labels come from: {"source": "oracle", "policy": ...}, {"source": "monte_carlo", '
            '"policy": ..., "k": 4} or {"source": "file", "dataset": id, "format": "math_shepherd"|"prm800k"}.'
        )
        raise InvalidInput(message, {"labels.source": [message]})
    try:
        spec = _LABELS.validate_python(labels).model_dump(mode="json")
    except ValidationError as err:
        raise _invalid("Some label settings are invalid", "labels", err, skip=1) from None
    if spec["source"] == "file":
        dataset = Dataset.objects.filter(pk=spec["dataset"], project=project).first()
        if dataset is None:
            message = (
                f"labels.dataset {spec['dataset']} is not an uploaded data file of this project: upload the "
                f"step-labelled file (POST /api/projects/{project.pk}/datasets/) and name its id"
            )
            raise InvalidInput(message, {"labels.dataset": [message]})
        return {**spec, "path": dataset.path} if resolve else spec
    spec["policy"] = confine_model(
        spec["policy"].strip(), project=project, resolve=resolve, field="labels.policy"
    )
    return spec


def checked_prm_hyper(hyper: Any) -> dict[str, Any]:
    """``PRMHyperParams`` with every default filled in; InvalidInput naming each bad field (``hyper.<name>``)."""
    if hyper is not None and not isinstance(hyper, dict):
        raise InvalidInput("hyper must be an object of hyper-parameters.", {"hyper": ["Not an object."]})
    try:
        return PRMHyperParams.model_validate(hyper or {}).model_dump(mode="json")
    except ValidationError as err:
        raise _invalid("Some hyper-parameters are invalid", "hyper", err) from None


def _invalid(what: str, prefix: str, err: ValidationError, skip: int = 0) -> InvalidInput:
    """InvalidInput keyed ``<prefix>.<field>``; ``skip`` drops the union's tag from each location."""
    fields: dict[str, list[str]] = {}
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"][skip:])
        fields.setdefault(f"{prefix}.{where}" if where else prefix, []).append(
            str(e["msg"]).removeprefix("Value error, ")
        )
    return InvalidInput(f"{what}: " + "; ".join(f"{k}: {v[0]}" for k, v in fields.items()), fields)


# ---------------------------------------------------------------------------------------------------- the worker


def prm_labels_for_worker(*, job: RewardJob) -> dict[str, Any]:
    """The job's labels checked again on the worker (it trusts nothing stored): the policy as the trainer loads
    it, a file source's server path. InvalidInput when its data file or policy is gone."""
    return checked_labels(job.config["labels"], project=job.project, resolve=True)


def prm_training_finish(
    *, job: RewardJob, folder: str, result: dict[str, Any], progress: dict[str, Any]
) -> RewardModelVersion:
    """Create the PRM version from the trained folder (its held-out figures as its metrics) and mark the job
    succeeded, in one transaction."""
    assert job.reward_model is not None  # a training job always has its reward model
    keys = (
        "held_out_step_accuracy", "held_out_first_error_accuracy", "held_out_first_error_f1",
        "initial_held_out_step_accuracy", "majority_step_accuracy", "majority_first_error_accuracy",
        "held_out_steps", "held_out_examples", "train_examples", "train_positive_share", "steps",
    )  # fmt: skip
    metrics = {key: result.get(key) for key in keys}
    params = {"kind": "token_classification", "max_length": job.config["hyper"]["max_length"]}
    with transaction.atomic():
        version = version_create_trained(
            job.reward_model, folder, params, job, metrics, job.created_by, kind=SourceKind.PRM
        )
        RewardJob.objects.filter(pk=job.pk).update(
            status=JobStatus.SUCCEEDED, result=result, output_version=version, finished_at=timezone.now(),
            progress={**progress, "phase": "succeeded"},
        )  # fmt: skip
    return version
