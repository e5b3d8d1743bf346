/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for env.c: environment allow-list, fd closing, signal reset. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

static void fill_session(struct sbx_session *s)
{
	memset(s, 0, sizeof(*s));
	strcpy(s->user, "agent1");
	strcpy(s->home, "/home/agent1");
	s->uid = sbx_test_uid();
	s->gid = sbx_test_gid();
}

static const char *env_get(char **env, const char *name)
{
	size_t n = strlen(name);

	for (; *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static void test_env_allowlist(void **state)
{
	char *in[] = {
		"LD_PRELOAD=/tmp/evil.so", "LD_LIBRARY_PATH=/tmp", "BASH_ENV=/tmp/x",
		"ENV=/tmp/x", "GLIBC_TUNABLES=glibc.malloc.check=3", "PYTHONPATH=/tmp",
		"HOME=/root", "USER=root", "SHELL=/bin/evil", "LOGNAME=root",
		"TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC",
		"SSH_CONNECTION=10.0.0.1 5555 10.0.0.2 22", "IFS=x", "LC_=x",
		"LC_lower=x", "=novalue", "NOEQUALS", NULL,
	};
	struct sbx_session s;
	struct sbx_error err;
	char **env = NULL;

	(void)state;
	fill_session(&s);
	assert_int_equal(sbx_env_build(in, &s, "/bin/bash", &env, &err), 0);
	assert_null(env_get(env, "LD_PRELOAD"));
	assert_null(env_get(env, "LD_LIBRARY_PATH"));
	assert_null(env_get(env, "BASH_ENV"));
	assert_null(env_get(env, "ENV"));
	assert_null(env_get(env, "GLIBC_TUNABLES"));
	assert_null(env_get(env, "PYTHONPATH"));
	assert_null(env_get(env, "IFS"));
	assert_null(env_get(env, "LC_"));
	assert_null(env_get(env, "LC_lower"));
	assert_string_equal(env_get(env, "TERM"), "xterm-256color");
	assert_string_equal(env_get(env, "LANG"), "C.UTF-8");
	assert_string_equal(env_get(env, "LC_ALL"), "C");
	assert_string_equal(env_get(env, "TZ"), "UTC");
	assert_string_equal(env_get(env, "SSH_CONNECTION"), "10.0.0.1 5555 10.0.0.2 22");
	/* From the session, never from the caller. */
	assert_string_equal(env_get(env, "HOME"), "/home/agent1");
	assert_string_equal(env_get(env, "USER"), "agent1");
	assert_string_equal(env_get(env, "LOGNAME"), "agent1");
	assert_string_equal(env_get(env, "SHELL"), "/bin/bash");
	assert_string_equal(env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
	sbx_env_free(env);
}

/* network = proxy: the caller's proxy variables never pass (not on the
 * allow-list); the session's point at the bridge. */
static void test_env_proxy(void **state)
{
	char *in[] = { "https_proxy=http://evil:1", "NO_PROXY=*", "TERM=dumb", NULL };
	struct sbx_session s;
	struct sbx_error err;
	char **env = NULL;
	size_t n = 0;

	(void)state;
	fill_session(&s);
	assert_int_equal(sbx_env_build(in, &s, NULL, &env, &err), 0);
	assert_null(env_get(env, "https_proxy"));
	assert_null(env_get(env, "NO_PROXY"));
	assert_int_equal(sbx_env_set_proxy(&env, 3128, &err), 0);
	assert_string_equal(env_get(env, "http_proxy"), "http://127.0.0.1:3128");
	assert_string_equal(env_get(env, "HTTPS_PROXY"), "http://127.0.0.1:3128");
	assert_string_equal(env_get(env, "ALL_PROXY"), "socks5h://127.0.0.1:3128");
	assert_string_equal(env_get(env, "all_proxy"), "socks5h://127.0.0.1:3128");
	assert_string_equal(env_get(env, "no_proxy"), "localhost,127.0.0.1,::1");
	assert_string_equal(env_get(env, "TERM"), "dumb");
	for (char **e = env; *e; e++)
		if (strstr(*e, "proxy=") || strstr(*e, "PROXY="))
			n++;
	assert_int_equal(n, 8);
	sbx_env_free(env);
}

static void test_env_path_and_control_bytes(void **state)
{
	char *in[] = { "PATH=/opt/bin:/usr/bin", "TERM=xterm\x1b]0;pwn\x07",
		       "LANG=a\tb", "TZ=x\x7f", "LC_CTYPE=ok", "LC_CTYPE=second", NULL };
	struct sbx_session s;
	struct sbx_error err;
	char **env = NULL;

	(void)state;
	fill_session(&s);
	assert_int_equal(sbx_env_build(in, &s, NULL, &env, &err), 0);
	assert_string_equal(env_get(env, "PATH"), "/opt/bin:/usr/bin");
	assert_null(env_get(env, "TERM"));		/* ESC/BEL */
	assert_null(env_get(env, "TZ"));		/* DEL */
	assert_string_equal(env_get(env, "LANG"), "a\tb");	/* TAB is fine */
	assert_string_equal(env_get(env, "LC_CTYPE"), "ok");	/* first wins */
	assert_string_equal(env_get(env, "SHELL"), "/bin/bash");
	sbx_env_free(env);

	/* A control byte in a session value is an error, not a silent drop. */
	strcpy(s.home, "/home/a\nb");
	env = NULL;
	assert_int_equal(sbx_env_build(in, &s, NULL, &env, &err), -EINVAL);
	assert_null(env);
	assert_non_null(strstr(err.msg, "HOME"));
}

static void test_env_limits(void **state)
{
	struct sbx_session s;
	struct sbx_error err;
	char **in, **env = NULL;
	size_t i, n = 0, bytes = 0;

	(void)state;
	fill_session(&s);
	in = calloc(1001, sizeof(*in));
	assert_non_null(in);
	for (i = 0; i < 1000; i++) {
		/* 1000 x ~100 bytes: over both the count and the byte cap. */
		assert_true(asprintf(&in[i], "LC_X%c%c%c=%090zu", (int)('A' + i / 676),
				     (int)('A' + i / 26 % 26), (int)('A' + i % 26), i) > 0);
	}
	assert_int_equal(sbx_env_build(in, &s, NULL, &env, &err), 0);
	for (i = 0; env[i]; i++) {
		n++;
		bytes += strlen(env[i]) + 1;
	}
	assert_true(n <= 256);
	assert_true(bytes <= 32 * 1024);
	assert_int_equal(n, 256);	/* positive control: it kept what fits */
	/* ~4 KiB values: now the byte cap binds first. */
	sbx_env_free(env);
	env = NULL;
	for (i = 0; i < 1000; i++) {
		free(in[i]);
		assert_true(asprintf(&in[i], "LC_X%c%c%c=%04000zu", (int)('A' + i / 676),
				     (int)('A' + i / 26 % 26), (int)('A' + i % 26), i) > 0);
	}
	assert_int_equal(sbx_env_build(in, &s, NULL, &env, &err), 0);
	n = bytes = 0;
	for (i = 0; env[i]; i++) {
		n++;
		bytes += strlen(env[i]) + 1;
	}
	assert_true(bytes <= 32 * 1024);
	assert_true(n >= 7 && n < 20);
	assert_non_null(env_get(env, "PATH"));
	assert_non_null(env_get(env, "HOME"));
	assert_non_null(env_get(env, "LC_XAAA"));
	sbx_env_free(env);
	for (i = 0; i < 1000; i++)
		free(in[i]);
	free(in);
}

static int child_fd_close(void *arg)
{
	struct sbx_error err;
	int fd = open("/dev/null", O_RDONLY);

	(void)arg;
	if (fd < 0 || dup2(fd, 5) != 5 || dup2(fd, 17) != 17)
		return 10;
	close(fd);
	if (fcntl(17, F_GETFD) < 0)	/* positive control: it was open */
		return 11;
	if (sbx_fd_close_above(2, &err) != 0)
		return 12;
	errno = 0;
	if (fcntl(5, F_GETFD) != -1 || errno != EBADF)
		return 13;
	errno = 0;
	if (fcntl(17, F_GETFD) != -1 || errno != EBADF)
		return 14;
	for (fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0)
			return 15;
	if (sbx_fd_close_above(-2, &err) != -EINVAL)
		return 16;
	return 0;
}

static void test_fd_close_above(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_fd_close, NULL)), 0);
}

