/* SPDX-License-Identifier: BSD-3-Clause */
/* The report as JSON: the writer, the strict reader of that schema (unknown keys skipped), and report files. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- JSON out ------------------------------------------------------------------ */

/* A string as it shows (sbx_json_put_string: strict UTF-8, no control
 * character) and, when that is not the string byte for byte, its bytes
 * under KEY_hex, so that a reader gets back exactly what was there. */
static void json_key_string(FILE *out, const char *key, const char *val, bool comma)
{
	fprintf(out, "%s\"%s\":", comma ? "," : "", key);
	sbx_json_put_string(out, val);
	if (!sbx_text_is_shown(val)) {
		fprintf(out, ",\"%s_hex\":", key);
		sbx_json_put_hex(out, val);
	}
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

/* The words as they show; when one does not show as itself, every word's
 * bytes again in command_hex, one for one. */
static void json_argv(FILE *out, const struct sbx_report *r)
{
	const char *w = r->argv_buf;
	bool exact = true;

	fputs(",\"command\":[", out);
	for (unsigned i = 0; i < r->argc; i++) {
		if (i)
			fputc(',', out);
		sbx_json_put_string(out, w);
		exact &= sbx_text_is_shown(w);
		w += strlen(w) + 1;
	}
	fputc(']', out);
	if (!exact) {
		fputs(",\"command_hex\":[", out);
		w = r->argv_buf;
		for (unsigned i = 0; i < r->argc; i++) {
			if (i)
				fputc(',', out);
			sbx_json_put_hex(out, w);
			w += strlen(w) + 1;
		}
		fputc(']', out);
	}
	fprintf(out, ",\"command_truncated\":%s", r->argv_truncated ? "true" : "false");
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

/* ---- strings, and their exact bytes ---------------------------------------- */

/* The longest string of a report but the command (refusal), and the
 * command's words together. */
#define TEXT_MAX sizeof(((struct sbx_report *)0)->refusal)
#define WORDS_MAX sizeof(((struct sbx_report *)0)->argv_buf)

/* A string of the report as read: how it shows (KEY), and its bytes when
 * the writer gave them (KEY_hex), in whichever order the keys came. */
struct jr_text {
	char shown[SBX_TEXT_SHOWN_MAX(TEXT_MAX)];
	char hex[2 * TEXT_MAX + 1];
	bool have_shown, have_hex;
};

static int jr_text_shown(struct sbx_jr *j, struct jr_text *t)
{
	t->have_shown = true;
	return sbx_jr_string(j, t->shown, sizeof(t->shown));
}

static int jr_text_hex(struct sbx_jr *j, struct jr_text *t)
{
	t->have_hex = true;
	return sbx_jr_string(j, t->hex, sizeof(t->hex));
}

static int lower_hexval(char c)
{
	return c >= 'A' && c <= 'F' ? -1 : sbx_hexval(c);
}

/* Lower-case hex, as the writer puts it, of a string shorter than size
 * into out: 0, or -1. The string holds no NUL and nothing sbx_text_scrub
 * replaces: the report's fields are scrubbed when set, and what this
 * reader returns holds no control character in any spelling; a byte that
 * is not UTF-8 comes back as it was. */
static int hex_decode(const char *hex, char *out, size_t size)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 >= size)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = lower_hexval(hex[2 * i]), lo = lower_hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0 || (hi | lo) == 0)
			return -1;
		out[i] = (char)(hi << 4 | lo);
	}
	out[n / 2] = '\0';
	return sbx_text_is_scrubbed(out) ? 0 : -1;
}

/* Exactly what shown says: bytes shown (sbx_text_show) as shown is. So a
 * reader that skips KEY_hex reads the same text, and a forged report
 * cannot say one thing to it and another to this reader. */
static bool shows_as(const char *bytes, const char *shown)
{
	char again[SBX_TEXT_SHOWN_MAX(WORDS_MAX > TEXT_MAX ? WORDS_MAX : TEXT_MAX)];

	return sbx_text_show(again, sizeof(again), bytes) == 0 && !strcmp(again, shown);
}

