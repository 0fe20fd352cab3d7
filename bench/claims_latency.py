#!/usr/bin/python3
"""/healthz and native /mutate latency while legacy claims wait (issue 22).

usage: bench/claims_latency.py build/tpu-webhook [SECONDS]

One `tpu-webhook serve` (default --threads) against tests/kube/fake_apiserver.py
on loopback. For each API server shape -- fast (no fault), slow (every Lease
POST 2.5 s late) and throttled (every Lease request 429 with Retry-After: 1)
-- 8 clients keep a legacy pod each in flight (a new one as soon as one is
answered) for SECONDS (default 10), while one kept-alive client alternates
GET /healthz and a native-index POST /mutate. Prints p50/p99/max of both, in
ms, and what the legacy pods got. Target (issue 22): p99 < 50 ms with the
slow API server. A benchmark: it prints figures, it asserts nothing.
"""
import http.client
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "kube"))
import test_replicas as tr  # noqa: E402  (its Env: certificates, fake API server, replicas)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def run(env, name, faults, seconds, native):
    env.control("faults", faults)
    port = env.replicas[0]["port"]
    stop = time.monotonic() + seconds
    legacy = {"allowed": 0, "denied": 0, "error": 0}
    lock = threading.Lock()

    def legacy_client(k):
        n = 0
        while time.monotonic() < stop:
            n += 1
            cluster = "%s-%d-%d" % (name, k, n)
            review = tr.owned(env.tmpl.replace("@CLUSTER@", cluster).replace("@GROUP@", "tpu"),
                              cluster)
            try:
                st, out = env.request(port, "POST", "/mutate", review, timeout=60)
                ids, _ = tr.admitted_ids(out) if st == 200 else (None, "")
                what = "error" if st != 200 else "allowed" if ids else "denied"
            except OSError:
                what = "error"
            with lock:
                legacy[what] += 1

    ts = [threading.Thread(target=legacy_client, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    c = http.client.HTTPSConnection("127.0.0.1", port, context=env.ctx, timeout=60)
    lat = {"/healthz": [], "/mutate": []}
    n = 0
    while time.monotonic() < stop:
        n += 1
        for path in ("/healthz", "/mutate"):
            body = native.replace("705ab4f5", "%08x" % n) if path == "/mutate" else None
            t0 = time.monotonic()
            c.request("GET" if body is None else "POST", path, body=body,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            lat[path].append((time.monotonic() - t0) * 1000)
    c.close()
    for t in ts:
        t.join()
    env.control("faults", {})
    for path, xs in lat.items():
        print("%-10s %-15s n=%5d p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms" % (
            name, path, len(xs), pct(xs, 0.5), pct(xs, 0.99), max(xs) if xs else float("nan")))
    print("%-10s legacy pods: %s" % (name, json.dumps(legacy)))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10
    env = tr.Env(sys.argv[1], replicas=1, threads=None)  # serve's default --threads
    try:
        env.wait_ready()
        with open(os.path.join(HERE, "..", "tests", "kube", "native-v6e-16.json")) as f:
            native = f.read().replace("@CLUSTER@", "bench").replace("@GROUP@", "tpu")
        run(env, "fast", {}, seconds, native)
        run(env, "slow", {"latency_ms": 2500, "only": "leases", "method": "POST"}, seconds,
            native)
        run(env, "throttled", {"error_rate": 1.0, "errors": ["429"], "only": "leases"}, seconds,
            native)
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
