/* SPDX-License-Identifier: BSD-3-Clause */
/* The profile model: defaults, names and parsers, expansion, validation, path access. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const access_names[] = { "deny", "gated", "allow" };
static const char *const home_names[] = { "ephemeral", "isolated", "real" };
static const char *const isolation_names[] = { "sandboxed", "unconfined" };
static const char *const level_names[] = { "none", "degraded", "full" };
static const char *const guarantee_names[SBX_G_COUNT] = {
	"process_boundary", "write_boundary", "read_boundary",
	"network_boundary", "env_scrub", "home_isolation", "exec_boundary",
	"no_privilege_gain", "syscall_filter", "resource_limits", "network_egress",
};
static const char *const limit_names[SBX_LIMIT_COUNT] = {
	"nproc", "nofile", "fsize", "as", "cpu", "core", "session_time",
	"max_sessions", "tmp_size", "memory_max", "pids_max", "cpu_max",
};

/* Secrets hidden even when host_read is allow: shadow files, sshd host
 * keys, root's home and the sudo policy. */
static const char *const default_deny_read[] = {
	"/etc/shadow", "/etc/gshadow", "/etc/ssh", "/root", "/etc/sudoers",
	"/etc/sudoers.d",
};

static void limit_set(struct sbx_limits *l, enum sbx_limit which, uint64_t v)
{
	l->value[which] = v;
	l->set_mask |= 1u << which;
}

static const struct sbx_list_field profile_lists[] = {
	SBX_LIST_FIELD(struct sbx_profile, roots, n_roots),
	SBX_LIST_FIELD(struct sbx_profile, deny_read, n_deny_read),
	SBX_LIST_FIELD(struct sbx_profile, gate_allow, n_gate),
	SBX_LIST_FIELD(struct sbx_profile, unix_allow, n_unix_allow),
	SBX_LIST_FIELD(struct sbx_profile, egress, n_egress),
	SBX_LIST_FIELD(struct sbx_profile, services, n_services),
};

void sbx_profile_copy(struct sbx_profile *dst, const struct sbx_profile *src)
{
	sbx_copy_used(dst, src, sizeof(*dst), profile_lists, ARRAY_SIZE(profile_lists));
}

void sbx_profile_clear(struct sbx_profile *p)
{
	sbx_clear_used(p, sizeof(*p), profile_lists, ARRAY_SIZE(profile_lists));
}

/* What the default and the open profile share: the workspace and every
 * command allowed, the host readable, bash. */
static void set_base(struct sbx_profile *p, const char *name)
{
	sbx_strlcpy(p->name, sizeof(p->name), name);
	p->workspace_read = SBX_ACCESS_ALLOW;
	p->workspace_write = SBX_ACCESS_ALLOW;
	p->host_read = SBX_ACCESS_ALLOW;
	p->command = SBX_ACCESS_ALLOW;
	sbx_strlcpy(p->shell, sizeof(p->shell), "/bin/bash");
}

static void set_default(struct sbx_profile *p)
{
	size_t i;

	set_base(p, "default");
	p->gate_jit = SBX_ACCESS_DENY;
	p->host_write = SBX_ACCESS_DENY;
	p->network = SBX_ACCESS_DENY;
	p->home = SBX_HOME_EPHEMERAL;
	p->isolation = SBX_ISOLATION_SANDBOXED;
	for (i = 0; i < ARRAY_SIZE(default_deny_read); i++)
		sbx_strlcpy(p->deny_read[i], sizeof(p->deny_read[i]),
			    default_deny_read[i]);
	p->n_deny_read = ARRAY_SIZE(default_deny_read);
	limit_set(&p->limits, SBX_LIMIT_NPROC, 512);
	limit_set(&p->limits, SBX_LIMIT_NOFILE, 1024);
	limit_set(&p->limits, SBX_LIMIT_CORE, 0);
	limit_set(&p->limits, SBX_LIMIT_TMP_SIZE, SBX_DEFAULT_TMP_SIZE);
	limit_set(&p->limits, SBX_LIMIT_MAX_SESSIONS, 8);
	p->min_level = SBX_LEVEL_DEGRADED;
	p->require = SBX_G_WRITE_BOUNDARY | SBX_G_NO_PRIVILEGE_GAIN |
		     SBX_G_SYSCALL_FILTER | SBX_G_ENV_SCRUB |
		     SBX_G_NETWORK_BOUNDARY;
}

