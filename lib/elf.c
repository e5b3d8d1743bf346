/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the command gate must leave executable.
 *
 * Landlock's EXECUTE right is checked by execve() only: mmap(PROT_EXEC) of
 * a readable file is not, so "ld-linux-x86-64.so.2 /usr/bin/id" runs any
 * binary the agent can read. A gated session therefore mounts the host
 * noexec, where mmap(PROT_EXEC) of a file fails with EPERM, and binds back
 * executable only the allowed programs, their ELF interpreter and the
 * libraries ld.so would map for them. This file computes that set at
 * session start, reading the ELF headers and /etc/ld.so.cache; it mounts
 * nothing.
 *
 * Missing a library fails closed (the loader cannot map it and the program
 * does not start); adding one too many makes one more trusted, root-owned
 * file mappable. Where glibc's choice depends on the CPU (glibc-hwcaps
 * variants) or on load order, every candidate it could pick is added.
 */
#include <dirent.h>
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* binfmt_elf refuses e_phnum > 65536 / sizeof(struct elf_phdr): a larger
 * table cannot belong to a program the kernel runs. */
#define ELF_PHDRS_MAX 65536u
/* PT_DYNAMIC: 4096 Elf64_Dyn; real objects hold well under a hundred. */
#define ELF_DYNAMIC_MAX 65536u

#define LDCACHE_FILE "/etc/ld.so.cache"
#define LDCACHE_MAX (16u << 20)
/* glibc sysdeps/generic/dl-cache.h: struct cache_file is magic[11], pad,
 * uint32 nlibs, then struct file_entry {int32 flags; uint32 key, value}.
 * struct cache_file_new is magic "glibc-ld.so.cache" "1.1", uint32 nlibs,
 * uint32 len_strings, uint8 flags, pad[3], uint32 extension_offset,
 * uint32 unused[3], then struct file_entry_new {int32 flags; uint32 key,
 * value, osversion; uint64 hwcap}. Key and value index strings from the
 * start of cache_file_new. Native byte order (ldconfig writes it so). */
#define LDCACHE_OLD_MAGIC "ld.so-1.7.0"
#define LDCACHE_OLD_HDR 16u
#define LDCACHE_OLD_ENTRY 12u
#define LDCACHE_NEW_MAGIC "glibc-ld.so.cache1.1"
#define LDCACHE_NEW_MAGIC_LEN 20u
#define LDCACHE_NEW_HDR 48u
#define LDCACHE_NEW_ENTRY 24u

#define EXEC_SET_MAX 8192	/* entries, each one bind mount for the caller */
#define DIR_DEPTH_MAX 16
#define DIR_ENTRIES_MAX 4096
#define HWCAPS_SUBDIRS_MAX 32
#define NO_LOADER SIZE_MAX

/* ---- ELF ---------------------------------------------------------------- */

struct elf_src {
	sbx_read_at_fn read_at;
	void *ctx;
	uint64_t size;
	struct sbx_error *err;
};

struct elf_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz;
};

struct strtab {
	uint64_t offset, size;	/* in the file */
};

static int elf_read(struct elf_src *s, uint64_t off, void *buf, size_t len, const char *what)
{
	int r;

	if (off > s->size || len > s->size - off)
		return sbx_error_set(s->err, ENOEXEC,
				     "%s (offset %" PRIu64 ", %zu bytes) is past the end of the file (%" PRIu64 " bytes)",
				     what, off, len, s->size);
	r = s->read_at(s->ctx, off, buf, len);
	if (r != 0) {
		int e = r < 0 ? -r : EIO;

		return sbx_error_set(s->err, e, "reading %s: %s", what, strerror(e));
	}
	return 0;
}

static void phdr_decode(unsigned cls, const unsigned char *raw, struct elf_phdr *ph)
{
	union {
		Elf64_Phdr p64;
		Elf32_Phdr p32;
	} p;
	bool wide = cls == ELFCLASS64;

	memcpy(&p, raw, wide ? sizeof(p.p64) : sizeof(p.p32));
	ph->type = le32toh(wide ? p.p64.p_type : p.p32.p_type);
	ph->flags = le32toh(wide ? p.p64.p_flags : p.p32.p_flags);
	ph->offset = wide ? le64toh(p.p64.p_offset) : le32toh(p.p32.p_offset);
	ph->vaddr = wide ? le64toh(p.p64.p_vaddr) : le32toh(p.p32.p_vaddr);
	ph->filesz = wide ? le64toh(p.p64.p_filesz) : le32toh(p.p32.p_filesz);
}

static void dyn_decode(unsigned cls, const unsigned char *raw, int64_t *tag, uint64_t *val)
{
	if (cls == ELFCLASS64) {
		Elf64_Dyn d;

		memcpy(&d, raw, sizeof(d));
		*tag = (int64_t)le64toh((uint64_t)d.d_tag);
		*val = le64toh(d.d_un.d_val);
	} else {
		Elf32_Dyn d;

		memcpy(&d, raw, sizeof(d));
		*tag = (int32_t)le32toh((uint32_t)d.d_tag);
		*val = le32toh(d.d_un.d_val);
	}
}

/* One NUL-terminated string at off in the table, at most cap bytes with
 * its NUL. */
static int elf_string(struct elf_src *s, const struct strtab *t, uint64_t off, char *dst,
		      size_t cap, const char *what)
{
	uint64_t left;
	size_t n;
	int r;

	if (off >= t->size)
		return sbx_error_set(s->err, ENOEXEC,
				     "%s: string offset %" PRIu64 " is outside the dynamic string table (%" PRIu64 " bytes)",
				     what, off, t->size);
	left = t->size - off;
	n = left < cap ? (size_t)left : cap;
	r = elf_read(s, t->offset + off, dst, n, what);
	if (r < 0)
		return r;
	if (!memchr(dst, '\0', n)) {
		dst[0] = '\0';
		if (n == left)
			return sbx_error_set(s->err, ENOEXEC,
					     "%s: string at offset %" PRIu64 " runs off the end of the dynamic string table",
					     what, off);
		return sbx_error_set(s->err, E2BIG, "%s: longer than %zu bytes", what, cap - 1);
	}
	return 0;
}

/* The file range of the string table: ld.so reads it at DT_STRTAB's
 * address in the mapped image, so it is found through the PT_LOAD that
 * maps that address, not through any section header. */
