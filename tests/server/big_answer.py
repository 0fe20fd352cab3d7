#!/usr/bin/env python3
"""big_answer.py: large answers to clients that read slowly.

Usage: big_answer.py BINARY FIXTURES_DIR

The answer to a 256-host TPU7x review is about 350 KB: many TLS records,
which the server writes in bursts while the socket takes them
(src/shell/http/mhd/mhderr.c, send_burst). Clients with a 4 KiB receive buffer
pipeline sixteen requests (5.6 MB of answers, more than the 4 MiB a Linux
socket buffers at most by default), wait, then read a few KB at a time: the
server's socket fills and its bursts stop half-way (GnuTLS keeps the record
that would block and sends it on the next call; strace shows the EAGAINs).
Each client must get exactly the bytes a fast client gets, and the server
must keep answering /healthz meanwhile.

Then the same with answers of 200 whose body holds "HTTP/1.1 400 " at every
16 KiB record boundary (a review uid the answer echoes, as a RayCluster's
group name is echoed in a /validate warning): a write resumed after a
partial one starts with that text, and the send interposer, which replaces
libmicrohttpd's own error answers, must know from state that these bytes are
the webhook's (wh_mhderr_mark). Every answer arrives whole, unchanged and in
order (each pipelined request has its own uid).
Exit 0 = pass.
"""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

import servelib

BIN, FIXTURES = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="wh-big-answer-")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def review_256():
    """The two-container TPU7x review at 8x8x16 (1,024 chips, 256 hosts), for the
    last host, as bench/tls_vs_nginx.sh builds it."""
    path = os.path.join(FIXTURES, "reviews", "tpu7x-2x2x2-two-containers.json")
    text = open(path).read()
    text = text.replace('"2x2x2"', '"8x8x16"')
    text = text.replace('"ray.io/replica-host-index": "1"', '"ray.io/replica-host-index": "255"')
    assert '"8x8x16"' in text and '"255"' in text, "fixture changed: update big_answer.py"
    return text.encode()


