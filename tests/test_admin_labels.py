"""The admin in Turkish names every app, model and column in Turkish: no "AXES / Access failures",
no "Tasks Database Backend", no field names such as "tries" (which the admin's upper-case headers
would even turn into "TRİES")."""

import re
from html import unescape

import pytest
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.urls import reverse
from django.utils import translation

# Words that read the same in both languages.
SAME_IN_BOTH = {"ID", "id", "HTTP Accept başlığı", "IP-Adresi"}


def _labels(model, model_admin) -> list[tuple[str, str]]:
    names = [n for n in model_admin.list_display if n != "action_checkbox"]
    names += [f.name for f in model._meta.fields if f.name != "id"]
    return [(str(n), str(label_for_field(n, model, model_admin))) for n in names]


def _registered():
    return sorted(admin.site._registry.items(), key=lambda pair: pair[0]._meta.label)


@pytest.mark.parametrize(
    "model,model_admin", _registered(), ids=lambda v: getattr(v, "_meta", None) and v._meta.label
)
def test_every_admin_label_is_turkish(model, model_admin):
    with translation.override("tr"):
        turkish = {
            "app": str(model._meta.app_config.verbose_name),
            "model": str(model._meta.verbose_name),
            "models": str(model._meta.verbose_name_plural),
            **{f"column {name}": label for name, label in _labels(model, model_admin)},
        }
    with translation.override("en"):
        english = {
            "app": str(model._meta.app_config.verbose_name),
            "model": str(model._meta.verbose_name),
            "models": str(model._meta.verbose_name_plural),
            **{f"column {name}": label for name, label in _labels(model, model_admin)},
        }
    untranslated = {
        key: value
        for key, value in turkish.items()
        if value.casefold() == english[key].casefold() and value not in SAME_IN_BOTH
    }
    assert not untranslated, f"{model._meta.label}: English in the Turkish admin: {untranslated}"


def test_admin_index_and_submission_list_read_in_turkish(client, make_user, lab):
    from grader.models import Submission

    staff = make_user("yonetici", is_staff=True, is_superuser=True)
    Submission.objects.create(
        user=staff, exercise=lab.exercises.get(slug="attn"), code="x = 1\n", code_hash="0"
    )
    client.force_login(staff)
    index = unescape(client.get(reverse("admin:index")).text)
    for english in ("Access failures", "Tasks Database Backend", "Task Results", ">Axes<"):
        assert english not in index
    assert "Giriş duraklatmaları" in index and "Başarısız girişler" in index and "Arka plan işleri" in index
    listing = unescape(client.get(reverse("admin:grader_submission_changelist")).text)
    listing = listing[listing.index('id="result_list"') :]
    headers = re.findall(r'<th scope="col"[^>]*>.*?<(?:a|span)[^>]*>([^<]+)<', listing, flags=re.S)
    headers = [h.strip() for h in headers]
    assert "Notlandırma denemesi" in headers and "Öğrenci" in headers and "Alıştırma" in headers
    assert not {"tries", "user", "exercise", "duration ms"} & {h.casefold() for h in headers}
