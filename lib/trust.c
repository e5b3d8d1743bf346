/* SPDX-License-Identifier: BSD-3-Clause */
/* Trusting a config file: an fd walk from "/" with every step fstat'ed
 * (docs/design.md sections 3, 8). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "internal.h"

/*
 * Why fds and not stat(2) on strings: between a stat of a path and an open
 * of the same path, any writable directory on the way can be swapped for a
 * symlink (the pam_namespace lesson, CVE-2025-6020). Every component here
 * is opened relative to the fd of its checked parent with O_NOFOLLOW, and
 * the checks run on the fd that is then used.
 */

static int type_check(const struct stat *st, const char *what, bool want_dir,
		      struct sbx_error *err)
{
	if (S_ISLNK(st->st_mode))
		return sbx_error_set(err, ELOOP, "%s: is a symlink; refused", what);
	if (want_dir && !S_ISDIR(st->st_mode))
		return sbx_error_set(err, ENOTDIR, "%s: not a directory", what);
	if (!want_dir && !S_ISREG(st->st_mode))
		return sbx_error_set(err, EINVAL, "%s: not a regular file", what);
	return 0;
}

static int owner_check(const struct stat *st, const char *what,
		       struct sbx_error *err)
{
	if (st->st_uid != 0)
		return sbx_error_set(err, EPERM, "%s: owned by uid %u, not root",
				     what, (unsigned)st->st_uid);
	/* The sticky bit does not help: it keeps others from removing or
	 * renaming entries they do not own, but they can still create the
	 * name first. */
	if (st->st_mode & S_IWOTH)
		return sbx_error_set(err, EPERM, "%s: world-writable (mode %04o)%s",
				     what, (unsigned)(st->st_mode & 07777),
				     (st->st_mode & S_ISVTX) ? ", sticky is not enough" : "");
	if (st->st_mode & S_IWGRP)
		return sbx_error_set(err, EPERM, "%s: group-writable (mode %04o)",
				     what, (unsigned)(st->st_mode & 07777));
	return 0;
}

int sbx_trust_check_fd(int fd, const char *what, bool want_dir,
		       struct sbx_error *err)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) != 0)
		return sbx_error_set(err, errno, "fstat(%s): %s", what, strerror(errno));
	r = type_check(&st, what, want_dir, err);
	if (r == 0)
		r = owner_check(&st, what, err);
	return r;
}

static int check_step(int fd, const char *what, bool want_dir, bool trusted,
		      struct sbx_error *err)
{
	struct stat st;

	if (trusted)
		return sbx_trust_check_fd(fd, what, want_dir, err);
	if (fstat(fd, &st) != 0)
		return sbx_error_set(err, errno, "fstat(%s): %s", what, strerror(errno));
	return type_check(&st, what, want_dir, err);
}

/*
 * Walk from "/" to the directory that holds path's last component: every
 * directory opened O_PATH|O_NOFOLLOW relative to its checked parent and
 * checked itself. On success *dir_out is that directory's fd and *last
 * points at the last component inside path.
 */
static int walk_parent(const char *path, bool trusted, int *dir_out, const char **last,
		       struct sbx_error *err)
{
	char sofar[SBX_PATH_MAX];
	const char *comp;
	int dir, r;

