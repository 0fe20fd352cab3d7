#!/usr/bin/env python3
"""tls_records.py: a small answer leaves as one TLS record (wh/tlsrec.h).

Usage: tls_records.py BINARY

Starts BINARY serve and talks TLS through memory BIOs over a plain TCP
socket, so that the records the server writes can be counted: for a /mutate
review, /healthz and an error Status, the whole answer (header and body)
must come in exactly one application-data record, on a connection kept
alive across several requests and on the first request of a connection. A
large answer (more than one record's worth) must still arrive whole.
Exit 0 = pass.
"""
import json
import os
import shutil
import socket
import ssl
import sys
import tempfile

import servelib

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="wh-tlsrec-")
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, flush=True)


class Conn:
    """TLS over a TCP socket through memory BIOs; counts the records of
    type application_data (23) the server sends."""

    def __init__(self, ctx, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out)
        self.raw = b""  # bytes read from the socket, not yet split into records
        self.records = 0
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.flush()
                self.pull()
        self.flush()

    def flush(self):
        data = self.out.read()
        if data:
            self.sock.sendall(data)

    def pull(self):
        """Read at least one whole record from the socket into the BIO."""
        while True:
            if len(self.raw) >= 5:
                n = 5 + int.from_bytes(self.raw[3:5], "big")
                if len(self.raw) >= n:
                    if self.raw[0] == 23:
                        self.records += 1
                    self.inc.write(self.raw[:n])
                    self.raw = self.raw[n:]
                    return
            b = self.sock.recv(65536)
            if not b:
                raise ConnectionError("closed by the server")
            self.raw += b

    def request(self, data):
        """Send one request; (records, response bytes) for the answer."""
        self.tls.write(data)
        self.flush()
        self.records = 0
        got = b""
        while True:
            try:
                got += self.tls.read(1 << 20)
            except ssl.SSLWantReadError:
                pass
            head, sep, body = got.partition(b"\r\n\r\n")
            if sep:
                n = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                             if line.lower().startswith(b"content-length:")))
                if len(body) >= n:
                    return self.records, got
            self.pull()


ctx = servelib.make_certs(BIN, WORK)
server, port, log = servelib.start_server(BIN, WORK, [])
try:
    review = json.load(open(os.path.join(HERE, "..", "fixtures", "reviews",
                                         "v6e-16-native-host1.json")))
    body = json.dumps(review).encode()
    mutate = (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    healthz = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    bad = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{x"

    # /healthz closes its connection (probes open one each time): one per
    # connection, then admissions kept alive, with a refused one among them.
    for i in range(3):
        c = Conn(ctx, port)
        n, resp = c.request(healthz)
        check(b" 200 " in resp.split(b"\r\n")[0] and n == 1,
              "healthz: %d records for %r" % (n, resp[:100]))
    c = Conn(ctx, port)
    for i in range(5):
        for name, req, status in (("mutate", mutate, b" 200 "), ("bad review", bad, b" 400 ")):
            n, resp = c.request(req)
            check(status in resp.split(b"\r\n")[0], "%s: %r" % (name, resp[:100]))
            check(n == 1, "%s (request %d on the connection): %d records for one answer"
                  % (name, i + 1, n))

    # A large answer: a 256-host TPU7x review answers with hundreds of KB.
    big = json.load(open(os.path.join(HERE, "..", "fixtures", "reviews",
                                      "tpu7x-2x2x2-two-containers.json")))
    text = json.dumps(big).replace('"2x2x2"', '"8x8x16"')
    n, resp = c.request(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(text) + text.encode())
    answer = json.loads(resp.partition(b"\r\n\r\n")[2])
    check(answer["response"]["allowed"] and len(resp) > 100000 and n > 1,
          "large answer: %d records, %d bytes, allowed=%r" % (n, len(resp),
                                                              answer["response"]["allowed"]))
    n, resp = c.request(mutate)
    check(n == 1, "mutate after a large answer: %d records" % n)
finally:
    server.terminate()
    server.wait(timeout=30)
    if failures or sys.exc_info()[0]:
        sys.stderr.write(open(log, errors="replace").read()[-3000:])
    shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failures else 0)
