/* SPDX-License-Identifier: BSD-3-Clause */
/* Landlock: describe the rules for a profile, then apply them best-effort by ABI. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "internal.h"
#include "landlock_compat.h"

/* ---- describe ------------------------------------------------------------ */

/* The ELF interpreters. docs/design.md section 6: under the command gate ld.so itself needs
 * EXECUTE or no dynamic program starts (measured); the writable mounts are
 * noexec so `ld.so ./written-binary` cannot map what the agent wrote. */
static const char *const dynamic_loaders[] = {
	"/lib64/ld-linux-x86-64.so.2",
	"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	"/lib/ld-linux-aarch64.so.1",
	"/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
};

/* host_read = deny still has to run programs: the runtime closure. */
static const char *const runtime_trees[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib64",
};

static const char *const runtime_files[] = {
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/resolv.conf", "/etc/localtime", "/etc/ssl/certs",
	"/etc/alternatives", "/etc/bash.bashrc", "/etc/profile",
	"/etc/profile.d", "/etc/inputrc", "/etc/terminfo", "/etc/environment",
	"/etc/locale.alias", "/etc/gitconfig", "/etc/services",
	"/etc/protocols", "/usr/share",
};

static const char *const data_devices[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
};

/* Terminals need ioctls (TCGETS, TIOCGWINSZ, ...); nothing else gets IOCTL_DEV. */
static const char *const tty_devices[] = {
	"/dev/tty", "/dev/pts", "/dev/ptmx",
};

static int plan_add(struct sbx_landlock_plan *plan, const char *path,
		    unsigned rights, bool optional, struct sbx_error *err)
{
	struct sbx_landlock_rule *r;

	if (!path || !path[0] || rights == 0)
		return 0;
	if (!sbx_path_is_canonical(path))
		return sbx_error_set(err, EINVAL,
				     "landlock plan: %s: path is not absolute and canonical",
				     path);
	/* One rule per path: the kernel would merge them anyway, and a
	 * mandatory duplicate must stay mandatory. */
	for (size_t i = 0; i < plan->n_rules; i++) {
		r = &plan->rules[i];
		if (strcmp(r->path, path) == 0) {
			r->rights |= rights;
			r->optional = r->optional && optional;
			return 0;
		}
	}
	if (plan->n_rules >= ARRAY_SIZE(plan->rules))
		return sbx_error_set(err, E2BIG,
				     "landlock plan: %s: more than %zu rules",
				     path, ARRAY_SIZE(plan->rules));
	r = &plan->rules[plan->n_rules];
	if (sbx_strlcpy(r->path, sizeof(r->path), path) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "landlock plan: %s: path too long",
				     path);
	r->rights = rights;
	r->optional = optional;
	plan->n_rules++;
	return 0;
}

/* READ|X for read, WRITE|REFER for write: REFER only inside writable trees,
 * so `mv` across directories works there and nowhere else. */
static int plan_add_tree(struct sbx_landlock_plan *plan, const char *path,
			 enum sbx_access read, enum sbx_access write,
			 unsigned exec_right, struct sbx_error *err)
{
	unsigned rights = 0;

	if (read == SBX_ACCESS_ALLOW)
		rights |= SBX_FS_READ | exec_right;
	if (write == SBX_ACCESS_ALLOW)
		rights |= SBX_FS_WRITE | SBX_FS_REFER;
	return plan_add(plan, path, rights, false, err);
}

/* Append "item" to a ", "-separated list; a full buffer ends in "...". */
static void list_append(char *buf, size_t size, const char *item);

/*
 * Resolve every path of the plan here, in the caller's user namespace,
 * where a root-owned symlink (/lib64 -> usr/lib64, /usr/bin/cc ->
 * /etc/alternatives/cc) can be told from one an agent planted: inside the
 * session's user namespace root shows as the overflow uid. Rules that then
 * name the same file merge. A missing path stays as written (the apply
 * step skips or refuses it); an untrusted symlink drops an optional rule
 * (noted) and refuses a mandatory rule or a deny path.
 */
