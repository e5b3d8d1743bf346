/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for report.c: requested sets, fail-closed guarantees, level, floor, JSON, logline. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void mark_all(struct sbx_report *r, bool achieved, bool verified)
{
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		r->entry[f].achieved = achieved && r->entry[f].requested;
		r->entry[f].verified = verified && r->entry[f].requested;
	}
}

static void test_init_requested(void **state)
{
	struct sbx_profile p;
	struct sbx_report r;
	char hash[65];

	(void)state;
	sbx_profile_init_default(&p);
	sbx_report_init(&r, &p);
	sbx_profile_hash(&p, hash);
	assert_string_equal(r.profile_name, p.name);
	assert_string_equal(r.profile_hash, hash);
	assert_int_equal(r.min_level, p.min_level);
	assert_int_equal(r.required, p.require);
	assert_int_equal(r.isolation, SBX_ISOLATION_SANDBOXED);
	/* Default: network deny, deny_read set, command allow, ephemeral home,
	 * no session limits. */
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		bool want = f != SBX_F_COMMAND_GATE && f != SBX_F_MEMORY_WX &&
			    f != SBX_F_CGROUP_LIMITS && f != SBX_F_NETWORK_EGRESS;

		assert_int_equal(r.entry[f].requested, want);
		assert_false(r.entry[f].achieved);
		assert_false(r.entry[f].verified);
	}

	p.network = SBX_ACCESS_ALLOW;
	p.command = SBX_ACCESS_GATED;
	p.home = SBX_HOME_REAL;
	p.n_deny_read = 0;
	sbx_report_init(&r, &p);
	assert_false(r.entry[SBX_F_NETNS].requested);
	assert_false(r.entry[SBX_F_LANDLOCK_NET].requested);
	assert_true(r.entry[SBX_F_COMMAND_GATE].requested);
	assert_true(r.entry[SBX_F_MEMORY_WX].requested);	/* gate_jit deny */
	assert_string_equal(r.entry[SBX_F_MEMORY_WX].detail, "");
	assert_false(r.entry[SBX_F_HOME].requested);
	assert_false(r.entry[SBX_F_DENY_READ].requested);
	assert_true(r.entry[SBX_F_SECCOMP].requested);

	/* gate_jit allow: nothing to prove, and the entry says why */
	p.gate_jit = SBX_ACCESS_ALLOW;
	sbx_report_init(&r, &p);
	assert_true(r.entry[SBX_F_COMMAND_GATE].requested);
	assert_false(r.entry[SBX_F_MEMORY_WX].requested);
	assert_string_equal(r.entry[SBX_F_MEMORY_WX].detail,
			    "anonymous executable memory allowed (gate_jit = allow)");
	p.gate_jit = SBX_ACCESS_DENY;
	sbx_report_init(&r, &p);

	p.network = SBX_ACCESS_GATED;	/* gated network behaves as deny */
	p.command = SBX_ACCESS_DENY;
	sbx_report_init(&r, &p);
	assert_true(r.entry[SBX_F_NETNS].requested);
	assert_true(r.entry[SBX_F_LANDLOCK_NET].requested);
	assert_true(r.entry[SBX_F_COMMAND_GATE].requested);

	p.isolation = SBX_ISOLATION_UNCONFINED;
	p.ack_unconfined = true;
	sbx_report_init(&r, &p);
	for (unsigned f = 0; f < SBX_F_COUNT; f++)
		assert_int_equal(r.entry[f].requested,
				 f == SBX_F_ENV_SCRUB || f == SBX_F_FD_HYGIENE);

	sbx_report_set_requested(&r, SBX_F_NETNS, true, "forced");
	assert_true(r.entry[SBX_F_NETNS].requested);
	assert_string_equal(r.entry[SBX_F_NETNS].detail, "forced");
}

static void test_set_fail_closed(void **state)
{
	struct sbx_profile p;
	struct sbx_report r;

	(void)state;
	sbx_profile_init_default(&p);
	sbx_report_init(&r, &p);
	sbx_report_set(&r, SBX_F_SECCOMP, false, true, "claimed %d", 1);
	assert_false(r.entry[SBX_F_SECCOMP].achieved);
	assert_false(r.entry[SBX_F_SECCOMP].verified);
	assert_non_null(strstr(r.entry[SBX_F_SECCOMP].detail, "claimed 1"));
	assert_non_null(strstr(r.entry[SBX_F_SECCOMP].detail, "verified without achieved"));
	sbx_report_set(&r, SBX_F_SECCOMP, true, true, "ok");
	assert_true(r.entry[SBX_F_SECCOMP].verified);
	assert_string_equal(r.entry[SBX_F_SECCOMP].detail, "ok");
	/* The detail may be passed back in (no aliasing trouble). */
	sbx_report_set(&r, SBX_F_SECCOMP, true, false, "%s", r.entry[SBX_F_SECCOMP].detail);
	assert_string_equal(r.entry[SBX_F_SECCOMP].detail, "ok");
	sbx_report_set(&r, SBX_F_COUNT, true, true, "out of range is ignored");
}

/* For each guarantee: its inputs achieved+verified grant it; achieved but
 * not verified never does. */
struct gcase {
	uint32_t g;
	enum sbx_feature f[3];
	size_t n;
};

static void test_guarantee_table(void **state)
{
	static const struct gcase cases[] = {
		{ SBX_G_PROCESS_BOUNDARY, { SBX_F_PIDNS, SBX_F_SECCOMP }, 2 },
		{ SBX_G_PROCESS_BOUNDARY, { SBX_F_PIDNS, SBX_F_LANDLOCK_SCOPE }, 2 },
		{ SBX_G_WRITE_BOUNDARY, { SBX_F_MOUNT_VIEW }, 1 },
		{ SBX_G_READ_BOUNDARY, { SBX_F_DENY_READ }, 1 },	/* host_read allow */
		{ SBX_G_NETWORK_BOUNDARY, { SBX_F_NETNS, SBX_F_UNIX_SOCKETS }, 2 },
		{ SBX_G_NETWORK_BOUNDARY, { SBX_F_LANDLOCK_NET, SBX_F_SECCOMP, SBX_F_UNIX_SOCKETS }, 3 },
		{ SBX_G_ENV_SCRUB, { SBX_F_ENV_SCRUB }, 1 },
		{ SBX_G_HOME_ISOLATION, { SBX_F_HOME }, 1 },
		{ SBX_G_EXEC_BOUNDARY, { SBX_F_COMMAND_GATE, SBX_F_MEMORY_WX }, 2 },
		{ SBX_G_NO_PRIVILEGE_GAIN, { SBX_F_NO_NEW_PRIVS, SBX_F_CAPS }, 2 },
		{ SBX_G_SYSCALL_FILTER, { SBX_F_SECCOMP }, 1 },
		{ SBX_G_RESOURCE_LIMITS, { SBX_F_RLIMITS }, 1 },
	};
	struct sbx_profile p;
	struct sbx_report r;

	(void)state;
	sbx_profile_init_default(&p);
	p.command = SBX_ACCESS_GATED;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct gcase *c = &cases[i];

		for (size_t skip = 0; skip <= c->n; skip++) {
			sbx_report_init(&r, &p);
			for (size_t k = 0; k < c->n; k++) {
				r.entry[c->f[k]].achieved = true;
				/* skip == n: everything verified */
				r.entry[c->f[k]].verified = k != skip;
			}
			sbx_report_finish(&r);
			if (skip == c->n)
				assert_true(r.guarantees & c->g);
			else
				assert_false(r.guarantees & c->g);
			/* Only this guarantee (and what shares its inputs). */
			assert_int_equal(r.level == SBX_LEVEL_FULL, false);
		}
	}

	/* Policy: host_write allow leaves no write boundary whatever holds. */
	sbx_report_init(&r, &p);
	r.host_write = SBX_ACCESS_ALLOW;
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_false(r.guarantees & SBX_G_WRITE_BOUNDARY);
	/* Network allow: no network boundary; command allow: no exec boundary. */
	r.network = SBX_ACCESS_ALLOW;
	r.command = SBX_ACCESS_ALLOW;
	sbx_report_finish(&r);
	assert_false(r.guarantees & SBX_G_NETWORK_BOUNDARY);
	assert_false(r.guarantees & SBX_G_EXEC_BOUNDARY);
	/* Read boundary with host_read deny rests on landlock_fs. */
	sbx_report_init(&r, &p);
	r.host_read = SBX_ACCESS_DENY;
	r.entry[SBX_F_LANDLOCK_FS].achieved = true;
	r.entry[SBX_F_LANDLOCK_FS].verified = true;
	sbx_report_finish(&r);
	assert_true(r.guarantees & SBX_G_READ_BOUNDARY);
	r.host_read = SBX_ACCESS_ALLOW;
	r.n_deny_read = 0;
	r.entry[SBX_F_DENY_READ].achieved = true;
	r.entry[SBX_F_DENY_READ].verified = true;
	sbx_report_finish(&r);
	assert_false(r.guarantees & SBX_G_READ_BOUNDARY);

	/* exec_boundary under the gate rests on memory_wx too, and names it
	 * when it does not hold; with gate_jit allow the file gate alone. */
	p.require = SBX_G_EXEC_BOUNDARY;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	r.entry[SBX_F_MEMORY_WX].verified = false;
	snprintf(r.entry[SBX_F_MEMORY_WX].detail, sizeof(r.entry[0].detail),
		 "canary: /proc/self/mem opens for writing");
	sbx_report_finish(&r);
	assert_true(r.command == SBX_ACCESS_GATED && sbx_report_holds(&r, SBX_F_COMMAND_GATE));
	assert_false(r.guarantees & SBX_G_EXEC_BOUNDARY);
	assert_false(r.floor_met);
	assert_non_null(strstr(r.refusal, "required guarantee exec_boundary not held: memory_wx "
			       "(not verified: canary: /proc/self/mem opens for writing)"));
	p.gate_jit = SBX_ACCESS_ALLOW;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_false(r.entry[SBX_F_MEMORY_WX].requested);
	assert_true(r.guarantees & SBX_G_EXEC_BOUNDARY);
	assert_true(r.floor_met);
	p.gate_jit = SBX_ACCESS_DENY;
	p.require = 0;

	/* Session limits requested: resource_limits needs them held too, and
	 * names them when they are not; without them, rlimits suffice. */
	p.limits.set_mask |= 1u << SBX_LIMIT_MEMORY_MAX;
	p.limits.value[SBX_LIMIT_MEMORY_MAX] = 1ull << 30;
	p.require = SBX_G_RESOURCE_LIMITS;
	sbx_report_init(&r, &p);
	assert_true(r.entry[SBX_F_CGROUP_LIMITS].requested);
	mark_all(&r, true, true);
	sbx_report_set(&r, SBX_F_CGROUP_LIMITS, false, false, "memory.max max at /");
	sbx_report_finish(&r);
	assert_false(r.guarantees & SBX_G_RESOURCE_LIMITS);
	assert_false(r.floor_met);
	assert_non_null(strstr(r.refusal, "cgroup_limits (memory.max max at /)"));
	sbx_report_set(&r, SBX_F_CGROUP_LIMITS, true, true, "memory.max 1073741824 at /s");
	sbx_report_finish(&r);
	assert_true(r.guarantees & SBX_G_RESOURCE_LIMITS);
	assert_true(r.floor_met);
}

