/* SPDX-License-Identifier: BSD-3-Clause */
/* The configuration file: parse (from memory or a trusted file), resolve inherit, select. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Grammar (one construct per line; lines end with "\n", never "\r\n"):
 *
 *   file     := line*
 *   line     := blank | comment | section | setting
 *   blank    := WS*
 *   comment  := WS* "#" any*
 *   section  := WS* "[" WS* head WS* "]" WS* trailer?
 *   head     := "global" | "ceiling" | "match" | "profile" WS+ PROFILE
 *   setting  := WS* key WS* "=" WS* value WS* trailer?
 *   trailer  := WS+ "#" any*        (a "#" not preceded by WS is data)
 *   WS       := " " | "\t"
 *
 *   [global]       state_dir = PATH, agent_shell = PATH
 *   [ceiling]      the profile keys below except inherit; starts from the
 *                  open profile (sbx_profile_init_open); workspace_root
 *                  optional
 *   [profile P]    starts from sbx_profile_init_default (or, with
 *                  "inherit = Q", from Q after Q's own inherit), then:
 *     workspace_root = TEMPLATE        (required after inherit)
 *     workspace_read | workspace_write | host_read | host_write = allow|deny
 *     network = allow|deny|gated       command = allow|deny|gated
 *     home = ephemeral|isolated|real   isolation = sandboxed|unconfined
 *     ack_unconfined = yes|no          shell = TEMPLATE
 *     root = TEMPLATE ro|rw|none       (repeatable, appends)
 *     deny_read = TEMPLATE             (repeatable, appends)
 *     gate_allow = TEMPLATE            (repeatable, appends)
 *     unix_allow = TEMPLATE            (repeatable, appends)
 *     services = NAME+                 ("-" alone: no service)
 *     nproc | nofile | cpu | session_time | max_sessions = DECIMAL
 *     fsize | as | core | tmp_size = DECIMAL[K|M|G|T]
 *     min_level = none|degraded|full   require = GUARANTEE+ | none
 *   [match]        user USER = P | group GROUP = P  (a user rule beats
 *                  group rules; a name may appear once per kind)
 *
 *   PROFILE  := [A-Za-z0-9_.-]{1,63}
 *   USER, GROUP := [A-Za-z0-9_.][A-Za-z0-9_.-]{0,31} "$"?
 *   TEMPLATE := an absolute path that is canonical (no "." / ".." / empty
 *               segments, no trailing "/") once %u -> user, %h -> home
 *               (only at the very start), %% -> "%"; no other "%"
 *               sequence. Checked lexically here (with a stand-in user and
 *               home) and again after expansion (sbx_profile_expand).
 *
 * Bytes: the file is strict UTF-8 (no overlongs, surrogates or code points
 * above U+10FFFF), holds no NUL and no "\r", lines are at most
 * SBX_CONFIG_MAX_LINE bytes, values shorter than SBX_PATH_MAX. Every error
 * names "file:line" and the key or section, and no config is returned.
 */

struct kv {
	unsigned line;
	const char *key;
	const char *val;
};

struct section {
	char name[SBX_NAME_MAX];
	unsigned line;
	size_t first, n;	/* its settings in parser.kvs */
	int state;		/* 0 unresolved, 1 resolving, 2 done */
	unsigned links;		/* inherit links from it to a profile without one */
};

enum kind { SEC_NONE, SEC_GLOBAL, SEC_CEILING, SEC_PROFILE, SEC_MATCH };

struct parser {
	const char *file;
	struct sbx_error *err;
	struct sbx_config *cfg;
	struct kv *kvs;
	size_t n_kv, cap_kv;
	struct section *secs;	/* profiles */
	size_t n_sec, cap_sec;
	struct section ceiling;
	bool have_ceiling, have_global, have_state_dir, have_agent_shell;
	enum kind cur;
};

#define WS " \t"

static bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static char *trim(char *s)
{
	char *e;

	while (is_ws(*s))
		s++;
	e = s + strlen(s);
	while (e > s && is_ws(e[-1]))
		*--e = '\0';
	return s;
}

/* Strict UTF-8 (RFC 3629): returns the offset of the first bad byte, or len. */
static size_t utf8_bad_offset(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return i;	/* continuation byte, 0xc0/0xc1, > 0xf4 */
		}
		if (len - i <= n)
			return i;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return i;	/* overlong, surrogate, out of range */
		i += n + 1;
	}
	return len;
}

static bool profile_name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' ||
		      s[i] == '-'))
			return false;
	return i >= 1 && i <= 63;
}

static bool account_name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n > 0 && s[n - 1] == '$')
		n--;
	if (n < 1 || n > 32 || s[0] == '-')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* Lexical check of a template: expand with a stand-in user and home. */
