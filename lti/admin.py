from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from .endpoints import absolute, tool_endpoints
from .linking import approve_link
from .models import (
    Deployment,
    InstructorGrant,
    LtiContext,
    LtiUser,
    Membership,
    Platform,
    RegistrationInvite,
    ResourceLink,
    ToolKey,
)


class DeploymentInline(admin.TabularInline):
    model = Deployment
    extra = 1


@admin.register(Platform)
class PlatformAdmin(admin.ModelAdmin):
    list_display = ["__str__", "issuer", "client_id", "course", "active"]
    list_filter = ["active"]
    search_fields = ["name", "issuer", "client_id"]
    inlines = [DeploymentInline]
    readonly_fields = ["tool_endpoints", "jwks_fetched_at", "created_at"]
    fieldsets = [
        (None, {"fields": ["name", "issuer", "client_id", "course", "active"]}),
        (_("The platform's endpoints"), {"fields": ["auth_url", "token_url", "jwks_url", "frame_origins"]}),
        (_("Give these to the platform"), {"fields": ["tool_endpoints", "jwks_fetched_at", "created_at"]}),
    ]

    @admin.display(description=_("Dikkat's LTI endpoints"))
    def tool_endpoints(self, obj: Platform) -> str:
        return "\n".join(f"{name}: {url}" for name, url in tool_endpoints().items())


@admin.register(LtiUser)
class LtiUserAdmin(admin.ModelAdmin):
    list_display = ["sub", "platform", "user", "email", "last_launch_at"]
    list_filter = ["platform"]
    search_fields = ["sub", "email", "name", "user__username", "issuer"]
    raw_id_fields = ["user"]
    readonly_fields = ["issuer"]


@admin.register(LtiContext)
class LtiContextAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "platform",
        "course",
        "requested_course",
        "linked_by",
        "approved_by",
        "linked_at",
    ]
    list_filter = ["platform", ("course", admin.EmptyFieldListFilter)]
    search_fields = ["title", "context_id"]
    raw_id_fields = ["linked_by", "approved_by"]
    # The link itself is made (or approved) by its action: a course picked here would give the
    # LMS course's instructors rights no instructor of the course agreed to.
    readonly_fields = ["course", "linked_by", "linked_at", "approved_by", "roster_synced_at"]
    actions = ["approve"]

    @admin.action(description=_("Approve the asked-for course link"))
    def approve(self, request: HttpRequest, queryset) -> None:
        approved = sum(approve_link(context, request.user) for context in queryset)  # type: ignore[arg-type]
        self.message_user(
            request,
            ngettext("%(n)s link approved.", "%(n)s links approved.", approved) % {"n": approved},
            messages.SUCCESS if approved else messages.WARNING,
        )


@admin.register(InstructorGrant)
class InstructorGrantAdmin(admin.ModelAdmin):
    list_display = ["user", "context", "granted_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["user__username", "context__title"]
    readonly_fields = ["context", "user", "granted_at", "revoked_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["__str__", "context", "user", "role", "dropped_at", "seen_at"]
    list_filter = ["role", ("dropped_at", admin.EmptyFieldListFilter)]
    search_fields = ["sub", "name", "email"]
    raw_id_fields = ["user"]


@admin.register(ResourceLink)
class ResourceLinkAdmin(admin.ModelAdmin):
    list_display = ["__str__", "context", "lesson", "exercise", "assessment"]
    list_select_related = ["context", "lesson", "exercise", "assessment"]
    # Of every course: picked by id, not from a list of them all.
    raw_id_fields = ["lesson", "exercise", "assessment"]


@admin.register(ToolKey)
class ToolKeyAdmin(admin.ModelAdmin):
    list_display = ["kid", "created_at", "retired_at"]
    # The private key never shows (it is not a field of the form either: editable=False).
    fields = ["kid", "public_jwk", "created_at", "retired_at"]
    readonly_fields = ["kid", "public_jwk", "created_at"]


@admin.register(RegistrationInvite)
class RegistrationInviteAdmin(admin.ModelAdmin):
    list_display = ["__str__", "course", "created_at", "expires_at", "platform"]
    readonly_fields = ["registration_url", "platform", "created_at"]
    fields = ["registration_url", "course", "expires_at", "platform", "created_at"]

    @admin.display(description=_("address to give the LMS"))
    def registration_url(self, obj: RegistrationInvite) -> str:
        return absolute("register", obj.token) if obj.pk else "—"
