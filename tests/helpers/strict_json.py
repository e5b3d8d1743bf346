#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a strict reader makes of agent-shell's output (the tests' check).

strict_json.py json FILE [HEX...]
    FILE is strict UTF-8 (Python's decoder with errors='strict'), one JSON
    document (json.loads), and no string in it, key or value, decodes to a
    control character (C0, DEL, C1). With HEX words: FILE is a report
    whose command, read exactly (command_hex when there is one), is those
    words' bytes.
strict_json.py text FILE
    FILE is strict UTF-8 and holds no control character but newline.

Prints one line saying what was checked; exits 1 with the reason otherwise.
"""
import json
import sys


def controls(s):
    return sorted({hex(ord(c)) for c in s if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f})


def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)


def fail(path, why):
    print("strict_json: %s: %s" % (path, why))
    sys.exit(1)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("json", "text"):
        print(__doc__)
        sys.exit(2)
    mode, path, want = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        fail(path, "not UTF-8: %s" % e)
    if mode == "text":
        bad = [c for c in controls(text) if c != "0xa"]
        if bad:
            fail(path, "control characters %s" % bad)
        print("strict_json: %s: %d bytes of UTF-8 text, no control character" % (path, len(data)))
        return
    try:
        doc = json.loads(text)
    except ValueError as e:
        fail(path, "not JSON: %s" % e)
    n = 0
    for s in strings(doc):
        if controls(s):
            fail(path, "%r decodes to control characters %s" % (s, controls(s)))
        n += 1
    if want:
        if "command_hex" in doc:
            got = [bytes.fromhex(h) for h in doc["command_hex"]]
            if len(got) != len(doc["command"]):
                fail(path, "command_hex and command differ in length")
        else:
            got = [w.encode() for w in doc["command"]]
        if got != [bytes.fromhex(h) for h in want]:
            fail(path, "command read back as %r" % got)
    print("strict_json: %s: %d bytes, %d strings, UTF-8 and JSON by Python's strict reader%s"
          % (path, len(data), n, ", command exact" if want else ""))


main()
