/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for ns.c: user namespace mapping, unshare, lo up, ns inodes. */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

/* A child's exit code: sbx_userns_enter failed (its message on stderr). */
#define ENTER_FAILED 60

static int enter_userns(void)
{
	struct sbx_error err;

	/* setresuid() from root cleared "dumpable" (root-owned /proc/self);
	 * an exec'd agent-shell is dumpable anyway. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (sbx_userns_enter(getuid(), getgid(), &err) != 0) {
		fprintf(stderr, "sbx_userns_enter: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Skip only on the independent probe's word; once it says user namespaces
 * work, a failing sbx_userns_enter is this suite's failure. */
static void expect_code(int (*fn)(void *), void *arg)
{
	int code;

	SBX_TEST_REQUIRE_USERNS();
	code = sbx_test_status_code(sbx_test_fork(true, fn, arg));
	if (code == ENTER_FAILED)
		fail_msg("sbx_userns_enter failed (message above) although a raw "
			 "unshare(CLONE_NEWUSER) works for the test uid");
	assert_int_equal(code, 0);
}

static int child_userns(void *arg)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	unsigned long before = sbx_ns_inode("user");
	char want[128], *buf = NULL;

	(void)arg;
	if (before == 0)
		return 10;
	if (enter_userns() != 0)
		return ENTER_FAILED;
	if (getuid() != uid || geteuid() != uid || getgid() != gid)
		return 11;
	if (sbx_ns_inode("user") == before)
		return 12;
	/* The kernel's own format: "%10u %10u %10u\n". */
	snprintf(want, sizeof(want), "%10u %10u %10u\n", uid, uid, 1u);
	if (sbx_read_file("/proc/self/uid_map", 4096, &buf, NULL, NULL) != 0 ||
	    strcmp(buf, want) != 0)
		return 13;
	free(buf);
	snprintf(want, sizeof(want), "%10u %10u %10u\n", gid, gid, 1u);
	if (sbx_read_file("/proc/self/gid_map", 4096, &buf, NULL, NULL) != 0 ||
	    strcmp(buf, want) != 0)
		return 14;
	free(buf);
	if (sbx_read_file("/proc/self/setgroups", 4096, &buf, NULL, NULL) != 0 ||
	    strcmp(buf, "deny\n") != 0)
		return 15;
	free(buf);
	/* setgroups is refused even with full caps in the namespace. */
	errno = 0;
	if (setgroups(0, NULL) != -1 || errno != EPERM)
		return 16;
	/* Root (uid 0) is not mapped: not reachable inside. */
	if (setuid(0) != -1)
		return 17;
	return 0;
}

static void test_userns_enter(void **state)
{
	(void)state;
	expect_code(child_userns, NULL);
}

static const char *const ns_list[] = { "mnt", "net", "ipc", "uts", "cgroup", "pid" };

static int child_unshare(void *arg)
{
	unsigned long before[ARRAY_SIZE(ns_list)];
	struct sbx_error err;
	int status = 0;
	pid_t pid;
	size_t i;

	(void)arg;
	for (i = 0; i < ARRAY_SIZE(ns_list); i++)
		before[i] = sbx_ns_inode(ns_list[i]);
	if (enter_userns() != 0)
		return ENTER_FAILED;
	if (sbx_ns_unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
			   CLONE_NEWUTS | CLONE_NEWCGROUP, &err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 10;
	}
	/* The caller's own pid ns does not change; its next child's does
	 * (pid_for_children reads as nothing until that child exists). */
	pid = fork();
	if (pid < 0)
		return 12;
	if (pid == 0) {
		for (i = 0; i < ARRAY_SIZE(ns_list); i++) {
			unsigned long now = sbx_ns_inode(ns_list[i]);

			if (before[i] == 0 || now == 0 || now == before[i]) {
				fprintf(stderr, "ns %s: %lu -> %lu\n", ns_list[i],
					before[i], now);
				_exit(11);
			}
		}
		_exit(getpid() == 1 ? 0 : 13);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 14;
	return sbx_test_status_code(status);
}

static void test_unshare_all(void **state)
{
	(void)state;
	expect_code(child_unshare, NULL);
}

static int child_net(void *arg)
{
	int port = *(int *)arg;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	struct sbx_error err;
	char buf[8];
	int u, t;

	if (enter_userns() != 0)
		return ENTER_FAILED;
	if (sbx_ns_unshare(CLONE_NEWNET, &err) != 0)
		return 10;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	u = socket(AF_INET, SOCK_DGRAM, 0);
	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(u, (struct sockaddr *)&a, &alen) != 0)
		return 11;
	/* lo starts down in a new netns: nothing reaches 127.0.0.1 yet. */
	errno = 0;
	if (sendto(u, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)) != -1 ||
	    errno != ENETUNREACH)
		return 12;
	if (sbx_net_lo_up(&err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 13;
	}
	if (sendto(u, "ping", 4, 0, (struct sockaddr *)&a, sizeof(a)) != 4 ||
	    recv(u, buf, sizeof(buf), 0) != 4 || memcmp(buf, "ping", 4) != 0)
		return 14;
	/* The host's loopback listener is in another netns. */
	a.sin_port = htons((uint16_t)port);
	t = socket(AF_INET, SOCK_STREAM, 0);
	errno = 0;
	if (t < 0 || connect(t, (struct sockaddr *)&a, sizeof(a)) != -1 ||
	    errno != ECONNREFUSED)
		return 15;
	/* Idempotent when already up. */
	return sbx_net_lo_up(&err) == 0 ? 0 : 16;
}

static void test_net_lo(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l, port, c;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	/* Positive control: the listener is reachable from the host netns. */
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	close(c);
	expect_code(child_net, &port);
	close(l);
}

static int child_no_userns(void *arg)
{
	struct sbx_error err;

	(void)arg;
	/* Without a user namespace the agent has no CAP_SYS_ADMIN. */
	if (sbx_ns_unshare(CLONE_NEWNS, &err) != -EPERM || !strstr(err.msg, "unshare(mount)"))
		return 10;
	if (sbx_ns_unshare(CLONE_NEWNET | CLONE_NEWIPC, &err) != -EPERM ||
	    !strstr(err.msg, "unshare(net,ipc)"))
		return 11;
	if (sbx_ns_unshare(CLONE_FILES, &err) != -EINVAL)
		return 12;
	if (sbx_ns_unshare(0, &err) != -EINVAL)
		return 13;
	/* Positive control: the same call works once in a userns. */
	if (enter_userns() != 0)
		return ENTER_FAILED;
	return sbx_ns_unshare(CLONE_NEWNS, &err) == 0 ? 0 : 14;
}

static void test_unshare_needs_caps(void **state)
{
	(void)state;
	expect_code(child_no_userns, NULL);
}

static void test_ns_inode(void **state)
{
	(void)state;
	assert_true(sbx_ns_inode("mnt") != 0);
	assert_int_equal(sbx_ns_inode("../../etc/passwd"), 0);
	assert_int_equal(sbx_ns_inode("nope"), 0);
	assert_int_equal(sbx_ns_inode(""), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_userns_enter),
		cmocka_unit_test(test_unshare_all),
		cmocka_unit_test(test_net_lo),
		cmocka_unit_test(test_unshare_needs_caps),
		cmocka_unit_test(test_ns_inode),
	};
	return cmocka_run_group_tests_name("ns", tests, NULL, NULL);
}
