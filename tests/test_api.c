/* SPDX-License-Identifier: BSD-3-Clause */
/* libsbx.h as a caller uses it: sbx_run, profile setters, and executor sets kept apart. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

/* Everything lives in one root-made directory under /var/tmp (the host's,
 * seen read-only in a sandbox; /tmp would be the sandbox's own), owned by
 * the agent uid; teardown removes it. */
static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/var/tmp/sbx-test-api-XXXXXX");
	if (!mkdtemp(base) || chown(base, sbx_test_uid(), sbx_test_gid()) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

/* In the agent child: a failed check prints where and why, and exits 1. */
#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "test_api.c:%d: %s: ", __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			return 1;                                               \
		}                                                               \
	} while (0)

static int run_sh(struct sbx_executor *e, const char *script, struct sbx_report **r,
		  struct sbx_error *err)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	int code = -1;

	if (sbx_executor_run(e, NULL, argv, &code, r, err) != 0)
		return -1000;
	return code;
}

static int executors_as_agent(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_profile *p = sbx_profile_new();
	struct sbx_executor_set *set = NULL;
	struct sbx_executor *a, *b, *c, *again, *none = NULL;
	struct sbx_report *r = NULL;
	char scratch[128], script[1024], path[160];
	struct stat st;
	int code;

	(void)arg;
	CHECK(p != NULL, "sbx_profile_new");
	snprintf(scratch, sizeof(scratch), "%s/scratch", base);
	CHECK(sbx_executor_set_new(p, scratch, 3, &set, &err) == 0, "%s", err.msg);
	CHECK(stat(scratch, &st) == 0 && (st.st_mode & 0777) == 0700, "scratch root mode %o",
	      st.st_mode & 0777);
	CHECK(sbx_executor_for(set, "a", &a, &err) == 0, "%s", err.msg);
	CHECK(sbx_executor_for(set, "b", &b, &err) == 0, "%s", err.msg);
	CHECK(sbx_executor_for(set, "c", &c, &err) == 0, "%s", err.msg);
	/* The cap: a fourth key is refused, with the cap named. */
	CHECK(sbx_executor_for(set, "d", &none, &err) == -EUSERS && none == NULL,
	      "fourth key: %s", err.msg);
	CHECK(strstr(err.msg, "cap of 3") != NULL, "message: %s", err.msg);
	CHECK(sbx_executor_for(set, "../x", &none, &err) == -EINVAL, "bad key accepted");
	/* Same key, same executor. */
	CHECK(sbx_executor_for(set, "a", &again, &err) == 0 && again == a, "key a again");

	/* A scratch root under a directory others may write (no sticky bit)
	 * is refused: they could rename it between the check and a bind or
	 * the close. With the sticky bit (as /tmp) it is not. */
	{
		struct sbx_executor_set *bad = NULL;
		char open_dir[128], under[160];

		snprintf(open_dir, sizeof(open_dir), "%s/open", base);
		snprintf(under, sizeof(under), "%s/scratch", open_dir);
		CHECK(mkdir(open_dir, 0777) == 0 && chmod(open_dir, 0777) == 0, "mkdir open");
		CHECK(sbx_executor_set_new(p, under, 2, &bad, &err) == -EPERM && bad == NULL,
		      "scratch under 0777: %s", err.msg);
		CHECK(strstr(err.msg, "can be changed by another user") != NULL, "%s", err.msg);
		CHECK(chmod(open_dir, 01777) == 0, "chmod +t");
		CHECK(sbx_executor_set_new(p, under, 2, &bad, &err) == 0, "sticky: %s", err.msg);
		CHECK(sbx_executor_set_close(bad, &err) == 0, "close: %s", err.msg);
	}

	/* Positive control: a writes its home and tmp, and reads them back. */
	code = run_sh(a, "echo A >\"$HOME/h\" && echo A >/tmp/t && cat \"$HOME/h\" /tmp/t "
		      ">/dev/null", &r, &err);
	CHECK(code == 0, "executor a: exit %d (%s)", code, err.msg);
	CHECK(sbx_report_floor_met(r) && sbx_report_level(r) == 2, "a: level %s, %s",
	      sbx_report_level_name(r), sbx_report_refusal(r));
	sbx_report_free(r);
	r = NULL;

	/* b sees none of it: not at $HOME or /tmp (its own), and not through
	 * the scratch root, which is masked (ENOENT, an empty directory). */
	snprintf(script, sizeof(script),
		 "test -e \"$HOME/h\" && exit 10; test -e /tmp/t && exit 11; "
		 "cat %s/a/home/h 2>&1 | grep -q 'No such file or directory' || exit 12; "
		 "cat %s/a/tmp/t 2>&1 | grep -q 'No such file or directory' || exit 13; "
		 "test -d %s && test -z \"$(ls -A %s)\" || exit 14; "
		 "echo B >\"$HOME/h\" && echo B >/tmp/t || exit 15; exit 0",
		 scratch, scratch, scratch, scratch);
	code = run_sh(b, script, &r, &err);
	CHECK(code == 0, "executor b: exit %d (%s)", code, err.msg);
	sbx_report_free(r);
	r = NULL;

	/* a's files persist across its runs, and b's did not land in them. */
	code = run_sh(a, "test \"$(cat \"$HOME/h\" /tmp/t)\" = \"A\nA\" || exit 20", &r, &err);
	CHECK(code == 0, "executor a again: exit %d (%s)", code, err.msg);
	sbx_report_free(r);
	r = NULL;
	/* Outside, the files are where the executors keep them. */
	snprintf(script, sizeof(script), "%s/b/home/h", scratch);
	CHECK(stat(script, &st) == 0, "b's home file on the host: %s", strerror(errno));

	/* A directory a program made unreadable does not stop the close. */
	code = run_sh(c, "mkdir -p \"$HOME/d/e\" && echo x >\"$HOME/d/e/f\" && chmod 000 \"$HOME/d\"",
		      &r, &err);
	CHECK(code == 0, "executor c, mode 000 dir: exit %d (%s)", code, err.msg);
	sbx_report_free(r);
	r = NULL;
	/* Close removes every file and the scratch root. */
	CHECK(sbx_executor_set_close(set, &err) == 0, "close: %s", err.msg);
	CHECK(stat(scratch, &st) != 0 && errno == ENOENT, "scratch root left after close");
	CHECK(sbx_executor_set_close(NULL, &err) == 0, "close(NULL)");

	/* A key directory already in a scratch root (what a close that could
	 * not finish leaves) is refused, not handed to the new executor. */
	snprintf(script, sizeof(script), "%s/stale", base);
	CHECK(sbx_executor_set_new(p, script, 2, &set, &err) == 0, "%s", err.msg);
	snprintf(path, sizeof(path), "%s/stale/d", base);
	CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
	CHECK(sbx_executor_for(set, "d", &a, &err) == -EEXIST &&
	      strstr(err.msg, "left from an earlier set"), "stale key: %s", err.msg);
	CHECK(sbx_executor_for(set, "e", &a, &err) == 0, "control: %s", err.msg);
	CHECK(rmdir(path) == 0, "rmdir %s", path);
	CHECK(sbx_executor_set_close(set, &err) == 0, "close: %s", err.msg);
	sbx_profile_free(p);
	return 0;
}

