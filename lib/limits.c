/* SPDX-License-Identifier: BSD-3-Clause */
/* Resource limits for the confined process (docs/design.md section 4.6). */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"

static const struct {
	enum sbx_limit limit;
	int resource;
	const char *name;
} rlimit_map[] = {
	{ SBX_LIMIT_NPROC, RLIMIT_NPROC, "RLIMIT_NPROC" },
	{ SBX_LIMIT_NOFILE, RLIMIT_NOFILE, "RLIMIT_NOFILE" },
	{ SBX_LIMIT_FSIZE, RLIMIT_FSIZE, "RLIMIT_FSIZE" },
	{ SBX_LIMIT_AS, RLIMIT_AS, "RLIMIT_AS" },
	{ SBX_LIMIT_CPU, RLIMIT_CPU, "RLIMIT_CPU" },
	{ SBX_LIMIT_CORE, RLIMIT_CORE, "RLIMIT_CORE" },
};

/* soft = hard = min(want, current hard). An unprivileged process can never
 * raise its hard limit, and a lower one is narrower, so clamping is never a
 * widening; setting soft = hard stops the session raising the soft one. */
static int rlimit_set(int resource, const char *name, uint64_t want,
		      struct sbx_error *err)
{
	struct rlimit cur, lim;
	rlim_t v = want >= (uint64_t)RLIM_INFINITY ? RLIM_INFINITY : (rlim_t)want;

	if (getrlimit(resource, &cur) != 0)
		return sbx_error_set(err, errno, "getrlimit(%s): %s", name,
				     strerror(errno));
	if (cur.rlim_max != RLIM_INFINITY && (v == RLIM_INFINITY || v > cur.rlim_max))
		v = cur.rlim_max;
	lim.rlim_cur = v;
	lim.rlim_max = v;
	if (setrlimit(resource, &lim) != 0)
		return sbx_error_set(err, errno, "setrlimit(%s, %llu): %s", name,
				     (unsigned long long)v, strerror(errno));
	return 0;
}

int sbx_rlimits_apply(const struct sbx_limits *l, struct sbx_error *err)
{
	size_t i;
	int r;

	for (i = 0; i < ARRAY_SIZE(rlimit_map); i++) {
		uint64_t want;

		/* Core dumps of a confined process can land secrets it read in
		 * a file outside the sandbox (core_pattern): always 0. */
		if (rlimit_map[i].limit == SBX_LIMIT_CORE)
			want = 0;
		else if (l && (l->set_mask & (1u << rlimit_map[i].limit)))
			want = l->value[rlimit_map[i].limit];
		else
			continue;
		r = rlimit_set(rlimit_map[i].resource, rlimit_map[i].name, want, err);
		if (r < 0)
			return r;
	}
	return 0;
}