static int resolve_plan_paths(struct sbx_landlock_plan *plan, struct sbx_error *err)
{
	char real[SBX_PATH_MAX];
	size_t i, j, kept = 0;
	int r;

	for (i = 0; i < plan->n_deny; i++) {
		r = sbx_path_resolve_trusted(plan->deny[i], real, sizeof(real), err);
		if (r == -ENOENT) {
			sbx_error_clear(err);
			continue;
		}
		if (r)
			return r;
		memcpy(plan->deny[i], real, strlen(real) + 1);
	}
	for (i = 0; i < plan->n_rules; i++) {
		struct sbx_landlock_rule *rule = &plan->rules[i];

		r = sbx_path_resolve_trusted(rule->path, real, sizeof(real), err);
		if (r == -ENOENT) {
			sbx_error_clear(err);
		} else if (r == -ELOOP && rule->optional) {
			sbx_error_clear(err);
			list_append(plan->skipped, sizeof(plan->skipped), rule->path);
			continue;
		} else if (r) {
			return r;
		} else {
			memcpy(rule->path, real, strlen(real) + 1);
		}
		for (j = 0; j < kept; j++) {
			if (strcmp(plan->rules[j].path, rule->path) == 0) {
				plan->rules[j].rights |= rule->rights;
				plan->rules[j].optional = plan->rules[j].optional && rule->optional;
				break;
			}
		}
		if (j == kept)
			plan->rules[kept++] = *rule;
	}
	plan->n_rules = kept;
	return 0;
}

static const struct sbx_list_field landlock_plan_lists[] = {
	SBX_LIST_FIELD(struct sbx_landlock_plan, rules, n_rules),
	SBX_LIST_FIELD(struct sbx_landlock_plan, deny, n_deny),
};

/* Long on purpose: the rule list in the order it is documented, one short
 * block per kind of rule. */
int sbx_landlock_plan_build(const struct sbx_profile *p, const struct sbx_session *s,
			    const struct sbx_decision *d, struct sbx_landlock_plan *plan,
			    struct sbx_error *err)
{
	struct sbx_landlock_plan *out;
	unsigned exec_right;
	bool gated;
	size_t i;
	int r;

	if (p->n_roots > SBX_MAX_ROOTS || p->n_deny_read > SBX_MAX_DENY ||
	    p->n_gate > SBX_MAX_GATE)
		return sbx_error_set(err, EINVAL, "landlock plan: profile lists out of range");
	/* Built aside and copied: outputs only on success. */
	out = malloc(sizeof(*out));
	if (!out)
		return sbx_error_set(err, ENOMEM, "landlock plan: out of memory");
	sbx_clear_used(out, sizeof(*out), landlock_plan_lists, ARRAY_SIZE(landlock_plan_lists));

	gated = p->command != SBX_ACCESS_ALLOW;
	exec_right = gated ? 0 : SBX_FS_EXEC;

	if (p->host_read == SBX_ACCESS_ALLOW) {
		if ((r = plan_add(out, "/", SBX_FS_READ | exec_right, false, err)) != 0)
			goto out;
	} else {
		for (i = 0; i < ARRAY_SIZE(runtime_trees); i++)
			if ((r = plan_add(out, runtime_trees[i],
					  SBX_FS_READ | exec_right, true, err)) != 0)
				goto out;
		for (i = 0; i < ARRAY_SIZE(runtime_files); i++)
			if ((r = plan_add(out, runtime_files[i], SBX_FS_READ,
					  true, err)) != 0)
				goto out;
		if ((r = plan_add(out, "/proc", SBX_FS_READ, false, err)) != 0)
			goto out;
	}
	if (p->host_write == SBX_ACCESS_ALLOW &&
	    (r = plan_add(out, "/", SBX_FS_WRITE | SBX_FS_REFER, false, err)) != 0)
		goto out;

	if (gated) {
		/* EXECUTE needs READ_FILE too: execve opens the file for
		 * reading (do_open_execat) and Landlock checks both. */
		for (i = 0; i < p->n_gate; i++)
			if ((r = plan_add(out, p->gate_allow[i],
					  SBX_FS_READ | SBX_FS_EXEC, false, err)) != 0)
				goto out;
		for (i = 0; i < ARRAY_SIZE(dynamic_loaders); i++)
			if ((r = plan_add(out, dynamic_loaders[i],
					  SBX_FS_READ | SBX_FS_EXEC, true, err)) != 0)
				goto out;
	}

