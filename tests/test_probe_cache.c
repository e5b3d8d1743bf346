/* SPDX-License-Identifier: BSD-3-Clause */
/* The boot's probe cache (lib/probe_cache.c): what root writes, and what a session believes. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seccomp.h>

#include "testlib.h"

/*
 * Everything lives in one root-owned 0755 directory under /run (trusted
 * all the way up, as the real /run/agent-sandbox is), with the cache at
 * <dir>/probe; removed in the group teardown. The entries are for the
 * unprivileged test uid, which has no passwd entry.
 */
static char *base;
static char cache[256], entry[300];

static int group_setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	base = sbx_test_mkdtemp_trusted("probecache");
	snprintf(cache, sizeof(cache), "%s/probe", base);
	snprintf(entry, sizeof(entry), "%s/%u", cache, (unsigned)sbx_test_uid());
	sbx_probe_cache_dir_for_tests(cache);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sbx_probe_cache_dir_for_tests(NULL);
	if (base)
		sbx_test_rmtree(base);
	return 0;
}

/* A file at path with exactly text, mode and owner (root makes it). */
static void put(const char *path, const char *text, mode_t mode, uid_t owner)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchown(fd, owner, 0), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
}

/* The entry this process would write now for the test uid. */
static void current_text(char *out, size_t size)
{
	struct sbx_error err = { 0 };

	assert_int_equal(sbx_probe_cache_entry_text(sbx_test_uid(), out, size, &err), 0);
}

/* A valid entry, written as root writes one, in a cache directory that is
 * root's 0755 (made again when a test left it otherwise). */
static void put_valid(void)
{
	char text[SBX_PROBE_CACHE_MAX];

	mkdir(cache, 0755);
	assert_int_equal(chown(cache, 0, 0), 0);
	assert_int_equal(chmod(cache, 0755), 0);
	current_text(text, sizeof(text));
	put(entry, text, 0644, 0);
}

static void check_is(int want, const char *why)
{
	struct sbx_error err = { 0 };
	int r = sbx_probe_cache_check(sbx_test_uid(), &err);

	if (r != want || (why && !strstr(err.msg, why))) {
		print_message("check: got %d (%s), want %d with \"%s\"\n", r, err.msg, want,
			      why ? why : "");
		fail();
	}
}

/* Replace the first "from" of the valid entry by "to" and write that. */
static void put_edited(const char *from, const char *to)
{
	char text[SBX_PROBE_CACHE_MAX], out[SBX_PROBE_CACHE_MAX + 256];
	const char *at;

	current_text(text, sizeof(text));
	at = strstr(text, from);
	assert_non_null(at);
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	put(entry, out, 0644, 0);
}

/* ---- writing ------------------------------------------------------------- */

static void test_refresh_writes_a_trusted_entry(void **state)
{
	char why[256] = "", text[SBX_PROBE_CACHE_MAX + 1], head[64];
	struct sbx_error err = { 0 };
	bool cached = false;
	struct stat st;
	ssize_t n;
	int fd;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	SBX_TEST_REQUIRE_USERNS();
	rmdir(cache);
	assert_int_equal(sbx_probe_cache_refresh(sbx_test_uid(), sbx_test_gid(), NULL, &cached,
						 why, sizeof(why), &err), 0);
	if (!cached)
		print_message("not cached: %s\n", why);
	assert_true(cached);
	/* root's file, 0644, alone in root's 0755 directory (no temporary
	 * file left beside it) */
	assert_int_equal(lstat(cache, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0755);
	assert_int_equal(lstat(entry, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0644);
	assert_int_equal(st.st_nlink, 1);
	{
		const char *argv[] = { "/bin/sh", "-c", NULL, NULL };
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "test \"$(ls -A %s)\" = %u", cache,
			 (unsigned)sbx_test_uid());
		argv[2] = cmd;
		assert_int_equal(sbx_test_run_quiet(argv), 0);
	}
	fd = open(entry, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	assert_true(n > 0);
	text[n] = '\0';
	snprintf(head, sizeof(head), "agent-sandbox probe cache 1\nuid %u\n",
		 (unsigned)sbx_test_uid());
	assert_true(strncmp(text, head, strlen(head)) == 0);
	assert_non_null(strstr(text, "\nnamespaces user mount pid net ipc uts cgroup\nwritten "));
	check_is(0, NULL);
	/* A second refresh replaces it (rename over the name). */
	assert_int_equal(sbx_probe_cache_refresh(sbx_test_uid(), sbx_test_gid(), NULL, &cached,
						 why, sizeof(why), &err), 0);
	assert_true(cached);
	check_is(0, NULL);
}

static int refresh_as_agent(void *arg)
{
	struct sbx_error err = { 0 };
	char why[64];
	bool cached = true;

	(void)arg;
	CHILD_CHECK(sbx_probe_cache_refresh(sbx_test_uid(), sbx_test_gid(), NULL, &cached, why,
					    sizeof(why), &err) == -EPERM);
	CHILD_CHECK(!cached && strstr(err.msg, "only root"));
	return 0;
}

static void test_refresh_is_root_only(void **state)
{
	struct sbx_error err = { 0 };
	char why[64];
	bool cached = true;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, refresh_as_agent, NULL)), 0);
	assert_int_equal(sbx_probe_cache_refresh(0, 0, NULL, &cached, why, sizeof(why), &err),
			 -EINVAL);
	assert_false(cached);
}

