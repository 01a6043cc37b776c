"""Escape attempts against trainer.sandbox, each with a check that its effect did not happen.

Pure standard library (plus ``trainer.sandbox``), so the same attacks run in the pytest process and, as
uid 65534, in a separate interpreter: ``python3 -S sandbox_attacks.py`` prints one JSON object
``{attack name: {"breach": null | what escaped, ...}}``. tests/trainer/test_sandbox_attacks.py runs both.

Every target is made reachable for the sandbox's own uid on the host (a world-writable directory, a
0600 file owned by that uid, a victim process of that uid, the real PostgreSQL and Redis), so only the
sandbox stands between the attack and its effect.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: trainer/ lies beside this file (a copy) or two levels up
    _here = Path(__file__).resolve()
    sys.path[:0] = [
        str(p) for p in (_here.parent, *_here.parents[1:3]) if (p / "trainer" / "sandbox").is_dir()
    ][:1]

from trainer.sandbox import SANDBOX_GID, SANDBOX_UID, Limits, SandboxResult, run_python

SECRET = "s3cr3t-" + "token-that-must-not-leak"
PG_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
Check = Callable[[SandboxResult, "Context"], str | None]


@dataclass
class Context:
    """Host-side targets the attacks aim at, all reachable by the sandbox's uid outside."""

    repo: str
    outside: str  # a host directory the sandbox's outer uid could write to
    secret_file: str  # 0600, owned by the sandbox's outer uid
    victim: subprocess.Popen[bytes]
    parent_pid: int = field(default_factory=os.getpid)
    orphan_name: str = field(default_factory=lambda: "rlvr" + uuid.uuid4().hex[:10])

    def values(self) -> dict[str, object]:
        return {
            "repo": self.repo, "outside": self.outside, "secret_file": self.secret_file, "victim": self.victim.pid,
            "parent": self.parent_pid, "home": os.path.expanduser("~"), "orphan": self.orphan_name,
        }  # fmt: skip


@dataclass(frozen=True)
class Attack:
    name: str
    program: str  # formatted with Context.values()
    check: Check
    limits: Limits = field(default_factory=lambda: Limits(wall_s=5, cpu_s=3))
    needs: str | None = None  # a host service that must be reachable for the attack to mean anything


# ---- checks --------------------------------------------------------------------------------------


def no_secret(result: SandboxResult, ctx: Context) -> str | None:
    leaked = [
        s
        for s in (SECRET, "INSTALLED_APPS", "DATABASE_URL", "root:x:0:0")
        if s in result.stdout + result.stderr
    ]
    return f"leaked {leaked}: {result.stdout[:200]!r}" if leaked else None


def says(marker: str) -> Check:
    """Contained when the program itself reports ``marker`` (it printed what the kernel answered)."""

    def check(result: SandboxResult, ctx: Context) -> str | None:
        if marker in result.stdout:
            return None
        return f"expected {marker!r} from the program, got {result.status}: {(result.stdout + result.stderr)[-300:]!r}"

    return check


def all_of(*checks: Check) -> Check:
    def check(result: SandboxResult, ctx: Context) -> str | None:
        return next((b for c in checks if (b := c(result, ctx)) is not None), None)

    return check


def victim_alive(result: SandboxResult, ctx: Context) -> str | None:
    time.sleep(0.05)
    if ctx.victim.poll() is not None:
        return f"the victim process (pid {ctx.victim.pid}, same uid as the sandbox) was killed"
    state = Path(f"/proc/{ctx.victim.pid}/stat").read_text().split(")")[-1].split()[0]
    return None if state in "SR" else f"the victim process is in state {state} (traced or stopped)"


def nothing_outside(*names: str) -> Check:
    def check(result: SandboxResult, ctx: Context) -> str | None:
        values = ctx.values()
        found = [p for n in names if os.path.exists(p := n.format(**values))]
        return f"wrote {found}" if found else None

    return check


def status_is(*statuses: str, within_s: float | None = None) -> Check:
    def check(result: SandboxResult, ctx: Context) -> str | None:
        if result.status not in statuses:
            return f"status {result.status} ({result.reason}), expected {statuses}"
        if within_s is not None and result.elapsed_s > within_s:
            return f"took {result.elapsed_s:.1f}s (limit {within_s}s)"
        return None

    return check


