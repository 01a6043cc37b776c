"""The seccomp filter the sandboxed program runs under, built in the trusted parent with libseccomp.

``filter_bpf()`` returns the compiled BPF program (bytes) that bubblewrap installs with ``--seccomp FD``
just before it executes the interpreter. Default: allow. Denied with EPERM: every ``socket()`` (any
family: no TCP, UDP, Unix, raw, packet or netlink socket can be created), ``socketpair()`` of any family
but AF_UNIX, the debugging/namespace/mount/kernel-administration calls in ``DENIED``, ``clone()`` with
any CLONE_NEW* flag, and the terminal-injection ioctls. ``clone3`` answers ENOSYS (its flags live in a
struct seccomp cannot read, so glibc falls back to ``clone``, whose flags are checked). Calls of a
foreign architecture (i386 ``int 0x80``, x32) kill the process: they would bypass a filter keyed on
x86_64 numbers.

libseccomp2 is loaded with ctypes (Debian's package, no Python binding needed).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os

ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
_ATTR_ACT_BADARCH = 2
_CMP_NE, _CMP_MASKED_EQ = 1, 7
AF_UNIX = 1
CLONE_NEW_FLAGS = {
    "CLONE_NEWTIME": 0x00000080,
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
DENIED = (
    "socket",
    # other processes' memory and debugging
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # namespaces, mounts, root changes
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig",
    "fspick", "move_mount", "open_tree", "mount_setattr", "open_by_handle_at", "name_to_handle_at",
    # kernel attack surface an untrusted program never needs
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "personality", "uselib", "lookup_dcookie", "quotactl",
    "fanotify_init", "syslog", "vhangup",
    # machine administration
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "clock_settime", "clock_adjtime", "settimeofday", "adjtimex",
    "iopl", "ioperm", "sethostname", "setdomainname",
)  # fmt: skip
_TERMINAL_IOCTLS = (0x5412, 0x541C)  # TIOCSTI (type into the terminal), TIOCLINUX


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


class SeccompUnavailable(RuntimeError):
    """libseccomp cannot be loaded or cannot build the filter."""


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


@functools.lru_cache(maxsize=1)
def _libseccomp() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as err:
        raise SeccompUnavailable(
            f"libseccomp cannot be loaded ({err}): apt-get install libseccomp2"
        ) from None
    lib.seccomp_init.argtypes, lib.seccomp_init.restype = [ctypes.c_uint32], ctypes.c_void_p
    lib.seccomp_release.argtypes, lib.seccomp_release.restype = [ctypes.c_void_p], None
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_ArgCmp)
    ]  # fmt: skip
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    for function in (
        "seccomp_attr_set",
        "seccomp_syscall_resolve_name",
        "seccomp_rule_add_array",
        "seccomp_export_bpf",
    ):
        getattr(lib, function).restype = ctypes.c_int
    return lib


def _check(result: int, what: str) -> None:
    if result < 0:
        raise SeccompUnavailable(f"libseccomp could not {what}: {os.strerror(-result)}")


class _Filter:
    """A libseccomp context: ``rule(action, name, *comparisons)``, then ``bpf()``."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.ctx = lib.seccomp_init(ALLOW)
        if not self.ctx:
            raise SeccompUnavailable("libseccomp could not create a filter (seccomp_init failed)")
        _check(
            lib.seccomp_attr_set(self.ctx, _ATTR_ACT_BADARCH, KILL_PROCESS), "refuse foreign architectures"
        )

    def rule(self, action: int, name: str, *comparisons: tuple[int, int, int, int]) -> None:
        number = self.lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:  # not a system call of this architecture: nothing to deny
            return
        args = (_ArgCmp * max(1, len(comparisons)))(*(_ArgCmp(*c) for c in comparisons))
        _check(
            self.lib.seccomp_rule_add_array(self.ctx, action, number, len(comparisons), args),
            f"add a rule for {name}",
        )

    def bpf(self) -> bytes:
        fd = os.memfd_create("rlvr-seccomp-export", os.MFD_CLOEXEC)
        try:
            _check(self.lib.seccomp_export_bpf(self.ctx, fd), "export the filter")
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def release(self) -> None:
        self.lib.seccomp_release(self.ctx)


@functools.lru_cache(maxsize=1)
def filter_bpf() -> bytes:
    """The compiled filter (classic BPF, ready for bwrap ``--seccomp``); SeccompUnavailable says why not."""
    filt = _Filter(_libseccomp())
    try:
        eperm = _errno_action(errno.EPERM)
        for name in DENIED:
            filt.rule(eperm, name)
        filt.rule(eperm, "socketpair", (0, _CMP_NE, AF_UNIX, 0))
        for flag in CLONE_NEW_FLAGS.values():
            filt.rule(eperm, "clone", (0, _CMP_MASKED_EQ, flag, flag))
        filt.rule(_errno_action(errno.ENOSYS), "clone3")
        for request in _TERMINAL_IOCTLS:
            filt.rule(eperm, "ioctl", (1, _CMP_MASKED_EQ, 0xFFFFFFFF, request))
        return filt.bpf()
    finally:
        filt.release()


def filter_fd() -> int:
    """A fresh memfd holding the filter, positioned at 0 (bwrap reads it to the end); the caller closes it."""
    fd = os.memfd_create("rlvr-seccomp", os.MFD_CLOEXEC)
    os.write(fd, filter_bpf())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
