from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "webapp.core"
    label = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        from webapp.core import checks  # noqa: F401  (registers the checks)
