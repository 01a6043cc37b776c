"""The `rlvr` API client: stays free of Django and torch, keeps its token private, talks the API's shapes,
and `tail` prints each step once whichever way it arrives."""

from __future__ import annotations

import json
import stat
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest

from rlvr_client import client
from rlvr_client.client import Api, ClientError, Credentials, Tail


def test_the_entry_point_sends_each_command_to_its_layer() -> None:
    from webapp import cli

    assert cli._layer("train") is not None and cli._layer("train").__module__ == "trainer.cli"  # type: ignore[union-attr]
    assert cli._layer("stack").__module__ == "webapp.stack"  # type: ignore[union-attr]
    assert cli._layer("tail").__module__ == "rlvr_client.client"  # type: ignore[union-attr]
    assert cli._layer("import").__module__ == "rlvr_client.import_cli"  # type: ignore[union-attr]
    assert cli.main(["no-such-command"]) == 2


def test_credentials_are_readable_by_their_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    path = client.save_credentials(Credentials(url="http://h:8000", token="abc", username="alice"))

    assert path == tmp_path / "rlvr-studio" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert client.load_credentials() == Credentials(url="http://h:8000", token="abc", username="alice")


def test_a_missing_login_says_how_to_log_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(ClientError, match="rlvr login"):
        client.load_credentials()


@pytest.mark.parametrize(
    ("base", "expected"),
    [
        ("http://localhost:8000", "ws://localhost:8000/ws/runs/7/?token=t%2Fk"),
        ("https://rlvr.example.com/studio", "wss://rlvr.example.com/studio/ws/runs/7/?token=t%2Fk"),
    ],
)
def test_the_websocket_url_follows_the_server_url(base: str, expected: str) -> None:
    assert client.websocket_url(base, 7, "t/k") == expected


def test_a_bare_host_is_read_as_http() -> None:
    assert client.normalize_url("localhost:8000/") == "http://localhost:8000"
    with pytest.raises(ClientError):
        client.normalize_url("ftp://x")


def test_an_api_error_names_the_wrong_fields() -> None:
    response = httpx.Response(
        400,
        json={
            "message": "Invalid config.",
            "extra": {"fields": {"config.training.learning_rate": ["Input should be greater than 0"]}},
        },
    )
    assert client.error_message(response) == (
        "Invalid config.\n  config.training.learning_rate: Input should be greater than 0"
    )


def test_a_step_line_shows_the_main_metrics_in_a_fixed_order() -> None:
    line = client.format_step_line(
        5, 12, {"actor/pg_loss": -0.01234, "rollout/reward_mean": 0.5, "other/x": 1.0}
    )
    assert line == "step  5/12  reward_mean 0.5  pg_loss -0.01234"


def test_metric_columns_become_one_mapping_per_step() -> None:
    series = {
        "rollout/reward_mean": {"step": [4, 5], "value": [0.4, None], "min": [0.4, None], "max": [0.4, None]},
        "actor/kl": {"step": [5], "value": [0.01], "min": [0.01], "max": [0.01]},
    }
    assert client.steps_from_series(series) == {
        4: {"rollout/reward_mean": 0.4},
        5: {"rollout/reward_mean": None, "actor/kl": 0.01},
    }


def test_the_runs_table_names_projects() -> None:
    table = client.format_runs_table(
        [
            {
                "id": 3,
                "status": "running",
                "step": 4,
                "max_steps": 10,
                "project": 1,
                "experiment_name": "demo",
                "created_at": "2026-01-02T03:04:05.123Z",
            }
        ],
        {1: "lab"},
    )
    assert table.splitlines()[1].split() == ["3", "running", "4/10", "lab", "demo", "2026-01-02", "03:04:05"]


