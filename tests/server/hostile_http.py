#!/usr/bin/env python3
"""hostile_http.py: hostile HTTP over raw TLS sockets against `serve`.

Usage: hostile_http.py BINARY

Starts BINARY serve (certificates from `BINARY certs`) on 127.0.0.1, port 0,
and sends what a hostile or broken client would: ambiguous framing, a NUL in
the path, malformed headers, chunked edge cases, pipelining, slowloris,
idle-connection floods, abrupt resets. After each case the server must still
answer /healthz; every answer must be a well-formed HTTP/1.1 response (one
status line, one Content-Length, exactly that many body bytes), and every
error a Kubernetes Status JSON body, including the errors libmicrohttpd
0.9.75 answers itself before the webhook sees the request (MHD_OWN;
docs/deploy.md, "Hostile HTTP": src/shell/http/mhd/mhderr.c rewrites them, and the
header block it doubles goes out once), each followed by a closed
connection. RSS must stay bounded (not
checked under AddressSanitizer, whose quarantine keeps freed memory).
Exit 0 = pass.
"""
import json
import os
import re
import socket
import ssl
import struct
import sys
import tempfile
import time

import servelib
from servelib import check, fail

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="wh-hostile-")
PER_CLIENT = 16
CTX = servelib.make_certs(BIN, WORK)
server, PORT, LOG = servelib.start_server(
    BIN, WORK, ["--header-timeout=2s", "--request-timeout=3s", "--max-connections=128",
                "--max-connections-per-client=%d" % PER_CLIENT, "--max-body-bytes=65536"])


def connect(source="127.0.0.1", timeout=5.0):
    return servelib.tls_connect(CTX, PORT, source, timeout)


