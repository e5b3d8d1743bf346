/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit and property tests for Restrict: never wider than either input, at any path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define SET(dst, src) assert_int_equal(sbx_strlcpy((dst), sizeof(dst), (src)), 0)

static struct sbx_profile *alloc_profile(void)
{
	struct sbx_profile *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	return p;
}

static void add_root(struct sbx_profile *p, const char *path, enum sbx_access r,
		     enum sbx_access w)
{
	assert_true(p->n_roots < SBX_MAX_ROOTS);
	SET(p->roots[p->n_roots].path, path);
	p->roots[p->n_roots].read = r;
	p->roots[p->n_roots].write = w;
	p->n_roots++;
}

/* The looprig bug: workspace /w allow/allow, host deny, root /w/secrets
 * none. Restrict(p, p) must keep /w/secrets denied. */
static void test_nested_deny_kept(void **state)
{
	struct sbx_profile *p = alloc_profile(), *c = alloc_profile(), *r = alloc_profile();
	struct sbx_error err = { 0 };

	(void)state;
	sbx_profile_init_default(p);
	p->n_deny_read = 0;
	SET(p->workspace_root, "/w");
	p->host_read = p->host_write = SBX_ACCESS_DENY;
	add_root(p, "/w/secrets", SBX_ACCESS_DENY, SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_restrict(p, p, r, &err), 0);
	assert_int_equal(sbx_profile_path_access(r, "/w/secrets", false), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(r, "/w/secrets/x", true), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(r, "/w/src", true), SBX_ACCESS_ALLOW);	/* control */
	assert_int_equal(sbx_profile_validate(r, &err), 0);

	/* A nested deny root that only the ceiling has is kept too. */
	p->n_roots = 0;
	sbx_profile_init_open(c);
	SET(c->workspace_root, "/w");
	c->host_read = c->host_write = SBX_ACCESS_DENY;
	add_root(c, "/w/secrets", SBX_ACCESS_DENY, SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_int_equal(sbx_profile_path_access(r, "/w/secrets", false), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(r, "/w/secrets/k", true), SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_path_access(r, "/w/other", true), SBX_ACCESS_ALLOW);
	assert_int_equal(r->isolation, SBX_ISOLATION_SANDBOXED);
	assert_false(r->ack_unconfined);
	free(p);
	free(c);
	free(r);
}

/* A host-wide ceiling with no workspace caps whatever workspace the
 * profile names, and roots nested in it. */
static void test_ceiling_caps_workspace(void **state)
{
	struct sbx_profile *p = alloc_profile(), *c = alloc_profile(), *r = alloc_profile();
	struct sbx_error err = { 0 };

	(void)state;
	sbx_profile_init_default(p);
	SET(p->workspace_root, "/srv/a/ws");
	add_root(p, "/srv/a/ws/out", SBX_ACCESS_ALLOW, SBX_ACCESS_ALLOW);
	add_root(p, "/opt/cache", SBX_ACCESS_ALLOW, SBX_ACCESS_ALLOW);
	sbx_profile_init_open(c);
	c->workspace_write = SBX_ACCESS_DENY;
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_string_equal(r->workspace_root, "/srv/a/ws");
	assert_int_equal(r->workspace_write, SBX_ACCESS_DENY);
	assert_int_equal(r->workspace_read, SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_path_access(r, "/srv/a/ws/out/x", true), SBX_ACCESS_DENY);
	/* Outside the workspace the ceiling's host fields (allow) apply. */
	assert_int_equal(sbx_profile_path_access(r, "/opt/cache/x", true), SBX_ACCESS_ALLOW);
	assert_int_equal(sbx_profile_validate(r, &err), 0);
	free(p);
	free(c);
	free(r);
}

static void test_fields(void **state)
{
	struct sbx_profile *a = alloc_profile(), *b = alloc_profile(), *r = alloc_profile();
	struct sbx_error err = { 0 };

	(void)state;
	sbx_profile_init_default(a);
	SET(a->workspace_root, "/w");
	sbx_profile_init_open(b);
	SET(b->name, "ceiling");
	SET(b->shell, "/bin/zsh");
	a->limits.value[SBX_LIMIT_NPROC] = 100;
	b->limits.value[SBX_LIMIT_NPROC] = 50;
	b->limits.value[SBX_LIMIT_CPU] = 60;
	b->limits.set_mask = 1u << SBX_LIMIT_NPROC | 1u << SBX_LIMIT_CPU;
	b->min_level = SBX_LEVEL_FULL;
	b->require = SBX_G_READ_BOUNDARY;
	b->home = SBX_HOME_ISOLATED;
	b->pam_required = true;
	SET(b->deny_read[0], "/etc/shadow");	/* duplicate of a's */
	SET(b->deny_read[1], "/srv/secret");
	b->n_deny_read = 2;
	a->command = SBX_ACCESS_GATED;
	SET(a->gate_allow[0], "/usr/bin/git");
	SET(a->gate_allow[1], "/usr/bin/make");
	a->n_gate = 2;
	SET(a->services[0], "sshd");
	SET(a->services[1], "su");
	a->n_services = 2;

	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_string_equal(r->name, "default");
	assert_string_equal(r->shell, "/bin/bash");
	assert_int_equal(r->limits.value[SBX_LIMIT_NPROC], 50);
	assert_int_equal(r->limits.value[SBX_LIMIT_CPU], 60);
	assert_int_equal(r->limits.value[SBX_LIMIT_NOFILE], 1024);
	assert_int_equal(r->limits.set_mask, a->limits.set_mask | b->limits.set_mask);
	assert_int_equal(r->min_level, SBX_LEVEL_FULL);
	assert_int_equal(r->require, a->require | SBX_G_READ_BOUNDARY);
	assert_int_equal(r->home, SBX_HOME_EPHEMERAL);
	assert_true(r->pam_required);		/* either side requiring it wins */
	assert_false(a->pam_required);
	assert_int_equal(r->n_deny_read, 7);	/* 6 defaults + /srv/secret */
	assert_int_equal(r->command, SBX_ACCESS_GATED);
	assert_int_equal(r->n_gate, 2);		/* only a is gated: its list */
	/* gate_jit: the open ceiling lets a's deny stand, a deny ceiling
	 * narrows an allow, and allow only comes from both sides. */
	assert_int_equal(r->gate_jit, SBX_ACCESS_DENY);
	a->gate_jit = SBX_ACCESS_ALLOW;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->gate_jit, SBX_ACCESS_ALLOW);
	b->gate_jit = SBX_ACCESS_DENY;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->gate_jit, SBX_ACCESS_DENY);
	a->gate_jit = SBX_ACCESS_DENY;
	b->gate_jit = SBX_ACCESS_ALLOW;
	assert_int_equal(r->n_services, 2);	/* b has no cap */

	/* Both gated: intersection. Disjoint services: explicit "none". */
	b->command = SBX_ACCESS_GATED;
	SET(b->gate_allow[0], "/usr/bin/make");
	SET(b->gate_allow[1], "/usr/bin/cc");
	b->n_gate = 2;
	SET(b->services[0], "login");
	b->n_services = 1;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->n_gate, 1);
	assert_string_equal(r->gate_allow[0], "/usr/bin/make");
	assert_int_equal(r->n_services, 1);
	assert_string_equal(r->services[0], SBX_SERVICE_NONE);
	SET(b->services[1], "su");
	b->n_services = 2;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->n_services, 1);
	assert_string_equal(r->services[0], "su");
	/* No common executable: a gate that runs nothing is deny. */
	SET(b->gate_allow[0], "/bin/true");
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->command, SBX_ACCESS_DENY);
	assert_int_equal(r->n_gate, 0);

	/* Unconfined only when both are, and both acknowledged it. */
	a->isolation = SBX_ISOLATION_UNCONFINED;
	a->ack_unconfined = true;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->isolation, SBX_ISOLATION_UNCONFINED);
	assert_true(r->ack_unconfined);
	b->isolation = SBX_ISOLATION_SANDBOXED;
	b->ack_unconfined = false;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
	assert_int_equal(r->isolation, SBX_ISOLATION_SANDBOXED);
	assert_false(r->ack_unconfined);
	free(a);
	free(b);
	free(r);
}