static int template_check(struct parser *ps, unsigned line, const char *key,
			  const char *val)
{
	char buf[SBX_PATH_MAX];
	int r = sbx_path_expand(val, "u", "/h", buf, sizeof(buf));

	if (r == -EINVAL)
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: key '%s': '%s': bad %% sequence (only %%u, %%%%, and %%h at the start)",
				     ps->file, line, key, val);
	if (r < 0 || strlen(val) >= SBX_PATH_MAX)
		return sbx_error_set(ps->err, ENAMETOOLONG, "%s:%u: key '%s': path too long",
				     ps->file, line, key);
	if (!sbx_path_is_canonical(buf))
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: key '%s': '%s' is not an absolute canonical path (relative, or '.', '..', '//' or trailing '/')",
				     ps->file, line, key, val);
	return 0;
}

static int plain_path_check(struct parser *ps, unsigned line, const char *key,
			    const char *val)
{
	if (!sbx_path_is_canonical(val))
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: key '%s': '%s' is not an absolute canonical path (relative, or '.', '..', '//' or trailing '/')",
				     ps->file, line, key, val);
	return 0;
}

/* ---- applying settings to a profile ------------------------------------- */

enum key {
	K_INHERIT, K_WS_ROOT, K_WS_READ, K_WS_WRITE, K_HOST_READ, K_HOST_WRITE,
	K_NETWORK, K_COMMAND, K_HOME, K_ISOLATION, K_ACK, K_SHELL, K_ROOT,
	K_DENY, K_GATE, K_SERVICES, K_MIN_LEVEL, K_REQUIRE, K_PAM_STAGE, K_UNIX_ALLOW,
	K_LIMIT0,
	K_COUNT = K_LIMIT0 + SBX_LIMIT_COUNT,
};

static const char *const key_names[K_LIMIT0] = {
	"inherit", "workspace_root", "workspace_read", "workspace_write",
	"host_read", "host_write", "network", "command", "home", "isolation",
	"ack_unconfined", "shell", "root", "deny_read", "gate_allow", "services",
	"min_level", "require", "pam_stage", "unix_allow",
};

static int key_lookup(const char *k)
{
	enum sbx_limit l;
	int i;

	for (i = 0; i < K_LIMIT0; i++)
		if (strcmp(k, key_names[i]) == 0)
			return i;
	if (sbx_limit_parse(k, &l) == 0)
		return K_LIMIT0 + (int)l;
	return -1;
}

/* Inclusive bounds per limit: generous, but no value that wraps when the
 * apply code converts it (rlim_t, seconds to timers, tmpfs size=). */
static const uint64_t limit_min[SBX_LIMIT_COUNT] = {
	1, 1, 0, 1 << 20, 1, 0, 1, 1, 1 << 20, 1 << 20, 1, 1,
};
static const uint64_t limit_max[SBX_LIMIT_COUNT] = {
	1u << 22, 1u << 20, 1ull << 50, 1ull << 50, 1ull << 31, 1ull << 50,
	1ull << 31, 1u << 16, 1ull << 50, 1ull << 50, 1u << 22, 100000,
};

#define BAD(fmt, ...) sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': " fmt, \
				    ps->file, kv->line, kv->key, ##__VA_ARGS__)

/* A key with exactly two values: on -> true, off -> false. */
static int set_two_words(struct parser *ps, const struct kv *kv, const char *on,
			 const char *off, bool *out)
{
	if (strcmp(kv->val, on) == 0)
		*out = true;
	else if (strcmp(kv->val, off) == 0)
		*out = false;
	else
		return BAD("bad value '%s' (%s | %s)", kv->val, on, off);
	return 0;
}

static int set_fs_access(struct parser *ps, const struct kv *kv, enum sbx_access *out)
{
	enum sbx_access a;

	if (sbx_access_parse(kv->val, &a) < 0 || a == SBX_ACCESS_GATED)
		return BAD("bad value '%s' (allow | deny)", kv->val);
	*out = a;
	return 0;
}

static int split(char *buf, char **tok, size_t max, size_t *n)
{
	char *save = NULL, *t;

	*n = 0;
	for (t = strtok_r(buf, WS, &save); t; t = strtok_r(NULL, WS, &save)) {
		if (*n >= max)
			return -E2BIG;
		tok[(*n)++] = t;
	}
	return 0;
}

/* Long on purpose: one case per profile key, each a few lines; the key table
 * and its cases read best side by side. */
static int apply_one(struct parser *ps, const struct kv *kv, int key,
		     struct sbx_profile *p)
{
	char buf[SBX_PATH_MAX];
	char *tok[SBX_MAX_SERVICES + 1];
	size_t n, i;
	enum sbx_access a;
	int r;

