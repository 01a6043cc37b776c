"""Training methods, one registry ("axis") per choice a config makes; see README.md beside this file.

Every module of this package is imported here, so a method registers by existing: adding one is a new
module (its params model, its hooks, its checks), with no edit to the step, the config or the web form.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

from trainer.methods.advantages import ADVANTAGES, compute_advantages  # noqa: E402
from trainer.methods.aggregation import AGGREGATIONS, AggregationContext  # noqa: E402
from trainer.methods.axes import AXES, HOOK_POINTS, ActiveMethod, Axis  # noqa: E402
from trainer.methods.policy_losses import POLICY_LOSSES, PolicyLossOutput  # noqa: E402
from trainer.methods.regularizers import KL_ESTIMATORS  # noqa: E402
from trainer.methods.step_credit import STEP_CREDIT, StepCreditInputs  # noqa: E402
from trainer.methods.token_credit import TOKEN_CREDIT, CreditInputs  # noqa: E402

__all__ = [
    "ADVANTAGES",
    "AGGREGATIONS",
    "AXES",
    "HOOK_POINTS",
    "KL_ESTIMATORS",
    "POLICY_LOSSES",
    "STEP_CREDIT",
    "TOKEN_CREDIT",
    "ActiveMethod",
    "AggregationContext",
    "Axis",
    "CreditInputs",
    "PolicyLossOutput",
    "StepCreditInputs",
    "compute_advantages",
]
