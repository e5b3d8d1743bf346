#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end tier: a real sshd on loopback, real agent accounts, every entry path (DESIGN 2, 7).
#
# Usage: tests/e2e/run.sh BUILD_DIR      (root; prints cmocka-style summary lines)
#
# Where everything lives, and why nothing on the host changes:
#   The whole world runs in a private mount namespace held by one "sleep"
#   process (unshare -m). In it:
#     /etc  an overlay over the host's /etc (upper layer on a tmpfs): the
#           agent accounts (useradd), /etc/pam.d/sbxe2e-<rand>* and
#           /etc/agent-sandbox/agent-sandbox.conf exist only there. So the
#           SHIPPED agent-shell (which only reads the fixed config path) is
#           tested as installed, and an existing host config is never touched.
#     /var/log  an overlay too (lastlog, wtmp of the accounts and sessions).
#     /run  a fresh tmpfs: /run/sshd (privilege separation) and
#           /run/agent-sandbox (the session records, the fixed path the shell
#           verifies) are the test's own; /run/e2e is a bind of the test
#           directory (binaries, keys, state dir, workspaces, logs).
#     /dev  a small tmpfs with the usual nodes bound from the host, devpts,
#           and /dev/log: a socket our syslog sink reads (no syslog daemon
#           runs on the host, and syslog(3) only knows /dev/log).
#   Teardown kills the sshds, the sink, the listener and the holder by pid;
#   the namespace and every mount, account and PAM file in it go with them.
#   The test directory is under /tmp on the host, but the sessions never see
#   it there: the PAM stage mounts a private /tmp, so the world is reached
#   at /run/e2e (root-owned all the way up, as the trust checks want).
#
#   Four sshds, each started through its own symlink to /usr/sbin/sshd so
#   that its PAM service is the symlink's name (DESIGN 2):
#     A  sbxe2e-<r>    shipped drop-in, module "netns", external sftp-server
#     B  sbxe2e-<r>-b  no drop-in,      module "netns"
#     C  sbxe2e-<r>-c  no drop-in,      no netns (the hole the drop-in closes)
#     D  sbxe2e-<r>-d  shipped drop-in, module "netns", internal-sftp
set -u
export LC_ALL=C

BUILD=${1:-${BUILD:-build}}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
HELPER=$HERE/e2e_helper.py
SSHD=/usr/sbin/sshd
SFTP_SERVER=/usr/lib/openssh/sftp-server