	switch (key) {
	case K_WS_ROOT:
		if ((r = template_check(ps, kv->line, kv->key, kv->val)) < 0)
			return r;
		return sbx_strlcpy(p->workspace_root, sizeof(p->workspace_root), kv->val);
	case K_WS_READ:
		return set_fs_access(ps, kv, &p->workspace_read);
	case K_WS_WRITE:
		return set_fs_access(ps, kv, &p->workspace_write);
	case K_HOST_READ:
		return set_fs_access(ps, kv, &p->host_read);
	case K_HOST_WRITE:
		return set_fs_access(ps, kv, &p->host_write);
	case K_NETWORK:
	case K_COMMAND:
		if (sbx_access_parse(kv->val, &a) < 0)
			return BAD("bad value '%s' (allow | deny | gated)", kv->val);
		*(key == K_NETWORK ? &p->network : &p->command) = a;
		return 0;
	case K_HOME:
		if (sbx_home_parse(kv->val, &p->home) < 0)
			return BAD("bad value '%s' (isolated | ephemeral | real)", kv->val);
		return 0;
	case K_PAM_STAGE:
		return set_two_words(ps, kv, "required", "optional", &p->pam_required);
	case K_ISOLATION:
		if (sbx_isolation_parse(kv->val, &p->isolation) < 0)
			return BAD("bad value '%s' (sandboxed | unconfined)", kv->val);
		return 0;
	case K_ACK:
		return set_two_words(ps, kv, "yes", "no", &p->ack_unconfined);
	case K_SHELL:
		if ((r = template_check(ps, kv->line, kv->key, kv->val)) < 0)
			return r;
		return sbx_strlcpy(p->shell, sizeof(p->shell), kv->val);
	case K_ROOT: {
		struct sbx_root *rt;

		sbx_strlcpy(buf, sizeof(buf), kv->val);
		if (split(buf, tok, 3, &n) < 0 || n != 2)
			return BAD("bad value '%s' (PATH ro | rw | none)", kv->val);
		if ((r = template_check(ps, kv->line, kv->key, tok[0])) < 0)
			return r;
		if (p->n_roots >= SBX_MAX_ROOTS)
			return sbx_error_set(ps->err, E2BIG, "%s:%u: key 'root': more than %d roots",
					     ps->file, kv->line, SBX_MAX_ROOTS);
		rt = &p->roots[p->n_roots];
		if (strcmp(tok[1], "ro") == 0) {
			rt->read = SBX_ACCESS_ALLOW;
			rt->write = SBX_ACCESS_DENY;
		} else if (strcmp(tok[1], "rw") == 0) {
			rt->read = SBX_ACCESS_ALLOW;
			rt->write = SBX_ACCESS_ALLOW;
		} else if (strcmp(tok[1], "none") == 0) {
			rt->read = SBX_ACCESS_DENY;
			rt->write = SBX_ACCESS_DENY;
		} else {
			return BAD("bad mode '%s' (ro | rw | none)", tok[1]);
		}
		sbx_strlcpy(rt->path, sizeof(rt->path), tok[0]);
		p->n_roots++;
		return 0;
	}
	case K_DENY:
		if ((r = template_check(ps, kv->line, kv->key, kv->val)) < 0)
			return r;
		for (i = 0; i < p->n_deny_read; i++)
			if (strcmp(p->deny_read[i], kv->val) == 0)
				return 0;
		if (p->n_deny_read >= SBX_MAX_DENY)
			return sbx_error_set(ps->err, E2BIG,
					     "%s:%u: key 'deny_read': more than %d entries",
					     ps->file, kv->line, SBX_MAX_DENY);
		sbx_strlcpy(p->deny_read[p->n_deny_read++], SBX_PATH_MAX, kv->val);
		return 0;
	case K_GATE:
		if ((r = template_check(ps, kv->line, kv->key, kv->val)) < 0)
			return r;
		for (i = 0; i < p->n_gate; i++)
			if (strcmp(p->gate_allow[i], kv->val) == 0)
				return 0;
		if (p->n_gate >= SBX_MAX_GATE)
			return sbx_error_set(ps->err, E2BIG,
					     "%s:%u: key 'gate_allow': more than %d entries",
					     ps->file, kv->line, SBX_MAX_GATE);
		sbx_strlcpy(p->gate_allow[p->n_gate++], SBX_PATH_MAX, kv->val);
		return 0;
	case K_UNIX_ALLOW:
		if ((r = template_check(ps, kv->line, kv->key, kv->val)) < 0)
			return r;
		/* The first line replaces "no list restricts" (a ceiling's
		 * starting point) with this list. */
		p->unix_allow_any = false;
		for (i = 0; i < p->n_unix_allow; i++)
			if (strcmp(p->unix_allow[i], kv->val) == 0)
				return 0;
		if (p->n_unix_allow >= SBX_MAX_UNIX_ALLOW)
			return sbx_error_set(ps->err, E2BIG,
					     "%s:%u: key 'unix_allow': more than %d entries",
					     ps->file, kv->line, SBX_MAX_UNIX_ALLOW);
		sbx_strlcpy(p->unix_allow[p->n_unix_allow++], SBX_PATH_MAX, kv->val);
		return 0;
	case K_SERVICES: {
		size_t kept = 0, j;

		sbx_strlcpy(buf, sizeof(buf), kv->val);
		if (split(buf, tok, SBX_MAX_SERVICES, &n) < 0)
			return sbx_error_set(ps->err, E2BIG,
					     "%s:%u: key 'services': more than %d services",
					     ps->file, kv->line, SBX_MAX_SERVICES);
		for (i = 0; i < n; i++) {
			if (!profile_name_ok(tok[i]))
				return BAD("bad service name '%s'", tok[i]);
			if (strcmp(tok[i], SBX_SERVICE_NONE) == 0 && n != 1)
				return BAD("'%s' (no service) must stand alone", SBX_SERVICE_NONE);
		}
		for (i = 0; i < n; i++) {
			for (j = 0; j < i && strcmp(tok[i], tok[j]) != 0; j++)
				;
			if (j == i)
				sbx_strlcpy(p->services[kept++], SBX_NAME_MAX, tok[i]);
		}
		p->n_services = kept;
		return 0;
	}
	case K_MIN_LEVEL:
		if (sbx_level_parse(kv->val, &p->min_level) < 0)
			return BAD("bad value '%s' (none | degraded | full)", kv->val);
		return 0;
	case K_REQUIRE: {
		uint32_t req = 0;
		enum sbx_guarantee g;

		sbx_strlcpy(buf, sizeof(buf), kv->val);
		if (strcmp(buf, "none") == 0) {
			p->require = 0;
			return 0;
		}
		for (char *save = NULL, *t = strtok_r(buf, WS, &save); t;
		     t = strtok_r(NULL, WS, &save)) {
			if (sbx_guarantee_parse(t, &g) < 0)
				return BAD("unknown guarantee '%s'", t);
			req |= (uint32_t)g;
		}
		p->require = req;
		return 0;
	}
	default: {
		enum sbx_limit l = (enum sbx_limit)(key - K_LIMIT0);
		uint64_t v;

		r = sbx_parse_u64(kv->val, sbx_limit_is_bytes(l), limit_min[l],
				  limit_max[l], &v);
		if (r == -ERANGE)
			return sbx_error_set(ps->err, ERANGE,
					     "%s:%u: key '%s': %s out of range [%llu, %llu]",
					     ps->file, kv->line, kv->key, kv->val,
					     (unsigned long long)limit_min[l],
					     (unsigned long long)limit_max[l]);
		if (r < 0)
			return BAD("bad number '%s'%s", kv->val,
				   sbx_limit_is_bytes(l) ? " (digits, optional K/M/G/T)" : " (digits only)");
		p->limits.value[l] = v;
		p->limits.set_mask |= 1u << l;
		return 0;
	}
	}
}

