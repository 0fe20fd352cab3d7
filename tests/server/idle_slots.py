#!/usr/bin/env python3
"""idle_slots.py: idle connections from two addresses cannot take every slot,
and the API server's pooled keep-alive connection is never the one cut.

Usage: idle_slots.py BINARY FIXTURES [attack|few]

attack (server.idle_slots): the shape of issue 35's idle-connection attack,
scaled to --max-connections=256 (two request threads of 128 slots each):
127.0.0.2 and 127.0.0.3 each hold 176 TCP connections that never send a
byte (just under the per-client limit, 3/4 of the slots), and reopen each
one as the server cuts it: 352 connections against 256 slots.
--header-timeout and --idle-timeout are 120 s, so before the server shed
idle connections the attackers held every slot for two minutes at a time
and the API server's connections waited in the listen queue behind them:
every review below timed out.

Waited for, not slept on: the attack fills the slots (the open-connections
gauge reaches the point where slots run short, 240) and the server has
turned the table over twice (tpu_webhook_http_shed_total{reason="idle"}
>= 512: the attackers reopen as fast as they are cut). Then 127.0.0.1 plays
the API server: 50 clients at once, each sending 6 ordinary reviews, each on
a new connection; and beside them one kept-alive connection, as the API
server pools them, sends 5 reviews, pausing after each until the server
has cut 512 more idle connections (every attacker's connection that was
open when it paused, and more: it is then idle longer than any of them,
the one a longest-idle-first rule cut first). Every review must be
answered 200 (a socket timeout of 60 s: a client that waits for the
attackers' 120 s times out), the kept-alive connection must never be cut
(0 errors, 0 reconnects: it has completed requests, the attackers'
connections never have), and the attack must have gone on meanwhile. The
verdict does not depend on timing: each review is one request, answered
or not; the latencies are printed, not judged.

few (server.idle_slots_few): --max-connections=2 with --threads=4, where
the shed threshold once made every connection idle a second a victim,
slots short or not. A kept-alive connection idle 3 s is not cut (an
absence: the pause bounds how long it is looked for, not the verdict of
what is seen); a silent connection beside it fills the slots and is cut
(waited for: its end-of-stream), and the kept-alive one still answers:
shed_total{reason="idle"} 1. Exit 0 = pass.
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
CASE = sys.argv[3] if len(sys.argv) > 3 else "attack"
WORK = tempfile.mkdtemp(prefix="wh-idle-slots-")
SLOTS = 256
SHORT_AT = SLOTS - SLOTS // 16  # WH_SRV_IDLE_HEADROOM_DIV (server_conn.h)
PER_ATTACKER = 176
CTX = servelib.make_certs(BIN, WORK)
if CASE == "few":
    SERVER_ARGS = ["--max-connections=2", "--threads=4", "--header-timeout=120s",
                   "--idle-timeout=120s"]
else:
    SERVER_ARGS = ["--max-connections=%d" % SLOTS, "--header-timeout=120s", "--idle-timeout=120s"]
server, PORT, LOG = servelib.start_server(BIN, WORK, SERVER_ARGS)
WAIT_S = 90
CLIENT_TIMEOUT_S = 60
stop = threading.Event()
review = json.load(open(os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")))
ORDINARY = json.dumps(review).encode()
REQUEST = (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(ORDINARY) + ORDINARY)
# The same review on a kept-alive connection, as the API server pools them.
KEPT_REQUEST = REQUEST.replace(b"Connection: close\r\n", b"")
METRICS = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


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


def closed_within(sock, seconds):
    """Whether the server closes sock (end-of-stream or a reset) within
    seconds; nothing is sent to it meanwhile."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


def few():
    """--max-connections=2, --threads=4 (see the module's docstring)."""
    kept = servelib.tls_connect(CTX, PORT, "127.0.0.1", CLIENT_TIMEOUT_S)
    kept.sendall(KEPT_REQUEST)
    st, _ = servelib.read_response(kept)
    check(st == 200, "the first review on the kept-alive connection: %d" % st)
    # More than the grace (1 s) and many ticks: an absence, looked for 3 s.
    check(not closed_within(kept, 3.0),
          "a kept-alive connection idle 3 s was cut with 1 of 2 slots free")
    kept.settimeout(CLIENT_TIMEOUT_S)
    kept.sendall(KEPT_REQUEST)
    st, _ = servelib.read_response(kept)
    check(st == 200, "the second review on the kept-alive connection: %d" % st)
    # A silent connection fills the slots; it has never been served, so it
    # is the one cut (waited for: its end-of-stream, bounded far over the
    # grace), never the served one beside it.
    # Another address: --max-connections-per-client is 3/4 of 2, 1.
    silent = socket.create_connection(("127.0.0.1", PORT), timeout=CLIENT_TIMEOUT_S,
                                      source_address=("127.0.0.2", 0))
    check(closed_within(silent, CLIENT_TIMEOUT_S), "the silent connection was never cut")
    silent.close()
    kept.sendall(METRICS)
    st, body = servelib.read_response(kept)
    got = servelib.series(body)
    check(st == 200 and got.get(SHED) == 1,
          "after the silent connection: /metrics %d on the kept-alive one, %s %r"
          % (st, SHED, got.get(SHED)))
    kept.close()
    print("few: the kept-alive connection served 3 requests, idle 3 s uncut; the silent one cut")
    servelib.stop_server(server)
    servelib.finish(LOG, WORK)


if CASE == "few":
    few()


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


kept_statuses = []
kept_errors = []
KEPT_ROUNDS = 5


def kept_alive_client():
    """The API server's pooled connection: KEPT_ROUNDS reviews on one
    connection, each followed by a pause until the server has cut
    2 * SLOTS more idle connections. A cut shows as an error on the next
    review; the connection is then opened again (counted)."""
    s = servelib.tls_connect(CTX, PORT, "127.0.0.1", CLIENT_TIMEOUT_S)
    for _ in range(KEPT_ROUNDS):
        try:
            s.sendall(KEPT_REQUEST)
            st, _ = servelib.read_response(s)
            kept_statuses.append(st)
        except OSError as e:
            kept_errors.append(repr(e))
            s.close()
            s = servelib.tls_connect(CTX, PORT, "127.0.0.1", CLIENT_TIMEOUT_S)
            continue
        start = metric(SHED)
        t0 = time.monotonic()
        while metric(SHED) < start + 2 * SLOTS and time.monotonic() - t0 < WAIT_S:
            time.sleep(0.2)
        check(metric(SHED) >= start + 2 * SLOTS,
              "the attack stopped while the kept-alive connection paused")
    s.close()


clients = [threading.Thread(target=api_server_client) for _ in range(50)]
clients.append(threading.Thread(target=kept_alive_client))
for c in clients:
    c.start()
for c in clients:
    c.join()
print("kept-alive connection beside the attack: %r, errors (reconnects) %r"
      % (kept_statuses, kept_errors), flush=True)
check(kept_statuses == [200] * KEPT_ROUNDS and not kept_errors,
      "the API server's kept-alive connection: answers %r, errors %r (it was cut)"
      % (kept_statuses, kept_errors))
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
