#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# agent-sandbox-egressd with real clients: the daemon runs as a user of its
# own on a socket of its own, curl (SOCKS5 over the unix socket) and a
# python client (HTTP CONNECT) ask it for destinations as agent accounts,
# and two local TLS servers and a server that speaks first stand for the
# outside. Each refusal has its positive control: the same server reached
# directly, or the same request allowed for the listed destination.
#
# Then (host.sh) this host's own addresses, with a daemon and servers in
# network namespaces of the test's own: a listed name that resolves to the
# host's public-class address refused, in every form and by every path,
# the literal entry for it allowed, an address added while the daemon
# runs, and Encrypted Client Hello.
#
# Then whole sessions (the test build of agent-shell, --run, as an agent
# account whose profile is network = proxy): curl, git clone and pip
# download inside the sandbox, through the bridge on the sandbox's own
# loopback, to servers on 127.0.0.2 that literal entries name; the
# refusals (another port, another name, a literal address, the metadata
# address, a name that resolves to loopback, another TLS server name, plain
# HTTP), the upstream and the daemon's socket tried directly from inside,
# the report's list and counts, a list changed under a running session,
# --explain against the real report, and a session with no daemon.
#
# Usage: tests/egress/run.sh     (root; BUILD from the environment)
# Creates: accounts sbxe[dpnas]-<random>, /run/sbx-egress-* (root-owned, for
# the trusted config and the socket), /var/tmp/sbx-egress-*, two network
# namespaces and a mount namespace held by processes of the test's own;
# all removed on exit, and the daemons, servers and holders (by pid)
# stopped (the namespaces, their veth pair and addresses go with them).
set -u
BUILD=${BUILD:-build}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
D=$SRC/$BUILD/agent-sandbox-egressd
CLIENT=$SRC/tests/egress/client.py
. "$SRC/tests/tier.sh"
tier_require_root
for t in curl python3 openssl runuser git pip3; do
	command -v $t >/dev/null || { echo "[  FAILED  ] $t missing (make deps installs it)"; exit 1; }
done

C=$(mktemp -d /run/sbx-egress-XXXXXX)
T=$(mktemp -d /var/tmp/sbx-egress-XXXXXX)
R=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
DU=sbxed-$R AP=sbxep-$R AD=sbxen-$R NA=sbxea-$R SX=sbxes-$R
PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	for u in $DU $AP $AD $NA $SX; do userdel "$u" 2>/dev/null; done
	rm -rf "$C" "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
chmod 0755 "$C" "$T"
for u in $DU $AP $AD $NA; do
	useradd --system -M -d /nonexistent -s /usr/sbin/nologin -U "$u" ||
		{ echo "useradd $u failed"; exit 1; }
done
useradd --system -M -d "$T/home" -s /usr/sbin/nologin -U "$SX" || { echo "useradd $SX failed"; exit 1; }
mkdir -m 0700 "$T/home" "$T/ws" "$T/xdg"
chown "$SX:$SX" "$T/home" "$T/ws" "$T/xdg"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P1=$(free_port) P2=$(free_port) PG=$(free_port) PH=$(free_port) PB=$(free_port)
[ "$P1" != "$P2" ] || P2=$((P1 + 1))
[ "$PG" != "$P1" ] && [ "$PG" != "$P2" ] || PG=$((P2 + 1))
[ "$PH" != "$P1" ] && [ "$PH" != "$P2" ] && [ "$PH" != "$PG" ] || PH=$((PG + 1))
case " $P1 $P2 $PG $PH " in *" $PB "*) PB=$((PH + 1)) ;; esac

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 1 \
	-subj /CN=egress-test -addext "subjectAltName=IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3,DNS:localhost" 2>/dev/null ||
	{ echo "openssl req failed"; exit 1; }
chmod 0644 "$T/cert.pem"
for p in $P1 $P2; do
	python3 "$SRC/tests/egress/tls_server.py" "$p" "$T/cert.pem" "$T/key.pem" >"$T/srv$p.out" 2>&1 &
	PIDS="$PIDS $!"
done
# The sessions' outside: 127.0.0.2 (P1 and P2) and 127.0.0.3 (P1), and a
# git repository and a package index on 127.0.0.2:PG. 127.0.0.1 is in the
# sessions' NO_PROXY, as loopback: it is the sandbox's own.
for a in 127.0.0.2:$P1 127.0.0.2:$P2 127.0.0.3:$P1; do
	python3 "$SRC/tests/egress/tls_server.py" "${a#*:}" "$T/cert.pem" "$T/key.pem" "${a%:*}" \
		>"$T/srv-$a.out" 2>&1 &
	PIDS="$PIDS $!"
