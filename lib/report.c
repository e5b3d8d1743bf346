/* SPDX-License-Identifier: BSD-3-Clause */
/* The guarantee report: requested/achieved/verified per feature, fail-closed guarantees, level, floor. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *const feature_names[SBX_F_COUNT] = {
	[SBX_F_ENV_SCRUB] = "env_scrub",
	[SBX_F_FD_HYGIENE] = "fd_hygiene",
	[SBX_F_USERNS] = "userns",
	[SBX_F_PIDNS] = "pidns",
	[SBX_F_MOUNTNS] = "mountns",
	[SBX_F_NETNS] = "netns",
	[SBX_F_IPCNS] = "ipcns",
	[SBX_F_UTSNS] = "utsns",
	[SBX_F_CGROUPNS] = "cgroupns",
	[SBX_F_MOUNT_VIEW] = "mount_view",
	[SBX_F_HOME] = "home",
	[SBX_F_DENY_READ] = "deny_read",
	[SBX_F_CAPS] = "caps",
	[SBX_F_NO_NEW_PRIVS] = "no_new_privs",
	[SBX_F_LANDLOCK_FS] = "landlock_fs",
	[SBX_F_LANDLOCK_NET] = "landlock_net",
	[SBX_F_LANDLOCK_IOCTL] = "landlock_ioctl",
	[SBX_F_LANDLOCK_SCOPE] = "landlock_scope",
	[SBX_F_UNIX_SOCKETS] = "unix_sockets",
	[SBX_F_RLIMITS] = "rlimits",
	[SBX_F_CGROUP_LIMITS] = "cgroup_limits",
	[SBX_F_SECCOMP] = "seccomp",
	[SBX_F_COMMAND_GATE] = "command_gate",
	[SBX_F_MEMORY_WX] = "memory_wx",
	[SBX_F_NETWORK_EGRESS] = "network_egress",
};

const char *sbx_feature_name(enum sbx_feature f)
{
	if ((unsigned)f >= SBX_F_COUNT)
		return "unknown";
	return feature_names[f];
}

/* ---- building -------------------------------------------------------------- */

void sbx_report_set_argv(struct sbx_report *r, char *const *argv)
{
	size_t used = 0, room = sizeof(r->argv_buf);

	r->argc = 0;
	r->argv_truncated = false;
	memset(r->argv_buf, 0, sizeof(r->argv_buf));
	for (size_t i = 0; argv && argv[i]; i++) {
		size_t n = strlen(argv[i]);

		if (r->argc == SBX_REPORT_ARGV_MAX || used + 1 >= room) {
			r->argv_truncated = true;
			break;
		}
		if (n > room - used - 1) {
			n = room - used - 1;
			r->argv_truncated = true;
		}
		memcpy(r->argv_buf + used, argv[i], n);
		r->argv_buf[used + n] = '\0';
		/* Whoever reads the report (root's terminal) gets no control
		 * character from the words the agent typed. */
		sbx_text_scrub(r->argv_buf + used);
		used += n + 1;
		r->argc++;
	}
}

