/* SPDX-License-Identifier: BSD-3-Clause */
/* The configuration file: parse (from memory or a trusted file), resolve inherit, select. */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
 *   [global]       state_dir = PATH, agent_shell = PATH, egress_socket = PATH
 *   [ceiling]      the profile keys below except inherit; starts from the
 *                  open profile (sbx_profile_init_open); workspace_root
 *                  optional
 *   [profile P]    starts from sbx_profile_init_default (or, with
 *                  "inherit = Q", from Q after Q's own inherit), then:
 *     workspace_root = TEMPLATE        (required after inherit)
 *     workspace_read | workspace_write | host_read | host_write = allow|deny
 *     network = allow|proxy|deny       command = allow|deny|gated
 *                                      ("gated" is read as proxy)
 *     gate_jit = allow|deny            (executable memory under the gate)
 *     home = ephemeral|isolated|real   isolation = sandboxed|unconfined
 *     ack_unconfined = yes|no          shell = TEMPLATE
 *     root = TEMPLATE ro|rw|none       (repeatable, appends)
 *     deny_read = TEMPLATE             (repeatable, appends)
 *     gate_allow = TEMPLATE            (repeatable, appends)
 *     unix_allow = TEMPLATE            (repeatable, appends)
 *     egress_allow = HOST[:PORT]       (repeatable, appends; lib/egress.c)
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
	const char *file;
	unsigned line;
	const char *key;
	const char *val;
	size_t next;		/* the section's next setting in parser.kvs */
};

/* A section's settings are a list through parser.kvs, not a range: a
 * drop-in's [ceiling] continues the main file's. */
struct section {
	char name[SBX_NAME_MAX];
	const char *file;
	unsigned line;
	size_t first, last, n;	/* its settings in parser.kvs */
	int state;		/* 0 unresolved, 1 resolving, 2 done */
	unsigned links;		/* inherit links from it to a profile without one */
};

enum kind { SEC_NONE, SEC_GLOBAL, SEC_CEILING, SEC_PROFILE, SEC_MATCH };

struct parser {
	const char *file;	/* the file being parsed, or of the setting applied */
	struct sbx_error *err;
	struct sbx_config *cfg;
	struct kv *kvs;
	size_t n_kv, cap_kv;
	struct section *secs;	/* profiles */
	size_t n_sec, cap_sec;
	struct section ceiling;
	bool have_ceiling, have_state_dir, have_agent_shell, have_egress_socket;
	bool ceiling_here, global_here;	/* in the file being parsed */
	const char *state_dir_file, *agent_shell_file, *egress_socket_file;
	unsigned state_dir_line, agent_shell_line, egress_socket_line;
	enum kind cur;
};

/* Where something was first given, for "given again" errors: "line N" in
 * the same file, "FILE:N" in an earlier one. */
static const char *first_at(const struct parser *ps, const char *file, unsigned line,
			    char *buf, size_t size)
{
	if (strcmp(file, ps->file) == 0)
		snprintf(buf, size, "line %u", line);
	else
		snprintf(buf, size, "%s:%u", file, line);
	return buf;
}

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
	K_EGRESS, K_GATE_JIT,
	K_LIMIT0,
	K_COUNT = K_LIMIT0 + SBX_LIMIT_COUNT,
};