uint32_t sbx_require_for_network(uint32_t require, enum sbx_access network)
{
	if (network == SBX_NETWORK_PROXY && (require & SBX_G_NETWORK_BOUNDARY))
		require = (require & ~(uint32_t)SBX_G_NETWORK_BOUNDARY) | SBX_G_NETWORK_EGRESS;
	return require;
}

/* The identity of Restrict: every field at its widest, so that
 * Restrict(p, open) == p field by field. Isolation is unconfined with the
 * acknowledgement, because "sandboxed beats unconfined" means only an
 * unconfined ceiling leaves a requested isolation as it is. */
static void set_open(struct sbx_profile *p)
{
	set_base(p, "open");
	p->gate_jit = SBX_ACCESS_ALLOW;
	p->host_write = SBX_ACCESS_ALLOW;
	p->network = SBX_ACCESS_ALLOW;
	p->home = SBX_HOME_REAL;
	p->isolation = SBX_ISOLATION_UNCONFINED;
	p->ack_unconfined = true;
	p->unix_allow_any = true;
	p->egress_any = true;
	p->min_level = SBX_LEVEL_NONE;
	p->require = 0;
}

void sbx_profile_init_default(struct sbx_profile *p)
{
	memset(p, 0, sizeof(*p));
	set_default(p);
}

void sbx_profile_reset_default(struct sbx_profile *p)
{
	sbx_profile_clear(p);
	set_default(p);
}

void sbx_profile_init_open(struct sbx_profile *p)
{
	memset(p, 0, sizeof(*p));
	set_open(p);
}

void sbx_profile_reset_open(struct sbx_profile *p)
{
	sbx_profile_clear(p);
	set_open(p);
}

/* ---- names and parsers --------------------------------------------------- */

