#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# --explain against real sessions, through the binary: for each shipped
# profile (etc/agent-sandbox.conf with its extra roots and workspace
# re-pointed at directories of this test) and each forced probe of the test
# build (full, no user namespaces, no Landlock, neither), what
# `agent-shell --explain ACCOUNT --json` predicts must equal the report of a
# real `--run` (of /bin/sh, which the ci profile allows) of the same account: every entry, the level, the guarantees
# and the floor. (test_apply checks the same decision inside the library.)
#
# Usage: tests/explain/run.sh     (root; BUILD from the environment)
# Creates: an account sbxx-<random> with its home under /var/tmp/sbx-explain-*,
# /run/sbx-explain-* (root-owned, for the trusted config); all removed on
# exit. The config maps the account to
# each profile in turn.
set -u
BUILD=${BUILD:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SHELL_BIN=$SRC/$BUILD/tests/agent-shell-testable
. "$SRC/tests/tier.sh"
tier_require_root
C=$(mktemp -d /run/sbx-explain-XXXXXX)
T=$(mktemp -d /var/tmp/sbx-explain-XXXXXX)
U=sbxx-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
trap 'userdel "$U" 2>/dev/null; rm -rf "$C" "$T"' EXIT
chmod 0755 "$C" "$T"
mkdir -m 0700 "$T/ws" "$T/home" "$T/root0" "$T/root1" "$T/root2" "$T/root3"
useradd --system -M -d "$T/home" -s /usr/sbin/nologin -U "$U" || { echo "useradd $U failed"; exit 1; }
chown "$U:$U" "$T/ws" "$T/home" "$T"/root*
chmod 0755 "$T"/root*
AS_AGENT=(setpriv --reuid="$U" --regid="$U" --clear-groups --inh-caps=-all)

# The shipped config, its paths re-pointed: every root line in turn gets
# a root<N> of this test (mode as shipped), workspace_root the test's.
# pam_stage lines go: --run has no PAM stage, and the key decides no layer.
# Under the sanitizer (SAN=1) the as limit goes too: ASan reserves terabytes
# of address space and cannot start under it; no layer depends on it.
awk -v t="$T" -v san="${SAN:-}" '
	/^root[ \t]*=/ { sub(/=[ \t]*[^ \t]+/, "= " t "/root" (n++ % 4)) }
	/^workspace_root[ \t]*=/ { sub(/=.*/, "= " t "/ws") }
	/^pam_stage[ \t]*=/ { next }
	san && /^as[ \t]*=/ { next }
	/^\[match\]/ { exit }
	{ print }' "$SRC/etc/agent-sandbox.conf" >"$C/base.conf"
profiles=$(sed -n 's/^\[profile \([^]]*\)\]$/\1/p' "$C/base.conf")

compare() {
	python3 - "$1" "$2" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["predicted_report"]
b = json.load(open(sys.argv[2]))
# A prediction verifies nothing (no canary ran): its rows say achieved and
# never verified; a real session's row counts when achieved and verified.
if any(e["verified"] for e in a["entries"]):
    print("the prediction marks rows verified: %s" % [e["feature"] for e in a["entries"] if e["verified"]])
    sys.exit(1)
def view(r, real):
    return ({e["feature"]: (e["requested"], e["achieved"] and (e["verified"] or not real))
             for e in r["entries"]}, r["level"], sorted(r["guarantees"]), r["floor_met"])
va, vb = view(a, False), view(b, True)
diff = [f for f in sorted(va[0]) if va[0][f] != vb[0].get(f)]
if va[1:] != vb[1:]:
    diff.append("level/guarantees/floor %s vs %s" % (va[1:], vb[1:]))
print("%s, floor %s; differences: %s" % (vb[1], "met" if vb[3] else "not met", diff or "none"))
sys.exit(1 if diff or len(va[0]) < 20 else 0)
PY
}

for prof in $profiles; do
	{ cat "$C/base.conf"; printf '[match]\nuser %s = %s\n' "$U" "$prof"; } >"$C/$prof.conf"
	chmod 0644 "$C/$prof.conf"
	for probe in "" no-userns no-landlock no-userns,no-landlock; do
		name="${prof}_${probe:-full}"
		echo "[ RUN      ] $name"
		# Reports go to $XDG_RUNTIME_DIR/agent-sandbox: one directory per
		# case, so --report reads this run's.
		install -d -m 0700 -o "$U" -g "$U" "$T/xdg-$name"
		run=("${AS_AGENT[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg-$name"
			SBX_TEST_CONFIG="$C/$prof.conf" SBX_TEST_PROBE="$probe" "$SHELL_BIN")
		"${run[@]}" --explain "$U" --json >"$T/explain.json" 2>"$T/explain.err"
		"${run[@]}" --run -- /bin/sh -c true >/dev/null 2>"$T/run.err"
		"${run[@]}" --report --json >"$T/report.json" 2>>"$T/run.err"
		if out=$(compare "$T/explain.json" "$T/report.json" 2>&1); then
			echo "  $out"
			ok "$name"
		else
			echo "  $out" | tail -3
			head -3 "$T/explain.err" "$T/run.err"
			bad "$name" "the prediction and the report differ (above)"
		fi
	done
done
# A root that does not exist: the session leaves it out and its report
# says "PATH (missing)"; the prediction says the same. For an agent (the
# profile's own root) and for any other user (a [ceiling] root, as the
# shipped /srv/agents on a host that has none yet). Then one that is
# read-only inside the writable workspace: left out, the agent could make
# it and write there, so the session is refused, and the prediction is
# that refusal.
name=missing_root
echo "[ RUN      ] $name"
first=$(echo $profiles | cut -d' ' -f1)
{ awk -v t="$T" -v p="[profile $first]" '{ print } $0 == p { print "root = " t "/no-such-root ro" }
	$0 == "[ceiling]" { print "root = " t "/no-such-ceiling rw" }' "$C/base.conf"
	printf '[match]\nuser %s = %s\n' "$U" "$first"; } >"$C/missing.conf"
chmod 0644 "$C/missing.conf"
run=("${AS_AGENT[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg-missing" SBX_TEST_CONFIG="$C/missing.conf" "$SHELL_BIN")
install -d -m 0700 -o "$U" -g "$U" "$T/xdg-missing"
"${run[@]}" --explain "$U" --json >"$T/explain.json" 2>"$T/explain.err"
erc=$?
"${run[@]}" --run -- /bin/sh -c true >"$T/run.out" 2>&1
rrc=$?
"${run[@]}" --report --json >"$T/missing.json" 2>/dev/null
install -d -m 0700 -o nobody -g nogroup "$T/xdg-nobody"
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all env HOME=/nonexistent \
	XDG_RUNTIME_DIR="$T/xdg-nobody" SBX_TEST_CONFIG="$C/missing.conf" "$SHELL_BIN" \
	--run --workspace "$T/xdg-nobody" -- /bin/sh -c true >"$T/nobody.out" 2>&1
nrc=$?
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all env HOME=/nonexistent \
	XDG_RUNTIME_DIR="$T/xdg-nobody" SBX_TEST_CONFIG="$C/missing.conf" "$SHELL_BIN" \
	--report --json >"$T/nobody.json" 2>/dev/null
mv_detail() { python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
r = r.get("predicted_report", r)
print([e["detail"] for e in r["entries"] if e["feature"] == "mount_view"][0], r["level"])' "$1" 2>/dev/null; }
echo "  explain: exit $erc: $(mv_detail "$T/explain.json")"
echo "  session: exit $rrc: $(mv_detail "$T/missing.json") $(grep -m1 'agent-shell:' "$T/run.out" | head -c 200)"
echo "  not an agent: exit $nrc: $(mv_detail "$T/nobody.json")"
want="$T/no-such-root (missing)"
if [ $erc = 0 ] && [[ $(mv_detail "$T/explain.json") == *"skipped: $want"* ]] &&
	[ $rrc = 0 ] && [[ $(mv_detail "$T/missing.json") == *"skipped: "*"$want"* ]] &&
	[ $nrc = 0 ] && [[ $(mv_detail "$T/nobody.json") == *"skipped: $T/no-such-ceiling (missing)"* ]]; then
	ok "$name"
else
	bad "$name" "a missing root: the prediction, the agent's session and another user's run"
fi
name=missing_root_in_workspace_refused
echo "[ RUN      ] $name"
sed "s|^root = $T/no-such-root ro\$|root = $T/ws/vendor ro|" "$C/missing.conf" >"$C/inws.conf"
chmod 0644 "$C/inws.conf"
run=("${AS_AGENT[@]}" env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg-missing" SBX_TEST_CONFIG="$C/inws.conf" "$SHELL_BIN")
"${run[@]}" --explain "$U" >"$T/explain.out" 2>&1
erc=$?
"${run[@]}" --run -- /bin/sh -c true >"$T/run.out" 2>&1
rrc=$?
msg="root $T/ws/vendor ro: No such file or directory, inside a tree the session writes"
echo "  explain: exit $erc: $(grep -m1 'refused' "$T/explain.out" | head -c 240)"
echo "  session: exit $rrc: $(grep -m1 'agent-shell:' "$T/run.out" | head -c 240)"
if [ $erc = 1 ] && grep -q "every session would be refused: .*$msg" "$T/explain.out" &&
	[ $rrc = 126 ] && grep -q "$msg" "$T/run.out" && [ ! -e "$T/ws/vendor" ]; then
	ok "$name"
else
	bad "$name" "the prediction and the session disagree on a missing ro root in the workspace"
fi
# The shipped config's commented proxy example, uncommented as its comment
# says (and the ceiling raised to proxy): it loads, and the profile it makes
# is network = proxy with its list.
name=commented_proxy_example
echo "[ RUN      ] $name"
awk '/^#\[profile coder-net\]$/ { on = 1 } on && /^$/ { on = 0 } on { sub(/^#/, "") } { print }' \
	"$C/base.conf" | sed 's/^network = deny$/network = proxy/' >"$C/example.conf"
printf '[match]\nuser %s = coder-net\n' "$U" >>"$C/example.conf"
chmod 0644 "$C/example.conf"
out=$(SBX_TEST_CONFIG="$C/example.conf" "$SHELL_BIN" --check-config 2>&1)
exp=$(SBX_TEST_CONFIG="$C/example.conf" "$SHELL_BIN" --explain "$U" 2>&1)
if [[ $out == *"OK (4 profile(s)"* ]] && [[ $out == *"profile coder-net: network = proxy, 6 destination(s)"* ]] &&
	[[ $exp == *"egress      pypi.org:443, files.pythonhosted.org:443"* ]]; then
	ok "$name"
else
	bad "$name" "$(echo "$out" | head -3) / $(echo "$exp" | grep -m2 -E 'egress|refused')"
fi
summary
