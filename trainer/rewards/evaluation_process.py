"""The ``process`` part of a reward-source evaluation: which step scorers are evaluated as process reward models
(PRMs), and how. Torch-free settings only; the statistics are trainer/process/evaluation.py's.

A process source is a step scorer of trainer/process/scorers.py (``oracle_chain``, ``prm``, ``monte_carlo``) given
in the job's ``sources`` as ``{"process_scorer": {"name": ..., "params": {...}}}`` (a project's PRM version,
``{"reward_model_version": id}``, becomes the same entry on the web side). For every process source the part
computes, on the Best-of-N samples the job generated (each cut into steps by ``segmenter``):

- ProcessBench's first-error accuracies and F1 (Zheng et al. 2024, "ProcessBench: Identifying Process Errors in
  Mathematical Reasoning") against the chain oracle's first wrong step, or against an uploaded step-labelled file
  (Math-Shepherd's or PRM800K's format) when ``labels`` names one: then the file's own steps are scored;
- step calibration (reliability bins and the expected calibration error, Naeini et al. 2015);
- the PRM Best-of-N curve (the solution's score is the ``aggregate`` of its step scores, ``min`` as in Lightman et
  al. 2023, "Let's Verify Step by Step"), beside the scalar sources' (ORM) curves and majority vote on the same
  samples.

Monte-Carlo values (Math-Shepherd) cost ``k`` continuations per step of every sample, so ``k`` is bounded tighter
here (``MAX_MC_K``) than in training, and ``max_prefixes`` defaults to ``MC_MAX_PREFIXES`` so every step is valued.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from trainer.bounds import MAX_NAME_CHARS, BoundedModel
from trainer.config.process_reward import ScorerChoice, SegmenterChoice

PROCESS_SCORER_KEY = "process_scorer"  # a source given as a step scorer: {"process_scorer": {name, params}}
PROCESS_KIND = "process"  # a stored source entry's "kind" when it is a step scorer (scalar entries have none)
EVALUABLE_SCORERS = ("oracle_chain", "prm", "monte_carlo")  # stateless scorers: they score a finished sample
MAX_MC_K = 16
MC_MAX_PREFIXES = 8192


class StepLabelsSpec(BoundedModel):
    """An uploaded step-labelled file of the project: the reference for first-error F1 and calibration."""

    dataset: int = Field(ge=1, le=2**63 - 1, description="An uploaded data file of the project (dataset id).")
    format: Literal["math_shepherd", "prm800k"] = Field(
        "math_shepherd",
        description="Math-Shepherd's 'input'/'label' rows with step tags, or PRM800K's ratings.",
    )
    max_examples: int = Field(1000, ge=1, le=20_000, description="At most this many labelled solutions.")


class ProcessSpec(BoundedModel):
    """What the process part computes for every process source (module docstring)."""

    problems: int | None = Field(
        None,
        ge=1,
        le=2000,
        description="The first this many Best-of-N problems are scored step by step; null: all.",
    )
    samples_per_problem: int | None = Field(
        None,
        ge=1,
        le=64,
        description="The first this many samples of each problem; null: all of best_of_n.n.",
    )
    segmenter: SegmenterChoice = Field(
        default_factory=SegmenterChoice,
        description="Where each sample's steps end (as process_reward.segmenter).",
    )
    aggregate: Literal["min", "last", "product", "mean"] = Field(
        "min",
        description="A solution's PRM Best-of-N score from its step scores ('min': Let's Verify Step by Step).",
    )
    threshold: float = Field(
        0.5, gt=0.0, lt=1.0, description="A step scored below this is the predicted first wrong step."
    )
    bins: int = Field(
        10, ge=2, le=50, description="Reliability bins of the calibration (equal width over [0, 1])."
    )
    labels: StepLabelsSpec | None = Field(
        None, description="An uploaded step-labelled file: first-error F1 and calibration against its labels."
    )


class ProcessScorerSource(BoundedModel):
    """``{"process_scorer": {"name", "params"}, "label"?}``: a step scorer as an evaluation source."""

    process_scorer: ScorerChoice
    label: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)

    @model_validator(mode="before")
    @classmethod
    def _evaluation_defaults(cls, data: Any) -> Any:
        """Monte Carlo values every step unless told otherwise (training's default continues 256 prefixes)."""
        if isinstance(data, dict) and isinstance(data.get(PROCESS_SCORER_KEY), dict):
            scorer = data[PROCESS_SCORER_KEY]
            if scorer.get("name") == "monte_carlo" and isinstance(scorer.get("params", {}), dict):
                params = {"max_prefixes": MC_MAX_PREFIXES, **(scorer.get("params") or {})}
                data = {**data, PROCESS_SCORER_KEY: {**scorer, "params": params}}
        return data

    @model_validator(mode="after")
    def _evaluable(self) -> ProcessScorerSource:
        name = self.process_scorer.name
        if name not in EVALUABLE_SCORERS:
            raise ValueError(
                f"process_scorer {name!r} cannot be evaluated; choose {', '.join(EVALUABLE_SCORERS)}"
            )
        if name == "monte_carlo" and self.process_scorer.params.k > MAX_MC_K:
            raise ValueError(
                f"process_scorer.params.k is {self.process_scorer.params.k}: an evaluation continues every step of "
                f"every sample k times, so k may be at most {MAX_MC_K} here"
            )
        return self

    def entry(self) -> dict[str, Any]:
        """The stored source entry (its params with every default filled in)."""
        name = self.process_scorer.name
        return {
            "name": name,
            "params": self.process_scorer.params.model_dump(mode="json"),
            "label": self.label or name,
            "kind": PROCESS_KIND,
        }


def is_process_entry(entry: Any) -> bool:
    """A source entry that is a step scorer (as stored: ``kind: process``; as given: ``process_scorer``)."""
    return isinstance(entry, dict) and (entry.get("kind") == PROCESS_KIND or PROCESS_SCORER_KEY in entry)


def process_source_entry(item: dict[str, Any], field: str = "source") -> dict[str, Any]:
    """The stored entry of a ``{"process_scorer": ...}`` source; ValueError naming the first bad field."""
    try:
        return ProcessScorerSource.model_validate(item).entry()
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join([field, *(str(p) for p in e["loc"])])
        raise ValueError(f"{where}: {str(e['msg']).removeprefix('Value error, ')}") from None
