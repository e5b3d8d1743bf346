# SPDX-License-Identifier: BSD-3-Clause
# Sourced by tests/egress/run.sh: this host's own addresses are internal,
# whatever their range, and Encrypted Client Hello is refused. Uses T C S
# SRC D DU AP SX CLIENT PIDS, as, ok, bad.
#
# A daemon of its own runs in two namespaces the test makes and nobody
# else sees: a network namespace "host" whose lo holds a public-class
# address (198.20.0.1, 2a01:4f8::1) and whose veth sbxh0 holds another
# (198.20.1.1), and a mount namespace where /etc/hosts is the test's own
# file (the resolver: files only). A second network namespace "remote",
# at the veth's other end (198.20.1.2), stands for the outside. A service
# bound to all addresses of "host" answers "220 host-service", the one in
# "remote" "220 remote-service". The addresses are public-class on purpose
# (classify4 puts the documentation nets among the reserved ones); no
# packet leaves these namespaces, which die with their holder processes.
HC=$C/host.conf HS=$C/h.sock HL=$T/hdaemon.log
PS=$(free_port) PL=$(free_port) PT=$(free_port)
[ "$PL" != "$PS" ] || PL=$((PS + 1))
[ "$PT" != "$PS" ] && [ "$PT" != "$PL" ] || PT=$((PL + 1))

printf '%s\n' "multi on" >"$T/host.conf"
printf '%s\n' "hosts: files" >"$T/nsswitch.conf"
cat >"$T/hosts" <<HOSTS
198.20.0.1	pub.test
2a01:4f8::1	pub6.test
::ffff:198.20.0.1	mapped.test
198.20.1.1	side.test
198.20.1.2	ok.test
198.20.1.2	multi.test
198.20.0.1	multi.test
198.20.1.9	late.test
HOSTS
chmod 0644 "$T/hosts" "$T/host.conf" "$T/nsswitch.conf"
unshare --net --mount --propagation private -- sh -c 'mount --bind "$1" /etc/hosts &&
	mount --bind "$2" /etc/nsswitch.conf && mount --bind "$3" /etc/host.conf &&
	touch "$4" && exec sleep 100000' sh "$T/hosts" "$T/nsswitch.conf" "$T/host.conf" "$T/ns-host" &
HA=$!
PIDS="$PIDS $HA"
unshare --net -- sh -c 'touch "$1" && exec sleep 100000' sh "$T/ns-remote" &
HB=$!
PIDS="$PIDS $HB"
for _ in $(seq 50); do [ -e "$T/ns-host" ] && [ -e "$T/ns-remote" ] && break; sleep 0.1; done
# nsenter execs its command in place, so a background one's $! is the
# process itself, which cleanup stops by that pid. (A shell function run
# in the background would be a subshell, and its child would outlive it.)
in_host() { nsenter -t "$HA" --net --mount -- "$@"; }
in_remote() { nsenter -t "$HB" --net -- "$@"; }
setup_ok=true
in_host ip link set lo up &&
	in_host ip addr add 198.20.0.1/32 dev lo &&
	in_host ip -6 addr add 2a01:4f8::1/128 dev lo nodad &&
	in_host ip link add sbxh0 type veth peer name sbxr0 netns "/proc/$HB/ns/net" &&
	in_host ip addr add 198.20.1.1/24 dev sbxh0 && in_host ip link set sbxh0 up &&
	in_remote ip link set lo up &&
	in_remote ip addr add 198.20.1.2/24 dev sbxr0 && in_remote ip addr add 198.20.1.9/32 dev sbxr0 &&
	in_remote ip link set sbxr0 up || setup_ok=false
for p in $PS $PL; do
	nsenter -t "$HA" --net --mount -- python3 "$SRC/tests/egress/banner_server.py" :: "$p" \
		host-service >"$T/hsrv$p.out" 2>&1 &
	PIDS="$PIDS $!"
done
nsenter -t "$HB" --net -- python3 "$SRC/tests/egress/banner_server.py" :: "$PS" remote-service \
	>"$T/rsrv.out" 2>&1 &
PIDS="$PIDS $!"
nsenter -t "$HB" --net -- python3 "$SRC/tests/egress/tls_server.py" "$PT" "$T/cert.pem" "$T/key.pem" \
	198.20.1.2 >"$T/rtls.out" 2>&1 &
PIDS="$PIDS $!"

cat >"$HC" <<CONF
[global]
egress_socket = $HS
[profile hx]
workspace_root = /var/tmp
network = proxy
egress_allow = ok.test:$PS
egress_allow = ok.test:$PT
egress_allow = pub.test:$PS
egress_allow = pub6.test:$PS
egress_allow = mapped.test:$PS
egress_allow = side.test:$PS
egress_allow = multi.test:$PS
egress_allow = late.test:$PS
egress_allow = 198.20.0.1:$PL
egress_allow = pub.test:$PL
[profile hs]
workspace_root = $T/ws
network = proxy
egress_allow = ok.test:$PS
egress_allow = pub.test:$PS
[match]
user $AP = hx
user $SX = hs
CONF
chmod 0644 "$HC"
nsenter -t "$HA" --net --mount -- "$D" --config "$HC" --user "$DU" --handshake-timeout 3000 \
	--log-stderr --allow-direct >/dev/null 2>"$HL" &
