/* SPDX-License-Identifier: BSD-3-Clause */
/* The report for people: the text table, and the one-line syslog form. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A string of the report as it shows (text.c): a command word, a path or a
 * host name may hold any byte, and this text is read on root's terminal. */
static void text_field(FILE *out, const char *s, size_t max)
{
	sbx_text_put(out, s[0] ? s : "-", max);
}

int sbx_report_to_text(const struct sbx_report *r, FILE *out)
{
	unsigned f;

	if (!r || !out)
		return -EINVAL;
	fputs("session     ", out);
	text_field(out, r->session_id, sizeof(r->session_id));
	fputs("\nuser        ", out);
	text_field(out, r->user, sizeof(r->user));
	fprintf(out, " (uid %u) from ", (unsigned)r->uid);
	text_field(out, r->client, sizeof(r->client));
	fputs(" via ", out);
	text_field(out, r->service, sizeof(r->service));
	fputs("\nprofile     ", out);
	sbx_text_put(out, r->profile_name, sizeof(r->profile_name));
	fputs(" (hash ", out);
	sbx_text_put(out, r->profile_hash, 16);
	fprintf(out, "), %s, Landlock ABI %d\n\n", sbx_isolation_name(r->isolation),
		r->landlock_abi);
	fprintf(out, "%-16s %-9s %-8s %-8s %s\n", "feature", "requested",
		"achieved", "verified", "detail");
	for (f = 0; f < SBX_F_COUNT; f++) {
		const struct sbx_report_entry *e = &r->entry[f];

		fprintf(out, "%-16s %-9s %-8s %-8s ",
			sbx_feature_name((enum sbx_feature)f),
			e->requested ? "yes" : "no", e->achieved ? "yes" : "no",
			e->verified ? "yes" : "no");
		sbx_text_put(out, e->detail, sizeof(e->detail));
		fputc('\n', out);
	}
	fputc('\n', out);
	if (r->network == SBX_NETWORK_PROXY) {
		fprintf(out, "%-12s", "egress");
		sbx_text_put(out, r->egress_list[0] ? r->egress_list : "(none listed)",
			     sizeof(r->egress_list));
		fprintf(out, "%s\n", r->egress_list_truncated ? ", ..." : "");
		if (r->ended > 0)
			fprintf(out, "%-12sallowed %llu, refused %llu, failed %llu, unanswered %llu\n",
				"", (unsigned long long)r->egress_allowed,
				(unsigned long long)r->egress_refused,
				(unsigned long long)r->egress_failed,
				(unsigned long long)r->egress_unanswered);
	}
	text_guarantees(out, "guarantees", r->guarantees);
	text_guarantees(out, "required", r->required);
	fprintf(out, "level       %s (floor %s)\n", sbx_level_name(r->level),
		sbx_level_name(r->min_level));
	if (r->floor_met) {
		fputs("verdict     floor met\n", out);
	} else {
		fputs("verdict     refused: ", out);
		sbx_text_put(out, r->refusal, sizeof(r->refusal));
		fputc('\n', out);
	}
	return ferror(out) ? -EIO : 0;
}

/* ---- the syslog line ----------------------------------------------------------- */

/* The report's fields, in the log grammar of log.c. */
void sbx_report_log(struct sbx_logline *l, const struct sbx_report *r)
{
	char list[1024], hash[17];
	struct sbx_sbuf b;
	bool first = true;
	unsigned f, i;

	sbx_log_add(l, "session", "%s", r->session_id[0] ? r->session_id : "-");
	sbx_log_add(l, "user", "%s", r->user[0] ? r->user : "-");
	sbx_log_add(l, "uid", "%u", (unsigned)r->uid);
	sbx_log_add(l, "client", "%s", r->client[0] ? r->client : "-");
	sbx_log_add(l, "service", "%s", r->service[0] ? r->service : "-");
	sbx_log_add(l, "profile", "%s", r->profile_name);
	snprintf(hash, sizeof(hash), "%.16s", r->profile_hash);
	sbx_log_add(l, "hash", "%s", hash[0] ? hash : "-");
	sbx_log_add(l, "level", "%s", sbx_level_name(r->level));
	sbx_log_add(l, "floor", "%s", r->floor_met ? "met" : "refused");
	sbx_sbuf_init(&b, list, sizeof(list));
	for (i = 0; i < SBX_G_COUNT; i++) {
		if (!(r->guarantees & (1u << i)))
			continue;
		if (!first)
			sbx_sbuf_add(&b, ",", 1);
		first = false;
		sbx_sbuf_str(&b, sbx_guarantee_name((enum sbx_guarantee)(1u << i)));
	}
	sbx_log_add(l, "guarantees", "%s", first ? "-" : list);
	/* feature:"why",...: one field, each why quoted in the grammar. */
	sbx_sbuf_init(&b, list, sizeof(list));
	for (f = 0; f < SBX_F_COUNT; f++) {
		if (!r->entry[f].requested || sbx_report_holds(r, (enum sbx_feature)f))
			continue;
		if (b.len)
			sbx_sbuf_add(&b, ",", 1);
		sbx_sbuf_str(&b, sbx_feature_name((enum sbx_feature)f));
		sbx_sbuf_add(&b, ":", 1);
		sbx_log_value(&b, r->entry[f].detail[0] ? r->entry[f].detail :
			      r->entry[f].achieved ? "not verified" : "not achieved", true);
	}
	if (b.len)
		sbx_log_add_raw(l, "degraded", list);
	if (r->network == SBX_NETWORK_PROXY)
		sbx_log_add(l, "egress", "%s%s", r->egress_list[0] ? r->egress_list : "-",
			    r->egress_list_truncated ? ", ..." : "");
	if (!r->floor_met)
		sbx_log_add(l, "refusal", "%s", r->refusal);
}

int sbx_report_to_logline(const struct sbx_report *r, char *buf, size_t size)
{
	struct sbx_logline *l;
	struct sbx_sbuf b;

	if (!r || !buf || size < 4) {
		if (buf && size)
			buf[0] = '\0';
		return -EINVAL;
	}
	l = malloc(sizeof(*l));
	if (!l) {
		buf[0] = '\0';
		return -ENOMEM;
	}
	sbx_sbuf_init(&l->lb, l->line, sizeof(l->line));
	sbx_sbuf_init(&l->jb, l->journal, sizeof(l->journal));
	sbx_report_log(l, r);
	sbx_sbuf_init(&b, buf, size);
	sbx_sbuf_str(&b, l->line);
	free(l);
	return 0;
}