static void test_aliasing_and_overflow(void **state)
{
	struct sbx_profile *a = alloc_profile(), *b = alloc_profile(), *r = alloc_profile();
	struct sbx_error err = { 0 };
	char path[32];
	unsigned i;

	(void)state;
	sbx_profile_init_default(a);
	SET(a->workspace_root, "/w");
	sbx_profile_init_open(b);
	assert_int_equal(sbx_profile_restrict(a, b, a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "alias"));
	assert_int_equal(sbx_profile_restrict(a, b, b, &err), -EINVAL);

	/* 20 + 20 distinct roots do not fit in 32: refused, never truncated. */
	for (i = 0; i < 20; i++) {
		snprintf(path, sizeof(path), "/a/%u", i);
		add_root(a, path, SBX_ACCESS_ALLOW, SBX_ACCESS_DENY);
		snprintf(path, sizeof(path), "/b/%u", i);
		add_root(b, path, SBX_ACCESS_DENY, SBX_ACCESS_DENY);
	}
	memset(r, 0x5a, sizeof(*r));
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "roots"));
	/* No half result: cleared, nameless, denying. */
	assert_int_equal(r->name[0], '\0');
	assert_int_equal(r->n_roots, 0);
	assert_int_equal(r->n_deny_read, 0);
	assert_int_equal(r->host_read, SBX_ACCESS_DENY);
	assert_int_equal(r->workspace_write, SBX_ACCESS_DENY);

	b->n_roots = 0;
	for (i = 0; i < SBX_MAX_DENY; i++) {
		snprintf(path, sizeof(path), "/d/%u", i);
		SET(b->deny_read[i], path);
	}
	b->n_deny_read = SBX_MAX_DENY;
	assert_int_equal(sbx_profile_restrict(a, b, r, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "deny_read"));
	free(a);
	free(b);
	free(r);
}