static int apply_section(struct parser *ps, const struct section *sec,
			 bool ceiling, struct sbx_profile *p)
{
	bool seen[K_COUNT] = { false };
	unsigned seen_line[K_COUNT] = { 0 };
	size_t i;
	int r;

	for (i = sec->first; i < sec->first + sec->n; i++) {
		const struct kv *kv = &ps->kvs[i];
		int key = key_lookup(kv->key);

		if (key < 0 || (ceiling && key == K_INHERIT))
			return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': unknown key in [%s%s]",
					     ps->file, kv->line, kv->key,
					     ceiling ? "ceiling" : "profile ",
					     ceiling ? "" : sec->name);
		if (key != K_ROOT && key != K_DENY && key != K_GATE && key != K_UNIX_ALLOW) {
			if (seen[key])
				return sbx_error_set(ps->err, EINVAL,
						     "%s:%u: key '%s': duplicate key (first at line %u)",
						     ps->file, kv->line, kv->key, seen_line[key]);
			seen[key] = true;
			seen_line[key] = kv->line;
		}
		if (key == K_INHERIT)
			continue;
		r = apply_one(ps, kv, key, p);
		if (r == -ENAMETOOLONG)
			r = sbx_error_set(ps->err, ENAMETOOLONG, "%s:%u: key '%s': value too long",
					  ps->file, kv->line, kv->key);
		if (r < 0)
			return r;
	}
	/* "isolation = sandboxed" over an inherited or open unconfined value
	 * drops the acknowledgement that came with it. */
	if (seen[K_ISOLATION] && !seen[K_ACK] && p->isolation == SBX_ISOLATION_SANDBOXED)
		p->ack_unconfined = false;
	return 0;
}

static struct section *find_section(struct parser *ps, const char *name)
{
	size_t i;

	for (i = 0; i < ps->n_sec; i++)
		if (strcmp(ps->secs[i].name, name) == 0)
			return &ps->secs[i];
	return NULL;
}