static int strtab_locate(struct elf_src *s, const struct elf_phdr *ph, size_t phnum,
			 uint64_t addr, bool have_size, uint64_t size, struct strtab *t)
{
	for (size_t i = 0; i < phnum; i++) {
		uint64_t rel;

		if (ph[i].type != PT_LOAD || addr < ph[i].vaddr || addr - ph[i].vaddr >= ph[i].filesz)
			continue;
		if (ph[i].offset > s->size || ph[i].filesz > s->size - ph[i].offset)
			return sbx_error_set(s->err, ENOEXEC,
					     "the PT_LOAD holding DT_STRTAB runs past the end of the file");
		rel = addr - ph[i].vaddr;
		t->offset = ph[i].offset + rel;
		t->size = ph[i].filesz - rel;
		if (have_size) {
			if (size > t->size)
				return sbx_error_set(s->err, ENOEXEC,
						     "DT_STRSZ %" PRIu64 " runs past the PT_LOAD holding DT_STRTAB",
						     size);
			t->size = size;
		}
		return 0;
	}
	return sbx_error_set(s->err, ENOEXEC,
			     "DT_STRTAB 0x%" PRIx64 " is in no PT_LOAD's file contents", addr);
}

static int elf_dynamic(struct elf_src *s, unsigned cls, const struct elf_phdr *ph, size_t phnum,
		       const struct elf_phdr *dynph, struct sbx_elf_info *info)
{
	size_t dsize = cls == ELFCLASS64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
	uint64_t needed[SBX_ELF_MAX_NEEDED], strtab = 0, strsz = 0, rpath = 0, runpath = 0;
	bool have_strtab = false, have_strsz = false, have_rpath = false, have_runpath = false;
	size_t n_needed = 0, count;
	unsigned char *dyn;
	struct strtab t = { 0, 0 };
	int r = 0;

	/* glibc refuses an empty PT_DYNAMIC ("object file has no dynamic
	 * section"); the kernel ignores PT_DYNAMIC altogether. */
	if (dynph->filesz < dsize)
		return sbx_error_set(s->err, ENOEXEC, "PT_DYNAMIC holds no entry (%" PRIu64 " bytes)",
				     dynph->filesz);
	if (dynph->filesz > ELF_DYNAMIC_MAX)
		return sbx_error_set(s->err, E2BIG, "PT_DYNAMIC is %" PRIu64 " bytes, more than %u",
				     dynph->filesz, ELF_DYNAMIC_MAX);
	count = (size_t)dynph->filesz / dsize;
	dyn = malloc(count * dsize);
	if (!dyn)
		return sbx_error_set(s->err, ENOMEM, "PT_DYNAMIC: out of memory");
	r = elf_read(s, dynph->offset, dyn, count * dsize, "PT_DYNAMIC");
	for (size_t i = 0; r == 0 && i < count; i++) {
		int64_t tag;
		uint64_t val;

		dyn_decode(cls, dyn + i * dsize, &tag, &val);
		if (tag == DT_NULL)
			break;
		/* Like glibc's elf_get_dynamic_info, a repeated tag other than
		 * DT_NEEDED: the last one counts. */
		switch (tag) {
		case DT_NEEDED:
			if (n_needed == SBX_ELF_MAX_NEEDED)
				r = sbx_error_set(s->err, E2BIG, "more than %d DT_NEEDED entries",
						  SBX_ELF_MAX_NEEDED);
			else
				needed[n_needed++] = val;
			break;
		case DT_STRTAB:
			strtab = val;
			have_strtab = true;
			break;
		case DT_STRSZ:
			strsz = val;
			have_strsz = true;
			break;
		case DT_RPATH:
			rpath = val;
			have_rpath = true;
			break;
		case DT_RUNPATH:
			runpath = val;
			have_runpath = true;
			break;
		default:
			break;
		}
	}
	free(dyn);
	if (r < 0)
		return r;
	if (!n_needed && !have_rpath && !have_runpath)
		return 0;
	if (!have_strtab)
		return sbx_error_set(s->err, ENOEXEC, "DT_NEEDED, DT_RPATH or DT_RUNPATH without DT_STRTAB");
	r = strtab_locate(s, ph, phnum, strtab, have_strsz, strsz, &t);
	for (size_t i = 0; r == 0 && i < n_needed; i++)
		r = elf_string(s, &t, needed[i], info->needed[i], sizeof(info->needed[i]),
			       "DT_NEEDED");
	info->n_needed = n_needed;
	if (r == 0 && have_rpath)
		r = elf_string(s, &t, rpath, info->rpath, sizeof(info->rpath), "DT_RPATH");
	if (r == 0 && have_runpath)
		r = elf_string(s, &t, runpath, info->runpath, sizeof(info->runpath), "DT_RUNPATH");
	return r;
}

static int elf_interp(struct elf_src *s, const struct elf_phdr *ph, struct sbx_elf_info *info)
{
	int r;

	/* binfmt_elf: p_filesz in [2, PATH_MAX] and the last byte NUL, else
	 * ENOEXEC. Ours is the profile's path bound, smaller than PATH_MAX. */
	if (ph->filesz < 2)
		return sbx_error_set(s->err, ENOEXEC, "PT_INTERP of %" PRIu64 " bytes", ph->filesz);
	if (ph->filesz > sizeof(info->interp))
		return sbx_error_set(s->err, E2BIG, "PT_INTERP is %" PRIu64 " bytes, more than %zu",
				     ph->filesz, sizeof(info->interp));
	r = elf_read(s, ph->offset, info->interp, (size_t)ph->filesz, "PT_INTERP");
	if (r < 0)
		return r;
	if (info->interp[ph->filesz - 1] != '\0' || info->interp[0] == '\0') {
		info->interp[0] = '\0';
		return sbx_error_set(s->err, ENOEXEC, "PT_INTERP is not a NUL-terminated path");
	}
	return 0;
}

