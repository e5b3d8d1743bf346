/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for agent-sandbox-egressd's HTTP CONNECT parser: bounded, and an accepted target is clean. */
#include "egress_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_egress_target t;
	size_t used = 0;
	char *buf;
	int r;

	/* A copy of exactly size bytes: ASan sees any read past the end. */
	buf = malloc(size ? size : 1);
	egress_must(buf != NULL, "malloc");
	memcpy(buf, data, size);
	r = sbx_egress_http_connect_parse(buf, size, &used, &t);
	if (r == 0) {
		egress_must(used >= 4 && used <= size && used <= SBX_EGRESS_HTTP_MAX, "used");
		egress_must(memcmp(buf + used - 4, "\r\n\r\n", 4) == 0, "block end");
		egress_must(memcmp(buf, "CONNECT ", 8) == 0, "not CONNECT");
		egress_check_target(&t);
		/* The same block alone parses the same. */
		struct sbx_egress_target t2;
		size_t used2 = 0;

		egress_must(sbx_egress_http_connect_parse(buf, used, &used2, &t2) == 0 &&
			    used2 == used && strcmp(t2.host, t.host) == 0 && t2.port == t.port,
			    "not prefix-stable");
	} else {
		egress_must(r == -EAGAIN || r == -EINVAL || r == -EOPNOTSUPP || r == -E2BIG,
			    "unexpected error");
		egress_must(r != -EAGAIN || size < SBX_EGRESS_HTTP_MAX, "EAGAIN past the bound");
	}
	free(buf);
	return 0;
}
