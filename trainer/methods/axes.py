"""The method seam: the hook points of a training step, and one registry ("axis") per choice a config makes.

A *hook point* is a named place in the step where chosen methods act (``HOOK_POINTS``, in step order). Each is
invoked from exactly one function of the trainer, through ``hooks_at`` (a point where any number of methods
may act: none, one or a list, in config order) or ``the_hook`` (a *required* point: the step has no value
without it, so exactly one method fills it every step); tests/trainer/test_hook_points.py checks both by
reading the source. A *stage* is something else: one function of the step's list (trainer/step/step.py),
which calls the hook points it owns.

An *axis* is one choice in the config: the config field that names a method (``algorithm.token_credit``,
``budget.allocator``, ...) and the registry of methods that can fill it. A method is registered on its axis
under a name, with a pydantic model of its parameters and one function (a *hook*) per hook point it acts at::

    @TOKEN_CREDIT.method("gmts", params=GMTSParams)        # the axis's own hook point: token_credit
    def gmts(advantages, inputs, params): ...

    @POLICY_LOSSES.method("segment", point="loss_inputs")   # a second hook of the same method
    def hispo_segments(state, params): ...

A method may also answer the step's questions (``QUERIES``), registered the same way: ``schedule`` (whether it
acts at a step; ``hooks_at`` asks it for every hook of the method, whatever the axis) and ``needs_teacher``.
A ``schedule`` is refused at registration on an axis whose hook point is required: skipping it would leave
the step without its value. A hook at another axis's required point is refused too (that point calls the
method its own axis chose, and no other).

The config field of an axis accepts the name (``token_credit: ecr``) or ``{name, params}``; the params are
validated by the method's own model when the config is built, and the JSON schema lists every name with
its one-line description (trainer/config/choice.py). Adding a method is one module in trainer/methods/
(imported by the package, ``trainer/methods/__init__.py``): no edit to the step, the config or the form.

Pure Python: the web process builds the config schema from these registries without torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from trainer.bounds import BoundedModel
from trainer.errors import ConfigError


@dataclass(frozen=True)
class HookPoint:
    """A place in the step where methods act: what its hooks receive and return, and whether it is required
    (exactly one method, its axis's choice, fills it at every step) or optional (any number act, in config
    order, each when its ``schedule`` says so; none is the identity)."""

    signature: str
    required: bool


# The hook points of one training step, in step order.
HOOK_POINTS: dict[str, HookPoint] = {
    "prompt_sampler": HookPoint(
        "which prompts a step draws: (samples, config, params) -> PromptSource", True
    ),
    "allocator": HookPoint(
        "how many completions each prompt gets: (groups, generate, params, group_size) -> None", True
    ),
    "reward_shaping": HookPoint(
        "rewards without labels and shaping terms, after the verifiers: (ShapingState, params) -> None", False
    ),
    "reward_fusion": HookPoint(
        "teacher signal meets the rewards, before advantages: (rewards [N], signals, params, step) -> [N]",
        False,
    ),
    "advantage": HookPoint(
        "rewards -> one advantage per completion: (rewards [N], group_ids [N], params, lengths) -> [N]", True
    ),
    "advantage_shaping": HookPoint(
        "advantages reshaped across a group (rarity): (advantages [N], texts, correct [N], group_ids [N], params) "
        "-> (advantages [N], metrics)",
        False,
    ),
    "loss_mask": HookPoint(
        "tokens taken out of the loss: (batch, tokenizer, params) -> keep mask [N, T]", False
    ),
    "token_credit": HookPoint(
        "one advantage per completion -> per token: (advantages [N], CreditInputs, params) -> [N, T]", True
    ),
    "turn_credit": HookPoint(
        "turn-level credit from the per-turn scores of multi-turn episodes, on top of the outcome's per-token "
        "advantages: (token_adv [N, T], TurnCreditInputs, params) -> token_adv [N, T]",
        False,
    ),
    "step_credit": HookPoint(
        "process credit from step scores, on top of the outcome's per-token advantages (when process_reward is "
        "set): (token_adv [N, T], StepCreditInputs, params) -> StepCreditOutput (token_adv [N, T], keep [N] | None)",
        False,
    ),
    "token_fusion": HookPoint(
        "teacher signal meets the per-token advantages: (token_adv [N, T], mask, signals, params, step) -> [N, T]",
        False,
    ),
    "loss_inputs": HookPoint(
        "what the policy loss needs beyond advantages (segments, clip scales): (LossInputs, params) -> None",
        False,
    ),
    "policy_loss": HookPoint(
        "per-token surrogate: (logp, old_logp, adv, mask, algorithm, extras) -> PolicyLossOutput", True
    ),
    "aggregation": HookPoint(
        "per-token loss -> the back-propagated scalar: (loss [n, T], mask [n, T], ctx) -> scalar", True
    ),
    "regularizer": HookPoint("per-token KL to the reference: (logp [n, T], ref_logp [n, T]) -> [n, T]", True),
}


# Questions the step asks a chosen method, registered like hooks (``point="schedule"``).
QUERIES: dict[str, str] = {
    "schedule": "(params, step) -> bool: whether the method acts at this step (default: every step); honoured by "
    "hooks_at for every hook of the method, refused on an axis whose hook point is required",
    "needs_teacher": "(params, step) -> bool: the method reads teacher signals at this step",
}


class NoParams(BoundedModel):
    """A method without parameters: ``params`` must be empty."""


P = TypeVar("P", bound=BoundedModel)
F = TypeVar("F", bound=Callable[..., Any])
H = TypeVar("H", bound=Callable[..., Any])  # a hook of any hook point


@dataclass
class MethodEntry:
    """One method: its name on its axis, its parameters' model, a one-line description, its hooks by hook point
    (and its answers to the ``QUERIES``)."""

    axis: str
    name: str
    params: type[BoundedModel]
    description: str
    hooks: dict[str, Callable[..., Any]] = field(default_factory=dict)
    checks: list[Callable[[Any, Any], None]] = field(
        default_factory=list
    )  # (config, params) -> None or ValueError

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
    """The registry of one config choice: names -> methods, with the hook point its primary hook acts at.

    ``get(name)`` returns the primary hook (so ``ADVANTAGES.get('grpo')(rewards, ids, params)`` works in a test
    or a tool; the step calls hooks through ``hooks_at`` / ``the_hook``); ``entry(name)`` the whole method;
    ``choices()`` what the schema and the form list.
    """

    def __init__(
        self,
        kind: str,
        config_field: str,
        point: str,
        default: str | None,
        description: str,
        many: bool = False,
    ) -> None:
        if point not in HOOK_POINTS:
            raise ValueError(
                f"axis {kind!r}: unknown hook point {point!r}; hook points: {', '.join(HOOK_POINTS)}"
            )
        self.kind = kind  # "advantage estimator": used in error messages
        self.config_field = config_field  # "algorithm.advantage_estimator"
        self.point = point
        self.default = default
        self.description = description
        self.many = many  # the config field is a list of choices (applied in order), default empty
        self._entries: dict[str, MethodEntry] = {}
        AXES[config_field] = self

    def method(
        self,
        name: str,
        *,
        params: type[BoundedModel] | None = None,
        point: str | None = None,
        description: str | None = None,
    ) -> Callable[[H], H]:
        """Decorator: register ``fn`` as method ``name``'s hook at ``point`` (default: the axis's hook point), or
        its answer to a query (``QUERIES``).

        The first registration of a name creates the method (its params model and description, by default
        the first paragraph of the primary hook's docstring); later ones add hooks at other hook points.
        """
        hook_point = point or self.point
        self._check_point(name, hook_point)

        def decorate(fn: H) -> H:
            entry = self._entries.get(name)
            if entry is None:
                entry = MethodEntry(self.kind, name, params or NoParams, description or "", {})
                self._entries[name] = entry
            elif params is not None and params is not entry.params:
                raise ValueError(f"{self.kind} {name!r} already has parameters {entry.params.__name__}")
            if hook_point in entry.hooks:
                raise ValueError(
                    f"{self.kind} {name!r} already has a {hook_point!r} hook ({entry.hooks[hook_point]!r})"
                )
            entry.hooks[hook_point] = fn
            if not entry.description:
                entry.description = _first_line(getattr(fn, "__doc__", None))
            return fn

        return decorate

    def _check_point(self, name: str, point: str) -> None:
        """Refuse, at registration, a hook the step could not honour (see the module docstring)."""
        if point not in HOOK_POINTS and point not in QUERIES:
            known = ", ".join([*HOOK_POINTS, *QUERIES])
            raise ValueError(
                f"{self.kind} {name!r}: unknown hook point {point!r}; hook points and queries: {known}"
            )
        own = HOOK_POINTS[self.point]
        if point == "schedule" and own.required:
            raise ValueError(
                f"{self.kind} {name!r}: a 'schedule' cannot be honoured on this axis: its hook point {self.point!r} "
                "is required (the step has no value without it at every step); let the method's own params decide "
                "what it does at each step instead"
            )
        if point in HOOK_POINTS and HOOK_POINTS[point].required and point != self.point:
            raise ValueError(
                f"{self.kind} {name!r}: {point!r} is a required hook point of another axis (it calls the method "
                "that axis chose, and no other); register the hook on that axis"
            )

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
            raise ConfigError(
                f"unknown {self.kind} {name!r}; valid names are: {', '.join(self.names())}"
            ) from None

    def get(self, name: str) -> F:
        """The primary hook of method ``name`` (its function at this axis's hook point)."""
        entry = self.entry(name)
        if self.point not in entry.hooks:
            raise ConfigError(f"{self.kind} {name!r} has no {self.point!r} hook")
        hook: F = entry.hooks[self.point]  # type: ignore[assignment]
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

    def hook(self, point: str) -> Callable[..., Any] | None:
        """The method's function at ``point`` (for inspection; the step calls it through ``hooks_at`` / ``the_hook``)."""
        return self.entry.hooks.get(point)

    def has_hook(self, point: str) -> bool:
        return point in self.entry.hooks

    def acts_at(self, step: int | None) -> bool:
        """The method's ``schedule`` answer (True when it has none, or outside a step: ``step`` None)."""
        answer = ask("schedule", self, step)
        return True if answer is None else answer

    def needs_teacher(self, step: int) -> bool:
        return bool(ask("needs_teacher", self, step))


def ask(query: str, method: ActiveMethod, step: int | None) -> bool | None:
    """``method``'s answer to ``query`` (``QUERIES``) at ``step``; None when it does not answer it (or ``step``
    is None: outside a training step)."""
    if query not in QUERIES:
        raise KeyError(f"unknown query {query!r}; queries: {', '.join(QUERIES)}")
    fn = method.entry.hooks.get(query)
    return None if fn is None or step is None else bool(fn(method.params, step))


def hooks_at(
    point: str, methods: Iterable[ActiveMethod], step: int | None
) -> list[tuple[Callable[..., Any], Any]]:
    """(hook, params) of every chosen method with a hook at the optional hook point ``point`` that acts at
    ``step`` (its ``schedule``), in config order. ``step`` None: outside a training step (a test, a tool),
    where every method acts."""
    if HOOK_POINTS[point].required:
        raise KeyError(f"{point!r} is a required hook point: call it with the_hook")
    return [(m.entry.hooks[point], m.params) for m in methods if point in m.entry.hooks and m.acts_at(step)]


def the_hook(point: str, method: ActiveMethod) -> tuple[Callable[..., Any], Any]:
    """(hook, params) of the method that fills the required hook point ``point`` (its axis's choice)."""
    if not HOOK_POINTS[point].required:
        raise KeyError(f"{point!r} is an optional hook point: call it with hooks_at")
    hook = method.entry.hooks.get(point)
    if hook is None:
        raise ConfigError(f"{method.entry.axis} {method.entry.name!r} has no {point!r} hook")
    return hook, method.params
