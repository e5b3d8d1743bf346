#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The login path, measured: `ssh host true` through a private sshd on
# loopback, with and without pam_agent_sandbox.so, for an agent account and
# for an ordinary one; and `agent-shell --run -- /bin/true` with and without
# this boot's probe cache. Called by bench/bench.sh (as root); this builds
# nothing.
#
# Usage: bench/ssh.sh BUILD_DIR OUT_DIR WARMUP MIN_RUNS WORKSPACE XDG_DIR
#   (WORKSPACE and XDG_DIR: nobody's, for the --run rows)
#
# Nothing on the host changes: everything runs in a private mount namespace
# made the way tests/e2e/run.sh makes its world (tests/e2e/ns-setup.sh: an
# overlay on /etc, so the accounts, the PAM services and the config exist
# only there; a fresh /run, so the probe cache and session records are its
# own; /var/log and /dev its own too). Two sshds are started through
# symlinks named after their own PAM services, on free loopback ports; the
# machine's own sshd, /etc/pam.d/sshd and accounts are never touched. The
# teardown kills what it started by pid and everything left in that
# namespace, then removes the directory.
set -u
export LC_ALL=C

build=$1 out=$2 warmup=$3 min_runs=$4 ws=$5 xdg=$6
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
e2e=$src/tests/e2e
py=/usr/bin/python3
sshd_bin=/usr/sbin/sshd

