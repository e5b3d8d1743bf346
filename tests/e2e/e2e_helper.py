# SPDX-License-Identifier: BSD-3-Clause
"""Small network helpers for tests/e2e/run.sh (python3 standard library only).

  sink SOCKET OUT        syslog sink: a datagram socket at SOCKET; each message
                         is appended to OUT as one line (runs until killed)
  listen PORTFILE LOG    a host service on 127.0.0.1: writes its port to
                         PORTFILE, appends one line to LOG per connection it
                         accepts, sends "HELLO" and closes
  freeport               print a free 127.0.0.1 TCP port
  probe PORT             connect to 127.0.0.1:PORT, print what came back:
                         "data:<text>", "eof", "refused" or "timeout"
  socks PORT DSTPORT     SOCKS5 CONNECT to 127.0.0.1:DSTPORT through the proxy
                         at 127.0.0.1:PORT; print "ok:<first data>",
                         "socks-reply:<code>", "eof" or "refused"
"""
import os
import socket
import sys


def sink(path, out):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    os.chmod(path, 0o666)
    with open(out, "a", buffering=1) as f:
        while True:
            msg = s.recv(8192).decode("utf-8", "replace").replace("\n", " ")
            f.write(msg + "\n")


def listen(portfile, log):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    with open(log, "a", buffering=1) as f:
        while True:
            c, addr = s.accept()
            f.write("connection from %s:%d\n" % addr)
            try:
                c.sendall(b"HELLO\n")
            except OSError:
                pass
            c.close()


def freeport():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
    s.close()


def _read(c):
    try:
        d = c.recv(64)
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return "error:%s" % e.strerror
    return ("data:" + d.decode("utf-8", "replace").strip()) if d else "eof"


def probe(port):
    c = socket.socket()
    c.settimeout(5)
    try:
        c.connect(("127.0.0.1", int(port)))
    except ConnectionRefusedError:
        print("refused")
        return
    except socket.timeout:
        print("timeout")
        return
    print(_read(c))


def socks(port, dst):
    c = socket.socket()
    c.settimeout(5)
    try:
        c.connect(("127.0.0.1", int(port)))
    except ConnectionRefusedError:
        print("refused")
        return
    try:
        c.sendall(b"\x05\x01\x00")
        if len(c.recv(2)) != 2:
            print("eof")
            return
        c.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") +
                  int(dst).to_bytes(2, "big"))
        rep = c.recv(10)
    except (OSError, socket.timeout):
        print("eof")
        return
    if len(rep) < 2:
        print("eof")
    elif rep[1] != 0:
        print("socks-reply:%d" % rep[1])
    else:
        print("ok:" + _read(c))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"sink": sink, "listen": listen, "freeport": freeport, "probe": probe,
     "socks": socks}[cmd](*args)
