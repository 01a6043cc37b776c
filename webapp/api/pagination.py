"""Pagination for lists that grow without bound (runs, rollouts, events)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer, IntegerField, Serializer, URLField
from rest_framework.views import APIView


class Pages(PageNumberPagination):
    """``?page=N&page_size=M`` -> ``{"count", "next", "previous", "results"}``."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


def paginated_response(
    *,
    queryset: QuerySet[Any],
    serializer_class: type[BaseSerializer[Any]],
    request: Request,
    view: APIView,
) -> Response:
    paginator = Pages()
    page = paginator.paginate_queryset(queryset, request, view=view)
    assert page is not None  # Pages always paginates (page_size is set)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


_PAGE_SCHEMAS: dict[type[BaseSerializer[Any]], type[Serializer[Any]]] = {}


def page_of(serializer_class: type[BaseSerializer[Any]]) -> type[Serializer[Any]]:
    """The OpenAPI shape of one page of ``serializer_class`` items (for ``extend_schema(responses=...)``)."""
    if serializer_class not in _PAGE_SCHEMAS:
        name = serializer_class.__name__.removesuffix("Out")
        _PAGE_SCHEMAS[serializer_class] = type(
            f"Paginated{name}List",
            (Serializer,),
            {
                "count": IntegerField(),
                "next": URLField(allow_null=True),
                "previous": URLField(allow_null=True),
                "results": serializer_class(many=True),
            },
        )
    return _PAGE_SCHEMAS[serializer_class]
