/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for account.c: group names are never dropped silently. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

/*
 * Each test runs in a forked root child with a mount namespace of its own,
 * where /etc/group (and /etc/passwd) are bind-mounted copies the test
 * writes: nothing of the host's account database is touched.
 */

#define BIG_GROUP "sbx-test-big"
#define BIG_GID 59871

static int bind_copy(const char *real, const char *extra, size_t n_filler)
{
	char tmpl[] = "/tmp/sbx-test-acct-XXXXXX";
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int fd = mkstemp(tmpl), r = -1;

	if (fd < 0 || sbx_read_file(real, 1u << 22, &buf, &len, NULL) != 0)
		goto out;
	f = fdopen(fd, "w");
	if (!f)
		goto out;
	fd = -1;
	fwrite(buf, 1, len, f);
	if (extra) {
		fputs(extra, f);
		/* A member list long enough that the entry no longer fits a
		 * 16 KiB lookup buffer (the old fixed size). */
		for (size_t i = 0; i < n_filler; i++)
			fprintf(f, ",sbx-filler-member-%05zu", i);
		fputc('\n', f);
	}
	if (fclose(f) != 0 || chmod(tmpl, 0644) != 0)
		goto out;
	r = mount(tmpl, real, NULL, MS_BIND, NULL);
out:
	if (fd >= 0)
		close(fd);
	unlink(tmpl);	/* the bind keeps the inode */
	free(buf);
	return r;
}

static int private_ns(void)
{
	return unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0
	       ? 0 : -1;
}

static int child_big_group(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_account a = { 0 };
	char line[128];
	bool found = false;

	(void)arg;
	CHILD_CHECK(private_ns() == 0);
	snprintf(line, sizeof(line), "%s:x:%d:nobody", BIG_GROUP, BIG_GID);
	CHILD_CHECK(bind_copy("/etc/group", line, 1200) == 0);
	/* The entry really is larger than the old buffer. */
	{
		struct group gr, *res = NULL;
		char small[16384];

		CHILD_CHECK(getgrgid_r(BIG_GID, &gr, small, sizeof(small), &res) == ERANGE);
	}
	if (sbx_account_by_name("nobody", &a, &err) != 0) {
		fprintf(stderr, "lookup: %s\n", err.msg);
		return 1;
	}
	for (size_t i = 0; i < a.n_groups; i++)
		found = found || strcmp(a.groups[i], BIG_GROUP) == 0;
	CHILD_CHECK(found);
	CHILD_CHECK(sbx_account_in_group(&a, BIG_GROUP));
	/* Control: the primary group is there as well. */
	CHILD_CHECK(sbx_account_in_group(&a, "nogroup"));
	CHILD_CHECK(a.uid == 65534 && strcmp(a.user, "nobody") == 0);
	sbx_account_free(&a);
	/* The same by uid. */
	CHILD_CHECK(sbx_account_by_uid(65534, &a, &err) == 0);
	CHILD_CHECK(sbx_account_in_group(&a, BIG_GROUP));
	sbx_account_free(&a);
	return 0;
}

static void test_big_group_kept(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_big_group, NULL)), 0);
}

/* Many groups: more than any fixed array the callers used to have. */
static int child_many_groups(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_account a = { 0 };
	char *extra;
	size_t off = 0, size = 300 * 64;

	(void)arg;
	CHILD_CHECK(private_ns() == 0);
	extra = malloc(size);
	CHILD_CHECK(extra != NULL);
	for (int i = 0; i < 299; i++)
		off += (size_t)snprintf(extra + off, size - off, "sbx-test-g%03d:x:%d:nobody\n", i,
					58000 + i);
	off += (size_t)snprintf(extra + off, size - off, "sbx-test-glast:x:58299:nobody");
	CHILD_CHECK(bind_copy("/etc/group", extra, 0) == 0);
	free(extra);
	CHILD_CHECK(sbx_account_by_name("nobody", &a, &err) == 0);
	CHILD_CHECK(a.n_groups >= 301);
	CHILD_CHECK(sbx_account_in_group(&a, "sbx-test-glast"));
	CHILD_CHECK(sbx_account_in_group(&a, "sbx-test-g000"));
	sbx_account_free(&a);
	return 0;
}

static void test_many_groups_kept(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_many_groups, NULL)), 0);
}

/* A group name no config can name (64 bytes or more, as an AD group with
 * a qualified name) is left out, and the account still loads: refusing it
 * refused every member, root's sudo included, in every PAM stack. */
