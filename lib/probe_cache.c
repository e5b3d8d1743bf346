/* SPDX-License-Identifier: BSD-3-Clause */
/* The boot's probe, per uid: root probes as the account once, sessions read the entry. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * Why a cache, and why it can only say "available".
 *
 * Every session start forked a child that made a user namespace and every
 * namespace type in it (a network namespace alone is ~0.6 ms of its
 * ~1.2 ms) to learn what the same session then makes anyway. A session on
 * the direct path no longer does (its clone is the probe,
 * sbx_probe_for_session); the entry is what lets a session with a setup
 * process (a proxy session, a threaded caller) skip it too. What that
 * child learns depends on the uid (an LSM may refuse user namespaces to
 * some accounts), so root's own probe is no answer; and a process of the
 * agent's uid must not be able to write or change what sessions of that
 * uid believe. So root probes as the account, in a child no process of
 * that uid can ptrace (sbx_probe_namespaces_as), and writes an entry only
 * when everything was available. A session that believes such an entry
 * takes the namespace path: on the direct path a refused clone sends it
 * back to a fresh probe (sbx_run_confined); with a setup process each
 * namespace is made after the point of no return, where a failure ends it
 * with exit 126 before any command runs. A wrong entry costs a probe or
 * refuses a session; it cannot make one weaker than a fresh probe would. Where anything is missing there is no entry,
 * and sessions probe for themselves as before (the degraded path and its
 * reasons come from that probe).
 *
 * What the entry is valid for is written in it and compared with what the
 * reader sees now: the boot (a file that outlives a reboot, or is copied
 * from another host, is stale), the kernel, the user namespace the reader
 * is in, whether the reader runs under a seccomp filter (a container's
 * profile, which the probe may not have had), and the sysctls that gate
 * unprivileged namespaces. An admin who turns one of them off is heard at
 * the next session; one who changes an LSM policy should run
 * "agent-shell --probe-cache" again (until then such a session is
 * refused, not weakened).
 */

#define CACHE_FORMAT "agent-sandbox probe cache 1"
/* The namespace types an entry vouches for (sbx_probe's fields). */
#define CACHE_NAMESPACES "user mount pid net ipc uts cgroup"

static char cache_dir_override[SBX_PATH_MAX];

static const char *cache_dir(void)
{
	return cache_dir_override[0] ? cache_dir_override : SBX_PROBE_CACHE_DIR;
}

void sbx_probe_cache_dir_for_tests(const char *dir)
{
	if (!dir || sbx_strlcpy(cache_dir_override, sizeof(cache_dir_override), dir) != 0)
		cache_dir_override[0] = '\0';
}

/* The sysctls that decide whether an unprivileged uid may make each
 * namespace type; a file this kernel lacks reads as "-". */
static const char *const cache_sysctls[] = {
	"user/max_user_namespaces", "user/max_mnt_namespaces", "user/max_pid_namespaces",
	"user/max_net_namespaces", "user/max_ipc_namespaces", "user/max_uts_namespaces",
	"user/max_cgroup_namespaces",
	"kernel/unprivileged_userns_clone",		/* Debian's patch (before 6.x) */
	"kernel/apparmor_restrict_unprivileged_userns",	/* Ubuntu's */
};

static bool text_is(const char *s, const char *allowed, size_t max)
{
	size_t n = strlen(s);

	return n > 0 && n <= max && strspn(s, allowed) == n;
}

static bool printable(const char *s)
{
	for (; *s; s++) {
		if (*s < 0x20 || *s > 0x7e)
			return false;
	}
	return true;
}

/* One line of /proc (no trailing newline) into out. */
static int read_line(const char *path, char *out, size_t size, struct sbx_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = sbx_read_file(path, size - 1, &buf, &len, err);
	if (r)
		return r;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	r = sbx_strlcpy(out, size, buf);
	free(buf);
	if (r)
		return sbx_error_set(err, ENAMETOOLONG, "%s: too long", path);
	return 0;
}

/* Append one "key value" line; 0 or -ENAMETOOLONG. */
static int key_line(char *out, size_t size, const char *name, const char *value)
{
	size_t used = strlen(out);

	return sbx_snprintf(out + used, size - used, "%s %s\n", name, value);
}

/*
 * What an entry for uid says before its "written" line, as this process
 * sees the system now. Every value is checked to be one line of printable
 * text, so the comparison with a file is a comparison of bytes.
 */
