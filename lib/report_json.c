/* SPDX-License-Identifier: BSD-3-Clause */
/* The report as JSON: the writer, the strict reader of that schema (unknown keys skipped), and report files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- JSON out ------------------------------------------------------------------ */

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

/* RFC 3339, UTC, whole seconds: "2026-12-01T07:57:05Z". */
static int time_rfc3339(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !gmtime_r(&tt, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) != 20)
		return -EINVAL;
	return 0;
}

static void json_argv(FILE *out, const struct sbx_report *r)
{
	const char *w = r->argv_buf;

	fputs(",\"command\":[", out);
	for (unsigned i = 0; i < r->argc; i++) {
		if (i)
			fputc(',', out);
		sbx_json_put_string(out, w);
		w += strlen(w) + 1;
	}
	fprintf(out, "],\"command_truncated\":%s", r->argv_truncated ? "true" : "false");
}

/* network = proxy: the list as an array, the bridge's counts. */
static void json_egress(FILE *out, const struct sbx_report *r)
{
	const char *p = r->egress_list;

	fputs(",\"egress\":{\"list\":[", out);
	while (*p) {
		size_t n = strcspn(p, ",");
		char entry[SBX_EGRESS_HOST_MAX + 8];

		snprintf(entry, sizeof(entry), "%.*s", (int)n, p);
		sbx_json_put_string(out, entry);
		p += n;
		if (*p) {
			p += strspn(p, ", ");
			fputc(',', out);
		}
	}
	fprintf(out, "],\"list_truncated\":%s,\"allowed\":%llu,\"refused\":%llu,"
		"\"failed\":%llu,\"unanswered\":%llu}", r->egress_list_truncated ? "true" : "false",
		(unsigned long long)r->egress_allowed, (unsigned long long)r->egress_refused,
		(unsigned long long)r->egress_failed, (unsigned long long)r->egress_unanswered);
}

