/* SPDX-License-Identifier: BSD-3-Clause */
/* The session's mount view: describe it (pure), then apply it in init
 * (docs/design.md section 4.3). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define MASK_TMPFS_SIZE "4k"

/* Hidden when host_read is deny: where other people's data usually lives.
 * Landlock enforces host_read too; the mask also hides names (ls /home). */
static const char *const host_private[] = {
	"/home", "/root", "/srv", "/mnt", "/media", "/opt", "/var/lib",
	"/var/mail", "/var/spool", "/var/backups", "/run/user", "/boot",
};

/* ---- describe ------------------------------------------------------------ */

static struct sbx_mount *plan_find(struct sbx_mount_plan *plan, const char *target)
{
	size_t i;

	for (i = 0; i < plan->n; i++)
		if (strcmp(plan->m[i].target, target) == 0)
			return &plan->m[i];
	return NULL;
}

/* First entry for a target wins: callers add in priority order (deny_read,
 * then explicit binds and tmpfs, then the host masks). */
static int plan_add(struct sbx_mount_plan *plan, enum sbx_mount_kind kind,
		    const char *source, const char *target, unsigned flags,
		    uint64_t size, bool optional, struct sbx_error *err)
{
	struct sbx_mount *m;

	if (!sbx_path_is_canonical(target) || strcmp(target, "/") == 0)
		return sbx_error_set(err, EINVAL, "mount plan: target '%s': not a canonical path below /",
				     target);
	if (source && !sbx_path_is_canonical(source))
		return sbx_error_set(err, EINVAL, "mount plan: source '%s': not canonical", source);
	if (plan_find(plan, target))
		return 0;
	if (plan->n >= SBX_MAX_MOUNTS)
		return sbx_error_set(err, E2BIG, "mount plan: more than %d mounts (at %s)",
				     SBX_MAX_MOUNTS, target);
	m = &plan->m[plan->n];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	if (sbx_strlcpy(m->target, sizeof(m->target), target) != 0 ||
	    sbx_strlcpy(m->source, sizeof(m->source), source ? source : "") != 0)
		return sbx_error_set(err, ENAMETOOLONG, "mount plan: %s: path too long", target);
	m->flags = flags;
	m->size = size;
	m->optional = optional;
	plan->n++;
	return 0;
}

/* The role of the entry at target, unless an earlier one gave it another
 * (plan_add keeps the first entry for a target: a home at /tmp stays the
 * home). */
static void plan_role(struct sbx_mount_plan *plan, const char *target, enum sbx_mount_role role)
{
	struct sbx_mount *m = plan_find(plan, target);

	if (m && m->role == SBX_ROLE_OTHER)
		m->role = role;
}

/* What the bind at target must open, when that entry is the bind of
 * source (an earlier entry for the target, a mask, keeps its place). */
static void plan_pin(struct sbx_mount_plan *plan, const char *target, const char *source,
		     const struct sbx_pin *pin)
{
	struct sbx_mount *m = plan_find(plan, target);

	if (m && pin->set && m->kind == SBX_MOUNT_BIND && strcmp(m->source, source) == 0)
		m->pin = *pin;
}

static int plan_add_access(struct sbx_mount_plan *plan, const char *path,
			   enum sbx_access read, enum sbx_access write,
			   unsigned noexec, struct sbx_error *err)
{
	if (write == SBX_ACCESS_ALLOW)
		return plan_add(plan, SBX_MOUNT_BIND, path, path, SBX_MOUNT_RW | noexec,
				0, false, err);
	if (read == SBX_ACCESS_ALLOW)
		return plan_add(plan, SBX_MOUNT_BIND, path, path, 0, 0, false, err);
	return plan_add(plan, SBX_MOUNT_MASK, NULL, path, 0, 0, true, err);
}

/* Is path at or below something the plan explicitly allows (a bind or a
 * tmpfs among the first n entries)? A host mask there would take that
 * access away. */
static bool under_explicit(const struct sbx_mount_plan *plan, size_t n, const char *path)
{
	for (size_t j = 0; j < n; j++)
		if (plan->m[j].kind != SBX_MOUNT_MASK && sbx_path_is_under(path, plan->m[j].target))
			return true;
	return false;
}

/*
 * The gate's executable set. Each gate_allow entry must be root's alone to
 * change: a program the agent could rewrite would run whatever it wrote.
 * The libraries and the interpreter are held to the same rule by the
 * closure itself (lib/elf.c).
 */
static int plan_exec_set(const struct sbx_profile *p, struct sbx_mount_plan *plan,
			 struct sbx_error *err)
{
	struct sbx_error why = { 0 };
	char real[SBX_PATH_MAX];
	size_t i;
	int fd, r;

	plan->host_noexec = true;
	plan->exec = calloc(1, sizeof(*plan->exec));
	if (!plan->exec)
		return sbx_error_set(err, ENOMEM, "gate: out of memory");
	sbx_exec_set_init(plan->exec);
	for (i = 0; i < p->n_gate; i++) {
		struct stat st;

		r = sbx_path_resolve_trusted(p->gate_allow[i], real, sizeof(real), &why);
		if (r)
			return sbx_error_set(err, -r, "gate_allow %s: %s", p->gate_allow[i], why.msg);
		if (stat(real, &st) == 0 && S_ISDIR(st.st_mode))
			r = sbx_dir_open_walk(real, true, 0, &fd, &why);
		else
			r = sbx_trust_open_file(real, true, UINT64_MAX, &fd, &why);
		if (r)
			return sbx_error_set(err, -r,
					     "gate_allow %s: %s (the agent must not be able to change "
					     "what the gate lets it run)", p->gate_allow[i], why.msg);
		close(fd);
		r = sbx_exec_set_add(plan->exec, real, &why);
		if (r)
			return sbx_error_set(err, -r, "gate_allow %s: %s", p->gate_allow[i], why.msg);
	}
	return 0;
}

