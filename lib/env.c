/* SPDX-License-Identifier: BSD-3-Clause */
/* Process hygiene before anything else runs: environment, fds, signals. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define ENV_MAX_VARS 256
#define ENV_MAX_BYTES (32u * 1024u)
#define ENV_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define ENV_DEFAULT_SHELL "/bin/bash"

/* Names copied from the caller's environment. Everything else is dropped:
 * LD_* and GLIBC_TUNABLES change how every binary loads, BASH_ENV/ENV make
 * shells source agent-chosen files, PYTHONPATH and friends do the same for
 * interpreters. An allow-list fails closed on names we never heard of. */
static const char *const env_keep[] = {
	"PATH", "TERM", "LANG", "TZ", "SSH_CONNECTION", "SSH_CLIENT",
	"SSH_TTY", "SSH_ORIGINAL_COMMAND", "COLORTERM", "AGENT_SANDBOX_SESSION",
};

static bool env_name_kept(const char *entry, size_t name_len)
{
	size_t i;

	if (name_len > 3 && strncmp(entry, "LC_", 3) == 0) {
		for (i = 3; i < name_len; i++) {
			char c = entry[i];

			if (!((c >= 'A' && c <= 'Z') || c == '_'))
				return false;
		}
		return true;
	}
	for (i = 0; i < ARRAY_SIZE(env_keep); i++) {
		if (strlen(env_keep[i]) == name_len &&
		    strncmp(entry, env_keep[i], name_len) == 0)
			return true;
	}
	return false;
}

/* Control bytes (other than TAB) in a value are how terminal escapes and
 * header/log injection travel; DEL counts as one. */
static bool env_value_clean(const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

struct env_builder {
	char **vars;
	size_t n;
	size_t bytes;
};

/* 1 when added, 0 when it would exceed a limit, -ENOMEM. */
static int env_add(struct env_builder *b, const char *name, size_t name_len,
		   const char *value)
{
	size_t vlen = strlen(value);
	size_t need = name_len + 1 + vlen + 1;
	char *s;

	if (b->n >= ENV_MAX_VARS || b->bytes + need > ENV_MAX_BYTES)
		return 0;
	s = malloc(need);
	if (!s)
		return -ENOMEM;
	memcpy(s, name, name_len);
	s[name_len] = '=';
	memcpy(s + name_len + 1, value, vlen + 1);
	b->vars[b->n++] = s;
	b->bytes += need;
	return 1;
}

static bool env_has(const struct env_builder *b, const char *name, size_t name_len)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (strncmp(b->vars[i], name, name_len) == 0 &&
		    b->vars[i][name_len] == '=')
			return true;
	}
	return false;
}

void sbx_env_free(char **env)
{
	size_t i;

	if (!env)
		return;
	for (i = 0; env[i]; i++)
		free(env[i]);
	free(env);
}

int sbx_env_set_proxy(char ***env, int port, struct sbx_error *err)
{
	static const char *const names[] = {
		"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
		"ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
	};
	char http[64], socks[64];
	char **e = *env, **grown;
	size_t n = 0, i;

	while (e[n])
		n++;
	grown = realloc(e, (n + ARRAY_SIZE(names) + 1) * sizeof(*e));
	if (!grown)
		return sbx_error_set(err, ENOMEM, "sbx_env_set_proxy: out of memory");
	*env = e = grown;
	snprintf(http, sizeof(http), "http://127.0.0.1:%d", port);
	/* socks5h: the name goes to the proxy, which resolves it; there is
	 * no resolver inside. */
	snprintf(socks, sizeof(socks), "socks5h://127.0.0.1:%d", port);
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		const char *v = i < 4 ? http : i < 6 ? socks : "localhost,127.0.0.1,::1";
		size_t need = strlen(names[i]) + strlen(v) + 2;

		e[n] = malloc(need);
		if (!e[n])
			return sbx_error_set(err, ENOMEM, "sbx_env_set_proxy: out of memory");
		snprintf(e[n], need, "%s=%s", names[i], v);
		e[++n] = NULL;
	}
	return 0;
}

