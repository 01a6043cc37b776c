from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = (
        ("experiments", "0001_initial"),
        ("verification", "0001_initial"),
    )

    operations = (
        migrations.AddField(
            model_name="run",
            name="verifier_versions",
            field=models.ManyToManyField(
                blank=True,
                help_text="The saved verifier versions whose exact verifier and params the run's config uses.",
                related_name="runs",
                to="verification.verifierversion",
            ),
        ),
    )
