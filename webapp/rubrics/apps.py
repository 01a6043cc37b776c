from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "webapp.rubrics"
    label = "rubrics"
    verbose_name = "Rubrics"
