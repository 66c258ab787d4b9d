"""Dikkat settings: one module, read from the environment with safe defaults.

Development needs nothing set: SQLite under var/, DEBUG off unless asked, a secret key
generated into an untracked file. Production sets SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL
and the HTTPS switches below.
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DIKKAT_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)  # SQLite database, secret key, grading data


def envbool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def envint(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask (taskset, a container's cpuset), lowered by
    a cgroup CPU quota (a container's `cpu.max` on cgroup v2, `cpu.cfs_quota_us` on v1)."""
    count = os.process_cpu_count() or 1
    quotas = (
        (Path("/sys/fs/cgroup/cpu.max"), None),
        (Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")),
    )
    for quota_file, period_file in quotas:
        try:
            fields = quota_file.read_text().split()
            if period_file is not None:
                fields.append(period_file.read_text().strip())
            quota, period = fields[0], fields[1]
            if quota not in ("max", "-1"):
                return max(1, min(count, -(-int(quota) // int(period))))
        except (OSError, ValueError, IndexError):
            continue
    return count


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _secret_key() -> str:
    """SECRET_KEY from the environment, else from var/secret_key (created on first use)."""
    if key := os.environ.get("SECRET_KEY"):
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = envbool("DEBUG")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_tasks_db",
    "axes",
    "accounts",
    "courses",
    "jobs",
    "grader",
    "instructors",
    "assessments",
    "lti",
    "studio",
]

MIDDLEWARE = [
    # First, so that it sees the cookies and headers all others set: a session begun by an LTI
    # launch gets SameSite=None cookies and may be framed by its LMS (frame-ancestors).
    "lti.middleware.EmbeddedInLmsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.LanguageMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "accounts.ratelimit.RateLimitMiddleware",  # a RateLimited raised in a view becomes a 429 page
    # Last, so it sees the outcome of authentication (django-axes' requirement).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",  # csp_nonce, for the code editor's styles
            ],
        },
    },
]

# Database: embedded SQLite by default; DATABASE_URL (e.g. postgres://…) for a server.
if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            # DIKKAT_SQLITE points a worker process at another file (the tests' database).
            "NAME": os.environ.get("DIKKAT_SQLITE") or str(VAR_DIR / "db.sqlite3"),
            "OPTIONS": {
                # WAL lets readers and the writer work at once; IMMEDIATE takes the write
                # lock at BEGIN so concurrent writers wait on the busy timeout instead of
                # failing with "database is locked" on lock upgrade.
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
            },
            # One test database per test run (its process), so that two runs on one checkout
            # never share (nor delete) each other's database.
            "TEST": {"NAME": str(VAR_DIR / f"test-db-{os.getpid()}.sqlite3")},
            # Keep each thread's connection between requests and tasks: opening one (and
            # closing it) costs more than a typical status poll's queries.
            "CONN_MAX_AGE": envint("DB_CONN_MAX_AGE", 600),
            "CONN_HEALTH_CHECKS": True,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The lesson page's markup (courses/pagecache.py) is cached in files under the var folder:
# every web worker of the machine shares them, nothing else has to run, and reading one costs
# no database query. Its keys carry the content version read from the database, so a stale
# page is never served, also on a second machine with its own files.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "pages": {
        "BACKEND": "courses.pagecache.PageCache",  # Django's FileBasedCache, culled less often
        "LOCATION": VAR_DIR / "cache" / "pages",
        "TIMEOUT": 7 * 24 * 3600,
        "OPTIONS": {"MAX_ENTRIES": 20000},
    },
}

TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# The client's address: behind TRUSTED_PROXIES reverse proxies (each appends to X-Forwarded-For)
# it is the entry the outermost of them added; 0 = REMOTE_ADDR (no proxy). See accounts/ratelimit.py.
TRUSTED_PROXIES = envint("TRUSTED_PROXIES", 0)

