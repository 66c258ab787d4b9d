from django.core.checks import Error, Warning, register

from .core import sandbox_problem, sandbox_warnings
from .core.sandbox import SandboxUnavailable, environment, uncapped_allowed


@register("grader")
def sandbox_check(app_configs, **kwargs):
    """Grading needs a working bubblewrap sandbox with caps; there is no unsandboxed fallback."""
    try:
        cap_problem = environment().cap_problem
    except SandboxUnavailable:
        cap_problem = None
    if cap_problem and not uncapped_allowed():
        return [
            Error(
                f"The grading sandbox would run without caps: {cap_problem}",
                hint="Run the grading workers as root in a systemd unit with Delegate=yes (docs/deploy.md, "
                "'cgroup v2'), or on a host with the cgroup v1 pids and memory hierarchies. "
                "No submission is graded until then.",
                id="grader.E002",
            )
        ]
    problem = sandbox_problem()
    if problem:
        return [
            Error(
                f"The grading sandbox cannot run on this host: {problem}",
                hint="Install bubblewrap (apt-get install bubblewrap) and allow unprivileged user "
                "namespaces (sysctl kernel.unprivileged_userns_clone=1), then run `manage.py check`.",
                id="grader.E001",
            )
        ]
    return [Warning(message, id="grader.W001") for message in sandbox_warnings()]
