"""The box's seccomp filter: one policy, two forms.

Docker gets it as a profile in Docker's JSON format (`docker_profile()`); bubblewrap gets the
same rules compiled to a BPF program (`bpf_program()`, passed with `bwrap --seccomp FD`). The BPF
is compiled by libseccomp, through its Python bindings (pyseccomp), and committed per
architecture (sandbox/filters/<arch>.bpf), so that a worker needs neither libseccomp's bindings
nor a compiler: `python -m sandbox seccomp-build` writes it again after a change here, and a test
checks that the committed program is what the rules compile to.

The policy is an allow-list. It allows a subset of what Docker's default profile allows a
container with only CAP_SETUID, CAP_SETGID and CAP_KILL (the box's judge), and denies on top:
ptrace and the calls that read or write another process's memory, io_uring, and 32-bit system
calls. Everything else Docker denies stays denied (user namespaces, unshare, setns, mount,
keyctl, bpf, perf_event_open, kexec, module loading, clock setting, ...). A denied call fails
with EPERM, as under Docker, so code that probes for a feature falls back instead of dying;
clone3 fails with ENOSYS so that the C library falls back to clone, whose flags the filter can
read (a namespace flag there fails with EPERM). See docs/sandbox.md.
"""
from __future__ import annotations

import errno
import json
import platform
from pathlib import Path

from .errors import SandboxError

HERE = Path(__file__).resolve().parent / "filters"
ARCHES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}

# What the evaluator, Python, torch, Triton, the C compiler and the CUDA driver need, by kind.
FILES = """
access faccessat faccessat2 open openat openat2 creat close close_range read readv pread64
preadv preadv2 write writev pwrite64 pwritev pwritev2 lseek _llseek stat lstat fstat newfstatat
statx statfs fstatfs getdents getdents64 readlink readlinkat mkdir mkdirat rmdir unlink unlinkat
rename renameat renameat2 link linkat symlink symlinkat chmod fchmod fchmodat chown fchown
fchownat lchown truncate ftruncate fallocate fadvise64 fsync fdatasync sync syncfs
sync_file_range readahead copy_file_range sendfile splice tee vmsplice utime utimes utimensat
futimesat umask chdir fchdir getcwd fcntl flock dup dup2 dup3 pipe pipe2 ioctl getxattr lgetxattr
fgetxattr listxattr llistxattr flistxattr setxattr lsetxattr fsetxattr removexattr lremovexattr
fremovexattr getxattrat setxattrat listxattrat removexattrat fchmodat2 cachestat listmount
statmount inotify_init inotify_init1 inotify_add_watch inotify_rm_watch fanotify_mark mknod
mknodat name_to_handle_at memfd_create memfd_secret io_setup io_destroy io_submit io_cancel
io_getevents io_pgetevents
"""
MEMORY = """
brk mmap munmap mremap mprotect madvise mincore msync mlock mlock2 mlockall munlock munlockall
remap_file_pages pkey_alloc pkey_free pkey_mprotect membarrier
"""
PROCESSES = """
fork vfork execve execveat exit exit_group wait4 waitid kill tkill tgkill pidfd_open
pidfd_send_signal getpid getppid gettid getpgid getpgrp setpgid getsid setsid getuid geteuid
getgid getegid getresuid getresgid getgroups setuid setgid setreuid setregid setresuid setresgid
setgroups setfsuid setfsgid capget capset prctl arch_prctl set_tid_address set_robust_list
get_robust_list rseq getrlimit setrlimit prlimit64 getrusage getpriority setpriority
sched_yield sched_getaffinity sched_setaffinity sched_getparam sched_setparam
sched_getscheduler sched_setscheduler sched_getattr sched_setattr sched_get_priority_max
sched_get_priority_min sched_rr_get_interval ioprio_get ioprio_set getcpu uname sysinfo times
seccomp landlock_create_ruleset landlock_add_rule landlock_restrict_self process_mrelease
restart_syscall modify_ldt get_thread_area set_thread_area getrandom map_shadow_stack mseal
uretprobe
"""
SIGNALS_AND_TIME = """
rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigsuspend rt_sigtimedwait
rt_sigqueueinfo rt_tgsigqueueinfo sigaltstack signalfd signalfd4 pause alarm getitimer setitimer
nanosleep clock_nanosleep clock_gettime clock_getres gettimeofday time adjtimex clock_adjtime
timer_create timer_delete timer_gettime timer_settime timer_getoverrun timerfd_create
timerfd_gettime timerfd_settime
"""
WAITING = """
futex futex_waitv futex_wait futex_wake futex_requeue poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait
epoll_pwait epoll_pwait2 eventfd eventfd2
"""
# The box has no network (only lo): sockets serve local IPC (Unix sockets carry CUDA handles
# and file descriptors between processes of the box)
SOCKETS = """
socketpair connect accept accept4 bind listen getsockname getpeername getsockopt setsockopt
sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg shutdown
"""
SYSV_IPC = """
shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl mq_open
mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
"""
ALLOWED = sorted(set(" ".join([FILES, MEMORY, PROCESSES, SIGNALS_AND_TIME, WAITING, SOCKETS,
                                SYSV_IPC]).split()))

