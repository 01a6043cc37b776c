"""The sandbox runs ordinary programs, counts processes per sandbox, and fails closed where it cannot isolate.

The escape attempts are in test_sandbox_attacks.py. Here: what a program sees, and what happens on a
machine without bubblewrap, without user namespaces, or inside a container whose /proc is masked
(each of those machines simulated for real by an outer bwrap or a PATH without bwrap).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from trainer.sandbox import (
    SANDBOX_UID,
    Limits,
    run_python,
    sandbox_capabilities,
    sandbox_python,
    world_executable,
)

REPO = Path(__file__).resolve().parents[2]
# An outer bwrap that plays the machine: everything visible, our uid mapped to 1000.
# The checkout is bound again over the private /tmp, since a clone may itself live under /tmp.
OUTER = ["bwrap", "--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--bind", "/", "/",
         "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(REPO), str(REPO), "--die-with-parent"]  # fmt: skip
PROBE = (
    "import json\nfrom trainer.sandbox import SandboxUnavailable, run_python, sandbox_capabilities\n"
    "try:\n    r = run_python('import os\\nprint(os.path.exists(\"/proc\"))')\n    out = {'stdout': r.stdout, 'status': r.status}\n"
    "except SandboxUnavailable as e:\n    out = {'unavailable': str(e)}\n"
    "print(json.dumps({**out, 'caps': sandbox_capabilities()}))\n"
)


# Installs the BPF program in argv[1] (if any) in a plain child, no bwrap, then tries what it denies.
SECCOMP_ALONE = """
import ctypes, json, os, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
if len(sys.argv) > 1:
    bpf = open(sys.argv[1], "rb").read()
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = Prog(len(bpf) // 8, ctypes.addressof(buf))
    assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0
def errno_of(call):
    ctypes.set_errno(0)
    try:
        result = call()
    except OSError as err:
        return err.errno
    return ctypes.get_errno() if result == -1 else 0
thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
print(json.dumps({
    "socket": errno_of(lambda: socket.socket().close()),
    "socketpair": errno_of(lambda: socket.socketpair()[0].close()),
    "unshare_user": errno_of(lambda: libc.unshare(0x10000000)),
    "clone3": errno_of(lambda: libc.syscall(435, 0, 0)),
    "ptrace_traceme": errno_of(lambda: libc.ptrace(0, 0, 0, 0)),
}))
"""


def probe_in(prefix: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """Run PROBE with this venv's interpreter under ``prefix`` (an outer bwrap, or nothing)."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=60, env=env
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_program_reads_stdin_and_writes_stdout() -> None:
    result = run_python("print(sum(map(int, input().split())))", stdin="2 3 4\n")
    assert result.ok and result.stdout == "9\n"


def test_a_program_that_raises_reports_the_exception() -> None:
    result = run_python("raise ValueError('boom')")
    assert result.status == "error" and result.reason == "ValueError: boom"


def test_the_environment_holds_only_the_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_SECRET_KEY", "top-secret-key")
    result = run_python("import os\nprint(sorted(os.environ))")
    assert result.ok and result.stdout.strip() == "['LC_ALL', 'PWD']"


def test_the_working_directory_is_a_private_tmp_holding_only_the_program() -> None:
    first = run_python("import os\nprint(os.getcwd(), os.listdir('.'))\nopen('scratch', 'w').write('x')")
    second = run_python("import os\nprint(os.listdir('.'))")
    assert first.stdout.strip() == "/tmp ['solution.py']" and second.stdout.strip() == "['solution.py']"


def test_asyncio_and_multiprocessing_work_inside() -> None:
    """asyncio's self-pipe is an AF_UNIX socketpair and multiprocessing's locks live in /dev/shm: both allowed."""
    program = (
        "import asyncio\nfrom multiprocessing import Pool\nasync def two():\n    return 2\n"
        "with Pool(2) as pool:\n    print(asyncio.run(two()), pool.map(abs, [-3, -4]))"
    )
    result = run_python(program, limits=Limits(wall_s=20))
    assert result.ok and result.stdout == "2 [3, 4]\n", result.reason


def test_each_sandbox_has_its_own_process_limit() -> None:
    """RLIMIT_NPROC counts in each sandbox's own user namespace: four at once each get max_processes."""
    program = (
        "import os, time\nn = 0\nfor _ in range(40):\n    try:\n        if os.fork() == 0:\n"
        "            time.sleep(1)\n            os._exit(0)\n        n += 1\n    except OSError:\n        break\nprint(n)"
    )
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run_python(program, limits=Limits(max_processes=12)), range(4)))
    # 12 tasks of the sandbox's uid: bwrap's init (PID 1), the program, and 10 children.
    assert [r.stdout.strip() for r in results] == ["10"] * 4


