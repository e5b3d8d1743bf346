/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for trust.c and sbx_config_load: which config files and conf.d drop-ins are trusted,
 * checked by fd walk, and how drop-ins join the main file. */
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
	/* The one-call case (a canonical path with no link) and the walk
	 * agree: an untrusted link under it, or in front of it, is still
	 * refused, and spellings the one call does not take are walked. */
	make_dir("r/real/sub", 0755, 0);
	resolve_is("r/real/sub", "r/real/sub");
	resolve_is("r/rel/sub", "r/real/sub");
	resolve_is("r/./real//sub", "r/real/sub");
	resolve_is("r/real/sub/..", "r/real");
	resolve_refused("r/agent/sub", -ELOOP, "owned by uid");
	assert_int_equal(symlink("../../agent", pathf("r/real/sub/up")), 0);
	resolve_refused("r/real/sub/up", -ELOOP, "owned by uid");
	{
		struct sbx_error err = { 0 };
		char small[8];

		assert_int_equal(sbx_path_resolve_trusted(pathf("r/real/sub"), small,
							  sizeof(small), &err), -ENAMETOOLONG);
	}
}

/* sbx_path_walk: what a caller's check sees, and what the walk hands back. */
struct walk_seen {
	char step[24][SBX_PATH_MAX];
	int n;
	const char *refuse;	/* the check refuses this step */
};

static int record_step(const struct stat *st, const char *shown, void *arg,
		       struct sbx_error *err)
{
	struct walk_seen *w = arg;

	(void)st;
	if (w->n < 24)
		snprintf(w->step[w->n++], SBX_PATH_MAX, "%s", shown);
	if (w->refuse && strcmp(shown, w->refuse) == 0)
		return sbx_error_set(err, EPERM, "%s: refused by the check", shown);
	return 0;
}

/* The steps a walk of rel checked, joined with spaces, top shown as T. */
static const char *walk_steps(const struct walk_seen *w)
{
	static char buf[4096];
	size_t used = 0, n = strlen(top);

	buf[0] = '\0';
	for (int i = 0; i < w->n; i++) {
		const char *s = w->step[i];

		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s%s", i ? " " : "",
					 strncmp(s, top, n) == 0 ? "T" : "",
					 strncmp(s, top, n) == 0 ? s + n : s);
	}
	return buf;
}

