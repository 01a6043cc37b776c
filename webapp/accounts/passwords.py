"""A new password ends every API token of its user (someone who knew the old one may hold a token)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, User


class RevokeTokensOnPasswordChange:
    """Listed in AUTH_PASSWORD_VALIDATORS for Django's ``password_changed`` hook, which runs on each save
    after ``set_password`` (admin, ``changepassword``, a password-change form); it rejects no password.
    A hasher upgrade at login re-saves the same password without calling it."""

    def validate(self, password: str, user: AbstractBaseUser | None = None) -> None:
        return None

    def password_changed(self, password: str, user: AbstractBaseUser | None = None) -> None:
        from webapp.accounts.tokens import revoke_all_tokens

        if isinstance(user, User) and user.pk is not None:
            revoke_all_tokens(user)

    def get_help_text(self) -> str:
        return "Changing a password revokes every API token of the account (run `rlvr login` again)."
