"""The Turkish interface speaks to its reader in one voice: "siz", as Django's own Turkish does.

Sentences use the polite plural ("gönderin", "hesabınız", "kaydoldunuz", "…misiniz?"). Short
button and link labels may keep the bare verb ("Kaydet", "Cevabı göster"), as Django's do; a bare
verb that ends a clause inside a sentence ("…seç, sonra …", "…tekrar dene.") is the "sen" voice.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CATALOGUES = [ROOT / "locale/tr/LC_MESSAGES/django.po", ROOT / "grader/locale/tr/LC_MESSAGES/django.po"]

# "sen" itself, and the verb endings of the second person singular: present and copula
# ("cevaplıyorsun", "sıradasın", "değilsin", "misin"), ability ("isteyebilirsin"), past
# ("kaydoldun", "gönderdin", "kullandın"). Bare -sın/-dın alone would also catch "siz"
# imperatives ("basın", "başlatın"), so only these longer endings count.
SEN_WORDS = re.compile(r"\b(sen|sana|seni|senin|sende|senden)\b", re.IGNORECASE)
SEN_ENDINGS = re.compile(
    r"\b(?:\w+(?:yorsun|ebilirsin|abilirsin|ırsın|irsin|arsın|ersin|mazsın|mezsin|malısın|melisin|"
    r"dasın|desin|tasın|tesin|ledin|ladın|ndın|ndin|rdın|rdin|ldın|ldin|ldun|ldün|ttın|ttin|ttun|ttün|ştın|ştin)"
    r"|mısın|misin|musun|müsün|değilsin)\b"
)
# Nouns with the "your" (sen) possessive that the interface is likely to use. After "bu"/"şu",
# "kodun" is the genitive ("bu kodun aynısı": the same as this code), not "your code".
SEN_POSSESSIVES = re.compile(
    r"\b(?:hesabın|hesabını|hesabının|(?<![BbŞş]u )kodun|cevabın|cevabını|parolanı|parolanla|e-postanı|"
    r"eğitmenin|eğitmenine|eğitmeninden|hakkın|hakkını|güvenliğin|gönderimin var|seçmen|kodunla|"
    r"ilerlediğin|gönderdiğin|yaptığın|kursların)\b",
    re.IGNORECASE,
)
# Bare imperatives that end a clause inside a sentence: "…işaretle, sonra …", "…tekrar dene."
BARE_IMPERATIVE = re.compile(
    r"\b(?:seç|dene|bak|bekle|kaydol|gönder|yaz|aç|sor|sıfırla|et|işaretle|eşleştir|öğren|iste|"
    r"yenile|kaydet|bas|oku|çıkar|düzelt|başla|gir|oluştur|yap)(?=\s*[.,;!:]|</a>\.)"
)
# Words that look like the "sen" voice but are not: "siz" imperatives of verbs in -t ("edin",
# "kaydedin", "gidin"), nouns ("metin").
ALLOWED = {"edin", "kaydedin", "gidin", "metin", "olsun"}
# Whole msgstr values that may keep a bare imperative: button and link labels, as in Django.
LABEL_MAX_WORDS = 5


def _msgstrs(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").split("\n")
    found, index = [], 0
    while index < len(lines):
        match = re.match(r'msgstr(?:\[\d\])? "(.*)"$', lines[index])
        if not match:
            index += 1
            continue
        start, parts = index + 1, [match.group(1)]
        index += 1
        while index < len(lines) and lines[index].startswith('"'):
            parts.append(lines[index][1:-1])
            index += 1
        text = "".join(parts)
        if text and not text.startswith("Project-Id-Version"):
            found.append((start, text))
    return found


def sen_voice(text: str) -> list[str]:
    """The words of ``text`` that speak in the "sen" voice."""
    words = [
        m.group(0) for pattern in (SEN_WORDS, SEN_ENDINGS, SEN_POSSESSIVES) for m in pattern.finditer(text)
    ]
    if len(text.split()) > LABEL_MAX_WORDS or re.search(r"[.;,!?]\s|[.!?]$", text):
        words += [m.group(0) for m in BARE_IMPERATIVE.finditer(text)]
    return [w for w in words if w.casefold() not in ALLOWED]


@pytest.mark.parametrize(
    "text",
    [
        "Sırada: 1. sıradasın.",
        "Kodu eğitmeninden isteyebilirsin.",
        "Bu kodu daha önce gönderdin.",
        "Zaten hesabın var mı?",
        "En az bir seçenek işaretle, sonra cevabını kontrol et.",
        "Lütfen yeniden dene.",
        "Bunu sen istemediysen yok say.",
        "Yeni misin?",
        "Çok hızlı cevaplıyorsun.",
        "Bekleyen 3 gönderimin var.",
        "Bütün deneme hakkını kullandın.",
        "Kodun (NumPy ile Python)",
    ],
)
def test_sen_voice_is_recognised(text):
    assert sen_voice(text)


@pytest.mark.parametrize(
    "text",
    [
        "Sıranız: 1.",
        "Kodu eğitmeninizden isteyebilirsiniz.",
        "Zaten hesabınız var mı?",
        "En az bir seçeneği işaretleyin, sonra cevabınızı kontrol edin.",
        "Cevabı göster",
        "Kaydet",
        "Tokenın Query vektörü",
        "Yeni misiniz?",
        "Fonksiyon None döndürdü. return satırını unutmuş olabilir misiniz?",
        "Kodunuz (NumPy ile Python)",
        "Bu kodun aynısını daha önce gönderdiniz; sonucu burada.",
    ],
)
def test_siz_voice_and_labels_pass(text):
    assert not sen_voice(text)


@pytest.mark.parametrize("catalogue", CATALOGUES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_turkish_message_speaks_as_siz(catalogue):
    offending = [
        f"{catalogue.name}:{line}: {text!r} ({', '.join(words)})"
        for line, text in _msgstrs(catalogue)
        if (words := sen_voice(text))
    ]
    assert not offending, "Turkish in the 'sen' voice:\n" + "\n".join(offending)


def test_the_queue_position_is_said_once():
    texts = [text for line, text in _msgstrs(CATALOGUES[0])]
    assert not [t for t in texts if re.search(r"Sırada:.*sırada", t)]
    assert "Sıranız: %(position)s." in texts
