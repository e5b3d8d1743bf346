// SPDX-License-Identifier: BSD-3-Clause
/*
 * mountinfo.c: the mount table (/proc/self/mountinfo), and the other
 * mounts through which a deny_read secret can be reached.
 *
 * A mask covers a path. The same filesystem can be mounted more than once
 * (a bind of the secret's directory, of a parent, of `/`, or the device
 * mounted twice), and the secret is then readable through the other
 * mount's path, whatever covers the first. Nothing here changes the
 * system: it reads the table and stats paths, as the agent.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U	/* Linux 5.8 */
#endif

/* A mount table bigger than this is not searched (and said so). */
#define MOUNTINFO_MAX (4u << 20)

/* One space-separated field at *pos, octal escapes decoded (the kernel
 * escapes space, tab, newline and backslash as \ooo). */
static int mountinfo_field(const char **pos, const char *end, char *out, size_t size,
			   bool decode)
{
	const char *p = *pos;
	size_t n = 0;

	if (p >= end || *p == ' ')
		return -EINVAL;
	for (; p < end && *p != ' '; p++) {
		char c = *p;

		if (decode && c == '\\') {
			if (end - p < 4 || p[1] < '0' || p[1] > '3' || p[2] < '0' || p[2] > '7' ||
			    p[3] < '0' || p[3] > '7')
				return -EINVAL;
			c = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			if (c == '\0')
				return -EINVAL;
			p += 3;
		}
		if (n + 1 >= size)
			return -ENAMETOOLONG;
		out[n++] = c;
	}
	out[n] = '\0';
	*pos = p < end ? p + 1 : p;
	return 0;
}

