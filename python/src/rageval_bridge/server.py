"""The HTTP side: ``POST /retrieve`` (rageval's ``retriever: {kind: http}``) and ``POST
/generate`` (``chat: {kind: http}``) on the standard library's threading server.

Status codes follow what rageval does with them: a body rageval could not have meant is 400,
an object that breaks the contract (a hit without a score) 422, neither retried; an exception
in the team's own code is 500, which rageval retries (a model behind a chain may be busy).
Every error body is ``{"error": {"message": ...}}``, the message rageval shows.

What a web page or another local user could do with a bridge is refused before any of the
team's code runs: a ``Host`` that is not this bridge's (DNS rebinding) is 421, a foreign
``Origin`` 403, a body that is not ``application/json`` (a cross-site form or ``fetch``
without a preflight) 415, and, when ``$RAGEVAL_BRIDGE_TOKEN`` is set, a request without
``Authorization: Bearer <token>`` 401. Bodies are bounded (each, and all being read at once),
an idle connection is closed, and a connection whose body was not read is closed after the
reply, so that the unread bytes are never taken for the next request.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple, Type, Union
from urllib.parse import urlsplit

from . import adapters
from .adapters import ContractError, Keys

# The largest request body read: rageval's are a question and a few passages.
MAX_BODY_BYTES = 64 * 1024 * 1024
# The most body bytes held at once, over every connection: a request that would pass it waits
# for others to finish, then is refused with 503 (which rageval retries).
MAX_BUFFERED_BYTES = 4 * MAX_BODY_BYTES
# Seconds a request waits for other bodies to be done with before its 503.
BUSY_WAIT_S = 10.0
# Seconds a connection may stay silent (between requests, or in the middle of one) before it
# is closed; the team's own code may take as long as it takes.
IDLE_TIMEOUT_S = 30.0
# The listen backlog: connections the kernel queues before the bridge accepts them (the
# standard library's 5 drops a burst from rageval's concurrent requests).
BACKLOG = 128
# The environment variable holding the shared token; rageval sends it from `api_key_env`.
TOKEN_ENV = "RAGEVAL_BRIDGE_TOKEN"
# Host names that always mean this machine.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


class _Refusal(Exception):
    def __init__(self, status: int, message: str, headers: Optional[Dict[str, str]] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class _Budget:
    """Body bytes that may be held at once; a request takes its length before reading."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._free = total
        self._cond = threading.Condition()

    def take(self, n: int, timeout: float) -> bool:
        with self._cond:
            if not self._cond.wait_for(lambda: self._free >= n, timeout):
                return False
            self._free -= n
            return True

    def give(self, n: int) -> None:
        with self._cond:
            self._free += n
            self._cond.notify_all()


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the bridge on this machine: ``localhost`` or a loopback
    address (``0.0.0.0``, ``::`` and every other address or name reach further)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, token: Optional[str]) -> Optional[str]:
    """What the bridge says on stderr when bound beyond loopback, else ``None``."""
    if is_loopback(host):
        return None
    guard = (
        "every request must carry the token in $%s" % TOKEN_ENV
        if token
        else "no token is required (set $%s)" % TOKEN_ENV
    )
    return (
        "rageval-bridge: warning: listening on %s, which other machines can reach: whoever connects "
        "can read your corpus through /retrieve and spend model credit through /generate; %s. "
        "Bind 127.0.0.1 (the default) unless rageval runs elsewhere, and name the host clients use "
        "with --allow-host." % (host or "every address", guard)
    )


def _split_host(value: str) -> Tuple[str, Optional[str]]:
    """``name`` and ``port`` of a Host header (``[v6]:port`` kept bracketed), lowercased."""
    value = value.strip().lower()
    m = re.fullmatch(r"(\[[0-9a-f:.]+\]|[^:\[\]]*)(?::([0-9]{1,5}))?", value)
    if m is None:
        return value, None
    return m.group(1), m.group(2)


