/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for home.c: the isolated home prepared as root over agent-influenced paths. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

/*
 * The work dir lives under /run (root-owned 0755 on Debian), not /tmp:
 * /tmp is world-writable, so the trusted walk must refuse anything in it
 * (tested below).
 */
struct fixture {
	char base[64];
	char state[128];
	char skel[128];
};

static void rmtree_run(const char *path)
{
	if (strncmp(path, "/run/sbx-test-", 14) == 0)
		sbx_test_rmtree(path);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static int setup(void **state)
{
	struct fixture *fx;
	char path[192];

	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	snprintf(fx->base, sizeof(fx->base), "/run/sbx-test-home-XXXXXX");
	if (!mkdtemp(fx->base) || chmod(fx->base, 0755) != 0) {
		free(fx);
		return -1;
	}
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->base);
	snprintf(fx->skel, sizeof(fx->skel), "%s/skel", fx->base);
	if (mkdir(fx->skel, 0755) != 0 || chmod(fx->skel, 0755) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/.bashrc", fx->skel);
	write_file(path, "PS1='[sandbox] \\u:\\w\\$ '\n", 0644);
	snprintf(path, sizeof(path), "%s/.profile", fx->skel);
	write_file(path, ". ~/.bashrc\n", 0644);
	/* Not regular files: skipped, never followed or copied. */
	snprintf(path, sizeof(path), "%s/sub", fx->skel);
	if (mkdir(path, 0755) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/link", fx->skel);
	if (symlink("/etc/passwd", path) != 0)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx) {
		rmtree_run(fx->base);
		free(fx);
	}
	return 0;
}

static int prepare(const struct fixture *fx, const char *state_dir, const char *user,
		   uid_t uid, const char *skel, char *out, struct sbx_error *err)
{
	return sbx_home_prepare_isolated(state_dir ? state_dir : fx->state, user, uid,
					 (gid_t)uid, skel, out, SBX_PATH_MAX, err);
}

static void assert_stat(const char *path, uid_t uid, gid_t gid, mode_t mode, bool dir)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, uid);
	assert_int_equal(st.st_gid, gid);
	assert_int_equal(st.st_mode & 07777, mode);
	assert_true(dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

static void test_fresh_and_again(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX], path[SBX_PATH_MAX + 32], want[SBX_PATH_MAX];
	uid_t u;
	char *text = NULL;
	int fd;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	assert_int_equal(prepare(fx, NULL, "agent1", u, fx->skel, out, &err), 0);
	snprintf(want, sizeof(want), "%s/homes/agent1", fx->state);
	assert_string_equal(out, want);
	assert_stat(fx->state, 0, 0, 0755, true);
	snprintf(path, sizeof(path), "%s/homes", fx->state);
	assert_stat(path, 0, 0, 0711, true);
	assert_stat(out, u, (gid_t)u, 0700, true);
	snprintf(path, sizeof(path), "%s/.bashrc", out);
	assert_stat(path, u, (gid_t)u, 0644, false);
	assert_int_equal(sbx_read_file(path, 4096, &text, NULL, &err), 0);
	assert_string_equal(text, "PS1='[sandbox] \\u:\\w\\$ '\n");
	free(text);
	snprintf(path, sizeof(path), "%s/.profile", out);
	assert_stat(path, u, (gid_t)u, 0644, false);
	snprintf(path, sizeof(path), "%s/sub", out);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/link", out);
	assert_int_equal(access(path, F_OK), -1);
	/* No temporary build directory is left behind. */
	snprintf(path, sizeof(path), "%s/homes/.new-agent1.%ld", fx->state, (long)getpid());
	assert_int_equal(access(path, F_OK), -1);

	/* Second call: contents kept, skeleton not copied again. */
	snprintf(path, sizeof(path), "%s/work.txt", out);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, u, (gid_t)u), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/.bashrc", out);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(prepare(fx, NULL, "agent1", u, fx->skel, out, &err), 0);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/work.txt", out);
	assert_stat(path, u, (gid_t)u, 0600, false);
}

