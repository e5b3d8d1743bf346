#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# egress_ping.sh USER — in the guest, as root: as USER, ask the installed
# agent-sandbox-egressd the bridge's question (a PING hello: is this uid a
# proxy agent?). Prints "yes", "no" (answered, refused), or "none" (the
# connection closed without an answer: the daemon refuses a uid that is no
# agent before it reads a byte).
set -u
u=$(id -u "$1") || exit 2
byte() { printf "\\$(printf '%03o' "$1")"; }
ans=$({ printf 'SBXB\001P\000\000'
	for s in 0 8 16 24; do byte $(((u >> s) & 255)); done
	head -c 108 /dev/zero; } |
	setpriv --reuid="$1" --regid="$1" --clear-groups \
		socat -t 3 - UNIX-CONNECT:/run/agent-sandbox/egress.sock 2>/dev/null |
	od -An -tx1 -j4 -N1 2>/dev/null | tr -d ' \n')
case "$ans" in
01) echo yes ;;
00) echo no ;;
*) echo none ;;
esac