static int elf_parse(struct elf_src *s, struct sbx_elf_info *info)
{
	unsigned char ident[EI_NIDENT], *raw = NULL;
	struct elf_phdr *ph = NULL;
	const struct elf_phdr *interp = NULL, *dynamic = NULL;
	union {
		Elf64_Ehdr e64;
		Elf32_Ehdr e32;
	} h;
	uint64_t phoff;
	size_t phnum, phentsize, want, hsize;
	unsigned cls;
	int r;

	if (s->size < SELFMAG)
		return 0;
	r = elf_read(s, 0, ident, SELFMAG, "ELF magic");
	if (r < 0 || memcmp(ident, ELFMAG, SELFMAG) != 0)
		return r;
	if (s->size < EI_NIDENT)
		return sbx_error_set(s->err, ENOEXEC, "ELF identification truncated (%" PRIu64 " bytes)",
				     s->size);
	r = elf_read(s, 0, ident, EI_NIDENT, "ELF identification");
	if (r < 0)
		return r;
	cls = ident[EI_CLASS];
	if (cls != ELFCLASS32 && cls != ELFCLASS64)
		return sbx_error_set(s->err, ENOEXEC, "unknown ELF class %u", cls);
	if (ident[EI_DATA] != ELFDATA2LSB)
		return sbx_error_set(s->err, ENOEXEC, "ELF data encoding %u, not little-endian",
				     ident[EI_DATA]);
	hsize = cls == ELFCLASS64 ? sizeof(h.e64) : sizeof(h.e32);
	if (s->size < hsize)
		return sbx_error_set(s->err, ENOEXEC, "ELF%d header truncated (%" PRIu64 " of %zu bytes)",
				     cls == ELFCLASS64 ? 64 : 32, s->size, hsize);
	r = elf_read(s, 0, &h, hsize, "ELF header");
	if (r < 0)
		return r;
	if (cls == ELFCLASS64) {
		info->machine = le16toh(h.e64.e_machine);
		phoff = le64toh(h.e64.e_phoff);
		phnum = le16toh(h.e64.e_phnum);
		phentsize = le16toh(h.e64.e_phentsize);
		want = sizeof(Elf64_Phdr);
	} else {
		info->machine = le16toh(h.e32.e_machine);
		phoff = le32toh(h.e32.e_phoff);
		phnum = le16toh(h.e32.e_phnum);
		phentsize = le16toh(h.e32.e_phentsize);
		want = sizeof(Elf32_Phdr);
	}
	info->is_elf = true;
	info->elf_class = cls;
	if (phnum == 0)
		return 0;	/* a relocatable object: nothing to load */
	if (phentsize != want)
		return sbx_error_set(s->err, ENOEXEC, "e_phentsize %zu, expected %zu", phentsize, want);
	/* PN_XNUM (0xffff) lands here too: the kernel does not run it. */
	if (phnum > ELF_PHDRS_MAX / want)
		return sbx_error_set(s->err, ENOEXEC, "%zu program headers, more than the kernel's %zu",
				     phnum, ELF_PHDRS_MAX / want);
	raw = malloc(phnum * want);
	ph = calloc(phnum, sizeof(*ph));
	if (!raw || !ph) {
		r = sbx_error_set(s->err, ENOMEM, "program headers: out of memory");
		goto out;
	}
	r = elf_read(s, phoff, raw, phnum * want, "program header table");
	if (r < 0)
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		phdr_decode(cls, raw + i * want, &ph[i]);
		/* Two of either has no meaning the kernel and ld.so agree on:
		 * refuse rather than pick one. */
		if (ph[i].type == PT_INTERP) {
			if (interp) {
				r = sbx_error_set(s->err, ENOEXEC, "more than one PT_INTERP");
				goto out;
			}
			interp = &ph[i];
		} else if (ph[i].type == PT_DYNAMIC) {
			if (dynamic) {
				r = sbx_error_set(s->err, ENOEXEC, "more than one PT_DYNAMIC");
				goto out;
			}
			dynamic = &ph[i];
		} else if (ph[i].type == PT_GNU_STACK) {
			/* binfmt_elf takes the last one, and so do we. */
			info->exec_stack = (ph[i].flags & PF_X) != 0;
		}
	}
	if (interp)
		r = elf_interp(s, interp, info);
	if (r == 0 && dynamic)
		r = elf_dynamic(s, cls, ph, phnum, dynamic, info);
out:
	free(raw);
	free(ph);
	return r;
}

int sbx_elf_parse(sbx_read_at_fn read_at, void *ctx, uint64_t file_size,
		  struct sbx_elf_info *out, struct sbx_error *err)
{
	struct elf_src s = { read_at, ctx, file_size, err };
	/* 36 KiB: on the heap, and copied out only on success. */
	struct sbx_elf_info *info = calloc(1, sizeof(*info));
	int r;

	if (!info)
		return sbx_error_set(err, ENOMEM, "ELF: out of memory");
	r = elf_parse(&s, info);
	if (r == 0)
		memcpy(out, info, sizeof(*info));
	free(info);
	return r;
}

static int fd_read_at(void *ctx, uint64_t off, void *buf, size_t len)
{
	int fd = *(int *)ctx;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

static void error_prefix(struct sbx_error *err, const char *what)
{
	char msg[SBX_ERROR_MAX];

	if (!err)
		return;
	memcpy(msg, err->msg, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	sbx_text_set(err->msg, sizeof(err->msg), "%s: %s", what, msg);
}

int sbx_elf_parse_fd(int fd, const char *what, struct sbx_elf_info *out,
		     struct sbx_error *err)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) != 0)
		return sbx_error_set(err, errno, "%s: fstat: %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return sbx_error_set(err, EINVAL, "%s: not a regular file", what);
	r = sbx_elf_parse(fd_read_at, &fd, (uint64_t)st.st_size, out, err);
	if (r < 0)
		error_prefix(err, what);
	return r;
}

/* ---- ld.so.cache -------------------------------------------------------- */

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int sbx_ldcache_parse(const unsigned char *buf, size_t len,
		      int (*cb)(void *ctx, const char *soname, const char *path,
				uint32_t flags),
		      void *ctx, struct sbx_error *err)
{
	const unsigned char *base;
	size_t off = 0, area, nlibs;

	if (len >= LDCACHE_OLD_HDR && memcmp(buf, LDCACHE_OLD_MAGIC, 11) == 0) {
		size_t old_n = get32(buf + 12);

		if (old_n > (len - LDCACHE_OLD_HDR) / LDCACHE_OLD_ENTRY)
			return sbx_error_set(err, EINVAL,
					     "ld.so.cache: old part's %zu entries do not fit in %zu bytes",
					     old_n, len);
		off = LDCACHE_OLD_HDR + old_n * LDCACHE_OLD_ENTRY;
		/* ldconfig aligns the new part to __alignof__(struct
		 * cache_file_new): 8 where uint64_t is 8-aligned, 4 on i386. */
		if (len - off < LDCACHE_NEW_MAGIC_LEN ||
		    memcmp(buf + off, LDCACHE_NEW_MAGIC, LDCACHE_NEW_MAGIC_LEN) != 0)
			off = (off + 7) & ~(size_t)7;
	}
	if (off > len || len - off < LDCACHE_NEW_HDR ||
	    memcmp(buf + off, LDCACHE_NEW_MAGIC, LDCACHE_NEW_MAGIC_LEN) != 0)
		return sbx_error_set(err, EINVAL, "ld.so.cache: no \"%s\" header", LDCACHE_NEW_MAGIC);
	base = buf + off;
	area = len - off;	/* string offsets count from base */
	nlibs = get32(base + 20);
	if (nlibs > (area - LDCACHE_NEW_HDR) / LDCACHE_NEW_ENTRY)
		return sbx_error_set(err, EINVAL, "ld.so.cache: %zu entries do not fit in %zu bytes",
				     nlibs, len);
	/* Check every entry first, so cb never sees a table that turns out
	 * bad further on. */
	for (size_t i = 0; i < nlibs; i++) {
		const unsigned char *e = base + LDCACHE_NEW_HDR + i * LDCACHE_NEW_ENTRY;
		uint32_t key = get32(e + 4), value = get32(e + 8);

		if (key >= area || value >= area ||
		    !memchr(base + key, '\0', area - key) || !memchr(base + value, '\0', area - value))
			return sbx_error_set(err, EINVAL,
					     "ld.so.cache: entry %zu: string offset out of range or unterminated",
					     i);
	}
	for (size_t i = 0; i < nlibs; i++) {
		const unsigned char *e = base + LDCACHE_NEW_HDR + i * LDCACHE_NEW_ENTRY;
		int r = cb(ctx, (const char *)base + get32(e + 4), (const char *)base + get32(e + 8),
			   get32(e));

		if (r != 0)
			return r;
	}
	return 0;
}

