"""The sandbox: each escape attempt fails safely, and each kernel layer holds on its own (audit hook off)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainer.sandbox import Limits, _world_executable, run_python, sandbox_capabilities, sandbox_python

REPO = Path(__file__).resolve().parents[2]
SETTINGS = REPO / "webapp" / "settings.py"
CAPS = sandbox_capabilities()
# (audit_hook, kernel_layers): every layer, the kernel layers alone, the audit hook alone.
LAYERS = pytest.mark.parametrize(
    ("hook", "kernel"), [(True, True), (False, True), (True, False)], ids=["all-layers", "kernel-only", "hook-only"]
)


def test_a_program_reads_stdin_and_writes_stdout() -> None:
    result = run_python("print(sum(map(int, input().split())))", stdin="2 3 4\n")
    assert result.ok and result.stdout == "9\n"


def test_a_program_that_raises_reports_the_exception() -> None:
    result = run_python("raise ValueError('boom')")
    assert result.status == "error" and result.reason == "ValueError: boom"


def test_the_environment_holds_no_application_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_SECRET_KEY", "top-secret-key")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/prod")
    result = run_python("import os\nprint(sorted(os.environ.items()))")
    assert result.ok
    assert "top-secret-key" not in result.stdout and "DATABASE_URL" not in result.stdout
    assert result.stdout.strip() == "[('LC_ALL', 'C.UTF-8')]"


def test_the_working_directory_is_a_fresh_temporary_directory() -> None:
    result = run_python("import os\nprint(os.getcwd())\nprint(os.listdir('.'))")
    cwd, listing = result.stdout.splitlines()
    assert "rlvr-sandbox-" in cwd and not Path(cwd).exists()  # removed afterwards
    assert "solution.py" in listing


@LAYERS
def test_reading_the_settings_file_fails(hook: bool, kernel: bool) -> None:
    assert SETTINGS.exists() and os.stat(SETTINGS).st_mode & 0o004, "the test needs a world-readable file"
    if not hook and not CAPS["landlock"]:
        pytest.skip("no Landlock on this machine: a world-readable file is hidden only by the audit hook")
    result = run_python(f"print(open({str(SETTINGS)!r}).read()[:200])", audit_hook=hook, kernel_layers=kernel)
    assert not result.ok and "INSTALLED_APPS" not in result.stdout
    assert "Permission denied" in result.reason or "not allowed" in result.reason


@LAYERS
def test_listing_the_repository_fails(hook: bool, kernel: bool) -> None:
    if not hook and not CAPS["landlock"]:
        pytest.skip("no Landlock on this machine")
    result = run_python(f"import os\nprint(os.listdir({str(REPO)!r}))", audit_hook=hook, kernel_layers=kernel)
    assert not result.ok and "manage.py" not in result.stdout


def test_the_parent_environment_cannot_be_read_through_proc() -> None:
    result = run_python(f"print(open('/proc/{os.getpid()}/environ', 'rb').read()[:100])")
    assert not result.ok and result.stdout == ""


@LAYERS
def test_a_socket_connect_fails(hook: bool, kernel: bool) -> None:
    if not hook and not CAPS["netns"]:
        pytest.skip("no network namespace on this machine: only the audit hook blocks sockets")
    program = "import socket\ns = socket.create_connection(('127.0.0.1', 5432), timeout=2)\nprint('connected')"
    result = run_python(program, audit_hook=hook, kernel_layers=kernel)
    assert not result.ok and "connected" not in result.stdout
    assert ("not allowed" if hook else "unreachable") in result.reason


@LAYERS
def test_a_fork_bomb_fails(hook: bool, kernel: bool) -> None:
    if not hook and CAPS["root"] and not _world_executable(Path(sandbox_python())):
        pytest.skip("root cannot drop to nobody here (no world-executable python), so RLIMIT_NPROC does not apply")
    program = "import os\nwhile True:\n    os.fork()"
    result = run_python(program, audit_hook=hook, kernel_layers=kernel, limits=Limits(wall_s=5))
    assert not result.ok
    assert result.status in {"blocked", "error"} and result.status != "timeout"
    if hook:
        assert "os.fork is not allowed" in result.reason
    else:  # RLIMIT_NPROC refuses the fork; under heavy load the bomb may hit the memory limit first
        assert any(s in result.reason for s in ("Resource temporarily unavailable", "MemoryError", "Cannot allocate")), (
            result.reason
        )


def test_an_infinite_loop_is_stopped_by_the_cpu_limit() -> None:
    result = run_python("while True:\n    pass", limits=Limits(wall_s=10, cpu_s=1))
    assert result.status == "cpu_limit" and result.elapsed_s < 5


def test_a_sleeping_program_is_stopped_by_the_wall_clock() -> None:
    result = run_python("import time\ntime.sleep(60)", limits=Limits(wall_s=1))
    assert result.status == "timeout" and result.elapsed_s < 5


def test_a_10_gb_allocation_fails_with_memory_error() -> None:
    result = run_python("x = bytearray(10 * 1024 ** 3)\nprint('allocated')")
    assert result.status == "memory_limit" and "allocated" not in result.stdout


def test_unbounded_output_is_cut_at_the_output_limit() -> None:
    result = run_python("while True:\n    print('x' * 1000)", limits=Limits(output_kb=64))
    assert result.status == "output_limit"
    assert len(result.stdout) <= 64 * 1024


def test_writing_outside_the_working_directory_fails(tmp_path: Path) -> None:
    target = tmp_path / "pwned.txt"
    result = run_python(f"open({str(target)!r}, 'w').write('x')")
    assert not result.ok and not target.exists()


@pytest.mark.skipif(not CAPS["root"], reason="privilege drop applies only when the parent is root")
def test_as_root_the_program_runs_as_nobody() -> None:
    result = run_python("import os\nprint(os.getuid(), os.getgid(), os.getgroups())")
    assert result.stdout.strip() == "65534 65534 []"
