/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for init.c: PID 1 of the session's pid namespace and the outer waiter. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

/* outer()'s exit code: sbx_userns_enter failed (its message on stderr). */
#define ENTER_FAILED 77
#define ENTER_FAILED_MSG \
	"sbx_userns_enter failed (message above) although a raw unshare(CLONE_NEWUSER) works"

static int ready_pipe[2] = { -1, -1 };	/* worker -> test: "I am running" */

/* The sequence of docs/design.md section 4: outer (agent) -> userns -> pid+mount ns -> fork
 * init -> init mounts its /proc and forks the worker -> supervise. */
static int outer(int (*worker)(void))
{
	struct sbx_error err;
	pid_t init, w;

	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);	/* see test_ns.c */
	if (sbx_userns_enter(getuid(), getgid(), &err) != 0) {
		fprintf(stderr, "sbx_userns_enter: %s\n", err.msg);
		return ENTER_FAILED;
	}
	if (sbx_ns_unshare(CLONE_NEWPID | CLONE_NEWNS, &err) != 0)
		return 60;
	sbx_init_block_signals();
	init = fork();
	if (init < 0)
		return 61;
	if (init == 0) {
		if (getpid() != 1)
			_exit(62);
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
			_exit(63);
		sbx_init_block_signals();
		w = fork();
		if (w < 0)
			_exit(64);
		if (w == 0) {
			sbx_signals_reset();
			_exit(worker());
		}
		_exit(sbx_init_supervise(w));
	}
	return sbx_wait_forward(init);
}

static pid_t start_outer(int (*worker)(void))
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		sbx_test_drop_to_agent();
		_exit(outer(worker));
	}
	return pid;
}

/* Wait at most 10 s; kill the outer (ours) when it hangs. */
static int wait_code(pid_t pid)
{
	int status = 0, i;

	for (i = 0; i < 1000; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return sbx_test_status_code(status);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static int run(int (*worker)(void))
{
	int code;

	/* Skip on the independent probe only, never on sbx_userns_enter. */
	SBX_TEST_REQUIRE_USERNS();
	code = wait_code(start_outer(worker));
	if (code == ENTER_FAILED)
		fail_msg(ENTER_FAILED_MSG);
	return code;
}

static int worker_exit7(void)
{
	/* init is PID 1 in this namespace, we are its first child. */
	if (getpid() != 2 || getppid() != 1)
		return 50;
	return 7;
}

static void test_exit_code(void **state)
{
	(void)state;
	assert_int_equal(run(worker_exit7), 7);
}

static int worker_sigterm(void)
{
	raise(SIGTERM);
	return 51;
}

static void test_killed_by_signal(void **state)
{
	(void)state;
	assert_int_equal(run(worker_sigterm), 128 + SIGTERM);
}

static int worker_wait_hup(void)
{
	/* An interactive shell leads its own group; the group gets it too. */
	setpgid(0, 0);
	if (write(ready_pipe[1], "r", 1) != 1)
		return 52;
	for (;;)
		pause();
}

static void test_sighup_forwarded(void **state)
{
	char c;
	pid_t pid;

	(void)state;
	SBX_TEST_REQUIRE_USERNS();
	assert_int_equal(pipe2(ready_pipe, O_CLOEXEC), 0);
	pid = start_outer(worker_wait_hup);
	assert_true(pid > 0);
	close(ready_pipe[1]);
	if (read(ready_pipe[0], &c, 1) != 1) {
		close(ready_pipe[0]);
		if (wait_code(pid) == ENTER_FAILED)
			fail_msg(ENTER_FAILED_MSG);
		fail_msg("worker never started");
	}
	close(ready_pipe[0]);
	/* The disconnect: sshd's SIGHUP reaches the outer process only. */
	assert_int_equal(kill(pid, SIGHUP), 0);
	assert_int_equal(wait_code(pid), 128 + SIGHUP);
}

static int count_zombies(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[300], *buf = NULL, *p;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (sbx_read_file(path, 4096, &buf, NULL, NULL) != 0)
			continue;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'Z')
			n++;
		free(buf);
	}
	closedir(d);
	return n;
}

static int worker_orphan(void)
{
	int p[2], i;
	pid_t a, c;

	/* Positive control: an unreaped child of ours shows as a zombie. */
	c = fork();
	if (c == 0)
		_exit(0);
	usleep(100000);
	if (count_zombies() != 1)
		return 53;
	waitpid(c, NULL, 0);
	/* a forks b and exits at once: b is orphaned, reparented to init. */
	if (pipe(p) != 0)
		return 54;
	a = fork();
	if (a == 0) {
		pid_t b = fork();

		if (b == 0) {
			usleep(100000);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(a, NULL, 0);
	for (i = 0; i < 50; i++) {
		usleep(20000);
		if (i > 10 && count_zombies() == 0)
			return 0;	/* b died and init reaped it */
	}
	return 55;
}

static void test_orphan_reaped(void **state)
{
	(void)state;
	assert_int_equal(run(worker_orphan), 0);
}

static int worker_background(void)
{
	pid_t bg = fork();

	if (bg == 0) {
		/* Ignores the polite signals; holds the test's pipe open. */
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		setsid();
		for (;;)
			pause();
	}
	usleep(50000);
	return kill(bg, 0) == 0 ? 0 : 56;	/* positive control: it runs */
}

static void test_background_killed(void **state)
{
	struct timespec t0, t1;
	char c;

	(void)state;
	assert_int_equal(pipe2(ready_pipe, O_CLOEXEC), 0);
	/* Everyone in the tree inherits the write end without CLOEXEC. */
	assert_int_equal(fcntl(ready_pipe[1], F_SETFD, 0), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(run(worker_background), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(ready_pipe[1]);
	/* EOF now: no process of the namespace is left holding the pipe. */
	assert_int_equal(fcntl(ready_pipe[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(read(ready_pipe[0], &c, 1), 0);
	close(ready_pipe[0]);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
}

static int child_not_init(void *arg)
{
	pid_t c;

	(void)arg;
	/* Outside a pid ns: no kill(-1), just the child's status. */
	sbx_init_block_signals();
	c = fork();
	if (c == 0) {
		sbx_signals_reset();
		_exit(9);
	}
	return sbx_wait_forward(c) == 9 && sbx_init_supervise(getpid()) == 255 ? 0 : 1;
}

static void test_wait_forward_plain(void **state)
{
	(void)state;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_not_init, NULL)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_killed_by_signal),
		cmocka_unit_test(test_sighup_forwarded),
		cmocka_unit_test(test_orphan_reaped),
		cmocka_unit_test(test_background_killed),
		cmocka_unit_test(test_wait_forward_plain),
	};
	return cmocka_run_group_tests_name("init", tests, NULL, NULL);
}
