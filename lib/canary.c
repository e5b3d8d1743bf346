/* SPDX-License-Identifier: BSD-3-Clause */
/* Canary checks: inside the confined process, try the forbidden things and record what the kernel refused. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * Rules every canary follows:
 * - it runs only for an entry already marked achieved, and marks it
 *   verified only when the kernel refused in the way that proves the layer
 *   (a refusal file permissions alone would give proves nothing: the
 *   checks use access(2), which Landlock does not consult, to tell a
 *   Landlock or read-only-mount refusal apart from plain DAC);
 * - it leaves no file, fd or namespace behind and prints nothing;
 * - on failure it puts "canary: <why>" in front of the entry's detail
 *   (what the layer claimed follows, as far as it fits): the reason a
 *   session is refused is never the part that is cut.
 */

static void canary_fail(struct sbx_report *r, enum sbx_feature f,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void canary_fail(struct sbx_report *r, enum sbx_feature f,
			const char *fmt, ...)
{
	struct sbx_report_entry *e = &r->entry[f];
	char why[sizeof(e->detail)], was[sizeof(e->detail)];
	struct sbx_sbuf b;
	va_list ap;

	e->verified = false;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	sbx_text_scrub(why);	/* a path may hold any byte; the report is text */
	memcpy(was, e->detail, sizeof(was));
	was[sizeof(was) - 1] = '\0';
	sbx_sbuf_init(&b, e->detail, sizeof(e->detail));
	sbx_sbuf_str(&b, "canary: ");
	sbx_sbuf_str(&b, why);
	if (was[0]) {
		sbx_sbuf_str(&b, "; ");
		sbx_sbuf_str(&b, was);
	}
}

/* /proc/self/status, read once per run: nothing the canaries look up in
 * it (Seccomp, NoNewPrivs, the capability sets) changes while they run,
 * and each read has the kernel render the whole file. "" until read. */
static char self_status_text[8192];

static int self_status(const char *name, char *out, size_t size)
{
	if (!self_status_text[0]) {
		int r = sbx_proc_status_read(0, self_status_text, sizeof(self_status_text));

		if (r)
			return r;
	}
	return sbx_status_text_field(self_status_text, name, out, size);
}

static void canary_pass(struct sbx_report *r, enum sbx_feature f)
{
	r->entry[f].verified = true;
}

static bool achieved(const struct sbx_report *r, enum sbx_feature f)
{
	return r->entry[f].achieved;
}

/* ---- write boundary: landlock_fs and mount_view -------------------------- */

struct write_try {
	const char *path;	/* the file to create (or open for writing) */
	const char *dir;	/* its directory, for the DAC/ro pre-check */
	bool create;		/* O_CREAT|O_EXCL; else open an existing file O_WRONLY */
};

enum write_outcome { W_LANDLOCK, W_READONLY, W_DAC, W_SKIP, W_BREACH, W_OTHER };

/* Try one forbidden write and say which layer refused it. */
static enum write_outcome try_write(const struct write_try *t, int *err_out)
{
	int fd, e;

	/* access(2) sees DAC and read-only mounts but not Landlock, so it
	 * tells whose refusal the open() below is. */
	if (access(t->create ? t->dir : t->path, W_OK) != 0) {
		*err_out = errno;
		if (errno == EROFS)
			return W_READONLY;
		return errno == EACCES || errno == EPERM ? W_DAC : W_SKIP;
	}
	if (t->create)
		fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	else
		fd = open(t->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);
		if (t->create)
			unlink(t->path);
		*err_out = 0;
		return W_BREACH;
	}
	e = errno;
	*err_out = e;
	if (e == EACCES)
		return W_LANDLOCK;
	if (e == EROFS)
		return W_READONLY;
	if (e == EEXIST && t->create)
		return W_OTHER;
	return W_OTHER;
}

/*
 * A name suffix for canary files. Not the pid: every sandbox has its own
 * pid namespace, so concurrent sessions of one account all see the same
 * small pid and collided on the shared workspace/home (EEXIST, seen with 50
 * parallel ssh sessions in tests/e2e).
 */
static unsigned long long canary_tag(void)
{
	unsigned long long v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = ((unsigned long long)getpid() << 32) ^ (unsigned long long)time(NULL);
	return v;
}

/* The positive control: a file can be made and removed in the workspace. */
static int workspace_writable(const struct sbx_session *s)
{
	char path[SBX_PATH_MAX];
	int fd;

	if (sbx_snprintf(path, sizeof(path), "%s/.agent-sandbox-canary-%016llx",
			 s->workspace, canary_tag()) != 0)
		return ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	close(fd);
	if (unlink(path) != 0)
		return errno;
	return 0;
}

static void canary_write_boundary(const struct sbx_profile *p,
				  const struct sbx_session *s, struct sbx_report *r)
{
	char vartmp[64], runlock[64];
	struct write_try tries[4];
	bool want_ll = achieved(r, SBX_F_LANDLOCK_FS);
	bool want_mv = achieved(r, SBX_F_MOUNT_VIEW);
	bool ll_proof = false, mv_proof = false, breach = false;
	char breach_path[128] = "";
	size_t i, n = 0;
	int e, ws;

	if (!want_ll && !want_mv)
		return;
	if (p->host_write == SBX_ACCESS_ALLOW) {
		if (want_ll)
			canary_fail(r, SBX_F_LANDLOCK_FS, "host_write allow: no write boundary to probe");
		if (want_mv)
			canary_fail(r, SBX_F_MOUNT_VIEW, "host_write allow: no write boundary to probe");
		return;
	}
	snprintf(vartmp, sizeof(vartmp), "/var/tmp/.agent-sandbox-canary-%016llx", canary_tag());
	snprintf(runlock, sizeof(runlock), "/run/lock/.agent-sandbox-canary-%016llx", canary_tag());
	/* As the agent, /etc is refused by file permissions before a
	 * read-only mount or Landlock is consulted: kept because the design
	 * names it, but it proves something only for a caller DAC lets in. */
	tries[n++] = (struct write_try){ "/etc/.agent-sandbox-canary", "/etc", true };
	/* World-writable (sticky) on the host: only Landlock or a read-only
	 * mount can refuse these, so a refusal here is a real proof. */
	tries[n++] = (struct write_try){ vartmp, "/var/tmp", true };
	tries[n++] = (struct write_try){ runlock, "/run/lock", true };
	/* Owned by us and on a read-write procfs: only Landlock refuses it.
	 * The sandbox's own fresh /proc is writable by design, so this is
	 * no test of the mount view. */
	if (want_ll)
		tries[n++] = (struct write_try){ "/proc/self/comm", "/proc/self", false };

	for (i = 0; i < n; i++) {
		/* A place the profile lets us write proves nothing. */
		if (sbx_profile_path_access(p, tries[i].path, true) == SBX_ACCESS_ALLOW)
			continue;
		switch (try_write(&tries[i], &e)) {
		case W_LANDLOCK: ll_proof = true; break;
		case W_READONLY: mv_proof = true; break;
		case W_BREACH:
			breach = true;
			sbx_text_set(breach_path, sizeof(breach_path), "%s", tries[i].path);
			break;
		default: break;
		}
	}
	if (access("/etc/.agent-sandbox-canary", F_OK) == 0) {
		breach = true;
		sbx_text_set(breach_path, sizeof(breach_path), "/etc/.agent-sandbox-canary exists");
	}
	ws = 0;
	if (s && s->workspace[0] && p->workspace_write == SBX_ACCESS_ALLOW)
		ws = workspace_writable(s);

	if (want_ll) {
		if (breach)
			canary_fail(r, SBX_F_LANDLOCK_FS, "write not refused: %s", breach_path);
		else if (ws)
			canary_fail(r, SBX_F_LANDLOCK_FS, "workspace not writable: %s", strerror(ws));
		else if (!ll_proof)
			canary_fail(r, SBX_F_LANDLOCK_FS, "no write refused by Landlock "
				    "(only file permissions or read-only mounts refused)");
		else
			canary_pass(r, SBX_F_LANDLOCK_FS);
	}
	if (want_mv) {
		if (breach)
			canary_fail(r, SBX_F_MOUNT_VIEW, "write not refused: %s", breach_path);
		else if (ws)
			canary_fail(r, SBX_F_MOUNT_VIEW, "workspace not writable: %s", strerror(ws));
		else if (!mv_proof)
			canary_fail(r, SBX_F_MOUNT_VIEW, "no write refused by a read-only "
				    "mount (EROFS) in /etc, /var/tmp or /run/lock");
		else
			canary_pass(r, SBX_F_MOUNT_VIEW);
	}
}

