#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A TCP service whose server speaks first, for tests/egress/run.sh: sends
# "220 NAME", then answers the client's first line with "250 " and that
# line, and closes.
#   banner_server.py ADDRESS PORT [NAME (default sbx-banner)]
import socket
import sys
import threading

addr, port = sys.argv[1], int(sys.argv[2])
name = (sys.argv[3] if len(sys.argv) > 3 else "sbx-banner").encode()
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if ":" in addr:
    # "::" takes IPv4 too (mapped), as a service bound to all addresses does.
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind((addr, port))
s.listen(64)
print("ready", flush=True)


def serve(c):
    try:
        c.settimeout(30)
        c.sendall(b"220 " + name + b"\r\n")
        line = c.makefile("rb").readline().strip()
        c.sendall(b"250 " + line + b"\r\n")
    except OSError:
        pass
    c.close()


while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
