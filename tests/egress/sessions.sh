# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/egress/run.sh once the daemon and the servers run: whole
# network = proxy sessions as the agent $SX (profile sx), each refusal
# beside its control. Uses T C S SX P1 P2 PG DPID, logline, ok, bad.
AS=$SRC/$BUILD/tests/agent-shell-testable
CA=$T/cert.pem
# One confined session: sh -c SCRIPT inside, as the agent; its output
# (stderr too, but agent-shell's note that no syslog daemon listens here).
# The session id goes to ws/.sid, for report_json.
sbx() {
	runuser -u "$SX" -- env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" \
		SBX_TEST_CONFIG="$C/agent-sandbox.conf" "$AS" --run -- /bin/sh -c \
		"echo \"\$AGENT_SANDBOX_SESSION\" >$T/ws/.sid; $1" 2>&1 |
		grep -v '^agent-shell: warning: no syslog daemon listens'
}
# The last session's report, as its agent reads it.
report_json() {
	runuser -u "$SX" -- env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" \
		SBX_TEST_CONFIG="$C/agent-sandbox.conf" "$AS" --report --json "$(cat "$T/ws/.sid")"
}
# A python check over the last report: report_has 'EXPR' (r is the report).
report_has() {
	report_json >"$T/r.json" 2>"$T/r.err" || { echo "no report: $(cat "$T/r.err")"; return 1; }
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/r.json" 2>/dev/null || { echo "not JSON: $(head -c 300 "$T/r.json")"; return 1; }
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); e={x["feature"]:x for x in r["entries"]}
ok = '"$1"'
print("" if ok else json.dumps({"guarantees": r["guarantees"], "egress": r.get("egress"), "network_egress": e.get("network_egress"), "level": r["level"]}))
sys.exit(0 if ok else 1)' "$T/r.json" 2>&1
}
# The daemon as it runs on a host: no direct clients; max_per_uid 8, so
# that a session can hold all of its uid's slots within a test.
start_daemon() {	# [daemon options]
	"$D" --config "$C/agent-sandbox.conf" --user "$DU" --handshake-timeout 3000 --log-stderr \
		--max-per-uid 8 --half-closed-timeout 1000 "$@" 2>>"$T/daemon.log" &
	DPID=$!
	PIDS="$PIDS $DPID"
	for _ in $(seq 50); do
		[ -S "$S" ] && grep -q "listening on" "$T/daemon.log" && break
		sleep 0.1
	done
}
kill "$DPID"
wait "$DPID" 2>/dev/null
: >"$T/daemon.log"
start_daemon

# Without --allow-direct, a client that speaks on the socket itself (an
# agent uid's own code outside any sandbox) has no session to hold it to.
out=$(curl_via "$AP" "https://127.0.0.1:$P1/")
line=$(grep "user=$AP " "$T/daemon.log" | tail -n 1)
case "$out/$line" in
*"ok $P1"*) bad "daemon: a direct client is not served" "went through" ;;
*"verdict=refused"*"no bridge hello"*) ok "daemon: a direct client is not served" ;;
*) bad "daemon: a direct client is not served" "$line / $out" ;;
esac

# ---- allowed, and what the session sees ----------------------------------------------
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P1/")
line=$(logline 127.0.0.2 "$P1")
case "$out/$line" in
"ok $P1/"*"session="*"user=$SX"*"verdict=allowed"*) ok "session: curl https to a listed address, through the bridge" ;;
*) bad "session: curl https to a listed address, through the bridge" "$out / $line" ;;
esac
if why=$(report_has 'e["network_egress"]["achieved"] and e["network_egress"]["verified"] and "network_egress" in r["guarantees"] and "network_boundary" not in r["guarantees"] and r["egress"]["list"] == ["127.0.0.2:'"$P1"'", "127.0.0.2:'"$PG"'", "localhost:'"$P2"'", "*.example.invalid:'"$P1"'", "127.0.0.2:'"$PH"'"] and r["egress"]["allowed"] == 1 and r["egress"]["refused"] == 0 and r["level"] == "full"'); then
	ok "session: report lists the egress list, network_egress verified, the count"
