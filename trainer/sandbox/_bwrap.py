"""What the sandbox sees: the interpreter it runs, the read-only paths it needs, and bwrap's command line.

The filesystem inside is built from nothing: a read-only root with only the interpreter's executable,
its standard library and shared library, the system library directories (``/usr/lib/<multiarch>``,
``/usr/lib64``) and ``/etc/ld.so.cache``; the usual top-level symlinks of a merged-/usr system
(``/lib -> usr/lib``...); a private ``/proc`` of the sandbox's own PID namespace; bwrap's minimal
``/dev`` (null, zero, full, random, urandom, tty), read-only but for a small ``/dev/shm``; and a
private, size-capped ``/tmp`` tmpfs (the working directory, holding ``solution.py``). The host's ``/tmp``, ``/run``, ``/var``,
``/home``, ``/root``, ``/etc`` and the repository are not there at all.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SANDBOX_UID = 65534  # nobody, inside the sandbox's user namespace (and outside it when the parent is root)
SANDBOX_GID = 65534
PROGRAM_PATH = "/tmp/solution.py"
_QUERY = (
    "import json, os, sys, sysconfig; v = sysconfig.get_config_var; "
    "print(json.dumps({'executable': os.path.realpath(sys.executable), 'stdlib': sysconfig.get_path('stdlib'), "
    "'platstdlib': sysconfig.get_path('platstdlib'), 'dynload': v('DESTSHARED'), 'libdir': v('LIBDIR'), "
    "'soname': v('INSTSONAME'), 'multiarch': v('MULTIARCH'), 'version': sys.version_info[:2]}))"
)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be built here; the message names what is missing and how to fix it."""


@dataclass(frozen=True)
class Runtime:
    """An interpreter and the host paths it needs, bound read-only at the same place inside."""

    python: str
    ro_paths: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...]  # (path inside, target)


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed, so untrusted code cannot be isolated: apt-get install bubblewrap"
        )
    return found


def parent_is_root() -> bool:
    return os.geteuid() == 0


def drop_to() -> tuple[int, int] | None:
    """(uid, gid) that bwrap itself runs as: nobody when the parent is root, else the parent's own user.

    A sandbox mapped onto root outside would be exempt from RLIMIT_NPROC (the kernel never limits
    root's processes), so a root parent starts bwrap as nobody.
    """
    return (SANDBOX_UID, SANDBOX_GID) if parent_is_root() else None


def world_executable(path: Path) -> bool:
    """True when others may execute ``path`` and search every directory above it."""
    try:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in path.parents)
    except OSError:
        return False


def _candidates() -> list[Path]:
    base = Path(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))
    return [
        base,
        *(Path(p).resolve() for p in ("/usr/local/bin/python3", "/usr/bin/python3") if os.path.exists(p)),
    ]


@functools.lru_cache(maxsize=1)
def sandbox_python() -> str:
    """The interpreter run inside: this process's base interpreter, or (root parent) one nobody can run."""
    candidates = _candidates()
    if not parent_is_root():
        return str(candidates[0])
    for candidate in candidates:
        if world_executable(candidate):
            return str(candidate)
    raise SandboxUnavailable(
        f"as root, the sandbox runs as uid {SANDBOX_UID}, which cannot execute {candidates[0]} (a directory above "
        "it is private): install a Python 3 that other users can run (apt-get install python3, or the python "
        "image's /usr/local), or run the worker as an unprivileged user"
    )


@functools.lru_cache(maxsize=4)
def runtime_for(python: str) -> Runtime:
    """Ask ``python`` where its standard library and shared library live (once per interpreter)."""
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", _QUERY], capture_output=True, text=True, timeout=30, env={}
        )
        info = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as err:
        raise SandboxUnavailable(f"could not query the sandbox interpreter {python}: {err}") from None
    paths = {info["executable"], info["stdlib"], info["platstdlib"], info["dynload"]}
    if info.get("libdir") and info.get("soname"):
        paths.add(os.path.join(info["libdir"], info["soname"]))
    multiarch = info.get("multiarch") or ""
    paths |= {f"/usr/lib/{multiarch}", "/usr/lib64", f"/lib/{multiarch}", "/lib64", "/etc/ld.so.cache"}
    symlinks = []
    for top in ("/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            symlinks.append((top, os.readlink(top)))
            paths = {p for p in paths if not (p == top or p.startswith(top + "/"))}
    existing = sorted(
        {os.path.realpath(p) if p == info["executable"] else p for p in paths if p and os.path.exists(p)}
    )
    return Runtime(python=info["executable"], ro_paths=_outermost(existing), symlinks=tuple(symlinks))


def _outermost(paths: list[str]) -> tuple[str, ...]:
    """Drop paths already inside another bound path (``lib-dynload`` inside the stdlib)."""
    kept: list[str] = []
    for path in sorted(paths, key=len):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return tuple(sorted(kept))


def bwrap_argv(
    runtime: Runtime, *, seccomp_fd: int, program_fd: int, tmp_bytes: int, proc: bool, command: list[str]
) -> list[str]:
    """The bwrap command line: fresh namespaces of every kind, an empty environment, no capabilities.

    ``proc=False`` leaves /proc out entirely: inside a container whose own /proc has masked paths
    (Docker's default) the kernel refuses a new procfs ("mount too revealing"), and no /proc is the
    stricter of the two views.
    """
    argv = [
        bwrap_path(),
        # Each namespace explicitly (--unshare-all would silently go on without a user or cgroup namespace).
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
        "--disable-userns",  # no nested user namespace even if seccomp were bypassed
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--hostname", "sandbox",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--clearenv", "--setenv", "LC_ALL", "C.UTF-8",
    ]  # fmt: skip
    for path in runtime.ro_paths:
        argv += ["--ro-bind", path, path]
    for link, target in runtime.symlinks:
        argv += ["--symlink", target, link]
    argv += [
        *(("--proc", "/proc") if proc else ()), "--dev", "/dev",
        # /dev/shm for multiprocessing's semaphores; the rest of /dev read-only.
        "--size", str(tmp_bytes // 4), "--perms", "1777", "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
        "--size", str(tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp",
        "--perms", "0444", "--file", str(program_fd), PROGRAM_PATH,
        "--remount-ro", "/", "--chdir", "/tmp", "--seccomp", str(seccomp_fd), "--",
    ]  # fmt: skip
    return argv + command
