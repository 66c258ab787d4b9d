"""The few HTTP calls Dikkat makes to a platform (its keys, its OpenID configuration, dynamic
registration): JSON, a short timeout, a size limit. urllib is enough; no session to keep."""

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

TIMEOUT = 5  # seconds
MAX_BYTES = 1_000_000


class PlatformUnreachable(Exception):
    """The platform did not answer, or not with JSON: the message says which and why;
    `status` is the HTTP status of an error answer (0 when there was none)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


def _send(request: urllib.request.Request, with_headers: bool = False) -> Any:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            data = json.loads(response.read(MAX_BYTES))
            return (data, response.headers) if with_headers else data
    except urllib.error.HTTPError as error:
        body = error.read(2000).decode("utf-8", "replace")
        raise PlatformUnreachable(f"{request.full_url} answered {error.code}: {body}", error.code) from error
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise PlatformUnreachable(f"{request.full_url} could not be reached: {error}") from error
    except ValueError as error:
        raise PlatformUnreachable(f"{request.full_url} did not answer JSON: {error}") from error


def get_json(url: str, bearer: str = "") -> Any:
    headers = {"Accept": "application/json"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    return _send(urllib.request.Request(url, headers=headers))


def post_json(url: str, data: dict, bearer: str = "", content_type: str = "application/json") -> Any:
    headers = {"Accept": "application/json", "Content-Type": content_type}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    return _send(urllib.request.Request(url, data=json.dumps(data).encode(), headers=headers, method="POST"))


def get_json_page(url: str, bearer: str, accept: str) -> tuple[Any, str]:
    """One page of a paged LTI service answer and the URL of the next page ('' at the end: the
    `Link: <…>; rel="next"` header)."""
    request = urllib.request.Request(url, headers={"Accept": accept, "Authorization": f"Bearer {bearer}"})
    data, headers = _send(request, with_headers=True)
    for link in headers.get_all("Link") or []:
        for part in link.split(","):
            target, _, params = part.partition(";")
            if 'rel="next"' in params.replace(" ", ""):
                return data, target.strip().strip("<>")
    return data, ""


def post_form(url: str, fields: dict[str, str]) -> Any:
    data = urllib.parse.urlencode(fields).encode()
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    return _send(urllib.request.Request(url, data=data, headers=headers, method="POST"))