def test_as_root_the_sandbox_runs_as_nobody_on_the_host_too() -> None:
    if os.geteuid() != 0:
        assert not sandbox_capabilities()["root"]
        return
    name = "rlvr" + uuid.uuid4().hex[:10]
    program = f"import ctypes, time\nctypes.CDLL(None).prctl(15, b'{name}', 0, 0, 0)\ntime.sleep(1.5)"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_python, program)
        uids: set[int] = set()
        deadline = time.monotonic() + 5
        while not uids and time.monotonic() < deadline:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                        uids.add(os.stat(f"/proc/{pid}").st_uid)
                except OSError:
                    continue
            time.sleep(0.05)
        assert running.result().ok
    assert uids == {SANDBOX_UID}
    assert world_executable(Path(sandbox_python()))


def test_the_seccomp_filter_alone_refuses_sockets_namespaces_and_ptrace(tmp_path: Path) -> None:
    from trainer.sandbox._seccomp import filter_bpf

    bpf = tmp_path / "filter.bpf"
    bpf.write_bytes(filter_bpf())
    runs = {}
    for label, extra in (("without", []), ("with", [str(bpf)])):
        done = subprocess.run(
            [sys.executable, "-c", SECCOMP_ALONE, *extra], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs[label] = json.loads(done.stdout)
    assert (
        runs["without"]["socket"] == 0 and runs["without"]["ptrace_traceme"] == 0
    )  # the control: all allowed
    # EPERM (1) for each denied call, ENOSYS (38) for clone3 (glibc falls back to clone, as the thread shows).
    assert runs["with"] == {
        "socket": 1,
        "socketpair": 0,
        "unshare_user": 1,
        "clone3": 38,
        "ptrace_traceme": 1,
    }


def test_without_bubblewrap_run_python_refuses_and_says_how_to_install_it() -> None:
    report = probe_in([], env={"PATH": "/nonexistent"})
    assert "stdout" not in report
    assert "bubblewrap (bwrap) is not installed" in str(report["unavailable"])
    assert "apt-get install bubblewrap" in str(report["unavailable"])


def test_without_user_namespaces_run_python_refuses_and_names_the_setting() -> None:
    report = probe_in([*OUTER, "--proc", "/proc", "--disable-userns"])
    assert "stdout" not in report
    message = str(report["unavailable"])
    assert "cannot create the sandbox's namespaces" in message and "max_user_namespaces" in message


def test_in_a_container_with_a_masked_proc_the_sandbox_runs_without_any_proc() -> None:
    # Docker masks /proc/timer_list (and more): the kernel then refuses a new procfs in a user namespace.
    report = probe_in([*OUTER, "--proc", "/proc", "--ro-bind", "/dev/null", "/proc/timer_list"])
    assert report["status"] == "ok" and report["stdout"] == "False\n"
    assert report["caps"] == {**report["caps"], "namespaces": True, "proc": False}  # type: ignore[dict-item]


def test_the_code_verifier_refuses_without_the_sandbox_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran-unsandboxed"
    program = f"open({str(marker)!r}, 'w').write('x')\nprint(3)"
    script = (
        "import json\nfrom trainer.samples import Sample\nfrom trainer.verifiers.code_exec import CodeParams, CodeVerifier\n"
        f"r = CodeVerifier(CodeParams(extract='full'))([{program!r}], [Sample('s', 'p', '[{{\"input\": \"\", \"output\": \"3\"}}]')])\n"
        "print(json.dumps([x.detail for x in r]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/nonexistent"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [detail] = json.loads(done.stdout)
    assert "apt-get install bubblewrap" in detail["error"]
    assert not marker.exists()
