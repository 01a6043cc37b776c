"""docker-compose.yml, the Dockerfile and .env.example agree with the code (no Docker needed: parsed).

Every service command names modules that exist; every variable the code reads is documented in
.env.example; every variable compose or .env.example mentions is read by the code or by compose itself.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
APP_SERVICES = ("web", "worker", "worker-gpu")
# Read from the environment but not configuration: set by our own entry points, by pytest, or the
# user's desktop convention for where `rlvr login` keeps its token.
NOT_CONFIGURATION = {
    "DJANGO_SETTINGS_MODULE",
    "PYTEST_VERSION",
    "XDG_CONFIG_HOME",
    # Set by torchrun / our distributed launcher for its child ranks, never by a user.
    "RANK",
    "LOCAL_RANK",
    # Read by `rlvr train` under an outside launcher (torchrun, srun), which sets them (trainer/distributed/outside.py).
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "SLURM_JOB_ID",
    "TORCHELASTIC_RUN_ID",
    "RLVR_DIST_RANK",
    "OMP_NUM_THREADS",
    "PYTHONPATH",
    # Set by the colocated vLLM engine for vLLM itself (its engine core in-process: trainer/rollout/vllm_backends.py).
    "VLLM_ENABLE_V1_MULTIPROCESSING",
}
# Passed to the app containers for a library that reads them itself: boto3 (the S3 token store).
READ_BY_LIBRARIES = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"}
ENV_READ = re.compile(
    r"""(?:env_(?:str|bool|int|list|choice|paths)\(|os\.environ\.get\(|os\.getenv\(|os\.environ\[|"""
    r"""os\.environ\.setdefault\()\s*["']([A-Z][A-Z0-9_]*)["']|["']([A-Z][A-Z0-9_]*)["']\s+in\s+os\.environ"""
)
INTERPOLATION = re.compile(r"\$\{([A-Z][A-Z0-9_]*)")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    return data


def command_words(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(words[2].replace("&&", " && "))
    return words


def variables_read_by_code() -> set[str]:
    names: set[str] = set()
    for package in ("webapp", "workers", "trainer", "rlvr_client"):
        for path in (REPO / package).rglob("*.py"):
            for match in ENV_READ.finditer(path.read_text(encoding="utf-8")):
                names.add(match.group(1) or match.group(2))
    return names - NOT_CONFIGURATION


def documented_variables() -> set[str]:
    names = set()
    for line in (REPO / ".env.example").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=", line)
        if match:
            names.add(match.group(1))
    return names


def interpolated_variables() -> set[str]:
    return set(INTERPOLATION.findall((REPO / "docker-compose.yml").read_text(encoding="utf-8")))


def module_file(module: str) -> Path:
    base = REPO / module.replace(".", "/")
    return base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"


def test_the_stack_has_every_service_from_one_image(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "redis", *APP_SERVICES} <= set(services)
    assert {services[name]["image"] for name in APP_SERVICES} == {"rlvr-studio:0.1.0"}
    assert all(services[name]["build"]["context"] == "." for name in APP_SERVICES)
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert (
        dockerfile.startswith("#") and "ARG BASE_IMAGE=python:3.11-slim\nFROM ${BASE_IMAGE}\n" in dockerfile
    )


def test_every_image_is_pinned_to_a_version(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), f"{name}: {image} is not pinned"


def test_the_app_image_runs_as_its_own_unprivileged_user() -> None:
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert "useradd --create-home --uid 1000 rlvr" in dockerfile
    assert dockerfile.rstrip().splitlines()[-1].startswith("CMD") and "\nUSER rlvr\n" in dockerfile
    assert dockerfile.count("\nUSER ") == 1


def test_every_long_running_service_has_a_healthcheck(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if service.get("restart") == "no":  # one-shot (migrate): waited on by service_completed_successfully
            continue
        assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"


def test_migrations_run_once_in_their_own_service_before_web_and_workers(compose: dict[str, Any]) -> None:
    migrate = compose["services"]["migrate"]
    assert command_words(migrate) == ["python", "manage.py", "migrate", "--noinput"]
    assert migrate["restart"] == "no" and "migrate" not in migrate["depends_on"]
    for name in (*APP_SERVICES, "worker-cpu"):
        service = compose["services"][name]
        assert service["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
        assert "migrate" not in command_words(service), (
            f"{name} must not migrate itself (two web replicas would race)"
        )


def test_the_local_override_names_only_local_images_and_host_networking() -> None:
    class ComposeLoader(yaml.SafeLoader):  # Compose's own tag: `!reset` drops what the base file set
        pass

    ComposeLoader.add_constructor("!reset", lambda loader, node: None)
    text = (REPO / "deploy" / "compose" / "docker-compose.local.yml").read_text(encoding="utf-8")
    override: dict[str, Any] = yaml.load(text, Loader=ComposeLoader)
    for name, service in override["services"].items():
        assert service["network_mode"] == "host", name
        assert service["image"].startswith(("rlvr-local/", "rlvr-studio:")), name
    assert override["services"]["web"]["build"]["args"]["TORCH_EXPECT"] == "2.13.0+cpu"


def test_the_database_and_runs_live_in_named_volumes(compose: dict[str, Any]) -> None:
    volumes = set(compose["volumes"])
    assert {"db", "runs", "data"} <= volumes
    assert "db:/var/lib/postgresql/data" in compose["services"]["postgres"]["volumes"]
    for name in APP_SERVICES:
        mounts = compose["services"][name]["volumes"]
        assert "runs:/runs" in mounts and "data:/data" in mounts
        assert compose["services"][name]["environment"]["RLVR_RUNS_DIR"] == "/runs"


def test_service_commands_name_modules_that_exist(compose: dict[str, Any]) -> None:
    checked = 0
    for name, service in compose["services"].items():
        if "command" not in service or name in ("postgres", "redis"):
            continue
        words = command_words(service)
        for i, word in enumerate(words):
            if word == "-A":
                assert module_file(words[i + 1]).is_file(), (
                    f"{name}: celery app {words[i + 1]} does not exist"
                )
                from celery import Celery

                assert isinstance(importlib.import_module(words[i + 1]).app, Celery), f"{name}: no Celery app"
                checked += 1
            if word == "daphne":
                module, attr = words[-1].split(":")
                assert module_file(module).is_file(), f"{name}: {module} does not exist"
                assert re.search(rf"^{attr} = ", module_file(module).read_text(encoding="utf-8"), re.M)
                checked += 1
            if word == "manage.py":
                assert (REPO / "manage.py").is_file()
    assert checked >= 4


def test_the_gpu_worker_reserves_an_nvidia_gpu_and_takes_training_one_at_a_time(
    compose: dict[str, Any],
) -> None:
    service = compose["services"]["worker-gpu"]
    words = command_words(service)
    assert words[words.index("-Q") + 1] == "training"
    assert words[words.index("-c") + 1] == "1"
    assert words[words.index("--pool") + 1] == "prefork"  # its main process answers pings while training
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)


def test_the_general_worker_takes_the_default_and_eval_queues(compose: dict[str, Any]) -> None:
    words = command_words(compose["services"]["worker"])
    assert set(words[words.index("-Q") + 1].split(",")) == {"default", "eval"}


def test_every_variable_the_code_reads_is_documented() -> None:
    assert {
        "DATABASE_URL",
        "REDIS_URL",
        "RLVR_SECRET_KEY",
        "RLVR_HOME",
        "PORT",
    } <= variables_read_by_code()  # the scan works
    missing = variables_read_by_code() - documented_variables()
    assert not missing, f"read by the code but not in .env.example: {sorted(missing)}"


def test_the_settings_own_list_of_variables_is_documented() -> None:
    from webapp import settings

    assert set(settings.ENV_VARIABLES) <= documented_variables()


def test_every_documented_variable_is_read_by_the_code_or_by_compose() -> None:
    unused = documented_variables() - variables_read_by_code() - interpolated_variables()
    assert not unused, f".env.example documents variables nothing reads: {sorted(unused)}"


def test_every_variable_compose_uses_is_documented_and_every_app_variable_is_read(
    compose: dict[str, Any],
) -> None:
    assert interpolated_variables() <= documented_variables()
    code = variables_read_by_code() | READ_BY_LIBRARIES
    for name in APP_SERVICES:
        passed = set(compose["services"][name]["environment"])
        assert passed <= code, f"{name} sets variables nothing reads: {sorted(passed - code)}"


def test_every_app_service_gets_the_token_store_settings(compose: dict[str, Any]) -> None:
    for name in (*APP_SERVICES, "worker-cpu"):
        environment = compose["services"][name]["environment"]
        assert (
            environment["RLVR_TOKEN_STORE"] == "${RLVR_TOKEN_STORE:-/data/rollout-tokens}"
        )  # on the shared volume
        assert {
            "RLVR_S3_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "RLVR_ROLLOUT_RETENTION",
        } <= set(environment)


def test_the_s3_profile_runs_minio_on_a_volume_of_its_own_with_the_apps_credentials(
    compose: dict[str, Any],
) -> None:
    minio = compose["services"]["minio"]
    assert minio["profiles"] == ["s3"] and minio["image"].startswith("minio/minio")
    assert "minio:/data" in minio["volumes"] and "minio" in compose["volumes"]
    assert minio["command"][:2] == ["server", "/data"]
    assert minio["environment"]["MINIO_ROOT_USER"].startswith("${AWS_ACCESS_KEY_ID")
    assert minio["environment"]["MINIO_ROOT_PASSWORD"].startswith("${AWS_SECRET_ACCESS_KEY")
    assert "ports" not in minio  # reached by the app services inside compose only


# Every service that may run user code: the workers (code verifier) and web (the verifier test bench).
SANDBOXED = ("web", "worker", "worker-gpu", "worker-cpu")
# What bubblewrap calls to build the code sandbox (trainer/sandbox): the workers' profile must allow them.
BWRAP_NEEDS = {
    "clone",
    "clone3",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "sethostname",
    "capset",
}
# Machine administration and the kernel interfaces the workers never use: the profile must refuse them.
WORKERS_NEVER_NEED = {
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "clock_settime", "settimeofday", "acct", "bpf", "perf_event_open", "userfaultfd", "keyctl",
    "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev", "open_by_handle_at",
    "io_uring_setup",
}  # fmt: skip


def test_services_that_run_user_code_have_the_seccomp_profile_and_apparmor_setting_the_sandbox_needs(
    compose: dict[str, Any],
) -> None:
    for name in SANDBOXED:
        service = compose["services"][name]
        assert set(service["security_opt"]) == {
            "seccomp=deploy/seccomp-sandbox.json",
            "apparmor=unconfined",
            "systempaths=unconfined",  # bwrap --disable-userns writes its namespace's max_user_namespaces
        }, name
        assert service["init"] is True, (
            f"{name}: without an init the sandbox's exited bwrap processes stay zombies"
        )
    for name in ("postgres", "redis"):
        assert (
            "security_opt" not in compose["services"][name]
        )  # services that run no user code keep Docker's default


def test_the_workers_seccomp_profile_allows_bubblewrap_and_refuses_machine_administration() -> None:
    profile = json.loads((REPO / "deploy" / "seccomp-sandbox.json").read_text(encoding="utf-8"))
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    refused = {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ERRNO" for n in rule["names"]}
    assert refused >= WORKERS_NEVER_NEED, sorted(WORKERS_NEVER_NEED - refused)
    assert not BWRAP_NEEDS & refused, sorted(BWRAP_NEEDS & refused)
    assert {a["architecture"] for a in profile["archMap"]} == {"SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"}


def test_the_image_installs_bubblewrap_and_libseccomp() -> None:
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    install = next(line for line in dockerfile.splitlines() if "apt-get install" in line)
    assert "bubblewrap" in install and "libseccomp2" in install
    assert dockerfile.index("apt-get install") < dockerfile.index("USER rlvr")
