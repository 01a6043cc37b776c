"""Run an untrusted Python program in a locked-down child process (for the ``code`` verifier).

What protects what (each layer is independent; the tests in tests/trainer/test_sandbox*.py prove each):

- **Environment variables**: the child gets an empty environment (only ``LC_ALL=C.UTF-8``) and runs
  ``python -I -S`` (isolated mode: no PYTHON* variables, no user site, no ``site`` import), so the
  application's ``DATABASE_URL`` / ``RLVR_SECRET_KEY`` never reach it.
- **Files**: (1) Landlock (Linux >= 5.13, unprivileged) restricts the child to *reading* the interpreter's
  own directories and system libraries (``/usr``, ``/lib*``, ``/bin``, the interpreter prefix) and to
  reading/writing its temporary directory: the repository, ``/tmp``, ``/root``, ``/home`` and ``/proc``
  are invisible, so ``open('webapp/settings.py')`` fails with a permission error even though the file is
  world-readable. (2) When the parent is root (CI runs as root) the child drops to ``nobody`` (uid and gid
  65534, no supplementary groups) before the program runs, so owner-only files (``.env`` at 0600, other
  users' processes' ``/proc/<pid>/environ``) stay unreadable even without Landlock. The working
  directory is a fresh temporary directory, removed afterwards.
- **Network**: (1) a new, empty network namespace (the ``unshare -n`` syscall, ``CLONE_NEWNET``; needs
  root or CAP_SYS_ADMIN): no interface but a downed loopback, so a connect fails with "Network is
  unreachable". (2) Always: an audit hook (PEP 578) in the child refuses ``socket.*`` events
  (creation, connect, bind, getaddrinfo) with PermissionError, whether or not namespaces are available.
- **Processes**: ``RLIMIT_NPROC`` (enforced once the child is not root), and the audit hook refuses
  ``os.fork``/``os.exec*``/``os.posix_spawn``/``os.system``/``subprocess.Popen``; a fork bomb dies on
  both. The child leads its own session, so the wall-clock kill (SIGKILL to the process group) reaches
  anything it started.
- **Resources**: ``RLIMIT_CPU`` (CPU seconds; SIGXCPU), ``RLIMIT_AS`` (address space: a 10 GB
  allocation raises MemoryError), ``RLIMIT_FSIZE`` (stdout/stderr go to files in the temporary
  directory, so output size is capped by the kernel: the write fails with EFBIG), ``RLIMIT_CORE`` 0, and the parent's
  wall-clock timeout.
- The audit hook also refuses ``ctypes``, reading (``open``, ``os.listdir``, ``os.scandir``) outside the
  interpreter's and system directories and the temporary directory, and writing outside the temporary
  directory: the file rule of Landlock again, for machines without it. Audit hooks are not a security boundary on their own
  (CPython documents this); they are defence in depth behind the kernel mechanisms above.

Not covered: a kernel exploit; CPU time of a program stuck in a syscall is bounded only by the wall
clock. ``sandbox_capabilities()`` reports which kernel layers this machine actually offers.

>>> run_python("print(int(input()) * 2)", stdin="21").stdout
'42\\n'
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SANDBOX_UID = 65534  # nobody
SANDBOX_GID = 65534

Status = Literal["ok", "error", "timeout", "cpu_limit", "memory_limit", "output_limit", "blocked"]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run. Defaults suit a short competitive-programming test."""

    wall_s: float = 5.0
    cpu_s: int = 4
    memory_mb: int = 512
    output_kb: int = 256
    max_processes: int = 16


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


