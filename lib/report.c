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

/* A report's JSON is a few KiB; anything much larger is not ours. */
#define REPORT_JSON_MAX (64u * 1024)

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
	[SBX_F_SECCOMP] = "seccomp",
	[SBX_F_COMMAND_GATE] = "command_gate",
};

const char *sbx_feature_name(enum sbx_feature f)
{
	if ((unsigned)f >= SBX_F_COUNT)
		return "unknown";
	return feature_names[f];
}

/* ---- building -------------------------------------------------------------- */

void sbx_report_init(struct sbx_report *r, const struct sbx_profile *p)
{
	unsigned f;

	memset(r, 0, sizeof(*r));
	sbx_strlcpy(r->profile_name, sizeof(r->profile_name), p->name);
	sbx_profile_hash(p, r->profile_hash);
	r->isolation = p->isolation;
	r->min_level = p->min_level;
	r->required = p->require & SBX_G_ALL;
	r->host_read = p->host_read;
	r->host_write = p->host_write;
	r->network = p->network;
	r->command = p->command;
	r->home = p->home;
	r->n_deny_read = p->n_deny_read;

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
	r->entry[SBX_F_HOME].requested = p->home != SBX_HOME_REAL;
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
static bool held(const struct sbx_report *r, enum sbx_feature f)
{
	return r->entry[f].achieved && r->entry[f].verified;
}

static uint32_t compute_guarantees(const struct sbx_report *r)
{
	uint32_t g = 0;
	bool net_denied = r->network != SBX_ACCESS_ALLOW;

	if (held(r, SBX_F_PIDNS) &&
	    (held(r, SBX_F_LANDLOCK_SCOPE) || held(r, SBX_F_SECCOMP)))
		g |= SBX_G_PROCESS_BOUNDARY;
	/* host_write allow means there is no write boundary to speak of.
	 * Landlock alone does not hold one: up to ABI 9 it has no right for
	 * chmod, chown, utimes, xattrs or file flags, so a host file the
	 * agent owns stays changeable; the read-only mount view does hold it
	 * (EROFS for all of them). */
	if (r->host_write != SBX_ACCESS_ALLOW && held(r, SBX_F_MOUNT_VIEW))
		g |= SBX_G_WRITE_BOUNDARY;
	if ((r->host_read == SBX_ACCESS_DENY && held(r, SBX_F_LANDLOCK_FS)) ||
	    (r->host_read == SBX_ACCESS_ALLOW && r->n_deny_read > 0 &&
	     held(r, SBX_F_DENY_READ)))
		g |= SBX_G_READ_BOUNDARY;
	/* Pathname unix sockets cross every network namespace: a host
	 * daemon's socket is part of the network boundary too. */
	if (net_denied && held(r, SBX_F_UNIX_SOCKETS) &&
	    (held(r, SBX_F_NETNS) || (held(r, SBX_F_LANDLOCK_NET) && held(r, SBX_F_SECCOMP))))
		g |= SBX_G_NETWORK_BOUNDARY;
	if (held(r, SBX_F_ENV_SCRUB))
		g |= SBX_G_ENV_SCRUB;
	if (held(r, SBX_F_HOME))
		g |= SBX_G_HOME_ISOLATION;
	if (r->command != SBX_ACCESS_ALLOW && held(r, SBX_F_COMMAND_GATE))
		g |= SBX_G_EXEC_BOUNDARY;
	if (held(r, SBX_F_NO_NEW_PRIVS) && held(r, SBX_F_CAPS))
		g |= SBX_G_NO_PRIVILEGE_GAIN;
	if (held(r, SBX_F_SECCOMP))
		g |= SBX_G_SYSCALL_FILTER;
	if (held(r, SBX_F_RLIMITS))
		g |= SBX_G_RESOURCE_LIMITS;
	return g;
}

/* The features each guarantee can rest on (for naming what is missing). */
static const enum sbx_feature *guarantee_inputs(uint32_t g, size_t *n)
{
	static const enum sbx_feature process[] = {
		SBX_F_PIDNS, SBX_F_LANDLOCK_SCOPE, SBX_F_SECCOMP };
	static const enum sbx_feature write[] = { SBX_F_MOUNT_VIEW };
	static const enum sbx_feature read_deny[] = { SBX_F_LANDLOCK_FS };
	static const enum sbx_feature net[] = {
		SBX_F_NETNS, SBX_F_LANDLOCK_NET, SBX_F_SECCOMP, SBX_F_UNIX_SOCKETS };
	static const enum sbx_feature env[] = { SBX_F_ENV_SCRUB };
	static const enum sbx_feature home[] = { SBX_F_HOME };
	static const enum sbx_feature exec[] = { SBX_F_COMMAND_GATE };
	static const enum sbx_feature nopriv[] = { SBX_F_NO_NEW_PRIVS, SBX_F_CAPS };
	static const enum sbx_feature sys[] = { SBX_F_SECCOMP };
	static const enum sbx_feature res[] = { SBX_F_RLIMITS };

#define RET(a) do { *n = ARRAY_SIZE(a); return a; } while (0)
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
	}
#undef RET
	*n = 0;
	return NULL;
}