/* depth: the inherit links followed to reach this profile; it bounds the
 * recursion. NOLINTNEXTLINE(misc-no-recursion) */
static int resolve(struct parser *ps, size_t idx, unsigned depth)
{
	struct section *sec = &ps->secs[idx];
	struct sbx_profile *p = &ps->cfg->profiles[idx];
	const struct kv *inh = NULL;
	size_t i;
	int r;

	if (sec->state == 2)
		return 0;
	sec->state = 1;
	for (i = sec->first; i < sec->first + sec->n; i++)
		if (strcmp(ps->kvs[i].key, "inherit") == 0)
			inh = &ps->kvs[i];
	if (inh) {
		struct section *parent;

		if (!profile_name_ok(inh->val))
			return sbx_error_set(ps->err, EINVAL, "%s:%u: key 'inherit': bad profile name '%s'",
					     ps->file, inh->line, inh->val);
		if (strcmp(inh->val, sec->name) == 0)
			return sbx_error_set(ps->err, EINVAL, "%s:%u: key 'inherit': profile %s inherits itself",
					     ps->file, inh->line, sec->name);
		parent = find_section(ps, inh->val);
		if (!parent)
			return sbx_error_set(ps->err, ENOENT, "%s:%u: key 'inherit': unknown profile '%s'",
					     ps->file, inh->line, inh->val);
		if (parent->state == 1)
			return sbx_error_set(ps->err, ELOOP,
					     "%s:%u: key 'inherit': inherit cycle through profile '%s'",
					     ps->file, inh->line, inh->val);
		/* depth bounds the recursion (the stack), links the chain
		 * whatever order its profiles were resolved in. */
		if (depth == SBX_CONFIG_MAX_INHERIT)
			return sbx_error_set(ps->err, ELOOP,
					     "%s:%u: key 'inherit': more than %u inherit links",
					     ps->file, inh->line, SBX_CONFIG_MAX_INHERIT);
		r = resolve(ps, (size_t)(parent - ps->secs), depth + 1);
		if (r < 0)
			return r;
		if (parent->links == SBX_CONFIG_MAX_INHERIT)
			return sbx_error_set(ps->err, ELOOP,
					     "%s:%u: key 'inherit': more than %u inherit links",
					     ps->file, inh->line, SBX_CONFIG_MAX_INHERIT);
		sec->links = parent->links + 1;
		memcpy(p, &ps->cfg->profiles[parent - ps->secs], sizeof(*p));
	} else {
		sbx_profile_init_default(p);
	}
	sbx_strlcpy(p->name, sizeof(p->name), sec->name);
	r = apply_section(ps, sec, false, p);
	if (r < 0)
		return r;
	if (p->workspace_root[0] == '\0')
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: [profile %s]: missing workspace_root",
				     ps->file, sec->line, sec->name);
	r = sbx_profile_validate(p, ps->err);
	if (r < 0) {
		char msg[SBX_ERROR_MAX];

		sbx_strlcpy(msg, sizeof(msg), ps->err ? ps->err->msg : "");
		return sbx_error_set(ps->err, -r, "%s:%u: [profile %s]: %s",
				     ps->file, sec->line, sec->name, msg);
	}
	sec->state = 2;
	return 0;
}

/* ---- pass 1: lines, sections, settings ----------------------------------- */

static int add_kv(struct parser *ps, unsigned line, const char *key, const char *val)
{
	if (ps->n_kv == ps->cap_kv) {
		size_t cap = ps->cap_kv ? ps->cap_kv * 2 : 64;
		struct kv *n = realloc(ps->kvs, cap * sizeof(*n));

		if (!n)
			return sbx_error_set(ps->err, ENOMEM, "%s: out of memory", ps->file);
		ps->kvs = n;
		ps->cap_kv = cap;
	}
	ps->kvs[ps->n_kv++] = (struct kv){ .line = line, .key = key, .val = val };
	return 0;
}