/* ---- deny_read -------------------------------------------------------------- */

/* May the agent (this uid) change st: chmod it, or it is its own? */
static bool agents_own(const struct stat *st)
{
	return st->st_uid == getuid();
}

/* A socket the agent may connect to: it may write it, or make it so. */
static bool socket_reachable(int dir, const char *name, const struct stat *st)
{
	return faccessat(dir, name, W_OK, 0) == 0 || agents_own(st);
}

/*
 * An entry whose open was refused (EACCES, EPERM): does that hold? Not if
 * the agent may undo it: its own entry (chmod), a place it may change
 * (!stable), or a directory it may pass through but not list, whose files
 * open by name. Permissions that would let it read mean a layer refused.
 */
static bool refusal_holds(int dir, const char *name, const struct stat *st, bool stable)
{
	if (!stable || agents_own(st))
		return false;
	return !S_ISDIR(st->st_mode) || faccessat(dir, name, R_OK, 0) == 0 ||
	       faccessat(dir, name, X_OK, 0) != 0;
}

/*
 * An entry that opened and is not a directory (fd, which this closes):
 * -1 if it gives the secret away (a file it reads, a FIFO or a device
 * that opens; below a secret, /dev/null is a file secret's mask), why
 * naming it as path[/name]; 0 otherwise.
 */
static int opened_gives_away(int fd, const struct stat *st, const char *path, const char *name,
			     char *why, size_t why_size)
{
	bool null_mask = name && S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
	const char *what = NULL;
	char c;

	if (S_ISREG(st->st_mode)) {
		if (read(fd, &c, 1) == 1)
			what = "is readable";
	} else if (!null_mask) {
		what = "opens";
	}
	close(fd);
	if (!what)
		return 0;
	sbx_text_set(why, why_size, "%s%s%s %s", path, name ? "/" : "", name ? name : "", what);
	return -1;
}

/* How much of one secret directory whose names are listed (Landlock's
 * holes) deny_read_one searches: as much as the outer process searches
 * for other names of its files (apply.c). How deep readable_below goes,
 * for it and below another mount of a secret. */
#define HOLE_SEARCH_MAX 4096
#define SEARCH_DEPTH 8

/* One search below a directory that may show a secret's contents. */
struct below {
	unsigned *budget;	/* entries left to look at */
	/* deny_read_one's search of a listed secret directory: count here the
	 * entries a layer refused though file permissions would let this
	 * process read them, and take anything not searched whole as a
	 * failure. NULL: the search below another mount of a secret, where
	 * a refusal the agent could undo leaves the search partial. */
	unsigned *refused;
	bool mediated;		/* the unix supervisor refuses sockets here */
	char *why;
	size_t why_size;
};

/*
 * The first thing below the directory fd (which this takes) that gives
 * away the secret's: a regular file whose contents this process reads, a
 * socket it may connect to (unless b->mediated: the unix supervisor's to
 * refuse, deny_read being in its policy), a FIFO or device it opens. -1
 * and why names it; 0 none; 1 not searched to the end, none so far: past
 * the budget or 8 levels, or something refused that the agent could open
 * up (its own, which it may chmod; a directory it may pass through but
 * not list, whose files open by name). With b->refused, not searched to
 * the end is -1 too, why saying where. path names fd, with room to grow.
 * Recursion: at most 8 directories deep. NOLINTNEXTLINE(misc-no-recursion) */
static int readable_below(int fd, char *path, size_t size, int depth, const struct below *b)
{
	size_t len = strlen(path);
	bool partial = false;
	struct dirent *de;
	DIR *d = fdopendir(fd);
	int v = 0;

	if (!d) {
		close(fd);
		if (!b->refused)
			return 0;
		sbx_text_set(b->why, b->why_size, "%s: not listable", path);
		return -1;
	}
	while (v == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		int cfd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*b->budget == 0) {
			if (b->refused) {
				sbx_text_set(b->why, b->why_size, "%s: not searched whole (more "
					     "than %u entries below the secret)", path,
					     HOLE_SEARCH_MAX);
				v = -1;
			}
			partial = true;
			break;
		}
		(*b->budget)--;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;	/* gone meanwhile */
		if (S_ISLNK(st.st_mode))
			continue;	/* decided where it points */
		if (S_ISSOCK(st.st_mode)) {
			if (!b->mediated && socket_reachable(dirfd(d), de->d_name, &st)) {
				sbx_text_set(b->why, b->why_size, "%s/%s is a socket it may "
					     "connect to", path, de->d_name);
				v = -1;
			}
			continue;
		}
		cfd = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (cfd < 0) {
			if (errno != EACCES && errno != EPERM)
				continue;	/* gone meanwhile */
			if (!b->refused) {
				if (!refusal_holds(dirfd(d), de->d_name, &st, true))
					partial = true;
			} else if (faccessat(dirfd(d), de->d_name, R_OK, AT_SYMLINK_NOFOLLOW) == 0) {
				(*b->refused)++;
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			v = opened_gives_away(cfd, &st, path, de->d_name, b->why, b->why_size);
			continue;
		}
		if (depth >= SEARCH_DEPTH ||
		    sbx_snprintf(path + len, size - len, "/%s", de->d_name) != 0) {
			if (b->refused) {
				sbx_text_set(b->why, b->why_size, "%s/%s: not searched whole "
					     "(too deep)", path, de->d_name);
				v = -1;
			}
			partial = true;
			close(cfd);
			continue;
		}
		v = readable_below(cfd, path, size, depth + 1, b);
		path[len] = '\0';
		if (v > 0) {
			partial = true;
			v = 0;
		}
	}
	closedir(d);
	return v < 0 ? -1 : partial ? 1 : 0;
}

