#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# make bench: start-up cost of one confined command — agent-shell against bare
# bash, bubblewrap and firejail — measured in one run with hyperfine, plus
# where agent-shell's time goes (decomposition, perf stat, phase timeline).
#
# Usage: bench/bench.sh [BUILD_DIR] [syscalls|egress|scale]   (make bench
# builds first; this builds nothing). With "syscalls", only the per-syscall
# loops run; with "egress", only the network = proxy throughput and latency;
# with "scale", only bench/scale.sh (real workloads, concurrent sessions).
# BASE_BUILD=DIR in the environment: bench/ssh.sh also measures that build's
# login path, in the same rounds (a before/after comparison).
# As root the sandboxed commands run as "nobody" (a sandbox for an agent is
# measured as the agent, like shell/demo.sh). Installs bubblewrap, firejail,
# hyperfine and jq with apt-get when missing (only this script does that).
# Results: BUILD_DIR/bench/ (hyperfine JSON and markdown, summary, timeline,
# syscalls.md and the raw syscalls.txt, egress.md and the raw egress.json).
set -u

build=${1:-build}
only=${2:-}
if ! build=$(cd "$build" 2>/dev/null && pwd); then
	echo "bench: no build directory ${1:-build}; run 'make bench'" >&2
	exit 1
fi
shell_bin="$build/agent-shell"
if [ ! -x "$shell_bin" ]; then
	echo "bench: $shell_bin missing; run 'make bench'" >&2
	exit 1
fi
results="$build/bench"
WARMUP=${WARMUP:-3}
MIN_RUNS=${MIN_RUNS:-30}
# firejail(1) never lets "nobody" start a sandbox (firejail-users(5)); it is
# measured as this other unprivileged, nologin account instead. /etc is
# never edited to allow nobody.
FIREJAIL_FALLBACK_USER=${FIREJAIL_FALLBACK_USER:-daemon}

is_root=false
[ "$(id -u)" -eq 0 ] && is_root=true

# --- tools --------------------------------------------------------------