static int section_head(struct parser *ps, unsigned line, char *head)
{
	struct section *s;
	char *name;

	head = trim(head);
	if (strcmp(head, "global") == 0) {
		if (ps->have_global)
			return sbx_error_set(ps->err, EINVAL, "%s:%u: [global]: duplicate section",
					     ps->file, line);
		ps->have_global = true;
		ps->cur = SEC_GLOBAL;
		return 0;
	}
	if (strcmp(head, "ceiling") == 0) {
		if (ps->have_ceiling)
			return sbx_error_set(ps->err, EINVAL,
					     "%s:%u: [ceiling]: duplicate section (first at line %u)",
					     ps->file, line, ps->ceiling.line);
		ps->have_ceiling = true;
		ps->ceiling.line = line;
		ps->ceiling.first = ps->n_kv;
		ps->cur = SEC_CEILING;
		return 0;
	}
	if (strcmp(head, "match") == 0) {
		ps->cur = SEC_MATCH;
		return 0;
	}
	if (strncmp(head, "profile", 7) != 0 || !is_ws(head[7]))
		return sbx_error_set(ps->err, EINVAL, "%s:%u: [%s]: unknown section",
				     ps->file, line, head);
	name = trim(head + 7);
	if (!profile_name_ok(name))
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: [profile %s]: bad profile name ([A-Za-z0-9_.-]{1,63})",
				     ps->file, line, name);
	s = find_section(ps, name);
	if (s)
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: [profile %s]: duplicate profile (first at line %u)",
				     ps->file, line, name, s->line);
	if (ps->n_sec == ps->cap_sec) {
		size_t cap = ps->cap_sec ? ps->cap_sec * 2 : 8;
		struct section *n = realloc(ps->secs, cap * sizeof(*n));

		if (!n)
			return sbx_error_set(ps->err, ENOMEM, "%s: out of memory", ps->file);
		ps->secs = n;
		ps->cap_sec = cap;
	}
	s = &ps->secs[ps->n_sec++];
	memset(s, 0, sizeof(*s));
	sbx_strlcpy(s->name, sizeof(s->name), name);
	s->line = line;
	s->first = ps->n_kv;
	ps->cur = SEC_PROFILE;
	return 0;
}

static int global_setting(struct parser *ps, const struct kv *kv)
{
	struct sbx_config *cfg = ps->cfg;
	bool *seen;
	char *dst;
	int r;

	if (strcmp(kv->key, "state_dir") == 0) {
		seen = &ps->have_state_dir;
		dst = cfg->state_dir;
	} else if (strcmp(kv->key, "agent_shell") == 0) {
		seen = &ps->have_agent_shell;
		dst = cfg->agent_shell;
	} else {
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': unknown key in [global]",
				     ps->file, kv->line, kv->key);
	}
	if (*seen)
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': duplicate key",
				     ps->file, kv->line, kv->key);
	*seen = true;
	if ((r = plain_path_check(ps, kv->line, kv->key, kv->val)) < 0)
		return r;
	return sbx_strlcpy(dst, SBX_PATH_MAX, kv->val);
}

static int match_setting(struct parser *ps, const struct kv *kv)
{
	struct sbx_config *cfg = ps->cfg;
	char buf[SBX_PATH_MAX];
	char *tok[3];
	enum sbx_match_kind kind;
	struct sbx_match *m;
	size_t n, i;

	sbx_strlcpy(buf, sizeof(buf), kv->key);
	if (split(buf, tok, 3, &n) < 0 || n != 2 ||
	    (strcmp(tok[0], "user") != 0 && strcmp(tok[0], "group") != 0))
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: key '%s': expected 'user NAME = PROFILE' or 'group NAME = PROFILE'",
				     ps->file, kv->line, kv->key);
	kind = tok[0][0] == 'u' ? SBX_MATCH_USER : SBX_MATCH_GROUP;
	if (!account_name_ok(tok[1]))
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': bad %s name '%s'",
				     ps->file, kv->line, kv->key, tok[0], tok[1]);
	if (!profile_name_ok(kv->val))
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': bad profile name '%s'",
				     ps->file, kv->line, kv->key, kv->val);
	for (i = 0; i < cfg->n_matches; i++)
		if (cfg->matches[i].kind == kind && strcmp(cfg->matches[i].name, tok[1]) == 0)
			return sbx_error_set(ps->err, EINVAL,
					     "%s:%u: key '%s': rule for %s %s given twice (first at line %u)",
					     ps->file, kv->line, kv->key, tok[0], tok[1],
					     cfg->matches[i].line);
	m = realloc(cfg->matches, (cfg->n_matches + 1) * sizeof(*m));
	if (!m)
		return sbx_error_set(ps->err, ENOMEM, "%s: out of memory", ps->file);
	cfg->matches = m;
	m = &cfg->matches[cfg->n_matches++];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	sbx_strlcpy(m->name, sizeof(m->name), tok[1]);
	sbx_strlcpy(m->profile, sizeof(m->profile), kv->val);
	m->line = kv->line;
	return 0;
}

