"""``/api/tokens/``: a user's own API tokens (never the tokens themselves), and revoking them."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.accounts.models import ApiToken
from webapp.accounts.tokens import revoke_all_tokens, revoke_token
from webapp.api.auth import signed_in_user


class ApiTokenOut(serializers.ModelSerializer[ApiToken]):
    active = serializers.BooleanField(source="is_active", read_only=True)
    current = serializers.SerializerMethodField(help_text="The token this request was made with.")

    class Meta:
        model = ApiToken
        fields = (
            "id",
            "name",
            "prefix",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
            "active",
            "current",
        )

    def get_current(self, obj: ApiToken) -> bool:
        auth = self.context["request"].auth
        return isinstance(auth, ApiToken) and auth.pk == obj.pk


def own_tokens(request: Request) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=signed_in_user(request))


class TokenListApi(APIView):
    @extend_schema(responses=ApiTokenOut(many=True), summary="List your API tokens")
    def get(self, request: Request) -> Response:
        return Response(ApiTokenOut(own_tokens(request), many=True, context={"request": request}).data)

    @extend_schema(
        request=None,
        responses={204: None},
        operation_id="tokens_revoke_all",
        summary="Revoke all your API tokens",
    )
    def delete(self, request: Request) -> Response:
        revoke_all_tokens(signed_in_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenDetailApi(APIView):
    """``/api/tokens/<id>/``, or ``/api/tokens/current/`` for the token this request carries (logout)."""

    def token(self, request: Request, token_id: int | None) -> ApiToken:
        if token_id is None:
            if not isinstance(request.auth, ApiToken):
                raise NotFound("This request carries no API token: send `Authorization: Token <token>`.")
            return request.auth
        found = own_tokens(request).filter(pk=token_id).first()
        if found is None:
            raise NotFound(f"You hold no API token {token_id}: GET /api/tokens/ lists yours.")
        return found

    @extend_schema(responses=ApiTokenOut, summary="One of your API tokens")
    def get(self, request: Request, token_id: int | None = None) -> Response:
        return Response(ApiTokenOut(self.token(request, token_id), context={"request": request}).data)

    @extend_schema(request=None, responses={204: None}, summary="Revoke one of your API tokens")
    def delete(self, request: Request, token_id: int | None = None) -> Response:
        revoke_token(self.token(request, token_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
