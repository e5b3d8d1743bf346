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
  ulisten PATH LOG       like listen, on a unix stream socket at PATH (mode 0666)
  uprobe PATH            like probe, to the unix stream socket at PATH
  pty SECONDS CMD...     run CMD on a new pseudo-terminal (its controlling
                         terminal: login(1) wants one), print what it wrote
                         (CRs dropped), exit with its status; killed after
                         SECONDS (exit 124)
  report FILE            one line per fact of a JSON session report:
                         "level=", "min_level=", "floor_met=", "guarantees=",
                         "required=", then "feature NAME requested=.. achieved=..
                         verified=.. detail=.."
"""
import json
import os
import select
import signal
import socket
import sys
import time


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


def ulisten(path, log):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o666)
    s.listen(16)
    with open(log, "a", buffering=1) as f:
        while True:
            c, _ = s.accept()
            f.write("connection\n")
            try:
                c.sendall(b"HELLO\n")
            except OSError:
                pass
            c.close()


def uprobe(path):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(5)
    try:
        c.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        print("refused")
        return
    except socket.timeout:
        print("timeout")
        return
    print(_read(c))


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


def pty_run(seconds, *argv):
    import pty
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execv(argv[0], list(argv))
        finally:
            os._exit(127)
    out = b""
    end = time.monotonic() + float(seconds)
    timed_out = False
    while True:
        left = end - time.monotonic()
        if left <= 0:
            timed_out = True
            os.kill(pid, signal.SIGKILL)
            break
        r, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not r:
            continue
        try:
            d = os.read(fd, 4096)
        except OSError:     # EIO: every process holding the terminal is gone
            break
        if not d:
            break
        out += d
    os.close(fd)
    _, st = os.waitpid(pid, 0)
    sys.stdout.write(out.decode("utf-8", "replace").replace("\r", ""))
    sys.stdout.flush()
    if timed_out:
        sys.exit(124)
    sys.exit(os.waitstatus_to_exitcode(st) & 0xff)


def report(path):
    with open(path) as f:
        r = json.load(f)
    print("level=%s" % r["level"])
    print("min_level=%s" % r["min_level"])
    print("floor_met=%s" % str(r["floor_met"]).lower())
    print("guarantees=%s" % ",".join(r["guarantees"]))
    print("required=%s" % ",".join(r["required"]))
    for e in r["entries"]:
        print("feature %s requested=%s achieved=%s verified=%s detail=%s" % (
            e["feature"], str(e["requested"]).lower(), str(e["achieved"]).lower(),
            str(e["verified"]).lower(), e["detail"]))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"sink": sink, "listen": listen, "freeport": freeport, "probe": probe,
     "socks": socks, "ulisten": ulisten, "uprobe": uprobe, "pty": pty_run,
     "report": report}[cmd](*args)
