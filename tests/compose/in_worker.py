"""Run inside the worker container (`docker compose exec -T worker python -c <this file>`): scores
code with the `code` verifier, then runs one program from tests/trainer/sandbox_attacks.py (its text in
$ATTACK_PROGRAM) in trainer.sandbox. Prints one JSON object."""

import json
import os

from trainer.samples import Sample
from trainer.sandbox import Limits, require_sandbox, run_python
from trainer.verifiers.code_exec import CodeParams, CodeVerifier

require_sandbox()
tests = '[{"input": "2 3", "output": "5"}]'
completions = ["```python\na, b = map(int, input().split())\nprint(a + b)\n```", "```python\nprint(6)\n```"]
rewards = [r.reward for r in CodeVerifier(CodeParams())(completions, [Sample("s", "add", tests)] * 2)]
attack = run_python(os.environ["ATTACK_PROGRAM"], limits=Limits(wall_s=5, cpu_s=3))
print(json.dumps({"rewards": rewards, "attack_status": attack.status, "attack_stdout": attack.stdout}))
