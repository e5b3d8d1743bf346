/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for sbx_ledger_parse_line: what it accepts has event= first, keys of
 * the log grammar and values without a control byte (nothing that could split a line or
 * reach a terminal when --log prints it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_ledger: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sbx_ledger_event ev;

	if (sbx_ledger_parse_line((const char *)data, size, &ev) != 0)
		return 0;
	must(ev.n >= 1 && ev.n <= SBX_LEDGER_KEYS_MAX, "count");
	must(!strcmp(ev.key[0], "event"), "event first");
	for (size_t i = 0; i < ev.n; i++) {
		const char *k = ev.key[i];

		must(k[0] >= 'a' && k[0] <= 'z', "key start");
		for (; *k; k++)
			must((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_',
			     "key char");
		for (const unsigned char *v = (const unsigned char *)ev.value[i]; *v; v++)
			must(*v >= 0x20 && *v != 0x7f, "control byte in a value");
		must(sbx_ledger_get(&ev, ev.key[i]) != NULL, "get");
	}
	return 0;
}