/* The field's value into dst (size bytes): KEY_hex's bytes when given,
 * else KEY as it is. Neither key given leaves dst alone. */
static int jr_text_resolve(struct sbx_jr *j, const char *key, const struct jr_text *t,
			   char *dst, size_t size)
{
	char bytes[TEXT_MAX], msg[96];

	if (!t->have_hex) {
		if (t->have_shown && strlen(t->shown) >= size) {
			snprintf(msg, sizeof(msg), "\"%s\": string too long", key);
			return sbx_jr_fail(j, msg);
		}
		if (t->have_shown)
			memcpy(dst, t->shown, strlen(t->shown) + 1);
		return 0;
	}
	if (!t->have_shown)
		snprintf(msg, sizeof(msg), "\"%s_hex\" without \"%s\"", key, key);
	else if (hex_decode(t->hex, bytes, size < sizeof(bytes) ? size : sizeof(bytes)) != 0)
		snprintf(msg, sizeof(msg), "\"%s_hex\": not the hex of a string without "
			 "control characters", key);
	else if (!shows_as(bytes, t->shown))
		snprintf(msg, sizeof(msg), "\"%s_hex\": not what \"%s\" shows", key, key);
	else
		return sbx_strlcpy(dst, size, bytes) == 0 ? 0 : sbx_jr_fail(j, "string too long");
	return sbx_jr_fail(j, msg);
}

/* The command's words as read (command), and their bytes (command_hex):
 * each list NUL-separated, n words. */
struct jr_words {
	char shown[SBX_TEXT_SHOWN_MAX(WORDS_MAX) + SBX_REPORT_ARGV_MAX];
	char hex[2 * WORDS_MAX + SBX_REPORT_ARGV_MAX];
	unsigned n_shown, n_hex;
	bool have_shown, have_hex;
};

static int jr_string_list(struct sbx_jr *j, char *buf, size_t size, unsigned *n)
{
	size_t used = 0;

	*n = 0;
	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	if (sbx_jr_peek(j, ']'))
		return 0;
	do {
		if (*n == SBX_REPORT_ARGV_MAX)
			return sbx_jr_fail(j, "more command words than a report holds");
		if (used >= size || sbx_jr_string(j, buf + used, size - used))
			return sbx_jr_fail(j, "command longer than a report holds");
		used += strlen(buf + used) + 1;
		(*n)++;
	} while (sbx_jr_peek(j, ','));
	return sbx_jr_expect(j, ']');
}

/* argv_buf from the words: their bytes when command_hex gave them (one
 * for each word, each showing as its word), else the words as they are. */
static int jr_words_resolve(struct sbx_jr *j, const struct jr_words *w, struct sbx_report *r)
{
	const char *shown = w->shown, *hex = w->hex;
	char word[sizeof(r->argv_buf)];
	size_t used = 0;

	if (w->have_hex && w->n_hex != w->n_shown)
		return sbx_jr_fail(j, "\"command_hex\" and \"command\" differ in length");
	memset(r->argv_buf, 0, sizeof(r->argv_buf));
	for (unsigned i = 0; i < w->n_shown; i++) {
		const char *bytes = shown;

		if (w->have_hex) {
			if (hex_decode(hex, word, sizeof(word)) != 0)
				return sbx_jr_fail(j, "\"command_hex\": not the hex of a string "
						   "without control characters");
			if (!shows_as(word, shown))
				return sbx_jr_fail(j, "\"command_hex\": not what \"command\" shows");
			bytes = word;
			hex += strlen(hex) + 1;
		}
		if (strlen(bytes) + 1 > sizeof(r->argv_buf) - used)
			return sbx_jr_fail(j, "command longer than a report holds");
		memcpy(r->argv_buf + used, bytes, strlen(bytes) + 1);
		used += strlen(bytes) + 1;
		shown += strlen(shown) + 1;
	}
	r->argc = w->n_shown;
	return 0;
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

struct profile_ctx {
	struct jr_text name, hash;
};

static int profile_field(struct sbx_jr *j, int k, void *ctx)
{
	struct profile_ctx *c = ctx;
	struct jr_text *t = k % 2 ? &c->hash : &c->name;

	return k < 2 ? jr_text_shown(j, t) : jr_text_hex(j, t);
}

static int jr_profile(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = { "name", "hash", "name_hex", "hash_hex" };
	struct profile_ctx *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return sbx_jr_fail(j, "out of memory");
	rc = sbx_jr_object_opt(j, keys, ARRAY_SIZE(keys), 3u << 2, "profile", profile_field, c);
	if (rc == 0)
		rc = jr_text_resolve(j, "name", &c->name, r->profile_name, sizeof(r->profile_name));
	if (rc == 0)
		rc = jr_text_resolve(j, "hash", &c->hash, r->profile_hash, sizeof(r->profile_hash));
	free(c);
	return rc;
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
	struct jr_text detail;
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
	case 4: return jr_text_shown(j, &c->detail);
	default: return jr_text_hex(j, &c->detail);
	}
}