static int parse_line(struct parser *ps, unsigned ln, char *line, size_t len)
{
	char *s, *eq, *key, *val, *hash;
	size_t bad;

	if (len > SBX_CONFIG_MAX_LINE)
		return sbx_error_set(ps->err, EINVAL, "%s:%u: line longer than %d bytes",
				     ps->file, ln, SBX_CONFIG_MAX_LINE);
	if (memchr(line, '\0', len))
		return sbx_error_set(ps->err, EINVAL, "%s:%u: NUL byte in line", ps->file, ln);
	if (memchr(line, '\r', len))
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: carriage return (CRLF line endings?)", ps->file, ln);
	bad = utf8_bad_offset((const unsigned char *)line, len);
	if (bad != len)
		return sbx_error_set(ps->err, EILSEQ, "%s:%u: invalid UTF-8 at byte %zu",
				     ps->file, ln, bad + 1);
	line[len] = '\0';
	s = trim(line);
	if (*s == '\0' || *s == '#')
		return 0;
	/* A trailing comment starts at a "#" that follows whitespace. */
	for (hash = s + 1; (hash = strchr(hash, '#')); hash++)
		if (is_ws(hash[-1])) {
			*hash = '\0';
			break;
		}
	s = trim(s);
	if (*s == '[') {
		size_t n = strlen(s);

		if (s[n - 1] != ']')
			return sbx_error_set(ps->err, EINVAL, "%s:%u: section '%s': missing ']'",
					     ps->file, ln, s);
		s[n - 1] = '\0';
		return section_head(ps, ln, s + 1);
	}
	eq = strchr(s, '=');
	if (!eq)
		return sbx_error_set(ps->err, EINVAL, "%s:%u: '%.64s': expected 'key = value'",
				     ps->file, ln, s);
	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (*key == '\0')
		return sbx_error_set(ps->err, EINVAL, "%s:%u: empty key", ps->file, ln);
	if (ps->cur == SEC_NONE)
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': outside any section",
				     ps->file, ln, key);
	if (*val == '\0')
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': empty value",
				     ps->file, ln, key);
	if (strlen(val) >= SBX_PATH_MAX)
		return sbx_error_set(ps->err, ENAMETOOLONG,
				     "%s:%u: key '%s': value longer than %d bytes",
				     ps->file, ln, key, SBX_PATH_MAX - 1);
	switch (ps->cur) {
	case SEC_GLOBAL:
		return global_setting(ps, &(struct kv){ ln, key, val });
	case SEC_MATCH:
		return match_setting(ps, &(struct kv){ ln, key, val });
	case SEC_CEILING:
		ps->ceiling.n++;
		return add_kv(ps, ln, key, val);
	default:
		ps->secs[ps->n_sec - 1].n++;
		return add_kv(ps, ln, key, val);
	}
}

void sbx_config_free(struct sbx_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->profiles);
	free(cfg->matches);
	free(cfg);
}

int sbx_config_parse_buffer(const char *buf, size_t len, const char *name,
			    struct sbx_config **out, struct sbx_error *err)
{
	struct parser ps = { .file = name ? name : "(config)", .err = err };
	struct sbx_config *cfg = NULL;
	char *text = NULL, *line;
	unsigned ln = 0;
	size_t off, i;
	int r;

	if (!buf || !out)
		return sbx_error_set(err, EINVAL, "%s: no buffer", ps.file);
	if (len > SBX_CONFIG_MAX_BYTES)
		return sbx_error_set(err, EFBIG, "%s: larger than %u bytes", ps.file,
				     SBX_CONFIG_MAX_BYTES);
	cfg = calloc(1, sizeof(*cfg));
	text = malloc(len + 1);
	if (!cfg || !text) {
		r = sbx_error_set(err, ENOMEM, "%s: out of memory", ps.file);
		goto out;
	}
	memcpy(text, buf, len);
	text[len] = '\0';
	ps.cfg = cfg;
	snprintf(cfg->path, sizeof(cfg->path), "%s", ps.file);
	sbx_strlcpy(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/agent-sandbox");
	sbx_strlcpy(cfg->agent_shell, sizeof(cfg->agent_shell), "/usr/local/bin/agent-shell");

	for (off = 0; off < len; ) {
		char *nl = memchr(text + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (text + off)) : len - off;

		line = text + off;
		ln++;
		r = parse_line(&ps, ln, line, l);
		if (r < 0)
			goto out;
		off += l + 1;
	}
	if (ps.n_sec == 0) {
		r = sbx_error_set(err, EINVAL, "%s: no profile defined", ps.file);
		goto out;
	}

	sbx_profile_init_open(&cfg->ceiling);
	if (ps.have_ceiling) {
		sbx_strlcpy(cfg->ceiling.name, sizeof(cfg->ceiling.name), "ceiling");
		r = apply_section(&ps, &ps.ceiling, true, &cfg->ceiling);
		if (r == 0 && (r = sbx_profile_validate_ceiling(&cfg->ceiling, err)) < 0) {
			char msg[SBX_ERROR_MAX];

			sbx_strlcpy(msg, sizeof(msg), err ? err->msg : "");
			r = sbx_error_set(err, -r, "%s:%u: [ceiling]: %s", ps.file,
					  ps.ceiling.line, msg);
		}
		if (r < 0)
			goto out;
	}

	cfg->profiles = calloc(ps.n_sec, sizeof(*cfg->profiles));
	if (!cfg->profiles) {
		r = sbx_error_set(err, ENOMEM, "%s: out of memory", ps.file);
		goto out;
	}
	cfg->n_profiles = ps.n_sec;
	for (i = 0; i < ps.n_sec; i++)
		if ((r = resolve(&ps, i, 0)) < 0)
			goto out;

	for (i = 0; i < cfg->n_matches; i++) {
		const struct sbx_match *m = &cfg->matches[i];

		if (!sbx_config_find_profile(cfg, m->profile)) {
			r = sbx_error_set(err, ENOENT,
					  "%s:%u: key '%s %s': unknown profile '%s'", ps.file,
					  m->line, m->kind == SBX_MATCH_USER ? "user" : "group",
					  m->name, m->profile);
			goto out;
		}
	}
	*out = cfg;
	cfg = NULL;
	r = 0;
out:
	sbx_config_free(cfg);
	free(text);
	free(ps.kvs);
	free(ps.secs);
	return r;
}

int sbx_config_load(const char *path, unsigned flags, struct sbx_config **out,
		    struct sbx_error *err)
{
	char *buf = NULL;
	size_t used = 0;
	int fd = -1, r;

