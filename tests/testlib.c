/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

static uid_t chosen_uid;

uid_t sbx_test_uid(void)
{
	if (chosen_uid == 0) {
		for (uid_t u = 61000; u < 61900; u++) {
			if (!getpwuid(u) && !getgrgid((gid_t)u)) {
				chosen_uid = u;
				break;
			}
		}
		if (chosen_uid == 0)
			abort();
	}
	return chosen_uid;
}

gid_t sbx_test_gid(void)
{
	return (gid_t)sbx_test_uid();
}

void sbx_test_drop_to_agent(void)
{
	uid_t uid = sbx_test_uid();
	gid_t gid = sbx_test_gid();

	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0) {
		fprintf(stderr, "drop to agent uid %u: %s\n", uid, strerror(errno));
		_exit(90);
	}
	if (setuid(0) == 0 || geteuid() == 0) {
		fprintf(stderr, "drop to agent: root regained\n");
		_exit(91);
	}
}

int sbx_test_fork(bool drop, int (*fn)(void *), void *arg)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (drop)
			sbx_test_drop_to_agent();
		_exit(fn(arg));
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

int sbx_test_status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

char *sbx_test_mkdtemp(const char *tag)
{
	char *path = NULL;

	if (asprintf(&path, "/tmp/sbx-test-%s-XXXXXX", tag) < 0)
		abort();
	if (!mkdtemp(path))
		abort();
	if (chmod(path, 0755) != 0)
		abort();
	return path;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	if (remove(p) != 0 && errno != ENOENT)
		fprintf(stderr, "rmtree: %s: %s\n", p, strerror(errno));
	return 0;
}

void sbx_test_rmtree(const char *path)
{
	if (path && path[0] == '/' && strncmp(path, "/tmp/sbx-test-", 14) == 0)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
