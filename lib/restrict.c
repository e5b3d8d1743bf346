/* SPDX-License-Identifier: BSD-3-Clause */
/* Restrict(requested, ceiling): the per-field and per-path intersection; never widens. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Paths. Let A(p) and B(p) be the access of the requested profile a and the
 * ceiling b at path p (sbx_profile_access_at). When b has no workspace root
 * (a host-wide ceiling), B is evaluated with a's workspace root standing in
 * for b's, so that b's workspace_* fields cap a's workspace tree; call that
 * B*. The result R keeps a's workspace root, the union of both deny_read
 * lists, and one root for EVERY path r in
 *     U = a.roots ∪ b.roots ∪ {a.ws, b.ws} \ {R.ws}
 * with R(r) = min(A(r), B*(r)) on each axis; R's workspace fields are
 * min(A(ws), B*(ws)) and its host fields min(a.host, b.host).
 *
 * Proof that R(p) = min(A(p), B*(p)) for every path p:
 *  - p at or under a deny_read entry of a or b: R denies (union), and so
 *    does A or B*.
 *  - otherwise let r be the longest prefix of p in U ∪ {R.ws}. Every
 *    prefix of p that A uses (a root or a.ws) is in that set, so A's
 *    longest prefix q of p is a prefix of r and is also A's longest prefix
 *    of r: A(r) = A(p). The same holds for B*. R's own longest prefix of p
 *    is r, so R(p) = R(r) = min(A(r), B*(r)) = min(A(p), B*(p)).
 *  - no prefix at all: all three fall back to their host fields.
 * This is why no root may be dropped as "redundant": the reference dropped
 * nested deny roots whose value equalled the host value, and the path then
 * inherited the enclosing allow (looprig, reference section 3).
 */

static enum sbx_access amin(enum sbx_access a, enum sbx_access b)
{
	return a < b ? a : b;
}

static bool list_has(const char (*list)[SBX_PATH_MAX], size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}

static int add_root_path(struct sbx_profile *o, const char *path,
			 const struct sbx_profile *a, const struct sbx_profile *b,
			 const char *bws, struct sbx_error *err)
{
	struct sbx_root *r;
	size_t i;

	if (path[0] == '\0' || strcmp(path, o->workspace_root) == 0)
		return 0;
	for (i = 0; i < o->n_roots; i++)
		if (strcmp(o->roots[i].path, path) == 0)
			return 0;
	if (o->n_roots >= SBX_MAX_ROOTS)
		return sbx_error_set(err, E2BIG,
				     "restrict(%s, %s): more than %d roots at %s",
				     a->name, b->name, SBX_MAX_ROOTS, path);
	r = &o->roots[o->n_roots];
	if (sbx_strlcpy(r->path, sizeof(r->path), path) < 0)
		return sbx_error_set(err, ENAMETOOLONG, "restrict: path too long");
	r->read = amin(sbx_profile_access_at(a, a->workspace_root, path, false),
		       sbx_profile_access_at(b, bws, path, false));
	r->write = amin(sbx_profile_access_at(a, a->workspace_root, path, true),
			sbx_profile_access_at(b, bws, path, true));
	o->n_roots++;
	return 0;
}

static int merge_deny(struct sbx_profile *o, const struct sbx_profile *p,
		      struct sbx_error *err)
{
	size_t i;

	for (i = 0; i < p->n_deny_read; i++) {
		if (list_has((const char (*)[SBX_PATH_MAX])o->deny_read, o->n_deny_read, p->deny_read[i]))
			continue;
		if (o->n_deny_read >= SBX_MAX_DENY)
			return sbx_error_set(err, E2BIG,
					     "restrict: more than %d deny_read entries at %s",
					     SBX_MAX_DENY, p->deny_read[i]);
		memcpy(o->deny_read[o->n_deny_read++], p->deny_read[i], SBX_PATH_MAX);
	}
	return 0;
}

static int copy_gate(struct sbx_profile *o, const struct sbx_profile *p,
		     const struct sbx_profile *other, struct sbx_error *err)
{
	size_t i;

	for (i = 0; i < p->n_gate; i++) {
		if (other && !list_has(other->gate_allow, other->n_gate, p->gate_allow[i]))
			continue;
		if (list_has((const char (*)[SBX_PATH_MAX])o->gate_allow, o->n_gate, p->gate_allow[i]))
			continue;
		if (o->n_gate >= SBX_MAX_GATE)
			return sbx_error_set(err, E2BIG,
					     "restrict: more than %d gate_allow entries",
					     SBX_MAX_GATE);
		memcpy(o->gate_allow[o->n_gate++], p->gate_allow[i], SBX_PATH_MAX);
	}
	return 0;
}

/*
 * unix_allow: each entry names a subtree (a socket, or a directory of
 * them). The intersection of two such unions is every entry of one side
 * that lies at or under an entry of the other. A side with
 * unix_allow_any restricts nothing.
 */
