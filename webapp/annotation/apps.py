from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "webapp.annotation"
    label = "annotation"
    verbose_name = "Annotation"
