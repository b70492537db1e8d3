"""What a web page, another local user or a misbehaving client can do to a bridge: each is
refused before the team's code runs, and no connection can hold the bridge's memory or threads.

Raw sockets on loopback where the standard library's client would not send the request
(a foreign Host, a negative Content-Length, a body smuggled after one the bridge will not read).
"""

import contextlib
import http.client
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

import fixture  # noqa: F401  (refuses every connection but loopback)
from rageval_bridge import make_server, start, url_of
from rageval_bridge import server as bridge_server

RETRIEVE = json.dumps({"query": "fee", "k": 1}).encode()
GENERATE = json.dumps({"question": "fee?", "passages": []}).encode()


def search(query, k):
    return [{"id": "a", "source": "a.md", "text": "A.", "score": 0.5}]


class Guarded(unittest.TestCase):
    """A bridge serving ``search`` and a generate step that records every call."""

    def setUp(self):
        self.generated = []
        self.server = self.serve()

    def serve(self, **kw):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            server = start(retriever=search, generate=self.generate, **kw)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.assertEqual(err.getvalue(), "", "a loopback bridge warns of nothing")
        return server

    def generate(self, question, passages):
        self.generated.append(question)
        return "ok"

    def address(self, server=None):
        return (server or self.server).server_address[:2]

    def request(self, method="POST", path="/retrieve", body=RETRIEVE, headers=None, server=None):
        """(status, decoded JSON reply, reply headers) with exactly ``headers`` (plus what
        http.client adds: Content-Length, and Host unless given)."""
        host, port = self.address(server)
        conn = http.client.HTTPConnection(host, port, timeout=10)
        self.addCleanup(conn.close)
        sent = {"Content-Type": "application/json"}
        sent.update(headers or {})
        sent = {k: v for k, v in sent.items() if v is not None}
        conn.request(method, path, body=body, headers=sent)
        r = conn.getresponse()
        return r.status, json.loads(r.read()), r.headers

    def exchange(self, raw, wait=10.0, server=None):
        """Every byte the bridge sends back for ``raw`` until it closes the connection, and
        whether it did close within ``wait`` seconds."""
        sock = socket.create_connection(self.address(server), timeout=wait)
        self.addCleanup(sock.close)
        sock.sendall(raw)
        got = b""
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return got, True
                got += chunk
        except socket.timeout:
            return got, False

    def statuses(self, reply):
        # Replies follow each other with no separator: `...}HTTP/1.1 200 OK`.
        return [int(code) for code in re.findall(rb"HTTP/1\.1 ([0-9]{3}) ", reply)]


class HostOriginAndType(Guarded):
    def test_a_foreign_host_header_is_refused_before_any_code_runs(self):
        # DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1.
        port = self.address()[1]
        for host in ["evil.example:%d" % port, "evil.example", "127.0.0.1.evil.example:%d" % port, "localhost.:%d" % port]:
            with self.subTest(host=host):
                status, reply, _ = self.request(path="/generate", body=GENERATE, headers={"Host": host})
                self.assertEqual(status, 421)
                self.assertIn("is not this bridge's", reply["error"]["message"])
        self.assertEqual(self.generated, [])
        for host in ["127.0.0.1:%d" % port, "localhost:%d" % port, "LOCALHOST", "[::1]:%d" % port, "127.0.0.1"]:
            with self.subTest(host=host):
                self.assertEqual(self.request(headers={"Host": host})[0], 200)
        # GET / answers the same Host check.
        self.assertEqual(self.request("GET", "/", None, {"Host": "evil.example"})[0], 421)

    def test_names_given_with_allowed_hosts_are_answered(self):
        server = self.serve(allowed_hosts=["bridge.internal", "gpu-box:9000"])
        for host, status in [("bridge.internal:1234", 200), ("gpu-box:9000", 200), ("gpu-box:9001", 421), ("other", 421)]:
            with self.subTest(host=host):
                self.assertEqual(self.request(headers={"Host": host}, server=server)[0], status)

    def test_a_request_from_a_web_page_of_another_origin_is_refused(self):
        port = self.address()[1]
        for origin, status in [
            ("http://evil.example", 403),
            ("null", 403),
            ("https://127.0.0.1.evil.example", 403),
            ("http://127.0.0.1:%d" % port, 200),
            ("http://localhost:%d" % port, 200),
        ]:
            with self.subTest(origin=origin):
                self.assertEqual(self.request(headers={"Origin": origin})[0], status)

    def test_a_body_that_is_not_application_json_is_415(self):
        # text/plain is what a page may POST across origins without a preflight.
        for ctype, status in [
            ("text/plain", 415),
            ("text/plain;charset=UTF-8", 415),
            ("application/x-www-form-urlencoded", 415),
            (None, 415),
            ("application/json; charset=utf-8", 200),
            ("Application/JSON", 200),
        ]:
            with self.subTest(ctype=ctype):
                status_got, reply, _ = self.request(path="/generate", body=GENERATE, headers={"Content-Type": ctype})
                self.assertEqual(status_got, status, reply)
        self.assertEqual(len(self.generated), 2)

    def test_a_cross_origin_preflight_gets_no_permission(self):
        raw = (
            b"OPTIONS /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\n"
            b"Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n\r\n"
        )
        reply, closed = self.exchange(raw)
        self.assertEqual(self.statuses(reply), [501])
        self.assertNotIn(b"Access-Control-Allow", reply)
        self.assertTrue(closed)