/* 1: proven hidden (mask or Landlock), 0: unreadable but only by DAC or
 * absent (no proof either way), -1: readable, or not searched whole. */
static int deny_read_one(const char *path, bool mediated, char *why, size_t why_size)
{
	struct stat st;
	char c;
	ssize_t n;
	int fd, dac, e;

	dac = access(path, R_OK) == 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			return 0;
		/* Refused by file permissions only, on a directory of its
		 * own that it may chmod back: not hidden (its mask may have
		 * been skipped as unreachable at that moment). */
		if ((e == EACCES || e == EPERM) && !dac && sbx_path_owned_above(path, getuid())) {
			sbx_text_set(why, why_size, "%s: refused only by permissions the agent "
				     "may change", path);
			return -1;
		}
		if (e == EACCES || e == EPERM)
			return dac ? 1 : 0;
		sbx_text_set(why, why_size, "%s: open: %s", path, strerror(e));
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		sbx_text_set(why, why_size, "%s: fstat failed", path);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		/* Masked: an empty directory. Without a mount view Landlock
		 * grants READ_DIR on the ancestors, which also lists the
		 * secret directory's names, and its subdirectories' (a
		 * Landlock limit): then nothing below it may read. */
		char sub[SBX_PATH_MAX];
		unsigned budget = HOLE_SEARCH_MAX, refused = 0;
		int v;

		if (sbx_strlcpy(sub, sizeof(sub), path) != 0) {
			close(fd);
			sbx_text_set(why, why_size, "%s: path too long to search", path);
			return -1;
		}
		struct below b = { &budget, &refused, mediated, why, why_size };

		v = readable_below(fd, sub, sizeof(sub), 0, &b);
		if (v < 0)
			return -1;
		if (budget == HOLE_SEARCH_MAX)
			return 1;	/* nothing listed: the mask */
		return refused > 0 ? 1 : 0;
	}
	n = read(fd, &c, 1);
	e = errno;
	close(fd);
	if (n == 0)
		return 1;	/* masked: reads as empty */
	if (n < 0 && (e == EACCES || e == EPERM))
		return 1;
	sbx_text_set(why, why_size, "%s is readable", path);
	return -1;
}

/*
 * The directory that holds path's last component, opened from / one
 * component at a time without following a link (O_PATH), and that last
 * component in *last. -EACCES when a directory on the way refuses the
 * agent passage; *stable then says whether that holds whatever the agent
 * does: no directory on the way is its own, nor one where it may rename
 * (a writable one; in a sticky one, only its own entries).
 */
static int walk_to_parent(const char *path, const char **last, bool *stable)
{
	const char *p = path, *next;
	bool movable = false;
	int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	*stable = false;
	if (dir < 0)
		return -errno;
	for (;;) {
		char comp[NAME_MAX + 1];
		struct stat dst, cst;
		size_t n;
		int fd;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		next = p + n;
		while (*next == '/')
			next++;
		if (n == 0 || n > NAME_MAX) {
			close(dir);
			return n ? -ENAMETOOLONG : -EINVAL;
		}
		if (fstat(dir, &dst) != 0) {
			close(dir);
			return -EIO;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (agents_own(&dst))
			movable = true;
		/* Writable, or not known not to be (any error but a refusal). */
		if ((faccessat(dir, "", W_OK, AT_EMPTY_PATH) == 0 ||
		     (errno != EACCES && errno != EROFS && errno != EPERM)) &&
		    (!(dst.st_mode & S_ISVTX) ||
		     fstatat(dir, comp, &cst, AT_SYMLINK_NOFOLLOW) != 0 || agents_own(&cst)))
			movable = true;
		if (*next == '\0') {
			*last = p;
			*stable = !movable;
			return dir;
		}
		fd = openat(dir, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			close(dir);
			*stable = !movable;
			return -e;
		}
		close(dir);
		dir = fd;
		p = next;
	}
}

struct shown_check {
	const struct sbx_profile *p;
	const struct sbx_session *s;
	const struct sbx_secret_places *sp;
	unsigned budget;
	char *why;
	size_t why_size;
};

/*
 * What the session itself puts within the agent's reach from inside a
 * secret: its home (an isolated home lives in the state directory, often
 * a secret) and its /tmp (the PAM stage's, there too). Exactly there: a
 * mount below one of them is not the session's own. A workspace or a root
 * that is another mount of a secret's part is not: the profile names a
 * path, not what the host mounted there, and deny_read says the secret
 * stays hidden whatever else allows it (an attacker review read a key
 * through such a root while this said deny_read held).
 */
static bool session_grants(const struct shown_check *c, const char *path)
{
	const struct sbx_session *s = c->s;

	return s && ((s->home[0] && strcmp(path, s->home) == 0) ||
		     (s->tmp_source[0] && strcmp(path, "/tmp") == 0));
}

/*
 * A mount (mnt_id) shows a secret, or a part of it, at path, and no other
 * mount in this view covers it: nothing of the secret's may be reachable
 * there. 0, or 1 with why set. Opened one component at a time, and what
 * is opened must be on that mount: a rename racing the check (another
 * session of the agent) cannot send it elsewhere. A refusal counts only
 * where the agent cannot undo it.
 */
static int secret_shown_refused(void *arg, size_t k, const char *path, int mnt_id)
{
	struct shown_check *c = arg;
	char found[PATH_MAX + 64], walk[PATH_MAX];
	const char *last = "", *problem = NULL;
	struct statx stx;
	struct stat st;
	int dir, fd, v = 0, e = 0;
	bool stable;

	if (sbx_path_is_under(path, c->p->deny_read[c->sp->s[k].deny]) || session_grants(c, path))
		return 0;	/* deny_read_one's, or the session's own grant */
	dir = walk_to_parent(path, &last, &stable);
	if (dir == -EACCES && stable)
		return 0;	/* a passage the agent is refused, and cannot open */
	if (dir < 0) {
		e = -dir;
		goto unchecked;
	}
	if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		e = errno;
		close(dir);
		goto unchecked;
	}
	if (S_ISSOCK(st.st_mode)) {
		v = socket_reachable(dir, last, &st) ? -1 : 0;
		sbx_text_set(found, sizeof(found), "%s is a socket it may connect to", path);
		close(dir);
		goto verdict;
	}
	fd = openat(dir, last, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	e = errno;
	if (fd < 0 && (e == EACCES || e == EPERM)) {
		bool holds = refusal_holds(dir, last, &st, stable);

		close(dir);
		if (holds)
			return 0;
		problem = !stable || agents_own(&st) ? "a refusal the agent can undo" :
			  "passes through, cannot list";
		v = 1;
		goto verdict;
	}
	close(dir);
	if (fd < 0)
		goto unchecked;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0 ||
	    !(stx.stx_mask & STATX_MNT_ID) || stx.stx_mnt_id != (unsigned long long)mnt_id) {
		close(fd);
		sbx_text_set(c->why, c->why_size, "another mount shows a secret at %s, which "
			     "changed while checked", path);
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(walk, sizeof(walk), "%s", path);
		struct below b = { &c->budget, NULL, false, found, sizeof(found) };

		v = readable_below(fd, walk, sizeof(walk), 0, &b);
		problem = "over 1024 entries or 8 levels, or a refusal the agent can undo";
	} else {
		v = opened_gives_away(fd, &st, path, NULL, found, sizeof(found));
	}
verdict:
	if (v < 0)
		sbx_text_set(c->why, c->why_size, "another mount shows a secret, and no mask "
			     "covers it: %s (add the mount's path to deny_read, or remove the "
			     "mount)", found);
	else if (v > 0)
		sbx_text_set(c->why, c->why_size, "another mount shows a secret, and no mask "
			     "covers it: %s (not searched whole: %s)", path,
			     problem ? problem : "a refusal the agent can undo");
	return v != 0;
unchecked:
	sbx_text_set(c->why, c->why_size, "another mount shows a secret at %s, which could "
		     "not be checked: %s", path, strerror(e));
	return 1;
}