# The trusted bootstrap run by the child interpreter before the untrusted program. It receives its
# settings as JSON in argv[1]; the program is the file argv[2] in the working directory.
_BOOTSTRAP = r'''
import json, os, resource, sys
cfg = json.loads(sys.argv[1])
def _limit(kind, value, hard=None):
    resource.setrlimit(kind, (value, value if hard is None else hard))
_limit(resource.RLIMIT_CORE, 0)
_limit(resource.RLIMIT_CPU, cfg["cpu_s"], cfg["cpu_s"] + 1)  # SIGXCPU at the soft limit, SIGKILL 1 s later
_limit(resource.RLIMIT_AS, cfg["memory_bytes"])
_limit(resource.RLIMIT_FSIZE, cfg["output_bytes"])
_limit(resource.RLIMIT_NPROC, cfg["max_processes"])
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if cfg["netns"]:
    if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET
        sys.stderr.write("sandbox: could not create a network namespace\n"); sys.exit(97)
if cfg["landlock"]:
    libc.syscall.restype = ctypes.c_long
    class _Attr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64)]
    class _Beneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
    FS_ALL = (1 << 13) - 1  # ABI 1 rights: execute .. make_sym
    READ = 1 | (1 << 2) | (1 << 3)  # execute, read_file, read_dir
    attr = _Attr(FS_ALL)
    ruleset = libc.syscall(444, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        sys.stderr.write("sandbox: landlock unavailable\n"); sys.exit(97)
    for path, access in [(p, READ) for p in cfg["read_paths"]] + [(cfg["workdir"], FS_ALL)]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = _Beneath(access if os.path.isdir(path) else access & 0b111, fd)
        libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0)
        os.close(fd)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, ruleset, 0) != 0:  # NO_NEW_PRIVS; restrict_self
        sys.stderr.write("sandbox: landlock could not be applied\n"); sys.exit(97)
    os.close(ruleset)
if cfg["drop_to"] is not None:
    os.setgroups([])
    os.setgid(cfg["drop_to"][1])
    os.setuid(cfg["drop_to"][0])
del libc, ctypes
_workdir = cfg["workdir"]
_readable = tuple(cfg["read_paths"]) + (_workdir,)
_BLOCKED = ("socket.", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn", "os.system",
            "subprocess.Popen", "ctypes.", "os.kill", "os.killpg", "pty.spawn")
def _under(path, roots):
    path = os.path.realpath(path)
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
def _hook(event, args):
    if event.startswith(_BLOCKED):
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes)):
        path = os.fsdecode(args[0])
        mode = args[1] if event == "open" and len(args) > 1 else None
        flags = args[2] if event == "open" and len(args) > 2 else 0
        writing = isinstance(mode, str) and any(c in mode for c in "wax+")
        writing = writing or (isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR)))
        if not _under(path, (_workdir,) if writing else _readable):
            raise PermissionError(f"sandbox: {'writing' if writing else 'reading'} {path} is not allowed")
if cfg["audit_hook"]:
    sys.addaudithook(_hook)
del cfg, _limit, json, resource
with open(sys.argv[2], encoding="utf-8") as _f:
    _source = _f.read()
sys.argv = [sys.argv[2]]
_code = compile(_source, sys.argv[0], "exec")
del _f, _source
exec(_code, {"__name__": "__main__", "__builtins__": __builtins__})
'''


@functools.lru_cache(maxsize=1)
def sandbox_capabilities() -> dict[str, bool]:
    """Which kernel layers work here: ``root`` (can drop to nobody), ``netns``, ``landlock``."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    return {"root": root, "netns": _probe_netns(), "landlock": _probe_landlock()}


def _probe_netns() -> bool:
    probe = "import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).unshare(0x40000000) == 0 else 1)"
    try:
        return subprocess.run([sys.executable, "-I", "-S", "-c", probe], timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _probe_landlock() -> bool:
    probe = (
        "import ctypes,sys; libc=ctypes.CDLL(None); libc.syscall.restype=ctypes.c_long; "
        "sys.exit(0 if libc.syscall(444, None, 0, 1) >= 1 else 1)"  # LANDLOCK_CREATE_RULESET_VERSION
    )
    try:
        return subprocess.run([sys.executable, "-I", "-S", "-c", probe], timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _world_executable(path: Path) -> bool:
    """True when every directory above ``path`` is searchable and ``path`` executable by others."""
    try:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in path.parents)
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def sandbox_python() -> str:
    """An interpreter the unprivileged child may execute (the base interpreter if others can reach it)."""
    candidates = [Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))]
    candidates += [Path(p) for p in ("/usr/bin/python3", "/usr/local/bin/python3")]
    if not sandbox_capabilities()["root"]:
        return str(candidates[0])
    for candidate in candidates:
        if candidate.exists() and _world_executable(candidate):
            return str(candidate)
    # No interpreter the nobody user can run: keep root's (the other layers still hold) and say so.
    return str(candidates[0])


def _read_paths(python: str) -> list[str]:
    """What the child may read: the interpreter's tree, system libraries, a few device nodes."""
    prefix = Path(python).resolve().parent.parent
    paths = {str(prefix), "/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime"}
    paths |= {"/dev/null", "/dev/urandom", "/dev/zero"}
    return sorted(p for p in paths if os.path.exists(p))


