"""The experiment form is generated from the trainer config's JSON schema: the common fields first and open,
the rest folded by section, one name, and structured editors described by page data."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from tests.webapp.helpers import SMALL_CONFIG
from trainer.methods.token_credit import TOKEN_CREDIT
from trainer.verifiers import VERIFIERS
from webapp.datafiles.models import Dataset
from webapp.experiments.models import Experiment
from webapp.pages.forms_config import config_fields, config_sections
from webapp.teams.models import Project


def page_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="experiment-form-data" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the page hands its data to the scripts"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


class Sections(HTMLParser):
    """Each section of the form: whether it is folded (a <details>), open, its summary text and its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, dict[str, Any]] = {}
        self._current: str | None = None
        self._in_summary = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("data-section"):
            self._current = a["data-section"]
            self.sections[self._current or ""] = {
                "folded": tag == "details", "open": "open" in a, "summary": "", "paths": [],
            }  # fmt: skip
        elif tag == "summary":
            self._in_summary = True
        elif self._current and a.get("data-path"):
            self.sections[self._current]["paths"].append(a["data-path"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary":
            self._in_summary = False

    def handle_data(self, data: str) -> None:
        if self._in_summary and self._current:
            self.sections[self._current]["summary"] += data


def sections_of(html: str) -> dict[str, dict[str, Any]]:
    parser = Sections()
    parser.feed(html)
    return parser.sections


def test_the_common_fields_come_first_and_open_and_the_rest_are_folded_by_section(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    sections = sections_of(html)
    keys = list(sections)
    assert keys[0] == "essentials" and not sections["essentials"]["folded"]
    assert sections["essentials"]["paths"] == [
        "model.name_or_path",
        "data.source",
        "data.path",
        "verifiers",
        "training.max_steps",
        "training.prompts_per_step",
        "rollout.num_generations",
        "training.learning_rate",
        "rollout.max_completion_length",
        "rollout.temperature",
    ]
    assert keys[1:] == [
        "model",
        "data",
        "rollout",
        "algorithm",
        "training",
        "checkpoint",
        "evaluation",
        "shaping",
        "budget",
        "teacher",
        "rubric",
        "reward_watch",
        "process_reward",
        "environment",
        "reward_absence",
    ]
    for key in keys[1:]:
        assert sections[key]["folded"] and not sections[key]["open"], key
    assert "Advanced: rollout" in sections["rollout"]["summary"]
    assert "seed" in sections["training"]["paths"] and "rollout.top_p" in sections["rollout"]["paths"]
    every = [p for s in sections.values() for p in s["paths"]]
    assert len(every) == len(set(every)), "each field once"


def test_the_page_shows_one_name(browser_as: Callable[[str | None], Client], project: Project) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="name"' not in html and "Experiment name" not in html
    assert re.findall(r"<label[^>]*>\s*Name\s*</label>", html) == ['<label for="exp-name">Name</label>']
    assert "name" not in config_fields()


def test_a_folded_summary_counts_the_values_that_differ_from_the_defaults(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    from webapp.experiments.services import experiment_create

    config = {
        **SMALL_CONFIG,
        "algorithm": {"beta": 0.04, "token_credit": "top_entropy", "loss_masks": ["answer_span"]},
    }
    experiment = experiment_create(project=project, actor=alice, name="counted", config=config)
    html = browser_as("owner").get(f"/experiments/{experiment.pk}/edit/").content.decode()
    summaries = {k: " ".join(s["summary"].split()) for k, s in sections_of(html).items()}
    assert summaries["algorithm"] == "Algorithm 3 changed"  # beta, token_credit and loss_masks
    assert summaries["rollout"] == "Advanced: rollout 0 changed"  # hidden: SMALL_CONFIG's are all essentials
    assert 'data-changed-for="rollout" hidden' in html and 'data-changed-for="algorithm">' in html
    sections = {s.key: s for s in config_sections(config=experiment.config)}
    assert sections["algorithm"].changed == 3 and sections["data"].changed == 1  # SMALL_CONFIG's data.size


def test_inputs_follow_the_field_types(browser_as: Callable[[str | None], Client], project: Project) -> None:
    fields = config_fields()
    assert fields["data.shuffle"].kind == "checkbox"
    assert fields["training.learning_rate"].kind == "number"
    assert (
        fields["rollout.num_generations"].kind == "integer" and fields["rollout.num_generations"].minimum == 2
    )
    assert fields["rollout.top_p"].maximum == 1
    assert fields["rollout.engine"].kind == "select" and fields["rollout.engine"].choices == ("hf", "vllm")
    assert fields["algorithm.epsilon_high"].nullable
    seed_per_prompt = fields[
        "rollout.seed_per_prompt"
    ]  # null means "decide for me": three choices, not a checkbox
    assert seed_per_prompt.kind == "select" and seed_per_prompt.data_kind == "select-json"
    assert seed_per_prompt.options == [("null", "auto", True), ("true", "yes", False), ("false", "no", False)]
    for path in (
        "verifiers",
        "algorithm.token_credit",
        "algorithm.loss_masks",
        "shaping.reward_shaping",
        "rubric",
    ):
        assert fields[path].kind == "editor", path
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert '<input type="text" id="cfg-model-name_or_path" data-path="model.name_or_path"' in html
    assert (
        'list="model-choices"' in html and '<option value="tiny:chain" label="' in html
    )  # the built-in models
    assert '<select id="cfg-rollout-engine" data-path="rollout.engine" data-kind="select">' in html


def test_the_new_form_prefills_defaults_and_shows_help(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    assert 'data-path="training.learning_rate"' in html
    assert 'value="1e-06"' in html
    assert 'data-error-for="config.training.learning_rate"' in html
    assert "KL coefficient to the frozen reference model" in html
    assert f'data-url="/api/projects/{project.pk}/experiments/"' in html
    assert "csrfmiddlewaretoken" in html
    assert 'id="form-errors"' in html and 'id="yaml-toggle"' in html


def test_every_method_choice_is_described_for_its_editor(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    editors = page_data(html)["editors"]
    token_credit = editors["algorithm.token_credit"]
    offered = [e.name for e in TOKEN_CREDIT.choices()]  # every registered method, the default first
    assert token_credit["kind"] == "method" and [c["name"] for c in token_credit["choices"]] == offered
    top_entropy = next(c for c in token_credit["choices"] if c["name"] == "top_entropy")
    assert "forking" in top_entropy["description"] and top_entropy["defaults"] == {"quantile": 0.2}
    (quantile,) = top_entropy["fields"]
    assert (quantile["key"], quantile["kind"], quantile["max"], quantile["default"]) == (
        "quantile",
        "number",
        1,
        0.2,
    )
    assert editors["shaping.reward_shaping"]["kind"] == "list"
    assert "overlong_penalty" in [c["name"] for c in editors["shaping.reward_shaping"]["item"]["choices"]]
    assert (
        '<textarea id="cfg-algorithm-token_credit" data-path="algorithm.token_credit" data-kind="json" hidden'
        in html
    )


def test_the_verifier_editor_offers_every_registered_verifier_with_its_params(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    spec = page_data(html)["editors"]["verifiers"]
    assert spec["kind"] == "list" and spec["item"]["kind"] == "method"
    choices = {c["name"]: c for c in spec["item"]["choices"]}
    assert sorted(choices) == VERIFIERS.names()
    regex = {f["key"]: f for f in choices["regex_format"]["fields"]}
    assert regex["match"]["kind"] == "select" and [o[0] for o in regex["match"]["options"]] == [
        "fullmatch",
        "search",
    ]
    assert regex["dotall"]["kind"] == "checkbox" and regex["pattern"]["kind"] == "text"
    assert [e["key"] for e in spec["item"]["extras"]] == ["label"]
    rubric = page_data(html)["editors"]["rubric"]
    criterion = {
        f["key"]: f for f in next(f for f in rubric["fields"] if f["key"] == "criteria")["item"]["fields"]
    }
    assert criterion["rule"]["kind"] == "method" and criterion["rule"]["name_key"] == "type"
    assert criterion["rule"]["shown_when"] == {"scorer": "rule"} and criterion["judge"]["kind"] == "object"


def test_the_data_group_offers_the_projects_datasets_and_preselects_one_from_the_url(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    mine = Dataset.objects.create(
        project=project,
        name="sums <b>",
        path="/data/sums.jsonl",
        format="jsonl",
        rows=12,
        prompt_field="question",
        answer_field="answer",
    )
    html = (
        browser_as("owner").get(f"/projects/{project.pk}/experiments/new/?dataset={mine.pk}").content.decode()
    )
    assert f'<option value="{mine.pk}" data-ref="dataset:{mine.pk}">sums &lt;b&gt; (12 rows)</option>' in html
    assert f'<a href="/projects/{project.pk}/datasets/">Upload a dataset</a>' in html
    data = page_data(html)
    assert data["dataset"] == mine.pk
    assert data["datasets"] == [
        {
            "id": mine.pk,
            "ref": f"dataset:{mine.pk}",
            "name": "sums <b>",
            "rows": 12,
            "prompt_field": "question",
            "answer_field": "answer",
        }
    ]
    assert mine.path not in html  # the server path never reaches the page
    bad = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/?dataset=x").content.decode()
    assert page_data(bad)["dataset"] is None


def test_the_edit_form_shows_the_saved_config(
    browser_as: Callable[[str | None], Client], experiment: Experiment
) -> None:
    html = browser_as("admin").get(f"/experiments/{experiment.pk}/edit/").content.decode()
    assert 'value="0.0001"' in html  # SMALL_CONFIG's learning rate
    assert 'data-method="PATCH"' in html
    assert 'value="addition"' in html  # the one name
    stored = re.search(r'<textarea id="cfg-verifiers"[^>]*>(.*?)</textarea>', html, re.S)
    assert stored and json.loads(stored.group(1).replace("&quot;", '"')) == experiment.config["verifiers"]


def test_the_reward_watch_and_absence_sections_render_with_titles_and_the_saved_values(
    browser_as: Callable[[str | None], Client], project: Project, alice: User
) -> None:
    from trainer.config.reward_absence import RewardAbsenceConfig
    from trainer.config.reward_watch import RewardWatchConfig
    from webapp.experiments.services import experiment_create

    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    sections = sections_of(html)
    summaries = {k: " ".join(s["summary"].split()) for k, s in sections.items()}
    assert summaries["reward_watch"] == "Reward hacking watch 0 changed"
    assert summaries["reward_absence"] == "Absent scores (reward model and judge failures) 0 changed"
    assert sections["reward_watch"]["paths"] == [f"reward_watch.{k}" for k in RewardWatchConfig.model_fields]
    assert sections["reward_absence"]["paths"] == [
        f"reward_absence.{k}" for k in RewardAbsenceConfig.model_fields
    ]
    assert '<option value="drop" selected>drop</option>' in html
    config = {
        **SMALL_CONFIG,
        "reward_absence": {"mode": "fail", "fail_above": 0.25},
        "reward_watch": {"window": 7},
    }
    experiment = experiment_create(project=project, actor=alice, name="absence", config=config)
    edit = browser_as("owner").get(f"/experiments/{experiment.pk}/edit/").content.decode()
    changed = {k: " ".join(s["summary"].split()) for k, s in sections_of(edit).items()}
    assert changed["reward_absence"].endswith("2 changed") and changed["reward_watch"].endswith("1 changed")
    assert '<option value="fail" selected>fail</option>' in edit
    assert 'data-path="reward_absence.fail_above" data-kind="number" value="0.25"' in edit


def test_the_judge_editor_has_its_nested_params_inlined_with_usable_defaults(
    browser_as: Callable[[str | None], Client], project: Project
) -> None:
    html = browser_as("owner").get(f"/projects/{project.pk}/experiments/new/").content.decode()
    choices = {c["name"]: c for c in page_data(html)["editors"]["verifiers"]["item"]["choices"]}
    judge = choices["judge"]

    def references(node: Any) -> list[str]:  # every "$ref" key, or string pointing into a "$defs", anywhere
        if isinstance(node, dict):
            return [r for k, v in node.items() for r in (["$ref"] if k == "$ref" else []) + references(v)]
        if isinstance(node, list):
            return [r for v in node for r in references(v)]
        return [node] if isinstance(node, str) and "#/$defs/" in node else []

    assert references(page_data(html)["editors"]) == []
    fields = {f["key"]: f for f in judge["fields"]}
    assert fields["parse"]["kind"] == "json" and "verdict" in fields["parse"]["help"]
    assert judge["defaults"]["parse"] == fields["parse"]["default"]
    assert judge["defaults"]["parse"]["kind"] == "score" and judge["defaults"]["parse"]["max"] == 10.0
    # the editor's defaults, with the two required fields filled in, are valid judge params as they are
    params = {**judge["defaults"], "base_url": "http://judge.example/v1", "model": "m"}
    assert VERIFIERS.get("judge").Params.model_validate(params).model_dump()["parse"]["kind"] == "score"
    assert fields["base_url"]["kind"] == "text" and fields["concurrency"]["max"] == 64
