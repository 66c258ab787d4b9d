"""Resource limits for one sandboxed run."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

KIB = 1024
MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Limits enforced from outside the sandbox (rlimits, cgroups, the host's clock).

    Only ``cpu_seconds``, ``wall_seconds``, ``memory_mb`` and ``processes`` may be
    overridden by an exercise; the rest are platform safety caps.
    """

    cpu_seconds: float = 5.0
    wall_seconds: float = 10.0
    memory_mb: int = 512
    processes: int = 64  # cgroup pids.max (processes and threads)
    output_bytes: int = 64 * KIB  # per case stdout shown/compared; more is output_limit
    source_bytes: int = 64 * KIB
    file_size_bytes: int = 16 * MIB  # RLIMIT_FSIZE; also the cap on one result array
    tmpfs_bytes: int = 32 * MIB  # /tmp and /dev/shm, each
    output_dir_bytes: int = 64 * MIB  # the writable result directory (a tmpfs when possible)
    open_files: int = 256

    # Ranges an exercise may choose from: (minimum, maximum).
    AUTHOR_RANGES: ClassVar[dict[str, tuple[float, float]]] = {
        "cpu_seconds": (0.1, 30.0),
        "wall_seconds": (0.5, 60.0),
        "memory_mb": (128, 2048),
        "processes": (4, 256),
    }

    @classmethod
    def ceiling(cls) -> Limits:
        """The most any job may ask for: what a pooled sandbox is spawned with, before the
        job's own limits are applied at hand-off (caps can only be lowered then)."""
        highest: dict[str, Any] = {name: high for name, (_, high) in cls.AUTHOR_RANGES.items()}
        return replace(cls(), **highest)

    def fits_under(self, ceiling: Limits) -> bool:
        """Can a sandbox spawned with ``ceiling`` take a job with these limits?

        The platform caps (tmpfs and output sizes, …) are fixed at spawn and must be equal;
        the limits an author may choose must not exceed the ceiling's.
        """
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(ceiling, f.name)
            if f.name in self.AUTHOR_RANGES:
                if mine > theirs:
                    return False
            elif mine != theirs:
                return False
        return True
