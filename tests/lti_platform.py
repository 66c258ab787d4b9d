"""A small, faithful LTI 1.3 platform (the LMS side) for the tests: a real HTTP server on
127.0.0.1 in a thread, with its own RSA keys and JWKS, an OIDC authorisation endpoint that posts
an id_token back to the tool as a form, a token endpoint (client_credentials with a signed
client assertion) and a course page with a link that starts a launch, as Moodle's and Canvas's do.

A test says who launches from where (`Launch`: the user, roles, LMS course, link) and, for a
hostile launch, what the platform does wrong (claims changed or removed, a stale nonce, a key
it does not publish). Everything the platform receives is kept in `received`.
"""

import base64
import html
import json
import secrets
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DEEP_LINKING = "https://purl.imsglobal.org/spec/lti-dl/claim/"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
LEARNER = MEMBERSHIP + "Learner"
INSTRUCTOR = MEMBERSHIP + "Instructor"
INSTITUTION_INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"
REMOVE = object()  # a claim override that removes the claim


def _b64uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


class SigningKey:
    def __init__(self) -> None:
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "platform-" + secrets.token_hex(6)
        self.pem = self.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def jwk(self) -> dict:
        numbers = self.private.public_key().public_numbers()
        return {
            "kty": "RSA",
            "alg": "RS256",
            "use": "sig",
            "kid": self.kid,
            "n": _b64uint(numbers.n),
            "e": _b64uint(numbers.e),
        }

    def sign(self, claims: dict, headers: dict | None = None) -> str:
        return jwt.encode(claims, self.pem, algorithm="RS256", headers={"kid": self.kid, **(headers or {})})


@dataclass
class Launch:
    """One launch as the LMS would make it, and what goes wrong in it (for hostile tests)."""

    sub: str
    roles: list[str]
    context_id: str = "lms-course-1"
    context_title: str = "Dikkat 101 (LMS)"
    resource_link_id: str = "link-1"
    email: str = ""
    name: str = ""
    message_type: str = "LtiResourceLinkRequest"
    deep_link: bool = False  # the launch targets the tool's deep-linking address
    claims: dict[str, Any] = field(default_factory=dict)  # overrides; REMOVE removes a claim
    nonce: str | None = None  # sign this nonce instead of the one the tool sent
    key: SigningKey | None = None  # sign with this key instead of the platform's active one
    lifetime: int = 300  # seconds from iat to exp
    issued_ago: int = 0  # iat this many seconds before now


