"""Validate an experiment config with the trainer's own pydantic model, reporting every problem at once.

``trainer.config`` is torch-free on purpose (tests/trainer/test_import_boundary.py), so the web process
validates with exactly the model the worker trains with. Validating the root model directly reports one
stage at a time: pydantic runs the cross-section checks (``ExperimentConfig._check_*``) only once every
field is valid, stops at the first of them, and an unknown verifier name is one of them. A person fixing
a form would see one error, fix it, submit and meet the next. So the stages run separately here and their
problems are merged into one ``InvalidInput`` whose ``fields`` are keyed by path
(``config.training.learning_rate``, ``config.verifiers.1.name``, ``config.shaping.reward_shaping.0.params.buffer``):

1. registry names: each verifier's name and params, checked per entry against its own params model;
2. fields: every section, with pydantic's own field checks (all of them in one pass);
3. cross-section checks: each of the root's after-validators, and each chosen method's checks, one by one,
   on a copy whose wrong fields were set back to their defaults. A check that reads a section that had to
   be set back is skipped (its answer would be about the default, not about what was written): it runs
   again on the next submit.
4. path checks (``config_paths.confine_experiment_config``), with the project, when one is given.

A config with no problem is validated once more by ``ExperimentConfig`` itself, which stays the authority.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import ValidationError, create_model

from trainer.bounds import BoundedModel
from trainer.config import ExperimentConfig, config_schema
from trainer.errors import RLVRError
from trainer.methods.axes import AXES
from trainer.verifiers import VERIFIERS
from webapp.core.errors import InvalidInput
from webapp.experiments.config_paths import confine_experiment_config
from webapp.teams.models import Project

Fields = dict[str, list[str]]
Loc = tuple[str | int, ...]

# The root's fields without its cross-section validators: every field error of every section, in one pass.
_FieldsOnly: type[BoundedModel] = create_model(  # type: ignore[call-overload]
    "ExperimentFields",
    __base__=BoundedModel,
    **{name: (info.annotation, info) for name, info in ExperimentConfig.model_fields.items()},
)
_SECTIONS = tuple(ExperimentConfig.model_fields)
_LIST_FIELDS = tuple(
    n for n, f in ExperimentConfig.model_fields.items() if getattr(f.annotation, "__origin__", None) is list
)
_DOTTED = re.compile(r"\b[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+\b")
_REPAIR_ROUNDS = 3


def validate_experiment_config(config: Any, *, field: str = "config") -> dict[str, Any]:
    """The config with every default filled in, as JSON, or InvalidInput naming each ``config.<path>``."""
    fields, validated = _config_problems(config, field=field)
    if fields:
        raise problems_error(fields)
    assert validated is not None
    return validated


def checked_experiment_config(config: Any, *, project: Project, field: str = "config") -> dict[str, Any]:
    """``validate_experiment_config`` plus the path checks for ``project``, every problem in one InvalidInput."""
    fields, validated = _config_problems(config, field=field, project=project)
    if fields:
        raise problems_error(fields)
    assert validated is not None
    return validated  # the path checks passed on it: confine_experiment_config returns it as it is


def problems_error(fields: Fields) -> InvalidInput:
    """One InvalidInput for every problem: the message names the first (a message that already names its
    field is kept as it is) and counts the rest."""
    path, messages = next(iter(fields.items()))
    relative = path.removeprefix("config.")
    last = next((p for p in reversed(relative.split(".")) if not p.isdigit()), relative)
    if relative in messages[0] or (len(last) >= 5 and last in messages[0]):
        first = messages[0]
    else:
        first = (
            "Invalid experiment config: " if path.startswith("config") else ""
        ) + f"{path}: {messages[0]}"
    more = len(fields) - 1
    return InvalidInput(first + (f" (and {more} more)" if more else ""), fields)


def collect(fields: Fields, check: Callable[[], Any]) -> Any:
    """``check()``'s result, or None with its InvalidInput's fields merged into ``fields``."""
    try:
        return check()
    except InvalidInput as err:
        _merge(fields, err.fields)
        return None


# --- the stages ----------------------------------------------------------------------------------------


def _config_problems(
    config: Any, *, field: str, project: Project | None = None
) -> tuple[Fields, dict[str, Any] | None]:
    if not isinstance(config, dict):
        message = f"The config must be an object of sections, got {type(config).__name__}."
        return {field: [message]}, None
    fields: Fields = {}
    repaired: set[str] = set()  # dotted paths set back to their defaults for the later stages
    for path, message in _verifier_problems(config):
        _add(fields, field, path, message)
        repaired.add("verifiers")
    instance = _fields_stage(config, fields, repaired, field)
    if instance is None:
        return fields, None
    for home, path, message in _cross_section_problems(instance):
        if not _reads_repaired(message, home, repaired):
            _add(fields, field, path, message)
    if project is not None:
        _path_problems(instance, fields, repaired, project, field)
    if fields:
        return fields, None
    try:
        return {}, ExperimentConfig.model_validate(config).model_dump(mode="json")
    except ValidationError as err:  # a check the stages above do not know: reported as pydantic words it
        return {_key(field, e["loc"]): [_message(e)] for e in err.errors()}, None
    except RLVRError as err:
        return {field: [str(err)]}, None


def _verifier_problems(config: dict[str, Any]) -> Iterable[tuple[Loc, str]]:
    """Each verifier entry's unknown name, or its params as its own params model reads them."""
    entries = config.get("verifiers")
    if not isinstance(entries, list):
        return
    for i, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            continue  # not a verifier spec at all: the fields stage says so
        if name not in VERIFIERS:
            yield (
                ("verifiers", i, "name"),
                f"unknown verifier {name!r}; valid names are: {', '.join(VERIFIERS.names())}",
            )
            continue
        params = entry.get("params") or {}
        if not isinstance(params, dict):
            continue
        model = VERIFIERS.get(name).Params
        try:
            model.model_validate(params)
        except ValidationError as err:
            for e in err.errors():
                yield ("verifiers", i, "params", *e["loc"]), _param_message(e, model.model_fields)