static void test_levels(void **state)
{
	struct sbx_profile p;
	struct sbx_report r;

	(void)state;
	sbx_profile_init_default(&p);
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_int_equal(r.level, SBX_LEVEL_FULL);
	assert_true(r.floor_met);
	assert_string_equal(r.refusal, "");

	r.entry[SBX_F_UTSNS].verified = false;	/* achieved, not proven */
	sbx_report_finish(&r);
	assert_int_equal(r.level, SBX_LEVEL_DEGRADED);
	assert_true(r.floor_met);	/* default floor is degraded */

	/* Nothing but a clean environment: no boundary at all. */
	sbx_report_init(&r, &p);
	r.entry[SBX_F_ENV_SCRUB].achieved = r.entry[SBX_F_ENV_SCRUB].verified = true;
	sbx_report_finish(&r);
	assert_int_equal(r.level, SBX_LEVEL_NONE);
	assert_false(r.floor_met);

	/* Unconfined is NONE even with everything it asked for. */
	p.isolation = SBX_ISOLATION_UNCONFINED;
	p.ack_unconfined = true;
	p.min_level = SBX_LEVEL_NONE;
	p.require = 0;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_int_equal(r.level, SBX_LEVEL_NONE);
	assert_true(r.floor_met);
}

/* Independent statement of the guarantee rules, for the property test. */
static bool v(const struct sbx_report *r, enum sbx_feature f)
{
	return r->entry[f].achieved && r->entry[f].verified;
}

static uint32_t oracle(const struct sbx_report *r)
{
	uint32_t g = 0;

	if (v(r, SBX_F_PIDNS) && (v(r, SBX_F_LANDLOCK_SCOPE) || v(r, SBX_F_SECCOMP)))
		g |= SBX_G_PROCESS_BOUNDARY;
	if (r->host_write != SBX_ACCESS_ALLOW && v(r, SBX_F_MOUNT_VIEW))
		g |= SBX_G_WRITE_BOUNDARY;
	if ((r->host_read == SBX_ACCESS_DENY && v(r, SBX_F_LANDLOCK_FS)) ||
	    (r->host_read == SBX_ACCESS_ALLOW && r->n_deny_read > 0 && v(r, SBX_F_DENY_READ)))
		g |= SBX_G_READ_BOUNDARY;
	/* network = proxy with its bridge up: only the list is a boundary. */
	if (r->network != SBX_ACCESS_ALLOW && v(r, SBX_F_UNIX_SOCKETS) &&
	    (v(r, SBX_F_NETNS) || (v(r, SBX_F_LANDLOCK_NET) && v(r, SBX_F_SECCOMP)))) {
		if (r->network != SBX_NETWORK_PROXY || !r->entry[SBX_F_NETWORK_EGRESS].achieved)
			g |= SBX_G_NETWORK_BOUNDARY;
		else if (v(r, SBX_F_NETWORK_EGRESS) && v(r, SBX_F_NETNS))
			g |= SBX_G_NETWORK_EGRESS;
	}
	if (v(r, SBX_F_ENV_SCRUB))
		g |= SBX_G_ENV_SCRUB;
	if (v(r, SBX_F_HOME))
		g |= SBX_G_HOME_ISOLATION;
	if (r->command != SBX_ACCESS_ALLOW && v(r, SBX_F_COMMAND_GATE) &&
	    (!r->entry[SBX_F_MEMORY_WX].requested || v(r, SBX_F_MEMORY_WX)))
		g |= SBX_G_EXEC_BOUNDARY;
	if (v(r, SBX_F_NO_NEW_PRIVS) && v(r, SBX_F_CAPS))
		g |= SBX_G_NO_PRIVILEGE_GAIN;
	if (v(r, SBX_F_SECCOMP))
		g |= SBX_G_SYSCALL_FILTER;
	if (v(r, SBX_F_RLIMITS))
		g |= SBX_G_RESOURCE_LIMITS;
	return g;
}

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void test_property_random(void **state)
{
	uint32_t seed = 0x5eed1234u;
	struct sbx_profile p;
	struct sbx_report r;
	unsigned fulls = 0, refused = 0;

	(void)state;
	sbx_profile_init_default(&p);
	for (int draw = 0; draw < 10000; draw++) {
		bool all = true;
		uint32_t met;

		p.isolation = (xorshift(&seed) % 8) ? SBX_ISOLATION_SANDBOXED :
						      SBX_ISOLATION_UNCONFINED;
		p.ack_unconfined = p.isolation == SBX_ISOLATION_UNCONFINED;
		p.network = (enum sbx_access)(xorshift(&seed) % 3);
		p.command = (enum sbx_access)(xorshift(&seed) % 3);
		p.gate_jit = (xorshift(&seed) % 2) ? SBX_ACCESS_ALLOW : SBX_ACCESS_DENY;
		p.host_read = (enum sbx_access)(xorshift(&seed) % 3);
		p.host_write = (enum sbx_access)(xorshift(&seed) % 3);
		p.home = (enum sbx_home)(xorshift(&seed) % 3);
		p.n_deny_read = xorshift(&seed) % 3;
		p.min_level = (enum sbx_level)(xorshift(&seed) % 3);
		/* Two draws ANDed: a sparser subset. NOLINTNEXTLINE(misc-redundant-expression) */
		p.require = xorshift(&seed) & SBX_G_ALL & (xorshift(&seed) & SBX_G_ALL);
		sbx_report_init(&r, &p);
		for (unsigned f = 0; f < SBX_F_COUNT; f++) {
			uint32_t x = xorshift(&seed);

			/* Mostly good, so that FULL is reachable; and some
			 * verified-without-achieved states written raw. */
			r.entry[f].achieved = (x % 20) < 19;
			r.entry[f].verified = ((x >> 8) % 20) < 19;
		}
		sbx_report_finish(&r);

		for (unsigned f = 0; f < SBX_F_COUNT; f++)
			if (r.entry[f].requested && !v(&r, (enum sbx_feature)f))
				all = false;
		if (r.level == SBX_LEVEL_FULL) {
			assert_true(all);
			assert_int_equal(r.isolation, SBX_ISOLATION_SANDBOXED);
			fulls++;
		}
		assert_int_equal(r.guarantees, oracle(&r));
		if (r.isolation == SBX_ISOLATION_UNCONFINED)
			assert_int_equal(r.level, SBX_LEVEL_NONE);
		/* network_boundary (nothing leaves) meets a required
		 * network_egress (only the list leaves). */
		met = r.guarantees;
		if (met & SBX_G_NETWORK_BOUNDARY)
			met |= SBX_G_NETWORK_EGRESS;
		assert_int_equal(r.floor_met, r.level >= r.min_level &&
				 (met & r.required) == r.required);
		if (!r.floor_met) {
			assert_true(r.refusal[0] != '\0');
			refused++;
		}
	}
	/* The generator must exercise both sides. */
	assert_true(fulls > 0);
	assert_true(refused > 0);
}