done
mkdir -p "$T/www"
git init -q --bare "$T/www/repo.git"
git -C "$T" -c init.defaultBranch=main init -q src
printf 'through the proxy\n' >"$T/src/README"
git -C "$T/src" add README
git -C "$T/src" -c user.name=t -c user.email=t@t commit -qm one
git -C "$T/src" push -q "$T/www/repo.git" HEAD:main
git -C "$T/www/repo.git" symbolic-ref HEAD refs/heads/main
git -C "$T/www/repo.git" update-server-info
python3 "$SRC/tests/egress/make_wheel.py" "$T/www"
chmod -R a+rX "$T/www"
python3 "$SRC/tests/egress/file_server.py" 127.0.0.2 "$PG" "$T/cert.pem" "$T/key.pem" "$T/www" \
	>"$T/www.out" 2>&1 &
PIDS="$PIDS $!"
# A service whose server speaks first (as SMTP or FTP): a banner, then an
# answer to the client's first line.
python3 "$SRC/tests/egress/banner_server.py" 127.0.0.1 "$PB" >"$T/banner.out" 2>&1 &
PIDS="$PIDS $!"
# A plain TCP service that accepts and holds (a long tunnel's far end).
python3 -c 'import socket,sys,threading
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.2", int(sys.argv[1]))); s.listen(64); held=[]
while True: held.append(s.accept()[0])' "$PH" >/dev/null 2>&1 &
PIDS="$PIDS $!"

S=$C/e.sock
cat >"$C/agent-sandbox.conf" <<CONF
[global]
egress_socket = $S
[profile px]
workspace_root = /var/tmp
network = proxy
egress_allow = 127.0.0.1:$P1
egress_allow = localhost:$P2
egress_allow = *.example.invalid:$P1
egress_allow = 127.0.0.1:$PB
[profile dn]
workspace_root = /var/tmp
network = deny
egress_allow = 127.0.0.1:$P1
[profile sx]
workspace_root = $T/ws
network = proxy
egress_allow = 127.0.0.2:$P1
egress_allow = 127.0.0.2:$PG
egress_allow = localhost:$P2
egress_allow = *.example.invalid:$P1
egress_allow = 127.0.0.2:$PH
[match]
user $AP = px
user $AD = dn
user $SX = sx
CONF
chmod 0644 "$C/agent-sandbox.conf"

# The parsers first, with clients that speak on the socket itself
# (--allow-direct; the sessions below get a daemon without it).
"$D" --config "$C/agent-sandbox.conf" --user "$DU" --handshake-timeout 3000 --log-stderr \
	--allow-direct 2>"$T/daemon.log" &
PIDS="$PIDS $!"
DPID=$!
for _ in $(seq 50); do
	[ -S "$S" ] && grep -q ready "$T/srv$P1.out" 2>/dev/null && grep -q ready "$T/srv$P2.out" 2>/dev/null &&
		grep -q ready "$T/www.out" 2>/dev/null && grep -q ready "$T/banner.out" 2>/dev/null && break
	sleep 0.1
done
[ -S "$S" ] || { echo "daemon did not start:"; cat "$T/daemon.log"; exit 1; }

# The daemon runs as its user, not root.
duid=$(id -u "$DU")
if [ "$(awk '/^Uid:/ {print $2}' /proc/$DPID/status)" = "$duid" ]; then
	ok "daemon runs as its own uid"
else
	bad "daemon runs as its own uid" "$(grep ^Uid: /proc/$DPID/status)"
fi

as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
curl_via() {	# USER URL [curl options]: SOCKS5 through the daemon
	local u=$1 url=$2; shift 2
	as "$u" curl -sS --max-time 8 --cacert "$T/cert.pem" --proxy "socks5h://localhost$S" "$@" "$url" 2>&1
}
# The log line for a destination: the last one naming it.
logline() { grep "event=egress" "$T/daemon.log" | grep -F "host=$1 port=$2 " | tail -n 1; }
expect_refused() {	# NAME HOST PORT REASON OUTPUT [a pattern the line must also hold first]
	local line
	line=$(logline "$2" "$3")
	case "$5" in *"ok $3"*) bad "$1" "went through: $5"; return ;; esac
	case "$line" in
	*"${6:-}"*"verdict=refused"*"$4"*) ok "$1" ;;
	*) bad "$1" "log: '${line:-none}', output: $5" ;;
	esac
}

# ---- allowed --------------------------------------------------------------------------
out=$(curl_via "$AP" "https://127.0.0.1:$P1/")
line=$(logline 127.0.0.1 "$P1")
if [ "$out" = "ok $P1" ] && case "$line" in *"user=$AP"*"verdict=allowed"*) true ;; *) false ;; esac; then
	ok "socks5 (curl): a listed address through to TLS"