def _fields_stage(
    config: dict[str, Any], fields: Fields, repaired: set[str], field: str
) -> ExperimentConfig | None:
    """Every field error, then a copy of the config with each wrong field set back to its default (a whole
    section when that is not enough), as an ExperimentConfig the cross-section checks can read; None when
    even that does not validate."""
    work = copy.deepcopy(config)
    if "verifiers" in repaired:
        work.pop("verifiers", None)
    for round_ in range(_REPAIR_ROUNDS):
        try:
            valid = _FieldsOnly.model_validate(work)
        except ValidationError as err:
            refined = [_refined(work, e) for e in err.errors()]
            if round_ == 0:
                for loc, message in refined:
                    _add(fields, field, loc, message)
            if not _repair(work, [loc for loc, _ in refined], repaired, depth=2 if round_ == 0 else 1):
                return None
            continue
        values = {name: getattr(valid, name) for name in ExperimentConfig.model_fields}
        return ExperimentConfig.model_construct(**values)
    return None


def _repair(work: dict[str, Any], locs: list[Loc], repaired: set[str], *, depth: int) -> bool:
    """Remove what each error points at (a section's field, or the section), so its default is used."""
    removed: set[str] = set()
    for where in locs:
        loc = [str(p) for p in where]
        if not loc:
            return False  # the whole body is refused (a NUL, say): nothing to set back
        section = work.get(loc[0])
        if depth == 2 and len(loc) >= 2 and isinstance(section, dict):
            section.pop(loc[1], None)  # a required field has no default: the next round removes its section
            removed.add(f"{loc[0]}.{loc[1]}")
        else:
            work.pop(loc[0], None)
            removed.add(loc[0])
    repaired |= removed
    return bool(removed)


def _cross_section_problems(config: ExperimentConfig) -> Iterable[tuple[str, Loc, str]]:
    """(the check's own section, path, message) for each cross-section check that fails, each run on its own."""
    validators = ExperimentConfig.__pydantic_decorators__.model_validators
    for name, decorator in validators.items():
        if decorator.info.mode != "after" or name == "_check_methods":
            continue
        home = name.removeprefix("_check_")
        try:
            decorator.func(config)
        except (ValueError, RLVRError) as err:
            message = str(err).removeprefix("Value error, ")
            path = _path_in_message(message, ()) or ((home,) if home in _SECTIONS else ())
            yield home, path, message
    for axis in AXES.values():  # each method's own checks (ExperimentConfig._check_methods), with its place
        section, key = axis.config_field.split(".")
        owner = getattr(config, section)
        if owner is None:  # an optional section that is off (process_reward): nothing chosen there
            continue
        chosen = getattr(owner, key)
        for index, choice in enumerate(chosen if isinstance(chosen, list) else [chosen]):
            method = choice.active()
            place: Loc = (section, key, index) if isinstance(chosen, list) else (section, key)
            for check in method.entry.checks:
                try:
                    check(config, method.params)
                except (ValueError, RLVRError) as err:
                    yield section, place, str(err)


