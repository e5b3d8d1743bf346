/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for sbx_report_from_json: parse, re-serialise, re-parse, compare. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_report a, b;
	struct sbx_error err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (sbx_report_from_json((const char *)data, size, &a, &err) != 0) {
		must(err.code == 22 && err.msg[0], "rejection without a message");
		return 0;
	}
	f = open_memstream(&buf, &len);
	must(f != NULL, "open_memstream");
	must(sbx_report_to_json(&a, f) == 0, "to_json");
	fclose(f);
	must(sbx_report_from_json(buf, len, &b, &err) == 0, "re-parse of our own output");
	same(&a, &b);
	/* The other writers must cope with whatever the parser accepted. */
	{
		char line[1024];

		must(sbx_report_to_logline(&a, line, sizeof(line)) == 0, "logline");
		must(strchr(line, '\n') == NULL, "newline in logline");
	}
	free(buf);
	return 0;
}
