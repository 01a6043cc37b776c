"""``POST /api/ingest/batches/``: one batch of an outside run (rlvr_client/wire.py says the shape)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.ingest.parsers import IngestJSONParser
from webapp.ingest.schema import parse_batch
from webapp.ingest.services import ingest_batch


class IngestBatchApi(APIView):
    parser_classes = (IngestJSONParser,)

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT},
        summary="Send a batch of an outside run (TRL, verl, a script): metrics, rollouts, checkpoints, outcome",
        description=(
            "Idempotent: the run is found by project and key (made by the first batch), metrics by step and key, "
            "rollouts by step, group and sample index. The body may be gzip-compressed (Content-Encoding: gzip). "
            "Needs the admin role in the project. The Python client (rlvr_client) batches, retries and spools."
        ),
    )
    def post(self, request: Request) -> Response:
        result = ingest_batch(user=request.user, batch=parse_batch(request.data))
        return Response(
            result.as_json(), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )
