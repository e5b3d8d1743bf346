/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for trust.c and sbx_config_load: which config files are trusted, checked by fd walk. */
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
 * The trust walk checks every directory from "/" down, so the test tree
 * cannot live under /tmp or /var/tmp (world-writable, sticky: refused by
 * design). It is a fresh root-owned 0755 directory directly under "/",
 * /sbx-test-trust-XXXXXX, made in the group setup and removed in the group
 * teardown even when a test fails. Needs root (chown to the test uid).
 */

static char *top;	/* /sbx-test-trust-XXXXXX */
static const char conf[] = "[profile p]\nworkspace_root = /w\n";

static void rm_top(void)
{
	if (top && strncmp(top, "/sbx-test-trust-", 16) == 0)
		sbx_test_rmtree(top);
}

static char *pathf(const char *rel)
{
	static char buf[8][SBX_PATH_MAX];
	static unsigned n;
	char *b = buf[n++ % 8];

	assert_int_equal(sbx_snprintf(b, SBX_PATH_MAX, "%s/%s", top, rel), 0);
	return b;
}

static void write_conf(const char *rel, mode_t mode, uid_t uid)
{
	const char *p = pathf(rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, conf, sizeof(conf) - 1), (ssize_t)(sizeof(conf) - 1));
	assert_int_equal(fchown(fd, uid, 0), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void make_dir(const char *rel, mode_t mode, uid_t uid)
{
	const char *p = pathf(rel);

	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chown(p, uid, 0), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static int setup(void **state)
{
	struct stat st;
	char tmpl[] = "/sbx-test-trust-XXXXXX";

	(void)state;
	if (geteuid() != 0)
		return 0;	/* each test skips */
	if (stat("/", &st) != 0 || st.st_uid != 0 || (st.st_mode & 022)) {
		fprintf(stderr, "/ is not root-owned 0755: cannot build a trusted tree\n");
		return 0;
	}
	if (!mkdtemp(tmpl))
		return -1;
	top = strdup(tmpl);
	if (!top || chmod(top, 0755) != 0) {
		rmdir(tmpl);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rm_top();
	free(top);
	top = NULL;
	return 0;
}

#define REQUIRE_TREE()                                                        \
	do {                                                                  \
		SBX_TEST_REQUIRE_ROOT();                                      \
		if (!top) {                                                   \
			print_message("[  SKIP    ] no trusted test tree under /\n"); \
			skip();                                               \
		}                                                             \
	} while (0)

/* Positive control for every test: a well-formed config loads. */
static void load_ok(const char *path)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };

	if (sbx_config_load(path, 0, &cfg, &err) != 0)
		fail_msg("positive control %s: %s", path, err.msg);
	assert_non_null(sbx_config_find_profile(cfg, "p"));
	assert_string_equal(cfg->path, path);
	sbx_config_free(cfg);
}

static void load_refused(const char *path, unsigned flags, int rc,
			 const char *msg_path, const char *reason)
{
	struct sbx_config *cfg = (struct sbx_config *)0x1;
	struct sbx_error err = { 0 };
	int r = sbx_config_load(path, flags, &cfg, &err);

	if (r != rc)
		fail_msg("%s: rc %d want %d (%s)", path, r, rc, err.msg);
	assert_ptr_equal(cfg, (struct sbx_config *)0x1);
	if (!strstr(err.msg, msg_path) || !strstr(err.msg, reason))
		fail_msg("%s: message '%s' lacks '%s' or '%s'", path, err.msg, msg_path, reason);
}

static const char *good_conf(void)
{
	static bool made;

	if (!made) {
		make_dir("etc", 0755, 0);
		write_conf("etc/good.conf", 0644, 0);
		made = true;
	}
	return pathf("etc/good.conf");
}

static void test_well_formed(void **state)
{
	(void)state;
	REQUIRE_TREE();
	load_ok(good_conf());
	/* Mode 0600 and 0400 are fine too: only write bits for others matter. */
	write_conf("etc/private.conf", 0400, 0);
	load_ok(pathf("etc/private.conf"));
}

static void test_symlink(void **state)
{
	const char *good;

	(void)state;
	REQUIRE_TREE();
	good = good_conf();
	assert_int_equal(symlink(good, pathf("etc/link.conf")), 0);
	load_refused(pathf("etc/link.conf"), 0, -ELOOP, pathf("etc/link.conf"), "symlink");
	/* Skipping ownership checks never skips O_NOFOLLOW. */
	load_refused(pathf("etc/link.conf"), SBX_CONFIG_SKIP_TRUST, -ELOOP,
		     pathf("etc/link.conf"), "symlink");
	load_ok(good);
}

static void test_not_root_owned(void **state)
{
	(void)state;
	REQUIRE_TREE();
	write_conf("etc/user.conf", 0644, sbx_test_uid());
	load_refused(pathf("etc/user.conf"), 0, -EPERM, pathf("etc/user.conf"),
		     "not root");
	{
		/* A draft may be checked with SBX_CONFIG_SKIP_TRUST. */
		struct sbx_config *cfg = NULL;
		struct sbx_error err = { 0 };

		assert_int_equal(sbx_config_load(pathf("etc/user.conf"),
						 SBX_CONFIG_SKIP_TRUST, &cfg, &err), 0);
		sbx_config_free(cfg);
	}
	load_ok(good_conf());
}

static void test_group_writable(void **state)
{
	(void)state;
	REQUIRE_TREE();
	write_conf("etc/gw.conf", 0664, 0);
	load_refused(pathf("etc/gw.conf"), 0, -EPERM, pathf("etc/gw.conf"), "group-writable");
	load_ok(good_conf());
}

static void test_world_writable(void **state)
{
	(void)state;
	REQUIRE_TREE();
	write_conf("etc/ww.conf", 0646, 0);
	load_refused(pathf("etc/ww.conf"), 0, -EPERM, pathf("etc/ww.conf"), "world-writable");
	load_ok(good_conf());
}

static void test_hard_linked(void **state)
{
	(void)state;
	REQUIRE_TREE();
	write_conf("etc/hl.conf", 0644, 0);
	load_ok(pathf("etc/hl.conf"));
	/* A second name, as any local user can make where
	 * fs.protected_hardlinks = 0, must not lock every agent out: the
	 * inode is still root's alone to write. */
	assert_int_equal(link(pathf("etc/hl.conf"), pathf("hl-alias")), 0);
	load_ok(pathf("etc/hl.conf"));
}

/* sbx_path_resolve_trusted: which symlinks may be followed. */
static void resolve_is(const char *rel, const char *want_rel)
{
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX];
	const char *want = pathf(want_rel);

	if (sbx_path_resolve_trusted(pathf(rel), out, sizeof(out), &err) != 0)
		fail_msg("resolve %s: %s", rel, err.msg);
	assert_string_equal(out, want);
}

