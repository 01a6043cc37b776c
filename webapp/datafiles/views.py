"""Dataset pages: ``/projects/<id>/datasets/`` lists a project's data files with the experiments that use
them, and (for admins and owners) uploads one: the file is dropped or chosen, previewed by the API
(``POST /api/projects/<id>/datasets/preview/``), mapped to prompt / answer columns and stored by the
upload API, all in static/js/datasets.js. ``/datasets/<id>/delete/`` deletes one that nothing uses.

File contents reach the page only through ``json_script`` and ``textContent``.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webapp.core.errors import ApplicationError
from webapp.datafiles.preview import PREVIEW_ROWS, SHOWN_PROBLEMS
from webapp.datafiles.selectors import dataset_get_for_user, datasets_page
from webapp.datafiles.services import dataset_delete
from webapp.pages.views_common import report_error, role_context
from webapp.teams.selectors import project_get_for_user

ACCEPTED = ".jsonl,.ndjson,.json,.csv,.parquet"  # trainer.data.files.FORMAT_BY_SUFFIX


@login_required
def dataset_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_get_for_user(project_id=project_id, user=request.user)
    saved = request.GET.get("saved", "")
    limit_mb = int(settings.RLVR_MAX_UPLOAD_MB)
    page_data = {
        "project_id": project.pk,
        "preview_url": reverse("dataset-preview", args=[project.pk]),
        "upload_url": reverse("dataset-list", args=[project.pk]),
        "list_url": reverse("datasets:list", args=[project.pk]),
        "max_upload_bytes": limit_mb * 1024 * 1024,
        "max_upload_mb": limit_mb,
        "accepted": ACCEPTED.split(","),
        "shown_problems": SHOWN_PROBLEMS,
    }
    context = {
        "project": project,
        "rows": datasets_page(project=project),
        "saved_id": int(saved) if saved.isdigit() else None,
        "accepted": ACCEPTED,
        "limit_mb": limit_mb,
        "preview_rows": PREVIEW_ROWS,
        "shown_problems": SHOWN_PROBLEMS,
        "page_data": page_data,
        **role_context(project=project, request=request),
    }
    return render(request, "datafiles/dataset_list.html", context)


@login_required
@require_POST
def dataset_delete_view(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = dataset_get_for_user(dataset_id=dataset_id, user=request.user)
    project_id, name = dataset.project_id, dataset.name
    try:
        dataset_delete(dataset=dataset, actor=request.user)
    except (ApplicationError, PermissionDenied) as err:
        report_error(request, err)
    else:
        messages.success(request, f"Dataset {name!r} was deleted.")
    return redirect("datasets:list", project_id=project_id)
