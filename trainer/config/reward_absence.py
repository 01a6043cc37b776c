"""The ``reward_absence`` section: what a score that could not be computed means for training.

A reward source that calls a model or an endpoint (``reward_model``, ``judge``) returns an *absent* score when the
call fails or its output cannot be parsed (trainer/verifiers/base.py ``absent_result``): never a silent 0, which
would teach the policy that whatever it wrote was wrong. Torch-free (the web process validates configs).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainer.bounds import BoundedModel

AbsenceMode = Literal["drop", "zero", "fail"]


class RewardAbsenceConfig(BoundedModel):
    """What an absent score of a reward source with a non-zero weight does to its sample."""

    mode: AbsenceMode = Field(
        "drop",
        description="'drop': a sample with an absent score is left out of its group's statistics (the advantage "
        "estimator sees the group's other samples; its advantage is 0 and it adds nothing to the loss); 'zero': "
        "the absent score counts as 0 (the sample trains as if the source gave 0); 'fail': as 'drop', but the run "
        "stops when a source's absent fraction in a step exceeds fail_above.",
    )
    fail_above: float = Field(
        0.5,
        ge=0,
        le=1,
        description="mode 'fail': the largest share of a step's samples a source may leave unscored before the run "
        "stops, naming the source, the step and the last reason.",
    )