static void test_refusal_text(void **state)
{
	struct sbx_profile p;
	struct sbx_report r;

	(void)state;
	sbx_profile_init_default(&p);
	p.min_level = SBX_LEVEL_FULL;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_set(&r, SBX_F_LANDLOCK_NET, false, false, "kernel ABI 3 < 4");
	sbx_report_set(&r, SBX_F_NETNS, false, false, "user namespaces blocked: sysctl");
	sbx_report_set(&r, SBX_F_CAPS, true, false, "CapBnd left");
	sbx_report_finish(&r);
	assert_int_equal(r.level, SBX_LEVEL_DEGRADED);
	assert_false(r.floor_met);
	assert_non_null(strstr(r.refusal, "level degraded below floor full: missing "));
	assert_non_null(strstr(r.refusal, "netns (user namespaces blocked: sysctl)"));
	assert_non_null(strstr(r.refusal, "landlock_net (kernel ABI 3 < 4)"));
	assert_non_null(strstr(r.refusal, "caps (not verified: CapBnd left)"));
	/* Required guarantees of the default profile that fell. */
	assert_non_null(strstr(r.refusal, "required guarantee network_boundary not held: "
				"netns (user namespaces blocked: sysctl)"));
	assert_non_null(strstr(r.refusal, "required guarantee no_privilege_gain not held: "
				"caps (not verified: CapBnd left)"));

	/* Floor met on level, but a required guarantee the profile rules out. */
	p.min_level = SBX_LEVEL_DEGRADED;
	p.host_write = SBX_ACCESS_ALLOW;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_false(r.floor_met);
	assert_string_equal(r.refusal, "required guarantee write_boundary not held: "
			    "the profile allows host writes");

	/* Where one of two ways would do, only the ways the session could
	 * have taken are named. Behind a private network namespace
	 * landlock_net is not requested: a failed unix_sockets canary is the
	 * whole reason, and landlock_net is not named as if missing too. */
	p.host_write = SBX_ACCESS_DENY;
	sbx_report_init(&r, &p);
	sbx_report_set_requested(&r, SBX_F_LANDLOCK_NET, false,
				 "not needed: the private network namespace is the boundary");
	mark_all(&r, true, true);
	sbx_report_set(&r, SBX_F_UNIX_SOCKETS, true, false, "canary: bind: Permission denied");
	r.required = SBX_G_NETWORK_BOUNDARY;
	sbx_report_finish(&r);
	assert_false(r.floor_met);
	assert_string_equal(r.refusal, "required guarantee network_boundary not held: "
			    "unix_sockets (not verified: canary: bind: Permission denied)");
	/* The namespace missing: it, or else Landlock's network rules with
	 * the filter, and only the part of that way that is missing. */
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_set(&r, SBX_F_NETNS, false, false, "refused: EPERM");
	sbx_report_set(&r, SBX_F_LANDLOCK_NET, false, false, "kernel ABI 3 < 4");
	r.required = SBX_G_NETWORK_BOUNDARY;
	sbx_report_finish(&r);
	assert_string_equal(r.refusal, "required guarantee network_boundary not held: "
			    "netns (refused: EPERM) or else landlock_net (kernel ABI 3 < 4)");
	/* The same without landlock_net requested: the namespace alone. */
	sbx_report_set_requested(&r, SBX_F_LANDLOCK_NET, false, "not needed");
	sbx_report_finish(&r);
	assert_string_equal(r.refusal, "required guarantee network_boundary not held: "
			    "netns (refused: EPERM)");
	/* Both ways of the second need missing, and the first need. */
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_set(&r, SBX_F_UNIX_SOCKETS, false, false, "u");
	sbx_report_set(&r, SBX_F_NETNS, false, false, "n");
	sbx_report_set(&r, SBX_F_LANDLOCK_NET, false, false, "l");
	sbx_report_set(&r, SBX_F_SECCOMP, true, false, "s");
	r.required = SBX_G_NETWORK_BOUNDARY | SBX_G_PROCESS_BOUNDARY;
	sbx_report_finish(&r);
	assert_non_null(strstr(r.refusal, "required guarantee network_boundary not held: "
			       "unix_sockets (u), netns (n) or else landlock_net (l) and "
			       "seccomp (not verified: s)"));
	/* The process boundary holds on the pid namespace with either. */
	assert_null(strstr(r.refusal, "process_boundary"));
	sbx_report_set(&r, SBX_F_LANDLOCK_SCOPE, false, false, "kernel ABI 5 < 6");
	sbx_report_finish(&r);
	assert_non_null(strstr(r.refusal, "required guarantee process_boundary not held: "
			       "landlock_scope (kernel ABI 5 < 6) or else seccomp (not verified: s)"));
	/* Limits: cgroup limits are a need only where asked for. */
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_set_requested(&r, SBX_F_CGROUP_LIMITS, false, NULL);
	sbx_report_set(&r, SBX_F_CGROUP_LIMITS, false, false, "no systemd");
	sbx_report_set(&r, SBX_F_RLIMITS, false, false, "setrlimit: EPERM");
	r.required = SBX_G_RESOURCE_LIMITS;
	sbx_report_finish(&r);
	assert_string_equal(r.refusal, "required guarantee resource_limits not held: "
			    "rlimits (setrlimit: EPERM)");
	sbx_report_set_requested(&r, SBX_F_CGROUP_LIMITS, true, NULL);
	sbx_report_finish(&r);
	assert_string_equal(r.refusal, "required guarantee resource_limits not held: "
			    "rlimits (setrlimit: EPERM), cgroup_limits (no systemd)");

	/* A long refusal is cut and marked, never overflowing. */
	sbx_report_init(&r, &p);
	for (unsigned f = 0; f < SBX_F_COUNT; f++)
		sbx_report_set(&r, (enum sbx_feature)f, false, false, "%0200d", 7);
	r.min_level = SBX_LEVEL_FULL;
	sbx_report_finish(&r);
	assert_true(strlen(r.refusal) < sizeof(r.refusal));
	assert_string_equal(r.refusal + strlen(r.refusal) - 3, "...");
}

static void fill_sample(struct sbx_report *r)
{
	struct sbx_profile p;

	sbx_profile_init_default(&p);
	sbx_report_init(r, &p);
	snprintf(r->session_id, sizeof(r->session_id), "0123456789abcdef0123456789abcdef");
	snprintf(r->user, sizeof(r->user), "alice");
	r->uid = 1001;
	snprintf(r->client, sizeof(r->client), "10.0.0.5 \"x\" \\y");
	snprintf(r->service, sizeof(r->service), "sshd");
	r->landlock_abi = 7;
	mark_all(r, true, true);
	sbx_report_set(r, SBX_F_LANDLOCK_NET, false, false,
		       "kernel ABI 3\n\"quoted\" back\\slash \x01\x1f\x7f caf\xc3\xa9 /slash");
	sbx_report_set(r, SBX_F_NETNS, true, false, "userns blocked");
	r->required &= ~(uint32_t)SBX_G_NETWORK_BOUNDARY;
	sbx_report_finish(r);
}

