"""What Dikkat keeps about LMS platforms and the people and courses that come from them.

A `Platform` is one registration (issuer + client id) with its deployments. `ToolKey` is our own
signing key (published in our JWKS; rotated by `manage.py lti_keys rotate`; its private half kept
encrypted with a key derived from SECRET_KEY). A launch maps (platform, sub) to one Dikkat user
(`LtiUser`), the LMS course (context) to one Dikkat course (`LtiContext`, once approved) and the
LMS link to what it opens (`ResourceLink`). `InstructorGrant` records the instructor rights LTI
gave, so that the roster can take back those (and only those) again.
"""

import base64
import functools
import hashlib
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from assessments.models import Assessment
from courses.models import Course, Exercise, Lesson


def _b64uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class Platform(models.Model):
    """One LMS registration: the LMS's issuer and the client id it gave Dikkat."""

    name = models.CharField(_("name"), max_length=200, blank=True)
    issuer = models.URLField(_("issuer"), max_length=500)
    client_id = models.CharField(_("client id"), max_length=255)
    auth_url = models.URLField(_("authorisation URL"), max_length=500)
    token_url = models.URLField(_("access token URL"), max_length=500)
    jwks_url = models.URLField(_("key set URL (JWKS)"), max_length=500)
    course = models.ForeignKey(
        Course,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="lti_platforms",
        verbose_name=_("course"),
        help_text=_(
            "The Dikkat course an instructor of this LMS may link a course of the LMS to at the "
            "first launch (besides the courses they already teach here)."
        ),
    )
    active = models.BooleanField(_("active"), default=True)
    frame_origins = models.TextField(
        _("LMS page addresses"),
        blank=True,
        help_text=_(
            "The origins (https://lms.example.edu) of the LMS pages that show Dikkat in a frame, one a "
            "line. Empty: the origins of the issuer and of the authorisation URL."
        ),
    )
    # The platform's public keys as last fetched from jwks_url (refetched once for an unknown kid).
    jwks = models.JSONField(_("platform keys"), default=dict, blank=True, editable=False)
    jwks_fetched_at = models.DateTimeField(_("keys fetched"), null=True, blank=True, editable=False)
    # The last time a launch asked for the key set, fetched or not: the refetch limit's clock (a
    # failed fetch must not make the old key set look fresh).
    jwks_tried_at = models.DateTimeField(_("keys last asked for"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        ordering = ["issuer", "client_id"]
        constraints = [
            models.UniqueConstraint(fields=["issuer", "client_id"], name="lti_one_platform_per_client")
        ]
        verbose_name = _("LTI platform")
        verbose_name_plural = _("LTI platforms")

    def __str__(self) -> str:
        return self.name or f"{self.issuer} ({self.client_id})"

    def frame_ancestors(self) -> list[str]:
        """The origins that may show a launched session's pages in a frame (CSP frame-ancestors)."""
        if self.frame_origins.strip():
            candidates = self.frame_origins.split()
        else:
            candidates = [self.issuer, self.auth_url]
        origins = []
        for url in candidates:
            parts = urlsplit(url.strip())
            origin = f"{parts.scheme}://{parts.netloc}"
            if parts.scheme in ("http", "https") and parts.netloc and origin not in origins:
                origins.append(origin)
        return origins

    def deployment_ids(self) -> list[str]:
        return list(self.deployments.values_list("deployment_id", flat=True))

    def knows_deployment(self, deployment_id: str) -> bool:
        return self.deployments.filter(deployment_id=deployment_id).exists()


class Deployment(models.Model):
    """A deployment of Dikkat on a platform (a Moodle site, a Canvas account or course)."""

    platform = models.ForeignKey(
        Platform, on_delete=models.CASCADE, related_name="deployments", verbose_name=_("platform")
    )
    deployment_id = models.CharField(_("deployment id"), max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["platform", "deployment_id"], name="lti_one_deployment_id")
        ]
        verbose_name = _("deployment")
        verbose_name_plural = _("deployments")

    def __str__(self) -> str:
        return self.deployment_id


def key_password(secret: str) -> bytes:
    """The password of our private keys' PEM: derived from the site's secret, never stored."""
    return hashlib.sha256(b"dikkat-lti-tool-key:" + secret.encode()).hexdigest().encode()


@functools.lru_cache(maxsize=8)
def _load_private_key(pem: str) -> rsa.RSAPrivateKey:
    # Decrypting is slow on purpose (a key derivation); a key is read many times.
    secrets_to_try = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    for secret in secrets_to_try:
        try:
            key = serialization.load_pem_private_key(pem.encode("ascii"), password=key_password(secret))
        except (ValueError, TypeError):
            continue
        if isinstance(key, rsa.RSAPrivateKey):
            return key
    raise ValueError("the tool key cannot be decrypted with SECRET_KEY (run manage.py lti_keys rotate)")


class ToolKeyQuerySet(models.QuerySet["ToolKey"]):
    def published(self):
        """The keys our JWKS lists: the active one and those retired less than
        LTI_KEY_OVERLAP ago (a platform may still hold a token we signed with them)."""
        since = timezone.now() - timedelta(seconds=settings.LTI_KEY_OVERLAP)
        return self.filter(models.Q(retired_at__isnull=True) | models.Q(retired_at__gt=since))


class ToolKey(models.Model):
    """One of Dikkat's own RSA signing keys. The newest unretired key signs; a rotation retires
    it, and it stays in the JWKS for LTI_KEY_OVERLAP seconds more."""

    kid = models.CharField(_("key id"), max_length=64, unique=True)
    # PKCS#8, encrypted with a password derived from SECRET_KEY (`private_key()` reads it).
    private_pem = models.TextField(_("private key (encrypted PEM)"), editable=False)
    public_jwk = models.JSONField(_("public key (JWK)"), editable=False)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    retired_at = models.DateTimeField(_("retired"), null=True, blank=True)

    objects = ToolKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("tool key")
        verbose_name_plural = _("tool keys")

    def __str__(self) -> str:
        return self.kid

    @classmethod
    def generate(cls) -> "ToolKey":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = private.public_key().public_numbers()
        jwk = {"kty": "RSA", "alg": "RS256", "use": "sig", "n": _b64uint(numbers.n), "e": _b64uint(numbers.e)}
        # The kid is the key's RFC 7638 thumbprint: the same key always has the same id.
        canonical = f'{{"e":"{jwk["e"]}","kty":"RSA","n":"{jwk["n"]}"}}'.encode()
        kid = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()
        jwk["kid"] = kid
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(key_password(settings.SECRET_KEY)),
        ).decode("ascii")
        return cls.objects.create(kid=kid, private_pem=pem, public_jwk=jwk)

    def private_key(self) -> rsa.RSAPrivateKey:
        """The signing key, decrypted with SECRET_KEY (or one of SECRET_KEY_FALLBACKS, after a
        secret rotation; `lti_keys rotate` then makes a key under the new secret)."""
        return _load_private_key(self.private_pem)

    @classmethod
    def current(cls) -> "ToolKey":
        """The signing key; the first one is made on first use."""
        key = cls.objects.filter(retired_at__isnull=True).first()
        return key or cls.generate()

    @classmethod
    def rotate(cls) -> tuple["ToolKey", int]:
        """A new key signs from now on; the old ones are retired (still published for the overlap).
        Keys retired longer ago than the overlap are deleted. Returns the new key and how many
        old keys were deleted."""
        with transaction.atomic():
            now = timezone.now()
            cls.objects.filter(retired_at__isnull=True).update(retired_at=now)
            expired = cls.objects.filter(retired_at__lte=now - timedelta(seconds=settings.LTI_KEY_OVERLAP))
            deleted, _rows = expired.delete()
            return cls.generate(), deleted

    @classmethod
    def jwks(cls) -> dict:
        cls.current()
        return {"keys": [key.public_jwk for key in cls.objects.published()]}