def _path_problems(
    instance: ExperimentConfig, fields: Fields, repaired: set[str], project: Project, field: str
) -> None:
    """Files, models and servers the config names, unless the field was set back to its default."""
    found: Fields = {}
    collect(
        found,
        lambda: confine_experiment_config(instance.model_dump(mode="json"), project=project, field=field),
    )
    for path, messages in found.items():
        relative = path.removeprefix(f"{field}.")
        if not any(relative == r or relative.startswith(f"{r}.") for r in repaired):
            fields.setdefault(path, []).extend(messages)


# --- paths and messages --------------------------------------------------------------------------------


def _refined(config: dict[str, Any], error: Any) -> tuple[Loc, str]:
    """A pydantic error's path and message, made as precise as the form can show: a method's params error
    names the parameter; a section check's message that names a field moves to that field."""
    loc = _clean(error["loc"])
    message = _message(error)
    if len(loc) >= 3 and loc[-1] == "params" and f"{loc[0]}.{loc[1]}" in AXES:
        precise = _method_param_error(config, loc)
        if precise is not None:
            return precise
    named = _path_in_message(message, loc)
    return (named or loc), message


def _method_param_error(config: dict[str, Any], loc: Loc) -> tuple[Loc, str] | None:
    """The first problem of a method choice's params, as its own params model sees it."""
    axis = AXES[f"{loc[0]}.{loc[1]}"]
    choice: Any = config
    for part in loc[:-1]:
        if isinstance(choice, dict):
            choice = choice.get(part)
        elif isinstance(choice, list) and isinstance(part, int) and part < len(choice):
            choice = choice[part]
        else:
            return None
    if (
        not isinstance(choice, dict)
        or choice.get("name") not in axis
        or not isinstance(choice.get("params"), dict)
    ):
        return None
    model = axis.entry(choice["name"]).params
    try:
        model.model_validate(choice["params"])
    except ValidationError as err:
        first = err.errors()[0]
        return (*loc, *first["loc"]), _param_message(first, model.model_fields)
    return None


def _path_in_message(message: str, loc: Loc) -> Loc | None:
    """The field a check's message names (``training.prompts_per_step (3) must ...``) when it lies at or
    under ``loc`` (for a section's own check) or anywhere (for the root's): that is where to show it."""
    for token in _DOTTED.findall(message):
        parts = tuple(token.split("."))
        if not loc and parts[0] in _SECTIONS and _known(parts):
            return parts
        if loc and parts[0] == loc[-1]:
            return (*loc[:-1], *parts)
    return None


def _known(parts: tuple[str, ...]) -> bool:
    """Whether ``section.field`` is a field of the config's schema (not just words with a dot)."""
    schema = _schema()
    prop = schema["properties"].get(parts[0], {})
    ref = prop.get("$ref") or next((o.get("$ref") for o in prop.get("anyOf", ()) if "$ref" in o), None)
    if ref is None:
        return len(parts) == 1
    return parts[1] in schema["$defs"][ref.rsplit("/", 1)[-1]].get("properties", {})


@functools.cache
def _schema() -> dict[str, Any]:
    return config_schema()


def _reads_repaired(message: str, home: str, repaired: set[str]) -> bool:
    """Whether a cross-section check may have judged a default rather than what was written: its message
    names a field (``training.prompts_per_step``) or a whole section that was set back, or its own section
    was set back whole. Checks name the fields they compare, which is what makes this rule work."""
    named = {tuple(token.split(".")) for token in _DOTTED.findall(message)}
    sections = {home} | {parts[0] for parts in named}
    sections |= {s for s in _LIST_FIELDS if re.search(rf"\b{s.rstrip('s')}s?\b", message)}
    for path in repaired:
        parts = tuple(path.split("."))
        if len(parts) == 1 and parts[0] in sections:
            return True
        if any(n[: len(parts)] == parts or parts[: len(n)] == n for n in named):
            return True
    return False


def _clean(loc: Iterable[Any]) -> Loc:
    """pydantic's location without the union-member tags it inserts (``list[constrained-str]``)."""
    return tuple(p for p in loc if isinstance(p, int) or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(p)))


def _message(error: Any) -> str:
    return str(error["msg"]).removeprefix("Value error, ")


def _param_message(error: Any, known: Iterable[str]) -> str:
    if error["type"] == "extra_forbidden":
        return f"unknown parameter; valid parameters are: {', '.join(known) or 'none'}"
    return _message(error)


def _key(field: str, loc: Iterable[Any]) -> str:
    return ".".join([field, *(str(p) for p in _clean(loc))])


def _add(fields: Fields, field: str, loc: Loc, message: str) -> None:
    messages = fields.setdefault(_key(field, loc), [])
    if message not in messages:
        messages.append(message)


def _merge(fields: Fields, more: Fields) -> None:
    for path, messages in more.items():
        for message in messages:
            if message not in fields.setdefault(path, []):
                fields[path].append(message)
