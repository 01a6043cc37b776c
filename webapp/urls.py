"""Top-level URLs: the REST API under /api/, the admin, and session login/logout for the browser."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from webapp.core.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/", include("webapp.api.urls")),
    path("admin/", admin.site.urls),
    path("", include("webapp.pages.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
