#!/usr/bin/env python3
"""full_socket.py: clients whose sockets are full never hold a serving thread.

Usage: full_socket.py BINARY FIXTURES  (with WH_TEST_SERVER_PRELOAD naming
tests/server/full_socket.c's shim, which makes every client from 127.0.0.3
one whose socket is full, and counts the server's poll() calls for POLLOUT)

Starts BINARY serve with --threads=1 (every connection on the one serving
thread) and, from 127.0.0.3, 6 clients that ask GET /healthz (a small
answer, corked into one TLS record: wh/tlsrec.h) and 6 that send a
Content-Length libmicrohttpd refuses itself (its error answer, replaced by
src/shell/http/mhd/mhderr.c). Their answers cannot be written. Before, the
corked flush and the error answer's send each waited on the serving thread
for the socket (poll, up to 1 s); now the flush tries once and the
connection is cut, and the error answer's EAGAIN goes back to libmicrohttpd,
whose event loop waits instead. Meanwhile a client from 127.0.0.2 sends
reviews and probes.

It counts: the legitimate answers (all 200), the answers the full clients
got (none: the shim works), the full clients' connections closed by the
server (all 12), and the shim's count of poll() calls for POLLOUT with a
timeout: 0, i.e. nothing waited for a socket on the serving thread.
Exit 0 = pass.
"""
import json
import os
import re
import socket
import ssl
import sys
import tempfile
import time

import servelib
from servelib import check

BIN, FIXTURES = sys.argv[1], sys.argv[2]
if not os.environ.get("WH_TEST_SERVER_PRELOAD"):
    sys.exit("WH_TEST_SERVER_PRELOAD must name the full_socket shim")
WORK = tempfile.mkdtemp(prefix="wh-fullsock-")
SHIM_LOG = os.path.join(WORK, "shim.log")
os.environ["WH_FULL_SOCKET_LOG"] = SHIM_LOG
CTX = servelib.make_certs(BIN, WORK)
# TLS 1.2: the handshake's records are not application data, which the shim
# lets through (in TLS 1.3 they are wrapped as application data).
CTX12 = ssl.create_default_context(cafile=WORK + "/certs/ca.crt")
CTX12.check_hostname = False
CTX12.maximum_version = ssl.TLSVersion.TLSv1_2
server, PORT, LOG = servelib.start_server(
    BIN, WORK, ["--threads=1", "--header-timeout=3s", "--request-timeout=5s"])


def connect(source, ctx=CTX):
    return servelib.tls_connect(ctx, PORT, source)


def exchange(data):
    """(status, body) from 127.0.0.2."""
    s = connect("127.0.0.2")
    try:
        s.sendall(data)
        got = b""
        while True:
            head, sep, rest = got.partition(b"\r\n\r\n")
            m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I) if sep else None
            if m and len(rest) >= int(m.group(1)):
                return int(head.split(b" ", 2)[1]), rest[:int(m.group(1))]
            b = s.recv(65536)
            if not b:
                raise OSError("closed after %r" % got[:100])
            got += b
    finally:
        s.close()


review = json.load(open(os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")))
body = json.dumps(review).encode()
MUTATE = (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
BAD = (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       b"Content-Length: abc\r\n\r\n")

full = []
for i in range(12):
    s = connect("127.0.0.3", CTX12)
    s.sendall(HEALTHZ if i < 6 else BAD)
    full.append(s)
    # between them, the legitimate client is served on the same thread
    st, _ = exchange(HEALTHZ)
    check(st == 200, "healthz between full clients: %d" % st)

answered = {}
for i in range(40):
    try:
        st, out = exchange(MUTATE if i % 2 else HEALTHZ)
    except OSError as e:
        st = repr(e)
    answered[st] = answered.get(st, 0) + 1
print("legitimate answers beside 12 full clients: %r" % answered)
check(answered == {200: 40}, "legitimate answers %r" % answered)

# The full clients: no answer byte reached them, and the server closes each
# (the corked ones at once, the others at --header-timeout).
got_bytes, closed = 0, 0
t_end = time.monotonic() + 20
for s in full:
    s.settimeout(max(0.1, t_end - time.monotonic()))
    try:
        while True:
            b = s.recv(65536)
            if not b:
                closed += 1
                break
            got_bytes += len(b)
    except (socket.timeout, TimeoutError):
        pass
    except (ssl.SSLError, OSError):
        closed += 1
    s.close()
print("full clients: %d of 12 closed by the server, %d answer bytes reached them"
      % (closed, got_bytes))
check(got_bytes == 0, "%d answer bytes reached the full clients: the shim did not hold" % got_bytes)
check(closed == 12, "only %d of 12 full clients were closed by the server" % closed)

log = open(LOG, errors="replace").read()
check(log.count('"event":"answer_unsent"') >= 6,
      "%d answer_unsent lines for 6 corked answers" % log.count('"event":"answer_unsent"'))
servelib.stop_server(server)
shim = open(SHIM_LOG).read() if os.path.exists(SHIM_LOG) else ""
m = re.match(r"pollout_waits (\d+) refused (\d+)", shim)
if check(m, "no report from the shim: %r" % shim):
    print("shim: %s" % shim.strip())
    check(int(m.group(2)) >= 12, "the shim refused only %s writes" % m.group(2))
    check(int(m.group(1)) == 0, "the server polled %s times for a socket to take an answer"
          % m.group(1))
servelib.finish(LOG, WORK)
