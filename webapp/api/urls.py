"""Every /api/ route: its index, the apps' own lists plus token login and tokens, the OpenAPI schema and its docs page."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from webapp.api.auth import TokenApi
from webapp.api.docs import ApiDocsView
from webapp.api.index import ApiIndexView

urlpatterns = [
    path("", ApiIndexView.as_view(), name="api-index"),
    path("auth/token/", TokenApi.as_view(), name="auth-token"),
    path("", include("webapp.accounts.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", ApiDocsView.as_view(), name="api-docs"),
    path("", include("webapp.teams.urls")),
    path("", include("webapp.experiments.urls")),
    path("", include("webapp.datafiles.urls")),
    path("", include("webapp.verification.urls")),
    path("", include("webapp.rewards.urls")),
    path("", include("webapp.rewards.urls_training")),
    path("", include("webapp.rewards.urls_evaluation")),
    path("", include("webapp.rubrics.urls")),
    path("", include("webapp.benchmarks.urls")),
    path("", include("webapp.annotation.urls")),
    path("", include("webapp.ingest.urls")),
    path("", include("webapp.workspaces.urls")),
]