	if (s->workspace[0] &&
	    (r = plan_add_tree(out, s->workspace, p->workspace_read,
			       p->workspace_write, exec_right, err)) != 0)
		goto out;
	/* A root inside a secret is not granted: the secret wins (the mount
	 * view leaves it under the mask, mounts.c). */
	for (i = 0; i < p->n_roots; i++)
		if (!sbx_profile_in_secret(p, p->roots[i].path) &&
		    (r = plan_add_tree(out, p->roots[i].path, p->roots[i].read,
				       p->roots[i].write, exec_right, err)) != 0)
			goto out;

	if (s->home[0] &&
	    (r = plan_add(out, s->home, SBX_FS_READ | SBX_FS_WRITE |
			  SBX_FS_REFER | exec_right, d->home_rule_optional, err)) != 0)
		goto out;
	if ((r = plan_add(out, "/tmp", SBX_FS_READ | SBX_FS_WRITE | SBX_FS_REFER |
			  exec_right, true, err)) != 0 ||
	    (r = plan_add(out, "/dev/shm", SBX_FS_READ | SBX_FS_WRITE |
			  SBX_FS_REFER | exec_right, true, err)) != 0)
		goto out;

	for (i = 0; i < ARRAY_SIZE(data_devices); i++)
		if ((r = plan_add(out, data_devices[i], SBX_FS_READ | SBX_FS_WRITE,
				  false, err)) != 0)
			goto out;
	for (i = 0; i < ARRAY_SIZE(tty_devices); i++)
		if ((r = plan_add(out, tty_devices[i], SBX_FS_READ | SBX_FS_WRITE |
				  SBX_FS_IOCTL_DEV, true, err)) != 0)
			goto out;

	for (i = 0; i < p->n_deny_read; i++) {
		if (!sbx_path_is_canonical(p->deny_read[i])) {
			r = sbx_error_set(err, EINVAL,
					  "landlock plan: deny_read %s: path is not absolute and canonical",
					  p->deny_read[i]);
			goto out;
		}
		/* Holes only where Landlock is what keeps secrets out. */
		if (d->deny_read != SBX_DENY_READ_LANDLOCK)
			continue;
		if ((r = sbx_strlcpy(out->deny[out->n_deny], sizeof(out->deny[0]),
				     p->deny_read[i])) != 0) {
			r = sbx_error_set(err, ENAMETOOLONG,
					  "landlock plan: deny_read %s: path too long",
					  p->deny_read[i]);
			goto out;
		}
		out->n_deny++;
	}

	/* TCP rules only where no network namespace is the boundary
	 * (decide.c): they have no address, and would cut the sandbox's own
	 * loopback. */
	out->net_deny_tcp = d->landlock_tcp;
	out->scope_signal = true;
	out->scope_abstract_unix = true;
	out->log_new_exec = true;

	r = resolve_plan_paths(out, err);
	if (r)
		goto out;
	sbx_copy_used(plan, out, sizeof(*plan), landlock_plan_lists,
		      ARRAY_SIZE(landlock_plan_lists));
	r = 0;
out:
	free(out);
	return r;
}

/* ---- apply --------------------------------------------------------------- */

#define ACCESS_FS_ABI1                                                         \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |          \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |          \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |      \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |          \
	 LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |          \
	 LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |        \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Rights a non-directory may carry; others make landlock_add_rule EINVAL. */
#define ACCESS_FILE                                                            \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |          \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |          \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* MAKE_CHAR and MAKE_BLOCK are never granted: an agent has no use for
 * device nodes, and writable mounts are nodev anyway. */
#define ACCESS_WRITE                                                           \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |         \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |      \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |           \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |         \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Snapshot expansion of deny holes: cap on rules added, fail closed past it. */
#define EXPAND_MAX_RULES 4096

struct apply_ctx {
	const struct sbx_landlock_plan *plan;
	int ruleset_fd;
	uint64_t handled_fs;
	size_t n_added;
	struct sbx_landlock_result *res;
	struct sbx_error *err;
};

int sbx_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

static uint64_t fs_access_of(unsigned rights)
{
	uint64_t a = 0;

	if (rights & SBX_FS_READ)
		a |= LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	if (rights & SBX_FS_WRITE)
		a |= ACCESS_WRITE;
	if (rights & SBX_FS_EXEC)
		a |= LANDLOCK_ACCESS_FS_EXECUTE;
	if (rights & SBX_FS_REFER)
		a |= LANDLOCK_ACCESS_FS_REFER;
	if (rights & SBX_FS_IOCTL_DEV)
		a |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return a;
}

