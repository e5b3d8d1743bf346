/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for record.c: the session contract between the PAM stage and agent-shell. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

struct fixture {
	char base[64];
	char rt[128];		/* runtime dir (created by the first write) */
	char sessions[160];
};

static int setup(void **state)
{
	struct fixture *fx;

	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	snprintf(fx->base, sizeof(fx->base), "/run/sbx-test-rec-XXXXXX");
	if (!mkdtemp(fx->base) || chmod(fx->base, 0755) != 0) {
		free(fx);
		return -1;
	}
	snprintf(fx->rt, sizeof(fx->rt), "%s/rt", fx->base);
	snprintf(fx->sessions, sizeof(fx->sessions), "%s/sessions", fx->rt);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx) {
		if (strncmp(fx->base, "/run/sbx-test-", 14) == 0)
			sbx_test_rmtree(fx->base);
		free(fx);
	}
	return 0;
}

static unsigned long my_mntns(void)
{
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) != 0)
		return 0;
	return (unsigned long)st.st_ino;
}

static void fill(struct sbx_record *rec, uid_t uid)
{
	struct sbx_error err = { 0 };

	memset(rec, 0, sizeof(*rec));
	assert_int_equal(sbx_session_id_new(rec->session, &err), 0);
	sbx_strlcpy(rec->user, sizeof(rec->user), "agent1");
	rec->uid = uid;
	rec->mntns = my_mntns();
	rec->netns = 0;
	sbx_strlcpy(rec->profile, sizeof(rec->profile), "coder");
	memset(rec->hash, 'a', 64);
	sbx_strlcpy(rec->client, sizeof(rec->client), "192.0.2.7");
	sbx_strlcpy(rec->service, sizeof(rec->service), "sshd");
	rec->started = 1700000000;
	sbx_strlcpy(rec->home, sizeof(rec->home), "/home/agent1");
	sbx_strlcpy(rec->home_source, sizeof(rec->home_source),
		    "/var/lib/agent-sandbox/homes/agent1");
	rec->home_kind = SBX_HOME_ISOLATED;
}

struct read_args {
	const char *rt;
	const char *id;
	uid_t uid;
	unsigned long mntns;
};

/* In a child dropped to the agent uid: the shell's side of the contract.
 * Exit code 0 on success, else the errno. */
static int read_as_agent(void *arg)
{
	const struct read_args *a = arg;
	struct sbx_record rec;
	struct sbx_error err = { 0 };
	int r;

	r = sbx_record_read_verified(a->rt, a->id, a->uid, a->mntns, &rec, &err);
	if (r) {
		fprintf(stderr, "read_as_agent: %s\n", err.msg);
		return -r;
	}
	return strcmp(rec.session, a->id) == 0 ? 0 : 99;
}

static int agent_read(const char *rt, const char *id, uid_t uid, unsigned long mntns)
{
	struct read_args a = { rt, id, uid, mntns };

	return sbx_test_status_code(sbx_test_fork(true, read_as_agent, &a));
}

