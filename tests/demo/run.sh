#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make demo on a host where the package is installed: it promises the
# built-in default profile whatever /etc holds, and the report of its own
# session. In a private mount namespace with an overlay on /etc, the
# installed config is as bad as a host can have it: only root can read it
# (0600), and its [ceiling] names a root that does not exist; a group
# agents exists. There:
#   installed_host_control   agent-shell --run as nobody is refused (the
#                            config is unreadable): the world is the broken
#                            host it stands for;
#   demo_on_installed_host   shell/demo.sh exits 0 at level full, and the
#                            report it prints is the session's own (the id
#                            the session gave inside is the report's).
#
# Usage: tests/demo/run.sh     (root; BUILD from the environment)
# Creates: /run/sbx-demo-* (removed on exit); the config, the group and
# every mount exist only in the namespace, which ends with the tier.
set -u
BUILD=${BUILD:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tier.sh"
tier_require_root
skip_tier() {
	echo "[  SKIP    ] $*"
	summary
	exit
}
unshare -m --propagation private true 2>/dev/null || skip_tier "cannot create a mount namespace"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip_tier "no overlayfs (needed for a private /etc)"
[ -x "$SRC/$BUILD/tests/tcp_listen" ] || skip_tier "$BUILD/tests/tcp_listen missing (make check builds it)"
T=$(mktemp -d /run/sbx-demo-XXXXXX) || exit 1
trap 'rm -rf --one-file-system "$T"' EXIT
MISSING=/srv/sbx-demo-missing-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
# The shipped config, with one more [ceiling] root that is nowhere.
sed "/^\[ceiling\]\$/a root = $MISSING rw" "$SRC/etc/agent-sandbox.conf" >"$T/agent-sandbox.conf"
grep -q "^root = $MISSING rw\$" "$T/agent-sandbox.conf" || { bad set-up "no [ceiling] in etc/agent-sandbox.conf"; summary; exit 1; }
mkdir -m 0700 "$T/ovl"

# In the namespace: the installed host, then the control and the demo.
# ns-refuse: never mount in the caller's namespace.
unshare --mount --propagation private bash -s "$T" "$SRC" "$BUILD" "$(readlink /proc/self/ns/mnt)" \
	>"$T/ns.out" 2>&1 <<'NS'
set -u
T=$1 SRC=$2 BUILD=$3
[ "$(readlink /proc/self/ns/mnt)" != "$4" ] || { echo "refusing: the caller's mount namespace"; exit 1; }
set -e
mount -t tmpfs -o mode=0700,size=16m sbx-demo-ovl "$T/ovl"
mkdir "$T/ovl/upper" "$T/ovl/work"
mount -t overlay -o "lowerdir=/etc,upperdir=$T/ovl/upper,workdir=$T/ovl/work" sbx-demo-etc /etc
# This world's own /etc/agent-sandbox, whatever the host has.
rm -rf /etc/agent-sandbox
install -d -m 0755 /etc/agent-sandbox
install -m 0600 "$T/agent-sandbox.conf" /etc/agent-sandbox/agent-sandbox.conf
getent group agents >/dev/null || groupadd --system agents
set +e
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SRC/$BUILD/agent-shell" --run -- /bin/true \
	>"$T/control.out" 2>&1
echo $? >"$T/control.rc"
"$SRC/shell/demo.sh" "$BUILD" >"$T/demo.out" 2>&1
echo $? >"$T/demo.rc"
NS
[ -s "$T/demo.rc" ] || { cat "$T/ns.out"; bad set-up "the namespace did not run the demo"; summary; exit 1; }

echo "[ RUN      ] installed_host_control"
rc=$(cat "$T/control.rc")
echo "  --run as nobody: exit $rc: $(tail -1 "$T/control.out" | head -c 200)"
if [ "$rc" = 126 ] && grep -q "open(/etc/agent-sandbox/agent-sandbox.conf): Permission denied" "$T/control.out"; then
	ok installed_host_control
else
	bad installed_host_control "the config at 0600 did not refuse a plain --run"
fi

echo "[ RUN      ] demo_on_installed_host"
rc=$(cat "$T/demo.rc")
run_sid=$(sed -n 's/^--- inside the sandbox: session \([0-9a-f]*\),.*/\1/p' "$T/demo.out")
report_sid=$(sed -n 's/^session  *\([0-9a-f]*\)$/\1/p' "$T/demo.out")
level=$(sed -n 's/^level  *\([a-z]*\) .*/\1/p' "$T/demo.out")
echo "  exit $rc, level ${level:-?}, session ${run_sid:-?} (run), ${report_sid:-?} (report)"
if [ "$rc" = 0 ] && [ "$level" = full ] && [ -n "$run_sid" ] && [ "$run_sid" = "$report_sid" ] &&
	grep -q "^--- the guarantee report of that session (agent-shell --report $run_sid):\$" "$T/demo.out" &&
	grep -q "/etc/agent-sandbox hidden from the session" "$T/demo.out" &&
	[ "$(grep -c '^session ' "$T/demo.out")" = 1 ]; then
	ok demo_on_installed_host
else
	sed 's/^/  | /' "$T/demo.out" | tail -45
	bad demo_on_installed_host "exit 0, level full and one report of the session that ran"
fi
summary