/* A bounded appender that marks truncation with "...". */
struct sbuf {
	char *buf;
	size_t size, len;
	bool truncated;
};

static void sbuf_init(struct sbuf *b, char *buf, size_t size)
{
	b->buf = buf;
	b->size = size;
	b->len = 0;
	b->truncated = false;
	if (size)
		buf[0] = '\0';
}

/* Append raw bytes; stop (and mark) when fewer than 4 bytes would remain
 * for the "..." and the NUL. */
static void sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->truncated || b->size < 4)
		return;
	if (b->len + n > b->size - 4) {
		size_t room = b->size - 4 - b->len;

		memcpy(b->buf + b->len, s, room);
		b->len += room;
		memcpy(b->buf + b->len, "...", 4);
		b->len += 3;
		b->truncated = true;
		return;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

static void sbuf_str(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

static void sbuf_fmt(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void sbuf_fmt(struct sbuf *b, const char *fmt, ...)
{
	char tmp[600];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sbuf_add(b, tmp, strlen(tmp));
	if ((size_t)n >= sizeof(tmp) && !b->truncated)
		sbuf_str(b, "...");
}

/* "name (detail)" for an entry that does not hold. */
static void describe_missing(struct sbuf *b, const struct sbx_report *r,
			     enum sbx_feature f)
{
	const struct sbx_report_entry *e = &r->entry[f];

	if (!e->detail[0])
		sbuf_fmt(b, "%s (%s)", sbx_feature_name(f),
			 e->achieved ? "not verified" : "not achieved");
	else if (e->achieved)
		sbuf_fmt(b, "%s (not verified: %s)", sbx_feature_name(f), e->detail);
	else
		sbuf_fmt(b, "%s (%s)", sbx_feature_name(f), e->detail);
}

static void build_refusal(struct sbx_report *r)
{
	struct sbuf b;
	bool first = true;
	unsigned f, i;

	sbuf_init(&b, r->refusal, sizeof(r->refusal));
	if (r->level < r->min_level) {
		sbuf_fmt(&b, "level %s below floor %s", sbx_level_name(r->level),
			 sbx_level_name(r->min_level));
		if (r->isolation == SBX_ISOLATION_UNCONFINED)
			sbuf_str(&b, ": the profile is unconfined");
		for (f = 0; f < SBX_F_COUNT; f++) {
			if (!r->entry[f].requested || held(r, (enum sbx_feature)f))
				continue;
			sbuf_str(&b, first ? ": missing " : ", ");
			first = false;
			describe_missing(&b, r, (enum sbx_feature)f);
		}
		first = false;
	}
	for (i = 0; i < SBX_G_COUNT; i++) {
		uint32_t g = 1u << i;
		const enum sbx_feature *in;
		size_t n, k;
		bool any = false;

		if (!(r->required & g) || (r->guarantees & g))
			continue;
		if (!first)
			sbuf_str(&b, "; ");
		first = false;
		sbuf_fmt(&b, "required guarantee %s not held",
			 sbx_guarantee_name((enum sbx_guarantee)g));
		/* Profile choices that rule a guarantee out on their own. */
		if (g == SBX_G_WRITE_BOUNDARY && r->host_write == SBX_ACCESS_ALLOW) {
			sbuf_str(&b, ": the profile allows host writes");
			continue;
		}
		if (g == SBX_G_NETWORK_BOUNDARY && r->network == SBX_ACCESS_ALLOW) {
			sbuf_str(&b, ": the profile allows the network");
			continue;
		}
		if (g == SBX_G_EXEC_BOUNDARY && r->command == SBX_ACCESS_ALLOW) {
			sbuf_str(&b, ": the profile allows every command");
			continue;
		}
		if (g == SBX_G_READ_BOUNDARY && r->host_read != SBX_ACCESS_DENY) {
			if (r->n_deny_read == 0 || r->host_read != SBX_ACCESS_ALLOW) {
				sbuf_str(&b, ": the profile allows host reads with no deny_read entries");
				continue;
			}
			sbuf_str(&b, ": ");
			describe_missing(&b, r, SBX_F_DENY_READ);
			continue;
		}
		in = guarantee_inputs(g, &n);
		for (k = 0; k < n; k++) {
			if (held(r, in[k]))
				continue;
			sbuf_str(&b, any ? ", " : ": ");
			any = true;
			describe_missing(&b, r, in[k]);
		}
	}
}

void sbx_report_finish(struct sbx_report *r)
{
	bool all = true;
	unsigned f;

	r->guarantees = compute_guarantees(r);
	for (f = 0; f < SBX_F_COUNT; f++) {
		if (r->entry[f].requested && !held(r, (enum sbx_feature)f))
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
		       (r->guarantees & r->required) == r->required;
	if (r->floor_met)
		r->refusal[0] = '\0';
	else
		build_refusal(r);
}

/* ---- JSON out ------------------------------------------------------------------ */

int sbx_json_put_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}

static void json_key_string(FILE *out, const char *key, const char *val, bool comma)
{
	fprintf(out, "%s\"%s\":", comma ? "," : "", key);
	sbx_json_put_string(out, val);
}

static void json_guarantee_list(FILE *out, const char *key, uint32_t set)
{
	bool first = true;
	unsigned i;

	fprintf(out, ",\"%s\":[", key);
	for (i = 0; i < SBX_G_COUNT; i++) {
		if (!(set & (1u << i)))
			continue;
		fprintf(out, "%s\"%s\"", first ? "" : ",",
			sbx_guarantee_name((enum sbx_guarantee)(1u << i)));
		first = false;
	}
	fputc(']', out);
}

int sbx_report_to_json(const struct sbx_report *r, FILE *out)
{
	unsigned f;

	if (!r || !out)
		return -EINVAL;
	fputc('{', out);
	json_key_string(out, "session_id", r->session_id, false);
	json_key_string(out, "user", r->user, true);
	fprintf(out, ",\"uid\":%u", (unsigned)r->uid);
	json_key_string(out, "client", r->client, true);
	json_key_string(out, "service", r->service, true);
	fputs(",\"profile\":{", out);
	json_key_string(out, "name", r->profile_name, false);
	json_key_string(out, "hash", r->profile_hash, true);
	fputc('}', out);
	fprintf(out, ",\"isolation\":\"%s\"", sbx_isolation_name(r->isolation));
	fprintf(out, ",\"policy\":{\"host_read\":\"%s\",\"host_write\":\"%s\","
		"\"network\":\"%s\",\"command\":\"%s\",\"home\":\"%s\","
		"\"n_deny_read\":%zu}",
		sbx_access_name(r->host_read), sbx_access_name(r->host_write),
		sbx_access_name(r->network), sbx_access_name(r->command),
		sbx_home_name(r->home), r->n_deny_read);
	fprintf(out, ",\"landlock_abi\":%d", r->landlock_abi > 0 ? r->landlock_abi : 0);
	fputs(",\"entries\":[", out);
	for (f = 0; f < SBX_F_COUNT; f++) {
		const struct sbx_report_entry *e = &r->entry[f];

		fprintf(out, "%s{\"feature\":\"%s\",\"requested\":%s,"
			"\"achieved\":%s,\"verified\":%s,", f ? "," : "",
			sbx_feature_name((enum sbx_feature)f),
			e->requested ? "true" : "false",
			e->achieved ? "true" : "false",
			e->verified ? "true" : "false");
		json_key_string(out, "detail", e->detail, false);
		fputc('}', out);
	}
	fputc(']', out);
	json_guarantee_list(out, "guarantees", r->guarantees);
	json_guarantee_list(out, "required", r->required);
	fprintf(out, ",\"level\":\"%s\",\"min_level\":\"%s\",\"floor_met\":%s",
		sbx_level_name(r->level), sbx_level_name(r->min_level),
		r->floor_met ? "true" : "false");
	json_key_string(out, "refusal", r->refusal, true);
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON in: a strict reader for exactly the schema above ---------------------- */

/* The primitives (sbx_jr_*, internal.h) also read the probe's JSON. */
int sbx_jr_fail(struct sbx_jr *j, const char *msg)
{
	return sbx_error_set(j->err, EINVAL, "%s: %s at byte %zu", j->what, msg,
			     (size_t)(j->p - j->base));
}

void sbx_jr_ws(struct sbx_jr *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* Skip whitespace and consume c if it is next. */
bool sbx_jr_peek(struct sbx_jr *j, char c)
{
	sbx_jr_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

int sbx_jr_expect(struct sbx_jr *j, char c)
{
	char msg[32];

	if (sbx_jr_peek(j, c))
		return 0;
	snprintf(msg, sizeof(msg), "expected '%c'", c);
	return sbx_jr_fail(j, msg);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string into out (bounded); only the escapes our writer emits plus the
 * short JSON ones; \u limited to 0x01..0x7f (we never write more). */
int sbx_jr_string(struct sbx_jr *j, char *out, size_t size)
{
	size_t n = 0;

	if (sbx_jr_expect(j, '"'))
		return -EINVAL;
	for (;;) {
		unsigned char c;

		if (j->p >= j->end)
			return sbx_jr_fail(j, "unterminated string");
		c = (unsigned char)*j->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return sbx_jr_fail(j, "control byte in string");
		if (c == '\\') {
			if (j->p >= j->end)
				return sbx_jr_fail(j, "unterminated escape");
			switch (*j->p++) {
			case '"': c = '"'; break;
			case '\\': c = '\\'; break;
			case '/': c = '/'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				int v = 0, k, h;

				if (j->end - j->p < 4)
					return sbx_jr_fail(j, "short \\u escape");
				for (k = 0; k < 4; k++) {
					h = hexval(j->p[k]);
					if (h < 0)
						return sbx_jr_fail(j, "bad \\u escape");
					v = v * 16 + h;
				}
				j->p += 4;
				if (v < 1 || v > 0x7f)
					return sbx_jr_fail(j, "\\u escape outside 0x01-0x7f");
				c = (unsigned char)v;
				break;
			}
			default:
				return sbx_jr_fail(j, "unknown escape");
			}
		}
		if (n + 1 >= size)
			return sbx_jr_fail(j, "string too long");
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

int sbx_jr_bool(struct sbx_jr *j, bool *out)
{
	sbx_jr_ws(j);
	if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) {
		j->p += 4;
		*out = true;
		return 0;
	}
	if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) {
		j->p += 5;
		*out = false;
		return 0;
	}
	return sbx_jr_fail(j, "expected true or false");
}

/* A non-negative integer without sign, fraction or leading zeros. */
int sbx_jr_uint(struct sbx_jr *j, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *start;

	sbx_jr_ws(j);
	start = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned d = (unsigned)(*j->p - '0');

		if (v > (max - d) / 10)
			return sbx_jr_fail(j, "number out of range");
		v = v * 10 + d;
		j->p++;
	}
	if (j->p == start)
		return sbx_jr_fail(j, "expected a number");
	if (j->p - start > 1 && *start == '0')
		return sbx_jr_fail(j, "leading zero");
	*out = v;
	return 0;
}

/* An enum given by name: the index i < n for which name(i) matches. */
static int jr_enum(struct sbx_jr *j, const char *(*name)(int), int n, int *out)
{
	char buf[40];
	int i;

	if (sbx_jr_string(j, buf, sizeof(buf)))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (strcmp(buf, name(i)) == 0) {
			*out = i;
			return 0;
		}
	}
	return sbx_jr_fail(j, "unknown name");
}

static const char *access_name_i(int i) { return sbx_access_name((enum sbx_access)i); }
static const char *home_name_i(int i) { return sbx_home_name((enum sbx_home)i); }
static const char *isolation_name_i(int i) { return sbx_isolation_name((enum sbx_isolation)i); }
static const char *level_name_i(int i) { return sbx_level_name((enum sbx_level)i); }
static const char *guarantee_name_i(int i) { return sbx_guarantee_name((enum sbx_guarantee)(1u << i)); }

static int jr_guarantees(struct sbx_jr *j, uint32_t *out)
{
	uint32_t set = 0;
	int i = 0;

	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	if (sbx_jr_peek(j, ']')) {
		*out = 0;
		return 0;
	}
	do {
		if (jr_enum(j, guarantee_name_i, SBX_G_COUNT, &i))
			return -EINVAL;
		if (set & (1u << i))
			return sbx_jr_fail(j, "duplicate guarantee");
		set |= 1u << i;
	} while (sbx_jr_peek(j, ','));
	if (sbx_jr_expect(j, ']'))
		return -EINVAL;
	*out = set;
	return 0;
}

/* Object keys: each known key exactly once, in any order, nothing else. */
int sbx_jr_key(struct sbx_jr *j, const char *const *keys, size_t n, uint32_t *seen)
{
	char key[32];
	size_t i;

	if (sbx_jr_string(j, key, sizeof(key)))
		return -EINVAL;
	if (sbx_jr_expect(j, ':'))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (strcmp(key, keys[i]) == 0) {
			if (*seen & (1u << i))
				return sbx_jr_fail(j, "duplicate key");
			*seen |= 1u << i;
			return (int)i;
		}
	}
	return sbx_jr_fail(j, "unknown key");
}

static int jr_profile(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = { "name", "hash" };
	uint32_t seen = 0;
	int k;

	if (sbx_jr_expect(j, '{'))
		return -EINVAL;
	do {
		k = sbx_jr_key(j, keys, ARRAY_SIZE(keys), &seen);
		if (k < 0)
			return k;
		if (k == 0 && sbx_jr_string(j, r->profile_name, sizeof(r->profile_name)))
			return -EINVAL;
		if (k == 1 && sbx_jr_string(j, r->profile_hash, sizeof(r->profile_hash)))
			return -EINVAL;
	} while (sbx_jr_peek(j, ','));
	if (seen != (1u << ARRAY_SIZE(keys)) - 1)
		return sbx_jr_fail(j, "profile: missing key");
	return sbx_jr_expect(j, '}');
}

static int jr_policy(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = {
		"host_read", "host_write", "network", "command", "home", "n_deny_read",
	};
	uint32_t seen = 0;
	uint64_t n;
	int k, v = 0;

	if (sbx_jr_expect(j, '{'))
		return -EINVAL;
	do {
		k = sbx_jr_key(j, keys, ARRAY_SIZE(keys), &seen);
		if (k < 0)
			return k;
		if (k == 5) {
			if (sbx_jr_uint(j, SBX_MAX_DENY, &n))
				return -EINVAL;
			r->n_deny_read = (size_t)n;
			continue;
		}
		if (k == 4) {
			if (jr_enum(j, home_name_i, 3, &v))
				return -EINVAL;
			r->home = (enum sbx_home)v;
			continue;
		}
		if (jr_enum(j, access_name_i, 3, &v))
			return -EINVAL;
		if (k == 0)
			r->host_read = (enum sbx_access)v;
		else if (k == 1)
			r->host_write = (enum sbx_access)v;
		else if (k == 2)
			r->network = (enum sbx_access)v;
		else
			r->command = (enum sbx_access)v;
	} while (sbx_jr_peek(j, ','));
	if (seen != (1u << ARRAY_SIZE(keys)) - 1)
		return sbx_jr_fail(j, "policy: missing key");
	return sbx_jr_expect(j, '}');
}

/* entries: exactly SBX_F_COUNT objects, in enum order. */
static int jr_entries(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = {
		"feature", "requested", "achieved", "verified", "detail",
	};
	unsigned f;

	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	for (f = 0; f < SBX_F_COUNT; f++) {
		struct sbx_report_entry *e = &r->entry[f];
		char name[40];
		uint32_t seen = 0;
		int k;

		if (f && sbx_jr_expect(j, ','))
			return -EINVAL;
		if (sbx_jr_expect(j, '{'))
			return -EINVAL;
		do {
			k = sbx_jr_key(j, keys, ARRAY_SIZE(keys), &seen);
			if (k < 0)
				return k;
			if (k == 0) {
				if (sbx_jr_string(j, name, sizeof(name)))
					return -EINVAL;
				if (strcmp(name, sbx_feature_name((enum sbx_feature)f)))
					return sbx_jr_fail(j, "entries out of order or unknown feature");
			} else if (k == 4) {
				if (sbx_jr_string(j, e->detail, sizeof(e->detail)))
					return -EINVAL;
			} else if (sbx_jr_bool(j, k == 1 ? &e->requested :
					    k == 2 ? &e->achieved : &e->verified)) {
				return -EINVAL;
			}
		} while (sbx_jr_peek(j, ','));
		if (seen != (1u << ARRAY_SIZE(keys)) - 1)
			return sbx_jr_fail(j, "entry: missing key");
		if (e->verified && !e->achieved)
			return sbx_jr_fail(j, "entry verified but not achieved");
		if (sbx_jr_expect(j, '}'))
			return -EINVAL;
	}
	return sbx_jr_expect(j, ']');
}

int sbx_report_from_json(const char *buf, size_t len, struct sbx_report *out,
			 struct sbx_error *err)
{
	static const char *const keys[] = {
		"session_id", "user", "uid", "client", "service", "profile",
		"isolation", "policy", "landlock_abi", "entries", "guarantees",
		"required", "level", "min_level", "floor_met", "refusal",
	};
	struct sbx_report *r;
	struct sbx_jr j;
	uint32_t seen = 0;
	uint64_t n = 0;
	int k, v = 0, rc = -EINVAL;

	if (!buf || !out)
		return sbx_error_set(err, EINVAL, "report JSON: no input");
	if (len > REPORT_JSON_MAX)
		return sbx_error_set(err, EINVAL, "report JSON: larger than %u bytes",
				     REPORT_JSON_MAX);
	j = (struct sbx_jr){ buf, buf, buf + len, "report JSON", err };
	r = calloc(1, sizeof(*r));
	if (!r)
		return sbx_error_set(err, ENOMEM, "report JSON: out of memory");
	if (sbx_jr_expect(&j, '{'))
		goto out;
	do {
		k = sbx_jr_key(&j, keys, ARRAY_SIZE(keys), &seen);
		if (k < 0) {
			rc = k;
			goto out;
		}
		switch (k) {
		case 0: rc = sbx_jr_string(&j, r->session_id, sizeof(r->session_id)); break;
		case 1: rc = sbx_jr_string(&j, r->user, sizeof(r->user)); break;
		case 2:
			/* (uid_t)-1 is "no uid" to the kernel: never a session's. */
			rc = sbx_jr_uint(&j, UINT32_MAX - 1, &n);
			r->uid = (uid_t)n;
			break;
		case 3: rc = sbx_jr_string(&j, r->client, sizeof(r->client)); break;
		case 4: rc = sbx_jr_string(&j, r->service, sizeof(r->service)); break;
		case 5: rc = jr_profile(&j, r); break;
		case 6:
			rc = jr_enum(&j, isolation_name_i, 2, &v);
			r->isolation = (enum sbx_isolation)v;
			break;
		case 7: rc = jr_policy(&j, r); break;
		case 8:
			rc = sbx_jr_uint(&j, 1000, &n);
			r->landlock_abi = (int)n;
			break;
		case 9: rc = jr_entries(&j, r); break;
		case 10: rc = jr_guarantees(&j, &r->guarantees); break;
		case 11: rc = jr_guarantees(&j, &r->required); break;
		case 12:
			rc = jr_enum(&j, level_name_i, 3, &v);
			r->level = (enum sbx_level)v;
			break;
		case 13:
			rc = jr_enum(&j, level_name_i, 3, &v);
			r->min_level = (enum sbx_level)v;
			break;
		case 14: rc = sbx_jr_bool(&j, &r->floor_met); break;
		case 15: rc = sbx_jr_string(&j, r->refusal, sizeof(r->refusal)); break;
		}
		if (rc)
			goto out;
	} while (sbx_jr_peek(&j, ','));
	rc = -EINVAL;
	if (sbx_jr_expect(&j, '}'))
		goto out;
	if (seen != (1u << ARRAY_SIZE(keys)) - 1) {
		for (k = 0; k < (int)ARRAY_SIZE(keys); k++)
			if (!(seen & (1u << k)))
				break;
		/* cppcheck-suppress arrayIndexOutOfBounds ; a bit of 0..15 is unset: k < 16 */
		rc = sbx_error_set(err, EINVAL, "report JSON: missing key \"%s\"", keys[k]);
		goto out;
	}
	sbx_jr_ws(&j);
	if (j.p != j.end) {
		rc = sbx_jr_fail(&j, "trailing bytes after the object");
		goto out;
	}
	*out = *r;
	rc = 0;
out:
	free(r);
	return rc;
}

/* ---- text -------------------------------------------------------------------- */

static void text_guarantees(FILE *out, const char *label, uint32_t set)
{
	bool first = true;
	unsigned i;

	fprintf(out, "%-12s", label);
	for (i = 0; i < SBX_G_COUNT; i++) {
		if (!(set & (1u << i)))
			continue;
		fprintf(out, "%s%s", first ? "" : ", ",
			sbx_guarantee_name((enum sbx_guarantee)(1u << i)));
		first = false;
	}
	fputs(first ? "(none)\n" : "\n", out);
}

int sbx_report_to_text(const struct sbx_report *r, FILE *out)
{
	unsigned f;

	if (!r || !out)
		return -EINVAL;
	fprintf(out, "session     %s\nuser        %s (uid %u) from %s via %s\n",
		r->session_id[0] ? r->session_id : "-", r->user[0] ? r->user : "-",
		(unsigned)r->uid, r->client[0] ? r->client : "-",
		r->service[0] ? r->service : "-");
	fprintf(out, "profile     %s (hash %.16s), %s, Landlock ABI %d\n\n",
		r->profile_name, r->profile_hash, sbx_isolation_name(r->isolation),
		r->landlock_abi);
	fprintf(out, "%-16s %-9s %-8s %-8s %s\n", "feature", "requested",
		"achieved", "verified", "detail");
	for (f = 0; f < SBX_F_COUNT; f++) {
		const struct sbx_report_entry *e = &r->entry[f];

		fprintf(out, "%-16s %-9s %-8s %-8s %s\n",
			sbx_feature_name((enum sbx_feature)f),
			e->requested ? "yes" : "no", e->achieved ? "yes" : "no",
			e->verified ? "yes" : "no", e->detail);
	}
	fputc('\n', out);
	text_guarantees(out, "guarantees", r->guarantees);
	text_guarantees(out, "required", r->required);
	fprintf(out, "level       %s (floor %s)\n", sbx_level_name(r->level),
		sbx_level_name(r->min_level));
	if (r->floor_met)
		fputs("verdict     floor met\n", out);
	else
		fprintf(out, "verdict     refused: %s\n", r->refusal);
	return ferror(out) ? -EIO : 0;
}

/* ---- the syslog line ----------------------------------------------------------- */

static bool logline_plain(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!*p)
		return false;
	for (; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._:/@,+-", *p)))
			return false;
	}
	return true;
}

/* A value: bare when it is made of safe bytes, else quoted with \" \\ and
 * \xNN for control and non-ASCII bytes, so the line never holds a newline
 * or anything a log parser could mistake for a field. */
static void logline_value(struct sbuf *b, const char *s, bool force_quote)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	if (!force_quote && logline_plain(s)) {
		sbuf_str(b, s);
		return;
	}
	sbuf_add(b, "\"", 1);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			sbuf_add(b, esc, 2);
		} else if (*p < 0x20 || *p >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			sbuf_add(b, esc, 4);
		} else {
			sbuf_add(b, (const char *)p, 1);
		}
	}
	sbuf_add(b, "\"", 1);
}