else
	bad "socks5 (curl): a listed address through to TLS" "$out / $line"
fi
out=$(as "$AP" python3 "$CLIENT" "$S" connect "127.0.0.1:$P1" - "$T/cert.pem")
case "$out" in
*"status=200"*"body=ok $P1"*) ok "http CONNECT (python): a listed address through to TLS" ;;
*) bad "http CONNECT (python): a listed address through to TLS" "$out" ;;
esac

# ---- refused, each beside its control --------------------------------------------------
direct=$(curl -sS --max-time 5 --cacert "$T/cert.pem" "https://127.0.0.1:$P2/" 2>&1)
[ "$direct" = "ok $P2" ] && ok "control: the second server answers directly" ||
	bad "control: the second server answers directly" "$direct"

out=$(curl_via "$AP" "https://127.0.0.1:$P2/")
expect_refused "socks5: a listed address on another port" 127.0.0.1 "$P2" "address not listed" "$out"

out=$(as "$AP" python3 "$CLIENT" "$S" connect "other.example.org:$P1")
expect_refused "CONNECT: a name not listed" other.example.org "$P1" "host:port not listed" "$out"
case "$out" in *status=403*) ok "CONNECT: refusal answered 403" ;; *) bad "CONNECT: refusal answered 403" "$out" ;; esac

out=$(as "$AP" python3 "$CLIENT" "$S" connect "127.0.0.2:$P1")
expect_refused "CONNECT: a literal address not listed" 127.0.0.2 "$P1" "address not listed" "$out"

out=$(curl_via "$AP" "http://169.254.169.254:80/latest/meta-data/")
expect_refused "socks5: the metadata address" 169.254.169.254 80 "address not listed" "$out"

# localhost:P2 is listed by name, but resolves to loopback, which no
# literal entry names at P2 (the server there answers directly, above).
out=$(curl_via "$AP" "https://localhost:$P2/")
expect_refused "socks5: a listed name that resolves to loopback" localhost "$P2" \
	"resolves to loopback address" "$out"

# A wildcard entry: the listed subdomain passes the list, then fails to
# resolve (.invalid never does); the suffix itself is not listed.
out=$(as "$AP" python3 "$CLIENT" "$S" connect "a.example.invalid:$P1")
line=$(logline a.example.invalid "$P1")
case "$line" in
*"verdict=failed"*"name does not resolve"*) ok "CONNECT: a wildcard's subdomain passes the list" ;;
*) bad "CONNECT: a wildcard's subdomain passes the list" "$line / $out" ;;
esac
out=$(as "$AP" python3 "$CLIENT" "$S" connect "example.invalid:$P1")
expect_refused "CONNECT: a wildcard's own suffix" example.invalid "$P1" "host:port not listed" "$out"

# SNI: curl resolves other.example itself (socks5, not socks5h), asks for
# the listed 127.0.0.1:P1 and sends the name in its ClientHello.
out=$(as "$AP" curl -sS --max-time 8 --cacert "$T/cert.pem" --proxy "socks5://localhost$S" \
	--resolve "other.example:$P1:127.0.0.1" "https://other.example:$P1/" 2>&1)
expect_refused "socks5: TLS server name other than the requested host" 127.0.0.1 "$P1" \
	"TLS server name other.example is not the requested host" "$out"
out=$(as "$AP" python3 "$CLIENT" "$S" connect "127.0.0.1:$P1" evil.example "$T/cert.pem")
case "$out" in
*"status=200"*"tls=failed"*) expect_refused "CONNECT: TLS server name other than the requested host" \
	127.0.0.1 "$P1" "TLS server name evil.example" "$out" ;;
*) bad "CONNECT: TLS server name other than the requested host" "$out" ;;
esac

# The same rule whenever the ClientHello comes: a client that waits a
# second after the tunnel opens (on a port other than 443, where the
# daemon once relayed unchecked after 300 ms) is judged all the same.
for proto in "" --socks5; do
	label=${proto:+socks5}
	out=$(as "$AP" python3 "$CLIENT" $proto --wait 1 "$S" connect "127.0.0.1:$P1" evil.example "$T/cert.pem")
	case "$out" in
	*"status="*"tls=failed"*"ALERT_ACCESS_DENIED"*) expect_refused "${label:-CONNECT}: a wrong TLS server name sent after a 1 s wait" \
		127.0.0.1 "$P1" "TLS server name evil.example is not the requested host" "$out" ;;
	*) bad "${label:-CONNECT}: a wrong TLS server name sent after a 1 s wait" "$out" ;;
	esac
	out=$(as "$AP" python3 "$CLIENT" $proto --wait 1 "$S" connect "127.0.0.1:$P1" - "$T/cert.pem")
	line=$(logline 127.0.0.1 "$P1")
	case "$out/$line" in
	*"body=ok $P1"*"verdict=allowed"*) ok "${label:-CONNECT}: control: no server name after a 1 s wait goes through" ;;
	*) bad "${label:-CONNECT}: control: no server name after a 1 s wait goes through" "$out / $line" ;;
	esac
