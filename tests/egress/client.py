#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A client of agent-sandbox-egressd over its unix socket, for tests/egress/run.sh:
#   client.py SOCKET connect HOST:PORT [SNI|-] [CAFILE]   HTTP CONNECT, then TLS and GET /
#   client.py SOCKET raw TEXT                             send TEXT, print the reply's status line
# Prints "status=CODE" from the proxy, then "body=..." once through.
import socket
import ssl
import sys


def main():
    path, mode = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    if mode == "raw":
        s.sendall(sys.argv[3].encode().decode("unicode_escape").encode("latin-1"))
        print("status=" + s.recv(4096).decode("latin-1").split("\r\n")[0].split(" ")[1])
        return
    target = sys.argv[3]
    sni = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    cafile = sys.argv[5] if len(sys.argv) > 5 else None
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            break
        head += d
    code = head.split(b" ")[1].decode() if head else "none"
    print("status=" + code)
    if code != "200":
        return
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    if sni is None:
        ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET / HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            d = t.recv(4096)
            if not d:
                break
            data += d
        print("body=" + data.split(b"\r\n\r\n", 1)[-1].decode())
    except (ssl.SSLError, OSError) as e:
        print("tls=failed " + type(e).__name__)


main()
