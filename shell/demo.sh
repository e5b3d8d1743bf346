#!/usr/bin/env bash
# make demo: one confined session on the built-in default profile, with its
# guarantee report, one allowed write and four refused actions. Needs no
# account and no change under /etc. As root it runs the session as the
# unprivileged "nobody" (the sandbox is for agents, not for root), in a
# mount namespace of its own where an installed /etc/agent-sandbox is an
# empty directory: the built-in defaults, whatever the host's config says.
# The report shown is the one of this session, asked for by its id.
set -u
build=${1:-build}
case $build in
/*) ;;
*) build="$(pwd)/$build" ;;
esac
shell="$build/agent-shell"
listen="$build/tests/tcp_listen"

ws=$(mktemp -d /var/tmp/agent-sandbox-demo.XXXXXX)
mkdir -p "$ws/secrets"
echo "demo-api-token-123" >"$ws/secrets/token"
# A host daemon's unix socket, world-writable, outside /run and /tmp.
daemon_dir=$(mktemp -d /var/tmp/agent-sandbox-demo-daemon.XXXXXX)
chmod 0755 "$daemon_dir"
sock="$daemon_dir/daemon.sock"
listener_pid= daemon_pid=
cleanup() {
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
	rm -rf "$ws" "$daemon_dir"
}
trap cleanup EXIT

run_as=()
if [ "$(id -u)" -eq 0 ]; then
	chown -R nobody:nogroup "$ws"
	chmod 0755 "$ws"
	run_as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
# agent-shell reads /etc/agent-sandbox whoever runs it; the demo is about
# the built-in defaults. A read-only empty tmpfs over it, in a private
# mount namespace, for the session only (root can make one).
hide_config=() config_note=
if [ -e /etc/agent-sandbox ]; then
	if [ "$(id -u)" -eq 0 ] && unshare --mount --propagation private true 2>/dev/null; then
		hide_config=(unshare --mount --propagation private -- sh -c \
			'mount -t tmpfs -o ro,nosuid,nodev,noexec,mode=0755,size=4k agent-sandbox-demo /etc/agent-sandbox && exec "$@"' demo)
		config_note="  /etc/agent-sandbox hidden from the session (a private mount namespace): built-in defaults"
	else
		config_note="  note: /etc/agent-sandbox exists and cannot be hidden (not root, or no mount namespace): its [ceiling] applies"
	fi
fi

# A service on the host's loopback that the sandbox must not reach.
coproc LISTEN { "$listen" 120; }
listener_pid=$LISTEN_PID
read -r port <&"${LISTEN[0]}"
python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(4)
s.settimeout(120)
try:
    while True:
        s.accept()[0].close()
except Exception:
    pass
' "$sock" &
daemon_pid=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -S "$sock" ] && break; sleep 0.1; done

cat <<INTRO
agent-sandbox demo
  workspace: $ws   (a secret planted at $ws/secrets/token, passed as --deny-read)
  host loopback service on 127.0.0.1:$port, host daemon socket $sock (mode 0666)
  running as: $(if [ ${#run_as[@]} -gt 0 ]; then echo "nobody (dropped from root)"; else id -un; fi)
INTRO
[ -n "$config_note" ] && echo "$config_note"
echo

script='
why() { "$@" 2>&1 >/dev/null | head -n 1 | sed "s/.*: //"; }
echo "$AGENT_SANDBOX_SESSION" > .session-id
echo "--- inside the sandbox: session $AGENT_SANDBOX_SESSION, uid $(id -u), pid $$, HOME=$HOME, cwd $(pwd)"
if echo "written by the agent" > agent-output.txt; then echo "ALLOWED  write in the workspace: $(cat agent-output.txt)"; fi
if ( echo x > /etc/agent-sandbox-demo ) 2>/dev/null; then echo "UNEXPECTED: wrote /etc"; else echo "REFUSED  write to /etc/agent-sandbox-demo: $(why sh -c "echo x > /etc/agent-sandbox-demo")"; fi
if ( exec 3<>/dev/tcp/127.0.0.1/'"$port"' ) 2>/dev/null; then echo "UNEXPECTED: reached the host service"; else echo "REFUSED  connect to the host service 127.0.0.1:'"$port"': $(why bash -c "exec 3<>/dev/tcp/127.0.0.1/'"$port"'")"; fi
if python3 -c "import socket; socket.socket(socket.AF_UNIX).connect(\"'"$sock"'\")" 2>/dev/null; then echo "UNEXPECTED: reached the host daemon"; else echo "REFUSED  connect to the host daemon socket: $(python3 -c "import socket; socket.socket(socket.AF_UNIX).connect(\"'"$sock"'\")" 2>&1 | tail -n 1 | sed "s/.*] //")"; fi
if [ -s secrets/token ] && cat secrets/token >/dev/null 2>&1; then echo "UNEXPECTED: read the secret"; else echo "REFUSED  read of the deny_read secret secrets/token: $(why cat secrets/token) (secrets/ is masked)"; fi
'
"${hide_config[@]}" "${run_as[@]}" "$shell" --run --workspace "$ws" --deny-read "$ws/secrets" \
	-- /bin/bash -c "$script"
rc=$?
# Its id, as the session itself gave it (AGENT_SANDBOX_SESSION): never
# "the newest report", which may be another session's.
sid=$(cat "$ws/.session-id" 2>/dev/null)
echo
if [ -n "$sid" ]; then
	echo "--- the guarantee report of that session (agent-shell --report $sid):"
	"${run_as[@]}" "$shell" --report "$sid" || rc=1
else
	echo "--- no report: the session did not run its command (exit $rc, the reason is above)"
	[ "$rc" -ne 0 ] || rc=1
fi
echo
echo "--- after the session, on the host: $(cat "$ws/agent-output.txt" 2>/dev/null || echo 'no file') (kept in the workspace)"
exit $rc
