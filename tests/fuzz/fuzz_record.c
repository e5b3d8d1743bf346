/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for sbx_record_parse: what it accepts is well-formed and re-parses the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_record: %s\n", what);
		abort();
	}
}

/* NUL-terminated inside its array and no newline (a newline there would
 * forge a second key on the way back). The parser, like the writer,
 * refuses every other control byte too. */
static void clean_string(const char *s, size_t size, const char *what)
{
	size_t n = strnlen(s, size);

	must(n < size, what);
	for (size_t i = 0; i < n; i++) {
		must((unsigned char)s[i] >= 0x20 && s[i] != 0x7f, what);
	}
}

static void same(const struct sbx_record *a, const struct sbx_record *b)
{
	must(a->version == b->version, "version");
	must(!strcmp(a->session, b->session), "session");
	must(!strcmp(a->user, b->user), "user");
	must(a->uid == b->uid, "uid");
	must(a->mntns == b->mntns && a->netns == b->netns, "namespaces");
	must(!strcmp(a->profile, b->profile) && !strcmp(a->hash, b->hash), "profile");
	must(!strcmp(a->client, b->client) && !strcmp(a->service, b->service), "client");
	must(a->started == b->started, "started");
	must(!strcmp(a->home, b->home) && !strcmp(a->home_source, b->home_source), "home");
	must(a->home_kind == b->home_kind, "home_kind");
	must(a->opener_pid == b->opener_pid && a->opener_start == b->opener_start, "opener");
}

/* The writer's format (record.c's record_format), so an accepted record
 * must survive a round trip. */
static size_t format(const struct sbx_record *r, char *buf, size_t size)
{
	static const char *const kinds[] = { "ephemeral", "isolated", "real" };
	int n = snprintf(buf, size,
			 "version=%u\nsession=%s\nuser=%s\nuid=%u\nmntns=%lu\nnetns=%lu\n"
			 "profile=%s\nhash=%s\nclient=%s\nservice=%s\nstarted=%lld\n"
			 "home=%s\nhome_source=%s\nhome_kind=%s\n",
			 r->version, r->session, r->user, (unsigned)r->uid, r->mntns, r->netns,
			 r->profile, r->hash, r->client, r->service, (long long)r->started,
			 r->home, r->home_source, kinds[r->home_kind]);

	if (n > 0 && (size_t)n < size && r->opener_pid > 0)
		n += snprintf(buf + n, size - (size_t)n, "opener_pid=%d\nopener_start=%llu\n",
			      (int)r->opener_pid, (unsigned long long)r->opener_start);
	must(n > 0 && (size_t)n < size, "re-format");
	return (size_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[3 * SBX_RECORD_MAX_BYTES];
	struct sbx_record a, b;
	struct sbx_error err;
	size_t len;

	memset(&err, 0, sizeof(err));
	if (sbx_record_parse((const char *)data, size, &a, &err) != 0) {
		must(err.code == 22 && err.msg[0] && strnlen(err.msg, sizeof(err.msg)) <
		     sizeof(err.msg), "rejection without EINVAL and a message");
		return 0;
	}
	must(a.version == 1, "version is not 1");
	must(sbx_session_id_is_valid(a.session), "session id");
	clean_string(a.user, sizeof(a.user), "user");
	clean_string(a.profile, sizeof(a.profile), "profile");
	clean_string(a.hash, sizeof(a.hash), "hash");
	clean_string(a.client, sizeof(a.client), "client");
	clean_string(a.service, sizeof(a.service), "service");
	clean_string(a.home, sizeof(a.home), "home");
	clean_string(a.home_source, sizeof(a.home_source), "home_source");
	must((unsigned)a.home_kind <= SBX_HOME_REAL, "home_kind");
	must(a.uid != (uid_t)-1, "uid -1");
	must(a.started >= 0, "started < 0");
	must(a.opener_pid >= 0 && (a.opener_pid > 0 || a.opener_start == 0), "opener");

	len = format(&a, buf, sizeof(buf));
	must(sbx_record_parse(buf, len, &b, &err) == 0, "re-parse of the writer's format");
	same(&a, &b);
	return 0;
}
