/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for profile.c, describe.c and sha256.c: defaults, names, expand, validate, access, JSON, hash. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "sha256.h"

#define SET(dst, src) assert_int_equal(sbx_strlcpy((dst), sizeof(dst), (src)), 0)

/* struct sbx_profile is ~130 KB: tests keep them on the heap. */
static struct sbx_profile *new_default(const char *ws)
{
	struct sbx_profile *p = malloc(sizeof(*p));

	assert_non_null(p);
	sbx_profile_init_default(p);
	if (ws)
		assert_int_equal(sbx_strlcpy(p->workspace_root, sizeof(p->workspace_root), ws), 0);
	return p;
}

static char *json_of(const struct sbx_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(sbx_profile_to_json(p, f), 0);
	fclose(f);
	return buf;
}

static void test_defaults_valid(void **state)
{
	struct sbx_profile *p = new_default(NULL), *o = new_default(NULL);
	struct sbx_error err = { 0 };

	(void)state;
	/* The default has no workspace: the caller must set it. */
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "workspace_root"));
	SET(p->workspace_root, "/srv/ws");
	assert_int_equal(sbx_profile_validate(p, &err), 0);
	assert_string_equal(p->name, "default");
	assert_int_equal(p->host_write, SBX_ACCESS_DENY);
	assert_int_equal(p->network, SBX_ACCESS_DENY);
	assert_int_equal(p->home, SBX_HOME_EPHEMERAL);
	assert_int_equal(p->n_deny_read, 6);
	assert_true(p->limits.set_mask & (1u << SBX_LIMIT_CORE));
	assert_int_equal(p->limits.value[SBX_LIMIT_TMP_SIZE], 256u << 20);
	assert_int_equal(p->require, SBX_G_WRITE_BOUNDARY | SBX_G_NO_PRIVILEGE_GAIN |
			 SBX_G_SYSCALL_FILTER | SBX_G_ENV_SCRUB | SBX_G_NETWORK_BOUNDARY);

	sbx_profile_init_open(o);
	assert_int_equal(sbx_profile_validate_ceiling(o, &err), 0);
	assert_int_equal(o->isolation, SBX_ISOLATION_UNCONFINED);
	assert_true(o->ack_unconfined);
	assert_int_equal(o->home, SBX_HOME_REAL);
	assert_int_equal(o->limits.set_mask, 0);
	assert_int_equal(o->n_services, 0);
	assert_int_equal(o->require, 0);
	free(p);
	free(o);
}

static void test_names_roundtrip(void **state)
{
	unsigned i;

	(void)state;
	for (i = 0; i <= SBX_ACCESS_ALLOW; i++) {
		enum sbx_access a;

		assert_int_equal(sbx_access_parse(sbx_access_name(i), &a), 0);
		assert_int_equal(a, i);
	}
	for (i = 0; i <= SBX_HOME_REAL; i++) {
		enum sbx_home h;

		assert_int_equal(sbx_home_parse(sbx_home_name(i), &h), 0);
		assert_int_equal(h, i);
	}
	for (i = 0; i <= SBX_ISOLATION_UNCONFINED; i++) {
		enum sbx_isolation v;

		assert_int_equal(sbx_isolation_parse(sbx_isolation_name(i), &v), 0);
		assert_int_equal(v, i);
	}
	for (i = 0; i <= SBX_LEVEL_FULL; i++) {
		enum sbx_level l;

		assert_int_equal(sbx_level_parse(sbx_level_name(i), &l), 0);
		assert_int_equal(l, i);
	}
	for (i = 0; i < SBX_G_COUNT; i++) {
		enum sbx_guarantee g;

		assert_int_equal(sbx_guarantee_parse(sbx_guarantee_name(1u << i), &g), 0);
		assert_int_equal(g, 1u << i);
	}
	for (i = 0; i < SBX_LIMIT_COUNT; i++) {
		enum sbx_limit l;

		assert_int_equal(sbx_limit_parse(sbx_limit_name(i), &l), 0);
		assert_int_equal(l, i);
	}
	assert_string_equal(sbx_guarantee_name(SBX_G_SYSCALL_FILTER), "syscall_filter");
	assert_string_equal(sbx_limit_name(SBX_LIMIT_SESSION_TIME), "session_time");
	assert_string_equal(sbx_guarantee_name(3), "invalid");
	{
		enum sbx_access a = SBX_ACCESS_ALLOW;

		assert_int_equal(sbx_access_parse("Allow", &a), -EINVAL);
		assert_int_equal(sbx_access_parse("", &a), -EINVAL);
		assert_int_equal(a, SBX_ACCESS_ALLOW);	/* untouched on failure */
	}
}

