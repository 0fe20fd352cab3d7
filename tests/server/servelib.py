"""servelib.py: what the Python server tests share: certificates made by
`BINARY certs`, and `BINARY serve` started on 127.0.0.1, port 0."""
import os
import re
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