static int add_unix(struct sbx_profile *o, const char *path, struct sbx_error *err)
{
	for (size_t i = 0; i < o->n_unix_allow; i++)
		if (strcmp(o->unix_allow[i], path) == 0)
			return 0;
	if (o->n_unix_allow >= SBX_MAX_UNIX_ALLOW)
		return sbx_error_set(err, E2BIG, "restrict: more than %d unix_allow entries",
				     SBX_MAX_UNIX_ALLOW);
	memcpy(o->unix_allow[o->n_unix_allow++], path, SBX_PATH_MAX);
	return 0;
}

static int merge_unix(struct sbx_profile *o, const struct sbx_profile *a,
		      const struct sbx_profile *b, struct sbx_error *err)
{
	const struct sbx_profile *sides[2][2] = { { a, b }, { b, a } };
	int r;

	o->n_unix_allow = 0;
	o->unix_allow_any = a->unix_allow_any && b->unix_allow_any;
	if (o->unix_allow_any)
		return 0;
	for (size_t k = 0; k < 2; k++) {
		const struct sbx_profile *p = sides[k][0], *q = sides[k][1];

		for (size_t i = 0; i < p->n_unix_allow; i++) {
			bool keep = q->unix_allow_any;

			for (size_t j = 0; !keep && j < q->n_unix_allow; j++)
				keep = sbx_path_is_under(p->unix_allow[i], q->unix_allow[j]);
			if (keep && (r = add_unix(o, p->unix_allow[i], err)) < 0)
				return r;
		}
	}
	return 0;
}

/*
 * egress_allow: each entry is a set of destinations (one name, every
 * subdomain of a suffix, or one address, at one port). Two such sets are
 * nested or disjoint, so the intersection of two lists is every entry of
 * one side that an entry of the other covers. egress_any restricts
 * nothing.
 */
static int add_egress(struct sbx_profile *o, const struct sbx_egress_entry *e,
		      struct sbx_error *err)
{
	for (size_t i = 0; i < o->n_egress; i++)
		if (strcmp(o->egress[i].host, e->host) == 0 && o->egress[i].port == e->port)
			return 0;
	if (o->n_egress >= SBX_MAX_EGRESS)
		return sbx_error_set(err, E2BIG, "restrict: more than %d egress_allow entries",
				     SBX_MAX_EGRESS);
	o->egress[o->n_egress++] = *e;
	return 0;
}

static int merge_egress(struct sbx_profile *o, const struct sbx_profile *a,
			const struct sbx_profile *b, struct sbx_error *err)
{
	const struct sbx_profile *sides[2][2] = { { a, b }, { b, a } };
	int r;

	o->n_egress = 0;
	o->egress_any = a->egress_any && b->egress_any;
	if (o->egress_any)
		return 0;
	for (size_t k = 0; k < 2; k++) {
		const struct sbx_profile *p = sides[k][0], *q = sides[k][1];

		for (size_t i = 0; i < p->n_egress; i++) {
			bool keep = q->egress_any;

			for (size_t j = 0; !keep && j < q->n_egress; j++)
				keep = sbx_egress_entry_covers(&q->egress[j], &p->egress[i]);
			if (keep && (r = add_egress(o, &p->egress[i], err)) < 0)
				return r;
		}
	}
	return 0;
}

static bool service_in(const struct sbx_profile *p, const char *s)
{
	size_t i;

	for (i = 0; i < p->n_services; i++)
		if (strcmp(p->services[i], s) == 0)
			return true;
	return false;
}

static void merge_services(struct sbx_profile *o, const struct sbx_profile *a,
			   const struct sbx_profile *b)
{
	const struct sbx_profile *src = a->n_services ? a : b;
	size_t i;

	o->n_services = 0;
	for (i = 0; i < src->n_services; i++) {
		const char *s = src->services[i];

		if (strcmp(s, SBX_SERVICE_NONE) == 0)
			continue;
		if (a->n_services && b->n_services && !service_in(a == src ? b : a, s))
			continue;
		if (service_in(o, s))
			continue;
		memcpy(o->services[o->n_services++], s, SBX_NAME_MAX);
	}
	/* Both lists capped and nothing in common: say "none" explicitly,
	 * because an empty list means "no cap". */
	if (o->n_services == 0 && (a->n_services || b->n_services)) {
		sbx_strlcpy(o->services[0], SBX_NAME_MAX, SBX_SERVICE_NONE);
		o->n_services = 1;
	}
}

static int check_input(const struct sbx_profile *p, struct sbx_error *err)
{
	if (p->n_roots > SBX_MAX_ROOTS || p->n_deny_read > SBX_MAX_DENY ||
	    p->n_gate > SBX_MAX_GATE || p->n_services > SBX_MAX_SERVICES ||
	    p->n_egress > SBX_MAX_EGRESS || p->n_unix_allow > SBX_MAX_UNIX_ALLOW)
		return sbx_error_set(err, EINVAL, "restrict(%.*s): list counts out of range",
				     SBX_NAME_MAX - 1, p->name);
	return 0;
}

