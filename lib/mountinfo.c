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
static void unsearched(char *why, size_t size, const char *path, const char *what)
{
	if (!why[0])
		snprintf(why, size, "%s%s%s", path ? path : "", path ? ": " : "", what);
}

/* Where the path lies in its filesystem: the mount's root joined with the
 * part of the path below the mountpoint. */
static int path_in_filesystem(const char *path, const struct sbx_mount_entry *m, char *out,
			      size_t size)
{
	char real[SBX_PATH_MAX];
	const char *below;

	if (!sbx_path_is_under(path, m->point)) {
		/* A symlink on the way: the mountpoint is under the real path.
		 * Only root's links are followed (as for the secret's mask):
		 * one another user may swap would say where to search. */
		if (sbx_path_resolve_trusted(path, real, sizeof(real), NULL) != 0 ||
		    !sbx_path_is_under(real, m->point))
			return -EINVAL;
		path = real;
	}
	below = strcmp(m->point, "/") == 0 ? path : path + strlen(m->point);
	if (strcmp(m->root, "/") == 0)
		return sbx_snprintf(out, size, "%s", below[0] ? below : "/");
	return sbx_snprintf(out, size, "%s%s", m->root, below);
}

void sbx_secret_places_find(const struct sbx_profile *p, struct sbx_secret_places *out)
{
	unsigned long long id[SBX_MAX_DENY] = { 0 };
	int under[SBX_MAX_DENY];	/* a mount covering the secret: the one below, or -1 */
	bool null_mask[SBX_MAX_DENY] = { false };
	struct sbx_mount_entry *m = NULL;
	const char *pos, *end;
	char *table = NULL;
	size_t used = 0, len, first;
	int r;

	out->n = 0;
	out->unsearched[0] = '\0';
	if (p->n_deny_read == 0)
		return;
	for (size_t i = 0; i < p->n_deny_read && i < SBX_MAX_DENY; i++) {
		struct statx stx;

		if (statx(AT_FDCWD, p->deny_read[i], AT_SYMLINK_NOFOLLOW,
			  STATX_MNT_ID | STATX_TYPE, &stx) != 0)
			continue;	/* missing, or not reachable by the agent at all */
		if (!(stx.stx_mask & STATX_MNT_ID)) {
			unsearched(out->unsearched, sizeof(out->unsearched), NULL,
				   "the kernel gives no mount id (Linux < 5.8)");
			return;
		}
		id[out->n] = stx.stx_mnt_id;
		under[out->n] = -1;
		/* The PAM stage's mask of a file secret: /dev/null bound over it. */
		null_mask[out->n] = S_ISCHR(stx.stx_mode) && stx.stx_rdev_major == 1 &&
				    stx.stx_rdev_minor == 3;
		out->s[out->n++] = (struct sbx_secret_place){ .deny = (uint16_t)i, .own_id = -1 };
	}
	if (out->n == 0)
		return;
	first = out->n;
	m = malloc(sizeof(*m));
	if (!m || sbx_read_file("/proc/self/mountinfo", MOUNTINFO_MAX, &table, &len, NULL) != 0) {
		unsearched(out->unsearched, sizeof(out->unsearched), NULL,
			   "/proc/self/mountinfo is not readable");
		goto out;
	}
	end = table + len;
	for (pos = table; (r = sbx_mountinfo_next(&pos, end, m)) != 0;) {
		for (size_t i = 0; r > 0 && i < out->n; i++) {
			struct sbx_secret_place *sp = &out->s[i];
			char *where = out->text + used;

			if (sp->own_id != -1 || id[i] != (unsigned long long)m->id)
				continue;
			/* Something is mounted on the secret itself (the PAM
			 * stage's mask, or a filesystem of its own): the secret
			 * is also what it covers, in the mount below. */
			if (strcmp(m->point, p->deny_read[sp->deny]) == 0)
				under[i] = m->parent;
			if (null_mask[i]) {
				sp->own_id = -2;	/* no secret of its own: only the one below */
				continue;
			}
			sp->own_id = m->id;
			sp->major = m->major;
			sp->minor = m->minor;
			if (path_in_filesystem(p->deny_read[sp->deny], m, where,
					       sizeof(out->text) - used) != 0) {
				unsearched(out->unsearched, sizeof(out->unsearched),
					   p->deny_read[sp->deny], "where it lies in its filesystem "
					   "is not known");
				continue;
			}
			sp->where = (uint16_t)used;
			used += strlen(where) + 1;
		}
	}
	for (size_t i = 0; i < out->n; i++)
		if (out->s[i].own_id == -1)
			unsearched(out->unsearched, sizeof(out->unsearched),
				   p->deny_read[out->s[i].deny], "its mount is not in the table");
	/* Placed too: the mount below a secret's mask, where the secret
	 * really is; and a filesystem mounted inside a secret, which is part
	 * of it (where else it is mounted shows that part). */
	for (pos = table; (r = sbx_mountinfo_next(&pos, end, m)) != 0;) {
		for (size_t i = 0; r > 0 && i < first; i++) {
			const char *secret = p->deny_read[out->s[i].deny];

			if (under[i] != m->id)
				continue;
			if (out->n == ARRAY_SIZE(out->s) ||
			    path_in_filesystem(secret, m, out->text + used,
					       sizeof(out->text) - used) != 0) {
				unsearched(out->unsearched, sizeof(out->unsearched), secret,
					   "the mount below its mask cannot be placed");
				continue;
			}
			out->s[out->n++] = (struct sbx_secret_place){ .major = m->major,
				.minor = m->minor, .own_id = m->id, .where = (uint16_t)used,
				.deny = out->s[i].deny };
			used += strlen(out->text + used) + 1;
		}
		for (size_t i = 0; r > 0 && i < p->n_deny_read; i++) {
			if (!sbx_path_is_under(m->point, p->deny_read[i]) ||
			    strcmp(m->point, p->deny_read[i]) == 0)
				continue;
			if (out->n == ARRAY_SIZE(out->s) ||
			    sbx_strlcpy(out->text + used, sizeof(out->text) - used, m->root) != 0) {
				unsearched(out->unsearched, sizeof(out->unsearched),
					   p->deny_read[i], "more mounts inside the secrets than "
					   "can be searched");
				goto out;
			}
			out->s[out->n++] = (struct sbx_secret_place){ .major = m->major,
				.minor = m->minor, .own_id = m->id, .where = (uint16_t)used,
				.deny = (uint16_t)i };
			used += strlen(m->root) + 1;
			break;
		}
	}
out:
	free(table);
	free(m);
}

