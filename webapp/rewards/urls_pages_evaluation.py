"""Pages: urls_pages_evaluation (joined into urls_pages.py, the ``rewards`` namespace)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
