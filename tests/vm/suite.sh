# SPDX-License-Identifier: BSD-3-Clause
# The VM tier's tests, sourced by tests/vm/run.sh once the guest is set up.
# Uses vm_root, as_agent, SSH_OPTS, SCP_OPTS, VM, KERNEL from run.sh and ok/bad from
# tests/tier.sh. Every denial sits next to a positive control: the same
# probe run as the same uid outside the sandbox, or an allowed neighbour.

W=/srv/agents/coder1/workspace
PROBE=/usr/local/lib/sbx-vm/sbx_probe_inside
LISTEN=/usr/local/lib/sbx-vm/tcp_listen
# What Debian 12's stock kernel (6.1) gives: Landlock ABI 2.
case "$KERNEL" in
6.1.*) WANT_ABI=2 ;;
*) WANT_ABI= ;;
esac

# value FILE KEY: the probe's result for KEY.
value() { sed -n "s/^$2 //p" "$1" | head -n 1; }

# expect FILE NAME KEY WANTED...: one of the wanted results, or a failure line.
expect() {
	local file=$1 name=$2 key=$3 got
	shift 3
	got=$(value "$file" "$key")
	for w in "$@"; do
		[ "$got" = "$w" ] && return 0
	done
	echo "  $name: $key is '${got:-(missing)}', wanted $*"
	return 1
}

# Host-side services the sandbox must not reach, owned by coder1 like the
# agent's own processes would be, started by root outside any session.
start_outside() {
	vm_root "pkill -u coder1 -x sleep; pkill -x tcp_listen; \
		setsid setpriv --reuid=coder1 --regid=coder1 --init-groups sleep 600 </dev/null >/dev/null 2>&1 & \
		setsid setpriv --reuid=coder1 --regid=coder1 --init-groups $LISTEN 600 </dev/null >/run/sbxvm-port 2>&1 & \
		setsid setpriv --reuid=coder1 --regid=coder1 --init-groups $LISTEN --abstract sbxvm-host 600 </dev/null >/dev/null 2>&1 & \
		sleep 1; cat /run/sbxvm-port; pgrep -u coder1 -x sleep"
}

probe_args() {
	echo "-w $W -x /var/tmp/sbxvm-out -s /srv/secrets/key -p /srv/public -t $1 -k $2 -a sbxvm-host"
}

# ---- the report on this kernel -------------------------------------------
t_report_names_what_the_kernel_lacks() {
	local ok=0
	as_agent coder1 'agent-shell --report --json' >"$VM/report.json" 2>"$VM/report.err" || {
		echo "  agent-shell --report --json failed: $(head -c 300 "$VM/report.err")"
		return 1
	}
	# For the record (CI log): the report as the agent sees it.
	as_agent coder1 'agent-shell --report' 2>&1 | sed 's/^/  | /'
	python3 - "$VM/report.json" "$WANT_ABI" <<'EOF' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
want_abi = sys.argv[2]
e = {x["feature"]: x for x in r["entries"]}
errs = []
def need(cond, what):
    if not cond:
        errs.append(what)
if want_abi:
    need(r["landlock_abi"] == int(want_abi), "landlock_abi %s, wanted %s" % (r["landlock_abi"], want_abi))
need(r["level"] == "degraded", "level %s, wanted degraded (rights are missing)" % r["level"])
need(r["floor_met"] is True and r["refusal"] == "", "coder's floor (degraded) not met")
# Every right ABI 2 lacks is named where Landlock's entry says what it did.
for dropped in ("TRUNCATE (ABI 3)", "IOCTL_DEV (ABI 5)", "scope signal (ABI 6)",
                "scope abstract unix socket (ABI 6)"):
    need(dropped in e["landlock_fs"]["detail"], "landlock_fs detail does not name %s" % dropped)
# What needs a newer ABI is requested and not achieved, with the reason.
for f, why in (("landlock_ioctl", "ABI 2 < 5"), ("landlock_scope", "ABI 2 < 6")):
    need(e[f]["requested"] and not e[f]["achieved"] and not e[f]["verified"],
         "%s should be requested, not achieved" % f)
    need(why in e[f]["detail"], "%s detail %r lacks %r" % (f, e[f]["detail"], why))
# Nothing claimed unverified.
for f, x in e.items():
    need(not x["achieved"] or x["verified"], "%s achieved but not verified" % f)
for m in errs:
    print("  " + m)
sys.exit(1 if errs else 0)
EOF
	return $ok
}

