#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The login path, measured: `ssh host true` through a private sshd on
# loopback, with and without pam_agent_sandbox.so, for an agent account and
# for an ordinary one, and for an agent with this boot's probe cache; then
# `agent-shell --run -- /bin/true` as an agent with and without a cache
# entry; then the PAM phases alone (bench/pam_phases.c, when make bench
# built it). With BASE_BUILD, the same agent rows again for that build (an
# earlier tree's `make all`), in a world of its own, in the same rounds.
# Called by bench/bench.sh (as root); this builds nothing.
#
# Usage: bench/ssh.sh BUILD_DIR OUT_DIR RUNS WARMUP [BASE_BUILD_DIR]
#   (RUNS rounds of the logins, five times as many of the --run rows)
#
# Nothing on the host changes: each build gets a world made the way
# tests/e2e/run.sh makes its own (tests/e2e/ns-setup.sh in a private mount
# namespace: an overlay on /etc, so the accounts, the PAM services and the
# config exist only there; a fresh /run, so the probe cache and the session
# records are its own; /var/log and /dev its own too). Its two sshds are
# started through symlinks named after their own PAM services, on free
# loopback ports; the machine's own sshd, /etc/pam.d/sshd and accounts are
# never touched. The teardown kills what it started by pid and everything
# left in those namespaces, then removes the directory.
#
# The rows run round-robin (bench/interleave.py): the machine this was
# written on was shared with other work, and hyperfine's one-command-after-
# another order turned a change of that load into a difference between rows.
set -u
export LC_ALL=C

build=$1 out=$2 runs=$3 warmup=$4 base=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
e2e=$src/tests/e2e
py=/usr/bin/python3
sshd_bin=/usr/sbin/sshd