void sbx_report_init(struct sbx_report *r, const struct sbx_profile *p)
{
	unsigned f;

	memset(r, 0, sizeof(*r));
	sbx_strlcpy(r->profile_name, sizeof(r->profile_name), p->name);
	sbx_profile_hash(p, r->profile_hash);
	r->isolation = p->isolation;
	r->min_level = p->min_level;
	r->required = sbx_require_for_network(p->require, p->network) & SBX_G_ALL;
	r->host_read = p->host_read;
	r->host_write = p->host_write;
	r->network = p->network;
	r->command = p->command;
	r->home = p->home;
	r->n_deny_read = p->n_deny_read;
	r->exit_status = -1;

	if (p->isolation == SBX_ISOLATION_UNCONFINED) {
		/* Even an unconfined session gets a clean environment and
		 * only fds 0-2: those cost nothing and stop accidental leaks. */
		r->entry[SBX_F_ENV_SCRUB].requested = true;
		r->entry[SBX_F_FD_HYGIENE].requested = true;
		return;
	}
	for (f = 0; f < SBX_F_COUNT; f++)
		r->entry[f].requested = true;
	/* network "gated" behaves as deny (sbx.h). */
	r->entry[SBX_F_NETNS].requested = p->network != SBX_ACCESS_ALLOW;
	r->entry[SBX_F_LANDLOCK_NET].requested = p->network != SBX_ACCESS_ALLOW;
	r->entry[SBX_F_UNIX_SOCKETS].requested = p->network != SBX_ACCESS_ALLOW;
	r->entry[SBX_F_DENY_READ].requested = p->n_deny_read > 0;
	r->entry[SBX_F_COMMAND_GATE].requested = p->command != SBX_ACCESS_ALLOW;
	/* W^X under the gate, unless the profile lets programs JIT: then the
	 * entry says so instead (docs/design.md section 6). */
	r->entry[SBX_F_MEMORY_WX].requested = p->command != SBX_ACCESS_ALLOW &&
					      p->gate_jit != SBX_ACCESS_ALLOW;
	if (p->command != SBX_ACCESS_ALLOW && p->gate_jit == SBX_ACCESS_ALLOW)
		sbx_strlcpy(r->entry[SBX_F_MEMORY_WX].detail,
			    sizeof(r->entry[SBX_F_MEMORY_WX].detail), SBX_WX_JIT_ALLOWED);
	r->entry[SBX_F_NETWORK_EGRESS].requested = p->network == SBX_NETWORK_PROXY;
	if (p->network == SBX_NETWORK_PROXY)
		sbx_egress_list_format(p, r->egress_list, sizeof(r->egress_list),
				       &r->egress_list_truncated);
	r->entry[SBX_F_HOME].requested = p->home != SBX_HOME_REAL;
	r->entry[SBX_F_CGROUP_LIMITS].requested =
		(p->limits.set_mask & ((1u << SBX_LIMIT_MEMORY_MAX) | (1u << SBX_LIMIT_PIDS_MAX) |
				       (1u << SBX_LIMIT_CPU_MAX))) != 0;
}

void sbx_report_set_requested(struct sbx_report *r, enum sbx_feature f,
			      bool requested, const char *why)
{
	if ((unsigned)f >= SBX_F_COUNT)
		return;
	r->entry[f].requested = requested;
	if (why)
		snprintf(r->entry[f].detail, sizeof(r->entry[f].detail), "%s", why);
}

void sbx_report_set(struct sbx_report *r, enum sbx_feature f, bool achieved,
		    bool verified, const char *fmt, ...)
{
	struct sbx_report_entry *e;
	char detail[sizeof(e->detail)] = "";
	va_list ap;

	if ((unsigned)f >= SBX_F_COUNT)
		return;
	e = &r->entry[f];
	if (fmt) {
		/* Format into a copy first: the caller may pass e->detail. */
		va_start(ap, fmt);
		vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
		/* Paths and kernel text may carry anything; the report is
		 * read on terminals, and its reader refuses control bytes. */
		sbx_text_scrub(detail);
	}
	if (verified && !achieved) {
		/* A proof of something not in force is a bug in the caller:
		 * fail closed and leave a trace of it. */
		size_t len = strlen(detail);

		snprintf(detail + len, sizeof(detail) - len,
			 "%sverified without achieved: recorded as neither",
			 len ? "; " : "");
		verified = false;
	}
	e->achieved = achieved;
	e->verified = verified;
	memcpy(e->detail, detail, sizeof(e->detail));
}

/* ---- the verdict ------------------------------------------------------------ */

/* Achieved and proven by a canary: the only thing a guarantee may rest on. */
bool sbx_report_holds(const struct sbx_report *r, enum sbx_feature f)
{
	return r->entry[f].achieved && r->entry[f].verified;
}