static void assert_reports_equal(const struct sbx_report *a, const struct sbx_report *b)
{
	assert_string_equal(a->session_id, b->session_id);
	assert_string_equal(a->user, b->user);
	assert_int_equal(a->uid, b->uid);
	assert_string_equal(a->client, b->client);
	assert_string_equal(a->service, b->service);
	assert_string_equal(a->profile_name, b->profile_name);
	assert_string_equal(a->profile_hash, b->profile_hash);
	assert_int_equal(a->isolation, b->isolation);
	assert_int_equal(a->landlock_abi, b->landlock_abi);
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		assert_int_equal(a->entry[f].requested, b->entry[f].requested);
		assert_int_equal(a->entry[f].achieved, b->entry[f].achieved);
		assert_int_equal(a->entry[f].verified, b->entry[f].verified);
		assert_string_equal(a->entry[f].detail, b->entry[f].detail);
	}
	assert_int_equal(a->guarantees, b->guarantees);
	assert_int_equal(a->required, b->required);
	assert_int_equal(a->level, b->level);
	assert_int_equal(a->min_level, b->min_level);
	assert_int_equal(a->floor_met, b->floor_met);
	assert_string_equal(a->refusal, b->refusal);
	assert_int_equal(a->started, b->started);
	assert_int_equal(a->ended, b->ended);
	assert_int_equal(a->exit_status, b->exit_status);
	assert_int_equal(a->argc, b->argc);
	assert_int_equal(a->argv_truncated, b->argv_truncated);
	assert_memory_equal(a->argv_buf, b->argv_buf, sizeof(a->argv_buf));
	assert_int_equal(a->host_read, b->host_read);
	assert_int_equal(a->host_write, b->host_write);
	assert_int_equal(a->network, b->network);
	assert_int_equal(a->command, b->command);
	assert_int_equal(a->home, b->home);
	assert_int_equal(a->n_deny_read, b->n_deny_read);
}

static char *to_json(const struct sbx_report *r, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(sbx_report_to_json(r, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int parse_str(const char *s, struct sbx_report *r, struct sbx_error *err)
{
	return sbx_report_from_json(s, strlen(s), r, err);
}

/* The copy goes where the sandboxed program may write: a FIFO or a
 * symlink at its name is refused at once (a FIFO used to block the
 * writer, the outer process, before it kept the session's time); a
 * regular file is replaced. */
static void test_write_at_refuses_non_files(void **state)
{
	struct sbx_report a;
	char *dir = sbx_test_mkdtemp("report"), big[64];
	struct stat st;
	int dfd;

	(void)state;
	fill_sample(&a);
	assert_non_null(dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(mkfifoat(dfd, "fifo.json", 0600), 0);
	assert_int_equal(sbx_report_write_at(dfd, "fifo.json", &a), -ENXIO);
	assert_int_equal(symlinkat("/etc/passwd", dfd, "link.json"), 0);
	assert_int_equal(sbx_report_write_at(dfd, "link.json", &a), -ELOOP);
	/* control: a new file, then one with old, longer content */
	assert_int_equal(sbx_report_write_at(dfd, "r.json", &a), 0);
	assert_int_equal(fstatat(dfd, "r.json", &st, 0), 0);
	assert_true(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600 && st.st_size > 100);
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 200; i++) {
		int fd = openat(dfd, "old.json", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		assert_true(fd >= 0 && write(fd, big, sizeof(big)) == (ssize_t)sizeof(big));
		close(fd);
	}
	assert_int_equal(sbx_report_write_at(dfd, "old.json", &a), 0);
	{
		struct stat st2;

		assert_int_equal(fstatat(dfd, "old.json", &st2, 0), 0);
		assert_int_equal(st2.st_size, st.st_size);
	}
	close(dfd);
	sbx_test_rmtree(dir);
	free(dir);
}

/* A report an agent could write reaches root's terminal: no control
 * character in any spelling (escaped ESC, newline, DEL, UTF-8 C1 CSI) is
 * read; UTF-8 text is (the control). json: a valid report. */
static __attribute__((noinline)) void json_refuses_control_characters(const char *json)
{
	static const char *const spoof[] = {
		"\\u001b[2J", "\\n", "\\r", "\\t", "\\u007f", "\xc2\x9b[2J",
	};
	const char *key = "\"client\":\"";
	struct sbx_error err = { 0 };
	struct sbx_report b;
	size_t off;
	char *with;

	assert_non_null(strstr(json, key));
	off = (size_t)(strstr(json, key) - json) + strlen(key);
	for (size_t i = 0; i < ARRAY_SIZE(spoof); i++) {
		assert_true(asprintf(&with, "%.*s%s%s", (int)off, json, spoof[i], json + off) > 0);
		assert_int_equal(parse_str(with, &b, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "control character"));
		free(with);
	}
	assert_true(asprintf(&with, "%.*s%s%s", (int)off, json, "caf\xc3\xa9 ", json + off) > 0);
	assert_int_equal(parse_str(with, &b, &err), 0);
	assert_non_null(strstr(b.client, "caf\xc3\xa9 10.0.0.5"));
	free(with);
}

static void test_json_roundtrip(void **state)
{
	struct sbx_report a, b;
	struct sbx_error err;
	size_t len;
	char *json, *bad, *pos;

	(void)state;
	fill_sample(&a);
	json = to_json(&a, &len);
	/* Stable key order, one object; control bytes were scrubbed when the
	 * detail was set (the reader refuses them), quotes escaped. */
	assert_memory_equal(json, "{\"schema\":1,\"session_id\":", 25);
	assert_non_null(strstr(json, "kernel ABI 3?\\\"quoted\\\" back\\\\slash ??? caf\xc3\xa9"));
	assert_null(strchr(json, '\x01'));
	assert_true(strstr(json, "\"entries\"") < strstr(json, "\"guarantees\""));
	memset(&b, 0x55, sizeof(b));
	assert_int_equal(sbx_report_from_json(json, len, &b, &err), 0);
	assert_reports_equal(&a, &b);

	/* Every strict prefix is rejected, and *out is left alone. */
	for (size_t n = 0; n + 1 < len; n++) {
		memset(&b, 0x55, sizeof(b));
		assert_int_equal(sbx_report_from_json(json, n, &b, &err), -EINVAL);
		assert_int_equal(b.uid, 0x55555555u);
	}

	/* Rejections, each with a message. */
	assert_int_equal(asprintf(&bad, "%s x", json), (int)len + 2);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "trailing"));
	free(bad);

	bad = strdup(json);
	pos = strstr(bad, "\"user\"");
	memcpy(pos, "\"usex\"", 6);	/* skipped as a newer key: "user" is missing */
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "missing key \"user\""));
	memcpy(pos, "\"uid\" ", 6);	/* "uid" twice */
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	free(bad);

	bad = strdup(json);
	pos = strstr(strstr(bad, "\"feature\":\"landlock_net\""), "\"verified\":false");
	assert_non_null(pos);
	memcpy(pos, "\"verified\":true ", 16);	/* landlock_net: not achieved */
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "verified but not achieved"));
	free(bad);

	bad = strdup(json);
	pos = strstr(bad, "\"uid\":1001");
	memcpy(pos, "\"uid\":0001", 10);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	memcpy(pos, "\"uid\":-001", 10);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	free(bad);

	assert_int_equal(parse_str("{}", &b, &err), -EINVAL);
	assert_int_equal(parse_str("[]", &b, &err), -EINVAL);
	assert_int_equal(parse_str("", &b, &err), -EINVAL);
	assert_int_equal(parse_str("{\"session_id\":\"\\u0085\"}", &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "C1 control character"));
	assert_int_equal(parse_str("{\"session_id\":\"a\x01\"}", &b, &err), -EINVAL);

	json_refuses_control_characters(json);
	free(json);
}

/* json with ins put just after the first occurrence of at. */
static char *inserted(const char *json, const char *at, const char *ins)
{
	const char *pos = strstr(json, at);
	char *out = NULL;

	assert_non_null(pos);
	pos += strlen(at);
	assert_true(asprintf(&out, "%.*s%s%s", (int)(pos - json), json, ins, pos) > 0);
	return out;
}

/* network = proxy: the bridge up means only the list leaves (network_egress,
 * not network_boundary); the bridge down means nothing does (boundary,
 * which also meets a floor requiring network_egress). */
