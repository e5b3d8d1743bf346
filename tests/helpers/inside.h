/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the programs tests run inside a sandbox (sbx_probe_inside,
 * escape_helper): one line per attempt, "name OUTCOME", where OUTCOME is
 * OK, an errno name, SIG<name> for a child killed by a signal, exit=N, or a
 * value the test compares. Static and header-only: both are standalone
 * programs (no libsbx) and each uses what it needs.
 */
#ifndef SBX_TESTS_INSIDE_H
#define SBX_TESTS_INSIDE_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define INSIDE_UNUSED __attribute__((unused))

/* Where the lines go: stdout unless the program points it elsewhere. */
static FILE *inside_out;

static void put(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *name, const char *fmt, ...)
{
	FILE *o = inside_out ? inside_out : stdout;
	va_list ap;

	fprintf(o, "%s ", name);
	va_start(ap, fmt);
	vfprintf(o, fmt, ap);
	va_end(ap);
	fputc('\n', o);
	fflush(o);
}

static const char *err_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

/* "OK" for ret >= 0, else the errno name; closes a returned fd when asked. */
static INSIDE_UNUSED void put_ret(const char *name, long ret, bool is_fd)
{
	if (ret < 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	if (is_fd)
		close((int)ret);
	put(name, "OK");
}

/* exit=N, or SIG<name> for a signal. */
static INSIDE_UNUSED void put_status(const char *name, int status)
{
	if (WIFSIGNALED(status))
		put(name, "SIG%s", sigabbrev_np(WTERMSIG(status)) ?: "?");
	else
		put(name, "exit=%d", WEXITSTATUS(status));
}

/* Fork, run fn in the child, wait: the raw status, or -1 (put says why). */
static int inside_fork_wait(const char *name, int (*fn)(void *), void *arg)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		put(name, "fork:%s", err_name(errno));
		return -1;
	}
	if (pid == 0)
		_exit(fn(arg));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Run fn in a child: "OK" when it returns 0, the errno it returns, or the
 * signal that killed it. */
static INSIDE_UNUSED void put_child(const char *name, int (*fn)(void *), void *arg)
{
	int status = inside_fork_wait(name, fn, arg);

	if (status < 0)
		return;
	if (WIFSIGNALED(status))
		put(name, "SIG%s", sigabbrev_np(WTERMSIG(status)) ?: "?");
	else if (WEXITSTATUS(status) == 0)
		put(name, "OK");
	else
		put(name, "%s", err_name(WEXITSTATUS(status)));
}

/* Run fn in a child (one that execs, typically): exit=N or SIG<name>. */
static INSIDE_UNUSED void put_exit(const char *name, int (*fn)(void *), void *arg)
{
	int status = inside_fork_wait(name, fn, arg);

	if (status >= 0)
		put_status(name, status);
}

/* Before anything else opens a file: the fds the program was given. */
static INSIDE_UNUSED void list_fds(char *buf, size_t size)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t len = 0;

	buf[0] = '\0';
	if (!d) {
		snprintf(buf, size, "%s", err_name(errno));
		return;
	}
	while ((e = readdir(d)) != NULL) {
		long fd;
		int n;

		if (e->d_name[0] == '.')
			continue;
		fd = strtol(e->d_name, NULL, 10);
		if (fd == dirfd(d))
			continue;	/* the listing's own fd */
		n = snprintf(buf + len, size - len, "%s%ld", len ? "," : "", fd);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
	closedir(d);
}

#endif