# ---- every guarantee the report lists, by a denial and its control --------
t_guarantees_hold_on_this_kernel() {
	local out port pid in=$VM/probe.in outside=$VM/probe.out ok=0 g
	out=$(start_outside)
	port=$(echo "$out" | sed -n 1p)
	pid=$(echo "$out" | sed -n 2p)
	[ -n "$port" ] && [ -n "$pid" ] || { echo "  outside services did not start: $out"; return 1; }
	# Outside first: the same probe as the same uid, not through PAM. (The
	# end of the agent's last session ends every process of its uid, these
	# services included.)
	vm_root "setpriv --reuid=coder1 --regid=coder1 --init-groups $PROBE -o /tmp/sbxvm-outside.out \
		$(probe_args "$port" "$pid") </dev/null; cat /tmp/sbxvm-outside.out; \
		rm -f /tmp/sbxvm-outside.out $W/write_inside.probe /var/tmp/sbxvm-out/write_outside.probe" \
		>"$outside"
	# Inside: a real login with a PTY (the tty checks need one).
	as_agent coder1 -tt "$PROBE -o /tmp/probe.out $(probe_args "$port" "$pid"); cat /tmp/probe.out" |
		tr -d '\r' >"$in"
	vm_root 'for i in $(seq 50); do pgrep -u coder1 -x tcp_listen >/dev/null || exit 0; sleep 0.1; done; exit 1' ||
		{ echo "  the agent's processes outside outlived its last session"; ok=1; }
	grep -qx 'done OK' "$in" || { echo "  the probe did not finish inside:"; tail -n 5 "$in"; return 1; }
	grep -qx 'done OK' "$outside" || { echo "  the probe did not finish outside"; return 1; }

	# The controls: outside the sandbox each target is reachable.
	expect "$outside" control tcp_host OK || ok=1
	expect "$outside" control kill_outside OK || ok=1
	expect "$outside" control abstract_host OK || ok=1
	expect "$outside" control write_outside OK || ok=1
	expect "$outside" control read_secret LEAKED || ok=1
	expect "$outside" control NoNewPrivs 0 || ok=1

	# process_boundary: without Landlock scopes (ABI 6), the pid and
	# network namespaces keep signals and abstract sockets in.
	expect "$in" process_boundary kill_outside ESRCH || ok=1
	expect "$in" process_boundary ptrace_outside EPERM || ok=1
	expect "$in" process_boundary abstract_host ECONNREFUSED || ok=1
	expect "$in" process_boundary kill_inside OK || ok=1
	# write_boundary: the host is a read-only bind before Landlock is asked.
	expect "$in" write_boundary write_outside EROFS || ok=1
	expect "$in" write_boundary write_inside OK || ok=1
	vm_root test ! -e /var/tmp/sbxvm-out/write_outside.probe ||
		{ echo "  write_boundary: the probe's file is on the host"; ok=1; }
	expect "$in" write_boundary proc_self_mem_write EACCES || ok=1
	# read_boundary: the secret's directory is masked, its neighbour reads.
	expect "$in" read_boundary read_secret ENOENT EMPTY EACCES || ok=1
	expect "$in" read_boundary read_public OK || ok=1
	# network_boundary: the host's loopback listener is not there.
	expect "$in" network_boundary tcp_host ECONNREFUSED || ok=1
	expect "$in" network_boundary loopback_tcp OK || ok=1
	expect "$in" network_boundary af_packet EAFNOSUPPORT || ok=1
	# env_scrub, home_isolation
	expect "$in" env_scrub env_ld_preload ABSENT || ok=1
	expect "$in" home_isolation env_home /home/coder1 || ok=1
	# no_privilege_gain
	expect "$in" no_privilege_gain NoNewPrivs 1 || ok=1
	expect "$in" no_privilege_gain CapEff 0000000000000000 || ok=1
	expect "$in" no_privilege_gain CapBnd 0000000000000000 || ok=1
	expect "$in" no_privilege_gain unshare_user EPERM || ok=1
	# syscall_filter
	expect "$in" syscall_filter x32_syscall SIGSYS || ok=1
	expect "$in" syscall_filter io_uring_setup EPERM || ok=1
	expect "$in" syscall_filter tiocsti EPERM || ok=1
	expect "$in" syscall_filter native_syscall OK || ok=1
	# What the report says is missing is missing: no IOCTL_DEV, so
	# /dev/null answers TIOCGWINSZ itself (ENOTTY), not Landlock (EACCES).
	expect "$in" landlock_ioctl null_tiocgwinsz ENOTTY || ok=1

	# write_boundary without TRUNCATE (ABI 3): truncate(2) on a host file
	# the agent owns is refused by the read-only bind, and the file stays.
	as_agent coder1 'truncate -s 0 /var/tmp/sbxvm-out/file' >/dev/null 2>"$VM/trunc.err" &&
		{ echo "  write_boundary: truncate of a host file succeeded"; ok=1; }
	grep -q 'Read-only file system\|Permission denied' "$VM/trunc.err" ||
		{ echo "  write_boundary: truncate said: $(cat "$VM/trunc.err")"; ok=1; }
	[ "$(vm_root cat /var/tmp/sbxvm-out/file)" = host ] ||
		{ echo "  write_boundary: the host file changed"; ok=1; }
	# home_isolation: what the agent writes in ~ lands in the isolated home.
	as_agent coder1 'echo vm > ~/sbxvm-mark' || ok=1
	[ "$(vm_root cat /var/lib/agent-sandbox/homes/coder1/sbxvm-mark 2>&1)" = vm ] ||
		{ echo "  home_isolation: ~/sbxvm-mark is not in the isolated home"; ok=1; }
	vm_root test ! -e /home/coder1/sbxvm-mark ||
		{ echo "  home_isolation: ~/sbxvm-mark reached the passwd home"; ok=1; }
	# resource_limits: the coder profile's core 0 and nproc 512.
	[ "$(as_agent coder1 'ulimit -c; ulimit -u' | tr '\n' ' ')" = "0 512 " ] ||
		{ echo "  resource_limits: ulimit -c/-u inside: $(as_agent coder1 'ulimit -c; ulimit -u' | tr '\n' ' ')"; ok=1; }

	# Each guarantee the report lists is one this test has just shown.
	for g in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["guarantees"]))' \
		"$VM/report.json"); do
		case " process_boundary write_boundary read_boundary network_boundary env_scrub home_isolation no_privilege_gain syscall_filter resource_limits " in
		*" $g "*) ;;
		*) echo "  the report claims $g, which this suite does not show"; ok=1 ;;
		esac
	done
	return $ok
}

# ---- the entry paths -----------------------------------------------------
t_ssh_command_pty_scp_sftp() {
	local ok=0 f=$VM/payload
	[ "$(as_agent coder1 'echo $((6*7))')" = 42 ] || { echo "  ssh cmd"; ok=1; }
	as_agent coder1 -tt 'tty' | tr -d '\r' | grep -q '^/dev/pts/' || { echo "  ssh -tt: no pty"; ok=1; }
	head -c 4096 /dev/urandom >"$f"
	scp -q "${SCP_OPTS[@]}" "$f" "coder1@127.0.0.1:$W/payload" ||
		{ echo "  scp into the workspace"; ok=1; }
	scp -q "${SCP_OPTS[@]}" "coder1@127.0.0.1:$W/payload" "$f.back" &&
		cmp -s "$f" "$f.back" || { echo "  scp back"; ok=1; }
	scp -q "${SCP_OPTS[@]}" "$f" \
		"coder1@127.0.0.1:/var/tmp/sbxvm-out/scp" 2>/dev/null && { echo "  scp wrote outside the workspace"; ok=1; }
	printf 'put %s %s/sftp\nls %s\n' "$f" "$W" "$W" |
		sftp -b - "${SCP_OPTS[@]}" coder1@127.0.0.1 >"$VM/sftp.out" 2>&1 ||
		{ echo "  sftp put into the workspace: $(tail -n 2 "$VM/sftp.out")"; ok=1; }
	printf 'put %s /var/tmp/sbxvm-out/sftp\n' "$f" |
		sftp -b - "${SCP_OPTS[@]}" coder1@127.0.0.1 >/dev/null 2>&1 &&
		{ echo "  sftp wrote outside the workspace"; ok=1; }
	vm_root test ! -e /var/tmp/sbxvm-out/scp -a ! -e /var/tmp/sbxvm-out/sftp || { echo "  a file landed outside"; ok=1; }
	# Forwarding: the shipped drop-in turns it off for agents.
	ssh "${SSH_OPTS[@]}" -i "$VM/id_agent" -W 127.0.0.1:22 coder1@127.0.0.1 </dev/null >/dev/null 2>"$VM/fwd.err" &&
		{ echo "  ssh -W was allowed"; ok=1; }
	grep -q 'administratively prohibited\|forwarding disabled' "$VM/fwd.err" ||
		{ echo "  ssh -W: $(tail -n 1 "$VM/fwd.err")"; ok=1; }
	return $ok
}

# The reviewer profile as shipped: the workspace read-only, notes writable.
t_reviewer_profile() {
	local ok=0
	as_agent rev1 'touch /srv/agents/rev1/workspace/x' 2>"$VM/rev.err" && { echo "  reviewer wrote the workspace"; ok=1; }
	grep -q 'Read-only file system' "$VM/rev.err" || { echo "  reviewer: $(cat "$VM/rev.err")"; ok=1; }
	as_agent rev1 'touch /srv/agents/rev1/notes/x' || { echo "  reviewer cannot write notes"; ok=1; }
	return $ok
}