def complete_response(data):
    """True when data holds one whole response that keeps the connection."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    if not sep or not m or re.search(rb"\r\nconnection: *close", head, re.I):
        return False
    return len(rest) >= int(m.group(1))


def read_until_close(s, timeout=5.0, one=False):
    """What the server sends until it closes, or (one) until a whole
    kept-alive response is in; (bytes, closed)."""
    s.settimeout(timeout)
    out = b""
    try:
        while not (one and complete_response(out)):
            b = s.recv(65536)
            if not b:
                return out, True
            out += b
        return out, False
    except (socket.timeout, TimeoutError):
        return out, False
    except (ConnectionResetError, ssl.SSLError, OSError):
        return out, True


def parse_responses(data):
    """Split data into responses; raise ValueError on anything malformed."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("incomplete header block: %r" % data[:200])
        lines = head.split(b"\r\n")
        m = re.fullmatch(rb"HTTP/1\.1 (\d{3}) [^\r\n]*", lines[0])
        if not m:
            raise ValueError("bad status line: %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not re.fullmatch(rb"[A-Za-z0-9-]+", name):
                raise ValueError("bad header line: %r" % line)
            key = name.decode().lower()
            if key in headers:
                raise ValueError("header %s twice" % key)
            headers[key] = value.strip().decode("latin1")
        if "content-length" not in headers:
            raise ValueError("no Content-Length")
        n = int(headers["content-length"])
        if len(rest) < n:
            raise ValueError("body shorter than Content-Length")
        out.append((int(m.group(1)), headers, rest[:n]))
        data = rest[n:]
    return out


def check_status_body(name, status, headers, body):
    if status < 400:
        return
    if not check(headers.get("content-type") == "application/json",
                 "%s: %d answered with %s" % (name, status, headers.get("content-type"))):
        return
    try:
        st = json.loads(body)
    except ValueError:
        fail("%s: error body is not JSON: %r" % (name, body[:200]))
        return
    check(st.get("kind") == "Status" and st.get("apiVersion") == "v1" and
          st.get("status") == "Failure" and st.get("code") == status and st.get("message"),
          "%s: not a Status object: %r" % (name, st))


def exchange(data, timeout=5.0, source="127.0.0.1", one=True):
    s = connect(source)
    try:
        s.sendall(data)
    except OSError:
        pass
    out, closed = read_until_close(s, timeout, one)
    s.close()
    return out, closed


def healthz(what, source="127.0.0.1"):
    try:
        out, _ = exchange(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", source=source)
        resp = parse_responses(out)
        ok = resp and resp[0][0] == 200 and resp[0][2] == b"ok\n"
    except (OSError, ValueError) as e:
        ok, out = False, repr(e).encode()
    check(ok, "after %s: /healthz did not answer 200 ok: %r" % (what, out[:200]))


def rss_kb():
    for line in open("/proc/%d/status" % server.pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


UNDER_ASAN = b"libasan" in open("/proc/%d/maps" % server.pid, "rb").read()
POST = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"

# Requests the webhook refuses itself: 400 + Status JSON + closed connection.
OURS = {
    "two Content-Length": POST + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x",
    "Content-Length and chunked": POST + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"
                                         b"\r\n2\r\n{}\r\n0\r\n\r\n",
    "chunked and Content-Length": POST + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"
                                         b"\r\n0\r\n\r\n",
    "unknown coding": POST + b"Transfer-Encoding: gzip\r\n\r\n{}",
    "coding list": POST + b"Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "chunked twice": POST + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
                            b"\r\n0\r\n\r\n",
    # White space before the colon (RFC 9112 section 5.1: 400): libmicrohttpd
    # ignores such a header for framing, so this body would be its next request.
    "Content-Length with a space before the colon":
        POST + b"Content-Length : 34\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    "Transfer-Encoding with a space before the colon":
        POST + b"Transfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "Content-Length with a tab before the colon": POST + b"Content-Length\t: 2\r\n\r\n{}",
    "NUL in path": b"GET /healthz%00x HTTP/1.1\r\nHost: x\r\n\r\n",
    "NUL in admission path": b"POST /mutate%00 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
    "newline in path": b"GET /healthz%0a HTTP/1.1\r\nHost: x\r\n\r\n",
}
for name, data in OURS.items():
    out, closed = exchange(data)
    try:
        resp = parse_responses(out)
    except ValueError as e:
        fail("%s: %s" % (name, e))
        continue
    if check(len(resp) == 1 and resp[0][0] == 400, "%s: want one 400, got %r" % (name, out[:300])):
        check_status_body(name, *resp[0])
        check(resp[0][1].get("connection", "").lower() == "close",
              "%s: no Connection: close" % name)
        check("before the colon" not in name or b"white space between a header name" in resp[0][2],
              "%s: the Status does not name the white space: %r" % (name, resp[0][2][:200]))
    check(closed, "%s: connection left open" % name)
    healthz(name)

# Errors of the webhook's own routes: Status JSON on a kept-alive connection.
for name, data, want in [
        ("unknown path", b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n", 404),
        ("wrong method", b"GET /mutate HTTP/1.1\r\nHost: x\r\n\r\n", 405),
        ("not a review", POST + b"Content-Length: 2\r\n\r\n{}", 400),
        # 10 KB of headers (a long bearer token) still fit libmicrohttpd's
        # 16 KiB per-connection pool (server.c): the webhook itself answers.
        ("10 KB of headers", POST + b"Authorization: Bearer " + b"t" * 10000 +
         b"\r\nContent-Length: 2\r\n\r\n{}", 400),
        ("body over the limit", POST + b"Content-Length: 70000\r\nExpect: 100-continue\r\n\r\n",
         413),
        ("chunked body over the limit", POST + b"Transfer-Encoding: chunked\r\n\r\n" +
         (b"8000\r\n" + b" " * 0x8000 + b"\r\n") * 3 + b"0\r\n\r\n", 413)]:
    out, _ = exchange(data, timeout=3)
    try:
        resp = parse_responses(out)
        if check(resp and resp[0][0] == want, "%s: want %d, got %r" % (name, want, out[:200])):
            check_status_body(name, *resp[0])
    except ValueError as e:
        fail("%s: %s: %r" % (name, e, out[:300]))
    healthz(name)

# Answered by libmicrohttpd itself before the webhook sees the request, with
# an HTML body (and for a bad Content-Length its header block twice) that
# src/shell/http/mhd/mhderr.c replaces: one Status answer, then the connection closed.
MHD_OWN = {
    "malformed Content-Length": (POST + b"Content-Length: abc\r\n\r\n", 400),
    "negative Content-Length": (POST + b"Content-Length: -1\r\n\r\n", 400),
    "huge Content-Length": (POST + b"Content-Length: 99999999999999999999999\r\n\r\n", 413),
    "header without colon": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nfoo\r\n\r\n", 400),
    "HTTP/2.5": (b"GET /healthz HTTP/2.5\r\nHost: x\r\n\r\n", 505),
    "bad chunk size": (POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400),
    "huge chunk size": (POST + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n"
                               b"0\r\n\r\n", 413),
    "64 KiB request line": (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    "40 KB header": (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 40000 + b"\r\n\r\n", 431),
}
# A raw NUL byte would cut libmicrohttpd's C strings (the request answered as
# the part before it); src/shell/http/mhd/mhderr.c sees it as it is read and answers
# 400, then the connection is closed (docs/deploy.md).
MHD_OWN.update({
    "raw NUL in path": (b"GET /healthz\x00x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "raw NUL in a header": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", 400),
    "raw NUL in Content-Length": (POST + b"Content-Length: 2\x00\r\n\r\n{}", 400),
    "raw NUL in a body": (POST + b"Content-Length: 4\r\n\r\n{\"\x00\"", 400),
})

for name, (data, want) in MHD_OWN.items():
    out, closed = exchange(data, one=False)
    try:
        resp = parse_responses(out)
        if check(len(resp) == 1 and resp[0][0] == want,
                 "%s: want one %d answer, got %r" % (name, want, out[:300])):
            check_status_body(name, *resp[0])
    except ValueError as e:
        fail("%s: %s: %r" % (name, e, out[:300]))
    check(closed, "%s: connection left open" % name)
    healthz(name)

# Chunked bodies that are fine: extensions, trailers, upper-case hex,
# leading zeros, an empty body. Each is read whole and answered.
for name, body in [("extension", b"2;x=y\r\n{}\r\n0\r\n\r\n"),
                   ("trailer", b"2\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n"),
                   ("hex and zeros", b"0002\r\n{}\r\n0000\r\n\r\n"),
                   ("empty", b"0\r\n\r\n"),
                   ("one byte chunks", b"1\r\n{\r\n1\r\n}\r\n0\r\n\r\n")]:
    out, _ = exchange(POST + b"Transfer-Encoding: chunked\r\n\r\n" + body, timeout=2)
    try:
        resp = parse_responses(out)
        if check(resp and resp[0][0] == 400, "chunked %s: %r" % (name, out[:200])):
            check_status_body("chunked " + name, *resp[0])
    except ValueError as e:
        fail("chunked %s: %s: %r" % (name, e, out[:300]))
# A chunked body that never ends is cut at --request-timeout.
t0 = time.time()
out, closed = exchange(POST + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", timeout=8)
check(closed and time.time() - t0 < 7, "unterminated chunked body held %.1f s" % (time.time() - t0))
healthz("unterminated chunked body")

# Pipelining: three admissions in one write, answered in order on one
# connection; a refused one in the middle closes it after its answer.
req = POST + b"Content-Length: 2\r\n\r\n{}"
s = connect()
s.sendall(req * 3)
s.settimeout(3)
got = b""
try:
    while got.count(b"HTTP/1.1 ") < 3 or not got.endswith(b"}"):
        b = s.recv(65536)
        if not b:
            break
        got += b
except OSError:
    pass
s.close()
try:
    resp = parse_responses(got)
    check([r[0] for r in resp] == [400, 400, 400], "pipelined: %r" % [r[0] for r in resp])
except ValueError as e:
    fail("pipelined: %s: %r" % (e, got[:300]))
bad = POST + b"Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}"
out, closed = exchange(req + bad + req, one=False)
try:
    resp = parse_responses(out)
    check([r[0] for r in resp] == [400, 400] and closed and
          b"two different Content-Length" in resp[1][2],
          "pipelined with a refused request: %r" % out[:400])
except ValueError as e:
    fail("pipelined with a refused request: %s: %r" % (e, out[:300]))
healthz("pipelining")

# A client that pipelines many reviews and reads nothing for a while, then
# everything: the answers queue in the socket (small answers are sent as one
# TLS record only while the socket's queue is empty: wh/tlsrec.h), other
# clients are served meanwhile, and every answer arrives whole and in order.
review_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                           "reviews", "v6e-16-native-host1.json")
template = json.load(open(review_path))
N_PIPE = 400
reqs = b""
for i in range(N_PIPE):
    template["request"]["uid"] = "pipe-%04d" % i
    body = json.dumps(template).encode()
    reqs += POST + b"Content-Length: %d\r\n\r\n" % len(body) + body
s = connect()
s.settimeout(10)
sender_error = None
try:
    s.sendall(reqs)
except OSError as e:
    sender_error = e
time.sleep(2)
t0 = time.monotonic()
healthz("a pipelining client that does not read")
check(time.monotonic() - t0 < 2, "healthz waited %.1fs behind a client that does not read"
      % (time.monotonic() - t0))
got = b""
try:
    while got.count(b"HTTP/1.1 200") < N_PIPE:
        b = s.recv(1 << 20)
        if not b:
            break
        got += b
    while True:  # the last body
        try:
            resp = parse_responses(got)
            break
        except ValueError:
            b = s.recv(1 << 20)
            if not b:
                raise
            got += b
    uids = [json.loads(r[2])["response"]["uid"] for r in resp]
    check(sender_error is None and [r[0] for r in resp] == [200] * N_PIPE and
          uids == ["pipe-%04d" % i for i in range(N_PIPE)],
          "pipelined reviews read late: %d answers, statuses %r, send error %r" %
          (len(resp), sorted(set(r[0] for r in resp)), sender_error))
except (OSError, ValueError) as e:
    fail("pipelined reviews read late: %s after %d bytes" % (e, len(got)))
s.close()
healthz("pipelined reviews read late")

# Abrupt resets: TCP RST during the handshake, the headers and the body.
rss0 = rss_kb()
for i in range(60):
    raw = socket.create_connection(("127.0.0.1", PORT), timeout=5)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    if i % 3:
        s = CTX.wrap_socket(raw)
        s.sendall(POST if i % 3 == 1 else POST + b"Content-Length: 60000\r\n\r\n" + b" " * 30000)
        s.close()
    raw.close()
# Not TLS at all, and TLS garbage after a good handshake record.
for data in [b"\x16\x03\x01\x00\x05hello", os.urandom(4096), b"GET / HTTP/1.1\r\n\r\n"]:
    raw = socket.create_connection(("127.0.0.1", PORT), timeout=5)
    raw.sendall(data)
    raw.settimeout(3)
    try:
        raw.recv(100)
    except OSError:
        pass
    raw.close()
healthz("abrupt resets")

# Slowloris: headers one byte at a time, slower than --header-timeout.
slow = [connect() for _ in range(8)]
t0 = time.time()
cut = 0
while time.time() - t0 < 4 and cut < len(slow):
    for s in slow:
        try:
            s.send(b"G")
        except OSError:
            pass
    healthz("slowloris (during)")
    time.sleep(0.3)
for s in slow:
    s.settimeout(0.5)
    try:
        cut += s.recv(10) == b""
    except OSError:
        cut += 1
    s.close()
check(cut == len(slow), "slowloris: %d of %d slow connections cut after 4 s (header timeout 2 s)"
      % (cut, len(slow)))

# Idle flood from one address: past --max-connections-per-client the
# connections are closed at once, and other clients are still served while
# the flood holds its share.
flood = []
for _ in range(3 * PER_CLIENT):
    try:
        flood.append(socket.create_connection(("127.0.0.1", PORT), timeout=5))
    except OSError:
        pass
time.sleep(0.3)
open_now = 0
for s in flood:
    s.setblocking(False)
    try:
        open_now += s.recv(1) != b""
    except BlockingIOError:
        open_now += 1
    except OSError:
        pass
check(open_now <= PER_CLIENT, "idle flood: %d connections from one address stay open (limit %d)"
      % (open_now, PER_CLIENT))
healthz("idle flood, other client", source="127.0.0.2")
for s in flood:
    s.close()
time.sleep(0.3)
healthz("idle flood over")

# Memory: 300 more hostile exchanges do not grow RSS without bound.
for i in range(100):
    for data in (OURS["two Content-Length"], MHD_OWN["malformed Content-Length"][0],
                 POST + b"Transfer-Encoding: chunked\r\n\r\n8000\r\n" + b" " * 0x8000 +
                 b"\r\n0\r\n\r\n"):
        exchange(data, timeout=2)
rss1 = rss_kb()
if not UNDER_ASAN:
    check(rss1 - rss0 < 32 * 1024, "RSS grew from %d to %d kB" % (rss0, rss1))
healthz("memory loop")

check(server.poll() is None, "server exited")
servelib.stop_server(server)
servelib.finish(LOG, WORK)
