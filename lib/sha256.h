/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-256 (FIPS 180-4), small and allocation-free, for the profile hash. */
#ifndef SBX_SHA256_H
#define SBX_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SBX_SHA256_DIGEST 32

struct sbx_sha256 {
	uint32_t state[8];
	uint64_t bytes;		/* total length so far */
	uint8_t block[64];
	size_t used;		/* bytes buffered in block */
};

void sbx_sha256_init(struct sbx_sha256 *c);
void sbx_sha256_update(struct sbx_sha256 *c, const void *data, size_t len);
void sbx_sha256_final(struct sbx_sha256 *c, uint8_t out[SBX_SHA256_DIGEST]);
/* One shot: 64 lowercase hex digits + NUL. */
void sbx_sha256_hex(const void *data, size_t len, char out[65]);
void sbx_sha256_to_hex(const uint8_t digest[SBX_SHA256_DIGEST], char out[65]);

#endif