# apt-get install the packages whose command is missing, after checking
# that Debian has them (apt-cache policy shows a candidate).
install_missing() {
	local pair cmd pkg want=() updated=false
	for pair in "$@"; do
		cmd=${pair%%:*}
		pkg=${pair#*:}
		command -v "$cmd" >/dev/null 2>&1 || want+=("$pkg")
	done
	[ ${#want[@]} -eq 0 ] && return 0
	if ! $is_root; then
		echo "bench: missing ${want[*]}; as root: apt-get install ${want[*]}" >&2
		return 0
	fi
	local ok=()
	for pkg in "${want[@]}"; do
		if ! apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [0-9]' && ! $updated; then
			apt-get update -qq || true
			updated=true
		fi
		if apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
			ok+=("$pkg")
		else
			echo "bench: package $pkg has no install candidate here; skipped" >&2
		fi
	done
	[ ${#ok[@]} -eq 0 ] && return 0
	echo "bench: installing ${ok[*]}"
	# Others may hold the dpkg lock for a while; wait rather than fail.
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${ok[@]}" >/dev/null ||
		echo "bench: apt-get install ${ok[*]} failed" >&2
}

install_missing hyperfine:hyperfine bwrap:bubblewrap firejail:firejail jq:jq
for t in hyperfine jq; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "bench: $t is required" >&2
		exit 1
	fi
done

# --- scratch workspace, owned by the uid that runs the sandboxes ---------

scratch=$(mktemp -d /var/tmp/agent-sandbox-bench.XXXXXX) || exit 1
# The egress part's accounts, daemon, server and /run directory (below).
eg_conf="" eg_users=() eg_pids=()
cleanup() {
	local p
	for p in "${eg_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${eg_pids[@]}"; do wait "$p" 2>/dev/null; done
	for p in "${eg_users[@]}"; do userdel "$p" 2>/dev/null; done
	[ -n "$eg_conf" ] && rm -rf "$eg_conf"
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
chmod 0755 "$scratch"
ws="$scratch/ws"	# the workspace every sandbox binds read-write
xdg="$scratch/xdg"	# agent-shell's per-session JSON reports land here, not in /tmp
out="$scratch/out"	# hyperfine writes as the agent; copied to $results at the end
mkdir -p "$ws" "$xdg" "$out"
chmod 0700 "$xdg"
chmod 0777 "$out"

agent=$(id -un)
run_as=()
if $is_root; then
	agent=nobody
	chown nobody:nogroup "$ws" "$xdg"
	run_as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
agent_home=$(getent passwd "$agent" | cut -d: -f6)
# The same small, fixed environment for every command (no SBX_* overrides:
# the shipped binary reads none, and nothing is inherited from the caller).
clean_env=(env -i "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	"HOME=${agent_home:-/}" "USER=$agent" "LOGNAME=$agent" "LANG=C.UTF-8"
	"XDG_RUNTIME_DIR=$xdg")

q() { printf '%q' "$1"; }
qs=$(q "$shell_bin")
qws=$(q "$ws")

# name|command; "--" rows start the decomposition group.
entries=(
	"bash -c true|bash -c true"
	"agent-shell --run -- /bin/true|$qs --run --workspace $qws -- /bin/true"
	"agent-shell --run -- bash -c true|$qs --run --workspace $qws -- /bin/bash -c true"
	"bwrap -- /bin/true|bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind $qws $qws --new-session /bin/true"
	"bwrap -- bash -c true|bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind $qws $qws --new-session /bin/bash -c true"
	"firejail -- /bin/true|firejail --quiet --noprofile --private-tmp --net=none /bin/true"
	"--"
	"agent-shell --probe (start-up, config, probe; no session)|$qs --probe"
	"unshare user+mnt+pid+net+ipc+uts+cgroup, fork /bin/true|unshare --user --mount --pid --net --ipc --uts --cgroup --fork /bin/true"
	"unshare same without net|unshare --user --mount --pid --ipc --uts --cgroup --fork /bin/true"
)

# --- per-syscall cost: bench/syscalls in each sandbox ---------------------

# ns per call of getppid, stat, open+close, ioctl, connect (to a unix socket
# of its own: inside agent-shell, a round trip to the unix supervisor) and
# fork+exec, natively,
# under a one-instruction ALLOW filter (the floor any filter costs: the
# kernel's action cache answers every call), inside agent-shell and inside
# bubblewrap with that same ALLOW filter. Rows run interleaved, SYSCALL_RUNS
# times each; the median per row is printed with its difference to native.
SYSCALL_RUNS=${SYSCALL_RUNS:-3}
SYSCALL_N=${SYSCALL_N:-100000}
syscall_bench() {
	local sc_src="$build/bench/syscalls" sc="$ws/syscalls" raw="$out/syscalls.txt"
	local allow_bpf="$scratch/allow.bpf" rows=() r name
	if [ ! -x "$sc_src" ]; then
		echo "bench: $sc_src missing; run 'make bench'" >&2
		return 1
	fi
	# In the workspace: the one place every sandbox binds and lets run.
	cp "$sc_src" "$sc" && chmod 0755 "$sc" || return 1
	# struct sock_filter { u16 code; u8 jt, jf; u32 k } = RET ALLOW,
	# little-endian (x86_64, aarch64)
	printf '\006\000\000\000\000\000\377\177' >"$allow_bpf"
	rows=(native allow-all agent-shell)
	command -v bwrap >/dev/null 2>&1 && rows+=(bwrap+allow-all)
	: >"$raw"
	for ((r = 1; r <= SYSCALL_RUNS; r++)); do
		for name in "${rows[@]}"; do
			case $name in
			native) set -- "$sc" ;;
			allow-all) set -- "$sc" --allow-all-filter ;;
			agent-shell) set -- "$shell_bin" --run --workspace "$ws" -- "$sc" ;;
			bwrap+allow-all) set -- bwrap --unshare-all --die-with-parent --ro-bind / / \
				--dev /dev --proc /proc --tmpfs /tmp --bind "$ws" "$ws" \
				--new-session --seccomp 9 "$sc" ;;
			esac
			# fd 9 (bwrap's --seccomp) for the bwrap row only: agent-shell
			# would close it, but the native rows should not hold it either
			if [ "$name" = bwrap+allow-all ]; then
				exec 9<"$allow_bpf"
			fi
			"${run_as[@]}" "${clean_env[@]}" "$@" -n "$SYSCALL_N" \
				2>"$out/syscalls.err" | sed "s/^/$name /" >>"$raw"
			exec 9<&-
			if [ "${PIPESTATUS[0]}" -ne 0 ]; then
				echo "syscalls in $name: failed: $(head -c 300 "$out/syscalls.err")" >>"$notes"
			fi
		done
	done
	# "row op ns" lines -> median per (row, op), a table with the difference
	# to native.
	sort -k1,1 -k2,2 -k3,3n "$raw" | awk -v rows="${rows[*]}" \
		-v oporder="$(awk '!s[$2]++ { printf "%s ", $2 }' "$raw")" '
		{ k = $1 SUBSEP $2; v[k, ++n[k]] = $3 }
		END {
			nops = split(oporder, ops, " ")
			nr = split(rows, R, " ")
			for (k in n) { c = n[k]; med[k] = (c % 2) ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2 }
			printf "| syscall |"; for (i = 1; i <= nr; i++) printf " %s |", R[i]; printf "\n|---|"
			for (i = 1; i <= nr; i++) printf "---|"; printf "\n"
			for (j = 1; j <= nops; j++) {
				op = ops[j]; base = med["native", op]; printf "| %s |", op
				for (i = 1; i <= nr; i++) {
					k = R[i] SUBSEP op
					if (!(k in med)) { printf " - |"; continue }
					if (R[i] == "native") printf " %.0f |", med[k]
					else printf " %.0f (%+.0f) |", med[k], med[k] - base
				}
				printf "\n"
			}
		}' >"$out/syscalls.md"
	echo
	echo "=== per-syscall cost, ns per call (median of $SYSCALL_RUNS runs of $SYSCALL_N calls; connect $((SYSCALL_N / 100)), fork+exec $((SYSCALL_N / 500)); in parentheses: minus native)"
	cat "$out/syscalls.md"
}

# --- network = proxy: a session's TCP through agent-sandbox-egressd -------

# EGRESS_BYTES (1 GiB) up and down, and the time from socket() to a first
# byte back, for a client inside a real network = proxy session (the
# test build of agent-shell, SBX_TEST_CONFIG naming a trusted config)
# through the bridge and the daemon, beside the same client over direct
# loopback TCP and through a bare splice relay (bench/egress relay: no
# sandbox, no daemon; what any splice proxy costs here), as the same
# account, in one run. The proxy's path: client -> the sandbox's
# 127.0.0.1:3128 (the bridge hands the socket to the daemon) -> the
# daemon's splice relay -> bench/egress serve on 127.0.0.2. Each run does
# the three rows in turn (the first row rotates between runs), EGRESS_RUNS
# runs; latency is EGRESS_CONNS connections per row and run. The server's
# port is not 443 and the client sends its first byte right after the
# proxy's 200, so the daemon's 300 ms wait for a TLS ClientHello ends at
# once (bench/egress.c). CPU per row: the client's own (getrusage), the
# server's and the daemon's or relay's (utime+stime from /proc, 10 ms
# ticks), and the whole machine's busy time (/proc/stat); what of that is
# none of these (other work, and for the proxy the session's start-up and
# the bridge) is the "other" column, the measure of a busy machine: the
# load average cannot be, as the make bench parts before this one and
# these rows themselves keep it near 2.
EGRESS_RUNS=${EGRESS_RUNS:-7}
EGRESS_BYTES=${EGRESS_BYTES:-1073741824}
EGRESS_CONNS=${EGRESS_CONNS:-200}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
egress_bench() {
	local eg_src="$build/bench/egress" daemon="$build/agent-sandbox-egressd"
	local testable="$build/tests/agent-shell-testable" dir="$scratch/egress"
	local raw="$out/egress.jsonl" conf sock port rport du au spid dpid rpid r f i
	local as_agent agent_env test via rows
	if ! $is_root; then
		echo "egress: not measured: needs root (two throwaway accounts, the daemon's --user)" >>"$notes"
		return 0
	fi
	for f in "$eg_src" "$daemon" "$testable"; do
		if [ ! -x "$f" ]; then
			echo "bench: $f missing; run 'make bench'" >&2
			return 1
		fi
	done
	r=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	du=sbxbd-$r au=sbxba-$r
	# The trusted config: root-owned, 0644, in a root-owned 0755 directory.
	eg_conf=$(mktemp -d /run/agent-sandbox-bench.XXXXXX) || return 1
	chmod 0755 "$eg_conf"
	conf=$eg_conf/agent-sandbox.conf sock=$eg_conf/egress.sock
	# Explicit uids away from the --system range, which test suites
	# allocate from (and kill by uid in) concurrently.
	useradd -M -d /nonexistent -s /usr/sbin/nologin -u "$(free_id)" -U "$du" 2>/dev/null || return 1
	eg_users+=("$du")
	useradd -M -d "$dir/home" -s /usr/sbin/nologin -u "$(free_id)" -U "$au" 2>/dev/null || return 1
	eg_users+=("$au")
	mkdir -p "$dir/home" "$dir/xdg" "$dir/ws"
	chmod 0700 "$dir/home" "$dir/xdg"
	chown "$au:$au" "$dir/home" "$dir/xdg" "$dir/ws"
	cp "$eg_src" "$dir/ws/egress" && chmod 0755 "$dir/ws/egress" || return 1
	as_agent=(setpriv --reuid="$au" --regid="$au" --clear-groups --)
	agent_env=(env -i "PATH=/usr/local/bin:/usr/bin:/bin" "HOME=$dir/home" "USER=$au"
		"LOGNAME=$au" "LANG=C.UTF-8" "XDG_RUNTIME_DIR=$dir/xdg")

	# "ready PORT" from a bench/egress server or relay started in the background.
	ready_port() {
		local p
		for _ in $(seq 50); do
			p=$(sed -n 's/^ready //p' "$1")
			[ -n "$p" ] && { echo "$p"; return 0; }
			sleep 0.1
		done
		echo "egress: $(basename "$1" .out) did not start: $(head -c 300 "$1")" >>"$notes"
		return 1
	}
	"${as_agent[@]}" "$dir/ws/egress" serve 127.0.0.2 0 >"$dir/server.out" 2>&1 &
	spid=$!
	eg_pids+=("$spid")
	port=$(ready_port "$dir/server.out") || return 1
	"${as_agent[@]}" "$dir/ws/egress" relay 127.0.0.3 0 127.0.0.2 "$port" >"$dir/relay.out" 2>&1 &
	rpid=$!
	eg_pids+=("$rpid")
	rport=$(ready_port "$dir/relay.out") || return 1
	cat >"$conf" <<-CONF
		[global]
		egress_socket = $sock
		[profile bench]
		workspace_root = $dir/ws
		network = proxy
		egress_allow = 127.0.0.2:$port
		[match]
		user $au = bench
	CONF
	chmod 0644 "$conf"
	"$daemon" --config "$conf" --socket "$sock" --user "$du" --log-stderr 2>"$dir/daemon.log" &
	dpid=$!
	eg_pids+=("$dpid")
	for _ in $(seq 50); do
		[ -S "$sock" ] && break
		sleep 0.1
	done
	if [ ! -S "$sock" ]; then
		echo "egress: the daemon did not start: $(head -c 300 "$dir/daemon.log")" >>"$notes"
		return 1
	fi

	# One row of one run: "test via run" -> its JSON line with the CPU
	# figures and the load added, appended to $raw.
	local clk busy0 busy1 d0 d1 s0 s1 args line mid
	clk=$(getconf CLK_TCK)
	proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
	busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
	one_run() {
		test=$1 via=$2
		args=("$dir/ws/egress" "$test" 127.0.0.2 "$port")
		mid=$dpid
		if [ "$via" = relay ]; then
			args=("$dir/ws/egress" "$test" 127.0.0.3 "$rport")
			mid=$rpid
		fi
		if [ "$test" = latency ]; then args+=("$EGRESS_CONNS"); else args+=("$EGRESS_BYTES"); fi
		d0=$(proc_ticks "$mid") s0=$(proc_ticks "$spid") busy0=$(busy_ticks)
		if [ "$via" = proxy ]; then
			line=$("${as_agent[@]}" "${agent_env[@]}" "SBX_TEST_CONFIG=$conf" "$testable" \
				--run -- "${args[@]}" --via 127.0.0.1:3128 2>"$dir/client.err")
		else
			line=$("${as_agent[@]}" "${agent_env[@]}" "${args[@]}" 2>"$dir/client.err")
		fi
		d1=$(proc_ticks "$mid") s1=$(proc_ticks "$spid") busy1=$(busy_ticks)
		if ! jq -e . >/dev/null 2>&1 <<<"$line"; then
			echo "egress $test $via: failed: $(grep -v 'no syslog daemon' "$dir/client.err" | head -c 300)" >>"$notes"
			kill -0 "$dpid" 2>/dev/null || echo "egress: the daemon (pid $dpid) is gone" >>"$notes"
			return 1
		fi
		jq -c --arg via "$via" --argjson run "$3" --argjson m "$((d1 - d0))" \
			--argjson s "$((s1 - s0))" --argjson b "$((busy1 - busy0))" --argjson clk "$clk" \
			--arg load "$(cut -d' ' -f1 /proc/loadavg)" \
			'. + { via: $via, run: $run, server_cpu_s: ($s / $clk),
			       machine_busy_cpu_s: ($b / $clk), load1: ($load | tonumber) }
			 + (if $via == "direct" then {} else { middle_cpu_s: ($m / $clk) } end)
			 | . + { other_cpu_s: (.machine_busy_cpu_s - .client_cpu_s - .server_cpu_s
			                       - (.middle_cpu_s // 0)) }' \
			<<<"$line" >>"$raw"
	}
	: >"$raw"
	local eg_load_before eg_load_after eg_idle_busy
	eg_load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	# What else runs: the machine's busy CPU over 2 s before the rows.
	busy0=$(busy_ticks)
	sleep 2
	busy1=$(busy_ticks)
	eg_idle_busy=$(awk -v t=$((busy1 - busy0)) -v c="$clk" 'BEGIN { printf "%.2f", t / c / 2 }')
	rows=(direct relay proxy)
	for ((i = 1; i <= EGRESS_RUNS; i++)); do
		for test in upload download latency; do
			for via in "${rows[@]}"; do
				one_run "$test" "$via" "$i" || return 1
			done
		done
		rows=("${rows[@]:1}" "${rows[0]}")
	done
	eg_load_after=$(cut -d' ' -f1-3 /proc/loadavg)
	# Every proxied connection is one allowed decision in the daemon's log.
	f=$(grep -c 'verdict=allowed' "$dir/daemon.log")
	if [ "$f" -ne $((EGRESS_RUNS * (2 + EGRESS_CONNS))) ]; then
		echo "egress: the daemon logged $f allowed connections, not $((EGRESS_RUNS * (2 + EGRESS_CONNS)))" >>"$notes"
	fi
	jq -s . "$raw" >"$out/egress.json"
	jq -r --arg bytes "$EGRESS_BYTES" --arg runs "$EGRESS_RUNS" --arg conns "$EGRESS_CONNS" '
	  def median: sort | if length % 2 == 1 then .[(length - 1) / 2]
	                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	  def f0: round | tostring;
	  def f2: (. * 100 | round) as $c | if $c == 0 then "0.0"
	          else $c / 100 | tostring | if test("\\.") then . else . + ".0" end end;
	  def rows(t; v): map(select(.test == t and .via == v));
	  def spread: "\(median | f0) (\(min | f0)–\(max | f0))";
	  def pct(a; b): "\(a / b * 100 | f0)%";
	  def q(p): .[(length * p) | floor];
	  . as $all
	  | "| \($bytes | tonumber / 1048576 | f0) MiB, \($runs) runs; MiB/s median (min–max) | direct TCP | splice relay | proxy session | proxy / direct | proxy / relay |",
	    "|---|---|---|---|---|---|",
	    ( ("upload", "download") as $t
	      | [("direct", "relay", "proxy") as $v | $all | rows($t; $v) | map(.mib_per_s)] as [$d, $r, $p]
	      | "| \($t) | \($d | spread) | \($r | spread) | \($p | spread) | \(pct($p | median; $d | median)) | \(pct($p | median; $r | median)) |" ),
	    "",
	    "| connect to first byte back, µs: median (p10–p90) of \($runs) × \($conns) | direct TCP | splice relay | proxy session | proxy − direct | proxy − relay |",
	    "|---|---|---|---|---|---|",
	    ( [("direct", "relay", "proxy") as $v | $all | rows("latency"; $v) | map(.samples_us[]) | sort] as [$d, $r, $p]
	      | "| latency | \($d | median | f0) (\($d | q(0.1) | f0)–\($d | q(0.9) | f0)) | \($r | median | f0) (\($r | q(0.1) | f0)–\($r | q(0.9) | f0)) | \($p | median | f0) (\($p | q(0.1) | f0)–\($p | q(0.9) | f0)) | +\(($p | median) - ($d | median) | f0) | +\(($p | median) - ($r | median) | f0) |" ),
	    "",
	    "| CPU s per run, median | client | server | relay or daemon | whole machine busy | other |",
	    "|---|---|---|---|---|---|",
	    ( ("upload", "download", "latency") as $t | ("direct", "relay", "proxy") as $v
	      | ($all | rows($t; $v)) as $x
	      | "| \($t), \($v) | \($x | map(.client_cpu_s) | median | f2) | \($x | map(.server_cpu_s) | median | f2) | \(if $v == "direct" then "" else $x | map(.middle_cpu_s) | median | f2 end) | \($x | map(.machine_busy_cpu_s) | median | f2) | \($x | map(.other_cpu_s) | median | f2) |" ),
	    "",
	    "load average (1 min) sampled after each row: \($all | map(.load1) | min)–\($all | map(.load1) | max)"
	' "$out/egress.json" >"$out/egress.md"
	echo
	echo "=== network = proxy: $((EGRESS_BYTES / 1048576)) MiB up and down, and connect latency; a session through agent-sandbox-egressd vs direct loopback TCP and a bare splice relay"
	echo "  load average $eg_load_before before, $eg_load_after after; CPUs busy in the 2 s before: $eg_idle_busy"
	echo "$eg_idle_busy" >"$out/egress-busy-before.txt"
	cat "$out/egress.md"
	# Other work took a tenth of the direct and relay transfer rows' CPU
	# (a proxy row's other includes the session's start-up), or a fifth
	# of a CPU before they started: the figures measure it too.
	if jq -e '[.[] | select(.test != "latency" and .via != "proxy")
		   | .other_cpu_s / .machine_busy_cpu_s] | sort
		  | .[length / 2 | floor] > 0.1' "$out/egress.json" >/dev/null ||
		awk -v b="$eg_idle_busy" 'BEGIN { exit !(b > 0.2) }'; then
		echo "WARNING: other work ran during the egress rows (the other column, and $eg_idle_busy CPUs busy before): re-run on a quiet machine for citable numbers."
	fi
	grep -v 'verdict=allowed\|listening on' "$dir/daemon.log" | head -n 5 >>"$notes"
	return 0
}

# --- sessions at scale and real work: bench/scale.sh ---------------------
scale_bench() {
	if ! $is_root; then
		echo "scale: needs root (a throwaway account); skipped" >>"$notes"
		return 0
	fi
	echo
	echo "=== real workloads and concurrent sessions (bench/scale.sh)"
	"$(dirname "$0")/scale.sh" "$build" "$out" || echo "scale: failed" >>"$notes"
}

# --- preflight: each command once, as the agent; failures are recorded ---

notes="$out/notes.txt"
: >"$notes"
if [ "$only" = egress ]; then
	egress_bench || exit 1
	[ -s "$notes" ] && { echo; echo "=== notes"; cat "$notes"; }
	mkdir -p "$results"
	cp "$out/egress.md" "$out/egress.json" "$notes" "$results/"
	echo
	echo "results: $results/ (egress.md, egress.json, notes.txt)"
	exit 0
fi
if [ "$only" = scale ]; then
	scale_bench
	[ -s "$notes" ] && { echo; echo "=== notes"; cat "$notes"; }
	mkdir -p "$results"
	cp "$out/scale.md" "$out/scale.json" "$notes" "$results/" 2>/dev/null
	echo
	echo "results: $results/ (scale.md, scale.json, notes.txt)"
	exit 0
fi
if [ "$only" = syscalls ]; then
	syscall_bench || exit 1
	[ -s "$notes" ] && { echo; echo "=== notes"; cat "$notes"; }
	mkdir -p "$results"
	cp "$out/syscalls.md" "$out/syscalls.txt" "$notes" "$results/"
	echo
	echo "results: $results/ (syscalls.md, syscalls.txt, notes.txt)"
	exit 0
fi
main_args=() fj_args=() fj_user=""
preflight() {	# $1 name, $2 who, $3 command, $4.. run_as prefix
	local name=$1 who=$2 cmd=$3 rc
	shift 3
	"$@" "${clean_env[@]}" timeout 20 bash -c "exec $cmd" >"$out/preflight.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		printf '%s: exit %d as %s: %s\n' "$name" "$rc" "$who" \
			"$(tr '\n' ' ' <"$out/preflight.out" | cut -c1-300)" >>"$notes"
	fi
	return $rc
}

group=main
decomp_names=()
for e in "${entries[@]}"; do
	if [ "$e" = "--" ]; then
		group=decomp
		continue
	fi
	name=${e%%|*}
	cmd=${e#*|}
	tool=${cmd%% *}
	case $tool in
	bwrap | firejail | unshare)
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "$name: not measured, $tool not installed" >>"$notes"
			continue
		fi ;;
	esac
	if [ "$tool" = firejail ]; then
		fu=$FIREJAIL_FALLBACK_USER
		if preflight "$name" "$agent" "$cmd" "${run_as[@]}"; then
			fj_user=$agent
		elif $is_root && id "$fu" >/dev/null 2>&1 &&
			preflight "$name" "$fu" "$cmd" setpriv --reuid="$fu" \
				--regid="$(id -g "$fu")" --clear-groups --; then
			fj_user=$fu
			echo "$name: measured as $fu instead (uid $(id -u "$fu"), unprivileged)" >>"$notes"
		fi
		[ -n "$fj_user" ] && fj_args+=(-n "$name (as $fj_user)" "$cmd")
		continue
	fi
	preflight "$name" "$agent" "$cmd" "${run_as[@]}" || continue
	main_args+=(-n "$name" "$cmd")
	[ $group = decomp ] && decomp_names+=("$name")
done

# --- the measurement ----------------------------------------------------

nproc_n=$(nproc)
kernel=$(uname -r)
cpu=$(LC_ALL=C lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "agent-sandbox bench: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "  machine: $nproc_n CPUs (${cpu:-unknown}), kernel $kernel, load $load_before"
echo "  tools:   $("$shell_bin" --version), $(hyperfine --version)," \
	"$(bwrap --version 2>/dev/null || echo 'no bwrap'), $(firejail --version 2>/dev/null | head -n1 || echo 'no firejail')"
echo "  as:      $agent (firejail: ${fj_user:-not measured}); warmup $WARMUP, min-runs $MIN_RUNS, no shell (-N)"
echo

hf=(hyperfine -N --warmup "$WARMUP" --min-runs "$MIN_RUNS" --style basic)
"${run_as[@]}" "${clean_env[@]}" "${hf[@]}" --export-json "$out/main.json" \
	--export-markdown "$out/main.md" "${main_args[@]}" || {
	# A sandbox that fails now and then is a finding, not noise: find
	# which command and keep its message.
	echo "bench: hyperfine stopped on a failed run; looking for the failure (up to 200 runs each)" >&2
	for ((k = 1; k < ${#main_args[@]}; k += 3)); do
		for _ in $(seq 200); do
			"${run_as[@]}" "${clean_env[@]}" bash -c "exec ${main_args[k + 1]}" \
				>/dev/null 2>"$out/fail.err"
			rc=$?
			if [ $rc -ne 0 ]; then
				echo "bench: '${main_args[k]}' failed (exit $rc): $(head -c 600 "$out/fail.err")" >&2
				break
			fi
		done
	done
	exit 1
}
if [ ${#fj_args[@]} -gt 0 ]; then
	fj_run=()
	[ "$fj_user" != "$agent" ] && fj_run=(setpriv --reuid="$fj_user" \
		--regid="$(id -g "$fj_user")" --clear-groups --)
	[ "$fj_user" = "$agent" ] && fj_run=("${run_as[@]}")
	"${fj_run[@]}" "${clean_env[@]}" "${hf[@]}" --export-json "$out/firejail.json" \
		--export-markdown "$out/firejail.md" "${fj_args[@]}" ||
		echo "firejail: hyperfine failed" >>"$notes"
fi

# The login path: ssh host true through a private sshd, with and without
# the module, and the probe cache (bench/ssh.sh; root only). BASE_BUILD=DIR
# (another tree's build directory) adds its agent rows in the same rounds.
if $is_root; then
	echo
	echo "=== ssh host true through a private sshd on loopback (bench/ssh.sh)"
	"$(dirname "$0")/ssh.sh" "$build" "$out" "$MIN_RUNS" "$WARMUP" ${BASE_BUILD:+"$BASE_BUILD"} ||
		echo "ssh bench: failed (see above)" >>"$notes"
fi

load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- summary table --------------------------------------------------------

parts=("$out/main.json")
[ -s "$out/firejail.json" ] && parts+=("$out/firejail.json")
jq -s '{results: (map(.results) | add)}' "${parts[@]}" >"$out/results.json"
decomp_json=$(printf '%s\n' "${decomp_names[@]}" | jq -R . | jq -s .)
table() {	# $1 filter: "main" or "decomp"
	jq -r --arg g "$1" --argjson decomp "$decomp_json" '
	  def ms: . * 1000 * 100 | round / 100;
	  def f: ms | tostring | if test("\\.") then . else . + ".0" end;
	  (.results[] | select(.command == "bash -c true") | .median) as $base
	  | .results[]
	  | (.command as $c | $decomp | any(. == $c)) as $in_decomp
	  | select(($g == "decomp") == $in_decomp)
	  | "| \(.command) | \(.mean | f) ± \(.stddev | f) | \(.median | f) | \(.min | f) | \(.max | f) | \(.median / $base * 100 | round / 100)× |"
	' "$out/results.json"
}
{
	echo "| command | mean ± σ (ms) | median (ms) | min (ms) | max (ms) | median vs bash -c true |"
	echo "|---|---|---|---|---|---|"
	table main
	echo
	echo "Decomposition (where agent-shell's time goes):"
	echo
	echo "| command | mean ± σ (ms) | median (ms) | min (ms) | max (ms) | median vs bash -c true |"
	echo "|---|---|---|---|---|---|"
	table decomp
	if [ -s "$out/ssh.md" ]; then
		echo
		echo "Login path (bench/ssh.sh: a private sshd on loopback, key auth, a new connection each run;"
		echo "agent-shell --run as the agent in the same world):"
		echo
		cat "$out/ssh.md"
	fi
} >"$out/summary.md"
echo
echo "=== summary (wall-clock ms per run)"
cat "$out/summary.md"
if [ -s "$notes" ]; then
	echo
	echo "=== notes"
	cat "$notes"
fi

# --- where agent-shell's time goes ---------------------------------------

sh_cmd=("$shell_bin" --run --workspace "$ws" -- /bin/true)
bw_cmd=(bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc
	--tmpfs /tmp --bind "$ws" "$ws" --new-session /bin/true)
if command -v perf >/dev/null 2>&1 && perf stat -e task-clock true >/dev/null 2>&1; then
	echo
	echo "=== perf stat -r 30 (software counters; CPU time summed over every process of a run)"
	for which in agent-shell bwrap; do
		if [ $which = agent-shell ]; then c=("${sh_cmd[@]}"); else c=("${bw_cmd[@]}"); fi
		command -v "${c[0]}" >/dev/null 2>&1 || continue
		perf stat -x, -r 30 -e task-clock,context-switches,cpu-migrations,page-faults \
			-- "${run_as[@]}" "${clean_env[@]}" "${c[@]}" 2>"$out/perf-$which.csv" >/dev/null
		awk -F, -v w="$which" '
			$3 == "task-clock" { printf "%-12s task-clock %.2f ms", w, $1 }
			$3 == "context-switches" { printf ", %d context switches", $1 }
			$3 == "cpu-migrations" { printf ", %d migrations", $1 }
			$3 == "page-faults" { printf ", %d page faults\n", $1 }' "$out/perf-$which.csv"
	done
else
	echo
	echo "=== perf stat: not available here (install linux-perf for CPU-time counters)"
fi

# Phase timeline of agent-shell from kernel tracepoints (perf record; a few
# microseconds per event, unlike strace): median over 15 runs of the time
# since agent-shell's exec at which each phase ends.
tp_events=(sched:sched_process_exec sched:sched_process_fork sched:sched_process_exit
	syscalls:sys_enter_landlock_create_ruleset syscalls:sys_enter_clone
	syscalls:sys_enter_mount
	syscalls:sys_enter_landlock_restrict_self syscalls:sys_enter_seccomp
	syscalls:sys_exit_seccomp syscalls:sys_enter_exit_group)
# One run's perf script (comm,pid,time,event,trace) -> "label|ms since exec".
phases_awk=$(cat <<'AWK'
function mark(label, t) { if (!(label in seen)) { seen[label] = 1; printf "%s|%.3f\n", label, (t - t0) * 1000 } }
{ pid = $2; t = $3; sub(/:$/, "", t); ev = $4; sub(/:$/, "", ev) }
ev == "sched:sched_process_exec" && t0 == "" && /filename=.*agent-shell /{ t0 = t; outer = pid; next }
t0 == "" { next }
# The kernel facts are read first (Landlock's ABI); the init is the outer's
# child cloned with CLONE_NEWUSER (0x10000000); any child of the outer
# before it is a probe child (none on the direct path).
ev == "syscalls:sys_enter_landlock_create_ruleset" && pid == outer { mark("a start-up: loader, NSS, config, profile -> the kernel facts", t) }
ev == "syscalls:sys_enter_clone" && pid == outer && match($0, /clone_flags: 0x[0-9a-f]+/) {
	h = substr($0, RSTART + 15, RLENGTH - 15)
	if (length(h) >= 8 && index("13579bdf", substr(h, length(h) - 7, 1))) { want_init = 1; mark("c kernel facts (and any probe child), session plans -> clone the init into its namespaces", t) }
}
ev == "sched:sched_process_fork" {
	match($0, /child_pid=[0-9]+/); child = substr($0, RSTART + 10, RLENGTH - 10)
	if (pid == outer && want_init && init == "") init = child
	else if (pid == outer && init == "") probe = child
	else if (pid == init) { kid[child] = 1; mark("g init: mount view built -> fork the unix supervisor and the worker", t) }
}
ev == "sched:sched_process_exit" && pid == probe { mark("b kernel probe child (unshare each namespace, one netns) exits", t) }
ev == "syscalls:sys_enter_mount" && pid == init { mark("f init: its uid map, lo up -> first mount", t) }
ev == "syscalls:sys_enter_landlock_restrict_self" && (pid in kid) { wk = pid; mark("h worker: caps dropped+verified, NNP, Landlock ruleset -> restrict_self", t) }
ev == "syscalls:sys_enter_seccomp" && pid == wk && /op: 0x00000001, flags: 0x[0-9a-f]*, uargs: 0x[0-9a-f]*[1-9a-f]/ { want_sc = 1 }
ev == "syscalls:sys_exit_seccomp" && pid == wk && want_sc { want_sc = 0; mark("i worker: rlimits, fds, the filter emitted + loaded", t) }
ev == "sched:sched_process_exec" && pid == wk { mark("l worker: report to outer -> exec the command", t) }
ev == "sched:sched_process_exit" && pid == wk { mark("m the command runs and exits", t) }
ev == "syscalls:sys_enter_exit_group" && pid == outer { mark("n init reaps, outer logs/saves report, waits, exits", t) }
AWK
)
if $is_root && command -v perf >/dev/null 2>&1 &&
	perf record -q -o "$out/tp.test" -e sched:sched_process_exec -- true >/dev/null 2>&1; then
	for _ in $(seq 15); do
		perf record -q -o "$out/tp.data" "${tp_events[@]/#/-e}" -- \
			"${run_as[@]}" "${clean_env[@]}" "${sh_cmd[@]}" >/dev/null 2>&1 || continue
		perf script -i "$out/tp.data" -F comm,pid,time,event,trace 2>/dev/null |
			awk "$phases_awk"
	done | sort -t'|' -k1,1 -k2,2n | awk -F'|' '
		{ v[$1, ++n[$1]] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
		END {
			printf "\n=== agent-shell --run -- /bin/true, phase ends in ms since its exec (median of 15 runs under perf record)\n"
			prev = 0
			for (i = 1; i <= k; i++) {
				l = order[i]; c = n[l]
				m = (c % 2) ? v[l, (c + 1) / 2] : (v[l, c / 2] + v[l, c / 2 + 1]) / 2
				printf "  %6.2f  (+%5.2f)  %s\n", m, m - prev, substr(l, 3); prev = m
			}
		}' | tee "$out/timeline.txt"
else
	echo
	echo "=== phase timeline: needs root and perf with tracepoints (linux-perf); skipped"
fi

syscall_bench
egress_bench
scale_bench

mkdir -p "$results"
cp "$out/main.json" "$out/main.md" "$out/results.json" "$out/summary.md" "$notes" "$results/"
for f in firejail.json firejail.md timeline.txt perf-agent-shell.csv perf-bwrap.csv \
	syscalls.md syscalls.txt ssh.json ssh.md egress.md egress.json scale.md scale.json; do
	[ -e "$out/$f" ] && cp "$out/$f" "$results/"
done
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "machine: $nproc_n CPUs (${cpu:-unknown}), kernel $kernel, load before $load_before, after $load_after"
	echo "agent: $agent; firejail as: ${fj_user:-not measured}"
} >"$results/machine.txt"
# A benchmark on a busy machine measures the other work too: say so.
if awk -v a="${load_before%% *}" -v b="${load_after%% *}" -v n="$nproc_n" 'BEGIN { exit !(a > n / 2 || b > n / 2) }'; then
	echo
	echo "WARNING: load average $load_before before, $load_after after, on $nproc_n CPUs:" \
		"other work competed with this run; re-run on a quiet machine for citable numbers."
fi
echo
echo "results: $results/ (main.json, main.md, results.json, summary.md, timeline.txt, notes.txt, egress.md, egress.json, scale.md, scale.json)"