static const char *const key_names[K_LIMIT0] = {
	"inherit", "workspace_root", "workspace_read", "workspace_write",
	"host_read", "host_write", "network", "command", "home", "isolation",
	"ack_unconfined", "shell", "root", "deny_read", "gate_allow", "services",
	"min_level", "require", "pam_stage", "unix_allow", "egress_allow", "gate_jit",
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
				    kv->file, kv->line, kv->key, ##__VA_ARGS__)

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
		if (sbx_network_parse(kv->val, &p->network) < 0)
			return BAD("bad value '%s' (allow | proxy | deny)", kv->val);
		return 0;
	case K_COMMAND:
		if (sbx_access_parse(kv->val, &a) < 0)
			return BAD("bad value '%s' (allow | deny | gated)", kv->val);
		p->command = a;
		return 0;
	case K_GATE_JIT:
		return set_fs_access(ps, kv, &p->gate_jit);
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
	case K_EGRESS: {
		struct sbx_egress_entry e;
		struct sbx_error eerr = { 0 };

		if (sbx_egress_entry_parse(kv->val, &e, &eerr) < 0)
			return BAD("%s", eerr.msg);
		/* As unix_allow: the first line replaces a ceiling's "no list
		 * restricts" with this list. */
		p->egress_any = false;
		for (i = 0; i < p->n_egress; i++)
			if (strcmp(p->egress[i].host, e.host) == 0 && p->egress[i].port == e.port)
				return 0;
		if (p->n_egress >= SBX_MAX_EGRESS)
			return sbx_error_set(ps->err, E2BIG,
					     "%s:%u: key 'egress_allow': more than %d entries",
					     ps->file, kv->line, SBX_MAX_EGRESS);
		p->egress[p->n_egress++] = e;
		return 0;
	}
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
	const struct kv *seen_kv[K_COUNT] = { NULL };
	char where[SBX_PATH_MAX + 32];
	size_t i, k;
	int r;

	for (i = sec->first, k = 0; k < sec->n; i = ps->kvs[i].next, k++) {
		const struct kv *kv = &ps->kvs[i];
		int key = key_lookup(kv->key);

		ps->file = kv->file;
		if (key < 0 || (ceiling && key == K_INHERIT))
			return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': unknown key in [%s%s]",
					     ps->file, kv->line, kv->key,
					     ceiling ? "ceiling" : "profile ",
					     ceiling ? "" : sec->name);
		if (key != K_ROOT && key != K_DENY && key != K_GATE && key != K_UNIX_ALLOW &&
		    key != K_EGRESS) {
			if (seen[key])
				return sbx_error_set(ps->err, EINVAL,
						     "%s:%u: key '%s': duplicate key (first at %s)",
						     ps->file, kv->line, kv->key,
						     first_at(ps, seen_kv[key]->file,
							      seen_kv[key]->line, where,
							      sizeof(where)));
			seen[key] = true;
			seen_kv[key] = kv;
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
	size_t i, k;
	int r;

	if (sec->state == 2)
		return 0;
	sec->state = 1;
	for (i = sec->first, k = 0; k < sec->n; i = ps->kvs[i].next, k++)
		if (strcmp(ps->kvs[i].key, "inherit") == 0)
			inh = &ps->kvs[i];
	if (inh) {
		struct section *parent;

		ps->file = inh->file;

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
		ps->file = inh->file;
		if (parent->links == SBX_CONFIG_MAX_INHERIT)
			return sbx_error_set(ps->err, ELOOP,
					     "%s:%u: key 'inherit': more than %u inherit links",
					     ps->file, inh->line, SBX_CONFIG_MAX_INHERIT);
		sec->links = parent->links + 1;
		sbx_profile_copy(p, &ps->cfg->profiles[parent - ps->secs]);
	} else {
		sbx_profile_reset_default(p);	/* profiles[] is calloc'd */
	}
	sbx_strlcpy(p->name, sizeof(p->name), sec->name);
	r = apply_section(ps, sec, false, p);
	if (r < 0)
		return r;
	p->require = sbx_require_for_network(p->require, p->network);
	if (p->workspace_root[0] == '\0')
		return sbx_error_set(ps->err, EINVAL,
				     "%s:%u: [profile %s]: missing workspace_root",
				     sec->file, sec->line, sec->name);
	r = sbx_profile_validate(p, ps->err);
	if (r < 0) {
		char msg[SBX_ERROR_MAX];

		sbx_strlcpy(msg, sizeof(msg), ps->err ? ps->err->msg : "");
		return sbx_error_set(ps->err, -r, "%s:%u: [profile %s]: %s",
				     sec->file, sec->line, sec->name, msg);
	}
	sec->state = 2;
	return 0;
}

/* ---- pass 1: lines, sections, settings ----------------------------------- */

static int add_kv(struct parser *ps, struct section *sec, unsigned line, const char *key,
		  const char *val)
{
	if (ps->n_kv == ps->cap_kv) {
		size_t cap = ps->cap_kv ? ps->cap_kv * 2 : 64;
		struct kv *n = realloc(ps->kvs, cap * sizeof(*n));

		if (!n)
			return sbx_error_set(ps->err, ENOMEM, "%s: out of memory", ps->file);
		ps->kvs = n;
		ps->cap_kv = cap;
	}
	ps->kvs[ps->n_kv] = (struct kv){ .file = ps->file, .line = line, .key = key,
					 .val = val };
	if (sec->n == 0)
		sec->first = ps->n_kv;
	else
		ps->kvs[sec->last].next = ps->n_kv;
	sec->last = ps->n_kv++;
	sec->n++;
	return 0;
}

static int section_head(struct parser *ps, unsigned line, char *head)
{
	char where[SBX_PATH_MAX + 32];
	struct section *s;
	char *name;

	head = trim(head);
	/* [global] and [ceiling] once per file: a drop-in's continues the
	 * one before it, and its keys obey the once-only rule across files. */
	if (strcmp(head, "global") == 0) {
		if (ps->global_here)
			return sbx_error_set(ps->err, EINVAL, "%s:%u: [global]: duplicate section",
					     ps->file, line);
		ps->global_here = true;
		ps->cur = SEC_GLOBAL;
		return 0;
	}
	if (strcmp(head, "ceiling") == 0) {
		if (ps->ceiling_here)
			return sbx_error_set(ps->err, EINVAL,
					     "%s:%u: [ceiling]: duplicate section (first at line %u)",
					     ps->file, line, ps->ceiling.line);
		ps->ceiling_here = true;
		if (!ps->have_ceiling) {
			ps->ceiling.file = ps->file;
			ps->ceiling.line = line;
		}
		ps->have_ceiling = true;
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
				     "%s:%u: [profile %s]: duplicate profile (first at %s)",
				     ps->file, line, name,
				     first_at(ps, s->file, s->line, where, sizeof(where)));
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
	s->file = ps->file;
	s->line = line;
	ps->cur = SEC_PROFILE;
	return 0;
}

static int global_setting(struct parser *ps, const struct kv *kv)
{
	struct sbx_config *cfg = ps->cfg;
	char where[SBX_PATH_MAX + 32];
	const char **seen_file;
	unsigned *seen_line;
	bool *seen;
	char *dst;
	int r;

	if (strcmp(kv->key, "state_dir") == 0) {
		seen = &ps->have_state_dir;
		seen_file = &ps->state_dir_file;
		seen_line = &ps->state_dir_line;
		dst = cfg->state_dir;
	} else if (strcmp(kv->key, "agent_shell") == 0) {
		seen = &ps->have_agent_shell;
		seen_file = &ps->agent_shell_file;
		seen_line = &ps->agent_shell_line;
		dst = cfg->agent_shell;
	} else if (strcmp(kv->key, "egress_socket") == 0) {
		seen = &ps->have_egress_socket;
		seen_file = &ps->egress_socket_file;
		seen_line = &ps->egress_socket_line;
		dst = cfg->egress_socket;
	} else {
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': unknown key in [global]",
				     ps->file, kv->line, kv->key);
	}
	if (*seen)
		return sbx_error_set(ps->err, EINVAL, "%s:%u: key '%s': duplicate key (first at %s)",
				     ps->file, kv->line, kv->key,
				     first_at(ps, *seen_file, *seen_line, where, sizeof(where)));
	*seen = true;
	*seen_file = ps->file;
	*seen_line = kv->line;
	if ((r = plain_path_check(ps, kv->line, kv->key, kv->val)) < 0)
		return r;
	return sbx_strlcpy(dst, SBX_PATH_MAX, kv->val);
}

