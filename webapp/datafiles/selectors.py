from __future__ import annotations

from django.db.models import QuerySet

from webapp.datafiles.models import Dataset
from webapp.teams.models import Project


def datasets_for_project(*, project: Project) -> QuerySet[Dataset]:
    return Dataset.objects.filter(project=project)