/* Append "item" to a ", "-separated list; a full buffer ends in "...". */
static void list_append(char *buf, size_t size, const char *item)
{
	size_t len = strlen(buf);
	int n;

	n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", item);
	if (n < 0 || (size_t)n >= size - len) {
		buf[len] = '\0';
		if (len + 4 < size && (len < 3 || strcmp(buf + len - 3, "...") != 0))
			memcpy(buf + len, "...", 4);
	}
}

static int openat2_nosymlinks(const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	/* openat2 is Linux 5.6; Landlock needs 5.13, but be kind to
	 * seccomp-filtered containers that hide it. */
	if (fd < 0 && errno == ENOSYS)
		fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	return (int)fd;
}

/*
 * Open a rule path as O_PATH without traversing any symlink
 * (RESOLVE_NO_SYMLINKS). The plan's paths were resolved by the outer
 * process (sbx_landlock_plan_build), where root-owned links can still be
 * told from others: in the session's user namespace root shows as the
 * overflow uid. A link found here now was swapped in since, or belongs to
 * the sandbox's own view (its /dev/ptmx -> pts/ptmx, covered by the
 * /dev/pts rule): an optional rule is then skipped, a mandatory one fails.
 * *fd_out = -1 with 0 returned means an optional path was skipped (listed in
 * res->skipped).
 */
static int open_rule_path(struct apply_ctx *c, const char *path, bool optional,
			  int *fd_out, struct stat *st_out)
{
	struct stat st;
	int fd, e, r;

	*fd_out = -1;
	fd = openat2_nosymlinks(path);
	if (fd >= 0 && fstat(fd, &st) != 0) {
		r = sbx_error_set(c->err, errno, "landlock rule %s: fstat: %s", path,
				  strerror(errno));
		close(fd);
		return r;
	}
	if (fd >= 0 && S_ISLNK(st.st_mode)) {
		close(fd);
		fd = -1;
		errno = ELOOP;
	}
	if (fd < 0) {
		e = errno;
		if (e != ENOENT && e != ELOOP)
			return sbx_error_set(c->err, e, "landlock rule %s: open: %s", path,
					     strerror(e));
		if (!optional)
			return sbx_error_set(c->err, e, "landlock rule %s: %s (mandatory)", path,
					     e == ELOOP ? "is or passes through a symlink" :
					     "No such file or directory");
		list_append(c->res->skipped, sizeof(c->res->skipped), path);
		return 0;
	}
	*fd_out = fd;
	*st_out = st;
	return 0;
}

static int add_fd_rule(struct apply_ctx *c, int fd, const struct stat *st,
		       uint64_t access, const char *what)
{
	struct landlock_path_beneath_attr attr = { .parent_fd = fd };

	access &= c->handled_fs;
	if (!S_ISDIR(st->st_mode))
		access &= ACCESS_FILE;
	if (access == 0)
		return 0;	/* nothing this ABI can grant here */
	if (c->n_added >= EXPAND_MAX_RULES)
		return sbx_error_set(c->err, E2BIG,
				     "landlock_add_rule(%s): more than %d rules; refusing (fail closed)",
				     what, EXPAND_MAX_RULES);
	attr.allowed_access = access;
	if (syscall(SYS_landlock_add_rule, c->ruleset_fd, LANDLOCK_RULE_PATH_BENEATH,
		    &attr, 0) != 0)
		return sbx_error_set(c->err, errno, "landlock_add_rule(%s): %s", what,
				     strerror(errno));
	c->n_added++;
	return 0;
}

/* 1 when path is a deny path or under one, 2 when it is a strict ancestor
 * of at least one deny path, 0 otherwise. */
static int deny_relation(const struct sbx_landlock_plan *plan, const char *path)
{
	int rel = 0;

	for (size_t i = 0; i < plan->n_deny; i++) {
		if (sbx_path_is_under(path, plan->deny[i]))
			return 1;
		if (sbx_path_is_under(plan->deny[i], path))
			rel = 2;
	}
	return rel;
}

/*
 * dir (an O_PATH fd for dir_path) is a strict ancestor of a deny path:
 * grant `access` on every entry except those at or above a deny path,
 * descend into the latter, and give the directory itself only READ_DIR
 * (names may be listed; contents are not readable).
 *
 * Snapshot semantics: the entries are those present now. An entry created
 * later in one of these intermediate directories gets no access at all, and
 * a renamed sibling keeps its grant (the rule is on the inode). The mount
 * view (mounts.c) additionally masks deny paths when namespaces exist;
 * this expansion is what holds when they do not.
 */
