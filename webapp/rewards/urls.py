"""/api/ routes: urls (included from webapp/api/urls.py)."""

from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
