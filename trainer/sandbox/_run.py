"""Start one sandboxed run, enforce the wall clock and the output cap, and classify how it ended."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Literal

import trainer.sandbox._bwrap as _bwrap
import trainer.sandbox._seccomp as _seccomp
from trainer.sandbox._bwrap import SandboxUnavailable

Status = Literal["ok", "error", "timeout", "cpu_limit", "memory_limit", "output_limit", "blocked"]
_UNAVAILABLE_EXIT = 97


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run. Defaults suit a short competitive-programming test."""

    wall_s: float = 5.0
    cpu_s: int = 4
    memory_mb: int = 512
    output_kb: int = 256
    max_processes: int = 16
    tmp_mb: int = 32  # size of the private /tmp (a tmpfs: its pages are memory)


@dataclass(frozen=True)
class SandboxResult:
    """What the program did: ``status`` is 'ok' when it exited 0 (see ``Status`` for the rest)."""

    status: Status
    returncode: int | None
    stdout: str
    stderr: str
    elapsed_s: float
    reason: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# Trusted: runs inside the sandbox before the program. It lowers the rlimits (the program cannot raise
# them again: that needs CAP_SYS_RESOURCE in the host's user namespace) and runs /tmp/solution.py as
# __main__. RLIMIT_NPROC is set here, inside the sandbox's user namespace, so it counts this sandbox's
# processes only (kernel >= 5.14 accounts processes per user namespace); the CPU soft limit sends
# SIGXCPU, the hard one (1 s later) SIGKILL.
_BOOTSTRAP = r"""
import resource, sys
cpu, memory, output, nproc = map(int, sys.argv[1:5])
for kind, soft, hard in ((resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_CPU, cpu, cpu + 1),
                         (resource.RLIMIT_AS, memory, memory), (resource.RLIMIT_FSIZE, output, output),
                         (resource.RLIMIT_NPROC, nproc, nproc)):
    resource.setrlimit(kind, (soft, hard))
path = sys.argv[5]
with open(path, encoding="utf-8") as f:
    code = compile(f.read(), path, "exec")
sys.argv = [path]
del resource, cpu, memory, output, nproc, kind, soft, hard, path, f
exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
"""


def run_python(source: str, *, stdin: str = "", limits: Limits | None = None) -> SandboxResult:
    """Run ``source`` as ``__main__`` with ``stdin`` in a fresh sandbox; never raises for the program's faults.

    Raises ``SandboxUnavailable`` (with how to fix it) when this machine cannot isolate the program: it
    is never run without the sandbox.
    """
    require_sandbox()
    return _run(source, stdin, limits or Limits(), proc=_probe()[0]["proc"])


def _run(source: str, stdin: str, limits: Limits, *, proc: bool) -> SandboxResult:
    runtime = _bwrap.runtime_for(_bwrap.sandbox_python())
    command = [
        runtime.python, "-I", "-S", "-c", _BOOTSTRAP, str(max(1, int(limits.cpu_s))),
        str(int(limits.memory_mb) << 20), str(int(limits.output_kb) << 10), str(int(limits.max_processes)),
        _bwrap.PROGRAM_PATH,
    ]  # fmt: skip
    seccomp_fd = _seccomp.filter_fd()
    program_fd = os.memfd_create("rlvr-solution", os.MFD_CLOEXEC)
    try:
        os.write(program_fd, source.encode("utf-8"))
        os.lseek(program_fd, 0, os.SEEK_SET)
        argv = _bwrap.bwrap_argv(
            runtime,
            seccomp_fd=seccomp_fd,
            program_fd=program_fd,
            tmp_bytes=int(limits.tmp_mb) << 20,
            proc=proc,
            command=command,
        )
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            return _execute(argv, (seccomp_fd, program_fd), stdin, limits, out, err)
    finally:
        os.close(seccomp_fd)
        os.close(program_fd)