class Token(Guarded):
    TOKEN = "brt-canary-7f3a9c"

    def test_with_a_token_every_request_must_carry_it_as_a_bearer(self):
        server = self.serve(token=self.TOKEN)
        bearer = "Bearer " + self.TOKEN
        for headers, status in [
            ({}, 401),
            ({"Authorization": "Bearer wrong"}, 401),
            ({"Authorization": self.TOKEN}, 401),
            ({"Authorization": "Basic " + self.TOKEN}, 401),
            ({"Authorization": bearer + "x"}, 401),
            ({"Authorization": bearer}, 200),
            ({"Authorization": "bearer " + self.TOKEN}, 200),
        ]:
            with self.subTest(headers=headers):
                got, reply, reply_headers = self.request(path="/generate", body=GENERATE, headers=headers, server=server)
                self.assertEqual(got, status, reply)
                if status == 401:
                    self.assertEqual(reply_headers["WWW-Authenticate"], "Bearer")
                    self.assertIn("api_key_env: RAGEVAL_BRIDGE_TOKEN", reply["error"]["message"])
                    self.assertNotIn(self.TOKEN, json.dumps(reply))
        self.assertEqual(self.generated, ["fee?", "fee?"])
        self.assertEqual(self.request("GET", "/", None, server=server)[0], 401)

    def test_the_token_comes_from_the_environment_and_an_empty_one_is_none(self):
        with mock.patch.dict(os.environ, {"RAGEVAL_BRIDGE_TOKEN": self.TOKEN}):
            server = self.serve()
        self.assertEqual(self.request(server=server)[0], 401)
        self.assertEqual(self.request(headers={"Authorization": "Bearer " + self.TOKEN}, server=server)[0], 200)
        with mock.patch.dict(os.environ, {"RAGEVAL_BRIDGE_TOKEN": ""}):
            server = self.serve()
        self.assertEqual(self.request(server=server)[0], 200)

    def test_the_command_line_says_a_token_is_required_and_never_prints_it(self):
        env = dict(os.environ, RAGEVAL_BRIDGE_TOKEN=self.TOKEN)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rageval_bridge", "--retriever", "test_guard:search", "--port", "0"],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        line = proc.stdout.readline()
        self.assertTrue(line.endswith(" serves /retrieve from function search (requests need the token in $RAGEVAL_BRIDGE_TOKEN)\n"), line)
        self.assertNotIn(self.TOKEN, line)


class Exposure(unittest.TestCase):
    def test_a_bind_beyond_loopback_is_warned_of(self):
        for host in ["0.0.0.0", "", "::", "192.0.2.7", "bridge.example"]:
            with self.subTest(host=host):
                warning = bridge_server.exposure_warning(host, None)
                self.assertIsNotNone(warning)
                self.assertIn("which other machines can reach", warning)
                self.assertIn("no token is required (set $RAGEVAL_BRIDGE_TOKEN)", warning)
        self.assertIn("every request must carry the token", bridge_server.exposure_warning("0.0.0.0", "t"))
        for host in ["127.0.0.1", "127.0.0.2", "localhost", "::1"]:
            with self.subTest(host=host):
                self.assertIsNone(bridge_server.exposure_warning(host, None))


