from django.conf import settings
from django.utils import translation


class LanguageMiddleware:
    """Turkish unless the user chose another language with the language switch.

    Django's LocaleMiddleware would follow the browser's Accept-Language; Dikkat is a
    Turkish course first, so only an explicit choice (the language cookie) changes it.
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.codes = {code for code, _name in settings.LANGUAGES}

    def __call__(self, request):
        chosen = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
        language = chosen if chosen in self.codes else settings.LANGUAGE_CODE
        translation.activate(language)
        request.LANGUAGE_CODE = language
        response = self.get_response(request)
        response.headers.setdefault("Content-Language", language)
        return response
