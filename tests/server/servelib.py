"""servelib.py: what the Python server tests share: certificates made by
`BINARY certs`, `BINARY serve` started on 127.0.0.1, port 0, TLS clients
from a chosen source address, and the failure list with the end of a test
(the server stopped, its exit status checked, the verdict)."""
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time


def make_certs(binary, work):
    """Certificates under work/certs; an SSL context that trusts their CA."""
    subprocess.run([binary, "certs", "--dir=" + work + "/certs"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctx = ssl.create_default_context(cafile=work + "/certs/ca.crt")
    ctx.check_hostname = False
    return ctx


def start_server(binary, work, extra):
    """`serve` with the certificates of make_certs and the extra flags, its
    stderr in work/server.log; (process, port, log path). Exits the test
    when the server does not log "listening" within 10 s."""
    log_path = os.path.join(work, "server.log")
    log = open(log_path, "wb")
    env = dict(os.environ)
    preload = env.pop("WH_TEST_SERVER_PRELOAD", "")
    if preload:  # a test shim for the server only (not for Python)
        env["LD_PRELOAD"] = preload
        # Under ASan the sanitizer's runtime need not be first.
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    proc = subprocess.Popen(
        [binary, "serve", "--bind-address=127.0.0.1:0", "--v=1", "--standalone", "--threads=2",
         "--tls-cert-file=" + work + "/certs/tls.crt",
         "--tls-private-key-file=" + work + "/certs/tls.key"] + extra,
        stdout=subprocess.DEVNULL, stderr=log, env=env)
    for _ in range(1000):
        m = re.search(rb'"event":"listening".*"port":(\d+)', open(log_path, "rb").read())
        if m:
            return proc, int(m.group(1)), log_path
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    sys.stderr.write(open(log_path, errors="replace").read())
    sys.exit("server did not start")


# The failures of the test that imports this module (one test a process).
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def tls_connect(ctx, port, source="127.0.0.1", timeout=10.0):
    """A TLS client of the server on 127.0.0.1:port from the loopback
    address source (the server counts clients by address)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                   source_address=(source, 0))
    return ctx.wrap_socket(raw)


def read_response(s):
    """(status, body) of one response on s (Content-Length framing, as
    the server sends); OSError when it closes first."""
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(65536)
        if not b:
            raise OSError("closed before the header block")
        data += b
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    n = int(m.group(1)) if m else 0
    while len(rest) < n:
        b = s.recv(65536)
        if not b:
            raise OSError("closed in the body")
        rest += b
    return status, rest[:n]


def series(metrics_text):
    """{series: value} of a /metrics answer (bytes), integers only: each
    line `name{labels} N`, comments left out."""
    out = {}
    for m in re.finditer(rb"(?m)^([a-z_][^ #\n]*) (\d+)$", metrics_text):
        out[m.group(1).decode()] = int(m.group(2))
    return out


def stop_server(server):
    """SIGTERM, then a failure unless it exits 0 within 15 s (killed then)."""
    server.terminate()
    try:
        rc = server.wait(15)
    except subprocess.TimeoutExpired:
        server.kill()
        rc = -1
    check(rc == 0, "exit status %s after SIGTERM" % rc)


def finish(log_path, work):
    """The end of a test: the server log's tail on failure, work removed,
    exit 1 when anything failed, else 0."""
    if failures:
        sys.stderr.write("--- server log (tail) ---\n")
        sys.stderr.write("".join(open(log_path, errors="replace").readlines()[-20:]))
    shutil.rmtree(work, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)
