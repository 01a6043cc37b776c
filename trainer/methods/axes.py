"""The method seam: the named stages of a training step, and one registry ("axis") per choice a config makes.

A *stage* is a point in the step where methods act (``STAGES``, in step order; trainer/step/step.py runs
them). An *axis* is one choice in the config: the config field that names a method (``algorithm.token_credit``,
``budget.allocator``, ...) and the registry of methods that can fill it. A method is registered on its axis
under a name, with a pydantic model of its parameters and one function (a *hook*) per stage it acts in::

    @TOKEN_CREDIT.method("gmts", params=GMTSParams)        # the axis's own stage: token_credit
    def gmts(advantages, inputs, params): ...

    @POLICY_LOSSES.method("segment", stage="loss_inputs")   # a second hook of the same method
    def hispo_segments(state, params): ...

The config field of an axis accepts the name (``token_credit: ecr``) or ``{name, params}``; the params are
validated by the method's own model when the config is built, and the JSON schema lists every name with
its one-line description (trainer/config/choice.py). Adding a method is one module in trainer/methods/
(imported by the package, ``trainer/methods/__init__.py``): no edit to the step, the config or the form.

Each stage fixes its hook signature (below, and in the stage's docstring in trainer/step/stages.py).
Pure Python: the web process builds the config schema from these registries without torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from trainer.bounds import BoundedModel
from trainer.errors import ConfigError

# The stages of one training step, in order, with what their hooks receive and return.
STAGES: dict[str, str] = {
    "prompt_sampler": "which prompts a step draws: (samples, config, params) -> PromptSource",
    "allocator": "how many completions each prompt gets: (groups, generate, params, group_size) -> None",
    "reward_shaping": "rewards without labels and shaping terms, after the verifiers: (ShapingState, params) -> None",
    "reward_fusion": "teacher signal meets the rewards, before advantages: (rewards [N], signals, params, step) -> [N]",
    "advantage": "rewards -> one advantage per completion: (rewards [N], group_ids [N], params, lengths) -> [N]",
    "advantage_shaping": "advantages reshaped across a group (rarity): (advantages [N], texts, correct [N], "
    "group_ids [N], params) -> (advantages [N], metrics)",
    "loss_mask": "tokens taken out of the loss: (batch, tokenizer, params) -> keep mask [N, T]",
    "token_credit": "one advantage per completion -> per token: (advantages [N], CreditInputs, params) -> [N, T]",
    "token_fusion": "teacher signal meets the per-token advantages: (token_adv [N, T], mask, signals, params, step) "
    "-> [N, T]",
    "loss_inputs": "what the policy loss needs beyond advantages (segments, clip scales): (LossInputs, params) -> None",
    "policy_loss": "per-token surrogate: (logp, old_logp, adv, mask, algorithm, extras) -> PolicyLossOutput",
    "aggregation": "per-token loss -> the back-propagated scalar: (loss [n, T], mask [n, T], ctx) -> scalar",
    "regularizer": "per-token KL to the reference: (logp [n, T], ref_logp [n, T]) -> [n, T]",
}


# Questions the step asks a chosen method, registered like hooks (``stage="schedule"``).
QUERIES: dict[str, str] = {
    "schedule": "(params, step) -> bool: whether the method acts at this step (default: every step)",
    "needs_teacher": "(params, step) -> bool: the method reads teacher signals at this step",
}
HOOK_POINTS = {**STAGES, **QUERIES}


class NoParams(BoundedModel):
    """A method without parameters: ``params`` must be empty."""


P = TypeVar("P", bound=BoundedModel)
F = TypeVar("F", bound=Callable[..., Any])
H = TypeVar("H", bound=Callable[..., Any])  # a hook of any stage


@dataclass
class MethodEntry:
    """One method: its name on its axis, its parameters' model, a one-line description, its hooks by stage."""

    axis: str
    name: str
    params: type[BoundedModel]
    description: str
    hooks: dict[str, Callable[..., Any]] = field(default_factory=dict)
    checks: list[Callable[[Any, Any], None]] = field(default_factory=list)  # (config, params) -> None or ValueError

    def parse_params(self, raw: dict[str, Any] | BoundedModel | None) -> BoundedModel:
        """The validated parameters; errors name the axis, the method and the parameter."""
        if isinstance(raw, self.params):
            return raw
        try:
            return self.params.model_validate(raw or {})
        except ValidationError as err:
            problems = "; ".join(
                f"params.{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg'].removeprefix('Value error, ')}"
                for e in err.errors()
            )
            known = ", ".join(self.params.model_fields) or "none"
            raise ValueError(f"{self.axis} {self.name!r}: {problems} (its parameters: {known})") from None


