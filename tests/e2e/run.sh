#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# End-to-end tier: a real sshd on loopback, real agent accounts, every entry path (docs/design.md sections 2, 7).
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
#   that its PAM service is the symlink's name (docs/design.md section 2):
#     A  sbxe2e-<r>    shipped drop-in, module "netns", external sftp-server
#     B  sbxe2e-<r>-b  no drop-in,      module "netns"
#     C  sbxe2e-<r>-c  no drop-in,      no netns (the hole the drop-in closes)
#     D  sbxe2e-<r>-d  shipped drop-in, module "netns", internal-sftp
#
#   The shipped files, as shipped (t_shipped_*): a mount namespace nested in
#   the world's (ns-setup-shipped.sh) stands for a Debian host that followed
#   README "Deploying on a host": etc/agent-sandbox.conf at
#   /etc/agent-sandbox/agent-sandbox.conf as "make install" writes it (only
#   agent_shell rewritten, by the Makefile's own rule) with the [match]
#   rules in /etc/agent-sandbox/conf.d/local.conf (README step 3), the module in the
#   system PAM directory, /etc/pam.d/{sshd,login,su,runuser,runuser-l} edited
#   with the lines of etc/pam.d/agent-sandbox-* where step 2 says, the drop-in
#   in /etc/ssh/sshd_config.d, packaging/postinst run, accounts enrolled with
#   agent-shell --enroll. Its sshd S is /usr/sbin/sshd itself (PAM service
#   "sshd", which the shipped profiles' "services = sshd" names) with the
#   default /etc/ssh/sshd_config, so agent-shell --doctor checks what runs.
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
PROXY=sbxy-$R		# network = proxy, through agent-sandbox-egressd
EGRESS_USER=sbxd-$R	# the daemon's own account
EGRESSD_PID="" ESERVER_PID=""
SVC=sbxe2e-$R
OPEN=/var/tmp/sbxe2e-$R	# agent-writable by Unix permissions, outside the workspace
HOLDER="" SINK="" LISTENER="" ULISTENER="" AGENT_PID="" SSHD_PIDS=()
# The shipped-config world. The group and ci-runner names are those of the
# shipped [match] examples, which the test's conf.d/local.conf makes live;
# they exist only in that namespace's /etc.
S_HOLDER=""
S_CODER=sbxc-$R		# in group agents     -> profile coder
S_REV=sbxr-$R		# in group reviewers  -> profile reviewer
S_CI=ci-runner		# user rule           -> profile ci
S_PLAIN=sbxp-$R		# no agent: the positive control of su, runuser and login
S_WRONG=sbxq-$R		# in group agents with /bin/bash: refused by the account line