n_pass=0 n_fail=0 failed=()
summary() {
	echo "[==========] $((n_pass + n_fail)) test(s) run."
	echo "[  PASSED  ] $n_pass test(s)."
	if [ "$n_fail" -gt 0 ]; then
		echo "[  FAILED  ] $n_fail test(s), listed below:"
		printf '[  FAILED  ] %s\n' "${failed[@]}"
	fi
}
skip_all() {
	echo "[==========] e2e_sshd: skipped: $*"
	echo "[  SKIPPED ] 1 test(s)."
	exit 0
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root (CI runs as root)"
for f in "$SSHD" "$SFTP_SERVER" /usr/bin/ssh /usr/bin/scp /usr/bin/sftp /usr/bin/ssh-keygen \
	/usr/bin/ssh-agent "$PY" /usr/bin/unshare /usr/bin/nsenter /usr/sbin/useradd; do
	[ -x "$f" ] || skip_all "$f missing (make deps installs openssh-server, openssh-client, openssh-sftp-server, python3)"
done
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || skip_all "build dir $1 missing"
for f in "$BUILD/agent-shell" "$BUILD/pam_agent_sandbox.so"; do
	[ -f "$f" ] || { echo "e2e: $f missing (make all)"; echo "[  FAILED  ] 1 test(s)"; exit 1; }
done
# An ASan-built PAM module cannot be dlopen()ed by the uninstrumented sshd
# ("ASan runtime does not come first"): this tier tests the shipped build.
if nm -D "$BUILD/pam_agent_sandbox.so" 2>/dev/null | grep -q __asan_init; then
	skip_all "sanitizer build: sshd cannot load an ASan PAM module (run the normal build's check)"
fi
unshare -m --propagation private true 2>/dev/null || skip_all "cannot create a mount namespace"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip_all "no overlayfs (needed for a private /etc)"

R=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
T=$(mktemp -d /tmp/sbxe2e-XXXXXX) || exit 1
chmod 0755 "$T"
W=$T/world		# the same directory is /run/e2e inside the namespace
WN=/run/e2e
GROUP=sbxe2e-agents-$R
AGENT=sbxa-$R		# isolated home, the main account
EPH=sbxe-$R		# ephemeral home, for the 50 concurrent sessions
WRONG=sbxw-$R		# in the agents' group, but its login shell is bash
FLOOR=sbxf-$R		# its profile requires a guarantee it can never hold
LIMIT=sbxl-$R		# max_sessions = 2
SVC=sbxe2e-$R
OPEN=/var/tmp/sbxe2e-$R	# agent-writable by Unix permissions, outside the workspace
HOLDER="" SINK="" LISTENER="" AGENT_PID="" SSHD_PIDS=()

cleanup() {
	local p uid
	trap - EXIT INT TERM
	for p in "${SSHD_PIDS[@]}" $SINK $LISTENER $AGENT_PID; do
		kill "$p" 2>/dev/null
	done
	# Session processes of our accounts (uids exist only in our namespace).
	for uid in $(cat "$T/uids" 2>/dev/null); do
		for p in $(awk -v u="$uid" '/^Uid:/ { if ($2 == u) print FILENAME }' \
				/proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
			kill -KILL "$p" 2>/dev/null
		done
	done
	# Everything still in our mount namespace was started by this test
	# (sshds, their session processes, the sink): none may outlive it.
	if [ -n "$HOLDER" ] && ns=$(readlink "/proc/$HOLDER/ns/mnt") &&
		[ "$ns" != "$(readlink /proc/self/ns/mnt)" ]; then
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
			[ "${p#/proc/}" = "$HOLDER" ] || kill -KILL "${p#/proc/}" 2>/dev/null
		done
	fi
	if [ -n "$HOLDER" ]; then
		kill "$HOLDER" 2>/dev/null
		wait "$HOLDER" 2>/dev/null
	fi
	wait 2>/dev/null
	# Nothing is mounted on the host side; -xdev is belt and braces.
	case "$T" in /tmp/sbxe2e-*) rm -rf --one-file-system "$T" ;; esac
	[ -d "$OPEN" ] && rm -rf --one-file-system "$OPEN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

NS() { nsenter -t "$HOLDER" -m -- "$@"; }
# In the background, with $! the daemon itself: a function run with "&"
# would be a subshell whose pid is not the daemon's (teardown killed the
# subshell and left sshd and the sink running).
NSBG() { nsenter -t "$HOLDER" -m -- "$@" & }

# ---- set-up -------------------------------------------------------------

setup() {
	local u svc port v
	mkdir -p "$W"/{bin,keys,sshd,ws,home,state,secret,client} || return 1
	mkdir -m 0700 "$OPEN" || return 1
	chmod 0755 "$W" "$W"/{bin,keys,sshd,ws,home,state} || return 1
	chmod 0700 "$W/secret" "$W/client"
	echo "top secret $R" >"$W/secret/token"
	install -m 0755 "$BUILD/agent-shell" "$W/bin/agent-shell" || return 1
	install -m 0644 "$BUILD/pam_agent_sandbox.so" "$W/bin/pam_agent_sandbox.so" || return 1
	# A PAM line that proves the stack in effect is ours (a missing
	# /etc/pam.d/X would silently fall back to "other").
	cat >"$W/bin/pam-marker" <<-EOF
	#!/bin/sh
	echo "stack=\$PAM_SERVICE type=\$PAM_TYPE user=\$PAM_USER" >>$WN/pam-marker.log
	EOF
	chmod 0755 "$W/bin/pam-marker"
	touch "$W/pam-marker.log" "$W/syslog.log"

	# The holder of the private mount namespace.
	unshare -m --propagation private sleep 100000 &
	HOLDER=$!
	for _ in $(seq 50); do
		[ "$(readlink /proc/$HOLDER/ns/mnt 2>/dev/null)" != "$(readlink /proc/self/ns/mnt)" ] &&
			[ "$(cat /proc/$HOLDER/comm 2>/dev/null)" = sleep ] && break
		sleep 0.1
	done
	[ "$(cat /proc/$HOLDER/comm 2>/dev/null)" = sleep ] || return 1
	[ "$(readlink /proc/$HOLDER/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || return 1
	# The mounts, in the namespace only (ns-setup.sh refuses to run in ours).
	NS /bin/bash "$HERE/ns-setup.sh" "$(readlink /proc/self/ns/mnt)" "$W" || return 1

	NSBG "$PY" "$HELPER" sink /dev/log "$WN/syslog.log"
	SINK=$!
	"$PY" "$HELPER" listen "$T/listen.port" "$T/listen.log" &
	LISTENER=$!

	# Accounts, in the namespace's /etc only.
	NS groupadd --system "$GROUP" || return 1
	for u in $AGENT $EPH $FLOOR $LIMIT; do
		NS useradd --system -M -g "$GROUP" -s "$WN/bin/agent-shell" -d "$WN/home/$u" "$u" ||
			return 1
	done
	NS useradd --system -M -g "$GROUP" -s /bin/bash -d "$WN/home/$WRONG" "$WRONG" || return 1
	for u in $AGENT $EPH $FLOOR $LIMIT $WRONG; do
		NS id -u "$u" >>"$T/uids" || return 1
		mkdir -m 0755 "$W/home/$u" "$W/ws/$u"
		NS chown "$u:$GROUP" "$WN/ws/$u"
	done
	# A host directory the agent may write by Unix permissions, outside its
	# workspace and visible in the sandbox: only the sandbox keeps it out.
	chown "$(NS id -u "$AGENT")" "$OPEN"

	# The config, at the fixed path the shipped shell reads.
	NS mkdir -m 0755 /etc/agent-sandbox
	NS tee /etc/agent-sandbox/agent-sandbox.conf >/dev/null <<-EOF
	[global]
	state_dir = $WN/state
	agent_shell = $WN/bin/agent-shell

	[profile e2e]
	workspace_root = $WN/ws/%u
	workspace_read = allow
	workspace_write = allow
	host_read = allow
	host_write = deny
	network = deny
	command = allow
	home = isolated
	shell = /bin/bash
	deny_read = $WN/secret
	services = $SVC $SVC-b $SVC-c $SVC-d
	max_sessions = 64
	pam_stage = required
	min_level = degraded
	require = write_boundary no_privilege_gain syscall_filter env_scrub

	[profile e2e-eph]
	inherit = e2e
	home = ephemeral

	# ExecBoundary needs a command gate; this profile allows every command,
	# so its floor can never be met.
	[profile e2e-floor]
	inherit = e2e
	require = exec_boundary

	[profile e2e-limit]
	inherit = e2e-eph
	max_sessions = 2

	[match]
	user $AGENT = e2e
	user $WRONG = e2e
	user $EPH = e2e-eph
	user $FLOOR = e2e-floor
	user $LIMIT = e2e-limit
	EOF
	NS chmod 0644 /etc/agent-sandbox/agent-sandbox.conf
	NS "$WN/bin/agent-shell" --check-config >"$T/check-config.out" 2>&1 || {
		cat "$T/check-config.out"; return 1; }

	# PAM services: one per sshd (the name is the sshd symlink's name).
	for svc in "$SVC" "$SVC-b" "$SVC-c" "$SVC-d"; do
		local netns=netns
		[ "$svc" = "$SVC-c" ] && netns=""
		NS tee "/etc/pam.d/$svc" >/dev/null <<-EOF
		# e2e stack (tests/e2e/run.sh); key auth only, no passwords.
		auth     required pam_unix.so
		account  required pam_exec.so quiet $WN/bin/pam-marker
		account  [success=ok ignore=ignore default=die] $WN/bin/pam_agent_sandbox.so runtime_dir=/run/agent-sandbox
		account  required pam_unix.so
		password required pam_deny.so
		session  required pam_exec.so quiet $WN/bin/pam-marker
		session  required pam_unix.so
		session  [success=ok ignore=ignore default=die] $WN/bin/pam_agent_sandbox.so runtime_dir=/run/agent-sandbox $netns
		EOF
	done

	# Keys.
	ssh-keygen -q -t ed25519 -N '' -C e2e-host -f "$W/sshd/hostkey" || return 1
	ssh-keygen -q -t ed25519 -N '' -C e2e-client -f "$W/client/id" || return 1
	for u in $AGENT $EPH $FLOOR $LIMIT $WRONG; do
		install -m 0644 "$W/client/id.pub" "$W/keys/$u"
	done
	echo "sbxe2e $(cut -d' ' -f1,2 "$W/sshd/hostkey.pub")" >"$W/client/known_hosts"
	sed "s/^Match Group agents\$/Match Group $GROUP/" \
		"$SRC/etc/sshd_config.d/agent-sandbox.conf" >"$W/sshd/agent-sandbox.conf"
	grep -q "^Match Group $GROUP\$" "$W/sshd/agent-sandbox.conf" || return 1

	# sshd configs. The drop-in comes first, as Debian's sshd_config does
	# it; the permissive lines after it stand for a main file that allows
	# everything (the drop-in must win).
	for v in a b c d; do
		port=$("$PY" "$HELPER" freeport)
		eval "PORT_$v=$port"
		{
			[ "$v" = a ] || [ "$v" = d ] && echo "Include $WN/sshd/agent-sandbox.conf"
			cat <<-EOF
			Port $port
			ListenAddress 127.0.0.1
			HostKey $WN/sshd/hostkey
			PidFile $WN/sshd/$v.pid
			UsePAM yes
			PubkeyAuthentication yes
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			AuthorizedKeysFile $WN/keys/%u
			StrictModes yes
			LogLevel VERBOSE
			AllowUsers $AGENT $EPH $FLOOR $LIMIT $WRONG
			MaxStartups 100:30:200
			MaxSessions 20
			AllowTcpForwarding yes
			AllowAgentForwarding yes
			AllowStreamLocalForwarding yes
			GatewayPorts no
			PermitUserRC yes
			X11Forwarding yes
			EOF
			if [ "$v" = d ]; then
				echo "Subsystem sftp internal-sftp"
			else
				echo "Subsystem sftp $SFTP_SERVER"
			fi
		} >"$W/sshd/$v.conf"
		svc=$SVC
		[ "$v" = a ] || svc=$SVC-$v
		ln -s "$SSHD" "$W/bin/$svc"
		NS "$WN/bin/$svc" -t -f "$WN/sshd/$v.conf" || return 1
		NSBG "$WN/bin/$svc" -D -f "$WN/sshd/$v.conf" -E "$WN/sshd/$v.log"
		SSHD_PIDS+=($!)
	done
	for v in a b c d; do
		eval "port=\$PORT_$v"
		for _ in $(seq 100); do
			[ "$("$PY" "$HELPER" probe "$port")" != refused ] && break
			sleep 0.1
		done
	done
	for _ in $(seq 50); do [ -s "$T/listen.port" ] && break; sleep 0.1; done
	LPORT=$(cat "$T/listen.port") || return 1
	AGENT_UID=$(NS id -u "$AGENT")
	return 0
}

# ---- client helpers ------------------------------------------------------

SSH_OPTS=()
ssh_opts() {
	SSH_OPTS=(-F /dev/null -i "$W/client/id" -o IdentitiesOnly=yes -o BatchMode=yes
		-o HostKeyAlias=sbxe2e -o UserKnownHostsFile="$W/client/known_hosts"
		-o StrictHostKeyChecking=yes -o ConnectTimeout=10 -o LogLevel=ERROR
		-o ControlMaster=no -o ControlPath=none)
}
# sshv VARIANT USER [ssh args...]
sshv() {
	local v=$1 u=$2 port
	shift 2
	eval "port=\$PORT_$v"
	timeout 60 ssh "${SSH_OPTS[@]}" -p "$port" "$@" "$u@127.0.0.1"
}
# A "ssh host cmd" variant with the command last.
sshc() {
	local v=$1 u=$2 port
	shift 2
	eval "port=\$PORT_$v"
	timeout 60 ssh "${SSH_OPTS[@]}" -p "$port" "$u@127.0.0.1" "$@"
}
listener_count() { wc -l <"$T/listen.log" 2>/dev/null | tr -d ' ' || echo 0; }
syslog_has() { grep -F -- "$1" "$W/syslog.log" | grep -qF -- "${2:-}"; }
# wait_for CMD... : retry for up to 10 s (sshd closes a session after the client exits).
wait_for() {
	for _ in $(seq 100); do "$@" && return 0; sleep 0.1; done
	"$@"
}

# The probe a session runs: namespaces, status lines, HOME, writes.
PROBE='for n in mnt net pid user; do echo "ns_$n=$(readlink /proc/self/ns/$n)"; done
grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status | tr -d "\t" | sed "s/:/=/"
echo "HOME=$HOME"; echo "SID=$AGENT_SANDBOX_SESSION"; echo "PWD=$(pwd)"
if (echo x >/etc/sbxe2e-probe) 2>/dev/null; then echo etc_write=allowed; else echo etc_write=refused; (echo x >/etc/sbxe2e-probe) 2>&1 | sed "s/^/why: /"; fi
if (echo x >'"$OPEN"'/from-shell) 2>/dev/null; then echo open_write=allowed; else echo open_write=refused; (echo x >'"$OPEN"'/from-shell) 2>&1 | sed "s/^/why: /"; fi
if cat '"$WN"'/secret/token >/dev/null 2>&1; then echo secret=readable; else echo secret=hidden; fi
echo kept >'"$WN"'/ws/$USER/from-ssh && echo ws_write=ok
echo home >$HOME/home-marker && echo home_write=ok
echo done'

# check_confined FILE: the probe output shows a confined session.
check_confined() {
	local f=$1 ok=0 n
	for n in mnt net pid user; do
		if grep -qx "ns_$n=$(readlink /proc/self/ns/$n)" "$f"; then
			echo "  $n namespace is the host's"; ok=1
		fi
	done
	grep -qx "NoNewPrivs=1" "$f" || { echo "  NoNewPrivs not 1"; ok=1; }
	grep -qx "Seccomp=2" "$f" || { echo "  Seccomp not 2"; ok=1; }
	grep -qx "CapEff=0000000000000000" "$f" || { echo "  CapEff not 0"; ok=1; }
	grep -qx "HOME=$WN/home/$AGENT" "$f" || { echo "  HOME wrong"; ok=1; }
	grep -qx "etc_write=refused" "$f" || { echo "  write to /etc not refused"; ok=1; }
	grep -qx "open_write=refused" "$f" || { echo "  write outside the workspace not refused"; ok=1; }
	grep -qx "secret=hidden" "$f" || { echo "  deny_read secret readable"; ok=1; }
	grep -qx "ws_write=ok" "$f" || { echo "  workspace write failed"; ok=1; }
	grep -qx "home_write=ok" "$f" || { echo "  home write failed"; ok=1; }
	[ ! -e /etc/sbxe2e-probe ] || { echo "  /etc/sbxe2e-probe exists on the host"; ok=1; }
	[ ! -e "$OPEN/from-shell" ] || { echo "  $OPEN/from-shell was written"; ok=1; }
	[ "$(cat "$W/ws/$AGENT/from-ssh" 2>/dev/null)" = kept ] ||
		{ echo "  workspace file not kept on the host"; ok=1; }
	# The home the session wrote is the isolated home under the state dir,
	# bound at the passwd home only inside the session.
	[ -f "$W/state/homes/$AGENT/home-marker" ] || { echo "  not the isolated home"; ok=1; }
	[ ! -e "$W/home/$AGENT/home-marker" ] || { echo "  wrote the host's passwd home"; ok=1; }
	return $ok
}

# check_logged FILE: the PAM line and the shell's report share the session id.
check_logged() {
	local sid
	sid=$(sed -n 's/^SID=//p' "$1")
	[ -n "$sid" ] || { echo "  no AGENT_SANDBOX_SESSION in the session"; return 1; }
	wait_for syslog_has "session=$sid" "pam_stage=" ||
		{ echo "  no PAM-stage line for session $sid"; return 1; }
	wait_for syslog_has "session=$sid" "level=" ||
		{ echo "  no report line for session $sid"; return 1; }
	syslog_has "session=$sid" "floor=met" || { echo "  report: floor not met"; return 1; }
	echo "  session $sid: $(grep -F "session=$sid" "$W/syslog.log" | grep -o 'level=[a-z]*' | head -1)"
	return 0
}

# ---- tests ---------------------------------------------------------------

t_pam_stack_in_effect() {
	sshc a "$AGENT" true || return 1
	wait_for grep -qx "stack=$SVC type=open_session user=$AGENT" "$W/pam-marker.log" ||
		{ echo "  pam-marker did not run for $SVC"; return 1; }
	grep -qx "stack=$SVC type=account user=$AGENT" "$W/pam-marker.log" || return 1
	# Our module, from our stack, with our service name.
	syslog_has "pam_agent_sandbox($SVC:session)" "service=$SVC " ||
		{ echo "  no module line from service $SVC"; return 1; }
}

t_ssh_command_confined() {
	rm -f "$W/ws/$AGENT/from-ssh"
	sshc a "$AGENT" "$PROBE" >"$T/cmd.out" 2>&1
	local rc=$?
	sed 's/^/  | /' "$T/cmd.out"
	[ $rc -eq 0 ] || { echo "  ssh exit $rc"; return 1; }
	grep -qx done "$T/cmd.out" || return 1
	check_confined "$T/cmd.out" && check_logged "$T/cmd.out"
}

t_pty_session_confined() {
	rm -f "$W/ws/$AGENT/from-ssh" "$W/state/homes/$AGENT/home-marker"
	{ echo "$PROBE"; echo '[ -t 0 ]; echo "t0=$?"; [ -t 1 ]; echo "t1=$?"; ls -l /proc/self/fd/0 /proc/self/fd/1; echo "ttyname=$(tty)"'; echo exit; } |
		sshv a "$AGENT" -tt >"$T/pty.out" 2>&1
	local rc=$?
	# Terminal output: drop CRs and readline's escape sequences.
	tr -d '\r' <"$T/pty.out" | sed 's/\x1b\[[?0-9;]*[a-zA-Z]//g' >"$T/pty.txt"
	[ $rc -eq 0 ] || { echo "  ssh -tt exit $rc"; tail -5 "$T/pty.txt"; return 1; }
	# stdin/stdout are a pty of the sandbox's own devpts, relayed by its
	# init to sshd's pty: it has a name inside, and it is not sshd's.
	grep -m1 '^ttyname=' "$T/pty.txt" | sed 's/^/  /'
	grep -qx 'ttyname=/dev/pts/0' "$T/pty.txt" || { echo "  the program's terminal is not the sandbox's /dev/pts/0"; return 1; }
	grep -qx 't0=0' "$T/pty.txt" && grep -qx 't1=0' "$T/pty.txt" || { echo "  no pty:"; sed 's/^/  | /' "$T/pty.txt" | tail -30; return 1; }
	check_confined "$T/pty.txt" && check_logged "$T/pty.txt"
}

t_scp_workspace_only() {
	local src=$T/scp-src
	echo "scp $R" >"$src"
	rm -f "$W/ws/$AGENT/scp-in"
	eval "port=\$PORT_a"
	timeout 60 scp -q "${SSH_OPTS[@]}" -P "$port" "$src" "$AGENT@127.0.0.1:$WN/ws/$AGENT/scp-in" ||
		{ echo "  scp into the workspace failed"; return 1; }
	[ "$(cat "$W/ws/$AGENT/scp-in")" = "scp $R" ] || return 1
	timeout 60 scp -q "${SSH_OPTS[@]}" -P "$port" "$AGENT@127.0.0.1:$WN/ws/$AGENT/scp-in" "$T/scp-back" ||
		return 1
	cmp -s "$src" "$T/scp-back" || return 1
	if timeout 60 scp -q "${SSH_OPTS[@]}" -P "$port" "$src" "$AGENT@127.0.0.1:$OPEN/scp-out" \
			2>"$T/scp.err"; then
		echo "  scp outside the workspace succeeded"; return 1
	fi
	echo "  refused: $(head -1 "$T/scp.err")"
	[ ! -e "$OPEN/scp-out" ] || return 1
	# Secrets stay hidden from scp too.
	if timeout 60 scp -q "${SSH_OPTS[@]}" -P "$port" "$AGENT@127.0.0.1:$WN/secret/token" \
			"$T/scp-secret" 2>/dev/null; then
		echo "  scp read a deny_read secret"; return 1
	fi
	return 0
}

# sftp_batch VARIANT FILE: run a batch (each line may fail: "-" prefix is not used,
# so one batch per expectation).
sftp_batch() {
	local port
	eval "port=\$PORT_$1"
	timeout 60 sftp -q "${SSH_OPTS[@]}" -P "$port" -b "$2" "$AGENT@127.0.0.1"
}

t_sftp_external_confined() {
	echo "sftp $R" >"$T/sftp-src"
	rm -f "$W/ws/$AGENT/sftp-in" "$OPEN/sftp-out"
	printf 'put %s %s/ws/%s/sftp-in\nget /proc/self/status %s/sftp-status\n' \
		"$T/sftp-src" "$WN" "$AGENT" "$T" >"$T/b1"
	sftp_batch a "$T/b1" >/dev/null || { echo "  sftp put into the workspace failed"; return 1; }
	cmp -s "$T/sftp-src" "$W/ws/$AGENT/sftp-in" || return 1
	# The sftp-server process itself is confined: it runs under agent-shell.
	grep -E '^(NoNewPrivs|Seccomp):' "$T/sftp-status" | sed 's/^/  sftp-server /'
	grep -qP '^Seccomp:\t2$' "$T/sftp-status" || { echo "  sftp-server not under seccomp"; return 1; }
	grep -qP '^NoNewPrivs:\t1$' "$T/sftp-status" || return 1
	printf 'put %s %s/sftp-out\n' "$T/sftp-src" "$OPEN" >"$T/b2"
	if sftp_batch a "$T/b2" >"$T/sftp2.out" 2>&1; then
		echo "  sftp put outside the workspace succeeded"; return 1
	fi
	echo "  refused: $(grep -v '^sftp>' "$T/sftp2.out" | head -1)"
	[ ! -e "$OPEN/sftp-out" ] || return 1
	printf 'get %s/secret/token %s/sftp-secret\n' "$WN" "$T" >"$T/b3"
	if sftp_batch a "$T/b3" >/dev/null 2>&1 && [ -s "$T/sftp-secret" ]; then
		echo "  sftp read a deny_read secret"; return 1
	fi
	return 0
}

# internal-sftp runs inside sshd: only the PAM stage's mount view applies.
t_internal_sftp_pam_view_only() {
	local pid_status
	echo "isftp $R" >"$T/isftp-src"
	echo "isolated $R" >"$W/state/homes/$AGENT/isolated-marker"
	chown --reference="$W/state/homes/$AGENT" "$W/state/homes/$AGENT/isolated-marker"
	echo "host tmp $R" >"$T/host-tmp-marker"
	rm -f "$OPEN/isftp-out"
	cat >"$T/b4" <<-EOF
	get /proc/self/status $T/isftp-status
	-ls -1 $WN/home/$AGENT
	-ls -1a /tmp
	-ls -1a $WN/secret
	-get $WN/secret/token $T/isftp-secret
	put $T/isftp-src $WN/ws/$AGENT/isftp-in
	-put $T/isftp-src $OPEN/isftp-out
	EOF
	sftp_batch d "$T/b4" >"$T/isftp.out" 2>&1 || { cat "$T/isftp.out"; return 1; }
	sed 's/^/  | /' "$T/isftp.out"
	pid_status=$(grep -E '^(NoNewPrivs|Seccomp|CapEff):' "$T/isftp-status" | tr '\n\t' '  ')
	echo "  internal-sftp process: $pid_status"
	# PAM stage: the isolated home at the passwd home path ...
	grep -q "^$WN/home/$AGENT/isolated-marker\$" "$T/isftp.out" || { echo "  isolated home not bound"; return 1; }
	# ... a private /tmp (the host's /tmp holds $T) ...
	grep -v '^sftp>' "$T/isftp.out" | grep -q "$(basename "$T")" && { echo "  host /tmp visible"; return 1; }
	# ... the secret masked (an empty tmpfs) ...
	grep -qx "$WN/secret/token" "$T/isftp.out" && { echo "  secret visible"; return 1; }
	[ ! -s "$T/isftp-secret" ] || { echo "  secret read"; return 1; }
	cmp -s "$T/isftp-src" "$W/ws/$AGENT/isftp-in" || return 1
	# ... and NOT Landlock/seccomp: it runs in sshd's child, so a host
	# directory the account may write by Unix permissions is writable. This
	# is documented; the recommendation is the external sftp-server.
	grep -qP '^Seccomp:\t2$' "$T/isftp-status" && { echo "  unexpectedly under seccomp"; return 1; }
	[ -f "$OPEN/isftp-out" ] || { echo "  expected the documented gap (host write by Unix permissions)"; return 1; }
	echo "  documented: internal-sftp wrote $OPEN/isftp-out (outside the workspace; the external server refuses it)"
	rm -f "$OPEN/isftp-out"
	return 0
}

# Forwarding with the shipped drop-in: every kind refused.
t_forwarding_refused_with_dropin() {
	local before lp out ok=0 agent_sock
	before=$(listener_count)
	# -W (stdio forward).
	if echo | sshv a "$AGENT" -W "127.0.0.1:$LPORT" >"$T/w.out" 2>"$T/w.err"; then :; fi
	grep -q HELLO "$T/w.out" && { echo "  -W reached the host listener"; ok=1; }
	# -L.
	lp=$("$PY" "$HELPER" freeport)
	sshc a "$AGENT" -L "$lp:127.0.0.1:$LPORT" 'sleep 4' >/dev/null 2>"$T/l.err" &
	local spid=$!
	wait_for bash -c "[ \"\$($PY $HELPER probe $lp)\" != refused ]"
	out=$("$PY" "$HELPER" probe "$lp")
	echo "  -L: local end got: $out"
	[ "$out" = "data:HELLO" ] && ok=1
	# -D.
	local dp
	dp=$("$PY" "$HELPER" freeport)
	sshc a "$AGENT" -D "$dp" 'sleep 4' >/dev/null 2>"$T/d.err" &
	local dpid=$!
	wait_for bash -c "[ \"\$($PY $HELPER probe $dp)\" != refused ]"
	out=$("$PY" "$HELPER" socks "$dp" "$LPORT")
	echo "  -D: socks client got: $out"
	[ "$out" = "ok:data:HELLO" ] && ok=1
	wait $spid $dpid 2>/dev/null
	# -R: the server refuses to listen.
	if sshc a "$AGENT" -o ExitOnForwardFailure=yes -R "0:127.0.0.1:$LPORT" true 2>"$T/r.err"; then
		echo "  -R accepted"; ok=1
	else
		echo "  -R: $(grep -m1 -i forward "$T/r.err")"
	fi
	[ "$(listener_count)" = "$before" ] || { echo "  the host listener got a connection"; ok=1; }
	# -A: an agent on the client side, no socket on the server side.
	eval "$(ssh-agent -s -a "$T/agent.sock")" >/dev/null
	AGENT_PID=$SSH_AGENT_PID
	agent_sock=$(SSH_AUTH_SOCK=$T/agent.sock sshc a "$AGENT" -A 'echo "sock=$SSH_AUTH_SOCK"')
	echo "  -A: $agent_sock"
	[ "$agent_sock" = "sock=" ] || ok=1
	# -X: no DISPLAY in the session.
	out=$(DISPLAY=:99 sshc a "$AGENT" -X 'echo "display=$DISPLAY"' 2>/dev/null)
	echo "  -X: $out"
	[ "$out" = "display=" ] || ok=1
	# ~/.ssh/rc and ~/.ssh/environment in the (isolated) home.
	local h=$W/state/homes/$AGENT
	mkdir -p "$h/.ssh"
	printf 'echo rc-ran >%s/ws/%s/rc-marker\n' "$WN" "$AGENT" >"$h/.ssh/rc"
	echo "SBXE2E_INJECTED=yes" >"$h/.ssh/environment"
	chown -R --reference="$h" "$h/.ssh"
	rm -f "$W/ws/$AGENT/rc-marker"
	out=$(sshc a "$AGENT" 'echo "env=${SBXE2E_INJECTED:-unset}"')
	echo "  ~/.ssh/environment: $out; ~/.ssh/rc: $([ -e "$W/ws/$AGENT/rc-marker" ] && echo ran || echo not run)"
	[ "$out" = "env=unset" ] || ok=1
	[ ! -e "$W/ws/$AGENT/rc-marker" ] || ok=1
	# sshd's own view of it.
	grep -q "refused local port forward\|Received request to connect.*refused\|forwarding disabled\|administratively prohibited" \
		"$W/sshd/a.log" && echo "  sshd log: $(grep -m1 -o 'refused local port forward[^;]*\|forwarding disabled[^;]*' "$W/sshd/a.log")"
	return $ok
}

# Without the drop-in, with the PAM-stage netns: forwarders reach nothing.
t_forwarding_netns_without_dropin() {
	local before lp dp out ok=0 rc
	# Positive control: the listener is reachable from the host.
	before=$(listener_count)
	[ "$("$PY" "$HELPER" probe "$LPORT")" = data:HELLO ] || { echo "  listener down"; return 1; }
	wait_for bash -c "[ \$(wc -l <$T/listen.log) -gt $before ]" || return 1
	before=$(listener_count)
	echo | sshv b "$AGENT" -W "127.0.0.1:$LPORT" >"$T/bw.out" 2>"$T/bw.err"
	echo "  -W: $(grep -m1 . "$T/bw.err" || echo no error) / data: $(cat "$T/bw.out")"
	grep -q HELLO "$T/bw.out" && ok=1
	lp=$("$PY" "$HELPER" freeport)
	sshc b "$AGENT" -L "$lp:127.0.0.1:$LPORT" 'sleep 4' >/dev/null 2>&1 &
	local spid=$!
	wait_for bash -c "[ \"\$($PY $HELPER probe $lp)\" != refused ]"
	out=$("$PY" "$HELPER" probe "$lp")
	echo "  -L: $out"
	[ "$out" = "data:HELLO" ] && ok=1
	dp=$("$PY" "$HELPER" freeport)
	sshc b "$AGENT" -D "$dp" 'sleep 4' >/dev/null 2>&1 &
	local dpid=$!
	wait_for bash -c "[ \"\$($PY $HELPER probe $dp)\" != refused ]"
	out=$("$PY" "$HELPER" socks "$dp" "$LPORT")
	echo "  -D: $out"
	[ "$out" = "ok:data:HELLO" ] && ok=1
	wait $spid $dpid 2>/dev/null
	[ "$(listener_count)" = "$before" ] || { echo "  the host listener got a connection"; ok=1; }
	# -R listens only inside the session's network namespace.
	sshc b "$AGENT" -v -o ExitOnForwardFailure=yes -R "0:127.0.0.1:$LPORT" 'sleep 4' \
		>/dev/null 2>"$T/br.err" &
	local rpid=$!
	wait_for grep -q "Allocated port" "$T/br.err"
	local rport
	rport=$(sed -n 's/.*Allocated port \([0-9]*\).*/\1/p' "$T/br.err" | head -1)
	if [ -n "$rport" ]; then
		out=$("$PY" "$HELPER" probe "$rport")
		echo "  -R: sshd listens on port $rport in the session's netns; from the host: $out"
		[ "$out" = refused ] || ok=1
	else
		echo "  -R: $(head -1 "$T/br.err")"
	fi
	wait $rpid 2>/dev/null
	# Without the drop-in, sshd runs ~/.ssh/rc through /bin/sh: outside
	# agent-shell (here it can only write where the PAM stage's view lets it).
	rm -f "$W/ws/$AGENT/rc-marker"
	sshc b "$AGENT" true
	rc=$([ -e "$W/ws/$AGENT/rc-marker" ] && echo ran || echo "not run")
	echo "  ~/.ssh/rc without the drop-in: $rc"
	rm -f "$W/ws/$AGENT/rc-marker"
	return $ok
}

# Without the drop-in and without the netns: the hole the drop-in closes.
t_forwarding_hole_without_dropin_and_netns() {
	local before lp out
	before=$(listener_count)
	lp=$("$PY" "$HELPER" freeport)
	sshc c "$AGENT" -L "$lp:127.0.0.1:$LPORT" 'sleep 4' >/dev/null 2>&1 &
	local spid=$!
	wait_for bash -c "[ \"\$($PY $HELPER probe $lp)\" != refused ]"
	out=$("$PY" "$HELPER" probe "$lp")
	wait $spid 2>/dev/null
	echo "  -L (no drop-in, no netns): $out; listener connections $before -> $(listener_count)"
	[ "$out" = "data:HELLO" ] || return 1
	[ "$(listener_count)" -gt "$before" ] || return 1
	# The shell itself stays confined: its own connect to the listener fails.
	out=$(sshc c "$AGENT" "exec 3<>/dev/tcp/127.0.0.1/$LPORT && echo reached || echo blocked" 2>/dev/null)
	echo "  the same session's shell: $out"
	[ "$out" = blocked ]
}

t_wrong_login_shell_refused() {
	if sshc a "$WRONG" 'echo ran' >"$T/wrong.out" 2>&1; then
		echo "  login succeeded"; return 1
	fi
	grep -q ran "$T/wrong.out" && return 1
	wait_for syslog_has "user $WRONG: refused: login shell /bin/bash is not the agent shell" ||
		{ echo "  no refusal line"; return 1; }
	echo "  log: $(grep -m1 -o "user $WRONG: refused: .*" "$W/syslog.log")"
}

t_floor_unmet_refused() {
	local rc
	sshc a "$FLOOR" 'echo ran' >"$T/floor.out" 2>&1
	rc=$?
	echo "  exit $rc: $(head -1 "$T/floor.out")"
	[ $rc -ne 0 ] || return 1
	grep -qx ran "$T/floor.out" && return 1
	wait_for syslog_has "user=$FLOOR" "floor=refused" || { echo "  no refused report"; return 1; }
	grep -F "user=$FLOOR" "$W/syslog.log" | grep -F floor=refused | grep -q exec_boundary ||
		{ echo "  reason not logged"; return 1; }
	echo "  log: $(grep -F "user=$FLOOR" "$W/syslog.log" | grep -F floor=refused | head -1 | cut -d' ' -f4- | cut -c1-400)"
}

agent_procs() {
	local uid
	for uid in $(cat "$T/uids"); do
		awk -v u="$uid" '/^Uid:/ { if ($2 == u) print FILENAME }' /proc/[0-9]*/status 2>/dev/null
	done
}
records_left() { NS find /run/agent-sandbox/sessions -mindepth 1 -type f ! -name .lock 2>/dev/null | grep -q .; }
no_records() { ! records_left; }
no_procs() { [ -z "$(agent_procs)" ]; }

t_fifty_concurrent_sessions() {
	local i pids=() ok=0 n_ok sshd_pid
	sshd_pid=$(cat "$W/sshd/a.pid")
	wait_for no_procs
	wait_for no_records
	grep -v " /proc" "/proc/$sshd_pid/mountinfo" >"$T/mi.before"
	grep -v " /proc" /proc/self/mountinfo >"$T/host-mi.before"
	local t0=$SECONDS
	for i in $(seq 50); do
		sshc a "$EPH" 'grep Seccomp: /proc/self/status; echo "home=$(stat -f -c %T $HOME)"' \
			>"$T/c$i.out" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || ok=1; done
	n_ok=$(grep -lP '^Seccomp:\t2$' "$T"/c*.out | wc -l)
	echo "  $n_ok/50 sessions confined (Seccomp 2) in $((SECONDS - t0)) s"
	[ "$n_ok" -eq 50 ] || { ok=1; for i in $(seq 50); do grep -qP '^Seccomp:\t2$' "$T/c$i.out" || head -3 "$T/c$i.out"; done | head -10; }
	[ "$(grep -l '^home=tmpfs$' "$T"/c*.out | wc -l)" -eq 50 ] || { echo "  not all homes ephemeral"; ok=1; }
	wait_for no_procs || { echo "  processes left:"; agent_procs | head; ok=1; }
	wait_for no_records || { echo "  session records left:"; NS find /run/agent-sandbox/sessions -type f ! -name .lock | head; ok=1; }
	grep -v " /proc" "/proc/$sshd_pid/mountinfo" >"$T/mi.after"
	grep -v " /proc" /proc/self/mountinfo >"$T/host-mi.after"
	cmp -s "$T/mi.before" "$T/mi.after" || { echo "  sshd namespace mounts changed"; diff "$T/mi.before" "$T/mi.after" | head; ok=1; }
	cmp -s "$T/host-mi.before" "$T/host-mi.after" || { echo "  host mounts changed"; ok=1; }
	# Ephemeral homes leave nothing on disk.
	[ ! -e "$W/state/homes/$EPH" ] || { echo "  an ephemeral home left a directory"; ok=1; }
	[ -z "$(ls -A "$W/home/$EPH")" ] || { echo "  the passwd home mountpoint is not empty"; ok=1; }
	return $ok
}

# max_sessions over sshd: two sessions held, a third refused; then the
# sshd process that opened one of them is killed (a crashed sshd: PAM's
# close never runs) and the next login gets its slot back.
limit_records() { NS grep -l "^user=$LIMIT\$" -r /run/agent-sandbox/sessions 2>/dev/null; }
t_max_sessions_and_crashed_sshd() {
	local pids=() i rc opener rec ok=0
	# Each session reads its stdin until the test closes the fifo's write end.
	for i in 1 2; do
		mkfifo "$T/limit$i.in"
		sshc a "$LIMIT" 'echo up; cat >/dev/null' <"$T/limit$i.in" >"$T/limit$i.out" 2>&1 &
		pids+=($!)
	done
	exec 7>"$T/limit1.in" 8>"$T/limit2.in"
	for i in 1 2; do wait_for grep -qx up "$T/limit$i.out" || { echo "  session $i did not start"; ok=1; }; done
	sshc a "$LIMIT" 'echo ran' >"$T/limit3.out" 2>&1
	rc=$?
	echo "  third login: exit $rc"
	[ $rc -ne 0 ] && ! grep -qx ran "$T/limit3.out" || { echo "  the third session ran"; ok=1; }
	wait_for syslog_has "user $LIMIT: refused: 2 sessions open, max_sessions is 2" ||
		{ echo "  no max_sessions refusal logged"; ok=1; }
	# The record names the process that opened the session: it is alive.
	rec=$(limit_records | head -1)
	opener=$(NS sed -n 's/^opener_pid=//p' "$rec")
	echo "  record opener: pid $opener ($(tr '\0' ' ' </proc/$opener/cmdline 2>/dev/null | cut -c1-60))"
	[ -n "$opener" ] && [ -d "/proc/$opener" ] || { echo "  no live opener"; ok=1; }
	# It must be one of our sshd's own session processes before we kill it.
	if [ -n "$opener" ] && [ "$(awk '{print $4}' /proc/$opener/stat)" = "$(cat "$W/sshd/a.pid")" ]; then
		kill -KILL "$opener"
	else
		echo "  opener $opener is not a child of our sshd A: not killed"; ok=1
	fi
	sshc a "$LIMIT" 'echo ran' >"$T/limit4.out" 2>&1
	rc=$?
	echo "  after the crash: exit $rc, $(head -1 "$T/limit4.out")"
	grep -qx ran "$T/limit4.out" || ok=1
	wait_for syslog_has "removed 1 stale session record(s)" || { echo "  no stale removal logged"; ok=1; }
	exec 7>&- 8>&-
	for i in "${pids[@]}"; do wait "$i" 2>/dev/null; done
	wait_for no_procs || { echo "  processes left:"; agent_procs | head; ok=1; }
	wait_for no_records || { echo "  records left:"; NS find /run/agent-sandbox/sessions -type f ! -name .lock | head; ok=1; }
	return $ok
}

run_test() {
	local name=$1 t0=$SECONDS
	echo "[ RUN      ] $name"
	if "$name" >"$T/test.out" 2>&1; then
		sed 's/^/  /' "$T/test.out" | sed 's/^  \(  \)/\1/'
		echo "[       OK ] $name ($((SECONDS - t0)) s)"
		n_pass=$((n_pass + 1))
	else
		sed 's/^/  /' "$T/test.out" | sed 's/^  \(  \)/\1/'
		echo "[  FAILED  ] $name"
		n_fail=$((n_fail + 1))
		failed+=("$name")
	fi
}

echo "[==========] Running e2e_sshd (sshd $(ssh -V 2>&1 | cut -d, -f1), test dir $T)"
if ! setup >"$T/setup.out" 2>&1; then
	cat "$T/setup.out"
	for f in "$W"/sshd/*.log; do [ -s "$f" ] && { echo "== $f"; tail -20 "$f"; }; done
	echo "[  FAILED  ] 1 test(s), listed below:"
	echo "[  FAILED  ] e2e set-up"
	exit 1
fi
ssh_opts
for t in t_pam_stack_in_effect t_ssh_command_confined t_pty_session_confined \
	t_scp_workspace_only t_sftp_external_confined t_internal_sftp_pam_view_only \
	t_forwarding_refused_with_dropin t_forwarding_netns_without_dropin \
	t_forwarding_hole_without_dropin_and_netns t_wrong_login_shell_refused \
	t_floor_unmet_refused t_fifty_concurrent_sessions t_max_sessions_and_crashed_sshd; do
	run_test "$t"
done
if [ "$n_fail" -gt 0 ] || [ -n "${SBX_E2E_VERBOSE:-}" ]; then
	echo "== syslog (last 40 lines)"; tail -40 "$W/syslog.log"
	echo "== sshd A log (last 30 lines)"; tail -30 "$W/sshd/a.log"
fi
summary
[ "$n_fail" -eq 0 ]