else
	bad "session: report lists the egress list, network_egress verified, the count" "$why"
fi
# The session's environment points every client at the bridge, and nothing
# but the bridge's port answers on its loopback.
out=$(sbx 'echo "$https_proxy $ALL_PROXY $NO_PROXY"')
case "$out" in
*"http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1,::1"*) ok "session: proxy variables set" ;;
*) bad "session: proxy variables set" "$out" ;;
esac

out=$(sbx "git -c http.sslCAInfo=$CA clone -q https://127.0.0.2:$PG/repo.git \$HOME/r && cat \$HOME/r/README")
case "$out" in
*"through the proxy"*) ok "session: git clone over https through the proxy" ;;
*) bad "session: git clone over https through the proxy" "$out" ;;
esac
out=$(sbx "cd \$HOME && pip3 download -q --no-deps --disable-pip-version-check --cert $CA \
	--index-url https://127.0.0.2:$PG/simple/ sbxprobe && ls \$HOME")
case "$out" in
*"sbxprobe-1.0-py3-none-any.whl"*) ok "session: pip download from an index a literal entry names" ;;
*) bad "session: pip download from an index a literal entry names" "$out" ;;
esac

# ---- refused from inside, each with its control above --------------------------------
# A refusal the daemon logged for a session (its line names one).
expect_session_refused() { expect_refused "$@" "session="; }
direct=$(curl -sS --max-time 5 --cacert "$CA" "https://127.0.0.2:$P2/" 2>&1)
[ "$direct" = "ok $P2" ] && ok "control: 127.0.0.2:$P2 answers from the host" ||
	bad "control: 127.0.0.2:$P2 answers from the host" "$direct"
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P2/")
expect_session_refused "session: a listed address on another port" 127.0.0.2 "$P2" "address not listed" "$out"
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.3:$P1/")
expect_session_refused "session: a literal address not listed" 127.0.0.3 "$P1" "address not listed" "$out"
out=$(sbx "curl -sS --max-time 8 https://other.example.org:$P1/")
expect_session_refused "session: a name not listed" other.example.org "$P1" "host:port not listed" "$out"
out=$(sbx "curl -sS --max-time 8 --proxytunnel http://169.254.169.254/latest/meta-data/")
expect_session_refused "session: the metadata address" 169.254.169.254 80 "address not listed" "$out"
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://localhost:$P2/")
# localhost is in NO_PROXY: curl goes to the sandbox's own loopback, where
# nothing listens; through the proxy explicitly, the name is refused.
case "$out" in
*"ok $P2"*) bad "session: localhost is the sandbox's own" "went through: $out" ;;
*"Failed to connect"*|*"Couldn't connect"*) ok "session: localhost is the sandbox's own" ;;
*) bad "session: localhost is the sandbox's own" "$out" ;;
esac
out=$(sbx "curl -sS --max-time 8 --cacert $CA --noproxy '' https://localhost:$P2/")
expect_session_refused "session: a listed name that resolves to loopback" localhost "$P2" \
	"resolves to loopback address" "$out"
out=$(sbx "curl -sS --max-time 8 --cacert $CA -x socks5://127.0.0.1:3128 \
	--resolve other.example:$P1:127.0.0.2 https://other.example:$P1/")
expect_session_refused "session: TLS server name other than the requested host" 127.0.0.2 "$P1" \
	"TLS server name other.example is not the requested host" "$out"
before=$(grep -c "http method other than CONNECT" "$T/daemon.log")
out=$(sbx "curl -sS --max-time 8 -o /dev/null -w '%{http_code}' http://127.0.0.2:$P1/")
after=$(grep -c "http method other than CONNECT" "$T/daemon.log")
[ "$out" = "405" ] && [ "$after" -gt "$before" ] && ok "session: plain HTTP through the proxy is refused (405)" ||
	bad "session: plain HTTP through the proxy is refused (405)" "$out"