class Bounds(Guarded):
    def test_a_negative_or_malformed_content_length_is_400_and_the_connection_closed(self):
        for length in [b"-1", b"+14", b"1_4", b"0x0e", b"14, 14", b"", b"99999999999999999999999"]:
            with self.subTest(length=length):
                raw = b"POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + length + b"\r\n\r\n" + RETRIEVE
                reply, closed = self.exchange(raw)
                self.assertEqual(self.statuses(reply), [413 if length.startswith(b"9") else 400], reply)
                self.assertTrue(closed)
        raw = (
            b"POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 14\r\nContent-Length: 14\r\n\r\n" + RETRIEVE
        )
        self.assertEqual(self.statuses(self.exchange(raw)[0]), [400])

    def smuggle(self, headers):
        """A POST /retrieve the bridge refuses unread, its 'body' a POST /generate."""
        hidden = (
            b"POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(GENERATE)
            + GENERATE
        )
        raw = b"POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers + b"\r\n" + hidden
        return self.exchange(raw)

    def test_after_a_413_the_unread_body_is_never_taken_for_a_request(self):
        reply, closed = self.smuggle(b"Content-Length: %d\r\n" % (bridge_server.MAX_BODY_BYTES + 1))
        self.assertEqual(self.statuses(reply), [413])
        self.assertIn(b"Connection: close", reply)
        self.assertTrue(closed)
        self.assertEqual(self.generated, [])

    def test_after_a_411_the_unread_body_is_never_taken_for_a_request(self):
        for headers in [b"", b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: chunked\r\nContent-Length: 0\r\n"]:
            with self.subTest(headers=headers):
                reply, closed = self.smuggle(headers)
                self.assertEqual(self.statuses(reply), [411])
                self.assertTrue(closed)
        self.assertEqual(self.generated, [])

    def test_a_refusal_before_the_body_is_read_closes_the_connection(self):
        # A foreign Host, a wrong type: the body is not read, so it must not be parsed next.
        for headers in [b"Host: evil.example\r\nContent-Type: application/json\r\n", b"Host: 127.0.0.1\r\nContent-Type: text/plain\r\n"]:
            hidden = b"POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
                len(GENERATE),
                GENERATE,
            )
            raw = b"POST /retrieve HTTP/1.1\r\n" + headers + b"Content-Length: %d\r\n\r\n" % len(hidden) + hidden
            with self.subTest(headers=headers):
                reply, closed = self.exchange(raw)
                self.assertEqual(len(self.statuses(reply)), 1, reply)
                self.assertTrue(closed)
        self.assertEqual(self.generated, [])

    def test_a_get_with_a_body_closes_the_connection_after_its_reply(self):
        hidden = b"POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
            len(GENERATE),
            GENERATE,
        )
        raw = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(hidden) + hidden
        reply, closed = self.exchange(raw)
        self.assertEqual(self.statuses(reply), [200])
        self.assertTrue(closed)
        self.assertEqual(self.generated, [])

    def test_a_kept_alive_connection_still_serves_request_after_request(self):
        # The closing above is only for unread bodies: rageval's keep-alive pool is untouched.
        one = b"POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
            len(RETRIEVE),
            RETRIEVE,
        )
        server = self.serve()
        server.idle_timeout_s = 1.0
        reply, closed = self.exchange(one * 3, server=server)
        self.assertEqual(self.statuses(reply), [200, 200, 200])
        self.assertTrue(closed)  # by the idle timeout, after the third

    def test_bodies_held_at_once_are_bounded_and_a_request_past_the_bound_is_503(self):
        server = self.serve()
        server.idle_timeout_s = 2.0
        server.busy_wait_s = 0.3
        server.budget = bridge_server._Budget(150)
        head = b"POST /retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        body = json.dumps({"query": "q" * 70, "k": 1}).encode()
        body += b" " * (100 - len(body))
        # The first client sends its headers and part of its body, then stalls: it holds 100 bytes.
        stalled = socket.create_connection(self.address(server), timeout=10)
        self.addCleanup(stalled.close)
        stalled.sendall(head + body[:10])
        time.sleep(0.2)
        reply, closed = self.exchange(head + body, server=server)
        self.assertEqual(self.statuses(reply), [503], reply)
        self.assertIn(b"Retry-After: 1", reply)
        self.assertTrue(closed)
        # The stalled client is dropped by the idle timeout (408), and its 100 bytes come back.
        got = b""
        while True:
            chunk = stalled.recv(65536)
            if not chunk:
                break
            got += chunk
        self.assertEqual(self.statuses(got), [408])
        reply, _ = self.exchange(head + body, wait=2, server=server)
        self.assertEqual(self.statuses(reply)[:1], [200])

    def test_an_idle_connection_is_closed(self):
        server = self.serve()
        server.idle_timeout_s = 0.5
        sock = socket.create_connection(self.address(server), timeout=10)
        self.addCleanup(sock.close)
        started = time.monotonic()
        self.assertEqual(sock.recv(1), b"")
        self.assertLess(time.monotonic() - started, 5)

    def test_the_listen_backlog_takes_a_burst_of_connections(self):
        # Bound, not yet accepting: the kernel queues what the backlog allows (the standard
        # library's 5 would time out the seventh connection).
        with contextlib.redirect_stderr(io.StringIO()):
            server = make_server(retriever=search, port=0)
        self.addCleanup(server.server_close)
        socks = []
        for _ in range(64):
            socks.append(socket.create_connection(server.server_address[:2], timeout=1))
        for s in socks:
            s.close()

    def test_concurrent_requests_are_answered(self):
        # The bounds leave room for rageval's concurrency: 32 requests at once all succeed.
        results = []

        def one():
            results.append(self.request()[0])

        threads = [threading.Thread(target=one) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [200] * 32)


if __name__ == "__main__":
    unittest.main()