static void test_expand(void **state)
{
	struct sbx_profile *p = new_default("/srv/%u/ws");
	struct sbx_error err = { 0 };

	(void)state;
	SET(p->roots[0].path, "%h/cache");
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_DENY;
	SET(p->roots[1].path, "/data/100%%/%u");
	p->n_roots = 2;
	assert_int_equal(sbx_profile_expand(p, "alice", "/home/alice", &err), 0);
	assert_string_equal(p->workspace_root, "/srv/alice/ws");
	assert_string_equal(p->roots[0].path, "/home/alice/cache");
	assert_string_equal(p->roots[1].path, "/data/100%/alice");
	assert_true(sbx_path_is_canonical(p->workspace_root));
	free(p);

	/* Unknown % sequence: error naming the path; profile untouched. */
	p = new_default("/srv/%x/ws");
	assert_int_equal(sbx_profile_expand(p, "alice", "/home/alice", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/srv/%x/ws"));
	assert_string_equal(p->workspace_root, "/srv/%x/ws");
	free(p);

	/* No path injection through %u or %h. */
	p = new_default("/srv/%u/ws");
	assert_int_equal(sbx_profile_expand(p, "../x", "/home/x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "../x"));
	assert_int_equal(sbx_profile_expand(p, "a/b", "/home/x", &err), -EINVAL);
	assert_int_equal(sbx_profile_expand(p, ".", "/home/x", &err), -EINVAL);
	assert_int_equal(sbx_profile_expand(p, "", "/home/x", &err), -EINVAL);
	assert_int_equal(sbx_profile_expand(p, "bob", "/home/../root", &err), -EINVAL);
	assert_int_equal(sbx_profile_expand(p, "bob", "home/bob", &err), -EINVAL);
	assert_string_equal(p->workspace_root, "/srv/%u/ws");
	free(p);

	/* %h is absolute: only as a prefix ("/x%h" would nest it). */
	p = new_default("/x%h");
	assert_int_equal(sbx_profile_expand(p, "bob", "/home/bob", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/x%h"));
	free(p);

	/* The expansion itself must be canonical: "%h/" with home "/" gives "//". */
	p = new_default("%h/ws");
	assert_int_equal(sbx_profile_expand(p, "bob", "/", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "canonical"));
	free(p);

	/* Too long after expansion. */
	p = new_default("/%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u%u");
	assert_int_equal(sbx_profile_expand(p, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq",
					    "/h", &err), -ENAMETOOLONG);
	free(p);
}

static void test_validate(void **state)
{
	struct sbx_profile *p = new_default("/w");
	struct sbx_error err = { 0 };

	(void)state;
	assert_int_equal(sbx_profile_validate(p, &err), 0);

	p->isolation = SBX_ISOLATION_UNCONFINED;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ack_unconfined"));
	p->ack_unconfined = true;
	assert_int_equal(sbx_profile_validate(p, &err), 0);
	p->isolation = SBX_ISOLATION_SANDBOXED;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "sandboxed"));
	p->ack_unconfined = false;

	p->network = (enum sbx_access)7;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	p->network = SBX_ACCESS_DENY;
	p->home = (enum sbx_home)3;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	p->home = SBX_HOME_ISOLATED;
	p->require = 1u << 20;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	p->require = 0;

	/* Ceilings may leave the workspace empty, profiles may not. */
	p->workspace_root[0] = '\0';
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_int_equal(sbx_profile_validate_ceiling(p, &err), 0);
	SET(p->workspace_root, "/w");

	SET(p->roots[0].path, "/opt");
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_DENY;
	p->roots[0].write = SBX_ACCESS_DENY;
	p->roots[1] = p->roots[0];
	p->n_roots = 2;
	assert_int_equal(sbx_profile_validate(p, &err), 0);	/* same access: fine */
	p->roots[1].write = SBX_ACCESS_ALLOW;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/opt"));
	SET(p->roots[1].path, "/w");
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "workspace root"));
	p->n_roots = 1;

	p->command = SBX_ACCESS_GATED;
	assert_int_equal(sbx_profile_validate(p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "gate_allow"));
	SET(p->gate_allow[0], "/usr/bin/git");
	p->n_gate = 1;
	assert_int_equal(sbx_profile_validate(p, &err), 0);

	p->n_roots = SBX_MAX_ROOTS + 1;
	assert_int_equal(sbx_profile_validate(p, &err), -E2BIG);
	free(p);
}

static void test_path_access(void **state)
{
	struct sbx_profile *p = new_default("/w");

	(void)state;
	p->n_deny_read = 0;
	p->host_read = SBX_ACCESS_ALLOW;
	p->host_write = SBX_ACCESS_DENY;
	SET(p->roots[0].path, "/w/secrets");		/* nested deny in the workspace */
	p->roots[0].read = p->roots[0].write = SBX_ACCESS_DENY;
	SET(p->roots[1].path, "/w/secrets/pub");	/* and an allow inside that */
	p->roots[1].read = SBX_ACCESS_ALLOW;
	p->roots[1].write = SBX_ACCESS_DENY;
	SET(p->roots[2].path, "/opt");
	p->roots[2].read = SBX_ACCESS_ALLOW;
	p->roots[2].write = SBX_ACCESS_ALLOW;
	p->n_roots = 3;
	SET(p->deny_read[0], "/opt/keys");
	SET(p->deny_read[1], "/w/secrets/pub/x");
	p->n_deny_read = 2;

	assert_int_equal(sbx_profile_path_access(p, "/w", true), SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_path_access(p, "/w/src/a.c", true), SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_path_access(p, "/w/secrets", false), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/w/secrets/k", true), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/w/secretsX", true), SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_path_access(p, "/w/secrets/pub/y", false), SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_path_access(p, "/w/secrets/pub/y", true), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/etc/passwd", false), SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_path_access(p, "/etc/passwd", true), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/opt/bin", true), SBX_ACCESS_ALLOW);
	/* deny_read wins on both axes, at and under it. */
	assert_int_equal(sbx_profile_path_access(p, "/opt/keys", false), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/opt/keys/id", true), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/w/secrets/pub/x/1", false), SBX_ACCESS_DENY);
	/* Same length: deny_read beats a root... */
	SET(p->deny_read[2], "/opt");
	p->n_deny_read = 3;
	assert_int_equal(sbx_profile_path_access(p, "/opt", false), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(p, "/opt/bin", false), SBX_ACCESS_DENY);
	/* ...and a root nested in a deny_read entry cannot re-open it. */
	SET(p->roots[3].path, "/opt/bin");
	p->roots[3].read = SBX_ACCESS_ALLOW;
	p->n_roots = 4;
	assert_int_equal(sbx_profile_path_access(p, "/opt/bin/cc", false), SBX_ACCESS_DENY);
	/* Unconfined still reports the fields. */
	p->isolation = SBX_ISOLATION_UNCONFINED;
	assert_int_equal(sbx_profile_path_access(p, "/w/x", true), SBX_ACCESS_ALLOW);
	free(p);
}