static uint32_t compute_guarantees(const struct sbx_report *r)
{
	uint32_t g = 0;
	bool net_denied = r->network != SBX_ACCESS_ALLOW, boundary;

	if (sbx_report_holds(r, SBX_F_PIDNS) &&
	    (sbx_report_holds(r, SBX_F_LANDLOCK_SCOPE) || sbx_report_holds(r, SBX_F_SECCOMP)))
		g |= SBX_G_PROCESS_BOUNDARY;
	/* host_write allow means there is no write boundary to speak of.
	 * Landlock alone does not hold one: up to ABI 9 it has no right for
	 * chmod, chown, utimes, xattrs or file flags, so a host file the
	 * agent owns stays changeable; the read-only mount view does hold it
	 * (EROFS for all of them). */
	if (r->host_write != SBX_ACCESS_ALLOW && sbx_report_holds(r, SBX_F_MOUNT_VIEW))
		g |= SBX_G_WRITE_BOUNDARY;
	if ((r->host_read == SBX_ACCESS_DENY && sbx_report_holds(r, SBX_F_LANDLOCK_FS)) ||
	    (r->host_read == SBX_ACCESS_ALLOW && r->n_deny_read > 0 &&
	     sbx_report_holds(r, SBX_F_DENY_READ)))
		g |= SBX_G_READ_BOUNDARY;
	/* Pathname unix sockets cross every network namespace: a host
	 * daemon's socket is part of the network boundary too. */
	boundary = net_denied && sbx_report_holds(r, SBX_F_UNIX_SOCKETS) &&
		   (sbx_report_holds(r, SBX_F_NETNS) ||
		    (sbx_report_holds(r, SBX_F_LANDLOCK_NET) && sbx_report_holds(r, SBX_F_SECCOMP)));
	/* network = proxy with its bridge up: the listed destinations are
	 * reached, so nothing is a boundary but the list, and the list holds
	 * only where the rest of the boundary does (no host socket, no route
	 * of the sandbox's own). Without the bridge such a session reaches
	 * exactly what a deny session reaches. */
	if (boundary && r->network == SBX_NETWORK_PROXY && r->entry[SBX_F_NETWORK_EGRESS].achieved) {
		if (sbx_report_holds(r, SBX_F_NETWORK_EGRESS) && sbx_report_holds(r, SBX_F_NETNS))
			g |= SBX_G_NETWORK_EGRESS;
	} else if (boundary) {
		g |= SBX_G_NETWORK_BOUNDARY;
	}
	if (sbx_report_holds(r, SBX_F_ENV_SCRUB))
		g |= SBX_G_ENV_SCRUB;
	if (sbx_report_holds(r, SBX_F_HOME))
		g |= SBX_G_HOME_ISOLATION;
	/* Only the allow-list's code runs: no other file is executable, and
	 * (unless the profile allows a JIT) no memory becomes code either. */
	if (r->command != SBX_ACCESS_ALLOW && sbx_report_holds(r, SBX_F_COMMAND_GATE) &&
	    (!r->entry[SBX_F_MEMORY_WX].requested || sbx_report_holds(r, SBX_F_MEMORY_WX)))
		g |= SBX_G_EXEC_BOUNDARY;
	if (sbx_report_holds(r, SBX_F_NO_NEW_PRIVS) && sbx_report_holds(r, SBX_F_CAPS))
		g |= SBX_G_NO_PRIVILEGE_GAIN;
	if (sbx_report_holds(r, SBX_F_SECCOMP))
		g |= SBX_G_SYSCALL_FILTER;
	/* The profile's limits: every process's, and when it asks for them,
	 * the whole session's. */
	if (sbx_report_holds(r, SBX_F_RLIMITS) &&
	    (!r->entry[SBX_F_CGROUP_LIMITS].requested || sbx_report_holds(r, SBX_F_CGROUP_LIMITS)))
		g |= SBX_G_RESOURCE_LIMITS;
	return g;
}

/* The guarantees a floor can count on: network_boundary (nothing leaves)
 * is stronger than network_egress (only the list leaves). */
static uint32_t guarantees_met(const struct sbx_report *r)
{
	uint32_t g = r->guarantees;

	if (g & SBX_G_NETWORK_BOUNDARY)
		g |= SBX_G_NETWORK_EGRESS;
	return g;
}

/*
 * What each guarantee needs, in the shape compute_guarantees() decides it,
 * for naming what is missing: every need must hold, and a need holds when
 * one of its ways does (a way: its features all hold). Naming every input
 * that did not hold would name an alternative the session never took
 * (landlock_net, not requested behind a private network namespace) as if
 * it were missing too.
 */
struct need {
	enum sbx_feature way[2][2];
	unsigned char n[2];	/* features in each way; n[1] 0: one way only */
	bool if_requested;	/* needed only where the profile asked for it */
};

