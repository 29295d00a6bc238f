"""A probe that makes every system call the box's seccomp policy denies, from inside the box, and
prints one line per call: `SYSCALL <name> <return value> <errno name>`. Shared by the hostile
tests and bench/sandbox_gpu_check.py (which runs without Django or pytest: standard library only).

The arguments are harmless (null pointers, bad descriptors, zero flags), and several calls would
succeed without the filter (unshare(0), ptrace(PTRACE_TRACEME), io_uring_setup, keyctl on the
session keyring, process_vm_readv on itself, a clone into a new user namespace): under the filter
each fails with EPERM (clone3 with ENOSYS).
"""
from __future__ import annotations

# x86_64 system call numbers (a test checks them against libseccomp's table)
NUMBERS_X86_64 = {
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "fsopen": 430, "fsmount": 432, "fsconfig": 431, "fspick": 433, "move_mount": 429, "open_tree": 428,
    "mount_setattr": 442, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321,
    "perf_event_open": 298, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "pidfd_getfd": 438, "kcmp": 312, "process_madvise": 440, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167,
    "swapoff": 168, "acct": 163, "quotactl": 179, "quotactl_fd": 443, "lookup_dcookie": 212,
    "syslog": 103, "settimeofday": 164, "clock_settime": 227, "sethostname": 170,
    "setdomainname": 171, "iopl": 172, "ioperm": 173, "open_by_handle_at": 304, "vhangup": 153,
    "fanotify_init": 300, "mbind": 237, "set_mempolicy": 238, "get_mempolicy": 239,
    "move_pages": 279, "migrate_pages": 256, "nfsservctl": 180, "uselib": 134,
    "clone": 56, "clone3": 435,
}

PROBE = r'''
import ctypes, errno, os, platform

NUMBERS = %(numbers)r
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
PTRACE_TRACEME, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING = 0, 0, -3


def call(name, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(NUMBERS[name]), *[ctypes.c_long(a) for a in args])
    err = ctypes.get_errno()
    if rc == 0 and name == "clone":
        os._exit(0)  # the child of a clone the filter let through
    if rc > 0 and name in ("io_uring_setup", "userfaultfd", "fsopen", "open_tree", "fanotify_init"):
        os.close(rc)
    if rc > 0 and name == "clone":
        os.waitpid(rc, 0)
    print("SYSCALL", name, rc, errno.errorcode.get(err, err) if rc == -1 else "-", flush=True)


status = open("/proc/self/status").read()
print("SECCOMP", [l.split(":")[1].strip() for l in status.splitlines() if l.startswith("Seccomp:")][0],
      "uid", os.getuid(), flush=True)
if platform.machine() != "x86_64":
    print("SYSCALL unsupported-arch", platform.machine(), flush=True)
else:
    params = ctypes.create_string_buffer(120)
    buf = ctypes.create_string_buffer(8)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)
    special = {
        "unshare": [(0,), (CLONE_NEWUSER,)],
        "ptrace": [(PTRACE_TRACEME, 0, 0, 0)],
        "keyctl": [(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)],
        "io_uring_setup": [(1, ctypes.addressof(params))],
        "process_vm_readv": [(os.getpid(), ctypes.addressof(iov), 1, ctypes.addressof(iov), 1, 0)],
        "setns": [(-1, 0)],
        "pidfd_getfd": [(-1, -1, 0)],
        "clone": [(CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)],
    }
    for name in sorted(NUMBERS):
        for args in special.get(name, [(0, 0, 0, 0, 0, 0)]):
            call(name, *args)
'''


def probe_source(prelude: str = "") -> str:
    """The probe as Python source (with `prelude` first, e.g. a custom_kernel definition)."""
    return prelude + PROBE % {"numbers": NUMBERS_X86_64}


def parse(text: str) -> dict[str, list[tuple[int, str]]]:
    """{name: [(return value, errno name or "-"), ...]} from the probe's output."""
    found: dict[str, list[tuple[int, str]]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "SYSCALL":
            found.setdefault(parts[1], []).append((int(parts[2]), parts[3]))
    return found


def expected_errno(name: str) -> str:
    return "ENOSYS" if name == "clone3" else "EPERM"


def problems(found: dict[str, list[tuple[int, str]]]) -> list[str]:
    """Every call that did not fail the way the filter makes it fail (empty: all denied)."""
    out = []
    for name in NUMBERS_X86_64:
        results = found.get(name)
        if not results:
            out.append(f"{name}: not tried")
            continue
        for rc, err in results:
            if rc != -1 or err != expected_errno(name):
                out.append(f"{name}: returned {rc} ({err}), expected -1 ({expected_errno(name)})")
    return out
