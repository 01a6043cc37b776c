import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("experiments", "0002_run_verifier_versions"),
        ("verification", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="VerificationJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("audit", "Metamorphic audit"), ("rescore", "Rescore of a run's rollouts")],
                        max_length=16,
                    ),
                ),
                (
                    "limit",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Rescore only the newest this many rollouts; null: all of them.",
                        null=True,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("cancelled", "Cancelled"),
                        ],
                        db_index=True,
                        default="queued",
                        max_length=16,
                    ),
                ),
                ("done", models.PositiveIntegerField(default=0)),
                ("total", models.PositiveIntegerField(default=0)),
                (
                    "result",
                    models.JSONField(
                        blank=True, default=dict, help_text="The audit report or the rescore summary."
                    ),
                ),
                ("error", models.TextField(blank=True, default="")),
                (
                    "cancel_requested",
                    models.BooleanField(default=False, help_text="Stop at the next chunk boundary."),
                ),
                (
                    "attempts",
                    models.PositiveIntegerField(
                        default=0, help_text="Deliveries that started it (a dead worker's job restarts)."
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        blank=True,
                        help_text="The run whose rollouts a rescore scores; null for an audit.",
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="experiments.run",
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="jobs",
                        to="verification.verifierversion",
                    ),
                ),
            ],
            options={
                "ordering": ("-created_at", "-id"),
                "indexes": [models.Index(fields=["version", "kind", "-id"], name="verification_job_latest")],
            },
        ),
    ]