static void test_proxy_guarantees(void **state)
{
	struct sbx_profile p;
	struct sbx_report r;

	(void)state;
	sbx_profile_init_default(&p);
	p.network = SBX_NETWORK_PROXY;
	assert_int_equal(sbx_egress_entry_parse("registry.npmjs.org", &p.egress[0], NULL), 0);
	assert_int_equal(sbx_egress_entry_parse("[fd00::1]:8443", &p.egress[1], NULL), 0);
	p.n_egress = 2;
	sbx_report_init(&r, &p);
	/* The default require's network_boundary reads as network_egress. */
	assert_true(r.required & SBX_G_NETWORK_EGRESS);
	assert_false(r.required & SBX_G_NETWORK_BOUNDARY);
	assert_true(r.entry[SBX_F_NETWORK_EGRESS].requested);
	assert_string_equal(r.egress_list, "registry.npmjs.org:443, [fd00::1]:8443");
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_true(r.guarantees & SBX_G_NETWORK_EGRESS);
	assert_false(r.guarantees & SBX_G_NETWORK_BOUNDARY);
	assert_true(r.floor_met);
	assert_int_equal(r.level, SBX_LEVEL_FULL);

	/* Achieved but not verified (its canary failed): neither. */
	r.entry[SBX_F_NETWORK_EGRESS].verified = false;
	sbx_report_finish(&r);
	assert_false(r.guarantees & (SBX_G_NETWORK_EGRESS | SBX_G_NETWORK_BOUNDARY));
	assert_false(r.floor_met);
	assert_non_null(strstr(r.refusal, "network_egress"));

	/* No bridge: a deny session in all but name. */
	sbx_report_set(&r, SBX_F_NETWORK_EGRESS, false, false, "not reached");
	sbx_report_finish(&r);
	assert_true(r.guarantees & SBX_G_NETWORK_BOUNDARY);
	assert_false(r.guarantees & SBX_G_NETWORK_EGRESS);
	assert_int_equal(r.level, SBX_LEVEL_DEGRADED);
	assert_true(r.floor_met);

	/* Without the sandbox's network namespace no list holds either. */
	mark_all(&r, true, true);
	sbx_report_set(&r, SBX_F_NETNS, false, false, "no netns");
	sbx_report_finish(&r);
	assert_false(r.guarantees & SBX_G_NETWORK_EGRESS);

	/* A deny profile's floor that requires network_egress: met by the
	 * boundary; an allow profile's: not, and said why. */
	sbx_profile_init_default(&p);
	p.require |= SBX_G_NETWORK_EGRESS;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_true(r.floor_met);
	p.network = SBX_ACCESS_ALLOW;
	p.require = SBX_G_NETWORK_EGRESS;
	sbx_report_init(&r, &p);
	mark_all(&r, true, true);
	sbx_report_finish(&r);
	assert_false(r.floor_met);
	assert_non_null(strstr(r.refusal, "network_egress not held: the profile allows the network"));
}

/* Entries by name: a newer writer's feature or guarantee is skipped, an
 * older writer's report (without network_egress) reads, the egress
 * object round-trips, and what would not come back the same is refused. */
static void test_json_features_by_name(void **state)
{
	struct sbx_error err = { 0 };
	struct sbx_profile p;
	struct sbx_report a, b;
	char *json, *with, *cut, *q;
	size_t len;

	(void)state;
	sbx_profile_init_default(&p);
	p.network = SBX_NETWORK_PROXY;
	assert_int_equal(sbx_egress_entry_parse("*.pythonhosted.org", &p.egress[0], NULL), 0);
	assert_int_equal(sbx_egress_entry_parse("127.0.0.2:18443", &p.egress[1], NULL), 0);
	p.n_egress = 2;
	sbx_report_init(&a, &p);
	mark_all(&a, true, true);
	a.egress_allowed = 3;
	a.egress_refused = 2;
	a.egress_failed = 1;
	sbx_report_finish(&a);
	json = to_json(&a, &len);
	assert_non_null(strstr(json, "\"egress\":{\"list\":[\"*.pythonhosted.org:443\","
			       "\"127.0.0.2:18443\"],\"list_truncated\":false,\"allowed\":3,"
			       "\"refused\":2,\"failed\":1,\"unanswered\":0}"));
	assert_int_equal(parse_str(json, &b, &err), 0);
	assert_reports_equal(&a, &b);
	assert_string_equal(b.egress_list, a.egress_list);
	assert_int_equal(b.egress_allowed, 3);
	assert_int_equal(b.egress_refused, 2);
	assert_int_equal(b.egress_failed, 1);

	/* A newer writer's feature and guarantee. */
	with = inserted(json, "\"entries\":[", "{\"feature\":\"future_layer\",\"requested\":true,"
			"\"achieved\":true,\"verified\":true,\"detail\":\"\"},");
	assert_int_equal(parse_str(with, &b, &err), 0);
	assert_reports_equal(&a, &b);
	free(with);
	with = inserted(json, "\"guarantees\":[", "\"future_guarantee\",");
	assert_int_equal(parse_str(with, &b, &err), 0);
	assert_int_equal(b.guarantees, a.guarantees);
	free(with);

	/* An older writer's: no network_egress entry. */
	cut = strdup(json);
	assert_non_null(cut);
	q = strstr(cut, ",{\"feature\":\"network_egress\"");
	assert_non_null(q);
	memmove(q, strchr(q + 1, '}') + 1, strlen(strchr(q + 1, '}') + 1) + 1);
	assert_int_equal(parse_str(cut, &b, &err), 0);
	assert_false(b.entry[SBX_F_NETWORK_EGRESS].requested);
	assert_int_equal(b.entry[SBX_F_SECCOMP].requested, true);
	free(cut);

	/* Refused: a feature twice, a list entry that is not HOST:PORT. */
	with = inserted(json, "\"entries\":[", "{\"feature\":\"seccomp\",\"requested\":true,"
			"\"achieved\":false,\"verified\":false,\"detail\":\"\"},");
	assert_int_equal(parse_str(with, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "duplicate feature"));
	free(with);
	with = inserted(json, "\"list\":[", "\"a, b:443\",");
	assert_int_equal(parse_str(with, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "egress list entry"));
	free(with);
	free(json);
}

/* Schema 1: the version, when, what, and how it ended; each key written
 * only once known, each read back. */
static void test_json_when_and_what(void **state)
{
	char *const argv[] = { "/bin/sh", "-c", "echo \x1b[2J hi\n", NULL };
	char *many[SBX_REPORT_ARGV_MAX + 3], *json, *bad;
	struct sbx_error err = { 0 };
	struct sbx_report a, b;
	size_t len;

	(void)state;
	fill_sample(&a);
	assert_int_equal(a.exit_status, -1);
	sbx_report_set_argv(&a, argv);
	a.started = 1796111825;	/* 2026-12-01T07:57:05Z */
	json = to_json(&a, &len);
	assert_non_null(strstr(json, ",\"started\":\"2026-12-01T07:57:05Z\","));
	assert_non_null(strstr(json, "\"command\":[\"/bin/sh\",\"-c\",\"echo ?[2J hi?\"],"
				     "\"command_truncated\":false}"));
	/* Not ended yet: neither key. */
	assert_null(strstr(json, "\"ended\""));
	assert_null(strstr(json, "\"exit_status\""));
	assert_int_equal(sbx_report_from_json(json, len, &b, &err), 0);
	assert_reports_equal(&a, &b);
	assert_int_equal(b.exit_status, -1);
	free(json);

	a.ended = a.started + 75;
	a.exit_status = 130;
	json = to_json(&a, &len);
	assert_non_null(strstr(json, ",\"ended\":\"2026-12-01T07:58:20Z\",\"exit_status\":130}"));
	assert_int_equal(sbx_report_from_json(json, len, &b, &err), 0);
	assert_reports_equal(&a, &b);

	/* A date that does not exist, another form, a status out of range. */
	bad = strdup(json);
	memcpy(strstr(bad, "2026-12-01T07:58"), "2026-02-30T07:58", 16);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "time out of range"));
	free(bad);
	bad = strdup(json);
	memcpy(strstr(bad, "07:58:20Z"), "07:58:20+", 9);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	free(bad);
	bad = strdup(json);
	memcpy(strstr(bad, "\"exit_status\":130"), "\"exit_status\":256", 17);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	free(bad);
	/* A newer, incompatible schema is refused; a report of before the
	 * schema (no key at all) still reads. */
	bad = strdup(json);
	memcpy(bad, "{\"schema\":2,", 12);
	assert_int_equal(parse_str(bad, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "schema newer"));
	memcpy(bad, "{           ", 12);
	assert_int_equal(parse_str(bad, &b, &err), 0);
	free(bad);
	free(json);

	/* Bounded: more words than kept, and longer ones. */
	for (size_t i = 0; i < ARRAY_SIZE(many) - 1; i++)
		many[i] = (char *)"word";
	many[ARRAY_SIZE(many) - 1] = NULL;
	sbx_report_set_argv(&a, many);
	assert_int_equal(a.argc, SBX_REPORT_ARGV_MAX);
	assert_true(a.argv_truncated);
	{
		char longw[3000];

		memset(longw, 'x', sizeof(longw) - 1);
		longw[sizeof(longw) - 1] = '\0';
		char *const one[] = { "/bin/sh", longw, "after", NULL };

		sbx_report_set_argv(&a, one);
		assert_int_equal(a.argc, 2);
		assert_true(a.argv_truncated);
		assert_int_equal(strlen(a.argv_buf + 8), sizeof(a.argv_buf) - 9);
		json = to_json(&a, &len);
		assert_int_equal(sbx_report_from_json(json, len, &b, &err), 0);
		assert_reports_equal(&a, &b);
		free(json);
	}
}