def _invite_token() -> str:
    return secrets.token_urlsafe(24)


class RegistrationInvite(models.Model):
    """A one-time address for LTI Dynamic Registration: the administrator gives it to the LMS
    (Moodle's "Register tool", Canvas's "LTI Registration"), which opens it to register itself.
    Anyone with the address can register one platform until it is used or expires."""

    token = models.CharField(
        _("address key"), max_length=64, unique=True, default=_invite_token, editable=False
    )
    course = models.ForeignKey(
        Course,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("course"),
        help_text=_("The Dikkat course the registered platform's instructors may link to."),
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires"))
    platform = models.ForeignKey(
        Platform,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("registered platform"),
        editable=False,
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("registration address")
        verbose_name_plural = _("registration addresses")

    def __str__(self) -> str:
        state = str(self.platform) if self.platform else f"until {self.expires_at:%Y-%m-%d %H:%M}"
        return f"{self.token[:8]}… ({state})"

    def save(self, *args, **kwargs) -> None:
        if self.expires_at is None:
            self.expires_at = timezone.now() + timedelta(seconds=settings.LTI_INVITE_TTL)
        super().save(*args, **kwargs)

    @classmethod
    def claim(cls, token: str) -> "RegistrationInvite | None":
        """The invite of `token` if it is still open, taken (it cannot be used twice) until
        `registered` or `release`."""
        now = timezone.now()
        invites = cls.objects.filter(token=token, platform__isnull=True, expires_at__gt=now)
        invite = invites.first()
        if invite is None or not invites.filter(pk=invite.pk).update(expires_at=now):
            return None
        return invite  # its expires_at as it was, for `release`

    def release(self, expires_at) -> None:
        """Give the invite back after a failed registration (the LMS may try again)."""
        RegistrationInvite.objects.filter(pk=self.pk, platform__isnull=True).update(expires_at=expires_at)


class LoginState(models.Model):
    """An OIDC login in flight: the state and nonce Dikkat sent to the platform. The launch that
    answers it deletes the row, so each state and nonce is used at most once."""

    state = models.CharField(max_length=64, unique=True, default=secrets.token_urlsafe)
    nonce = models.CharField(max_length=64, default=secrets.token_urlsafe)
    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="+")
    target_link_uri = models.URLField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"{self.platform} at {self.created_at:%H:%M:%S}"


class LtiUser(models.Model):
    """(platform, sub) → one Dikkat user. A `sub` is only unique within one registration: a
    second platform with the same issuer does not reach the first one's accounts. The e-mail the
    LMS sent is kept for the admin only: it never links a launch to an existing account."""

    platform = models.ForeignKey(
        Platform, on_delete=models.CASCADE, related_name="users", verbose_name=_("platform")
    )
    # A copy of the platform's issuer, for the admin's list and search; never a key.
    issuer = models.URLField(_("issuer"), max_length=500)
    sub = models.CharField(_("LMS user id (sub)"), max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_links", verbose_name=_("user")
    )
    email = models.EmailField(_("e-mail in the LMS"), blank=True)
    name = models.CharField(_("name in the LMS"), max_length=255, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    last_launch_at = models.DateTimeField(_("last launch"), null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["platform", "sub"], name="lti_one_user_per_platform_sub")
        ]
        verbose_name = _("LMS account")
        verbose_name_plural = _("LMS accounts")

    def __str__(self) -> str:
        return f"{self.sub} @ {self.issuer} → {self.user}"


class LtiContext(models.Model):
    """A course of the LMS (its context) and the Dikkat course it opens.

    An LMS instructor asks for the link at the first launch (`requested_course`); it holds
    (`course`) at once when they already teach that Dikkat course (or are staff), else when one
    of its instructors approves it. Until then the LMS course opens nothing and gives no rights.
    """

    platform = models.ForeignKey(
        Platform, on_delete=models.CASCADE, related_name="contexts", verbose_name=_("platform")
    )
    context_id = models.CharField(_("LMS course id"), max_length=255)
    title = models.CharField(_("LMS course title"), max_length=255, blank=True)
    course = models.ForeignKey(
        Course,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="lti_contexts",
        verbose_name=_("course"),
    )
    linked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("linked by"),
    )
    linked_at = models.DateTimeField(_("linked"), null=True, blank=True)
    requested_course = models.ForeignKey(
        Course,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="lti_link_requests",
        verbose_name=_("asked for course"),
        help_text=_("The Dikkat course an LMS instructor asked to link; it waits for its instructors."),
    )
    requested_at = models.DateTimeField(_("asked"), null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("approved by"),
    )
    # Names and Role Provisioning: where the platform lists the LMS course's members (from a launch).
    memberships_url = models.URLField(_("roster URL (NRPS)"), max_length=1000, blank=True)
    roster_synced_at = models.DateTimeField(_("roster synced"), null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["platform", "context_id"], name="lti_one_context_per_platform")
        ]
        verbose_name = _("LMS course")
        verbose_name_plural = _("LMS courses")

    def __str__(self) -> str:
        return self.title or self.context_id

    @property
    def awaits_approval(self) -> bool:
        return self.course_id is None and self.requested_course_id is not None