/* Root's probe as the account finds no user namespace (a filter refuses
 * it, as an LSM or a container runtime would): no entry, and the old one
 * is gone. */
static int refresh_without_userns(void *arg)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct sbx_error err = { 0 };
	char why[512] = "";
	bool cached = true;

	(void)arg;
	CHILD_CHECK(ctx != NULL);
	CHILD_CHECK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)) == 0);
	CHILD_CHECK(seccomp_load(ctx) == 0);
	seccomp_release(ctx);
	CHILD_CHECK(sbx_probe_cache_refresh(sbx_test_uid(), sbx_test_gid(), NULL, &cached, why,
					    sizeof(why), &err) == 0);
	if (cached || !strstr(why, "no user namespace")) {
		fprintf(stderr, "cached %d, why \"%s\"\n", cached, why);
		return 1;
	}
	return 0;
}

static void test_refresh_removes_what_it_cannot_vouch_for(void **state)
{
	struct stat st;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	put_valid();
	check_is(0, NULL);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, refresh_without_userns,
							    NULL)), 0);
	assert_int_equal(lstat(entry, &st), -1);
	assert_int_equal(errno, ENOENT);
	check_is(-ENOENT, "No such file");
}

/* An entry written by a root process under a seccomp filter says so, and
 * a reader without one does not take it. */
static int refresh_filtered(void *arg)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct sbx_error err = { 0 };
	char why[512] = "";
	bool cached = false;

	(void)arg;
	CHILD_CHECK(ctx != NULL);
	/* One rule nothing here calls: the filter is there, and allows. */
	CHILD_CHECK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(acct), 0) == 0);
	CHILD_CHECK(seccomp_load(ctx) == 0);
	seccomp_release(ctx);
	CHILD_CHECK(sbx_probe_cache_refresh(sbx_test_uid(), sbx_test_gid(), NULL, &cached, why,
					    sizeof(why), &err) == 0);
	CHILD_CHECK(cached);
	return 0;
}

static void test_entry_of_a_filtered_writer(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	SBX_TEST_REQUIRE_USERNS();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, refresh_filtered, NULL)), 0);
	check_is(-ESTALE, "another seccomp mode");
}

/* ---- what a session believes --------------------------------------------- */

/* As the account, under a filter that kills on any fork, clone or user
 * namespace: the probe from a valid entry makes none. */
static int probe_without_a_process(void *arg)
{
	const struct sbx_probe *p;

	(void)arg;
	sbx_probe_set_for_tests(NULL);
	CHILD_CHECK(sbx_test_forbid_processes() == 0);
	CHILD_CHECK(sbx_probe_get(&p, NULL) == 0);
	CHILD_CHECK(p->userns && p->mountns && p->pidns && p->netns && p->ipcns && p->utsns &&
		    p->cgroupns);
	CHILD_CHECK(strstr(p->ns_source, "probe cache") != NULL);
	CHILD_CHECK(p->seccomp && p->kernel[0]);
	return 0;
}

static void test_session_takes_the_entry_without_a_process(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	/* The entry as root would write it under a seccomp filter: the
	 * reader below runs under one (an entry says which mode it is for,
	 * and one for mode 0 is not taken there). */
	put_edited("\nseccomp_mode 0\n", "\nseccomp_mode 2\n");
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, probe_without_a_process,
							    NULL)), 0);
	/* Control: without the entry the same probe forks its child, and the
	 * filter kills it for that. */
	assert_int_equal(unlink(entry), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, probe_without_a_process,
							    NULL)), 128 + SIGSYS);
}

