#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A client of agent-sandbox-egressd over its unix socket (or of a session's
# bridge over TCP, SOCKET as HOST:PORT), for tests/egress/run.sh:
#   client.py [OPTIONS] SOCKET connect HOST:PORT [SNI|-] [CAFILE]   tunnel, then TLS and GET /
#   client.py [OPTIONS] SOCKET raw TEXT                             send TEXT, print the reply's status line
#   client.py [OPTIONS] SOCKET banner HOST:PORT LINE|-              tunnel, read the server's first
#                                                                   line, send LINE, read the answer
#   client.py [OPTIONS] SOCKET hello HOST:PORT SNI|- ech|plain      tunnel, send a ClientHello of our
#                                                                   own (with an encrypted_client_hello
#                                                                   extension, or without)
# OPTIONS: --socks5 (the tunnel by SOCKS5, not HTTP CONNECT), --wait S (sleep
# S seconds between the tunnel and the first byte sent through it).
# Prints "status=CODE" from the proxy (SOCKS5: "status=socks" and the reply
# code), then "body=..." once through, "banner=... answer=..." or, for
# hello, "answer=HEX" (the first bytes back) or "answer=closed".
import socket
import ssl
import struct
import sys
import time


def dial(where):
    if where.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(where)
        return s
    host, port = where.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def tunnel(s, target, socks5):
    """The tunnel's status: "200" (or "socks0") when open."""
    if not socks5:
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(1)
            if not d:
                break
            head += d
        return head.split(b" ")[1].decode() if head else "none"
    host, port = target.rsplit(":", 1)
    host = host.strip("[]")
    s.sendall(b"\x05\x01\x00")
    if s.recv(2) != b"\x05\x00":
        return "socks-noauth"
    try:
        addr = b"\x01" + socket.inet_pton(socket.AF_INET, host)
    except OSError:
        try:
            addr = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
        except OSError:
            addr = b"\x03" + bytes([len(host)]) + host.encode()
    s.sendall(b"\x05\x01\x00" + addr + struct.pack(">H", int(port)))
    r = b""
    while len(r) < 10:
        d = s.recv(10 - len(r))
        if not d:
            break
        r += d
    return "socks%d" % r[1] if len(r) >= 2 else "socks-none"


def client_hello(sni, ech):
    """A TLS 1.3 ClientHello: X25519 key share, supported_versions, the
    server_name when given, and an outer encrypted_client_hello (RFC 9849)
    when ech."""
    def ext(t, body):
        return struct.pack(">HH", t, len(body)) + body
    exts = ext(43, b"\x02\x03\x04")                         # supported_versions
    exts += ext(10, b"\x00\x02\x00\x1d")                    # supported_groups
    exts += ext(13, b"\x00\x02\x08\x04")                    # signature_algorithms
    exts += ext(51, b"\x00\x24\x00\x1d\x00\x20" + bytes(range(32)))  # key_share
    if sni:
        name = sni.encode()
        exts += ext(0, struct.pack(">HBH", len(name) + 3, 0, len(name)) + name)
    if ech:
        exts += ext(0xfe0d, b"\x00" + b"\x00\x01\x00\x01" + b"\x2a" +
                    struct.pack(">H", 32) + b"\x5e" * 32 + struct.pack(">H", 64) + b"\xc3" * 64)
    body = b"\x03\x03" + b"\x11" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack(">H", len(exts)) + exts
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs


def main():
    args = sys.argv[1:]
    socks5, wait = False, 0.0
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--socks5":
            socks5 = True
        elif opt == "--wait":
            wait = float(args.pop(0))
    path, mode = args[0], args[1]
    s = dial(path)
    if mode == "raw":
        s.sendall(args[2].encode().decode("unicode_escape").encode("latin-1"))
        print("status=" + s.recv(4096).decode("latin-1").split("\r\n")[0].split(" ")[1])
        return
    target = args[2]
    code = tunnel(s, target, socks5)
    print("status=" + code, flush=True)
    if code not in ("200", "socks0"):
        return
    if mode == "banner":
        f = s.makefile("rb")
        banner = "none"
        try:
            banner = f.readline().decode("latin-1").strip()
            time.sleep(wait)
            if args[3] == "-":     # read the banner, say nothing, end
                print("banner=%s answer=none" % banner)
                return
            s.sendall(args[3].encode() + b"\r\n")
            answer = f.readline().decode("latin-1").strip() or "closed"
        except OSError as e:
            answer = "error " + type(e).__name__
        print("banner=%s answer=%s" % (banner, answer))
        return
    time.sleep(wait)
    if mode == "hello":
        sni = args[3] if args[3] != "-" else None
        try:
            s.sendall(client_hello(sni, args[4] == "ech"))
            d = s.recv(64)
            print("answer=" + (d.hex() if d else "closed"))
        except OSError as e:
            print("answer=error " + type(e).__name__)
        return
    sni = args[3] if len(args) > 3 and args[3] != "-" else None
    cafile = args[4] if len(args) > 4 else None
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
        print("tls=failed " + type(e).__name__ + " " + str(getattr(e, "reason", "") or ""))


main()