HD=$!
PIDS="$PIDS $HD"
for _ in $(seq 50); do
	[ -S "$HS" ] && [ "$(cat "$T/hsrv$PS.out" "$T/hsrv$PL.out" "$T/rsrv.out" "$T/rtls.out" 2>/dev/null |
		grep -c ready)" -eq 4 ] && break
	sleep 0.1
done
if ! $setup_ok || [ ! -S "$HS" ]; then
	bad "host addresses: the test's namespaces and daemon" "setup failed: $(cat "$HL")"
fi

# The last log line for a destination, and a refusal's checks: the line
# names the reason and the address, and the host's service never spoke.
hlogline() { grep "event=egress" "$HL" | grep -F "host=$1 port=$2 " | tail -n 1; }
expect_host_refused() {	# NAME HOST PORT ADDR REASON OUTPUT
	local line
	line=$(hlogline "$2" "$3")
	case "$6" in *host-service*|*remote-service*) bad "$1" "went through: $6"; return ;; esac
	case "$line" in
	*"addr=$4 verdict=refused reason=\"$5\""*) ok "$1" ;;
	*) bad "$1" "log: '${line:-none}', output: $6" ;;
	esac
}
expect_through() {	# NAME HOST PORT ADDR SERVICE OUTPUT
	local line
	line=$(hlogline "$2" "$3")
	case "$6/$line" in
	*"banner=220 $5 answer=250 QUIT"*"addr=$4 verdict=allowed"*) ok "$1" ;;
	*) bad "$1" "$6 / $line" ;;
	esac
}
via() { as "$AP" python3 "$CLIENT" "$@"; }

# Controls: the host's service answers on its public-class address (from
# the host itself), and a listed name of the remote side goes through.
out=$(in_host python3 -c 'import socket,sys
s=socket.create_connection(("198.20.0.1", int(sys.argv[1])), timeout=5); print(s.recv(64).decode().strip())' "$PS" 2>&1)
[ "$out" = "220 host-service" ] && ok "control: the host's service answers on 198.20.0.1:$PS" ||
	bad "control: the host's service answers on 198.20.0.1:$PS" "$out"
for proto in "" --socks5; do
	label=${proto:+socks5}
	out=$(via $proto "$HS" banner "ok.test:$PS" QUIT)
	expect_through "${label:-CONNECT}: control: a listed name of another host goes through" \
		ok.test "$PS" 198.20.1.2 remote-service "$out"
done

# A listed name that resolves to the host's own address, by both
# protocols and in every form: refused, with the address in the line.
for proto in "" --socks5; do
	label=${proto:+socks5}
	out=$(via $proto "$HS" banner "pub.test:$PS" QUIT)
	expect_host_refused "${label:-CONNECT}: a listed name that resolves to this host's public-class address" \
		pub.test "$PS" 198.20.0.1 "resolves to an address of this host" "$out"
done
out=$(via "$HS" banner "pub6.test:$PS" QUIT)
expect_host_refused "CONNECT: a listed name that resolves to this host's global IPv6 address" \
	pub6.test "$PS" 2a01:4f8::1 "resolves to an address of this host" "$out"
out=$(via --socks5 "$HS" banner "mapped.test:$PS" QUIT)
expect_host_refused "socks5: a listed name that resolves to the IPv4-mapped form of this host's address" \
	mapped.test "$PS" ::ffff:198.20.0.1 "resolves to an address of this host" "$out"
out=$(via "$HS" banner "side.test:$PS" QUIT)
expect_host_refused "CONNECT: a listed name that resolves to this host's address on another interface" \
	side.test "$PS" 198.20.1.1 "resolves to an address of this host" "$out"
out=$(via "$HS" banner "multi.test:$PS" QUIT)
expect_host_refused "CONNECT: a listed name with two answers, one of them this host's" \
	multi.test "$PS" 198.20.0.1 "resolves to an address of this host" "$out"
[ "$(in_host getent ahostsv4 multi.test | awk '$2 == "STREAM" {print $1}' | sort | tr '\n' ' ')" = "198.20.0.1 198.20.1.2 " ] &&
	ok "control: the test's resolver gives multi.test both answers" ||
	bad "control: the test's resolver gives multi.test both answers" "$(in_host getent ahostsv4 multi.test)"

# An entry that names the literal address and port lets it through, by
# the literal and by a listed name of it; the same literal on another
# port is not listed.
for proto in "" --socks5; do
	label=${proto:+socks5}
	out=$(via $proto "$HS" banner "198.20.0.1:$PL" QUIT)
	expect_through "${label:-CONNECT}: the host's address where an entry names it with its port" \
		198.20.0.1 "$PL" 198.20.0.1 host-service "$out"
done
out=$(via "$HS" banner "pub.test:$PL" QUIT)
expect_through "CONNECT: a listed name of the host's address, on the port a literal entry names" \
	pub.test "$PL" 198.20.0.1 host-service "$out"
out=$(via "$HS" banner "198.20.0.1:$PS" QUIT)
line=$(hlogline 198.20.0.1 "$PS")
case "$out/$line" in
*host-service*) bad "CONNECT: the host's literal address on a port no entry names" "went through: $out" ;;
*"verdict=refused reason=\"address not listed\""*) ok "CONNECT: the host's literal address on a port no entry names" ;;
*) bad "CONNECT: the host's literal address on a port no entry names" "$out / $line" ;;
esac