static int cache_key(uid_t uid, char *out, size_t size, struct sbx_error *err)
{
	char boot[64], ns[64], value[32], line[SBX_PATH_MAX];
	struct utsname u;
	ssize_t n;
	long mode;
	int r;

	out[0] = '\0';
	r = read_line("/proc/sys/kernel/random/boot_id", boot, sizeof(boot), err);
	if (r)
		return r;
	if (!text_is(boot, "0123456789abcdef-", 36))
		return sbx_error_set(err, EINVAL, "boot_id: not a UUID");
	if (uname(&u) != 0)
		return sbx_error_set(err, errno, "uname: %s", strerror(errno));
	if (!u.release[0] || !printable(u.release) || !printable(u.version))
		return sbx_error_set(err, EINVAL, "uname: not printable text");
	n = readlink("/proc/self/ns/user", ns, sizeof(ns) - 1);
	if (n <= 0)
		return sbx_error_set(err, n < 0 ? errno : EINVAL, "readlink(/proc/self/ns/user): %s",
				     n < 0 ? strerror(errno) : "empty");
	ns[n] = '\0';
	if (!printable(ns))
		return sbx_error_set(err, EINVAL, "/proc/self/ns/user: not printable text");
	/* 0: no filter, 2: a filter (PR_GET_SECCOMP fails without
	 * CONFIG_SECCOMP, and in strict mode the process would be dead). */
	mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
	snprintf(value, sizeof(value), "%ld", mode < 0 ? -1L : mode);
	r = sbx_snprintf(out, size, "%s\n", CACHE_FORMAT);
	if (!r)
		r = sbx_snprintf(line, sizeof(line), "%u", (unsigned)uid);
	if (!r)
		r = key_line(out, size, "uid", line);
	if (!r)
		r = key_line(out, size, "boot_id", boot);
	if (!r)
		r = key_line(out, size, "kernel", u.release);
	if (!r)
		r = key_line(out, size, "kernel_version", u.version);
	if (!r)
		r = key_line(out, size, "userns", ns);
	if (!r)
		r = key_line(out, size, "seccomp_mode", value);
	for (size_t i = 0; !r && i < ARRAY_SIZE(cache_sysctls); i++) {
		char path[96], v[32];

		snprintf(path, sizeof(path), "/proc/sys/%s", cache_sysctls[i]);
		if (read_line(path, v, sizeof(v), NULL) != 0)
			snprintf(v, sizeof(v), "-");
		else if (!text_is(v, "0123456789-", 20))
			return sbx_error_set(err, EINVAL, "%s: not a number", path);
		r = sbx_snprintf(line, sizeof(line), "%s=%s", cache_sysctls[i], v);
		if (!r)
			r = key_line(out, size, "sysctl", line);
	}
	if (!r)
		r = key_line(out, size, "namespaces", CACHE_NAMESPACES);
	if (r)
		return sbx_error_set(err, ENAMETOOLONG, "probe cache: entry too long");
	return 0;
}

int sbx_probe_cache_entry_text(uid_t uid, char *out, size_t size, struct sbx_error *err)
{
	size_t used;
	int r;

	r = cache_key(uid, out, size, err);
	if (r)
		return r;
	used = strlen(out);
	if (sbx_snprintf(out + used, size - used, "written %lld\n", (long long)time(NULL)) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "probe cache: entry too long");
	return 0;
}

/* Why a line of the file is not the line this process expects. */
static int key_mismatch(const char *path, const char *want, struct sbx_error *err)
{
	static const struct {
		const char *key;
		const char *why;
	} reasons[] = {
		{ "agent-sandbox", "another format" },
		{ "uid", "written for another uid" },
		{ "boot_id", "written in another boot" },
		{ "kernel", "written for another kernel" },
		{ "kernel_version", "written for another build of the kernel" },
		{ "userns", "written in another user namespace" },
		{ "seccomp_mode", "this process runs under another seccomp mode than the probe" },
		{ "sysctl", "a namespace sysctl changed since" },
		{ "namespaces", "another set of namespaces" },
	};
	size_t klen = strcspn(want, " \n");

	for (size_t i = 0; i < ARRAY_SIZE(reasons); i++) {
		if (strlen(reasons[i].key) == klen && !strncmp(want, reasons[i].key, klen)) {
			if (!strcmp(reasons[i].key, "sysctl"))
				return sbx_error_set(err, ESTALE, "%s: %s (%.*s)", path,
						     reasons[i].why,
						     (int)strcspn(want + klen + 1, "=\n"),
						     want + klen + 1);
			return sbx_error_set(err, ESTALE, "%s: %s", path, reasons[i].why);
		}
	}
	return sbx_error_set(err, ESTALE, "%s: stale", path);
}