int sbx_report_to_json(const struct sbx_report *r, FILE *out)
{
	char when[32];
	unsigned f;

	if (!r || !out)
		return -EINVAL;
	fprintf(out, "{\"schema\":%d,", SBX_REPORT_SCHEMA);
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
		sbx_network_name(r->network), sbx_access_name(r->command),
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
	/* When and what: keys left out while unknown (a prediction has no
	 * start or command; a report written before the program ended has no
	 * end and no exit status). */
	if (time_rfc3339(r->started, when) == 0)
		json_key_string(out, "started", when, true);
	if (r->argc || r->argv_truncated)
		json_argv(out, r);
	if (time_rfc3339(r->ended, when) == 0)
		json_key_string(out, "ended", when, true);
	if (r->exit_status >= 0 && r->exit_status <= 255)
		fprintf(out, ",\"exit_status\":%d", r->exit_status);
	if (r->network == SBX_NETWORK_PROXY || r->egress_list[0] || r->egress_list_truncated ||
	    r->egress_allowed || r->egress_refused || r->egress_failed || r->egress_unanswered)
		json_egress(out, r);
	fputs("}\n", out);
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON in: a strict reader of the schema above ----------------------------- */

/* n decimal digits at s, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Exactly what time_rfc3339 writes; a date that does not exist (02-30)
 * does not come back the same and is refused. */
static int jr_time(struct sbx_jr *j, int64_t *out)
{
	char buf[32], again[32];
	struct tm tm = { 0 };
	time_t t;

	if (sbx_jr_string(j, buf, sizeof(buf)))
		return -EINVAL;
	if (strlen(buf) != 20 || buf[4] != '-' || buf[7] != '-' || buf[10] != 'T' ||
	    buf[13] != ':' || buf[16] != ':' || buf[19] != 'Z' ||
	    (tm.tm_year = digits(buf, 4)) < 0 || (tm.tm_mon = digits(buf + 5, 2)) < 0 ||
	    (tm.tm_mday = digits(buf + 8, 2)) < 0 || (tm.tm_hour = digits(buf + 11, 2)) < 0 ||
	    (tm.tm_min = digits(buf + 14, 2)) < 0 || (tm.tm_sec = digits(buf + 17, 2)) < 0)
		return sbx_jr_fail(j, "time not in the form 2026-12-01T07:57:05Z");
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	if (t <= 0 || time_rfc3339((int64_t)t, again) != 0 || strcmp(again, buf) != 0)
		return sbx_jr_fail(j, "time out of range");
	*out = (int64_t)t;
	return 0;
}

static int jr_argv(struct sbx_jr *j, struct sbx_report *r)
{
	size_t used = 0;

	r->argc = 0;
	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	if (sbx_jr_peek(j, ']'))
		return 0;
	do {
		if (r->argc == SBX_REPORT_ARGV_MAX)
			return sbx_jr_fail(j, "more command words than a report holds");
		if (sbx_jr_string(j, r->argv_buf + used, sizeof(r->argv_buf) - used))
			return -EINVAL;
		used += strlen(r->argv_buf + used) + 1;
		r->argc++;
	} while (used < sizeof(r->argv_buf) && sbx_jr_peek(j, ','));
	return sbx_jr_expect(j, ']');
}

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
static const char *network_name_i(int i) { return sbx_network_name((enum sbx_access)i); }
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
		char name[40];

		if (sbx_jr_string(j, name, sizeof(name)))
			return -EINVAL;
		for (i = 0; i < SBX_G_COUNT; i++)
			if (strcmp(name, guarantee_name_i(i)) == 0)
				break;
		/* A newer writer's guarantee: not one this reader can weigh. */
		if (i == SBX_G_COUNT) {
			if (!j->skip_unknown)
				return sbx_jr_fail(j, "unknown name");
			continue;
		}
		if (set & (1u << i))
			return sbx_jr_fail(j, "duplicate guarantee");
		set |= 1u << i;
	} while (sbx_jr_peek(j, ','));
	if (sbx_jr_expect(j, ']'))
		return -EINVAL;
	*out = set;
	return 0;
}

static int profile_field(struct sbx_jr *j, int k, void *ctx)
{
	struct sbx_report *r = ctx;

	return k == 0 ? sbx_jr_string(j, r->profile_name, sizeof(r->profile_name)) :
			sbx_jr_string(j, r->profile_hash, sizeof(r->profile_hash));
}

static int jr_profile(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = { "name", "hash" };

	return sbx_jr_object(j, keys, ARRAY_SIZE(keys), "profile", profile_field, r);
}

static int policy_field(struct sbx_jr *j, int k, void *ctx)
{
	struct sbx_report *r = ctx;
	enum sbx_access *access[] = { &r->host_read, &r->host_write, &r->network, &r->command };
	uint64_t n;
	int v = 0;

	if (k == 5) {
		if (sbx_jr_uint(j, SBX_MAX_DENY, &n))
			return -EINVAL;
		r->n_deny_read = (size_t)n;
		return 0;
	}
	if (k == 4) {
		if (jr_enum(j, home_name_i, 3, &v))
			return -EINVAL;
		r->home = (enum sbx_home)v;
		return 0;
	}
	if (jr_enum(j, k == 2 ? network_name_i : access_name_i, 3, &v))
		return -EINVAL;
	*access[k] = (enum sbx_access)v;
	return 0;
}

static int jr_policy(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = {
		"host_read", "host_write", "network", "command", "home", "n_deny_read",
	};

	return sbx_jr_object(j, keys, ARRAY_SIZE(keys), "policy", policy_field, r);
}

struct entry_ctx {
	struct sbx_report_entry *e;
	unsigned f;
};

