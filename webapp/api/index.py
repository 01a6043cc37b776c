"""``GET /api/``: where the API starts. The README and ``rlvr stack``'s banner print this address.

A short, fixed map of the main endpoints (not the whole schema: ``/api/docs/`` lists every operation and
``/api/schema/`` is the OpenAPI document), answered to anyone like the docs page: it names routes, never
data. Authentication runs as on every API view, so a bad token is still a 401 in the usual error shape.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

# name -> (path, what it is). Paths with <id> are templates; the rest can be fetched as they are.
MAIN_ENDPOINTS: dict[str, tuple[str, str]] = {
    "token": (
        "/api/auth/token/",
        "POST a username and password for an API token (Authorization: Token <key>)",
    ),
    "projects": ("/api/projects/", "your projects"),
    "experiments": ("/api/projects/<id>/experiments/", "a project's experiments; POST one with its config"),
    "runs": (
        "/api/runs/",
        "your runs; /api/runs/<id>/ for status, metrics/, rollouts/, checkpoints/, events/",
    ),
    "config_schema": ("/api/config-schema/", "the JSON schema of an experiment config, with every default"),
    "datasets": ("/api/projects/<id>/datasets/", "a project's uploaded data files"),
    "benchmarks": ("/api/projects/<id>/benchmarks/", "a project's benchmarks; /api/benchmarks/<id>/evals/"),
    "verifiers": ("/api/projects/<id>/verifiers/", "a project's saved verifiers and their versions"),
}


class ApiIndexOut(serializers.Serializer[None]):
    name = serializers.CharField()
    docs = serializers.CharField(help_text="Every operation, as a page.")
    schema = serializers.CharField(help_text="The OpenAPI document.")
    authenticated = serializers.BooleanField(
        help_text="Whether this request carried a valid session or token."
    )
    endpoints = serializers.DictField(child=serializers.DictField(child=serializers.CharField()))


class ApiIndexView(APIView):
    permission_classes = (AllowAny,)

    @extend_schema(
        responses=ApiIndexOut, summary="The API's index: its main endpoints and where the docs are"
    )
    def get(self, request: Request) -> Response:
        endpoints = {name: {"path": path, "about": about} for name, (path, about) in MAIN_ENDPOINTS.items()}
        return Response({
            "name": "RLVR Studio API", "docs": "/api/docs/", "schema": "/api/schema/",
            "authenticated": bool(request.user and request.user.is_authenticated), "endpoints": endpoints,
        })  # fmt: skip