# ---- the proxy's other side, tried directly from inside --------------------------------
out=$(sbx "curl -sS --max-time 5 --noproxy '*' --cacert $CA https://127.0.0.2:$P1/; echo rc=\$?")
case "$out" in
*"ok $P1"*) bad "session: the upstream directly, bypassing the proxy" "went through: $out" ;;
*"rc=7"*) ok "session: the upstream directly, bypassing the proxy (connection refused)" ;;
*) bad "session: the upstream directly, bypassing the proxy" "$out" ;;
esac
out=$(sbx "python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print(\"connected\")
except OSError as e:
    print(\"refused\", e.errno)' $S")
case "$out" in
*connected*) bad "session: the daemon's socket directly" "$out" ;;
"refused 2"*) ok "session: the daemon's socket directly (ENOENT: not in the sandbox's view)" ;;
*) bad "session: the daemon's socket directly" "$out" ;;
esac
out=$(sbx "python3 -c 'import socket,sys
s=socket.socket(socket.AF_INET6)
try:
    s.connect((\"::1\", 3128)); print(\"connected\")
except OSError as e:
    print(\"refused\", e.errno)'")
case "$out" in
*"refused"*) ok "session: the bridge listens on 127.0.0.1 only" ;;
*) bad "session: the bridge listens on 127.0.0.1 only" "$out" ;;
esac

# The counts of one session that was allowed once and refused twice.
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P1/ >/dev/null;
	curl -sS --max-time 8 https://127.0.0.3:$P1/; curl -sS --max-time 8 https://nope.invalid/")
if why=$(report_has 'r["egress"]["allowed"] == 1 and r["egress"]["refused"] == 2 and r["egress"]["failed"] == 0 and "exit_status" in r'); then
	ok "session: the report's counts at the end (1 allowed, 2 refused)"
else
	bad "session: the report's counts at the end (1 allowed, 2 refused)" "$why / $out"
fi

# ---- the prediction ---------------------------------------------------------------------
SBX_TEST_CONFIG="$C/agent-sandbox.conf" "$AS" --explain "$SX" --json >"$T/explain.json" 2>"$T/explain.err"
sbx true >/dev/null
report_json >"$T/real.json"
why=$(python3 - "$T/explain.json" "$T/real.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["predicted_report"]
b = json.load(open(sys.argv[2]))
ea = {e["feature"]: (e["requested"], e["achieved"]) for e in a["entries"]}
eb = {e["feature"]: (e["requested"], e["achieved"] and e["verified"]) for e in b["entries"]}
diff = [f for f in ea if ea[f] != eb.get(f)]
if (a["level"], sorted(a["guarantees"])) != (b["level"], sorted(b["guarantees"])):
    diff.append("level/guarantees")
if a["egress"]["list"] != b["egress"]["list"]:
    diff.append("egress list")
print(", ".join(diff))
PY
)
if [ -z "$why" ] && grep -q '"network_egress","requested":true,"achieved":true' "$T/explain.json"; then
	ok "explain: the prediction (daemon answering) equals the real report"
else
	bad "explain: the prediction (daemon answering) equals the real report" "${why:-$(head -c 300 "$T/explain.err")}"
fi

# ---- the list changed under a running session -------------------------------------------
# The session waits for a file of the test's, then asks for its one listed
# address; meanwhile the config gains an entry and the daemon reloads.
rm -f "$T/ws/go"
sbx "while [ ! -e $T/ws/go ]; do sleep 0.1; done;
	curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P1/" >"$T/stale.out" 2>&1 &
stale=$!
sleep 1
cp "$C/agent-sandbox.conf" "$C/orig.conf"
sed -i "s|^egress_allow = 127.0.0.2:$PG\$|&\negress_allow = 127.0.0.9:$PG|" "$C/agent-sandbox.conf"
kill -HUP "$DPID"
sleep 1.5
touch "$T/ws/go"
wait "$stale"
line=$(logline 127.0.0.2 "$P1")
case "$(cat "$T/stale.out")/$line" in
*"ok $P1"*) bad "session: a list changed since the session started is refused" "went through" ;;
*"verdict=refused"*"changed since the session started"*)
	ok "session: a list changed since the session started is refused" ;;
