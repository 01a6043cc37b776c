"""CPU time to refuse nested YAML and JSON of growing sizes: the old reader against this tree's.

    .venv/bin/python benchmarks/nested_input_refusal.py                  # 1 KB .. 256 KB, old up to 8 KB
    .venv/bin/python benchmarks/nested_input_refusal.py --sizes-kb 40 --old-max-kb 40  # the probe's 40 KB

The texts are what a signed-in user can paste into the experiment form's YAML view (``/api/configs/parse/``,
at most 256 KB): open flow sequences ``[[[[...``, open flow mappings ``{a: {a: ...``, closed sequences
``a: [[...]]``, an indented block list, JSON ``[[[...`` and one huge integer. "old" is the reader before this
change: a full ``yaml.parse`` pre-pass (to find anchors) with no depth limit, then the loader. PyYAML's
scanner keeps each open flow collection as a possible key and rescans them all at each token, so that
pre-pass is quadratic. "new" is ``trainer.bounds.safe_yaml_load`` / ``strict_json_loads``: one event pass
with a depth counter that stops at the first level past 64 (libyaml's parser where PyYAML has it; "new-py"
is the same pass on PyYAML's pure-Python parser, the fallback). Each figure is the best of ``--repeat``
runs, in CPU seconds of this process. Writes benchmarks/results/nested_input_refusal.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from trainer import bounds

OUT = Path(__file__).resolve().parent / "results" / "nested_input_refusal.json"


def texts(size: int) -> dict[str, str]:
    """Each shape, ``size`` bytes long (or just under)."""
    return {
        "yaml-flow-seq": "[" * size,
        "yaml-flow-map": "{a: " * (size // 4),
        "yaml-closed-seq": "a: " + "[" * (size // 2 - 2) + "]" * (size // 2 - 2),
        "yaml-block-seq": "".join(" " * i + "- \n" for i in range(int((2 * size) ** 0.5))),
        "json-array": "[" * size,
        "int-digits": "a: " + "9" * (size - 3),
    }


def old_reader(text: str) -> None:
    """The reader before: its anchor pre-pass over every event (the depth-bounded composer after it is cheap)."""
    for _event in yaml.parse(text, Loader=yaml.SafeLoader):
        pass


def cpu_seconds(read: Callable[[str], None], text: str, repeat: int) -> tuple[float, str]:
    best, outcome = float("inf"), ""
    for _ in range(repeat):
        started = time.process_time()
        try:
            read(text)
            outcome = "accepted"
        except (yaml.YAMLError, ValueError, RecursionError) as err:
            outcome = type(err).__name__
        best = min(best, time.process_time() - started)
    return best, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-kb", type=int, nargs="+", default=[1, 2, 4, 8, 16, 64, 256])
    parser.add_argument(
        "--old-max-kb", type=int, default=8, help="skip the quadratic old reader past this size"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    python_parser = yaml.SafeLoader
    rows: list[dict[str, Any]] = []
    for kb in args.sizes_kb:
        for shape, text in texts(kb * 1024).items():
            is_json = shape.startswith("json")
            row: dict[str, Any] = {"shape": shape, "kb": kb}
            row["new_s"], row["new"] = cpu_seconds(
                bounds.strict_json_loads if is_json else bounds.safe_yaml_load, text, args.repeat
            )
            if not is_json:
                saved = bounds._YamlParser
                bounds._YamlParser = python_parser  # the fallback where PyYAML lacks libyaml
                try:
                    row["new_py_s"], row["new_py"] = cpu_seconds(bounds.safe_yaml_load, text, args.repeat)
                finally:
                    bounds._YamlParser = saved
            if kb <= args.old_max_kb:
                old = json.loads if is_json else old_reader
                row["old_s"], row["old"] = cpu_seconds(old, text, 1)
            rows.append(row)
            cells = "  ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())
            print(cells, flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    about = {
        "python": platform.python_version(),
        "pyyaml": yaml.__version__,
        "libyaml": yaml.__with_libyaml__,
    }
    OUT.write_text(json.dumps({"about": about, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