static const struct need *guarantee_needs(uint32_t g, size_t *count)
{
#define ONE(f) { .way = { { f } }, .n = { 1, 0 } }
	static const struct need process[] = {
		ONE(SBX_F_PIDNS),
		{ .way = { { SBX_F_LANDLOCK_SCOPE }, { SBX_F_SECCOMP } }, .n = { 1, 1 } } };
	static const struct need write[] = { ONE(SBX_F_MOUNT_VIEW) };
	static const struct need read_deny[] = { ONE(SBX_F_LANDLOCK_FS) };
	static const struct need net[] = {
		ONE(SBX_F_UNIX_SOCKETS),
		{ .way = { { SBX_F_NETNS }, { SBX_F_LANDLOCK_NET, SBX_F_SECCOMP } },
		  .n = { 1, 2 } } };
	static const struct need env[] = { ONE(SBX_F_ENV_SCRUB) };
	static const struct need home[] = { ONE(SBX_F_HOME) };
	static const struct need exec[] = {
		ONE(SBX_F_COMMAND_GATE),
		{ .way = { { SBX_F_MEMORY_WX } }, .n = { 1, 0 }, .if_requested = true } };
	static const struct need nopriv[] = { ONE(SBX_F_NO_NEW_PRIVS), ONE(SBX_F_CAPS) };
	static const struct need sys[] = { ONE(SBX_F_SECCOMP) };
	static const struct need res[] = {
		ONE(SBX_F_RLIMITS),
		{ .way = { { SBX_F_CGROUP_LIMITS } }, .n = { 1, 0 }, .if_requested = true } };
	static const struct need egress[] = {
		ONE(SBX_F_NETNS), ONE(SBX_F_UNIX_SOCKETS), ONE(SBX_F_NETWORK_EGRESS) };
#undef ONE

#define RET(a) do { *count = ARRAY_SIZE(a); return a; } while (0)
	switch (g) {
	case SBX_G_PROCESS_BOUNDARY: RET(process);
	case SBX_G_WRITE_BOUNDARY: RET(write);
	case SBX_G_READ_BOUNDARY: RET(read_deny);
	case SBX_G_NETWORK_BOUNDARY: RET(net);
	case SBX_G_ENV_SCRUB: RET(env);
	case SBX_G_HOME_ISOLATION: RET(home);
	case SBX_G_EXEC_BOUNDARY: RET(exec);
	case SBX_G_NO_PRIVILEGE_GAIN: RET(nopriv);
	case SBX_G_SYSCALL_FILTER: RET(sys);
	case SBX_G_RESOURCE_LIMITS: RET(res);
	case SBX_G_NETWORK_EGRESS: RET(egress);
	}
#undef RET
	*count = 0;
	return NULL;
}

/* "name (detail)" for an entry that does not hold. */
static void describe_missing(struct sbx_sbuf *b, const struct sbx_report *r,
			     enum sbx_feature f)
{
	const struct sbx_report_entry *e = &r->entry[f];

	if (!e->detail[0])
		sbx_sbuf_fmt(b, "%s (%s)", sbx_feature_name(f),
			 e->achieved ? "not verified" : "not achieved");
	else if (e->achieved)
		sbx_sbuf_fmt(b, "%s (not verified: %s)", sbx_feature_name(f), e->detail);
	else
		sbx_sbuf_fmt(b, "%s (%s)", sbx_feature_name(f), e->detail);
}

static bool way_holds(const struct sbx_report *r, const struct need *nd, unsigned w)
{
	for (unsigned k = 0; k < nd->n[w]; k++)
		if (!sbx_report_holds(r, nd->way[w][k]))
			return false;
	return true;
}

/* A way the session could have taken: the profile asked for all of it. */
static bool way_requested(const struct sbx_report *r, const struct need *nd, unsigned w)
{
	for (unsigned k = 0; k < nd->n[w]; k++)
		if (!r->entry[nd->way[w][k]].requested)
			return false;
	return true;
}

/* The missing parts of one need that does not hold: "a (why)", or for a
 * need with two ways "a (why) or else b (why) and c (why)", each way
 * named only if the session could have taken it (the first one always,
 * when neither could: something is named). Returns false if it holds. */
static bool describe_need(struct sbx_sbuf *b, const struct sbx_report *r,
			  const struct need *nd, bool first)
{
	bool named = false, take[2];

	if (nd->if_requested && !r->entry[nd->way[0][0]].requested)
		return false;
	if (way_holds(r, nd, 0) || (nd->n[1] && way_holds(r, nd, 1)))
		return false;
	take[1] = nd->n[1] && way_requested(r, nd, 1);
	take[0] = way_requested(r, nd, 0) || !take[1];
	for (unsigned w = 0; w < 2; w++) {
		bool in_way = false;

		if (!take[w])
			continue;
		for (unsigned k = 0; k < nd->n[w]; k++) {
			if (sbx_report_holds(r, nd->way[w][k]))
				continue;
			sbx_sbuf_str(b, in_way ? " and " : named ? " or else " : first ? ": " : ", ");
			in_way = named = true;
			describe_missing(b, r, nd->way[w][k]);
		}
	}
	return named;
}