/* A newer writer's keys, of any JSON value, anywhere: skipped. What is
 * malformed in them, or a control character, is still refused. */
static void test_json_skips_unknown_keys(void **state)
{
	static const char *const skipped[] = {
		"\"future\":1,",
		"\"future\":-12.5e+3,",
		"\"future\":null,",
		"\"future\":[],",
		"\"future\":{},",
		"\"future\":\"with \\\"escapes\\\" \\\\ \\/ \\u0041\",",
		"\"future\":{\"a\":[1,{\"b\":[true,false,null]},\"x\"],\"c\":{\"d\":{}}},",
		"\"a_key_of_sixty_three_bytes_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":0,",
	};
	static const char *const refused[] = {
		"\"future\":,",
		"\"future\":[1,],",
		"\"future\":{\"a\"},",
		"\"future\":{\"a\":1,},",
		"\"future\":01,",
		"\"future\":1.,",
		"\"future\":tru,",
		"\"future\":\"\\u001b[2J\",",
		"\"future\":\"\\q\",",
		"\"future\":\"\\n\",",
		"\"future\":\"\x01\",",
		"\"future\":{1:2},",
		"\"future\":[1 2],",
		"\"a_key_of_sixty_four_bytes_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":0,",
	};
	struct sbx_error err = { 0 };
	struct sbx_report a, b;
	char deep[200] = "\"future\":", *json, *with;
	size_t len;

	(void)state;
	fill_sample(&a);
	json = to_json(&a, &len);
	for (size_t i = 0; i < ARRAY_SIZE(skipped); i++) {
		/* at the top, and inside nested objects the reader knows */
		const char *at[] = { "{", "\"profile\":{", "\"entries\":[{" };

		for (size_t k = 0; k < ARRAY_SIZE(at); k++) {
			with = inserted(json, at[k], skipped[i]);
			memset(&b, 0, sizeof(b));
			if (parse_str(with, &b, &err) != 0)
				fail_msg("%s in %s: %s", skipped[i], at[k], err.msg);
			assert_reports_equal(&a, &b);
			free(with);
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		with = inserted(json, "{", refused[i]);
		if (parse_str(with, &b, &err) != -EINVAL)
			fail_msg("accepted %s", refused[i]);
		free(with);
	}
	/* Nesting: 16 levels read, 17 refused (the skip recursion's bound). */
	for (int depth = 16; depth <= 17; depth++) {
		size_t n = strlen("\"future\":");

		memset(deep + n, '[', (size_t)depth);
		memset(deep + n + depth, ']', (size_t)depth);
		deep[n + 2 * (size_t)depth] = ',';
		deep[n + 2 * (size_t)depth + 1] = '\0';
		with = inserted(json, "{", deep);
		assert_int_equal(parse_str(with, &b, &err), depth == 16 ? 0 : -EINVAL);
		if (depth == 17)
			assert_non_null(strstr(err.msg, "nested too deep"));
		free(with);
	}
	/* Known keys stay strict: a duplicate is refused. */
	with = inserted(json, "{", "\"user\":\"mallory\",");
	assert_int_equal(parse_str(with, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "duplicate key"));
	free(with);
	free(json);
}

/* ---- bytes that are not printable UTF-8 ------------------------------------ */

/* What an agent may put in its words and paths, and a client in its host
 * name: each way UTF-8 goes wrong, and the controls in both spellings.
 * (Octal where a digit follows: \233 is 0x9b, \235 0x9d.) */
static const char *const odd_words[] = {
	"\x80", "\xbf", "\2332J", "\2350;TITLE\x9c",		/* C1 as one byte */
	"\xc2\2332J", "\xc2\x85",				/* C1 as UTF-8 */
	"\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf",	/* overlong */
	"\xed\xa0\x80", "\xed\xbf\xbf",				/* UTF-16 surrogates */
	"\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\xfe\xff",	/* beyond U+10FFFF */
	"\xe2\x82", "caf\xe9", "\x1b[2J\x07", "\x7f",
};
/* What must come through as it is: the positive controls. */
static const char *const plain_words[] = {
	"plain ascii", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80",
	"a\\b \\xe9 \"q\"",
};

/* A report whose every string holds such bytes, each set the way the
 * session sets it (sbx_report_set_argv, sbx_report_set, the identity
 * scrubbed as report_identity does), with a refusal that quotes them. */
static void fill_odd(struct sbx_report *r)
{
	char *argv[2 + ARRAY_SIZE(odd_words) + ARRAY_SIZE(plain_words) + 1];
	char every[256];
	size_t n = 0;

	for (int i = 1; i < 256; i++)
		every[i - 1] = (char)i;
	every[255] = '\0';
	fill_sample(r);
	argv[n++] = (char *)"/bin/echo";
	argv[n++] = every;
	for (size_t i = 0; i < ARRAY_SIZE(odd_words); i++)
		argv[n++] = (char *)odd_words[i];
	for (size_t i = 0; i < ARRAY_SIZE(plain_words); i++)
		argv[n++] = (char *)plain_words[i];
	argv[n] = NULL;
	sbx_report_set_argv(r, argv);
	assert_false(r->argv_truncated);
	sbx_report_set(r, SBX_F_MOUNT_VIEW, true, true, "bind %s", every);
	sbx_report_set(r, SBX_F_DENY_READ, true, true, "masked /srv/caf\xe9/\x9b" "2J/\xc2\x9b/"
		       "\xed\xa0\x80");
	sbx_report_set(r, SBX_F_HOME, true, true, "home /srv/\xe6\x97\xa5\xe6\x9c\xac/caf\xc3\xa9");
	snprintf(r->client, sizeof(r->client), "h\x9b" "2J.caf\xe9.example %.100s",
		 every + 0x7f);
	snprintf(r->user, sizeof(r->user), "\xe9l\xe8ve\x9b");
	snprintf(r->service, sizeof(r->service), "ss\x9dhd");
	sbx_text_scrub(r->client);
	sbx_text_scrub(r->user);
	sbx_text_scrub(r->service);
	r->min_level = SBX_LEVEL_FULL;
	sbx_report_set(r, SBX_F_LANDLOCK_NET, false, false, "kernel says caf\xe9 \x9b" "2J");
	sbx_report_finish(r);
	assert_false(r->floor_met);
	assert_non_null(strstr(r->refusal, "kernel says caf\xe9 \x9b" "2J"));
}

static void assert_json_strict(const char *json, size_t len)
{
	char why[128];

	if (sbx_test_json_strict(json, len, why, sizeof(why)) != 0)
		fail_msg("not strict JSON: %s: %.*s", why, (int)(len < 300 ? len : 300), json);
	/* No raw control byte at all, but the newline that ends the line. */
	assert_true(len > 0 && json[len - 1] == '\n');
	for (size_t i = 0; i + 1 < len; i++)
		assert_true((unsigned char)json[i] >= 0x20 && json[i] != 0x7f);
}

/* Python's own strict reader on the same bytes (tests/helpers/strict_json.py). */
static void assert_python_strict(const char *mode, const char *buf, size_t len)
{
	char path[] = "/tmp/sbx-test-report-XXXXXX";
	const char *argv[] = { "/usr/bin/python3", "tests/helpers/strict_json.py", mode, path, NULL };
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	assert_int_equal(sbx_test_run_quiet(argv), 0);
	unlink(path);
}

/* Every byte 0x01-0xff, and each way UTF-8 goes wrong, in argv, paths, a
 * host name and the details: the JSON is strict, holds no raw control
 * byte, and reads back exactly, written again byte for byte the same. */
static void test_json_any_bytes(void **state)
{
	struct sbx_report *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct sbx_error err = { 0 };
	char *json, *again;
	size_t len, len2;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	fill_odd(a);
	json = to_json(a, &len);
	assert_json_strict(json, len);
	assert_python_strict("json", json, len);
	/* A string that does not show as itself: \xNN where it shows, and its
	 * bytes beside it; the scrub (when set) made '?' of C0 and UTF-8 C1. */
	assert_non_null(strstr(json, ",\"command_hex\":[\"2f62696e2f6563686f\",\"3f3f3f3f3f3f3f3f"
			       "3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f3f202122"));
	assert_non_null(strstr(json, ",\"\\\\x9b2J\",\"\\\\x9d0;TITLE\\\\x9c\",\"??2J\",\"??\","
			       "\"\\\\xc0\\\\xaf\","));
	assert_non_null(strstr(json, ",\"9b324a\",\"9d303b5449544c459c\",\"3f3f324a\",\"3f3f\","
			       "\"c0af\","));
	assert_non_null(strstr(json, "\"user\":\"\\\\xe9l\\\\xe8ve\\\\x9b\",\"user_hex\":\"e96ce876659b\","));
	assert_non_null(strstr(json, "\"client\":\"h\\\\x9b2J.caf\\\\xe9.example \\\\x80\\\\x81"));
	assert_non_null(strstr(json, "\"client_hex\":\"689b324a2e636166e92e6578616d706c652080"));
	assert_non_null(strstr(json, "\"service\":\"ss\\\\x9dhd\",\"service_hex\":\"73739d6864\""));
	assert_non_null(strstr(json, "\"detail\":\"masked /srv/caf\\\\xe9/\\\\x9b2J/?" "?/"
			       "\\\\xed\\\\xa0\\\\x80\",\"detail_hex\":\"6d61736b6564"));
	assert_non_null(strstr(json, "\"refusal_hex\":\""));
	/* The controls: UTF-8 text, a backslash and a quote as they are,
	 * and no _hex for a string that shows as itself. */
	assert_non_null(strstr(json, ",\"plain ascii\",\"caf\xc3\xa9\",\"\xe6\x97\xa5\xe6\x9c\xac\","
			       "\"\xf0\x9f\x98\x80\",\"a\\\\b \\\\xe9 \\\"q\\\"\"],"));
	assert_non_null(strstr(json, "\"detail\":\"home /srv/\xe6\x97\xa5\xe6\x9c\xac/caf\xc3\xa9\"}"));
	assert_null(strstr(json, "session_id_hex"));
	assert_null(strstr(json, "name_hex"));

	memset(b, 0x55, sizeof(*b));
	if (sbx_report_from_json(json, len, b, &err) != 0)
		fail_msg("%s", err.msg);
	assert_reports_equal(a, b);
	again = to_json(b, &len2);
	assert_int_equal(len2, len);
	assert_memory_equal(again, json, len);
	free(again);
	free(json);

	/* Plain words only: no command_hex, the words as they are. */
	{
		char *argv[ARRAY_SIZE(plain_words) + 1];

		for (size_t i = 0; i < ARRAY_SIZE(plain_words); i++)
			argv[i] = (char *)plain_words[i];
		argv[ARRAY_SIZE(plain_words)] = NULL;
		fill_sample(a);
		sbx_report_set_argv(a, argv);
		json = to_json(a, &len);
		assert_json_strict(json, len);
		assert_null(strstr(json, "_hex"));
		assert_non_null(strstr(json, "\"command\":[\"plain ascii\",\"caf\xc3\xa9\","
				       "\"\xe6\x97\xa5\xe6\x9c\xac\",\"\xf0\x9f\x98\x80\","));
		assert_int_equal(sbx_report_from_json(json, len, b, &err), 0);
		assert_reports_equal(a, b);
		free(json);
	}
	free(a);
	free(b);
}

/* A report whose fields were not set through the setters (a library
 * caller's, a bug): the writer still gives strict JSON with nothing raw,
 * and the reader, which returns no control character, refuses it. */
static void test_json_unscrubbed_fields(void **state)
{
	static const char *const raw[] = { "\x1b[2J", "a\nb", "\x7f", "\xc2\2332J", "\t", "\r" };
	struct sbx_report *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct sbx_error err = { 0 };
	char *json;
	size_t len;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < ARRAY_SIZE(raw); i++) {
		for (int where = 0; where < 4; where++) {
			fill_sample(a);
			if (where == 0)
				snprintf(a->user, sizeof(a->user), "u%s", raw[i]);
			else if (where == 1)
				snprintf(a->entry[SBX_F_SECCOMP].detail, sizeof(a->entry[0].detail),
					 "d%s", raw[i]);
			else if (where == 2)
				snprintf(a->profile_name, sizeof(a->profile_name), "p%s", raw[i]);
			else {
				a->argc = 1;
				snprintf(a->argv_buf, sizeof(a->argv_buf), "w%s", raw[i]);
			}
			json = to_json(a, &len);
			assert_json_strict(json, len);
			assert_non_null(strstr(json, "\\\\x"));
			assert_int_equal(sbx_report_from_json(json, len, b, &err), -EINVAL);
			assert_non_null(strstr(err.msg, "without control characters"));
			free(json);
		}
	}
	free(a);
	free(b);
}