static void test_executor_sets(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, executors_as_agent, NULL)), 0);
	/* Runs end every process they start. */
	assert_int_equal(sbx_test_procs_of(sbx_test_uid(), false), 0);
}

/*
 * The scratch root as the library walks it (root laid the places out; the
 * checks run as the agent). Refused, the link or directory named: through
 * another user's symlink, through a directory another user owns. Followed:
 * root's own link in a root-only directory. And what the walk checked is
 * what is used: a key directory replaced after it was made is not bound
 * (the run is refused, nothing runs), and a close removes what the set
 * made even when the scratch root's name has been moved since.
 */
static int scratch_paths_as_agent(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_profile *p = sbx_profile_new();
	struct sbx_executor_set *set = NULL;
	struct sbx_executor *a;
	char path[256], other[256], marker[300], script[512];
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct stat st;
	int code = -1;

	(void)arg;
	CHECK(p != NULL, "sbx_profile_new");
	/* Another user's symlink, in a sticky directory it may write. */
	snprintf(path, sizeof(path), "%s/sticky/link/s", base);
	CHECK(sbx_executor_set_new(p, path, 2, &set, &err) == -ELOOP && set == NULL,
	      "another user's link: %s", err.msg);
	snprintf(other, sizeof(other), "%s/sticky/link: symlink owned by uid 65534", base);
	CHECK(strstr(err.msg, other) != NULL, "message: %s", err.msg);
	/* A directory another user owns, though nobody else may write it. */
	snprintf(path, sizeof(path), "%s/other/in/s", base);
	CHECK(sbx_executor_set_new(p, path, 2, &set, &err) == -EPERM && set == NULL,
	      "another user's directory: %s", err.msg);
	snprintf(other, sizeof(other), "%s/other can be changed by another user (owner uid "
		 "65534, mode 0755)", base);
	CHECK(strstr(err.msg, other) != NULL, "message: %s", err.msg);
	snprintf(path, sizeof(path), "%s/other/in/s", base);
	CHECK(stat(path, &st) != 0 && errno == ENOENT, "a refused scratch root was made");
	/* Root's link in a root-only directory: followed (control). */
	snprintf(path, sizeof(path), "%s/rootdir/rl/s", base);
	CHECK(sbx_executor_set_new(p, path, 2, &set, &err) == 0, "root's link: %s", err.msg);
	CHECK(sbx_executor_for(set, "a", &a, &err) == 0, "%s", err.msg);
	snprintf(path, sizeof(path), "%s/mine/s/a/home", base);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "key made elsewhere than %s", path);
	CHECK(sbx_executor_set_close(set, &err) == 0, "close: %s", err.msg);

	/* A key's home replaced after the set made it: the mount view
	 * refuses to bind it (its message, naming the bind source, goes to
	 * stderr) and nothing runs. */
	snprintf(path, sizeof(path), "%s/mine/s", base);
	CHECK(sbx_executor_set_new(p, path, 2, &set, &err) == 0, "%s", err.msg);
	CHECK(sbx_executor_for(set, "a", &a, &err) == 0, "%s", err.msg);
	snprintf(script, sizeof(script), "echo x >\"$HOME/ran\"");
	snprintf(path, sizeof(path), "%s/mine/s/a/home", base);
	snprintf(other, sizeof(other), "%s/mine/s/a/home.made", base);
	CHECK(rename(path, other) == 0 && mkdir(path, 0700) == 0, "swap home: %s",
	      strerror(errno));
	CHECK(sbx_executor_run(a, NULL, argv, &code, NULL, &err) == -EIO && code == -1,
	      "replaced home: exit %d, %s", code, err.msg);
	snprintf(marker, sizeof(marker), "%s/ran", path);
	CHECK(stat(marker, &st) != 0 && errno == ENOENT, "the command ran");
	snprintf(marker, sizeof(marker), "%s/ran", other);
	CHECK(stat(marker, &st) != 0 && errno == ENOENT, "the command ran");
	/* Control: the home it made back in place, the run works. */
	CHECK(rmdir(path) == 0 && rename(other, path) == 0, "swap back: %s", strerror(errno));
	CHECK(sbx_executor_run(a, NULL, argv, &code, NULL, &err) == 0 && code == 0,
	      "home back: exit %d, %s", code, err.msg);
	snprintf(marker, sizeof(marker), "%s/ran", path);
	CHECK(stat(marker, &st) == 0, "the control did not run");
	/* Its tmp replaced: refused before the run starts. */
	snprintf(path, sizeof(path), "%s/mine/s/a/tmp", base);
	snprintf(other, sizeof(other), "%s/mine/s/a/tmp.made", base);
	CHECK(rename(path, other) == 0 && mkdir(path, 0700) == 0, "swap tmp: %s",
	      strerror(errno));
	CHECK(sbx_executor_run(a, NULL, argv, &code, NULL, &err) == -ESTALE, "replaced tmp: %s",
	      err.msg);
	CHECK(strstr(err.msg, "is not the directory made for it") != NULL, "%s", err.msg);
	CHECK(rmdir(path) == 0 && rename(other, path) == 0, "swap back: %s", strerror(errno));

	/* The scratch root's name moved, and a directory of that name made in
	 * its place: the close removes the set's keys where they are and
	 * leaves the new directory alone, saying so. */
	snprintf(path, sizeof(path), "%s/mine/s", base);
	snprintf(other, sizeof(other), "%s/mine/moved", base);
	CHECK(rename(path, other) == 0 && mkdir(path, 0700) == 0, "move root: %s",
	      strerror(errno));
	snprintf(marker, sizeof(marker), "%s/mine/s/keep", base);
	CHECK(mkdir(marker, 0700) == 0, "mkdir %s", marker);
	CHECK(sbx_executor_set_close(set, &err) == -ESTALE, "close: %s", err.msg);
	CHECK(strstr(err.msg, "its name now leads to another directory") != NULL, "%s", err.msg);
	CHECK(stat(marker, &st) == 0, "the close removed what it did not make");
	snprintf(marker, sizeof(marker), "%s/mine/moved/a", base);
	CHECK(stat(marker, &st) != 0 && errno == ENOENT, "the set's key left behind");
	sbx_profile_free(p);
	return 0;
}