static int entry_field(struct sbx_jr *j, int k, void *ctx)
{
	struct entry_ctx *c = ctx;
	struct sbx_report_entry *e = c->e;
	char name[40];

	switch (k) {
	case 0:
		if (sbx_jr_string(j, name, sizeof(name)))
			return -EINVAL;
		for (unsigned f = 0; f < SBX_F_COUNT; f++) {
			if (strcmp(name, sbx_feature_name((enum sbx_feature)f)) == 0) {
				c->f = f;
				return 0;
			}
		}
		if (!j->skip_unknown)
			return sbx_jr_fail(j, "unknown feature");
		return 0;
	case 1: return sbx_jr_bool(j, &e->requested);
	case 2: return sbx_jr_bool(j, &e->achieved);
	case 3: return sbx_jr_bool(j, &e->verified);
	default: return sbx_jr_string(j, e->detail, sizeof(e->detail));
	}
}

/* entries: one object per feature, by name, in any order. A feature this
 * reader does not know (a newer writer's) is skipped; one it knows but
 * does not find stays not requested (an older writer's). */
static int jr_entries(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = {
		"feature", "requested", "achieved", "verified", "detail",
	};
	uint32_t seen = 0;

	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	if (sbx_jr_peek(j, ']'))
		return 0;
	do {
		struct sbx_report_entry scratch;
		struct entry_ctx c = { &scratch, SBX_F_COUNT };
		int rc;

		memset(&scratch, 0, sizeof(scratch));
		rc = sbx_jr_object(j, keys, ARRAY_SIZE(keys), "entry", entry_field, &c);
		if (rc)
			return rc;
		if (scratch.verified && !scratch.achieved)
			return sbx_jr_fail(j, "entry verified but not achieved");
		if (c.f == SBX_F_COUNT)
			continue;
		if (seen & (1u << c.f))
			return sbx_jr_fail(j, "duplicate feature");
		seen |= 1u << c.f;
		r->entry[c.f] = scratch;
	} while (sbx_jr_peek(j, ','));
	return sbx_jr_expect(j, ']');
}

/* One list entry as the writer puts it: HOST:PORT, [V6]:PORT or
 * *.SUFFIX:PORT, no separator. */
static bool egress_entry_text_ok(const char *s)
{
	if (!s[0])
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      strchr("-.*:[]", *s)))
			return false;
	return true;
}

static int egress_list_read(struct sbx_jr *j, struct sbx_report *r)
{
	struct sbx_sbuf b;
	bool first = true;

	sbx_sbuf_init(&b, r->egress_list, sizeof(r->egress_list));
	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	if (sbx_jr_peek(j, ']'))
		return 0;
	do {
		char entry[SBX_EGRESS_HOST_MAX + 8];

		if (sbx_jr_string(j, entry, sizeof(entry)))
			return -EINVAL;
		if (!egress_entry_text_ok(entry))
			return sbx_jr_fail(j, "egress list entry not HOST:PORT");
		if (!first)
			sbx_sbuf_str(&b, ", ");
		first = false;
		sbx_sbuf_str(&b, entry);
		if (b.truncated)
			return sbx_jr_fail(j, "egress list longer than a report holds");
	} while (sbx_jr_peek(j, ','));
	return sbx_jr_expect(j, ']');
}

static int egress_field(struct sbx_jr *j, int k, void *ctx)
{
	struct sbx_report *r = ctx;
	uint64_t *count[] = { &r->egress_allowed, &r->egress_refused, &r->egress_failed,
			      &r->egress_unanswered };

	if (k == 0)
		return egress_list_read(j, r);
	if (k == 1)
		return sbx_jr_bool(j, &r->egress_list_truncated);
	return sbx_jr_uint(j, UINT64_MAX, count[k - 2]);
}

static int jr_egress(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = { "list", "list_truncated", "allowed", "refused", "failed",
					    "unanswered" };

	/* unanswered came after the others: optional. */
	return sbx_jr_object_opt(j, keys, ARRAY_SIZE(keys), 1u << 5, "egress", egress_field, r);
}

