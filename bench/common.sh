# SPDX-License-Identifier: BSD-3-Clause
# Sourced by bench/bench.sh and bench/scale.sh.

# A uid (and gid) in 65000-65499 that nothing uses: away from the --system
# range, which test suites allocate from (and kill by uid in) concurrently.
free_id() {
	local u=$((65000 + RANDOM % 400))
	while getent passwd "$u" >/dev/null || getent group "$u" >/dev/null; do
		u=$((u + 1))
	done
	echo "$u"
}