static int match_setting(struct parser *ps, const struct kv *kv)
{
	struct sbx_config *cfg = ps->cfg;
	char buf[SBX_PATH_MAX], where[SBX_PATH_MAX + 32];
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
					     "%s:%u: key '%s': rule for %s %s given twice (first at %s)",
					     ps->file, kv->line, kv->key, tok[0], tok[1],
					     first_at(ps, cfg->matches[i].file, cfg->matches[i].line,
						      where, sizeof(where)));
	m = realloc(cfg->matches, (cfg->n_matches + 1) * sizeof(*m));
	if (!m)
		return sbx_error_set(ps->err, ENOMEM, "%s: out of memory", ps->file);
	cfg->matches = m;
	m = &cfg->matches[cfg->n_matches++];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	sbx_strlcpy(m->name, sizeof(m->name), tok[1]);
	sbx_strlcpy(m->profile, sizeof(m->profile), kv->val);
	m->file = ps->file;
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
		return global_setting(ps, &(struct kv){ .file = ps->file, .line = ln, .key = key,
							 .val = val });
	case SEC_MATCH:
		return match_setting(ps, &(struct kv){ .file = ps->file, .line = ln, .key = key,
							.val = val });
	case SEC_CEILING:
		return add_kv(ps, &ps->ceiling, ln, key, val);
	default:
		return add_kv(ps, &ps->secs[ps->n_sec - 1], ln, key, val);
	}
}

