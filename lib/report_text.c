/* SPDX-License-Identifier: BSD-3-Clause */
/* The report for people: the text table, and the one-line syslog form. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

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
static void logline_value(struct sbx_sbuf *b, const char *s, bool force_quote)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	if (!force_quote && logline_plain(s)) {
		sbx_sbuf_str(b, s);
		return;
	}
	sbx_sbuf_add(b, "\"", 1);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			sbx_sbuf_add(b, esc, 2);
		} else if (*p < 0x20 || *p >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			sbx_sbuf_add(b, esc, 4);
		} else {
			sbx_sbuf_add(b, (const char *)p, 1);
		}
	}
	sbx_sbuf_add(b, "\"", 1);
}

static void logline_kv(struct sbx_sbuf *b, const char *key, const char *val)
{
	if (b->len)
		sbx_sbuf_add(b, " ", 1);
	sbx_sbuf_str(b, key);
	sbx_sbuf_add(b, "=", 1);
	logline_value(b, val, false);
}

int sbx_report_to_logline(const struct sbx_report *r, char *buf, size_t size)
{
	struct sbx_sbuf b;
	char num[24], hash[17];
	bool first = true;
	unsigned f, i;

	if (!r || !buf || size < 4) {
		if (buf && size)
			buf[0] = '\0';
		return -EINVAL;
	}
	sbx_sbuf_init(&b, buf, size);
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
	sbx_sbuf_str(&b, " guarantees=");
	for (i = 0; i < SBX_G_COUNT; i++) {
		if (!(r->guarantees & (1u << i)))
			continue;
		if (!first)
			sbx_sbuf_add(&b, ",", 1);
		first = false;
		sbx_sbuf_str(&b, sbx_guarantee_name((enum sbx_guarantee)(1u << i)));
	}
	if (first)
		sbx_sbuf_str(&b, "-");
	first = true;
	for (f = 0; f < SBX_F_COUNT; f++) {
		if (!r->entry[f].requested || sbx_report_holds(r, (enum sbx_feature)f))
			continue;
		sbx_sbuf_str(&b, first ? " degraded=" : ",");
		first = false;
		sbx_sbuf_str(&b, sbx_feature_name((enum sbx_feature)f));
		sbx_sbuf_add(&b, ":", 1);
		logline_value(&b, r->entry[f].detail[0] ? r->entry[f].detail :
			      r->entry[f].achieved ? "not verified" : "not achieved", true);
	}
	if (!r->floor_met)
		logline_kv(&b, "refusal", r->refusal);
	return 0;
}
