"""Reward model pages (included from webapp/pages/urls.py); names live in the ``rewards`` namespace.

Training and evaluation pages are listed in their own modules and joined here."""

from django.urls import URLPattern

from webapp.rewards import urls_pages_evaluation, urls_pages_training

app_name = "rewards"

urlpatterns: list[URLPattern] = [*urls_pages_training.urlpatterns, *urls_pages_evaluation.urlpatterns]
