"""Pages: urls_pages_training (joined into urls_pages.py, the ``rewards`` namespace)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