class TestPlatform:
    __test__ = False  # not a pytest test class

    def __init__(self, client_id: str = "dikkat-tool", deployment_id: str = "deployment-1") -> None:
        self.client_id = client_id
        self.deployment_id = deployment_id
        self.keys = [SigningKey()]  # published; the last one signs
        self.received: list[dict] = []
        self.jwks_requests = 0
        self.launches: dict[str, Launch] = {}
        self.tool: dict[str, str] = {}  # the tool's endpoints (login_url, launch_url, ...)
        self.tool_jwks: Any = None  # a callable returning the tool's JWKS (else fetched from the tool)
        self.deep_links: list[dict] = []
        self.members: dict[str, list[dict]] = {}  # the roster (NRPS) of each LMS course
        self.tokens: set[str] = set()  # access tokens the token endpoint gave out
        self.lineitems: dict[str, list[dict]] = {}  # AGS line items of each LMS course
        self.scores: list[dict] = []  # the scores the platform took, in order
        self.fail_scores = 0  # answer this many score POSTs with 500 before taking one
        self.gone_lineitems: set[str] = set()  # line items deleted in the LMS: their scores get a 404
        # While hold_scores is clear, a score POST waits for it (a slow LMS); score_held says one waits.
        self.hold_scores = threading.Event()
        self.hold_scores.set()
        self.score_held = threading.Event()
        self.page_size = 2  # members per roster page: the tool must follow rel="next"  # the content items tools sent back, as verified claims
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                platform._handle(self, "GET")

            def do_POST(self) -> None:
                platform._handle(self, "POST")

        self._handler = Handler
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.issuer = self.url
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- life cycle and registration -------------------------------------------------------

    def __enter__(self) -> "TestPlatform":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def go_down(self) -> None:
        """The LMS is down: its port refuses connections until ``come_back``."""
        self.server.shutdown()
        self.server.server_close()

    def come_back(self) -> None:
        """The LMS answers again, at the same address."""
        self.server = ThreadingHTTPServer(("127.0.0.1", int(self.url.rsplit(":", 1)[1])), self._handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def registration_args(self) -> list[str]:
        """`manage.py lti_platform add` arguments for this platform."""
        return [
            "add",
            "--issuer", self.issuer,
            "--client-id", self.client_id,
            "--deployment", self.deployment_id,
            "--auth-url", self.url + "/auth",
            "--token-url", self.url + "/token",
            "--jwks-url", self.url + "/jwks",
        ]  # fmt: skip

    @property
    def active_key(self) -> SigningKey:
        return self.keys[-1]

    def rotate_key(self, keep_old: bool = True) -> SigningKey:
        new = SigningKey()
        self.keys = [*self.keys, new] if keep_old else [new]
        return new

    # --- launches ----------------------------------------------------------------------------

    def login_params(self, launch: Launch) -> dict[str, str]:
        """The third-party login initiation the LMS sends (its link, as a form to the tool)."""
        hint = secrets.token_urlsafe(8)
        self.launches[hint] = launch
        target = self.tool["deep_link_url"] if launch.deep_link else self.tool["launch_url"]
        return {
            "iss": self.issuer,
            "login_hint": launch.sub,
            "target_link_uri": target,
            "lti_message_hint": hint,
            "client_id": self.client_id,
            "lti_deployment_id": self.deployment_id,
        }

    def id_token(self, launch: Launch, nonce: str) -> str:
        now = int(time.time()) - launch.issued_ago
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.client_id,
            "sub": launch.sub,
            "exp": now + launch.lifetime,
            "iat": now,
            "nonce": launch.nonce or nonce,
            "email": launch.email,
            "name": launch.name,
            CLAIM + "message_type": launch.message_type,
            CLAIM + "version": "1.3.0",
            CLAIM + "deployment_id": self.deployment_id,
            CLAIM + "target_link_uri": self.tool.get("launch_url", ""),
            CLAIM + "roles": launch.roles,
            CLAIM + "context": {
                "id": launch.context_id,
                "title": launch.context_title,
                "type": ["CourseOffering"],
            },
            CLAIM + "resource_link": {"id": launch.resource_link_id, "title": "Dikkat"},
            "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
                "scope": [
                    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                ],
                "lineitems": f"{self.url}/ags/{launch.context_id}/lineitems",
                "lineitem": f"{self.url}/ags/{launch.context_id}/lineitems/{launch.resource_link_id}",
            },
            "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                "context_memberships_url": f"{self.url}/nrps/{launch.context_id}",
                "service_versions": ["2.0"],
            },
        }
        if launch.deep_link:
            claims[CLAIM + "message_type"] = "LtiDeepLinkingRequest"
            claims.pop(CLAIM + "resource_link")
            claims[DEEP_LINKING + "deep_linking_settings"] = {
                "deep_link_return_url": self.url + "/deep-link-return",
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
                "accept_multiple": False,
                "data": "platform-opaque-data",
            }
        for name, value in launch.claims.items():
            if value is REMOVE:
                claims.pop(name, None)
            else:
                claims[name] = value
        return (launch.key or self.active_key).sign(claims)

    def authorize(self, query: dict[str, str]) -> tuple[str, dict[str, str]]:
        """The OIDC authorisation request: checks it as an LMS does; the form it posts back."""
        redirect_uri = query.get("redirect_uri", "")
        expected = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": self.client_id,
        }
        wrong = [name for name, value in expected.items() if query.get(name) != value]
        launch = self.launches.get(query.get("lti_message_hint", ""))
        if redirect_uri not in (self.tool.get("launch_url"), self.tool.get("deep_link_url")):
            wrong.append("redirect_uri")
        if launch is None or query.get("login_hint") != launch.sub:
            wrong.append("login_hint")
        if wrong or launch is None:
            return redirect_uri, {"error": "invalid_request", "error_description": ", ".join(wrong)}
        fields = {"id_token": self.id_token(launch, query.get("nonce", "")), "state": query.get("state", "")}
        return redirect_uri, fields

    # --- HTTP ----------------------------------------------------------------------------------

    def _handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        parsed = urllib.parse.urlsplit(request.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length).decode() if length else ""
        self.received.append({"method": method, "path": parsed.path, "query": query, "body": body})
        if parsed.path == "/jwks":
            self.jwks_requests += 1
            self._send(request, 200, json.dumps({"keys": [k.jwk() for k in self.keys]}), "application/json")
        elif parsed.path == "/auth":
            action, fields = self.authorize(query)
            self._send(request, 200, self._autosubmit(action, fields), "text/html; charset=utf-8")
        elif parsed.path == "/token" and method == "POST":
            status, answer = self._token(dict(urllib.parse.parse_qsl(body)))
            self._send(request, status, json.dumps(answer), "application/json")
        elif parsed.path == "/.well-known/openid-configuration":
            self._send(request, 200, json.dumps(self.openid_configuration()), "application/json")
        elif parsed.path == "/register" and method == "POST":
            status, answer = self._register(request.headers.get("Authorization", ""), body)
            self._send(request, status, json.dumps(answer), "application/json")
        elif parsed.path.startswith("/nrps/"):
            status, answer, link = self._roster(
                request.headers.get("Authorization", ""), parsed.path[6:], query
            )
            data = json.dumps(answer).encode()
            request.send_response(status)
            request.send_header("Content-Type", "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
            request.send_header("Content-Length", str(len(data)))
            if link:
                request.send_header("Link", f'<{link}>; rel="next"')
            request.end_headers()
            request.wfile.write(data)
        elif parsed.path.startswith("/ags/"):
            status, answer = self._ags(request.headers.get("Authorization", ""), method, parsed.path, body)
            self._send(request, status, json.dumps(answer), "application/json")
        elif parsed.path == "/deep-link-return" and method == "POST":
            status, text = self._deep_link_return(dict(urllib.parse.parse_qsl(body)))
            self._send(request, status, text, "text/html; charset=utf-8")
        elif parsed.path == "/admin/register-tool":
            self._send(request, 200, self._register_tool_page(query["url"]), "text/html; charset=utf-8")
        elif parsed.path == "/course":
            self._send(request, 200, self._course_page(query), "text/html; charset=utf-8")
        elif parsed.path == "/favicon.ico":
            self._send(request, 204, "", "image/x-icon")
        else:
            self._send(request, 404, "not found", "text/plain")

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, status: int, text: str, content_type: str) -> None:
        data = text.encode()
        try:
            request.send_response(status)
            request.send_header("Content-Type", content_type)
            request.send_header("Content-Length", str(len(data)))
            request.end_headers()
            request.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # Dikkat stopped waiting (its time budget ran out), as it should

    @staticmethod
    def _autosubmit(action: str, fields: dict[str, str]) -> str:
        inputs = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in fields.items()
        )
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>LMS</title></head><body>'
            f'<form id="lti" method="post" action="{html.escape(action)}">{inputs}'
            '<button type="submit">Continue</button></form>'
            "<script>document.getElementById('lti').submit();</script></body></html>"
        )

    def _course_page(self, query: dict[str, str]) -> str:
        """The LMS course page: its Dikkat link starts a launch for `?user=<sub>` (set up first
        with `login_params`' launch under that hint)."""
        params = self.login_params(self.launches[query["launch"]])
        inputs = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in params.items()
        )
        # Embedded: the link opens Dikkat in a frame of the course page, as Moodle and Canvas do.
        framed = query.get("framed") == "1"
        target = ' target="dikkat"' if framed else ""
        frame = '<iframe name="dikkat" title="Dikkat" width="1000" height="700"></iframe>' if framed else ""
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>LMS course</title></head><body>'
            f'<form method="post" action="{html.escape(self.tool["login_url"])}"{target}>{inputs}'
            f'<button type="submit">Open Dikkat</button></form>{frame}</body></html>'
        )

    def course_page_url(self, launch: Launch, framed: bool = False) -> str:
        key = secrets.token_urlsafe(8)
        self.launches[key] = launch
        return f"{self.url}/course?launch={key}" + ("&framed=1" if framed else "")

    # --- dynamic registration ----------------------------------------------------------------

    def openid_configuration(self) -> dict:
        """The platform's OpenID configuration, as Moodle 4.x publishes it."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": self.url + "/auth",
            "token_endpoint": self.url + "/token",
            "jwks_uri": self.url + "/jwks",
            "registration_endpoint": self.url + "/register",
            "scopes_supported": ["openid"],
            "response_types_supported": ["id_token"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "https://purl.imsglobal.org/spec/lti-platform-configuration": {
                "product_family_code": "testlms",
                "version": "1.0",
                "messages_supported": [{"type": "LtiResourceLinkRequest"}, {"type": "LtiDeepLinkingRequest"}],
            },
        }

    def registration_params(self) -> dict[str, str]:
        """What the LMS appends to the tool's registration address."""
        return {
            "openid_configuration": self.url + "/.well-known/openid-configuration",
            "registration_token": self.registration_token,
        }

    registration_token = "registration-token-1"

    def _register_tool_page(self, tool_url: str) -> str:
        """The LMS's "register a tool" page: the tool's registration address in a frame; the
        tool's close message (org.imsglobal.lti.close) is shown as the LMS would react to it."""
        separator = "&" if "?" in tool_url else "?"
        src = tool_url + separator + urllib.parse.urlencode(self.registration_params())
        return (
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>LMS admin</title></head><body>'
            '<p id="status">Registering…</p>'
            f'<iframe name="tool" title="Dikkat registration" src="{html.escape(src)}" width="900" height="600"></iframe>'
            "<script>window.addEventListener('message', function (event) {"
            "if (event.data && event.data.subject === 'org.imsglobal.lti.close') {"
            "document.getElementById('status').textContent = 'Tool registered: closed by ' + event.origin; }});"
            "</script></body></html>"
        )

    def _register(self, authorization: str, body: str) -> tuple[int, dict]:
        if authorization != f"Bearer {self.registration_token}":
            return 401, {"error": "invalid_token"}
        try:
            request = json.loads(body)
        except ValueError:
            return 400, {"error": "invalid_client_metadata"}
        required = (
            "initiate_login_uri",
            "redirect_uris",
            "jwks_uri",
            "https://purl.imsglobal.org/spec/lti-tool-configuration",
        )
        if any(not request.get(name) for name in required):
            return 400, {"error": "invalid_client_metadata"}
        self.tool = {
            "login_url": request["initiate_login_uri"],
            "launch_url": request["redirect_uris"][0],
            "deep_link_url": request["redirect_uris"][-1],
            "jwks_url": request["jwks_uri"],
        }
        return 200, {
            **request,
            "client_id": self.client_id,
            "https://purl.imsglobal.org/spec/lti-tool-configuration": {
                **request["https://purl.imsglobal.org/spec/lti-tool-configuration"],
                "deployment_id": self.deployment_id,
            },
        }

    def _tool_key(self, token: str) -> Any:
        """The tool's public key that signed `token`, from its JWKS."""
        header = jwt.get_unverified_header(token)
        if self.tool_jwks:
            jwks = self.tool_jwks()
        else:
            with urllib.request.urlopen(self.tool["jwks_url"], timeout=10) as response:
                jwks = json.loads(response.read())
        keys = {k["kid"]: k for k in jwks["keys"]}
        return jwt.PyJWK(keys[header["kid"]], "RS256").key

    def _deep_link_return(self, form: dict[str, str]) -> tuple[int, str]:
        """The LtiDeepLinkingResponse the tool posts back: checked as an LMS checks it."""
        try:
            claims = jwt.decode(
                form.get("JWT", ""),
                self._tool_key(form.get("JWT", "")),
                algorithms=["RS256"],
                audience=self.issuer,
                issuer=self.client_id,
                options={"require": ["exp", "iat", "nonce"]},
            )
        except (KeyError, jwt.InvalidTokenError, OSError) as error:
            return 400, f"<!DOCTYPE html><title>LMS</title><p>Refused: {html.escape(str(error))}</p>"
        if (
            claims.get(CLAIM + "message_type") != "LtiDeepLinkingResponse"
            or claims.get(DEEP_LINKING + "data") != "platform-opaque-data"
        ):
            return 400, "<!DOCTYPE html><title>LMS</title><p>Refused: not a deep linking response</p>"
        items = claims.get(DEEP_LINKING + "content_items", [])
        self.deep_links.extend(items)
        titles = ", ".join(html.escape(item.get("title", "")) for item in items)
        return (
            200,
            f'<!DOCTYPE html><html lang="en"><title>LMS</title><p id="added">Link added: {titles}</p></html>',
        )

    def member(self, sub: str, roles: list[str], status: str = "Active", **extra: str) -> dict:
        return {"user_id": sub, "roles": roles, "status": status, "name": extra.get("name", sub), **extra}

    def _roster(self, authorization: str, context_id: str, query: dict[str, str]) -> tuple[int, dict, str]:
        if authorization.removeprefix("Bearer ") not in self.tokens:
            return 401, {"error": "invalid_token"}, ""
        members = self.members.get(context_id, [])
        start = int(query.get("from", 0))
        page = members[start : start + self.page_size]
        more = start + self.page_size < len(members)
        link = f"{self.url}/nrps/{context_id}?from={start + self.page_size}" if more else ""
        return (
            200,
            {"id": f"{self.url}/nrps/{context_id}", "context": {"id": context_id}, "members": page},
            link,
        )

    def _ags(self, authorization: str, method: str, path: str, body: str) -> tuple[int, Any]:
        """Line items (GET lists, POST makes one) and scores (POST) of an LMS course; a score
        older than the newest one taken is ignored, as the AGS spec says."""
        if authorization.removeprefix("Bearer ") not in self.tokens:
            return 401, {"error": "invalid_token"}
        parts = path.strip("/").split("/")  # ags, context, lineitems[, id[, scores]]
        items = self.lineitems.setdefault(parts[1], [])
        if len(parts) == 3 and method == "GET":
            return 200, items
        if len(parts) == 3 and method == "POST":
            item = json.loads(body)
            item["id"] = f"{self.url}/ags/{parts[1]}/lineitems/item-{len(items) + 1}"
            items.append(item)
            return 201, item
        if len(parts) == 5 and parts[4] == "scores" and method == "POST":
            if not self.hold_scores.is_set():
                self.score_held.set()
                self.hold_scores.wait(30)
            if parts[3] in self.gone_lineitems:
                return 404, {"error": "line item not found"}
            if self.fail_scores > 0:
                self.fail_scores -= 1
                return 500, {"error": "try again later"}
            score = json.loads(body) | {"lineitem": parts[3]}
            newer = [
                s
                for s in self.scores
                if (s["lineitem"], s["userId"]) == (score["lineitem"], score["userId"])
                and s["timestamp"] >= score["timestamp"]
            ]
            if not newer:
                self.scores.append(score)
            return 200, {}
        return 404, {"error": "not found"}

    def _token(self, form: dict[str, str]) -> tuple[int, dict]:
        """client_credentials with a JWT client assertion signed by the tool (checked against
        the tool's JWKS), as the LTI Advantage services ask."""
        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        ):
            return 400, {"error": "unsupported_grant_type"}
        try:
            key = self._tool_key(form.get("client_assertion", ""))
            jwt.decode(
                form["client_assertion"],
                key,
                algorithms=["RS256"],
                audience=self.url + "/token",
                issuer=self.client_id,
                options={"require": ["exp", "iat", "jti", "sub"]},
            )
        except (KeyError, jwt.InvalidTokenError, OSError) as error:
            return 401, {"error": "invalid_client", "error_description": str(error)}
        token = secrets.token_urlsafe(16)
        self.tokens.add(token)
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": form.get("scope", ""),
        }


def fetch_form(url: str) -> tuple[str, dict[str, str]]:
    """GET a platform page over real HTTP and read its (first) form: its action and fields."""
    from html.parser import HTMLParser

    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()

    class FormReader(HTMLParser):
        action = ""
        fields: dict[str, str] = {}

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found = dict(attrs)
            if tag == "form" and not self.action:
                self.action = found.get("action") or ""
            elif tag == "input" and found.get("name"):
                self.fields[found["name"] or ""] = found.get("value") or ""

    reader = FormReader()
    reader.fields = {}
    reader.feed(text)
    return reader.action, reader.fields
