"""/api/ routes of verifier definitions (included from webapp/api/urls.py)."""

from django.urls import path

from webapp.verification import api

urlpatterns = [
    path("verifier-registry/", api.VerifierRegistryApi.as_view(), name="verifier-registry"),
    path("projects/<int:project_id>/verifiers/", api.DefinitionListApi.as_view(), name="verifier-list"),
    path(
        "projects/<int:project_id>/verifier-versions/",
        api.ProjectVersionListApi.as_view(),
        name="project-verifier-versions",
    ),
    path("verifiers/<int:definition_id>/", api.DefinitionDetailApi.as_view(), name="verifier-detail"),
    path(
        "verifiers/<int:definition_id>/versions/", api.VersionListApi.as_view(), name="verifier-version-list"
    ),
    path("verifiers/<int:definition_id>/cases/", api.CaseListApi.as_view(), name="verifier-case-list"),
    path("verifier-cases/<int:case_id>/", api.CaseDetailApi.as_view(), name="verifier-case-detail"),
    path(
        "verifier-versions/<int:version_id>/", api.VersionDetailApi.as_view(), name="verifier-version-detail"
    ),
    path("verifier-versions/<int:version_id>/test/", api.BenchApi.as_view(), name="verifier-bench"),
    path("verifier-versions/<int:version_id>/audit/", api.AuditApi.as_view(), name="verifier-audit"),
    path("verifier-versions/<int:version_id>/rescore/", api.RescoreApi.as_view(), name="verifier-rescore"),
    path(
        "verifier-versions/<int:version_id>/jobs/",
        api.VersionJobListApi.as_view(),
        name="verifier-version-jobs",
    ),
    path("verification-jobs/<int:job_id>/", api.JobDetailApi.as_view(), name="verification-job-detail"),
    path(
        "verification-jobs/<int:job_id>/cancel/", api.JobCancelApi.as_view(), name="verification-job-cancel"
    ),
]