cleanup() {
	local p uid h ns
	trap - EXIT INT TERM
	for p in "${SSHD_PIDS[@]}" $SINK $LISTENER $ULISTENER $AGENT_PID $EGRESSD_PID $ESERVER_PID; do
		kill "$p" 2>/dev/null
	done
	# Session processes of our accounts (uids exist only in our namespaces;
	# a process with the same uid in the host's mount namespace is not ours:
	# every session runs in the world's namespace or one made under it).
	for uid in $(cat "$T/uids" 2>/dev/null); do
		for p in $(awk -v u="$uid" '/^Uid:/ { if ($2 == u) print FILENAME }' \
				/proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
			[ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$(readlink /proc/self/ns/mnt)" ] &&
				continue
			kill -KILL "$p" 2>/dev/null
		done
	done
	# Everything still in our mount namespaces was started by this test
	# (sshds, their session processes, the sink): none may outlive it.
	for h in $S_HOLDER $HOLDER; do
		ns=$(readlink "/proc/$h/ns/mnt") || continue
		[ "$ns" != "$(readlink /proc/self/ns/mnt)" ] || continue
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$ns" ] || continue
			[ "${p#/proc/}" = "$h" ] || kill -KILL "${p#/proc/}" 2>/dev/null
		done
		kill "$h" 2>/dev/null
		wait "$h" 2>/dev/null
	done
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
	# As "make install" lays it out: the static launcher is the login
	# shell, agent-shell proper beside the bin directory.
	install -m 0755 "$BUILD/agent-shell-launcher" "$W/bin/agent-shell" || return 1
	install -d -m 0755 "$W/lib" "$W/lib/agent-sandbox" || return 1
	install -m 0755 "$BUILD/agent-shell" "$W/lib/agent-sandbox/agent-shell" || return 1
	install -m 0644 "$BUILD/pam_agent_sandbox.so" "$W/bin/pam_agent_sandbox.so" || return 1
	# A PAM line that proves the stack in effect is ours (a missing
	# /etc/pam.d/X would silently fall back to "other").
	cat >"$W/bin/pam-marker" <<-EOF
	#!/bin/sh
	echo "stack=\$PAM_SERVICE type=\$PAM_TYPE user=\$PAM_USER" >>$WN/pam-marker.log
	EOF
	chmod 0755 "$W/bin/pam-marker"
	# After the PAM stage prepared a session: if asked (one shot), change
	# the profile the shell will read next, as an admin's edit between the
	# two stages would.
	cat >"$W/bin/pam-swap-config" <<-EOF
	#!/bin/sh
	[ "\$PAM_TYPE" = open_session ] && [ -e $WN/swap-config ] || exit 0
	rm -f $WN/swap-config
	sed 's/^max_sessions = 64\$/max_sessions = 63/' /etc/agent-sandbox/agent-sandbox.conf >$WN/swapped.conf &&
		cat $WN/swapped.conf >/etc/agent-sandbox/agent-sandbox.conf
	exit 0
	EOF
	chmod 0755 "$W/bin/pam-swap-config"
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
	for u in $AGENT $EPH $FLOOR $LIMIT $PROXY; do
		NS useradd --system -M -g "$GROUP" -s "$WN/bin/agent-shell" -d "$WN/home/$u" "$u" ||
			return 1
	done
	NS useradd --system -M -g "$GROUP" -s /bin/bash -d "$WN/home/$WRONG" "$WRONG" || return 1
	NS useradd --system -M -U -s /usr/sbin/nologin -d /nonexistent "$EGRESS_USER" || return 1
	for u in $AGENT $EPH $FLOOR $LIMIT $WRONG $PROXY; do
		NS id -u "$u" >>"$T/uids" || return 1
		mkdir -m 0755 "$W/home/$u" "$W/ws/$u"
		NS chown "$u:$GROUP" "$WN/ws/$u"
	done
	# A host directory the agent may write by Unix permissions, outside its
	# workspace and visible in the sandbox: only the sandbox keeps it out.
	chown "$(NS id -u "$AGENT")" "$OPEN"

	# network = proxy's outside: a TLS server on 127.0.0.2 (the host's
	# loopback, which no session's network namespace has).
	EPORT=$("$PY" "$HELPER" freeport)
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/egress-key.pem" -out "$W/egress-cert.pem" \
		-days 1 -subj /CN=e2e -addext "subjectAltName=IP:127.0.0.2,IP:127.0.0.3" 2>/dev/null || return 1
	chmod 0644 "$W/egress-cert.pem"
	"$PY" "$SRC/tests/egress/tls_server.py" "$EPORT" "$W/egress-cert.pem" "$T/egress-key.pem" 127.0.0.2 \
		>"$T/egress-server.out" 2>&1 &
	ESERVER_PID=$!

	# The config, at the fixed path the shipped shell reads: this world's
	# own directory, whatever the host's holds (an installed config, its
	# conf.d drop-ins).
	NS rm -rf /etc/agent-sandbox || return 1
	NS mkdir -m 0755 /etc/agent-sandbox || return 1
	NS tee /etc/agent-sandbox/agent-sandbox.conf >/dev/null <<-EOF
	[global]
	state_dir = $WN/state
	agent_shell = $WN/bin/agent-shell
	egress_socket = $WN/egress.sock

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

	[profile e2e-proxy]
	inherit = e2e
	network = proxy
	egress_allow = 127.0.0.2:$EPORT
	require = write_boundary no_privilege_gain syscall_filter env_scrub network_egress

	[match]
	user $PROXY = e2e-proxy
	user $AGENT = e2e
	user $WRONG = e2e
	user $EPH = e2e-eph
	user $FLOOR = e2e-floor
	user $LIMIT = e2e-limit
	EOF
	NS chmod 0644 /etc/agent-sandbox/agent-sandbox.conf
	NS "$WN/bin/agent-shell" --check-config >"$T/check-config.out" 2>&1 || {
		cat "$T/check-config.out"; return 1; }
	NSBG "$BUILD/agent-sandbox-egressd" --socket "$WN/egress.sock" --user "$EGRESS_USER" \
		--log-stderr 2>"$T/egressd.log"
	EGRESSD_PID=$!

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
		session  optional pam_exec.so quiet $WN/bin/pam-swap-config
		EOF
	done

	# Keys.
	ssh-keygen -q -t ed25519 -N '' -C e2e-host -f "$W/sshd/hostkey" || return 1
	ssh-keygen -q -t ed25519 -N '' -C e2e-client -f "$W/client/id" || return 1
	for u in $AGENT $EPH $FLOOR $LIMIT $WRONG $PROXY; do
		install -m 0644 "$W/client/id.pub" "$W/keys/$u"
	done
	echo "sbxe2e $(cut -d' ' -f1,2 "$W/sshd/hostkey.pub")" >"$W/client/known_hosts"
	sed "s/^Match Group agents,reviewers\$/Match Group $GROUP/" \
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
			AllowUsers $AGENT $EPH $FLOOR $LIMIT $WRONG $PROXY
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

# ---- set-up of the shipped-config world ----------------------------------

NSS() { nsenter -t "$S_HOLDER" -m -- "$@"; }
NSSBG() { nsenter -t "$S_HOLDER" -m -- "$@" & }
# The project's own make rules, without the jobserver of the "make check"
# that may be running this script.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$SRC" "$@"; }
# snippet_line FILE KIND: the one active line of KIND (account, session) in
# etc/pam.d/FILE, as an admin copies it.
snippet_line() {
	local l
	l=$(grep -E "^$2[[:space:]]" "$SRC/etc/pam.d/$1")
	[ "$(printf '%s\n' "$l" | wc -l)" -eq 1 ] && [ -n "$l" ] ||
		{ echo "etc/pam.d/$1: not exactly one $2 line" >&2; return 1; }
	printf '%s\n' "$l"
}
# pam_edit STACK: the shipped world's /etc/pam.d/STACK, edited with FILTER (stdin -> stdout).
pam_edit() {
	local stack=$1
	shift
	NSS cat "/etc/pam.d/$stack" | "$@" >"$T/pam.$stack" || return 1
	NSS tee "/etc/pam.d/$stack" <"$T/pam.$stack" >/dev/null
}
# The session line goes after the last session line (README step 2; on
# Debian 12's sshd stack that is "pam_selinux.so open", where the
# walkthrough's sed puts it).
after_last_session() {
	awk -v line="$1" '{ l[NR] = $0 } /^-?session[ \t]/ { last = NR }
		END { for (i = 1; i <= NR; i++) { print l[i]; if (i == last) print line } }'
}

setup_shipped() {
	local pamdir base u i port
	S_A=$(snippet_line agent-sandbox-sshd account) || return 1
	S_S=$(snippet_line agent-sandbox-sshd session) || return 1
	L_A=$(snippet_line agent-sandbox-login account) || return 1
	L_S=$(snippet_line agent-sandbox-login session) || return 1
	U_A=$(snippet_line agent-sandbox-su account) || return 1
	U_S=$(snippet_line agent-sandbox-su session) || return 1
	# "make install": where it puts the module, and the config it installs
	# (its install-conf-file rule, with BINDIR where this test's binary is).
	pamdir=$(mk --eval 'sbxe2e-pamdir: ; @echo $(PAMDIR)' sbxe2e-pamdir) || return 1
	mk install-conf-file BUILD="$T/mk" BINDIR="$WN/bin" || return 1
	S_CONF=$T/mk/install/agent-sandbox.conf
	diff "$SRC/etc/agent-sandbox.conf" "$S_CONF" >"$T/conf.diff"
	# Nothing but the agent_shell value differs from etc/agent-sandbox.conf.
	[ "$(grep -c '^[<>]' "$T/conf.diff")" -eq 2 ] &&
		grep -q '^< agent_shell = /usr/local/bin/agent-shell ' "$T/conf.diff" &&
		grep -q "^> agent_shell = $WN/bin/agent-shell " "$T/conf.diff" ||
		{ echo "installed config differs from etc/agent-sandbox.conf beyond agent_shell:"; cat "$T/conf.diff"; return 1; }

	# The namespace, nested in the world's.
	NSBG unshare -m --propagation private sleep 100000
	S_HOLDER=$!
	for _ in $(seq 50); do
		[ "$(cat /proc/$S_HOLDER/comm 2>/dev/null)" = sleep ] &&
			[ "$(readlink /proc/$S_HOLDER/ns/mnt)" != "$(readlink /proc/$HOLDER/ns/mnt)" ] && break
		sleep 0.1
	done
	[ "$(readlink /proc/$S_HOLDER/ns/mnt)" != "$(readlink /proc/$HOLDER/ns/mnt)" ] || return 1
	NSS /bin/bash "$HERE/ns-setup-shipped.sh" "$(readlink /proc/self/ns/mnt)" \
		"$(readlink /proc/$HOLDER/ns/mnt)" "$pamdir" || return 1
	# The names the [match] examples use are this world's alone: a host
	# where the package is installed has a group agents (and may have
	# reviewers, or an account ci-runner), whose members this world would
	# check as its own. Here, in its /etc only, they get other names (gids
	# and uids kept, so no file changes hands), and the package's postinst
	# and --enroll below make the world's own. An installed config is
	# replaced as a whole, drop-ins included.
	for u in agents reviewers "$S_CI"; do
		if NSS getent group "$u" >/dev/null; then
			NSS groupmod -n "$u-host-$R" "$u" || return 1
			echo "the host's group $u is $u-host-$R in this world"
		fi
	done
	if NSS getent passwd "$S_CI" >/dev/null; then
		NSS sed -i "s/^$S_CI:/$S_CI-host-$R:/" /etc/passwd /etc/shadow || return 1
		echo "the host's account $S_CI is $S_CI-host-$R in this world"
	fi
	for u in agents reviewers; do
		! NSS getent group "$u" >/dev/null || { echo "group $u is still there (not from /etc/group?)"; return 1; }
	done
	! NSS getent passwd "$S_CI" >/dev/null || { echo "account $S_CI is still there (not from /etc/passwd?)"; return 1; }
	NSS rm -rf /etc/agent-sandbox || return 1

	# Step 1, install (make install's files; the .deb's postinst for the
	# state directory and the agents group).
	NSS install -m 0644 "$WN/bin/pam_agent_sandbox.so" "$pamdir/pam_agent_sandbox.so" || return 1
	NSS install -d -m 0755 /etc/agent-sandbox /etc/agent-sandbox/skel || return 1
	NSS install -m 0644 "$S_CONF" /etc/agent-sandbox/agent-sandbox.conf || return 1
	# As shipped it matches nobody: the admin says who is an agent in a
	# drop-in of their own, as the file's header comment shows (the
	# profiles themselves stay exactly as shipped).
	NSS "$WN/bin/agent-shell" --check-config >"$T/s-check-config-bare.out" 2>&1 ||
		{ cat "$T/s-check-config-bare.out"; return 1; }
	grep -q ', 0 match rule(s), 0 drop-in(s))$' "$T/s-check-config-bare.out" ||
		{ echo "the shipped config matches someone:"; cat "$T/s-check-config-bare.out"; return 1; }
	NSS install -d -m 0755 /etc/agent-sandbox/conf.d || return 1
	printf '[match]\ngroup agents = coder\ngroup reviewers = reviewer\nuser %s = ci\n' "$S_CI" \
		>"$T/local.conf"
	NSS install -m 0644 "$T/local.conf" /etc/agent-sandbox/conf.d/local.conf || return 1
	NSS install -m 0644 "$SRC/etc/skel/.bashrc" "$SRC/etc/skel/.profile" /etc/agent-sandbox/skel/ || return 1
	NSS install -d -m 0755 /etc/ssh/sshd_config.d || return 1
	# Only the shipped drop-in in sshd_config.d (a host's own would be read too).
	NSS find /etc/ssh/sshd_config.d -mindepth 1 -maxdepth 1 ! -name agent-sandbox.conf -print -delete
	NSS install -m 0644 "$SRC/etc/sshd_config.d/agent-sandbox.conf" /etc/ssh/sshd_config.d/agent-sandbox.conf ||
		return 1
	NSS install -m 0644 "$SRC/etc/pam-configs/agent-sandbox" /usr/share/pam-configs/agent-sandbox ||
		return 1
	NSS env DEBIAN_FRONTEND=noninteractive sh "$SRC/packaging/postinst" configure "" \
		>"$T/postinst.out" 2>&1 || { cat "$T/postinst.out"; return 1; }
	# Its pam-auth-update put the module in the common stacks, once each.
	for u in common-account common-session; do
		[ "$(NSS grep -c '^[^#]*pam_agent_sandbox\.so' "/etc/pam.d/$u")" = 1 ] ||
			{ echo "postinst: /etc/pam.d/$u does not name the module once"; NSS cat "/etc/pam.d/$u"; return 1; }
	done

	# Step 2, PAM: the postinst's pam-auth-update above, then the
	# hand-written snippets too, as on a host that had them before (a
	# stack naming the module twice opens one session): sshd (the netns
	# session line last), login and su, runuser and runuser-l.
	pam_edit sshd sed "/^@include common-account/i $S_A" || return 1
	pam_edit sshd after_last_session "$S_S" || return 1
	for u in login su; do
		local a=$L_A s=$L_S
		[ "$u" = su ] && a=$U_A s=$U_S
		pam_edit "$u" sed "/^@include common-account/i $a" || return 1
		pam_edit "$u" sed "/^@include common-session/a $s" || return 1
	done
	pam_edit runuser sh -c 'cat; printf "%s\naccount required pam_permit.so\n%s\n" "$1" "$2"' - "$U_A" "$U_S" ||
		return 1
	pam_edit runuser-l sh -c 'cat; printf "%s\naccount required pam_permit.so\n" "$1"' - "$U_A" || return 1

	# sshd_config: Debian 12's (the Include first, then its settings), and
	# this test's port, key and users.
	port=$("$PY" "$HELPER" freeport)
	PORT_s=$port
	NSS tee /etc/ssh/sshd_config >/dev/null <<-EOF
	Include /etc/ssh/sshd_config.d/*.conf
	KbdInteractiveAuthentication no
	UsePAM yes
	X11Forwarding yes
	PrintMotd no
	AcceptEnv LANG LC_*
	Subsystem sftp $SFTP_SERVER
	# tests/e2e/run.sh
	Port $port
	ListenAddress 127.0.0.1
	HostKey $WN/sshd/hostkey
	PidFile $WN/sshd/s.pid
	PasswordAuthentication no
	LogLevel VERBOSE
	AllowUsers $S_CODER $S_REV $S_CI $S_WRONG
	EOF

	# Step 3, enrol: accounts with uids of this test's own (a free block, so
	# that teardown's kill by uid can only hit our sessions), then
	# agent-shell --enroll does the rest (login shell, group, workspace,
	# isolated home).
	# The block named by this run's tag, or the next free one: an account
	# some other run left behind is not this run's to remove.
	local try free=0
	for try in $(seq 0 199); do
		base=$((63000 + ((0x$R + try) % 200) * 8))
		free=1
		for i in 0 1 2 3 4; do
			if NS getent passwd $((base + i)) >/dev/null ||
			   [ -n "$(awk -v u=$((base + i)) '/^Uid:/ { if ($2 == u) print FILENAME }' /proc/[0-9]*/status 2>/dev/null)" ]; then
				free=0
				break
			fi
		done
		[ "$free" = 1 ] && break
	done
	[ "$free" = 1 ] || { echo "no free block of 5 uids in 63000-64599"; return 1; }
	S_UID_WRONG=$((base + 4))
	echo "$S_UID_WRONG" >>"$T/uids"
	i=0
	for u in $S_CODER $S_REV $S_CI $S_PLAIN; do
		# (useradd warns that the uid is above UID_MAX: on purpose.)
		NSS useradd --create-home --uid $((base + i)) --user-group --shell /bin/sh "$u" \
			2>"$T/useradd.err" || { cat "$T/useradd.err"; return 1; }
		echo $((base + i)) >>"$T/uids"
		i=$((i + 1))
	done
	NSS "$WN/bin/agent-shell" --enroll "$S_CODER" >"$T/enroll.out" 2>&1 &&
		NSS "$WN/bin/agent-shell" --enroll "$S_REV" --profile reviewer >>"$T/enroll.out" 2>&1 &&
		NSS "$WN/bin/agent-shell" --enroll "$S_CI" >>"$T/enroll.out" 2>&1 ||
		{ cat "$T/enroll.out"; return 1; }
	# The roots the profiles name (README step 3: a missing one refuses
	# every session).
	NSS install -d /opt/toolchains || return 1
	echo "toolchain $R" >"$T/toolchain"
	NSS install -m 0644 "$T/toolchain" /opt/toolchains/VERSION || return 1
	for u in $S_CODER $S_REV; do
		NSS install -d -m 0750 -o "$u" -g "$u" "/srv/agents/$u/cache" || return 1
	done
	NSS install -d -m 0750 -o "$S_REV" -g "$S_REV" "/srv/agents/$S_REV/notes" || return 1
	echo "to review $R" >"$T/review"
	NSS install -m 0640 -o "$S_REV" -g "$S_REV" "$T/review" "/srv/agents/$S_REV/workspace/README.txt" || return 1
	# Keys in the passwd homes (sshd reads them before the PAM stage).
	for u in $S_CODER $S_REV $S_CI; do
		NSS install -d -m 0700 -o "$u" -g "$u" "/home/$u/.ssh" || return 1
		NSS install -m 0600 -o "$u" -g "$u" "$W/client/id.pub" "/home/$u/.ssh/authorized_keys" || return 1
	done
	# The non-agent control logs in with /bin/sh, whose ~/.profile says so and ends it.
	printf 'echo "plain-login $(id -un)"\nexit 0\n' >"$T/plain.profile"
	NSS install -m 0644 -o "$S_PLAIN" -g "$S_PLAIN" "$T/plain.profile" "/home/$S_PLAIN/.profile" || return 1
	# The ci job's project, in its workspace.
	ci_project "$T/ciproj" || return 1
	NSS cp -r "$T/ciproj/." "/srv/ci/$S_CI/build/" || return 1
	NSS chown -R "$S_CI:$S_CI" "/srv/ci/$S_CI/build" || return 1

	# A host service on a unix socket (a path every session's view shows).
	"$PY" "$HELPER" ulisten "$W/unix.sock" "$T/ulisten.log" &
	ULISTENER=$!

	NSS "$WN/bin/agent-shell" --check-config >"$T/s-check-config.out" 2>&1 ||
		{ cat "$T/s-check-config.out"; return 1; }
	NSS /usr/sbin/sshd -t || return 1
	NSSBG /usr/sbin/sshd -D -E "$WN/sshd/s.log"
	SSHD_PIDS+=($!)
	for _ in $(seq 100); do
		[ "$("$PY" "$HELPER" probe "$port")" != refused ] && break
		sleep 0.1
	done
	[ "$("$PY" "$HELPER" probe "$port")" != refused ]
}

# ci_project DIR: a small C project whose build runs cc, gcc, as and ld,
# and a "probe" target that prints the session's report and tries what the
# gate must refuse (only sh and make builtins: nothing else is allowed).
ci_project() {
	mkdir -p "$1" || return 1
	cat >"$1/main.c" <<-'EOF'
	#include <stdio.h>
	int twice(int);
	int answer(void);
	int main(void) { printf("hello %d\n", twice(answer())); return 0; }
	EOF
	printf 'int twice(int x) { return 2 * x; }\n' >"$1/util.c"
	cat >"$1/answer.s" <<-'EOF'
		.text
		.globl answer
		.type answer, @function
	answer:
		movl $21, %eax
		ret
		.section .note.GNU-stack,"",@progbits
	EOF
	# Recipes need their tab: not a <<- here-document, which strips it.
	printf '%s\n' \
		'all: hello' '	@echo "build=ok"' \
		'hello: main.o both.o' '	cc -o $@ main.o both.o' \
		'both.o: util.o answer.o' '	ld -r -o $@ util.o answer.o' \
		'main.o: main.c' '	cc -c main.c' \
		'util.o: util.c' '	gcc -c util.c' \
		'answer.o: answer.s' '	as -o $@ answer.s' \
		'probe:' \
		'	$(info REPORT=$(file <$(HOME)/.agent-sandbox/reports/$(AGENT_SANDBOX_SESSION).json))' \
		'	@echo "pwd=$$PWD"' \
		'	@/usr/bin/id 2>&1; echo "id_exit=$$?"' \
		'	@/lib64/ld-linux-x86-64.so.2 /usr/bin/id 2>&1; echo "ldso_id_exit=$$?"' \
		'	@./hello 2>&1; echo "hello_exit=$$?"' \
		'	@/lib64/ld-linux-x86-64.so.2 ./hello 2>&1; echo "ldso_hello_exit=$$?"' \
		>"$1/Makefile"
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
	# Our module, from our stack, with our service name, under the
	# product's ident (not the service's).
	syslog_has "agent-sandbox[" "]: event=pam_open session=" &&
		grep -F "]: event=pam_open session=" "$W/syslog.log" | grep -qF " service=$SVC " ||
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
	# Without the drop-in, sshd runs ~/.ssh/rc: as popen("<login shell> -c
	# '/bin/sh ~/.ssh/rc'") in OpenSSH 9.2, so the file's commands run
	# under agent-shell (t_shipped_reviewer shows them under its seccomp).
	# That shell is the login's first: it takes the ledger's one slot, and
	# the login's own shell is then refused (one shell per login), so an
	# agent's ~/.ssh/rc can only stop its own logins (the drop-in's
	# PermitUserRC no keeps it from running at all).
	rm -f "$W/ws/$AGENT/rc-marker"
	out=$(sshc b "$AGENT" 'echo login-ran' 2>&1)
	rc=$([ -e "$W/ws/$AGENT/rc-marker" ] && echo ran || echo "not run")
	echo "  ~/.ssh/rc without the drop-in: $rc; the login: $(echo "$out" | head -1 | cut -c1-120)"
	[ "$rc" = ran ] && [[ $out == *"ledger channel is not this shell's"* ]] &&
		[[ $out != *login-ran* ]] || ok=1
	rm -f "$W/ws/$AGENT/rc-marker" "$W/state/homes/$AGENT/.ssh/rc" "$W/state/homes/$AGENT/.ssh/environment"
	return $ok
}

# Without the drop-in and without the netns: the hole the drop-in closes.
t_forwarding_hole_without_dropin_and_netns() {
	local before lp out
	before=$(listener_count)
	lp=$("$PY" "$HELPER" freeport)
	sshc c "$AGENT" -L "$lp:127.0.0.1:$LPORT" 'sleep 8' >/dev/null 2>&1 &
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

# Refused in the account phase, and told why: sshd sends the module's
# message to the client as a banner (shown at the client's LogLevel INFO,
# which must come first: ssh keeps the first value it is given).
t_wrong_login_shell_refused() {
	if timeout 60 ssh -o LogLevel=INFO "${SSH_OPTS[@]}" -p "$PORT_a" "$WRONG@127.0.0.1" 'echo ran' \
		>"$T/wrong.out" 2>&1; then
		echo "  login succeeded"; return 1
	fi
	grep -q ran "$T/wrong.out" && return 1
	wait_for syslog_has "user $WRONG: refused: login shell /bin/bash is not the agent shell" ||
		{ echo "  no refusal line"; return 1; }
	# Machine-readable: the event, the stage and the reason, under the
	# product's ident, with the user.
	grep -F " agent-sandbox[" "$W/syslog.log" |
		grep -qF "]: event=refused stage=account reason=login_shell service=$SVC user=$WRONG " ||
		{ echo "  refusal not logged as event=refused reason=login_shell under agent-sandbox"; return 1; }
	echo "  log: $(grep -m1 -o "event=refused stage=account reason=login_shell .* user=$WRONG .*" "$W/syslog.log")"
	grep -q "^agent-sandbox: user $WRONG: refused: login shell /bin/bash is not the agent shell" \
		"$T/wrong.out" || { echo "  the client was not told: $(head -3 "$T/wrong.out")"; return 1; }
	echo "  client: $(grep -m1 '^agent-sandbox:' "$T/wrong.out")"
}

t_floor_unmet_refused() {
	local rc
	sshc a "$FLOOR" 'echo ran' >"$T/floor.out" 2>&1
	rc=$?
	echo "  exit $rc: $(head -1 "$T/floor.out")"
	[ $rc -ne 0 ] || return 1
	grep -qx ran "$T/floor.out" && return 1
	wait_for syslog_has "user=$FLOOR" "floor=refused" || { echo "  no refused report"; return 1; }
	syslog_has "]: event=refused stage=shell reason=floor session=" "user=$FLOOR " ||
		{ echo "  the floor's refusal is not event=refused reason=floor"; return 1; }
	grep -F "user=$FLOOR" "$W/syslog.log" | grep -F floor=refused | grep -q exec_boundary ||
		{ echo "  reason not logged"; return 1; }
	echo "  log: $(grep -F "user=$FLOOR" "$W/syslog.log" | grep -F floor=refused | head -1 | cut -d' ' -f4- | cut -c1-400)"
}

# The shell runs only what the PAM stage decided: a profile changed between
# the two stages refuses the session, with the reason on the client's side.
t_profile_changed_between_stages() {
	local rc ok=0
	touch "$W/swap-config"
	sshc a "$AGENT" 'echo ran' >"$T/swap.out" 2>&1
	rc=$?
	NS sed -i 's/^max_sessions = 63$/max_sessions = 64/' /etc/agent-sandbox/agent-sandbox.conf
	[ ! -e "$W/swap-config" ] || { echo "  the swap did not run"; rm -f "$W/swap-config"; return 1; }
	echo "  exit $rc: $(grep -m1 'refusing' "$T/swap.out" | cut -c1-200)"
	[ $rc -ne 0 ] || ok=1
	grep -qx ran "$T/swap.out" && ok=1
	grep -q "the PAM stage prepared it for profile e2e" "$T/swap.out" || { echo "  no reason at the client"; ok=1; }
	# Control: with the config back, the same login runs.
	sshc a "$AGENT" 'echo ran' >"$T/swap2.out" 2>&1 || { echo "  control failed: $(head -2 "$T/swap2.out")"; ok=1; }
	grep -qx ran "$T/swap2.out" || ok=1
	return $ok
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
# proxy_procs: the proxy account's processes outside the host's mount
# namespace (every session's are), as "pid:comm", space-separated.
proxy_procs() {
	local uid p
	uid=$(NS id -u "$PROXY")
	for p in $(awk -v u="$uid" '/^Uid:/ { if ($2 == u) print FILENAME }' /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do
		[ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$(readlink /proc/self/ns/mnt)" ] && continue
		printf '%s:%s ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"
	done
}
no_proxy_procs() { [ -z "$(proxy_procs)" ]; }

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
# close never runs there); the session's keeper closes it, and the next
# login gets its slot back.
limit_records() { NS grep -l "^user=$LIMIT\$" -r /run/agent-sandbox/sessions 2>/dev/null; }
no_agent_record() { [ -z "$(NS grep -l "^user=$AGENT\$" -r /run/agent-sandbox/sessions 2>/dev/null)" ]; }
t_max_sessions_and_crashed_sshd() {
	local pids=() i rc opener rec inside ok=0
	# First, and finished before anything else: any session's close
	# prunes every stale record, and would take the one this test leaves.
	inside=$(sshc a "$AGENT" 'cat /proc/self/oom_score_adj' 2>/dev/null)
	wait_for no_agent_record || echo "  note: $AGENT's record outlived its session"
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
	# The OOM killer must not take it (the session would lose its close),
	# while the agent's own processes keep the normal score (the control).
	# Lowering the score needs CAP_SYS_RESOURCE, which some container
	# hosts take from root: there, the refusal is logged instead.
	local eff
	eff=$(awk '/^CapEff:/ { print $2 }' /proc/$opener/status 2>/dev/null)
	echo "  oom_score_adj: opener $(cat /proc/$opener/oom_score_adj 2>/dev/null) (CapEff ${eff:-?}), the agent's process $inside"
	if [ -n "$eff" ] && (( (16#$eff >> 24) & 1 )); then
		[ "$(cat /proc/$opener/oom_score_adj 2>/dev/null)" = -1000 ] ||
			{ echo "  opener's oom_score_adj is not -1000"; ok=1; }
	else
		syslog_has "user $LIMIT: oom_score_adj of the session's process not set: Permission denied" ||
			{ echo "  no CAP_SYS_RESOURCE, and no warning logged"; ok=1; }
	fi
	[ "$inside" = 0 ] || { echo "  the agent's process does not have oom_score_adj 0"; ok=1; }
	# It must be one of our sshd's own session processes before we kill it.
	if [ -n "$opener" ] && [ "$(awk '{print $4}' /proc/$opener/stat)" = "$(cat "$W/sshd/a.pid")" ]; then
		kill -KILL "$opener"
		# Gone, not a zombie yet to be reaped: a zombie still has its
		# start time in /proc and counts as the live opener.
		wait_for bash -c "! grep -q . /proc/$opener/stat 2>/dev/null" ||
			echo "  note: opener $opener still in /proc after 10 s"
	else
		echo "  opener $opener is not a child of our sshd A: not killed"; ok=1
	fi
	# Its keeper closes the session (the shell ends it, seeing its opener
	# gone) and removes the record: the slot comes back with no login.
	wait_for NS test ! -e "$rec" || { echo "  the dead session's record is still there"; ok=1; }
	wait_for syslog_has "was gone: its keeper closed it" || { echo "  no keeper's close logged"; ok=1; }
	sshc a "$LIMIT" 'echo ran' >"$T/limit4.out" 2>&1
	rc=$?
	echo "  after the crash: exit $rc, $(head -1 "$T/limit4.out")"
	grep -qx ran "$T/limit4.out" || ok=1
	exec 7>&- 8>&-
	for i in "${pids[@]}"; do wait "$i" 2>/dev/null; done
	wait_for no_procs || { echo "  processes left:"; agent_procs | head; ok=1; }
	wait_for no_records || { echo "  records left:"; NS find /run/agent-sandbox/sessions -type f ! -name .lock | head; ok=1; }
	return $ok
}

# ---- the shipped files, as shipped (README "Deploying on a host") ----------

# sshs USER CMD: a session of sshd S.
sshs() { sshc s "$@"; }
# slog_has SID WHAT: the world's syslog has a line of session SID with WHAT.
slog_has() { grep -F "session=$1 " "$W/syslog.log" | grep -qF -- "$2"; }
# sshd_t USER KEY: sshd S's effective value of KEY for USER (sshd -T -C).
sshd_t() {
	NSS /usr/sbin/sshd -T -C "user=$1,host=localhost,addr=127.0.0.1" 2>/dev/null |
		awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }'
}

# Root's verbs on live sessions over the real sshd: --sessions lists the
# session with the processes of its tree (the sandbox's own included),
# --end ends that tree and sshd closes the session, --prune removes old
# report files by fd (a link planted in the reports is not followed).
t_ops_sessions_end_prune() {
	local ok=0 bg sid sleeper out uid reports decoy
	uid=$(NS id -u "$AGENT")
	wait_for no_agent_record
	rm -f "$T/ops.in"
	mkfifo "$T/ops.in"
	sshc a "$AGENT" 'sleep 1000 & echo "up $!"; cat >/dev/null' <"$T/ops.in" >"$T/ops.out" 2>&1 &
	bg=$!
	exec 9>"$T/ops.in"
	wait_for grep -q '^up ' "$T/ops.out" || { echo "  the session did not start: $(cat "$T/ops.out")"; ok=1; }
	sleeper=$(pgrep -u "$uid" -x sleep | head -n 1)
	NS "$WN/bin/agent-shell" --sessions >"$T/ops.list" 2>&1 || { echo "  --sessions: exit $?"; ok=1; }
	sed 's/^/  | /' "$T/ops.list"
	sid=$(awk -v u="$AGENT" '$2 == u && $7 == "live" { print $1 }' "$T/ops.list" | head -n 1)
	[ -n "$sid" ] || { echo "  --sessions does not list $AGENT's session as live"; ok=1; }
	NS "$WN/bin/agent-shell" --sessions --json >"$T/ops.json" 2>&1 || { echo "  --sessions --json: exit $?"; ok=1; }
	python3 - "$T/ops.json" "$sid" "$sleeper" "$AGENT" <<'EOF' || ok=1
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d["sessions"] if x["session"] == sys.argv[2]]
if len(s) != 1 or s[0]["user"] != sys.argv[4] or s[0]["state"] != "live" or s[0]["client"] != "127.0.0.1":
    print("  --json: %r" % s); sys.exit(1)
if int(sys.argv[3] or 0) not in s[0]["pids"]:
    print("  --json: the sandboxed sleep %s is not among the pids %r" % (sys.argv[3], s[0]["pids"])); sys.exit(1)
EOF
	# Not for the agent: the records are root's (the control is root's run above).
	out=$(NS setpriv --reuid="$uid" --regid="$uid" --clear-groups "$WN/bin/agent-shell" --sessions 2>&1)
	[ $? = 1 ] && [[ $out == *"only root can read the session records"* ]] ||
		{ echo "  --sessions as the agent: $out"; ok=1; }
	out=$(NS "$WN/bin/agent-shell" --end 0123456789abcdef0123456789abcdef 2>&1)
	[ $? = 1 ] && [[ $out == *"no session is"* ]] || { echo "  --end of no session: $out"; ok=1; }
	NS "$WN/bin/agent-shell" --end "$sid" >"$T/ops.end" 2>&1 || { echo "  --end: exit $?: $(cat "$T/ops.end")"; ok=1; }
	sed 's/^/  | /' "$T/ops.end"
	grep -q "^session $sid ($AGENT): [1-9][0-9]* process(es) ended, 0 left; the session closed" "$T/ops.end" ||
		{ echo "  --end did not say the session closed"; ok=1; }
	timeout 20 tail --pid="$bg" -f /dev/null || { echo "  the ssh client is still connected"; ok=1; }
	exec 9>&-
	wait "$bg" 2>/dev/null
	[ -n "$sleeper" ] && [ -d "/proc/$sleeper" ] && { echo "  the sandboxed sleep $sleeper survived"; ok=1; }
	no_agent_record || { echo "  the session's record is still there"; ok=1; }
	wait_for syslog_has "event=session_ended_by_root session=$sid user=$AGENT" ||
		{ echo "  --end was not logged"; ok=1; }

	# --prune: one report made old, a planted link that is old too, a
	# home of an account that no longer exists.
	reports=$WN/state/homes/$AGENT/.agent-sandbox/reports
	old=$(NS sh -c "ls $reports/*.json | head -n 1")
	[ -n "$old" ] || { echo "  no report file of $AGENT to age"; return 1; }
	decoy=$WN/prune-decoy
	NS sh -c "echo keep >$decoy && ln -sfn $decoy $reports/ffffffffffffffffffffffffffffffff.json &&
		touch -d '40 days ago' $old && touch -h -d '40 days ago' $reports/ffffffffffffffffffffffffffffffff.json &&
		install -d -m 0700 -o $uid $WN/state/homes/sbxgone-$R" || { echo "  prune fixtures"; ok=1; }
	NS "$WN/bin/agent-shell" --prune --older-than 30 >"$T/ops.prune" 2>&1 || { echo "  --prune: exit $?"; ok=1; }
	sed 's/^/  | /' "$T/ops.prune"
	grep -q "would remove 0 stale session record(s) and 1 report file(s) older than 30 day(s) ([0-9]* bytes), and [0-9]* of root.s report copies" "$T/ops.prune" &&
		grep -q "home $WN/state/homes/sbxgone-$R: no such account; kept" "$T/ops.prune" ||
		{ echo "  --prune dry run said otherwise"; ok=1; }
	NS test -e "$old" || { echo "  the dry run removed $old"; ok=1; }
	NS "$WN/bin/agent-shell" --prune --older-than 30 --yes >"$T/ops.prune" 2>&1 || { echo "  --prune --yes: exit $?"; ok=1; }
	grep -q "^removed 0 stale session record(s) and 1 report file(s)" "$T/ops.prune" || { echo "  --prune --yes: $(cat "$T/ops.prune")"; ok=1; }
	NS test ! -e "$old" || { echo "  $old survived --prune --yes"; ok=1; }
	[ "$(NS cat "$decoy")" = keep ] || { echo "  the link's target was touched"; ok=1; }
	NS test -d "$WN/state/homes/sbxgone-$R" || { echo "  --prune deleted a home"; ok=1; }
	NS rm -rf "$WN/state/homes/sbxgone-$R" "$decoy" "$reports/ffffffffffffffffffffffffffffffff.json"
	return $ok
}

# Root's ledger over the real sshd: each session's report as agent-shell
# sent it over the PAM stage's channel, and the refusals with their reasons,
# read back with --log and --report. What the agent does to its own copies,
# or tries on the channel, changes nothing in root's.
t_ops_log_and_root_report() {
	local ok=0 sid rc uid out
	uid=$(NS id -u "$AGENT")
	wait_for no_agent_record
	cat >"$T/ledger.sh" <<'EOF'
echo "sid=$AGENT_SANDBOX_SESSION"
python3 -c '
import socket, errno
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setblocking(False)
try:
    s.connect("/run/agent-sandbox/session/channel")
    print("channel=connected")
except OSError as e:
    print("channel=" + errno.errorcode[e.errno])
'
for f in "$HOME"/.agent-sandbox/reports/*.json; do echo '{"forged":1}' >"$f"; done
exit 3
EOF
	sshc a "$AGENT" 'sh -s' <"$T/ledger.sh" >"$T/ledger.out" 2>&1
	rc=$?
	sed 's/^/  | /' "$T/ledger.out"
	sid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/ledger.out")
	[ "$rc" = 3 ] && [ -n "$sid" ] || { echo "  the session: exit $rc, id '$sid'"; return 1; }
	grep -q '^channel=connected' "$T/ledger.out" && { echo "  the sandboxed program reached the channel"; ok=1; }
	wait_for no_agent_record
	# A refusal by the floor (the shell's), and one by the account phase.
	sshc a "$FLOOR" 'echo ran' >/dev/null 2>&1
	timeout 60 ssh "${SSH_OPTS[@]}" -p "$PORT_a" "$WRONG@127.0.0.1" true >/dev/null 2>&1
	NS "$WN/bin/agent-shell" --report --json "$sid" >"$T/ledger.report" 2>&1 ||
		{ echo "  --report $sid as root: $(cat "$T/ledger.report")"; ok=1; }
	python3 - "$T/ledger.report" "$sid" <<'EOF' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("session_id") != sys.argv[2] or r.get("exit_status") != 3 or "forged" in r or r.get("level") not in ("full", "degraded"):
    print("  root's copy: %r" % {k: r.get(k) for k in ("session_id", "exit_status", "level", "forged")}); sys.exit(1)
print("  root's copy: session %s, level %s, exit %d" % (r["session_id"][:12], r["level"], r["exit_status"]))
EOF
	[ "$(NS stat -c '%a %U' "$WN/state/ledger")" = "700 root" ] || { echo "  the ledger is not root-only"; ok=1; }
	NS "$WN/bin/agent-shell" --log --since 1h >"$T/ledger.log" 2>&1 || { echo "  --log: exit $?"; ok=1; }
	grep -E "pam_close +$AGENT +${sid:0:12}" "$T/ledger.log" | grep -q "report=kept .*exit_status=3" ||
		{ echo "  --log has no end of $sid with its exit status"; ok=1; }
	grep -E "refused +$FLOOR " "$T/ledger.log" | grep -q "stage=shell reason=floor .*origin=shell" ||
		{ echo "  --log has no floor refusal of $FLOOR"; ok=1; }
	# A value with spaces is quoted as the log grammar writes it: it
	# cannot pass for more fields.
	grep -E "pam_close +$FLOOR " "$T/ledger.log" | grep -q ' refusal="required guarantee exec_boundary' ||
		{ echo "  --log does not quote the floor's refusal"; ok=1; }
	grep -E "refused +$WRONG " "$T/ledger.log" | grep -q "stage=account reason=login_shell" ||
		{ echo "  --log has no account-phase refusal of $WRONG"; ok=1; }
	grep -E "$sid|$FLOOR|$WRONG" "$T/ledger.log" | cut -c1-220 | sed 's/^/  | /' | tail -6
	NS "$WN/bin/agent-shell" --log "$FLOOR" --json >"$T/ledger.json" 2>&1 || { echo "  --log --json: exit $?"; ok=1; }
	python3 - "$T/ledger.json" "$FLOOR" <<'EOF' || ok=1
import json, sys
d = json.load(open(sys.argv[1]))
if not d or any(e.get("user") != sys.argv[2] for e in d) or not any(e["event"] == "pam_close" and e.get("floor_met") == "no" for e in d):
    print("  --log USER --json: %r" % d[:3]); sys.exit(1)
EOF
	out=$(NS setpriv --reuid="$uid" --regid="$uid" --clear-groups "$WN/bin/agent-shell" --log 2>&1)
	[ $? = 1 ] && [[ $out == *"only root"* ]] || { echo "  --log as the agent: $out"; ok=1; }
	out=$(NS "$WN/bin/agent-shell" --log --since yesterday 2>&1)
	[ $? = 2 ] && [[ $out == *"--since yesterday"* ]] || { echo "  --log --since yesterday: $out"; ok=1; }
	return $ok
}

# Over the real sshd, an agent's command holding bytes that are not UTF-8,
# among them single-byte C1 controls ($'\x9b2J' is CSI 2 J, $'\x9d0;T\x9c'
# sets a title, to a terminal not in UTF-8 mode). What root prints of that
# session from its ledger (--report ID --json, --report ID, --log) and
# root's copy on disk are what a strict reader takes (Python's, through
# tests/helpers/strict_json.py), with no control character; the command
# comes back byte for byte from command_hex, and UTF-8 words as they are.
t_ledger_any_bytes_over_sshd() {
	local ok=0 sid f
	wait_for no_agent_record
	sshc a "$AGENT" "echo sid=\$AGENT_SANDBOX_SESSION; /bin/echo "$'\'caf\xe9\' \x9b2J \'\x9d0;TITLE\x9c\' caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac' \
		>"$T/bytes.out" 2>&1 || { echo "  the session: exit $?: $(cat -v "$T/bytes.out")"; return 1; }
	sid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/bytes.out")
	[ -n "$sid" ] || { echo "  no session id: $(cat -v "$T/bytes.out")"; return 1; }
	grep -q $'^caf\xe9 \x9b2J' "$T/bytes.out" || { echo "  the command's own output: $(cat -v "$T/bytes.out")"; ok=1; }
	wait_for no_agent_record
	wait_for test -n "$(NS "$WN/bin/agent-shell" --report --json "$sid" 2>/dev/null | grep exit_status)"
	NS "$WN/bin/agent-shell" --report --json "$sid" >"$T/bytes.json" 2>&1 || { echo "  --report --json: exit $?"; ok=1; }
	NS "$WN/bin/agent-shell" --report "$sid" >"$T/bytes.txt" 2>&1 || { echo "  --report: exit $?"; ok=1; }
	NS cat "$WN/state/ledger/$sid.json" >"$T/bytes.ledger" || ok=1
	NS "$WN/bin/agent-shell" --log --since 1h >"$T/bytes.log" 2>&1 || { echo "  --log: exit $?"; ok=1; }
	NS "$WN/bin/agent-shell" --log --since 1h --json >"$T/bytes.logjson" 2>&1 || { echo "  --log --json: exit $?"; ok=1; }
	for f in json:bytes.json json:bytes.ledger text:bytes.txt text:bytes.log json:bytes.logjson; do
		$PY "$SRC/tests/helpers/strict_json.py" "${f%%:*}" "$T/${f#*:}" | sed "s|$T/|  |" || ok=1
	done
	$PY - "$T/bytes.json" "$sid" <<'EOF' || ok=1
import json, sys
r = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "strict"))
exact = bytes.fromhex(r["command_hex"][-1])
want = b"/bin/echo 'caf\xe9' \x9b2J '\x9d0;TITLE\x9c' caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"
shown = "/bin/echo 'caf\\xe9' \\x9b2J '\\x9d0;TITLE\\x9c' caf\u00e9 \u65e5\u672c"
if r["session_id"] != sys.argv[2] or not exact.endswith(want) or not r["command"][-1].endswith(shown):
    print("  root's copy: command %r, bytes %r" % (r["command"], exact)); sys.exit(1)
print("  root's copy: %r" % r["command"][-1][-48:])
EOF
	cmp -s "$T/bytes.ledger" <(NS "$WN/bin/agent-shell" --report --json "$sid") ||
		{ echo "  --report --json is not root's copy as stored"; ok=1; }
	return $ok
}

# network = proxy over the real sshd, whose PAM stage has already put the
# session in an empty network namespace (service A: "netns"): inside, curl
# reaches the listed address through the bridge and agent-sandbox-egressd,
# and nothing else; the report proves network_egress; the daemon names the
# session; root's copy of the report has the counts.
t_proxy_session_over_sshd() {
	local ok=0 sid
	grep -q "listening on" "$T/egressd.log" || { echo "  the daemon: $(cat "$T/egressd.log")"; return 1; }
	# (The sandbox's view has no /run/e2e: the certificate goes in the workspace.)
	install -m 0644 "$W/egress-cert.pem" "$W/ws/$PROXY/ca.pem"
	sshc a "$PROXY" "echo sid=\$AGENT_SANDBOX_SESSION; echo ns_net=\$(readlink /proc/self/ns/net)
		curl -sS --max-time 8 --cacert ca.pem https://127.0.0.2:$EPORT/; echo
		curl -sS --max-time 8 --cacert ca.pem https://127.0.0.3:$EPORT/ 2>&1
		curl -sS --max-time 5 --noproxy '*' --cacert ca.pem https://127.0.0.2:$EPORT/ 2>&1
		cat \$HOME/.agent-sandbox/reports/\$AGENT_SANDBOX_SESSION.json" >"$T/proxy.out" 2>&1
	sed 's/^/  | /' "$T/proxy.out" | cut -c1-200 | head -8
	sid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/proxy.out")
	[ -n "$sid" ] || { echo "  no session id"; return 1; }
	grep -qx "ok $EPORT" "$T/proxy.out" || { echo "  the listed address was not reached"; ok=1; }
	grep -q "CONNECT tunnel failed, response 403" "$T/proxy.out" ||
		{ echo "  the unlisted address was not refused with 403"; ok=1; }
	grep -q "Failed to connect to 127.0.0.2 port $EPORT" "$T/proxy.out" ||
		{ echo "  the listed address was reachable without the proxy"; ok=1; }
	grep -qx "ns_net=$(readlink /proc/self/ns/net)" "$T/proxy.out" && { echo "  the host's network namespace"; ok=1; }
	grep "session=$sid" "$T/egressd.log" | grep -q "host=127.0.0.2 port=$EPORT .*verdict=allowed" ||
		{ echo "  the daemon has no allowed line for $sid"; ok=1; }
	grep "session=$sid" "$T/egressd.log" | grep -q "host=127.0.0.3 port=$EPORT .*verdict=refused reason=\"address not listed\"" ||
		{ echo "  the daemon has no refused line for $sid"; ok=1; }
	# The PAM stage made its network namespace for this session.
	wait_for syslog_has "session=$sid" "pam_stage=" && grep -F "session=$sid" "$W/syslog.log" |
		grep -qE 'pam_stage=([a-z_-]+,)*netns' || { echo "  no PAM-stage netns for $sid"; ok=1; }
	grep '"session_id"' "$T/proxy.out" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
e = {x["feature"]: x for x in r["entries"]}
if not (e["network_egress"]["achieved"] and e["network_egress"]["verified"] and "network_egress" in r["guarantees"] and "network_boundary" not in r["guarantees"] and r["floor_met"]):
    print("  the session report: %r" % (e["network_egress"], r["guarantees"])); sys.exit(1)' || ok=1
	wait_for test -n "$(NS "$WN/bin/agent-shell" --report --json "$sid" 2>/dev/null | grep exit_status)"
	NS "$WN/bin/agent-shell" --report --json "$sid" 2>&1 | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
g = r.get("egress", {})
if (g.get("allowed"), g.get("refused")) != (1, 1) or r.get("exit_status") is None:
    print("  root'"'"'s copy: egress %r exit %r" % (g, r.get("exit_status"))); sys.exit(1)
print("  root'"'"'s copy: list %s, allowed %d, refused %d" % (g["list"], g["allowed"], g["refused"]))' || ok=1
	return $ok
}

# Two shells in one PAM session: sshd opens one per connection, and a
# connection carries up to MaxSessions session channels. The first shell
# takes the ledger's one slot; a second one's command, status and refusals
# would reach no root-only record while root's copy and the pam_close line
# gave the first shell's ("report=kept exit_status=0" for a session whose
# real work ended 7). So the second shell of a login is refused.
t_ledger_two_shells_one_session() {
	local ok=0 sid ctl="$T/mux.ctl" port mpid rc o=()
	# SSH_OPTS without its ControlMaster/ControlPath (ssh keeps the first).
	for a in "${SSH_OPTS[@]}"; do
		case $a in ControlMaster=*|ControlPath=*) unset 'o[-1]' ;; *) o+=("$a") ;; esac
	done
	eval "port=\$PORT_b"
	wait_for no_agent_record
	# The decoy: the connection's first channel, a shell that exits 0.
	timeout 60 ssh "${o[@]}" -o ControlMaster=yes -o ControlPath="$ctl" -p "$port" \
		"$AGENT@127.0.0.1" 'echo sid=$AGENT_SANDBOX_SESSION; sleep 8; exit 0' >"$T/mux.decoy" 2>&1 &
	mpid=$!
	for _ in $(seq 150); do [ -S "$ctl" ] && grep -q '^sid=' "$T/mux.decoy" && break; sleep 0.1; done
	# The work: a second channel of the same connection.
	timeout 60 ssh "${o[@]}" -o ControlMaster=no -o ControlPath="$ctl" -p "$port" \
		"$AGENT@127.0.0.1" 'echo ran; exit 7' >"$T/mux.real" 2>&1
	rc=$?
	echo "  second channel: exit $rc: $(head -c 300 "$T/mux.real" | tr '\n' ' ')"
	wait "$mpid"
	sid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/mux.decoy")
	[ -n "$sid" ] || { echo "  no session id from the first channel: $(head -c 300 "$T/mux.decoy")"; return 1; }
	[ -S "$ctl" ] && rm -f "$ctl"
	wait_for pam_close_logged "$sid"
	NS "$WN/bin/agent-shell" --log --since 1h 2>&1 | grep "${sid:0:12}" | cut -c1-220 | sed 's/^/  | /'
	grep -q '^ran$' "$T/mux.real" &&
		{ echo "  the second shell of one login ran, outside root's ledger"; ok=1; }
	grep -q 'ledger channel is not this shell' "$T/mux.real" ||
		{ echo "  the second shell did not say why it refused"; ok=1; }
	NS "$WN/bin/agent-shell" --log --since 1h 2>&1 | grep "${sid:0:12}" | grep pam_close |
		grep -q "report=kept .*exit_status=0" || { echo "  no pam_close with the first shell's report"; ok=1; }
	return $ok
}

# PermitUserRC on (sshd B: no drop-in): sshd runs ~/.ssh/rc through the
# login shell first. That agent-shell takes the PAM session's ledger
# channel, and the login's own shell then refuses itself. Root's ledger
# says both: the pam_close line the rc's run (command=) and that the
# login was refused (refused_shells=1 result=refused), and the refusal
# itself with its reason, sent by the refused shell over the session's
# second socket. The rc, sandboxed, cannot reach that socket. A control
# session without the rc shows no refusal.
# pam_close_logged SID: root's ledger has session SID's pam_close line.
pam_close_logged() {
	NS "$WN/bin/agent-shell" --log --since 1h 2>/dev/null | grep -qE " pam_close +$AGENT +${1:0:12}"
}
t_ledger_user_rc_refusal() {
	local ok=0 sid csid rc rcdir="$WN/state/homes/$AGENT/.ssh"
	wait_for no_agent_record
	cat >"$T/user-rc" <<'EOF'
echo "rc-sid=$AGENT_SANDBOX_SESSION"
python3 -c '
import socket, errno
for name in ("channel", "refusals"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect("/run/agent-sandbox/session/" + name)
        print("rc-" + name + "=connected")
    except OSError as e:
        print("rc-" + name + "=" + errno.errorcode[e.errno])
'
EOF
	NS install -d -m 0700 -o "$AGENT" -g "$GROUP" "$rcdir" || return 1
	NS sh -c "cat >'$rcdir/rc' && chown '$AGENT' '$rcdir/rc'" <"$T/user-rc" || return 1
	sshc b "$AGENT" 'echo ran; exit 7' >"$T/userrc.out" 2>&1
	rc=$?
	NS rm -f "$rcdir/rc"
	sed 's/^/  | /' "$T/userrc.out"
	sid=$(sed -n 's/^rc-sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/userrc.out")
	[ -n "$sid" ] || { echo "  the rc did not run (exit $rc)"; return 1; }
	grep -q '^ran$' "$T/userrc.out" && { echo "  the login's shell ran beside the rc's"; ok=1; }
	[ "$rc" = 126 ] || { echo "  the login: exit $rc, not the shell's refusal (126)"; ok=1; }
	grep -q 'ledger channel is not this shell' "$T/userrc.out" ||
		{ echo "  the client was not told why"; ok=1; }
	grep -q '=connected$' "$T/userrc.out" && { echo "  the sandboxed rc reached the session's sockets"; ok=1; }
	grep -q '^rc-refusals=ENOENT$' "$T/userrc.out" || { echo "  the rc's probe of the refusals socket did not say ENOENT"; ok=1; }
	# The record goes before the close's line is written: wait for the line.
	wait_for pam_close_logged "$sid"
	NS "$WN/bin/agent-shell" --log --since 1h >"$T/userrc.log" 2>&1 || { echo "  --log: exit $?"; ok=1; }
	grep -F "${sid:0:12}" "$T/userrc.log" | cut -c1-260 | sed 's/^/  | /'
	grep -E " pam_close +$AGENT +${sid:0:12}" "$T/userrc.log" | grep -F '.ssh/rc' |
		grep -q 'refused_shells=1 .*result=refused' ||
		{ echo "  no pam_close of $sid with the rc's command, refused_shells=1 and result=refused"; ok=1; }
	grep -E " refused +$AGENT +${sid:0:12}" "$T/userrc.log" |
		grep -q 'stage=shell reason=ledger_channel .*origin=shell' ||
		{ echo "  no refusal of the login's shell (reason=ledger_channel) in session $sid"; ok=1; }

	# The control: the same login without the rc.
	sshc b "$AGENT" 'echo "sid=$AGENT_SANDBOX_SESSION"; exit 7' >"$T/userrc-ctl.out" 2>&1
	rc=$?
	csid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/userrc-ctl.out")
	[ "$rc" = 7 ] && [ -n "$csid" ] || { echo "  control: exit $rc, id '$csid'"; return 1; }
	wait_for pam_close_logged "$csid"
	NS "$WN/bin/agent-shell" --log --since 1h >"$T/userrc.log" 2>&1 || { echo "  --log: exit $?"; ok=1; }
	grep -F "${csid:0:12}" "$T/userrc.log" | cut -c1-260 | sed 's/^/  | /'
	grep -E " pam_close +$AGENT +${csid:0:12}" "$T/userrc.log" | grep -q 'report=kept .*exit_status=7 .*result=ok' ||
		{ echo "  control: no pam_close of $csid with exit_status=7 and result=ok"; ok=1; }
	grep -E " (pam_close|refused) +$AGENT +${csid:0:12}" "$T/userrc.log" | grep -qE 'refused_shells|stage=shell' &&
		{ echo "  control: a refusal in session $csid"; ok=1; }
	return $ok
}

t_shipped_installed_as_make_install() {
	local u ok=0 key
	echo "  config: only agent_shell differs from etc/agent-sandbox.conf ($(grep '^>' "$T/conf.diff" | cut -c3- | cut -d'#' -f1))"
	echo "  --check-config, as shipped: $(head -1 "$T/s-check-config-bare.out")"
	echo "  --check-config, with conf.d/local.conf: $(head -1 "$T/s-check-config.out")"
	NSS cmp "$SRC/etc/sshd_config.d/agent-sandbox.conf" /etc/ssh/sshd_config.d/agent-sandbox.conf ||
		{ echo "  the drop-in is not the shipped one"; ok=1; }
	[ "$(NSS head -1 /etc/ssh/sshd_config)" = "Include /etc/ssh/sshd_config.d/*.conf" ] || ok=1
	sed 's/^/  enrol: /' "$T/enroll.out" | grep -E 'gets profile|added .* to group|created (workspace|isolated)'
	grep -qx "$S_CODER gets profile coder (group rule)" "$T/enroll.out" || ok=1
	grep -qx "$S_REV gets profile reviewer (group rule)" "$T/enroll.out" || ok=1
	grep -qx "$S_CI gets profile ci (user rule)" "$T/enroll.out" || ok=1
	# What the drop-in gives each account (sshd -T, the effective config).
	for u in $S_CODER $S_REV $S_CI; do
		local line="" bad=""
		for key in disableforwarding allowtcpforwarding permituserrc x11forwarding permittunnel; do
			line="$line $key=$(sshd_t "$u" $key)"
		done
		echo "  sshd -T -C user=$u ($(NSS id -Gn "$u")):$line"
		case "$line" in *"disableforwarding=yes"*"permituserrc=no"*) ;; *) bad=1 ;; esac
		[ -z "$bad" ] || { echo "  the shipped drop-in does not apply to $u (not in group agents)"; ok=1; }
	done
	# The effective profiles' trees (after the shipped ceiling).
	for u in $S_CODER $S_REV; do
		NSS "$WN/bin/agent-shell" --explain "$u" 2>/dev/null | awk -v u="$u" '
			/^profile / { p = $2 } /^roots/ { r = 1 } r && /^[a-z_]+ / && !/^roots/ { r = 0 }
			r { sub(/^roots/, ""); gsub(/  +/, " "); print "  explain " u " (" p "): root" $0 }'
	done
	return $ok
}

t_shipped_doctor() {
	local rc s ok=0
	NSS "$WN/bin/agent-shell" --doctor >"$T/doctor.out" 2>&1
	rc=$?
	echo "  --doctor exit $rc: $(tail -1 "$T/doctor.out")"
	grep -E '^(FAIL|WARN)' -A1 "$T/doctor.out" | sed 's/^/  | /'
	[ $rc -eq 0 ] || ok=1
	# Every stack step 2 edits, with the module in both phases.
	for s in sshd login su su-l runuser runuser-l; do
		grep -qE "^OK +pam +$s +/etc/pam.d/$s: module in the account and session phases" "$T/doctor.out" ||
			{ echo "  doctor: pam $s not OK"; ok=1; }
	done
	return $ok
}

t_shipped_pam_stacks() {
	local f ok=0 d sid out
	# Each stack is Debian's plus exactly the snippet's lines, where README says.
	for f in sshd login su runuser runuser-l; do
		d=$(diff "/etc/pam.d/$f" <(NSS cat "/etc/pam.d/$f") | grep '^[<>]')
		echo "  /etc/pam.d/$f: $(echo "$d" | grep -c '^>') line(s) added, $(echo "$d" | grep -c '^<') removed"
		echo "$d" | grep -q '^<' && ok=1
	done
	NSS grep -B1 -x '@include common-account' /etc/pam.d/sshd | head -1 | grep -qxF "$S_A" ||
		{ echo "  sshd: account line not right before @include common-account"; ok=1; }
	[ "$(NSS grep -E '^-?session[[:space:]]' /etc/pam.d/sshd | tail -1)" = "$S_S" ] ||
		{ echo "  sshd: the netns session line is not the last session line"; ok=1; }
	for f in login su; do
		NSS grep -B1 -x '@include common-account' "/etc/pam.d/$f" | head -1 |
			grep -q '^account .*pam_agent_sandbox.so$' || { echo "  $f: account line misplaced"; ok=1; }
		NSS grep -A1 -x '@include common-session' "/etc/pam.d/$f" | tail -1 |
			grep -q '^session .*pam_agent_sandbox.so$' || { echo "  $f: session line misplaced"; ok=1; }
	done
	# In effect for sshd: the session phase is the shipped line (the
	# module logs under service sshd, and its "netns" argument shows in
	# what the stage did) ...
	out=$(sshs "$S_CODER" 'echo "SID=$AGENT_SANDBOX_SESSION"')
	sid=$(echo "$out" | sed -n 's/^SID=//p')
	wait_for slog_has "$sid" "]: event=pam_open session=$sid " ||
		{ echo "  no module line from service sshd's session phase"; ok=1; }
	grep -F "]: event=pam_open session=$sid " "$W/syslog.log" | grep -F " service=sshd " |
		grep -qE 'pam_stage=([a-z_-]+,)*netns' ||
		{ echo "  the session stage did not make a network namespace (netns argument)"; ok=1; }
	echo "  session phase: $(grep -F "]: event=pam_open session=$sid " "$W/syslog.log" | grep -o 'event=pam_open.*' |
		sed 's/ hash=.*pam_stage=/ ... pam_stage=/')"
	# The program's end: exit status and duration, under the same id.
	wait_for slog_has "$sid" "]: event=session_end session=$sid " ||
		{ echo "  no session_end line"; ok=1; }
	slog_has "$sid" " exit_status=0 duration_ms=" || { echo "  session_end without exit status"; ok=1; }
	# ... and the account phase is the shipped line: an account in group
	# agents whose login shell is bash is refused by it, under sshd.
	NSS useradd --create-home --uid "$S_UID_WRONG" --user-group --groups agents --shell /bin/bash "$S_WRONG" \
		2>"$T/useradd.err" || { cat "$T/useradd.err"; return 1; }
	NSS install -d -m 0700 -o "$S_WRONG" -g "$S_WRONG" "/home/$S_WRONG/.ssh"
	NSS install -m 0600 -o "$S_WRONG" -g "$S_WRONG" "$W/client/id.pub" "/home/$S_WRONG/.ssh/authorized_keys"
	if sshs "$S_WRONG" 'echo ran' >"$T/s-wrong.out" 2>&1 || grep -qx ran "$T/s-wrong.out"; then
		echo "  $S_WRONG (bash, in agents) got a session"; ok=1
	fi
	wait_for syslog_has "]: event=refused stage=account reason=login_shell service=sshd user=$S_WRONG " \
		"msg=\"user $S_WRONG: refused: login shell /bin/bash" ||
		{ echo "  no refusal from sshd's account phase"; ok=1; }
	echo "  account phase: $(grep -o "event=refused stage=account reason=login_shell service=sshd user=$S_WRONG .*" "$W/syslog.log" | head -1)"
	NSS userdel -r "$S_WRONG" 2>/dev/null
	return $ok
}

# The probe of a coder or reviewer session (LPORT is known after set-up).
s_probe() {
	echo 'echo "PWD=$(pwd)"; echo "HOME=$HOME"; echo "SID=$AGENT_SANDBOX_SESSION"
grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -d "\t" | sed "s/:/=/"
try_write() { if (echo x >"$2") 2>/dev/null; then echo "$1=ok"; else echo "$1=refused: $( (echo x >"$2") 2>&1 | sed "s/.*: //")"; fi; }
ws=/srv/agents/$USER/workspace
try_write ws_write "$ws/from-ssh"
try_write etc_write /etc/sbxe2e-shipped
try_write toolchain_write /opt/toolchains/from-ssh
try_write cache_write "/srv/agents/$USER/cache/from-ssh"
try_write notes_write "/srv/agents/$USER/notes/from-ssh"
echo "toolchain_read=$(cat /opt/toolchains/VERSION 2>&1)"
echo "ws_read=$(cat "$ws/README.txt" 2>&1 | head -1)"
if (exec 3<>/dev/tcp/127.0.0.1/'"$LPORT"') 2>/dev/null; then echo tcp=reached; else echo "tcp=blocked: $( (exec 3<>/dev/tcp/127.0.0.1/'"$LPORT"') 2>&1 | tail -1 | sed "s/.*: //")"; fi
[ -f "$HOME/persist" ] && echo "home_prev=$(cat "$HOME/persist")"
echo "$AGENT_SANDBOX_SESSION" >"$HOME/persist" && echo home_write=ok
echo done'
}

# expect FILE LINE: FILE has LINE (exactly), else say so.
expect() { grep -qxF -- "$2" "$1" || { echo "  expected \"$2\", got: $(grep -m1 "^${2%%=*}=" "$1" || echo nothing)"; return 1; }; }

# s_unix_forward USER: what "ssh -L LOCAL:HOST_SOCKET" brings back from the
# host's unix-socket service through a session of USER.
s_unix_forward() {
	local lsock=$T/fwd-$1.sock pid
	rm -f "$lsock"
	sshc s "$1" -L "$lsock:$WN/unix.sock" 'sleep 3' >/dev/null 2>&1 &
	pid=$!
	wait_for test -S "$lsock"
	"$PY" "$HELPER" uprobe "$lsock"
	wait "$pid" 2>/dev/null
	rm -f "$lsock"
}

# s_report USER SID FILE: the report of session SID (agent-shell writes it
# into the home: the isolated one persists), summarised.
s_report() {
	NSS cat "/var/lib/agent-sandbox/homes/$1/.agent-sandbox/reports/$2.json" >"$3.json" &&
		"$PY" "$HELPER" report "$3.json" >"$3"
}

# pam-auth-update puts the module in common-session, before Debian's
# "pam_env.so user_readenv=1", which then reads ~/.pam_environment from the
# agent's isolated home (already bound at $HOME). LD_PRELOAD there must not
# reach a dynamic loader outside the sandbox: the login shell is the static
# launcher, which drops it (and logs that) before agent-shell proper runs.
t_shipped_pam_environment_preload() {
	local ok=0 h uid out
	h=/var/lib/agent-sandbox/homes/$S_CODER
	uid=$(NSS id -u "$S_CODER")
	cc -shared -fPIC -o "$T/preload.so" -x c - <<'EOF' || return 1
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void c(void) { dprintf(2, "PRELOADED uid=%d\n", (int)getuid()); }
EOF
	printf 'LD_PRELOAD DEFAULT=/home/%s/preload.so\n' "$S_CODER" >"$T/pamenv"
	NSS install -m 0644 -o "$uid" "$T/preload.so" "$h/preload.so" || return 1
	NSS install -m 0644 -o "$uid" "$T/pamenv" "$h/.pam_environment" || return 1
	# Control: the library runs, as the agent, in agent-shell proper when its
	# loader sees it.
	out=$(NSS setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		env LD_PRELOAD="$h/preload.so" "$WN/lib/agent-sandbox/agent-shell" --version 2>&1)
	[[ $out == *"PRELOADED uid=$uid"* ]] || { echo "  control: the library did not run: $out"; ok=1; }
	sshs "$S_CODER" 'echo "inside=${LD_PRELOAD:-unset}"; echo done' >"$T/preload.out" 2>&1 ||
		{ echo "  ssh exit $?"; ok=1; }
	sed 's/^/  | /' "$T/preload.out"
	grep -q PRELOADED "$T/preload.out" && { echo "  the agent's library ran outside the sandbox"; ok=1; }
	grep -qx 'inside=unset' "$T/preload.out" && grep -qx done "$T/preload.out" ||
		{ echo "  the session did not run"; ok=1; }
	# pam_env did set it: the launcher says what it dropped.
	wait_for syslog_has "event=warning reason=loader_env_dropped user=$S_CODER dropped=LD_PRELOAD" ||
		{ echo "  no loader_env_dropped warning: pam_env did not set it, or it was not logged"; ok=1; }
	NSS rm -f "$h/preload.so" "$h/.pam_environment"
	return $ok
}

t_shipped_coder() {
	local ok=0 before sid1 sid2 g out
	before=$(listener_count)
	sshs "$S_CODER" "$(s_probe)" >"$T/coder1.out" 2>&1 || { echo "  ssh exit $?"; ok=1; }
	sed 's/^/  | /' "$T/coder1.out"
	expect "$T/coder1.out" done || return 1
	for l in Seccomp=2 NoNewPrivs=1 "PWD=/srv/agents/$S_CODER/workspace" ws_write=ok \
		"etc_write=refused: Read-only file system" "toolchain_read=toolchain $R" \
		"toolchain_write=refused: Read-only file system" cache_write=ok home_write=ok; do
		expect "$T/coder1.out" "$l" || ok=1
	done
	grep -q '^tcp=blocked' "$T/coder1.out" || ok=1
	# sshd's own forwarding: the drop-in refuses it for group agents.
	echo | sshv s "$S_CODER" -W "127.0.0.1:$LPORT" >"$T/coder-w.out" 2>&1
	echo "  ssh -W to the host listener: $(head -1 "$T/coder-w.out")"
	grep -q HELLO "$T/coder-w.out" && ok=1
	[ "$(listener_count)" = "$before" ] || { echo "  the host listener got a connection"; ok=1; }
	out=$(s_unix_forward "$S_CODER")
	echo "  ssh -L to a host unix socket: $out"
	[ "$out" = data:HELLO ] && ok=1
	[ "$(NSS cat "/srv/agents/$S_CODER/workspace/from-ssh")" = x ] || { echo "  workspace file not kept"; ok=1; }
	[ "$(NSS cat "/srv/agents/$S_CODER/cache/from-ssh")" = x ] || { echo "  cache file not kept"; ok=1; }
	NSS test ! -e /etc/sbxe2e-shipped -a ! -e /opt/toolchains/from-ssh || ok=1
	# The report: the shipped floor (min_level degraded, its require list), met.
	sid1=$(sed -n 's/^SID=//p' "$T/coder1.out")
	s_report "$S_CODER" "$sid1" "$T/coder.report" || { echo "  no report"; return 1; }
	grep -E '^(level|min_level|floor_met|required)=' "$T/coder.report" | sed 's/^/  report: /'
	expect "$T/coder.report" min_level=degraded || ok=1
	expect "$T/coder.report" floor_met=true || ok=1
	grep -qE '^level=(full|degraded)$' "$T/coder.report" || ok=1
	for g in write_boundary read_boundary network_boundary no_privilege_gain syscall_filter env_scrub; do
		grep -q "^required=.*\b$g\b" "$T/coder.report" || { echo "  $g not required"; ok=1; }
		grep -q "^guarantees=.*\b$g\b" "$T/coder.report" || { echo "  $g not held"; ok=1; }
	done
	wait_for slog_has "$sid1" "floor=met" || { echo "  no floor=met report line logged"; ok=1; }
	# pam_stage = required: this session was prepared by the PAM stage ...
	slog_has "$sid1" "service=sshd profile=coder" && slog_has "$sid1" "pam_stage=" ||
		{ echo "  no PAM-stage line for the session"; ok=1; }
	# ... and the isolated home persists: a second session sees the first's file.
	sshs "$S_CODER" "$(s_probe)" >"$T/coder2.out" 2>&1
	sid2=$(sed -n 's/^SID=//p' "$T/coder2.out")
	echo "  second session $sid2: $(grep '^home_prev=' "$T/coder2.out")"
	[ -n "$sid2" ] && [ "$sid2" != "$sid1" ] || ok=1
	expect "$T/coder2.out" "home_prev=$sid1" || ok=1
	[ "$(NSS cat "/var/lib/agent-sandbox/homes/$S_CODER/persist")" = "$sid2" ] ||
		{ echo "  not the isolated home under /var/lib/agent-sandbox"; ok=1; }
	return $ok
}

# The agent's own uid outside the sandbox (a host tool, the user's tmux or
# ssh-agent): a tmux server with its socket in the workspace and an
# ssh-agent holding a key with its socket in the isolated home, both started
# outside as the coder account. A session over sshd with the shipped coder
# profile reaches neither (tmux run-shell would run unconfined; ssh-add -l
# would list the key); a tmux server and an ssh-agent of its own answer.
s_as_coder() {
	local uid
	uid=$(NSS id -u "$S_CODER") || return 1
	NSS setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		env -i PATH=/usr/bin:/bin HOME="/home/$S_CODER" SHELL=/bin/sh "$@"
}

t_shipped_coder_sameuid() {
	local ok=0 ws h pwned uid agent_pid
	ws=/srv/agents/$S_CODER/workspace
	h=/var/lib/agent-sandbox/homes/$S_CODER
	pwned=$OPEN-tmux-pwned
	uid=$(NSS id -u "$S_CODER")
	ssh-keygen -q -t ed25519 -N '' -f "$T/coder-key" || return 1
	NSS install -m 0600 -o "$uid" "$T/coder-key" "/home/$S_CODER/.coder-key" || return 1
	s_as_coder tmux -S "$ws/.hosttmux" new-session -d -s host 'sleep 300' || return 1
	NSSBG setpriv --reuid="$uid" --regid="$uid" --clear-groups \
		env -i PATH=/usr/bin:/bin ssh-agent -D -a "$h/.hostagent" >/dev/null 2>&1
	agent_pid=$!
	wait_for NSS test -S "$h/.hostagent" || { echo "  no ssh-agent outside"; ok=1; }
	s_as_coder env SSH_AUTH_SOCK="$h/.hostagent" ssh-add -q "/home/$S_CODER/.coder-key" ||
		{ echo "  ssh-add outside failed"; ok=1; }
	# Controls, outside: both answer the coder account there.
	s_as_coder tmux -S "$ws/.hosttmux" run-shell true || { echo "  tmux outside: no control"; ok=1; }
	s_as_coder env SSH_AUTH_SOCK="$h/.hostagent" ssh-add -l >/dev/null ||
		{ echo "  ssh-agent outside: no control"; ok=1; }
	sshs "$S_CODER" 'ws=/srv/agents/$USER/workspace
tmux -S "$ws/.hosttmux" run-shell "touch '"$pwned"'" 2>/dev/null; echo "tmux_outside=$?"
SSH_AUTH_SOCK=$HOME/.hostagent ssh-add -l >/dev/null 2>&1; echo "agent_outside=$?"
python3 -c "import socket,sys
try: socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print(\"connect_outside=ok\")
except OSError as e: print(\"connect_outside=\" + (e.strerror or str(e)))" "$ws/.hosttmux"
SHELL=/bin/sh tmux -S /tmp/in.tmux new-session -d "sleep 30"
tmux -S /tmp/in.tmux run-shell "touch /tmp/in-ran"; echo "tmux_inside=$?"
[ -e /tmp/in-ran ] && echo tmux_inside_ran=yes
tmux -S /tmp/in.tmux kill-server
eval "$(ssh-agent -a /tmp/in.agent)" >/dev/null; ssh-add -l >/dev/null 2>&1; echo "agent_inside=$?"
ssh-agent -k >/dev/null 2>&1
echo done' >"$T/sameuid.out" 2>&1 || { echo "  ssh exit $?"; ok=1; }
	sed 's/^/  | /' "$T/sameuid.out"
	# 1: tmux could not connect; 2: ssh-add found no agent; 1 inside:
	# connected, "The agent has no identities".
	for l in tmux_outside=1 agent_outside=2 "connect_outside=Permission denied" tmux_inside=0 \
		tmux_inside_ran=yes agent_inside=1 done; do
		expect "$T/sameuid.out" "$l" || ok=1
	done
	NSS test -e "$pwned" && { echo "  tmux outside ran the session's command"; ok=1; }
	# The last session's close ends the account's processes (the PAM
	# stage), the ones outside too: what is left, end it here.
	s_as_coder tmux -S "$ws/.hosttmux" kill-server 2>/dev/null
	{ kill "$agent_pid"; wait "$agent_pid"; } 2>/dev/null
	# Two sessions of the account: a tmux server the first started in
	# the workspace is not the second's (each knows only its own binds).
	sshs "$S_CODER" 'SHELL=/bin/sh tmux -S "/srv/agents/$USER/workspace/.s1tmux" new-session -d "sleep 20"
echo started; sleep 6' >"$T/s1.out" 2>&1 &
	local s1=$!
	wait_for NSS test -S "$ws/.s1tmux" || { echo "  the first session's tmux did not start"; ok=1; }
	sshs "$S_CODER" 'python3 -c "import socket,sys
try: socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print(\"cross_session=ok\")
except OSError as e: print(\"cross_session=\" + (e.strerror or str(e)))" "/srv/agents/$USER/workspace/.s1tmux"' \
		>"$T/s2.out" 2>&1
	wait "$s1"
	sed 's/^/  | /' "$T/s1.out" "$T/s2.out"
	expect "$T/s1.out" started || ok=1
	expect "$T/s2.out" "cross_session=Permission denied" || ok=1
	NSS rm -f "$ws/.hosttmux" "$ws/.s1tmux" "$h/.hostagent" "/home/$S_CODER/.coder-key" "$pwned"
	return $ok
}

# Root's ledger with the config as shipped: the ceiling's deny_read masks
# the state directory in the session's mount namespace, where sshd's
# monitor stays until the close; the ledger is written through a directory
# fd opened before the masks. --log shows the session's start (the PAM
# stage's and the shell's), its end with the exit status and how it ended,
# and --report ID root's copy of the report.
t_shipped_ledger() {
	local ok=0 sid rc e
	sshs "$S_CODER" 'echo "sid=$AGENT_SANDBOX_SESSION"; exit 3' >"$T/sledger.out" 2>&1
	rc=$?
	sid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$T/sledger.out")
	[ "$rc" = 3 ] && [ -n "$sid" ] || { echo "  the session: exit $rc, id '$sid'"; sed 's/^/  | /' "$T/sledger.out"; return 1; }
	wait_for NSS test ! -e "/run/agent-sandbox/sessions/$sid" || { echo "  the session did not close"; ok=1; }
	NSS "$WN/bin/agent-shell" --log --since 1h >"$T/sledger.log" 2>&1 || { echo "  --log: exit $?"; ok=1; }
	grep -F "${sid:0:12}" "$T/sledger.log" | cut -c1-200 | sed 's/^/  | /'
	for e in pam_open session_start session_end pam_close; do
		grep -E "^[^ ]+ +$e +$S_CODER +${sid:0:12}" "$T/sledger.log" >/dev/null ||
			{ echo "  --log has no $e line of $sid"; ok=1; }
	done
	grep -E " session_end +$S_CODER +${sid:0:12}" "$T/sledger.log" | grep -q 'exit_status=3 .*ended=exit.*origin=shell' ||
		{ echo "  no session_end with exit_status=3 from the shell"; ok=1; }
	grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/sledger.log" | grep -q 'how=closed report=kept .*exit_status=3' ||
		{ echo "  no pam_close with how=closed, the report kept and exit_status=3"; ok=1; }
	grep -q 'reason=ledger ' "$W/syslog.log" && { echo "  the ledger could not be written: $(grep -m1 'reason=ledger ' "$W/syslog.log")"; ok=1; }
	NSS "$WN/bin/agent-shell" --report --json "$sid" >"$T/sledger.json" 2>&1 ||
		{ echo "  --report $sid as root: $(cat "$T/sledger.json")"; ok=1; }
	python3 - "$T/sledger.json" "$sid" <<'EOF2' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
if r.get("session_id") != sys.argv[2] or r.get("exit_status") != 3:
    print("  root's copy: %r" % {k: r.get(k) for k in ("session_id", "exit_status", "level")}); sys.exit(1)
print("  root's copy: session %s, level %s, exit %d" % (r["session_id"][:12], r["level"], r["exit_status"]))
EOF2
	return $ok
}

# A session outlives its start: agent-shell watches a pidfd of the opener
# (sshd's monitor) and ends the session when it ends; while the monitor
# lives, nothing may end it early.
t_shipped_session_lasts() {
	local out
	out=$(sshs "$S_CODER" 'sleep 4; echo survived' 2>&1)
	[[ $out == *survived* ]] || { echo "  the session did not last 4 s: $out"; return 1; }
}

# session_id FILE: the "sid=ID" a session printed to FILE, waited for up
# to 10 s; "" when none came.
session_id() {
	local sid=""
	for _ in $(seq 100); do
		sid=$(sed -n 's/^sid=\([0-9a-f]\{32\}\)$/\1/p' "$1" 2>/dev/null)
		[ -n "$sid" ] && break
		sleep 0.1
	done
	echo "$sid"
}

# coder_session_procs SID: the pids of the coder's processes in session
# SID's mount namespace (the record names it; or the namespace NS given
# second), one per line.
coder_session_procs() {
	local ns=${2:-} uid p
	[ -n "$ns" ] || ns=$(NSS sed -n 's/^mntns=//p' "/run/agent-sandbox/sessions/$1" 2>/dev/null)
	[ -n "$ns" ] || return 0
	uid=$(NSS id -u "$S_CODER")
	for p in /proc/[0-9]*; do
		[ "$(awk '/^Uid:/ { print $2 }' "$p/status" 2>/dev/null)" = "$uid" ] || continue
		[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "mnt:[$ns]" ] && echo "${p#/proc/}"
	done
}

# keeper_procs NS: the pids of the PAM stage's keepers (comm sbx-keeper)
# in mount namespace NS, one per line.
keeper_procs() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = sbx-keeper ] || continue
		[ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "mnt:[$1]" ] && echo "${p#/proc/}"
	done
}

# The fault: sshd's root monitor of a session dies (the OOM killer, an
# admin's kill -9). The PAM stage's keeper of the session (a root process
# that only waits on the monitor) takes the record over at once, so no
# count takes the session for stale while the shell ends it. Round 1:
# agent-shell sees its opener gone and ends the session itself (SIGHUP,
# then SIGKILL after 3 s) and sends its report: the keeper closes the
# session with it (how=opener_gone report=kept), and nothing of it runs
# within 6 s. Round 2: agent-shell is stopped first, so it can neither end
# the session nor send its exit status: the keeper waits 8 s for it, then
# ends what is left itself, with no login needed: nothing runs within
# 12 s, and the report the shell sent before the command ran is kept,
# without an exit status. Either way the ledger has the session's open and end, the keeper
# is gone once done, and the next login works.
t_fault_monitor_killed() {
	local ok=0 round sid opener ns pids shell_pid left out keeper want bound
	for round in 1 2; do
		sshs "$S_CODER" 'echo "sid=$AGENT_SANDBOX_SESSION"; exec sleep 60' >"$T/fmon$round.out" 2>&1 &
		local client=$!
		sid=$(session_id "$T/fmon$round.out")
		[ -n "$sid" ] || { echo "  round $round: no session"; ok=1; kill "$client"; continue; }
		opener=$(NSS sed -n 's/^opener_pid=//p' "/run/agent-sandbox/sessions/$sid")
		ns=$(NSS sed -n 's/^mntns=//p' "/run/agent-sandbox/sessions/$sid")
		pids=$(coder_session_procs "$sid" | tr '\n' ' ')
		keeper=$(keeper_procs "$ns" | tr '\n' ' ')
		echo "  round $round: session ${sid:0:12}, monitor $opener ($(tr '\0' ' ' </proc/$opener/cmdline | cut -c1-40)), keeper $keeper, coder's processes: $pids"
		[ "$(echo $keeper | wc -w)" = 1 ] || { echo "  round $round: not one keeper: '$keeper'"; ok=1; }
		if [ "$round" = 2 ]; then
			for p in $pids; do
				[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agent-shell ] && kill -STOP "$p" && shell_pid="$p $shell_pid"
			done
			[ -n "$shell_pid" ] || { echo "  round 2: no agent-shell to stop"; ok=1; }
		fi
		kill -KILL "$opener"
		if [ "$round" = 1 ]; then
			want='report=kept .*exit_status=129 ' bound=6
		else
			want='report=kept .*floor_met=yes killed=' bound=12
			sleep 2
			left=$(coder_session_procs "" "$ns" | tr '\n' ' ')
			[ -n "$left" ] || { echo "  round 2: the stopped session ended by itself"; ok=1; }
			# The keeper holds the record meanwhile: it is not stale.
			[ "$(NSS sed -n 's/^opener_pid=//p' "/run/agent-sandbox/sessions/$sid" 2>/dev/null)" = "${keeper% }" ] ||
				{ echo "  round 2: the record's opener is not the keeper"; ok=1; }
		fi
		for _ in $(seq $((bound * 10))); do
			[ -z "$(coder_session_procs "" "$ns")" ] && [ -z "$(keeper_procs "$ns")" ] && break
			sleep 0.1
		done
		left=$(coder_session_procs "" "$ns" | tr '\n' ' ')
		[ -z "$left" ] || { echo "  round $round: still running ${bound} s after, with no login: $left"; ok=1; }
		[ -z "$(keeper_procs "$ns")" ] || { echo "  round $round: the keeper is still there"; ok=1; }
		NSS test ! -e "/run/agent-sandbox/sessions/$sid" || { echo "  round $round: the record is still there"; ok=1; }
		wait "$client" 2>/dev/null
		sed 's/^/  | /' "$T/fmon$round.out"
		NSS "$WN/bin/agent-shell" --log --since 1h >"$T/fmon.log" 2>&1
		grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/fmon.log" | grep -q "how=opener_gone $want" ||
			{ echo "  round $round: no pam_close how=opener_gone $want in the ledger"; grep -F "${sid:0:12}" "$T/fmon.log" | sed 's/^/  | /'; ok=1; }
		[ "$(grep -cE " pam_close +$S_CODER +${sid:0:12}" "$T/fmon.log")" = 1 ] ||
			{ echo "  round $round: not one pam_close"; ok=1; }
		grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/fmon.log" | sed 's/^/  ledger: /' | cut -c1-220
		grep -E " pam_open +$S_CODER +${sid:0:12}" "$T/fmon.log" >/dev/null || { echo "  round $round: no pam_open"; ok=1; }
		NSS test -s "/var/lib/agent-sandbox/ledger/$sid.json" ||
			{ echo "  round $round: no root's copy of the report"; ok=1; }
		out=$(sshs "$S_CODER" 'echo next-login-ok' 2>&1)
		[[ $out == *next-login-ok* ]] || { echo "  round $round: the next login: $out"; ok=1; }
		shell_pid=""
	done
	return $ok
}

# ---- races and stalls around the keeper -----------------------------------

# keeper_start TAG: a coder session running sleep 60; sets sid opener ns
# keeper client.
keeper_start() {
	sshs "$S_CODER" 'echo "sid=$AGENT_SANDBOX_SESSION"; exec sleep 60' >"$T/kp$1.out" 2>&1 &
	client=$!
	sid=$(session_id "$T/kp$1.out")
	[ -n "$sid" ] || { echo "  no session"; return 1; }
	opener=$(NSS sed -n 's/^opener_pid=//p' "/run/agent-sandbox/sessions/$sid")
	ns=$(NSS sed -n 's/^mntns=//p' "/run/agent-sandbox/sessions/$sid")
	keeper=$(keeper_procs "$ns" | tr -d '\n')
	echo "  session ${sid:0:12} monitor $opener keeper $keeper"
	[ -n "$keeper" ]
}
# keeper_closes: the session's pam_close lines, shown; then their count.
keeper_closes() {
	NSS "$WN/bin/agent-shell" --log --since 1h >"$T/kp.log" 2>&1
	grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/kp.log" | sed 's/^/  ledger: /' | cut -c1-260 >&2
	grep -cE " pam_close +$S_CODER +${sid:0:12}" "$T/kp.log"
}

# The race: root's agent-shell --end SESSION reads the record while its
# opener is dead and before the keeper takes it over, and unlinks it after
# (strace delays its unlink 3 s; the keeper is held with SIGSTOP meanwhile,
# for determinism only). It used to unlink the keeper's record by name: two
# pam_close lines for one session, and the session out of max_sessions while
# it ran. Now --end removes a stale record under the sessions lock only while
# it still names the dead opener: whichever of the two holds the lock first
# ends the session, and the other leaves it (here --end, holding the lock
# through its delayed unlink; the keeper then finds the record gone).
t_fault_keeper_end_race() {
	local ok=0 sid opener ns keeper client n sp
	keeper_start er || return 1
	kill -STOP "$keeper"
	kill -KILL "$opener"
	wait_for bash -c "! grep -q . /proc/$opener/stat 2>/dev/null"
	NSS strace -f -qq -o /dev/null -e trace=unlink,unlinkat -e inject=unlink,unlinkat:delay_enter=3000000 \
		"$WN/bin/agent-shell" --end "$sid" >"$T/kper.end" 2>&1 &
	sp=$!
	sleep 1
	kill -CONT "$keeper"
	wait "$sp"; sed 's/^/  end| /' "$T/kper.end" | head -3
	for _ in $(seq 150); do [ -z "$(keeper_procs "$ns")" ] && break; sleep 0.1; done
	wait "$client" 2>/dev/null
	n=$(keeper_closes)
	[ "$n" = 1 ] || { echo "  $n pam_close lines for session ${sid:0:12}"; ok=1; }
	[ -z "$(coder_session_procs "" "$ns")" ] || { echo "  the session's processes run on"; ok=1; }
	return $ok
}

# The stall: the sessions lock held 7 s (longer than one wait for it: a last
# close ending every process of an account, a login's stale sweep) when the
# opener dies, with agent-shell stopped as in t_fault_monitor_killed round
# 2. The keeper used to give up at 5 s: no close, no report, no sweep. It
# now waits again, bounded, and closes: nothing runs 20 s after, one
# pam_close.
t_fault_keeper_lock_held() {
	local ok=0 sid opener ns keeper client n p left holder
	keeper_start lt || return 1
	for p in $(coder_session_procs "" "$ns"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agent-shell ] && kill -STOP "$p"
	done
	NSS flock /run/agent-sandbox/sessions/.lock sleep 7 &
	holder=$!
	sleep 0.5
	kill -KILL "$opener"
	wait "$holder"
	for _ in $(seq 150); do [ -z "$(keeper_procs "$ns")" ] && break; sleep 0.1; done
	left=$(coder_session_procs "" "$ns" | tr '\n' ' ')
	echo "  after the lock: keeper '$(keeper_procs "$ns" | tr '\n' ' ')', session processes '$left'"
	n=$(keeper_closes)
	[ -z "$left" ] || { echo "  session processes still running: $left"; ok=1; }
	[ "$n" = 1 ] || { echo "  $n pam_close lines"; ok=1; }
	for p in $left; do kill -KILL "$p" 2>/dev/null; done
	wait "$client" 2>/dev/null
	return $ok
}

# The fault: agent-shell's outer process is killed (kill -9). The sandbox's
# init dies with it (PDEATHSIG) and its pid namespace with it; the client
# gets its connection closed; the close is the PAM stage's as ever, with
# the report agent-shell had sent (how=closed report=kept); nothing of the
# session runs after, and the next login works.
t_fault_outer_killed() {
	local ok=0 sid ns outer left out client
	sshs "$S_CODER" 'echo "sid=$AGENT_SANDBOX_SESSION"; exec sleep 60' >"$T/fouter.out" 2>&1 &
	client=$!
	sid=$(session_id "$T/fouter.out")
	[ -n "$sid" ] || { echo "  no session"; kill "$client"; return 1; }
	ns=$(NSS sed -n 's/^mntns=//p' "/run/agent-sandbox/sessions/$sid")
	for p in $(coder_session_procs "" "$ns"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agent-shell ] && outer=$p
	done
	[ -n "$outer" ] || { echo "  no agent-shell in the session"; kill "$client"; return 1; }
	kill -KILL "$outer"
	wait_for NSS test ! -e "/run/agent-sandbox/sessions/$sid" || { echo "  the session did not close"; ok=1; }
	wait "$client" 2>/dev/null
	left=$(coder_session_procs "" "$ns" | tr '\n' ' ')
	[ -z "$left" ] || { echo "  still running: $left"; ok=1; }
	pgrep -u "$(NSS id -u "$S_CODER")" -x sleep >/dev/null && { echo "  the session's sleep runs on"; ok=1; }
	[ -z "$(keeper_procs "$ns")" ] || { echo "  the session's keeper outlived its close"; ok=1; }
	NSS "$WN/bin/agent-shell" --log --since 1h >"$T/fouter.log" 2>&1
	grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/fouter.log" | grep -q 'how=closed report=kept' ||
		{ echo "  no pam_close how=closed report=kept"; ok=1; }
	grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/fouter.log" | sed 's/^/  ledger: /' | cut -c1-200
	out=$(sshs "$S_CODER" 'echo next-login-ok' 2>&1)
	[[ $out == *next-login-ok* ]] || { echo "  the next login: $out"; ok=1; }
	return $ok
}

# The fault: the filesystem of root's ledger is full (a 64 KiB tmpfs over
# it, filled). A login is refused, with the reason at the client, rather
# than run with no record; once there is room again the next one works
# and is recorded.
t_fault_ledger_full() {
	local ok=0 led=/var/lib/agent-sandbox/ledger out
	# Run alone, no session has made the ledger yet.
	NSS install -d -m 0700 "$led" || return 1
	NSS mount -t tmpfs -o size=64k,mode=0700 sbxe2e-full "$led" || return 1
	NSS dd if=/dev/zero of="$led/fill" bs=4k >/dev/null 2>&1
	out=$(sshs "$S_CODER" 'echo ran' 2>&1)
	echo "  full: $(echo "$out" | grep -m1 'refused' | cut -c1-200)"
	[[ $out == *ran* ]] && { echo "  a session ran that the ledger did not record"; ok=1; }
	[[ $out == *"root's ledger under /var/lib/agent-sandbox cannot record the session (No space left on device)"* ]] ||
		{ echo "  the client was not told why: $out"; ok=1; }
	NSS rm -f "$led/fill"
	out=$(sshs "$S_CODER" 'echo "ran $AGENT_SANDBOX_SESSION"' 2>&1)
	[[ $out == *"ran "* ]] || { echo "  with room again: $out"; ok=1; }
	NSS grep -q "pam_close.*session=$(echo "$out" | sed -n 's/^ran //p' | tail -1)" "$led/events.log" ||
		{ echo "  the session with room again is not in the ledger"; ok=1; }
	NSS umount "$led" || ok=1
	return $ok
}

# The fault: /run is full (a 64 KiB tmpfs over /run/agent-sandbox, filled):
# the session's record cannot be written, and the login is refused with
# the reason; with room again, the next login works.
t_fault_run_full() {
	local ok=0 out
	NSS mount -t tmpfs -o size=64k,mode=0755 sbxe2e-runfull /run/agent-sandbox || return 1
	NSS dd if=/dev/zero of=/run/agent-sandbox/fill bs=4k >/dev/null 2>&1
	out=$(sshs "$S_CODER" 'echo ran' 2>&1)
	echo "  full: $(echo "$out" | grep -m1 'refused' | cut -c1-200)"
	[[ $out == *ran* ]] && { echo "  a session ran with no record"; ok=1; }
	[[ $out == *"No space left on device"* ]] || { echo "  the client was not told why: $out"; ok=1; }
	NSS rm -f /run/agent-sandbox/fill
	out=$(sshs "$S_CODER" 'echo ran' 2>&1)
	[[ $out == *ran* ]] || { echo "  with room again: $out"; ok=1; }
	NSS umount /run/agent-sandbox || ok=1
	return $ok
}

# The fault: the config is edited during a session: made invalid, then
# valid again. The live session goes on and closes as any; a login while
# it is invalid is refused with the file, line and key; after the fix the
# next one works.
t_fault_config_edited() {
	local ok=0 conf=/etc/agent-sandbox/agent-sandbox.conf sid out client
	NSS cp "$conf" "$T/conf.saved" || return 1
	sshs "$S_CODER" 'echo "sid=$AGENT_SANDBOX_SESSION"; sleep 4; echo live-session-done' \
		>"$T/fconf.out" 2>&1 &
	client=$!
	sid=$(session_id "$T/fconf.out")
	NSS sh -c "echo 'nonsense_key = 1' >>$conf"
	# (LogLevel INFO: ssh shows the account phase's message at INFO.)
	out=$(timeout 60 ssh -o LogLevel=INFO "${SSH_OPTS[@]}" -p "$PORT_s" "$S_CODER@127.0.0.1" 'echo ran' 2>&1)
	echo "  invalid: $(echo "$out" | grep -m1 'nonsense_key' | cut -c1-200)"
	[[ $out == *ran* ]] && { echo "  a session ran on an invalid config"; ok=1; }
	[[ $out == *"agent-sandbox.conf:"*"nonsense_key"* ]] || { echo "  no file:line and key at the client: $out"; ok=1; }
	NSS cp "$T/conf.saved" "$conf"
	wait "$client"
	grep -q live-session-done "$T/fconf.out" || { echo "  the live session did not go on: $(cat "$T/fconf.out")"; ok=1; }
	out=$(sshs "$S_CODER" 'echo ran' 2>&1)
	[[ $out == *ran* ]] || { echo "  after the fix: $out"; ok=1; }
	NSS "$WN/bin/agent-shell" --log --since 1h >"$T/fconf.log" 2>&1
	grep -E " pam_close +$S_CODER +${sid:0:12}" "$T/fconf.log" | grep -q 'how=closed report=kept' ||
		{ echo "  the live session's close is not in the ledger"; ok=1; }
	return $ok
}

# The fault: agent-sandbox-egressd is killed (kill -9) while a proxy
# session holds a tunnel through it (world A: the daemon of set-up, the
# proxy account). The tunnel's relay was the daemon's, so its end in the
# sandbox is closed by the kernel: the client reads EOF (a reset, had it
# left bytes unread). The session goes on: a new connection through the
# bridge finds no daemon and is closed (counted failed), the command ends,
# the session closes with its report (how=closed report=kept), and nothing
# of it runs after (the bridge dies with its setup process); the ledger has
# its pam_open and pam_close. With the daemon started again, the next
# session reaches the listed address.
t_fault_egressd_killed() {
	local ok=0 sid client rc t0 left out
	grep -q "listening on" "$T/egressd.log" || { echo "  the daemon: $(cat "$T/egressd.log")"; return 1; }
	[ "$(cat "/proc/$EGRESSD_PID/comm" 2>/dev/null)" = agent-sandbox-e ] ||
		{ echo "  pid $EGRESSD_PID is not the daemon"; return 1; }
	install -m 0644 "$W/egress-cert.pem" "$W/ws/$PROXY/ca.pem"
	# In the session: a tunnel to the listed address, TLS through it (bytes
	# both ways: the relay runs), then a read that only the fault ends
	# (bounded at 30 s); then one more connection through the bridge.
	cat >"$W/ws/$PROXY/hold.py" <<-'PY'
	import socket, ssl, sys
	port = int(sys.argv[1])
	def tunnel():
	    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
	    s.sendall(b"CONNECT 127.0.0.2:%d HTTP/1.1\r\nHost: 127.0.0.2:%d\r\n\r\n" % (port, port))
	    buf = b""
	    while b"\r\n\r\n" not in buf:
	        d = s.recv(1024)
	        if not d:
	            break
	        buf += d
	    return s, buf
	def how(f):
	    try:
	        d = f()
	        return "eof" if not d else "data %r" % d[:60]
	    except ConnectionResetError:
	        return "reset"
	    except socket.timeout:
	        return "timeout"
	    except ssl.SSLEOFError:
	        return "eof"
	    except OSError as e:
	        return "error %s" % e
	s, reply = tunnel()
	print("tunnel:", reply.split(b"\r\n")[0].decode(), flush=True)
	t = ssl.create_default_context(cafile="ca.pem").wrap_socket(s, server_hostname="127.0.0.2")
	print("tls: up", t.version(), flush=True)
	t.settimeout(30)
	print("held:", how(lambda: t.recv(1)), flush=True)
	print("after:", how(lambda: tunnel()[1]), flush=True)
	PY
	chmod 0644 "$W/ws/$PROXY/hold.py"
	sshc a "$PROXY" "echo sid=\$AGENT_SANDBOX_SESSION
		curl -sS --max-time 8 --cacert ca.pem https://127.0.0.2:$EPORT/; echo
		python3 hold.py $EPORT; echo session-goes-on; exit 5" >"$T/fegress.out" 2>&1 &
	client=$!
	sid=$(session_id "$T/fegress.out")
	[ -n "$sid" ] || { echo "  no session"; kill "$client"; return 1; }
	wait_for grep -q '^tls: up' "$T/fegress.out" || { echo "  no tunnel:"; sed 's/^/  | /' "$T/fegress.out"; kill "$client"; return 1; }
	# The controls: the listed address answered through the daemon, and
	# the held tunnel is still open a second on.
	sleep 1
	grep -qx "ok $EPORT" "$T/fegress.out" || { echo "  control: the listed address was not reached"; ok=1; }
	grep -q '^held:' "$T/fegress.out" && { echo "  control: the tunnel ended before the fault"; ok=1; }
	kill -KILL "$EGRESSD_PID" && wait "$EGRESSD_PID" 2>/dev/null
	t0=$SECONDS
	wait_for eval '! kill -0 "$client" 2>/dev/null' || { echo "  the session did not end within 10 s of the kill"; ok=1; kill "$client"; }
	wait "$client"
	rc=$?
	echo "  the client ($((SECONDS - t0)) s after the kill, ssh exit $rc):"
	sed 's/^/  | /' "$T/fegress.out" | cut -c1-200
	[ "$rc" = 5 ] || { echo "  ssh exit $rc, want the session's 5"; ok=1; }
	grep -qxE 'held: (eof|reset)' "$T/fegress.out" || { echo "  the held tunnel did not end with EOF or a reset"; ok=1; }
	grep -qxE 'after: (eof|reset)' "$T/fegress.out" || { echo "  a connection with no daemon was not closed"; ok=1; }
	grep -qx session-goes-on "$T/fegress.out" || { echo "  the session did not go on"; ok=1; }
	# Nothing of the session runs once it closed: no process of the proxy
	# account outside the host's mount namespace (its bridge included),
	# within 10 s of the client's end.
	wait_for NS test ! -e "/run/agent-sandbox/sessions/$sid" || { echo "  the session did not close"; ok=1; }
	wait_for no_proxy_procs
	left=$(proxy_procs)
	[ -z "$left" ] || { echo "  still running: $left"; ok=1; }
	echo "  left running $((SECONDS - t0)) s after the kill: ${left:-nothing}"
	NS "$WN/bin/agent-shell" --log --since 1h >"$T/fegress.log" 2>&1
	grep -E " (pam_open|pam_close) +$PROXY +${sid:0:12}" "$T/fegress.log" |
		sed -E 's/^([^ ]+ +[a-z_]+ +[^ ]+ +[0-9a-f]+) .* (how=[^ ]+ report=[^ ]+) .*( exit_status=[0-9]+ killed=[0-9]+).*/\1 ... \2 ...\3/' |
		sed 's/^/  ledger: /' | cut -c1-160
	grep -Eq " pam_open +$PROXY +${sid:0:12}" "$T/fegress.log" || { echo "  no pam_open in the ledger"; ok=1; }
	grep -E " pam_close +$PROXY +${sid:0:12}" "$T/fegress.log" | grep -q 'how=closed report=kept .*exit_status=5' ||
		{ echo "  no pam_close how=closed report=kept exit_status=5 in the ledger"; ok=1; }
	NS "$WN/bin/agent-shell" --report --json "$sid" 2>&1 | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
g = r.get("egress", {})
print("  root'"'"'s copy: allowed %s, refused %s, failed %s, exit %s" % (g.get("allowed"), g.get("refused"), g.get("failed"), r.get("exit_status")))
if (g.get("allowed"), g.get("failed")) != (2, 1) or r.get("exit_status") != 5:
    sys.exit(1)' || { echo "  root's copy: want allowed 2 (curl, the tunnel), failed 1 (after the kill), exit 5"; ok=1; }
	# The daemon again, as set-up starts it; the next session gets through.
	NSBG "$BUILD/agent-sandbox-egressd" --socket "$WN/egress.sock" --user "$EGRESS_USER" \
		--log-stderr 2>>"$T/egressd.log"
	EGRESSD_PID=$!
	wait_for eval '[ "$(grep -c "listening on" "$T/egressd.log")" -ge 2 ]' ||
		{ echo "  the daemon did not start again: $(tail -n 2 "$T/egressd.log")"; return 1; }
	out=$(sshc a "$PROXY" "curl -sS --max-time 8 --cacert ca.pem https://127.0.0.2:$EPORT/" 2>&1)
	echo "  the next session: $out"
	[ "$out" = "ok $EPORT" ] || { echo "  the next session did not reach the listed address"; ok=1; }
	return $ok
}

# pam_stage = required, the other side: the same account started without
# a PAM session stage (setpriv, no PAM at all) is refused by agent-shell.
t_shipped_pam_stage_required() {
	local rc gid
	gid=$(NSS id -g "$S_CODER")
	NSS setpriv --reuid "$S_CODER" --regid "$gid" --init-groups \
		env -i PATH=/usr/bin:/bin HOME="/home/$S_CODER" USER="$S_CODER" LOGNAME="$S_CODER" \
		"$WN/bin/agent-shell" -c 'echo ran' >"$T/nopam.out" 2>&1
	rc=$?
	echo "  without PAM: exit $rc: $(head -1 "$T/nopam.out")"
	[ $rc -eq 126 ] || return 1
	grep -qx ran "$T/nopam.out" && return 1
	grep -q "profile coder has pam_stage = required" "$T/nopam.out"
}

t_shipped_reviewer() {
	local ok=0 out
	sshs "$S_REV" "$(s_probe)" >"$T/rev.out" 2>&1 || { echo "  ssh exit $?"; ok=1; }
	sed 's/^/  | /' "$T/rev.out"
	expect "$T/rev.out" done || return 1
	for l in Seccomp=2 NoNewPrivs=1 "ws_read=to review $R" "ws_write=refused: Read-only file system" \
		notes_write=ok "etc_write=refused: Read-only file system" "toolchain_read=toolchain $R"; do
		expect "$T/rev.out" "$l" || ok=1
	done
	NSS test ! -e "/srv/agents/$S_REV/workspace/from-ssh" || ok=1
	[ "$(NSS cat "/srv/agents/$S_REV/notes/from-ssh" 2>/dev/null)" = x ] || { echo "  notes file not kept"; ok=1; }
	s_report "$S_REV" "$(sed -n 's/^SID=//p' "$T/rev.out")" "$T/rev.report" && grep -E '^(level|floor_met)=' "$T/rev.report" | sed 's/^/  report: /'
	expect "$T/rev.report" floor_met=true || ok=1
	# The drop-in's Match Group covers the reviewers' group too: sshd's own
	# forwarding is off for them (the PAM stage's netns would stop TCP, not
	# unix sockets reached by path) ...
	out=$(echo | sshv s "$S_REV" -W "127.0.0.1:$LPORT" 2>&1 | head -1)
	echo "  ssh -W to a host TCP listener: ${out:-nothing}"
	echo "$out" | grep -q HELLO && { echo "  a reviewer's forward reached a host service"; ok=1; }
	out=$(s_unix_forward "$S_REV")
	echo "  ssh -L to a host unix socket: $out"
	[ "$out" = data:HELLO ] && { echo "  a reviewer's forward reached a host unix socket"; ok=1; }
	# ... and ~/.ssh/rc, which the agent can write (its home is writable),
	# never runs (PermitUserRC no). Were it run, OpenSSH would do it as
	# popen("<login shell> -c '/bin/sh ~/.ssh/rc'"), through agent-shell.
	NSS rm -f "/var/tmp/sbxe2e-rc-$R"
	sshs "$S_REV" "mkdir -p ~/.ssh && printf '%s\n' 'echo rc >/srv/agents/\$USER/workspace/rc-was-here' \
		'echo rc >/var/tmp/sbxe2e-rc-$R' 'grep ^Seccomp: /proc/self/status >&2' >~/.ssh/rc" ||
		{ echo "  could not write ~/.ssh/rc"; ok=1; }
	sshs "$S_REV" true >"$T/rev-rc.out" 2>&1
	sed 's/^/  rc | /' "$T/rev-rc.out"
	grep -q '^Seccomp:' "$T/rev-rc.out" && { echo "  ~/.ssh/rc ran (PermitUserRC no did not hold)"; ok=1; }
	if NSS test -e "/srv/agents/$S_REV/workspace/rc-was-here" -o -e "/var/tmp/sbxe2e-rc-$R"; then
		echo "  ~/.ssh/rc ran outside agent-shell and wrote: $(NSS ls "/srv/agents/$S_REV/workspace/rc-was-here" "/var/tmp/sbxe2e-rc-$R" 2>/dev/null | tr '\n' ' ')"
		ok=1
	fi
	return $ok
}

t_shipped_ci_gated() {
	local ok=0 rc out cmd
	sshs "$S_CI" make >"$T/ci-make.out" 2>&1
	rc=$?
	sed 's/^/  make | /' "$T/ci-make.out"
	[ $rc -eq 0 ] && grep -qx build=ok "$T/ci-make.out" || { echo "  make failed: exit $rc"; ok=1; }
	sshs "$S_CI" make -s probe >"$T/ci-probe.out" 2>&1
	grep -v '^REPORT=' "$T/ci-probe.out" | sed 's/^/  probe | /'
	expect "$T/ci-probe.out" hello_exit=126 || ok=1
	expect "$T/ci-probe.out" id_exit=126 || ok=1
	grep -q '^ldso_id_exit=0$' "$T/ci-probe.out" && { echo "  the loader ran /usr/bin/id"; ok=1; }
	grep -q '^ldso_hello_exit=0$' "$T/ci-probe.out" && { echo "  the loader ran the built program"; ok=1; }
	grep -q '^uid=' "$T/ci-probe.out" && ok=1
	sed -n 's/^REPORT=//p' "$T/ci-probe.out" >"$T/ci.report.json"
	if "$PY" "$HELPER" report "$T/ci.report.json" >"$T/ci.report"; then
		grep -E '^(level|min_level|floor_met|guarantees)=|^feature (command_gate|exec_boundary)' "$T/ci.report" |
			sed 's/^/  report: /'
		expect "$T/ci.report" level=full || ok=1
		expect "$T/ci.report" min_level=full || ok=1
		expect "$T/ci.report" floor_met=true || ok=1
		grep -q '^feature command_gate requested=true achieved=true verified=true' "$T/ci.report" ||
			{ echo "  command_gate not achieved and verified"; ok=1; }
		grep -q '^guarantees=.*\bexec_boundary\b' "$T/ci.report" || { echo "  exec_boundary not held"; ok=1; }
	else
		echo "  no report from the session"; ok=1
	fi
	out=$(sshs "$S_CI" git --version 2>&1)
	echo "  git --version: $out"
	echo "$out" | grep -q '^git version ' || ok=1
	for cmd in /usr/bin/id "/lib64/ld-linux-x86-64.so.2 /usr/bin/id"; do
		sshs "$S_CI" "$cmd" >"$T/ci-refused.out" 2>&1
		rc=$?
		echo "  $cmd: exit $rc: $(head -1 "$T/ci-refused.out")"
		[ $rc -ne 0 ] && ! grep -q '^uid=' "$T/ci-refused.out" || ok=1
	done
	return $ok
}

# su, runuser and login with the shipped su and login lines: the agents'
# profiles name only sshd in "services", so each refuses them, in the
# account phase; a non-agent goes through the same stacks.
t_shipped_su_runuser_login() {
	local ok=0 svc out rc
	s_try() {
		local svc=$1
		shift
		out=$(NSS timeout 20 "$@" 2>&1)
		rc=$?
		echo "  $svc: $* -> exit $rc: $(echo "$out" | grep -v '^$' | head -1)"
	}
	for svc in su su-l runuser runuser-l login; do
		case $svc in
		su)		s_try $svc su "$S_CODER" -c 'echo ran' ;;
		su-l)		s_try $svc su - "$S_CODER" -c 'echo ran' ;;
		runuser)	s_try $svc runuser -u "$S_CODER" -- /bin/echo ran ;;
		runuser-l)	s_try $svc runuser -l "$S_CODER" -c 'echo ran' ;;
		login)		s_try $svc "$PY" "$HELPER" pty 15 /bin/login -f "$S_CODER" ;;
		esac
		[ $rc -ne 0 ] && ! echo "$out" | grep -qx ran || { echo "  $svc: the agent got in"; ok=1; }
		# runuser never runs the account phase: there the session line refuses.
		local phase=account
		case $svc in runuser*) phase=session ;; esac
		wait_for syslog_has "]: event=refused stage=$phase reason=service service=$svc user=$S_CODER " \
			"refused: PAM service $svc is not allowed for profile coder" ||
			{ echo "  $svc: no refusal from the module's $phase line"; ok=1; }
		case $svc in
		su)		s_try $svc su "$S_PLAIN" -c 'echo ran' ;;
		su-l)		s_try $svc su - "$S_PLAIN" -c 'echo ran' ;;
		runuser)	s_try $svc runuser -u "$S_PLAIN" -- /bin/echo ran ;;
		runuser-l)	s_try $svc runuser -l "$S_PLAIN" -c 'echo ran' ;;
		login)		s_try $svc "$PY" "$HELPER" pty 15 /bin/login -f "$S_PLAIN" ;;
		esac
		[ $rc -eq 0 ] && echo "$out" | grep -qE "^(ran|plain-login $S_PLAIN)$" ||
			{ echo "  $svc: the non-agent control did not get in"; ok=1; }
	done
	return $ok
}