/* ---- property test ------------------------------------------------------- */

static const char *const universe[] = {
	"/", "/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f/g",
};
static const char *const probes[] = {
	"/", "/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f/g", "/a/b/c/x",
	"/a/bc", "/a/d/y", "/e/f", "/e/f/g/h", "/zz", "/a/b/x/y",
};

static uint64_t rng;

static unsigned rnd(unsigned n)
{
	/* xorshift64*: deterministic from the printed seed. */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (unsigned)((rng * 2685821657736338717ull) >> 33) % n;
}

static enum sbx_access racc(void)
{
	return (enum sbx_access)rnd(3);
}

static const char *rpath(void)
{
	return universe[rnd(ARRAY_SIZE(universe))];
}

static void random_profile(struct sbx_profile *p, bool ceiling)
{
	unsigned i, n;

	memset(p, 0, sizeof(*p));
	SET(p->name, ceiling ? "ceiling" : "req");
	if (!ceiling || rnd(2))
		SET(p->workspace_root, rpath());
	p->workspace_read = racc();
	p->workspace_write = racc();
	p->host_read = racc();
	p->host_write = racc();
	p->network = racc();
	p->command = racc();
	p->gate_jit = rnd(2) ? SBX_ACCESS_ALLOW : SBX_ACCESS_DENY;
	p->home = (enum sbx_home)rnd(3);
	p->isolation = (enum sbx_isolation)rnd(2);
	p->ack_unconfined = p->isolation == SBX_ISOLATION_UNCONFINED;
	p->min_level = (enum sbx_level)rnd(3);
	p->require = rnd(SBX_G_ALL + 1);
	n = rnd(5);
	for (i = 0; i < n; i++) {
		const char *path = rpath();
		unsigned j;

		for (j = 0; j < p->n_roots; j++)
			if (strcmp(p->roots[j].path, path) == 0)
				break;
		if (j < p->n_roots || strcmp(path, p->workspace_root) == 0)
			continue;
		add_root(p, path, racc(), racc());
	}
	n = rnd(3);
	for (i = 0; i < n; i++)
		SET(p->deny_read[p->n_deny_read++], rpath());
	for (i = 0; i < SBX_LIMIT_COUNT; i++)
		if (rnd(2)) {
			p->limits.set_mask |= 1u << i;
			p->limits.value[i] = rnd(4);
		}
	if (p->command == SBX_ACCESS_GATED) {
		static const char *const bins[] = { "/bin/a", "/bin/b", "/bin/c" };

		n = 1 + rnd(3);
		for (i = 0; i < n; i++)
			SET(p->gate_allow[p->n_gate++], bins[(i + rnd(3)) % 3]);
	}
	n = rnd(3);
	for (i = 0; i < n; i++) {
		static const char *const svc[] = { "sshd", "su", "login" };

		SET(p->services[p->n_services++], svc[rnd(3)]);
	}
}

static bool has_service(const struct sbx_profile *p, const char *s)
{
	for (size_t i = 0; i < p->n_services; i++)
		if (strcmp(p->services[i], s) == 0)
			return true;
	return false;
}

