"""API tokens for the CLI: ``POST /api/auth/token/`` trades a username and password for a token."""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from webapp.core.errors import InvalidInput


def signed_in_user(request: Request) -> User:
    """``request.user`` for views behind IsAuthenticated, typed as a real user."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise NotAuthenticated()
    return user


class TokenIn(serializers.Serializer[None]):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)


class TokenOut(serializers.Serializer[None]):
    token = serializers.CharField()
    username = serializers.CharField()


class LoginThrottle(AnonRateThrottle):
    rate = "20/min"


class TokenApi(APIView):
    authentication_classes: tuple[type, ...] = ()
    permission_classes = (AllowAny,)
    throttle_classes = (LoginThrottle,)

    @extend_schema(request=TokenIn, responses=TokenOut, auth=[], summary="Get an API token (CLI login)")
    def post(self, request: Request) -> Response:
        data = TokenIn(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(request._request, **data.validated_data)
        if user is None or not user.is_active:
            raise InvalidInput(
                "Wrong username or password.", {"password": ["Wrong username or password."]}
            )
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key, "username": user.get_username()}, status=status.HTTP_200_OK)