/* Recursion: at most 64 directories deep. NOLINTNEXTLINE(misc-no-recursion) */
static int expand_around_deny(struct apply_ctx *c, int dir, const struct stat *dst,
			      const char *dir_path, uint64_t access, unsigned depth)
{
	struct dirent *de;
	DIR *d = NULL;
	int lfd, r;

	if (depth > 64)
		return sbx_error_set(c->err, ELOOP, "landlock deny expansion %s: too deep",
				     dir_path);
	if (access & LANDLOCK_ACCESS_FS_READ_FILE) {
		r = add_fd_rule(c, dir, dst, LANDLOCK_ACCESS_FS_READ_DIR, dir_path);
		if (r != 0)
			return r;
	}
	lfd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lfd < 0)
		return sbx_error_set(c->err, errno, "landlock deny expansion: open(%s): %s",
				     dir_path, strerror(errno));
	d = fdopendir(lfd);
	if (!d) {
		r = sbx_error_set(c->err, errno, "landlock deny expansion: fdopendir(%s): %s",
				  dir_path, strerror(errno));
		close(lfd);
		return r;
	}
	r = 0;
	for (;;) {
		char child[SBX_PATH_MAX];
		struct stat st;
		int cfd, rel;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				r = sbx_error_set(c->err, errno,
						  "landlock deny expansion: readdir(%s): %s",
						  dir_path, strerror(errno));
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (sbx_snprintf(child, sizeof(child), "%s/%s",
				 strcmp(dir_path, "/") == 0 ? "" : dir_path,
				 de->d_name) != 0) {
			r = sbx_error_set(c->err, ENAMETOOLONG,
					  "landlock deny expansion: %s/%s: path too long",
					  dir_path, de->d_name);
			break;
		}
		rel = deny_relation(c->plan, child);
		if (rel == 1)
			continue;	/* the hole itself */
		cfd = openat(dir, de->d_name, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (cfd < 0) {
			if (errno == ENOENT)
				continue;	/* vanished meanwhile */
			r = sbx_error_set(c->err, errno, "landlock deny expansion: open(%s): %s",
					  child, strerror(errno));
			break;
		}
		if (fstat(cfd, &st) != 0) {
			r = sbx_error_set(c->err, errno, "landlock deny expansion: fstat(%s): %s",
					  child, strerror(errno));
			close(cfd);
			break;
		}
		/* A symlink entry grants nothing: access is decided at its
		 * target's own location. */
		if (S_ISLNK(st.st_mode))
			r = 0;
		else if (rel == 2 && S_ISDIR(st.st_mode))
			r = expand_around_deny(c, cfd, &st, child, access, depth + 1);
		else
			r = add_fd_rule(c, cfd, &st, access, child);
		/* An entry on an internal filesystem (a bound nsfs file, say)
		 * cannot carry a rule (EBADFD): it is left with no access,
		 * which is the closed direction. */
		if (r == -EBADFD) {
			sbx_error_clear(c->err);
			r = 0;
		}
		close(cfd);
		if (r != 0)
			break;
	}
	closedir(d);
	return r;
}

static int add_plan_rule(struct apply_ctx *c, const struct sbx_landlock_rule *rule)
{
	uint64_t access = fs_access_of(rule->rights);
	struct stat st;
	int fd, r, rel;

	rel = deny_relation(c->plan, rule->path);
	if (rel == 1)
		return 0;	/* at or under a hole: dropped */
	r = open_rule_path(c, rule->path, rule->optional, &fd, &st);
	if (r != 0 || fd < 0)
		return r;
	if (rel == 2 && S_ISDIR(st.st_mode))
		r = expand_around_deny(c, fd, &st, rule->path, access, 0);
	else
		r = add_fd_rule(c, fd, &st, access, rule->path);
	close(fd);
	return r;
}