static void test_json_escaping(void **state)
{
	struct sbx_profile *p = new_default("/w/a\"b\\c\nd\x01" "e\x7f");
	char *j;

	(void)state;
	p->n_deny_read = 1;
	SET(p->deny_read[0], "/s\te");
	j = json_of(p);
	assert_non_null(strstr(j, "\"workspace_root\":\"/w/a\\\"b\\\\c\\nd\\u0001e\\u007f\""));
	assert_non_null(strstr(j, "\"deny_read\":[\"/s\\te\"]"));
	assert_non_null(strstr(j, "{\"name\":\"default\",\"workspace_root\""));
	assert_non_null(strstr(j, "\"limits\":{\"nproc\":512,\"nofile\":1024,\"core\":0,"
			       "\"max_sessions\":8,\"tmp_size\":268435456}"));
	assert_non_null(strstr(j, "\"require\":[\"write_boundary\",\"network_boundary\","
			       "\"env_scrub\",\"no_privilege_gain\",\"syscall_filter\"]}"));
	/* No raw control byte anywhere but the final newline. */
	for (char *c = j; *c; c++)
		if ((unsigned char)*c < 0x20)
			assert_true(*c == '\n' && c[1] == '\0');
	free(j);
	free(p);
}

static void test_text(void **state)
{
	struct sbx_profile *p = new_default("/w");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_int_equal(sbx_profile_to_text(p, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "profile          default\n"));
	assert_non_null(strstr(buf, "host             read allow  write deny\n"));
	assert_non_null(strstr(buf, "deny_read        /etc/shadow\n"));
	free(buf);
	free(p);
}

/* sbx_profile_copy moves what the profile means: onto a struct full of
 * other bytes, the copy hashes and validates as the original; with every
 * list full it is the original byte for byte. */
