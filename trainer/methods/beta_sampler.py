"""Beta-posterior prompt selection by expected learnability (ThinkPrior, shared/seeds 001:L23).

Each prompt i has a Beta(a_i, b_i) belief about the policy's pass rate p_i. It starts from Beta(1, 1), or,
with an offline prior file of an anchor model's verifier-scored pass rates q_i, from
Beta(1 + s q_i, 1 + s (1 - q_i)) with s = ``budget.prior_strength``; after every generated group it is
updated with the group's successes and failures (a += successes, b += failures). A step picks the
prompts with the highest learnability p(1 - p), the reward variance of a 0/1 reward, which is what makes
a GRPO group non-silent: either at a p drawn from each posterior (Thompson sampling) or in expectation,
E[p(1 - p)] = a b / ((a + b)(a + b + 1)).

Differs from ThinkPrior: the paper does not give its learnability form or prior strength; we use
p(1 - p) and pseudo-counts. The posterior never forgets, so a prompt the policy has learned keeps its
old failures until enough new successes outweigh them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trainer.data.sampler import ids_digest
from trainer.errors import CheckpointError, DataError
from trainer.samples import Sample


def load_pass_rates(path: str | Path) -> dict[str, float]:
    """Read ``{id: pass_rate}`` (a JSON object) or JSONL lines ``{"id": ..., "pass_rate": ...}``."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"budget.prior_file {p} does not exist: give a JSON/JSONL file of anchor pass rates")
    text = p.read_text(encoding="utf-8")
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = None  # not one JSON document: read it as JSONL
    if isinstance(data, dict) and set(data) == {"id", "pass_rate"}:
        data = None  # a JSONL file of one line
    if data is not None and not isinstance(data, dict):
        raise DataError(f"{p}: a JSON prior file must be an object {{prompt id: pass rate}}")
    rates: dict[str, Any] = data if data is not None else _jsonl_rates(p, text)
    out = {}
    for key, value in rates.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 <= value <= 1
            or math.isnan(value)
        ):
            raise DataError(
                f"{p}: the pass rate of prompt {key!r} is {value!r}; pass rates are numbers in [0, 1]"
            )
        out[str(key)] = float(value)
    return out


def _jsonl_rates(p: Path, text: str) -> dict[str, Any]:
    rates: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(
                f'{p} line {number} is not JSON ({err}): write one {{"id", "pass_rate"}} object per line'
            ) from None
        if not isinstance(row, dict) or "id" not in row or "pass_rate" not in row:
            raise DataError(
                f'{p} line {number}: each line needs "id" and "pass_rate" keys, got {line[:80]!r}'
            )
        rates[str(row["id"])] = row["pass_rate"]
    return rates


class BetaPromptSampler:
    """Selects the ``count`` prompts of highest (sampled or expected) learnability under a Beta posterior.

    >>> s = BetaPromptSampler([Sample(id=str(i), prompt=str(i)) for i in range(3)], 1, seed=0,
    ...                       prior={"0": 1.0, "1": 0.5, "2": 0.0}, prior_strength=8, thompson=False)
    >>> [x.id for x in s.next_batch()]
    ['1']
    """

    def __init__(
        self,
        samples: Sequence[Sample],
        prompts_per_step: int,
        seed: int,
        prior: dict[str, float] | None = None,
        prior_strength: float = 8.0,
        thompson: bool = True,
    ) -> None:
        if not samples:
            raise DataError("the dataset has no samples: there is nothing to train on")
        self.samples = list(samples)
        self.prompts_per_step = prompts_per_step
        self.seed = seed
        self.thompson = thompson
        self._index = {s.id: i for i, s in enumerate(self.samples)}
        self.alpha = np.ones(len(self.samples))
        self.beta = np.ones(len(self.samples))
        if prior:
            known = [k for k in prior if k in self._index]
            if not known:
                raise DataError(
                    f"none of the {len(prior)} prompt ids in budget.prior_file match the dataset's ids "
                    f"(e.g. {next(iter(prior))!r} vs {self.samples[0].id!r}): score the same data, or set data.id_field"
                )
            for key in known:
                self.alpha[self._index[key]] += prior_strength * prior[key]
                self.beta[self._index[key]] += prior_strength * (1 - prior[key])
        self._rng = np.random.default_rng(seed)
        self._ids_sha256 = ids_digest(self.samples)
        self.rollouts_observed = 0

    def learnability(self) -> np.ndarray:
        """Expected p(1 - p) of every prompt under its posterior. [num_samples]"""
        a, b = self.alpha, self.beta
        return a * b / ((a + b) * (a + b + 1))

    def next_batch(self, count: int | None = None) -> list[Sample]:
        count = min(self.prompts_per_step if count is None else count, len(self.samples))
        if self.thompson:
            p = self._rng.beta(self.alpha, self.beta)
            score = p * (1 - p)
        else:
            # A seeded random tie-break, so equal beliefs do not always favour the first prompts.
            score = self.learnability() + self._rng.random(len(self.samples)) * 1e-12
        chosen = np.argsort(-score, kind="stable")[:count]
        return [self.samples[int(i)] for i in chosen]

    def posterior(self, sample_id: str) -> tuple[float, float]:
        """(alpha, beta) of the prompt's success-rate posterior (the SARA allocator's prior)."""
        i = self._index[sample_id]
        return float(self.alpha[i]), float(self.beta[i])

    def observe(self, outcomes: Sequence[tuple[str, int, int]]) -> None:
        """Posterior update with each generated group's ``(id, successes, rollouts)``."""
        for sample_id, successes, n in outcomes:
            i = self._index[sample_id]
            self.alpha[i] += successes
            self.beta[i] += n - successes
            self.rollouts_observed += n

    def state_dict(self) -> dict[str, Any]:
        return {
            "kind": "beta_learnability",
            "alpha": self.alpha.tolist(),
            "beta": self.beta.tolist(),
            "rng": self._rng.bit_generator.state,
            "seed": self.seed,
            "num_samples": len(self.samples),
            "ids_sha256": self._ids_sha256,
            "rollouts_observed": self.rollouts_observed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("kind") != "beta_learnability":
            raise CheckpointError(
                "the checkpoint's prompt sampler is not 'beta_learnability': resume with the original budget.prompt_sampler"
            )
        now = {"seed": self.seed, "num_samples": len(self.samples), "ids_sha256": self._ids_sha256}
        for key, value in now.items():
            if state.get(key) != value:
                raise CheckpointError(
                    f"the checkpoint's prompt sampler was saved with {key}={state.get(key)!r} but this run has "
                    f"{key}={value!r}: resume with the same data and seed, or start a new run"
                )
        self.alpha = np.asarray(state["alpha"], dtype=float)
        self.beta = np.asarray(state["beta"], dtype=float)
        self._rng.bit_generator.state = state["rng"]
        self.rollouts_observed = int(state["rollouts_observed"])