class _Hosts:
    """The Host values this bridge answers: the loopback names (any port), the bound address
    with its port, and the names given with ``allowed_hosts`` (``name`` any port, ``name:port``
    that port)."""

    def __init__(self, bound: Tuple[Any, ...], extra: Iterable[str]) -> None:
        host, port = str(bound[0]), str(bound[1])
        self.any_port: Set[str] = set(LOOPBACK_NAMES)
        self.exact: Set[Tuple[str, str]] = set()
        name = "[%s]" % host if ":" in host else host
        if name not in ("0.0.0.0", "[::]", ""):
            self.exact.add((name.lower(), port))
        for h in extra:
            n, p = _split_host(h)
            if p is None:
                self.any_port.add(n)
            else:
                self.exact.add((n, p))
        self.port = port

    def allows(self, value: str) -> bool:
        name, port = _split_host(value)
        if name in self.any_port:
            return True
        return (name, port or "80") in self.exact or (port is None and (name, self.port) in self.exact)


def _retrieve_args(body: Any) -> Tuple[str, int]:
    body = body if isinstance(body, dict) else {}
    query, k = body.get("query"), body.get("k")
    if not isinstance(query, str) or not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise _Refusal(400, 'the body must be {"query": "...", "k": N} with N at least 1')
    return query, k


def _generate_args(body: Any) -> Tuple[Any, Any]:
    question = body.get("question") if isinstance(body, dict) else None
    passages = body.get("passages") if isinstance(body, dict) else None
    ok = isinstance(question, str) and isinstance(passages, list) and all(
        isinstance(p, dict) and isinstance(p.get("text"), str) for p in passages
    )
    if not ok:
        raise _Refusal(
            400,
            'the body must be {"question": "...", "passages": [{id, source, heading, text, score}]}',
        )
    return question, passages


class Bridge:
    """What one bridge serves: a retriever, a generation step, or both."""

    def __init__(
        self,
        retriever: Any = None,
        generate: Any = None,
        keys: Union[Keys, Dict[str, str], None] = None,
        question_key: str = "question",
        documents_key: str = "context",
    ) -> None:
        if retriever is None and generate is None:
            raise TypeError("serve needs a retriever, a generate step, or both")
        # `python -m rageval_bridge` may name them as a dict.
        self.keys = Keys(**keys) if isinstance(keys, dict) else (keys or Keys())
        self.retriever: Optional[adapters.Retriever] = None if retriever is None else adapters.retriever(retriever, self.keys)
        self.generate: Optional[adapters.Generator] = (
            None
            if generate is None
            else adapters.generator(generate, self.keys, question_key, documents_key)
        )

    def describe(self, url: str) -> str:
        """The one line the bridge prints at start."""
        parts = []
        if self.retriever is not None:
            parts.append("/retrieve from %s" % self.retriever.description)
        if self.generate is not None:
            parts.append("/generate from %s" % self.generate.description)
        return "rageval-bridge on %s serves %s" % (url, "; ".join(parts))


