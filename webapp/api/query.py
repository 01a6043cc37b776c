from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.serializers import Serializer


def parsed_query(serializer_class: type[Serializer[Any]], request: Request) -> dict[str, Any]:
    """Validate ``request.query_params`` with a serializer; a bad value is a 400 naming the parameter.

    Read as a plain dict, not a QueryDict: DRF treats a missing boolean in HTML form input as False, and
    an absent ``correct`` filter must mean "either".
    """
    data = serializer_class(data=request.query_params.dict())
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)