/* ---- the exec set ------------------------------------------------------- */

struct sbx_ldcache_entry {
	const char *soname, *path;	/* into ldcache_buf */
};

/* One object whose DT_NEEDED are being resolved. */
struct obj {
	char path[SBX_PATH_MAX];	/* canonical */
	char origin[SBX_PATH_MAX];	/* $ORIGIN: directory of the name it was found by */
	unsigned elf_class, machine;
	char rpath[1024], runpath[1024];
	size_t loader;			/* index of the object that needed it, or NO_LOADER */
	struct sbx_elf_info *info;	/* until its DT_NEEDED are resolved */
};

struct walk {
	struct sbx_exec_set *set;
	struct obj *objs;
	size_t n, cap;
	/* The DT_NEEDED names resolved for this executable: ld.so maps a name
	 * once and hands the same object to every later DT_NEEDED of it,
	 * whatever that one's own search path would find. */
	char (*names)[SBX_ELF_NAME_MAX];
	size_t n_names, cap_names;
	unsigned noted;			/* notes try_lib made */
	const char *top;		/* the directory the caller named */
	unsigned entries;		/* entries visited below it */
	struct sbx_error *err;
};

static const struct arch {
	unsigned machine, elf_class;
	const char *multiarch;		/* Debian's triplet: /lib/<multiarch>, $LIB */
	const char *platform;		/* AT_PLATFORM the kernel gives ld.so ($PLATFORM) */
} arches[] = {
	{ EM_X86_64, ELFCLASS64, "x86_64-linux-gnu", "x86_64" },
	{ EM_X86_64, ELFCLASS32, "x86_64-linux-gnux32", NULL },
	{ EM_386, ELFCLASS32, "i386-linux-gnu", "i686" },
	{ EM_AARCH64, ELFCLASS64, "aarch64-linux-gnu", "aarch64" },
	{ EM_ARM, ELFCLASS32, "arm-linux-gnueabihf", NULL },
	{ EM_RISCV, ELFCLASS64, "riscv64-linux-gnu", NULL },
	{ EM_PPC64, ELFCLASS64, "powerpc64le-linux-gnu", NULL },
	{ EM_S390, ELFCLASS64, "s390x-linux-gnu", NULL },
};

static const struct arch *arch_of(unsigned machine, unsigned elf_class)
{
	for (size_t i = 0; i < ARRAY_SIZE(arches); i++)
		if (arches[i].machine == machine && arches[i].elf_class == elf_class)
			return &arches[i];
	return NULL;
}

static const char *platform_of(unsigned machine, unsigned elf_class)
{
	const struct arch *a = arch_of(machine, elf_class);
	const char *native = (const char *)getauxval(AT_PLATFORM);

	/* Our own kind of object: the value this kernel really hands ld.so. */
#if defined(__x86_64__)
	if (native && machine == EM_X86_64 && elf_class == ELFCLASS64)
		return native;
#elif defined(__aarch64__)
	if (native && machine == EM_AARCH64 && elf_class == ELFCLASS64)
		return native;
#else
	(void)native;
#endif
	return a ? a->platform : NULL;
}

/* Append "item" to the "; "-separated notes once; a full buffer ends in
 * "...". */
static void note(struct sbx_exec_set *set, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct sbx_exec_set *set, const char *fmt, ...)
{
	char item[2 * SBX_PATH_MAX + 128], *buf = set->unresolved;
	size_t size = sizeof(set->unresolved), len = strlen(buf), ilen;
	const char *p;
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(item, sizeof(item), fmt, ap);
	va_end(ap);
	ilen = strlen(item);
	for (p = strstr(buf, item); p; p = strstr(p + 1, item))
		if ((p == buf || (p >= buf + 2 && p[-2] == ';')) && (p[ilen] == '\0' || p[ilen] == ';'))
			return;
	if (len >= 3 && strcmp(buf + len - 3, "...") == 0)
		return;
	n = snprintf(buf + len, size - len, "%s%s", len ? "; " : "", item);
	if (n < 0 || (size_t)n >= size - len) {
		/* Whole notes only, then "; ...". */
		buf[len] = '\0';
		while (len && len + sizeof("; ...") > size) {
			char *semi = strrchr(buf, ';');

			len = semi ? (size_t)(semi - buf) : 0;
			buf[len] = '\0';
		}
		memcpy(buf + len, len ? "; ..." : "...", len ? sizeof("; ...") : sizeof("..."));
	}
}

/*
 * An object of the set whose PT_GNU_STACK asks for an executable stack:
 * executed, it gets one from the kernel (setup_arg_pages), MDWE or not and
 * with no system call a filter could refuse; measured on 6.18, code
 * written to the stack of such a program ran. Loaded as a library, ld.so
 * has to mprotect the stack executable, which W^X refuses. Listed so the
 * memory_wx canary can say why W^X does not hold.
 */
static void note_exec_stack(struct sbx_exec_set *set, const char *canon,
			    const struct sbx_elf_info *info)
{
	char *buf = set->exec_stack;
	size_t len = strlen(buf);

	if (!info->exec_stack || strstr(buf, canon) || (len >= 3 && !strcmp(buf + len - 3, "...")))
		return;
	if (snprintf(buf + len, sizeof(set->exec_stack) - len, "%s%s", len ? "; " : "", canon) >=
	    (int)(sizeof(set->exec_stack) - len))
		snprintf(buf + len, sizeof(set->exec_stack) - len, "%s...", len ? "; " : "");
}

