from django.core.checks import Error, Warning, register

from .core import sandbox_problem, sandbox_warnings


@register("grader")
def sandbox_check(app_configs, **kwargs):
    """Grading needs a working bubblewrap sandbox; there is no unsandboxed fallback."""
    problem = sandbox_problem()
    if problem:
        return [Error(
            f"The grading sandbox cannot run on this host: {problem}",
            hint="Install bubblewrap (apt-get install bubblewrap) and allow unprivileged user "
                 "namespaces (sysctl kernel.unprivileged_userns_clone=1), then run `manage.py check`.",
            id="grader.E001",
        )]
    return [Warning(message, id="grader.W001") for message in sandbox_warnings()]
