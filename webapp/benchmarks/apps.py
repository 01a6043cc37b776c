from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    name = "webapp.benchmarks"
    label = "benchmarks"
    verbose_name = "Benchmarks and evaluations"
