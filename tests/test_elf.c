/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests for elf.c: the ELF and ld.so.cache parsers on this machine's own
 * files and on synthetic ones (valid and malformed), and the exec set a
 * gated session leaves executable, checked against ldd and against a tree
 * of synthetic objects that exercises each rule of ld.so's search.
 */
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

#define MIB (1024u * 1024u)

/* The tree of synthetic objects: libraries are only taken from where
 * nobody but root can write, so not under /tmp but directly under "/"
 * (root-owned 0755), as test_trust does. */
static char *top;	/* /sbx-test-elf-XXXXXX */
static unsigned native_class, native_machine;
static char native_interp[SBX_PATH_MAX];

/* ---- helpers ------------------------------------------------------------- */

/* Root, and the tree under "/" made. */
#define REQUIRE_TREE()                                                        \
	do {                                                                  \
		SBX_TEST_REQUIRE_ROOT();                                      \
		if (!top) {                                                   \
			print_message("[  SKIP    ] no trusted tree\n");      \
			skip();                                               \
		}                                                             \
	} while (0)

/* A read_at over memory that counts the bytes it hands out. */
struct mem {
	const unsigned char *buf;
	size_t len;
	uint64_t read;
	int fail;	/* returned instead of reading when not 0 */
};

static int mem_read_at(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct mem *m = ctx;

	if (m->fail)
		return m->fail;
	if (off > m->len || len > m->len - off)
		return -EIO;
	memcpy(buf, m->buf + off, len);
	m->read += len;
	return 0;
}

static int parse_mem(const unsigned char *buf, size_t len, struct sbx_elf_info *out,
		     struct sbx_error *err, uint64_t *read)
{
	struct mem m = { buf, len, 0, 0 };
	int r = sbx_elf_parse(mem_read_at, &m, len, out, err);

	if (read)
		*read = m.read;
	return r;
}

static char *pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *pathf(const char *fmt, ...)
{
	static char buf[16][SBX_PATH_MAX];
	static unsigned n;
	char *b = buf[n++ % 16], rel[SBX_PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	assert_int_equal(sbx_snprintf(b, SBX_PATH_MAX, "%s/%s", top, rel), 0);
	return b;
}

static void mkdirs(const char *rel)
{
	char p[SBX_PATH_MAX];

	assert_int_equal(sbx_snprintf(p, sizeof(p), "%s/%s", top, rel), 0);
	for (char *s = p + strlen(top) + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
			*s = c;
			if (!c)
				break;
		}
	}
}

static void write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static unsigned char *read_whole(const char *path, size_t *len)
{
	char *buf = NULL;

	assert_int_equal(sbx_read_file(path, 256 * MIB, &buf, len, NULL), 0);
	return (unsigned char *)buf;
}

/* ---- synthetic ELF ----------------------------------------------------------- */

#define SYN_BASE 0x10000u

struct synth {
	unsigned cls, machine;
	const char *interp;
	const char *needed[SBX_ELF_MAX_NEEDED + 2];
	size_t n_needed;
	const char *rpath, *runpath;
};

/* Where the builder put things, for the malformed variants to patch. */
struct layout {
	size_t len, phoff, phsz, phnum, interp_off, strtab_off, strsz, dyn_off, dynsz;
	size_t dyn_strtab, dyn_strsz;	/* file offsets of those entries */
	size_t ph_dynamic, ph_interp;	/* file offsets of those program headers */
};