static int open_file(const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	/* The path was resolved symlink-free just before: a link found now
	 * was swapped in since. ENOSYS: a filter hiding openat2. */
	if (fd < 0 && errno == ENOSYS)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	return (int)fd;
}

static int set_push(struct sbx_exec_set *set, const char *path, struct sbx_error *err)
{
	char *copy;

	if (set->n == EXEC_SET_MAX)
		return sbx_error_set(err, E2BIG, "exec set: more than %d files and directories",
				     EXEC_SET_MAX);
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 32;
		char **p = realloc(set->paths, cap * sizeof(*p));

		if (!p)
			return sbx_error_set(err, ENOMEM, "exec set: out of memory");
		set->paths = p;
		set->cap = cap;
	}
	copy = strdup(path);
	if (!copy)
		return sbx_error_set(err, ENOMEM, "exec set: out of memory");
	set->paths[set->n++] = copy;
	return 0;
}

bool sbx_exec_set_contains(const struct sbx_exec_set *set, const char *path)
{
	/* A file entry has nothing under it, so "under an entry" is "under
	 * a directory entry". */
	for (size_t i = 0; i < set->n; i++)
		if (sbx_path_is_under(path, set->paths[i]))
			return true;
	return false;
}

static void dirname_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (len == 0 || len >= size) {
		sbx_strlcpy(out, size, "/");
		return;
	}
	memcpy(out, path, len);
	out[len] = '\0';
}

static int ldcache_count(void *ctx, const char *soname, const char *path, uint32_t flags)
{
	(void)soname;
	(void)path;
	(void)flags;
	(*(size_t *)ctx)++;
	return 0;
}

static int ldcache_store(void *ctx, const char *soname, const char *path, uint32_t flags)
{
	struct sbx_exec_set *set = ctx;

	(void)flags;
	set->ldcache[set->ldcache_n].soname = soname;
	set->ldcache[set->ldcache_n].path = path;
	set->ldcache_n++;
	return 0;
}

static int ldcache_load(struct sbx_exec_set *set, struct sbx_error *err)
{
	const char *file = set->ldcache_file ? set->ldcache_file : LDCACHE_FILE;
	size_t len = 0, count = 0;
	char *buf = NULL;
	int fd = -1, r;

	/* Root-owned in root-only directories like the config: a cache
	 * someone else could write would name the libraries to unlock. */
	r = sbx_trust_open_file(file, true, LDCACHE_MAX, &fd, err);
	if (r == -ENOENT) {
		/* ld.so then searches the default directories only. */
		sbx_error_clear(err);
		set->ldcache_loaded = true;
		return 0;
	}
	if (r < 0)
		return r;
	r = sbx_read_fd(fd, file, LDCACHE_MAX, &buf, &len, err);
	close(fd);
	if (r < 0)
		return r;
	{
		/* sbx_read_fd sized the buffer for the cap; keep what was read. */
		char *fit = realloc(buf, len + 1);

		if (fit)
			buf = fit;
	}
	r = sbx_ldcache_parse((unsigned char *)buf, len, ldcache_count, &count, err);
	if (r == 0 && count) {
		set->ldcache = calloc(count, sizeof(*set->ldcache));
		if (!set->ldcache)
			r = sbx_error_set(err, ENOMEM, "ld.so.cache: out of memory");
	}
	set->ldcache_n = 0;
	if (r == 0)
		r = sbx_ldcache_parse((unsigned char *)buf, len, ldcache_store, set, err);
	if (r < 0) {
		error_prefix(err, file);
		free(set->ldcache);
		set->ldcache = NULL;
		set->ldcache_n = 0;
		free(buf);
		return r;
	}
	set->ldcache_buf = buf;
	set->ldcache_loaded = true;
	return 0;
}

static void walk_reset(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->objs[i].info);
	w->n = 0;
	w->n_names = 0;
}

static bool walk_has_name(const struct walk *w, const char *name)
{
	for (size_t i = 0; i < w->n_names; i++)
		if (strcmp(w->names[i], name) == 0)
			return true;
	return false;
}

static int walk_add_name(struct walk *w, const char *name)
{
	if (w->n_names == w->cap_names) {
		size_t cap = w->cap_names ? 2 * w->cap_names : 32;
		char (*p)[SBX_ELF_NAME_MAX] = realloc(w->names, cap * sizeof(*p));

		if (!p)
			return sbx_error_set(w->err, ENOMEM, "exec set: out of memory");
		w->names = p;
		w->cap_names = cap;
	}
	/* name came from a DT_NEEDED of at most SBX_ELF_NAME_MAX bytes. */
	sbx_strlcpy(w->names[w->n_names++], SBX_ELF_NAME_MAX, name);
	return 0;
}

/* Queue an object whose DT_NEEDED are still to resolve; takes info. */
static int walk_push(struct walk *w, const char *path, const char *origin, size_t loader,
		     struct sbx_elf_info *info)
{
	struct obj *o;

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 16;
		struct obj *p = realloc(w->objs, cap * sizeof(*p));

		if (!p) {
			free(info);
			return sbx_error_set(w->err, ENOMEM, "exec set: out of memory");
		}
		w->objs = p;
		w->cap = cap;
	}
	o = &w->objs[w->n];
	memset(o, 0, offsetof(struct obj, info));
	/* Both fit: path is canonical from a resolve into SBX_PATH_MAX and
	 * origin a prefix of a path of that size. */
	sbx_strlcpy(o->path, sizeof(o->path), path);
	sbx_strlcpy(o->origin, sizeof(o->origin), origin);
	o->elf_class = info->elf_class;
	o->machine = info->machine;
	memcpy(o->rpath, info->rpath, sizeof(o->rpath));
	memcpy(o->runpath, info->runpath, sizeof(o->runpath));
	o->loader = loader;
	o->info = info;
	w->n++;
	return 0;
}

/*
 * Open a library or an interpreter: nobody but root may be able to change
 * it or any directory above it. One an agent could write (its own file, or
 * one in a directory it may write, like an RPATH into /tmp) would be its
 * own code made mappable, which is all the gate is there to prevent.
 */
static int open_trusted(const char *canon, int *fd, struct sbx_error *e)
{
	return sbx_trust_open_file(canon, true, UINT64_MAX, fd, e);
}

/*
 * One candidate file for library name needed by objs[from]: 1 when it is
 * an ELF object of the same class and machine (now in the set, or there
 * already), 0 when ld.so would pass it over, -errno on an internal error.
 */
