"""One-off: move arms stored under the version-3 keys (code revision + model hashes + config) to the version-4
keys of what was trained (store.py). Run once: ``python -m benchmarks.reproduce.migrate``.

Numbers are untouched (the JSON is re-read and re-written, floats round-trip exactly) and the provenance each
arm recorded is kept as it was (code revision, git commit, models, created); what is added is the new key, the
keyed spec, the spec to retrain it (``spec``) and where it came from (``migrated_from``). ThinkPrior's prior file
path in the recorded overrides becomes the anchor pass's declared spec (prepare.ANCHOR_PASS). Two old arms that
are the same arm under the new key (plain GRPO trained at two code revisions) keep the later one; the other is
listed in ``also_trained`` with whether its numbers were the same.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.reproduce.evaluation import EvalSpec
from benchmarks.reproduce.measures import ArmResult
from benchmarks.reproduce.plan import Places
from benchmarks.reproduce.prepare import ANCHOR_PASS, prepared_path
from benchmarks.reproduce.reach import same_steps
from benchmarks.reproduce.store import (
    STORE_VERSION,
    ArmSpec,
    arm_key,
    keyed,
    load_arm,
    stored_path,
    write_arm,
)


def spec_of(arm: ArmResult) -> ArmSpec:
    """The version-4 spec of an arm stored by the version-3 harness."""
    extra = arm.extra
    overrides = copy.deepcopy(extra["overrides"])
    prepare = None
    if (overrides.get("budget") or {}).pop("prior_file", None):
        prepare = ANCHOR_PASS
    steps = int(extra["steps"])
    eval_every = int(arm.evals[1]["step"]) if len(arm.evals) > 1 else steps
    return ArmSpec(overrides, int(extra["seed"]), steps, eval_every, EvalSpec(**extra["eval"]), prepare)


def _same(a: ArmResult, b: ArmResult) -> bool:
    return not same_steps(a.metrics, b.metrics) and a.evals == b.evals


def migrate(store: Path, log: Any = print) -> dict[str, str]:
    """{old key: new key} for every version-3 arm in ``store``; the files are rewritten in place."""
    groups: dict[str, list[tuple[str, ArmResult, ArmSpec]]] = {}
    for path in sorted(store.glob("*.json.gz")):
        arm = load_arm(path)
        if int(arm.extra.get("v", 0)) >= STORE_VERSION:
            continue
        spec = spec_of(arm)
        groups.setdefault(arm_key(spec), []).append((path.name.removesuffix(".json.gz"), arm, spec))
    moved: dict[str, str] = {}
    for new_key, found in sorted(groups.items()):
        found.sort(key=lambda x: str(x[1].extra.get("created", "")))
        old_key, arm, spec = found[-1]  # the latest trained
        extra = dict(arm.extra)
        extra.update(
            key=new_key,
            v=STORE_VERSION,
            keyed=keyed(spec),
            spec=spec.to_json(),
            migrated_from={"key": old_key, "store_version": int(arm.extra.get("v", 3))},
            provenance={
                "git_commit": arm.extra.get("git_commit"),
                "code_revision": arm.extra.get("code_revision"),
                "models": arm.extra.get("models"),
                "created": arm.extra.get("created"),
                "lock": None,  # not recorded before version 4
                "versions": None,
            },
        )
        if len(found) > 1:
            extra["also_trained"] = [
                {
                    "key": k,
                    "code_revision": a.extra.get("code_revision"),
                    "git_commit": a.extra.get("git_commit"),
                    "created": a.extra.get("created"),
                    "same_numbers": _same(a, arm),
                }
                for k, a, _ in found[:-1]
            ]
        write_arm(stored_path(store, new_key), ArmResult(arm.metrics, arm.evals, arm.wall_s, extra))
        for k, _, _ in found:
            moved[k] = new_key
            if k != new_key:
                stored_path(store, k).unlink()
    _move_prepared(store, log)
    log(f"migrated {len(moved)} arms to {len(groups)} version-{STORE_VERSION} keys in {store}")
    return moved


def _move_prepared(store: Path, log: Any) -> None:
    """The anchor pass file under its version-4 name (same content), its cost file with the new spec."""
    from benchmarks.reproduce.baseline import BASELINE

    for about in sorted((store / "prepared").glob("anchor-*.cost.json")):
        made = json.loads(about.read_text())
        if "anchor_hash" in made:
            continue
        rates = about.with_name(about.name.replace(".cost.json", ".json"))
        target = prepared_path(store, BASELINE, ANCHOR_PASS.spec)
        target.write_bytes(rates.read_bytes())
        target.with_suffix(".cost.json").write_text(
            json.dumps(
                {"spec": ANCHOR_PASS.spec, "anchor_hash": made["spec"]["anchor"], "cost": made["cost"]},
                sort_keys=True,
            )
        )
        if target != rates:
            rates.unlink()
            about.unlink()
        log(f"moved {rates.name} to {target.name}")


if __name__ == "__main__":
    migrate(Path(sys.argv[1]) if len(sys.argv) > 1 else Places.default().store)