static int parse_name(const char *s, const char *const *names, size_t n,
		      int *out)
{
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sbx_access_name(enum sbx_access a)
{
	return (unsigned)a < ARRAY_SIZE(access_names) ? access_names[a] : "invalid";
}

const char *sbx_home_name(enum sbx_home h)
{
	return (unsigned)h < ARRAY_SIZE(home_names) ? home_names[h] : "invalid";
}

const char *sbx_isolation_name(enum sbx_isolation i)
{
	return (unsigned)i < ARRAY_SIZE(isolation_names) ? isolation_names[i] : "invalid";
}

const char *sbx_level_name(enum sbx_level l)
{
	return (unsigned)l < ARRAY_SIZE(level_names) ? level_names[l] : "invalid";
}

const char *sbx_guarantee_name(enum sbx_guarantee g)
{
	unsigned v = (unsigned)g, i;

	if (v == 0 || (v & (v - 1)) != 0 || (v & ~SBX_G_ALL) != 0)
		return "invalid";
	for (i = 0; !(v & 1u); i++)
		v >>= 1;
	return guarantee_names[i];
}

const char *sbx_limit_name(enum sbx_limit l)
{
	return (unsigned)l < SBX_LIMIT_COUNT ? limit_names[l] : "invalid";
}

/* name -> value for the enums whose names are a table of all values.
 * (type names a type: it cannot be parenthesised.) */
/* NOLINTBEGIN(bugprone-macro-parentheses) */
#define DEFINE_NAME_PARSE(fn, type, table)                                      \
	int fn(const char *s, type *out)                                        \
	{                                                                       \
		int v, r = parse_name(s, table, ARRAY_SIZE(table), &v);          \
                                                                                \
		if (r == 0)                                                     \
			*out = (type)v;                                         \
		return r;                                                       \
	}
/* NOLINTEND(bugprone-macro-parentheses) */

DEFINE_NAME_PARSE(sbx_access_parse, enum sbx_access, access_names)

static const char *const network_names[] = { "deny", "proxy", "allow" };

const char *sbx_network_name(enum sbx_access a)
{
	return (unsigned)a < ARRAY_SIZE(network_names) ? network_names[a] : "invalid";
}

/* "gated" was the middle value's name before network = proxy, and meant
 * "as deny": read as proxy it still reaches nothing unless the profile
 * also lists egress_allow entries, so configs that say it keep their
 * meaning. */
int sbx_network_parse(const char *s, enum sbx_access *out)
{
	int v, r;

	if (s && strcmp(s, "gated") == 0) {
		*out = SBX_NETWORK_PROXY;
		return 0;
	}
	r = parse_name(s, network_names, ARRAY_SIZE(network_names), &v);
	if (r == 0)
		*out = (enum sbx_access)v;
	return r;
}

DEFINE_NAME_PARSE(sbx_home_parse, enum sbx_home, home_names)

DEFINE_NAME_PARSE(sbx_isolation_parse, enum sbx_isolation, isolation_names)

DEFINE_NAME_PARSE(sbx_level_parse, enum sbx_level, level_names)

int sbx_guarantee_parse(const char *s, enum sbx_guarantee *out)
{
	int v, r = parse_name(s, guarantee_names, SBX_G_COUNT, &v);

	if (r == 0)
		*out = (enum sbx_guarantee)(1u << v);
	return r;
}

DEFINE_NAME_PARSE(sbx_limit_parse, enum sbx_limit, limit_names)

bool sbx_limit_is_bytes(enum sbx_limit l)
{
	return l == SBX_LIMIT_FSIZE || l == SBX_LIMIT_AS ||
	       l == SBX_LIMIT_CORE || l == SBX_LIMIT_TMP_SIZE || l == SBX_LIMIT_MEMORY_MAX;
}

/* ---- expansion ----------------------------------------------------------- */

int sbx_path_expand(const char *tmpl, const char *user, const char *home,
		    char *out, size_t size)
{
	size_t used = 0;
	const char *s;

	if (size == 0)
		return -ENAMETOOLONG;
	for (s = tmpl; *s; s++) {
		const char *add;
		char one[2] = { 0, 0 };
		size_t n;

		if (*s != '%') {
			one[0] = *s;
			add = one;
		} else if (s[1] == 'u') {
			add = user;
			s++;
		} else if (s[1] == 'h' && s == tmpl) {
			/* The home is absolute: only a prefix makes sense. */
			add = home;
			s++;
		} else if (s[1] == '%') {
			add = "%";
			s++;
		} else {
			out[0] = '\0';
			return -EINVAL;
		}
		n = strlen(add);
		if (n >= size - used) {
			out[0] = '\0';
			return -ENAMETOOLONG;
		}
		memcpy(out + used, add, n);
		used += n;
	}
	out[used] = '\0';
	return 0;
}

static int expand_one(char *path, size_t size, bool may_be_empty,
		      const char *what, const char *user, const char *home,
		      struct sbx_error *err)
{
	char buf[SBX_PATH_MAX];
	int r;

	if (memchr(path, '\0', size) == NULL)
		return sbx_error_set(err, EINVAL, "expand(%s): not NUL-terminated", what);
	if (path[0] == '\0' && may_be_empty)
		return 0;
	r = sbx_path_expand(path, user, home, buf, sizeof(buf));
	if (r == -EINVAL)
		return sbx_error_set(err, EINVAL,
				     "expand(%s %s): bad %% sequence (only %%u, %%%%, and %%h at the start)",
				     what, path);
	if (r < 0 || strlen(buf) >= size)
		return sbx_error_set(err, ENAMETOOLONG,
				     "expand(%s %s): longer than %d bytes", what, path,
				     SBX_PATH_MAX - 1);
	if (!sbx_path_is_canonical(buf))
		return sbx_error_set(err, EINVAL,
				     "expand(%s %s): '%s' is not an absolute canonical path",
				     what, path, buf);
	memcpy(path, buf, strlen(buf) + 1);
	return 0;
}

int sbx_profile_expand(struct sbx_profile *p, const char *user,
		       const char *home, struct sbx_error *err)
{
	struct sbx_profile *tmp = NULL;
	size_t i;
	int r;

	if (!user || !home)
		return sbx_error_set(err, EINVAL, "expand: user and home are required");
	/* %u and %h must not inject path structure. */
	if (user[0] == '\0' || strchr(user, '/') || strstr(user, "..") ||
	    strcmp(user, ".") == 0 || strlen(user) >= SBX_NAME_MAX)
		return sbx_error_set(err, EINVAL,
				     "expand(user '%.64s'): not a safe path component", user);
	if (!sbx_path_is_canonical(home) || strlen(home) >= SBX_PATH_MAX)
		return sbx_error_set(err, EINVAL,
				     "expand(home '%.256s'): not an absolute canonical path", home);
	if (p->n_roots > SBX_MAX_ROOTS || p->n_deny_read > SBX_MAX_DENY ||
	    p->n_gate > SBX_MAX_GATE || p->n_unix_allow > SBX_MAX_UNIX_ALLOW)
		return sbx_error_set(err, EINVAL, "expand(%s): list counts out of range",
				     p->name);
	tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return sbx_error_set(err, ENOMEM, "expand(%s): out of memory", p->name);
	sbx_profile_copy(tmp, p);
	r = expand_one(tmp->workspace_root, sizeof(tmp->workspace_root), true,
		       "workspace_root", user, home, err);
	if (r < 0)
		goto out;
	r = expand_one(tmp->shell, sizeof(tmp->shell), true, "shell", user, home, err);
	if (r < 0)
		goto out;
	for (i = 0; i < tmp->n_roots; i++) {
		r = expand_one(tmp->roots[i].path, sizeof(tmp->roots[i].path), false,
			       "root", user, home, err);
		if (r < 0)
			goto out;
	}
	for (i = 0; i < tmp->n_deny_read; i++) {
		r = expand_one(tmp->deny_read[i], sizeof(tmp->deny_read[i]), false,
			       "deny_read", user, home, err);
		if (r < 0)
			goto out;
	}
	for (i = 0; i < tmp->n_gate; i++) {
		r = expand_one(tmp->gate_allow[i], sizeof(tmp->gate_allow[i]), false,
			       "gate_allow", user, home, err);
		if (r < 0)
			goto out;
	}
	for (i = 0; i < tmp->n_unix_allow; i++) {
		r = expand_one(tmp->unix_allow[i], sizeof(tmp->unix_allow[i]), false,
			       "unix_allow", user, home, err);
		if (r < 0)
			goto out;
	}
	sbx_profile_copy(p, tmp);
	r = 0;
out:
	free(tmp);
	return r;
}

/* ---- validation ---------------------------------------------------------- */

static bool access_ok(enum sbx_access a)
{
	return (unsigned)a <= SBX_ACCESS_ALLOW;
}

static bool str_ok(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static int validate(const struct sbx_profile *p, bool ceiling,
		    struct sbx_error *err)
{
	const char *n;
	size_t i, j;

	if (!str_ok(p->name, sizeof(p->name)))
		return sbx_error_set(err, EINVAL, "validate: profile name not terminated");
	n = p->name;
	if (!str_ok(p->workspace_root, sizeof(p->workspace_root)) ||
	    !str_ok(p->shell, sizeof(p->shell)))
		return sbx_error_set(err, EINVAL, "validate(%s): path not terminated", n);
	if (!access_ok(p->workspace_read) || !access_ok(p->workspace_write) ||
	    !access_ok(p->host_read) || !access_ok(p->host_write) ||
	    !access_ok(p->network) || !access_ok(p->command))
		return sbx_error_set(err, EINVAL, "validate(%s): access value out of range", n);
	if (p->gate_jit != SBX_ACCESS_DENY && p->gate_jit != SBX_ACCESS_ALLOW)
		return sbx_error_set(err, EINVAL, "validate(%s): gate_jit is neither allow nor deny", n);
	if ((unsigned)p->home > SBX_HOME_REAL)
		return sbx_error_set(err, EINVAL, "validate(%s): home out of range", n);
	if ((unsigned)p->isolation > SBX_ISOLATION_UNCONFINED)
		return sbx_error_set(err, EINVAL, "validate(%s): isolation out of range", n);
	if ((unsigned)p->min_level > SBX_LEVEL_FULL)
		return sbx_error_set(err, EINVAL, "validate(%s): min_level out of range", n);
	if (p->require & ~SBX_G_ALL)
		return sbx_error_set(err, EINVAL, "validate(%s): unknown guarantee bits 0x%x",
				     n, p->require & ~SBX_G_ALL);
	if (p->limits.set_mask & ~((1u << SBX_LIMIT_COUNT) - 1))
		return sbx_error_set(err, EINVAL, "validate(%s): unknown limit bits", n);
	if (p->n_roots > SBX_MAX_ROOTS || p->n_deny_read > SBX_MAX_DENY ||
	    p->n_gate > SBX_MAX_GATE || p->n_services > SBX_MAX_SERVICES ||
	    p->n_unix_allow > SBX_MAX_UNIX_ALLOW || p->n_egress > SBX_MAX_EGRESS)
		return sbx_error_set(err, E2BIG, "validate(%s): list counts out of range", n);
	if (p->unix_allow_any && p->n_unix_allow)
		return sbx_error_set(err, EINVAL, "validate(%s): unix_allow both open and listed", n);
	if (p->egress_any && p->n_egress)
		return sbx_error_set(err, EINVAL, "validate(%s): egress_allow both open and listed", n);
	if (p->isolation == SBX_ISOLATION_UNCONFINED && !p->ack_unconfined)
		return sbx_error_set(err, EINVAL,
				     "validate(%s): isolation unconfined requires ack_unconfined = yes", n);
	if (p->isolation == SBX_ISOLATION_SANDBOXED && p->ack_unconfined)
		return sbx_error_set(err, EINVAL,
				     "validate(%s): ack_unconfined set on a sandboxed profile", n);
	if (!ceiling && p->workspace_root[0] == '\0')
		return sbx_error_set(err, EINVAL, "validate(%s): workspace_root is not set", n);
	for (i = 0; i < p->n_roots; i++) {
		const struct sbx_root *a = &p->roots[i];

		if (!str_ok(a->path, sizeof(a->path)) || a->path[0] == '\0')
			return sbx_error_set(err, EINVAL, "validate(%s): root %zu is empty", n, i);
		if (!access_ok(a->read) || !access_ok(a->write))
			return sbx_error_set(err, EINVAL, "validate(%s): root %s: access out of range",
					     n, a->path);
		if (strcmp(a->path, p->workspace_root) == 0)
			return sbx_error_set(err, EINVAL,
					     "validate(%s): root %s is the workspace root", n, a->path);
		for (j = 0; j < i; j++) {
			const struct sbx_root *b = &p->roots[j];

			if (strcmp(a->path, b->path) == 0 &&
			    (a->read != b->read || a->write != b->write))
				return sbx_error_set(err, EINVAL,
						     "validate(%s): root %s given twice with different access",
						     n, a->path);
		}
	}
	for (i = 0; i < p->n_deny_read; i++)
		if (!str_ok(p->deny_read[i], SBX_PATH_MAX) || p->deny_read[i][0] == '\0')
			return sbx_error_set(err, EINVAL, "validate(%s): deny_read %zu is empty", n, i);
	for (i = 0; i < p->n_gate; i++)
		if (!str_ok(p->gate_allow[i], SBX_PATH_MAX) || p->gate_allow[i][0] == '\0')
			return sbx_error_set(err, EINVAL, "validate(%s): gate_allow %zu is empty", n, i);
	for (i = 0; i < p->n_unix_allow; i++)
		if (!str_ok(p->unix_allow[i], SBX_PATH_MAX) || p->unix_allow[i][0] == '\0')
			return sbx_error_set(err, EINVAL, "validate(%s): unix_allow %zu is empty", n, i);
	for (i = 0; i < p->n_egress; i++) {
		const struct sbx_egress_entry *e = &p->egress[i];

		if (!str_ok(e->host, sizeof(e->host)) || e->host[0] == '\0' || e->port == 0 ||
		    (e->wildcard && e->literal))
			return sbx_error_set(err, EINVAL, "validate(%s): egress_allow %zu is malformed",
					     n, i);
	}
	for (i = 0; i < p->n_services; i++)
		if (!str_ok(p->services[i], SBX_NAME_MAX) || p->services[i][0] == '\0')
			return sbx_error_set(err, EINVAL, "validate(%s): service %zu is empty", n, i);
	if (p->command == SBX_ACCESS_GATED && p->n_gate == 0)
		return sbx_error_set(err, EINVAL,
				     "validate(%s): command = gated needs at least one gate_allow", n);
	return 0;
}

int sbx_profile_validate(const struct sbx_profile *p, struct sbx_error *err)
{
	return validate(p, false, err);
}

int sbx_profile_validate_ceiling(const struct sbx_profile *p, struct sbx_error *err)
{
	return validate(p, true, err);
}

/* ---- path access --------------------------------------------------------- */

static enum sbx_access access_min(enum sbx_access a, enum sbx_access b)
{
	return a < b ? a : b;
}

bool sbx_profile_in_secret(const struct sbx_profile *p, const char *path)
{
	for (size_t i = 0; i < p->n_deny_read && i < SBX_MAX_DENY; i++)
		if (sbx_path_is_under(path, p->deny_read[i]))
			return true;
	return false;
}

enum sbx_access sbx_profile_access_at(const struct sbx_profile *p, const char *ws,
				      const char *path, bool want_write)
{
	enum sbx_access best = want_write ? p->host_write : p->host_read;
	size_t best_len = 0, i;
	bool found = false;

	/* A secret stays hidden whatever is nested in it: the mount view masks
	 * the whole tree and Landlock treats it as a hole. */
	if (sbx_profile_in_secret(p, path))
		return SBX_ACCESS_DENY;
	for (i = 0; i <= p->n_roots && i <= SBX_MAX_ROOTS; i++) {
		const char *prefix;
		enum sbx_access v;
		size_t len;

		if (i < p->n_roots && i < SBX_MAX_ROOTS) {
			prefix = p->roots[i].path;
			v = want_write ? p->roots[i].write : p->roots[i].read;
		} else {
			prefix = ws;
			v = want_write ? p->workspace_write : p->workspace_read;
		}
		if (!prefix || prefix[0] == '\0' || !sbx_path_is_under(path, prefix))
			continue;
		len = strlen(prefix);
		if (!found || len > best_len) {
			best = v;
			best_len = len;
			found = true;
		} else if (len == best_len) {
			best = access_min(best, v);
		}
	}
	return best;
}

enum sbx_access sbx_profile_path_access(const struct sbx_profile *p,
					const char *path, bool want_write)
{
	return sbx_profile_access_at(p, p->workspace_root, path, want_write);
}