void sbx_config_free(struct sbx_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_files; i++)
		free(cfg->files[i]);
	free(cfg->files);
	free(cfg->profiles);
	free(cfg->matches);
	free(cfg);
}

/* Pass 1 over one file: its lines into ps. text is the file's own
 * writable copy (settings point into it). */
static int parse_text(struct parser *ps, char *text, size_t len)
{
	unsigned ln = 0;
	size_t off;
	int r;

	/* Each file starts outside any section: a drop-in's first keys never
	 * land in whatever section the file before it ended with. */
	ps->cur = SEC_NONE;
	ps->global_here = ps->ceiling_here = false;
	for (off = 0; off < len; ) {
		char *nl = memchr(text + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (text + off)) : len - off;

		ln++;
		r = parse_line(ps, ln, text + off, l);
		if (r < 0)
			return r;
		off += l + 1;
	}
	return 0;
}

/* Long on purpose: pass 1 over every file, then the ceiling, the profiles
 * and the rules, with one cleanup path. */
int sbx_config_parse_sources(const struct sbx_config_source *src, size_t n,
			     struct sbx_config **out, struct sbx_error *err)
{
	struct parser ps = { .err = err };
	struct sbx_config *cfg = NULL;
	char **texts = NULL;
	size_t i, total = 0;
	int r;

	if (!src || n == 0 || !out)
		return sbx_error_set(err, EINVAL, "config: no buffer");
	for (i = 0; i < n; i++) {
		const char *name = src[i].name ? src[i].name : "(config)";

		if (!src[i].buf)
			return sbx_error_set(err, EINVAL, "%s: no buffer", name);
		if (src[i].len > SBX_CONFIG_MAX_BYTES - total)
			return sbx_error_set(err, EFBIG, "%s: larger than %u bytes%s", name,
					     SBX_CONFIG_MAX_BYTES,
					     i ? " with the files before it" : "");
		total += src[i].len;
	}
	cfg = calloc(1, sizeof(*cfg));
	texts = calloc(n, sizeof(*texts));
	if (cfg)
		cfg->files = calloc(n, sizeof(*cfg->files));
	if (!cfg || !texts || !cfg->files) {
		r = sbx_error_set(err, ENOMEM, "%s: out of memory",
				  src[0].name ? src[0].name : "(config)");
		goto out;
	}
	ps.cfg = cfg;
	for (i = 0; i < n; i++) {
		cfg->files[i] = strdup(src[i].name ? src[i].name : "(config)");
		texts[i] = malloc(src[i].len + 1);
		if (!cfg->files[i] || !texts[i]) {
			r = sbx_error_set(err, ENOMEM, "%s: out of memory",
					  src[i].name ? src[i].name : "(config)");
			goto out;
		}
		cfg->n_files = i + 1;
		memcpy(texts[i], src[i].buf, src[i].len);
		texts[i][src[i].len] = '\0';
	}
	ps.file = cfg->files[0];
	snprintf(cfg->path, sizeof(cfg->path), "%s", cfg->files[0]);
	sbx_strlcpy(cfg->state_dir, sizeof(cfg->state_dir), SBX_STATE_DIR);
	sbx_strlcpy(cfg->agent_shell, sizeof(cfg->agent_shell), "/usr/local/bin/agent-shell");
	sbx_strlcpy(cfg->egress_socket, sizeof(cfg->egress_socket), SBX_EGRESS_SOCKET);