	if (!path || !sbx_path_is_canonical(path) || strlen(path) >= SBX_PATH_MAX ||
	    strcmp(path, "/") == 0)
		return sbx_error_set(err, EINVAL,
				     "open(%.*s): not an absolute canonical file path",
				     SBX_PATH_MAX - 1, path ? path : "(null)");
	dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return sbx_error_set(err, errno, "open(/): %s", strerror(errno));
	r = check_step(dir, "/", true, trusted, err);
	if (r < 0)
		goto fail;
	sofar[0] = '\0';
	comp = path + 1;
	for (;;) {
		const char *slash = strchr(comp, '/');
		size_t len = slash ? (size_t)(slash - comp) : strlen(comp);
		size_t used = strlen(sofar);
		char name[SBX_PATH_MAX];
		int next;

		if (!slash)
			break;
		memcpy(name, comp, len);
		name[len] = '\0';
		/* sofar is a prefix of path, so it always fits. */
		sofar[used] = '/';
		memcpy(sofar + used + 1, comp, len);
		sofar[used + 1 + len] = '\0';
		/* O_PATH|O_NOFOLLOW opens a symlink itself; fstat then says so. */
		next = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			r = sbx_error_set(err, errno, "open(%s): %s", sofar, strerror(errno));
			goto fail;
		}
		close(dir);
		dir = next;
		r = check_step(dir, sofar, true, trusted, err);
		if (r < 0)
			goto fail;
		comp = slash + 1;
	}
	*dir_out = dir;
	*last = comp;
	return 0;
fail:
	close(dir);
	return r;
}

int sbx_trust_open_at(int dir, const char *name, const char *what, bool trusted,
		      uint64_t max_bytes, int *out_fd, struct sbx_error *err)
{
	struct stat st;
	int fd, r;

	/* O_NONBLOCK: a FIFO planted at the path must not hang the caller
	 * before the regular-file check can refuse it. */
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			return sbx_error_set(err, ELOOP, "%s: is a symlink; refused", what);
		return sbx_error_set(err, errno, "open(%s): %s", what, strerror(errno));
	}
	r = check_step(fd, what, false, trusted, err);
	if (r < 0)
		goto fail;
	if (fstat(fd, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", what, strerror(errno));
		goto fail;
	}
	/* The link count is not checked: another name for this root-owned,
	 * not group/world-writable inode changes nothing anyone can write,
	 * while refusing it would let any local user lock every agent out
	 * by making one (where fs.protected_hardlinks = 0). */
	if ((uint64_t)st.st_size > max_bytes) {
		r = sbx_error_set(err, EFBIG, "%s: larger than %" PRIu64 " bytes", what,
				  max_bytes);
		goto fail;
	}
	*out_fd = fd;
	return 0;
fail:
	close(fd);
	return r;
}

int sbx_trust_open_file(const char *path, bool trusted, uint64_t max_bytes,
			int *out_fd, struct sbx_error *err)
{
	const char *last;
	int dir, r;

	r = walk_parent(path, trusted, &dir, &last, err);
	if (r < 0)
		return r;
	r = sbx_trust_open_at(dir, last, path, trusted, max_bytes, out_fd, err);
	close(dir);
	return r;
}

int sbx_trust_open_dir(const char *path, bool trusted, int *out_fd, struct sbx_error *err)
{
	const char *last;
	int dir, fd = -1, rd, r;

	r = walk_parent(path, trusted, &dir, &last, err);
	if (r < 0)
		return r;
	fd = openat(dir, last, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
		goto out;
	}
	r = check_step(fd, path, true, trusted, err);
	if (r < 0)
		goto out;
	/* Listing needs a readable fd: reopen the checked inode itself. */
	rd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rd < 0) {
		r = sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
		goto out;
	}
	*out_fd = rd;
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	close(dir);
	return r;
}

/*
 * A symlink may be followed only when nobody but root could have put it
 * there or changed it: the link is root-owned and sits in a directory that
 * is root-owned and not group/world writable. Debian's merged-/usr links
 * (/lib64 -> usr/lib64), /usr/bin/cc -> /etc/alternatives/cc and the like
 * pass; a link an agent made in a directory it may write does not, so it
 * cannot point a grant, a bind or a gate rule somewhere else.
 */