# SBX_E2E_ONLY=REGEX runs only the tests whose names match (while working on some).
run_test() {
	local name=$1 t0=$SECONDS
	[ -z "${SBX_E2E_ONLY:-}" ] || [[ $name =~ $SBX_E2E_ONLY ]] || return 0
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
	t_floor_unmet_refused t_profile_changed_between_stages t_fifty_concurrent_sessions t_max_sessions_and_crashed_sshd \
	t_ops_sessions_end_prune t_ops_log_and_root_report t_ledger_any_bytes_over_sshd \
	t_ledger_two_shells_one_session t_ledger_user_rc_refusal \
	t_proxy_session_over_sshd t_fault_egressd_killed; do
	run_test "$t"
done
# The shipped files: their own world, set up once the tests above are done.
shipped_tests=(t_shipped_installed_as_make_install t_shipped_doctor t_shipped_pam_stacks
	t_shipped_coder t_shipped_coder_sameuid t_shipped_ledger t_shipped_session_lasts t_fault_monitor_killed
	t_fault_outer_killed t_fault_ledger_full t_fault_run_full t_fault_config_edited
	t_shipped_pam_environment_preload t_shipped_pam_stage_required t_shipped_reviewer t_shipped_ci_gated
	t_shipped_su_runuser_login t_fault_keeper_end_race t_fault_keeper_lock_held)
[ -z "${SBX_E2E_ONLY:-}" ] || [[ " ${shipped_tests[*]}" =~ $SBX_E2E_ONLY ]] || shipped_tests=()
t0=$SECONDS
if [ ${#shipped_tests[@]} -eq 0 ]; then
	:
elif echo "[ RUN      ] shipped set-up" && setup_shipped >"$T/s-setup.out" 2>&1; then
	sed 's/^/  /' "$T/s-setup.out"
	echo "[       OK ] shipped set-up ($((SECONDS - t0)) s)"
	for t in "${shipped_tests[@]}"; do
		run_test "$t"
	done
else
	sed 's/^/  /' "$T/s-setup.out"
	[ -s "$W/sshd/s.log" ] && tail -20 "$W/sshd/s.log"
	echo "[  FAILED  ] shipped set-up"
	n_fail=$((n_fail + 1))
	failed+=("shipped set-up")
fi
if [ "$n_fail" -gt 0 ] || [ -n "${SBX_E2E_VERBOSE:-}" ]; then
	echo "== syslog (last 40 lines)"; tail -40 "$W/syslog.log"
	echo "== sshd A log (last 30 lines)"; tail -30 "$W/sshd/a.log"
fi
summary
[ "$n_fail" -eq 0 ]