static void on_signal(int sig)
{
	(void)sig;
}

static int child_signals(void *arg)
{
	struct sigaction sa;
	sigset_t set;

	(void)arg;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGRTMIN + 5, &sa, NULL);	/* a real-time one, ignored */
	sa.sa_handler = on_signal;		/* and caught ones: SigCgt */
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGRTMAX, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sbx_signals_reset();
	sigaction(SIGPIPE, NULL, &sa);
	if (sa.sa_handler != SIG_DFL)
		return 10;
	sigaction(SIGINT, NULL, &sa);
	if (sa.sa_handler != SIG_DFL)
		return 11;
	sigaction(SIGRTMIN + 5, NULL, &sa);
	if (sa.sa_handler != SIG_DFL)
		return 14;
	sigaction(SIGHUP, NULL, &sa);
	if (sa.sa_handler != SIG_DFL)
		return 15;
	sigaction(SIGRTMAX, NULL, &sa);
	if (sa.sa_handler != SIG_DFL)
		return 16;
	sigprocmask(SIG_SETMASK, NULL, &set);
	if (sigismember(&set, SIGUSR1) || sigismember(&set, SIGTERM))
		return 12;
	raise(SIGPIPE);		/* default action now: dies of it */
	return 13;
}

static void test_signals_reset(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_signals, NULL)),
			 128 + SIGPIPE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_allowlist),
		cmocka_unit_test(test_env_path_and_control_bytes),
		cmocka_unit_test(test_env_limits),
		cmocka_unit_test(test_env_proxy),
		cmocka_unit_test(test_fd_close_above),
		cmocka_unit_test(test_signals_reset),
	};
	return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