static void test_executor_scratch_paths(void **state)
{
	char path[256], target[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	/* base is the agent's 0700; what another user (nobody) or root
	 * controls goes inside it. */
	snprintf(path, sizeof(path), "%s/mine", base);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, sbx_test_uid(), sbx_test_gid()), 0);
	snprintf(target, sizeof(target), "%s", path);
	snprintf(path, sizeof(path), "%s/sticky", base);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, 01777), 0);
	snprintf(path, sizeof(path), "%s/sticky/link", base);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(lchown(path, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/other", base);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(chown(path, 65534, 65534), 0);
	snprintf(path, sizeof(path), "%s/other/in", base);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, sbx_test_uid(), sbx_test_gid()), 0);
	snprintf(path, sizeof(path), "%s/rootdir", base);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(chmod(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/rootdir/rl", base);
	assert_int_equal(symlink("../mine", path), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, scratch_paths_as_agent, NULL)),
			 0);
	assert_int_equal(sbx_test_procs_of(sbx_test_uid(), false), 0);
}

/* Without user namespaces there is no mount view to keep executors
 * apart: a run is refused, and nothing runs. */
static int executors_without_userns(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_profile *p = sbx_profile_new();
	struct sbx_executor_set *set = NULL;
	struct sbx_executor *a;
	const struct sbx_probe *real;
	struct sbx_probe forced;
	char scratch[128], marker[160];
	const char *argv[3] = { "/usr/bin/touch", marker, NULL };
	struct stat st;
	int code = -1;

	(void)arg;
	sbx_probe_set_for_tests(NULL);
	CHECK(sbx_probe_get(&real, &err) == 0, "%s", err.msg);
	forced = *real;
	forced.userns = false;
	snprintf(forced.userns_why, sizeof(forced.userns_why), "forced by test_api");
	sbx_probe_set_for_tests(&forced);
	snprintf(scratch, sizeof(scratch), "%s/scratch2", base);
	snprintf(marker, sizeof(marker), "%s/ran", base);
	CHECK(sbx_executor_set_new(p, scratch, 2, &set, &err) == 0, "%s", err.msg);
	CHECK(sbx_executor_for(set, "a", &a, &err) == 0, "%s", err.msg);
	CHECK(sbx_executor_run(a, NULL, argv, &code, NULL, &err) == -EOPNOTSUPP, "run: %s",
	      err.msg);
	CHECK(strstr(err.msg, "forced by test_api") != NULL, "message: %s", err.msg);
	CHECK(stat(marker, &st) != 0 && errno == ENOENT, "the command ran");
	/* Control: sbx_run itself still runs degraded, for a profile whose
	 * floor allows it. */
	CHECK(sbx_profile_set(p, "require", "none", &err) == 0, "%s", err.msg);
	CHECK(sbx_run(p, base, argv, &code, NULL, &err) == 0 && code == 0, "sbx_run: %s (%d)",
	      err.msg, code);
	CHECK(stat(marker, &st) == 0, "control did not run");
	CHECK(sbx_executor_set_close(set, &err) == 0, "close: %s", err.msg);
	sbx_profile_free(p);
	return 0;
}

