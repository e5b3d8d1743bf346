/* SPDX-License-Identifier: BSD-3-Clause */
/* The report as JSON: the writer, the strict reader of exactly that schema, and report files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	if (len > SBX_REPORT_JSON_MAX)
		return sbx_error_set(err, EINVAL, "report JSON: larger than %u bytes",
				     SBX_REPORT_JSON_MAX);
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
