"""A live RLVR Studio for the integration tests: pytest-django's live server, alice's project, and her API
token in $RLVR_URL / $RLVR_TOKEN, as a user sets them before training with TRL, verl or a script."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Studio:
    url: str
    http: httpx.Client
    project: Any

    def get(self, path: str, **params: Any) -> Any:
        response = self.http.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def runs(self) -> list[Any]:
        from webapp.experiments.models import Run

        return list(Run.objects.filter(experiment__project=self.project))

    def only_run(self) -> Any:
        from webapp.experiments.models import Run

        return Run.objects.get(experiment__project=self.project)

    def metric(self, run_id: int, key: str) -> dict[str, list[Any]]:
        series: dict[str, list[Any]] = self.get(f"/api/runs/{run_id}/metrics/", keys=key)["metrics"].get(
            key, {}
        )
        return series

    def metric_steps(self, run_id: int, key: str) -> list[int]:
        return list(self.metric(run_id, key).get("step", []))

    def rollouts(self, run_id: int, step: int) -> list[dict[str, Any]]:
        rows = self.get(f"/api/runs/{run_id}/rollouts/", step=step, page_size=500)["results"]
        return sorted(rows, key=lambda r: (r["group"], r["sample_index"]))

    def rollout_detail(self, run_id: int, rollout_id: int) -> dict[str, Any]:
        detail: dict[str, Any] = self.get(f"/api/runs/{run_id}/rollouts/{rollout_id}/")
        return detail

    def import_(self, *args: str) -> int:
        from rlvr_client.import_cli import main as import_main

        return import_main(["import", *args, "--project", self.project.slug])