skip() { echo "ssh bench: skipped: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "needs root (a private sshd and accounts)"
for f in "$sshd_bin" /usr/bin/ssh /usr/bin/ssh-keygen "$py" /usr/bin/unshare /usr/bin/nsenter \
	/usr/sbin/useradd /usr/sbin/groupadd /usr/bin/jq; do
	[ -x "$f" ] || skip "$f missing (make deps installs openssh-server, openssh-client, python3)"
done
for b in "$build" ${base:+"$base"}; do
	for f in agent-shell agent-shell-launcher pam_agent_sandbox.so; do
		[ -f "$b/$f" ] || skip "$b/$f missing"
	done
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip "no overlayfs (needed for a private /etc)"
# The cache rows need agent-shell --probe-cache (a build before it has none).
has_cache=false
"$build/agent-shell" --help 2>/dev/null | grep -q -- '--probe-cache' && has_cache=true

r=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
T=$(mktemp -d /tmp/sbxbench-XXXXXX) || exit 1
chmod 0755 "$T"
WN=/run/e2e	# where each world is bound in its namespace
svc=sbxbench-$r group=sbxbench-$r
# One account per row: when an account's last session closes, the PAM
# stage kills every process of its uid (docs/design.md section 4.8), which
# would reach a run of another row that uses the same account outside a
# PAM session of its own. agentc and agentrc get this boot's cache entry.
agent=sbxba-$r agentc=sbxbc-$r agentn=sbxbn-$r agentr=sbxbr-$r agentrc=sbxbs-$r
agentp=sbxbq-$r		# the PAM phases alone (bench/pam_phases.c)
agents="$agent $agentc $agentn $agentr $agentrc $agentp"
plain=sbxbp-$r
holders=() pids=()

cleanup() {
	local p ns h holder
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	# The accounts' uids exist only in the namespaces; a host process
	# with the same number is not ours.
	for uid in $(sort -u "$T"/*/uids 2>/dev/null); do
		for p in $(awk -v u="$uid" '/^Uid:/ { if ($2 == u) print FILENAME }' \
				/proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
			[ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$(readlink /proc/self/ns/mnt)" ] &&
				continue
			kill -KILL "$p" 2>/dev/null
		done
	done
	for holder in "${holders[@]}"; do
		ns=$(readlink "/proc/$holder/ns/mnt") || continue
		[ "$ns" != "$(readlink /proc/self/ns/mnt)" ] || continue
		for h in /proc/[0-9]*; do
			[ "$(readlink "$h/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
			[ "${h#/proc/}" = "$holder" ] || kill -KILL "${h#/proc/}" 2>/dev/null
		done
		kill "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	done
	wait 2>/dev/null
	case "$T" in /tmp/sbxbench-*) rm -rf --one-file-system "$T" ;; esac
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# setup_world TAG BUILD: a world for that build; sets HOLDER_TAG,
# PORT_TAG_m (stack with the module) and PORT_TAG_n (without).
setup_world() {
	local tag=$1 b=$2 W=$T/$1/world holder u v port
	mkdir -p "$W"/{bin,keys,sshd,ws,home,state,client,xdg,lib/agent-sandbox} || return 1
	chmod 0755 "$T/$tag" "$W" "$W"/{bin,keys,sshd,ws,home,state,xdg,lib,lib/agent-sandbox}
	chmod 0700 "$W/client"
	# As "make install" lays it out.
	install -m 0755 "$b/agent-shell-launcher" "$W/bin/agent-shell" || return 1
	install -m 0755 "$b/agent-shell" "$W/lib/agent-sandbox/agent-shell" || return 1
	install -m 0644 "$b/pam_agent_sandbox.so" "$W/bin/pam_agent_sandbox.so" || return 1
	touch "$W/syslog.log"

	unshare -m --propagation private sleep 100000 &
	holder=$!
	holders+=("$holder")
	eval "HOLDER_$tag=$holder"
	for _ in $(seq 50); do
		[ "$(readlink "/proc/$holder/ns/mnt" 2>/dev/null)" != "$(readlink /proc/self/ns/mnt)" ] &&
			[ "$(cat "/proc/$holder/comm" 2>/dev/null)" = sleep ] && break
		sleep 0.1
	done
	[ "$(readlink "/proc/$holder/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || return 1
	NSW() { nsenter -t "$holder" -m -- "$@"; }
	NSW /bin/bash "$e2e/ns-setup.sh" "$(readlink /proc/self/ns/mnt)" "$W" || return 1
	# A syslog sink, so that every run logs as on a host with a daemon.
	nsenter -t "$holder" -m -- "$py" "$e2e/e2e_helper.py" sink /dev/log "$WN/syslog.log" &
	pids+=($!)

	NSW groupadd --system "$group" || return 1
	for u in $agents; do
		NSW useradd --system -M -g "$group" -s "$WN/bin/agent-shell" -d "$WN/home/$u" "$u" ||
			return 1
	done
	NSW useradd --system -M -g "$group" -s /bin/bash -d "$WN/home/$plain" "$plain" || return 1
	for u in $agents $plain; do
		NSW id -u "$u" >>"$T/$tag/uids" || return 1
		mkdir -m 0755 "$W/home/$u" "$W/ws/$u"
		mkdir -m 0700 "$W/xdg/$u"
		NSW chown "$u:$group" "$WN/ws/$u" "$WN/home/$u" "$WN/xdg/$u"
	done

	NSW mkdir -m 0755 /etc/agent-sandbox
	NSW tee /etc/agent-sandbox/agent-sandbox.conf >/dev/null <<-EOF
	[global]
	state_dir = $WN/state
	agent_shell = $WN/bin/agent-shell

	# The shipped coder profile's layers, on this world's paths.
	[profile bench]
	workspace_root = $WN/ws/%u
	workspace_write = allow
	host_write = deny
	network = deny
	command = allow
	home = isolated
	shell = /bin/bash
	services = $svc-m $svc-n
	max_sessions = 64
	min_level = degraded

	[match]
	$(for u in $agents; do echo "user $u = bench"; done)
	EOF
	NSW chmod 0644 /etc/agent-sandbox/agent-sandbox.conf
	NSW "$WN/bin/agent-shell" --check-config >/dev/null || return 1

	# Two stacks: with the module (account and session lines as the
	# shipped snippet has them), and the same stack without it.
	for v in m n; do
		local acc="" ses=""
		if [ $v = m ]; then
			acc="account  [success=ok ignore=ignore default=die] $WN/bin/pam_agent_sandbox.so"
			ses="session  [success=ok ignore=ignore default=die] $WN/bin/pam_agent_sandbox.so netns"
		fi
		NSW tee "/etc/pam.d/$svc-$v" >/dev/null <<-EOF
		auth     required pam_unix.so
		$acc
		account  required pam_unix.so
		password required pam_deny.so
		session  required pam_unix.so
		$ses
		EOF
	done

	ssh-keygen -q -t ed25519 -N '' -C bench-host -f "$W/sshd/hostkey" || return 1
	ssh-keygen -q -t ed25519 -N '' -C bench-client -f "$W/client/id" || return 1
	for u in $agents $plain; do install -m 0644 "$W/client/id.pub" "$W/keys/$u"; done
	echo "sbxbench $(cut -d' ' -f1,2 "$W/sshd/hostkey.pub")" >"$W/client/known_hosts"
	sed "s/^Match Group agents,reviewers\$/Match Group $group/" \
		"$src/etc/sshd_config.d/agent-sandbox.conf" >"$W/sshd/agent-sandbox.conf"
	for v in m n; do
		port=$("$py" "$e2e/e2e_helper.py" freeport)
		eval "PORT_${tag}_$v=$port"
		cat >"$W/sshd/$v.conf" <<-EOF
		Include $WN/sshd/agent-sandbox.conf
		Port $port
		ListenAddress 127.0.0.1
		HostKey $WN/sshd/hostkey
		PidFile $WN/sshd/$v.pid
		UsePAM yes
		PubkeyAuthentication yes
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		AuthorizedKeysFile $WN/keys/%u
		LogLevel ERROR
		AllowUsers $agents $plain
		MaxStartups 100:30:200
		Subsystem sftp /usr/lib/openssh/sftp-server
		EOF
		ln -s "$sshd_bin" "$W/bin/$svc-$v"
		NSW "$WN/bin/$svc-$v" -t -f "$WN/sshd/$v.conf" || return 1
		nsenter -t "$holder" -m -- "$WN/bin/$svc-$v" -D -f "$WN/sshd/$v.conf" -E "$WN/sshd/$v.log" &
		pids+=($!)
		for _ in $(seq 100); do
			[ "$("$py" "$e2e/e2e_helper.py" probe "$port")" != refused ] && break
			sleep 0.1
		done
	done
	return 0
}

tags=(new)
[ -n "$base" ] && tags+=(base)
for tag in "${tags[@]}"; do
	b=$build
	[ "$tag" = base ] && b=$base
	if ! setup_world "$tag" "$b" >"$T/setup-$tag.out" 2>&1; then
		echo "ssh bench: set-up of the $tag world failed:"
		sed 's/^/  /' "$T/setup-$tag.out" | tail -20
		exit 1
	fi
done

# The client command line: TAG VARIANT USER [KEX]. The rows use
# curve25519-sha256: Debian 12's default key exchange
# (sntrup761x25519-sha512) cost ~130 ms of client CPU per connection on the
# 2-vCPU machine this was written on, with a spread that hid every other
# difference; one row keeps the default, for the figure a client sees.
ssh_cmd() {
	local port kex=${4-curve25519-sha256} W=$T/$1/world
	eval "port=\$PORT_$1_$2"
	printf 'ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes -o HostKeyAlias=sbxbench -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o ControlMaster=no -o ControlPath=none -o LogLevel=ERROR%s -p %s %s@127.0.0.1 true' \
		"$W/client/id" "$W/client/known_hosts" "${kex:+ -o KexAlgorithms=$kex}" "$port" "$3"
}
# agent-shell --run as USER in the TAG world: TAG USER.
run_cmd() {
	local holder uid gid
	eval "holder=\$HOLDER_$1"
	uid=$(nsenter -t "$holder" -m -- id -u "$2")
	gid=$(nsenter -t "$holder" -m -- id -g "$2")
	printf 'nsenter -t %s -m -- setpriv --reuid=%s --regid=%s --clear-groups -- env -i PATH=/usr/bin:/bin HOME=%s/home/%s LANG=C.UTF-8 XDG_RUNTIME_DIR=%s/xdg/%s %s/lib/agent-sandbox/agent-shell --run --workspace %s/ws/%s -- /bin/true' \
		"$holder" "$uid" "$gid" "$WN" "$2" "$WN" "$2" "$WN" "$WN" "$2"
}

# This boot's probe entry for agentc only (agent has none): root writes it
# in the new world, as agent-sandbox-probe.service would.
cached=false
if $has_cache; then
	nsenter -t "$HOLDER_new" -m -- "$WN/bin/agent-shell" --probe-cache "$agentc" "$agentrc" \
		>"$T/cache.out" 2>&1
	grep -q "^$agentc (uid [0-9]*): cached for this boot" "$T/cache.out" &&
		grep -q "^$agentrc (uid [0-9]*): cached for this boot" "$T/cache.out" && cached=true
	$cached || echo "ssh bench: agent-shell --probe-cache wrote no entry: $(cat "$T/cache.out")"
fi

login=(
	"ssh plain@host true, stack without the module=$(ssh_cmd new n "$plain")"
	"ssh plain@host true, stack without the module, default key exchange=$(ssh_cmd new n "$plain" "")"
	"ssh plain@host true, stack with the module (not an agent: PAM_IGNORE)=$(ssh_cmd new m "$plain")"
	"ssh agent@host true, stack without the module (agent-shell only)=$(ssh_cmd new n "$agentn")"
	"ssh agent@host true, with the module (PAM stage + agent-shell)=$(ssh_cmd new m "$agent")"
)
$cached && login+=("ssh agent@host true, with the module, probe cache=$(ssh_cmd new m "$agentc")")
[ -n "$base" ] && login+=("ssh agent@host true, with the module, base build=$(ssh_cmd base m "$agent")"
	"ssh plain@host true, stack with the module, base build=$(ssh_cmd base m "$plain")")
runrows=("agent-shell --run -- /bin/true as the agent, no probe cache=$(run_cmd new "$agentr")")
$cached && runrows+=("agent-shell --run -- /bin/true as the agent, probe cache=$(run_cmd new "$agentrc")")
[ -n "$base" ] && runrows+=("agent-shell --run -- /bin/true as the agent, base build=$(run_cmd base "$agentr")")

# Each command once first: a failing one is a finding, not a number.
for e in "${login[@]}" "${runrows[@]}"; do
	if ! bash -c "${e#*=}" >"$T/pre.out" 2>&1; then
		echo "ssh bench: '${e%%=*}' failed: $(head -c 400 "$T/pre.out")"
		for tag in "${tags[@]}"; do
			tail -n 5 "$T/$tag/world/sshd/m.log" "$T/$tag/world/sshd/n.log" 2>/dev/null
			tail -n 5 "$T/$tag/world/syslog.log"
		done
		exit 1
	fi
done

"$py" "$here/interleave.py" "$runs" "$warmup" "$T/login.json" "${login[@]}" ||
	{ echo "ssh bench: the login rows failed"; exit 1; }
# A --run is ~15 ms, a login ~150: the --run rows get five times the
# rounds, for a spread of the same order.
"$py" "$here/interleave.py" "$((runs * 5))" "$warmup" "$T/run.json" "${runrows[@]}" ||
	{ echo "ssh bench: the --run rows failed"; exit 1; }

# The PAM stage alone: pam_acct_mgmt, pam_open_session and
# pam_close_session in a forked root child that entered the world, as
# sshd's monitor runs them.
parts=("$T/login.json" "$T/run.json")
if [ -x "$build/bench/pam_phases" ]; then
	pamrows=("PAM phases, agent, stack without the module=$HOLDER_new:$svc-n:$agentp"
		"PAM phases, not an agent (PAM_IGNORE)=$HOLDER_new:$svc-m:$plain"
		"PAM phases, agent=$HOLDER_new:$svc-m:$agentp")
	[ -n "$base" ] && pamrows+=("PAM phases, agent, base build=$HOLDER_base:$svc-m:$agentp"
		"PAM phases, not an agent, base build=$HOLDER_base:$svc-m:$plain")
	if "$build/bench/pam_phases" "$((runs * 5))" "$warmup" "$T/pam.json" "${pamrows[@]}"; then
		parts+=("$T/pam.json")
	else
		echo "ssh bench: the PAM rows failed"
	fi
fi

jq -s '{results: (map(.results) | add)}' "${parts[@]}" >"$out/ssh.json"
table() {	# $1: the interleave.py output
	jq -r '
	  def ms: . * 1000 * 100 | round / 100;
	  def f: ms | tostring | if test("\\.") then . else . + ".0" end;
	  def sf: if . >= 0 then "+" + (. | f) else (. | f) end;
	  .results[]
	  | "| \(.command) | \(.mean | f) ± \(.stddev | f) | \(.median | f) | \(.min | f) | \(.max | f) | \(.median_diff | sf) |"
	' "$1"
}
{
	echo "Every command once per round, in turn (bench/interleave.py, bench/pam_phases.c), after $warmup warm-up rounds: $runs rounds of logins, $((runs * 5)) of --run and of the PAM phases."
	echo
	echo "| command | mean ± σ (ms) | median (ms) | min (ms) | max (ms) | median of the per-round difference to the first row (ms) |"
	echo "|---|---|---|---|---|---|"
	table "$T/login.json"
	echo
	echo "| command | mean ± σ (ms) | median (ms) | min (ms) | max (ms) | median of the per-round difference to the first row (ms) |"
	echo "|---|---|---|---|---|---|"
	table "$T/run.json"
	if [ -s "$T/pam.json" ]; then
		echo
		echo "| command | mean ± σ (ms) | median (ms) | min (ms) | max (ms) | median of the per-round difference to the first row (ms) |"
		echo "|---|---|---|---|---|---|"
		table "$T/pam.json"
		echo
		echo "Each PAM call alone, median (ms), timed in the same child:"
		echo
		echo "| command | pam_start | pam_acct_mgmt | pam_open_session | pam_close_session | pam_end |"
		echo "|---|---|---|---|---|---|"
		jq -r '
		  def ms: . * 1000 * 100 | round / 100;
		  .results[] | select(.phases)
		  | "| \(.command) | \(.phases.pam_start | ms) | \(.phases.pam_acct_mgmt | ms) | \(.phases.pam_open_session | ms) | \(.phases.pam_close_session | ms) | \(.phases.pam_end | ms) |"
		' "$T/pam.json"
	fi
} >"$out/ssh.md"
cat "$out/ssh.md"