*) bad "session: a list changed since the session started is refused" "$line / $(cat "$T/stale.out")" ;;
esac
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P1/")
[ "$out" = "ok $P1" ] && ok "control: a session started after the reload gets through" ||
	bad "control: a session started after the reload gets through" "$out"
cp "$C/orig.conf" "$C/agent-sandbox.conf"
kill -HUP "$DPID"
sleep 1

# ---- what an attacker's review found, each a regression test ----------------------------
# fd 0: the overflow path once closed (and wrote to) the daemon's fd 0,
# which a later connection's pipe or socket then was. Over max_conns, as a
# uid with no profile, many times; fd 0 stays /dev/null and the daemon
# serves the agent after it.
kill "$DPID"; wait "$DPID" 2>/dev/null
start_daemon --max-conns 3 --allow-direct
fd0_before=$(readlink "/proc/$DPID/fd/0")
hold=$(runuser -u "$AP" -- python3 -c 'import socket,sys,time
ss=[]
for i in range(3):
    s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); ss.append(s)
time.sleep(0.3)
n=0
for i in range(40):
    s=socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1]); s.settimeout(1); n += s.recv(1) == b""
    except OSError: n += 1
print(n)' "$S")
sleep 0.2
fd0_after=$(readlink "/proc/$DPID/fd/0")
out=$(curl_via "$AP" "https://127.0.0.1:$P1/")
if [ "$fd0_before" = /dev/null ] && [ "$fd0_after" = /dev/null ] && [ "$out" = "ok $P1" ] &&
	grep -q "too many connections" "$T/daemon.log"; then
	ok "daemon: over max_conns, fd 0 stays /dev/null and service goes on ($hold refused)"
else
	bad "daemon: over max_conns, fd 0 stays /dev/null and service goes on" \
		"fd0 $fd0_before -> $fd0_after, after: $out, refused $hold"
fi
kill "$DPID"; wait "$DPID" 2>/dev/null
# The open-file limit: a relay holds about six fds; max_conns comes down to
# what RLIMIT_NOFILE allows, said at start.
prlimit --nofile=256:256 "$D" --config "$C/agent-sandbox.conf" --socket "$T/lim.sock" \
	--log-stderr 2>"$T/lim.log" &
lim=$!
# Until it says so (a sanitizer build under load took longer than the
# half second this once slept), at most 10 s.
for _ in $(seq 100); do
	grep -q "RLIMIT_NOFILE 256" "$T/lim.log" 2>/dev/null && break
	kill -0 "$lim" 2>/dev/null || break
	sleep 0.1
done
kill "$lim"; wait "$lim" 2>/dev/null
grep -q "RLIMIT_NOFILE 256: at most 32 connections" "$T/lim.log" &&
	ok "daemon: max_conns fits RLIMIT_NOFILE" || bad "daemon: max_conns fits RLIMIT_NOFILE" "$(cat "$T/lim.log")"
start_daemon

# A uid with no profile: refused before any byte is read, and its lines
# bounded (once a second, with the count of the others).
before=$(grep -c "user=$NA " "$T/daemon.log")
runuser -u "$NA" -- python3 -c 'import socket,sys
for i in range(200):
    s=socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1]); s.settimeout(2); s.recv(1)
    except OSError: pass' "$S"
after=$(grep -c "user=$NA " "$T/daemon.log")
if [ $((after - before)) -ge 1 ] && [ $((after - before)) -le 6 ]; then
	ok "daemon: 200 connections of a non-agent uid, $((after - before)) log line(s)"
else
	bad "daemon: 200 connections of a non-agent uid" "$((after - before)) log lines"
fi

