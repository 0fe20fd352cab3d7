#!/usr/bin/env python3
"""idle_slots.py: idle connections from two addresses cannot take every slot.

Usage: idle_slots.py BINARY FIXTURES

The shape of issue 35's idle-connection attack, scaled to
--max-connections=256 (two request threads of 128 slots each): 127.0.0.2
and 127.0.0.3 each hold 176 TCP connections that never send a byte (just
under the per-client limit, 3/4 of the slots), and reopen each one as the
server cuts it: 352 connections against 256 slots. --header-timeout and
--idle-timeout are 120 s, so before the server shed idle connections the
attackers held every slot for two minutes at a time and the API server's
connections waited in the listen queue behind them: every review below
timed out.

Waited for, not slept on: the attack fills the slots (the open-connections
gauge reaches the point where slots run short, 240) and the server has
turned the table over twice (tpu_webhook_http_shed_total{reason="idle"}
>= 512: the attackers reopen as fast as they are cut). Then 127.0.0.1 plays
the API server: 50 clients at once, each sending 6 ordinary reviews, each on
a new connection. Every one must be answered 200 (a socket timeout of 60 s:
a client that waits for the attackers' 120 s times out), and the attack
must have gone on meanwhile (more idle connections shed). The verdict does
not depend on timing: each review is one request, answered or not; the
latencies are printed, not judged. Exit 0 = pass.
"""
import errno
import json
import os
import re
import selectors
import socket
import sys
import tempfile
import threading
import time

import servelib
from servelib import check

BIN, FIXTURES = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="wh-idle-slots-")
SLOTS = 256
SHORT_AT = SLOTS - SLOTS // 16  # WH_SRV_IDLE_HEADROOM_DIV (server_conn.h)
PER_ATTACKER = 176
CTX = servelib.make_certs(BIN, WORK)
server, PORT, LOG = servelib.start_server(
    BIN, WORK, ["--max-connections=%d" % SLOTS, "--header-timeout=120s", "--idle-timeout=120s"])
WAIT_S = 90
CLIENT_TIMEOUT_S = 60
stop = threading.Event()


def exchange(request):
    """(status, body, seconds) of one request on a new connection from
    127.0.0.1, the API server's address."""
    t0 = time.monotonic()
    s = servelib.tls_connect(CTX, PORT, "127.0.0.1", CLIENT_TIMEOUT_S)
    try:
        s.sendall(request)
        status, body = servelib.read_response(s)
    finally:
        s.close()
    return status, body, time.monotonic() - t0


def metric(name_labels):
    """The value of a series of /metrics, asked from the API server's
    address (so it waits behind the attack like a review): -1 when it is
    missing; the exit, failed, when the server does not answer."""
    try:
        status, body, _ = exchange(
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    except OSError as e:
        servelib.fail("GET /metrics beside the attack: %r" % e)
        stop.set()
        server.kill()
        servelib.finish(LOG, WORK)
    return servelib.series(body).get(name_labels, -1) if status == 200 else -1


SHED = 'tpu_webhook_http_shed_total{reason="idle"}'
OPEN = "tpu_webhook_http_open_connections"


class Attacker(threading.Thread):
    """PER_ATTACKER TCP connections from source that never send a byte,
    each reopened as soon as the server closes it."""

    def __init__(self, source):
        super().__init__(daemon=True)
        self.source = source
        self.sel = selectors.DefaultSelector()
        self.reopened = 0

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((self.source, 0))
        err = s.connect_ex(("127.0.0.1", PORT))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            return False
        self.sel.register(s, selectors.EVENT_READ)
        return True

    def run(self):
        missing = 0
        for _ in range(PER_ATTACKER):
            missing += not self.open_one()
        while not stop.is_set():
            for key, _ in self.sel.select(0.2):
                s = key.fileobj
                try:
                    if s.recv(4096):
                        continue  # nothing is ever sent to a silent client; ignore it
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                self.sel.unregister(s)
                s.close()
                missing += 1
            while missing and not stop.is_set() and self.open_one():
                missing -= 1
                self.reopened += 1
            if missing:
                time.sleep(0.05)  # out of local ports or descriptors: try again
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


attackers = [Attacker("127.0.0.2"), Attacker("127.0.0.3")]
for a in attackers:
    a.start()

# Waited for: the slots ran short and the table turned over twice.
t0 = time.monotonic()
opened = shed0 = -1
while time.monotonic() - t0 < WAIT_S:
    opened, shed0 = metric(OPEN), metric(SHED)
    if opened >= SHORT_AT and shed0 >= 2 * SLOTS:
        break
    time.sleep(0.2)
check(opened >= SHORT_AT and shed0 >= 2 * SLOTS,
      "the attack never filled the slots: %d open (short at %d), %d idle shed" %
      (opened, SHORT_AT, shed0))
reopened0 = sum(a.reopened for a in attackers)
print("attack: %d connections open, %d idle shed, %d reopened after %.1f s"
      % (opened, shed0, reopened0, time.monotonic() - t0), flush=True)

# The API server: 50 clients at once, 6 ordinary reviews each, each review
# on a new connection.
review = json.load(open(os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")))
ORDINARY = json.dumps(review).encode()
REQUEST = (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(ORDINARY) + ORDINARY)
statuses = {}
errors = []
seconds = []
lock = threading.Lock()


def api_server_client():
    for _ in range(6):
        try:
            st, answer, took = exchange(REQUEST)
        except OSError as e:
            with lock:
                errors.append(repr(e))
            continue
        with lock:
            statuses[st] = statuses.get(st, 0) + 1
            seconds.append(took)
            if st != 200 and len(errors) < 5:
                errors.append("%d %r" % (st, answer[:200]))


clients = [threading.Thread(target=api_server_client) for _ in range(50)]
for c in clients:
    c.start()
for c in clients:
    c.join()
seconds.sort()
print("ordinary reviews beside the attack: %r, errors %r; seconds median %.2f, max %.2f"
      % (statuses, errors[:3], seconds[len(seconds) // 2] if seconds else -1,
         seconds[-1] if seconds else -1), flush=True)
check(statuses == {200: 300} and not errors,
      "50 x 6 ordinary reviews: answers %r, errors %r" % (statuses, errors[:5]))
shed1 = metric(SHED)
reopened1 = sum(a.reopened for a in attackers)
print("during the reviews: %d more idle shed, %d more reopened" % (shed1 - shed0,
                                                                    reopened1 - reopened0))
check(shed1 > shed0 and reopened1 > reopened0,
      "the attack stopped during the reviews (idle shed %d -> %d, reopened %d -> %d)"
      % (shed0, shed1, reopened0, reopened1))
log = open(LOG, errors="replace").read()
check(re.search(r'"event":"connection_shed".*"reason":"connection slots ran short', log),
      "no connection_shed log line for idle connections")

stop.set()
for a in attackers:
    a.join()
check(server.poll() is None, "server exited")
servelib.stop_server(server)
servelib.finish(LOG, WORK)