static void build_refusal(struct sbx_report *r)
{
	struct sbx_sbuf b;
	bool first = true;
	unsigned f, i;

	sbx_sbuf_init(&b, r->refusal, sizeof(r->refusal));
	if (r->level < r->min_level) {
		sbx_sbuf_fmt(&b, "level %s below floor %s", sbx_level_name(r->level),
			 sbx_level_name(r->min_level));
		if (r->isolation == SBX_ISOLATION_UNCONFINED)
			sbx_sbuf_str(&b, ": the profile is unconfined");
		for (f = 0; f < SBX_F_COUNT; f++) {
			if (!r->entry[f].requested || sbx_report_holds(r, (enum sbx_feature)f))
				continue;
			sbx_sbuf_str(&b, first ? ": missing " : ", ");
			first = false;
			describe_missing(&b, r, (enum sbx_feature)f);
		}
		first = false;
	}
	for (i = 0; i < SBX_G_COUNT; i++) {
		uint32_t g = 1u << i;
		const struct need *needs;
		size_t n, k;
		bool any = false;

		if (!(r->required & g) || (guarantees_met(r) & g))
			continue;
		if (!first)
			sbx_sbuf_str(&b, "; ");
		first = false;
		sbx_sbuf_fmt(&b, "required guarantee %s not held",
			 sbx_guarantee_name((enum sbx_guarantee)g));
		/* Profile choices that rule a guarantee out on their own. */
		if (g == SBX_G_WRITE_BOUNDARY && r->host_write == SBX_ACCESS_ALLOW) {
			sbx_sbuf_str(&b, ": the profile allows host writes");
			continue;
		}
		if ((g == SBX_G_NETWORK_BOUNDARY || g == SBX_G_NETWORK_EGRESS) &&
		    r->network == SBX_ACCESS_ALLOW) {
			sbx_sbuf_str(&b, ": the profile allows the network");
			continue;
		}
		if (g == SBX_G_NETWORK_BOUNDARY && r->network == SBX_NETWORK_PROXY &&
		    r->entry[SBX_F_NETWORK_EGRESS].achieved) {
			sbx_sbuf_str(&b, ": the profile's egress list is reached (network = proxy); "
				     "require network_egress instead");
			continue;
		}
		if (g == SBX_G_EXEC_BOUNDARY && r->command == SBX_ACCESS_ALLOW) {
			sbx_sbuf_str(&b, ": the profile allows every command");
			continue;
		}
		if (g == SBX_G_READ_BOUNDARY && r->host_read != SBX_ACCESS_DENY) {
			if (r->n_deny_read == 0 || r->host_read != SBX_ACCESS_ALLOW) {
				sbx_sbuf_str(&b, ": the profile allows host reads with no deny_read entries");
				continue;
			}
			sbx_sbuf_str(&b, ": ");
			describe_missing(&b, r, SBX_F_DENY_READ);
			continue;
		}
		needs = guarantee_needs(g, &n);
		for (k = 0; k < n; k++)
			if (describe_need(&b, r, &needs[k], !any))
				any = true;
	}
}

void sbx_report_finish(struct sbx_report *r)
{
	bool all = true;
	unsigned f;

	r->guarantees = compute_guarantees(r);
	for (f = 0; f < SBX_F_COUNT; f++) {
		if (r->entry[f].requested && !sbx_report_holds(r, (enum sbx_feature)f))
			all = false;
	}
	if (r->isolation == SBX_ISOLATION_UNCONFINED ||
	    (r->guarantees & ~(uint32_t)SBX_G_ENV_SCRUB) == 0)
		r->level = SBX_LEVEL_NONE;
	else if (all)
		r->level = SBX_LEVEL_FULL;
	else
		r->level = SBX_LEVEL_DEGRADED;
	r->floor_met = r->level >= r->min_level &&
		       (guarantees_met(r) & r->required) == r->required;
	if (r->floor_met)
		r->refusal[0] = '\0';
	else
		build_refusal(r);
}
