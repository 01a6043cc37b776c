from django.apps import AppConfig


class DatafilesConfig(AppConfig):
    name = "webapp.datafiles"
    label = "datafiles"
    verbose_name = "Data files"
