"""The datasets page by role, the experiments each dataset is used by, deleting one only when nothing uses
it, and the experiment form's dataset choices."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.webapp.helpers import SMALL_CONFIG
from webapp.datafiles.models import Dataset
from webapp.datafiles.selectors import dataset_choices
from webapp.datafiles.services import dataset_upload
from webapp.experiments.models import Experiment, Run
from webapp.teams.models import Project

DATA = Path(__file__).resolve().parents[2] / "data"
Join = Callable[[User, str | None], User]


def stored(
    project: Project,
    alice: User,
    filename: str = "addition.jsonl",
    name: str = "",
    answer_field: str | None = "answer",
) -> Dataset:
    path = DATA / filename
    with path.open("rb") as f:
        return dataset_upload(
            project=project, actor=alice, file=f, filename=path.name, size=path.stat().st_size, name=name,
            answer_field=answer_field,
        )  # fmt: skip


def trains_on(project: Project, alice: User, dataset: Dataset, name: str) -> Experiment:
    from webapp.experiments.services import experiment_create

    data = {
        "source": "file",
        "path": f"dataset:{dataset.pk}",
        "prompt_field": "prompt",
        "answer_field": "answer",
    }
    return experiment_create(project=project, actor=alice, name=name, config={**SMALL_CONFIG, "data": data})


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(client: Client, project: Project) -> str:
    response = client.get(f"/projects/{project.pk}/datasets/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_viewer_sees_the_list_without_upload_or_delete(
    project: Project, alice: User, bob: User, join: Join
) -> None:
    dataset = stored(project, alice)
    html = page(signed_in(join(bob, "viewer")), project)
    assert f'id="dataset-{dataset.pk}"' in html and "addition" in html and f"dataset:{dataset.pk}" in html
    assert ">4</td>" in html  # rows
    assert "prompt → answer" in html and "alice" in html and "jsonl" in html
    assert 'id="drop-zone"' not in html and "Delete</button>" not in html and "datasets.js" not in html
    assert "Use in a new experiment" not in html


def test_an_admin_sees_the_drop_zone_the_limit_and_the_new_experiment_link(
    project: Project, alice: User, bob: User, join: Join, settings: Any
) -> None:
    settings.RLVR_MAX_UPLOAD_MB = 7
    dataset = stored(project, alice)
    html = page(signed_in(join(bob, "admin")), project)
    assert 'id="drop-zone"' in html and 'type="file"' in html and "js/datasets.js" in html
    assert 'id="limit-mb">7 MB' in html and '"max_upload_bytes": 7340032' in html
    assert f'href="/projects/{project.pk}/experiments/new/?dataset={dataset.pk}"' in html
    assert f'action="/datasets/{dataset.pk}/delete/"' in html


def test_the_page_names_the_experiments_that_use_each_dataset(project: Project, alice: User) -> None:
    used, unused = stored(project, alice), stored(project, alice, name="spare")
    experiment = trains_on(project, alice, used, "trains <on> it")
    html = page(signed_in(alice), project)
    row = html[html.index(f'id="dataset-{used.pk}"') :]
    row = row[: row.index("</tr>")]
    assert f'href="/experiments/{experiment.pk}/">trains &lt;on&gt; it</a>' in row
    assert "in use" in row and "Delete</button>" not in row
    spare = html[html.index(f'id="dataset-{unused.pk}"') :]
    assert "unused" in spare[: spare.index("</tr>")]


def test_a_saved_dataset_is_announced_with_a_link_to_use_it(project: Project, alice: User) -> None:
    dataset = stored(project, alice)
    html = signed_in(alice).get(f"/projects/{project.pk}/datasets/?saved={dataset.pk}").content.decode()
    assert 'id="saved-notice"' in html and f"?dataset={dataset.pk}" in html
    assert f'id="dataset-{dataset.pk}" data-dataset="{dataset.pk}" class="saved"' in html


def test_outsiders_get_404_and_anonymous_users_sign_in(
    project: Project, alice: User, bob: User, join: Join
) -> None:
    dataset = stored(project, alice)
    outsider = signed_in(join(bob, None))
    assert outsider.get(f"/projects/{project.pk}/datasets/").status_code == 404
    assert outsider.post(f"/datasets/{dataset.pk}/delete/").status_code == 404
    anonymous = Client().get(f"/projects/{project.pk}/datasets/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_the_project_page_links_to_its_datasets(project: Project, alice: User) -> None:
    assert (
        f'href="/projects/{project.pk}/datasets/"'
        in signed_in(alice).get(f"/projects/{project.pk}/").content.decode()
    )


def test_an_unused_dataset_is_deleted_with_its_file(
    project: Project, alice: User, django_capture_on_commit_callbacks: Any
) -> None:
    dataset = stored(project, alice)
    path = Path(dataset.path)
    with django_capture_on_commit_callbacks(execute=True):  # the file goes after the row's deletion commits
        response = signed_in(alice).post(f"/datasets/{dataset.pk}/delete/", follow=True)
    assert "Dataset &#x27;addition&#x27; was deleted." in response.content.decode()
    assert not Dataset.objects.exists() and not path.exists()


def test_a_dataset_an_experiment_uses_is_not_deleted(project: Project, alice: User) -> None:
    dataset = stored(project, alice)
    trains_on(project, alice, dataset, "grpo")
    response = signed_in(alice).post(f"/datasets/{dataset.pk}/delete/", follow=True)
    assert (
        "is used by experiment &#x27;grpo&#x27;: change or delete those first." in response.content.decode()
    )
    assert Dataset.objects.filter(pk=dataset.pk).exists() and Path(dataset.path).exists()


def test_a_dataset_a_past_run_trained_on_is_not_deleted(
    project: Project, alice: User, api: Callable[[User | None], APIClient]
) -> None:
    dataset = stored(project, alice)
    experiment = trains_on(project, alice, dataset, "grpo")
    run = Run.objects.create(experiment=experiment, config=experiment.config)
    experiment.config = {**experiment.config, "data": {"source": "demo", "size": 8}}  # moved on since
    experiment.save(update_fields=["config"])
    response = api(alice).delete(f"/api/datasets/{dataset.pk}/")
    assert response.status_code == 409
    assert f"run #{run.pk} (grpo)" in response.json()["message"]
    other = stored(project, alice, name="other")  # dataset:1 must not match dataset:10 and so on
    assert api(alice).delete(f"/api/datasets/{other.pk}/").status_code == 204


def test_a_viewer_cannot_delete(
    project: Project, alice: User, bob: User, join: Join, api: Callable[[User | None], APIClient]
) -> None:
    dataset = stored(project, alice)
    viewer = join(bob, "viewer")
    signed_in(viewer).post(f"/datasets/{dataset.pk}/delete/")
    assert api(viewer).delete(f"/api/datasets/{dataset.pk}/").status_code == 403
    assert Dataset.objects.filter(pk=dataset.pk).exists()


def test_the_form_choices_are_newest_first_with_their_reference_and_mapping(
    project: Project, alice: User
) -> None:
    first = stored(project, alice)
    second = stored(project, alice, "missing_answer.jsonl", name="label free", answer_field=None)
    choices = dataset_choices(project=project)
    assert [c["id"] for c in choices] == [second.pk, first.pk]
    assert choices[1] == {
        "id": first.pk, "ref": f"dataset:{first.pk}", "name": "addition", "rows": 4,
        "prompt_field": "prompt", "answer_field": "answer",
    }  # fmt: skip
    assert choices[0]["answer_field"] is None


def test_the_form_choices_are_only_the_projects_own(project: Project, alice: User, bob: User) -> None:
    from webapp.teams.services import project_create

    stored(project, alice)
    elsewhere = project_create(name="Elsewhere", owner=bob)
    assert dataset_choices(project=elsewhere) == []
