#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# A minimal pure-Python wheel and its PEP 503 index page, for pip download
# through the proxy in tests/egress/run.sh:  make_wheel.py INDEX_DIR
import base64
import hashlib
import os
import sys
import zipfile

NAME, VERSION = "sbxprobe", "1.0"
index = sys.argv[1]
pkg = os.path.join(index, "simple", NAME)
os.makedirs(pkg, exist_ok=True)
whl = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
dist = "%s-%s.dist-info" % (NAME, VERSION)
files = {
    NAME + "/__init__.py": b"VALUE = 42\n",
    dist + "/METADATA": ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (NAME, VERSION)).encode(),
    dist + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: make_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
record.append(dist + "/RECORD,,")
files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
path = os.path.join(pkg, whl)
with zipfile.ZipFile(path, "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
with open(os.path.join(pkg, "index.html"), "w") as f:
    f.write('<html><body><a href="%s#sha256=%s">%s</a></body></html>\n' % (whl, sha, whl))
with open(os.path.join(index, "simple", "index.html"), "w") as f:
    f.write('<html><body><a href="%s/">%s</a></body></html>\n' % (NAME, NAME))