static void put16(unsigned char *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

/* A word of the object's class. */
static void put_word(unsigned cls, unsigned char *p, uint64_t v)
{
	if (cls == ELFCLASS64)
		put64(p, v);
	else
		put32(p, (uint32_t)v);
}

static void put_phdr(unsigned cls, unsigned char *p, uint32_t type, uint64_t off, uint64_t filesz)
{
	if (cls == ELFCLASS64) {
		put32(p, type);			/* p_type */
		put32(p + 4, PF_R);		/* p_flags */
		put64(p + 8, off);		/* p_offset */
		put64(p + 16, SYN_BASE + off);	/* p_vaddr */
		put64(p + 24, SYN_BASE + off);	/* p_paddr */
		put64(p + 32, filesz);		/* p_filesz */
		put64(p + 40, filesz);		/* p_memsz */
		put64(p + 48, 8);		/* p_align */
	} else {
		put32(p, type);
		put32(p + 4, (uint32_t)off);
		put32(p + 8, (uint32_t)(SYN_BASE + off));
		put32(p + 12, (uint32_t)(SYN_BASE + off));
		put32(p + 16, (uint32_t)filesz);
		put32(p + 20, (uint32_t)filesz);
		put32(p + 24, PF_R);
		put32(p + 28, 8);
	}
}

/* ELF header, PT_LOAD of the whole file at SYN_BASE, PT_INTERP, PT_DYNAMIC;
 * then the interpreter, the string table and the dynamic section. */
static size_t synth_build(const struct synth *sp, unsigned char *buf, size_t size,
			  struct layout *L)
{
	bool is64 = sp->cls == ELFCLASS64;
	size_t ehsz = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	uint64_t tags[SBX_ELF_MAX_NEEDED + 8], vals[SBX_ELF_MAX_NEEDED + 8];
	size_t off, nd = 0, ph;

	memset(buf, 0, size);
	memset(L, 0, sizeof(*L));
	L->phsz = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	L->dynsz = is64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
	L->phnum = sp->interp ? 3 : 2;
	L->phoff = ehsz;
	off = L->phoff + L->phnum * L->phsz;
	if (sp->interp) {
		L->interp_off = off;
		memcpy(buf + off, sp->interp, strlen(sp->interp) + 1);
		off += strlen(sp->interp) + 1;
	}
	L->strtab_off = off;
	buf[off++] = '\0';
	for (size_t i = 0; i < sp->n_needed; i++) {
		tags[nd] = DT_NEEDED;
		vals[nd++] = off - L->strtab_off;
		memcpy(buf + off, sp->needed[i], strlen(sp->needed[i]) + 1);
		off += strlen(sp->needed[i]) + 1;
	}
	if (sp->rpath) {
		tags[nd] = DT_RPATH;
		vals[nd++] = off - L->strtab_off;
		memcpy(buf + off, sp->rpath, strlen(sp->rpath) + 1);
		off += strlen(sp->rpath) + 1;
	}
	if (sp->runpath) {
		tags[nd] = DT_RUNPATH;
		vals[nd++] = off - L->strtab_off;
		memcpy(buf + off, sp->runpath, strlen(sp->runpath) + 1);
		off += strlen(sp->runpath) + 1;
	}
	L->strsz = off - L->strtab_off;
	tags[nd] = DT_STRTAB;
	vals[nd++] = SYN_BASE + L->strtab_off;
	tags[nd] = DT_STRSZ;
	vals[nd++] = L->strsz;
	tags[nd] = DT_NULL;
	vals[nd++] = 0;
	off = (off + 7) & ~(size_t)7;
	L->dyn_off = off;
	for (size_t i = 0; i < nd; i++) {
		unsigned char *e = buf + off + i * L->dynsz;

		put_word(sp->cls, e, tags[i]);
		put_word(sp->cls, e + L->dynsz / 2, vals[i]);
		if (tags[i] == DT_STRTAB)
			L->dyn_strtab = off + i * L->dynsz;
		if (tags[i] == DT_STRSZ)
			L->dyn_strsz = off + i * L->dynsz;
	}
	L->len = off + nd * L->dynsz;
	assert_true(L->len <= size);

	memcpy(buf, ELFMAG, SELFMAG);
	buf[EI_CLASS] = (unsigned char)sp->cls;
	buf[EI_DATA] = ELFDATA2LSB;
	buf[EI_VERSION] = EV_CURRENT;
	put16(buf + 16, ET_DYN);
	put16(buf + 18, (uint16_t)sp->machine);
	put32(buf + 20, EV_CURRENT);
	if (is64) {
		put64(buf + 32, L->phoff);		/* e_phoff */
		put16(buf + 52, (uint16_t)ehsz);	/* e_ehsize */
		put16(buf + 54, (uint16_t)L->phsz);	/* e_phentsize */
		put16(buf + 56, (uint16_t)L->phnum);	/* e_phnum */
	} else {
		put32(buf + 28, (uint32_t)L->phoff);
		put16(buf + 40, (uint16_t)ehsz);
		put16(buf + 42, (uint16_t)L->phsz);
		put16(buf + 44, (uint16_t)L->phnum);
	}
	ph = L->phoff;
	put_phdr(sp->cls, buf + ph, PT_LOAD, 0, L->len);
	ph += L->phsz;
	if (sp->interp) {
		L->ph_interp = ph;
		put_phdr(sp->cls, buf + ph, PT_INTERP, L->interp_off, strlen(sp->interp) + 1);
		ph += L->phsz;
	}
	L->ph_dynamic = ph;
	put_phdr(sp->cls, buf + ph, PT_DYNAMIC, L->dyn_off, L->len - L->dyn_off);
	return L->len;
}

/* A synthetic object of this machine's kind written to path. */
static void synth_file(const char *path, const char *interp, const char *rpath,
		       const char *runpath, const char *needed, ...)
{
	static unsigned char buf[64 * 1024];
	struct synth sp = { native_class, native_machine, interp, { 0 }, 0, rpath, runpath };
	struct layout L;
	va_list ap;

	va_start(ap, needed);
	for (const char *n = needed; n; n = va_arg(ap, const char *))
		sp.needed[sp.n_needed++] = n;
	va_end(ap);
	write_file(path, buf, synth_build(&sp, buf, sizeof(buf), &L), 0755);
}

/* ---- set-up ----------------------------------------------------------------- */

static int group_teardown(void **state)
{
	(void)state;
	if (top && strncmp(top, "/sbx-test-elf-", 14) == 0)
		sbx_test_rmtree(top);
	return 0;
}

static int group_setup_inner(void)
{
	struct sbx_elf_info *self = calloc(1, sizeof(*self));
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (!self || fd < 0 || sbx_elf_parse_fd(fd, "/proc/self/exe", self, NULL) != 0 ||
	    !self->is_elf) {
		fprintf(stderr, "test_elf: cannot parse /proc/self/exe\n");
		free(self);
		return -1;
	}
	close(fd);
	native_class = self->elf_class;
	native_machine = self->machine;
	sbx_strlcpy(native_interp, sizeof(native_interp), self->interp);
	free(self);
	if (geteuid() == 0) {
		char tmpl[] = "/sbx-test-elf-XXXXXX";
		struct stat st;

		if (stat("/", &st) != 0 || st.st_uid != 0 || (st.st_mode & 022)) {
			fprintf(stderr, "/ is not root-owned 0755: cannot build a trusted tree\n");
			return 0;	/* the tree tests skip */
		}

		if (!mkdtemp(tmpl) || chmod(tmpl, 0755) != 0)
			return -1;
		top = strdup(tmpl);
	}
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return group_setup_inner();
	return sbx_test_group_setup(group_setup_inner, group_teardown);
}

/* ---- sbx_elf_parse: synthetic objects ---------------------------------------- */

static struct synth basic(unsigned cls, unsigned machine)
{
	struct synth sp = {
		cls, machine, "/lib/ld-test.so.1",
		{ "liba.so.1", "libb.so.2", "libc.so.6" }, 3,
		"/opt/r:$ORIGIN/../lib", "/opt/run",
	};

	return sp;
}

static void test_parse_synthetic(void **state)
{
	static const struct { unsigned cls, machine; } kinds[] = {
		{ ELFCLASS64, EM_X86_64 }, { ELFCLASS32, EM_386 }, { ELFCLASS64, EM_AARCH64 },
	};
	static unsigned char buf[8192];
	struct sbx_elf_info *info = calloc(1, sizeof(*info));
	struct sbx_error err = { 0 };
	struct layout L;
	uint64_t read;

	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		struct synth sp = basic(kinds[k].cls, kinds[k].machine);
		size_t len = synth_build(&sp, buf, sizeof(buf), &L);

		assert_int_equal(parse_mem(buf, len, info, &err, &read), 0);
		assert_true(info->is_elf);
		assert_int_equal(info->elf_class, kinds[k].cls);
		assert_int_equal(info->machine, kinds[k].machine);
		assert_string_equal(info->interp, "/lib/ld-test.so.1");
		assert_int_equal(info->n_needed, 3);
		assert_string_equal(info->needed[0], "liba.so.1");
		assert_string_equal(info->needed[1], "libb.so.2");
		assert_string_equal(info->needed[2], "libc.so.6");
		assert_string_equal(info->rpath, "/opt/r:$ORIGIN/../lib");
		assert_string_equal(info->runpath, "/opt/run");
		assert_true(read < 2 * len);	/* the header is read twice */
	}

	/* No PT_INTERP, no paths: a plain library. */
	{
		struct synth sp = { ELFCLASS64, EM_X86_64, NULL, { "libz.so.1" }, 1, NULL, NULL };
		size_t len = synth_build(&sp, buf, sizeof(buf), &L);

		assert_int_equal(parse_mem(buf, len, info, &err, NULL), 0);
		assert_string_equal(info->interp, "");
		assert_string_equal(info->rpath, "");
		assert_string_equal(info->runpath, "");
		assert_int_equal(info->n_needed, 1);
	}
	/* Exactly SBX_ELF_MAX_NEEDED is fine. */
	{
		static char names[SBX_ELF_MAX_NEEDED][16];
		static unsigned char big[16384];
		struct synth sp = { ELFCLASS64, EM_X86_64, NULL, { 0 }, 0, NULL, NULL };

		for (size_t i = 0; i < SBX_ELF_MAX_NEEDED; i++) {
			snprintf(names[i], sizeof(names[i]), "lib%zu.so", i);
			sp.needed[sp.n_needed++] = names[i];
		}
		assert_int_equal(parse_mem(big, synth_build(&sp, big, sizeof(big), &L), info, &err,
					   NULL), 0);
		assert_int_equal(info->n_needed, SBX_ELF_MAX_NEEDED);
		assert_string_equal(info->needed[127], "lib127.so");
	}
	free(info);
}

static void test_parse_not_elf(void **state)
{
	static const char script[] = "#!/bin/sh\necho hi\n";
	struct sbx_elf_info *info = calloc(1, sizeof(*info));
	struct sbx_error err = { 0 };

	(void)state;
	info->is_elf = true;
	assert_int_equal(parse_mem((const unsigned char *)script, sizeof(script) - 1, info, &err,
				   NULL), 0);
	assert_false(info->is_elf);
	info->is_elf = true;
	assert_int_equal(parse_mem((const unsigned char *)"", 0, info, &err, NULL), 0);
	assert_false(info->is_elf);
	info->is_elf = true;
	assert_int_equal(parse_mem((const unsigned char *)"\177EL", 3, info, &err, NULL), 0);
	assert_false(info->is_elf);
	free(info);
}

/* Parse, want rc and a message containing what; out must stay untouched. */
static void refused(const unsigned char *buf, size_t len, int rc, const char *what)
{
	struct sbx_elf_info *info = malloc(sizeof(*info));
	struct sbx_error err = { 0 };

	memset(info, 0xa5, sizeof(*info));
	assert_int_equal(parse_mem(buf, len, info, &err, NULL), rc);
	if (!strstr(err.msg, what))
		fail_msg("message \"%s\" does not say \"%s\"", err.msg, what);
	for (size_t i = 0; i < sizeof(*info); i++)
		assert_int_equal(((unsigned char *)info)[i], 0xa5);
	free(info);
}

static void test_parse_truncated(void **state)
{
	static unsigned char buf[8192];
	struct synth s64 = basic(ELFCLASS64, EM_X86_64), s32 = basic(ELFCLASS32, EM_386);
	struct layout L;
	size_t len;

	(void)state;
	len = synth_build(&s64, buf, sizeof(buf), &L);
	refused(buf, 10, -ENOEXEC, "identification truncated");
	refused(buf, 40, -ENOEXEC, "ELF64 header truncated");
	refused(buf, L.phoff + L.phsz, -ENOEXEC, "program header table");
	refused(buf, L.dyn_off + 8, -ENOEXEC, "past the end");
	len = synth_build(&s32, buf, sizeof(buf), &L);
	refused(buf, 50, -ENOEXEC, "ELF32 header truncated");
	refused(buf, L.phoff + 3 * L.phsz - 1, -ENOEXEC, "program header table");
	assert_true(len > 0);
}

