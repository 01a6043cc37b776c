"""/api/ routes: urls_training (included from webapp/api/urls.py)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