static void test_state_under_tmp_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX] = "unchanged", st_dir[SBX_PATH_MAX];
	char *tmp;

	SBX_TEST_REQUIRE_ROOT();
	tmp = sbx_test_mkdtemp("home");
	snprintf(st_dir, sizeof(st_dir), "%s/state", tmp);
	assert_int_equal(prepare(fx, st_dir, "agent1", sbx_test_uid(), NULL, out, &err),
			 -EPERM);
	assert_non_null(strstr(err.msg, "/tmp: mode 1777 is group/world writable"));
	assert_string_equal(out, "unchanged");
	assert_int_equal(access(st_dir, F_OK), -1);	/* nothing created */
	sbx_test_rmtree(tmp);
	free(tmp);
	/* Control: the same call under /run works. */
	assert_int_equal(prepare(fx, NULL, "agent1", sbx_test_uid(), NULL, out, &err), 0);
}

static void stat_same(const struct stat *a, const struct stat *b)
{
	assert_int_equal(a->st_uid, b->st_uid);
	assert_int_equal(a->st_gid, b->st_gid);
	assert_int_equal(a->st_mode, b->st_mode);
	assert_int_equal(a->st_mtim.tv_sec, b->st_mtim.tv_sec);
	assert_int_equal(a->st_mtim.tv_nsec, b->st_mtim.tv_nsec);
	assert_int_equal(a->st_ctim.tv_sec, b->st_ctim.tv_sec);
	assert_int_equal(a->st_ctim.tv_nsec, b->st_ctim.tv_nsec);
}

static void test_planted_symlink_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX], path[SBX_PATH_MAX];
	struct stat before, after;

	SBX_TEST_REQUIRE_ROOT();
	/* Control, which also creates state/homes. */
	assert_int_equal(prepare(fx, NULL, "agent1", sbx_test_uid(), fx->skel, out, &err), 0);
	snprintf(path, sizeof(path), "%s/homes/victim", fx->state);
	assert_int_equal(symlink("/etc", path), 0);
	assert_int_equal(stat("/etc", &before), 0);
	assert_int_equal(prepare(fx, NULL, "victim", sbx_test_uid(), fx->skel, out, &err),
			 -ELOOP);
	assert_non_null(strstr(err.msg, "is a symlink"));
	assert_int_equal(stat("/etc", &after), 0);
	stat_same(&before, &after);
	assert_int_equal(access("/etc/.bashrc", F_OK), -1);
}

static void test_symlinked_state_component_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX], real[192], link[192], st_dir[256];

	SBX_TEST_REQUIRE_ROOT();
	snprintf(real, sizeof(real), "%s/real", fx->base);
	snprintf(link, sizeof(link), "%s/link", fx->base);
	assert_int_equal(mkdir(real, 0755), 0);
	assert_int_equal(chmod(real, 0755), 0);
	assert_int_equal(symlink(real, link), 0);
	snprintf(st_dir, sizeof(st_dir), "%s/state", link);
	assert_int_equal(prepare(fx, st_dir, "agent1", sbx_test_uid(), NULL, out, &err),
			 -ELOOP);
	assert_non_null(strstr(err.msg, "/link): is a symlink"));
	snprintf(st_dir, sizeof(st_dir), "%s/state", real);
	assert_int_equal(access(st_dir, F_OK), -1);
	/* Control: the real path works. */
	assert_int_equal(prepare(fx, st_dir, "agent1", sbx_test_uid(), NULL, out, &err), 0);
}