static int report_field(struct sbx_jr *j, int k, void *ctx)
{
	struct sbx_report *r = ctx;
	uint64_t n = 0;
	int v = 0, rc;

	switch (k) {
	case 0: return sbx_jr_string(j, r->session_id, sizeof(r->session_id));
	case 1: return sbx_jr_string(j, r->user, sizeof(r->user));
	case 2:
		/* (uid_t)-1 is "no uid" to the kernel: never a session's. */
		rc = sbx_jr_uint(j, UINT32_MAX - 1, &n);
		r->uid = (uid_t)n;
		return rc;
	case 3: return sbx_jr_string(j, r->client, sizeof(r->client));
	case 4: return sbx_jr_string(j, r->service, sizeof(r->service));
	case 5: return jr_profile(j, r);
	case 6:
		rc = jr_enum(j, isolation_name_i, 2, &v);
		r->isolation = (enum sbx_isolation)v;
		return rc;
	case 7: return jr_policy(j, r);
	case 8:
		rc = sbx_jr_uint(j, 1000, &n);
		r->landlock_abi = (int)n;
		return rc;
	case 9: return jr_entries(j, r);
	case 10: return jr_guarantees(j, &r->guarantees);
	case 11: return jr_guarantees(j, &r->required);
	case 12:
	case 13:
		rc = jr_enum(j, level_name_i, 3, &v);
		*(k == 12 ? &r->level : &r->min_level) = (enum sbx_level)v;
		return rc;
	case 14: return sbx_jr_bool(j, &r->floor_met);
	case 15: return sbx_jr_string(j, r->refusal, sizeof(r->refusal));
	case 16:
		rc = sbx_jr_uint(j, 1000, &n);
		if (rc == 0 && n > SBX_REPORT_SCHEMA)
			return sbx_jr_fail(j, "schema newer than this reader's");
		return rc;
	case 17: return jr_time(j, &r->started);
	case 18: return jr_argv(j, r);
	case 19: return sbx_jr_bool(j, &r->argv_truncated);
	case 20: return jr_time(j, &r->ended);
	case 22: return jr_egress(j, r);
	default:
		rc = sbx_jr_uint(j, 255, &n);
		r->exit_status = (int)n;
		return rc;
	}
}

int sbx_report_from_json(const char *buf, size_t len, struct sbx_report *out,
			 struct sbx_error *err)
{
	static const char *const keys[] = {
		"session_id", "user", "uid", "client", "service", "profile",
		"isolation", "policy", "landlock_abi", "entries", "guarantees",
		"required", "level", "min_level", "floor_met", "refusal",
		/* Schema 1; optional, so a report of an earlier version
		 * (schema 0: none of them) still reads. */
		"schema", "started", "command", "command_truncated", "ended", "exit_status",
		/* Added in schema 1 with network = proxy. */
		"egress",
	};
	const uint32_t optional = 0x7fu << 16;
	struct sbx_report *r;
	struct sbx_jr j;
	int rc;

	if (!buf || !out)
		return sbx_error_set(err, EINVAL, "report JSON: no input");
	if (len > SBX_REPORT_JSON_MAX)
		return sbx_error_set(err, EINVAL, "report JSON: larger than %u bytes",
				     SBX_REPORT_JSON_MAX);
	/* A newer writer's keys are skipped, not refused. */
	j = (struct sbx_jr){ buf, buf, buf + len, "report JSON", err, true };
	r = calloc(1, sizeof(*r));
	if (!r)
		return sbx_error_set(err, ENOMEM, "report JSON: out of memory");
	r->exit_status = -1;
	rc = sbx_jr_object_opt(&j, keys, ARRAY_SIZE(keys), optional, NULL, report_field, r);
	if (rc == 0) {
		sbx_jr_ws(&j);
		if (j.p != j.end)
			rc = sbx_jr_fail(&j, "trailing bytes after the object");
	}
	if (rc == 0)
		*out = *r;
	free(r);
	return rc;
}

/* ---- files ------------------------------------------------------------------- */

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