class FakeServer:
    """Answers the API's endpoints from an in-memory run that advances one step per metrics request."""

    def __init__(self) -> None:
        self.step, self.max_steps, self.requests = 0, 3, []  # type: ignore[var-annotated]
        self.experiments: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path, dict(request.url.params)))
        path = request.url.path
        if path == "/api/auth/token/":
            body = json.loads(request.content)
            if body["password"] != "right":
                return httpx.Response(
                    400, json={"message": "Unable to log in with provided credentials.", "extra": {}}
                )
            return httpx.Response(200, json={"token": "tok"})
        if request.headers.get("Authorization") != "Token tok":
            return httpx.Response(
                401, json={"message": "Authentication credentials were not provided.", "extra": {}}
            )
        if path == "/api/projects/":
            return httpx.Response(200, json=[{"id": 1, "slug": "lab", "name": "Lab"}])
        if path == "/api/projects/1/experiments/":
            self.experiments.append(json.loads(request.content))
            return httpx.Response(201, json={"id": 9, **self.experiments[-1]})
        if path == "/api/experiments/9/runs/":
            return httpx.Response(201, json={"id": 4, "status": "queued"})
        if path == "/api/runs/":
            page = int(request.url.params.get("page", 1))
            nxt = "http://test/api/runs/?page=2" if page == 1 else None
            return httpx.Response(
                200, json={"count": 2, "next": nxt, "previous": None, "results": [{"id": page}]}
            )
        if path == "/api/runs/4/":
            status = "succeeded" if self.step >= self.max_steps else "running"
            return httpx.Response(
                200, json={"id": 4, "status": status, "step": self.step, "max_steps": self.max_steps}
            )
        if path == "/api/runs/4/metrics/":
            since = int(request.url.params["since_step"])
            self.step = min(self.step + 1, self.max_steps)
            steps = list(range(since + 1, self.step + 1))
            values = [s / 10 for s in steps]
            series = {"step": steps, "value": values, "min": values, "max": values}
            return httpx.Response(
                200, json={"step": self.step, "status": "running", "metrics": {"rollout/reward_mean": series}}
            )
        return httpx.Response(404, json={"message": "Not found.", "extra": {}})


@pytest.fixture
def server() -> FakeServer:
    return FakeServer()


def api(server: FakeServer, token: str | None = "tok") -> Api:
    return Api("http://test", token, transport=httpx.MockTransport(server))


def test_login_returns_the_token_and_a_wrong_password_says_why(server: FakeServer) -> None:
    assert api(server, None).login("alice", "right") == "tok"
    with pytest.raises(ClientError, match="Unable to log in"):
        api(server, None).login("alice", "wrong")


def test_an_expired_token_asks_to_log_in_again(server: FakeServer) -> None:
    with pytest.raises(ClientError, match="rlvr login"):
        api(server, "old").runs()


def test_runs_follows_every_page(server: FakeServer) -> None:
    assert [r["id"] for r in api(server).runs()] == [1, 2]


def test_launch_creates_the_experiment_in_the_named_project_then_a_run(server: FakeServer) -> None:
    a = api(server)
    experiment = a.create_experiment(a.project_id("lab"), "my-exp", {"training": {"max_steps": 3}}, "")
    assert a.launch(experiment["id"])["id"] == 4
    assert server.experiments == [
        {"name": "my-exp", "description": "", "config": {"training": {"max_steps": 3}}}
    ]
    with pytest.raises(ClientError, match="you belong to: lab"):
        a.project_id("elsewhere")


def test_tail_by_polling_prints_each_step_once_then_the_outcome(server: FakeServer) -> None:
    out = StringIO()
    tail = Tail(api(server), 4, out)
    tail.refresh_status()
    tail.via_polling(sleep=lambda s: None)
    assert tail.finish() == 0
    assert out.getvalue().splitlines() == [
        "step 1/3  reward_mean 0.1",
        "step 2/3  reward_mean 0.2",
        "step 3/3  reward_mean 0.3",
        "run 4 succeeded at step 3",
    ]


def test_tail_fills_a_gap_in_websocket_events_from_the_rest_api(server: FakeServer) -> None:
    out = StringIO()
    tail = Tail(api(server), 4, out)
    assert not tail.handle({"type": "run.hello", "run_id": 4, "status": "running", "step": 0, "max_steps": 3})
    server.step = 2  # the server stored steps 1..2 while we were away; the next event is step 3
    assert not tail.handle(
        {"type": "run.step", "run_id": 4, "step": 3, "max_steps": 3, "metrics": {"rollout/reward_mean": 0.3}}
    )
    assert tail.handle({"type": "run.status", "run_id": 4, "status": "succeeded"})
    assert [line.split()[1] for line in out.getvalue().splitlines()] == ["1/3", "2/3", "3/3"]