def request(body):
    return (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


def connect(rcvbuf=None):
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    raw.settimeout(20)
    raw.connect(("127.0.0.1", PORT))
    return CTX.wrap_socket(raw)


def raw_answer(body):
    """One answer on a fresh connection, read whole: (header block length
    with its blank line, body)."""
    s = connect()
    s.sendall(request(body))
    buf = b""
    while True:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            head = buf[:head_end].decode("latin-1")
            length = [int(line.split(":", 1)[1]) for line in head.split("\r\n")[1:]
                      if line.lower().startswith("content-length:")][0]
            if len(buf) >= head_end + 4 + length:
                s.close()
                return head_end + 4, buf[head_end + 4:head_end + 4 + length]
        data = s.recv(1 << 20)
        if not data:
            raise ConnectionError("closed before a whole answer")
        buf += data


def read_answers(s, n, chunk, pause):
    """n HTTP answers from s, read chunk bytes at a time with a pause between
    reads; [(status, body)]."""
    buf, out = b"", []
    while len(out) < n:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            head = buf[:head_end].decode("latin-1")
            length = [int(line.split(":", 1)[1]) for line in head.split("\r\n")[1:]
                      if line.lower().startswith("content-length:")]
            if len(length) == 1 and len(buf) >= head_end + 4 + length[0]:
                status = int(head.split(" ", 2)[1])
                out.append((status, buf[head_end + 4:head_end + 4 + length[0]]))
                buf = buf[head_end + 4 + length[0]:]
                continue
        data = s.recv(chunk)
        if not data:
            raise ConnectionError("closed after %d answers, %d bytes pending" % (len(out), len(buf)))
        buf += data
        if pause:
            time.sleep(pause)
    return out


PIPELINED = 16


def slow_client(i, body, want, errors):
    try:
        s = connect(rcvbuf=4096)
        s.sendall(request(body) * PIPELINED)
        time.sleep(0.5)  # the server's socket buffer fills up meanwhile
        got = read_answers(s, PIPELINED, 4096, 0.0005)
        s.close()
        for k, (status, answer) in enumerate(got):
            if status != 200 or answer != want:
                errors.append("slow client %d, answer %d: status %d, %d bytes (want 200, %d "
                              "bytes, identical)" % (i, k, status, len(answer), len(want)))
    except Exception as e:  # reported, not raised: the other clients go on
        errors.append("slow client %d: %r" % (i, e))


RECORD = 16384
TRAP = b"HTTP/1.1 400 "
UID_LEN = 22 * RECORD


def echo_review(uid):
    path = os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")
    review = json.load(open(path))
    review["request"]["uid"] = uid
    return json.dumps(review).encode()


def trap_uid(tag, body_at, head_len):
    """A uid of UID_LEN bytes that puts TRAP at every record boundary of the
    answer, counted from the body's start and from the header's (whether the
    header goes in a write of its own or not); tag (fixed length) at its end
    tells the answers apart."""
    uid = bytearray(b"u" * UID_LEN)
    for k in range(1, (body_at + UID_LEN) // RECORD + 1):
        for off in (k * RECORD, k * RECORD - head_len):
            i = off - body_at
            if 0 <= i and i + len(TRAP) <= UID_LEN - len(tag):
                uid[i:i + len(TRAP)] = TRAP
    uid[UID_LEN - len(tag):] = tag
    return uid.decode()


def echo_client(i, reviews, wants, errors):
    try:
        s = connect(rcvbuf=4096)
        s.sendall(b"".join(request(r) for r in reviews))
        time.sleep(0.5)
        got = read_answers(s, len(reviews), 4096, 0.0005)
        s.close()
        for k, (status, answer) in enumerate(got):
            if status != 200 or answer != wants[k]:
                errors.append("echo client %d, answer %d: status %d, %d bytes, %s (want 200, "
                              "%d bytes, identical)" % (i, k, status, len(answer),
                                                       "its own" if answer == wants[k] else
                                                       "not the answer to request %d" % k,
                                                       len(wants[k])))
    except Exception as e:
        errors.append("echo client %d: %r" % (i, e))


def echo_phase():
    try:
        echo_answers()
    except (OSError, ValueError, KeyError) as e:
        fail("echo: %r" % e)


def echo_answers():
    head_len, probe = raw_answer(echo_review("u" * UID_LEN))
    body_at = probe.find(b'"uid":"') + len(b'"uid":"')
    reviews, wants = [], []
    for k in range(PIPELINED):
        review = echo_review(trap_uid(b"-%04d" % k, body_at, head_len))
        h, want = raw_answer(review)
        if h != head_len or json.loads(want)["response"]["uid"] != json.loads(review)[
                "request"]["uid"]:
            fail("echo: answer %d does not echo its uid where the probe did" % k)
            return
        reviews.append(review)
        wants.append(want)
    boundaries = [off for off in range(RECORD, len(wants[0]) - len(TRAP), RECORD)]
    missing = [off for off in boundaries if wants[0][off:off + len(TRAP)] != TRAP]
    if missing or len(boundaries) < 20:
        fail("echo: %d record boundaries of %d without the text (test out of date)" %
             (len(missing), len(boundaries)))
        return
    errors = []
    clients = [threading.Thread(target=echo_client, args=(i, reviews, wants, errors))
               for i in range(4)]
    for t in clients:
        t.start()
    for t in clients:
        t.join()
    for e in errors:
        fail(e)
    print("big_answer: %d-byte answers with %r at each of %d record boundaries; 4 slow clients x "
          "%d pipelined requests" % (len(wants[0]), TRAP.decode(), len(boundaries), PIPELINED))


CTX = servelib.make_certs(BIN, WORK)
server, PORT, LOG = servelib.start_server(BIN, WORK, [])
try:
    body = review_256()
    fast = connect()
    fast.sendall(request(body))
    [(status, want)] = read_answers(fast, 1, 1 << 20, 0)
    fast.close()
    answer = json.loads(want)
    if status != 200 or not answer["response"]["allowed"] or len(want) < 300000:
        fail("fast client: status %d, %d bytes, allowed %s: want a 200 with a patch of about "
             "350 KB" % (status, len(want), answer["response"].get("allowed")))
    errors = []
    clients = [threading.Thread(target=slow_client, args=(i, body, want, errors))
               for i in range(6)]
    for t in clients:
        t.start()
    healthy = 0
    while any(t.is_alive() for t in clients):
        h = connect()
        h.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        [(status, _)] = read_answers(h, 1, 65536, 0)
        h.close()
        healthy += status == 200
        time.sleep(0.05)
    for t in clients:
        t.join()
    for e in errors:
        fail(e)
    if not healthy:
        fail("no /healthz answered while the slow clients read")
    print("big_answer: %d-byte answer; 6 slow clients x %d pipelined requests; %d /healthz "
          "answered meanwhile" % (len(want), PIPELINED, healthy))
    echo_phase()
finally:
    server.terminate()
    server.wait(timeout=30)
    if failures:
        sys.stderr.write(open(LOG, errors="replace").read()[-4000:])
    shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failures else 0)