	r = sbx_trust_open_file(path, !(flags & SBX_CONFIG_SKIP_TRUST),
				SBX_CONFIG_MAX_BYTES, &fd, err);
	if (r < 0)
		return r;
	/* Read from the fd that was checked, never by name again. */
	r = sbx_read_fd(fd, path, SBX_CONFIG_MAX_BYTES, &buf, &used, err);
	if (r < 0)
		goto out;
	r = sbx_config_parse_buffer(buf, used, path, out, err);
out:
	free(buf);
	close(fd);
	return r;
}

const struct sbx_profile *sbx_config_find_profile(const struct sbx_config *cfg,
						  const char *name)
{
	size_t i;

	if (!cfg || !name)
		return NULL;
	for (i = 0; i < cfg->n_profiles; i++)
		if (strcmp(cfg->profiles[i].name, name) == 0)
			return &cfg->profiles[i];
	return NULL;
}

int sbx_config_select(const struct sbx_config *cfg, const char *user,
		      const char *const *groups, size_t n_groups,
		      const struct sbx_profile **out, struct sbx_error *err)
{
	const struct sbx_match *hit = NULL;
	const struct sbx_profile *p;
	size_t i, g;

	if (!cfg || !user || !out)
		return sbx_error_set(err, EINVAL, "select: bad arguments");
	for (i = 0; i < cfg->n_matches; i++) {
		const struct sbx_match *m = &cfg->matches[i];

		if (m->kind == SBX_MATCH_USER && strcmp(m->name, user) == 0) {
			hit = m;
			goto found;
		}
	}
	for (i = 0; i < cfg->n_matches; i++) {
		const struct sbx_match *m = &cfg->matches[i];

		if (m->kind != SBX_MATCH_GROUP)
			continue;
		for (g = 0; g < n_groups; g++)
			if (groups[g] && strcmp(groups[g], m->name) == 0)
				break;
		if (g == n_groups)
			continue;
		if (!hit) {
			hit = m;
		} else if (strcmp(hit->profile, m->profile) != 0) {
			/* Rule order must not silently decide between two
			 * policies: an admin has to say which one applies. */
			return sbx_error_set(err, EINVAL,
					     "%s: user %s matches group rules at line %u (%s) and line %u (%s); refusing",
					     cfg->path, user, hit->line, hit->profile,
					     m->line, m->profile);
		}
	}
	if (!hit)
		return sbx_error_set(err, ENOENT, "%s: user %s: not an agent account (no [match] rule)",
				     cfg->path, user);
found:
	p = sbx_config_find_profile(cfg, hit->profile);
	if (!p)
		return sbx_error_set(err, ENOENT, "%s:%u: unknown profile '%s'", cfg->path,
				     hit->line, hit->profile);
	*out = p;
	return 0;
}

int sbx_profile_set_key(struct sbx_profile *p, const char *key, const char *value,
			struct sbx_error *err)
{
	struct parser ps = { .file = "sbx_profile_set", .err = err };
	struct kv kv = { .line = 0, .key = key, .val = value };
	int k, r;

	if (!p || !key || !value)
		return sbx_error_set(err, EINVAL, "profile: set: missing argument");
	k = key_lookup(key);
	if (k < 0 || k == K_INHERIT)
		return sbx_error_set(err, EINVAL, "profile %s: key '%s': unknown key", p->name, key);
	if (strlen(value) >= SBX_PATH_MAX)
		return sbx_error_set(err, ENAMETOOLONG, "profile %s: key '%s': value too long",
				     p->name, key);
	r = apply_one(&ps, &kv, k, p);
	if (r == -ENAMETOOLONG)
		r = sbx_error_set(err, ENAMETOOLONG, "profile %s: key '%s': value too long", p->name,
				  key);
	return r < 0 ? r : 0;
}