done
# A server that speaks first still reaches its client, which answers after
# the banner (and after a second); a client silent past the handshake
# timeout (3 s here) is closed, as on 443.
out=$(as "$AP" python3 "$CLIENT" --wait 1 "$S" banner "127.0.0.1:$PB" "HELO sbx")
line=$(logline 127.0.0.1 "$PB")
case "$out/$line" in
*"banner=220 sbx-banner answer=250 HELO sbx"*"verdict=allowed"*) ok "CONNECT: a server that speaks first, its client answering after 1 s" ;;
*) bad "CONNECT: a server that speaks first, its client answering after 1 s" "$out / $line" ;;
esac
# A client that reads the banner and ends without a word had the tunnel:
# allowed, and the line says so.
out=$(as "$AP" python3 "$CLIENT" "$S" banner "127.0.0.1:$PB" -)
sleep 0.2
line=$(logline 127.0.0.1 "$PB")
case "$out/$line" in
*"banner=220 sbx-banner answer=none"*"verdict=allowed reason=\"the client ended before it sent a byte\""*)
	ok "CONNECT: a server that speaks first, its client ending without a word" ;;
*) bad "CONNECT: a server that speaks first, its client ending without a word" "$out / $line" ;;
esac
out=$(as "$AP" python3 "$CLIENT" --wait 4 "$S" banner "127.0.0.1:$PB" "HELO sbx")
case "$out" in
*"banner=220 sbx-banner answer=250"*) bad "CONNECT: a client silent past the handshake timeout" "went through: $out" ;;
*"banner=220 sbx-banner"*) expect_refused "CONNECT: a client silent past the handshake timeout (after the banner)" \
	127.0.0.1 "$PB" "no client data within the handshake timeout" "$out" ;;
*) bad "CONNECT: a client silent past the handshake timeout" "$out" ;;
esac

# Other accounts: a profile with network = deny (its list names P1), and no agent at all.
out=$(curl_via "$AD" "https://127.0.0.1:$P1/")
line=$(grep "event=egress" "$T/daemon.log" | grep "user=$AD " | tail -n 1)
case "$out/$line" in
*"ok $P1"*) bad "the uid of a network = deny profile" "went through" ;;
*"verdict=refused"*"profile network is deny"*) ok "the uid of a network = deny profile" ;;
*) bad "the uid of a network = deny profile" "$line / $out" ;;
esac
out=$(curl_via "$NA" "https://127.0.0.1:$P1/")
line=$(grep "event=egress" "$T/daemon.log" | grep "user=$NA " | tail -n 1)
case "$out/$line" in
*"ok $P1"*) bad "a uid with no profile" "went through" ;;
*"verdict=refused"*"not an agent account"*) ok "a uid with no profile" ;;
*) bad "a uid with no profile" "$line / $out" ;;
esac

# Not CONNECT: 405; nonsense: 400.
out=$(as "$AP" python3 "$CLIENT" "$S" raw 'GET http://127.0.0.1:'"$P1"'/ HTTP/1.1\r\nHost: x\r\n\r\n')
[ "$out" = "status=405" ] && ok "http GET answered 405" || bad "http GET answered 405" "$out"
out=$(as "$AP" python3 "$CLIENT" "$S" raw 'CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n')
[ "$out" = "status=400" ] && ok "CONNECT without a port answered 400" || bad "CONNECT without a port answered 400" "$out"

# The counters: the proxy account's last line counts what it was allowed and refused
# (six allowed above).
line=$(grep "event=egress" "$T/daemon.log" | grep "user=$AP " | tail -n 1)
case "$line" in
*"allowed=6 refused="*) ok "per-uid counters in the log line" ;;
*) bad "per-uid counters in the log line" "$line" ;;
esac

. "$SRC/tests/egress/host.sh"
. "$SRC/tests/egress/sessions.sh"

if [ "$fail" -ne 0 ] || [ -n "${EGRESS_VERBOSE:-}" ]; then echo "--- daemon log"; cat "$T/daemon.log"; fi
summary
