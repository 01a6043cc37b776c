import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = (
        ("teams", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    )

    operations = (
        migrations.CreateModel(
            name="VerifierDefinition",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=120)),
                ("description", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
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
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="verifier_definitions",
                        to="teams.project",
                    ),
                ),
            ],
            options={
                "ordering": ("name", "id"),
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "name"), name="verifier_name_unique_in_project"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="VerifierVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.PositiveIntegerField(help_text="1, 2, 3, ... within the definition.")),
                (
                    "verifier",
                    models.CharField(
                        help_text="Trainer verifier registry name (math, exact, code, ...).", max_length=64
                    ),
                ),
                (
                    "params",
                    models.JSONField(
                        default=dict,
                        help_text="The verifier's parameters, validated, with every default filled in.",
                    ),
                ),
                (
                    "note",
                    models.CharField(
                        blank=True, default="", help_text="What changed in this version.", max_length=300
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "test_status",
                    models.CharField(
                        choices=[
                            ("passing", "Passing"),
                            ("failing", "Failing"),
                            ("no_cases", "No test cases"),
                        ],
                        default="no_cases",
                        max_length=16,
                    ),
                ),
                (
                    "test_results",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="One entry per test case of the last check: case id, verdict, pass.",
                    ),
                ),
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
                    "definition",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="versions",
                        to="verification.verifierdefinition",
                    ),
                ),
            ],
            options={
                "ordering": ("definition_id", "-number"),
                "constraints": [
                    models.UniqueConstraint(
                        fields=("definition", "number"), name="one_version_number_per_definition"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="VerifierTestCase",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(blank=True, default="", max_length=200)),
                ("completion", models.TextField()),
                (
                    "reference",
                    models.TextField(
                        blank=True, help_text="Reference answer; null for label-free verifiers.", null=True
                    ),
                ),
                (
                    "expected_correct",
                    models.BooleanField(help_text="The verdict it must get: accepted (true) or rejected."),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
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
                    "definition",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="test_cases",
                        to="verification.verifierdefinition",
                    ),
                ),
            ],
            options={"ordering": ("id",)},
        ),
    )