static void test_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec, got;
	char path[256];
	struct stat st;
	unsigned n = 99;
	uid_t u;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	fill(&rec, u);
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, &err), 0);
	assert_int_equal(n, 0);		/* no sessions dir yet */
	assert_int_equal(sbx_record_write(fx->rt, &rec, &err), 0);
	assert_int_equal(stat(fx->rt, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(stat(fx->sessions, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(path, sizeof(path), "%s/%s", fx->sessions, rec.session);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(st.st_nlink, 1);

	assert_int_equal(sbx_record_read_verified(fx->rt, rec.session, u, rec.mntns, &got,
						  &err), 0);
	assert_int_equal(got.version, 1);
	assert_string_equal(got.session, rec.session);
	assert_string_equal(got.user, "agent1");
	assert_int_equal(got.uid, u);
	assert_int_equal(got.mntns, rec.mntns);
	assert_int_equal(got.netns, 0);
	assert_string_equal(got.profile, "coder");
	assert_string_equal(got.hash, rec.hash);
	assert_string_equal(got.client, "192.0.2.7");
	assert_string_equal(got.service, "sshd");
	assert_int_equal(got.started, 1700000000);
	assert_string_equal(got.home, "/home/agent1");
	assert_string_equal(got.home_source, rec.home_source);
	assert_int_equal(got.home_kind, SBX_HOME_ISOLATED);
	/* The shell reads it as the agent. */
	assert_int_equal(agent_read(fx->rt, rec.session, u, rec.mntns), 0);

	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sbx_record_count_user(fx->rt, u + 1, &n, &err), 0);
	assert_int_equal(n, 0);
	/* The same id twice is never overwritten. */
	assert_int_equal(sbx_record_write(fx->rt, &rec, &err), -EEXIST);

	assert_int_equal(sbx_record_remove(fx->rt, rec.session, &err), 0);
	assert_int_equal(sbx_record_remove(fx->rt, rec.session, &err), -ENOENT);
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sbx_record_read_verified(fx->rt, rec.session, u, rec.mntns, &got,
						  &err), -ENOENT);
}

static void expect_refusal(const struct fixture *fx, const struct sbx_record *rec,
			   uid_t uid, unsigned long mntns, int e, const char *msg)
{
	struct sbx_error err = { 0 };
	struct sbx_record got;

	memset(&got, 0x5a, sizeof(got));
	assert_int_equal(sbx_record_read_verified(fx->rt, rec->session, uid, mntns, &got,
						  &err), -e);
	if (!strstr(err.msg, msg))
		fail_msg("message '%s' does not contain '%s'", err.msg, msg);
	assert_int_equal(got.version, 0x5a5a5a5a);	/* output untouched */
	/* And the shell, as the agent, is refused with the same errno. */
	assert_int_equal(agent_read(fx->rt, rec->session, uid, mntns), e);
}

static void test_verify_refusals(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec, other;
	char path[256], path2[256];
	uid_t u;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	fill(&rec, u);
	assert_int_equal(sbx_record_write(fx->rt, &rec, &err), 0);
	snprintf(path, sizeof(path), "%s/%s", fx->sessions, rec.session);
	/* Positive control first. */
	assert_int_equal(agent_read(fx->rt, rec.session, u, rec.mntns), 0);

	expect_refusal(fx, &rec, u + 1, rec.mntns, EPERM, "names uid");
	expect_refusal(fx, &rec, u, rec.mntns + 1, ESTALE, "mount namespace");

	assert_int_equal(chown(path, u, 0), 0);		/* the agent owns it */
	expect_refusal(fx, &rec, u, rec.mntns, EPERM, "not root");
	assert_int_equal(chown(path, 0, 0), 0);

	assert_int_equal(chmod(path, 0666), 0);
	expect_refusal(fx, &rec, u, rec.mntns, EPERM, "mode 0666 is group/world writable");
	assert_int_equal(chmod(path, 0644), 0);

	snprintf(path2, sizeof(path2), "%s/extra-link", fx->sessions);
	assert_int_equal(link(path, path2), 0);
	expect_refusal(fx, &rec, u, rec.mntns, EMLINK, "refusing a hard-linked record");
	assert_int_equal(unlink(path2), 0);

	/* A symlink named like a session, pointing at a valid record. */
	fill(&other, u);
	assert_int_equal(sbx_record_write(fx->rt, &other, &err), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(other.session, path), 0);
	expect_refusal(fx, &rec, u, rec.mntns, ELOOP, "is a symlink");
	/* Symlinks and foreign records are not counted either. */
	{
		unsigned n = 0;

		assert_int_equal(sbx_record_count_user(fx->rt, u, &n, &err), 0);
		assert_int_equal(n, 1);
	}
	/* Control at the end: the untouched record still verifies. */
	assert_int_equal(agent_read(fx->rt, other.session, u, other.mntns), 0);
}

static void test_untrusted_dirs_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	char rt[256], *tmp;

	SBX_TEST_REQUIRE_ROOT();
	fill(&rec, sbx_test_uid());
	tmp = sbx_test_mkdtemp("rec");
	snprintf(rt, sizeof(rt), "%s/rt", tmp);
	assert_int_equal(sbx_record_write(rt, &rec, &err), -EPERM);
	assert_non_null(strstr(err.msg, "/tmp: mode 1777"));
	sbx_test_rmtree(tmp);
	free(tmp);

	/* A sessions dir the agent could write is not trusted by the shell. */
	assert_int_equal(sbx_record_write(fx->rt, &rec, &err), 0);
	assert_int_equal(chmod(fx->sessions, 0777), 0);
	assert_int_equal(agent_read(fx->rt, rec.session, rec.uid, rec.mntns), EPERM);
	assert_int_equal(chmod(fx->sessions, 0755), 0);
	assert_int_equal(agent_read(fx->rt, rec.session, rec.uid, rec.mntns), 0);
}

static void test_values_and_parser(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec, got;
	char a[SBX_SESSION_ID_HEX + 1], b[SBX_SESSION_ID_HEX + 1];
	const char *ok = "version=1\nsession=0123456789abcdef0123456789abcdef\nuser=a\n"
			 "uid=5\nmntns=7\nstarted=1\nhome=/h\nhome_kind=ephemeral\n";
	char buf[512];

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_session_id_new(a, &err), 0);
	assert_int_equal(sbx_session_id_new(b, &err), 0);
	assert_true(sbx_session_id_is_valid(a));
	assert_string_not_equal(a, b);
	assert_false(sbx_session_id_is_valid("../../etc/passwd"));
	assert_false(sbx_session_id_is_valid("0123456789ABCDEF0123456789abcdef"));

	/* A newline from the network (PAM_RHOST) must not add a key. */
	fill(&rec, sbx_test_uid());
	sbx_strlcpy(rec.client, sizeof(rec.client), "x\nuid=0");
	assert_int_equal(sbx_record_write(fx->rt, &rec, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "control character"));
	sbx_strlcpy(rec.session, sizeof(rec.session), "../x");
	assert_int_equal(sbx_record_write(fx->rt, &rec, &err), -EINVAL);

	assert_int_equal(sbx_record_parse(ok, strlen(ok), &got, &err), 0);
	assert_int_equal(got.uid, 5);
	assert_int_equal(got.home_kind, SBX_HOME_EPHEMERAL);
	snprintf(buf, sizeof(buf), "%suid=6\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "duplicate key 'uid'"));
	snprintf(buf, sizeof(buf), "%sbogus=1\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown key 'bogus'"));
	assert_int_equal(sbx_record_parse(ok, strlen(ok) - 1, &got, &err), -EINVAL);
	snprintf(buf, sizeof(buf), "version=2%s", ok + 9);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_int_equal(sbx_record_parse(ok + 10, strlen(ok + 10), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "required key is missing"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_dirs_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values_and_parser, setup, teardown),
	};
	return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