# Failed log-ins (django-axes with accounts/login_throttle.py): after AXES_FAILURE_LIMIT wrong
# passwords for one username from one address, that pair waits LOGIN_PAUSE seconds, doubled with
# every further wrong password up to LOGIN_PAUSE_MAX; other addresses are never held up.
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 5)
LOGIN_PAUSE = envint("LOGIN_PAUSE", 60)
LOGIN_PAUSE_MAX = envint("LOGIN_PAUSE_MAX", 15 * 60)
# Failures are forgotten this long after the last one (or at a successful log-in).
AXES_COOLOFF_TIME = timedelta(seconds=max(3600, LOGIN_PAUSE_MAX))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "accounts.login_throttle.LoginThrottle"
AXES_LOCKOUT_CALLABLE = "accounts.login_throttle.locked_out"
AXES_CLIENT_IP_CALLABLE = "accounts.ratelimit.client_address"  # the /64 of an IPv6 client, as the rate limits
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a try during a pause does not lengthen it
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Per-address and site-wide limits on top of the per-student ones (accounts/ratelimit.py); 0 = none.
# A classroom behind one NAT shares an address: per-address limits leave room for 200 students.
SIGNUP_LIMIT_PER_IP = envint("SIGNUP_LIMIT_PER_IP", 300)  # accounts created an hour
SIGNUP_LIMIT_GLOBAL = envint("SIGNUP_LIMIT_GLOBAL", 3000)
ENROL_CODE_LIMIT_PER_IP = envint("ENROL_CODE_LIMIT_PER_IP", 100)  # wrong enrolment codes an hour
SUBMISSION_LIMIT_PER_IP = envint("SUBMISSION_LIMIT_PER_IP", 600)  # code submissions a minute
SUBMISSION_LIMIT_GLOBAL = envint("SUBMISSION_LIMIT_GLOBAL", 3000)
ANSWER_LIMIT_PER_IP = envint("ANSWER_LIMIT_PER_IP", 1500)  # self-test answers a minute
ANSWER_LIMIT_GLOBAL = envint("ANSWER_LIMIT_GLOBAL", 6000)
LOGIN_FAILURE_LIMIT_PER_IP = envint(
    "LOGIN_FAILURE_LIMIT_PER_IP", 500
)  # failed log-ins an hour, any usernames

# Console e-mail by default (password-reset links appear in the server log); production sets
# EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend and the EMAIL_* variables.
_email_backend = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
MAILERS: dict[str, dict[str, object]] = {"default": {"BACKEND": _email_backend}}
if _email_backend.endswith("smtp.EmailBackend"):
    MAILERS["default"]["OPTIONS"] = {
        "host": os.environ.get("EMAIL_HOST", "localhost"),
        "port": envint("EMAIL_PORT", 587),
        "username": os.environ.get("EMAIL_HOST_USER", ""),
        "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
        "use_tls": envbool("EMAIL_USE_TLS", True),
    }
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "Dikkat <noreply@localhost>")

