"""API tokens for the CLI: ``POST /api/auth/token/`` trades a username and password for a new token.

The token is in this one answer only: the server keeps its SHA-256 digest (webapp/accounts/tokens.py).
Each call issues a fresh token that expires after ``RLVR_API_TOKEN_DAYS``; ``/api/tokens/`` lists and
revokes them. Failed passwords count towards the login lockout (django-axes, keyed by username and by
client address) like the sign-in page's; the throttle below also caps attempts per address.
"""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.accounts.lockout import ClientIpRateThrottle
from webapp.accounts.tokens import issue_token
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
    name = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=100,
        help_text="Where the token will be used (the CLI sends its host name); shown in the token list.",
    )  # fmt: skip


class TokenOut(serializers.Serializer[None]):
    token = serializers.CharField(help_text="Shown this once: the server keeps only its digest.")
    username = serializers.CharField()
    id = serializers.IntegerField()
    expires_at = serializers.DateTimeField()


class LoginThrottle(ClientIpRateThrottle):
    rate = "20/min"


class TokenApi(APIView):
    authentication_classes: tuple[type, ...] = ()
    permission_classes = (AllowAny,)
    throttle_classes = (LoginThrottle,)

    @extend_schema(request=TokenIn, responses=TokenOut, auth=[], summary="Get a new API token (CLI login)")
    def post(self, request: Request) -> Response:
        data = TokenIn(data=request.data)
        data.is_valid(raise_exception=True)
        username, password = data.validated_data["username"], data.validated_data["password"]
        user = authenticate(request._request, username=username, password=password)
        if user is None or not user.is_active:
            # A locked-out attempt also lands here; AxesMiddleware then answers 429 instead.
            raise InvalidInput("Wrong username or password.", {"password": ["Wrong username or password."]})
        issued = issue_token(user, name=data.validated_data["name"])
        body = {
            "token": issued.token, "username": user.get_username(), "id": issued.record.pk,
            "expires_at": issued.record.expires_at.isoformat(),
        }  # fmt: skip
        return Response(body, status=status.HTTP_200_OK)
