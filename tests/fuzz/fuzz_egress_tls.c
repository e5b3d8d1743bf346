/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the TLS ClientHello server-name extractor of agent-sandbox-egressd. */
#include "egress_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char sni[SBX_EGRESS_HOST_MAX];
	uint8_t *buf;
	int r;

	buf = malloc(size ? size : 1);
	egress_must(buf != NULL, "malloc");
	memcpy(buf, data, size);
	r = sbx_egress_tls_sni(buf, size, sni, sizeof(sni));
	if (r == 0) {
		egress_check_host(sni, false);
		/* RFC 6066: never an address. */
		for (size_t i = 0; sni[i]; i++)
			egress_must(sni[i] != ':', "address as a server name");
	} else {
		/* -EOPNOTSUPP: Encrypted Client Hello or ESNI. */
		egress_must(r == -EAGAIN || r == -EINVAL || r == -ENOENT || r == -EOPNOTSUPP,
			    "unexpected error");
	}
	free(buf);
	return 0;
}
