"""A bounded schemathesis run over the OpenAPI schema: no operation answers 5xx (issue 13 part 5).

Each operation of drf-spectacular's schema gets ``EXAMPLES`` generated requests (derandomized, so a run
is reproducible), sent through the whole Django stack (middleware, parsers, exception handler) as a
member of a project that has an experiment, a run and a data file. Path ids are pointed at those
objects, so the generated bodies and query strings reach the services instead of stopping at a 404.
On top of schemathesis' positive and negative cases, a third of the JSON bodies get one leaf replaced by
a hostile value (NUL, a lone surrogate, a 100-digit integer, 'inf' / 'NaN', 1e308, a 100-deep array; the
transport cannot send NaN literals, which tests/webapp/api/test_input_limits.py sends raw), and a
``config`` field starts from a valid experiment config first, so the value gets past the outer checks.
Then a raw pass sends what the transport cannot generate, to every property of every body (JSON, form
and multipart) and every query parameter, one at a time: a 5,000-digit integer (past Python's int
conversion limit, which json.dumps cannot even write), a 100,000-deep array, a float that overflows, a
null (in forms the text ``null``, which REST framework's own JSON field let through) and long query values. At most
``RAW_PER_OPERATION`` requests each, so the whole file stays within a few minutes on 2 cores.
Only 5xx answers fail: 4xx is how the API refuses bad input (``not_a_server_error``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.webapp.helpers import SMALL_CONFIG
from webapp.teams.models import Membership, Project

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

EXAMPLES = int(os.environ.get("RLVR_SCHEMATHESIS_EXAMPLES", "25"))  # per operation
DATA = Path(__file__).resolve().parents[2] / "data"


def _schema() -> Any:
    from drf_spectacular.generators import SchemaGenerator

    return schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))


SCHEMA = _schema()
OPERATIONS = sorted(
    (result.ok() for result in SCHEMA.get_all_operations()), key=lambda op: (op.path, op.method)
)


def _objects(owner: User, project: Project) -> dict[str, Any]:
    """Real objects for every path id an operation may take, created fresh for each operation."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.webapp.helpers import record_steps
    from webapp.accounts.tokens import issue_token
    from webapp.annotation.models import Assignment
    from webapp.annotation.services import task_create_from_run
    from webapp.benchmarks.services import benchmark_create, eval_launch
    from webapp.datafiles.services import dataset_upload
    from webapp.experiments.models import Rollout
    from webapp.experiments.services import experiment_create, run_launch
    from webapp.rubrics.models import Criterion, Rubric
    from webapp.verification.models import VerifierVersion
    from webapp.verification.services import verifier_definition_create, verifier_test_case_create

    experiment = experiment_create(project=project, actor=owner, name="addition", config=SMALL_CONFIG)
    run = run_launch(experiment=experiment, actor=owner)
    record_steps(run, range(1, 3))
    upload = SimpleUploadedFile("addition.jsonl", (DATA / "addition.jsonl").read_bytes())
    dataset = dataset_upload(
        project=project, actor=owner, file=upload, filename="addition.jsonl", size=upload.size or 0
    )
    bob = User.objects.create_user(username="bob", password="pw-bob-123")
    Membership.objects.create(project=project, user=bob, role="annotator")
    benchmark = benchmark_create(
        project=project, actor=owner, name="add", source="builtin", config={}, builtin="builtin:addition"
    )
    eval_run = eval_launch(benchmark=benchmark, actor=owner, experiments=[experiment])[0]
    rubric = Rubric.objects.create(project=project, name="has-digit", created_by=owner)
    Criterion.objects.create(
        rubric=rubric,
        position=0,
        name="digit",
        scale="binary",
        min_value=0,
        max_value=1,
        scorer="rule",
        rule={"type": "regex", "params": {"pattern": r"\d"}},
    )
    task = task_create_from_run(run=run, rubric=rubric, actor=owner, annotators_per_item=1)
    definition = verifier_definition_create(project=project, actor=owner, name="exact", verifier="exact")
    case = verifier_test_case_create(
        definition=definition, actor=owner, completion="4", reference="4", expected_correct=True
    )
    return {
        "project_id": project.pk, "experiment_id": experiment.pk, "run_id": run.pk, "dataset_id": dataset.pk,
        "username": bob.username, "benchmark_id": benchmark.pk, "eval_run_id": eval_run.pk,
        "rollout_id": Rollout.objects.filter(run=run).values_list("pk", flat=True)[0], "rubric_id": rubric.pk, "task_id": task.pk,
        "assignment_id": Assignment.objects.filter(item__task=task).values_list("pk", flat=True)[0], "definition_id": definition.pk,
        "version_id": VerifierVersion.objects.filter(definition=definition).values_list("pk", flat=True)[0], "case_id": case.pk,
        "token_id": issue_token(owner, name="spare").record.pk,
    }  # fmt: skip