# A local user who is no agent keeps the daemon's queue full (its socket
# is 0666, as every agent uid must reach it): 300 connectors, while the
# daemon is stopped so that its backlog surely fills, and the session
# starts then; the daemon goes on 0.8 s later. The bridge waits its turn in
# the kernel's queue of connectors, so the session still has its proxy,
# and a request through it is answered.
rm -f "$T/flood.stop"
runuser -u "$NA" -- python3 -c 'import socket,sys,os,threading
def flood():
    while not os.path.exists(sys.argv[2]):
        s=socket.socket(socket.AF_UNIX)
        try: s.connect(sys.argv[1])
        except OSError: pass
        s.close()
ts=[threading.Thread(target=flood, daemon=True) for _ in range(300)]
[t.start() for t in ts]; [t.join() for t in ts]' "$S" "$T/flood.stop" >/dev/null 2>&1 &
flood=$!
PIDS="$PIDS $flood"
sleep 0.5
kill -STOP "$DPID"
sleep 0.5
(sleep 0.8; kill -CONT "$DPID") &
cont=$!
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P1/")
touch "$T/flood.stop"
wait "$cont"
wait "$flood"
if why=$(report_has 'e["network_egress"]["achieved"] and e["network_egress"]["verified"] and r["level"] == "full"'); then
	case "$out" in
	"ok $P1") ok "session: a flood of connects from another user delays the bridge, not stops it" ;;
	*) bad "session: a flood of connects from another user delays the bridge, not stops it" "$out" ;;
	esac
else
	bad "session: a flood of connects from another user delays the bridge, not stops it" "$why / $out"
fi