/* A mount that hides or narrows the tree it sits in: anything but a
 * writable bind of a path onto itself (a mask, a read-only bind, a tmpfs
 * such as an ephemeral home over the passwd one, a home bound from the
 * state directory). */
static bool narrows(const struct sbx_mount *m)
{
	return m->kind != SBX_MOUNT_PIN &&
	       !(m->kind == SBX_MOUNT_BIND && (m->flags & SBX_MOUNT_RW) &&
		 strcmp(m->source, m->target) == 0);
}

/* The entry (among the first n) whose mount path lies on in the view:
 * the deepest target at or above it; NULL for the host's tree. */
static const struct sbx_mount *plan_covering(const struct sbx_mount_plan *plan, size_t n,
					     const char *path)
{
	const struct sbx_mount *best = NULL;
	size_t best_len = 0;

	for (size_t j = 0; j < n; j++) {
		size_t len = strlen(plan->m[j].target);

		if (len > best_len && sbx_path_is_under(path, plan->m[j].target)) {
			best = &plan->m[j];
			best_len = len;
		}
	}
	return best;
}

/*
 * A mount covers a path, and every session finds its target by path
 * again. Where a secret's mask, or a narrower root, lies below a
 * directory the agent may rename (one in a tree it writes: the
 * workspace, a writable root, a bound home, or the host when host_write
 * is allow), one session could move the real tree aside (mv config
 * config.old) and leave an empty one at the path: the next session's
 * mask would cover the decoy and its Landlock rules, which leave the
 * secret to the mask, would let the real one be read. A mountpoint
 * cannot be renamed (EBUSY), so each such directory between the
 * writable tree's top and the narrower mount is pinned: bound onto
 * itself. The mount's own target is a mountpoint already, and so is
 * the top of a bind (in the view; outside it no process of the agent's
 * runs).
 */