static void logline_kv(struct sbuf *b, const char *key, const char *val)
{
	if (b->len)
		sbuf_add(b, " ", 1);
	sbuf_str(b, key);
	sbuf_add(b, "=", 1);
	logline_value(b, val, false);
}

int sbx_report_to_logline(const struct sbx_report *r, char *buf, size_t size)
{
	struct sbuf b;
	char num[24], hash[17];
	bool first = true;
	unsigned f, i;

	if (!r || !buf || size < 4) {
		if (buf && size)
			buf[0] = '\0';
		return -EINVAL;
	}
	sbuf_init(&b, buf, size);
	logline_kv(&b, "session", r->session_id[0] ? r->session_id : "-");
	logline_kv(&b, "user", r->user[0] ? r->user : "-");
	snprintf(num, sizeof(num), "%u", (unsigned)r->uid);
	logline_kv(&b, "uid", num);
	logline_kv(&b, "client", r->client[0] ? r->client : "-");
	logline_kv(&b, "service", r->service[0] ? r->service : "-");
	logline_kv(&b, "profile", r->profile_name);
	snprintf(hash, sizeof(hash), "%.16s", r->profile_hash);
	logline_kv(&b, "hash", hash[0] ? hash : "-");
	logline_kv(&b, "level", sbx_level_name(r->level));
	logline_kv(&b, "floor", r->floor_met ? "met" : "refused");
	sbuf_str(&b, " guarantees=");
	for (i = 0; i < SBX_G_COUNT; i++) {
		if (!(r->guarantees & (1u << i)))
			continue;
		if (!first)
			sbuf_add(&b, ",", 1);
		first = false;
		sbuf_str(&b, sbx_guarantee_name((enum sbx_guarantee)(1u << i)));
	}
	if (first)
		sbuf_str(&b, "-");
	first = true;
	for (f = 0; f < SBX_F_COUNT; f++) {
		if (!r->entry[f].requested || held(r, (enum sbx_feature)f))
			continue;
		sbuf_str(&b, first ? " degraded=" : ",");
		first = false;
		sbuf_str(&b, sbx_feature_name((enum sbx_feature)f));
		sbuf_add(&b, ":", 1);
		logline_value(&b, r->entry[f].detail[0] ? r->entry[f].detail :
			      r->entry[f].achieved ? "not verified" : "not achieved", true);
	}
	if (!r->floor_met)
		logline_kv(&b, "refusal", r->refusal);
	return 0;
}

int sbx_report_write_file(const char *path, const struct sbx_report *r)
{
	return sbx_report_write_at(AT_FDCWD, path, r);
}

int sbx_report_write_at(int dirfd, const char *name, const struct sbx_report *r)
{
	FILE *f;
	int fd, ret;

	/* The directory may be one the sandboxed program writes (its home,
	 * the host's /tmp without a mount view): a FIFO put at this name
	 * would block the writer, which for the outer process means before
	 * it keeps the session's time. */
	fd = sbx_open_regular_at(dirfd, name, O_WRONLY | O_CREAT, 0600, true);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = sbx_report_to_json(r, f);
	if (fclose(f) != 0 && ret == 0)
		ret = -EIO;
	return ret;
}