# The ci profile (min_level full) cannot be met at ABI 2: refused, and
# the reason reaches the client on the other end of the ssh connection.
t_ci_profile_refused_with_reason() {
	local ok=0
	ssh "${SSH_OPTS[@]}" -i "$VM/id_agent" ci-runner@127.0.0.1 'echo ran' >"$VM/ci.out" 2>"$VM/ci.err" &&
		{ echo "  ci-runner logged in"; ok=1; }
	grep -q ran "$VM/ci.out" && { echo "  ci-runner ran a command"; ok=1; }
	grep -q 'profile ci cannot meet its floor on this kernel' "$VM/ci.err" ||
		{ echo "  the client was not told why: $(tr '\n' ' ' <"$VM/ci.err")"; ok=1; }
	vm_root "journalctl -b -o cat | grep -q 'user ci-runner: refused: profile ci cannot meet its floor'" ||
		{ echo "  no refusal in the journal"; ok=1; }
	# Sent natively: the product's ident and the fields as journal fields.
	vm_root "journalctl -b -t agent-sandbox AGENT_SANDBOX_EVENT=refused AGENT_SANDBOX_REASON=kernel_floor AGENT_SANDBOX_USER=ci-runner -o cat | grep -q '^event=refused stage=account reason=kernel_floor '" ||
		{ echo "  the refusal is not in the journal as AGENT_SANDBOX_EVENT=refused under agent-sandbox"; ok=1; }
	return $ok
}

# ---- systemd, logind, journald -------------------------------------------
t_report_line_in_journal() {
	local sid
	sid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["session_id"])' "$VM/report.json")
	vm_root "journalctl -t agent-sandbox AGENT_SANDBOX_EVENT=session_start AGENT_SANDBOX_SESSION=$sid -o cat | grep -q 'level=degraded floor=met'" || {
		echo "  no report line for session $sid in journalctl -t agent-sandbox"
		return 1
	}
}