static void test_executor_needs_mount_view(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, executors_without_userns, NULL)),
			 0);
}

/* sbx_profile_set takes a config line's keys and values, and names what it
 * refuses; a run follows the setting (network deny: no AF_INET connect). */
static int profile_set_as_agent(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_profile *p = sbx_profile_new();
	struct sbx_report *r = NULL;
	char ws[128], script[512], path[160];
	const char *argv[] = { "sh", "-c", script, NULL };
	struct stat st;
	int code = -1;

	(void)arg;
	CHECK(sbx_profile_set(p, "netwrok", "deny", &err) == -EINVAL &&
	      strstr(err.msg, "netwrok"), "unknown key: %s", err.msg);
	CHECK(sbx_profile_set(p, "network", "sideways", &err) == -EINVAL, "bad value accepted");
	CHECK(sbx_profile_set(p, "network", "deny", &err) == 0, "%s", err.msg);
	CHECK(sbx_profile_set(p, "nproc", "64", &err) == 0, "%s", err.msg);
	/* The workspace is written (control); the directory around it, which
	 * the agent owns, is not (the read-only host: EROFS). */
	snprintf(ws, sizeof(ws), "%s/ws", base);
	CHECK(mkdir(ws, 0700) == 0, "mkdir %s", ws);
	snprintf(script, sizeof(script),
		 "echo ok >%s/ok || exit 4; "
		 "(echo x >%s/out) 2>&1 | grep -q 'Read-only file system' || exit 3; "
		 "test \"$(ulimit -p)\" = 64 || exit 5", ws, base);
	CHECK(sbx_run(p, ws, argv, &code, &r, &err) == 0, "%s", err.msg);
	CHECK(code == 0, "exit %d", code);
	snprintf(path, sizeof(path), "%s/ok", ws);
	CHECK(stat(path, &st) == 0 && st.st_uid == sbx_test_uid(), "workspace not written");
	snprintf(path, sizeof(path), "%s/out", base);
	CHECK(stat(path, &st) != 0 && errno == ENOENT, "outside the workspace written");
	CHECK(sbx_report_floor_met(r), "%s", sbx_report_refusal(r));
	sbx_report_free(r);
	sbx_profile_free(p);
	return 0;
}

static void test_profile_set_and_run(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, profile_set_as_agent, NULL)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_executor_sets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_scratch_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_needs_mount_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile_set_and_run, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