static int plan_pins(struct sbx_mount_plan *plan, struct sbx_error *err)
{
	const size_t n = plan->n;	/* pins narrow nothing */

	for (size_t i = 0; i < n; i++) {
		char dir[SBX_PATH_MAX];
		char *slash;

		if (!narrows(&plan->m[i]))
			continue;
		if (sbx_strlcpy(dir, sizeof(dir), plan->m[i].target) != 0)
			return sbx_error_set(err, ENAMETOOLONG, "mount plan: %s: path too long",
					     plan->m[i].target);
		while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
			const struct sbx_mount *on;
			int r;

			*slash = '\0';
			on = plan_covering(plan, n, dir);
			if (on && strcmp(on->target, dir) == 0)
				continue;	/* a mountpoint of its own */
			if (on ? on->kind != SBX_MOUNT_BIND || !(on->flags & SBX_MOUNT_RW) :
				 plan->host_readonly)
				continue;	/* read-only or fresh: nothing to move */
			/* The view's own /dev and /proc, not the host's. */
			if (!on && (sbx_path_is_under(dir, "/dev") || sbx_path_is_under(dir, "/proc")))
				continue;
			r = plan_add(plan, SBX_MOUNT_PIN, NULL, dir, 0, 0, true, err);
			if (r == -E2BIG)
				return sbx_error_set(err, E2BIG, "mount plan: more than %d mounts with "
						     "the directories pinned above %s (one for each "
						     "directory between a writable tree's top and it)",
						     SBX_MAX_MOUNTS, plan->m[i].target);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/*
 * May uid rename the entry whose stat is child inside directory parent?
 * Write on the parent (its owner may chmod it; group or other write bits,
 * taken as the agent's whatever its groups; an ACL, which access sees),
 * and in a sticky directory only its own entries. Conservative: a pin too
 * many costs a mount, one too few a secret.
 */
static bool may_rename_in(const char *parent, const struct stat *pst, const struct stat *cst,
			  uid_t uid)
{
	bool writable = pst->st_uid == uid || (pst->st_mode & 0022) ||
			(getuid() == uid && access(parent, W_OK) == 0);

	if (!writable)
		return false;
	return !(pst->st_mode & S_ISVTX) || pst->st_uid == uid || cst->st_uid == uid;
}

/*
 * A secret's mask is found by path again in every session, so no
 * directory above it may move. plan_pins keeps those inside the plan's
 * writable trees; but a directory the agent may rename in is writable
 * through any other name of it too (a workspace that is a bind of the
 * secret's parent tree: an attacker review moved the secret's parent from
 * there, and the next session masked an empty decoy and said verified).
 * Each directory above a secret whose parent the agent may rename in is
 * pinned, whatever path reaches it: a mountpoint cannot be renamed
 * through any name (EBUSY).
 */
static int plan_secret_pins(struct sbx_mount_plan *plan, const struct sbx_profile *p, uid_t uid,
			    struct sbx_error *err)
{
	/* Root is never an agent account, and would count every directory
	 * (the plan's unit tests build for a session of uid 0). */
	if (uid == 0)
		return 0;
	for (size_t i = 0; i < p->n_deny_read; i++) {
		char dir[SBX_PATH_MAX], parent[SBX_PATH_MAX];
		char *slash;

		if (sbx_strlcpy(dir, sizeof(dir), p->deny_read[i]) != 0)
			continue;
		while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
			struct stat pst, cst;
			int r;

			*slash = '\0';
			snprintf(parent, sizeof(parent), "%.*s",
				 strrchr(dir, '/') == dir ? 1 : (int)(strrchr(dir, '/') - dir), dir);
			if (sbx_path_is_under(dir, "/dev") || sbx_path_is_under(dir, "/proc") ||
			    lstat(dir, &cst) != 0 || !S_ISDIR(cst.st_mode) ||
			    stat(parent, &pst) != 0 || !may_rename_in(parent, &pst, &cst, uid))
				continue;
			r = plan_add(plan, SBX_MOUNT_PIN, NULL, dir, 0, 0, true, err);
			if (r == -E2BIG)
				return sbx_error_set(err, E2BIG, "mount plan: more than %d mounts with "
						     "the directories pinned above %s (one for each "
						     "directory whose parent the agent may rename in)",
						     SBX_MAX_MOUNTS, p->deny_read[i]);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static const struct sbx_list_field mount_plan_lists[] = {
	SBX_LIST_FIELD(struct sbx_mount_plan, m, n),
};

/* Long on purpose: the mount list in the order it is documented, one short
 * block per kind of mount. */
int sbx_mount_plan_build(const struct sbx_profile *p, const struct sbx_session *s,
			 struct sbx_mount_plan *plan, struct sbx_error *err)
{
	struct sbx_mount_plan *tmp;
	uint64_t tmp_size = SBX_DEFAULT_TMP_SIZE;
	unsigned noexec;
	size_t i, j, explicit_end;
	int r;

	if (!p || !s || !plan)
		return sbx_error_set(err, EINVAL, "sbx_mount_plan_build: missing argument");
	tmp = calloc(1, sizeof(*tmp));
	if (!tmp)
		return sbx_error_set(err, ENOMEM, "sbx_mount_plan_build: out of memory");
	if ((p->limits.set_mask & (1u << SBX_LIMIT_TMP_SIZE)) &&
	    p->limits.value[SBX_LIMIT_TMP_SIZE] > 0)
		tmp_size = p->limits.value[SBX_LIMIT_TMP_SIZE];
	/* Gate on: nothing the agent can write may be executed (ld.so would
	 * otherwise run any file it wrote, docs/design.md section 6). */
	noexec = p->command == SBX_ACCESS_GATED ? SBX_MOUNT_NOEXEC : 0;
	tmp->host_readonly = p->host_write != SBX_ACCESS_ALLOW;
	tmp->fresh_proc = true;
	tmp->minimal_dev = true;

	for (i = 0; i < p->n_deny_read; i++) {
		r = plan_add(tmp, SBX_MOUNT_MASK, NULL, p->deny_read[i], 0, 0, true, err);
		if (r < 0)
			goto out;
		plan_find(tmp, p->deny_read[i])->secret = true;
	}
	if (s->workspace[0]) {
		r = plan_add_access(tmp, s->workspace, p->workspace_read,
				    p->workspace_write, noexec, err);
		if (r < 0)
			goto out;
		plan_pin(tmp, s->workspace, s->workspace, &s->workspace_pin);
	}
	if (s->home[0]) {
		if (s->home_source[0])
			r = plan_add(tmp, SBX_MOUNT_BIND, s->home_source, s->home,
				     SBX_MOUNT_RW | noexec, 0, false, err);
		else
			r = plan_add(tmp, SBX_MOUNT_TMPFS, NULL, s->home,
				     SBX_MOUNT_RW | noexec, tmp_size, false, err);
		if (r < 0)
			goto out;
		plan_role(tmp, s->home, SBX_ROLE_HOME);
		if (s->home_source[0])
			plan_pin(tmp, s->home, s->home_source, &s->home_source_pin);
	}
	if (s->tmp_source[0]) {
		r = plan_add(tmp, SBX_MOUNT_BIND, s->tmp_source, "/tmp", SBX_MOUNT_RW | noexec,
			     0, false, err);
		if (r == 0)
			plan_pin(tmp, "/tmp", s->tmp_source, &s->tmp_source_pin);
	} else
		r = plan_add(tmp, SBX_MOUNT_TMPFS, NULL, "/tmp", SBX_MOUNT_RW | noexec,
			     tmp_size, false, err);
	if (r == 0)
		r = plan_add(tmp, SBX_MOUNT_TMPFS, NULL, "/dev/shm", SBX_MOUNT_RW | noexec,
			     tmp_size, false, err);
	if (r < 0)
		goto out;
	plan_role(tmp, "/tmp", SBX_ROLE_SCRATCH);
	plan_role(tmp, "/dev/shm", SBX_ROLE_SCRATCH);
	for (i = 0; i < p->n_roots; i++) {
		/* A root inside a secret stays under its mask: no bind of it
		 * shows what the secret holds. */
		if (sbx_profile_in_secret(p, p->roots[i].path))
			continue;
		r = plan_add_access(tmp, p->roots[i].path, p->roots[i].read,
				    p->roots[i].write, noexec, err);
		if (r < 0)
			goto out;
	}
	explicit_end = tmp->n;
	/*
	 * /run holds the host's pathname unix sockets (D-Bus, docker.sock,
	 * systemd, nscd). Landlock below ABI 9 does not control connect()
	 * to them and a read-only mount does not either: only hiding them
	 * does (docs/design.md section 4.3). Profiles with network allow get the resolver
	 * directory back so /etc/resolv.conf keeps working.
	 */
	if (!under_explicit(tmp, explicit_end, "/run")) {
		r = plan_add(tmp, SBX_MOUNT_MASK, NULL, "/run", 0, 0, true, err);
		if (r == 0 && p->network == SBX_ACCESS_ALLOW)
			r = plan_add(tmp, SBX_MOUNT_BIND, "/run/systemd/resolve",
				     "/run/systemd/resolve", 0, 0, true, err);
		if (r < 0)
			goto out;
	}
	if (p->host_read == SBX_ACCESS_DENY) {
		for (i = 0; i < ARRAY_SIZE(host_private); i++) {
			/* A host mask at or below something the profile allows
			 * would take that access away: leave it to Landlock. A
			 * mask above an allowed path is fine: apply creates
			 * the mountpoints inside the mask's tmpfs. */
			if (under_explicit(tmp, explicit_end, host_private[i]))
				continue;
			r = plan_add(tmp, SBX_MOUNT_MASK, NULL, host_private[i], 0, 0,
				     true, err);
			if (r < 0)
				goto out;
		}
	}
	if (p->command == SBX_ACCESS_GATED) {
		r = plan_exec_set(p, tmp, err);
		if (r < 0)
			goto out;
	}
	r = plan_secret_pins(tmp, p, s->uid, err);
	if (r < 0)
		goto out;
	r = plan_pins(tmp, err);
	if (r < 0)
		goto out;
	/* Parents before children: strcmp order puts "/a" before "/a/b" (a
	 * prefix sorts first) and keeps the relative order of the rest. */
	for (i = 1; i < tmp->n; i++) {
		for (j = i; j > 0 && strcmp(tmp->m[j - 1].target, tmp->m[j].target) > 0; j--) {
			struct sbx_mount swap = tmp->m[j];

			tmp->m[j] = tmp->m[j - 1];
			tmp->m[j - 1] = swap;
		}
	}
	sbx_copy_used(plan, tmp, sizeof(*plan), mount_plan_lists, ARRAY_SIZE(mount_plan_lists));
	tmp->exec = NULL;
	r = 0;
out:
	sbx_mount_plan_free(tmp);
	free(tmp);
	return r;
}

void sbx_mount_plan_free(struct sbx_mount_plan *plan)
{
	if (!plan || !plan->exec)
		return;
	sbx_exec_set_free(plan->exec);
	free(plan->exec);
	plan->exec = NULL;
}

/* ---- apply --------------------------------------------------------------- */

struct dev_node {
	const char *name;
	int fd;
};

struct apply_state {
	const struct sbx_mount_plan *plan;
	int src_fd[SBX_MAX_MOUNTS];
	int done_fd[SBX_MAX_MOUNTS];	/* the mounted tree, kept for the final ro pass */
	bool applied[SBX_MAX_MOUNTS];
	bool ours_tmpfs[SBX_MAX_MOUNTS];	/* can hold new mountpoints */
	int devnull_fd;
	int dev_mnt_fd;
	struct dev_node dev[6];
	char skipped[256];
	unsigned n_masks, n_binds, n_tmpfs, n_exec, n_pins;
	int *exec_fd;		/* plan->exec->paths, opened before anything is covered */
};

static void note_skip(struct apply_state *st, const char *path, const char *why)
{
	size_t used = strlen(st->skipped);

	snprintf(st->skipped + used, sizeof(st->skipped) - used, "%s%s (%s)",
		 used ? ", " : "", path, why);
}

/* Resolve without following any symlink: a symlink the agent planted in
 * a path it can write must not redirect a bind or a mask. */
static int open_nofollow(int dirfd, const char *path, int flags)
{
	struct open_how how;
	int fd;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(dirfd, path, flags | O_CLOEXEC | O_NOFOLLOW);
	return fd;
}

static int set_attr(int fd, bool recursive, uint64_t set, uint64_t clr)
{
	struct mount_attr a;

	memset(&a, 0, sizeof(a));
	a.attr_set = set;
	a.attr_clr = clr;
	return mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0),
			     &a, sizeof(a));
}

/* Only a tmpfs we mounted ourselves may get new mountpoints: we never
 * create anything on a host filesystem. */
static bool target_creatable(const struct apply_state *st, size_t idx, size_t *anc)
{
	size_t i, best_len = 0;
	bool ok = false;

	for (i = 0; i < st->plan->n; i++) {
		const char *t = st->plan->m[i].target;
		size_t len = strlen(t);

		if (i == idx || !st->applied[i] || len <= best_len ||
		    !sbx_path_is_under(st->plan->m[idx].target, t) ||
		    strcmp(t, st->plan->m[idx].target) == 0)
			continue;
		best_len = len;
		ok = st->ours_tmpfs[i];
		*anc = i;
	}
	if (best_len == 0 && sbx_path_is_under(st->plan->m[idx].target, "/dev") &&
	    st->dev_mnt_fd >= 0)
		ok = true;	/* inside our minimal /dev */
	return ok;
}

/* mkdir -p below the nearest mount of ours; the last component becomes a
 * directory or an empty file. Walks with O_NOFOLLOW from "/". */
static int create_target(const char *target, bool dir, struct sbx_error *err)
{
	char buf[SBX_PATH_MAX];
	char *comp, *save = NULL, *next;
	int dfd, fd, r = 0;

	if (sbx_strlcpy(buf, sizeof(buf), target) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "mount(%s): path too long", target);
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return sbx_error_set(err, errno, "open(/): %s", strerror(errno));
	comp = strtok_r(buf + 1, "/", &save);
	while (comp) {
		next = strtok_r(NULL, "/", &save);
		if (!next && !dir) {
			fd = openat(dfd, comp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0) {
				r = sbx_error_set(err, errno, "create mountpoint %s: %s",
						  target, strerror(errno));
				goto out;
			}
			close(fd);
			break;
		}
		if (mkdirat(dfd, comp, 0755) != 0 && errno != EEXIST) {
			r = sbx_error_set(err, errno, "mkdir mountpoint %s: %s", target,
					  strerror(errno));
			goto out;
		}
		fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			r = sbx_error_set(err, errno, "open mountpoint %s: %s", target,
					  strerror(errno));
			goto out;
		}
		close(dfd);
		dfd = fd;
		comp = next;
	}
out:
	close(dfd);
	return r;
}

static int attach(int tree, int target_fd, const char *target, struct sbx_error *err)
{
	if (move_mount(tree, "", target_fd, "",
		       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
		return sbx_error_set(err, errno, "move_mount(%s): %s", target, strerror(errno));
	return 0;
}

static int new_tmpfs(const char *target, const char *size, const char *mode,
		     uint64_t attrs, struct sbx_error *err)
{
	int fsfd, mfd;

	fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return sbx_error_set(err, errno, "fsopen(tmpfs) for %s: %s", target,
				     strerror(errno));
	if (fsconfig(fsfd, FSCONFIG_SET_STRING, "size", size, 0) != 0 ||
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", mode, 0) != 0 ||
	    fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) {
		int e = errno;

		close(fsfd);
		return sbx_error_set(err, e, "fsconfig(tmpfs size=%s mode=%s) for %s: %s",
				     size, mode, target, strerror(e));
	}
	mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, (unsigned)attrs);
	if (mfd < 0) {
		int e = errno;

		close(fsfd);
		return sbx_error_set(err, e, "fsmount(tmpfs) for %s: %s", target, strerror(e));
	}
	close(fsfd);
	return mfd;
}

static int clone_tree(int src_fd, const char *what, struct sbx_error *err)
{
	int tree = open_tree(src_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
					 AT_EMPTY_PATH | AT_RECURSIVE);

	if (tree < 0)
		return sbx_error_set(err, errno, "open_tree(%s): %s", what, strerror(errno));
	return tree;
}

static int setup_dev(struct apply_state *st, struct sbx_error *err)
{
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" }, { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
		{ "ptmx", "pts/ptmx" },
	};
	char path[64];
	size_t i;
	int fd, tree, r;

	fd = open_nofollow(AT_FDCWD, "/dev", O_PATH | O_DIRECTORY);
	if (fd < 0)
		return sbx_error_set(err, errno, "open(/dev): %s", strerror(errno));
	/* nodev is fine on the tmpfs itself: each device is its own bind
	 * mount of the host node (a userns cannot mknod). */
	st->dev_mnt_fd = new_tmpfs("/dev", "1m", "0755", MOUNT_ATTR_NOSUID |
				   MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	if (st->dev_mnt_fd < 0) {
		r = st->dev_mnt_fd;
		st->dev_mnt_fd = -1;
		close(fd);
		return r;
	}
	r = attach(st->dev_mnt_fd, fd, "/dev", err);
	close(fd);
	if (r < 0)
		return r;
	for (i = 0; i < ARRAY_SIZE(st->dev); i++) {
		if (st->dev[i].fd < 0)
			continue;
		if (sbx_snprintf(path, sizeof(path), "/dev/%s", st->dev[i].name) != 0)
			return sbx_error_set(err, ENAMETOOLONG, "/dev/%s", st->dev[i].name);
		r = create_target(path, false, err);
		if (r < 0)
			return r;
		tree = clone_tree(st->dev[i].fd, path, err);
		if (tree < 0)
			return tree;
		if (set_attr(tree, true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0) != 0) {
			r = sbx_error_set(err, errno, "mount_setattr(%s): %s", path,
					  strerror(errno));
			close(tree);
			return r;
		}
		fd = open_nofollow(AT_FDCWD, path, O_PATH);
		if (fd < 0) {
			r = sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
			close(tree);
			return r;
		}
		r = attach(tree, fd, path, err);
		close(fd);
		close(tree);
		if (r < 0)
			return r;
	}
	for (i = 0; i < ARRAY_SIZE(links); i++) {
		if (sbx_snprintf(path, sizeof(path), "/dev/%s", links[i][0]) != 0 ||
		    symlink(links[i][1], path) != 0)
			return sbx_error_set(err, errno, "symlink(/dev/%s): %s", links[i][0],
					     strerror(errno));
	}
	if (mkdir("/dev/pts", 0755) != 0 || mkdir("/dev/shm", 01777) != 0)
		return sbx_error_set(err, errno, "mkdir(/dev/pts, /dev/shm): %s",
				     strerror(errno));
	/* A private devpts instance: the host's ptys are not reachable.
	 * gid=5 is left out: the tty group is not mapped in our userns. */
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=620") != 0)
		return sbx_error_set(err, errno, "mount(devpts, /dev/pts): %s",
				     strerror(errno));
	return 0;
}

/* A pin: the directory as the view has it now (the writable tree's
 * mount and any host mount below), cloned and put back on itself. A
 * directory that is not there holds nothing the plan narrows. */
static int apply_pin(struct apply_state *st, size_t i, struct sbx_error *err)
{
	const struct sbx_mount *m = &st->plan->m[i];
	int tfd, tree, r;

	tfd = open_nofollow(AT_FDCWD, m->target, O_PATH | O_DIRECTORY);
	if (tfd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return sbx_error_set(err, errno, "pin %s: %s", m->target,
				     errno == ELOOP ? "path has a symlink" : strerror(errno));
	}
	tree = clone_tree(tfd, m->target, err);
	if (tree < 0) {
		close(tfd);
		return tree;
	}
	r = attach(tree, tfd, m->target, err);
	close(tfd);
	if (r < 0) {
		close(tree);
		return r;
	}
	st->applied[i] = true;
	st->done_fd[i] = tree;
	st->n_pins++;
	return 0;
}

/* Long on purpose: one mount from open to attributes; each kind's syscalls
 * must run in this order on the same fds. */
static int apply_one(struct apply_state *st, size_t i, struct sbx_error *err)
{
	const struct sbx_mount *m = &st->plan->m[i];
	bool rw = m->flags & SBX_MOUNT_RW;
	bool is_dir = true;
	char size[32];
	size_t anc = 0;
	struct stat sb;
	uint64_t attrs;
	int tfd = -1, tree = -1, r;

	if (m->kind == SBX_MOUNT_PIN)
		return apply_pin(st, i, err);
	if (m->kind == SBX_MOUNT_BIND) {
		if (st->src_fd[i] < 0)
			return 0;	/* optional and missing, noted */
		if (fstat(st->src_fd[i], &sb) != 0)
			return sbx_error_set(err, errno, "fstat(%s): %s", m->source,
					     strerror(errno));
		is_dir = S_ISDIR(sb.st_mode);
	}
	tfd = open_nofollow(AT_FDCWD, m->target, O_PATH);
	if (tfd < 0 && errno == ENOENT && m->kind != SBX_MOUNT_MASK &&
	    target_creatable(st, i, &anc)) {
		r = create_target(m->target, is_dir, err);
		if (r < 0)
			return r;
		tfd = open_nofollow(AT_FDCWD, m->target, O_PATH);
	}
	if (tfd < 0) {
		int e = errno;

		/* An optional mask the agent cannot even reach (EACCES on a
		 * parent it may not search) hides nothing it could read,
		 * unless that parent is the agent's: it may chmod it back
		 * (and may have closed it only for this moment), so the
		 * secret would be read unmasked. Root (the PAM stage) is
		 * not refused a search by file permissions. */
		if (e == EACCES && m->secret && getuid() != 0 &&
		    sbx_path_owned_above(m->target, getuid()))
			return sbx_error_set(err, EACCES, "deny_read %s: not reachable to mask, "
					     "behind a directory the agent owns and may "
					     "open again", m->target);
		/* A secret behind a symlink is not skipped: the Landlock
		 * rules leave masked secrets to this mask. */
		if (m->optional && (e == ENOENT || e == EACCES || (e == ELOOP && !m->secret))) {
			note_skip(st, m->target, e == ENOENT ? "missing" :
				  e == ELOOP ? "symlink" : "unreachable");
			return 0;
		}
		return sbx_error_set(err, e, "open mountpoint %s: %s", m->target,
				     e == ELOOP ? "path has a symlink" : strerror(e));
	}
	if (m->kind == SBX_MOUNT_MASK) {
		if (fstat(tfd, &sb) != 0) {
			r = sbx_error_set(err, errno, "fstat(%s): %s", m->target, strerror(errno));
			goto out;
		}
		is_dir = S_ISDIR(sb.st_mode);
	}

	switch (m->kind) {
	case SBX_MOUNT_TMPFS:
		attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		if (m->flags & SBX_MOUNT_NOEXEC)
			attrs |= MOUNT_ATTR_NOEXEC;
		if (!rw)
			attrs |= MOUNT_ATTR_RDONLY;
		r = sbx_snprintf(size, sizeof(size), "%" PRIu64,
				 (uint64_t)(m->size ? m->size : SBX_DEFAULT_TMP_SIZE));
		if (r < 0)
			goto out;
		/* Shared scratch is sticky like the host's; a home is private. */
		tree = new_tmpfs(m->target, size, m->role == SBX_ROLE_SCRATCH ? "01777" : "0700",
				 attrs, err);
		if (tree < 0) {
			r = tree;
			tree = -1;
			goto out;
		}
		st->ours_tmpfs[i] = true;
		st->n_tmpfs++;
		break;
	case SBX_MOUNT_MASK:
		if (is_dir) {
			/* rw for now so later mountpoints can be made in it;
			 * the final pass makes it read-only. */
			tree = new_tmpfs(m->target, MASK_TMPFS_SIZE, "0555",
					 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					 MOUNT_ATTR_NOEXEC, err);
			if (tree < 0) {
				r = tree;
				tree = -1;
				goto out;
			}
			st->ours_tmpfs[i] = true;
		} else {
			/* nodev would turn reads into EACCES; the secret must
			 * read as empty, like bwrap's --ro-bind /dev/null. */
			tree = clone_tree(st->devnull_fd, "/dev/null", err);
			if (tree < 0) {
				r = tree;
				tree = -1;
				goto out;
			}
			if (set_attr(tree, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
				     MOUNT_ATTR_NOEXEC, 0) != 0) {
				r = sbx_error_set(err, errno, "mount_setattr(mask %s): %s",
						  m->target, strerror(errno));
				goto out;
			}
		}
		st->n_masks++;
		break;
	case SBX_MOUNT_BIND:
		if (fstat(tfd, &sb) != 0 || S_ISDIR(sb.st_mode) != is_dir) {
			r = sbx_error_set(err, ENOTDIR, "bind %s -> %s: file/directory mismatch",
					  m->source, m->target);
			goto out;
		}
		tree = clone_tree(st->src_fd[i], m->source, err);
		if (tree < 0) {
			r = tree;
			tree = -1;
			goto out;
		}
		attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		if (m->flags & SBX_MOUNT_NOEXEC)
			attrs |= MOUNT_ATTR_NOEXEC;
		if (!rw)
			attrs |= MOUNT_ATTR_RDONLY;
		if (set_attr(tree, true, attrs, 0) != 0 ||
		    /* The host tree was made read-only above; the clone took
		     * that over. Our own copy is not locked, so clear it, but
		     * only on the top mount: a host submount locked ro stays so. */
		    (rw && set_attr(tree, false, 0, MOUNT_ATTR_RDONLY) != 0)) {
			r = sbx_error_set(err, errno, "mount_setattr(%s, %s): %s", m->target,
					  rw ? "rw" : "ro", strerror(errno));
			goto out;
		}
		st->n_binds++;
		break;
	case SBX_MOUNT_PIN:	/* apply_pin, above */
		r = sbx_error_set(err, EINVAL, "mount plan: pin %s out of place", m->target);
		goto out;
	}
	r = attach(tree, tfd, m->target, err);
	if (r < 0)
		goto out;
	st->applied[i] = true;
	st->done_fd[i] = tree;
	tree = -1;
out:
	if (tree >= 0)
		close(tree);
	close(tfd);
	return r;
}

static int open_sources(struct apply_state *st, struct sbx_error *err)
{
	static const char *const devs[] = { "null", "zero", "full", "random",
					    "urandom", "tty" };
	const struct sbx_mount_plan *plan = st->plan;
	char path[32];
	size_t i;

	for (i = 0; i < plan->n; i++) {
		const struct sbx_mount *m = &plan->m[i];
		struct stat sb;

		if (m->kind != SBX_MOUNT_BIND)
			continue;
		st->src_fd[i] = open_nofollow(AT_FDCWD, m->source, O_PATH);
		if (st->src_fd[i] < 0) {
			if (errno == ENOENT && m->optional) {
				note_skip(st, m->source, "missing");
				continue;
			}
			return sbx_error_set(err, errno, "open bind source %s: %s", m->source,
					     errno == ELOOP ? "is or passes through a symlink" :
					     strerror(errno));
		}
		if (fstat(st->src_fd[i], &sb) != 0)
			return sbx_error_set(err, errno, "fstat(%s): %s", m->source,
					     strerror(errno));
		if (S_ISLNK(sb.st_mode))
			return sbx_error_set(err, ELOOP, "bind source %s: is a symlink",
					     m->source);
		/* The directory the caller's walk checked (an executor's
		 * scratch, under directories nobody else may change) must be
		 * the one bound, not whatever the name leads to now. */
		if (!sbx_pin_holds(&m->pin, &sb))
			return sbx_error_set(err, ESTALE, "bind source %s: not the directory that "
					     "was checked before the session (device %llu inode "
					     "%llu, checked %llu %llu): moved or replaced since; "
					     "refusing", m->source,
					     (unsigned long long)sb.st_dev,
					     (unsigned long long)sb.st_ino,
					     (unsigned long long)m->pin.dev,
					     (unsigned long long)m->pin.ino);
	}
	for (i = 0; i < ARRAY_SIZE(devs); i++) {
		st->dev[i].name = devs[i];
		if (sbx_snprintf(path, sizeof(path), "/dev/%s", devs[i]) != 0)
			return sbx_error_set(err, ENAMETOOLONG, "/dev/%s", devs[i]);
		st->dev[i].fd = open_nofollow(AT_FDCWD, path, O_PATH);
		if (st->dev[i].fd < 0 && (i == 0 || errno != ENOENT))
			return sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
	}
	st->devnull_fd = st->dev[0].fd;
	if (plan->exec) {
		st->exec_fd = malloc(plan->exec->n * sizeof(int) + 1);
		if (!st->exec_fd)
			return sbx_error_set(err, ENOMEM, "mount view: out of memory");
		for (i = 0; i < plan->exec->n; i++)
			st->exec_fd[i] = -1;
		for (i = 0; i < plan->exec->n; i++) {
			st->exec_fd[i] = open_nofollow(AT_FDCWD, plan->exec->paths[i], O_PATH);
			if (st->exec_fd[i] < 0)
				return sbx_error_set(err, errno, "gate: open %s: %s",
						     plan->exec->paths[i],
						     errno == ELOOP ? "passes through a symlink" :
						     strerror(errno));
		}
	}
	return 0;
}

/*
 * The gate: bind each file (or tree) of the executable set back onto
 * itself with noexec cleared, after every other mount (so none covers
 * one). The clone is ours, so clearing the noexec we set is allowed; a
 * host mount that was noexec already (locked) keeps it, and the session
 * is refused: that program could not run anyway.
 */
static int apply_exec_binds(struct apply_state *st, struct sbx_error *err)
{
	const struct sbx_exec_set *set = st->plan->exec;
	size_t i;
	int r;

	for (i = 0; i < set->n; i++) {
		const char *path = set->paths[i];
		int tfd, tree;

		tfd = open_nofollow(AT_FDCWD, path, O_PATH);
		if (tfd < 0) {
			/* Covered by a mask (a deny_read secret): it stays
			 * not executable, the closed direction. */
			note_skip(st, path, "hidden");
			continue;
		}
		tree = clone_tree(st->exec_fd[i], path, err);
		if (tree < 0) {
			close(tfd);
			return tree;
		}
		if (set_attr(tree, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
			     MOUNT_ATTR_NOEXEC) != 0) {
			r = sbx_error_set(err, errno, "gate: make %s executable: %s%s", path,
					  strerror(errno), errno == EPERM ?
					  " (its host mount is noexec)" : "");
			close(tree);
			close(tfd);
			return r;
		}
		r = attach(tree, tfd, path, err);
		close(tree);
		close(tfd);
		if (r < 0)
			return r;
		st->n_exec++;
	}
	return 0;
}

/* Long on purpose: the mount view's phases in the order the kernel needs
 * them (sources opened before any mount, parents before children, read-only
 * last); split, the order would be spread over functions. */
int sbx_mount_view_apply(const struct sbx_mount_plan *plan, char *detail, size_t detail_size,
			 struct sbx_error *err)
{
	struct apply_state *st;
	const struct sbx_mount *home = NULL;
	char homebuf[64] = "";
	size_t i, used;
	int rootfd = -1, r;

	if (!plan || plan->n > SBX_MAX_MOUNTS)
		return sbx_error_set(err, EINVAL, "sbx_mount_view_apply: bad plan");
	st = calloc(1, sizeof(*st));
	if (!st)
		return sbx_error_set(err, ENOMEM, "sbx_mount_view_apply: out of memory");
	st->plan = plan;
	sbx_strlcpy(st->skipped, sizeof(st->skipped), plan->skipped);
	st->devnull_fd = -1;
	st->dev_mnt_fd = -1;
	for (i = 0; i < SBX_MAX_MOUNTS; i++)
		st->src_fd[i] = st->done_fd[i] = -1;
	for (i = 0; i < ARRAY_SIZE(st->dev); i++)
		st->dev[i].fd = -1;

	/* Nothing we do below may propagate to the host's mount table. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		r = sbx_error_set(err, errno, "mount(/, MS_REC|MS_PRIVATE): %s", strerror(errno));
		goto out;
	}
	/* Every source is opened before anything is covered (a bind source
	 * may sit under /tmp or a masked directory). */
	r = open_sources(st, err);
	if (r < 0)
		goto out;
	if (plan->host_readonly || plan->host_noexec) {
		/* Read-only (and noexec under the gate) first, then every
		 * mount of ours is added with its own flags. Mounts inherited
		 * from the host are locked in the flags they had; adding
		 * RDONLY/NOSUID/NOEXEC is always allowed. */
		uint64_t attrs = (plan->host_readonly ? MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID : 0) |
				 (plan->host_noexec ? MOUNT_ATTR_NOEXEC : 0);

		rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0) {
			r = sbx_error_set(err, errno, "open(/): %s", strerror(errno));
			goto out;
		}
		if (set_attr(rootfd, true, attrs, 0) != 0) {
			r = sbx_error_set(err, errno, "mount_setattr(/, AT_RECURSIVE, %s%s): %s%s",
					  plan->host_readonly ? "ro,nosuid" : "",
					  plan->host_noexec ? ",noexec" : "",
					  strerror(errno), errno == ENOSYS ?
					  " (needs Linux 5.12)" : "");
			goto out;
		}
	}
	if (plan->fresh_proc) {
		/* Before any mask below /proc; shows only this pid namespace. */
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC |
			  (plan->proc_readonly ? MS_RDONLY : 0), NULL) != 0) {
			r = sbx_error_set(err, errno, "mount(proc, /proc): %s", strerror(errno));
			goto out;
		}
	}
	if (plan->minimal_dev) {
		r = setup_dev(st, err);
		if (r < 0)
			goto out;
	}
	for (i = 0; i < plan->n; i++) {
		r = apply_one(st, i, err);
		if (r < 0)
			goto out;
	}
	if (plan->exec) {
		r = apply_exec_binds(st, err);
		if (r < 0)
			goto out;
	}
	/* Last: masks and /dev become read-only, after their mountpoints. */
	for (i = 0; i < plan->n; i++) {
		if (plan->m[i].kind == SBX_MOUNT_MASK && st->applied[i] &&
		    set_attr(st->done_fd[i], false, MOUNT_ATTR_RDONLY, 0) != 0) {
			r = sbx_error_set(err, errno, "mount_setattr(mask %s, ro): %s",
					  plan->m[i].target, strerror(errno));
			goto out;
		}
	}
	if (st->dev_mnt_fd >= 0 && set_attr(st->dev_mnt_fd, false, MOUNT_ATTR_RDONLY, 0) != 0) {
		r = sbx_error_set(err, errno, "mount_setattr(/dev, ro): %s", strerror(errno));
		goto out;
	}

	if (detail && detail_size) {
		for (i = 0; i < plan->n; i++)
			if (plan->m[i].role == SBX_ROLE_HOME && st->applied[i])
				home = &plan->m[i];
		if (home && home->kind == SBX_MOUNT_TMPFS)
			snprintf(homebuf, sizeof(homebuf), "home tmpfs %" PRIu64 "M",
				 home->size >> 20);
		else if (home)
			snprintf(homebuf, sizeof(homebuf), "home bind");
		else
			snprintf(homebuf, sizeof(homebuf), "home host");
		snprintf(detail, detail_size, "%s%s host, %u binds, %s, %u tmpfs, %u masks",
			 plan->host_readonly ? "ro" : "rw", plan->host_noexec ? " noexec" : "",
			 st->n_binds, homebuf, st->n_tmpfs, st->n_masks);
		used = strlen(detail);
		if (plan->host_noexec)
			snprintf(detail + used, detail_size - used, ", %u executable", st->n_exec);
		used = strlen(detail);
		if (st->n_pins)
			snprintf(detail + used, detail_size - used, ", %u pinned", st->n_pins);
		used = strlen(detail);
		if (st->skipped[0])
			snprintf(detail + used, detail_size - used, ", skipped: %s", st->skipped);
	}
	r = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	for (i = 0; i < SBX_MAX_MOUNTS; i++) {
		if (st->src_fd[i] >= 0)
			close(st->src_fd[i]);
		if (st->done_fd[i] >= 0)
			close(st->done_fd[i]);
	}
	for (i = 0; i < ARRAY_SIZE(st->dev); i++)
		if (st->dev[i].fd >= 0)
			close(st->dev[i].fd);
	if (st->exec_fd) {
		for (i = 0; i < plan->exec->n; i++)
			if (st->exec_fd[i] >= 0)
				close(st->exec_fd[i]);
		free(st->exec_fd);
	}
	if (st->dev_mnt_fd >= 0)
		close(st->dev_mnt_fd);
	free(st);
	return r;
}
