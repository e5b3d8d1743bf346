/* SPDX-License-Identifier: BSD-3-Clause */
/* Root-side directory walks and the agent's isolated home (docs/design.md section 8). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/*
 * Everything here may run as root over directories an agent can write to
 * (its own home, a previous session's leftovers). The rule from
 * pam_namespace's CVE-2025-6020 fix: walk from "/" with directory fds, one
 * component at a time, never follow a symlink, fstat the opened fd and act
 * on that fd (fchown/fchmod/openat), never stat a path and then use it.
 */

bool sbx_name_is_safe_component(const char *name)
{
	size_t i, len;

	if (!name)
		return false;
	len = strlen(name);
	if (len == 0 || len >= SBX_NAME_MAX || name[0] == '-' || name[0] == '.')
		return false;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/*
 * openat() of ONE path component without following a symlink. openat2's
 * RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS says so to the kernel; where it
 * is missing (ENOSYS, or EPERM from a container's seccomp policy) O_NOFOLLOW
 * is equivalent because there is only one component to resolve.
 */
static int open_component(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how;
	long fd;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.mode = (flags & O_CREAT) ? mode : 0;
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH;
	fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return (int)fd;
	return openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

/* Turn a failed open of a directory component into a message that says
 * what was there (a symlink is the case an attacker plants). */
static int component_error(int dirfd, const char *name, const char *shown,
			   int e, struct sbx_error *err)
{
	struct stat st;

	if ((e == ELOOP || e == ENOTDIR) &&
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			return sbx_error_set(err, ELOOP,
					     "open(%s): is a symlink; refusing to follow it",
					     shown);
		if (!S_ISDIR(st.st_mode))
			return sbx_error_set(err, ENOTDIR,
					     "open(%s): not a directory", shown);
	}
	return sbx_error_set(err, e, "open(%s): %s", shown, strerror(e));
}

static int check_trusted(const struct stat *st, const char *shown,
			 struct sbx_error *err)
{
	if (st->st_uid != 0)
		return sbx_error_set(err, EPERM,
				     "%s: owned by uid %u, not root; refusing an untrusted directory",
				     shown, (unsigned)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return sbx_error_set(err, EPERM,
				     "%s: mode %04o is group/world writable; refusing an untrusted directory",
				     shown, (unsigned)(st->st_mode & 07777));
	return 0;
}

/* Exact owner and mode on a directory we just made (mkdirat's mode is
 * narrowed by the caller's umask, which we must not change). */
static int dir_fix_owner_mode(int path_fd, uid_t uid, gid_t gid, mode_t mode,
			      const char *shown, struct sbx_error *err)
{
	int fd, r = 0;

	fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_set(err, errno, "open(%s): %s", shown, strerror(errno));
	if (fchown(fd, uid, gid) != 0)
		r = sbx_error_set(err, errno, "fchown(%s, %u:%u): %s", shown,
				  (unsigned)uid, (unsigned)gid, strerror(errno));
	else if (fchmod(fd, mode) != 0)
		r = sbx_error_set(err, errno, "fchmod(%s, %04o): %s", shown,
				  (unsigned)mode, strerror(errno));
	close(fd);
	return r;
}

/*
 * Open name under parent as an O_PATH directory fd. When create_mode is not
 * 0 and name is missing, make it root-owned with exactly create_mode.
 */
static int dir_child_open(int parent, const char *name, const char *shown,
			  bool trusted, mode_t create_mode, int *out_fd,
			  struct sbx_error *err)
{
	struct stat st;
	bool created = false;
	int fd, r;

	fd = open_component(parent, name, O_PATH | O_DIRECTORY, 0);
	if (fd < 0 && errno == ENOENT && create_mode != 0) {
		/* 0700 first: nobody else can use it before its mode is exact. */
		if (mkdirat(parent, name, 0700) == 0)
			created = true;
		else if (errno != EEXIST)
			return sbx_error_set(err, errno, "mkdirat(%s): %s", shown,
					     strerror(errno));
		fd = open_component(parent, name, O_PATH | O_DIRECTORY, 0);
	}
	if (fd < 0)
		return component_error(parent, name, shown, errno, err);
	if (fstat(fd, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", shown, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		r = sbx_error_set(err, ENOTDIR, "open(%s): not a directory", shown);
		goto out;
	}
	if (created) {
		r = dir_fix_owner_mode(fd, 0, 0, create_mode, shown, err);
		if (r)
			goto out;
		if (fstat(fd, &st) != 0) {
			r = sbx_error_set(err, errno, "fstat(%s): %s", shown,
					  strerror(errno));
			goto out;
		}
	}
	if (trusted) {
		r = check_trusted(&st, shown, err);
		if (r)
			goto out;
	}
	*out_fd = fd;
	return 0;
out:
	close(fd);
	return r;
}

int sbx_dir_open_walk(const char *path, bool trusted, mode_t create_mode,
		      int *out_fd, struct sbx_error *err)
{
	char buf[SBX_PATH_MAX], shown[SBX_PATH_MAX];
	struct stat st;
	char *comp, *next;
	size_t shown_len = 0;
	int fd, r;

	if (!sbx_path_is_canonical(path))
		return sbx_error_set(err, EINVAL,
				     "walk(%s): not an absolute canonical path",
				     path ? path : "(null)");
	if (sbx_strlcpy(buf, sizeof(buf), path) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "walk(%.64s...): path too long",
				     path);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_set(err, errno, "open(/): %s", strerror(errno));
	if (fstat(fd, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(/): %s", strerror(errno));
		goto out;
	}
	if (trusted) {
		r = check_trusted(&st, "/", err);
		if (r)
			goto out;
	}
	shown[0] = '\0';
	for (comp = buf + 1; *comp; comp = next) {
		size_t len;
		int child;

		next = strchr(comp, '/');
		if (next)
			*next++ = '\0';
		else
			next = comp + strlen(comp);
		len = strlen(comp);
		/* shown is a prefix of path, so it always fits. */
		shown[shown_len++] = '/';
		memcpy(shown + shown_len, comp, len + 1);
		shown_len += len;
		r = dir_child_open(fd, comp, shown, trusted,
				   *next ? 0 : create_mode, &child, err);
		if (r)
			goto out;
		close(fd);
		/* r == 0: child is set (the analyzer takes the uninlined
		 * component_error() for a possible 0).
		 * NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign) */
		fd = child;
	}
	*out_fd = fd;
	return 0;
out:
	close(fd);
	return r;
}

/* Display-only paths in messages; sized so they never truncate. */
#define HOMES_SHOWN_MAX (SBX_PATH_MAX + 8)
#define HOME_TMP_SHOWN_MAX (HOMES_SHOWN_MAX + SBX_NAME_MAX + 34)

/* Copy one skeleton entry into the new home. Entries that are not regular
 * files are skipped; a regular file must be root-owned, not group/world
 * writable, have one link and be small. */
static int skel_copy_one(int skel_fd, const char *skel_dir, const char *name,
			 int home_fd, const char *home_shown, uid_t uid,
			 gid_t gid, struct sbx_error *err)
{
	char src[SBX_PATH_MAX + 258], dst[HOME_TMP_SHOWN_MAX + 258];
	char *data = NULL;
	struct stat lst, st;
	int in = -1, out = -1, r;
	size_t used = 0;

	snprintf(src, sizeof(src), "%s/%s", skel_dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", home_shown, name);
	if (fstatat(skel_fd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0)
		return sbx_error_set(err, errno, "fstatat(%s): %s", src, strerror(errno));
	if (!S_ISREG(lst.st_mode))
		return 0;
	in = open_component(skel_fd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (in < 0)
		return sbx_error_set(err, errno, "open(%s): %s", src, strerror(errno));
	if (fstat(in, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", src, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_ino != lst.st_ino || st.st_dev != lst.st_dev) {
		r = sbx_error_set(err, EAGAIN, "open(%s): changed while being opened", src);
		goto out;
	}
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		r = sbx_error_set(err, EPERM,
				  "skeleton %s: owner uid %u mode %04o; must be root-owned and not group/world writable",
				  src, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (st.st_nlink != 1) {
		r = sbx_error_set(err, EMLINK,
				  "skeleton %s: has %lu links; refusing a hard-linked file",
				  src, (unsigned long)st.st_nlink);
		goto out;
	}
	if (st.st_size > (off_t)SBX_SKEL_FILE_MAX) {
		r = sbx_error_set(err, EFBIG, "skeleton %s: larger than %u bytes",
				  src, SBX_SKEL_FILE_MAX);
		goto out;
	}
	data = malloc(SBX_SKEL_FILE_MAX + 1);
	if (!data) {
		r = sbx_error_set(err, ENOMEM, "copy(%s): out of memory", src);
		goto out;
	}
	for (;;) {
		ssize_t n = read(in, data + used, SBX_SKEL_FILE_MAX + 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = sbx_error_set(err, errno, "read(%s): %s", src, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > SBX_SKEL_FILE_MAX) {
			r = sbx_error_set(err, EFBIG, "skeleton %s: larger than %u bytes",
					  src, SBX_SKEL_FILE_MAX);
			goto out;
		}
	}
	out = open_component(home_fd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (out < 0) {
		r = sbx_error_set(err, errno, "create(%s): %s", dst, strerror(errno));
		goto out;
	}
	if (fchown(out, uid, gid) != 0) {
		r = sbx_error_set(err, errno, "fchown(%s, %u:%u): %s", dst,
				  (unsigned)uid, (unsigned)gid, strerror(errno));
		goto out;
	}
	if (fchmod(out, 0644) != 0) {
		r = sbx_error_set(err, errno, "fchmod(%s, 0644): %s", dst, strerror(errno));
		goto out;
	}
	r = sbx_write_all(out, data, used);
	if (r)
		sbx_error_set(err, -r, "write(%s): %s", dst, strerror(-r));
out:
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	free(data);
	return r;
}

/* Seed the (still root-owned, private) new home from the skeleton. */
static int skel_seed(const char *skel_dir, int home_fd, const char *home_shown,
		     uid_t uid, gid_t gid, struct sbx_error *err)
{
	struct dirent *de;
	DIR *dir;
	int skel_fd, rfd, r;

	r = sbx_dir_open_walk(skel_dir, true, 0, &skel_fd, err);
	if (r == -ENOENT) {
		sbx_error_clear(err);
		return 0;	/* no skeleton installed: an empty home */
	}
	if (r)
		return r;
	rfd = openat(skel_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		r = sbx_error_set(err, errno, "open(%s): %s", skel_dir, strerror(errno));
		close(skel_fd);
		return r;
	}
	dir = fdopendir(rfd);
	if (!dir) {
		r = sbx_error_set(err, errno, "fdopendir(%s): %s", skel_dir, strerror(errno));
		close(rfd);
		close(skel_fd);
		return r;
	}
	while ((errno = 0, de = readdir(dir)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = skel_copy_one(rfd, skel_dir, de->d_name, home_fd, home_shown,
				  uid, gid, err);
		if (r)
			break;
	}
	if (!r && errno)
		r = sbx_error_set(err, errno, "readdir(%s): %s", skel_dir, strerror(errno));
	closedir(dir);
	close(skel_fd);
	return r;
}

/* Remove a half-built home we created: only its top-level entries (the
 * skeleton copies), unlinkat never follows a symlink. */
static void home_discard(int homes_fd, const char *name)
{
	struct dirent *de;
	DIR *dir;
	int fd;

	fd = open_component(homes_fd, name, O_RDONLY | O_DIRECTORY, 0);
	if (fd >= 0) {
		dir = fdopendir(fd);
		if (dir) {
			while ((de = readdir(dir)) != NULL) {
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					unlinkat(fd, de->d_name, 0);
			}
			closedir(dir);
		} else {
			close(fd);
		}
	}
	unlinkat(homes_fd, name, AT_REMOVEDIR);
}

/*
 * Build the home under a private temporary name and rename it into place
 * (RENAME_NOREPLACE): the home appears complete and owned by the agent, or
 * not at all. Two sessions racing for a new account both build; one rename
 * wins, the other discards its copy and uses the winner's.
 */
static int home_create(int homes_fd, const char *homes_shown, const char *user,
		       uid_t uid, gid_t gid, const char *skel_dir,
		       struct sbx_error *err)
{
	char tmp[SBX_NAME_MAX + 32], shown[HOME_TMP_SHOWN_MAX];
	int fd = -1, r;

	snprintf(tmp, sizeof(tmp), ".new-%s.%ld", user, (long)getpid());
	snprintf(shown, sizeof(shown), "%s/%s", homes_shown, tmp);
	/* A leftover from a crashed earlier try by a recycled pid. */
	home_discard(homes_fd, tmp);
	if (mkdirat(homes_fd, tmp, 0700) != 0)
		return sbx_error_set(err, errno, "mkdirat(%s): %s", shown, strerror(errno));
	fd = open_component(homes_fd, tmp, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) {
		r = sbx_error_set(err, errno, "open(%s): %s", shown, strerror(errno));
		goto fail;
	}
	if (skel_dir && skel_dir[0]) {
		r = skel_seed(skel_dir, fd, shown, uid, gid, err);
		if (r)
			goto fail;
	}
	if (fchown(fd, uid, gid) != 0) {
		r = sbx_error_set(err, errno, "fchown(%s, %u:%u): %s", shown,
				  (unsigned)uid, (unsigned)gid, strerror(errno));
		goto fail;
	}
	if (fchmod(fd, 0700) != 0) {
		r = sbx_error_set(err, errno, "fchmod(%s, 0700): %s", shown, strerror(errno));
		goto fail;
	}
	if (renameat2(homes_fd, tmp, homes_fd, user, RENAME_NOREPLACE) != 0) {
		if (errno == EEXIST) {	/* lost the race: use the winner's */
			r = 0;
			goto fail;
		}
		r = sbx_error_set(err, errno, "renameat2(%s, %s/%s): %s", shown,
				  homes_shown, user, strerror(errno));
		goto fail;
	}
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	home_discard(homes_fd, tmp);
	return r;
}

int sbx_home_prepare_isolated(const char *state_dir, const char *user,
			      uid_t uid, gid_t gid, const char *skel_dir,
			      char *out_path, size_t out_size,
			      struct sbx_error *err)
{
	char homes_shown[HOMES_SHOWN_MAX], home_shown[SBX_PATH_MAX + SBX_NAME_MAX + 8];
	int state_fd = -1, homes_fd = -1, home_fd = -1, r;
	struct stat st;

	if (!sbx_name_is_safe_component(user))
		return sbx_error_set(err, EINVAL,
				     "home(%s): user name is not a safe path component",
				     user ? user : "(null)");
	if (uid == 0)
		return sbx_error_set(err, EPERM, "home(%s): refusing uid 0", user);
	if (!state_dir)
		return sbx_error_set(err, EINVAL, "home(%s): no state directory", user);
	r = sbx_snprintf(homes_shown, sizeof(homes_shown), "%s/homes",
			 strcmp(state_dir, "/") ? state_dir : "");
	if (r == 0)
		r = sbx_snprintf(home_shown, sizeof(home_shown), "%s/%s",
				 homes_shown, user);
	if (r == 0 && strlen(home_shown) >= SBX_PATH_MAX)
		r = -ENAMETOOLONG;
	if (r)
		return sbx_error_set(err, ENAMETOOLONG, "home(%s): path too long", user);

	r = sbx_dir_open_walk(state_dir, true, 0755, &state_fd, err);
	if (r)
		goto out;
	r = dir_child_open(state_fd, "homes", homes_shown, true, 0711, &homes_fd, err);
	if (r)
		goto out;

	home_fd = open_component(homes_fd, user, O_RDONLY | O_DIRECTORY, 0);
	if (home_fd < 0 && errno == ENOENT) {
		r = home_create(homes_fd, homes_shown, user, uid, gid, skel_dir, err);
		if (r)
			goto out;
		home_fd = open_component(homes_fd, user, O_RDONLY | O_DIRECTORY, 0);
	}
	if (home_fd < 0) {
		r = component_error(homes_fd, user, home_shown, errno, err);
		goto out;
	}
	if (fstat(home_fd, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", home_shown, strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		r = sbx_error_set(err, ENOTDIR, "open(%s): not a directory", home_shown);
		goto out;
	}
	/* Never chown an existing tree: it may hold links an agent planted. */
	if (st.st_uid != uid) {
		r = sbx_error_set(err, EPERM,
				  "home %s: owned by uid %u, not %u; refusing (fix by hand)",
				  home_shown, (unsigned)st.st_uid, (unsigned)uid);
		goto out;
	}
	r = sbx_strlcpy(out_path, out_size, home_shown);
	if (r)
		sbx_error_set(err, ENAMETOOLONG, "home(%s): output buffer too small", user);
out:
	if (home_fd >= 0)
		close(home_fd);
	if (homes_fd >= 0)
		close(homes_fd);
	if (state_fd >= 0)
		close(state_fd);
	return r;
}

int sbx_path_open_nofollow(const char *path, int flags, int *out_fd,
			   struct sbx_error *err)
{
	char parent[SBX_PATH_MAX];
	const char *name;
	char *slash;
	int dfd, fd, r;

	if (!sbx_path_is_canonical(path) || !strcmp(path, "/"))
		return sbx_error_set(err, EINVAL, "open(%s): not a canonical path below /",
				     path ? path : "(null)");
	if (sbx_strlcpy(parent, sizeof(parent), path) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "open(%.64s...): path too long", path);
	slash = strrchr(parent, '/');
	name = path + (slash - parent) + 1;
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	r = sbx_dir_open_walk(parent, false, 0, &dfd, err);
	if (r)
		return r;
	fd = open_component(dfd, name, flags, 0);
	if (fd < 0) {
		if (errno == ELOOP || (errno == ENOTDIR && (flags & O_DIRECTORY)))
			r = component_error(dfd, name, path, errno, err);
		else
			r = sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
		close(dfd);
		return r;
	}
	close(dfd);
	*out_fd = fd;
	return 0;
}

int sbx_root_mount(const char *target, int source_fd, const char *source,
		   const char *fstype, unsigned long flags, const char *data,
		   struct sbx_error *err)
{
	char tpath[64], spath[64];
	int tfd, r = 0;

	r = sbx_path_open_nofollow(target, O_PATH, &tfd, err);
	if (r)
		return r;
	/* The magic link names exactly the inode we opened: a path swapped
	 * for a symlink after the walk cannot redirect the mount. r == 0, so
	 * tfd is set (the analyzer takes the uninlined component_error() for
	 * a possible 0). NOLINTNEXTLINE(clang-analyzer-core.CallAndMessage) */
	snprintf(tpath, sizeof(tpath), "/proc/self/fd/%d", tfd);
	if (source_fd >= 0) {
		snprintf(spath, sizeof(spath), "/proc/self/fd/%d", source_fd);
		source = spath;
	}
	if (mount(source, tpath, fstype, flags, data) != 0)
		r = sbx_error_set(err, errno, "mount(%s on %s): %s",
				  source_fd >= 0 ? "fd" : (source ? source : "none"),
				  target, strerror(errno));
	close(tfd);
	return r;
}

int sbx_home_prepare_ephemeral(const char *home, uid_t uid, gid_t gid,
			       uint64_t size, const char *skel_dir,
			       struct sbx_error *err)
{
	char data[128], fdpath[64];
	struct stat before, after;
	struct statfs sfs;
	int fd = -1, rfd = -1, r;

	if (uid == 0)
		return sbx_error_set(err, EPERM, "ephemeral home(%s): refusing uid 0",
				     home ? home : "(null)");
	/* The mountpoint must exist: never create directories as root along
	 * a path the agent may influence. */
	r = sbx_dir_open_walk(home, false, 0, &fd, err);
	if (r == -ENOENT)
		return sbx_error_set(err, ENOENT,
				     "ephemeral home: mountpoint %s does not exist (create it; the module never does)",
				     home);
	if (r)
		return r;
	if (fstat(fd, &before) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", home, strerror(errno));
		goto out;
	}
	snprintf(data, sizeof(data), "mode=0700,uid=%u,gid=%u,size=%llu",
		 (unsigned)uid, (unsigned)gid,
		 (unsigned long long)(size ? size : SBX_DEFAULT_TMP_SIZE));
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (mount("tmpfs", fdpath, "tmpfs", MS_NOSUID | MS_NODEV, data) != 0) {
		r = sbx_error_set(err, errno, "mount(tmpfs on %s): %s", home, strerror(errno));
		goto out;
	}
	/* Reopen: the new fd must be the root of the tmpfs we just made. */
	r = sbx_path_open_nofollow(home, O_RDONLY | O_DIRECTORY, &rfd, err);
	if (r)
		goto undo;
	if (fstat(rfd, &after) != 0 || fstatfs(rfd, &sfs) != 0 ||
	    sfs.f_type != TMPFS_MAGIC || after.st_dev == before.st_dev ||
	    after.st_uid != uid) {
		r = sbx_error_set(err, EXDEV, "ephemeral home %s: not the tmpfs just mounted",
				  home);
		goto undo;
	}
	if (skel_dir && skel_dir[0]) {
		r = skel_seed(skel_dir, rfd, home, uid, gid, err);
		if (r)
			goto undo;
	}
	goto out;
undo:
	/* Detach through the fd of the mountpoint we mounted on. Best
	 * effort: the error being returned is the one that matters. */
	if (rfd >= 0) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", rfd);
		(void)umount2(fdpath, MNT_DETACH);
	} else {
		(void)umount2(home, MNT_DETACH | UMOUNT_NOFOLLOW);
	}
out:
	if (rfd >= 0)
		close(rfd);
	if (fd >= 0)
		close(fd);
	return r;
}
