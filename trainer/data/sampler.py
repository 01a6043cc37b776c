"""Which prompts each training step sees: epochs of a seeded permutation, resumable to the prompt.

Each epoch visits every sample once, in an order derived only from ``(seed, epoch)``; a batch that runs
past the end of an epoch continues into the next one, so every batch has ``prompts_per_step`` prompts
even when the dataset is smaller than that. Because the order is a pure function of ``(seed, epoch)``,
the state is two integers: a run resumed from ``state_dict()`` draws exactly the prompts an
uninterrupted run would have drawn.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any, Protocol

from trainer.errors import CheckpointError, DataError
from trainer.samples import Sample


class PromptSource(Protocol):
    """The prompt-sampler seam (registry ``trainer.methods.prompt_samplers.PROMPT_SAMPLERS``).

    ``observe`` receives every generated group's outcome (also dropped or abandoned ones) so that an
    adaptive sampler can update its beliefs; ``rollouts_observed`` is the run's cumulative rollout count
    (``budget/cumulative_rollouts``), kept here because it is saved and restored with the sampler state.
    """

    prompts_per_step: int
    rollouts_observed: int

    def next_batch(self, count: int | None = None) -> list[Sample]: ...

    def observe(self, outcomes: Sequence[tuple[str, int, int]]) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class PromptSampler:
    """Uniform prompt sampler without replacement within an epoch (the usual GRPO data loader order).

    >>> s = PromptSampler([Sample(id=str(i), prompt=str(i)) for i in range(3)], prompts_per_step=2, seed=0, shuffle=False)
    >>> [x.id for x in s.next_batch()], [x.id for x in s.next_batch()], s.epoch
    (['0', '1'], ['2', '0'], 1)
    """

    def __init__(self, samples: Sequence[Sample], prompts_per_step: int, seed: int, shuffle: bool) -> None:
        if not samples:
            raise DataError("the dataset has no samples: there is nothing to train on")
        if prompts_per_step < 1:
            raise ValueError(f"prompts_per_step must be at least 1, got {prompts_per_step}")
        self.samples = list(samples)
        self.prompts_per_step = prompts_per_step
        self.seed = seed
        self.shuffle = shuffle
        self._epoch = 0
        self._position = 0  # index into the current epoch's order of the next prompt to draw
        self._order = self._epoch_order(0)
        self._ids_sha256 = ids_digest(self.samples)
        self.rollouts_observed = 0

    @property
    def epoch(self) -> int:
        """The epoch the next prompt comes from (0 until every sample has been drawn once)."""
        return self._epoch

    def next_batch(self, count: int | None = None) -> list[Sample]:
        """The next ``count`` (default ``prompts_per_step``) samples, continuing into the next epoch when
        this one ends. Dynamic sampling asks for extra prompts to refill a step this way."""
        batch = []
        for _ in range(self.prompts_per_step if count is None else count):
            if self._position == len(self._order):
                self._epoch, self._position = self._epoch + 1, 0
                self._order = self._epoch_order(self._epoch)
            batch.append(self.samples[self._order[self._position]])
            self._position += 1
        return batch

    def observe(self, outcomes: Sequence[tuple[str, int, int]]) -> None:
        """``(sample id, successes, rollouts)`` per generated group: the uniform order ignores outcomes."""
        self.rollouts_observed += sum(n for _, _, n in outcomes)

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state; ``ids_sha256`` lets a resume notice that the data changed underneath."""
        return {
            "epoch": self._epoch,
            "position": self._position,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "num_samples": len(self.samples),
            "ids_sha256": self._ids_sha256,
            "rollouts_observed": self.rollouts_observed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state``; CheckpointError if it was saved for other data or another seed."""
        expected = {
            k: v for k, v in self.state_dict().items() if k not in ("epoch", "position", "rollouts_observed")
        }
        for key, value in expected.items():
            if key in state and state[key] != value:
                raise CheckpointError(
                    f"the checkpoint's prompt sampler was saved with {key}={state[key]!r} but this run has "
                    f"{key}={value!r}: resume with the same data and seed, or start a new run"
                )
        epoch, position = int(state["epoch"]), int(state["position"])
        if epoch < 0 or not 0 <= position <= len(self.samples):
            raise CheckpointError(f"the checkpoint's prompt sampler state is out of range: {state}")
        self._epoch, self._position = epoch, position
        self._order = self._epoch_order(epoch)
        self.rollouts_observed = int(
            state.get("rollouts_observed", 0)
        )  # absent in checkpoints before issue 5

    def _epoch_order(self, epoch: int) -> list[int]:
        order = list(range(len(self.samples)))
        if self.shuffle:
            # random.seed hashes a str with SHA-512, so unlike hash() the order is the same in every process.
            random.Random(f"prompt-sampler:{self.seed}:{epoch}").shuffle(order)
        return order


def ids_digest(samples: Sequence[Sample]) -> str:
    h = hashlib.sha256()
    for sample in samples:
        h.update(sample.id.encode("utf-8") + b"\0")
    return h.hexdigest()
