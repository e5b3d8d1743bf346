/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for sbx_elf_parse over the input as a file: it never
 * reads outside the file, reads a bounded amount whatever the counts and
 * offsets say, refuses only with -ENOEXEC or -E2BIG and a message, and what
 * it accepts is NUL-terminated within its arrays.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What one parse may read in all: two header reads, 64 KiB of program
 * headers, PT_INTERP, 64 KiB of PT_DYNAMIC and the strings it names. */
#define READ_BOUND (2 * 64 + 65536 + SBX_PATH_MAX + 65536 + \
		    SBX_ELF_MAX_NEEDED * SBX_ELF_NAME_MAX + 2 * 1024)

struct mem {
	const uint8_t *buf;
	size_t len;
	uint64_t read;
};

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_elf: %s\n", what);
		abort();
	}
}

static int mem_read_at(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct mem *m = ctx;

	/* The parser checks every range against the file size first. */
	must(off <= m->len && len <= m->len - off, "read outside the file");
	memcpy(buf, m->buf + off, len);
	m->read += len;
	return 0;
}

static void terminated(const char *s, size_t size, const char *what)
{
	must(strnlen(s, size) < size, what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sbx_elf_info info;
	struct mem m = { data, size, 0 };
	struct sbx_error err;
	int r;

	memset(&err, 0, sizeof(err));
	memset(&info, 0x5a, sizeof(info));
	r = sbx_elf_parse(mem_read_at, &m, size, &info, &err);
	must(m.read <= READ_BOUND, "read more than the bound");
	if (r != 0) {
		must(r == -ENOEXEC || r == -E2BIG, "refused with another code");
		must(err.code == -r && err.msg[0], "refused without a message");
		must(((unsigned char *)&info)[0] == 0x5a, "output written on failure");
		return 0;
	}
	if (!info.is_elf) {
		must(size < SELFMAG || memcmp(data, ELFMAG, SELFMAG) != 0, "ELF magic called not ELF");
		return 0;
	}
	must(size >= SELFMAG && memcmp(data, ELFMAG, SELFMAG) == 0, "ELF without the magic");
	must(info.elf_class == ELFCLASS32 || info.elf_class == ELFCLASS64, "class");
	must(info.n_needed <= SBX_ELF_MAX_NEEDED, "n_needed");
	terminated(info.interp, sizeof(info.interp), "interp");
	terminated(info.rpath, sizeof(info.rpath), "rpath");
	terminated(info.runpath, sizeof(info.runpath), "runpath");
	for (size_t i = 0; i < info.n_needed; i++)
		terminated(info.needed[i], sizeof(info.needed[i]), "needed");
	return 0;
}
