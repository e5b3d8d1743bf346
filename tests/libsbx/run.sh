#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libsbx tier: the library as another program gets it. `make install` into a
# staging root, examples/confine.c built from the installed header and
# libsbx.so through pkg-config alone, then run as an unprivileged user: its
# report must match agent-shell --run's for the same command and workspace,
# entry by entry, and a write outside the workspace must fail with EROFS.
#
# Usage: tests/libsbx/run.sh        (root; BUILD from the environment)
# Creates: one directory under /var/tmp (removed on exit). Runs as nobody.
set -u
BUILD=${BUILD:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tier.sh"
tier_require_root
T=$(mktemp -d /var/tmp/sbx-libsbx-XXXXXX)
trap 'rm -rf "$T"' EXIT
AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all)
# agent-shell as nobody on the built-in defaults, whatever /etc holds.
SHELL_NOBODY=("${NO_HOST_CONFIG[@]}" "${AS_NOBODY[@]}")

# 1. Installed as a package would install it, into a staging root.
echo "[ RUN      ] installed_and_built_with_pkg_config"
ROOT=$T/root
make -s -C "$SRC" BUILD="$BUILD" SAN="${SAN:-}" install PREFIX=/usr DESTDIR="$ROOT" >"$T/install.log" 2>&1 ||
	{ bad installed_and_built_with_pkg_config "make install: $(tail -3 "$T/install.log")"; summary; exit 1; }
PC=$(find "$ROOT" -name libsbx.pc | head -1)
LIBD=$(dirname "$(dirname "$PC")")
export PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_LIBDIR=$(dirname "$PC")
flags=$(pkg-config --cflags --libs libsbx) || { bad installed_and_built_with_pkg_config "pkg-config"; summary; exit 1; }
echo "  pkg-config: $flags"
# Only what pkg-config says: no -I into the source tree. A sanitizer build's
# library needs its runtime in the program too.
san=""
ldd "$LIBD/libsbx.so.0" | grep -q libasan && san="-fsanitize=address,undefined"
if cc -std=gnu11 -Wall -Wextra -Werror $san -o "$T/confine" "$SRC/examples/confine.c" $flags 2>"$T/cc.log" &&
	LD_LIBRARY_PATH=$LIBD ldd "$T/confine" | grep -q "libsbx.so.0 => $LIBD/libsbx.so.0"; then
	ok installed_and_built_with_pkg_config
else
	bad installed_and_built_with_pkg_config "$(head -5 "$T/cc.log")"
	summary
	exit 1
fi
chmod 0755 "$T" "$T/confine"
chmod -R a+rX "$ROOT"

# 2. Same command, same workspace: the same report as agent-shell --run.
echo "[ RUN      ] report_matches_agent_shell"
WS=$T/ws
mkdir -m 0700 "$WS" "$T/home" "$T/xdg" && chown nobody:nogroup "$WS" "$T/home" "$T/xdg"
"${AS_NOBODY[@]}" env LD_LIBRARY_PATH="$LIBD" "$T/confine" -j -w "$WS" -- /bin/true \
	>/dev/null 2>"$T/lib.out"
rc=$?
sed -n '/^{/p' "$T/lib.out" | head -1 >"$T/lib.json"
# Its report goes to $XDG_RUNTIME_DIR/agent-sandbox, this test's alone.
"${SHELL_NOBODY[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" "$SRC/$BUILD/agent-shell" --run \
	--workspace "$WS" -- /bin/true >/dev/null 2>"$T/shell.err"
"${SHELL_NOBODY[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" "$SRC/$BUILD/agent-shell" --report \
	--json >"$T/shell.json" 2>>"$T/shell.err"
cmp=$(python3 - "$T/lib.json" "$T/shell.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
def view(r):
    return ({e["feature"]: (e["requested"], e["achieved"], e["verified"]) for e in r["entries"]},
            r["level"], sorted(r["guarantees"]), r["floor_met"])
va, vb = view(a), view(b)
diff = [f for f in sorted(set(va[0]) | set(vb[0])) if va[0].get(f) != vb[0].get(f)]
if va[1:] != vb[1:]:
    diff.append("level/guarantees/floor %s vs %s" % (va[1:], vb[1:]))
print("entries %d, level %s, differences: %s" % (len(va[0]), va[1], diff or "none"))
sys.exit(1 if diff or not va[0] else 0)
PY
)
crc=$?
echo "  $cmp"
if [ $rc -eq 0 ] && [ $crc -eq 0 ]; then
	ok report_matches_agent_shell
