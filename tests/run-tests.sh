#!/usr/bin/env bash
# Runs every test binary given, one after the other, each under a time
# limit, and ends with one summary line. cmocka prints its own per-group
# lines; this script counts binaries and the tests cmocka reports.
set -u
pass=0 fail=0 skip=0 failed_bins=()
for bin in "$@"; do
	name=$(basename "$bin")
	echo "== $name"
	out=$(mktemp)
	CMOCKA_MESSAGE_OUTPUT=stdout timeout --kill-after=10 600 "$bin" >"$out" 2>&1
	rc=$?
	cat "$out"
	p=$(grep -Eo '\[  PASSED  \] [0-9]+' "$out" | awk '{s+=$NF} END {print s+0}')
	f=$(grep -Eo '\[  FAILED  \] [0-9]+ test' "$out" | awk '{s+=$(NF-1)} END {print s+0}')
	s=$(grep -Eo '\[  SKIPPED \] [0-9]+' "$out" | awk '{s+=$NF} END {print s+0}')
	rm -f "$out"
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$rc" -ne 0 ]; then
		failed_bins+=("$name (exit $rc)")
		[ "$f" -eq 0 ] && fail=$((fail + 1))
	fi
done
echo
if [ ${#failed_bins[@]} -gt 0 ]; then
	printf 'failed: %s\n' "${failed_bins[@]}"
fi
echo "${pass} passed, ${fail} failed, ${skip} skipped"
[ "$fail" -eq 0 ] && [ ${#failed_bins[@]} -eq 0 ]
