"""What methods read of the config and of the step, as protocols: methods never import trainer.config or
trainer.step (the config imports the methods to build its schema), so there is no circle, not even for the
type checker. ``AlgorithmConfig``, ``TeacherConfig``, ``ExperimentConfig`` and ``TeacherSignals`` satisfy these; the
episode views are what turn credit and tool shaping read of trainer/environments/records.py (which imports torch at
package level, so methods never import it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from torch import Tensor

    from trainer.methods.axes import ActiveMethod


class Choice(Protocol):
    """A config field that chose a method: its name and its validated params."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> Any: ...

    def active(self) -> ActiveMethod: ...


class ClipSettings(Protocol):
    """The clip knobs every policy loss shares (the ``algorithm`` section)."""

    @property
    def epsilon(self) -> float: ...

    @property
    def clip_high(self) -> float: ...

    @property
    def dual_clip(self) -> bool: ...

    @property
    def dual_clip_c(self) -> float: ...


class ChoosesAdvantage(Protocol):
    @property
    def advantage_estimator(self) -> Choice: ...


class ChoosesFusion(Protocol):
    @property
    def fusion(self) -> Choice: ...


class TeacherSignalsView(Protocol):
    """The teacher's view of the sampled tokens (trainer/step/teacher.py builds it), [N, T] each."""

    @property
    def gap(self) -> Tensor: ...  # log pi_teacher - log pi_old

    @property
    def mask(self) -> Tensor: ...


class RunConfig(Protocol):
    """The parts of an experiment config that prompt samplers and reward shaping read."""

    @property
    def seed(self) -> int: ...

    @property
    def training(self) -> Any: ...

    @property
    def data(self) -> Any: ...

    @property
    def rollout(self) -> Any: ...

    @property
    def shaping(self) -> Any: ...

    @property
    def budget(self) -> Any: ...


class ToolCallView(Protocol):
    """One tool call of a model turn (trainer/environments/records.py ``ToolCallRecord``)."""

    @property
    def status(self) -> str: ...  # ok, error, timeout or invalid


class TurnView(Protocol):
    """One model turn of an episode (``TurnRecord``): its tokens in completion coordinates, its reward, its calls."""

    @property
    def model_span(self) -> tuple[int, int]: ...

    @property
    def reward(self) -> float | None: ...

    @property
    def tool_calls(self) -> Sequence[ToolCallView]: ...


class EpisodeView(Protocol):
    """One multi-turn episode (``EpisodeRecord``): its model turns in order."""

    @property
    def turns(self) -> Sequence[TurnView]: ...
