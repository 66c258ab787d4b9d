"""The few HTTP calls Dikkat makes to a platform (its keys, its OpenID configuration, dynamic
registration, the roster and grade services): JSON, with the guards a server that fetches
addresses it was given needs (server-side request forgery):

- only https (http too under LTI_ALLOW_PRIVATE_HOSTS, for development and the tests);
- every address the host name resolves to must be a public one (no loopback, private,
  link-local, multicast or reserved address: the cloud's metadata service, the database, the
  admin on localhost), checked on the address the socket then connects to (no second lookup a
  rebinding DNS could answer differently); LTI_ALLOW_PRIVATE_HOSTS lifts this;
- no redirect is followed (a redirect is an error that names where it pointed);
- at most MAX_BYTES of answer, within DEADLINE seconds for the whole call (not per read), and
  never past the deadline of the calls' caller (``deadline``: a grade send's token, line item
  and score share one time budget, shorter than the lease of the worker that makes them);
- an error answer's body goes to the log only; the message (shown to instructors and
  administrators) carries the status and, from a JSON error answer, its short error text.

http.client is enough: no session to keep, and it follows no redirect on its own.
"""

import contextlib
import contextvars
import http.client
import ipaddress
import json
import logging
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

TIMEOUT = 5  # seconds, per connect or read
DEADLINE = 15.0  # seconds, for a whole call
MAX_BYTES = 1_000_000
SUMMARY_CHARS = 200

# The caller's deadline (time.monotonic()) for every call it makes: see ``deadline``.
_until: contextvars.ContextVar[float | None] = contextvars.ContextVar("lti_http_until", default=None)


