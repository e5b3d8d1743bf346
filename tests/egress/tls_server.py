#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A TLS server for tests/egress/run.sh: answers every GET with "ok PORT".
#   tls_server.py PORT CERT KEY [ADDRESS (default 127.0.0.1)]
import http.server
import ssl
import sys

port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
addr = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("ok %d" % port).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = http.server.ThreadingHTTPServer((addr, port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