t_logind_session_and_no_user_manager() {
	local ok=0 uid listed=0
	uid=$(vm_root id -u coder1)
	ssh "${SSH_OPTS[@]}" -o LogLevel=ERROR -i "$VM/id_agent" coder1@127.0.0.1 'sleep 12' \
		</dev/null >/dev/null 2>&1 &
	local bg=$!
	for _ in $(seq 1 20); do
		vm_root "loginctl list-sessions --no-legend | grep -q ' coder1 '" && { listed=1; break; }
		sleep 0.5
	done
	[ "$listed" = 1 ] || { echo "  loginctl does not list the agent's session"; ok=1; }
	vm_root "ps -u coder1 -o comm= | grep -qx systemd" && { echo "  systemd --user runs as the agent"; ok=1; }
	# The process holding the session is out of the OOM killer's reach;
	# the agent's own processes are not (the control).
	local opener scores
	opener=$(vm_root "sed -n 's/^opener_pid=//p' /run/agent-sandbox/sessions/* | head -n 1")
	scores="$(vm_root cat /proc/$opener/oom_score_adj) $(vm_root 'cat /proc/$(pgrep -u coder1 -x sleep | head -n 1)/oom_score_adj')"
	echo "  oom_score_adj: session opener (pid $opener) and the agent's sleep: $scores"
	[ "$scores" = "-1000 0" ] || { echo "  wanted -1000 0"; ok=1; }
	wait "$bg"
	sleep 2
	vm_root "ps -u coder1 -o pid=,comm= | grep -v -e sleep -e tcp_listen" && { echo "  agent processes outlived the session"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	[ "$(vm_root systemctl is-system-running)" = running ] ||
		{ echo "  system state: $(vm_root systemctl is-system-running)"; ok=1; }
	vm_root "journalctl -b -u user@$uid.service -o cat | grep -q \"Skipped due to 'exec-condition'\"" ||
		{ echo "  user@$uid.service was not skipped by its condition"; ok=1; }
	return $ok
}

t_doctor_on_debian() {
	local ok=0
	vm_root agent-shell --doctor >"$VM/doctor.out" 2>&1 || { echo "  doctor exit $?"; ok=1; }
	grep -q ', 0 FAIL$' "$VM/doctor.out" || ok=1
	grep -E '^(WARN|FAIL) ' "$VM/doctor.out" | grep -v -e 'memfd_noexec' && ok=1
	grep -q '^OK .*systemd-user .*/usr/lib/pam.d/systemd-user.*--user-manager first' "$VM/doctor.out" ||
		{ echo "  systemd-user row:"; grep systemd-user "$VM/doctor.out"; ok=1; }
	# Before enrolment too: Debian's vendor stack, read, and the drop-in.
	vm_root cat /root/sbx-vm/doctor-before.out >"$VM/doctor-before.out"
	grep -q '^OK .*systemd-user .*/usr/lib/pam.d/systemd-user.*--user-manager first' \
		"$VM/doctor-before.out" || { echo "  before enrolment:"; grep systemd-user "$VM/doctor-before.out"; ok=1; }
	[ "$ok" = 0 ] || cat "$VM/doctor.out"
	return $ok
}

# ---- session limits: cgroup v2 through systemd ----------------------------
# lim1's profile: memory_max 256M, pids_max 64, cpu_max 50 (half a CPU).

t_session_limits_reported() {
	local ok=0
	as_agent lim1 'agent-shell --report --json' >"$VM/lim.json" 2>"$VM/lim.err" ||
		{ echo "  report: $(head -c 300 "$VM/lim.err")"; return 1; }
	python3 - "$VM/lim.json" <<'EOF' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
e = {x["feature"]: x for x in r["entries"]}["cgroup_limits"]
errs = []
if not (e["requested"] and e["achieved"] and e["verified"]):
    errs.append("cgroup_limits not held: %s" % e["detail"])
for want in ("memory.max 268435456", "pids.max 64", "cpu.max 50%", "memory.swap.max 0",
             "session-", ".scope"):
    if want not in e["detail"]:
        errs.append("detail %r lacks %r" % (e["detail"], want))
if "resource_limits" not in r["guarantees"]:
    errs.append("resource_limits not among the guarantees")
for m in errs:
    print("  " + m)
sys.exit(1 if errs else 0)
EOF
	return $ok
}

# A memory hog is killed inside its session; the host and another agent's
# session live on. With swap on: memory_max bounds swap too (none).
t_memory_hog_oom_killed() {
	local ok=0 bg
	vm_root "dd if=/dev/zero of=/sbxvm-swap bs=1M count=512 status=none && chmod 600 /sbxvm-swap &&
		mkswap -q /sbxvm-swap && swapon /sbxvm-swap" || { echo "  swap set-up failed"; return 1; }
	# ssh itself in the background (not a subshell), its output closed: the
	# test's own output is read until every writer is gone.
	ssh "${SSH_OPTS[@]}" -o LogLevel=ERROR -i "$VM/id_agent" coder1@127.0.0.1 'sleep 300' \
		</dev/null >/dev/null 2>&1 &
	bg=$!
	for _ in $(seq 1 20); do
		vm_root "pgrep -u coder1 -x sleep >/dev/null" && break
		sleep 0.5
	done
	# tail keeps a line until its newline: 400 MiB without one, in one process.
	as_agent lim1 'head -c 400M /dev/zero | tail -n 1 >/dev/null; echo "rc=${PIPESTATUS[1]}"' \
		>"$VM/oom.out" 2>&1
	echo "  lim1 (memory_max 256M): $(tr '\n' ' ' <"$VM/oom.out")"
	grep -q '^rc=137$' "$VM/oom.out" || { echo "  tail was not SIGKILLed: $(tr '\n' ' ' <"$VM/oom.out")"; ok=1; }
	vm_root "journalctl -k -b -o cat | grep -q 'Memory cgroup out of memory'" ||
		{ echo "  no memory-cgroup OOM in the kernel log"; ok=1; }
	vm_root "pgrep -u coder1 -x sleep >/dev/null" || { echo "  coder1's session did not live on"; ok=1; }
	[ "$(vm_root echo alive)" = alive ] || { echo "  the host did not live on"; ok=1; }
	# The session that hit memory_max closed as any, in root's ledger, and
	# the account's next login works.
	vm_root "agent-shell --log lim1 --since 1h" | grep ' pam_close ' | tail -n 1 |
		grep -q 'how=closed report=kept' || { echo "  the OOM session's close is not in the ledger"; ok=1; }
	[ "$(as_agent lim1 'echo next-login-ok' 2>&1)" = next-login-ok ] ||
		{ echo "  lim1's next login after the OOM failed"; ok=1; }
	# Control: the same command without memory_max (coder1) completes.
	[ "$(as_agent coder1 'head -c 300M /dev/zero | tail -n 1 | wc -c')" = 314572800 ] ||
		{ echo "  control: coder1 could not hold 300 MiB"; ok=1; }
	kill "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	vm_root "swapoff /sbxvm-swap; rm -f /sbxvm-swap"
	return $ok
}

# A fork bomb stops at pids_max (dash: no fork retries), bounded in time.
t_fork_bomb_stops_at_pids_max() {
	local ok=0 n
	as_agent lim1 'timeout 20 dash -c "i=0; while [ \$i -lt 200 ]; do sleep 15 & i=\$((i+1)); done; wait" 2>/tmp/fb.err &
		sleep 3; echo "n=$(pgrep -c -x sleep)"; echo "forkerr=$(grep -c -i fork /tmp/fb.err)"; pkill -x sleep; wait' \
		>"$VM/fork.out" 2>&1
	n=$(sed -n 's/^n=//p' "$VM/fork.out")
	echo "  lim1 (pids_max 64): $n sleeps running, $(sed -n 's/^forkerr=//p' "$VM/fork.out") fork failure(s)"
	[ -n "$n" ] && [ "$n" -ge 20 ] && [ "$n" -lt 64 ] || { echo "  sleeps running: ${n:-?} (wanted 20..63)"; ok=1; }
	grep -q '^forkerr=[1-9]' "$VM/fork.out" || { echo "  no fork failure: $(tr '\n' ' ' <"$VM/fork.out")"; ok=1; }
	# The session that hit pids_max closed in root's ledger, and the next
	# login works.
	vm_root "agent-shell --log lim1 --since 1h" | grep ' pam_close ' | tail -n 1 |
		grep -q 'how=closed report=kept' || { echo "  the fork bomb's close is not in the ledger"; ok=1; }
	[ "$(as_agent lim1 'echo next-login-ok' 2>&1)" = next-login-ok ] ||
		{ echo "  lim1's next login after the fork bomb failed"; ok=1; }
	# Control: coder1 (no pids_max) starts all 100.
	[ "$(as_agent coder1 'for i in $(seq 100); do sleep 5 & done; pgrep -c -x sleep; pkill -x sleep')" -ge 100 ] ||
		{ echo "  control: coder1 could not start 100 processes"; ok=1; }
	return $ok
}

# A spinner is held to cpu_max: its CPU time over 4 s, against the same
# spinner in coder1's session (no cpu_max), in the same run.
spin_ticks() {
	as_agent "$1" 'timeout 4 dash -c "while :; do :; done"; cut -d" " -f16 /proc/$$/stat'
}
t_cpu_held_to_quota() {
	local lim free
	lim=$(spin_ticks lim1)
	free=$(spin_ticks coder1)
	echo "  cpu ticks in 4 s: lim1 (cpu_max 50) $lim, coder1 $free"
	[ -n "$lim" ] && [ -n "$free" ] && [ "$free" -gt 200 ] || { echo "  control spun too little"; return 1; }
	# 50% of one CPU, with room for the emulator's jitter.
	[ $((lim * 100 / free)) -le 65 ] || { echo "  ratio $((lim * 100 / free))% > 65%"; return 1; }
}

# Linger: logind starts user@UID.service at once and at every boot; for an
# agent the condition skips it the same way, and the doctor says so.
t_linger_gets_no_user_manager() {
	local ok=0 uid
	uid=$(vm_root id -u coder1)
	vm_root "loginctl enable-linger coder1" || { echo "  enable-linger failed"; return 1; }
	sleep 3
	vm_root "ps -u coder1 -o comm= | grep -qx systemd" && { echo "  systemd --user runs for a lingering agent"; ok=1; }
	[ "$(vm_root systemctl is-active "user@$uid.service")" != active ] ||
		{ echo "  user@$uid.service is active"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	vm_root agent-shell --doctor 2>&1 | grep -q "^WARN .*coder1 .*lingering.*skips it" ||
		{ echo "  the doctor does not report the lingering agent"; ok=1; }
	vm_root loginctl disable-linger coder1
	return $ok
}

# ---- agent-sandbox-egressd as packaged: socket activation, its user, reload
# The daemon answers the bridge's question (a PING hello) for a uid whose
# profile is network = proxy ("yes"); any other uid it refuses before it
# reads a byte ("none"). (It serves no client that speaks SOCKS5 or CONNECT
# on its socket directly: only the sessions' bridges.)
EGRESS_SOCK=/run/agent-sandbox/egress.sock
# greet USER: yes, no or none (egress_ping.sh, copied into the guest).
greet() { vm_root bash /root/sbx-vm/egress_ping.sh "$1"; }
egressd_pid() { vm_root systemctl show -p MainPID --value agent-sandbox-egressd.service; }

t_egressd_socket_activated_as_its_user() {
	local ok=0 pid uid st
	# Right after the install (guest-setup.sh): enabled, listening, not
	# running.
	[ "$(vm_root cat /root/sbx-vm/egressd-after-install.out | tr '\n' ' ')" = "enabled active inactive " ] ||
		{ echo "  after install (socket enabled, active; service): $(vm_root cat /root/sbx-vm/egressd-after-install.out | tr '\n' ' ')"; ok=1; }
	[ "$(vm_root systemctl is-active agent-sandbox-egressd.socket)" = active ] ||
		{ echo "  the socket is not active"; ok=1; }
	st=$(vm_root "stat -c '%a %U:%G %F' $EGRESS_SOCK /run/agent-sandbox" | tr '\n' ' ')
	[ "$st" = "666 root:root socket 755 root:root directory " ] ||
		{ echo "  socket, directory: $st (want 666 root:root socket, 755 root:root directory)"; ok=1; }
	# A uid that is no agent: refused without a byte, and logged.
	[ "$(greet plain1)" = none ] || { echo "  plain1 got an answer: $(greet plain1)"; ok=1; }
	vm_root "journalctl -b -t agent-sandbox -o cat | grep -q '^event=egress user=plain1 .*verdict=refused reason=\"not an agent account\"'" ||
		{ echo "  no event=egress refusal for plain1 in the journal"; ok=1; }
	# The proxy agent's uid (not through PAM: the daemon knows only the uid).
	[ "$(greet egress1)" = yes ] || { echo "  egress1's PING: '$(greet egress1)', want yes"; ok=1; }
	[ "$(vm_root systemctl is-active agent-sandbox-egressd.service)" = active ] ||
		{ echo "  the first connection did not start the service"; ok=1; }
	vm_root "journalctl -b -u agent-sandbox-egressd -o cat | grep -q 'listening on $EGRESS_SOCK (socket activation) as uid '" ||
		{ echo "  the daemon did not say it was socket-activated"; ok=1; }
	pid=$(egressd_pid)
	uid=$(vm_root id -u agent-sandbox-egress)
	[ -n "$uid" ] && [ "$uid" != 0 ] || { echo "  no agent-sandbox-egress user"; return 1; }
	st=$(vm_root "grep -E '^(Uid|Gid|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/$pid/status" | tr -s '\t\n' '  ')
	echo "  daemon pid $pid: $st"
	case "$st" in
	"Uid: $uid $uid $uid $uid Gid: "*" CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 CapAmb: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 ") ;;
	*) echo "  want every uid $uid, no capability, NoNewPrivs 1, Seccomp 2"; ok=1 ;;
	esac
	# No home, no shell, a system uid.
	vm_root "getent passwd agent-sandbox-egress" | grep -q ":/nonexistent:/usr/sbin/nologin$" ||
		{ echo "  passwd: $(vm_root getent passwd agent-sandbox-egress)"; ok=1; }
	return $ok
}