def run_python(
    source: str,
    *,
    stdin: str = "",
    limits: Limits | None = None,
    audit_hook: bool = True,
    kernel_layers: bool = True,
) -> SandboxResult:
    """Run ``source`` as ``__main__`` with ``stdin`` in a fresh sandbox; never raises for the program's faults.

    ``audit_hook=False`` leaves only the kernel layers, ``kernel_layers=False`` only the audit hook and the
    resource limits (Landlock, network namespace and the drop to nobody off): tests use them to prove that
    each side holds alone. Production callers keep both.
    """
    limits = limits or Limits()
    caps = sandbox_capabilities()
    python = sandbox_python() if kernel_layers else str(Path(os.path.realpath(sys.executable)))
    drop = kernel_layers and caps["root"] and _world_executable(Path(python))
    workdir = tempfile.mkdtemp(prefix="rlvr-sandbox-")
    try:
        os.chmod(workdir, 0o700)
        program = Path(workdir, "solution.py")
        program.write_text(source, encoding="utf-8")
        if drop:
            for path in (workdir, program):
                os.chown(path, SANDBOX_UID, SANDBOX_GID)
        config = {
            "cpu_s": max(1, int(limits.cpu_s)),
            "memory_bytes": int(limits.memory_mb) * 1024 * 1024,
            "output_bytes": int(limits.output_kb) * 1024,
            "max_processes": int(limits.max_processes),
            "netns": kernel_layers and caps["netns"],
            "landlock": kernel_layers and caps["landlock"],
            "read_paths": _read_paths(python),
            "workdir": os.path.realpath(workdir),
            "drop_to": [SANDBOX_UID, SANDBOX_GID] if drop else None,
            "audit_hook": audit_hook,
        }
        return _execute(python, config, str(program), stdin, limits, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _execute(
    python: str, config: dict[str, object], program: str, stdin: str, limits: Limits, workdir: str
) -> SandboxResult:
    out_path, err_path = Path(workdir, ".stdout"), Path(workdir, ".stderr")
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                [python, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(config), program],
                stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=workdir,
                env={"LC_ALL": "C.UTF-8"}, start_new_session=True, close_fds=True,
            )  # fmt: skip
        except OSError as error:
            return SandboxResult("error", None, "", "", 0.0, f"could not start the sandbox: {error}")
        timed_out = False
        try:
            proc.communicate(stdin.encode("utf-8"), timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc.pid)
            proc.wait()
    elapsed = time.monotonic() - start
    cap = int(limits.output_kb) * 1024
    stdout = out_path.read_bytes()[:cap].decode("utf-8", "replace")
    stderr = err_path.read_bytes()[-8192:].decode("utf-8", "replace")
    return _classify(proc.returncode, stdout, stderr, elapsed, timed_out, limits)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pid, signal.SIGKILL)


def _classify(
    code: int, stdout: str, stderr: str, elapsed: float, timed_out: bool, limits: Limits
) -> SandboxResult:
    def result(status: Status, reason: str) -> SandboxResult:
        return SandboxResult(status, code, stdout, stderr, elapsed, reason)

    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if timed_out:
        return result("timeout", f"wall-clock limit of {limits.wall_s:g}s exceeded; killed")
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and elapsed >= limits.cpu_s):
        return result("cpu_limit", f"CPU-time limit of {limits.cpu_s}s exceeded")
    if code == -signal.SIGXFSZ or "[Errno 27] File too large" in last:  # Python ignores SIGXFSZ
        return result("output_limit", f"output limit of {limits.output_kb} KB exceeded")
    if code == 97 and last.startswith("sandbox:"):
        return result("error", f"the sandbox could not be set up: {last}")
    if code == 0:
        return result("ok", "exited 0")
    if "MemoryError" in last:
        return result("memory_limit", f"memory limit of {limits.memory_mb} MB exceeded")
    if "sandbox:" in last and "PermissionError" in last:
        return result("blocked", last)
    if code is not None and code < 0:
        return result("error", f"killed by signal {signal.Signals(-code).name}")
    return result("error", last or f"exited with code {code}")