/* Without an entry the namespaces are probed live, and the probe says why. */
static int probe_live(void *arg)
{
	const char *want = arg;
	const struct sbx_probe *p;

	sbx_probe_set_for_tests(NULL);
	CHILD_CHECK(sbx_probe_get(&p, NULL) == 0);
	if (!strstr(p->ns_source, "probed now") || !strstr(p->ns_source, want)) {
		fprintf(stderr, "ns_source \"%s\", want \"%s\"\n", p->ns_source, want);
		return 1;
	}
	return 0;
}

static void test_untrusted_entry_not_used(void **state)
{
	char real[320], moved[320];

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	/* another owner: the agent itself, or any other uid */
	put_valid();
	assert_int_equal(chown(entry, sbx_test_uid(), 0), 0);
	check_is(-EPERM, "not root");
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, probe_live, "not root")), 0);
	assert_int_equal(chown(entry, 1, 0), 0);
	check_is(-EPERM, "owned by uid 1, not root");
	/* writable by others */
	put_valid();
	assert_int_equal(chmod(entry, 0664), 0);
	check_is(-EPERM, "group-writable");
	assert_int_equal(chmod(entry, 0646), 0);
	check_is(-EPERM, "world-writable");
	/* a directory others may write, or that is not root's */
	put_valid();
	assert_int_equal(chmod(cache, 0775), 0);
	check_is(-EPERM, "group-writable");
	assert_int_equal(chmod(cache, 01777), 0);
	check_is(-EPERM, "world-writable");
	assert_int_equal(chmod(cache, 0755), 0);
	assert_int_equal(chown(cache, sbx_test_uid(), 0), 0);
	check_is(-EPERM, "not root");
	assert_int_equal(chown(cache, 0, 0), 0);
	check_is(0, NULL);	/* control: the same entry, trusted again */
	/* a symlink to a valid entry, at the name or for the directory */
	snprintf(real, sizeof(real), "%s/real", cache);
	assert_int_equal(rename(entry, real), 0);
	assert_int_equal(symlink(real, entry), 0);
	check_is(-ELOOP, "symlink");
	assert_int_equal(unlink(entry), 0);
	assert_int_equal(rename(real, entry), 0);
	check_is(0, NULL);
	snprintf(moved, sizeof(moved), "%s/probe.real", base);
	assert_int_equal(rename(cache, moved), 0);
	assert_int_equal(symlink(moved, cache), 0);
	check_is(-ELOOP, "symlink");
	assert_int_equal(unlink(cache), 0);
	assert_int_equal(rename(moved, cache), 0);
	check_is(0, NULL);
	/* not a regular file (and a FIFO does not hang the reader) */
	assert_int_equal(unlink(entry), 0);
	assert_int_equal(mkfifo(entry, 0644), 0);
	check_is(-EINVAL, "not a regular file");
	assert_int_equal(unlink(entry), 0);
	check_is(-ENOENT, NULL);
}

static void test_stale_entry_not_used(void **state)
{
	char text[SBX_PROBE_CACHE_MAX], line[128];
	const char *at;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	current_text(text, sizeof(text));
	/* another boot */
	at = strstr(text, "boot_id ");
	assert_non_null(at);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
	put_edited(line, "boot_id 00000000-0000-4000-8000-000000000000");
	check_is(-ESTALE, "written in another boot");
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, probe_live, "another boot")),
			 0);
	/* another kernel release, another build of it */
	at = strstr(text, "\nkernel ");
	assert_non_null(at);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
	put_edited(line, "kernel 6.1.0-99-amd64");
	check_is(-ESTALE, "written for another kernel");
	put_edited("\nkernel_version ", "\nkernel_version #0 ");
	check_is(-ESTALE, "another build of the kernel");
	/* another uid's entry under this uid's name */
	snprintf(line, sizeof(line), "\nuid %u\n", (unsigned)sbx_test_uid());
	put_edited(line, "\nuid 1\n");
	check_is(-ESTALE, "written for another uid");
	/* a sysctl that gates namespaces has another value now */
	at = strstr(text, "sysctl user/max_user_namespaces=");
	assert_non_null(at);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(at, "\n"), at);
	put_edited(line, "sysctl user/max_user_namespaces=7");
	check_is(-ESTALE, "changed since (user/max_user_namespaces)");
	/* another format, another set of namespaces */
	put_edited("probe cache 1\n", "probe cache 2\n");
	check_is(-ESTALE, "another format");
	put_edited("\nnamespaces user mount pid net ipc uts cgroup\n",
		   "\nnamespaces user mount pid net ipc uts cgroup time\n");
	check_is(-ESTALE, "another set of namespaces");
	put_valid();
	check_is(0, NULL);	/* control */
}

/* The reader's user namespace is another than the writer's: root, mapped
 * to itself, so the files are still root's there and only the key
 * differs. */
