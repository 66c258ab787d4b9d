# Written by hand (2026-12-01): LMS accounts belong to a platform (not an issuer), LMS course
# links wait for approval, LTI-given instructor rights are recorded, deep links may open an
# exercise or an assessment, and our private keys are kept encrypted.

import hashlib

import django.db.models.deletion
import django.utils.timezone
from cryptography.hazmat.primitives import serialization
from django.conf import settings
from django.db import migrations, models


def accounts_to_platforms(apps, schema_editor):
    """Each LMS account goes to the platform of its issuer (the first registered one when an
    issuer has several). An account whose issuer no platform has could not log in anyway: it
    is removed (its Dikkat user and work stay)."""
    Platform = apps.get_model("lti", "Platform")
    LtiUser = apps.get_model("lti", "LtiUser")
    for issuer in LtiUser.objects.values_list("issuer", flat=True).distinct():
        platform = Platform.objects.filter(issuer=issuer).order_by("pk").first()
        accounts = LtiUser.objects.filter(issuer=issuer)
        if platform is None:
            accounts.delete()
        else:
            accounts.update(platform=platform)


def _password(secret):
    # The same derivation as lti.models.key_password (copied: a migration stays as written).
    return hashlib.sha256(b"dikkat-lti-tool-key:" + secret.encode()).hexdigest().encode()


def encrypt_tool_keys(apps, schema_editor):
    ToolKey = apps.get_model("lti", "ToolKey")
    for key in ToolKey.objects.filter(private_pem__startswith="-----BEGIN PRIVATE KEY-----"):
        private = serialization.load_pem_private_key(key.private_pem.encode("ascii"), password=None)
        key.private_pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(_password(settings.SECRET_KEY)),
        ).decode("ascii")
        key.save(update_fields=["private_pem"])


def decrypt_tool_keys(apps, schema_editor):
    ToolKey = apps.get_model("lti", "ToolKey")
    for key in ToolKey.objects.filter(private_pem__startswith="-----BEGIN ENCRYPTED PRIVATE KEY-----"):
        private = serialization.load_pem_private_key(
            key.private_pem.encode("ascii"), password=_password(settings.SECRET_KEY)
        )
        key.private_pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        key.save(update_fields=["private_pem"])


class Migration(migrations.Migration):

    dependencies = [
        ('lti', '0003_grade_service_addresses'),
        ('assessments', '0004_admin_labels'),
        ('courses', '0012_source_files'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='ltiuser',
            name='platform',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='users', to='lti.platform', verbose_name='platform'),
        ),
        migrations.RunPython(accounts_to_platforms, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='ltiuser',
            name='platform',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='users', to='lti.platform', verbose_name='platform'),
        ),
        migrations.RemoveConstraint(
            model_name='ltiuser',
            name='lti_one_user_per_sub',
        ),
        migrations.AddConstraint(
            model_name='ltiuser',
            constraint=models.UniqueConstraint(fields=('platform', 'sub'), name='lti_one_user_per_platform_sub'),
        ),
        migrations.AddField(
            model_name='lticontext',
            name='approved_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='approved by'),
        ),
        migrations.AddField(
            model_name='lticontext',
            name='requested_at',
            field=models.DateTimeField(blank=True, null=True, verbose_name='asked'),
        ),
        migrations.AddField(
            model_name='lticontext',
            name='requested_course',
            field=models.ForeignKey(blank=True, help_text='The Dikkat course an LMS instructor asked to link; it waits for its instructors.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='lti_link_requests', to='courses.course', verbose_name='asked for course'),
        ),
        migrations.AddField(
            model_name='resourcelink',
            name='assessment',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='assessments.assessment', verbose_name='assessment'),
        ),
        migrations.AddField(
            model_name='resourcelink',
            name='exercise',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='courses.exercise', verbose_name='exercise'),
        ),
        migrations.AlterField(
            model_name='toolkey',
            name='private_pem',
            field=models.TextField(editable=False, verbose_name='private key (encrypted PEM)'),
        ),
        migrations.RunPython(encrypt_tool_keys, decrypt_tool_keys),
        migrations.CreateModel(
            name='InstructorGrant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('granted_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='granted')),
                ('revoked_at', models.DateTimeField(blank=True, null=True, verbose_name='revoked')),
                ('context', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='grants', to='lti.lticontext', verbose_name='LMS course')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='user')),
            ],
            options={
                'verbose_name': 'instructor rights from the LMS',
                'verbose_name_plural': 'instructor rights from the LMS',
            },
        ),
        migrations.AddConstraint(
            model_name='instructorgrant',
            constraint=models.UniqueConstraint(fields=('context', 'user'), name='lti_one_grant_per_user'),
        ),
    ]