static int mountinfo_number(const char *text, char stop, unsigned long max, unsigned long *out,
			    const char **rest)
{
	char *e;

	if (text[0] < '0' || text[0] > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoul(text, &e, 10);
	if (errno || *out > max || *e != stop)
		return -EINVAL;
	*rest = e + 1;
	return 0;
}

int sbx_mountinfo_next(const char **pos, const char *end, struct sbx_mount_entry *m)
{
	const char *line = *pos, *eol, *p, *rest;
	char field[32];
	unsigned long v;
	int ret;

	if (line >= end)
		return 0;
	eol = memchr(line, '\n', (size_t)(end - line));
	if (!eol)
		eol = end;
	*pos = eol < end ? eol + 1 : eol;
	p = line;
	if ((ret = mountinfo_field(&p, eol, field, sizeof(field), false)) != 0 ||
	    (ret = mountinfo_number(field, '\0', 0x7fffffffUL, &v, &rest)) != 0)
		return ret;
	m->id = (int)v;
	if ((ret = mountinfo_field(&p, eol, field, sizeof(field), false)) != 0 ||
	    (ret = mountinfo_number(field, '\0', 0x7fffffffUL, &v, &rest)) != 0)
		return ret;
	m->parent = (int)v;
	if ((ret = mountinfo_field(&p, eol, field, sizeof(field), false)) != 0 ||
	    (ret = mountinfo_number(field, ':', 0xffffffffUL, &v, &rest)) != 0)
		return ret;
	m->major = (unsigned)v;
	if ((ret = mountinfo_number(rest, '\0', 0xffffffffUL, &v, &rest)) != 0)
		return ret;
	m->minor = (unsigned)v;
	if ((ret = mountinfo_field(&p, eol, m->root, sizeof(m->root), true)) != 0 ||
	    (ret = mountinfo_field(&p, eol, m->point, sizeof(m->point), true)) != 0)
		return ret;
	if (m->root[0] != '/' || m->point[0] != '/')
		return -EINVAL;
	/* Options, then optional tags up to "-", then the type. */
	for (;;) {
		if ((ret = mountinfo_field(&p, eol, field, sizeof(field), false)) != 0 &&
		    ret != -ENAMETOOLONG)
			return ret;
		if (ret == 0 && strcmp(field, "-") == 0)
			break;
		if (ret != 0) {	/* a long option or tag: skip it */
			while (p < eol && *p != ' ')
				p++;
			if (p < eol)
				p++;
		}
	}
	ret = mountinfo_field(&p, eol, m->fstype, sizeof(m->fstype), true);
	return ret ? ret : 1;
}

/* Is path where something is mounted? */
bool sbx_mountinfo_is_mount_point(const char *path)
{
	struct sbx_mount_entry *m = malloc(sizeof(*m));
	char *buf = NULL;
	const char *pos, *end;
	bool found = false;
	size_t len;
	int r;

	if (!m || sbx_read_file("/proc/self/mountinfo", MOUNTINFO_MAX, &buf, &len, NULL) != 0) {
		free(m);
		return false;
	}
	pos = buf;
	end = buf + len;
	while (!found && (r = sbx_mountinfo_next(&pos, end, m)) != 0)
		found = r > 0 && strcmp(m->point, path) == 0;
	free(buf);
	free(m);
	return found;
}

/* ---- other mounts of a secret ------------------------------------------------ */

/* The first reason the search is not whole: what, about path (or NULL). */
static void secret_mounts_unsearched(struct sbx_secret_mounts *out, const char *path,
				     const char *what)
{
	if (!out->unsearched[0])
		snprintf(out->unsearched, sizeof(out->unsearched), "%s%s%s", path ? path : "",
			 path ? ": " : "", what);
}

/* Where the path lies in its filesystem: the mount's root joined with the
 * part of the path below the mountpoint. */
static int path_in_filesystem(const char *path, const struct sbx_mount_entry *m, char *out,
			      size_t size)
{
	char real[PATH_MAX];
	const char *below;

	if (!sbx_path_is_under(path, m->point)) {
		/* A symlink on the way: the mountpoint is under the real path. */
		if (!realpath(path, real) || !sbx_path_is_under(real, m->point))
			return -EINVAL;
		path = real;
	}
	below = strcmp(m->point, "/") == 0 ? path : path + strlen(m->point);
	if (strcmp(m->root, "/") == 0)
		return sbx_snprintf(out, size, "%s", below[0] ? below : "/");
	return sbx_snprintf(out, size, "%s%s", m->root, below);
}

/* One more path through which a secret shows: kept only if the path,
 * resolved here, really lands in that mount (not covered by another). */
static void secret_mount_add(struct sbx_secret_mounts *out, const char *path, int mnt_id)
{
	struct statx stx;
	size_t used = strlen(out->paths);

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_MNT_ID | STATX_INO, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != (unsigned long long)mnt_id)
		return;
	for (size_t i = 0; i < out->n; i++)
		if (out->dev[i] == makedev(stx.stx_dev_major, stx.stx_dev_minor) &&
		    out->ino[i] == stx.stx_ino)
			return;	/* the same place, named twice */
	if (out->n == ARRAY_SIZE(out->dev) ||
	    (size_t)snprintf(out->paths + used, sizeof(out->paths) - used, "%s%s",
			     used ? "\n" : "", path) >= sizeof(out->paths) - used) {
		out->paths[used] = '\0';
		secret_mounts_unsearched(out, NULL, "more other mounts than the report can list");
		return;
	}
	out->dev[out->n] = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	out->ino[out->n] = stx.stx_ino;
	out->n++;
}

/* A secret's place: its mount, and where it lies in that filesystem. */
struct secret_place {
	const char *path;
	unsigned long long mnt_id;
	int id;
	unsigned major, minor;
	char where[SBX_PATH_MAX];	/* "" until its mount is found */
};

/* Through mount m (of the same filesystem as secret s, not its own),
 * the path that shows the secret or a part of it; false if none. */
