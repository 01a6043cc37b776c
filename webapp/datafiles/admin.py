from django.contrib import admin

from webapp.datafiles.models import Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin[Dataset]):
    list_display = ("name", "project", "format", "rows", "created_at")
