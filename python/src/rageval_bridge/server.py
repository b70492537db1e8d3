"""The HTTP side: ``POST /retrieve`` (rageval's ``retriever: {kind: http}``) and ``POST
/generate`` (``chat: {kind: http}``) on the standard library's threading server.

Status codes follow what rageval does with them: a body rageval could not have meant is 400,
an object that breaks the contract (a hit without a score) 422, neither retried; an exception
in the team's own code is 500, which rageval retries (a model behind a chain may be busy).
Every error body is ``{"error": {"message": ...}}``, the message rageval shows.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Optional, Union

from . import adapters
from .adapters import ContractError, Keys

# The largest request body read: rageval's are a question and a few passages.
MAX_BODY_BYTES = 64 * 1024 * 1024


class _Refusal(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def _body(handler):
    length = handler.headers.get("Content-Length")
    if length is None:
        raise _Refusal(411, "the request has no Content-Length")
    try:
        length = int(length)
    except ValueError:
        raise _Refusal(400, "Content-Length %r is not a number" % length)
    if length > MAX_BODY_BYTES:
        raise _Refusal(413, "the body is larger than %d MiB" % (MAX_BODY_BYTES >> 20))
    raw = handler.rfile.read(length)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _Refusal(400, "the body is not JSON: %s" % e)


def _retrieve_args(body):
    body = body if isinstance(body, dict) else {}
    query, k = body.get("query"), body.get("k")
    if not isinstance(query, str) or not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise _Refusal(400, 'the body must be {"query": "...", "k": N} with N at least 1')
    return query, k


def _generate_args(body):
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


def _handler(bridge, log):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "rageval-bridge"

        def _send(self, status, payload):
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _fail(self, status, message):
            self._send(status, {"error": {"message": message}})

        def do_GET(self):
            # `GET /`: what is served, for a health check.
            if self.path.split("?")[0] != "/":
                return self._fail(404, "no such path: POST /retrieve or /generate")
            served = {"retrieve": bridge.retriever, "generate": bridge.generate}
            self._send(200, {p: o.description for p, o in served.items() if o is not None})

        def do_POST(self):
            path = self.path.split("?")[0].rstrip("/")
            try:
                body = _body(self)
                if path == "/retrieve" and bridge.retriever is not None:
                    query, k = _retrieve_args(body)
                    self._send(200, {"hits": bridge.retriever(query, k)})
                elif path == "/generate" and bridge.generate is not None:
                    question, passages = _generate_args(body)
                    self._send(200, bridge.generate(question, passages))
                else:
                    served = [p for p, o in (("/retrieve", bridge.retriever), ("/generate", bridge.generate)) if o is not None]
                    raise _Refusal(404, "no such path %s: this bridge serves %s" % (path, " and ".join(served)))
            except _Refusal as e:
                self._fail(e.status, e.message)
            except ContractError as e:
                self._fail(422, str(e))
            except Exception as e:  # the team's own code failed: its traceback goes to stderr
                traceback.print_exc(file=sys.stderr)
                self._fail(500, "%s: %s" % (type(e).__name__, e))

        def log_message(self, format, *args):
            if log:
                sys.stderr.write("rageval-bridge: %s\n" % (format % args))

    return Handler


class BridgeServer(ThreadingHTTPServer):
    """The standard library's threading server with the :class:`Bridge` it serves."""

    daemon_threads = True

    def __init__(self, address: "tuple[str, int]", bridge: Bridge, log: bool = False) -> None:
        self.bridge = bridge
        super().__init__(address, _handler(bridge, log))


def make_server(
    retriever: Any = None, generate: Any = None, port: int = 8000, host: str = "127.0.0.1", log: bool = False, **options: Any
) -> BridgeServer:
    """The server, bound but not yet serving (``serve_forever`` runs it), and its bridge."""
    return BridgeServer((host, port), Bridge(retriever=retriever, generate=generate, **options), log)


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
    the metadata fields, ``question_key`` and ``documents_key`` for a chain's input.
    """
    server = make_server(retriever, generate, port, host, log, **options)
    print(server.bridge.describe(url_of(server)), flush=True)
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
