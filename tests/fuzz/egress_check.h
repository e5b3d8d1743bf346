/* SPDX-License-Identifier: BSD-3-Clause */
/* What every accepted egress target or entry must satisfy (the fuzz targets' shared oracle). */
#ifndef FUZZ_EGRESS_CHECK_H
#define FUZZ_EGRESS_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbx.h"

static inline void egress_must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_egress: %s\n", what);
		abort();
	}
}

/* A host the parsers hand on is normalized: it normalizes to itself, and
 * holds nothing a log line or getaddrinfo could misread. */
static inline void egress_check_host(const char *host, bool literal)
{
	char again[SBX_EGRESS_HOST_MAX];
	bool lit2 = !literal;
	size_t n = strnlen(host, SBX_EGRESS_HOST_MAX);

	egress_must(n > 0 && n < SBX_EGRESS_HOST_MAX, "host length");
	egress_must(sbx_egress_host_norm(host, n, false, again, sizeof(again), &lit2) == 0,
		    "normalized host refused");
	egress_must(strcmp(again, host) == 0 && lit2 == literal, "normalization not stable");
	for (size_t i = 0; i < n; i++)
		egress_must((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= '0' && host[i] <= '9') ||
			    strchr(".-_:", host[i]), "byte outside the host alphabet");
}

static inline void egress_check_target(const struct sbx_egress_target *t)
{
	egress_must(t->port != 0, "port 0");
	egress_check_host(t->host, t->literal);
}

#endif
