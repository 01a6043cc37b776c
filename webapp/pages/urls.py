"""Browser pages: server-rendered templates, one small JS file per page (no bundler)."""

from django.urls import include, path

urlpatterns = [
    path("", include("webapp.pages.urls_core")),
    path("", include("webapp.pages.urls_rollouts")),
]