static int symlink_trusted(int dir, int link, const char *what, struct sbx_error *err)
{
	struct stat dst, lst;

	if (fstat(link, &lst) != 0 || fstat(dir, &dst) != 0)
		return sbx_error_set(err, errno, "%s: fstat: %s", what, strerror(errno));
	if (lst.st_uid != 0)
		return sbx_error_set(err, ELOOP,
				     "%s: symlink owned by uid %u, not root; refusing to follow it",
				     what, (unsigned)lst.st_uid);
	if (dst.st_uid != 0 || (dst.st_mode & (S_IWGRP | S_IWOTH)))
		return sbx_error_set(err, ELOOP,
				     "%s: symlink in a directory others may write (owner uid %u, mode %04o); refusing to follow it",
				     what, (unsigned)dst.st_uid, (unsigned)(dst.st_mode & 07777));
	return 0;
}

/*
 * The common case in one system call: a canonical path with no symlink in
 * it is its own answer, and openat2 with RESOLVE_NO_SYMLINKS says whether
 * that holds (a link anywhere, the last component included, is ELOOP).
 * Any failure, a missing openat2 (ENOSYS) too, leaves the answer and its
 * message to the walk below. Each path of a session's plans used to cost
 * three system calls per component here. The O_PATH fd, or -1.
 */
static int resolve_symlink_free(const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (!sbx_path_is_canonical(path))
		return -1;
	fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? -1 : (int)fd;
}

/* The caller's check of one directory the walk passes, if it has one. */
static int walk_check(const struct sbx_walk_opts *o, int fd, const char *shown,
		      struct sbx_error *err)
{
	struct stat st;

	if (!o || !o->check)
		return 0;
	if (fstat(fd, &st) != 0)
		return sbx_error_set(err, errno, "fstat(%s): %s", shown, strerror(errno));
	return o->check(&st, shown, o->arg, err);
}

/* Back to "/", checked again: the walk's place when it starts, when an
 * absolute link sends it there, and when ".." is walked again from it. */
static int walk_restart(int *dir, const struct sbx_walk_opts *o, struct sbx_error *err)
{
	int next = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (next < 0)
		return sbx_error_set(err, errno, "open(/): %s", strerror(errno));
	if (*dir >= 0)
		close(*dir);
	*dir = next;
	return walk_check(o, next, "/", err);
}

/* name in dir, not followed if it is a link; made a directory first when
 * the walk may (o->create_mode) and it is the path's missing last
 * component. The O_PATH fd, or -1 with errno. */
static int walk_open(int dir, const char *name, const char *rest, const struct sbx_walk_opts *o)
{
	int fd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 || errno != ENOENT || !o || !o->create_mode || rest[strspn(rest, "/")])
		return fd;
	if (mkdirat(dir, name, o->create_mode) != 0 && errno != EEXIST)
		return -1;
	return openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

/* Long on purpose: one component walk whose state (the open directory, the
 * link budget) every step shares. */