/* Every mount of this view that shows a secret: false if nothing of the
 * secrets' is readable through them; otherwise why says what is, or what
 * could not be searched. */
static bool secret_mount_readable(const struct sbx_profile *p, const struct sbx_session *s,
				  const struct sbx_secret_places *sp, char *why, size_t why_size)
{
	struct shown_check c = { p, s, sp, 1024, why, why_size };
	char *table = NULL, reason[200] = "";
	size_t len;
	int r;

	if (sp->n == 0)
		return false;
	if (sbx_read_file("/proc/self/mountinfo", 16u << 20, &table, &len, NULL) != 0) {
		sbx_text_set(why, why_size, "other mounts of the secrets not searched: "
			     "/proc/self/mountinfo is not readable");
		return true;
	}
	r = sbx_secret_mounts_shown(table, len, sp, secret_shown_refused, &c, reason,
				    sizeof(reason));
	free(table);
	if (r < 0)
		sbx_text_set(why, why_size, "other mounts of the secrets not searched: %s",
			     reason[0] ? reason : strerror(-r));
	return r != 0;
}

static void canary_deny_read(const struct sbx_profile *p, const struct sbx_session *s,
			     const struct sbx_canary_ctx *ctx,
			     struct sbx_report *r)
{
	char why[SBX_PATH_MAX + 200];
	bool proof = false, mediated = achieved(r, SBX_F_UNIX_SOCKETS);
	size_t i;

	if (!achieved(r, SBX_F_DENY_READ))
		return;
	/* Another name of a secret is readable under it, mask or not. */
	if (ctx && ctx->secret_aliases[0]) {
		canary_fail(r, SBX_F_DENY_READ, "other names (hard links) no mask covers: %s",
			    ctx->secret_aliases);
		return;
	}
	if (ctx && ctx->secret_places.unsearched[0]) {
		canary_fail(r, SBX_F_DENY_READ, "other mounts of the secrets not searched: %s",
			    ctx->secret_places.unsearched);
		return;
	}
	if (ctx && secret_mount_readable(p, s, &ctx->secret_places, why, sizeof(why))) {
		canary_fail(r, SBX_F_DENY_READ, "%s", why);
		return;
	}
	for (i = 0; i < p->n_deny_read; i++) {
		int v = deny_read_one(p->deny_read[i], mediated, why, sizeof(why));

		if (v < 0) {
			canary_fail(r, SBX_F_DENY_READ, "%s", why);
			return;
		}
		if (v > 0)
			proof = true;
	}
	if (!proof) {
		canary_fail(r, SBX_F_DENY_READ, "every deny_read entry is missing or "
			    "unreadable by file permissions alone: the mask is not observable");
		return;
	}
	canary_pass(r, SBX_F_DENY_READ);
}

/* ---- pins: directories above a narrower mount stay where they are -------- */

/*
 * A pinned directory (mounts.c, plan_pins) must not move: rename(2) of
 * it must fail, with EBUSY (a mountpoint) or a refusal of a layer before
 * that (file permissions, Landlock, a read-only mount). A rename that
 * works is undone at once, and the mount view does not hold, nor does
 * deny_read for a secret below it: the next session would cover a decoy.
 */
static void canary_pins(const struct sbx_profile *p, const struct sbx_canary_ctx *ctx,
			struct sbx_report *r)
{
	const struct sbx_mount_plan *plan = ctx ? ctx->mounts : NULL;

	if (!plan || !achieved(r, SBX_F_MOUNT_VIEW))
		return;
	for (size_t i = 0; i < plan->n; i++) {
		const char *dir = plan->m[i].target;
		const char *slash = strrchr(dir, '/');
		char to[SBX_PATH_MAX];
		int e;

		if (plan->m[i].kind != SBX_MOUNT_PIN || !slash)
			continue;
		if (snprintf(to, sizeof(to), "%.*s/.agent-sandbox-canary-%016llx",
			     (int)(slash - dir), dir, canary_tag()) >= (int)sizeof(to))
			continue;	/* cannot be named: cannot be renamed to */
		if (renameat2(AT_FDCWD, dir, AT_FDCWD, to, RENAME_NOREPLACE) == 0) {
			(void)renameat2(AT_FDCWD, to, AT_FDCWD, dir, RENAME_NOREPLACE);
			e = 0;
		} else {
			e = errno;
			if (e == EBUSY || e == ENOENT || e == EACCES || e == EPERM || e == EROFS)
				continue;
		}
		canary_fail(r, SBX_F_MOUNT_VIEW, "pinned %s: rename %s", dir,
			    e ? strerror(e) : "succeeded");
		for (size_t k = 0; k < p->n_deny_read; k++) {
			if (achieved(r, SBX_F_DENY_READ) && sbx_path_is_under(p->deny_read[k], dir)) {
				canary_fail(r, SBX_F_DENY_READ, "%s could be moved from under its mask",
					    dir);
				break;
			}
		}
		return;
	}
}

/* ---- namespaces ----------------------------------------------------------- */

static unsigned long ns_inode(const char *name)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	if (stat(path, &st) != 0)
		return 0;
	return (unsigned long)st.st_ino;
}