# Allowed only with these arguments: (name, [(arg index, op, value[, mask])]); one entry per rule
CLONE_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
AF_VSOCK = 40
CONDITIONAL = [
    # threads and processes, never a new namespace (a user namespace least of all)
    ("clone", [(0, "SCMP_CMP_MASKED_EQ", 0, CLONE_NAMESPACE_FLAGS)]),
    # any socket family but vsock (the host's hypervisor channel)
    ("socket", [(0, "SCMP_CMP_NE", AF_VSOCK)]),
    # reading the personality, and the harmless ones Docker allows
    *[("personality", [(0, "SCMP_CMP_EQ", value)]) for value in (0, 8, 0x20000, 0x20008, 0xFFFFFFFF)],
]
# Refused with another errno than EPERM
ERRNO = {"clone3": errno.ENOSYS}

# Denied, named here so that tests try each inside the box and no edit above lets one through.
# Beyond Docker's default: ptrace, process_vm_readv/writev (Docker allows them on kernels >= 4.8)
# and io_uring (allowed by the Docker releases before 25.0). perf_event_open stays denied; a
# profiling mode that needs it would use a profile of its own (docs/sandbox.md).
DENIED = sorted("""
unshare setns mount umount2 pivot_root chroot fsopen fsmount fsconfig fspick move_mount
open_tree mount_setattr keyctl add_key request_key bpf perf_event_open ptrace process_vm_readv
process_vm_writev pidfd_getfd kcmp process_madvise userfaultfd io_uring_setup io_uring_enter
io_uring_register kexec_load kexec_file_load init_module finit_module delete_module reboot
swapon swapoff acct quotactl quotactl_fd lookup_dcookie syslog settimeofday clock_settime
sethostname setdomainname iopl ioperm open_by_handle_at vhangup fanotify_init mbind
set_mempolicy get_mempolicy move_pages migrate_pages nfsservctl uselib
""".split())


def docker_profile() -> str:
    """The policy in Docker's seccomp profile format (`security_opt=["seccomp=<json>"]`)."""
    syscalls = [{"names": ALLOWED, "action": "SCMP_ACT_ALLOW"}]
    for name, conditions in CONDITIONAL:
        args = [{"index": c[0], "op": c[1], "value": c[3] if c[1] == "SCMP_CMP_MASKED_EQ" else c[2],
                 "valueTwo": c[2] if c[1] == "SCMP_CMP_MASKED_EQ" else 0} for c in conditions]
        syscalls.append({"names": [name], "action": "SCMP_ACT_ALLOW", "args": args})
    for name, code in ERRNO.items():
        syscalls.append({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": code})
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": errno.EPERM,
        # native calls only: no 32-bit (x86, x32, arm) entry points into the kernel
        "archMap": [{"architecture": arch, "subArchitectures": []} for arch in ARCHES.values()],
        "syscalls": syscalls,
    }
    return json.dumps(profile, indent=1, sort_keys=True)


def compile_bpf(arch: str) -> bytes:
    """The policy as a BPF program for `arch`, by libseccomp (needs pyseccomp and libseccomp2)."""
    import os
    import tempfile

    import pyseccomp as sc

    ops = {"SCMP_CMP_EQ": sc.EQ, "SCMP_CMP_NE": sc.NE, "SCMP_CMP_MASKED_EQ": sc.MASKED_EQ}
    native = getattr(sc.Arch, ARCHES[arch].removeprefix("SCMP_ARCH_"))
    if native != sc.system_arch():
        raise SandboxError(f"compile the {arch} filter on a {arch} machine (this is {platform.machine()})")
    flt = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
    # a call of another architecture (32-bit entry points) kills the process
    flt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)

    def known(name: str) -> bool:
        try:
            return sc.resolve_syscall(native, name) >= 0
        except (ValueError, OSError):
            return False

    for name in ALLOWED:
        if known(name):
            flt.add_rule(sc.ALLOW, name)
    for name, conditions in CONDITIONAL:
        if known(name):
            args = [sc.Arg(c[0], ops[c[1]], *([c[3], c[2]] if c[1] == "SCMP_CMP_MASKED_EQ" else [c[2]]))
                    for c in conditions]
            flt.add_rule(sc.ALLOW, name, *args)
    for name, code in ERRNO.items():
        if known(name):
            flt.add_rule(sc.ERRNO(code), name)
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.flush()
        os.lseek(f.fileno(), 0, os.SEEK_SET)
        return f.read()


def bpf_path(arch: str | None = None) -> Path:
    return HERE / f"{arch or platform.machine()}.bpf"


def bpf_program(arch: str | None = None) -> bytes:
    """The committed BPF program for this machine's architecture."""
    path = bpf_path(arch)
    try:
        return path.read_bytes()
    except OSError:
        raise SandboxError(f"no seccomp program for {arch or platform.machine()} ({path}); "
                           "run `python -m sandbox seccomp-build` on such a machine") from None


def build() -> list[Path]:
    """Write sandbox/filters/<this machine's arch>.bpf and docker-profile.json (the profile as
    Docker reads it: for review, and for `docker run --security-opt seccomp=...`)."""
    HERE.mkdir(exist_ok=True)
    path = bpf_path()
    path.write_bytes(compile_bpf(platform.machine()))
    profile = HERE / "docker-profile.json"
    profile.write_text(docker_profile() + "\n")
    return [path, profile]
