"""A numeric answer says how numbers are written, and refuses what it would have to guess.

"32.768" in Turkish is thirty-two thousand to many readers and 32,768 to the parser; "1.234,5"
mixes both marks. Such an answer is refused with a message saying how to write it, is not
counted as an attempt, and stays in the field to be corrected."""

import re

import pytest
from django.urls import reverse
from django.utils import translation

from courses.kinds.numeric import AmbiguousNumber, parse_number
from courses.models import Attempt

pytestmark = pytest.mark.django_db


def answer(client, value, **headers):
    return client.post(
        reverse("answer_question", args=["quiz", "selftest", "sqrt-dk"]), {"value": value}, **headers
    )


def test_the_field_says_how_numbers_are_written(student):
    page = student.get(reverse("lesson", args=["quiz", "selftest"])).text
    assert "Ondalık için virgül ya da nokta (0,25 ya da 0.25); binlik ayırıcı yok (32768)." in page
    assert 'aria-describedby="sqrt-dk-format"' in page and 'id="sqrt-dk-format"' in page


@pytest.mark.parametrize(
    "typed, said",
    [
        (
            "32.768",
            "“32.768” iki türlü okunabilir. Sayılar binlik ayırıcı olmadan yazılır: tam sayıyı kastediyorsanız "
            "32768, ondalık sayıyı kastediyorsanız 32,768 yazın.",
        ),
        ("1.234,5", "“1.234,5” içinde birden çok nokta ya da virgül var."),
        ("0,12,5", "“0,12,5” içinde birden çok nokta ya da virgül var."),
        ("sekiz", "“sekiz” bir sayı değil. Bir sayı yazın, örneğin 0,25."),
    ],
)
def test_an_ambiguous_or_junk_answer_is_explained_kept_and_not_counted(student, alice, typed, said):
    response = answer(student, typed, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 200
    assert said in response.text.replace("&quot;", '"')
    assert f'value="{typed}"' in response.text  # still in the field, to be corrected
    assert not Attempt.objects.filter(user=alice).exists()
    # Without the page script: back to the lesson, the message shown there.
    response = answer(student, typed)
    assert response.status_code == 302
    assert said in student.get(response.url).text
    assert not Attempt.objects.filter(user=alice).exists()


def test_unambiguous_answers_are_read_in_either_notation(student, alice):
    for typed in ("0,125", "0.125", "1,25e-1"):
        answer(student, typed)
    assert [a.score for a in Attempt.objects.filter(user=alice)] == [1.0, 1.0, 1.0]


def test_what_is_ambiguous_follows_the_language():
    with translation.override("tr"):
        assert parse_number("32,768") == 32.768  # the Turkish decimal comma
        with pytest.raises(AmbiguousNumber):
            parse_number("32.768")  # a Turkish thousands dot
        assert parse_number("0.768") == 0.768 and parse_number("32.7680") == 32.768
    with translation.override("en"):
        assert parse_number("32.768") == 32.768
        with pytest.raises(
            AmbiguousNumber, match=re.escape("write 1234 for the whole number, or 1.234 for the decimal")
        ):
            parse_number("1,234")