	for (i = 0; i < n; i++) {
		ps.file = cfg->files[i];
		r = parse_text(&ps, texts[i], src[i].len);
		if (r < 0)
			goto out;
	}
	ps.file = cfg->files[0];
	if (ps.n_sec == 0) {
		r = sbx_error_set(err, EINVAL, "%s: no profile defined%s", cfg->path,
				  n > 1 ? " (in it or its drop-ins)" : "");
		goto out;
	}

	sbx_profile_reset_open(&cfg->ceiling);	/* cfg is calloc'd */
	if (ps.have_ceiling) {
		sbx_strlcpy(cfg->ceiling.name, sizeof(cfg->ceiling.name), "ceiling");
		r = apply_section(&ps, &ps.ceiling, true, &cfg->ceiling);
		if (r == 0 && (r = sbx_profile_validate_ceiling(&cfg->ceiling, err)) < 0) {
			char msg[SBX_ERROR_MAX];

			sbx_strlcpy(msg, sizeof(msg), err ? err->msg : "");
			r = sbx_error_set(err, -r, "%s:%u: [ceiling]: %s", ps.ceiling.file,
					  ps.ceiling.line, msg);
		}
		if (r < 0)
			goto out;
	}

	cfg->profiles = calloc(ps.n_sec, sizeof(*cfg->profiles));
	if (!cfg->profiles) {
		r = sbx_error_set(err, ENOMEM, "%s: out of memory", cfg->path);
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
					  "%s:%u: key '%s %s': unknown profile '%s'", m->file,
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
	for (i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
	free(ps.kvs);
	free(ps.secs);
	return r;
}

int sbx_config_parse_buffer(const char *buf, size_t len, const char *name,
			    struct sbx_config **out, struct sbx_error *err)
{
	struct sbx_config_source src = { .name = name, .buf = buf, .len = len };

	return sbx_config_parse_sources(&src, 1, out, err);
}

/* conf.d names: [A-Za-z0-9_.-]+ ".conf", not hidden. What a package
 * manager or an editor leaves beside a file (x.conf.dpkg-old, x.conf~,
 * .x.conf.swp) never ends in ".conf" or starts with "." and is skipped. */
static bool dropin_name_ok(const char *name)
{
	size_t len = strlen(name), i;

	if (name[0] == '.' || len <= 5 || strcmp(name + len - 5, ".conf") != 0)
		return false;
	for (i = 0; i < len - 5; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

static int name_cmp(const void *a, const void *b)
{
	/* strcmp compares as unsigned char: bytewise, whatever the locale. */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A config's files as read: the main file, then its drop-ins. */
struct sbx_config_text {
	size_t n, total;	/* files, bytes */
	char *names[1 + SBX_CONFIG_MAX_DROPINS];
	char *bufs[1 + SBX_CONFIG_MAX_DROPINS];
	size_t lens[1 + SBX_CONFIG_MAX_DROPINS];
};

/* The drop-ins of the config at path, trusted like it, appended to l in
 * bytewise name order. A missing conf.d is no error. */
static int load_dropins(const char *path, bool trusted, struct sbx_config_text *l,
			struct sbx_error *err)
{
	char dir[SBX_PATH_MAX], *names[SBX_CONFIG_MAX_DROPINS];
	const char *slash = strrchr(path, '/');
	size_t n = 0, i;
	struct dirent *de;
	DIR *d = NULL;
	int fd, r;

	/* path is canonical and absolute (sbx_trust_open_file checked). */
	if (sbx_snprintf(dir, sizeof(dir), "%.*s/%s", (int)(slash - path), path,
			 SBX_CONFIG_DROPIN_DIR) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "%s: drop-in directory path too long",
				     path);
	r = sbx_trust_open_dir(dir, trusted, &fd, err);
	if (r == -ENOENT) {
		if (err)
			memset(err, 0, sizeof(*err));
		return 0;
	}
	if (r < 0)
		return r;
	d = fdopendir(fd);
	if (!d) {
		r = sbx_error_set(err, errno, "fdopendir(%s): %s", dir, strerror(errno));
		close(fd);
		return r;
	}
	errno = 0;
	while ((de = readdir(d))) {
		if (!dropin_name_ok(de->d_name))
			continue;
		if (n == SBX_CONFIG_MAX_DROPINS) {
			r = sbx_error_set(err, E2BIG, "%s: more than %d drop-ins", dir,
					  SBX_CONFIG_MAX_DROPINS);
			goto out;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = sbx_error_set(err, ENOMEM, "%s: out of memory", dir);
			goto out;
		}
		n++;
	}
	if (errno) {
		r = sbx_error_set(err, errno, "readdir(%s): %s", dir, strerror(errno));
		goto out;
	}
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (i = 0; i < n; i++) {
		char full[SBX_PATH_MAX];
		uint64_t budget;
		int f;

		if (sbx_snprintf(full, sizeof(full), "%s/%s", dir, names[i]) != 0) {
			r = sbx_error_set(err, ENAMETOOLONG, "%s/%s: path too long", dir, names[i]);
			goto out;
		}
		/* The budget is for all files together: a login never reads
		 * more than one config's worth. */
		budget = SBX_CONFIG_MAX_BYTES - l->total;
		r = sbx_trust_open_at(dirfd(d), names[i], full, trusted, budget, &f, err);
		/* Removed since the listing: as if listed a moment later. */
		if (r == -ENOENT)
			continue;
		if (r == -EFBIG)
			r = sbx_error_set(err, EFBIG, "%s: %s and its drop-ins together are larger "
					  "than %u bytes", full, path, SBX_CONFIG_MAX_BYTES);
		if (r < 0)
			goto out;
		l->names[l->n] = strdup(full);
		r = l->names[l->n] ? sbx_read_fd(f, full, budget, &l->bufs[l->n],
						 &l->lens[l->n], err) :
				     sbx_error_set(err, ENOMEM, "%s: out of memory", full);
		close(f);
		l->total += l->lens[l->n];
		l->n++;
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	closedir(d);
	return r;
}

int sbx_config_read(const char *path, unsigned flags, struct sbx_config_text **out,
		    struct sbx_error *err)
{
	bool trusted = !(flags & SBX_CONFIG_SKIP_TRUST);
	struct sbx_config_text *l = calloc(1, sizeof(*l));
	int fd = -1, r;

	*out = NULL;
	if (!l)
		return sbx_error_set(err, ENOMEM, "%s: out of memory", path ? path : "config");
	r = sbx_trust_open_file(path, trusted, SBX_CONFIG_MAX_BYTES, &fd, err);
	if (r < 0)
		goto out;
	l->names[0] = strdup(path);
	l->n = 1;
	/* Read from the fd that was checked, never by name again. */
	r = l->names[0] ? sbx_read_fd(fd, path, SBX_CONFIG_MAX_BYTES, &l->bufs[0], &l->lens[0],
				      err) :
			  sbx_error_set(err, ENOMEM, "%s: out of memory", path);
	if (r < 0)
		goto out;
	l->total = l->lens[0];
	/* The main file exists: from here on no error may read as -ENOENT
	 * ("no configuration"), which the callers treat as "no agents". */
	r = load_dropins(path, trusted, l, err);
	if (r == -ENOENT)
		r = -EIO;
out:
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		sbx_config_text_free(l);
		return r;
	}
	*out = l;
	return 0;
}

int sbx_config_parse_text(const struct sbx_config_text *t, struct sbx_config **out,
			  struct sbx_error *err)
{
	struct sbx_config_source src[1 + SBX_CONFIG_MAX_DROPINS];
	size_t i;
	int r;

	for (i = 0; i < t->n; i++)
		src[i] = (struct sbx_config_source){ .name = t->names[i], .buf = t->bufs[i],
						     .len = t->lens[i] };
	r = sbx_config_parse_sources(src, t->n, out, err);
	/* An unknown profile is -ENOENT too: not "no config" to the callers. */
	return r == -ENOENT ? -EINVAL : r;
}

bool sbx_config_text_equal(const struct sbx_config_text *a, const struct sbx_config_text *b)
{
	size_t i;

	if (!a || !b || a->n != b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->names[i], b->names[i]) != 0 || a->lens[i] != b->lens[i] ||
		    memcmp(a->bufs[i], b->bufs[i], a->lens[i]) != 0)
			return false;
	return true;
}

void sbx_config_text_free(struct sbx_config_text *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++) {
		free(t->names[i]);
		free(t->bufs[i]);
	}
	free(t);
}

int sbx_config_load(const char *path, unsigned flags, struct sbx_config **out,
		    struct sbx_error *err)
{
	struct sbx_config_text *t = NULL;
	int r;

	r = sbx_config_read(path, flags, &t, err);
	if (r == 0)
		r = sbx_config_parse_text(t, out, err);
	sbx_config_text_free(t);
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

bool sbx_config_has_group_rules(const struct sbx_config *cfg)
{
	for (size_t i = 0; cfg && i < cfg->n_matches; i++)
		if (cfg->matches[i].kind == SBX_MATCH_GROUP)
			return true;
	return false;
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
					     "user %s matches group rules at %s:%u (%s) and %s:%u (%s); refusing",
					     user, hit->file, hit->line, hit->profile, m->file,
					     m->line, m->profile);
		}
	}
	if (!hit)
		return sbx_error_set(err, ENOENT, "%s: user %s: not an agent account (no [match] rule)",
				     cfg->path, user);
found:
	p = sbx_config_find_profile(cfg, hit->profile);
	if (!p)
		return sbx_error_set(err, ENOENT, "%s:%u: unknown profile '%s'", hit->file,
				     hit->line, hit->profile);
	*out = p;
	return 0;
}

int sbx_profile_set_key(struct sbx_profile *p, const char *key, const char *value,
			struct sbx_error *err)
{
	struct parser ps = { .file = "sbx_profile_set", .err = err };
	struct kv kv = { .file = "sbx_profile_set", .line = 0, .key = key, .val = value };
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

/* ---- who can read it ---------------------------------------------------- */

/*
 * agent-shell reads the config as the agent (the login shell runs with the
 * agent's uid), so a file only root can read refuses every agent session
 * with "Permission denied", exit 126, while root's own checks read it
 * fine. The rule, for every file of the config, its conf.d (listed: read
 * and search) and every directory above them (searched): the bits for
 * others allow it, or the group bits do and the file's group holds every
 * agent, which the config itself must show: it has [match] rules, every
 * group rule names that group, and every user rule names an account in it
 * (by primary group or membership). Owner bits never count: the trust
 * rules make the owner root, and root is never an agent. ACLs are not
 * read: a file readable only through one is reported.
 */
static bool group_holds_every_agent(const struct sbx_config *cfg, gid_t gid, const char *group)
{
	if (!group || cfg->n_matches == 0)
		return false;
	for (size_t i = 0; i < cfg->n_matches; i++) {
		const struct sbx_match *m = &cfg->matches[i];
		struct sbx_account a;
		bool in;

		if (m->kind == SBX_MATCH_GROUP) {
			if (strcmp(m->name, group) != 0)
				return false;
			continue;
		}
		if (sbx_account_by_name(m->name, &a, NULL) != 0)
			return false;
		in = a.gid == gid || sbx_account_in_group(&a, group);
		sbx_account_free(&a);
		if (!in)
			return false;
	}
	return true;
}

#define GROUP_BUF_SIZE (1u << 16)

struct access_walk {
	const struct sbx_config *cfg;
	sbx_config_access_fn fn;
	void *arg;
	size_t problems;
};

/* need: 4 read, 1 search, 5 both (in the "other" position). */
static void access_check(struct access_walk *w, const char *path, unsigned need,
			 const char *what)
{
	char group[SBX_NAME_MAX] = "", why[320], fix[SBX_PATH_MAX + 64];
	struct group gr, *res = NULL;
	struct stat st;
	bool group_ok;
	char *buf;

	if (stat(path, &st) != 0)
		return;	/* the load that came before found it; gone since */
	if ((st.st_mode & need) == need)
		return;
	/* A group too large for the buffer stays unnamed: then only the
	 * bits for others count, which errs towards the report. */
	buf = malloc(GROUP_BUF_SIZE);
	if (buf && getgrgid_r(st.st_gid, &gr, buf, GROUP_BUF_SIZE, &res) == 0 && res)
		snprintf(group, sizeof(group), "%s", res->gr_name);
	free(buf);
	group_ok = (st.st_mode & (need << 3)) == (need << 3) &&
		   group_holds_every_agent(w->cfg, st.st_gid, group[0] ? group : NULL);
	if (group_ok)
		return;
	snprintf(why, sizeof(why), "mode %04o, group %s: agents cannot %s it, and agent-shell "
		 "reads the config as the agent: every agent session (and every --run) is "
		 "refused (Permission denied, exit 126)", (unsigned)(st.st_mode & 07777),
		 group[0] ? group : "?", what);
	snprintf(fix, sizeof(fix), "chmod o+%s %s", need == 4 ? "r" : need == 1 ? "x" : "rx",
		 path);
	w->fn(w->arg, path, why, fix);
	w->problems++;
}

/* Every directory from "/" down to the one holding path, searched. */
static void access_check_above(struct access_walk *w, const char *path)
{
	char dir[SBX_PATH_MAX];
	size_t len;

	for (const char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		len = (size_t)(p - path);
		if (len >= sizeof(dir))
			return;
		memcpy(dir, path, len);
		dir[len] = '\0';
		access_check(w, dir, 1, "reach the config through");
	}
}

size_t sbx_config_check_agent_access(const struct sbx_config *cfg, sbx_config_access_fn fn,
				     void *arg)
{
	struct access_walk w = { .cfg = cfg, .fn = fn, .arg = arg };
	char dropins[SBX_PATH_MAX];
	const char *slash;

	if (!cfg || !cfg->n_files || cfg->path[0] != '/')
		return 0;
	access_check(&w, "/", 1, "reach the config through");
	access_check_above(&w, cfg->path);
	slash = strrchr(cfg->path, '/');
	if (sbx_snprintf(dropins, sizeof(dropins), "%.*s/%s", (int)(slash - cfg->path), cfg->path,
			 SBX_CONFIG_DROPIN_DIR) == 0)
		access_check(&w, dropins, 5, "list the drop-ins in");
	for (size_t i = 0; i < cfg->n_files; i++)
		access_check(&w, cfg->files[i], 4, "read");
	return w.problems;
}