static bool has_gate(const struct sbx_profile *p, const char *s)
{
	for (size_t i = 0; i < p->n_gate; i++)
		if (strcmp(p->gate_allow[i], s) == 0)
			return true;
	return false;
}

/* Every scalar of r no wider than the same field of p. */
static void assert_scalars_within(const struct sbx_profile *r, const struct sbx_profile *p)
{
	unsigned l;
	size_t i;

	assert_true(r->host_read <= p->host_read);
	assert_true(r->host_write <= p->host_write);
	assert_true(r->network <= p->network);
	assert_true(r->command <= p->command);
	assert_true(r->gate_jit <= p->gate_jit);
	assert_true(r->home <= p->home);
	assert_true(r->isolation <= p->isolation || p->isolation == SBX_ISOLATION_UNCONFINED);
	if (p->isolation == SBX_ISOLATION_SANDBOXED)
		assert_int_equal(r->isolation, SBX_ISOLATION_SANDBOXED);
	assert_true(r->min_level >= p->min_level);
	assert_int_equal(r->require & p->require, p->require);
	for (l = 0; l < SBX_LIMIT_COUNT; l++)
		if (p->limits.set_mask & (1u << l)) {
			assert_true(r->limits.set_mask & (1u << l));
			assert_true(r->limits.value[l] <= p->limits.value[l]);
		}
	for (i = 0; i < p->n_deny_read; i++) {
		size_t j;

		for (j = 0; j < r->n_deny_read; j++)
			if (strcmp(r->deny_read[j], p->deny_read[i]) == 0)
				break;
		assert_true(j < r->n_deny_read);
	}
	if (p->n_services) {
		assert_true(r->n_services > 0);
		for (i = 0; i < r->n_services; i++)
			assert_true(strcmp(r->services[i], SBX_SERVICE_NONE) == 0 ||
				    has_service(p, r->services[i]));
	}
	if (r->command == SBX_ACCESS_GATED) {
		assert_true(r->n_gate > 0);
		if (p->command == SBX_ACCESS_GATED)
			for (i = 0; i < r->n_gate; i++)
				assert_true(has_gate(p, r->gate_allow[i]));
	}
}

static void test_property(void **state)
{
	struct sbx_profile *a = alloc_profile(), *b = alloc_profile(), *r = alloc_profile();
	struct sbx_error err = { 0 };
	const uint64_t seed = 0x5eed2026c0ffee01ull;
	const unsigned pairs = 20000;
	unsigned iter, checks = 0;

	(void)state;
	rng = seed;
	print_message("property seed 0x%llx, %u pairs\n", (unsigned long long)seed, pairs);
	for (iter = 0; iter < pairs; iter++) {
		size_t i;
		int w;

		random_profile(a, false);
		random_profile(b, rnd(2));
		assert_int_equal(sbx_profile_restrict(a, b, r, &err), 0);
		assert_scalars_within(r, a);
		assert_scalars_within(r, b);
		assert_string_equal(r->workspace_root, a->workspace_root);
		assert_int_equal(r->ack_unconfined, r->isolation == SBX_ISOLATION_UNCONFINED);
		for (i = 0; i < r->n_roots; i++)
			assert_string_not_equal(r->roots[i].path, r->workspace_root);
		for (i = 0; i < ARRAY_SIZE(probes); i++) {
			for (w = 0; w < 2; w++) {
				const char *pr = probes[i];
				/* A ceiling without a workspace caps a's
				 * workspace: B* reads b with a's root. */
				const char *bws = b->workspace_root[0] ? b->workspace_root :
						  a->workspace_root;
				enum sbx_access A = sbx_profile_path_access(a, pr, w);
				enum sbx_access B = sbx_profile_access_at(b, bws, pr, w);
				enum sbx_access R = sbx_profile_path_access(r, pr, w);
				enum sbx_access M = A < B ? A : B;

				if (R > A || R > B || R != M)
					fail_msg("iter %u path %s %s: A=%d B*=%d R=%d",
						 iter, pr, w ? "write" : "read", A, B, R);
				if (b->workspace_root[0])
					assert_true(R <= sbx_profile_path_access(b, pr, w));
				checks++;
			}
		}
		/* Restrict is idempotent on its own result. */
		if (iter % 8 == 0) {
			struct sbx_profile *rr = a;	/* reuse a's memory */

			memcpy(b, r, sizeof(*b));
			assert_int_equal(sbx_profile_restrict(b, b, rr, &err), 0);
			for (i = 0; i < ARRAY_SIZE(probes); i++)
				for (w = 0; w < 2; w++)
					assert_int_equal(sbx_profile_path_access(rr, probes[i], w),
							 sbx_profile_path_access(b, probes[i], w));
		}
	}
	print_message("property: %u path checks passed\n", checks);
	free(a);
	free(b);
	free(r);
}