# An address that becomes the host's after the daemon started: late.test
# reaches the remote side while 198.20.1.9 is there, and is refused once
# the address has moved to the host's sbxh0, with no restart or reload.
out=$(via "$HS" banner "late.test:$PS" QUIT)
expect_through "CONNECT: control: late.test while its address is the remote side's" \
	late.test "$PS" 198.20.1.9 remote-service "$out"
if in_remote ip addr del 198.20.1.9/32 dev sbxr0 && in_host ip addr add 198.20.1.9/32 dev sbxh0; then
	out=$(via "$HS" banner "late.test:$PS" QUIT)
	expect_host_refused "CONNECT: an address added to the host's interface after the daemon started" \
		late.test "$PS" 198.20.1.9 "resolves to an address of this host" "$out"
else
	bad "CONNECT: an address added to the host's interface after the daemon started" "ip addr failed"
fi

# Encrypted Client Hello with the listed name as its outer server name:
# refused, with a TLS access_denied alert (15 03 03 00 02 02 31) to the
# client; the same ClientHello without it reaches the TLS server, which
# answers with its ServerHello (a handshake record, 16 03 03).
out=$(via "$HS" hello "ok.test:$PT" ok.test ech)
line=$(hlogline ok.test "$PT")
case "$out/$line" in
*"answer=15030300020231/"*"verdict=refused reason=\"TLS ClientHello carries Encrypted Client Hello or ESNI (its real server name is hidden)\""*)
	ok "CONNECT: an Encrypted Client Hello under the listed name" ;;
*) bad "CONNECT: an Encrypted Client Hello under the listed name" "$out / $line" ;;
esac
out=$(via --socks5 "$HS" hello "ok.test:$PT" ok.test plain)
line=$(hlogline ok.test "$PT")
case "$out/$line" in
*"answer=160303"*"verdict=allowed"*) ok "socks5: control: the same ClientHello without ECH reaches the server" ;;
*) bad "socks5: control: the same ClientHello without ECH reaches the server" "$out / $line" ;;
esac
out=$(via --socks5 "$HS" hello "ok.test:$PT" ok.test ech)
line=$(hlogline ok.test "$PT")
case "$out/$line" in
*"answer=15030300020231/"*"verdict=refused"*"Encrypted Client Hello"*) ok "socks5: an Encrypted Client Hello under the listed name" ;;
*) bad "socks5: an Encrypted Client Hello under the listed name" "$out / $line" ;;
esac

# Through a session's bridge: the same refusal beside its control.
hsbx() {
	runuser -u "$SX" -- env HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg" SBX_TEST_CONFIG="$HC" \
		"$SRC/$BUILD/tests/agent-shell-testable" --run -- /bin/sh -c "$1" 2>&1 |
		grep -v '^agent-shell: warning: no syslog daemon listens'
}
out=$(hsbx "python3 $CLIENT 127.0.0.1:3128 banner ok.test:$PS QUIT; python3 $CLIENT 127.0.0.1:3128 banner pub.test:$PS QUIT")
line=$(hlogline pub.test "$PS")
case "$out" in
*"banner=220 remote-service answer=250 QUIT"*)
	case "$out/$line" in
	*host-service*) bad "session: a listed name that resolves to this host's address" "went through: $out" ;;
	*"session="*"user=$SX"*"addr=198.20.0.1 verdict=refused reason=\"resolves to an address of this host\""*)
		ok "session: a listed name that resolves to this host's address (beside one that does not)" ;;
	*) bad "session: a listed name that resolves to this host's address" "$out / $line" ;;
	esac ;;
*) bad "session: a listed name that resolves to this host's address" "no control: $out" ;;
esac

kill "$HD"
wait "$HD" 2>/dev/null
if [ "$fail" -ne 0 ] || [ -n "${EGRESS_VERBOSE:-}" ]; then echo "--- host daemon log"; cat "$HL"; fi