def _first_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").strip().splitlines()]
    out: list[str] = []
    for line in lines:  # the first sentence-paragraph, joined
        if not line:
            break
        out.append(line)
    return " ".join(out).replace("``", "")  # plain text: it is shown in the form and the CLI


class Axis(Generic[F]):
    """The registry of one config choice: names -> methods, with the stage its primary hook runs in.

    ``get(name)`` returns the primary hook (so ``ADVANTAGES.get('grpo')(rewards, ids, params)`` works);
    ``entry(name)`` the whole method; ``choices()`` what the schema and the form list.
    """

    def __init__(
        self, kind: str, config_field: str, stage: str, default: str | None, description: str, many: bool = False
    ) -> None:
        if stage not in STAGES:
            raise ValueError(f"axis {kind!r}: unknown stage {stage!r}; stages: {', '.join(STAGES)}")
        self.kind = kind  # "advantage estimator": used in error messages
        self.config_field = config_field  # "algorithm.advantage_estimator"
        self.stage = stage
        self.default = default
        self.description = description
        self.many = many  # the config field is a list of choices (applied in order), default empty
        self._entries: dict[str, MethodEntry] = {}
        AXES[config_field] = self

    def method(
        self, name: str, *, params: type[BoundedModel] | None = None, stage: str | None = None,
        description: str | None = None,
    ) -> Callable[[H], H]:
        """Decorator: register ``fn`` as method ``name``'s hook for ``stage`` (default: the axis's stage).

        The first registration of a name creates the method (its params model and description, by default
        the first paragraph of the primary hook's docstring); later ones add hooks for other stages.
        """
        hook_stage = stage or self.stage
        if hook_stage not in HOOK_POINTS:
            raise ValueError(f"{self.kind} {name!r}: unknown stage {hook_stage!r}; stages: {', '.join(HOOK_POINTS)}")

        def decorate(fn: H) -> H:
            entry = self._entries.get(name)
            if entry is None:
                entry = MethodEntry(self.kind, name, params or NoParams, description or "", {})
                self._entries[name] = entry
            elif params is not None and params is not entry.params:
                raise ValueError(f"{self.kind} {name!r} already has parameters {entry.params.__name__}")
            if hook_stage in entry.hooks:
                raise ValueError(f"{self.kind} {name!r} already has a {hook_stage!r} hook ({entry.hooks[hook_stage]!r})")
            entry.hooks[hook_stage] = fn
            if not entry.description:
                entry.description = _first_line(getattr(fn, "__doc__", None))
            return fn

        return decorate

    def check(self, name: str) -> Callable[[Callable[[Any, Any], None]], Callable[[Any, Any], None]]:
        """Decorator: ``fn(config, params)`` raises ValueError (naming the fix) when method ``name`` cannot work
        with the rest of ``config``; run when the config is built, for every method it chose."""

        def decorate(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
            self.entry(name).checks.append(fn)
            return fn

        return decorate

    def entry(self, name: str) -> MethodEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise ConfigError(f"unknown {self.kind} {name!r}; valid names are: {', '.join(self.names())}") from None

    def get(self, name: str) -> F:
        """The primary hook of method ``name`` (its function on this axis's stage)."""
        entry = self.entry(name)
        if self.stage not in entry.hooks:
            raise ConfigError(f"{self.kind} {name!r} has no {self.stage!r} hook")
        hook: F = entry.hooks[self.stage]  # type: ignore[assignment]
        return hook

    def names(self) -> list[str]:
        return sorted(self._entries)

    def choices(self) -> list[MethodEntry]:
        """Every method, the default first (the plain baseline), then by name: the order the form offers them."""
        names = sorted(self._entries, key=lambda n: (n != self.default, n))
        return [self._entries[n] for n in names]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)


AXES: dict[str, Axis[Any]] = {}  # config field -> axis, filled as the axis modules are imported


@dataclass(frozen=True)
class ActiveMethod:
    """A method a config chose, with its validated parameters."""

    entry: MethodEntry
    params: Any

    def hook(self, stage: str) -> Callable[..., Any] | None:
        return self.entry.hooks.get(stage)

    def acts_at(self, step: int) -> bool:
        """The method's ``schedule`` answer (True when it has none)."""
        schedule = self.entry.hooks.get("schedule")
        return True if schedule is None else bool(schedule(self.params, step))

    def needs_teacher(self, step: int) -> bool:
        query = self.entry.hooks.get("needs_teacher")
        return bool(query is not None and query(self.params, step))