def _handler(bridge: Bridge, log: bool) -> Type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "rageval-bridge"
        server: "BridgeServer"
        # Set for each request: it declared a body that was not (yet) read, so the
        # connection cannot carry another request after the reply.
        _unread = False

        def setup(self) -> None:
            super().setup()
            # A silent client (idle between requests, or trickling one) is dropped.
            self.connection.settimeout(self.server.idle_timeout_s)

        def _send(self, status: int, payload: Any, headers: Optional[Dict[str, str]] = None) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if self._unread:
                # Sets close_connection: the unread body is never parsed as a request.
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _fail(self, status: int, message: str, headers: Optional[Dict[str, str]] = None) -> None:
            self._send(status, {"error": {"message": message}}, headers)

        def _admit(self, post: bool) -> None:
            """Refuse what did not come from rageval or a client the team named."""
            # A POST's body is unread until `_body` has read all of it (one without a
            # Content-Length may still be followed by its body).
            self._unread = bool(
                post
                or self.headers.get("Transfer-Encoding") is not None
                or any(v.strip() != "0" for v in self.headers.get_all("Content-Length") or [])
            )
            host = self.headers.get_all("Host") or []
            if len(host) != 1:
                raise _Refusal(400, "the request must have one Host header")
            if not self.server.hosts.allows(host[0]):
                # A name that resolves here without being this bridge: DNS rebinding.
                raise _Refusal(
                    421,
                    "Host %r is not this bridge's: it answers 127.0.0.1, localhost and the address it is bound "
                    "to (name others with --allow-host)" % host[0][:100],
                )
            origin = self.headers.get("Origin")
            if origin is not None:
                parts = urlsplit(origin.strip())
                if parts.scheme not in ("http", "https") or not self.server.hosts.allows(parts.netloc):
                    raise _Refusal(403, "requests from web pages of other origins are refused")
            token = self.server.token
            if token:
                given = self.headers.get("Authorization", "")
                scheme, _, value = given.partition(" ")
                if scheme.lower() != "bearer" or not hmac.compare_digest(
                    value.strip().encode("utf-8", "surrogateescape"), token.encode("utf-8")
                ):
                    raise _Refusal(
                        401,
                        "this bridge requires the token in $%s as `Authorization: Bearer` (rageval sends "
                        "it with `api_key_env: %s` in the retriever and chat sections); %s"
                        % (TOKEN_ENV, TOKEN_ENV, "the one sent differs" if given else "none was sent"),
                        {"WWW-Authenticate": "Bearer"},
                    )

        def _body(self) -> Any:
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/json":
                raise _Refusal(415, "the body must be Content-Type: application/json, not %r" % ctype[:100])
            if self.headers.get("Transfer-Encoding") is not None:
                raise _Refusal(411, "send the body with a Content-Length (Transfer-Encoding is not read)")
            lengths = self.headers.get_all("Content-Length") or []
            if not lengths:
                raise _Refusal(411, "the request has no Content-Length")
            if len(lengths) > 1 or not re.fullmatch(r"[0-9]+", lengths[0].strip()):
                raise _Refusal(400, "Content-Length %r is not one whole number of bytes" % ", ".join(lengths)[:100])
            length = int(lengths[0])
            if length > MAX_BODY_BYTES:
                raise _Refusal(413, "the body is larger than %d MiB" % (MAX_BODY_BYTES >> 20))
            budget = self.server.budget
            if not budget.take(length, self.server.busy_wait_s):
                raise _Refusal(
                    503, "the bridge is reading %d MiB of other bodies: try again" % (budget.total >> 20), {"Retry-After": "1"}
                )
            self._held = length
            try:
                raw = self.rfile.read(length)
            except OSError:  # a timeout: the client stopped sending
                raise _Refusal(408, "the body did not arrive within %g s" % self.server.idle_timeout_s)
            if len(raw) < length:
                raise _Refusal(400, "the body ended after %d of %d bytes" % (len(raw), length))
            self._unread = False
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError) as e:
                raise _Refusal(400, "the body is not JSON: %s" % e)

        def _answer(self, post: bool) -> None:
            self._held = 0
            try:
                self._admit(post)
                if not post:
                    # `GET /`: what is served, for a health check.
                    if self.path.split("?")[0] != "/":
                        raise _Refusal(404, "no such path: POST /retrieve or /generate")
                    served = {"retrieve": bridge.retriever, "generate": bridge.generate}
                    return self._send(200, {p: o.description for p, o in served.items() if o is not None})
                path = self.path.split("?")[0].rstrip("/")
                body = self._body()
                if path == "/retrieve" and bridge.retriever is not None:
                    query, k = _retrieve_args(body)
                    self._send(200, {"hits": bridge.retriever(query, k)})
                elif path == "/generate" and bridge.generate is not None:
                    question, passages = _generate_args(body)
                    self._send(200, bridge.generate(question, passages))
                else:
                    paths = [p for p, o in (("/retrieve", bridge.retriever), ("/generate", bridge.generate)) if o is not None]
                    raise _Refusal(404, "no such path %s: this bridge serves %s" % (path, " and ".join(paths)))
            except _Refusal as e:
                self._fail(e.status, e.message, e.headers)
            except ContractError as e:
                self._fail(422, str(e))
            except Exception as e:  # the team's own code failed: its traceback goes to stderr
                traceback.print_exc(file=sys.stderr)
                self._fail(500, "%s: %s" % (type(e).__name__, e))
            finally:
                if self._held:
                    self.server.budget.give(self._held)

        def do_GET(self) -> None:
            self._answer(post=False)

        def do_POST(self) -> None:
            self._answer(post=True)

        def log_message(self, format: str, *args: Any) -> None:
            if log:
                sys.stderr.write("rageval-bridge: %s\n" % (format % args))

    return Handler