static bool alias_through(const struct secret_place *s, const struct sbx_mount_entry *m,
			  char *alias, size_t size, struct sbx_secret_mounts *out)
{
	const char *below;
	int r;

	if (sbx_path_is_under(s->where, m->root)) {
		/* The other mount shows the whole secret. */
		below = strcmp(m->root, "/") == 0 ? s->where : s->where + strlen(m->root);
		if (strcmp(m->point, "/") == 0)
			r = sbx_strlcpy(alias, size, below[0] ? below : "/");
		else
			r = sbx_snprintf(alias, size, "%s%s", m->point,
					 strcmp(below, "/") == 0 ? "" : below);
		if (r != 0) {
			secret_mounts_unsearched(out, s->path, "another mount's path is too long");
			return false;
		}
		return true;
	}
	if (sbx_path_is_under(m->root, s->where)) {
		/* The other mount shows a part of it. */
		return sbx_strlcpy(alias, size, m->point) == 0;
	}
	return false;
}

/*
 * Two passes over the table whatever the number of secrets (a host can
 * have thousands of mounts): the first finds each secret's own mount, the
 * second every other mount of the same filesystem, keeping one entry in
 * memory at a time.
 */
void sbx_secret_mounts_find(const struct sbx_profile *p, struct sbx_secret_mounts *out)
{
	struct secret_place *s = NULL;
	struct sbx_mount_entry *m = NULL;
	const char *pos, *end;
	char *table = NULL, alias[SBX_PATH_MAX];
	size_t n = 0, len;
	int r;

	out->paths[0] = '\0';
	out->unsearched[0] = '\0';
	out->n = 0;
	if (p->n_deny_read == 0)
		return;
	s = calloc(p->n_deny_read, sizeof(*s));
	m = malloc(sizeof(*m));
	if (!s || !m) {
		secret_mounts_unsearched(out, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < p->n_deny_read; i++) {
		struct statx stx;

		if (statx(AT_FDCWD, p->deny_read[i], AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0)
			continue;	/* missing, or not reachable by the agent at all */
		if (!(stx.stx_mask & STATX_MNT_ID)) {
			secret_mounts_unsearched(out, NULL, "the kernel gives no mount id "
						 "(Linux < 5.8)");
			goto out;
		}
		s[n].path = p->deny_read[i];
		s[n++].mnt_id = stx.stx_mnt_id;
	}
	if (n == 0)
		goto out;
	if (sbx_read_file("/proc/self/mountinfo", MOUNTINFO_MAX, &table, &len, NULL) != 0) {
		secret_mounts_unsearched(out, NULL, "/proc/self/mountinfo is not readable");
		goto out;
	}
	end = table + len;
	for (pos = table; (r = sbx_mountinfo_next(&pos, end, m)) != 0;) {
		if (r < 0) {
			secret_mounts_unsearched(out, NULL, "/proc/self/mountinfo has a line that "
						 "cannot be read");
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (s[i].where[0] || s[i].mnt_id != (unsigned long long)m->id)
				continue;
			s[i].id = m->id;
			s[i].major = m->major;
			s[i].minor = m->minor;
			if (path_in_filesystem(s[i].path, m, s[i].where, sizeof(s[i].where)) != 0)
				s[i].where[0] = '\0';
		}
	}
	for (size_t i = 0; i < n; i++)
		if (!s[i].where[0])
			secret_mounts_unsearched(out, s[i].path, "its mount is not in the table");
	for (pos = table; (r = sbx_mountinfo_next(&pos, end, m)) != 0;) {
		for (size_t i = 0; r > 0 && i < n; i++) {
			if (!s[i].where[0] || m->id == s[i].id || m->major != s[i].major ||
			    m->minor != s[i].minor || !alias_through(&s[i], m, alias, sizeof(alias), out))
				continue;
			if (strcmp(alias, s[i].path) != 0)
				secret_mount_add(out, alias, m->id);
		}
	}
out:
	free(table);
	free(m);
	free(s);
}