LANGUAGE_CODE = "tr"
LANGUAGES = [("tr", _("Turkish")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("TIME_ZONE", "Europe/Istanbul")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if envbool("STATIC_MANIFEST")
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Without a collectstatic run (development, tests) whitenoise serves from the finders.
WHITENOISE_USE_FINDERS = True

# Security headers. The policy allows only the site's own scripts and styles, plus the
# <style> elements the code editor (CodeMirror) injects with the page's nonce.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT")
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES")
CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES")
LANGUAGE_COOKIE_SECURE = envbool("SECURE_COOKIES")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD")
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("BEHIND_PROXY") else None

# Dikkat's own settings.
# The site's own address, for links that leave the request (the LTI endpoints a platform is given).
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
# LTI 1.3 (lti/, docs/lti.md): a login's state and nonce live this long; a platform's clock may be
# this far off; a platform's key set is fetched again after this long (and once at an unknown kid);
# a rotated-out key of ours stays in our JWKS this long; a dynamic registration address is open this long.
LTI_STATE_TTL = envint("LTI_STATE_TTL", 300)
LTI_LEEWAY = envint("LTI_LEEWAY", 60)
LTI_JWKS_MAX_AGE = envint("LTI_JWKS_MAX_AGE", 3600)
LTI_KEY_OVERLAP = envint("LTI_KEY_OVERLAP", 7 * 24 * 3600)
LTI_INVITE_TTL = envint("LTI_INVITE_TTL", 7 * 24 * 3600)  # a dynamic registration address stays open
LTI_JWKS_REFETCH_INTERVAL = envint("LTI_JWKS_REFETCH_INTERVAL", 60)  # key set fetches: one a minute
LTI_ALLOW_PRIVATE_HOSTS = envbool("LTI_ALLOW_PRIVATE_HOSTS")  # LTI calls to http, private hosts: dev, tests
# Grade passback (lti/passback.py): a score the platform could not take now is tried again after
# this many seconds, doubling each time up to the longest wait, and fails after this many tries.
LTI_OUTBOX_RETRY_SECONDS = envint("LTI_OUTBOX_RETRY_SECONDS", 30)
LTI_OUTBOX_RETRY_MAX_SECONDS = envint("LTI_OUTBOX_RETRY_MAX_SECONDS", 3600)
LTI_OUTBOX_MAX_TRIES = envint("LTI_OUTBOX_MAX_TRIES", 12)
COURSE_CONTENT_DIR = BASE_DIR / "courses" / "content"
# Hidden grading data (cases, reference outputs): never under static or media.
GRADER_DATA_DIR = Path(os.environ.get("GRADER_DATA_DIR", VAR_DIR / "grader"))
# One more grading worker than cores: a worker also waits (a sandbox's start and hand-off, storing
# the result, a hostile program running out its wall-clock limit). On a shared 2-core machine
# (noisy: other programs ran): 80 queued submissions were graded at 3.0/s by 2 workers and 3.7/s
# by 3 (alternated in one run); scripts/loadtest.py's rush: 2 workers at most 5.0/s, p95 34 s;
# 3 workers 5.8/s, p95 1.2 s, and in a busier run 5.0/s, p95 22 s.
GRADING_WORKERS = envint("GRADING_WORKERS", usable_cpus() + 1)
# The grading zygote (grader/core/zygote.py, issue 18): a grading process forks each job's fresh
# sandbox from one warm process that has imported NumPy, instead of starting Python per job.
# Off until every security gate of grader/core/README.md holds; GRADER_ZYGOTE=1 turns it on.
GRADER_ZYGOTE = envbool("GRADER_ZYGOTE")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        "django": {"level": os.environ.get("DJANGO_LOG_LEVEL", "WARNING")},
        "grader": {"level": "INFO"},
        "courses": {"level": "INFO"},
        "lti": {"level": "INFO"},
    },
}
# Grading queue: abuse limits per student and crash safety (see grader/grading.py).
GRADING_RATE_LIMIT = envint("GRADING_RATE_LIMIT", 10)  # submissions per window
GRADING_RATE_WINDOW = envint("GRADING_RATE_WINDOW", 60)  # seconds
GRADING_MAX_PENDING = envint("GRADING_MAX_PENDING", 3)  # queued or running per student
GRADING_MAX_TRIES = envint("GRADING_MAX_TRIES", 3)  # workers lost before internal_error
GRADING_LEASE_MARGIN = envint("GRADING_LEASE_MARGIN", 5)  # seconds beyond the longest a sandbox run can take
GRADING_SWEEP_INTERVAL = envint("GRADING_SWEEP_INTERVAL", 5)  # seconds between sweeps per worker
# An idle grading worker looks for work this often: the longest a job waits to be picked up.
GRADING_WORKER_INTERVAL_MS = envint("GRADING_WORKER_INTERVAL_MS", 100)
# A status poll that asks to (?wait=1) is held until its verdict is in, this long at most (see grader/waiting.py).
STATUS_WAIT_MS = envint("STATUS_WAIT_MS", 1500)
ANSWER_RATE_LIMIT = envint("ANSWER_RATE_LIMIT", 30)  # self-test answers per student per minute
GRADING_REQUEUE_AFTER = envint("GRADING_REQUEUE_AFTER", 120)  # queued this long: its task may be lost