def no_orphan(result: SandboxResult, ctx: Context) -> str | None:
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        alive = [p for p in os.listdir("/proc") if p.isdigit() and _comm(p) == ctx.orphan_name[:15]]
        if not alive:
            return None
        time.sleep(0.1)
    return f"processes outlived the sandbox: {alive}"


def _comm(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def only_sandbox_mounts(result: SandboxResult, ctx: Context) -> str | None:
    from trainer.sandbox._bwrap import runtime_for, sandbox_python

    allowed = {"/", "/proc", "/tmp", "/dev", *runtime_for(sandbox_python()).ro_paths}
    points = {line.split()[4] for line in result.stdout.splitlines() if len(line.split()) > 4}
    extra = sorted(p for p in points if p not in allowed and not p.startswith("/dev/"))
    if not points:
        return f"no mountinfo read: {result.stderr[-200:]!r}"
    return f"host paths mounted: {extra}" if extra else None


def few_pids(result: SandboxResult, ctx: Context) -> str | None:
    pids = [int(p) for p in result.stdout.split() if p.isdigit()]
    if not pids:
        return f"no listing: {result.stderr[-200:]!r}"
    if ctx.parent_pid in pids or ctx.victim.pid in pids or len(pids) > 10:
        return f"host processes visible in /proc: {pids[:20]}"
    return None


def host_directories_hidden(result: SandboxResult, ctx: Context) -> str | None:
    """Each directory is absent, or (a parent of the interpreter's bind) lists only the way to it."""
    from trainer.sandbox._bwrap import runtime_for, sandbox_python

    bound = runtime_for(sandbox_python()).ro_paths
    lines = result.stdout.splitlines()
    if len(lines) != 8:
        return f"unexpected output: {(result.stdout + result.stderr)[-300:]!r}"
    for line in lines:
        directory, listing = line.split(" ", 1)
        on_the_way = {
            p[len(directory) :].strip("/").split("/")[0] for p in bound if p.startswith(directory + "/")
        }
        if listing == "errno 2" or (on_the_way and set(ast.literal_eval(listing)) <= on_the_way):
            continue
        return f"saw the host's {directory}: {listing[:200]}"
    return None


def setuid_powerless(result: SandboxResult, ctx: Context) -> str | None:
    """Set-id files may exist in the bound libraries, but their bits are void: nosuid mounts, NoNewPrivs."""
    try:
        seen = json.loads(result.stdout)
    except json.JSONDecodeError:
        return f"unexpected output: {(result.stdout + result.stderr)[-300:]!r}"
    if seen["nnp"] != ["1"]:
        return f"NoNewPrivs is {seen['nnp']}"
    for path in seen["found"]:
        point = max((m for m in seen["mounts"] if path.startswith(m.rstrip("/") + "/")), key=len, default="/")
        if "nosuid" not in seen["mounts"].get(point, ""):
            return f"{path} is set-id on a mount without nosuid ({point})"
    return None


# ---- attacks ---------------------------------------------------------------------------------------

_SOCKET_RESULT = "except OSError as e:\n    print('refused', e.errno)\nelse:\n    print('reply', data)\n"
ATTACKS: list[Attack] = [
    Attack("audit_hook_tampering_then_postgres_socket", (
        "import gc, socket\n"
        "for f in [o for o in gc.get_objects() if callable(o) and getattr(o, '__name__', '') == '_hook']:\n"
        "    f.__code__ = (lambda *a: None).__code__\n"
        "try:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect({pg_socket!r})\n"
        "    s.sendall(b'\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f')\n    data = s.recv(64)\n" + _SOCKET_RESULT
    ), all_of(says("refused 1"), no_secret), needs="pg_unix"),
    Attack("unix_socket_to_postgresql", (
        "import socket\ntry:\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n    s.connect({pg_socket!r})\n"
        "    s.sendall(b'\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f')\n    data = s.recv(64)\n" + _SOCKET_RESULT
    ), says("refused 1"), needs="pg_unix"),
    Attack("tcp_to_postgresql", (
        "import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', 5432), timeout=2)\n"
        "    s.sendall(b'\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f')\n    data = s.recv(64)\n" + _SOCKET_RESULT
    ), says("refused 1"), needs="pg_tcp"),
    Attack("tcp_to_redis", (
        "import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', 6379), timeout=2)\n"
        "    s.sendall(b'PING\\r\\n')\n    data = s.recv(64)\n" + _SOCKET_RESULT
    ), says("refused 1"), needs="redis"),
    Attack("ctypes_libc_socket_and_connect", LIBC + (
        "fd = libc.socket(2, 1, 0)\nprint('socket', fd, ctypes.get_errno())\n"
        "addr = (ctypes.c_ubyte * 16)(2, 0, 0x18, 0xeb, 127, 0, 0, 1)\n"
        "print('connect', libc.connect(fd, addr, 16))\n"
    ), says("socket -1 1"), needs="redis"),
    Attack("raw_syscall_socket", LIBC + "print('fds', [libc.syscall(41, f, 1, 0) for f in (1, 2, 10, 16, 17)])\n",
           says("fds [-1, -1, -1, -1, -1]")),
    Attack("raw_and_packet_sockets", (
        "import socket\nout = []\nfor args in ((socket.AF_INET, socket.SOCK_RAW, 1), (socket.AF_PACKET, socket.SOCK_RAW, 0)):\n"
        "    try:\n        socket.socket(*args)\n        out.append('open')\n    except OSError as e:\n        out.append(e.errno)\n"
        "print('raw', out)\n"
    ), says("raw [1, 1]")),
    Attack("netlink_socket", (
        "import socket\ntry:\n    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n    print('open')\n"
        "except OSError as e:\n    print('refused', e.errno)\n"
    ), says("refused 1")),
    Attack("socketpair_of_inet_family", (
        "import socket\na, b = socket.socketpair()\na.sendall(b'x')\nprint('unix pair', b.recv(1))\n"
        "try:\n    socket.socketpair(socket.AF_INET)\n    print('inet pair open')\nexcept OSError as e:\n    print('refused', e.errno)\n"
    ), all_of(says("unix pair b'x'"), says("refused"))),
    Attack("kill_minus_one_beside_a_sibling_sandbox", (
        "import os, time\ntime.sleep(0.3)\ntry:\n    os.kill(-1, 9)\nexcept OSError as e:\n    print('kill', e.errno)\n"
        "print('after')\n"
    ), all_of(victim_alive, status_is("ok"))),
    Attack("kill_every_pid_number", (
        "import os\nme = os.getpid()\nhit = []\nfor pid in [{victim}, {parent}] + list(range(1, 40000)):\n"
        "    if pid != me:\n        try:\n            os.kill(pid, 9)\n            hit.append(pid)\n        except OSError:\n            pass\n"
        "print('signalled', hit)\n"
    ), all_of(victim_alive, says("signalled [1]"))),
    Attack("kill_the_host_parent_and_victim_by_pid", (
        "import os\nfor pid in ({parent}, {victim}):\n    try:\n        os.kill(pid, 9)\n        print('killed', pid)\n"
        "    except OSError as e:\n        print('refused', e.errno)\n"
    ), all_of(victim_alive, says("refused 3"))),
    Attack("signals_to_the_sandbox_parent", (
        "import os, signal\nppid = os.getppid()\nfor s in (signal.SIGTERM, signal.SIGKILL):\n    os.kill(ppid, s)\n"
        "import time\ntime.sleep(0.2)\nprint('after', ppid)\n"
    ), all_of(says("after 1"), status_is("ok"))),
    Attack("ptrace_attach", LIBC + (
        "print('ptrace', [libc.ptrace(16, p, 0, 0) for p in (1, {victim})], ctypes.get_errno())\n"
    ), all_of(says("ptrace [-1, -1] 1"), victim_alive)),
    Attack("process_vm_readv", LIBC + "print('readv', libc.syscall(310, 1, 0, 0, 0, 0, 0), ctypes.get_errno())\n",
           says("readv -1 1")),
    Attack("unshare_namespaces", LIBC + (
        "print('unshare', [libc.unshare(f) for f in (0x10000000, 0x40000000, 0x20000, 0x20000000)])\n"
    ), says("unshare [-1, -1, -1, -1]")),
    Attack("setns_into_pid_1", LIBC + (
        "fd = os.open('/proc/self/ns/net', os.O_RDONLY)\nprint('setns', libc.setns(fd, 0), ctypes.get_errno())\n"
    ), says("setns -1 1")),
    Attack("clone_with_clone_newuser", LIBC + (
        "r = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\nif r == 0:\n    print('child escaped')\n    os._exit(0)\n"
        "print('clone', r, ctypes.get_errno())\nprint('clone3', libc.syscall(435, 0, 0), ctypes.get_errno())\n"
    ), all_of(says("clone -1 1"), says("clone3 -1 38"))),
    Attack("mount_and_chroot", LIBC + (
        "print('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), ctypes.get_errno())\n"
        "try:\n    os.chroot('/tmp')\n    print('chrooted')\nexcept OSError as e:\n    print('chroot', e.errno)\n"
    ), all_of(says("mount -1 1"), says("chroot 1"))),
    Attack("bpf_perf_keyctl_io_uring_userfaultfd", LIBC + (
        "calls = {{'bpf': (321, 0, 0, 0), 'perf_event_open': (298, 0, 0, -1, -1, 0), 'keyctl': (250, 0, 0),\n"
        "         'io_uring_setup': (425, 1, 0), 'userfaultfd': (323, 0), 'personality': (135, 0x0040000)}}\n"
        "print('results', sorted((n, libc.syscall(*a), ctypes.get_errno()) for n, a in calls.items()))\n"
    ), says("results [('bpf', -1, 1), ('io_uring_setup', -1, 1), ('keyctl', -1, 1), ('perf_event_open', -1, 1), "
            "('personality', -1, 1), ('userfaultfd', -1, 1)]")),
    Attack("fork_bomb", "import os\nwhile True:\n    os.fork()", status_is("error", within_s=4.5)),
    Attack("memory_bomb", "x = bytearray(10 * 1024 ** 3)\nprint('allocated')", status_is("memory_limit")),
    Attack("disk_fill_in_tmp", (
        "total = 0\ntry:\n    for i in range(10000):\n        with open(f'/tmp/fill{{i}}', 'wb') as f:\n"
        "            for _ in range(3):\n                total += f.write(b'x' * 65536)\nexcept OSError as e:\n    print('stopped', e.errno)\n"
        "print('total', total)\n"
    ), lambda r, c: None if "stopped" in r.stdout and int(r.stdout.split()[-1]) <= 33 << 20 else f"wrote {r.stdout!r}"),
    Attack("write_outside_the_sandbox", (
        "out = []\nfor p in ('{outside}/pwned', '{repo}/pwned', '{home}/pwned', '/tmp/../{outside}/pwned2'):\n"
        "    try:\n        open(p, 'w').write('x')\n        out.append('wrote ' + p)\n    except OSError as e:\n        out.append(e.errno)\n"
        "print(out)\n"
    ), nothing_outside("{outside}/pwned", "{repo}/pwned", "{home}/pwned", "{outside}/pwned2")),
    Attack("read_the_environment", "import os\nprint(dict(os.environ))\nprint(open('/proc/self/environ').read())",
           all_of(no_secret, status_is("ok"))),
    Attack("read_settings_env_file_and_key_file", (
        "out = []\nfor p in ('{repo}/webapp/settings.py', '{repo}/.env', '{secret_file}', '/etc/passwd', '/etc/shadow'):\n"
        "    try:\n        out.append(open(p).read()[:300])\n    except OSError as e:\n        out.append(e.errno)\n"
        "print(out)\n"
    ), no_secret),
    Attack("read_host_processes_through_proc", (
        "out = []\nfor p in ('/proc/{parent}/environ', '/proc/{parent}/cmdline', '/proc/{victim}/environ', '/proc/1/environ'):\n"
        "    try:\n        out.append(open(p, 'rb').read()[:500])\n    except OSError as e:\n        out.append(e.errno)\n"
        "print(out)\n"
    ), no_secret),
    Attack("list_proc_for_host_pids", "import os\nprint(' '.join(p for p in os.listdir('/proc') if p.isdigit()))",
           few_pids),
    Attack("mountinfo_shows_only_the_sandbox", "print(open('/proc/self/mountinfo').read())", only_sandbox_mounts),
    Attack("sys_and_host_directories", (
        "import os\nfor d in ('/sys', '/run', '/var/run', '/home', '/root', '/work', '{repo}', '/etc/postgresql'):\n"
        "    try:\n        print(d, os.listdir(d))\n    except OSError as e:\n        print(d, 'errno', e.errno)\n"
    ), lambda r, c: host_directories_hidden(r, c)),
    Attack("setuid_binaries", (
        "import os, stat\nfound = []\nfor top in ('/usr', '/etc', '/dev', '/tmp'):\n"
        "    for root, dirs, files in os.walk(top):\n        for f in files:\n            p = os.path.join(root, f)\n"
        "            try:\n                if os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID):\n                    found.append(p)\n"
        "            except OSError:\n                pass\n"
        "mounts = {{l.split()[4]: l.split()[5] for l in open('/proc/self/mountinfo')}}\n"
        "nnp = [l.split()[1] for l in open('/proc/self/status') if l.startswith('NoNewPrivs')]\n"
        "import json\nprint(json.dumps({{'found': found, 'mounts': mounts, 'nnp': nnp}}))\n"
    ), lambda r, c: setuid_powerless(r, c)),
    Attack("shared_library_loaded_from_tmp", LIBC + (
        "import shutil\nshutil.copy('/usr/lib/x86_64-linux-gnu/libc.so.6', '/tmp/evil.so')\n"
        "try:\n    evil = ctypes.CDLL('/tmp/evil.so', use_errno=True)\n    print('loaded socket', evil.socket(2, 1, 0))\n"
        "except OSError as e:\n    print('not loaded', e)\n"
    ), lambda r, c: None if "loaded socket -1" in r.stdout else f"got {r.stdout!r} {r.stderr[-200:]!r}",
       Limits(wall_s=5, output_kb=4096)),
    Attack("symlink_tricks", (
        "import os\nout = []\nos.symlink('{repo}/webapp/settings.py', '/tmp/l1')\nos.symlink('/proc/1/root/{repo}', '/tmp/l2')\n"
        "for p in ('/tmp/l1', '/tmp/l2/webapp/settings.py', '/proc/self/root/{repo}/webapp/settings.py',\n"
        "          '/proc/1/cwd/../{repo}/webapp/settings.py'):\n"
        "    try:\n        out.append(open(p).read()[:300])\n    except OSError as e:\n        out.append(e.errno)\n"
        "try:\n    os.link('{secret_file}', '/tmp/hard')\n    out.append(open('/tmp/hard').read())\nexcept OSError as e:\n    out.append(e.errno)\n"
        "print(out)\n"
    ), no_secret),
    Attack("write_to_dev", (
        "out = []\nfor p in ('/dev/pwned', '/dev/sda', '/dev/mem', '/dev/kmsg'):\n"
        "    try:\n        open(p, 'wb').write(b'x')\n        out.append('wrote ' + p)\n    except OSError as e:\n        out.append(e.errno)\n"
        "open('/dev/shm/{orphan}', 'w').write('x')\nprint(out)\n"  # the sandbox's own /dev/shm
    ), all_of(lambda r, c: None if "wrote" not in r.stdout and r.stdout else f"{r.stdout!r} {r.stderr[-200:]!r}",
              nothing_outside("/dev/pwned", "/dev/shm/{orphan}"))),
    Attack("sethostname", LIBC + "print('sethostname', libc.sethostname(b'pwned', 5), ctypes.get_errno())\n",
           all_of(says("sethostname -1 1"), lambda r, c: None if socket.gethostname() != "pwned" else "renamed the host")),
    Attack("sleep_forever_in_an_orphan", (
        "import os, time, ctypes\nif os.fork() == 0:\n    os.setsid()\n"
        "    ctypes.CDLL(None).prctl(15, b'{orphan}', 0, 0, 0)\n    time.sleep(1000)\ntime.sleep(1000)\n"
    ), all_of(status_is("timeout", within_s=4.0), no_orphan), Limits(wall_s=1, cpu_s=3)),
    Attack("cpu_spin", "while True:\n    pass", status_is("cpu_limit"), Limits(wall_s=20, cpu_s=1)),
    Attack("huge_stdout", "while True:\n    print('x' * 1000)",
           all_of(status_is("output_limit"), lambda r, c: None if len(r.stdout) <= 64 << 10 else "output not capped"),
           Limits(output_kb=64)),
]  # fmt: skip


# ---- running them ----------------------------------------------------------------------------------


def services() -> dict[str, bool]:
    """Which real services are reachable from the host (an attack on an absent one would prove nothing)."""

    def tcp(port: int) -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    return {"pg_unix": os.path.exists(PG_SOCKET), "pg_tcp": tcp(5432), "redis": tcp(6379)}


def prepare(root: Path, repo: str) -> Context:
    """Targets owned by / writable for the uid the sandbox has outside (nobody when we are root)."""
    uid, gid = (SANDBOX_UID, SANDBOX_GID) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    root.mkdir(parents=True, exist_ok=True)
    outside = root / "outside"
    outside.mkdir()
    outside.chmod(0o777)
    secret = root / "key.pem"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    os.chown(secret, uid, gid)
    root.chmod(0o755)
    victim = subprocess.Popen(
        ["sleep", "60"], user=uid if os.geteuid() == 0 else None, group=gid if os.geteuid() == 0 else None
    )  # fmt: skip
    return Context(repo=repo, outside=str(outside), secret_file=str(secret), victim=victim)


def _attempt(attack: Attack, ctx: Context, available: dict[str, bool]) -> dict[str, object]:
    if attack.needs and not available[attack.needs]:
        return {"breach": None, "missing": attack.needs, "status": "not run"}
    values = {**ctx.values(), "pg_socket": PG_SOCKET}
    result = run_python(attack.program.format(**values), limits=attack.limits)
    try:
        breach = attack.check(result, ctx)
    except Exception as err:  # a check that cannot read its evidence is a failure, not a pass
        breach = f"check failed: {type(err).__name__}: {err}"
    return {"breach": breach, "status": result.status, "stdout": result.stdout[:300], "reason": result.reason}


def run_all(ctx: Context) -> dict[str, dict[str, object]]:
    """Every attack, four at a time, while a sibling sandbox sleeps; the sibling must finish unharmed."""
    available = services()
    sibling_program = "import time\ntime.sleep(2.5)\nprint('sibling survived')"
    with ThreadPoolExecutor(4) as pool:
        sibling = pool.submit(run_python, sibling_program, limits=Limits(wall_s=20))
        outcomes = dict(
            zip(
                [a.name for a in ATTACKS],
                pool.map(lambda a: _attempt(a, ctx, available), ATTACKS),
                strict=True,
            )
        )
        done = sibling.result()
    sibling_breach = (
        None
        if done.ok and "sibling survived" in done.stdout
        else f"sibling sandbox: {done.status} {done.reason}"
    )
    outcomes["sibling_sandbox_survives"] = {"breach": sibling_breach, "status": done.status}
    outcomes["host_can_still_fork"] = {
        "breach": None if subprocess.run(["true"]).returncode == 0 else "fork failed"
    }
    return outcomes


def main() -> None:
    repo = os.environ.get("RLVR_ATTACK_REPO") or str(Path(__file__).resolve().parents[2])
    with tempfile.TemporaryDirectory(prefix="rlvr-attacks-") as tmp:
        ctx = prepare(Path(tmp) / "targets", repo)
        try:
            outcomes = run_all(ctx)
        finally:
            ctx.victim.send_signal(signal.SIGKILL)
            ctx.victim.wait()
    json.dump({"uid": os.getuid(), "outcomes": outcomes}, sys.stdout)


if __name__ == "__main__":
    main()
