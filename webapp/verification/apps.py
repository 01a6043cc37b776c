from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "webapp.verification"
    label = "verification"
    verbose_name = "Verifier definitions"