/* entries: one object per feature, by name, in any order. A feature this
 * reader does not know (a newer writer's) is skipped; one it knows but
 * does not find stays not requested (an older writer's). */
static int jr_entries(struct sbx_jr *j, struct sbx_report *r)
{
	static const char *const keys[] = {
		"feature", "requested", "achieved", "verified", "detail", "detail_hex",
	};
	struct entry_ctx *c = malloc(sizeof(*c));
	struct sbx_report_entry scratch;
	uint32_t seen = 0;
	int rc = -EINVAL;

	if (!c)
		return sbx_jr_fail(j, "out of memory");
	if (sbx_jr_expect(j, '['))
		goto out;
	rc = 0;
	if (sbx_jr_peek(j, ']'))
		goto out;
	do {
		memset(&scratch, 0, sizeof(scratch));
		memset(c, 0, sizeof(*c));
		c->e = &scratch;
		c->f = SBX_F_COUNT;
		rc = sbx_jr_object_opt(j, keys, ARRAY_SIZE(keys), 1u << 5, "entry", entry_field, c);
		if (rc == 0)
			rc = jr_text_resolve(j, "detail", &c->detail, scratch.detail,
					     sizeof(scratch.detail));
		if (rc)
			goto out;
		rc = -EINVAL;
		if (scratch.verified && !scratch.achieved) {
			sbx_jr_fail(j, "entry verified but not achieved");
			goto out;
		}
		if (c->f == SBX_F_COUNT)
			continue;
		if (seen & (1u << c->f)) {
			sbx_jr_fail(j, "duplicate feature");
			goto out;
		}
		seen |= 1u << c->f;
		r->entry[c->f] = scratch;
	} while (sbx_jr_peek(j, ','));
	rc = sbx_jr_expect(j, ']');
out:
	free(c);
	return rc;
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

/* Indices into sbx_report_from_json's keys: the command's and the first
 * KEY_hex (those of report_strings, in its order, then command_hex). */
enum { K_COMMAND = 18, K_FIRST_HEX = 23, K_COMMAND_HEX = 28 };

#define FIELD(name) offsetof(struct sbx_report, name), sizeof(((struct sbx_report *)0)->name)

/* The report's top-level strings with a KEY_hex: the index of KEY, and the
 * field it fills. */
static const struct report_string {
	int k;
	const char *key;
	size_t off, size;
} report_strings[] = {
	{ 0, "session_id", FIELD(session_id) },
	{ 1, "user", FIELD(user) },
	{ 3, "client", FIELD(client) },
	{ 4, "service", FIELD(service) },
	{ 15, "refusal", FIELD(refusal) },
};

#undef FIELD

/* The report being read, and its strings until both their keys are in. */
struct report_ctx {
	struct sbx_report r;
	struct jr_text text[ARRAY_SIZE(report_strings)];
	struct jr_words command;
};

static int report_field(struct sbx_jr *j, int k, void *ctx)
{
	struct report_ctx *c = ctx;
	struct sbx_report *r = &c->r;
	uint64_t n = 0;
	int v = 0, rc;

	for (size_t i = 0; i < ARRAY_SIZE(report_strings); i++) {
		if (k == report_strings[i].k)
			return jr_text_shown(j, &c->text[i]);
		if (k == K_FIRST_HEX + (int)i)
			return jr_text_hex(j, &c->text[i]);
	}
	switch (k) {
	case 2:
		/* (uid_t)-1 is "no uid" to the kernel: never a session's. */
		rc = sbx_jr_uint(j, UINT32_MAX - 1, &n);
		r->uid = (uid_t)n;
		return rc;
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
	case 16:
		rc = sbx_jr_uint(j, 1000, &n);
		if (rc == 0 && n > SBX_REPORT_SCHEMA)
			return sbx_jr_fail(j, "schema newer than this reader's");
		return rc;
	case 17: return jr_time(j, &r->started);
	case K_COMMAND:
		c->command.have_shown = true;
		return jr_string_list(j, c->command.shown, sizeof(c->command.shown),
				      &c->command.n_shown);
	case K_COMMAND_HEX:
		c->command.have_hex = true;
		return jr_string_list(j, c->command.hex, sizeof(c->command.hex),
				      &c->command.n_hex);
	case 19: return sbx_jr_bool(j, &r->argv_truncated);
	case 20: return jr_time(j, &r->ended);
	case 22: return jr_egress(j, r);
	default:
		rc = sbx_jr_uint(j, 255, &n);
		r->exit_status = (int)n;
		return rc;
	}
}

/* Once the object is read: each string from its two keys. */
static int report_resolve(struct sbx_jr *j, struct report_ctx *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(report_strings); i++) {
		const struct report_string *rs = &report_strings[i];
		int rc = jr_text_resolve(j, rs->key, &c->text[i], (char *)&c->r + rs->off,
					 rs->size);

		if (rc)
			return rc;
	}
	if (c->command.have_hex && !c->command.have_shown)
		return sbx_jr_fail(j, "\"command_hex\" without \"command\"");
	return jr_words_resolve(j, &c->command, &c->r);
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
		/* The bytes of a string that does not show as itself (json_key_string),
		 * in the order of report_strings; then the command's. */
		"session_id_hex", "user_hex", "client_hex", "service_hex", "refusal_hex",
		"command_hex",
	};
	const uint32_t optional = 0x1fffu << 16;
	struct report_ctx *c;
	struct sbx_jr j;
	int rc;

	_Static_assert(ARRAY_SIZE(keys) == K_COMMAND_HEX + 1 && ARRAY_SIZE(keys) <= 32,
		       "report keys and their indices");
	if (!buf || !out)
		return sbx_error_set(err, EINVAL, "report JSON: no input");
	if (len > SBX_REPORT_JSON_MAX)
		return sbx_error_set(err, EINVAL, "report JSON: larger than %u bytes",
				     SBX_REPORT_JSON_MAX);
	/* A newer writer's keys are skipped, not refused. */
	j = (struct sbx_jr){ buf, buf, buf + len, "report JSON", err, true };
	c = calloc(1, sizeof(*c));
	if (!c)
		return sbx_error_set(err, ENOMEM, "report JSON: out of memory");
	c->r.exit_status = -1;
	rc = sbx_jr_object_opt(&j, keys, ARRAY_SIZE(keys), optional, NULL, report_field, c);
	if (rc == 0)
		rc = report_resolve(&j, c);
	if (rc == 0) {
		sbx_jr_ws(&j);
		if (j.p != j.end)
			rc = sbx_jr_fail(&j, "trailing bytes after the object");
	}
	if (rc == 0)
		*out = c->r;
	free(c);
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