int sbx_probe_cache_match(const char *key, const char *buf, size_t len, const char *what,
			  struct sbx_error *err)
{
	const char *want, *got = buf, *end = buf + len;

	if (memchr(buf, '\0', len))
		return sbx_error_set(err, EINVAL, "%s: holds a NUL byte", what);
	/* The key, line by line (each of its lines ends in a newline), then
	 * "written SECONDS\n" and nothing else. */
	for (want = key; *want; ) {
		size_t wl = strcspn(want, "\n") + 1;

		if ((size_t)(end - got) < wl || memcmp(want, got, wl) != 0)
			return key_mismatch(what, want, err);
		want += wl;
		got += wl;
	}
	if (end - got < 10 || memcmp(got, "written ", 8) != 0 || end[-1] != '\n')
		return sbx_error_set(err, EINVAL, "%s: malformed", what);
	for (const char *p = got + 8; p < end - 1; p++) {
		if (*p < '0' || *p > '9')
			return sbx_error_set(err, EINVAL, "%s: malformed", what);
	}
	return 0;
}

int sbx_probe_cache_check(uid_t uid, struct sbx_error *err)
{
	char key[SBX_PROBE_CACHE_MAX], path[SBX_PATH_MAX];
	char *buf = NULL;
	size_t len = 0;
	int fd = -1, r;

	if (sbx_snprintf(path, sizeof(path), "%s/%u", cache_dir(), (unsigned)uid) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "probe cache: path too long");
	/* Trusted only when root alone could have written it: root-owned and
	 * not group/world writable, and every directory from "/" the same,
	 * opened without following a symlink and checked on the fd. Opened
	 * first: where there is no entry, that is all this costs. */
	r = sbx_trust_open_file(path, true, SBX_PROBE_CACHE_MAX, &fd, err);
	if (r)
		return r;
	r = sbx_read_fd(fd, path, SBX_PROBE_CACHE_MAX, &buf, &len, err);
	close(fd);
	if (!r)
		r = cache_key(uid, key, sizeof(key), err);
	if (!r)
		r = sbx_probe_cache_match(key, buf, len, path, err);
	free(buf);
	return r;
}

/* The cache directory, O_RDONLY (to create and rename in it). create:
 * make it (and its parent, the runtime directory) 0755 when missing. */
static int cache_dir_open(bool create, int *out, struct sbx_error *err)
{
	char parent[SBX_PATH_MAX];
	const char *dir = cache_dir();
	const char *slash = strrchr(dir, '/');
	int pfd = -1, dfd = -1, r;

	if (!slash || slash == dir || (size_t)(slash - dir) >= sizeof(parent))
		return sbx_error_set(err, EINVAL, "probe cache: bad directory %s", dir);
	memcpy(parent, dir, (size_t)(slash - dir));
	parent[slash - dir] = '\0';
	if (create) {
		r = sbx_dir_open_walk(parent, true, 0755, &pfd, err);
		if (r)
			return r;
		close(pfd);
	}
	r = sbx_dir_open_walk(dir, true, create ? 0755 : 0, &pfd, err);
	if (r)
		return r;
	dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		r = sbx_error_set(err, errno, "open(%s): %s", dir, strerror(errno));
	close(pfd);
	if (dfd < 0)
		return r;
	*out = dfd;
	return 0;
}

static int cache_unlink_at(int dfd, uid_t uid, struct sbx_error *err)
{
	char name[16];

	snprintf(name, sizeof(name), "%u", (unsigned)uid);
	if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
		return sbx_error_set(err, errno, "unlink(%s/%s): %s", cache_dir(), name,
				     strerror(errno));
	return 0;
}

int sbx_probe_cache_remove(uid_t uid, struct sbx_error *err)
{
	int dfd = -1, r;

	r = cache_dir_open(false, &dfd, err);
	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	r = cache_unlink_at(dfd, uid, err);
	close(dfd);
	return r;
}