static void test_foreign_owner_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX] = "unchanged", path[SBX_PATH_MAX];
	uid_t u = sbx_test_uid();
	struct stat st;

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(prepare(fx, NULL, "agent1", u, NULL, out, &err), 0);
	snprintf(path, sizeof(path), "%s/homes/other", fx->state);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, u + 1, (gid_t)(u + 1)), 0);
	sbx_strlcpy(out, sizeof(out), "unchanged");
	assert_int_equal(prepare(fx, NULL, "other", u, fx->skel, out, &err), -EPERM);
	assert_non_null(strstr(err.msg, "/homes/other: owned by uid"));
	assert_string_equal(out, "unchanged");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, u + 1);
	assert_int_equal(st.st_gid, u + 1);
	snprintf(path, sizeof(path), "%s/homes/other/.bashrc", fx->state);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_file_instead_of_home(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX], path[SBX_PATH_MAX];

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(prepare(fx, NULL, "agent1", sbx_test_uid(), NULL, out, &err), 0);
	snprintf(path, sizeof(path), "%s/homes/plain", fx->state);
	write_file(path, "x", 0644);
	assert_int_equal(prepare(fx, NULL, "plain", sbx_test_uid(), NULL, out, &err),
			 -ENOTDIR);
	assert_non_null(strstr(err.msg, "not a directory"));
}

static void test_bad_skeleton_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX], skel2[192], a[256], b[256], home[SBX_PATH_MAX];

	SBX_TEST_REQUIRE_ROOT();
	snprintf(skel2, sizeof(skel2), "%s/skel2", fx->base);
	assert_int_equal(mkdir(skel2, 0755), 0);
	assert_int_equal(chmod(skel2, 0755), 0);
	snprintf(a, sizeof(a), "%s/a", skel2);
	snprintf(b, sizeof(b), "%s/b", skel2);
	write_file(a, "a\n", 0644);
	assert_int_equal(link(a, b), 0);
	assert_int_equal(prepare(fx, NULL, "agent2", sbx_test_uid(), skel2, out, &err),
			 -EMLINK);
	assert_non_null(strstr(err.msg, "refusing a hard-linked file"));
	/* No half-prepared home is left: the next try starts from scratch. */
	snprintf(home, sizeof(home), "%s/homes/agent2", fx->state);
	assert_int_equal(access(home, F_OK), -1);

	/* A skeleton file the agent could have written is refused too. */
	assert_int_equal(unlink(b), 0);
	assert_int_equal(chown(a, sbx_test_uid(), 0), 0);
	assert_int_equal(prepare(fx, NULL, "agent2", sbx_test_uid(), skel2, out, &err),
			 -EPERM);
	assert_non_null(strstr(err.msg, "must be root-owned"));
	assert_int_equal(access(home, F_OK), -1);

	/* Control: a sound skeleton works. */
	assert_int_equal(chown(a, 0, 0), 0);
	assert_int_equal(prepare(fx, NULL, "agent2", sbx_test_uid(), skel2, out, &err), 0);
	snprintf(home, sizeof(home), "%s/homes/agent2/a", fx->state);
	assert_stat(home, sbx_test_uid(), sbx_test_gid(), 0644, false);
}

static void test_bad_user_names(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	const char *bad[] = { "..", ".", "", "a/b", "-x", ".hidden", "a b", "a\nb" };
	char out[SBX_PATH_MAX];
	size_t i;

	SBX_TEST_REQUIRE_ROOT();
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(prepare(fx, NULL, bad[i], sbx_test_uid(), NULL, out, &err),
				 -EINVAL);
		assert_non_null(strstr(err.msg, "not a safe path component"));
	}
	assert_int_equal(prepare(fx, NULL, NULL, sbx_test_uid(), NULL, out, &err), -EINVAL);
	/* uid 0 never gets an isolated home. */
	assert_int_equal(prepare(fx, NULL, "rootish", 0, NULL, out, &err), -EPERM);
	/* Nothing was created for any of them; control: a good name works. */
	assert_int_equal(access(fx->state, F_OK), -1);
	assert_int_equal(prepare(fx, NULL, "good_name-1.x", sbx_test_uid(), NULL, out, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fresh_and_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_state_under_tmp_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted_symlink_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_state_component_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_owner_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_instead_of_home, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_skeleton_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_user_names, setup, teardown),
	};
	return cmocka_run_group_tests_name("home", tests, NULL, NULL);
}