static void canary_namespaces(const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	static const struct {
		enum sbx_feature f;
		const char *name;
		size_t off;
	} ns[] = {
		{ SBX_F_USERNS, "user", offsetof(struct sbx_canary_ctx, host_ns_user) },
		{ SBX_F_MOUNTNS, "mnt", offsetof(struct sbx_canary_ctx, host_ns_mnt) },
		{ SBX_F_PIDNS, "pid", offsetof(struct sbx_canary_ctx, host_ns_pid) },
		{ SBX_F_NETNS, "net", offsetof(struct sbx_canary_ctx, host_ns_net) },
		{ SBX_F_IPCNS, "ipc", offsetof(struct sbx_canary_ctx, host_ns_ipc) },
		{ SBX_F_UTSNS, "uts", offsetof(struct sbx_canary_ctx, host_ns_uts) },
		{ SBX_F_CGROUPNS, "cgroup", offsetof(struct sbx_canary_ctx, host_ns_cgroup) },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ns); i++) {
		unsigned long host, now;

		if (!achieved(r, ns[i].f))
			continue;
		host = ctx ? *(const unsigned long *)((const char *)ctx + ns[i].off) : 0;
		now = ns_inode(ns[i].name);
		if (!host || !now)
			canary_fail(r, ns[i].f, "%s namespace inode unknown", ns[i].name);
		else if (now == host)
			canary_fail(r, ns[i].f, "still in the host %s namespace", ns[i].name);
		else if (ns[i].f == SBX_F_PIDNS && getpid() == 1)
			canary_fail(r, ns[i].f, "the command would run as PID 1");
		else
			canary_pass(r, ns[i].f);
	}
}

/* ---- network ------------------------------------------------------------------ */

static void canary_landlock_net(struct sbx_report *r)
{
	struct sockaddr_in sa;
	int fd, e;

	if (!achieved(r, SBX_F_LANDLOCK_NET))
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		/* seccomp's inet_denied answers EAFNOSUPPORT: no TCP at all. */
		if (e == EAFNOSUPPORT)
			canary_pass(r, SBX_F_LANDLOCK_NET);
		else
			canary_fail(r, SBX_F_LANDLOCK_NET, "socket(AF_INET): %s", strerror(e));
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(1);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Landlock checks the port before any packet leaves: EACCES. An
	 * unconfined connect gets ECONNREFUSED (nothing listens on port 1). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		canary_fail(r, SBX_F_LANDLOCK_NET, "connect(127.0.0.1:1) succeeded");
		return;
	}
	e = errno;
	close(fd);
	if (e == EACCES)
		canary_pass(r, SBX_F_LANDLOCK_NET);
	else
		canary_fail(r, SBX_F_LANDLOCK_NET, "connect(127.0.0.1:1): %s, not EACCES",
			    strerror(e));
}

/* network = proxy: the bridge listens on the sandbox's own loopback. Only
 * it can have bound the port there (before this process existed), and the
 * netns canary proves the loopback is the sandbox's. Proved by bind(), not
 * a connection: the port is taken (EADDRINUSE), and the daemon is not
 * asked anything (a connection would be a hand-off to count). */
static void canary_network_egress(struct sbx_report *r)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(SBX_EGRESS_PROXY_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd, e = 0;

	if (!achieved(r, SBX_F_NETWORK_EGRESS))
		return;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		canary_fail(r, SBX_F_NETWORK_EGRESS, "socket(AF_INET): %s", strerror(errno));
		return;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		e = errno;
	close(fd);
	if (e == EADDRINUSE)
		canary_pass(r, SBX_F_NETWORK_EGRESS);
	else
		canary_fail(r, SBX_F_NETWORK_EGRESS, "bind(127.0.0.1:%d): %s, not EADDRINUSE: "
			    "nothing listens there", SBX_EGRESS_PROXY_PORT,
			    e ? strerror(e) : "bound");
}

/* ---- pathname unix sockets ------------------------------------------------------ */

static int unix_connect_errno(int fd, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	return connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : errno;
}

/* A socket of its own in dir, listening, and a connect() to it: 0 when it
 * connected, else the errno of the first step that failed, named in
 * *step ("path": the path does not fit a socket address). The socket
 * file is removed. */
static int own_socket_errno(const char *dir, const char **step)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int srv, cli, e = 0;

	*step = "path";
	if (sbx_snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/.sbx-canary-%016llx", dir,
			 canary_tag()) != 0)
		return ENAMETOOLONG;
	srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv < 0 || cli < 0) {
		*step = "socket";
		e = errno;
	} else if (bind(srv, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		*step = "bind";
		e = errno;
	} else if (listen(srv, 1) != 0) {
		*step = "listen";
		e = errno;
	} else {
		*step = "connect";
		e = unix_connect_errno(cli, sun.sun_path);
	}
	unlink(sun.sun_path);
	if (srv >= 0)
		close(srv);
	if (cli >= 0)
		close(cli);
	return e;
}

/*
 * connect() to a path outside every place the session may write is refused
 * by the supervisor with EACCES; the kernel alone would say ECONNREFUSED
 * (/etc/passwd is no socket), so EACCES proves the supervisor decided. The
 * control: a socket this session makes for itself in /tmp connects. And a
 * socket of the agent's uid listening in /tmp that the session did not
 * bind (the init's or the outer process's, as a host tmux's would be) is
 * refused at connect(): owning the file is not enough.
 */
static void canary_unix_sockets(const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *step;
	int srv = -1, cli = -1, e;

	if (!achieved(r, SBX_F_UNIX_SOCKETS))
		return;
	/* Without a network namespace of its own, an abstract name bound here
	 * is one host clients reach: the supervisor must refuse it. */
	if (ctx && ctx->unix_bind_mediated) {
		srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (srv < 0) {
			canary_fail(r, SBX_F_UNIX_SOCKETS, "socket(AF_UNIX): %s", strerror(errno));
			return;
		}
		snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
			 "agent-sandbox-canary-%016llx", canary_tag());
		e = bind(srv, (struct sockaddr *)&sun,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				     strlen(sun.sun_path + 1))) == 0 ? 0 : errno;
		close(srv);
		srv = -1;
		if (e != EACCES) {
			canary_fail(r, SBX_F_UNIX_SOCKETS, "bind(abstract name): %s, not EACCES",
				    e ? strerror(e) : "bound");
			return;
		}
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
	}
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (cli < 0) {
		canary_fail(r, SBX_F_UNIX_SOCKETS, "socket(AF_UNIX): %s", strerror(errno));
		return;
	}
	e = unix_connect_errno(cli, "/etc/passwd");
	close(cli);
	if (e != EACCES) {
		canary_fail(r, SBX_F_UNIX_SOCKETS, "connect(/etc/passwd): %s, not EACCES",
			    e ? strerror(e) : "connected");
		return;
	}
	/* SOCK_RAW is a datagram socket too, for AF_UNIX. */
	for (int type = SOCK_DGRAM; type <= SOCK_RAW; type++) {
		cli = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
		if (cli >= 0 || errno != EPERM) {
			canary_fail(r, SBX_F_UNIX_SOCKETS, "socket(AF_UNIX, type %d): %s, not EPERM",
				    type, cli >= 0 ? "allowed" : strerror(errno));
			if (cli >= 0)
				close(cli);
			return;
		}
	}
	e = own_socket_errno("/tmp", &step);
	if (e != 0) {
		canary_fail(r, SBX_F_UNIX_SOCKETS, "own socket in /tmp: %s: %s%s", step, strerror(e),
			    e == EACCES && !strcmp(step, "connect") ?
			    " (the supervisor finds the session's sockets through the kernel's "
			    "unix_diag)" : "");
		return;
	}
	if (!ctx || !ctx->unix_foreign[0]) {
		canary_fail(r, SBX_F_UNIX_SOCKETS, "no socket bound outside the session to try: %s",
			    ctx && ctx->unix_foreign_err ? strerror(ctx->unix_foreign_err) :
			    "none made");
		return;
	}
	cli = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	e = cli < 0 ? errno : unix_connect_errno(cli, ctx->unix_foreign);
	if (cli >= 0)
		close(cli);
	(void)unlink(ctx->unix_foreign);
	if (e != EACCES) {
		canary_fail(r, SBX_F_UNIX_SOCKETS, "a socket of this uid the session did not bind "
			    "(%s): %s, not EACCES", ctx->unix_foreign, e ? strerror(e) : "connected");
		return;
	}
	canary_pass(r, SBX_F_UNIX_SOCKETS);
}

