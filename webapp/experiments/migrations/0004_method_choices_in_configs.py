"""Stored experiment and run configs in today's shape: each method's knobs inside its ``{name, params}``.

Earlier configs held method knobs flat (``algorithm.ecr_strength``, ``budget.vigor_rounds``...). The trainer
still reads that shape from files, but a stored config is shown in the form and re-validated at launch, so it
is rewritten here once, by trainer/config/legacy.py's ``upgrade_config`` (the record of the old shape): a
knob of a method the config did not choose is dropped, since it never had an effect.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from trainer.config.legacy import upgrade_config


def _forward(apps: Any, schema_editor: Any) -> None:
    for model in ("Experiment", "Run"):
        for row in apps.get_model("experiments", model).objects.only("pk", "config").iterator():
            if isinstance(row.config, dict):
                upgraded = upgrade_config(row.config)
                if upgraded != row.config:
                    row.config = upgraded
                    row.save(update_fields=["config"])


class Migration(migrations.Migration):
    dependencies = [("experiments", "0003_run_status_not_queued")]
    operations = [migrations.RunPython(_forward, migrations.RunPython.noop)]