static int try_lib(struct walk *w, size_t from, const char *name, const char *cand)
{
	char canon[SBX_PATH_MAX], origin[SBX_PATH_MAX];
	struct sbx_elf_info *info;
	struct sbx_error e;
	int fd, r;

	r = sbx_path_resolve_trusted(cand, canon, sizeof(canon), &e);
	if (r == -ELOOP) {
		note(w->set, "%s (needed by %s: untrusted symlink on %s)", name, w->objs[from].path,
		     cand);
		w->noted++;
	}
	if (r < 0)
		return 0;	/* missing or unusable: ld.so moves on too */
	r = open_trusted(canon, &fd, &e);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		note(w->set, "%s (needed by %s: %s)", name, w->objs[from].path, e.msg);
		w->noted++;
		return 0;
	}
	info = malloc(sizeof(*info));
	if (!info) {
		close(fd);
		return sbx_error_set(w->err, ENOMEM, "exec set: out of memory");
	}
	r = sbx_elf_parse_fd(fd, canon, info, &e);
	close(fd);
	if (r < 0) {
		note(w->set, "%s (needed by %s: %s)", name, w->objs[from].path, e.msg);
		w->noted++;
	}
	/* r >= 0: elf_parse() returned 0 and *info was copied out; the
	 * analyzer does not follow elf_parse().
	 * NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Branch) */
	if (r < 0 || !info->is_elf || info->elf_class != w->objs[from].elf_class ||
	    info->machine != w->objs[from].machine) {
		free(info);
		return 0;
	}
	if (sbx_exec_set_contains(w->set, canon)) {
		free(info);
		return 1;
	}
	r = set_push(w->set, canon, w->err);
	if (r < 0) {
		free(info);
		return r;
	}
	note_exec_stack(w->set, canon, info);
	/* glibc's l_origin: the directory of the name the object was opened
	 * by, not of its target. */
	dirname_of(cand, origin, sizeof(origin));
	r = walk_push(w, canon, origin, from, info);
	return r < 0 ? r : 1;
}

/* How many bytes after '$' name the token: "NAME" not followed by an
 * identifier character, or "{NAME}" (glibc's is_dst); 0 when neither. */