static void test_parse_bad_offsets(void **state)
{
	static unsigned char buf[8192];
	struct synth s64 = basic(ELFCLASS64, EM_X86_64), s32 = basic(ELFCLASS32, EM_386);
	struct layout L;
	size_t len;

	(void)state;
	/* Program headers past the end, and an offset that would wrap. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + 32, len);
	refused(buf, len, -ENOEXEC, "program header table");
	put64(buf + 32, UINT64_MAX - 8);
	refused(buf, len, -ENOEXEC, "past the end");
	len = synth_build(&s32, buf, sizeof(buf), &L);
	put32(buf + 28, 0xfffffff0u);
	refused(buf, len, -ENOEXEC, "program header table");

	/* PT_INTERP and PT_DYNAMIC pointing past the end. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.ph_interp + 8, len - 2);
	refused(buf, len, -ENOEXEC, "PT_INTERP");
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.ph_dynamic + 8, UINT64_MAX - 16);
	refused(buf, len, -ENOEXEC, "PT_DYNAMIC");

	/* DT_STRTAB at an address no PT_LOAD maps, in both classes. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.dyn_strtab + 8, 0x900000);
	refused(buf, len, -ENOEXEC, "in no PT_LOAD");
	len = synth_build(&s32, buf, sizeof(buf), &L);
	put32(buf + L.dyn_strtab + 4, SYN_BASE - 1);
	refused(buf, len, -ENOEXEC, "in no PT_LOAD");
	/* DT_STRSZ running past its PT_LOAD. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.dyn_strsz + 8, len);
	refused(buf, len, -ENOEXEC, "DT_STRSZ");
	/* A PT_LOAD whose file contents run past the end of the file. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.phoff + 32, len + 4096);
	refused(buf, len, -ENOEXEC, "past the end of the file");
	/* A DT_NEEDED offset outside DT_STRSZ. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.dyn_off + 8, L.strsz);
	refused(buf, len, -ENOEXEC, "outside the dynamic string table");
	/* DT_NEEDED but no DT_STRTAB (its entry turned into DT_SYMTAB). */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.dyn_strtab, DT_SYMTAB);
	refused(buf, len, -ENOEXEC, "without DT_STRTAB");
}

static void test_parse_unterminated(void **state)
{
	static unsigned char buf[8192];
	struct synth s64 = basic(ELFCLASS64, EM_X86_64), s32 = basic(ELFCLASS32, EM_386);
	struct layout L;
	size_t len;

	(void)state;
	/* The last string of the table (DT_RUNPATH) loses its NUL. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	buf[L.strtab_off + L.strsz - 1] = 'x';
	refused(buf, len, -ENOEXEC, "runs off the end");
	len = synth_build(&s32, buf, sizeof(buf), &L);
	put32(buf + L.dyn_strsz + 4, (uint32_t)(L.strsz - 1));
	refused(buf, len, -ENOEXEC, "runs off the end");
	/* PT_INTERP without its NUL; empty; too short. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	buf[L.interp_off + strlen(s64.interp)] = 'x';
	refused(buf, len, -ENOEXEC, "PT_INTERP is not a NUL-terminated path");
	len = synth_build(&s64, buf, sizeof(buf), &L);
	buf[L.interp_off] = '\0';
	refused(buf, len, -ENOEXEC, "PT_INTERP is not a NUL-terminated path");
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.ph_interp + 32, 1);
	refused(buf, len, -ENOEXEC, "PT_INTERP of 1 bytes");
}

static void test_parse_huge(void **state)
{
	static unsigned char buf[65536];
	static char names[SBX_ELF_MAX_NEEDED + 1][16];
	static char longname[300];
	struct synth s64 = basic(ELFCLASS64, EM_X86_64), s32 = basic(ELFCLASS32, EM_386);
	struct synth many = { ELFCLASS64, EM_X86_64, NULL, { 0 }, 0, NULL, NULL };
	struct layout L;
	size_t len;

	(void)state;
	/* e_phnum PN_XNUM, and the largest count the kernel takes plus one. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put16(buf + 56, PN_XNUM);
	refused(buf, len, -ENOEXEC, "program headers, more than");
	put16(buf + 56, 65536 / 56 + 1);
	refused(buf, len, -ENOEXEC, "program headers, more than");
	len = synth_build(&s32, buf, sizeof(buf), &L);
	put16(buf + 44, 65536 / 32 + 1);
	refused(buf, len, -ENOEXEC, "program headers, more than");
	/* A wrong e_phentsize. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put16(buf + 54, 32);
	refused(buf, len, -ENOEXEC, "e_phentsize");
	/* A PT_DYNAMIC of a terabyte; a PT_INTERP of 5000 bytes. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.ph_dynamic + 32, 1ull << 40);
	refused(buf, len, -E2BIG, "PT_DYNAMIC is");
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.ph_interp + 32, 5000);
	refused(buf, len, -E2BIG, "PT_INTERP is 5000 bytes");
	/* One DT_NEEDED too many. */
	for (size_t i = 0; i <= SBX_ELF_MAX_NEEDED; i++) {
		snprintf(names[i], sizeof(names[i]), "lib%zu.so", i);
		many.needed[many.n_needed++] = names[i];
	}
	len = synth_build(&many, buf, sizeof(buf), &L);
	refused(buf, len, -E2BIG, "more than 128 DT_NEEDED");
	/* A name longer than SBX_ELF_NAME_MAX - 1. */
	memset(longname, 'l', sizeof(longname) - 1);
	many.n_needed = 1;
	many.needed[0] = longname;
	len = synth_build(&many, buf, sizeof(buf), &L);
	refused(buf, len, -E2BIG, "longer than 255 bytes");
}

static void test_parse_refusals(void **state)
{
	static unsigned char buf[8192];
	struct synth s64 = basic(ELFCLASS64, EM_X86_64);
	struct sbx_elf_info *info = calloc(1, sizeof(*info));
	struct sbx_error err = { 0 };
	struct layout L;
	size_t len;

	(void)state;
	len = synth_build(&s64, buf, sizeof(buf), &L);
	buf[EI_CLASS] = 3;
	refused(buf, len, -ENOEXEC, "unknown ELF class 3");
	len = synth_build(&s64, buf, sizeof(buf), &L);
	buf[EI_DATA] = ELFDATA2MSB;
	refused(buf, len, -ENOEXEC, "not little-endian");
	/* Two PT_INTERP, two PT_DYNAMIC. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put32(buf + L.phoff, PT_INTERP);
	refused(buf, len, -ENOEXEC, "more than one PT_INTERP");
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put32(buf + L.ph_interp, PT_DYNAMIC);
	refused(buf, len, -ENOEXEC, "more than one PT_DYNAMIC");
	/* An empty PT_DYNAMIC. */
	len = synth_build(&s64, buf, sizeof(buf), &L);
	put64(buf + L.ph_dynamic + 32, 0);
	refused(buf, len, -ENOEXEC, "PT_DYNAMIC holds no entry");
	/* The read_at error comes back as it is. */
	{
		struct mem m = { buf, len, 0, -EACCES };

		assert_int_equal(sbx_elf_parse(mem_read_at, &m, len, info, &err), -EACCES);
		assert_non_null(strstr(err.msg, "Permission denied"));
	}
	/* Without PT_DYNAMIC (a static program) or any program header. */
	{
		struct synth st = { ELFCLASS64, EM_X86_64, NULL, { 0 }, 0, NULL, NULL };

		len = synth_build(&st, buf, sizeof(buf), &L);
		put32(buf + L.ph_dynamic, PT_NOTE);
		assert_int_equal(parse_mem(buf, len, info, &err, NULL), 0);
		assert_true(info->is_elf);
		assert_int_equal(info->n_needed, 0);
		put16(buf + 56, 0);
		assert_int_equal(parse_mem(buf, len, info, &err, NULL), 0);
		assert_true(info->is_elf);
	}
	/* PT_GNU_STACK: an executable stack asked for (PF_X), in both
	 * classes; read-write only, or no such header, is not. */
	for (unsigned cls = ELFCLASS32; cls <= ELFCLASS64; cls++) {
		struct synth st = basic(cls, cls == ELFCLASS64 ? EM_X86_64 : EM_386);
		size_t flags_at = cls == ELFCLASS64 ? 4 : 24;

		len = synth_build(&st, buf, sizeof(buf), &L);
		assert_int_equal(parse_mem(buf, len, info, &err, NULL), 0);
		assert_false(info->exec_stack);
		put32(buf + L.ph_dynamic, PT_GNU_STACK);
		put32(buf + L.ph_dynamic + flags_at, PF_R | PF_W);
		assert_int_equal(parse_mem(buf, len, info, &err, NULL), 0);
		assert_false(info->exec_stack);
		put32(buf + L.ph_dynamic + flags_at, PF_R | PF_W | PF_X);
		assert_int_equal(parse_mem(buf, len, info, &err, NULL), 0);
		assert_true(info->exec_stack);
	}
	free(info);
}