/* The reader: strict UTF-8, any JSON escape (as other writers spell
 * text), no control character however spelled, and a KEY_hex only when
 * it shows as KEY does. */
static void test_json_reader_strict(void **state)
{
	static const struct {
		const char *spelled, *read;
	} accepted[] = {
		{ "caf\\u00e9", "caf\xc3\xa9" },
		{ "caf\\u00E9", "caf\xc3\xa9" },
		{ "\\u65e5\\u672c", "\xe6\x97\xa5\xe6\x9c\xac" },
		{ "\\ud83d\\ude00", "\xf0\x9f\x98\x80" },
		{ "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80" },
		{ "\\u00a0\\/", "\xc2\xa0/" },
	};
	static const char *const refused[] = {
		"caf\xe9", "\2332J", "\xc2\2332J", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "\xe2\x82", "\xff", "\x7f",
		"\\u009b", "\\u0085", "\\u007f", "\\u001b", "\\u0000", "\\n", "\\t",
		"\\ud83d", "\\ud83dx", "\\ude00", "\\ud83d\\u0041", "\\u00g0",
	};
	static const struct {
		const char *key, *bad, *why;
	} forged[] = {
		/* A hex that says another name than the string shows. */
		{ "\"user\":\"alice\"", "\"user\":\"alice\",\"user_hex\":\"6d616c6c6f7279\"",
		  "not what \"user\" shows" },
		{ "\"user\":\"alice\"", "\"user\":\"\\\\xe9\",\"user_hex\":\"e8\"", "not what" },
		{ "\"user\":\"alice\"", "\"user\":\"\\\\xe9\",\"user_hex\":\"E9\"", "not the hex" },
		{ "\"user\":\"alice\"", "\"user\":\"\\\\xe9\",\"user_hex\":\"e\"", "not the hex" },
		{ "\"user\":\"alice\"", "\"user\":\"\\\\x00\",\"user_hex\":\"00\"", "not the hex" },
		{ "\"user\":\"alice\"", "\"user\":\"\\\\x1b\",\"user_hex\":\"1b\"", "not the hex" },
		{ "\"user\":\"alice\"", "\"user\":\"??\",\"user_hex\":\"c29b\"", "not the hex" },
		{ "\"command\":[\"/bin/sh\"", "\"command_hex\":[\"2f62696e2f7368\"],\"command\":[\"/bin/sh\"",
		  "differ in length" },
		{ "\"command\":[\"/bin/sh\"", "\"command_hex\":[\"2f62696e2f7368\",\"79\"],"
		  "\"command\":[\"/bin/sh\"", "not what \"command\" shows" },
	};
	char *const argv[] = { "/bin/sh", "x", NULL };
	struct sbx_report a, b;
	struct sbx_error err = { 0 };
	char *json, *with;
	size_t len, off;

	(void)state;
	fill_sample(&a);
	sbx_report_set_argv(&a, argv);
	json = to_json(&a, &len);
	off = (size_t)(strstr(json, "\"client\":\"") - json) + strlen("\"client\":\"");
	for (size_t i = 0; i < ARRAY_SIZE(accepted); i++) {
		assert_true(asprintf(&with, "%.*s%s%s", (int)off, json, accepted[i].spelled,
				     json + off) > 0);
		if (parse_str(with, &b, &err) != 0)
			fail_msg("%s: %s", accepted[i].spelled, err.msg);
		assert_memory_equal(b.client, accepted[i].read, strlen(accepted[i].read));
		assert_string_equal(b.client + strlen(accepted[i].read), a.client);
		free(with);
	}
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		assert_true(asprintf(&with, "%.*s%s%s", (int)off, json, refused[i], json + off) > 0);
		if (parse_str(with, &b, &err) != -EINVAL)
			fail_msg("accepted %s", refused[i]);
		free(with);
		/* The same in a value only a newer writer knows. */
		assert_true(asprintf(&with, "{\"future\":\"%s\",%s", refused[i], json + 1) > 0);
		if (parse_str(with, &b, &err) != -EINVAL)
			fail_msg("accepted %s in a skipped value", refused[i]);
		free(with);
	}
	for (size_t i = 0; i < ARRAY_SIZE(forged); i++) {
		const char *at = strstr(json, forged[i].key);

		assert_non_null(at);
		assert_true(asprintf(&with, "%.*s%s%s", (int)(at - json), json, forged[i].bad,
				     at + strlen(forged[i].key)) > 0);
		if (parse_str(with, &b, &err) != -EINVAL || !strstr(err.msg, forged[i].why))
			fail_msg("%s: %s", forged[i].bad, err.msg);
		free(with);
	}
	/* The command's bytes with no words to show. */
	with = strdup(json);
	memcpy(strstr(with, "\"command\":["), "\"commanx\":[", 11);
	{
		char *h;

		assert_true(asprintf(&h, "{\"command_hex\":[\"2f\"],%s", with + 1) > 0);
		assert_int_equal(parse_str(h, &b, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "\"command_hex\" without \"command\""));
		free(h);
	}
	free(with);
	/* The right hex where none was needed still reads. */
	with = inserted(json, "\"user\":\"alice\"", ",\"user_hex\":\"616c696365\"");
	assert_int_equal(parse_str(with, &b, &err), 0);
	assert_string_equal(b.user, "alice");
	free(with);
	free(json);
}