/* What the plan asks for, so that what an ABI lacks can be named. */
static void note_dropped(const struct sbx_landlock_plan *plan, int abi, char *buf,
			 size_t size)
{
	unsigned wanted = 0;

	for (size_t i = 0; i < plan->n_rules; i++)
		wanted |= plan->rules[i].rights;
	buf[0] = '\0';
	switch (abi) {
	case 1:
		if (wanted & SBX_FS_REFER)
			list_append(buf, size,
				    "REFER (ABI 2): ABI 1 always denies cross-directory rename/link (EXDEV)");
		/* fall through */
	case 2:
		list_append(buf, size, "TRUNCATE (ABI 3)");
		/* fall through */
	case 3:
		if (plan->net_deny_tcp)
			list_append(buf, size, "TCP bind/connect (ABI 4)");
		/* fall through */
	case 4:
		list_append(buf, size, "IOCTL_DEV (ABI 5)");
		/* fall through */
	case 5:
		if (plan->scope_signal)
			list_append(buf, size, "scope signal (ABI 6)");
		if (plan->scope_abstract_unix)
			list_append(buf, size, "scope abstract unix socket (ABI 6)");
		/* fall through */
	case 6:
		if (plan->log_new_exec)
			list_append(buf, size, "audit log flags (ABI 7)");
		break;
	default:
		break;
	}
}

int sbx_landlock_apply(const struct sbx_landlock_plan *plan, int abi_limit,
		       struct sbx_landlock_result *res, struct sbx_error *err)
{
	struct sbx_landlock_ruleset_attr attr = { 0 };
	struct sbx_landlock_result out = { 0 };
	struct apply_ctx c = { .plan = plan, .ruleset_fd = -1, .res = &out, .err = err };
	size_t attr_size;
	unsigned flags = 0;
	int abi, r;

	abi = sbx_landlock_abi();
	if (abi_limit > 0 && abi_limit < abi)
		abi = abi_limit;
	if (abi <= 0)
		return sbx_error_set(err, EOPNOTSUPP,
				     "landlock_create_ruleset: Landlock unavailable (kernel without CONFIG_SECURITY_LANDLOCK or landlock not in lsm=)");
	/* Checked before any work: landlock_restrict_self needs it for an
	 * unprivileged caller, and setting it is the caller's documented step. */
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return sbx_error_set(err, EPERM, "landlock_restrict_self: no_new_privs not set");

	/* Best effort by ABI, as in the kernel's samples/landlock/sandboxer.c. */
	attr.handled_access_fs = ACCESS_FS_ABI1;
	attr_size = sizeof(attr.handled_access_fs);
	switch (abi) {
	default:
	case 7:
		if (plan->log_new_exec)
			flags |= LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON;
		/* fall through */
	case 6:
		if (plan->scope_signal)
			attr.scoped |= LANDLOCK_SCOPE_SIGNAL;
		if (plan->scope_abstract_unix)
			attr.scoped |= LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
		attr_size = sizeof(attr);
		/* fall through */
	case 5:
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
		/* fall through */
	case 4:
		if (plan->net_deny_tcp)
			attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
						  LANDLOCK_ACCESS_NET_CONNECT_TCP;
		if (attr_size < offsetof(struct sbx_landlock_ruleset_attr, scoped))
			attr_size = offsetof(struct sbx_landlock_ruleset_attr, scoped);
		/* fall through */
	case 3:
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
		/* fall through */
	case 2:
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
		/* fall through */
	case 1:
		break;
	}
	note_dropped(plan, abi, out.dropped, sizeof(out.dropped));
	memcpy(out.skipped, plan->skipped, sizeof(out.skipped));

	c.handled_fs = attr.handled_access_fs;
	c.ruleset_fd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (c.ruleset_fd < 0)
		return sbx_error_set(err, errno, "landlock_create_ruleset(ABI %d): %s", abi,
				     strerror(errno));

	for (size_t i = 0; i < plan->n_rules; i++)
		if ((r = add_plan_rule(&c, &plan->rules[i])) != 0)
			goto out;

	if (syscall(SYS_landlock_restrict_self, c.ruleset_fd, flags) != 0) {
		r = sbx_error_set(err, errno, "landlock_restrict_self(ABI %d, flags %#x): %s",
				  abi, flags, strerror(errno));
		goto out;
	}
	out.abi = abi;
	out.handled_fs = attr.handled_access_fs;
	out.handled_net = attr.handled_access_net;
	out.scoped = attr.scoped;
	out.n_rules_added = c.n_added;
	*res = out;
	r = 0;
out:
	close(c.ruleset_fd);
	return r;
}
