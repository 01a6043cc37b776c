"""Run an untrusted Python program in a kernel-enforced sandbox (the ``code`` verifier, the test bench).

Nothing inside the sandboxed process is trusted: every guarantee comes from the kernel, set up by the
trusted parent before the program's first instruction.

- **bubblewrap** (``bwrap``) starts the interpreter in fresh user, PID, network, IPC, UTS and cgroup
  namespaces, with no capabilities (``--cap-drop ALL``), uid/gid 65534 inside, an empty environment
  (only ``LC_ALL``), ``--die-with-parent`` and ``--new-session``. A root parent starts bwrap as uid
  65534, so the sandbox is never root outside either.
- **Processes**: its own PID namespace: ``os.kill(-1, 9)`` reaches only the sandbox's processes; the
  parent, the worker and sibling sandboxes are invisible (``/proc`` is the sandbox's own).
- **Network**: an empty network namespace (no interface but a downed loopback; abstract Unix sockets
  are per namespace), and the seccomp filter refuses ``socket()`` of every family.
- **Files**: a read-only root holding only the interpreter, its standard library and the system
  libraries; a private size-capped ``/tmp``; no host ``/tmp``, ``/run`` (PostgreSQL's socket),
  ``/home``, ``/root``, ``/etc`` or repository (see ``_bwrap``).
- **seccomp** (built with libseccomp in the parent, installed by bwrap): ptrace, namespaces, mounts,
  bpf, perf, io_uring, keyrings, module loading and the rest of ``_seccomp.DENIED`` fail with EPERM.
- **Resources**: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE (caps stdout/stderr and every file), RLIMIT_CORE 0
  and RLIMIT_NPROC (per sandbox: counted in its own user namespace) are set before the program runs; the
  parent's wall clock kills the whole tree.
- **Fail closed**: ``run_python`` raises ``SandboxUnavailable`` (what is missing, how to fix it) when a
  probe run shows the machine cannot build the sandbox; the program is never run without it.

Not covered: a kernel exploit; memory across processes (each may use ``memory_mb``, up to
``max_processes`` of them) has no cgroup cap.

>>> run_python("print(int(input()) * 2)", stdin="21").stdout
'42\\n'
"""

from trainer.sandbox._bwrap import (
    SANDBOX_GID,
    SANDBOX_UID,
    SandboxUnavailable,
    sandbox_python,
    world_executable,
)
from trainer.sandbox._run import (
    Limits,
    SandboxResult,
    Status,
    require_sandbox,
    run_python,
    sandbox_capabilities,
)

__all__ = [
    "SANDBOX_GID", "SANDBOX_UID", "Limits", "SandboxResult", "SandboxUnavailable", "Status", "require_sandbox",
    "run_python", "sandbox_capabilities", "sandbox_python", "world_executable",
]  # fmt: skip
