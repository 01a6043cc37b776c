"""Configs as text over HTTP: ``POST /api/configs/parse/`` (YAML or JSON text -> a config mapping) and
``POST /api/configs/yaml/`` (a config mapping -> YAML), for the experiment form's YAML view and for clients
that keep their configs as files. Any signed-in user; nothing is stored or validated as a config here
(webapp/experiments/config_text.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.api.fields import StrictJSONField
from webapp.core.errors import InvalidInput
from webapp.experiments.config_text import MAX_CONFIG_TEXT_BYTES, config_yaml, parse_config_text


class ConfigTextIn(serializers.Serializer[None]):
    text = serializers.CharField(
        allow_blank=True, trim_whitespace=False,
        help_text=f"A whole experiment config as YAML or JSON, at most {MAX_CONFIG_TEXT_BYTES // 1024} KB; "
        "YAML anchors and aliases are refused.",
    )  # fmt: skip


class ConfigMappingOut(serializers.Serializer[None]):
    config = StrictJSONField(help_text="The mapping the text holds, as written (not validated).")


class ConfigMappingIn(serializers.Serializer[None]):
    config = StrictJSONField(help_text="An experiment config mapping.")


class ConfigYamlOut(serializers.Serializer[None]):
    yaml = serializers.CharField(help_text="The config as block-style YAML, keys in the order given.")


class ConfigParseApi(APIView):
    @extend_schema(
        request=ConfigTextIn, responses=ConfigMappingOut, summary="Read a YAML or JSON config text"
    )
    def post(self, request: Request) -> Response:
        data = ConfigTextIn(data=request.data)
        data.is_valid(raise_exception=True)
        return Response({"config": parse_config_text(data.validated_data["text"])})


class ConfigYamlApi(APIView):
    @extend_schema(request=ConfigMappingIn, responses=ConfigYamlOut, summary="Write a config as YAML")
    def post(self, request: Request) -> Response:
        data = ConfigMappingIn(data=request.data)
        data.is_valid(raise_exception=True)
        config = data.validated_data["config"]
        if not isinstance(config, dict):
            message = f"The config must be an object of sections, got {type(config).__name__}."
            raise InvalidInput(message, {"config": [message]})
        return Response({"yaml": config_yaml(config)})
