#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A TLS static file server for tests/egress/run.sh: a git repository over
# git's "dumb" HTTP protocol and a PEP 503 simple index, from one directory.
#   file_server.py ADDRESS PORT CERT KEY DIR
import functools
import http.server
import ssl
import sys

addr, port, cert, key, root = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]


class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *a):
        sys.stdout.write("GET %s\n" % self.path)
        sys.stdout.flush()


srv = http.server.ThreadingHTTPServer((addr, port), functools.partial(H, directory=root))
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