/* ---- seccomp, no_new_privs, caps ----------------------------------------------- */

static void canary_seccomp(struct sbx_report *r)
{
	char v[32];
	long k;
	int e;

	if (!achieved(r, SBX_F_SECCOMP))
		return;
	if (self_status("Seccomp", v, sizeof(v)) != 0 || strcmp(v, "2") != 0) {
		canary_fail(r, SBX_F_SECCOMP, "/proc/self/status Seccomp is not 2");
		return;
	}
	/* unshare(0): the filter refuses unshare whatever its flags, and
	 * only the filter can refuse a call that changes nothing, so EPERM
	 * here proves the rule without a throwaway child (an unshare of a
	 * user namespace would be irreversible) and without a kernel that
	 * refuses user namespaces by itself passing for the filter. */
	e = unshare(0) == 0 ? 0 : errno;
	if (e != EPERM) {
		canary_fail(r, SBX_F_SECCOMP, "unshare(0): %s, not EPERM",
			    e == 0 ? "allowed" : strerror(e));
		return;
	}
	k = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
	if (k >= 0 || errno != EPERM) {
		canary_fail(r, SBX_F_SECCOMP, "keyctl(KEYCTL_GET_KEYRING_ID): %s, not EPERM",
			    k >= 0 ? "allowed" : strerror(errno));
		return;
	}
	canary_pass(r, SBX_F_SECCOMP);
}

static void canary_no_new_privs(struct sbx_report *r)
{
	char v[32];

	if (!achieved(r, SBX_F_NO_NEW_PRIVS))
		return;
	if (self_status("NoNewPrivs", v, sizeof(v)) != 0 || strcmp(v, "1") != 0)
		canary_fail(r, SBX_F_NO_NEW_PRIVS, "/proc/self/status NoNewPrivs is not 1");
	else if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		canary_fail(r, SBX_F_NO_NEW_PRIVS, "PR_GET_NO_NEW_PRIVS is not 1");
	else
		canary_pass(r, SBX_F_NO_NEW_PRIVS);
}

static void canary_caps(struct sbx_report *r)
{
	static const char *const sets[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	char v[32];
	size_t i, k;

	if (!achieved(r, SBX_F_CAPS))
		return;
	bool bounding_kept = false;

	for (i = 0; i < ARRAY_SIZE(sets); i++) {
		if (self_status(sets[i], v, sizeof(v)) != 0) {
			canary_fail(r, SBX_F_CAPS, "/proc/self/status has no %s", sets[i]);
			return;
		}
		/* sbx_proc_status_field() set v: it returned -errno, which the analyzer takes
		 * for a possible 0.
		 * NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Branch) */
		for (k = 0; v[k]; k++) {
			if (v[k] == '0')
				continue;
			/* Without a user namespace an unprivileged process
			 * cannot clear its bounding set (CAP_SETPCAP). It
			 * grants nothing by itself: only an exec of a
			 * setuid or file-capability binary could use it,
			 * and no_new_privs stops exactly that. */
			if (strcmp(sets[i], "CapBnd") == 0 &&
			    prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
				bounding_kept = true;
				break;
			}
			canary_fail(r, SBX_F_CAPS, "%s is %s", sets[i], v);
			return;
		}
	}
	(void)bounding_kept;
	canary_pass(r, SBX_F_CAPS);
}

/* ---- Landlock scope and ioctl --------------------------------------------------- */

static void canary_landlock_scope(struct sbx_report *r)
{
	pid_t ppid = getppid();
	long ruid;

	if (!achieved(r, SBX_F_LANDLOCK_SCOPE))
		return;
	/* kill(ppid, 0) is only a proof when file-style permissions would
	 * allow it, i.e. the parent runs as our uid (the init of the pid
	 * namespace does, outside the Landlock domain). */
	ruid = sbx_proc_status_number(ppid, "Uid");
	if (ruid < 0) {
		canary_fail(r, SBX_F_LANDLOCK_SCOPE, "parent %ld not visible", (long)ppid);
		return;
	}
	if ((unsigned long)ruid != (unsigned long)getuid()) {
		canary_fail(r, SBX_F_LANDLOCK_SCOPE, "parent %ld runs as another uid: "
			    "signal scope not observable", (long)ppid);
		return;
	}
	if (kill(ppid, 0) == 0)
		canary_fail(r, SBX_F_LANDLOCK_SCOPE, "kill(%ld, 0) allowed", (long)ppid);
	else if (errno != EPERM)
		canary_fail(r, SBX_F_LANDLOCK_SCOPE, "kill(%ld, 0): %s, not EPERM",
			    (long)ppid, strerror(errno));
	else
		canary_pass(r, SBX_F_LANDLOCK_SCOPE);
}

static void canary_landlock_ioctl(struct sbx_report *r)
{
	struct termios t;
	int fd, e;

	if (!achieved(r, SBX_F_LANDLOCK_IOCTL))
		return;
	if (r->landlock_abi < 5) {
		canary_fail(r, SBX_F_LANDLOCK_IOCTL, "Landlock ABI %d < 5", r->landlock_abi);
		return;
	}
	/* /dev/null is granted read/write but never IOCTL_DEV. A terminal
	 * ioctl on it gets ENOTTY from the driver, EACCES from Landlock. */
	fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		canary_fail(r, SBX_F_LANDLOCK_IOCTL, "no ungranted device reachable "
			    "(/dev/null: %s)", strerror(errno));
		return;
	}
	if (ioctl(fd, TCGETS, &t) == 0)
		e = 0;
	else
		e = errno;
	close(fd);
	if (e == EACCES)
		canary_pass(r, SBX_F_LANDLOCK_IOCTL);
	else
		canary_fail(r, SBX_F_LANDLOCK_IOCTL, "ioctl(/dev/null, TCGETS): %s, not EACCES",
			    e ? strerror(e) : "allowed");
}

