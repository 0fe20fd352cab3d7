#!/usr/bin/env python3
"""Every route the server serves has a request in the HTTP fuzz corpus.

The routes are read from their one table, src/shell/sys/routes.c (the rows
ADMISSION("/path", ...) and GET("/path")); each must be the target of the
request line of some file in tests/fuzz/http-corpus, so that fuzz_http
starts from every route (fuzz_http.c judges routing against the same table).
Usage: http_routes.py ROUTES_C CORPUS_DIR
"""
import os
import re
import sys


def main():
    routes_c, corpus = sys.argv[1], sys.argv[2]
    with open(routes_c, encoding="utf-8") as f:
        paths = re.findall(r'=\s*(?:ADMISSION|GET)\("([^"]+)"', f.read())
    if len(paths) < 5:
        sys.exit(f"http_routes: read only {paths} from {routes_c}: has the table's form changed?")
    targets = set()
    for name in os.listdir(corpus):
        with open(os.path.join(corpus, name), "rb") as f:
            line = f.readline().split(b" ")
        if len(line) >= 2:
            targets.add(line[1].split(b"?")[0].decode("latin-1"))
    missing = [p for p in paths if p not in targets]
    if missing:
        sys.exit(f"http_routes: no request for {', '.join(missing)} in {corpus}: add one "
                 "(printf 'GET /path HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' > FILE, named by its SHA-1)")
    print(f"http_routes: {len(paths)} routes, each with a corpus request")


if __name__ == "__main__":
    main()
