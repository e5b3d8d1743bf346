/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the report's JSON, both ways. An input the parser
 * takes is written again, read again and compared; one it refuses is
 * taken as the bytes of a report's strings (argv, details, client, user,
 * refusal), which the writer must turn into strict JSON that reads back
 * exactly. Either way the output holds no raw control byte and is
 * stable: write, parse, write gives the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_report_json: %s\n", what);
		abort();
	}
}

static void same(const struct sbx_report *a, const struct sbx_report *b)
{
	must(!strcmp(a->session_id, b->session_id), "session_id");
	must(!strcmp(a->user, b->user), "user");
	must(a->uid == b->uid, "uid");
	must(!strcmp(a->client, b->client), "client");
	must(!strcmp(a->service, b->service), "service");
	must(!strcmp(a->profile_name, b->profile_name), "profile name");
	must(!strcmp(a->profile_hash, b->profile_hash), "profile hash");
	must(a->isolation == b->isolation, "isolation");
	must(a->landlock_abi == b->landlock_abi, "landlock_abi");
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		must(a->entry[f].requested == b->entry[f].requested, "requested");
		must(a->entry[f].achieved == b->entry[f].achieved, "achieved");
		must(a->entry[f].verified == b->entry[f].verified, "verified");
		must(!(a->entry[f].verified && !a->entry[f].achieved), "verified implies achieved");
		must(!strcmp(a->entry[f].detail, b->entry[f].detail), "detail");
	}
	must(a->guarantees == b->guarantees, "guarantees");
	must(a->required == b->required, "required");
	must(a->level == b->level, "level");
	must(a->min_level == b->min_level, "min_level");
	must(a->floor_met == b->floor_met, "floor_met");
	must(!strcmp(a->refusal, b->refusal), "refusal");
	must(a->started == b->started && a->ended == b->ended, "times");
	must(a->exit_status == b->exit_status, "exit_status");
	must(a->argc == b->argc && a->argv_truncated == b->argv_truncated, "command");
	must(!memcmp(a->argv_buf, b->argv_buf, sizeof(a->argv_buf)), "command words");
	must(!strcmp(a->egress_list, b->egress_list) &&
	     a->egress_list_truncated == b->egress_list_truncated &&
	     a->egress_allowed == b->egress_allowed && a->egress_refused == b->egress_refused &&
	     a->egress_failed == b->egress_failed &&
	     a->egress_unanswered == b->egress_unanswered, "egress");
	must(a->host_read == b->host_read && a->host_write == b->host_write &&
	     a->network == b->network && a->command == b->command &&
	     a->home == b->home && a->n_deny_read == b->n_deny_read, "policy");
}

/* What a strict reader takes, and a terminal may be shown: strict UTF-8,
 * no C0 control but the final newline, no DEL, no C1 control. */
static void strict(const char *buf, size_t len)
{
	must(len > 0 && buf[len - 1] == '\n', "no final newline");
	for (size_t i = 0, n; i + 1 < len; i += n) {
		uint32_t cp;

		n = sbx_utf8_char((const unsigned char *)buf + i, len - 1 - i, &cp);
		must(n > 0, "output not UTF-8");
		must(cp >= 0x20 && (cp < 0x7f || cp > 0x9f), "raw control character in output");
	}
}

static char *to_json(const struct sbx_report *r, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	must(f != NULL, "open_memstream");
	must(sbx_report_to_json(r, f) == 0, "to_json");
	fclose(f);
	return buf;
}

/* Written, strict, read back the same, written again byte for byte. */
static void round_trip(const struct sbx_report *a)
{
	struct sbx_report *b = malloc(sizeof(*b));
	struct sbx_error err;
	char *json, *again;
	size_t len, len2;

	must(b != NULL, "malloc");
	json = to_json(a, &len);
	strict(json, len);
	if (sbx_report_from_json(json, len, b, &err) != 0) {
		fprintf(stderr, "fuzz_report_json: %s\n", err.msg);
		must(false, "re-parse of our own output");
	}
	same(a, b);
	again = to_json(b, &len2);
	must(len2 == len && !memcmp(again, json, len), "written again differently");
	/* The other writers must cope with whatever the report holds. */
	{
		char line[1024];

		must(sbx_report_to_logline(b, line, sizeof(line)) == 0, "logline");
		must(strchr(line, '\n') == NULL, "newline in logline");
	}
	free(again);
	free(json);
	free(b);
}

/* The input's bytes as the strings of a report, NUL-separated, each set
 * as the session sets it (scrubbed; argv through sbx_report_set_argv):
 * user, client, service, refusal, the details, then the command's words. */
static void from_bytes(struct sbx_report *r, const uint8_t *data, size_t size)
{
	struct {
		char *s;
		size_t size;
	} fields[4 + SBX_F_COUNT] = {
		{ r->user, sizeof(r->user) }, { r->client, sizeof(r->client) },
		{ r->service, sizeof(r->service) }, { r->refusal, sizeof(r->refusal) },
	};
	char *argv[SBX_REPORT_ARGV_MAX + 2], *words;
	size_t na = 0, i = 0, rest;
	struct sbx_profile p;

	sbx_profile_init_default(&p);
	sbx_report_init(r, &p);
	snprintf(r->session_id, sizeof(r->session_id), "0123456789abcdef0123456789abcdef");
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		fields[4 + f].s = r->entry[f].detail;
		fields[4 + f].size = sizeof(r->entry[f].detail);
	}
	for (size_t k = 0; k < ARRAY_SIZE(fields) && i < size; k++) {
		size_t n = strnlen((const char *)data + i, size - i);

		snprintf(fields[k].s, fields[k].size, "%.*s", (int)n, (const char *)data + i);
		sbx_text_scrub(fields[k].s);
		i += n + 1;
	}
	rest = i < size ? size - i : 0;
	words = malloc(rest + 1);
	must(words != NULL, "malloc");
	memcpy(words, data + size - rest, rest);
	words[rest] = '\0';
	for (size_t k = 0; k < rest && na < SBX_REPORT_ARGV_MAX + 1;) {
		argv[na++] = words + k;
		k += strlen(words + k) + 1;
	}
	argv[na] = NULL;
	sbx_report_set_argv(r, argv);
	free(words);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_report *a = malloc(sizeof(*a));
	struct sbx_error err;

	must(a != NULL, "malloc");
	if (sbx_report_from_json((const char *)data, size, a, &err) == 0) {
		round_trip(a);
	} else {
		must(err.code == 22 && err.msg[0], "rejection without a message");
		if (size <= 4096) {
			from_bytes(a, data, size);
			round_trip(a);
		}
	}
	free(a);
	return 0;
}
