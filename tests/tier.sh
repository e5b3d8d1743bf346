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
