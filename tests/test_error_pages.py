"""Error pages a person can act on."""

from django.test import override_settings


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1024)
def test_a_body_over_the_upload_limit_says_so_and_gives_the_limit(client, db):
    response = client.post("/accounts/login/", {"username": "x", "password": "y" * 5000})
    assert response.status_code == 400
    text = response.content.decode()
    assert "1,0" in text or "1.0" in text  # the limit, as a size
    assert "hiçbir şey kaydedilmedi" in text  # Turkish first
