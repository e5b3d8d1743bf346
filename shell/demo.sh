#!/usr/bin/env bash
# make demo: one confined session on the built-in default profile, with its
# guarantee report, one allowed write and three refused actions. Needs no
# account and no change under /etc. As root it runs the session as the
# unprivileged "nobody" (the sandbox is for agents, not for root).
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
listener_pid=
cleanup() {
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null
	rm -rf "$ws"
}
trap cleanup EXIT

run_as=()
if [ "$(id -u)" -eq 0 ]; then
	chown -R nobody:nogroup "$ws"
	chmod 0755 "$ws"
	run_as=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi

# A service on the host's loopback that the sandbox must not reach.
coproc LISTEN { "$listen" 120; }
listener_pid=$LISTEN_PID
read -r port <&"${LISTEN[0]}"

cat <<INTRO
agent-sandbox demo
  workspace: $ws   (a secret planted at $ws/secrets/token, passed as --deny-read)
  host loopback service on 127.0.0.1:$port
  running as: $(if [ ${#run_as[@]} -gt 0 ]; then echo "nobody (dropped from root)"; else id -un; fi)

INTRO

script='
why() { "$@" 2>&1 >/dev/null | head -n 1 | sed "s/.*: //"; }
echo "--- inside the sandbox: uid $(id -u), pid $$, HOME=$HOME, cwd $(pwd)"
if echo "written by the agent" > agent-output.txt; then echo "ALLOWED  write in the workspace: $(cat agent-output.txt)"; fi
if ( echo x > /etc/agent-sandbox-demo ) 2>/dev/null; then echo "UNEXPECTED: wrote /etc"; else echo "REFUSED  write to /etc/agent-sandbox-demo: $(why sh -c "echo x > /etc/agent-sandbox-demo")"; fi
if ( exec 3<>/dev/tcp/127.0.0.1/'"$port"' ) 2>/dev/null; then echo "UNEXPECTED: reached the host service"; else echo "REFUSED  connect to the host service 127.0.0.1:'"$port"': $(why bash -c "exec 3<>/dev/tcp/127.0.0.1/'"$port"'")"; fi
if [ -s secrets/token ] && cat secrets/token >/dev/null 2>&1; then echo "UNEXPECTED: read the secret"; else echo "REFUSED  read of the deny_read secret secrets/token: $(why cat secrets/token) (secrets/ is masked)"; fi
'
"${run_as[@]}" "$shell" --run --workspace "$ws" --deny-read "$ws/secrets" -- /bin/bash -c "$script"
rc=$?
echo
echo "--- the guarantee report of that session (agent-shell --report):"
"${run_as[@]}" "$shell" --report
echo
echo "--- after the session, on the host: $(cat "$ws/agent-output.txt" 2>/dev/null || echo 'no file') (kept in the workspace)"
exit $rc