/* Long on purpose: field by field, the minimum of the two profiles; one line
 * or short block per field. */
int sbx_profile_restrict(const struct sbx_profile *a, const struct sbx_profile *b,
			 struct sbx_profile *out, struct sbx_error *err)
{
	struct sbx_profile *o = NULL;
	const char *bws;
	unsigned l;
	size_t i;
	int r;

	if (!a || !b || !out)
		return sbx_error_set(err, EINVAL, "restrict: NULL profile");
	if (out == a || out == b)
		return sbx_error_set(err, EINVAL, "restrict: output aliases an input");
	r = check_input(a, err);
	if (r == 0)
		r = check_input(b, err);
	if (r < 0)
		return r;
	/* Built in place: a profile is 170 KiB of mostly list room, and a
	 * scratch one made fresh pages fault in for every list touched. */
	o = out;
	sbx_profile_clear(o);

	memcpy(o->name, a->name, sizeof(o->name));
	memcpy(o->shell, a->shell, sizeof(o->shell));
	memcpy(o->workspace_root, a->workspace_root, sizeof(o->workspace_root));
	bws = b->workspace_root[0] ? b->workspace_root : a->workspace_root;

	o->host_read = amin(a->host_read, b->host_read);
	o->host_write = amin(a->host_write, b->host_write);
	if (o->workspace_root[0]) {
		o->workspace_read = amin(sbx_profile_access_at(a, a->workspace_root, o->workspace_root, false),
					 sbx_profile_access_at(b, bws, o->workspace_root, false));
		o->workspace_write = amin(sbx_profile_access_at(a, a->workspace_root, o->workspace_root, true),
					  sbx_profile_access_at(b, bws, o->workspace_root, true));
	} else {
		/* Two ceilings: the result caps a future workspace by both. */
		o->workspace_read = amin(a->workspace_read, b->workspace_read);
		o->workspace_write = amin(a->workspace_write, b->workspace_write);
	}
	/* deny < proxy < allow: the numbers of enum sbx_access. */
	o->network = amin(a->network, b->network);
	o->command = amin(a->command, b->command);
	/* W^X (deny) is narrower than a JIT (allow). */
	o->gate_jit = amin(a->gate_jit, b->gate_jit);
	o->home = a->home < b->home ? a->home : b->home;
	o->isolation = (a->isolation == SBX_ISOLATION_SANDBOXED ||
			b->isolation == SBX_ISOLATION_SANDBOXED) ?
		       SBX_ISOLATION_SANDBOXED : SBX_ISOLATION_UNCONFINED;
	o->ack_unconfined = a->ack_unconfined && b->ack_unconfined &&
			    o->isolation == SBX_ISOLATION_UNCONFINED;
	o->min_level = a->min_level > b->min_level ? a->min_level : b->min_level;
	o->pam_required = a->pam_required || b->pam_required;
	o->require = a->require | b->require;

	for (l = 0; l < SBX_LIMIT_COUNT; l++) {
		uint32_t bit = 1u << l;
		bool in_a = a->limits.set_mask & bit, in_b = b->limits.set_mask & bit;

		if (in_a && in_b)
			o->limits.value[l] = a->limits.value[l] < b->limits.value[l] ?
					     a->limits.value[l] : b->limits.value[l];
		else if (in_a)
			o->limits.value[l] = a->limits.value[l];
		else if (in_b)
			o->limits.value[l] = b->limits.value[l];
		else
			continue;
		o->limits.set_mask |= bit;
	}

	r = merge_deny(o, a, err);
	if (r == 0)
		r = merge_deny(o, b, err);
	if (r < 0)
		goto out;

	/* Every breakpoint of either profile becomes a root of the result. */
	for (i = 0; i < a->n_roots; i++)
		if ((r = add_root_path(o, a->roots[i].path, a, b, bws, err)) < 0)
			goto out;
	for (i = 0; i < b->n_roots; i++)
		if ((r = add_root_path(o, b->roots[i].path, a, b, bws, err)) < 0)
			goto out;
	if ((r = add_root_path(o, b->workspace_root, a, b, bws, err)) < 0)
		goto out;

	if (o->command == SBX_ACCESS_GATED) {
		if (a->command == SBX_ACCESS_GATED && b->command == SBX_ACCESS_GATED)
			r = copy_gate(o, a, b, err);
		else
			r = copy_gate(o, a->command == SBX_ACCESS_GATED ? a : b, NULL, err);
		if (r < 0)
			goto out;
		/* Nothing in common: a gate that lets nothing run is "deny". */
		if (o->n_gate == 0)
			o->command = SBX_ACCESS_DENY;
	}
	merge_services(o, a, b);
	r = merge_unix(o, a, b, err);
	if (r == 0)
		r = merge_egress(o, a, b, err);
	if (r < 0)
		goto out;

	r = 0;
out:
	if (r < 0)
		sbx_profile_clear(out);	/* no half result: every field deny, every list empty */
	return r;
}