/* ---- rlimits, env, fds ------------------------------------------------------------ */

static void canary_rlimits(const struct sbx_profile *p, struct sbx_report *r)
{
	static const struct { enum sbx_limit l; int res; } map[] = {
		{ SBX_LIMIT_NPROC, RLIMIT_NPROC }, { SBX_LIMIT_NOFILE, RLIMIT_NOFILE },
		{ SBX_LIMIT_FSIZE, RLIMIT_FSIZE }, { SBX_LIMIT_AS, RLIMIT_AS },
		{ SBX_LIMIT_CPU, RLIMIT_CPU },
	};
	struct rlimit rl;
	size_t i;

	if (!achieved(r, SBX_F_RLIMITS))
		return;
	if (getrlimit(RLIMIT_CORE, &rl) != 0 || rl.rlim_cur != 0) {
		canary_fail(r, SBX_F_RLIMITS, "RLIMIT_CORE is not 0");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(map); i++) {
		if (!(p->limits.set_mask & (1u << map[i].l)))
			continue;
		/* "Never raises a hard limit": a lower value also holds. */
		if (getrlimit(map[i].res, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
		    (uint64_t)rl.rlim_cur > p->limits.value[map[i].l]) {
			canary_fail(r, SBX_F_RLIMITS, "%s not in force",
				    sbx_limit_name(map[i].l));
			return;
		}
	}
	canary_pass(r, SBX_F_RLIMITS);
}

/* The environment the program will get: the list execve is given (the
 * worker's own environ is agent-shell's, which is not what runs). */
static void canary_env(const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	static const char *const bad[] = { "BASH_ENV=", "ENV=", "GLIBC_TUNABLES=" };
	char *const *e;
	bool home = false, path = false;
	size_t i;

	if (!achieved(r, SBX_F_ENV_SCRUB))
		return;
	if (!ctx || !ctx->envp) {
		canary_fail(r, SBX_F_ENV_SCRUB, "the program's environment was not given to check");
		return;
	}
	for (e = ctx->envp; *e; e++) {
		if (strncmp(*e, "LD_", 3) == 0) {
			canary_fail(r, SBX_F_ENV_SCRUB, "LD_* variable present");
			return;
		}
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			if (strncmp(*e, bad[i], strlen(bad[i])) == 0) {
				canary_fail(r, SBX_F_ENV_SCRUB, "%.*s present",
					    (int)strlen(bad[i]) - 1, bad[i]);
				return;
			}
		}
		home = home || strncmp(*e, "HOME=", 5) == 0;
		path = path || strncmp(*e, "PATH=", 5) == 0;
	}
	if (!home || !path) {
		canary_fail(r, SBX_F_ENV_SCRUB, "HOME or PATH not set");
		return;
	}
	canary_pass(r, SBX_F_ENV_SCRUB);
}

static void canary_fds(const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	struct dirent *de;
	DIR *d;
	int self, keep = ctx ? ctx->keep_fd : -1;

	if (!achieved(r, SBX_F_FD_HYGIENE))
		return;
	d = opendir("/proc/self/fd");
	if (!d) {
		canary_fail(r, SBX_F_FD_HYGIENE, "/proc/self/fd: %s", strerror(errno));
		return;
	}
	self = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		char *end;
		long fd;

		if (de->d_name[0] == '.')
			continue;
		fd = strtol(de->d_name, &end, 10);
		if (*end || fd <= 2 || fd == self || fd == keep)
			continue;
		closedir(d);
		canary_fail(r, SBX_F_FD_HYGIENE, "fd %ld is open", fd);
		return;
	}
	closedir(d);
	canary_pass(r, SBX_F_FD_HYGIENE);
}

/* ---- home and the command gate ------------------------------------------------------ */

static void canary_home(const struct sbx_session *s, struct sbx_report *r)
{
	char path[SBX_PATH_MAX];
	struct statfs sfs;
	struct stat st, src;
	int fd;

	if (!achieved(r, SBX_F_HOME))
		return;
	if (!s || !s->home[0] || stat(s->home, &st) != 0 || !S_ISDIR(st.st_mode)) {
		canary_fail(r, SBX_F_HOME, "home is not a directory");
		return;
	}
	if (sbx_snprintf(path, sizeof(path), "%s/.agent-sandbox-canary-%016llx",
			 s->home, canary_tag()) != 0) {
		canary_fail(r, SBX_F_HOME, "home path too long");
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		canary_fail(r, SBX_F_HOME, "home not writable: %s", strerror(errno));
		return;
	}
	close(fd);
	unlink(path);
	if (!s->home_source[0]) {
		if (statfs(s->home, &sfs) != 0 || (unsigned long)sfs.f_type != TMPFS_MAGIC)
			canary_fail(r, SBX_F_HOME, "ephemeral home is not a tmpfs");
		else
			canary_pass(r, SBX_F_HOME);
		return;
	}
	/* An executor's: $HOME is the very directory its walk checked and
	 * made, whatever the names on the way lead to now. */
	if (s->home_source_pin.set) {
		if (sbx_pin_holds(&s->home_source_pin, &st))
			canary_pass(r, SBX_F_HOME);
		else
			canary_fail(r, SBX_F_HOME, "%s is not the directory %s was checked as",
				    s->home, s->home_source);
		return;
	}
	/* Isolated: the state-dir home is bound at $HOME. */
	if ((stat(s->home_source, &src) == 0 && src.st_dev == st.st_dev &&
	     src.st_ino == st.st_ino) || sbx_mountinfo_is_mount_point(s->home))
		canary_pass(r, SBX_F_HOME);
	else
		canary_fail(r, SBX_F_HOME, "%s is not bound at %s", s->home_source, s->home);
}

/* mmap(PROT_EXEC) of path: 0 when it maps, else the errno. A noexec mount
 * refuses it with EPERM, which is exactly what stops ld.so. */
static int map_exec_errno(const char *path)
{
	void *m;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno;
	m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	e = m == MAP_FAILED ? errno : 0;
	if (m != MAP_FAILED)
		munmap(m, 4096);
	close(fd);
	return e;
}

