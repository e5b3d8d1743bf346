#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The unix supervisor on a filesystem with 64-bit inode numbers (an XFS
# whose third allocation group numbers its inodes from 2^32): unix_diag
# gives 32 bits of a socket file's inode number, so a socket the session
# binds at inode X + 2^32 once vouched for a foreign file at inode X whose
# listener, outside the session's network namespace, was not listed. An
# attacker review ran a host tmux server's run-shell that way.
#
# As the agent (nobody), through the real agent-shell, full path: the
# user's own tmux server outside in the workspace; inside, a plain connect
# (refused), then sockets bound until one collides and tmux run-shell
# again: it must not run (the connection's listener listened outside the
# session's pid namespace). The control: a tmux server started inside on
# the same XFS answers.
#
# Usage: tests/escape/ino64.sh BUILD_DIR   (root; cmocka-style summary)
set -u
BUILD=${1:-${BUILD:-build}}
BUILD=$(cd "$BUILD" && pwd)
summary() {
	echo "[==========] 1 test(s) run."
	if [ "$1" = ok ]; then echo "[  PASSED  ] 1 test(s)."; else
		echo "[  PASSED  ] 0 test(s)."; echo "[  FAILED  ] 1 test(s), listed below:"
		echo "[  FAILED  ] unix_ino64_collision"; fi
}
[ "$(id -u)" -eq 0 ] || { echo "[  SKIPPED ] 1 test(s). (needs root)"; exit 0; }
command -v mkfs.xfs >/dev/null || { echo "mkfs.xfs missing (make deps installs xfsprogs)"; summary bad; exit 1; }
# What the test assumes of the kernel, probed on its own: XFS and a loop device.
if ! grep -qw xfs /proc/filesystems && ! modprobe xfs 2>/dev/null; then
	echo "[  SKIPPED ] 1 test(s). (the kernel has no XFS)"; exit 0
fi
losetup -f >/dev/null 2>&1 || { echo "[  SKIPPED ] 1 test(s). (no loop device)"; exit 0; }
AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
D=$(mktemp -d /var/tmp/sbx-test-ino64.XXXXXX)
chmod 755 "$D"
cleanup() {
	"${AS[@]}" env HOME="$D" tmux -S "$D/mnt/ws/host.sock" kill-server 2>/dev/null
	for _ in 1 2 3 4 5; do umount "$D/mnt" 2>/dev/null && break; sleep 1; done
	losetup -j "$D/xfs.img" | cut -d: -f1 | xargs -r -n1 losetup -d 2>/dev/null
	case "$D" in /var/tmp/sbx-test-ino64.*) rm -rf --one-file-system "$D" ;; esac
}
trap cleanup EXIT
echo "[ RUN      ] unix_ino64_collision"
# Three allocation groups of 2^28-1 blocks: inodes of the third are
# numbered from 2^32. A sparse image: some 70 MB on disk.
truncate -s $(( (2 * 268435455 + 262144) * 4096 )) "$D/xfs.img"
mkfs.xfs -q -f -d agsize=268435455b -l size=64m "$D/xfs.img" || { summary bad; exit 1; }
mkdir "$D/mnt" && mount -o loop "$D/xfs.img" "$D/mnt" || { summary bad; exit 1; }
mkdir "$D/mnt/ws" "$D/out" && chown nobody:nogroup "$D/mnt/ws" "$D/out"
cat >"$D/collide.py" <<'PY'
import os, socket, sys
target, ws = sys.argv[1], sys.argv[2]
X = os.stat(target).st_ino
d = next(p for p in (os.path.join(ws, ".c%d" % i) for i in range(64))
         if (os.makedirs(p, exist_ok=True) or True) and os.stat(p).st_ino >> 32)
keep = []
while True:                 # bind until a socket's inode is X + k * 2^32
    s = socket.socket(socket.AF_UNIX); p = os.path.join(d, "s%d" % len(keep))
    s.bind(p); s.listen(1); s.set_inheritable(True); keep.append(s)
    ino = os.stat(p).st_ino
    if ino & 0xffffffff == X: break
    if ino & 0xffffffff > X or len(keep) > 5000: sys.exit("no collision")
print("collision: target ino %d, own socket ino %d" % (X, ino), flush=True)
os.execvp(sys.argv[3], sys.argv[3:])   # the sockets stay bound across exec
PY
chmod 644 "$D/collide.py"
# The agent's own tmux server outside any sandbox, in the workspace.
"${AS[@]}" env HOME="$D" SHELL=/bin/sh tmux -S "$D/mnt/ws/host.sock" new-session -d 'sleep 600' ||
	{ echo "  no tmux server outside"; summary bad; exit 1; }
"${AS[@]}" env HOME="$D" tmux -S "$D/mnt/ws/host.sock" run-shell true ||
	{ echo "  control: the tmux server outside does not answer"; summary bad; exit 1; }
out=$("${AS[@]}" "$BUILD/agent-shell" --run --workspace "$D/mnt/ws" -- /bin/bash -c "
tmux -S $D/mnt/ws/host.sock run-shell 'echo x > $D/out/plain' 2>/dev/null; echo plain=\$?
SHELL=/bin/sh tmux -S $D/mnt/ws/own.sock new-session -d 'sleep 30'
tmux -S $D/mnt/ws/own.sock run-shell true; echo own=\$?
tmux -S $D/mnt/ws/own.sock kill-server 2>/dev/null
/usr/bin/python3 $D/collide.py $D/mnt/ws/host.sock $D/mnt/ws \
	tmux -S $D/mnt/ws/host.sock run-shell 'grep -E \"^Seccomp\" /proc/self/status > $D/out/collided' 2>/dev/null
echo collided=\$?
" 2>&1 | grep -v 'no syslog daemon')
echo "$out" | sed 's/^/  | /'
ok=ok
[[ $out == *"plain=1"* ]] || { echo "  the plain connect was not refused"; ok=bad; }
[[ $out == *"own=0"* ]] || { echo "  control: a tmux server inside, on the same XFS, did not answer"; ok=bad; }
[[ $out == *"collision: target ino"* ]] || { echo "  no colliding socket was made"; ok=bad; }
[[ $out == *"collided=1"* ]] || { echo "  tmux did not fail to connect"; ok=bad; }
for f in plain collided; do
	[ -e "$D/out/$f" ] && { echo "  ran outside the sandbox: $f: $(cat "$D/out/$f")"; ok=bad; }
done
[ "$ok" = ok ] && echo "[       OK ] unix_ino64_collision" || echo "[  FAILED  ] unix_ino64_collision"
summary "$ok"
[ "$ok" = ok ]
