/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the egress_allow entry parser, its printer and its matcher. */
#include "egress_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_egress_entry e, e2;
	struct sbx_egress_target t;
	struct sbx_error err;
	char *s, out[SBX_EGRESS_HOST_MAX + 16];

	/* The config hands a C string: the value ends at the first NUL. */
	s = malloc(size + 1);
	egress_must(s != NULL, "malloc");
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&err, 0, sizeof(err));
	if (sbx_egress_entry_parse(s, &e, &err) != 0) {
		egress_must(err.code == EINVAL && err.msg[0], "rejection without a message");
		free(s);
		return 0;
	}
	egress_must(e.port != 0, "port 0");
	egress_must(!(e.wildcard && e.literal), "wildcard literal");
	egress_check_host(e.wildcard ? e.host + 2 : e.host, e.literal);
	/* Printed and parsed again: the same entry. */
	egress_must(sbx_egress_entry_format(&e, out, sizeof(out)) == 0, "format");
	egress_must(sbx_egress_entry_parse(out, &e2, NULL) == 0, "formatted entry refused");
	egress_must(strcmp(e.host, e2.host) == 0 && e.port == e2.port &&
		    e.wildcard == e2.wildcard && e.literal == e2.literal, "round trip");
	egress_must(sbx_egress_entry_covers(&e, &e2), "an entry does not cover itself");
	/* A plain entry matches its own host; a wildcard only below it. */
	memset(&t, 0, sizeof(t));
	t.port = e.port;
	t.literal = e.literal;
	if (!e.wildcard) {
		memcpy(t.host, e.host, sizeof(t.host));
		egress_must(sbx_egress_entry_matches(&e, &t), "entry does not match its host");
	} else {
		memcpy(t.host, e.host + 2, sizeof(t.host) - 2);
		egress_must(!sbx_egress_entry_matches(&e, &t), "wildcard matches its suffix");
	}
	free(s);
	return 0;
}