static void canary_command_gate(const struct sbx_profile *p, const struct sbx_session *s,
				const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	const char *dirs[3];
	struct statvfs sv;
	size_t i, n = 0;
	int fd, e;

	if (!achieved(r, SBX_F_COMMAND_GATE))
		return;
	if (p->command == SBX_ACCESS_ALLOW) {
		canary_fail(r, SBX_F_COMMAND_GATE, "command allow: no gate");
		return;
	}
	/* Writable places must be noexec, or ld.so runs whatever the agent
	 * wrote there (docs/design.md section 6). */
	dirs[n++] = "/tmp";
	if (s && s->home[0])
		dirs[n++] = s->home;
	if (s && s->workspace[0] && p->workspace_write == SBX_ACCESS_ALLOW)
		dirs[n++] = s->workspace;
	for (i = 0; i < n; i++) {
		if (statvfs(dirs[i], &sv) != 0 || !(sv.f_flag & ST_NOEXEC)) {
			canary_fail(r, SBX_F_COMMAND_GATE, "%s is not mounted noexec", dirs[i]);
			return;
		}
	}
	if (p->command == SBX_ACCESS_GATED) {
		/* The host is noexec: a readable host file that is not on
		 * the executable set cannot be mapped executable (ld.so
		 * /usr/bin/anything fails there) ... */
		e = map_exec_errno("/etc/passwd");
		if (e != EPERM) {
			canary_fail(r, SBX_F_COMMAND_GATE, "mmap(PROT_EXEC) of /etc/passwd: %s, not EPERM",
				    e ? strerror(e) : "mapped");
			return;
		}
		/* ... while the allowed set still can. */
		if (!ctx || !ctx->exec_control[0]) {
			canary_fail(r, SBX_F_COMMAND_GATE, "no executable file to check against");
			return;
		}
		e = map_exec_errno(ctx->exec_control);
		if (e != 0) {
			canary_fail(r, SBX_F_COMMAND_GATE, "mmap(PROT_EXEC) of %s: %s",
				    ctx->exec_control, strerror(e));
			return;
		}
	}
	/* A memfd without MFD_NOEXEC_SEAL can be executed past the gate. */
	fd = (int)syscall(SYS_memfd_create, "agent-sandbox-canary", 0);
	if (fd >= 0) {
		close(fd);
		canary_fail(r, SBX_F_COMMAND_GATE, "memfd_create(0) allowed");
		return;
	}
	if (errno != EPERM) {
		canary_fail(r, SBX_F_COMMAND_GATE, "memfd_create(0): %s, not EPERM",
			    strerror(errno));
		return;
	}
	canary_pass(r, SBX_F_COMMAND_GATE);
}

/*
 * W^X under the gate (docs/design.md section 6), tried for real: an
 * anonymous page read-write (the control), the same page mprotect'ed to
 * exec (MDWE's EACCES, or the filter's EPERM without MDWE), an anonymous
 * mapping read-write-exec (the filter's EPERM: it refuses any executable
 * anonymous mapping before MDWE would look). SHM_EXEC on an invalid id
 * gets the filter's EPERM where the kernel alone would say EINVAL. Then
 * what would get around it: MDWE cleared or not inherited, an inherited
 * READ_IMPLIES_EXEC (every readable mapping executable past the filter),
 * /proc/self/mem writable (its writes reach read-only and executable
 * pages: Landlock or the read-only /proc must refuse the open), and an
 * executable of the gate whose ELF asks the kernel for an executable
 * stack.
 */
static void canary_memory_wx(const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int want = ctx && ctx->wx == SBX_WX_MDWE ? EACCES : EPERM, e, fd, pers;
	void *m;
	long v;

	if (!achieved(r, SBX_F_MEMORY_WX))
		return;
	if (!ctx || ctx->wx == SBX_WX_NONE) {
		canary_fail(r, SBX_F_MEMORY_WX, "no W^X mechanism was decided");
		return;
	}
	if (ctx->wx == SBX_WX_MDWE) {
		v = prctl(PR_GET_MDWE, 0, 0, 0, 0);
		if (v != (long)PR_MDWE_REFUSE_EXEC_GAIN) {
			canary_fail(r, SBX_F_MEMORY_WX, "PR_GET_MDWE: %ld%s%s, not REFUSE_EXEC_GAIN",
				    v, v < 0 ? " " : "", v < 0 ? strerror(errno) : "");
			return;
		}
		e = prctl(PR_SET_MDWE, 0, 0, 0, 0) == 0 ? 0 : errno;
		if (e != EPERM) {
			canary_fail(r, SBX_F_MEMORY_WX, "PR_SET_MDWE(0): %s, not EPERM",
				    e ? strerror(e) : "cleared");
			return;
		}
	}
	pers = personality(0xffffffff);
	if (pers < 0 || (pers & READ_IMPLIES_EXEC)) {
		canary_fail(r, SBX_F_MEMORY_WX, "personality: %s",
			    pers < 0 ? strerror(errno) : "READ_IMPLIES_EXEC is set");
		return;
	}
	m = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED || errno != EPERM) {
		e = errno;
		if (m != MAP_FAILED)
			munmap(m, page);
		canary_fail(r, SBX_F_MEMORY_WX, "mmap(anonymous, PROT_WRITE|PROT_EXEC): %s, not EPERM",
			    m != MAP_FAILED ? "mapped" : strerror(e));
		return;
	}
	m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		canary_fail(r, SBX_F_MEMORY_WX, "mmap(anonymous, PROT_READ|PROT_WRITE): %s",
			    strerror(errno));
		return;
	}
	e = mprotect(m, page, PROT_READ | PROT_EXEC) == 0 ? 0 : errno;
	munmap(m, page);
	if (e != want) {
		canary_fail(r, SBX_F_MEMORY_WX, "mprotect(anonymous, PROT_EXEC): %s, not %s",
			    e ? strerror(e) : "made executable", strerror(want));
		return;
	}
	/* An id no segment has: nothing is attached either way. */
	e = shmat(-1, NULL, SHM_EXEC) == (void *)-1 ? errno : 0;
	if (e != EPERM) {
		canary_fail(r, SBX_F_MEMORY_WX, "shmat(SHM_EXEC): %s, not EPERM",
			    e ? strerror(e) : "attached");
		return;
	}
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		canary_fail(r, SBX_F_MEMORY_WX, "/proc/self/mem opens for writing (its writes reach "
			    "executable pages)");
		return;
	}
	/* Found outside (lib/elf.c): no layer refuses what execve grants. */
	if (ctx->exec_stack[0]) {
		canary_fail(r, SBX_F_MEMORY_WX, "an executable stack from the kernel at execve for %s "
			    "(PT_GNU_STACK)", ctx->exec_stack);
		return;
	}
	canary_pass(r, SBX_F_MEMORY_WX);
}

void sbx_canary_run(const struct sbx_profile *p, const struct sbx_session *s,
		    const struct sbx_canary_ctx *ctx, struct sbx_report *r)
{
	int saved = errno;

	self_status_text[0] = '\0';	/* this run's own, read when first needed */
	/* fds first: every other canary opens and closes its own. */
	canary_fds(ctx, r);
	canary_env(ctx, r);
	canary_namespaces(ctx, r);
	canary_write_boundary(p, s, r);
	canary_deny_read(p, s, ctx, r);
	canary_pins(p, ctx, r);
	canary_landlock_net(r);
	canary_network_egress(r);
	canary_unix_sockets(ctx, r);
	canary_landlock_scope(r);
	canary_landlock_ioctl(r);
	canary_no_new_privs(r);
	canary_caps(r);
	canary_seccomp(r);
	canary_rlimits(p, r);
	canary_home(s, r);
	canary_command_gate(p, s, ctx, r);
	canary_memory_wx(ctx, r);
	errno = saved;
}