int sbx_env_build(char *const *envp, const struct sbx_session *s,
		  const char *shell, char ***out, struct sbx_error *err)
{
	struct env_builder b = { 0 };
	const char *session_vars[4][2];
	size_t i;
	int r;

	if (!s || !out)
		return sbx_error_set(err, EINVAL, "sbx_env_build: missing argument");
	if (!shell || !shell[0])
		shell = ENV_DEFAULT_SHELL;
	session_vars[0][0] = "HOME";
	session_vars[0][1] = s->home;
	session_vars[1][0] = "USER";
	session_vars[1][1] = s->user;
	session_vars[2][0] = "LOGNAME";
	session_vars[2][1] = s->user;
	session_vars[3][0] = "SHELL";
	session_vars[3][1] = shell;
	for (i = 0; i < ARRAY_SIZE(session_vars); i++) {
		if (!session_vars[i][1][0] || !env_value_clean(session_vars[i][1]))
			return sbx_error_set(err, EINVAL,
					     "sbx_env_build(%s): empty or control bytes in the session value",
					     session_vars[i][0]);
	}

	b.vars = calloc(ENV_MAX_VARS + 1, sizeof(*b.vars));
	if (!b.vars)
		return sbx_error_set(err, ENOMEM, "sbx_env_build: out of memory");

	/* The session's own values first: they always fit and always win. */
	for (i = 0; i < ARRAY_SIZE(session_vars); i++) {
		r = env_add(&b, session_vars[i][0], strlen(session_vars[i][0]),
			    session_vars[i][1]);
		if (r < 0)
			goto fail;
	}
	for (i = 0; envp && envp[i]; i++) {
		const char *e = envp[i];
		const char *eq = strchr(e, '=');
		size_t name_len;

		if (!eq || eq == e)
			continue;
		name_len = (size_t)(eq - e);
		if (!env_name_kept(e, name_len) || !env_value_clean(eq + 1))
			continue;
		/* First one wins, as with getenv(); a second copy of a name
		 * is how some loaders have been fooled. */
		if (env_has(&b, e, name_len))
			continue;
		r = env_add(&b, e, name_len, eq + 1);
		if (r < 0)
			goto fail;
	}
	if (!env_has(&b, "PATH", 4)) {
		r = env_add(&b, "PATH", 4, ENV_DEFAULT_PATH);
		if (r < 0)
			goto fail;
		if (r == 0) {
			/* Full: make room for PATH by dropping the last copied variable. */
			b.n--;
			b.bytes -= strlen(b.vars[b.n]) + 1;
			free(b.vars[b.n]);
			b.vars[b.n] = NULL;
			r = env_add(&b, "PATH", 4, ENV_DEFAULT_PATH);
			if (r <= 0) {
				r = r < 0 ? r : -E2BIG;
				goto fail;
			}
		}
	}
	b.vars[b.n] = NULL;
	*out = b.vars;
	return 0;
fail:
	sbx_env_free(b.vars);
	return sbx_error_set(err, -r, "sbx_env_build: %s", strerror(-r));
}

int sbx_fd_close_above(int maxfd, struct sbx_error *err)
{
	DIR *d;
	struct dirent *de;
	int dfd, r = 0;

	if (maxfd < -1)
		return sbx_error_set(err, EINVAL, "sbx_fd_close_above(%d): bad fd", maxfd);
	if (close_range((unsigned)(maxfd + 1), ~0U, 0) == 0)
		return 0;
	if (errno != ENOSYS && errno != EINVAL && errno != EPERM)
		return sbx_error_set(err, errno, "close_range(%d, ~0): %s",
				     maxfd + 1, strerror(errno));
	/* Kernels before 5.9 (or a seccomp filter that refuses close_range):
	 * walk the fds the kernel says are open. */
	d = opendir("/proc/self/fd");
	if (!d)
		return sbx_error_set(err, errno, "opendir(/proc/self/fd): %s",
				     strerror(errno));
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		uint64_t fd;

		if (sbx_parse_u64(de->d_name, false, 0, INT32_MAX, &fd) != 0)
			continue;
		if ((int)fd <= maxfd || (int)fd == dfd)
			continue;
		if (close((int)fd) != 0 && errno != EBADF && errno != EINTR && r == 0)
			r = sbx_error_set(err, errno, "close(%d): %s", (int)fd,
					  strerror(errno));
	}
	closedir(d);
	return r;
}

/* A status mask (SigIgn, SigCgt: 16 hex digits, bit n-1 for signal n)
 * into *mask; false when the field is missing or not one. */
static bool status_mask(const char *status, const char *name, uint64_t *mask)
{
	char v[32], *end = NULL;

	if (sbx_status_text_field(status, name, v, sizeof(v)) != 0 || !v[0])
		return false;
	errno = 0;
	*mask = strtoull(v, &end, 16);
	return errno == 0 && end && *end == '\0';
}

void sbx_signals_reset(void)
{
	struct sigaction sa;
	sigset_t none;
	uint64_t ign, cgt, which = ~(uint64_t)0;
	char status[8192];
	int sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	/* Only the signals ignored or caught now need a call (one read of
	 * /proc/self/status instead of 62 calls); every one when it cannot
	 * be read. */
	if (sbx_proc_status_read(0, status, sizeof(status)) == 0 &&
	    status_mask(status, "SigIgn", &ign) && status_mask(status, "SigCgt", &cgt))
		which = ign | cgt;
	/* SIGPIPE too: an ignored SIGPIPE inherited from sshd makes pipelines
	 * in the session spin on EPIPE instead of ending. Signals glibc keeps
	 * for itself (32, 33) and KILL/STOP fail with EINVAL; that is fine. */
	for (sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (sig <= 64 && !(which & ((uint64_t)1 << (sig - 1))))
			continue;	/* already SIG_DFL */
		(void)sigaction(sig, &sa, NULL);
	}
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}
