# ~/.profile of an agent-sandbox home (copied once, when the home is created).
# PATH and the environment were already scrubbed by agent-shell; only add to them.
if [ -d "$HOME/.local/bin" ]; then
	PATH="$HOME/.local/bin:$PATH"
fi
if [ -n "${BASH_VERSION:-}" ] && [ -f "$HOME/.bashrc" ]; then
	. "$HOME/.bashrc"
fi
