"""One vocabulary for where methods act (trainer/methods/axes.py): every hook point and query is called from
exactly one place in trainer/, only through ``hooks_at`` / ``the_hook`` / ``ask``; every registered hook names a
known hook point; a ``schedule`` is honoured on any axis that can skip its hook point and refused on the others."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import trainer.methods  # every method registered (and the axes read below)
from tests.trainer.loop_helpers import tiny_config
from trainer.methods.advantages import ADVANTAGES
from trainer.methods.answer_span import LOSS_MASKS
from trainer.methods.axes import AXES, HOOK_POINTS, QUERIES, ActiveMethod, Axis, NoParams
from trainer.step import stages
from trainer.step.run_setup import build_run

TRAINER = Path(__file__).resolve().parents[2] / "trainer"
AXES_MODULE = TRAINER / "methods" / "axes.py"
CALLERS = {"hooks_at", "the_hook", "ask"}


def _trees() -> Iterator[tuple[Path, ast.AST]]:
    for path in sorted(TRAINER.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def hook_point_calls() -> Counter[str]:
    """How often each hook point or query name is the first argument of hooks_at / the_hook / ask in trainer/
    (the definitions in axes.py excluded)."""
    found: Counter[str] = Counter()
    for _, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) in CALLERS and node.args:
                first = node.args[0]
                name = (
                    first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "?"
                )
                found[name] += 1  # "?": a hook point that is not a literal cannot be checked
    return found


def test_each_hook_point_and_query_is_called_from_exactly_one_place() -> None:
    assert hook_point_calls() == Counter({name: 1 for name in [*HOOK_POINTS, *QUERIES]})


def test_no_trainer_code_reaches_a_hook_around_the_helpers() -> None:
    axis_names = {name for name, value in vars(trainer.methods).items() if isinstance(value, Axis)}
    axis_names |= {
        name
        for path, tree in _trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and "Axis" in ast.unparse(node.annotation)
        for name in [node.target.id]
    }
    bypasses = []
    for path, tree in _trees():
        if path == AXES_MODULE:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "hooks":
                bypasses.append(f"{path.name}:{node.lineno} .hooks")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"hook", "get"}
            ):
                owner = node.func.value
                if node.func.attr == "hook" or (isinstance(owner, ast.Name) and owner.id in axis_names):
                    bypasses.append(f"{path.name}:{node.lineno} {ast.unparse(node.func)}")
    assert bypasses == []


def test_every_registered_hook_names_a_known_hook_point() -> None:
    known = set(HOOK_POINTS) | set(QUERIES)
    unknown = [
        (axis.config_field, entry.name, point)
        for axis in AXES.values()
        for entry in axis.choices()
        for point in entry.hooks
        if point not in known
    ]
    assert unknown == []


def test_a_schedule_on_an_axis_whose_hook_point_is_required_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="'schedule' cannot be honoured on this axis"):
        ADVANTAGES.method("every_other_step", point="schedule")


def test_a_hook_at_another_axis_required_hook_point_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="required hook point of another axis"):
        LOSS_MASKS.method("sneaky", point="token_credit")


def test_an_unknown_hook_point_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="unknown hook point 'los_mask'"):
        LOSS_MASKS.method("typo", point="los_mask")


@pytest.fixture
def odd_steps_mask_everything() -> Iterator[ActiveMethod]:
    """A loss-mask method (not a fusion) that takes every token out of the loss, on odd steps only."""
    name = "test_odd_steps_mask_everything"

    @LOSS_MASKS.method(name)
    def mask_everything(batch, tokenizer, params):  # type: ignore[no-untyped-def]
        return torch.zeros_like(batch.completion_mask)

    @LOSS_MASKS.method(name, point="schedule")
    def odd_steps(params, step):  # type: ignore[no-untyped-def]
        return step % 2 == 1

    yield ActiveMethod(LOSS_MASKS.entry(name), NoParams())
    LOSS_MASKS._entries.pop(name)  # the registry is process-wide: leave it as the other tests find it


def test_a_method_on_a_non_fusion_axis_does_not_act_on_a_step_its_schedule_skips(
    random_model_dir: Path, tmp_path: Path, odd_steps_mask_everything: ActiveMethod
) -> None:
    run = build_run(tiny_config(random_model_dir, tmp_path), log=lambda m: None)
    run.methods = [*run.methods, odd_steps_mask_everything]
    collected = stages.collect(run, 1)
    scored = stages.score_with_policy(run, 1, collected)
    skipped = stages.build_loss_mask(run, 2, collected, scored).mask
    assert torch.equal(skipped, scored.batch.completion_mask)
    assert int(stages.build_loss_mask(run, 1, collected, scored).mask.sum()) == 0