static int child_long_group_name(void *arg)
{
	struct sbx_error err = { 0 };
	struct sbx_account a = { 0 };
	char line[256], name[80];

	(void)arg;
	CHILD_CHECK(private_ns() == 0);
	memset(name, 'g', 70);
	memcpy(name, "sbx-", 4);
	name[70] = '\0';
	snprintf(line, sizeof(line), "%s:x:%d:nobody", name, BIG_GID);
	CHILD_CHECK(bind_copy("/etc/group", line, 0) == 0);
	CHILD_CHECK(getgrnam(name) != NULL);	/* the entry is really there */
	if (sbx_account_by_name("nobody", &a, &err) != 0) {
		fprintf(stderr, "lookup: %s\n", err.msg);
		return 1;
	}
	CHILD_CHECK(!sbx_account_in_group(&a, name));
	CHILD_CHECK(sbx_account_in_group(&a, "nogroup"));	/* control */
	sbx_account_free(&a);
	return 0;
}

static void test_long_group_name_skipped(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_long_group_name, NULL)),
			 0);
}

static void test_missing_account(void **state)
{
	struct sbx_error err = { 0 };
	struct sbx_account a = { 0 };

	(void)state;
	assert_int_equal(sbx_account_by_name("sbx-test-no-such-user-x", &a, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no passwd entry"));
	assert_int_equal(a.n_groups, 0);
	assert_int_equal(sbx_account_by_name("", &a, &err), -EINVAL);
	/* Control. */
	assert_int_equal(sbx_account_by_name("root", &a, &err), 0);
	assert_int_equal(a.uid, 0);
	assert_true(sbx_account_in_group(&a, "root"));
	sbx_account_free(&a);
}

/*
 * The passwd entry alone: no groups until asked. A config with a group
 * rule refuses to decide for such an account (a member of the group
 * would read as no agent); once the groups are looked up the rule
 * matches. A config with user rules only decides without them.
 */
static void test_groups_when_needed(void **state)
{
	static const char groups_text[] =
		"[profile p]\nworkspace_root = /srv/ws\n\n[match]\ngroup root = p\n";
	static const char users_text[] =
		"[profile p]\nworkspace_root = /srv/ws\n\n[match]\nuser root = p\n";
	struct sbx_config_source src = { .name = "groups.conf", .buf = groups_text,
					 .len = sizeof(groups_text) - 1 };
	struct sbx_profile *prof = calloc(1, sizeof(*prof));
	struct sbx_config *cfg = NULL, *ucfg = NULL;
	struct sbx_error err = { 0 };
	struct sbx_account a = { 0 };

	(void)state;
	assert_non_null(prof);
	assert_int_equal(sbx_config_parse_sources(&src, 1, &cfg, &err), 0);
	src = (struct sbx_config_source){ .name = "users.conf", .buf = users_text,
					  .len = sizeof(users_text) - 1 };
	assert_int_equal(sbx_config_parse_sources(&src, 1, &ucfg, &err), 0);
	assert_true(sbx_config_has_group_rules(cfg));
	assert_false(sbx_config_has_group_rules(ucfg));
	assert_false(sbx_config_has_group_rules(NULL));

	assert_int_equal(sbx_account_by_uid_passwd(0, &a, &err), 0);
	assert_string_equal(a.user, "root");
	assert_false(a.groups_loaded);
	assert_int_equal(a.n_groups, 0);
	assert_int_equal(sbx_account_profile(cfg, &a, prof, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "group names not looked up"));
	/* Control: user rules need no groups. */
	assert_int_equal(sbx_account_profile(ucfg, &a, prof, &err), 0);
	assert_string_equal(prof->name, "p");

	assert_int_equal(sbx_account_load_groups(&a, &err), 0);
	assert_true(a.groups_loaded);
	assert_true(sbx_account_in_group(&a, "root"));
	assert_int_equal(sbx_account_load_groups(&a, &err), 0);	/* once is enough */
	assert_int_equal(sbx_account_profile(cfg, &a, prof, &err), 0);
	assert_string_equal(prof->name, "p");
	sbx_account_free(&a);
	assert_false(a.groups_loaded);
	sbx_config_free(cfg);
	sbx_config_free(ucfg);
	free(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_group_kept),
		cmocka_unit_test(test_many_groups_kept),
		cmocka_unit_test(test_long_group_name_skipped),
		cmocka_unit_test(test_missing_account),
		cmocka_unit_test(test_groups_when_needed),
	};
	return cmocka_run_group_tests_name("account", tests, NULL, NULL);
}