/* ---- sbx_elf_parse: real objects --------------------------------------------- */

/* What readelf says of path: interpreter, DT_NEEDED, DT_RPATH, DT_RUNPATH. */
static void readelf_facts(const char *path, struct sbx_elf_info *want)
{
	char cmd[PATH_MAX + 64], line[4096];
	FILE *f;

	memset(want, 0, sizeof(*want));
	snprintf(cmd, sizeof(cmd), "LC_ALL=C /usr/bin/readelf -ldW '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *open = strchr(line, '['), *close = open ? strchr(open, ']') : NULL;

		if (!open || !close)
			continue;
		*close = '\0';
		if (strstr(line, "Requesting program interpreter: "))
			sbx_strlcpy(want->interp, sizeof(want->interp),
				    strstr(line, ": ") + 2);
		else if (strstr(line, "(NEEDED)"))
			sbx_strlcpy(want->needed[want->n_needed++], SBX_ELF_NAME_MAX, open + 1);
		else if (strstr(line, "(RPATH)"))
			sbx_strlcpy(want->rpath, sizeof(want->rpath), open + 1);
		else if (strstr(line, "(RUNPATH)"))
			sbx_strlcpy(want->runpath, sizeof(want->runpath), open + 1);
	}
	assert_int_equal(pclose(f), 0);
}

static void test_parse_real(void **state)
{
	const char *files[] = { "/usr/bin/git", "/bin/dash", "/usr/bin/gcc-12", "/bin/ls",
				"/usr/lib/x86_64-linux-gnu/libc.so.6", "/proc/self/exe" };
	struct sbx_elf_info *got = calloc(1, sizeof(*got)), *want = calloc(1, sizeof(*want));
	struct sbx_error err = { 0 };
	unsigned parsed = 0;
	bool have_readelf = access("/usr/bin/readelf", X_OK) == 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char real[PATH_MAX];
		unsigned char *buf;
		uint64_t read;
		size_t len;
		int fd;

		if (!realpath(files[i], real))
			continue;	/* not installed here */
		fd = open(real, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(sbx_elf_parse_fd(fd, real, got, &err), 0);
		close(fd);
		assert_true(got->is_elf);
		/* Through memory, counting: well under the 1 MiB bound. */
		buf = read_whole(real, &len);
		assert_int_equal(parse_mem(buf, len, want, &err, &read), 0);
		assert_memory_equal(got, want, sizeof(*got));
		free(buf);
		print_message("%s: %zu DT_NEEDED, interp \"%s\", %" PRIu64 " of %zu bytes read\n",
			      real, got->n_needed, got->interp, read, len);
		assert_true(read < 256 * 1024);
		assert_true(got->n_needed > 0);
		if (strstr(real, "libc.so"))
			assert_true(got->interp[0]);	/* libc is runnable */
		else
			assert_string_equal(got->interp, native_interp);
		if (have_readelf) {
			readelf_facts(real, want);
			assert_string_equal(got->interp, want->interp);
			assert_int_equal(got->n_needed, want->n_needed);
			for (size_t k = 0; k < got->n_needed; k++)
				assert_string_equal(got->needed[k], want->needed[k]);
			assert_string_equal(got->rpath, want->rpath);
			assert_string_equal(got->runpath, want->runpath);
		}
		parsed++;
	}
	assert_true(parsed >= 3);
	/* A directory and a FIFO are not regular files. */
	{
		int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_int_equal(sbx_elf_parse_fd(fd, "/", got, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "not a regular file"));
		close(fd);
	}
	free(got);
	free(want);
}

/* ---- sbx_ldcache_parse ------------------------------------------------------- */

struct cache_seen {
	size_t n;
	char libc[SBX_PATH_MAX];
	int stop_at;	/* return 7 on this entry (1-based), 0 = never */
};

static int cache_cb(void *ctx, const char *soname, const char *path, uint32_t flags)
{
	struct cache_seen *c = ctx;

	(void)flags;
	c->n++;
	if (strcmp(soname, "libc.so.6") == 0 && !c->libc[0])
		sbx_strlcpy(c->libc, sizeof(c->libc), path);
	return c->stop_at && (int)c->n == c->stop_at ? 7 : 0;
}

static void test_ldcache_real(void **state)
{
	struct cache_seen c = { 0 };
	struct sbx_error err = { 0 };
	unsigned char *buf;
	char line[256];
	size_t len, want = 0;
	FILE *f;

	(void)state;
	buf = read_whole("/etc/ld.so.cache", &len);
	assert_int_equal(sbx_ldcache_parse(buf, len, cache_cb, &c, &err), 0);
	free(buf);
	assert_true(c.n > 10);
	assert_non_null(strstr(c.libc, "/libc.so.6"));
	assert_int_equal(access(c.libc, R_OK), 0);
	/* ldconfig -p says how many entries it sees. */
	f = popen("LC_ALL=C /sbin/ldconfig -p", "r");
	assert_non_null(f);
	if (fgets(line, sizeof(line), f))
		want = strtoul(line, NULL, 10);
	while (fgets(line, sizeof(line), f))
		;
	pclose(f);
	print_message("ld.so.cache: %zu entries (ldconfig -p: %zu), libc.so.6 -> %s\n", c.n,
		      want, c.libc);
	assert_int_equal(c.n, want);
}

struct centry {
	const char *soname, *path;
};

/* A cache of ldconfig's layout, after an old part of old_n entries when
 * old_n >= 0. */
static size_t cache_build(unsigned char *buf, size_t size, const struct centry *e, size_t n,
			  int old_n)
{
	size_t off = 0, base, str;

	memset(buf, 0, size);
	if (old_n >= 0) {
		uint32_t v = (uint32_t)old_n;

		memcpy(buf, "ld.so-1.7.0", 11);
		memcpy(buf + 12, &v, 4);
		off = (16 + 12 * (size_t)old_n + 7) & ~(size_t)7;
	}
	base = off;
	memcpy(buf + base, "glibc-ld.so.cache1.1", 20);
	{
		uint32_t v = (uint32_t)n;

		memcpy(buf + base + 20, &v, 4);
	}
	str = 48 + 24 * n;
	for (size_t i = 0; i < n; i++) {
		unsigned char *ent = buf + base + 48 + 24 * i;
		uint32_t flags = 0x0303, key, value;

		key = (uint32_t)str;
		memcpy(buf + base + str, e[i].soname, strlen(e[i].soname) + 1);
		str += strlen(e[i].soname) + 1;
		value = (uint32_t)str;
		memcpy(buf + base + str, e[i].path, strlen(e[i].path) + 1);
		str += strlen(e[i].path) + 1;
		memcpy(ent, &flags, 4);
		memcpy(ent + 4, &key, 4);
		memcpy(ent + 8, &value, 4);
	}
	assert_true(base + str <= size);
	return base + str;
}