# Every slot of the uid held by one session (8 tunnels, the daemon's
# max_per_uid here): another session of the uid still starts with its
# bridge (PING has a reserve of its own), and a ninth request is refused,
# not queued.
rm -f "$T/ws/go"
sbx "python3 -c 'import socket,time,os
ss=[]
for i in range(8):
    s=socket.create_connection((\"127.0.0.1\", 3128)); s.sendall(b\"CONNECT 127.0.0.2:$PH HTTP/1.1\\r\\n\\r\\nx\")
    s.recv(100); ss.append(s)
open(\"$T/ws/held\", \"w\").close()
while not os.path.exists(\"$T/ws/go\"): time.sleep(0.05)
s=socket.create_connection((\"127.0.0.1\", 3128)); s.sendall(b\"CONNECT 127.0.0.2:$P1 HTTP/1.1\\r\\n\\r\\n\")
print(\"ninth:\", s.recv(100).split(b\"\\r\\n\")[0].decode())'" >"$T/hold.out" 2>&1 &
holder=$!
for _ in $(seq 50); do [ -e "$T/ws/held" ] && break; sleep 0.05; done
sleep 0.3
sbx true >/dev/null
if why=$(report_has 'e["network_egress"]["achieved"] and e["network_egress"]["verified"]'); then
	ok "daemon: a session starts with its bridge while another holds every slot of the uid"
else
	bad "daemon: a session starts with its bridge while another holds every slot of the uid" "$why"
fi
touch "$T/ws/go"
wait "$holder"
rm -f "$T/ws/go" "$T/ws/held"
case "$(cat "$T/hold.out")" in
*"ninth: HTTP/1.1 403"*) ok "daemon: a request over max_per_uid is refused (403)" ;;
*) bad "daemon: a request over max_per_uid is refused (403)" "$(cat "$T/hold.out")" ;;
esac
# Those 8 tunnels' far end never closes. Once their session has ended (the
# clients' side closed), each is idle for the half-closed timeout (1 s
# here) and then closed: the uid's slots are free again.
sleep 1.5
out=$(sbx "curl -sS --max-time 8 --cacert $CA https://127.0.0.2:$P1/")
line=$(logline 127.0.0.2 "$P1")
case "$out/$line" in
"ok $P1/"*"verdict=allowed"*) ok "daemon: tunnels half-closed by their ended session free the uid's slots" ;;
*) bad "daemon: tunnels half-closed by their ended session free the uid's slots" "$out / $line" ;;
esac

# A connection still being decided when its session ends: the report
# counts it as unanswered, not as nothing. (The daemon is stopped after the
# session started, so the verdict cannot come first.)
sbx "while [ ! -e $T/ws/go ]; do sleep 0.05; done
	python3 -c 'import socket
s=socket.create_connection((\"127.0.0.1\", 3128)); s.sendall(b\"CONNECT 127.0.0.2:$P1 HTTP/1.1\\r\\n\\r\\n\")'
	echo sent" >"$T/unans.out" 2>&1 &
holder=$!
sleep 0.5
kill -STOP "$DPID"
touch "$T/ws/go"
wait "$holder"
kill -CONT "$DPID"
rm -f "$T/ws/go"
if why=$(report_has 'r["egress"]["unanswered"] == 1 and r["egress"]["allowed"] == 0'); then
	ok "session: a hand-off without its verdict at the end is counted unanswered"
else
	bad "session: a hand-off without its verdict at the end is counted unanswered" "$why / $(cat "$T/unans.out")"
fi

# An impostor: a socket some user made where egress_socket points (a
# directory that user may write). The session does not take it for the
# daemon, whatever it answers; --explain and --check-config say the same.
install -d -m 0755 -o "$NA" "$T/imp"
runuser -u "$NA" -- python3 -c 'import socket,sys,os
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(8)
while True:
    c,_=s.accept(); c.recv(200); c.sendall(b"SBXB\x01" + bytes(187)); c.close()' "$T/imp/e.sock" &
imp=$!
PIDS="$PIDS $imp"
sed "s|^egress_socket = .*|egress_socket = $T/imp/e.sock|" "$C/agent-sandbox.conf" >"$C/imp.conf"
chmod 0644 "$C/imp.conf"
sleep 0.3
out=$(runuser -u "$SX" -- env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" SBX_TEST_CONFIG="$C/imp.conf" \
	"$AS" --run -- /bin/sh -c "echo \"\$AGENT_SANDBOX_SESSION\" >$T/ws/.sid" 2>&1)
if why=$(report_has 'not e["network_egress"]["achieved"] and "egress_socket" in e["network_egress"]["detail"] and "network_boundary" in r["guarantees"]'); then
	ok "session: a socket some user put at egress_socket is not taken for the daemon"
else
	bad "session: a socket some user put at egress_socket is not taken for the daemon" "$why / $out"
fi
SBX_TEST_CONFIG="$C/imp.conf" "$AS" --explain "$SX" --json >"$T/explain.json" 2>&1
grep -q '"network_egress","requested":true,"achieved":false' "$T/explain.json" &&
	ok "explain: the impostor is not the daemon either" ||
	bad "explain: the impostor is not the daemon either" "$(head -c 300 "$T/explain.json")"
kill "$imp"

# ---- no daemon: the session runs, reaching only its own loopback ----------------------------
kill "$DPID"
wait "$DPID" 2>/dev/null
out=$(sbx "curl -sS --max-time 5 --cacert $CA https://127.0.0.2:$P1/; echo rc=\$?")
if why=$(report_has 'not e["network_egress"]["achieved"] and "not reached" in e["network_egress"]["detail"] and "network_boundary" in r["guarantees"] and "network_egress" not in r["guarantees"] and r["level"] == "degraded" and r["floor_met"]'); then
	case "$out" in
	*"ok $P1"*) bad "session without the daemon: nothing leaves, the report says why" "went through" ;;
	*"rc=7"*) ok "session without the daemon: nothing leaves, the report says why" ;;
	*) bad "session without the daemon: nothing leaves, the report says why" "$out" ;;
	esac
else
	bad "session without the daemon: nothing leaves, the report says why" "$why"
fi
SBX_TEST_CONFIG="$C/agent-sandbox.conf" "$AS" --explain "$SX" --json >"$T/explain.json" 2>"$T/explain.err"
if grep -q '"network_egress","requested":true,"achieved":false' "$T/explain.json"; then
	ok "explain: the prediction without the daemon says network_egress not achieved"
else
	bad "explain: the prediction without the daemon says network_egress not achieved" \
		"$(head -c 300 "$T/explain.json" "$T/explain.err")"
fi