class InstructorGrant(models.Model):
    """Instructor rights of a Dikkat course that an LMS course (its launches or its roster) gave
    a user. Rights given in Dikkat itself have no grant and are never taken back by LTI; a grant
    is revoked (kept, with the time) when the roster no longer lists the user as an instructor."""

    context = models.ForeignKey(
        LtiContext, on_delete=models.CASCADE, related_name="grants", verbose_name=_("LMS course")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", verbose_name=_("user")
    )
    granted_at = models.DateTimeField(_("granted"), default=timezone.now)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["context", "user"], name="lti_one_grant_per_user")]
        verbose_name = _("instructor rights from the LMS")
        verbose_name_plural = _("instructor rights from the LMS")

    def __str__(self) -> str:
        return f"{self.user} ← {self.context}"


class Membership(models.Model):
    """One member of an LMS course as its roster (NRPS) last said. A member the roster no longer
    lists, or lists as inactive or deleted, is marked dropped; nothing is deleted (their work
    and enrolment stay)."""

    context = models.ForeignKey(
        LtiContext, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("LMS course")
    )
    sub = models.CharField(_("LMS user id (sub)"), max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("user"),
        help_text=_("Empty until the member first opens Dikkat from the LMS."),
    )
    name = models.CharField(_("name in the LMS"), max_length=255, blank=True)
    email = models.EmailField(_("e-mail in the LMS"), blank=True)
    role = models.CharField(_("role"), max_length=16)
    dropped_at = models.DateTimeField(_("dropped"), null=True, blank=True)
    seen_at = models.DateTimeField(_("last in the roster"), default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["context", "sub"], name="lti_one_membership_per_sub")]
        verbose_name = _("LMS course member")
        verbose_name_plural = _("LMS course members")

    def __str__(self) -> str:
        return f"{self.name or self.sub} ({self.role})"


