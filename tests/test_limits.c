/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for limits.c: rlimits are applied, clamped, and core is always 0. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

static void set_limit(struct sbx_limits *l, enum sbx_limit which, uint64_t v)
{
	l->value[which] = v;
	l->set_mask |= 1u << which;
}

static int child_nofile(void *arg)
{
	struct sbx_limits l = { 0 };
	struct sbx_error err;
	int fd, last = -1;

	(void)arg;
	if (sbx_fd_close_above(2, &err) != 0)
		return 10;
	set_limit(&l, SBX_LIMIT_NOFILE, 16);
	if (sbx_rlimits_apply(&l, &err) != 0)
		return 11;
	/* fds 3..15 open (the positive control), the 17th fd (16) does not. */
	for (;;) {
		fd = open("/dev/null", O_RDONLY);
		if (fd < 0)
			break;
		last = fd;
	}
	if (errno != EMFILE)
		return 12;
	return last == 15 ? 0 : 13;
}

static void test_nofile(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_nofile, NULL)), 0);
}

static int write_past(bool ignore)
{
	struct sbx_limits l = { 0 };
	struct sbx_error err;
	char buf[4096];
	int fd;

	memset(buf, 'a', sizeof(buf));
	fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	if (fd < 0)
		return 10;
	set_limit(&l, SBX_LIMIT_FSIZE, 4096);
	if (sbx_rlimits_apply(&l, &err) != 0)
		return 11;
	if (ignore)
		signal(SIGXFSZ, SIG_IGN);
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))	/* up to the limit: fine */
		return 12;
	errno = 0;
	if (write(fd, "b", 1) != -1)
		return 13;
	return errno == EFBIG ? 0 : 14;
}

static int child_fsize_signal(void *arg)
{
	(void)arg;
	return write_past(false);
}

static int child_fsize_ignored(void *arg)
{
	(void)arg;
	return write_past(true);
}

static void test_fsize(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_fsize_signal, NULL)),
			 128 + SIGXFSZ);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_fsize_ignored, NULL)), 0);
}

static int child_core(void *arg)
{
	struct sbx_limits l = { 0 };
	struct sbx_error err;
	struct rlimit rl = { 1 << 20, 1 << 20 };

	(void)arg;
	if (setrlimit(RLIMIT_CORE, &rl) != 0)
		return 10;
	/* Not set at all: still forced to 0. */
	if (sbx_rlimits_apply(&l, &err) != 0 || getrlimit(RLIMIT_CORE, &rl) != 0)
		return 11;
	if (rl.rlim_cur != 0 || rl.rlim_max != 0)
		return 12;
	/* Set to something: still 0. */
	set_limit(&l, SBX_LIMIT_CORE, 1 << 20);
	if (sbx_rlimits_apply(&l, &err) != 0 || getrlimit(RLIMIT_CORE, &rl) != 0)
		return 13;
	return rl.rlim_cur == 0 && rl.rlim_max == 0 ? 0 : 14;
}

static void test_core_zero(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_core, NULL)), 0);
}

static int child_clamp(void *arg)
{
	struct sbx_limits l = { 0 };
	struct sbx_error err;
	struct rlimit rl = { 64, 64 };

	(void)arg;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 10;
	/* Asking for more than the hard limit: clamped, no error. */
	set_limit(&l, SBX_LIMIT_NOFILE, 100000);
	set_limit(&l, SBX_LIMIT_CPU, UINT64_MAX);
	set_limit(&l, SBX_LIMIT_SESSION_TIME, 5);	/* not an rlimit: ignored */
	set_limit(&l, SBX_LIMIT_TMP_SIZE, 1);
	if (sbx_rlimits_apply(&l, &err) != 0)
		return 11;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur != 64 || rl.rlim_max != 64)
		return 12;
	/* A narrower value lowers both soft and hard. */
	set_limit(&l, SBX_LIMIT_NOFILE, 32);
	if (sbx_rlimits_apply(&l, &err) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 ||
	    rl.rlim_cur != 32 || rl.rlim_max != 32)
		return 13;
	/* The hard limit is now 32 and cannot be raised again by an agent. */
	rl.rlim_cur = rl.rlim_max = 64;
	errno = 0;
	if (setrlimit(RLIMIT_NOFILE, &rl) != -1 || errno != EPERM)
		return 14;
	return 0;
}

static void test_clamp(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_clamp, NULL)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nofile),
		cmocka_unit_test(test_fsize),
		cmocka_unit_test(test_core_zero),
		cmocka_unit_test(test_clamp),
	};
	return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