int sbx_path_walk(const char *path, const struct sbx_walk_opts *o, char *out, size_t out_size,
		  int *fd_out, struct sbx_error *err)
{
	char resolved[SBX_PATH_MAX] = "";
	char rest[SBX_PATH_MAX], target[SBX_PATH_MAX], tmp[2 * SBX_PATH_MAX];
	unsigned links = 0;
	int dir = -1, r = 0;

	if (!path || path[0] != '/' || sbx_strlcpy(rest, sizeof(rest), path) != 0)
		return sbx_error_set(err, EINVAL, "resolve %.200s: not an absolute path that fits",
				     path ? path : "(null)");
	/* A caller's check sees every directory: no shortcut past them. */
	if (!o && (dir = resolve_symlink_free(path)) >= 0) {
		if (sbx_strlcpy(out, out_size, path) != 0)
			r = sbx_error_set(err, ENAMETOOLONG, "resolve %s: path too long", path);
		else if (fd_out) {
			*fd_out = dir;
			dir = -1;
		}
		sbx_close_if(dir);
		return r;
	}
	r = walk_restart(&dir, o, err);
	while (r == 0 && rest[0]) {
		char *comp = rest, name[SBX_PATH_MAX];
		size_t clen, rlen;
		struct stat st;
		ssize_t n;
		int next;

		while (*comp == '/')
			comp++;
		if (!*comp)
			break;
		clen = strcspn(comp, "/");
		memcpy(name, comp, clen);
		name[clen] = '\0';
		memmove(rest, comp + clen, strlen(comp + clen) + 1);
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			/* resolved holds no symlink, so ".." is lexical. Its
			 * parent is walked again from "/", every step checked
			 * as before: opened by name at once, a directory on it
			 * renamed since would go unseen. */
			char *last = strrchr(resolved, '/');

			if (last)
				*last = '\0';
			if (sbx_snprintf(tmp, sizeof(tmp), "%s%s", resolved, rest) != 0 ||
			    strlen(tmp) >= sizeof(rest)) {
				r = sbx_error_set(err, ENAMETOOLONG, "resolve %s: path too long",
						  path);
				break;
			}
			memcpy(rest, tmp, strlen(tmp) + 1);
			resolved[0] = '\0';
			r = walk_restart(&dir, o, err);
			continue;
		}
		rlen = strlen(resolved);
		if (rlen + 1 + clen >= sizeof(resolved)) {
			r = sbx_error_set(err, ENAMETOOLONG, "resolve %s: path too long", path);
			break;
		}
		next = walk_open(dir, name, rest, o);
		if (next < 0) {
			r = errno == ENOENT ? -ENOENT :
			    sbx_error_set(err, errno, "resolve %s: open(%s/%s): %s", path,
					  resolved, name, strerror(errno));
			if (r == -ENOENT)
				sbx_error_set(err, ENOENT, "resolve %s: %s/%s: No such file or directory",
					      path, resolved, name);
			break;
		}
		if (fstat(next, &st) != 0) {
			r = sbx_error_set(err, errno, "resolve %s: fstat: %s", path, strerror(errno));
			close(next);
			break;
		}
		if (!S_ISLNK(st.st_mode)) {
			resolved[rlen] = '/';
			memcpy(resolved + rlen + 1, name, clen + 1);
			close(dir);
			dir = next;
			r = walk_check(o, dir, resolved, err);
			continue;
		}
		snprintf(tmp, sizeof(tmp), "%s/%s", resolved, name);
		r = symlink_trusted(dir, next, tmp, err);
		if (r == 0 && ++links > 40)
			r = sbx_error_set(err, ELOOP, "resolve %s: too many symlinks", path);
		n = r == 0 ? readlinkat(next, "", target, sizeof(target) - 1) : 0;
		close(next);
		if (r)
			break;
		if (n <= 0 || (size_t)n >= sizeof(target) - 1) {
			r = sbx_error_set(err, n < 0 ? errno : ENAMETOOLONG,
					  "resolve %s: readlink(%s): %s", path, tmp,
					  n < 0 ? strerror(errno) : "target too long");
			break;
		}
		target[n] = '\0';
		if (sbx_snprintf(tmp, sizeof(tmp), "%s/%s", target, rest) != 0 ||
		    strlen(tmp) >= sizeof(rest)) {
			r = sbx_error_set(err, ENAMETOOLONG, "resolve %s: path too long", path);
			break;
		}
		memcpy(rest, tmp, strlen(tmp) + 1);
		if (target[0] == '/') {
			resolved[0] = '\0';
			r = walk_restart(&dir, o, err);
		}
		/* A relative target resolves from the link's directory: dir. */
	}
	if (r == 0 && !resolved[0])
		memcpy(resolved, "/", 2);
	if (r == 0 && sbx_strlcpy(out, out_size, resolved) != 0)
		r = sbx_error_set(err, ENAMETOOLONG, "resolve %s: path too long", path);
	if (r == 0 && fd_out) {
		*fd_out = dir;
		dir = -1;
	}
	sbx_close_if(dir);
	return r;
}

int sbx_path_resolve_trusted(const char *path, char *out, size_t out_size,
			     struct sbx_error *err)
{
	return sbx_path_walk(path, NULL, out, out_size, NULL, err);
}
