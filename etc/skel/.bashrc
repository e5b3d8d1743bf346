# ~/.bashrc of an agent-sandbox home (copied once, when the home is created).
# The prompt says you are inside the sandbox and which session this is.
case $- in
*i*) ;;
*) return ;;
esac
HISTCONTROL=ignoreboth
HISTSIZE=5000
sbx_tag="sandbox"
if [ -n "${AGENT_SANDBOX_SESSION:-}" ]; then
	sbx_tag="sandbox:${AGENT_SANDBOX_SESSION:0:8}"
fi
PS1="[${sbx_tag}] \u@\h:\w\\$ "
unset sbx_tag
alias sandbox-report='agent-shell --report'
