"""Browser pages: server-rendered templates, one small JS file per page (no bundler)."""

from django.urls import include, path

urlpatterns = [
    path("", include("webapp.pages.urls_core")),
    path("", include("webapp.pages.urls_rollouts")),
    path("", include("webapp.verification.urls_pages")),
    path("", include("webapp.rewards.urls_pages")),
    path("", include("webapp.benchmarks.urls_pages")),
    path("", include("webapp.rubrics.urls_pages")),
    path("", include("webapp.annotation.urls_pages")),
    path("", include("webapp.datafiles.urls_pages")),
]