static void add_egress(struct sbx_profile *p, const char *s)
{
	struct sbx_error err = { 0 };

	assert_true(p->n_egress < SBX_MAX_EGRESS);
	if (sbx_egress_entry_parse(s, &p->egress[p->n_egress], &err) != 0)
		fail_msg("%s", err.msg);
	p->n_egress++;
	p->egress_any = false;
}

static bool has_egress(const struct sbx_profile *p, const char *s)
{
	char buf[SBX_EGRESS_HOST_MAX + 16];

	for (size_t i = 0; i < p->n_egress; i++)
		if (sbx_egress_entry_format(&p->egress[i], buf, sizeof(buf)) == 0 &&
		    strcmp(buf, s) == 0)
			return true;
	return false;
}

/* network: deny < proxy < allow; egress_allow: the intersection of the
 * lists, where a ceiling without one restricts nothing. */
static void test_egress(void **state)
{
	struct sbx_profile *p = alloc_profile(), *c = alloc_profile(), *r = alloc_profile();
	struct sbx_error err = { 0 };
	static const enum sbx_access order[] = { SBX_ACCESS_DENY, SBX_NETWORK_PROXY,
						  SBX_ACCESS_ALLOW };
	size_t i, j;

	(void)state;
	sbx_profile_init_default(p);
	SET(p->workspace_root, "/w");
	sbx_profile_init_open(c);
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			p->network = order[i];
			c->network = order[j];
			assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
			assert_int_equal(r->network, order[i < j ? i : j]);
		}

	p->network = SBX_NETWORK_PROXY;
	add_egress(p, "registry.npmjs.org");
	add_egress(p, "*.pythonhosted.org");
	add_egress(p, "git.example.org:22");
	add_egress(p, "127.0.0.1:18443");
	/* The open ceiling: the profile's list as it is. */
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_int_equal(r->n_egress, 4);
	assert_false(r->egress_any);
	assert_int_equal(sbx_profile_validate(r, &err), 0);

	/* A ceiling with a list: only what both allow. */
	add_egress(c, "*.npmjs.org");			/* covers registry.npmjs.org */
	add_egress(c, "files.pythonhosted.org");	/* narrows the wildcard */
	add_egress(c, "git.example.org:443");		/* other port: nothing */
	add_egress(c, "other.org");			/* not asked for: nothing */
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_true(has_egress(r, "registry.npmjs.org:443"));
	assert_true(has_egress(r, "files.pythonhosted.org:443"));
	assert_int_equal(r->n_egress, 2);
	assert_false(r->egress_any);
	assert_int_equal(sbx_profile_validate(r, &err), 0);
	/* Restrict is symmetric on the list. */
	assert_int_equal(sbx_profile_restrict(c, p, r, &err), 0);
	assert_int_equal(r->n_egress, 2);

	/* Nested wildcards: the narrower one; disjoint: none. */
	p->n_egress = c->n_egress = 0;
	add_egress(p, "*.example.org");
	add_egress(c, "*.api.example.org");
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_int_equal(r->n_egress, 1);
	assert_true(has_egress(r, "*.api.example.org:443"));
	c->n_egress = 0;
	add_egress(c, "example.org");		/* the suffix itself is not a subdomain */
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_int_equal(r->n_egress, 0);
	assert_false(r->egress_any);		/* an empty list, not "any" */

	/* Two open sides stay open (two ceilings). */
	sbx_profile_init_open(p);
	sbx_profile_init_open(c);
	assert_int_equal(sbx_profile_restrict(p, c, r, &err), 0);
	assert_true(r->egress_any);
	assert_int_equal(r->n_egress, 0);
	free(p);
	free(c);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_deny_kept),
		cmocka_unit_test(test_ceiling_caps_workspace),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_aliasing_and_overflow),
		cmocka_unit_test(test_property),
		cmocka_unit_test(test_egress),
	};
	return cmocka_run_group_tests_name("restrict", tests, NULL, NULL);
}
