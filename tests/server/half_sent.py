#!/usr/bin/env python3
"""half_sent.py: clients that hold half-sent request bodies, against `serve`.

Usage: half_sent.py BINARY FIXTURES

Starts BINARY serve on 127.0.0.1 (--max-body-memory=32 MiB, so that the
per-client share is 16 MiB; --request-timeout=60s, so that only the body
rules cut), then, while legitimate clients on 127.0.0.2 send real reviews
(a pod review and a 1 MiB one) without pause:

1. 72 connections from 127.0.0.1 each send a POST /mutate header block (42
   with Content-Length 3145728, 30 with 16384) and then one byte a second.
   While a header block reserved its whole body, they held 126 MiB (the
   whole default budget) and every admission was answered 503 for 30 s.
   Bodies are now charged as they arrive, and a body slower than
   --min-body-rate is cut.
2. 12 connections from 127.0.0.3 each send a header block with
   Content-Length 3145728 and all but the last byte of the body at once
   (36 MiB, more than the server's 32 MiB), then nothing. Their client's
   share (--max-client-memory, half the budget) refuses what is over it;
   the pause cuts them.

It counts: legitimate answers by status (every one must be 200, none 503),
the hostile connections closed by the server (all of them, before the 60 s
request timeout could), the cut-off log lines that name the body rate, and
the request memory /metrics reports while the hostile clients hold their
bodies (bounded by the client share, not by what the headers promise).
VmRSS growth is checked too (not under AddressSanitizer or ThreadSanitizer,
whose shadow memory and quarantine count in the RSS).
Exit 0 = pass.
"""
import json
import os
import ssl
import sys
import tempfile
import threading
import time

import servelib
from servelib import check

BIN, FIXTURES = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="wh-halfsent-")
MiB = 1024 * 1024
CTX = servelib.make_certs(BIN, WORK)
server, PORT, LOG = servelib.start_server(
    BIN, WORK, ["--max-body-memory=%d" % (32 * MiB), "--request-timeout=60s",
                "--header-timeout=10s"])
_maps = open("/proc/%d/maps" % server.pid, "rb").read()
UNDER_SANITIZER = b"libasan" in _maps or b"libtsan" in _maps


def connect(source, timeout=10.0):
    return servelib.tls_connect(CTX, PORT, source, timeout)


def post(source, path, body):
    s = connect(source)
    try:
        s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (path.encode(), len(body))
                  + body)
        return servelib.read_response(s)
    finally:
        s.close()


def get(path):
    s = connect("127.0.0.2")
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
        return servelib.read_response(s)
    finally:
        s.close()


def metric(name):
    status, body = get("/metrics")
    return servelib.series(body).get(name, -1) if status == 200 else -1


