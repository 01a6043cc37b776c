from django.apps import AppConfig


class TrainingApiConfig(AppConfig):
    name = "webapp.training_api"
    label = "training_api"
    verbose_name = "Tinker-compatible training API"
