# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the shell test tiers (tests/libsbx, tests/explain): the
# cmocka-style result lines tests/run-tests.sh counts, and the root check.
pass=0 fail=0
ok() { echo "[       OK ] $1"; pass=$((pass + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; fail=$((fail + 1)); }
summary() {
	echo "[==========] $((pass + fail)) test(s) run."
	echo "[  PASSED  ] $pass test(s)."
	[ "$fail" -eq 0 ] || echo "[  FAILED  ] $fail test(s)"
	[ "$fail" -eq 0 ]
}
# Outside root, say so and end the tier here (CI runs as root).
tier_require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "[  SKIP    ] needs root (CI runs as root)"
		summary
		exit
	fi
}
# agent-shell proper reads /etc/agent-sandbox whoever runs it. A tier that
# runs it on the built-in defaults puts NO_HOST_CONFIG in front: on a host
# where the package is installed, that command runs in a mount namespace of
# its own where /etc/agent-sandbox is an empty read-only tmpfs, so what the
# host's config says cannot change the result (root only, as the tiers are).
NO_HOST_CONFIG=()
if [ -e /etc/agent-sandbox ]; then
	NO_HOST_CONFIG=(unshare --mount --propagation private -- sh -c
		'mount -t tmpfs -o ro,nosuid,nodev,noexec,mode=0755,size=4k sbx-no-host-config /etc/agent-sandbox && exec "$@"'
		no-host-config)
fi