def _execute(
    argv: list[str], fds: tuple[int, ...], stdin: str, limits: Limits, out: IO[bytes], err: IO[bytes]
) -> SandboxResult:
    user = _bwrap.drop_to()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=out, stderr=err, env={}, cwd="/", close_fds=True, pass_fds=fds,
            start_new_session=True, user=user[0] if user else None, group=user[1] if user else None,
            extra_groups=[] if user else None,
        )  # fmt: skip
    except OSError as error:
        return SandboxResult("error", None, "", "", 0.0, f"could not start the sandbox: {error}")
    timed_out = False
    try:
        proc.communicate(stdin.encode("utf-8"), timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if proc.returncode is None:  # not reaped yet, so its pid (and process group) cannot be reused
            with contextlib.suppress(ProcessLookupError, PermissionError):  # --die-with-parent takes the rest
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    elapsed = time.monotonic() - start
    cap = int(limits.output_kb) << 10
    out.seek(0)
    stdout = out.read(cap).decode("utf-8", "replace")
    err.seek(0, os.SEEK_END)
    err.seek(max(0, err.tell() - 8192))
    stderr = err.read().decode("utf-8", "replace")
    return classify(proc.returncode, stdout, stderr, elapsed, timed_out, limits)


def _signal_of(code: int | None) -> int | None:
    """bwrap's PID 1 exits 128 + N when the program dies of signal N."""
    if code is None:
        return None
    if code < 0:
        return -code
    return code - 128 if 128 < code < 128 + 65 else None


def classify(
    code: int | None, stdout: str, stderr: str, elapsed: float, timed_out: bool, limits: Limits
) -> SandboxResult:
    def result(status: Status, reason: str) -> SandboxResult:
        return SandboxResult(status, code, stdout, stderr, elapsed, reason)

    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    sig = _signal_of(code)
    if timed_out:
        return result("timeout", f"wall-clock limit of {limits.wall_s:g}s exceeded; killed")
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and elapsed >= limits.cpu_s):
        return result("cpu_limit", f"CPU-time limit of {limits.cpu_s}s exceeded")
    if sig == signal.SIGXFSZ or "[Errno 27] File too large" in last:  # Python ignores SIGXFSZ
        return result("output_limit", f"output limit of {limits.output_kb} KB exceeded")
    if code == 0:
        return result("ok", "exited 0")
    if last.startswith("bwrap:"):
        return result("error", f"the sandbox could not be set up: {last}")
    if "MemoryError" in last:
        return result("memory_limit", f"memory limit of {limits.memory_mb} MB exceeded")
    if last.startswith("PermissionError") and "Operation not permitted" in last:
        return result("blocked", f"refused by the sandbox: {last}")
    if sig is not None:
        return result("error", f"killed by signal {signal.Signals(sig).name}")
    return result("error", last or f"exited with code {code}")


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[dict[str, bool], str | None]:
    caps = {"bwrap": False, "seccomp": False, "python": False, "namespaces": False, "proc": False}
    caps["root"] = _bwrap.parent_is_root()
    try:
        _bwrap.bwrap_path()
        caps["bwrap"] = True
        _seccomp.filter_bpf()
        caps["seccomp"] = True
        _bwrap.runtime_for(_bwrap.sandbox_python())
        caps["python"] = True
    except (SandboxUnavailable, _seccomp.SeccompUnavailable) as err:
        return caps, str(err)
    program, expected = "import os\nprint(os.getpid(), os.getuid())", ["2", str(_bwrap.SANDBOX_UID)]
    for proc in (True, False):  # a private /proc when the kernel allows one, else none
        probe = _run(program, "", Limits(wall_s=20), proc=proc)
        if probe.ok and probe.stdout.split() == expected:
            caps["namespaces"], caps["proc"] = True, proc
            return caps, None
        if "Can't mount proc" not in probe.stderr:
            break
    return caps, _explain(probe)


def _explain(probe: SandboxResult) -> str:
    detail = (probe.stderr.strip().splitlines() or [probe.reason])[-1][:200]
    return (
        f"bubblewrap cannot create the sandbox's namespaces ({detail}). Unprivileged user namespaces must be "
        "allowed: sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces > 0 (on Ubuntu also "
        "kernel.apparmor_restrict_unprivileged_userns=0); in Docker, run the worker with the seccomp profile "
        "deploy/seccomp-sandbox.json and apparmor=unconfined (see docker-compose.yml)"
    )


def sandbox_capabilities() -> dict[str, bool]:
    """What a real probe run found: ``bwrap``, ``seccomp``, ``python``, ``namespaces`` (all needed); ``proc``
    (the sandbox has a private /proc), ``root`` (the parent is root: bwrap runs as uid 65534)."""
    return dict(_probe()[0])


def require_sandbox() -> None:
    """Raise SandboxUnavailable (naming what is missing and how to fix it) unless the sandbox works here."""
    reason = _probe()[1]
    if reason is not None:
        raise SandboxUnavailable(f"the code sandbox is unavailable: {reason}")