static int check_in_userns(void *arg)
{
	struct sbx_error err = { 0 };
	int fd;

	(void)arg;
	CHILD_CHECK(unshare(CLONE_NEWUSER) == 0);
	fd = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0 && write(fd, "0 0 1\n", 6) == 6);
	close(fd);
	/* Its own gid only, as an unprivileged map: setgroups first. */
	fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0 && write(fd, "deny", 4) == 4);
	close(fd);
	fd = open("/proc/self/gid_map", O_WRONLY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0 && write(fd, "0 0 1\n", 6) == 6);
	close(fd);
	CHILD_CHECK(sbx_probe_cache_check(sbx_test_uid(), &err) == -ESTALE);
	CHILD_CHECK(strstr(err.msg, "another user namespace") != NULL);
	return 0;
}

/* The reader runs under a seccomp filter the writer did not have. */
static int check_filtered(void *arg)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	struct sbx_error err = { 0 };

	(void)arg;
	CHILD_CHECK(ctx != NULL);
	CHILD_CHECK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(acct), 0) == 0);
	CHILD_CHECK(seccomp_load(ctx) == 0);
	seccomp_release(ctx);
	CHILD_CHECK(sbx_probe_cache_check(sbx_test_uid(), &err) == -ESTALE);
	CHILD_CHECK(strstr(err.msg, "another seccomp mode") != NULL);
	return 0;
}

static void test_other_process_context_not_used(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	put_valid();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, check_in_userns, NULL)), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, check_filtered, NULL)), 0);
	check_is(0, NULL);	/* control: this process takes it */
}

static void test_malformed_entry_not_used(void **state)
{
	char text[SBX_PROBE_CACHE_MAX], big[SBX_PROBE_CACHE_MAX + 2], *w;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	current_text(text, sizeof(text));
	w = strstr(text, "written ");
	assert_non_null(w);
	/* no "written" line */
	put_edited(w, "");
	check_is(-EINVAL, "malformed");
	/* something after it */
	put_edited(w, "written 1\nextra 1\n");
	check_is(-EINVAL, "malformed");
	put_edited(w, "written 1x\n");
	check_is(-EINVAL, "malformed");
	/* cut in the middle of the key */
	put(entry, "agent-sandbox probe cache 1\nuid", 0644, 0);
	check_is(-ESTALE, NULL);
	put(entry, "", 0644, 0);
	check_is(-ESTALE, NULL);
	/* larger than any entry */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(entry, big, 0644, 0);
	check_is(-EFBIG, "larger than");
	put_valid();
	check_is(0, NULL);	/* control */
}

/* Root's own probe is always made, and labelled as root's. */
static void test_root_probes_itself(void **state)
{
	char text[SBX_PROBE_CACHE_MAX], path[320];
	struct sbx_error err = { 0 };
	const struct sbx_probe *p;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	put_valid();
	assert_int_equal(sbx_probe_cache_entry_text(0, text, sizeof(text), &err), 0);
	snprintf(path, sizeof(path), "%s/0", cache);
	put(path, text, 0644, 0);
	sbx_probe_set_for_tests(NULL);
	assert_int_equal(sbx_probe_get(&p, NULL), 0);
	assert_non_null(strstr(p->ns_source, "probed now"));
	assert_non_null(strstr(p->userns_why, "probed as root"));
	unlink(path);
	sbx_probe_set_for_tests(NULL);
}

static void test_remove(void **state)
{
	struct sbx_error err = { 0 };
	struct stat st;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	put_valid();
	assert_int_equal(sbx_probe_cache_remove(sbx_test_uid(), &err), 0);
	assert_int_equal(lstat(entry, &st), -1);
	assert_int_equal(sbx_probe_cache_remove(sbx_test_uid(), &err), 0);	/* none: fine */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refresh_writes_a_trusted_entry),
		cmocka_unit_test(test_refresh_is_root_only),
		cmocka_unit_test(test_refresh_removes_what_it_cannot_vouch_for),
		cmocka_unit_test(test_entry_of_a_filtered_writer),
		cmocka_unit_test(test_session_takes_the_entry_without_a_process),
		cmocka_unit_test(test_untrusted_entry_not_used),
		cmocka_unit_test(test_stale_entry_not_used),
		cmocka_unit_test(test_other_process_context_not_used),
		cmocka_unit_test(test_malformed_entry_not_used),
		cmocka_unit_test(test_root_probes_itself),
		cmocka_unit_test(test_remove),
	};
	return cmocka_run_group_tests_name("probe_cache", tests, group_setup, group_teardown);
}
