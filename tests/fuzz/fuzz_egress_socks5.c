/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for agent-sandbox-egressd's SOCKS5 parsers: greeting, then request. */
#include "egress_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_egress_target t;
	size_t used = 0, used2 = 0;
	uint8_t *buf;
	bool noauth;
	int r;

	buf = malloc(size ? size : 1);
	egress_must(buf != NULL, "malloc");
	memcpy(buf, data, size);
	r = sbx_egress_socks5_greeting_parse(buf, size, &used, &noauth);
	egress_must(r == 0 || r == -EAGAIN || r == -EINVAL, "greeting error");
	if (r == 0) {
		egress_must(used >= 3 && used <= size && used <= 257, "greeting used");
		r = sbx_egress_socks5_request_parse(buf + used, size - used, &used2, &t);
		if (r == 0) {
			egress_must(used2 >= 8 && used2 <= size - used && used2 <= 262, "request used");
			egress_check_target(&t);
		} else {
			egress_must(r == -EAGAIN || r == -EINVAL || r == -EOPNOTSUPP ||
				    r == -EAFNOSUPPORT, "request error");
		}
	}
	free(buf);
	return 0;
}