static void test_ldcache_synthetic(void **state)
{
	static const struct centry two[] = {
		{ "libx.so.1", "/usr/lib/libx.so.1" }, { "liby.so.2", "/lib/liby.so.2" },
	};
	unsigned char buf[1024];
	struct sbx_error err = { 0 };
	struct cache_seen c = { 0 };
	uint32_t v;
	size_t len;

	(void)state;
	/* New format alone, and after an old part (4 and 5 entries: the
	 * alignment to 8 matters for the odd one). */
	for (int old = -1; old <= 5; old += (old < 0 ? 5 : 1)) {
		memset(&c, 0, sizeof(c));
		len = cache_build(buf, sizeof(buf), two, 2, old);
		assert_int_equal(sbx_ldcache_parse(buf, len, cache_cb, &c, &err), 0);
		assert_int_equal(c.n, 2);
	}
	/* A nonzero callback return stops and is returned. */
	memset(&c, 0, sizeof(c));
	c.stop_at = 1;
	len = cache_build(buf, sizeof(buf), two, 2, -1);
	assert_int_equal(sbx_ldcache_parse(buf, len, cache_cb, &c, &err), 7);
	assert_int_equal(c.n, 1);
	/* Empty. */
	memset(&c, 0, sizeof(c));
	len = cache_build(buf, sizeof(buf), two, 0, -1);
	assert_int_equal(sbx_ldcache_parse(buf, len, cache_cb, &c, &err), 0);
	assert_int_equal(c.n, 0);

	/* Malformed: every one -EINVAL before any callback. */
#define CACHE_BAD(mutate, what)                                                   \
	do {                                                                      \
		memset(&c, 0, sizeof(c));                                         \
		len = cache_build(buf, sizeof(buf), two, 2, -1);                  \
		mutate;                                                           \
		assert_int_equal(sbx_ldcache_parse(buf, len, cache_cb, &c, &err), \
				 -EINVAL);                                        \
		assert_int_equal(c.n, 0);                                         \
		if (!strstr(err.msg, what))                                       \
			fail_msg("\"%s\" does not say \"%s\"", err.msg, what);     \
	} while (0)
	CACHE_BAD(buf[0] = 'G', "no \"glibc-ld.so.cache1.1\" header");
	CACHE_BAD(buf[19] = '0', "header");	/* version 1.0 */
	CACHE_BAD(len = 47, "header");
	CACHE_BAD((v = 1000000, memcpy(buf + 20, &v, 4)), "entries do not fit");
	CACHE_BAD((v = UINT32_MAX, memcpy(buf + 20, &v, 4)), "entries do not fit");
	CACHE_BAD((v = (uint32_t)len, memcpy(buf + 48 + 24 + 4, &v, 4)), "entry 1");
	CACHE_BAD((v = UINT32_MAX, memcpy(buf + 48 + 8, &v, 4)), "entry 0");
	CACHE_BAD(buf[len - 1] = 'x', "entry 1");	/* last path unterminated */
	/* An old part whose count does not fit, or with nothing after it. */
	memset(&c, 0, sizeof(c));
	len = cache_build(buf, sizeof(buf), two, 2, 3);
	v = 1000;
	memcpy(buf + 12, &v, 4);
	assert_int_equal(sbx_ldcache_parse(buf, len, cache_cb, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "old part"));
	assert_int_equal(sbx_ldcache_parse(buf, 16 + 12 * 3, cache_cb, &c, &err), -EINVAL);
	assert_int_equal(c.n, 0);
#undef CACHE_BAD
}

/* ---- the exec set ------------------------------------------------------------- */

static bool set_has(const struct sbx_exec_set *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->paths[i], path) == 0)
			return true;
	return false;
}

static void set_print(const struct sbx_exec_set *s, const char *what)
{
	print_message("exec set of %s: %zu entries\n", what, s->n);
	for (size_t i = 0; i < s->n; i++)
		print_message("  %s\n", s->paths[i]);
	if (s->unresolved[0])
		print_message("  unresolved: %s\n", s->unresolved);
}

/* The canonical paths ldd lists for prog (its interpreter included). */
static size_t ldd_paths(const char *prog, char (*out)[PATH_MAX], size_t max)
{
	char cmd[PATH_MAX + 64], line[4096];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "LC_ALL=C /usr/bin/ldd '%s'", prog);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "=> "), *end;

		p = p ? p + 3 : line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '/')
			continue;	/* linux-vdso.so.1, "not found" */
		end = strstr(p, " (");
		if (end)
			*end = '\0';
		assert_true(n < max);
		assert_non_null(realpath(p, out[n]));
		n++;
	}
	assert_int_equal(pclose(f), 0);
	return n;
}

static void same_as_ldd(const char *prog)
{
	static char ldd[64][PATH_MAX];
	struct sbx_exec_set s;
	struct sbx_error err = { 0 };
	char real[PATH_MAX];
	size_t n;

	sbx_exec_set_init(&s);
	assert_non_null(realpath(prog, real));
	assert_int_equal(sbx_exec_set_add(&s, prog, &err), 0);
	set_print(&s, prog);
	n = ldd_paths(prog, ldd, ARRAY_SIZE(ldd));
	assert_true(n >= 2);	/* libc and the interpreter at least */
	assert_true(set_has(&s, real));
	for (size_t i = 0; i < n; i++)
		if (!set_has(&s, ldd[i]))
			fail_msg("%s: ldd's %s is not in the set", prog, ldd[i]);
	/* Nothing else, but for glibc-hwcaps variants ldd does not show. */
	for (size_t i = 0; i < s.n; i++) {
		bool known = strcmp(s.paths[i], real) == 0 || strstr(s.paths[i], "/glibc-hwcaps/");

		for (size_t k = 0; k < n && !known; k++)
			known = strcmp(s.paths[i], ldd[k]) == 0;
		if (!known)
			fail_msg("%s: %s is in the set but not in ldd's list", prog, s.paths[i]);
	}
	assert_string_equal(s.unresolved, "");
	print_message("%s: %zu entries, ldd lists %zu paths + the program\n", prog, s.n, n);
	sbx_exec_set_free(&s);
}

static void test_set_vs_ldd(void **state)
{
	(void)state;
	same_as_ldd("/usr/bin/git");
	same_as_ldd("/bin/sh");
	if (access("/usr/bin/gcc-12", X_OK) == 0)
		same_as_ldd("/usr/bin/gcc-12");
}

static void test_set_directory(void **state)
{
	static char ldd[64][PATH_MAX];
	const char *dir = "/usr/lib/git-core";
	struct sbx_exec_set s;
	struct sbx_error err = { 0 };
	char real[PATH_MAX];
	size_t n, before;

	(void)state;
	if (!realpath(dir, real)) {
		print_message("[  SKIP    ] %s not installed\n", dir);
		skip();
	}
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, dir, &err), 0);
	set_print(&s, dir);
	assert_true(set_has(&s, real));
	for (size_t i = 0; i < s.n; i++)
		assert_true(strcmp(s.paths[i], real) == 0 || !sbx_path_is_under(s.paths[i], real));
	assert_true(sbx_exec_set_contains(&s, "/usr/lib/git-core/git-remote-http"));
	assert_false(sbx_exec_set_contains(&s, "/usr/lib/git-corex"));
	assert_false(sbx_exec_set_contains(&s, "/usr/bin/id"));
	/* The closure of what is inside: git-remote-http's libcurl. */
	n = ldd_paths("/usr/lib/git-core/git-remote-http", ldd, ARRAY_SIZE(ldd));
	for (size_t i = 0; i < n; i++)
		if (!sbx_exec_set_contains(&s, ldd[i]))
			fail_msg("git-remote-http's %s is not in the set", ldd[i]);
	/* A file and then its directory: the file's entry goes. */
	before = s.n;
	sbx_exec_set_free(&s);
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, "/usr/lib/git-core/git", &err), 0);
	assert_true(set_has(&s, "/usr/lib/git-core/git"));
	assert_int_equal(sbx_exec_set_add(&s, dir, &err), 0);
	assert_false(set_has(&s, "/usr/lib/git-core/git"));
	assert_int_equal(s.n, before);
	/* Adding either again changes nothing. */
	assert_int_equal(sbx_exec_set_add(&s, dir, &err), 0);
	assert_int_equal(sbx_exec_set_add(&s, "/usr/lib/git-core/git", &err), 0);
	assert_int_equal(s.n, before);
	sbx_exec_set_free(&s);
}