static void test_profile_copy(void **state)
{
	struct sbx_profile *p = new_default("/w"), *q = malloc(sizeof(*q));
	char h1[65], h2[65];
	size_t i;

	(void)state;
	assert_non_null(q);
	p->n_roots = 1;
	SET(p->roots[0].path, "/srv/data");
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_DENY;
	p->n_unix_allow = 1;
	SET(p->unix_allow[0], "/run/app.sock");
	p->n_services = 1;
	SET(p->services[0], "sshd");
	memset(q, 0x5a, sizeof(*q));
	sbx_profile_copy(q, p);
	sbx_profile_hash(p, h1);
	sbx_profile_hash(q, h2);
	assert_string_equal(h1, h2);
	assert_int_equal(sbx_profile_validate(q, NULL), 0);
	assert_int_equal(q->n_deny_read, p->n_deny_read);
	assert_string_equal(q->deny_read[0], p->deny_read[0]);
	assert_int_equal((unsigned char)q->gate_allow[0][0], 0x5a);	/* room left */

	/* Every list full: nothing is room, the copy is the whole struct. */
	memset(p, 0x33, sizeof(*p));
	p->n_roots = SBX_MAX_ROOTS;
	p->n_deny_read = SBX_MAX_DENY;
	p->n_gate = SBX_MAX_GATE;
	p->n_unix_allow = SBX_MAX_UNIX_ALLOW;
	p->n_egress = SBX_MAX_EGRESS;
	p->n_services = SBX_MAX_SERVICES;
	memset(q, 0, sizeof(*q));
	sbx_profile_copy(q, p);
	assert_memory_equal(q, p, sizeof(*q));
	/* Cleared: every count and field zero. */
	sbx_profile_clear(q);
	assert_int_equal(q->n_roots + q->n_deny_read + q->n_gate + q->n_unix_allow +
			 q->n_egress + q->n_services, 0);
	assert_int_equal(q->name[0], 0);
	assert_int_equal(q->require, 0);
	for (i = 0; i < sizeof(q->shell); i++)
		assert_int_equal(q->shell[i], 0);
	free(p);
	free(q);
}

static void test_hash_stability(void **state)
{
	struct sbx_profile *p = new_default("/w"), *q = new_default("/w");
	char h1[65], h2[65];

	(void)state;
	sbx_profile_hash(p, h1);
	sbx_profile_hash(q, h2);
	assert_string_equal(h1, h2);
	assert_int_equal(strlen(h1), 64);
	assert_int_equal(strspn(h1, "0123456789abcdef"), 64);
	{
		/* The hash is the SHA-256 of the JSON without its newline. */
		char *j = json_of(p), want[65];

		sbx_sha256_hex(j, strlen(j) - 1, want);
		assert_string_equal(h1, want);
		free(j);
	}
#define CHANGED(stmt)                                           \
	do {                                                    \
		memcpy(q, p, sizeof(*q));                       \
		stmt;                                           \
		sbx_profile_hash(q, h2);                        \
		assert_string_not_equal(h1, h2);                \
	} while (0)
	CHANGED(q->name[0] = 'D');
	CHANGED(SET(q->workspace_root, "/v"));
	CHANGED(q->workspace_read = SBX_ACCESS_DENY);
	CHANGED(q->workspace_write = SBX_ACCESS_DENY);
	CHANGED(q->host_read = SBX_ACCESS_DENY);
	CHANGED(q->host_write = SBX_ACCESS_ALLOW);
	CHANGED(q->network = SBX_ACCESS_ALLOW);
	CHANGED(q->command = SBX_ACCESS_DENY);
	CHANGED(q->home = SBX_HOME_REAL);
	CHANGED(q->isolation = SBX_ISOLATION_UNCONFINED);
	CHANGED(q->ack_unconfined = true);
	CHANGED(SET(q->shell, "/bin/sh"));
	CHANGED(q->n_roots = 1; SET(q->roots[0].path, "/x"));
	CHANGED(q->n_deny_read--);
	CHANGED(q->n_gate = 1; SET(q->gate_allow[0], "/x"));
	CHANGED(q->n_services = 1; SET(q->services[0], "sshd"));
	CHANGED(q->limits.value[SBX_LIMIT_NPROC]++);
	CHANGED(q->limits.set_mask |= 1u << SBX_LIMIT_CPU);
	CHANGED(q->min_level = SBX_LEVEL_FULL);
	CHANGED(q->require |= SBX_G_READ_BOUNDARY);
#undef CHANGED
	free(p);
	free(q);
}

static void test_sha256_vectors(void **state)
{
	char hex[65];
	struct sbx_sha256 c;
	uint8_t d[SBX_SHA256_DIGEST], chunk[1001];
	unsigned i;

	(void)state;
	/* FIPS 180-2, appendix B. */
	sbx_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sbx_sha256_hex("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sbx_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(chunk, 'a', sizeof(chunk));
	sbx_sha256_init(&c);
	for (i = 0; i < 1000; i++)	/* 1,000,000 x 'a' in odd-sized pieces */
		sbx_sha256_update(&c, chunk, i % 2 ? 999 : 1001);
	sbx_sha256_final(&c, d);
	sbx_sha256_to_hex(d, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_valid),
		cmocka_unit_test(test_names_roundtrip),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_path_access),
		cmocka_unit_test(test_json_escaping),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_profile_copy),
		cmocka_unit_test(test_hash_stability),
		cmocka_unit_test(test_sha256_vectors),
	};
	return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
