#!/usr/bin/env python3
"""budgets.py: attackers from three addresses cannot starve the API server's reviews.

Usage: budgets.py BINARY FIXTURES

The shape of issue 35's slow-body attack, scaled to a 24 MiB request-memory
budget (--max-body-memory; each address's share is the default half): 36
connections, 12 from each of 127.0.0.2, 127.0.0.3 and 127.0.0.4, send a
POST /mutate header block promising 3 MiB and 1 MiB of its body at once
(60 more send 60 KiB and 150 3 KiB, filling what room is left), then one byte every 2 s (fast enough for the 5 s pause rule of
--min-body-rate, far below its rate). 36 MiB against 24: the budget is full
and, before the server shed by behaviour, every review beside them was
answered 503 until the trickles were cut about a minute later.

The wave arrives faster than the server can judge it (a body is judged
once it has been quiet for WH_SRV_SHED_QUIET_MS, 1 s, or over a whole
rate window), so on a fast machine nothing asks for room once the bodies
can be judged: a prober from the attackers' addresses then sends a further
1 MiB body every 0.2 s until the server has shed a first slow body to take
it (waited for, not slept on). A probe is as big as the bodies that fill the
budget because the small ones are cut for their rate about 5 s after they
start (--min-body-rate): on a slow machine they are gone before the probes
begin, and 24 probes of 1 MiB fill the budget again whatever was cut. Once every trickle has been measured over a
whole window (two rounds of the trickle, whose first window still counts
the body sent at once), 127.0.0.1 plays the API server: 50 clients at
once, each sending 6 ordinary reviews (a few KiB, at once) on its own
kept-alive connection. Every one must be answered 200, and the server must
have shed slow bodies to make room (tpu_webhook_http_shed_total
{reason="slow_body"} > 0: the attack did fill the budget). The verdict
does not depend on timing: each review is one request, answered or not.
Exit 0 = pass.
"""
import json
import os
import sys
import tempfile
import threading
import time

import servelib
from servelib import check

BIN, FIXTURES = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="wh-budgets-")
MiB = 1024 * 1024
CTX = servelib.make_certs(BIN, WORK)
server, PORT, LOG = servelib.start_server(
    BIN, WORK, ["--max-body-memory=%d" % (24 * MiB), "--request-timeout=120s"])
WAIT_S = 60


def connect(source, timeout=30.0):
    return servelib.tls_connect(CTX, PORT, source, timeout)


def metric(name_labels):
    s = connect("127.0.0.1")
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        status, body = servelib.read_response(s)
    finally:
        s.close()
    return servelib.series(body).get(name_labels, -1) if status == 200 else -1


def rss_kb():
    for line in open("/proc/%d/status" % server.pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


review = json.load(open(os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")))
ORDINARY = json.dumps(review).encode()

# The attack.
rss0 = rss_kb()
attackers = []
stop = threading.Event()
# 36 bodies of 1 MiB, then 60 of 60 KiB and 150 of 3 KiB that fill what
# room is left (an attacker who reads what the server holds sizes its
# bodies to the gap).
SIZES = [MiB] * 36 + [60 * 1024] * 60 + [3072] * 150
for i, size in enumerate(SIZES):
    s = connect("127.0.0.%d" % (2 + i % 3))
    s.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 3145728\r\n\r\n" + b" " * size)
    attackers.append(s)


rounds = [0]
attackers_lock = threading.Lock()


def trickle():
    while not stop.wait(2):
        with attackers_lock:
            now = list(attackers)
        for s in now:
            try:
                s.send(b" ")
            except OSError:
                pass
        rounds[0] += 1


trickler = threading.Thread(target=trickle)
trickler.start()
# Waited for: the budget has run short (the server shed a slow body to make
# room for a prober's). A server that does not shed never gets past here.
t0 = time.monotonic()
probes = 0
while metric('tpu_webhook_http_shed_total{reason="slow_body"}') <= 0 and \
        time.monotonic() - t0 < WAIT_S:
    time.sleep(0.2)
    s = connect("127.0.0.%d" % (2 + probes % 3))
    s.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 3145728\r\n\r\n" + b" " * MiB)
    with attackers_lock:
        attackers.append(s)
    probes += 1
shed0 = metric('tpu_webhook_http_shed_total{reason="slow_body"}')
check(shed0 > 0, "the budget never ran short: no slow body shed (%d) after %d probes"
      % (shed0, probes))
while rounds[0] < 2 and time.monotonic() - t0 < WAIT_S:
    time.sleep(0.1)
print("attack: %d slow bodies sent, %d probes, RSS +%d kB, %d shed"
      % (len(SIZES), probes, rss_kb() - rss0, shed0),
      flush=True)

# The API server.
statuses = {}
errors = []
lock = threading.Lock()


def api_server_client():
    s = None
    for _ in range(6):
        try:
            if s is None:
                s = connect("127.0.0.1")
            s.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(ORDINARY) + ORDINARY)
            st, answer = servelib.read_response(s)
        except OSError as e:
            with lock:
                errors.append(repr(e))
            s = None
            continue
        with lock:
            statuses[st] = statuses.get(st, 0) + 1
            if st != 200 and len(errors) < 5:
                errors.append("%d %r" % (st, answer[:200]))
    if s is not None:
        s.close()


clients = [threading.Thread(target=api_server_client) for _ in range(50)]
for c in clients:
    c.start()
for c in clients:
    c.join()
print("ordinary reviews beside the attack: %r, errors %r" % (statuses, errors[:3]))
check(statuses == {200: 300} and not errors,
      "50 x 6 ordinary reviews: answers %r, errors %r" % (statuses, errors[:5]))
shed = metric('tpu_webhook_http_shed_total{reason="slow_body"}')
print("slow bodies shed: %d" % shed)
check("\"event\":\"connection_shed\"" in open(LOG, errors="replace").read(),
      "no connection_shed log line")

stop.set()
trickler.join()
for s in attackers:
    s.close()
check(server.poll() is None, "server exited")
servelib.stop_server(server)
servelib.finish(LOG, WORK)