@pytest.fixture
def wsgi_app() -> Iterator[Any]:
    """Django's WSGI handler, minus the end-of-request connection close that would end the test's
    transaction (django.test.Client does the same)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = ["\x00", "a\x00b", 10**100, -(2**70), 10**299, "inf", "NaN", 1e308, {"k\x00": 1}, _nested(100)]
HOSTILE_JSON = st.sampled_from([*HOSTILE, "a\ud800b"])  # a lone surrogate cannot be form-encoded at all
HOSTILE_FORM = st.sampled_from(HOSTILE)


def _with_hostile_leaf(body: Any, data: st.DataObject, json_body: bool) -> Any:
    """A copy of ``body`` with one leaf (or one added key) replaced by a hostile value."""
    body = copy.deepcopy(body)
    target = body
    if isinstance(body, dict) and "config" in body:  # a valid config whose one leaf goes bad
        body["config"] = target = copy.deepcopy(SMALL_CONFIG)
    leaves: list[tuple[Any, Any]] = []
    stack = [target]
    while stack and len(leaves) < 500:
        node = stack.pop()
        for key, child in node.items() if isinstance(node, dict) else enumerate(node):
            (stack.append(child) if isinstance(child, dict | list) and child else leaves.append((node, key)))
    value = data.draw(HOSTILE_JSON if json_body else HOSTILE_FORM)
    if not leaves:
        return {"x": value} if isinstance(body, dict) else [value]
    parent, key = leaves[data.draw(st.integers(0, len(leaves) - 1))]
    parent[key] = value
    return body


RAW_PER_OPERATION = 40
HUGE = "9" * 5000
RAW_JSON = [HUGE, "-" + HUGE, "[" * 100_000 + "]" * 100_000, "1e999", "null"]  # JSON text of one value
RAW_FORM = [HUGE, "[" * 100_000, "null", "1e999"]  # one form value (a JSON field reads it as JSON)
RAW_QUERY = [HUGE, "null", "x" * 10_000, "x" * 70_000]  # the last past the query-string limit (414)


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMA.raw_schema["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _raw_requests(operation: Any) -> list[tuple[str, str, dict[str, str]]]:
    """(content type, body, query) for every hostile value in every body property and query parameter."""
    requests: list[tuple[str, str, dict[str, str]]] = []
    content = operation.definition.raw.get("requestBody", {}).get("content", {})
    for media, body in content.items():
        names = list(_resolve(body.get("schema", {})).get("properties", {})) or ["x"]
        for name in names:
            if media == "application/json":
                requests += [(media, '{"' + name + '": ' + value + "}", {}) for value in RAW_JSON]
            else:
                requests += [
                    ("application/x-www-form-urlencoded", urlencode({name: value}), {}) for value in RAW_FORM
                ]
    if content.get("application/json"):
        requests.append(("application/json", "[" * 100_000 + "]" * 100_000, {}))
    for parameter in operation.query:
        requests += [("", "", {parameter.name: value}) for value in RAW_QUERY]
    return requests[:RAW_PER_OPERATION]


def _send_raw(operation: Any, objects: dict[str, Any], token: str) -> list[str]:
    """The raw pass: a line for each request answered 5xx."""
    from django.test import Client

    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    path = operation.path.format(**{p.name: objects.get(p.name, 1) for p in operation.path_parameters})
    errors = []
    for content_type, body, query in _raw_requests(operation):
        url = f"{path}?{urlencode(query)}" if query else path
        response = client.generic(
            operation.method.upper(), url, body.encode(), content_type=content_type or "text/plain"
        )
        if response.status_code >= 500:
            errors.append(f"{response.status_code} for {operation.method.upper()} {url[:200]} {body[:200]!r}")
    return errors


def _known(operation: Any, objects: dict[str, Any]) -> dict[str, Any]:
    names = {p.name for p in operation.path_parameters}
    return {name: value for name, value in objects.items() if name in names}


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method.upper()} {op.path}")
def test_no_generated_request_gets_a_server_error(
    operation: Any, alice: User, project: Project, wsgi_app: Any
) -> None:
    from webapp.accounts.tokens import issue_token

    objects = _objects(alice, project)
    headers = {"Authorization": f"Token {issue_token(alice).token}"}
    server_errors: list[str] = []
    sent = [0]

    strategy = st.one_of(
        operation.as_strategy(path_parameters=_known(operation, objects)),
        operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=_known(operation, objects)),
        operation.as_strategy(),  # generated ids too: the 404 paths
    )

    @given(case=strategy, data=st.data())
    @settings(
        max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    def send(case: Any, data: st.DataObject) -> None:
        if isinstance(case.body, dict | list) and data.draw(st.integers(0, 2)) == 0:
            hostile = _with_hostile_leaf(case.body, data, json_body=case.media_type == "application/json")
            # In place: a reassigned body makes schemathesis re-validate it client-side, and its validator
            # cannot encode a lone surrogate (the server is what is under test here).
            if isinstance(case.body, dict):
                case.body.clear()
                case.body.update(hostile)
            else:
                case.body[:] = hostile
        response = case.call(app=wsgi_app, headers=headers)
        sent[0] += 1
        if response.status_code >= 500:
            server_errors.append(f"{response.status_code} for {case.as_curl_command()[:600]}")

    send()
    server_errors += _send_raw(operation, objects, issue_token(alice).token)
    print(f"{operation.method.upper()} {operation.path}: {sent[0]} requests + raw, {len(server_errors)} 5xx")
    assert not server_errors, "\n".join(server_errors[:5])