# SIGHUP through systemctl reload: a [match] rule added to a drop-in takes
# effect in the same process, and taking it out again refuses again.
t_egressd_reload_reads_the_config() {
	local ok=0 pid
	pid=$(egressd_pid)
	[ "$(greet egress2)" = none ] || { echo "  control: egress2 is answered before any rule names it"; ok=1; }
	vm_root "printf '[match]\\nuser egress2 = egress\\n' >/etc/agent-sandbox/conf.d/egress2.conf &&
		chmod 0644 /etc/agent-sandbox/conf.d/egress2.conf && systemctl reload agent-sandbox-egressd" ||
		{ echo "  systemctl reload failed"; return 1; }
	sleep 2
	[ "$(greet egress2)" = yes ] || { echo "  after reload egress2 got '$(greet egress2)'"; ok=1; }
	vm_root "rm /etc/agent-sandbox/conf.d/egress2.conf && systemctl reload agent-sandbox-egressd"
	sleep 2
	[ "$(greet egress2)" = none ] || { echo "  the rule's removal did not take effect"; ok=1; }
	[ "$(egressd_pid)" = "$pid" ] || { echo "  reload restarted the daemon ($pid -> $(egressd_pid))"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	return $ok
}

# The packaged path end to end: egress1's profile lists 127.0.0.2:7070 and
# localhost:7070; a server answers on 127.0.0.2:7070 and :7071 in this
# guest. Through the bridge (127.0.0.1:3128 in the sandbox) and the
# installed daemon, the listed one is reached and the other is refused; a
# listed name is looked up by the daemon under its unit's confinement (and
# refused, since it resolves to loopback).
t_egressd_proxy_session_reaches_its_list() {
	local ok=0 out
	vm_root "for p in 7070 7071; do setsid timeout 120 socat TCP-LISTEN:\$p,bind=127.0.0.2,reuseaddr,fork \
		SYSTEM:'echo sbxvm-egress-'\$p </dev/null >/dev/null 2>&1 & done; sleep 1"
	# Control: both answer outside the sandbox.
	[ "$(vm_root 'socat -t 3 - TCP:127.0.0.2:7071 </dev/null')" = sbxvm-egress-7071 ] ||
		{ echo "  control: 127.0.0.2:7071 does not answer in the guest"; ok=1; }
	out=$(as_agent egress1 'echo "https_proxy=$https_proxy"
		for t in 127.0.0.2:7070 127.0.0.2:7071 localhost:7070; do
			exec 3<>/dev/tcp/127.0.0.1/3128
			printf "CONNECT $t HTTP/1.1\r\nHost: $t\r\n\r\n" >&3
			echo "$t: $(timeout 5 cat <&3 | tr -d "\r" | grep -v "^$" | tr "\n" " ")"
			exec 3<&-
		done' 2>&1)
	echo "$out" | sed 's/^/  | /'
	echo "$out" | grep -qx 'https_proxy=http://127.0.0.1:3128' || { echo "  https_proxy not the bridge"; ok=1; }
	echo "$out" | grep -qx '127.0.0.2:7070: HTTP/1.1 200 Connection established sbxvm-egress-7070 ' ||
		{ echo "  the listed destination was not reached"; ok=1; }
	echo "$out" | grep -q '^127.0.0.2:7071: HTTP/1.1 403 Forbidden' || { echo "  the unlisted port was not refused"; ok=1; }
	echo "$out" | grep -q 'sbxvm-egress-7071' && { echo "  the unlisted port's server was reached"; ok=1; }
	echo "$out" | grep -q '^localhost:7070: HTTP/1.1 403 Forbidden' || { echo "  localhost:7070 was not refused"; ok=1; }
	vm_root "journalctl -b -t agent-sandbox -o cat | grep -q '^event=egress session=[0-9a-f]* user=egress1 .*host=127.0.0.2 port=7070 addr=127.0.0.2 verdict=allowed'" ||
		{ echo "  no allowed event=egress line for 127.0.0.2:7070"; ok=1; }
	vm_root "journalctl -b -t agent-sandbox -o cat | grep -q '^event=egress session=.* user=egress1 .*host=localhost port=7070 addr=127.0.0.1 verdict=refused reason=\"resolves to loopback address\"'" ||
		{ echo "  the daemon did not look localhost up (no 'resolves to loopback address' line)"; ok=1; }
	as_agent egress1 'agent-shell --report --json' >"$VM/egress.json" 2>"$VM/egress.err" ||
		{ echo "  report: $(head -c 300 "$VM/egress.err")"; return 1; }
	python3 - "$VM/egress.json" <<'PY' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
e = {x["feature"]: x for x in r["entries"]}["network_egress"]
if not (e["achieved"] and e["verified"] and "network_egress" in r["guarantees"]):
    print("  network_egress not held: %s" % e["detail"])
    sys.exit(1)
PY
	return $ok
}

# systemd's own checks of the installed units, and the exposure score
# (printed for the record; above 2.0 means a directive was lost). The
# guest has no man(1), so verify skips the Documentation= check.
t_egressd_units_verify_and_score() {
	local ok=0 out score
	out=$(vm_root "systemd-analyze verify --man=no agent-sandbox-egressd.socket agent-sandbox-egressd.service 2>&1; echo rc=\$?")
	[ "$out" = rc=0 ] || { echo "  systemd-analyze verify: $out"; ok=1; }
	# The C locale: ASCII marks ("-" for an open directive, "->" before
	# the score) whatever locale ssh passes on.
	vm_root "LC_ALL=C systemd-analyze security --no-pager agent-sandbox-egressd.service" >"$VM/security.out" 2>&1
	score=$(sed -n 's/^-> Overall exposure level for agent-sandbox-egressd.service: \([0-9.]*\) .*/\1/p' "$VM/security.out")
	echo "  systemd-analyze security: ${score:-?} ($(grep -c '^- ' "$VM/security.out") directives open:$(sed -n 's/^- \([^ ]*\) .*/ \1/p' "$VM/security.out" | tr -d '\n'))"
	[ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || { echo "  exposure ${score:-?} > 2.0"; tail -n 3 "$VM/security.out"; ok=1; }
	return $ok
}

# ---- the package's life: upgrade, remove, purge ---------------------------
# Last, since they take the package away. pam-auth-update wired the module
# at install (guest-setup.sh checked it); it must stay wired once through
# an upgrade, and leave every stack before the module goes.

# module_lines: how many lines of the common-* stacks name the module.
module_lines() {
	vm_root "cat /etc/pam.d/common-account /etc/pam.d/common-session \
		/etc/pam.d/common-session-noninteractive | grep -c '^[^#]*pam_agent_sandbox\.so'"
}

# The doctor's fix for a stack without the module is pam-auth-update's,
# and it works: disabled, sshd FAILs naming it; enabled again, OK.
t_doctor_fix_is_pam_auth_update() {
	local ok=0
	vm_root "DEBIAN_FRONTEND=noninteractive pam-auth-update --disable agent-sandbox" ||
		{ echo "  pam-auth-update --disable failed"; return 1; }
	vm_root agent-shell --doctor >"$VM/doctor-off.out" 2>&1 && { echo "  doctor exit 0 with the module off"; ok=1; }
	grep -A1 '^FAIL .*pam .*sshd ' "$VM/doctor-off.out" | grep -q 'fix: pam-auth-update --enable agent-sandbox' ||
		{ echo "  sshd row:"; grep -A1 ' sshd ' "$VM/doctor-off.out"; ok=1; }
	vm_root "DEBIAN_FRONTEND=noninteractive pam-auth-update --enable agent-sandbox" ||
		{ echo "  pam-auth-update --enable failed"; return 1; }
	[ "$(module_lines)" = 3 ] || { echo "  --enable did not restore the three lines"; ok=1; }
	vm_root agent-shell --doctor 2>&1 | grep -q '^OK .*pam .*sshd .*account and session' ||
		{ echo "  sshd not OK again after --enable"; ok=1; }
	return $ok
}

# session_id FILE: the "sid=ID" a session printed to FILE, waited for up
# to 30 s; "" when none came.
session_id() {
	local sid=""
	for _ in $(seq 1 60); do
		sid=$(sed -n 's/^sid=//p' "$1" 2>/dev/null)
		[ -n "$sid" ] && break
		sleep 0.5
	done
	echo "$sid"
}

# A session's end in root's ledger (agent-shell --log as root): its
# pam_close line, with how it ended.
ledger_close() {
	vm_root "agent-shell --log --since 1h" | grep -E " pam_close +coder1 +${1:0:12}"
}

# The fault: sshd restarted with a live session. The session (its own
# sshd-session process) goes on to its end and closes as any, in the
# ledger; the next login works.
t_ssh_restart_with_live_session() {
	local ok=0 sid bg
	as_agent coder1 'echo "sid=$AGENT_SANDBOX_SESSION"; sleep 15; echo live-survived' \
		>"$VM/restart.out" 2>&1 &
	bg=$!
	sid=$(session_id "$VM/restart.out")
	[ -n "$sid" ] || { echo "  no session"; kill "$bg"; return 1; }
	vm_root systemctl restart ssh || { echo "  systemctl restart ssh failed"; ok=1; }
	[ "$(as_agent coder1 'echo next-login-ok' 2>&1)" = next-login-ok ] ||
		{ echo "  the next login after the restart failed"; ok=1; }
	wait "$bg"
	grep -qx live-survived "$VM/restart.out" || { echo "  the live session: $(tr '\n' ' ' <"$VM/restart.out")"; ok=1; }
	ledger_close "$sid" | grep -q 'how=closed report=kept' ||
		{ echo "  the live session's close is not in the ledger"; ok=1; }
	return $ok
}

# The fault: sshd's monitor of a session killed (kill -9, as the OOM killer
# or an admin would), under systemd and logind. The session's keeper
# (sbx-keeper, a root process beside the monitor) closes it: nothing of
# the account runs 12 s after, the keeper is gone, the ledger has one
# pam_close how=opener_gone with the report, and the next login works.
t_monitor_killed() {
	local ok=0 sid bg opener keepers
	as_agent coder1 'echo "sid=$AGENT_SANDBOX_SESSION"; exec sleep 60' >"$VM/monkill.out" 2>&1 &
	bg=$!
	sid=$(session_id "$VM/monkill.out")
	[ -n "$sid" ] || { echo "  no session"; kill "$bg"; return 1; }
	opener=$(vm_root "sed -n 's/^opener_pid=//p' /run/agent-sandbox/sessions/$sid")
	keepers=$(vm_root "pgrep -x sbx-keeper | wc -l")
	echo "  monitor $opener ($(vm_root "cat /proc/$opener/comm")), keepers: $keepers"
	[ "$keepers" = 1 ] || { echo "  not one keeper"; ok=1; }
	vm_root "kill -KILL $opener" || { echo "  kill failed"; ok=1; }
	vm_root 'for i in $(seq 120); do pgrep -u coder1 >/dev/null || pgrep -x sbx-keeper >/dev/null || exit 0; sleep 0.1; done; exit 1' ||
		{ echo "  12 s after: coder1 $(vm_root 'pgrep -u coder1 | tr "\n" " "'), keepers $(vm_root 'pgrep -x sbx-keeper | tr "\n" " "')"; ok=1; }
	wait "$bg" 2>/dev/null
	vm_root "test ! -e /run/agent-sandbox/sessions/$sid" || { echo "  the record is still there"; ok=1; }
	[ "$(ledger_close "$sid" | grep -c 'how=opener_gone report=kept')" = 1 ] ||
		{ echo "  the ledger: $(ledger_close "$sid")"; ok=1; }
	[ "$(as_agent coder1 'echo next-login-ok' 2>&1)" = next-login-ok ] ||
		{ echo "  the next login failed"; ok=1; }
	return $ok
}

# The fault: the logging daemons stopped (journald's sockets and service,
# and a syslog daemon where the image has one). The product's stated
# behaviour (docs/design.md 12.1, 12.3): the session runs; agent-shell warns
# the client that no syslog daemon listens and that its lines go to root's
# ledger; the PAM stage falls back to pam_syslog, which reaches nothing.
# The ledger holds the session: pam_open, the shell's lines, pam_close with
# report=kept. The journal gets none of its lines (the fault took hold);
# once the daemons are started again, the next login works and is in the
# journal (the control). The daemons are started again whatever happened.
LOG_UNITS="systemd-journald.socket systemd-journald-dev-log.socket systemd-journald-audit.socket"
LOG_UNITS="$LOG_UNITS systemd-journald.service syslog.socket rsyslog.service syslog-ng.service"
# logging_units_active: those of LOG_UNITS that run, one a line.
logging_units_active() {
	vm_root "for u in $LOG_UNITS; do [ \"\$(systemctl is-active \$u)\" = active ] && echo \$u; done; true"
}
t_logging_stopped() {
	local ok=0 units
	units=$(logging_units_active | tr '\n' ' ')
	echo "  logging units running: $units"
	case " $units" in *" systemd-journald.service "*) ;; *) echo "  control: journald is not running"; return 1 ;; esac
	vm_root "systemctl stop $units" || { echo "  systemctl stop failed"; ok=1; }
	logging_stopped_session || ok=1
	vm_root "systemctl start $units" || { echo "  systemctl start $units failed"; ok=1; }
	logging_restarted "$units" || ok=1
	return $ok
}
logging_stopped_session() {
	local ok=0 sid rc n
	[ -z "$(logging_units_active)" ] || { echo "  still running: $(logging_units_active | tr '\n' ' ')"; ok=1; }
	echo "  with them stopped: $(vm_root 'for s in /run/systemd/journal/socket /dev/log; do
		printf "%s: " $s; echo x | socat -u - UNIX-SENDTO:$s 2>&1 | sed "s/.*: //" | grep . || echo taken; done' | tr '\n' ' ')"
	as_agent coder1 'echo "sid=$AGENT_SANDBOX_SESSION"; echo ran-without-a-log; exit 4' \
		>"$VM/nolog.out" 2>"$VM/nolog.err"
	rc=$?
	sid=$(sed -n 's/^sid=//p' "$VM/nolog.out")
	echo "  the client: exit $rc, $(tr '\n' ' ' <"$VM/nolog.out")"
	sed 's/^/  stderr | /' "$VM/nolog.err"
	[ "$rc" = 4 ] && grep -qx ran-without-a-log "$VM/nolog.out" && [ -n "$sid" ] ||
		{ echo "  the session did not run to its exit status"; return 1; }
	grep -q "^agent-shell: warning: no syslog daemon listens on /dev/log; this session's log lines go to root's ledger" \
		"$VM/nolog.err" || { echo "  the client was not told that no log daemon listens"; ok=1; }
	# Nothing of the session (nor of coder1, whose last session it was) runs
	# on, 5 s after the client's end at the most.
	vm_root 'for i in $(seq 50); do pgrep -u coder1 >/dev/null || exit 0; sleep 0.1; done; exit 1' ||
		{ echo "  coder1's processes 5 s after the session: $(vm_root 'ps -u coder1 -o pid=,comm=' | tr '\n' ' ')"; ok=1; }
	vm_root "test ! -e /run/agent-sandbox/sessions/$sid" || { echo "  the session's record is still there"; ok=1; }
	vm_root "agent-shell --log --since 1h" >"$VM/nolog.log" 2>&1 || { echo "  --log: exit $?"; ok=1; }
	grep -E "^[^ ]+ +[a-z_]+ +coder1 +${sid:0:12}" "$VM/nolog.log" | cut -c1-150 | sed 's/^/  ledger: /'
	for n in pam_open command session_start session_end pam_close; do
		grep -Eq "^[^ ]+ +$n +coder1 +${sid:0:12}" "$VM/nolog.log" || { echo "  the ledger has no $n line"; ok=1; }
	done
	grep -E " session_end +coder1 +${sid:0:12}" "$VM/nolog.log" | grep -q 'exit_status=4 .*origin=shell' ||
		{ echo "  no session_end with exit_status=4 from the shell"; ok=1; }
	ledger_close "$sid" | grep -q 'how=closed report=kept .*exit_status=4' ||
		{ echo "  no pam_close how=closed report=kept exit_status=4"; ok=1; }
	echo "$sid" >"$VM/nolog.sid"
	return $ok
}
# logging_restarted UNITS: running again, the next login works and its
# lines reach the journal; the stopped session's never did.
logging_restarted() {
	local ok=0 sid out next
	[ "$(logging_units_active | tr '\n' ' ')" = "$1" ] ||
		{ echo "  running again: $(logging_units_active | tr '\n' ' '), want $1"; ok=1; }
	out=$(as_agent coder1 'echo "sid=$AGENT_SANDBOX_SESSION"' 2>&1)
	next=$(echo "$out" | sed -n 's/^sid=//p')
	[ -n "$next" ] && [ "$out" = "sid=$next" ] || { echo "  the next login: $out"; return 1; }
	vm_root "for i in \$(seq 30); do journalctl -t agent-sandbox AGENT_SANDBOX_SESSION=$next -o cat | grep -q '^event=pam_close ' && exit 0; sleep 0.5; done; exit 1" ||
		{ echo "  control: the next session's lines are not in the journal"; ok=1; }
	sid=$(cat "$VM/nolog.sid" 2>/dev/null)
	[ -z "$sid" ] || [ -z "$(vm_root "journalctl -t agent-sandbox AGENT_SANDBOX_SESSION=$sid -o cat")" ] ||
		{ echo "  the journal has lines of the session run without it: the fault did not take hold"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	return $ok
}

t_upgrade_keeps_pam_wiring() {
	local ok=0 n sid bg
	# A session lives through the upgrade, to its end and its close.
	as_agent coder1 'echo "sid=$AGENT_SANDBOX_SESSION"; sleep 25; echo live-survived' \
		>"$VM/upgrade-live.out" 2>&1 &
	bg=$!
	sid=$(session_id "$VM/upgrade-live.out")
	[ -n "$sid" ] || { echo "  no live session before the upgrade"; ok=1; }
	vm_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/sbx-vm/sbx-upgrade.deb" \
		>"$VM/upgrade.log" 2>&1 || { echo "  upgrade failed:"; tail -n 15 "$VM/upgrade.log"; return 1; }
	wait "$bg"
	grep -qx live-survived "$VM/upgrade-live.out" ||
		{ echo "  the live session: $(tr '\n' ' ' <"$VM/upgrade-live.out")"; ok=1; }
	[ -z "$sid" ] || ledger_close "$sid" | grep -q 'how=closed report=kept' ||
		{ echo "  the live session's close is not in the ledger"; ok=1; }
	vm_root "dpkg-query -W -f '\${Version}' agent-sandbox" | grep -q '+vmupgrade1$' ||
		{ echo "  the upgrade did not install"; ok=1; }
	n=$(module_lines)
	[ "$n" = 3 ] || { echo "  after the upgrade the common-* stacks name the module $n times (want 3)"; ok=1; }
	as_agent coder1 'agent-shell --report --json' >"$VM/upgrade.json" 2>"$VM/upgrade.err" ||
		{ echo "  coder1 after the upgrade: $(head -c 300 "$VM/upgrade.err")"; return 1; }
	python3 - "$VM/upgrade.json" <<'EOF' || ok=1
import json, sys
r = json.load(open(sys.argv[1]))
if r["level"] != "degraded" or not r["session_id"]:
    print("  after the upgrade: level %s, session %r" % (r["level"], r["session_id"]))
    sys.exit(1)
EOF
	return $ok
}

# An upgrade (here a reinstall of the upgrade's version) restarts a running
# daemon on the new binary and keeps the socket it listens on.
t_upgrade_restarts_egressd() {
	local ok=0 before after
	[ "$(greet egress1)" = yes ] || { echo "  control: egress1 not answered before"; ok=1; }
	before=$(egressd_pid)
	vm_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall /root/sbx-vm/sbx-upgrade.deb" \
		>"$VM/reinstall.log" 2>&1 || { echo "  reinstall failed:"; tail -n 15 "$VM/reinstall.log"; return 1; }
	after=$(egressd_pid)
	[ "$before" != 0 ] && [ "$after" != 0 ] && [ "$after" != "$before" ] ||
		{ echo "  daemon pid $before before, $after after (want a new running one)"; ok=1; }
	[ "$(vm_root systemctl is-active agent-sandbox-egressd.socket)" = active ] || { echo "  the socket is not active"; ok=1; }
	[ "$(greet egress1)" = yes ] || { echo "  egress1 not answered after the upgrade"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	return $ok
}

# After apt remove: no stack names the module, root and a normal user log
# in (ssh, su, runuser), and the agent account gets no session at all.
t_remove_then_root_and_user_log_in() {
	local ok=0 n
	[ "$(as_agent plain1 'id -un')" = plain1 ] || { echo "  control: plain1 cannot log in before removal"; ok=1; }
	vm_root "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q agent-sandbox" \
		>"$VM/remove.log" 2>&1 || { echo "  apt-get remove failed:"; tail -n 15 "$VM/remove.log"; return 1; }
	n=$(module_lines)
	[ "$n" = 0 ] || { echo "  after removal the common-* stacks name the module $n times"; ok=1; }
	vm_root "ls /usr/lib/*/security/pam_agent_sandbox.so /lib/*/security/pam_agent_sandbox.so \
		/usr/bin/agent-shell" 2>/dev/null && { echo "  files left after removal"; ok=1; }
	[ "$(vm_root 'id -u')" = 0 ] || { echo "  root cannot log in over ssh"; ok=1; }
	[ "$(as_agent plain1 'id -un')" = plain1 ] || { echo "  plain1 cannot log in over ssh"; ok=1; }
	[ "$(vm_root "su -s /bin/sh plain1 -c 'id -un'")" = plain1 ] || { echo "  su plain1 fails"; ok=1; }
	# runuser keeps README's hand lines (module_unknown=ignore: the stack goes
	# on without the module).
	[ "$(vm_root 'runuser -u plain1 -- id -un')" = plain1 ] || { echo "  runuser plain1 fails"; ok=1; }
	[ "$(vm_root 'runuser -l plain1 -c "id -un"')" = plain1 ] || { echo "  runuser -l plain1 fails"; ok=1; }
	as_agent coder1 'echo ran' >"$VM/removed-agent.out" 2>&1
	grep -q '^ran' "$VM/removed-agent.out" && { echo "  coder1 ran a command with the package gone"; ok=1; }
	return $ok
}

# After apt remove: the daemon and its units are gone, nothing failed, and
# /run/agent-sandbox is still the PAM module's (root, 0755).
t_remove_takes_egressd_away() {
	local ok=0
	[ "$(vm_root "systemctl list-unit-files --no-legend 'agent-sandbox-egressd*' | wc -l")" = 0 ] ||
		{ echo "  unit files left: $(vm_root "systemctl list-unit-files --no-legend 'agent-sandbox-egressd*'")"; ok=1; }
	[ "$(vm_root 'systemctl is-active agent-sandbox-egressd.socket agent-sandbox-egressd.service' | tr '\n' ' ')" = "inactive inactive " ] ||
		{ echo "  a unit is still active"; ok=1; }
	vm_root "test ! -e $EGRESS_SOCK -a ! -e /usr/sbin/agent-sandbox-egressd" || { echo "  the socket or the binary is left"; ok=1; }
	vm_root "pgrep -u agent-sandbox-egress" && { echo "  a daemon process is left"; ok=1; }
	[ "$(vm_root "stat -c '%a %U:%G' /run/agent-sandbox")" = "755 root:root" ] ||
		{ echo "  /run/agent-sandbox: $(vm_root "stat -c '%a %U:%G' /run/agent-sandbox")"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	return $ok
}

# After purge: the config is gone, the agents' homes are not.
t_purge_keeps_agent_homes() {
	local ok=0
	vm_root "DEBIAN_FRONTEND=noninteractive apt-get purge -y -q agent-sandbox" \
		>"$VM/purge.log" 2>&1 || { echo "  apt-get purge failed:"; tail -n 15 "$VM/purge.log"; return 1; }
	vm_root "test ! -e /etc/agent-sandbox/agent-sandbox.conf" || { echo "  the config survived purge"; ok=1; }
	vm_root "test -d /var/lib/agent-sandbox/homes/coder1" || { echo "  purge deleted coder1's home"; ok=1; }
	[ "$(vm_root 'id -u')" = 0 ] || { echo "  root cannot log in after purge"; ok=1; }
	[ "$(as_agent plain1 'id -un')" = plain1 ] || { echo "  plain1 cannot log in after purge"; ok=1; }
	# The socket's enablement is forgotten; the daemon's user stays.
	vm_root "test ! -L /etc/systemd/system/sockets.target.wants/agent-sandbox-egressd.socket" ||
		{ echo "  the sockets.target.wants link survived purge"; ok=1; }
	vm_root "getent passwd agent-sandbox-egress >/dev/null" || { echo "  purge removed agent-sandbox-egress"; ok=1; }
	[ -z "$(vm_root systemctl --failed --no-legend)" ] ||
		{ echo "  failed units: $(vm_root systemctl --failed --no-legend | tr '\n' ' ')"; ok=1; }
	return $ok
}

# A session outlives its start: agent-shell watches a pidfd of sshd's
# monitor and ends the session when it ends, never while it lives.
t_session_lasts() {
	local out
	out=$(as_agent coder1 'sleep 6; echo survived' 2>&1)
	[[ $out == *survived* ]] || { echo "  the session did not last 6 s: $out"; return 1; }
}

for t in t_session_lasts t_session_limits_reported t_memory_hog_oom_killed t_fork_bomb_stops_at_pids_max \
	t_cpu_held_to_quota t_doctor_on_debian t_report_names_what_the_kernel_lacks t_guarantees_hold_on_this_kernel \
	t_ssh_command_pty_scp_sftp t_reviewer_profile t_ci_profile_refused_with_reason \
	t_report_line_in_journal t_logind_session_and_no_user_manager t_linger_gets_no_user_manager \
	t_ssh_restart_with_live_session t_monitor_killed t_logging_stopped \
	t_egressd_socket_activated_as_its_user t_egressd_reload_reads_the_config \
	t_egressd_proxy_session_reaches_its_list t_egressd_units_verify_and_score \
	t_doctor_fix_is_pam_auth_update t_upgrade_keeps_pam_wiring t_upgrade_restarts_egressd \
	t_remove_then_root_and_user_log_in t_remove_takes_egressd_away t_purge_keeps_agent_homes; do
	# SBX_VM_ONLY=REGEX runs those tests alone (set-up always runs).
	[ -z "${SBX_VM_ONLY:-}" ] || [[ $t =~ $SBX_VM_ONLY ]] || continue
	if out=$($t 2>&1); then
		ok "$t"
	else
		bad "$t" "see below"
	fi
	[ -z "$out" ] || echo "$out"
done
