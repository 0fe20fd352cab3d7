#!/usr/bin/env python3
"""sigterm_keepalive.py: no kept-alive request is lost around SIGTERM.

Usage: sigterm_keepalive.py BINARY

Clients on kept-alive TLS connections post reviews to `BINARY serve` with a
random pause between requests (so that some connections are idle when the
signal comes) and go on for two seconds after the server has exited. Like
Go's HTTP client, a client that sees its connection closed before it writes
reconnects. For --shutdown-delay 0 and 1s it prints the figures and fails
when a request was written and never answered ("lost"), when the server's
shutdown line does not count accepted = answered + aborted, or when the
clients got another number of answers than the server says it sent.
"""
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time

import servelib

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
WORK = tempfile.mkdtemp(prefix="wh-sigterm-")
BODY = open(os.path.join(HERE, "data", "review-pod.json"), "rb").read()
REQ = (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY
CLIENTS, THINK_S, RUN_S = 12, 0.15, 2.0

CTX = servelib.make_certs(BIN, WORK)


def read_answer(s):
    """The header block of one whole answer, or None when the connection
    closed first."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(65536)
        if not b:
            return None
        buf += b
    head, _, rest = buf.partition(b"\r\n\r\n")
    n = int(re.search(rb"\r\ncontent-length: *(\d+)", head, re.I).group(1))
    while len(rest) < n:
        b = s.recv(65536)
        if not b:
            return None
        rest += b
    return head


def closed_by_peer(s):
    """True when the server has closed the idle connection (readable at
    end of stream), as Go's transport notices before reusing one."""
    readable, _, _ = select.select([s], [], [], 0)
    if not readable:
        return False
    try:
        return s.recv(1) == b""
    except (OSError, ssl.SSLError):
        return True


def run(delay):
    srv, port, log_path = servelib.start_server(
        BIN, WORK, ["--shutdown-delay=%dms" % int(delay * 1000), "--shutdown-timeout=5s"])
    counts = {"answered": 0, "lost": 0, "closed before the write": 0, "refused": 0}
    lock = threading.Lock()
    stop = threading.Event()

    def add(k):
        with lock:
            counts[k] += 1

    def client():
        s = None
        while not stop.is_set():
            if s is None:
                try:
                    s = CTX.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
                except OSError:
                    add("refused")
                    time.sleep(0.02)
                    continue
            if closed_by_peer(s):
                add("closed before the write")
                s.close()
                s = None
                continue
            try:
                s.sendall(REQ)
                head = read_answer(s)
            except (OSError, ssl.SSLError):
                head = None
            if head is None:
                add("lost")
                s.close()
                s = None
                continue
            add("answered")
            if re.search(rb"\r\nconnection: *close", head, re.I):
                s.close()
                s = None
            time.sleep(random.random() * THINK_S)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(RUN_S)
    srv.terminate()
    rc = srv.wait(30)
    time.sleep(2)
    stop.set()
    for t in threads:
        t.join()
    line = [json.loads(x) for x in open(log_path) if '"event":"shutdown"' in x]
    sd = line[-1] if line else {}
    print("shutdown-delay %.1fs: clients %s; server accepted %s answered %s aborted %s; exit %d"
          % (delay, counts, sd.get("accepted"), sd.get("answered"), sd.get("aborted"), rc),
          flush=True)
    problems = []
    if rc != 0:
        # A negative status is a signal (SIGABRT from an assert, glibc's
        # heap checks or a sanitizer): name it and show what the server said.
        what = ("killed by %s" % signal.Signals(-rc).name if rc < 0 else "exit status %d" % rc)
        tail = open(log_path, errors="replace").read().splitlines()[-60:]
        problems.append("server %s; the end of its log:\n  %s" % (what, "\n  ".join(tail)))
    if counts["lost"]:
        problems.append("%d requests written and never answered" % counts["lost"])
    if not sd or sd["accepted"] != sd["answered"] + sd["aborted"]:
        problems.append("shutdown line does not add up: %r" % sd)
    elif sd["answered"] != counts["answered"]:
        problems.append("clients got %d answers, the server sent %d"
                        % (counts["answered"], sd["answered"]))
    if counts["answered"] < 20:
        problems.append("only %d answers: the load did not run" % counts["answered"])
    return problems


failures = run(0.0) + run(1.0)
shutil.rmtree(WORK, ignore_errors=True)
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