/* One mount of the table, as shown() needs it. */
struct mount_node {
	int id, parent;
	unsigned major, minor;
	char *root, *point;
};

/* No other mount covers path (in node e): none mounted on e over it, and
 * none over e's mountpoint in e's parent, and so on up to the root. A
 * mount at the very mountpoint of its sibling is not taken as covering it
 * (which of the two is on top the table does not say). */
static bool node_visible(const struct mount_node *t, size_t n, size_t e, const char *path)
{
	for (unsigned depth = 0; depth < 4096; depth++) {
		size_t parent = n;

		for (size_t i = 0; i < n; i++) {
			if (i == e || t[i].parent != t[e].id)
				continue;
			if (sbx_path_is_under(path, t[i].point) &&
			    (depth == 0 || strcmp(path, t[i].point) != 0))
				return false;
		}
		for (size_t i = 0; i < n && parent == n; i++)
			if (t[i].id == t[e].parent && i != e)
				parent = i;
		if (parent == n)
			return true;	/* the namespace's root */
		path = t[e].point;
		e = parent;
	}
	return true;
}

int sbx_secret_mounts_shown(const char *table, size_t len, const struct sbx_secret_places *sp,
			    sbx_secret_shown_fn fn, void *ctx, char *why, size_t why_size)
{
	struct sbx_mount_entry *m = malloc(sizeof(*m));
	struct mount_node *t = NULL;
	const char *pos = table, *end = table + len;
	size_t n = 0, cap = 0;
	int r, ret = 0;

	if (!m)
		return -ENOMEM;
	while ((r = sbx_mountinfo_next(&pos, end, m)) != 0) {
		if (r < 0) {
			unsearched(why, why_size, NULL, "a line of the mount table cannot be read");
			ret = -EINVAL;
			goto out;
		}
		if (n == cap) {
			struct mount_node *grown = realloc(t, (cap ? cap * 2 : 64) * sizeof(*t));

			if (!grown) {
				ret = -ENOMEM;
				goto out;
			}
			t = grown;
			cap = cap ? cap * 2 : 64;
		}
		t[n] = (struct mount_node){ m->id, m->parent, m->major, m->minor,
					    strdup(m->root), strdup(m->point) };
		if (!t[n++].root || !t[n - 1].point) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t k = 0; k < sp->n && ret == 0; k++) {
		const struct sbx_secret_place *s = &sp->s[k];
		const char *where = sp->text + s->where;

		if (s->own_id < 0)
			continue;
		for (size_t e = 0; e < n && ret == 0; e++) {
			char path[PATH_MAX];
			const char *below;

			if (t[e].major != s->major || t[e].minor != s->minor)
				continue;
			if (sbx_path_is_under(where, t[e].root)) {
				/* The mount shows the whole secret. */
				below = strcmp(t[e].root, "/") == 0 ? where :
					where + strlen(t[e].root);
				if (strcmp(below, "/") == 0)
					below = "";
				r = strcmp(t[e].point, "/") == 0 ?
				    sbx_strlcpy(path, sizeof(path), below[0] ? below : "/") :
				    sbx_snprintf(path, sizeof(path), "%s%s", t[e].point, below);
				if (r != 0) {
					unsearched(why, why_size, t[e].point, "too long a path");
					ret = -ENAMETOOLONG;
					break;
				}
			} else if (sbx_path_is_under(t[e].root, where)) {
				/* The mount shows a part of it. */
				sbx_strlcpy(path, sizeof(path), t[e].point);
			} else {
				continue;
			}
			if (node_visible(t, n, e, path))
				ret = fn(ctx, k, path, t[e].id);
		}
	}
out:
	for (size_t i = 0; i < n; i++) {
		free(t[i].root);
		free(t[i].point);
	}
	free(t);
	free(m);
	return ret;
}