static void resolve_refused(const char *rel, int rc, const char *reason)
{
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX] = "untouched";
	int r = sbx_path_resolve_trusted(pathf(rel), out, sizeof(out), &err);

	if (r != rc || !strstr(err.msg, reason))
		fail_msg("resolve %s: rc %d want %d, message '%s' lacks '%s'", rel, r, rc,
			 err.msg, reason);
	assert_string_equal(out, "untouched");
}

static void test_resolve_trusted(void **state)
{
	char abs[SBX_PATH_MAX];

	(void)state;
	REQUIRE_TREE();
	make_dir("r", 0755, 0);
	make_dir("r/real", 0755, 0);
	make_dir("r/ww", 0777, 0);
	assert_int_equal(symlink("real", pathf("r/rel")), 0);
	snprintf(abs, sizeof(abs), "%s", pathf("r/real"));
	assert_int_equal(symlink(abs, pathf("r/abs")), 0);
	assert_int_equal(symlink("real/../real", pathf("r/dotdot")), 0);
	assert_int_equal(symlink("rel", pathf("r/chain")), 0);
	assert_int_equal(symlink("loop", pathf("r/loop")), 0);
	assert_int_equal(symlink("real", pathf("r/agent")), 0);
	assert_int_equal(lchown(pathf("r/agent"), sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(symlink(abs, pathf("r/ww/link")), 0);

	/* Positive controls: root-owned links in root-owned directories. */
	resolve_is("r/real", "r/real");
	resolve_is("r/rel", "r/real");
	resolve_is("r/abs", "r/real");
	resolve_is("r/dotdot", "r/real");
	resolve_is("r/chain", "r/real");
	/* A link someone else owns, or one in a directory others may
	 * write (they could have swapped it), is refused and named. */
	resolve_refused("r/agent", -ELOOP, "owned by uid");
	resolve_refused("r/ww/link", -ELOOP, "others may write");
	resolve_refused("r/loop", -ELOOP, "too many symlinks");
	resolve_refused("r/missing", -ENOENT, "No such file");
	resolve_refused("r/rel/missing", -ENOENT, "No such file");
}

static void test_directory_and_fifo(void **state)
{
	(void)state;
	REQUIRE_TREE();
	make_dir("etc/dir.conf", 0755, 0);
	load_refused(pathf("etc/dir.conf"), 0, -EINVAL, pathf("etc/dir.conf"),
		     "not a regular file");
	/* A FIFO must be refused, not block the caller. */
	assert_int_equal(mkfifo(pathf("etc/fifo.conf"), 0644), 0);
	load_refused(pathf("etc/fifo.conf"), 0, -EINVAL, pathf("etc/fifo.conf"),
		     "not a regular file");
	load_refused(pathf("etc/missing.conf"), 0, -ENOENT, pathf("etc/missing.conf"),
		     "No such file");
	load_ok(good_conf());
}

static void test_world_writable_parent(void **state)
{
	(void)state;
	REQUIRE_TREE();
	make_dir("ww", 0777, 0);
	write_conf("ww/x.conf", 0644, 0);
	load_refused(pathf("ww/x.conf"), 0, -EPERM, pathf("ww"), "world-writable");
	/* Sticky does not make it trustworthy (/tmp is 1777). */
	make_dir("sticky", 01777, 0);
	write_conf("sticky/x.conf", 0644, 0);
	load_refused(pathf("sticky/x.conf"), 0, -EPERM, pathf("sticky"), "sticky");
	make_dir("gw", 0775, 0);
	write_conf("gw/x.conf", 0644, 0);
	load_refused(pathf("gw/x.conf"), 0, -EPERM, pathf("gw"), "group-writable");
	load_ok(good_conf());
}

static void test_parent_other_owner(void **state)
{
	(void)state;
	REQUIRE_TREE();
	make_dir("theirs", 0755, 0);
	write_conf("theirs/x.conf", 0644, 0);
	load_ok(pathf("theirs/x.conf"));	/* control: same tree, root-owned */
	assert_int_equal(chown(pathf("theirs"), sbx_test_uid(), 0), 0);
	load_refused(pathf("theirs/x.conf"), 0, -EPERM, pathf("theirs"), "owned by uid");
}

static void test_symlinked_parent(void **state)
{
	const char *good;

	(void)state;
	REQUIRE_TREE();
	good = good_conf();
	assert_int_equal(symlink("etc", pathf("etclink")), 0);
	load_refused(pathf("etclink/good.conf"), 0, -ELOOP, pathf("etclink"), "symlink");
	load_refused(pathf("etclink/good.conf"), SBX_CONFIG_SKIP_TRUST, -ELOOP,
		     pathf("etclink"), "symlink");
	load_ok(good);
}

static void test_bad_paths(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };

	(void)state;
	REQUIRE_TREE();
	assert_int_equal(sbx_config_load("etc/agent-sandbox.conf", 0, &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "canonical"));
	assert_int_equal(sbx_config_load("/etc/../etc/passwd", 0, &cfg, &err), -EINVAL);
	assert_null(cfg);
	load_ok(good_conf());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_not_root_owned),
		cmocka_unit_test(test_group_writable),
		cmocka_unit_test(test_world_writable),
		cmocka_unit_test(test_hard_linked),
		cmocka_unit_test(test_directory_and_fifo),
		cmocka_unit_test(test_world_writable_parent),
		cmocka_unit_test(test_parent_other_owner),
		cmocka_unit_test(test_symlinked_parent),
		cmocka_unit_test(test_bad_paths),
		cmocka_unit_test(test_resolve_trusted),
	};
	return cmocka_run_group_tests_name("trust", tests, setup, teardown);
}
