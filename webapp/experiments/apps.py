from typing import Any

from django.apps import AppConfig
from django.core.checks import CheckMessage, Error, register
from django.core.exceptions import ImproperlyConfigured
from django.db.models.signals import post_delete


class ExperimentsConfig(AppConfig):
    name = "webapp.experiments"
    label = "experiments"
    verbose_name = "Experiments and runs"

    def ready(self) -> None:
        from webapp.experiments.models import Run
        from webapp.experiments.rollout_writes import delete_run_objects

        # However a run is deleted (its experiment, its project, the admin), its token objects go too.
        post_delete.connect(delete_run_objects, sender=Run, dispatch_uid="experiments.delete_run_objects")
        register(default_retention_is_valid)


def default_retention_is_valid(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """RLVR_ROLLOUT_RETENTION is checked at start-up, not at the first launch that would use it."""
    from webapp.experiments.retention import default_retention

    try:
        default_retention()
    except ImproperlyConfigured as err:
        return [Error(str(err), id="rlvr.E010")]
    return []