static void test_set_untrusted_symlink(void **state)
{
	struct sbx_exec_set s;
	struct sbx_error err = { 0 };
	char real[PATH_MAX];

	(void)state;
	REQUIRE_TREE();
	assert_non_null(realpath("/usr/bin/git", real));
	/* Positive control: a root-owned link in a root-owned 0755 directory. */
	assert_int_equal(symlink("/usr/bin/git", pathf("git-root")), 0);
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, pathf("git-root"), &err), 0);
	assert_true(set_has(&s, real));
	sbx_exec_set_free(&s);
	/* The same link owned by an unprivileged uid is refused. */
	assert_int_equal(symlink("/usr/bin/git", pathf("git-agent")), 0);
	assert_int_equal(lchown(pathf("git-agent"), sbx_test_uid(), sbx_test_gid()), 0);
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, pathf("git-agent"), &err), -ELOOP);
	assert_non_null(strstr(err.msg, "not root"));
	assert_int_equal(s.n, 0);
	/* And so is a missing path. */
	assert_int_equal(sbx_exec_set_add(&s, pathf("nothing-here"), &err), -ENOENT);
	assert_int_equal(sbx_exec_set_add(&s, "relative/path", &err), -EINVAL);
	assert_int_equal(s.n, 0);
	sbx_exec_set_free(&s);
}

/* A directory entry makes its whole tree executable: a subdirectory or a
 * file in it the agent could change refuses the entry. */
static void test_set_directory_untrusted_inside(void **state)
{
	static unsigned char buf[4096];
	struct synth sp = basic(ELFCLASS64, EM_X86_64);
	struct sbx_exec_set s;
	struct sbx_error err = { 0 };
	struct layout L;
	size_t len;

	(void)state;
	REQUIRE_TREE();
	mkdirs("tree/ok");
	len = synth_build(&sp, buf, sizeof(buf), &L);
	write_file(pathf("tree/ok/prog"), buf, len, 0755);
	/* Positive control: all root's. */
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, pathf("tree"), &err), 0);
	sbx_exec_set_free(&s);
	/* A subdirectory the agent owns. */
	mkdirs("tree/agentdir");
	assert_int_equal(chown(pathf("tree/agentdir"), sbx_test_uid(), sbx_test_gid()), 0);
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, pathf("tree"), &err), -EPERM);
	assert_non_null(strstr(err.msg, "agentdir"));
	assert_non_null(strstr(err.msg, "not owned by root"));
	assert_int_equal(s.n, 0);
	sbx_exec_set_free(&s);
	assert_int_equal(rmdir(pathf("tree/agentdir")), 0);
	/* A file anyone may write. */
	assert_int_equal(chmod(pathf("tree/ok/prog"), 0757), 0);
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, pathf("tree"), &err), -EPERM);
	assert_non_null(strstr(err.msg, "writable by group or others"));
	sbx_exec_set_free(&s);
}

/* A fresh set with one path added (which must succeed). */
static void set_of(struct sbx_exec_set *s, const char *path)
{
	struct sbx_error err = { 0 };

	sbx_exec_set_init(s);
	if (sbx_exec_set_add(s, path, &err) != 0)
		fail_msg("add %s: %s", path, err.msg);
	set_print(s, path);
}

static void must_have(const struct sbx_exec_set *s, const char *path)
{
	char real[PATH_MAX];

	assert_non_null(realpath(path, real));
	if (!set_has(s, real))
		fail_msg("%s is not in the set", real);
}

static void must_note(const struct sbx_exec_set *s, const char *text)
{
	if (!strstr(s->unresolved, text))
		fail_msg("unresolved \"%s\" does not say \"%s\"", s->unresolved, text);
}

/*
 * app/bin/prog*    executables with various search paths
 * app/lib/libA.so.1 -> needs libB.so.1 and libc.so.6 (no search path)
 * app/lib/libB.so.1 -> needs libA.so.1 (a cycle)
 */