/* The largest report there can be (every string full, every byte shown as
 * \xNN and again in hex) still fits what the reader takes. */
static void test_json_largest(void **state)
{
	struct sbx_report *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct sbx_error err = { 0 };
	struct sbx_profile p;
	char *json;
	size_t len;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
#define FILL(field) (memset((field), 0x80, sizeof(field) - 1), (field)[sizeof(field) - 1] = '\0')
	sbx_profile_init_default(&p);
	p.network = SBX_NETWORK_PROXY;
	sbx_report_init(a, &p);
	FILL(a->session_id);
	FILL(a->user);
	FILL(a->client);
	FILL(a->service);
	FILL(a->profile_name);
	FILL(a->profile_hash);
	FILL(a->refusal);
	for (unsigned f = 0; f < SBX_F_COUNT; f++)
		FILL(a->entry[f].detail);
#undef FILL
	memset(a->argv_buf, 0x80, sizeof(a->argv_buf));
	a->argc = SBX_REPORT_ARGV_MAX;
	for (unsigned i = 0; i < SBX_REPORT_ARGV_MAX; i++)
		a->argv_buf[(i + 1) * (sizeof(a->argv_buf) / SBX_REPORT_ARGV_MAX) - 1] = '\0';
	/* The egress list is HOST:PORT entries (the reader refuses others). */
	for (size_t n = 0; n + 40 < sizeof(a->egress_list); n = strlen(a->egress_list))
		snprintf(a->egress_list + n, sizeof(a->egress_list) - n, "%sa.example:443",
			 n ? ", " : "");
	a->started = 1796111825;
	a->ended = a->started + 1;
	a->exit_status = 255;
	a->egress_allowed = a->egress_refused = a->egress_failed = a->egress_unanswered = UINT64_MAX;
	json = to_json(a, &len);
	print_message("  the largest report: %zu bytes of JSON (the reader takes %u)\n", len,
		      SBX_REPORT_JSON_MAX);
	assert_true(len <= SBX_REPORT_JSON_MAX);
	assert_json_strict(json, len);
	if (sbx_report_from_json(json, len, b, &err) != 0)
		fail_msg("%s", err.msg);
	assert_reports_equal(a, b);
	free(json);
	free(a);
	free(b);
}

static void test_logline(void **state)
{
	struct sbx_report r;
	char line[2048], small[64];

	(void)state;
	fill_sample(&r);
	assert_int_equal(sbx_report_to_logline(&r, line, sizeof(line)), 0);
	assert_null(strchr(line, '\n'));
	assert_non_null(strstr(line, "session=0123456789abcdef0123456789abcdef user=alice uid=1001 "));
	assert_non_null(strstr(line, "client=\"10.0.0.5 \\\"x\\\" \\\\y\" service=sshd profile=default hash="));
	assert_non_null(strstr(line, " level=degraded floor=met guarantees="));
	assert_non_null(strstr(line, "degraded=netns:\"userns blocked\",landlock_net:\"kernel ABI 3?"));
	assert_non_null(strstr(line, "caf\\xc3\\xa9"));
	for (const char *c = line; *c; c++)
		assert_true((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);

	/* Bounded at every size, truncation marked. */
	for (size_t size = 4; size <= sizeof(small); size++) {
		memset(small, 'Z', sizeof(small));
		assert_int_equal(sbx_report_to_logline(&r, small, size), 0);
		assert_true(strlen(small) < size);
		assert_string_equal(small + strlen(small) - 3, "...");
	}
	assert_int_equal(sbx_report_to_logline(&r, small, 3), -EINVAL);
	assert_string_equal(small, "");
}

static void test_text(void **state)
{
	struct sbx_report r;
	char *buf = NULL, why[128];
	size_t len;
	FILE *f;

	(void)state;
	fill_sample(&r);
	f = open_memstream(&buf, &len);
	assert_int_equal(sbx_report_to_text(&r, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "feature          requested achieved verified detail\n"));
	assert_non_null(strstr(buf, "\nlandlock_net     yes       no       no       kernel ABI 3"));
	assert_non_null(strstr(buf, "level       degraded (floor degraded)\n"));
	assert_non_null(strstr(buf, "verdict     floor met\n"));
	free(buf);

	/* Any byte in the strings: UTF-8 text and newlines only, each other
	 * byte as \xNN, UTF-8 names as they are. */
	fill_odd(&r);
	f = open_memstream(&buf, &len);
	assert_int_equal(sbx_report_to_text(&r, f), 0);
	fclose(f);
	if (sbx_test_text_safe(buf, len, why, sizeof(why)) != 0)
		fail_msg("%s", why);
	assert_python_strict("text", buf, len);
	assert_non_null(strstr(buf, "user        \\xe9l\\xe8ve\\x9b (uid 1001) from h\\x9b2J.caf\\xe9"
			       ".example \\x80\\x81"));
	assert_non_null(strstr(buf, " via ss\\x9dhd\n"));
	assert_non_null(strstr(buf, "masked /srv/caf\\xe9/\\x9b2J/?" "?/\\xed\\xa0\\x80\n"));
	assert_non_null(strstr(buf, "home /srv/\xe6\x97\xa5\xe6\x9c\xac/caf\xc3\xa9\n"));
	assert_non_null(strstr(buf, "verdict     refused: "));
	assert_non_null(strstr(buf, "kernel says caf\\xe9 \\x9b2J"));
	free(buf);
	assert_string_equal(sbx_feature_name(SBX_F_COMMAND_GATE), "command_gate");
	assert_string_equal(sbx_feature_name(SBX_F_COUNT), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_requested),
		cmocka_unit_test(test_set_fail_closed),
		cmocka_unit_test(test_guarantee_table),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_property_random),
		cmocka_unit_test(test_refusal_text),
		cmocka_unit_test(test_json_roundtrip),
		cmocka_unit_test(test_json_when_and_what),
		cmocka_unit_test(test_json_skips_unknown_keys),
		cmocka_unit_test(test_proxy_guarantees),
		cmocka_unit_test(test_json_features_by_name),
		cmocka_unit_test(test_write_at_refuses_non_files),
		cmocka_unit_test(test_json_any_bytes),
		cmocka_unit_test(test_json_unscrubbed_fields),
		cmocka_unit_test(test_json_reader_strict),
		cmocka_unit_test(test_json_largest),
		cmocka_unit_test(test_logline),
		cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