static void test_path_walk(void **state)
{
	struct walk_seen w = { .n = 0 };
	struct sbx_walk_opts o = { .check = record_step, .arg = &w };
	struct sbx_error err = { 0 };
	char out[SBX_PATH_MAX];
	struct stat a, b;
	int fd = -1;

	(void)state;
	REQUIRE_TREE();
	make_dir("w", 0755, 0);
	make_dir("w/a", 0755, 0);
	make_dir("w/a/b", 0755, 0);
	assert_int_equal(symlink("a", pathf("w/l")), 0);

	/* Every directory the walk opens is checked, "/" and the last
	 * included, by the path it was reached by (a root's link followed),
	 * and the fd handed back is the checked directory's. */
	assert_int_equal(sbx_path_walk(pathf("w/l/b"), &o, out, sizeof(out), &fd, &err), 0);
	assert_string_equal(out, pathf("w/a/b"));
	assert_string_equal(walk_steps(&w), "/ T T/w T/w/a T/w/a/b");
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(pathf("w/a/b"), &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	close(fd);

	/* ".." is walked again from "/", each step checked again. */
	w.n = 0;
	assert_int_equal(sbx_path_walk(pathf("w/a/b/../b"), &o, out, sizeof(out), NULL, &err), 0);
	assert_string_equal(out, pathf("w/a/b"));
	assert_string_equal(walk_steps(&w), "/ T T/w T/w/a T/w/a/b / T T/w T/w/a T/w/a/b");

	/* The check's refusal ends the walk with its message, and no fd. */
	w.n = 0;
	w.refuse = pathf("w/a");
	fd = -1;
	assert_int_equal(sbx_path_walk(pathf("w/l/b"), &o, out, sizeof(out), &fd, &err), -EPERM);
	assert_non_null(strstr(err.msg, "/w/a: refused by the check"));
	assert_int_equal(fd, -1);
	w.refuse = NULL;

	/* A missing last component is made when asked, and only that. */
	o.create_mode = 0700;
	assert_int_equal(sbx_path_walk(pathf("w/l/new"), &o, out, sizeof(out), &fd, &err), 0);
	assert_string_equal(out, pathf("w/a/new"));
	assert_int_equal(fstat(fd, &a), 0);
	assert_true(S_ISDIR(a.st_mode) && (a.st_mode & 07777) == 0700);
	close(fd);
	assert_int_equal(sbx_path_walk(pathf("w/a/gone/new"), &o, out, sizeof(out), &fd, &err),
			 -ENOENT);
	assert_int_equal(stat(pathf("w/a/gone"), &a), -1);
	/* Without the option nothing is made. */
	o.create_mode = 0;
	assert_int_equal(sbx_path_walk(pathf("w/a/new2"), &o, out, sizeof(out), &fd, &err),
			 -ENOENT);
	assert_int_equal(stat(pathf("w/a/new2"), &a), -1);
	/* Another user's link is refused with a check as without one. */
	assert_int_equal(symlink("a", pathf("w/agent")), 0);
	assert_int_equal(lchown(pathf("w/agent"), sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(sbx_path_walk(pathf("w/agent/b"), &o, out, sizeof(out), &fd, &err),
			 -ELOOP);
	assert_non_null(strstr(err.msg, "/w/agent: symlink owned by uid"));
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

/* ---- conf.d drop-ins ----------------------------------------------------- */

static void write_text(const char *rel, const char *text, mode_t mode, uid_t uid)
{
	const char *p = pathf(rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchown(fd, uid, 0), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* A main file and a conf.d under top/<dir>; returns the main file's path. */
static const char *dropin_tree(const char *dir)
{
	static char main_path[SBX_PATH_MAX];
	char rel[64];

	make_dir(dir, 0755, 0);
	snprintf(rel, sizeof(rel), "%s/conf.d", dir);
	make_dir(rel, 0755, 0);
	snprintf(rel, sizeof(rel), "%s/main.conf", dir);
	write_text(rel, "[profile p]\nworkspace_root = /w\n[global]\nstate_dir = /s\n", 0644, 0);
	/* pathf's buffers rotate: the caller keeps this one for the test. */
	assert_int_equal(sbx_strlcpy(main_path, sizeof(main_path), pathf(rel)), 0);
	return main_path;
}

static struct sbx_config *load_cfg(const char *path)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };

	if (sbx_config_load(path, 0, &cfg, &err) != 0)
		fail_msg("%s: %s", path, err.msg);
	return cfg;
}

static void test_dropins_sorted_and_applied(void **state)
{
	const char *main_path;
	const struct sbx_profile *p;
	struct sbx_config *cfg;
	const char *agents[] = { "agents" };
	/* Text that refuses the whole config if it is ever read. */
	const char *junk = "this is not a config\n";

	(void)state;
	REQUIRE_TREE();
	main_path = dropin_tree("d1");
	cfg = load_cfg(main_path);	/* control: an empty conf.d adds nothing */
	assert_int_equal(cfg->n_files, 1);
	assert_int_equal(cfg->n_matches, 0);
	sbx_config_free(cfg);

	/* Bytewise order: "Z" (0x5a) before "a" (0x61) before "b" whatever
	 * the locale; digits first. The later file sees the earlier one's
	 * profile (inherit) and rules. */
	write_text("d1/conf.d/b-match.conf", "[match]\ngroup agents = q\nuser bob = p\n", 0644, 0);
	write_text("d1/conf.d/a-profile.conf",
		   "[profile q]\ninherit = p\nnetwork = deny\n[ceiling]\nroot = /srv rw\n", 0644, 0);
	write_text("d1/conf.d/Z-global.conf", "[global]\nagent_shell = /x/agent-shell\n", 0644, 0);
	write_text("d1/conf.d/10-ceiling.conf", "[ceiling]\nhost_write = deny\n", 0644, 0);
	/* Not drop-ins: ignored, though their content is junk. */
	write_text("d1/conf.d/README", junk, 0644, 0);
	write_text("d1/conf.d/x.conf~", junk, 0644, 0);
	write_text("d1/conf.d/x.conf.dpkg-old", junk, 0644, 0);
	write_text("d1/conf.d/.hidden.conf", junk, 0644, 0);
	write_text("d1/conf.d/.conf", junk, 0644, 0);
	write_text("d1/conf.d/sp ace.conf", junk, 0644, 0);
	write_text("d1/conf.d/x.CONF", junk, 0644, 0);
	/* Not even trusted: a name that is not a drop-in is never opened. */
	write_text("d1/conf.d/x.conf.bak", junk, 0666, sbx_test_uid());
	make_dir("d1/conf.d/sub", 0755, 0);

	cfg = load_cfg(main_path);
	assert_int_equal(cfg->n_files, 5);
	assert_string_equal(cfg->files[0], main_path);
	assert_string_equal(cfg->path, main_path);
	assert_non_null(strstr(cfg->files[1], "/d1/conf.d/10-ceiling.conf"));
	assert_non_null(strstr(cfg->files[2], "/d1/conf.d/Z-global.conf"));
	assert_non_null(strstr(cfg->files[3], "/d1/conf.d/a-profile.conf"));
	assert_non_null(strstr(cfg->files[4], "/d1/conf.d/b-match.conf"));
	assert_string_equal(cfg->state_dir, "/s");
	assert_string_equal(cfg->agent_shell, "/x/agent-shell");
	assert_int_equal(cfg->ceiling.host_write, SBX_ACCESS_DENY);
	assert_int_equal(cfg->ceiling.n_roots, 1);
	p = sbx_config_find_profile(cfg, "q");
	assert_non_null(p);
	assert_string_equal(p->workspace_root, "/w");	/* inherited from the main file */
	assert_int_equal(sbx_config_select(cfg, "alice", agents, 1, &p, NULL), 0);
	assert_string_equal(p->name, "q");
	assert_ptr_equal(cfg->matches[0].file, cfg->files[4]);
	assert_int_equal(cfg->matches[0].line, 2);
	assert_int_equal(sbx_config_select(cfg, "bob", agents, 1, &p, NULL), 0);
	assert_string_equal(p->name, "p");
	sbx_config_free(cfg);
}

static void test_dropin_duplicate_key(void **state)
{
	const char *main_path;
	char want[SBX_PATH_MAX + 64];

	(void)state;
	REQUIRE_TREE();
	main_path = dropin_tree("d2");
	/* Control: a [global] key the main file leaves unset. */
	write_text("d2/conf.d/10-shell.conf", "[global]\nagent_shell = /x/agent-shell\n", 0644, 0);
	sbx_config_free(load_cfg(main_path));
	/* state_dir is the main file's (line 4): given again, refused, both
	 * places named. */
	write_text("d2/conf.d/20-state.conf", "# comment\n[global]\nstate_dir = /other\n", 0644, 0);
	snprintf(want, sizeof(want), "first at %s:4", main_path);
	load_refused(main_path, 0, -EINVAL, pathf("d2/conf.d/20-state.conf:3"), want);
	load_refused(main_path, 0, -EINVAL, pathf("d2/conf.d/20-state.conf:3"),
		     "key 'state_dir': duplicate key");
	assert_int_equal(unlink(pathf("d2/conf.d/20-state.conf")), 0);
	sbx_config_free(load_cfg(main_path));
	/* The same between two drop-ins. */
	write_text("d2/conf.d/30-shell.conf", "[global]\nagent_shell = /y/agent-shell\n", 0644, 0);
	snprintf(want, sizeof(want), "first at %s:2", pathf("d2/conf.d/10-shell.conf"));
	load_refused(main_path, 0, -EINVAL, pathf("d2/conf.d/30-shell.conf:2"), want);
	assert_int_equal(unlink(pathf("d2/conf.d/30-shell.conf")), 0);
	/* A profile defined twice, and a [match] rule given twice. */
	write_text("d2/conf.d/40-profile.conf", "[profile p]\nworkspace_root = /v\n", 0644, 0);
	snprintf(want, sizeof(want), "duplicate profile (first at %s:1)", main_path);
	load_refused(main_path, 0, -EINVAL, pathf("d2/conf.d/40-profile.conf:1"), want);
	assert_int_equal(unlink(pathf("d2/conf.d/40-profile.conf")), 0);
	write_text("d2/conf.d/50-a.conf", "[match]\nuser bob = p\n", 0644, 0);
	sbx_config_free(load_cfg(main_path));
	write_text("d2/conf.d/51-b.conf", "[match]\nuser bob = p\n", 0644, 0);
	snprintf(want, sizeof(want), "given twice (first at %s:2)", pathf("d2/conf.d/50-a.conf"));
	load_refused(main_path, 0, -EINVAL, pathf("d2/conf.d/51-b.conf:2"), want);
	assert_int_equal(unlink(pathf("d2/conf.d/51-b.conf")), 0);
	sbx_config_free(load_cfg(main_path));
}

static void test_dropin_errors_name_the_file(void **state)
{
	const char *main_path;

	(void)state;
	REQUIRE_TREE();
	main_path = dropin_tree("d3");
	write_text("d3/conf.d/10-ok.conf", "[match]\nuser bob = p\n", 0644, 0);
	sbx_config_free(load_cfg(main_path));
	/* An unparsable drop-in refuses the whole config at its line. */
	write_text("d3/conf.d/20-bad.conf", "[profile r]\nworkspace_root = /r\nnetwrok = deny\n",
		   0644, 0);
	load_refused(main_path, 0, -EINVAL, pathf("d3/conf.d/20-bad.conf:3"), "'netwrok'");
	assert_int_equal(unlink(pathf("d3/conf.d/20-bad.conf")), 0);
	/* Each file starts outside any section: the key is not the main
	 * file's [global]'s. */
	write_text("d3/conf.d/30-nosec.conf", "agent_shell = /x\n", 0644, 0);
	load_refused(main_path, 0, -EINVAL, pathf("d3/conf.d/30-nosec.conf:1"),
		     "outside any section");
	assert_int_equal(unlink(pathf("d3/conf.d/30-nosec.conf")), 0);
	/* A rule for a missing profile: -EINVAL, never -ENOENT (which
	 * callers read as "no config at all"). */
	write_text("d3/conf.d/40-rule.conf", "[match]\nuser carol = nope\n", 0644, 0);
	load_refused(main_path, 0, -EINVAL, pathf("d3/conf.d/40-rule.conf:2"), "'nope'");
	assert_int_equal(unlink(pathf("d3/conf.d/40-rule.conf")), 0);
	sbx_config_free(load_cfg(main_path));
}

static void test_dropin_untrusted(void **state)
{
	const char *main_path;
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	char target[SBX_PATH_MAX];

	(void)state;
	REQUIRE_TREE();
	main_path = dropin_tree("d4");
	write_text("d4/conf.d/10-ok.conf", "[match]\nuser bob = p\n", 0644, 0);
	sbx_config_free(load_cfg(main_path));	/* control */

	write_text("d4/conf.d/20-gw.conf", "[match]\nuser gw = p\n", 0664, 0);
	load_refused(main_path, 0, -EPERM, pathf("d4/conf.d/20-gw.conf"), "group-writable");
	assert_int_equal(chmod(pathf("d4/conf.d/20-gw.conf"), 0644), 0);
	sbx_config_free(load_cfg(main_path));	/* fixed: loads */

	write_text("d4/conf.d/30-ww.conf", "[match]\nuser ww = p\n", 0646, 0);
	load_refused(main_path, 0, -EPERM, pathf("d4/conf.d/30-ww.conf"), "world-writable");
	assert_int_equal(chmod(pathf("d4/conf.d/30-ww.conf"), 0644), 0);
	sbx_config_free(load_cfg(main_path));

	write_text("d4/conf.d/40-user.conf", "[match]\nuser u = p\n", 0644, sbx_test_uid());
	load_refused(main_path, 0, -EPERM, pathf("d4/conf.d/40-user.conf"), "owned by uid");
	/* A draft tree may still be checked for syntax without trust. */
	assert_int_equal(sbx_config_load(main_path, SBX_CONFIG_SKIP_TRUST, &cfg, &err), 0);
	assert_int_equal(cfg->n_files, 5);
	sbx_config_free(cfg);
	assert_int_equal(chown(pathf("d4/conf.d/40-user.conf"), 0, 0), 0);
	sbx_config_free(load_cfg(main_path));

	/* A symlink, even to a trusted file, is refused (and never
	 * followed with SBX_CONFIG_SKIP_TRUST either). */
	write_text("d4/target.conf", "[match]\nuser t = p\n", 0644, 0);
	snprintf(target, sizeof(target), "%s", pathf("d4/target.conf"));
	assert_int_equal(symlink(target, pathf("d4/conf.d/50-link.conf")), 0);
	load_refused(main_path, 0, -ELOOP, pathf("d4/conf.d/50-link.conf"), "symlink");
	load_refused(main_path, SBX_CONFIG_SKIP_TRUST, -ELOOP, pathf("d4/conf.d/50-link.conf"),
		     "symlink");
	assert_int_equal(unlink(pathf("d4/conf.d/50-link.conf")), 0);

	/* A hard link: its inode decides. Another name for a root-owned,
	 * not writable inode is as good as the file (the main file's rule,
	 * test_hard_linked); one for an inode someone else owns is refused
	 * by owner, whatever name it has. */
	assert_int_equal(link(target, pathf("d4/conf.d/60-hard.conf")), 0);
	sbx_config_free(load_cfg(main_path));
	assert_int_equal(chown(target, sbx_test_uid(), 0), 0);
	load_refused(main_path, 0, -EPERM, pathf("d4/conf.d/60-hard.conf"), "owned by uid");
	assert_int_equal(unlink(pathf("d4/conf.d/60-hard.conf")), 0);

	/* Neither a directory nor a FIFO with a drop-in's name. */
	make_dir("d4/conf.d/70-dir.conf", 0755, 0);
	load_refused(main_path, 0, -EINVAL, pathf("d4/conf.d/70-dir.conf"), "not a regular file");
	assert_int_equal(rmdir(pathf("d4/conf.d/70-dir.conf")), 0);
	assert_int_equal(mkfifo(pathf("d4/conf.d/71-fifo.conf"), 0644), 0);
	load_refused(main_path, 0, -EINVAL, pathf("d4/conf.d/71-fifo.conf"), "not a regular file");
	assert_int_equal(unlink(pathf("d4/conf.d/71-fifo.conf")), 0);
	sbx_config_free(load_cfg(main_path));
}

static void test_dropin_dir_untrusted(void **state)
{
	const char *main_path;
	char target[SBX_PATH_MAX];

	(void)state;
	REQUIRE_TREE();
	main_path = dropin_tree("d5");
	write_text("d5/conf.d/10-ok.conf", "[match]\nuser bob = p\n", 0644, 0);
	sbx_config_free(load_cfg(main_path));	/* control */

	assert_int_equal(chmod(pathf("d5/conf.d"), 0775), 0);
	load_refused(main_path, 0, -EPERM, pathf("d5/conf.d"), "group-writable");
	assert_int_equal(chmod(pathf("d5/conf.d"), 01777), 0);
	load_refused(main_path, 0, -EPERM, pathf("d5/conf.d"), "world-writable");
	assert_int_equal(chmod(pathf("d5/conf.d"), 0755), 0);
	assert_int_equal(chown(pathf("d5/conf.d"), sbx_test_uid(), 0), 0);
	load_refused(main_path, 0, -EPERM, pathf("d5/conf.d"), "owned by uid");
	assert_int_equal(chown(pathf("d5/conf.d"), 0, 0), 0);
	sbx_config_free(load_cfg(main_path));

	/* conf.d a symlink to a trusted directory, or not a directory. */
	assert_int_equal(rename(pathf("d5/conf.d"), pathf("d5/real.d")), 0);
	snprintf(target, sizeof(target), "%s", pathf("d5/real.d"));
	assert_int_equal(symlink(target, pathf("d5/conf.d")), 0);
	load_refused(main_path, 0, -ELOOP, pathf("d5/conf.d"), "symlink");
	assert_int_equal(unlink(pathf("d5/conf.d")), 0);
	write_text("d5/conf.d", "[match]\n", 0644, 0);
	load_refused(main_path, 0, -ENOTDIR, pathf("d5/conf.d"), "not a directory");
	assert_int_equal(unlink(pathf("d5/conf.d")), 0);
	/* Missing: fine, the main file alone. */
	sbx_config_free(load_cfg(main_path));
}

static void test_dropin_limits(void **state)
{
	const char *main_path;
	char rel[64], *big;
	size_t half = SBX_CONFIG_MAX_BYTES / 2 + 1;

	(void)state;
	REQUIRE_TREE();
	main_path = dropin_tree("d6");
	/* Each file under the budget, together over it. */
	big = malloc(half + 1);
	assert_non_null(big);
	memset(big, '#', half);
	for (size_t i = 99; i < half; i += 100)
		big[i] = '\n';
	big[half - 1] = '\n';
	big[half] = '\0';
	write_text("d6/conf.d/10-big.conf", big, 0644, 0);
	sbx_config_free(load_cfg(main_path));	/* control: one fits */
	write_text("d6/conf.d/20-big.conf", big, 0644, 0);
	load_refused(main_path, 0, -EFBIG, pathf("d6/conf.d/20-big.conf"), "together");
	free(big);
	assert_int_equal(unlink(pathf("d6/conf.d/10-big.conf")), 0);
	assert_int_equal(unlink(pathf("d6/conf.d/20-big.conf")), 0);
	for (int i = 0; i < SBX_CONFIG_MAX_DROPINS; i++) {
		snprintf(rel, sizeof(rel), "d6/conf.d/%03d.conf", i);
		write_text(rel, "# empty\n", 0644, 0);
	}
	sbx_config_free(load_cfg(main_path));	/* control: the most there may be */
	write_text("d6/conf.d/999.conf", "# one too many\n", 0644, 0);
	load_refused(main_path, 0, -E2BIG, pathf("d6/conf.d"), "drop-ins");
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
		cmocka_unit_test(test_path_walk),
		cmocka_unit_test(test_dropins_sorted_and_applied),
		cmocka_unit_test(test_dropin_duplicate_key),
		cmocka_unit_test(test_dropin_errors_name_the_file),
		cmocka_unit_test(test_dropin_untrusted),
		cmocka_unit_test(test_dropin_dir_untrusted),
		cmocka_unit_test(test_dropin_limits),
	};
	return cmocka_run_group_tests_name("trust", tests, setup, teardown);
}