static size_t dst_len(const char *p, size_t left, const char *name)
{
	size_t n = strlen(name);

	if (left >= n + 2 && p[0] == '{' && memcmp(p + 1, name, n) == 0 && p[n + 1] == '}')
		return n + 2;
	if (left >= n && memcmp(p, name, n) == 0 &&
	    (left == n || !(p[n] == '_' || (p[n] >= '0' && p[n] <= '9') ||
			    (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z'))))
		return n;
	return 0;
}

/* Expand $ORIGIN, $LIB and $PLATFORM in one search path element of o;
 * false when the element cannot be used: another token (ld.so keeps it
 * literally, naming a directory nobody has), a value we do not know, or
 * too long. */
static bool expand(const char *elem, size_t elen, const struct obj *o, char *out, size_t size)
{
	static const char *const tokens[] = { "ORIGIN", "LIB", "PLATFORM" };
	const struct arch *a = arch_of(o->machine, o->elf_class);
	const char *values[ARRAY_SIZE(tokens)];
	char lib[64] = "";
	size_t used = 0;

	/* Debian's ld.so: $LIB is lib/<multiarch> (its slibdir). */
	if (a)
		snprintf(lib, sizeof(lib), "lib/%s", a->multiarch);
	values[0] = o->origin;
	values[1] = a ? lib : NULL;
	values[2] = platform_of(o->machine, o->elf_class);
	for (size_t i = 0; i < elen;) {
		size_t skip = 0, t, vlen;

		if (elem[i] != '$') {
			if (used + 1 >= size)
				return false;
			out[used++] = elem[i++];
			continue;
		}
		for (t = 0; t < ARRAY_SIZE(tokens) && !skip; t++)
			skip = dst_len(elem + i + 1, elen - i - 1, tokens[t]);
		if (!skip || !values[t - 1])
			return false;
		vlen = strlen(values[t - 1]);
		if (used + vlen >= size)
			return false;
		memcpy(out + used, values[t - 1], vlen);
		used += vlen;
		i += 1 + skip;
	}
	out[used] = '\0';
	return true;
}

/* Look for name in dir and in the subdirectories ld.so tries before it
 * (glibc-hwcaps/<level>, and the legacy tls/<platform>, <platform>, tls):
 * every fitting one is added, since which of them ld.so takes depends on
 * the CPU. 1 when something fitted. */
static int search_dir(struct walk *w, size_t from, const char *name, const char *dir)
{
	const char *platform = platform_of(w->objs[from].machine, w->objs[from].elf_class);
	char cand[SBX_PATH_MAX], sub[SBX_PATH_MAX];
	int found = 0, r;
	DIR *d;

	if (sbx_snprintf(sub, sizeof(sub), "%s/glibc-hwcaps", dir) == 0 && (d = opendir(sub))) {
		struct dirent *de;
		unsigned seen = 0;

		while ((de = readdir(d)) && seen++ < HWCAPS_SUBDIRS_MAX) {
			if (de->d_name[0] == '.' ||
			    sbx_snprintf(cand, sizeof(cand), "%s/%s/%s", sub, de->d_name, name) != 0)
				continue;
			r = try_lib(w, from, name, cand);
			if (r < 0) {
				closedir(d);
				return r;
			}
			found |= r;
		}
		closedir(d);
	}
	for (int i = 0; i < 4; i++) {
		if (i < 2 && !platform)
			continue;
		if ((i == 0 && sbx_snprintf(cand, sizeof(cand), "%s/tls/%s/%s", dir, platform, name)) ||
		    (i == 1 && sbx_snprintf(cand, sizeof(cand), "%s/%s/%s", dir, platform, name)) ||
		    (i == 2 && sbx_snprintf(cand, sizeof(cand), "%s/tls/%s", dir, name)) ||
		    (i == 3 && sbx_snprintf(cand, sizeof(cand), "%s/%s", dir, name)))
			continue;
		r = try_lib(w, from, name, cand);
		if (r < 0)
			return r;
		found |= r;
	}
	return found;
}

/* A DT_RPATH or DT_RUNPATH list of o: 1 when name was found in one of its
 * directories (the first that has it). */
static int search_list(struct walk *w, size_t from, const char *name, const struct obj *o,
		       const char *list)
{
	char dir[SBX_PATH_MAX];

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ":");
		int r;

		/* An empty element is ld.so's current directory, a relative
		 * one is relative to it: nothing a session start can know,
		 * and inside the gate both are noexec. */
		if (len && expand(p, len, o, dir, sizeof(dir)) && dir[0] == '/') {
			r = search_dir(w, from, name, dir);
			if (r != 0)
				return r;
		}
		p += len;
		if (*p == ':')
			p++;
	}
	return 0;
}

/* The first two get /<multiarch> appended. */
static const char *const default_dirs[] = {
	"/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

/* glibc's _dl_map_object order for name needed by objs[from]: 1 when
 * found, 0 when not (noted), -errno on an internal error. */
static int find_lib_search(struct walk *w, size_t from, const char *name)
{
	const struct arch *a = arch_of(w->objs[from].machine, w->objs[from].elf_class);
	char dir[SBX_PATH_MAX];
	int r, found = 0;

	if (strchr(name, '/')) {
		if (name[0] != '/') {
			note(w->set, "%s (needed by %s: relative path)", name, w->objs[from].path);
			w->noted++;
			return 0;
		}
		return try_lib(w, from, name, name);
	}
	/* DT_RPATH of the object, then of the one that loaded it, up to the
	 * executable; all of it skipped when the object has DT_RUNPATH, and
	 * an object with DT_RUNPATH has its own DT_RPATH ignored. */
	if (!w->objs[from].runpath[0]) {
		for (size_t l = from; l != NO_LOADER; l = w->objs[l].loader) {
			struct obj lo;

			if (w->objs[l].runpath[0] || !w->objs[l].rpath[0])
				continue;
			lo = w->objs[l];	/* try_lib may move objs */
			r = search_list(w, from, name, &lo, lo.rpath);
			if (r != 0)
				return r;
		}
	} else {
		struct obj o = w->objs[from];

		r = search_list(w, from, name, &o, o.runpath);
		if (r != 0)
			return r;
	}
	/* Every cache entry for the name, glibc-hwcaps variants included:
	 * ld.so takes the best one this CPU supports. */
	for (size_t i = 0; i < w->set->ldcache_n; i++) {
		if (strcmp(w->set->ldcache[i].soname, name) != 0 || w->set->ldcache[i].path[0] != '/')
			continue;
		r = try_lib(w, from, name, w->set->ldcache[i].path);
		if (r < 0)
			return r;
		found |= r;
	}
	if (found)
		return 1;
	/* The default directories: Debian's ld.so has /lib/<multiarch>,
	 * /usr/lib/<multiarch>, /lib, /usr/lib; lib64 is there elsewhere. */
	for (size_t i = 0; i < ARRAY_SIZE(default_dirs); i++) {
		bool multi = i < 2;

		if (multi && !a)
			continue;
		if (multi ? sbx_snprintf(dir, sizeof(dir), "%s/%s", default_dirs[i], a->multiarch) :
			    sbx_strlcpy(dir, sizeof(dir), default_dirs[i]))
			continue;
		r = search_dir(w, from, name, dir);
		if (r != 0)
			return r;
	}
	return 0;
}

static int find_lib(struct walk *w, size_t from, const char *name)
{
	unsigned noted = w->noted;
	int r;

	if (walk_has_name(w, name))
		return 0;
	r = find_lib_search(w, from, name);
	if (r == 0 && w->noted == noted)
		note(w->set, "%s (needed by %s)", name, w->objs[from].path);
	return r > 0 ? walk_add_name(w, name) : r;
}

/* Resolve the DT_NEEDED of every queued object, breadth first like ld.so. */
static int closure(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++) {
		struct sbx_elf_info *info = w->objs[i].info;

		for (size_t k = 0; k < info->n_needed; k++) {
			int r = find_lib(w, i, info->needed[k]);

			if (r < 0)
				return r;
		}
		free(info);
		w->objs[i].info = NULL;
	}
	return 0;
}

enum obj_kind {
	OBJ_GIVEN,	/* the caller's path: errors are returned */
	OBJ_WALKED,	/* a file below a given directory: its closure */
	OBJ_INTERP,	/* an executable's PT_INTERP */
};

static int add_object(struct walk *w, const char *canon, enum obj_kind kind, const char *why);

/* The PT_INTERP of an executable: the kernel maps it. */
/* Recursion: add_object() of an interpreter adds no interpreter of its own.
 * NOLINTNEXTLINE(misc-no-recursion) */
static int add_interp(struct walk *w, const char *interp, const char *of)
{
	char canon[SBX_PATH_MAX], why[SBX_PATH_MAX + 32];
	struct sbx_error e;
	int r;

	if (interp[0] != '/') {
		note(w->set, "%s (interpreter of %s: relative path)", interp, of);
		return 0;
	}
	r = sbx_path_resolve_trusted(interp, canon, sizeof(canon), &e);
	if (r < 0) {
		note(w->set, "%s (interpreter of %s%s)", interp, of,
		     r == -ELOOP ? ": untrusted symlink" : "");
		return 0;
	}
	snprintf(why, sizeof(why), "interpreter of %s", of);
	return add_object(w, canon, OBJ_INTERP, why);
}

/* Open a resolved path as a regular file: 0, or -errno (-EINVAL when it
 * is something else). */
static int open_regular(const char *canon, int *fd_out)
{
	struct stat st;
	int fd = open_file(canon), e;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0)
		e = errno;
	else if (!S_ISREG(st.st_mode))
		e = EINVAL;
	else {
		*fd_out = fd;
		return 0;
	}
	close(fd);
	return -e;
}

/*
 * A file the caller named, a file below a directory the caller named, or
 * an interpreter: added, and when ELF its closure and (not for an
 * interpreter: binfmt_elf loads that as it is) its own interpreter.
 * Problems are returned for a given path and noted otherwise (why says
 * how the file was reached). An interpreter must be trusted like a
 * library; the caller's paths are taken as the profile names them.
 */
/* Recursion: at most walk_dir() -> add_object() -> add_interp() -> add_object().
 * NOLINTNEXTLINE(misc-no-recursion) */
static int add_object(struct walk *w, const char *canon, enum obj_kind kind, const char *why)
{
	char origin[SBX_PATH_MAX], interp[SBX_PATH_MAX];
	struct sbx_elf_info *info;
	struct sbx_error e;
	int fd = -1, r;

	/* A walked file is covered by its directory yet still needs its
	 * closure; anything else covered has had it already. */
	if (kind != OBJ_WALKED && sbx_exec_set_contains(w->set, canon))
		return 0;
	r = kind == OBJ_INTERP ? open_trusted(canon, &fd, &e) : open_regular(canon, &fd);
	if (r < 0 && kind == OBJ_INTERP) {
		note(w->set, "%s (%s: %s)", canon, why, e.msg);
		return 0;
	}
	if (r < 0) {
		if (kind == OBJ_GIVEN)
			return sbx_error_set(w->err, -r, "exec set: %s: %s", canon,
					     r == -EINVAL ? "not a regular file or directory" :
					     strerror(-r));
		note(w->set, "%s (%s: %s)", canon, why,
		     r == -EINVAL ? "not a regular file" : strerror(-r));
		return 0;
	}
	info = malloc(sizeof(*info));
	if (!info) {
		close(fd);
		return sbx_error_set(w->err, ENOMEM, "exec set: out of memory");
	}
	r = sbx_elf_parse_fd(fd, canon, info, kind == OBJ_GIVEN ? w->err : &e);
	close(fd);
	if (r < 0) {
		free(info);
		if (kind == OBJ_GIVEN)
			return r;
		note(w->set, "%s (%s)", e.msg, why);
		return 0;
	}
	if (!sbx_exec_set_contains(w->set, canon)) {
		r = set_push(w->set, canon, w->err);
		if (r < 0) {
			free(info);
			return r;
		}
	}
	/* r >= 0: *info is set, as in try_lib().
	 * NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Branch) */
	if (!info->is_elf) {
		free(info);
		return 0;
	}
	note_exec_stack(w->set, canon, info);
	memcpy(interp, info->interp, sizeof(interp));
	/* ld.so's $ORIGIN for the executable comes from /proc/self/exe:
	 * the canonical path. */
	dirname_of(canon, origin, sizeof(origin));
	walk_reset(w);
	r = walk_push(w, canon, origin, NO_LOADER, info);
	if (r == 0)
		r = closure(w);
	walk_reset(w);
	if (r == 0 && kind != OBJ_INTERP && interp[0])
		r = add_interp(w, interp, canon);
	return r;
}

/* Recursion: at most DIR_DEPTH_MAX directories deep. NOLINTNEXTLINE(misc-no-recursion) */
static int walk_dir(struct walk *w, int dfd, const char *path, unsigned depth)
{
	char child[SBX_PATH_MAX], why[SBX_PATH_MAX + 16];
	struct dirent *de;
	DIR *d = fdopendir(dfd);
	int r = 0;

	if (!d) {
		r = sbx_error_set(w->err, errno, "exec set: opendir(%s): %s", path, strerror(errno));
		close(dfd);
		return r;
	}
	snprintf(why, sizeof(why), "under %s", path);
	while (r == 0 && (errno = 0, de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++w->entries > DIR_ENTRIES_MAX) {
			r = sbx_error_set(w->err, E2BIG,
					  "exec set: more than %d entries below the directory %s",
					  DIR_ENTRIES_MAX, w->top);
			break;
		}
		if (sbx_snprintf(child, sizeof(child), "%s/%s", strcmp(path, "/") ? path : "",
				 de->d_name) != 0) {
			note(w->set, "%s/%s (path too long)", path, de->d_name);
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;	/* gone meanwhile */
		/* The whole tree becomes executable: every directory and file
		 * in it must be root's alone to change, or the agent could put
		 * its own program there (a writable subdirectory, a file root
		 * handed to it). */
		if ((S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) &&
		    (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
			r = sbx_error_set(w->err, EPERM,
					  "exec set: %s (below the directory %s) is %s; every file and "
					  "directory in an allowed tree must be root's alone to change",
					  child, w->top, st.st_uid != 0 ? "not owned by root" :
					  "writable by group or others");
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub;

			if (depth == DIR_DEPTH_MAX) {
				r = sbx_error_set(w->err, E2BIG,
						  "exec set: %s is more than %d levels below %s",
						  child, DIR_DEPTH_MAX, w->top);
				break;
			}
			sub = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			r = walk_dir(w, sub, child, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			/* Symlinks are passed over: what they name outside
			 * stays noexec, what they name inside is walked. */
			r = add_object(w, child, OBJ_WALKED, why);
		}
	}
	if (r == 0 && errno != 0)
		r = sbx_error_set(w->err, errno, "exec set: readdir(%s): %s", path, strerror(errno));
	closedir(d);
	return r;
}

void sbx_exec_set_init(struct sbx_exec_set *set)
{
	memset(set, 0, sizeof(*set));
}

void sbx_exec_set_free(struct sbx_exec_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->paths[i]);
	free(set->paths);
	free(set->ldcache);
	free(set->ldcache_buf);
	memset(set, 0, sizeof(*set));
}

/* Drop entries under a directory entry: the directory's bind covers them.
 * Best effort: without memory for the marks nothing is dropped. */
static void set_compact(struct sbx_exec_set *set)
{
	bool *covered = calloc(set->n ? set->n : 1, sizeof(*covered));
	size_t k = 0;

	if (!covered)
		return;
	for (size_t i = 0; i < set->n; i++)
		for (size_t j = 0; j < set->n && !covered[i]; j++)
			covered[i] = j != i && sbx_path_is_under(set->paths[i], set->paths[j]);
	for (size_t i = 0; i < set->n; i++) {
		if (covered[i])
			free(set->paths[i]);
		else
			set->paths[k++] = set->paths[i];
	}
	set->n = k;
	free(covered);
}

int sbx_exec_set_add(struct sbx_exec_set *set, const char *path, struct sbx_error *err)
{
	char canon[SBX_PATH_MAX], saved[sizeof(set->unresolved)];
	struct walk w = { .set = set, .top = canon, .err = err };
	size_t n0 = set->n;
	struct stat st;
	int r;

	if (!set->ldcache_loaded) {
		r = ldcache_load(set, err);
		if (r < 0)
			return r;
	}
	r = sbx_path_resolve_trusted(path, canon, sizeof(canon), err);
	if (r < 0)
		return r;
	if (sbx_exec_set_contains(set, canon))
		return 0;	/* there with its closure already */
	memcpy(saved, set->unresolved, sizeof(saved));
	if (lstat(canon, &st) != 0) {
		r = sbx_error_set(err, errno, "exec set: %s: %s", canon, strerror(errno));
	} else if (S_ISDIR(st.st_mode)) {
		int dfd = open(canon, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (dfd < 0)
			r = sbx_error_set(err, errno, "exec set: open(%s): %s", canon, strerror(errno));
		else
			r = set_push(set, canon, err);
		if (dfd >= 0 && r == 0)
			r = walk_dir(&w, dfd, canon, 0);
		else if (dfd >= 0)
			close(dfd);
	} else {
		r = add_object(&w, canon, OBJ_GIVEN, NULL);
	}
	walk_reset(&w);
	free(w.objs);
	free(w.names);
	if (r < 0) {
		while (set->n > n0)
			free(set->paths[--set->n]);
		memcpy(set->unresolved, saved, sizeof(saved));
		return r;
	}
	set_compact(set);
	return 0;
}