static void build_tree(void)
{
	char platform[64];
	const char *plat = (const char *)getauxval(AT_PLATFORM);
	const struct arch_dir {
		unsigned machine;
		const char *multiarch;
	} *m, multi[] = { { EM_X86_64, "x86_64-linux-gnu" }, { EM_AARCH64, "aarch64-linux-gnu" } };

	assert_non_null(plat);
	sbx_strlcpy(platform, sizeof(platform), plat);
	for (m = multi; m < multi + ARRAY_SIZE(multi) && m->machine != native_machine; m++)
		;
	assert_true(m < multi + ARRAY_SIZE(multi));

	mkdirs("app/bin");
	mkdirs("app/lib");
	mkdirs("app/lib32");
	synth_file(pathf("app/lib/libA.so.1"), NULL, NULL, NULL, "libB.so.1", "libc.so.6", NULL);
	synth_file(pathf("app/lib/libB.so.1"), NULL, NULL, NULL, "libA.so.1", NULL);
	synth_file(pathf("app/bin/prog"), native_interp, NULL, "$ORIGIN/../lib", "libA.so.1", NULL);
	synth_file(pathf("app/bin/prog-rpath"), native_interp, "$ORIGIN/../lib", NULL, "libA.so.1",
		   NULL);
	/* Same name, other class: ld.so passes it over. */
	{
		static unsigned char buf[4096];
		struct synth sp = { ELFCLASS32, EM_386, NULL, { "libc.so.6" }, 1, NULL, NULL };
		struct layout L;

		write_file(pathf("app/lib32/libA.so.1"), buf, synth_build(&sp, buf, sizeof(buf), &L),
			   0644);
	}
	synth_file(pathf("app/bin/prog-class"), native_interp, NULL,
		   "$ORIGIN/../lib32:$ORIGIN/../lib", "libA.so.1", NULL);
	/* Tokens: $FOO skipped, ${ORIGIN}, $LIB, $PLATFORM expanded. */
	mkdirs("app/lib/x86_64-linux-gnu");
	mkdirs("app/lib/aarch64-linux-gnu");
	mkdirs("app/plat");
	synth_file(pathf("app/lib/%s/libT.so.1", m->multiarch), NULL, NULL, NULL, NULL);
	synth_file(pathf("app/plat/libP.so.1"), NULL, NULL, NULL, NULL);
	{
		char dir[SBX_PATH_MAX];

		snprintf(dir, sizeof(dir), "app/plat/%s", platform);
		mkdirs(dir);
		synth_file(pathf("app/plat/%s/libQ.so.1", platform), NULL, NULL, NULL, NULL);
	}
	synth_file(pathf("app/bin/prog-tok"), native_interp, NULL,
		   "$FOO/lib:/nonexistent-$ORIGINAL:${ORIGIN}/../$LIB:$ORIGIN/../plat/$PLATFORM:"
		   "$ORIGIN/../plat",
		   "libT.so.1", "libQ.so.1", "libP.so.1", NULL);
	/* glibc-hwcaps and legacy platform variants beside the plain one. */
	mkdirs("app/hw/glibc-hwcaps/x86-64-v3");
	synth_file(pathf("app/hw/libH.so.1"), NULL, NULL, NULL, NULL);
	synth_file(pathf("app/hw/glibc-hwcaps/x86-64-v3/libH.so.1"), NULL, NULL, NULL, NULL);
	{
		char dir[SBX_PATH_MAX];

		snprintf(dir, sizeof(dir), "app/hw/%s", platform);
		mkdirs(dir);
		synth_file(pathf("app/hw/%s/libH.so.1", platform), NULL, NULL, NULL, NULL);
	}
	synth_file(pathf("app/bin/prog-hw"), native_interp, NULL, "$ORIGIN/../hw", "libH.so.1",
		   NULL);
	/* Absolute and relative DT_NEEDED. */
	synth_file(pathf("app/bin/prog-abs"), native_interp, NULL, NULL, pathf("app/lib/libB.so.1"),
		   "sub/libz.so", "libnothing-here.so.9", NULL);
	/* A library behind an agent's symlink, and behind root's. */
	mkdirs("app/evil");
	mkdirs("app/good");
	synth_file(pathf("app/lib/libE.so.1.0"), NULL, NULL, NULL, NULL);
	assert_int_equal(symlink("../lib/libE.so.1.0", pathf("app/evil/libE.so.1")), 0);
	assert_int_equal(lchown(pathf("app/evil/libE.so.1"), sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(symlink("../lib/libE.so.1.0", pathf("app/good/libE.so.1")), 0);
	synth_file(pathf("app/bin/prog-evil"), native_interp, NULL, "$ORIGIN/../evil", "libE.so.1",
		   NULL);
	synth_file(pathf("app/bin/prog-good"), native_interp, NULL, "$ORIGIN/../good", "libE.so.1",
		   NULL);
	/* A FIFO where a library should be. */
	mkdirs("app/fifo");
	assert_int_equal(mkfifo(pathf("app/fifo/libF.so.1"), 0644), 0);
	synth_file(pathf("app/bin/prog-fifo"), native_interp, NULL, "$ORIGIN/../fifo", "libF.so.1",
		   NULL);
	/* Libraries and an interpreter an agent could change. */
	mkdirs("app/agent");
	synth_file(pathf("app/agent/libU.so.1"), NULL, NULL, NULL, NULL);
	assert_int_equal(chown(pathf("app/agent/libU.so.1"), sbx_test_uid(), sbx_test_gid()), 0);
	mkdirs("app/ww");
	assert_int_equal(chmod(pathf("app/ww"), 01777), 0);
	synth_file(pathf("app/ww/libW.so.1"), NULL, NULL, NULL, NULL);
	synth_file(pathf("app/agent/ld-agent.so"), NULL, NULL, NULL, NULL);
	assert_int_equal(chown(pathf("app/agent/ld-agent.so"), sbx_test_uid(), sbx_test_gid()), 0);
	synth_file(pathf("app/bin/prog-untrusted"), pathf("app/agent/ld-agent.so"), NULL,
		   "$ORIGIN/../agent:$ORIGIN/../ww", "libU.so.1", "libW.so.1", NULL);
	/* A script. */
	write_file(pathf("app/bin/script"), "#!/bin/sh\n", 10, 0755);
}

static void test_set_search_rules(void **state)
{
	struct sbx_exec_set s;
	char libA[PATH_MAX], libB[PATH_MAX], libc[PATH_MAX] = "", interp[PATH_MAX];

	(void)state;
	REQUIRE_TREE();
	build_tree();
	assert_non_null(realpath(pathf("app/lib/libA.so.1"), libA));
	assert_non_null(realpath(pathf("app/lib/libB.so.1"), libB));
	assert_non_null(realpath(native_interp, interp));

	/* RUNPATH finds libA, but is not inherited: libA's libB is not
	 * found (ld.so fails the same way); libc comes from the cache. */
	set_of(&s, pathf("app/bin/prog"));
	must_have(&s, pathf("app/bin/prog"));
	assert_true(set_has(&s, libA));
	assert_false(set_has(&s, libB));
	assert_true(set_has(&s, interp));
	must_note(&s, "libB.so.1 (needed by ");
	must_note(&s, "app/lib/libA.so.1)");
	for (size_t i = 0; i < s.n; i++)
		if (strstr(s.paths[i], "/libc.so"))
			sbx_strlcpy(libc, sizeof(libc), s.paths[i]);
	assert_non_null(strstr(libc, "libc.so"));
	assert_int_equal(s.n, 4);
	sbx_exec_set_free(&s);

	/* The executable's RPATH serves its libraries too; the cycle ends. */
	set_of(&s, pathf("app/bin/prog-rpath"));
	assert_true(set_has(&s, libA));
	assert_true(set_has(&s, libB));
	assert_true(set_has(&s, libc));
	assert_string_equal(s.unresolved, "");
	assert_int_equal(s.n, 5);
	sbx_exec_set_free(&s);

	/* The ELF32 libA in the first directory is passed over. */
	set_of(&s, pathf("app/bin/prog-class"));
	assert_true(set_has(&s, libA));
	assert_false(set_has(&s, pathf("app/lib32/libA.so.1")));
	sbx_exec_set_free(&s);

	/* $FOO skipped, $ORIGINAL is no $ORIGIN; $LIB, $PLATFORM expanded. */
	set_of(&s, pathf("app/bin/prog-tok"));
	assert_string_equal(s.unresolved, "");
	assert_int_equal(s.n, 5);	/* prog, T, Q, P, interpreter */
	sbx_exec_set_free(&s);

	/* Every variant ld.so might pick, depending on the CPU. */
	set_of(&s, pathf("app/bin/prog-hw"));
	must_have(&s, pathf("app/hw/libH.so.1"));
	must_have(&s, pathf("app/hw/glibc-hwcaps/x86-64-v3/libH.so.1"));
	assert_int_equal(s.n, 5);
	sbx_exec_set_free(&s);

	/* An absolute DT_NEEDED is used as it is; a relative one is not. */
	set_of(&s, pathf("app/bin/prog-abs"));
	assert_true(set_has(&s, libB));
	must_note(&s, "sub/libz.so (needed by ");
	must_note(&s, ": relative path)");
	must_note(&s, "libnothing-here.so.9 (needed by ");
	sbx_exec_set_free(&s);

	/* An agent's symlink on the way to a library: noted, not followed. */
	set_of(&s, pathf("app/bin/prog-evil"));
	must_note(&s, "libE.so.1 (needed by ");
	must_note(&s, "untrusted symlink on ");
	assert_false(set_has(&s, pathf("app/lib/libE.so.1.0")));
	sbx_exec_set_free(&s);
	set_of(&s, pathf("app/bin/prog-good"));
	assert_true(set_has(&s, pathf("app/lib/libE.so.1.0")));
	assert_false(set_has(&s, pathf("app/good/libE.so.1")));
	assert_string_equal(s.unresolved, "");
	sbx_exec_set_free(&s);

	/* Nothing an agent could write: its file, a file in a directory it
	 * may write, an interpreter it owns. */
	set_of(&s, pathf("app/bin/prog-untrusted"));
	assert_int_equal(s.n, 1);
	must_note(&s, "libU.so.1 (needed by ");
	must_note(&s, "app/agent/libU.so.1: owned by uid");
	must_note(&s, "libW.so.1 (needed by ");
	must_note(&s, "app/ww: world-writable");
	must_note(&s, "app/agent/ld-agent.so (interpreter of ");
	sbx_exec_set_free(&s);
	/* Positive control: the same libraries once root's again. */
	assert_int_equal(chown(pathf("app/agent/libU.so.1"), 0, 0), 0);
	assert_int_equal(chmod(pathf("app/ww"), 0755), 0);
	set_of(&s, pathf("app/bin/prog-untrusted"));
	assert_true(set_has(&s, pathf("app/agent/libU.so.1")));
	assert_true(set_has(&s, pathf("app/ww/libW.so.1")));
	assert_false(set_has(&s, pathf("app/agent/ld-agent.so")));
	sbx_exec_set_free(&s);
	assert_int_equal(chown(pathf("app/agent/ld-agent.so"), 0, 0), 0);
	set_of(&s, pathf("app/bin/prog-untrusted"));
	assert_true(set_has(&s, pathf("app/agent/ld-agent.so")));
	assert_string_equal(s.unresolved, "");
	sbx_exec_set_free(&s);

	set_of(&s, pathf("app/bin/prog-fifo"));
	must_note(&s, "app/fifo/libF.so.1: not a regular file)");
	sbx_exec_set_free(&s);

	/* A script is added alone: its #! interpreter is the profile's call. */
	set_of(&s, pathf("app/bin/script"));
	assert_int_equal(s.n, 1);
	sbx_exec_set_free(&s);

	/* The whole bin directory: one entry for it, the libraries beside. */
	set_of(&s, pathf("app/bin"));
	assert_true(set_has(&s, pathf("app/bin")));
	assert_true(set_has(&s, libA) && set_has(&s, libB) && set_has(&s, interp));
	assert_true(set_has(&s, pathf("app/lib/libE.so.1.0")));	/* through prog-good */
	for (size_t i = 0; i < s.n; i++)
		assert_false(sbx_path_is_under(s.paths[i], pathf("app/bin")) &&
			     strcmp(s.paths[i], pathf("app/bin")) != 0);
	sbx_exec_set_free(&s);
}

static void test_set_refusals(void **state)
{
	static unsigned char buf[4096];
	struct synth sp = basic(ELFCLASS64, EM_X86_64);
	struct sbx_exec_set s;
	struct sbx_error err = { 0 };
	char saved[sizeof(s.unresolved)];
	struct layout L;
	size_t len, n;

	(void)state;
	REQUIRE_TREE();
	mkdirs("ref/bad");
	len = synth_build(&sp, buf, sizeof(buf), &L);
	write_file(pathf("ref/bad/short"), buf, 40, 0755);
	write_file(pathf("ref/good"), buf, len, 0755);
	assert_int_equal(mkfifo(pathf("ref/fifo"), 0644), 0);

	sbx_exec_set_init(&s);
	/* Positive control first, so the set is not empty. */
	assert_int_equal(sbx_exec_set_add(&s, "/bin/sh", &err), 0);
	n = s.n;
	assert_int_equal(sbx_exec_set_add(&s, pathf("ref/good"), &err), 0);
	assert_true(s.n == n + 1);	/* its libraries and interpreter do not exist */
	must_note(&s, "liba.so.1 (needed by ");
	must_note(&s, "/lib/ld-test.so.1 (interpreter of ");
	n = s.n;
	memcpy(saved, s.unresolved, sizeof(saved));

	/* A malformed ELF given: refused, the set as it was. */
	assert_int_equal(sbx_exec_set_add(&s, pathf("ref/bad/short"), &err), -ENOEXEC);
	assert_non_null(strstr(err.msg, "ref/bad/short: ELF64 header truncated"));
	assert_int_equal(s.n, n);
	/* In a given directory it is noted instead. */
	assert_int_equal(sbx_exec_set_add(&s, pathf("ref/bad"), &err), 0);
	assert_int_equal(s.n, n + 1);
	must_note(&s, "ref/bad/short: ELF64 header truncated (40 of 64 bytes) (under ");
	sbx_exec_set_free(&s);

	/* Neither a file nor a directory. */
	sbx_exec_set_init(&s);
	assert_int_equal(sbx_exec_set_add(&s, pathf("ref/fifo"), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a regular file or directory"));
	assert_int_equal(s.n, 0);

	/* 17 levels deep, and 4097 entries: -E2BIG, the set as it was. */
	{
		char rel[SBX_PATH_MAX] = "ref/deep";

		for (int i = 0; i < 17; i++)
			snprintf(rel + strlen(rel), sizeof(rel) - strlen(rel), "/%d", i);
		mkdirs(rel);
		assert_int_equal(sbx_exec_set_add(&s, "/bin/sh", &err), 0);
		n = s.n;
		memcpy(saved, s.unresolved, sizeof(saved));
		assert_int_equal(sbx_exec_set_add(&s, pathf("ref/deep"), &err), -E2BIG);
		assert_non_null(strstr(err.msg, "more than 16 levels below"));
		assert_int_equal(s.n, n);
		assert_string_equal(s.unresolved, saved);
		/* 16 levels below ref/deep/0 are fine. */
		assert_int_equal(sbx_exec_set_add(&s, pathf("ref/deep/0"), &err), 0);
		assert_int_equal(s.n, n + 1);
	}
	mkdirs("ref/many");
	for (int i = 0; i < 4097; i++) {
		int fd = open(pathf("ref/many/f%d", i), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		assert_true(fd >= 0);
		close(fd);
	}
	n = s.n;
	assert_int_equal(sbx_exec_set_add(&s, pathf("ref/many"), &err), -E2BIG);
	assert_non_null(strstr(err.msg, "more than 4096 entries below"));
	assert_int_equal(s.n, n);
	assert_int_equal(unlink(pathf("ref/many/f0")), 0);
	assert_int_equal(sbx_exec_set_add(&s, pathf("ref/many"), &err), 0);
	assert_int_equal(s.n, n + 1);
	sbx_exec_set_free(&s);
}

static void test_set_unresolved_cut(void **state)
{
	static char names[60][32];
	static unsigned char buf[16384];
	struct synth sp = { 0, 0, NULL, { 0 }, 0, NULL, NULL };
	struct sbx_exec_set s;
	struct layout L;
	size_t len;

	(void)state;
	REQUIRE_TREE();
	sp.cls = native_class;
	sp.machine = native_machine;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(names[i], sizeof(names[i]), "libmissing-%02zu.so.1", i);
		sp.needed[sp.n_needed++] = names[i];
	}
	len = synth_build(&sp, buf, sizeof(buf), &L);
	write_file(pathf("cut"), buf, len, 0755);
	set_of(&s, pathf("cut"));
	assert_int_equal(s.n, 1);
	len = strlen(s.unresolved);
	assert_true(len < sizeof(s.unresolved));
	assert_string_equal(s.unresolved + len - 3, "...");
	assert_non_null(strstr(s.unresolved, "libmissing-00.so.1 (needed by "));
	/* Cut after a whole note. */
	assert_string_equal(s.unresolved + len - 5, "; ...");
	sbx_exec_set_free(&s);
}

static void test_set_ldcache_trust(void **state)
{
	static unsigned char buf[4096];
	struct sbx_exec_set s;
	struct sbx_error err = { 0 };
	char real[PATH_MAX];
	size_t len;

	(void)state;
	REQUIRE_TREE();
	/* A cache others may write is not trusted: an error. */
	{
		static const struct centry e[] = { { "libc.so.6", "/usr/lib/libc.so.6" } };

		len = cache_build(buf, sizeof(buf), e, 1, -1);
		write_file(pathf("ld.so.cache"), buf, len, 0666);
	}
	sbx_exec_set_init(&s);
	s.ldcache_file = pathf("ld.so.cache");
	assert_int_equal(sbx_exec_set_add(&s, "/bin/sh", &err), -EPERM);
	assert_non_null(strstr(err.msg, "ld.so.cache: world-writable"));
	assert_int_equal(s.n, 0);
	sbx_exec_set_free(&s);
	/* Positive control: the same file root's alone, then malformed. */
	assert_int_equal(chmod(pathf("ld.so.cache"), 0644), 0);
	sbx_exec_set_init(&s);
	s.ldcache_file = pathf("ld.so.cache");
	assert_int_equal(sbx_exec_set_add(&s, "/bin/sh", &err), 0);
	assert_int_equal(s.ldcache_n, 1);
	sbx_exec_set_free(&s);
	write_file(pathf("ld.so.cache"), "glibc-ld.so.cache1.1", 20, 0644);
	sbx_exec_set_init(&s);
	s.ldcache_file = pathf("ld.so.cache");
	assert_int_equal(sbx_exec_set_add(&s, "/bin/sh", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "ld.so.cache: ld.so.cache: no"));
	sbx_exec_set_free(&s);
	/* A missing one is skipped: ld.so searches the default directories. */
	sbx_exec_set_init(&s);
	s.ldcache_file = "/nonexistent-sbx-test/ld.so.cache";
	assert_int_equal(sbx_exec_set_add(&s, "/usr/bin/git", &err), 0);
	assert_string_equal(s.unresolved, "");
	if (native_machine == EM_X86_64) {
		assert_non_null(realpath("/lib/x86_64-linux-gnu/libc.so.6", real));
		assert_true(set_has(&s, real));
	}
	sbx_exec_set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_synthetic),
		cmocka_unit_test(test_parse_not_elf),
		cmocka_unit_test(test_parse_truncated),
		cmocka_unit_test(test_parse_bad_offsets),
		cmocka_unit_test(test_parse_unterminated),
		cmocka_unit_test(test_parse_huge),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_parse_real),
		cmocka_unit_test(test_ldcache_real),
		cmocka_unit_test(test_ldcache_synthetic),
		cmocka_unit_test(test_set_vs_ldd),
		cmocka_unit_test(test_set_directory),
		cmocka_unit_test(test_set_untrusted_symlink),
		cmocka_unit_test(test_set_directory_untrusted_inside),
		cmocka_unit_test(test_set_search_rules),
		cmocka_unit_test(test_set_refusals),
		cmocka_unit_test(test_set_unresolved_cut),
		cmocka_unit_test(test_set_ldcache_trust),
	};
	return cmocka_run_group_tests_name("elf", tests, group_setup, group_teardown);
}