/* text as uid's entry: a new file beside it, then renamed over it, so a
 * reader sees the old entry, no entry or the whole new one. */
static int cache_store_at(int dfd, uid_t uid, const char *text, struct sbx_error *err)
{
	char name[16], tmp[48];
	int fd, r = 0;

	snprintf(name, sizeof(name), "%u", (unsigned)uid);
	snprintf(tmp, sizeof(tmp), ".%u.%ld.tmp", (unsigned)uid, (long)getpid());
	/* Only root can make names here: one by this name is a leftover. */
	(void)unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return sbx_error_set(err, errno, "create(%s/%s): %s", cache_dir(), tmp,
				     strerror(errno));
	if (sbx_write_all(fd, text, strlen(text)) != 0 || fchown(fd, 0, 0) != 0 ||
	    fchmod(fd, 0644) != 0)
		r = sbx_error_set(err, errno, "write(%s/%s): %s", cache_dir(), tmp,
				  strerror(errno));
	if (close(fd) != 0 && !r)
		r = sbx_error_set(err, errno, "close(%s/%s): %s", cache_dir(), tmp,
				  strerror(errno));
	if (!r && renameat(dfd, tmp, dfd, name) != 0)
		r = sbx_error_set(err, errno, "rename(%s/%s): %s", cache_dir(), name,
				  strerror(errno));
	if (r)
		(void)unlinkat(dfd, tmp, 0);
	return r;
}

/* What a probe that is not all "yes" lacks, in words. */
static void describe_missing(const struct sbx_probe *p, char *why, size_t size)
{
	static const struct {
		size_t offset;
		const char *name;
	} types[] = {
		{ offsetof(struct sbx_probe, mountns), "mount" },
		{ offsetof(struct sbx_probe, pidns), "pid" },
		{ offsetof(struct sbx_probe, netns), "net" },
		{ offsetof(struct sbx_probe, ipcns), "ipc" },
		{ offsetof(struct sbx_probe, utsns), "uts" },
		{ offsetof(struct sbx_probe, cgroupns), "cgroup" },
	};
	char list[64] = "";

	if (!p->userns) {
		sbx_text_set(why, size, "no user namespace: %s", p->userns_why);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		if (!*(const bool *)((const char *)p + types[i].offset)) {
			size_t used = strlen(list);

			snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "",
				 types[i].name);
		}
	}
	sbx_text_set(why, size, "in its user namespace, unshare() refused: %s", list);
}

int sbx_probe_cache_refresh(uid_t uid, gid_t gid, const char *user, bool *cached,
			    char *why, size_t why_size, struct sbx_error *err)
{
	char before[SBX_PROBE_CACHE_MAX], entry[SBX_PROBE_CACHE_MAX];
	struct sbx_probe p;
	int dfd = -1, r;

	*cached = false;
	if (!why || !why_size)
		return sbx_error_set(err, EINVAL, "probe cache: no room for the reason");
	why[0] = '\0';
	if (geteuid() != 0)
		return sbx_error_set(err, EPERM, "probe cache: only root writes it");
	if (uid == 0)
		return sbx_error_set(err, EINVAL, "probe cache: uid 0 is never an agent");
	r = cache_dir_open(true, &dfd, err);
	if (r)
		return r;
	/* Whatever happens next, no entry of an earlier probe outlives this
	 * one. */
	r = cache_unlink_at(dfd, uid, err);
	if (!r)
		r = cache_key(uid, before, sizeof(before), err);
	if (r)
		goto out;
	memset(&p, 0, sizeof(p));
	r = sbx_probe_namespaces_as(uid, gid, user, &p, err);
	if (r)
		goto out;
	if (!(p.userns && p.mountns && p.pidns && p.netns && p.ipcns && p.utsns && p.cgroupns)) {
		describe_missing(&p, why, why_size);
		goto out;
	}
	/* A setting the entry names that changed while the child probed
	 * would make the entry vouch for what nobody measured. */
	r = sbx_probe_cache_entry_text(uid, entry, sizeof(entry), err);
	if (r)
		goto out;
	if (strncmp(entry, before, strlen(before)) != 0) {
		sbx_text_set(why, why_size, "a setting the entry depends on changed during the "
			     "probe; run it again");
		goto out;
	}
	r = cache_store_at(dfd, uid, entry, err);
	*cached = r == 0;
out:
	close(dfd);
	return r;
}
