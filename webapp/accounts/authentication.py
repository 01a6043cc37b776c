"""REST framework authentication by ``Authorization: Token <token>``, checked against the hashed tokens."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from drf_spectacular.authentication import TokenScheme
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from webapp.accounts.models import ApiToken
from webapp.accounts.tokens import GET_A_NEW_ONE, TokenRefused, check_token

KEYWORD = "Token"


class ApiTokenAuthentication(BaseAuthentication):
    """Same header as before (``Token <token>``), so the CLI and scripts need no change."""

    keyword = KEYWORD  # read by the OpenAPI scheme below

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, ApiToken] | None:
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != self.keyword.lower().encode():
            return None
        if len(words) != 2:
            raise AuthenticationFailed(
                f"Invalid token header: send `Authorization: Token <token>`; {GET_A_NEW_ONE}."
            )
        try:
            token = words[1].decode("ascii")
        except UnicodeDecodeError:
            raise AuthenticationFailed(f"Invalid token: {GET_A_NEW_ONE}.") from None
        try:
            record = check_token(token)
        except TokenRefused as refused:
            raise AuthenticationFailed(str(refused)) from None
        return record.user, record

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiTokenScheme(TokenScheme):
    """Documents ApiTokenAuthentication in the OpenAPI schema as the ``Token`` header scheme."""

    target_class = "webapp.accounts.authentication.ApiTokenAuthentication"
