"""Top-level URLs: the REST API under /api/, the admin, and session login/logout for the browser."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from webapp.core.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Browsers ask for /favicon.ico on their own; the icon is static/favicon.svg (linked from base.html).
    path("favicon.ico", RedirectView.as_view(url=f"{settings.STATIC_URL}favicon.svg", permanent=True)),
    path("api/", include("webapp.api.urls")),
    path("tinker/", include("webapp.training_api.urls")),  # the Tinker SDK's base_url (docs/tinker.md)
    path("admin/", admin.site.urls),
    path("", include("webapp.pages.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
