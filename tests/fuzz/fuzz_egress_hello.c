/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the bridge's hello to agent-sandbox-egressd (sbx_egress_hello_parse). */
#include "egress_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_egress_hello h;
	uint8_t *buf;
	size_t n;
	int r;

	buf = malloc(size ? size : 1);
	egress_must(buf != NULL, "malloc");
	memcpy(buf, data, size);
	r = sbx_egress_hello_parse(buf, size, &h);
	egress_must(r == 0 || r == -EAGAIN || r == -EINVAL, "hello error");
	if (r == -EAGAIN)
		egress_must(size < sizeof(h), "short only below a whole hello");
	if (r == 0) {
		/* What the daemon logs and compares: terminated, hex only. */
		n = strnlen(h.session, sizeof(h.session));
		egress_must(n < sizeof(h.session), "session unterminated");
		for (size_t i = 0; i < n; i++)
			egress_must(strchr("0123456789abcdef", h.session[i]) != NULL, "session not hex");
		n = strnlen(h.list_hash, sizeof(h.list_hash));
		egress_must(n == 0 || n == 64, "hash length");
		egress_must(h.kind == SBX_EGRESS_HELLO_CONNECT || h.kind == SBX_EGRESS_HELLO_PING,
			    "kind");
	}
	free(buf);
	return 0;
}