class ResourceLink(models.Model):
    """A link in the LMS course; deep linking sets what it opens (a lesson, an exercise or an
    assessment of the linked course), else it opens the linked course."""

    context = models.ForeignKey(
        LtiContext, on_delete=models.CASCADE, related_name="links", verbose_name=_("LMS course")
    )
    resource_link_id = models.CharField(_("LMS link id"), max_length=255)
    title = models.CharField(_("title"), max_length=255, blank=True)
    lesson = models.ForeignKey(
        Lesson, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("lesson")
    )
    exercise = models.ForeignKey(
        Exercise,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("exercise"),
    )
    assessment = models.ForeignKey(
        Assessment,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("assessment"),
    )
    # Assignment and Grade Services, from the launch's AGS claim: where the link's grade column
    # lives (lineitem) or where to make one (lineitems), and what the platform lets Dikkat do.
    lineitems_url = models.URLField(_("grade columns URL (AGS)"), max_length=1000, blank=True)
    lineitem_url = models.URLField(_("grade column URL (AGS)"), max_length=1000, blank=True)
    ags_scopes = models.JSONField(_("grade service permissions"), default=list, blank=True)
    # While one send looks for or makes the link's line item (lti.ags.lineitem): other sends of
    # the link wait until then instead of making a second grade column.
    lineitem_claimed_until = models.DateTimeField(
        _("grade column being made until"), null=True, blank=True, editable=False
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["context", "resource_link_id"], name="lti_one_link_per_context")
        ]
        verbose_name = _("LMS link")
        verbose_name_plural = _("LMS links")

    def __str__(self) -> str:
        return self.title or self.resource_link_id

    def target(self) -> Lesson | Exercise | Assessment | None:
        """What deep linking chose for the link to open (None: the course)."""
        return self.exercise or self.assessment or self.lesson


# The grade outbox is its own module (the model and its queue rules); Django finds it here.
from .outbox import ScoreOutbox  # noqa: E402,F401
