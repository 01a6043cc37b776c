from django.urls import path

from webapp.teams import api

urlpatterns = [
    path("projects/", api.ProjectListApi.as_view(), name="project-list"),
    path("projects/<int:project_id>/", api.ProjectDetailApi.as_view(), name="project-detail"),
    path("projects/<int:project_id>/members/", api.MembershipListApi.as_view(), name="membership-list"),
    path(
        "projects/<int:project_id>/members/<str:username>/",
        api.MembershipDetailApi.as_view(),
        name="membership-detail",
    ),
]