else
	bad report_matches_agent_shell "confine exit $rc; $(head -3 "$T/lib.out" "$T/shell.err")"
fi

# 3. A denial next to its control: the workspace is written, the directory
# around it (nobody's too, by Unix permissions) is read-only in the sandbox.
echo "[ RUN      ] host_read_only_workspace_written"
mkdir -m 0755 "$T/open" && chown nobody:nogroup "$T/open"
"${AS_NOBODY[@]}" env LD_LIBRARY_PATH="$LIBD" "$T/confine" -w "$WS" -- /bin/sh -c \
	"echo ok >$WS/ok; (echo x >$T/open/x) 2>&1 | grep -c 'Read-only file system'" \
	>"$T/deny.out" 2>"$T/deny.err"
if [ "$(cat "$T/deny.out")" = 1 ] && [ -s "$WS/ok" ] && [ ! -e "$T/open/x" ]; then
	ok host_read_only_workspace_written
else
	bad host_read_only_workspace_written "out '$(cat "$T/deny.out")', $(tail -2 "$T/deny.err")"
fi
# 4. agent-shell --run --executor: the same executor sets from the command
# line. Each run is a separate process, so the cap counts what is on disk.
echo "[ RUN      ] cli_executors"
mkdir -m 0755 "$T/ex" && chown nobody:nogroup "$T/ex"
SCR=$T/ex/scratch
AS=("${SHELL_NOBODY[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" "$SRC/$BUILD/agent-shell" --run \
	--workspace "$WS" --scratch "$SCR" \
	--executors 2)
cli_ok=1
"${AS[@]}" --executor a -- /bin/sh -c 'echo A >"$HOME/h" && echo A >/tmp/t' >"$T/ex.a" 2>&1 ||
	{ echo "  executor a: $(tail -2 "$T/ex.a")"; cli_ok=0; }
"${AS[@]}" --executor b -- /bin/sh -c "test -e \"\$HOME/h\" && exit 10; test -e /tmp/t && exit 11;
	cat $SCR/a/home/h 2>&1 | grep -q 'No such file or directory' || exit 12;
	test -d $SCR && test -z \"\$(ls -A $SCR)\" || exit 13; exit 0" >"$T/ex.b" 2>&1 ||
	{ echo "  executor b saw a's files (exit $?): $(tail -2 "$T/ex.b")"; cli_ok=0; }
[ "$("${AS[@]}" --executor a -- /bin/sh -c 'cat "$HOME/h" /tmp/t' 2>/dev/null | tr '\n' ' ')" = "A A " ] ||
	{ echo "  executor a lost its files"; cli_ok=0; }
"${AS[@]}" --executor c -- /bin/true >"$T/ex.c" 2>&1
rc=$?
{ [ $rc -eq 126 ] && grep -q "cap of 2 executors reached" "$T/ex.c"; } ||
	{ echo "  third key: exit $rc, $(tail -1 "$T/ex.c")"; cli_ok=0; }
[ -e "$SCR/c" ] && { echo "  the refused key got a directory"; cli_ok=0; }
# Without user namespaces (the test build forces the probe), refused.
"${SHELL_NOBODY[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" SBX_TEST_PROBE=no-userns "$SRC/$BUILD/tests/agent-shell-testable" \
	--run --workspace "$WS" --scratch "$SCR" --executor a -- /bin/true >"$T/ex.n" 2>&1
rc=$?
{ [ $rc -eq 126 ] && grep -q "kept apart by the mount view" "$T/ex.n"; } ||
	{ echo "  no userns: exit $rc, $(tail -1 "$T/ex.n")"; cli_ok=0; }
if [ $cli_ok -eq 1 ]; then ok cli_executors; else bad cli_executors "see above"; fi

summary