def rss_kb():
    for line in open("/proc/%d/status" % server.pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


# Legitimate reviews: the native pod, and the same pod padded to 1 MiB with
# an annotation (a large body that needs room while the hostile ones hold).
review = json.load(open(os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")))
small = json.dumps(review).encode()
review["request"]["object"]["metadata"].setdefault("annotations", {})["pad"] = "x" * MiB
large = json.dumps(review).encode()

statuses = {}
errors = []
stop = threading.Event()
lock = threading.Lock()


def legit(body):
    while not stop.is_set():
        try:
            st, answer = post("127.0.0.2", "/mutate", body)
        except OSError as e:
            with lock:
                errors.append(repr(e))
            continue
        with lock:
            statuses[st] = statuses.get(st, 0) + 1
            if st != 200 and len(errors) < 5:
                errors.append("%d %r" % (st, answer[:200]))


def hostile_header(length):
    return (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % length)


def closed_by_server(s):
    """True when the server has closed s (end of stream or reset)."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except ssl.SSLWantReadError:
        return False
    except (BlockingIOError, ssl.SSLWantWriteError):
        return False
    except OSError:
        return True


def wait_cut(socks, trickle, limit_s):
    """Trickle a byte a second into the open ones (if trickle) until all are
    closed by the server or limit_s passes; how many were closed."""
    open_ = list(socks)
    t_end = time.monotonic() + limit_s
    while open_ and time.monotonic() < t_end:
        still = []
        for s in open_:
            if closed_by_server(s):
                continue
            if trickle:
                try:
                    s.setblocking(True)
                    s.settimeout(1)
                    s.send(b" ")
                except OSError:
                    continue
            still.append(s)
        open_ = still
        time.sleep(1)
    return len(socks) - len(open_)


rss0 = rss_kb()
workers = [threading.Thread(target=legit, args=(b,)) for b in (small, small, large)]
for w in workers:
    w.start()
time.sleep(1)
before = dict(statuses)

# 1. Header blocks, then a trickle.
hostile = []
for i in range(72):
    s = connect("127.0.0.1")
    s.sendall(hostile_header(3145728 if i < 42 else 16384) + b"{")
    hostile.append(s)
time.sleep(1.5)
# /metrics does not say what requests hold (an attacker would read how much
# more fills the budget): the process's memory does. 72 first steps and the
# legitimate requests in flight; the header blocks promised 126 MiB.
held = (rss_kb() - rss0) * 1024
if not UNDER_SANITIZER:
    check(held < 12 * MiB, "72 header-only uploads: RSS grew %d bytes" % held)
print("phase 1: RSS grew %d bytes with 72 header-only uploads" % held)
cut1 = wait_cut(hostile, True, 40)
print("phase 1: %d of 72 trickling connections cut by the server" % cut1)
check(cut1 == 72, "only %d of 72 trickling uploads were cut (--request-timeout is 60s)" % cut1)
for s in hostile:
    s.close()

# 2. Bodies sent all but their last byte, from one address.
hostile = []
part = b" " * (3145728 - 1)
for i in range(12):
    s = connect("127.0.0.3")
    try:
        s.sendall(hostile_header(3145728) + part)
    except OSError:
        pass
    hostile.append(s)
time.sleep(1)
held = (rss_kb() - rss0) * 1024
if not UNDER_SANITIZER:
    check(held <= 16 * MiB + 12 * MiB,
          "12 uploads of 3 MiB less a byte: RSS grew %d bytes (share 16 MiB)" % held)
print("phase 2: RSS grew %d bytes with 12 uploads of 3 MiB less a byte" % held)
cut2 = wait_cut(hostile, False, 40)
print("phase 2: %d of 12 stalled connections cut by the server" % cut2)
check(cut2 == 12, "only %d of 12 stalled uploads were cut" % cut2)
for s in hostile:
    s.close()

stop.set()
for w in workers:
    w.join()
answered = {k: v - before.get(k, 0) for k, v in statuses.items()}
print("legitimate answers while hostile clients held bodies: %r" % answered)
check(answered.get(503, 0) == 0, "legitimate reviews answered 503: %d" % answered.get(503, 0))
check(set(answered) == {200} and answered[200] >= 6,
      "legitimate answers %r, errors %r" % (answered, errors[:5]))
check(not errors, "legitimate clients failed: %r" % errors[:5])
log = open(LOG, errors="replace").read()
n_rate = log.count("request body arrived slower than --min-body-rate")
print("cut-off lines naming the body rate: %d" % n_rate)
check(n_rate >= 16, "only %d cut-offs logged with the body rate" % n_rate)
timeouts = metric("tpu_webhook_http_connections_timed_out_total")
# A stalled body may be shed to make room (budget short) before it times out.
shed = metric('tpu_webhook_http_shed_total{reason="slow_body"}')
check(timeouts + shed >= 84, "timed-out %d + shed %d connections, want >= 84" % (timeouts, shed))
rss1 = rss_kb()
print("VmRSS %d kB -> %d kB" % (rss0, rss1))
if not UNDER_SANITIZER:
    check(rss1 - rss0 < 96 * 1024, "RSS grew from %d to %d kB" % (rss0, rss1))

check(server.poll() is None, "server exited")
servelib.stop_server(server)
servelib.finish(LOG, WORK)
