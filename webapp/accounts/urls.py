from django.urls import path

from webapp.accounts import api

urlpatterns = [
    path("tokens/", api.TokenListApi.as_view(), name="token-list"),
    path("tokens/current/", api.TokenDetailApi.as_view(), name="token-current"),
    path("tokens/<int:token_id>/", api.TokenDetailApi.as_view(), name="token-detail"),
]