skip() { echo "ssh bench: skipped: $*"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip "needs root (a private sshd and accounts)"
for f in "$sshd_bin" /usr/bin/ssh /usr/bin/ssh-keygen "$py" /usr/bin/unshare /usr/bin/nsenter \
	/usr/sbin/useradd /usr/sbin/groupadd; do
	[ -x "$f" ] || skip "$f missing (make deps installs openssh-server, openssh-client, python3)"
done
for f in agent-shell agent-shell-launcher pam_agent_sandbox.so; do
	[ -f "$build/$f" ] || skip "$build/$f missing"
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip "no overlayfs (needed for a private /etc)"
# The cache rows need agent-shell --probe-cache (a build before it has none).
has_cache=false
"$build/agent-shell" --help 2>/dev/null | grep -q -- '--probe-cache' && has_cache=true

r=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
T=$(mktemp -d /tmp/sbxbench-XXXXXX) || exit 1
chmod 0755 "$T"
W=$T/world WN=/run/e2e	# the world is bound at /run/e2e in the namespace
svc=sbxbench-$r group=sbxbench-$r agent=sbxba-$r plain=sbxbp-$r
holder="" sink="" sshd_pids=()

cleanup() {
	local p ns h
	trap - EXIT INT TERM
	for p in "${sshd_pids[@]}" $sink; do kill "$p" 2>/dev/null; done
	# The accounts' uids exist only in the namespace; a host process with
	# the same number is not ours.
	for uid in $(cat "$T/uids" 2>/dev/null); do
		for p in $(awk -v u="$uid" '/^Uid:/ { if ($2 == u) print FILENAME }' \
				/proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
			[ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$(readlink /proc/self/ns/mnt)" ] &&
				continue
			kill -KILL "$p" 2>/dev/null
		done
	done
	if [ -n "$holder" ] && ns=$(readlink "/proc/$holder/ns/mnt") &&
		[ "$ns" != "$(readlink /proc/self/ns/mnt)" ]; then
		for h in /proc/[0-9]*; do
			[ "$(readlink "$h/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
			[ "${h#/proc/}" = "$holder" ] || kill -KILL "${h#/proc/}" 2>/dev/null
		done
		kill "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	fi
	wait 2>/dev/null
	case "$T" in /tmp/sbxbench-*) rm -rf --one-file-system "$T" ;; esac
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NS() { nsenter -t "$holder" -m -- "$@"; }

setup() {
	local u port v
	mkdir -p "$W"/{bin,keys,sshd,ws,home,state,client,out,lib/agent-sandbox} || return 1
	chmod 0755 "$W" "$W"/{bin,keys,sshd,ws,home,state,lib,lib/agent-sandbox}
	chmod 0777 "$W/out"	# hyperfine writes there as nobody
	chmod 0700 "$W/client"
	# As "make install" lays it out.
	install -m 0755 "$build/agent-shell-launcher" "$W/bin/agent-shell" || return 1
	install -m 0755 "$build/agent-shell" "$W/lib/agent-sandbox/agent-shell" || return 1
	install -m 0644 "$build/pam_agent_sandbox.so" "$W/bin/pam_agent_sandbox.so" || return 1
	touch "$W/syslog.log"

	unshare -m --propagation private sleep 100000 &
	holder=$!
	for _ in $(seq 50); do
		[ "$(readlink "/proc/$holder/ns/mnt" 2>/dev/null)" != "$(readlink /proc/self/ns/mnt)" ] &&
			[ "$(cat "/proc/$holder/comm" 2>/dev/null)" = sleep ] && break
		sleep 0.1
	done
	[ "$(readlink "/proc/$holder/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ] || return 1
	NS /bin/bash "$e2e/ns-setup.sh" "$(readlink /proc/self/ns/mnt)" "$W" || return 1
	# A syslog sink, so that every run logs as on a host with a daemon.
	nsenter -t "$holder" -m -- "$py" "$e2e/e2e_helper.py" sink /dev/log "$WN/syslog.log" &
	sink=$!

	NS groupadd --system "$group" || return 1
	NS useradd --system -M -g "$group" -s "$WN/bin/agent-shell" -d "$WN/home/$agent" "$agent" ||
		return 1
	NS useradd --system -M -g "$group" -s /bin/bash -d "$WN/home/$plain" "$plain" || return 1
	for u in $agent $plain; do
		NS id -u "$u" >>"$T/uids" || return 1
		mkdir -m 0755 "$W/home/$u" "$W/ws/$u"
		NS chown "$u:$group" "$WN/ws/$u" "$WN/home/$u"
	done
	AGENT_UID=$(NS id -u "$agent")

	NS mkdir -m 0755 /etc/agent-sandbox
	NS tee /etc/agent-sandbox/agent-sandbox.conf >/dev/null <<-EOF
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
	user $agent = bench
	EOF
	NS chmod 0644 /etc/agent-sandbox/agent-sandbox.conf
	NS "$WN/bin/agent-shell" --check-config >/dev/null || return 1

	# Two stacks: with the module (account and session lines as the
	# shipped snippet has them), and the same stack without it.
	for v in m n; do
		local acc="" ses=""
		if [ $v = m ]; then
			acc="account  [success=ok ignore=ignore default=die] $WN/bin/pam_agent_sandbox.so"
			ses="session  [success=ok ignore=ignore default=die] $WN/bin/pam_agent_sandbox.so netns"
		fi
		NS tee "/etc/pam.d/$svc-$v" >/dev/null <<-EOF
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
	for u in $agent $plain; do install -m 0644 "$W/client/id.pub" "$W/keys/$u"; done
	echo "sbxbench $(cut -d' ' -f1,2 "$W/sshd/hostkey.pub")" >"$W/client/known_hosts"
	sed "s/^Match Group agents,reviewers\$/Match Group $group/" \
		"$src/etc/sshd_config.d/agent-sandbox.conf" >"$W/sshd/agent-sandbox.conf"
	for v in m n; do
		port=$("$py" "$e2e/e2e_helper.py" freeport)
		eval "PORT_$v=$port"
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
		AllowUsers $agent $plain
		MaxStartups 100:30:200
		Subsystem sftp /usr/lib/openssh/sftp-server
		EOF
		ln -s "$sshd_bin" "$W/bin/$svc-$v"
		NS "$WN/bin/$svc-$v" -t -f "$WN/sshd/$v.conf" || return 1
		nsenter -t "$holder" -m -- "$WN/bin/$svc-$v" -D -f "$WN/sshd/$v.conf" -E "$WN/sshd/$v.log" &
		sshd_pids+=($!)
	done
	for v in m n; do
		eval "port=\$PORT_$v"
		for _ in $(seq 100); do
			[ "$("$py" "$e2e/e2e_helper.py" probe "$port")" != refused ] && break
			sleep 0.1
		done
	done
	return 0
}

if ! setup >"$T/setup.out" 2>&1; then
	echo "ssh bench: set-up failed:"
	sed 's/^/  /' "$T/setup.out" | tail -20
	exit 1
fi

# The client command line, for hyperfine: VARIANT USER [KEX]. The rows
# use curve25519-sha256: Debian 12's default key exchange
# (sntrup761x25519-sha512) cost ~130 ms of client CPU per connection on the
# 2-vCPU machine this was written on, with a spread that hid every other
# difference; one row keeps the default, for the figure a client sees.
ssh_cmd() {
	local port kex=${3:-curve25519-sha256}
	eval "port=\$PORT_$1"
	printf 'ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes -o HostKeyAlias=sbxbench -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o ControlMaster=no -o ControlPath=none -o LogLevel=ERROR%s -p %s %s@127.0.0.1 true' \
		"$W/client/id" "$W/client/known_hosts" "${kex:+ -o KexAlgorithms=$kex}" "$port" "$2"
}
cache_on() { NS "$WN/bin/agent-shell" --probe-cache "$agent" "$@" >"$T/cache.out" 2>&1; }
cache_off() { NS rm -f "/run/agent-sandbox/probe/$AGENT_UID" /run/agent-sandbox/probe/65534; }

# Each command once first: a failing one is a finding, not a number.
rows=(
	"ssh plain@host true, stack without the module, default key exchange|$(ssh_cmd n "$plain" "")"
	"ssh plain@host true, stack without the module|$(ssh_cmd n "$plain")"
	"ssh plain@host true, stack with the module (not an agent: PAM_IGNORE)|$(ssh_cmd m "$plain")"
	"ssh agent@host true, stack without the module (agent-shell only)|$(ssh_cmd n "$agent")"
	"ssh agent@host true, with the module (PAM stage + agent-shell)|$(ssh_cmd m "$agent")"
)
for e in "${rows[@]}"; do
	if ! bash -c "${e#*|}" >"$T/pre.out" 2>&1; then
		echo "ssh bench: '${e%%|*}' failed: $(head -c 400 "$T/pre.out")"
		tail -n 5 "$W/sshd/m.log" "$W/sshd/n.log" 2>/dev/null
		grep -F "$agent" "$W/syslog.log" | tail -n 5
		exit 1
	fi
done

hf=(hyperfine -N --warmup "$warmup" --min-runs "$min_runs" --style basic)
args=()
for e in "${rows[@]}"; do args+=(-n "${e%%|*}" "${e#*|}"); done
cache_off
"${hf[@]}" --export-json "$T/ssh-nocache.json" "${args[@]}" >"$T/hf1.out" 2>&1 ||
	{ echo "ssh bench: hyperfine failed"; tail -20 "$T/hf1.out"; exit 1; }
parts=("$T/ssh-nocache.json")

# The same login, and agent-shell --run as nobody in the same world, with
# this boot's probe cache written by root, then without.
run_cmd="$WN/lib/agent-sandbox/agent-shell --run --workspace $ws -- /bin/true"
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups -- env -i
	PATH=/usr/bin:/bin HOME=/ LANG=C.UTF-8 "XDG_RUNTIME_DIR=$xdg")
if $has_cache; then
	if cache_on nobody && grep -q "(uid $AGENT_UID): cached for this boot" "$T/cache.out" &&
		grep -q "(uid 65534): cached for this boot" "$T/cache.out"; then
		"${hf[@]}" --export-json "$T/ssh-cache.json" \
			-n "ssh agent@host true, with the module, probe cache" "$(ssh_cmd m "$agent")" \
			>"$T/hf2.out" 2>&1 && parts+=("$T/ssh-cache.json")
		NS "${as_nobody[@]}" "${hf[@]}" --export-json "$WN/out/run-cache.json" \
			-n "agent-shell --run -- /bin/true as nobody, probe cache" "$run_cmd" \
			>"$T/hf3.out" 2>&1 && parts+=("$W/out/run-cache.json")
	else
		echo "ssh bench: agent-shell --probe-cache wrote no entry: $(cat "$T/cache.out")"
	fi
	cache_off
fi
NS "${as_nobody[@]}" "${hf[@]}" --export-json "$WN/out/run-nocache.json" \
	-n "agent-shell --run -- /bin/true as nobody, no probe cache" "$run_cmd" \
	>"$T/hf4.out" 2>&1 && parts+=("$W/out/run-nocache.json")

jq -s '{results: (map(.results) | add)}' "${parts[@]}" >"$out/ssh.json"
{
	echo "| command | mean ± σ (ms) | median (ms) | min (ms) | max (ms) | median vs plain, no module |"
	echo "|---|---|---|---|---|---|"
	jq -r '
	  def ms: . * 1000 * 100 | round / 100;
	  def f: ms | tostring | if test("\\.") then . else . + ".0" end;
	  .results[1].median as $base
	  | .results[]
	  | "| \(.command) | \(.mean | f) ± \(.stddev | f) | \(.median | f) | \(.min | f) | \(.max | f) | \(.median / $base * 100 | round / 100)× |"
	' "$out/ssh.json"
} >"$out/ssh.md"
cat "$out/ssh.md"