class BridgeServer(ThreadingHTTPServer):
    """The standard library's threading server with the :class:`Bridge` it serves, its
    token, the Host names it answers and its bounds."""

    daemon_threads = True
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: Tuple[str, int],
        bridge: Bridge,
        log: bool = False,
        token: Optional[str] = None,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.bridge = bridge
        self.token = token or None
        self.idle_timeout_s = IDLE_TIMEOUT_S
        self.busy_wait_s = BUSY_WAIT_S
        self.budget = _Budget(MAX_BUFFERED_BYTES)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _handler(bridge, log))
        self.hosts = _Hosts(self.server_address, allowed_hosts)


def make_server(
    retriever: Any = None,
    generate: Any = None,
    port: int = 8000,
    host: str = "127.0.0.1",
    log: bool = False,
    *,
    token: Optional[str] = None,
    allowed_hosts: Iterable[str] = (),
    **options: Any,
) -> BridgeServer:
    """The server, bound but not yet serving (``serve_forever`` runs it), and its bridge.

    ``token`` (default ``$RAGEVAL_BRIDGE_TOKEN``; empty for none) is then required of every
    request as ``Authorization: Bearer``; ``allowed_hosts`` names Host values beyond loopback
    and the bound address (``name`` or ``name:port``). A bind beyond loopback is warned of on
    stderr."""
    if token is None:
        token = os.environ.get(TOKEN_ENV) or None
    server = BridgeServer((host, port), Bridge(retriever=retriever, generate=generate, **options), log, token, allowed_hosts)
    warning = exposure_warning(host, token)
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    """``http://host:port`` of a bound server."""
    host, port = server.server_address[:2]
    host = host.decode() if isinstance(host, bytes) else str(host)
    return "http://%s:%d" % ("[%s]" % host if ":" in host else host, port)


def serve(
    retriever: Any = None, generate: Any = None, port: int = 8000, host: str = "127.0.0.1", log: bool = False, **options: Any
) -> None:
    """Serve ``retriever`` at ``POST /retrieve`` and ``generate`` at ``POST /generate`` until
    interrupted, after one line on stdout saying what is served where.

    ``options``: ``keys=Keys(id_key=..., source_key=..., heading_key=..., score_key=...)`` for
    the metadata fields, ``question_key`` and ``documents_key`` for a chain's input, and
    ``token`` and ``allowed_hosts`` (:func:`make_server`).
    """
    server = make_server(retriever, generate, port, host, log, **options)
    line = server.bridge.describe(url_of(server))
    if server.token:
        line += " (requests need the token in $%s)" % TOKEN_ENV
    print(line, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def start(retriever: Any = None, generate: Any = None, port: int = 0, host: str = "127.0.0.1", **options: Any) -> BridgeServer:
    """Serve in a background thread (for tests and notebooks): the server; its URL is
    ``url_of(server)``, ``server.shutdown()`` stops it."""
    server = make_server(retriever, generate, port, host, **options)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
