"""The seccomp filter loaded by bubblewrap (``--seccomp FD``) before the runner starts.

Default allow (NumPy, threads and fork must work), EPERM for system calls that
reach outside the sandbox or attack the kernel.  Calls from a foreign
architecture (32-bit ``int 0x80``) are killed by libseccomp's default
bad-arch action.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

DENIED_SYSCALLS = (
    # other processes' memory and debugging
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
    # kernel keyrings, BPF, io_uring, perf, userfaultfd: large kernel attack surface
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "perf_event_open",
    "userfaultfd",
    # namespaces and mounts
    "mount",
    "umount2",
    "unshare",
    "setns",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "name_to_handle_at",
    "open_by_handle_at",
    # the network: every socket, including AF_UNIX (NumPy needs none)
    "socket",
    "socketpair",
    # the machine itself
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "syslog",
    "acct",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "quotactl",
    "lookup_dcookie",
    "fanotify_init",
    "uselib",
    "personality",
    "vhangup",
    "nfsservctl",
)


class SeccompUnavailable(RuntimeError):
    pass


# What a grading zygote (zygote.py) must still do itself, for its children only: a child
# makes its own mount and PID namespaces and mounts fresh tmpfs.  The zygote's filter lacks
# exactly these; every runner the zygote forks installs the full filter (filter_bpf) before
# any student code.
ZYGOTE_ALLOWED = frozenset({"mount", "umount2", "unshare"})


@functools.lru_cache(maxsize=2)
def filter_bpf(zygote: bool = False) -> bytes:
    """The compiled BPF program (cached: building it costs a few milliseconds); ``zygote``:
    the zygote's own, without ZYGOTE_ALLOWED."""
    try:
        import pyseccomp
    except Exception as exc:  # ImportError, or OSError when libseccomp.so is missing
        raise SeccompUnavailable(f"pyseccomp cannot be loaded ({exc})") from exc
    flt = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in DENIED_SYSCALLS:
        if zygote and name in ZYGOTE_ALLOWED:
            continue
        try:
            flt.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            # A syscall unknown to this libseccomp/kernel cannot be called either.
            continue
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


@functools.lru_cache(maxsize=1)
def no_exec_bpf() -> bytes:
    """A second filter the runner installs itself just before student code runs:
    no execve/execveat, so no shell and no dropped binaries (fork still works).

    It cannot be part of bwrap's filter: that one must let bwrap start Python.
    """
    import pyseccomp

    flt = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in ("execve", "execveat"):
        flt.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
    with tempfile.TemporaryFile() as f:
        flt.export_bpf(f)
        f.seek(0)
        return f.read()


def filter_fd(zygote: bool = False, data: bytes | None = None) -> int:
    """A readable fd holding the BPF program (or ``data``), for bwrap's ``--seccomp FD``.

    A pipe is enough: the program is a few hundred bytes, far below the pipe
    buffer, and bwrap reads it to EOF.
    """
    data = filter_bpf(zygote) if data is None else data
    r, w = os.pipe()
    try:
        os.write(w, data)
    finally:
        os.close(w)
    return r