class PlatformUnreachable(Exception):
    """The platform did not answer, or not with JSON: the message says which and why;
    `status` is the HTTP status of an error answer (0 when there was none)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


@contextlib.contextmanager
def deadline(until: float) -> Iterator[None]:
    """Every call made inside ends by ``until`` (a time.monotonic() value), each still within
    its own DEADLINE: one time budget for several calls, whichever module makes them (the
    access token's call is the services module's). An inner deadline never extends an outer one."""
    outer = _until.get()
    token = _until.set(until if outer is None else min(outer, until))
    try:
        yield
    finally:
        _until.reset(token)


def _private_allowed() -> bool:
    return bool(getattr(settings, "LTI_ALLOW_PRIVATE_HOSTS", False))


# IPv6 prefixes that carry an IPv4 address in their last 32 bits (NAT64, RFC 6052 and 8215).
# IPv4-translated addresses (SIIT, RFC 2765) carry one too.
NAT64 = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, IPv4-compatible, NAT64, 6to4,
    Teredo), or None: a NAT64 gateway turns 64:ff9b::a9fe:a9fe into 169.254.169.254."""
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if int(address) >> 32 == 0 or any(address in network for network in NAT64):
        return low32
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def refused_address(ip: str) -> bool:
    """Whether Dikkat must not connect to `ip` (anything but a public address, also when an
    IPv6 address carries a private IPv4 one)."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if not address.is_global or address.is_multicast:
        return True
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        return embedded is not None and (not embedded.is_global or embedded.is_multicast)
    return False


def check_url(url: str) -> urllib.parse.SplitResult:
    """The parts of `url` if Dikkat may call it (scheme and host; the addresses are checked at
    connect time); PlatformUnreachable otherwise."""
    parts = urllib.parse.urlsplit(url)
    allowed = ("https", "http") if _private_allowed() else ("https",)
    if parts.scheme not in allowed or not parts.hostname:
        raise PlatformUnreachable(f"{url[:200]} is not an https URL")
    if parts.username or parts.password:
        raise PlatformUnreachable(f"{parts.hostname} URL with a user name or password")
    return parts


def _connect(address: tuple[str, int], timeout: float, source_address: Any = None) -> socket.socket:
    """socket.create_connection that only connects to addresses Dikkat may call."""
    host, port = address
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise OSError(f"{host} could not be resolved: {error}") from error
    last_error: OSError | None = None
    for family, kind, proto, _name, sockaddr in infos:
        if not _private_allowed() and refused_address(str(sockaddr[0])):
            last_error = OSError(f"{host} resolves to {sockaddr[0]}, not a public address")
            continue
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            return sock
        except OSError as error:
            sock.close()
            last_error = error
    raise last_error or OSError(f"{host} has no address")


def _connection(parts: urllib.parse.SplitResult, timeout: float) -> http.client.HTTPConnection:
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "", parts.port, timeout=timeout)
    connection._create_connection = _connect  # type: ignore[attr-defined]
    return connection


def _abort(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _summary(body: bytes, content_type: str) -> str:
    """A short, plain text of an error answer: the error fields of a JSON answer, else nothing
    (an HTML page from the platform is never shown in Dikkat's pages)."""
    if "json" not in content_type:
        return ""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    texts = [data.get(k) for k in ("error", "error_description", "message", "reason")]
    text = " — ".join(t for t in texts if isinstance(t, str) and t)
    return re.sub(r"[\x00-\x1f\x7f<>]+", " ", text)[:SUMMARY_CHARS].strip()


def _read(response: http.client.HTTPResponse, limit: int, deadline: float, seconds: float, url: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise PlatformUnreachable(f"{url} took longer than {seconds:.3g} s to answer")
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise PlatformUnreachable(f"{url} answered more than {limit} bytes")
        chunks.append(chunk)


def _send(
    method: str, url: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[Any, http.client.HTTPMessage]:
    """One call: the decoded JSON answer and its headers, or PlatformUnreachable."""
    parts = check_url(url)
    shown = f"{parts.scheme}://{parts.netloc}{parts.path}"[:300]  # no query (it may carry tokens)
    now = time.monotonic()
    limit = DEADLINE
    if (until := _until.get()) is not None:
        limit = min(DEADLINE, until - now)
        if limit <= 0:
            raise PlatformUnreachable(f"{shown} not called: no time left of the send's time budget")
    deadline = now + limit
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    connection = _connection(parts, min(TIMEOUT, limit))
    # The deadline holds even while a read waits (a platform that drips its headers): the
    # watchdog shuts the socket, which ends the read at once.
    watchdog = threading.Timer(limit, _abort, [connection])
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request(method, target, body=body, headers=headers)
        response = connection.getresponse()
        if 300 <= response.status < 400:
            where = (response.getheader("Location") or "")[:200]
            raise PlatformUnreachable(
                f"{shown} redirected ({response.status}) to {where!r}, not followed", response.status
            )
        if response.status >= 400:
            text = _read(response, 20_000, deadline, limit, shown)
            logger.warning("LTI: %s %s answered %s: %r", method, shown, response.status, text[:2000])
            summary = _summary(text, response.getheader("Content-Type") or "")
            raise PlatformUnreachable(
                f"{shown} answered {response.status}" + (f": {summary}" if summary else ""), response.status
            )
        raw = _read(response, MAX_BYTES, deadline, limit, shown)
        try:
            return (json.loads(raw) if raw.strip() else {}), response.headers
        except ValueError as error:
            raise PlatformUnreachable(f"{shown} did not answer JSON: {error}") from error
    except PlatformUnreachable:
        raise
    except (http.client.HTTPException, OSError, ValueError) as error:
        if time.monotonic() > deadline:
            raise PlatformUnreachable(f"{shown} took longer than {limit:.3g} s to answer") from error
        raise PlatformUnreachable(f"{shown} could not be reached: {error}") from error
    finally:
        watchdog.cancel()
        connection.close()


def _headers(accept: str, bearer: str, content_type: str = "") -> dict[str, str]:
    headers = {"Accept": accept, "User-Agent": "Dikkat-LTI"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    if content_type:
        headers["Content-Type"] = content_type
    return headers


def get_json(url: str, bearer: str = "") -> Any:
    return _send("GET", url, _headers("application/json", bearer))[0]


def post_json(url: str, data: dict, bearer: str = "", content_type: str = "application/json") -> Any:
    return _send("POST", url, _headers("application/json", bearer, content_type), json.dumps(data).encode())[
        0
    ]


def get_json_page(url: str, bearer: str, accept: str) -> tuple[Any, str]:
    """One page of a paged LTI service answer and the URL of the next page ('' at the end: the
    `Link: <…>; rel="next"` header)."""
    data, headers = _send("GET", url, _headers(accept, bearer))
    for link in headers.get_all("Link") or []:
        for part in link.split(","):
            target, _, params = part.partition(";")
            if 'rel="next"' in params.replace(" ", ""):
                return data, target.strip().strip("<>")
    return data, ""


def post_form(url: str, fields: dict[str, str]) -> Any:
    data = urllib.parse.urlencode(fields).encode()
    return _send("POST", url, _headers("application/json", "", "application/x-www-form-urlencoded"), data)[0]
