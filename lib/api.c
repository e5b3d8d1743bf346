/* SPDX-License-Identifier: BSD-3-Clause */
/* libsbx.h: the installed interface (opaque profiles and reports, sbx_run, executor sets). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

const char *sbx_version(void)
{
	return SBX_VERSION;
}

/* ---- profiles ------------------------------------------------------------------ */

struct sbx_profile *sbx_profile_new(void)
{
	struct sbx_profile *p = malloc(sizeof(*p));

	if (p)
		sbx_profile_init_default(p);
	return p;
}

int sbx_profile_from_config(const char *path, const char *name, struct sbx_profile **out,
			    struct sbx_error *err)
{
	struct sbx_config *cfg = NULL;
	const struct sbx_profile *named;
	struct sbx_profile *p;
	int r;

	if (!path || !name || !out)
		return sbx_error_set(err, EINVAL, "sbx_profile_from_config: missing argument");
	r = sbx_config_load(path, 0, &cfg, err);
	if (r)
		return r;
	named = sbx_config_find_profile(cfg, name);
	p = malloc(sizeof(*p));
	if (!named)
		r = sbx_error_set(err, ENOENT, "%s: no profile %s", path, name);
	else if (!p)
		r = sbx_error_set(err, ENOMEM, "%s: out of memory", path);
	else
		r = sbx_profile_restrict(named, &cfg->ceiling, p, err);
	sbx_config_free(cfg);
	if (r) {
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

int sbx_profile_set(struct sbx_profile *p, const char *key, const char *value,
		    struct sbx_error *err)
{
	return sbx_profile_set_key(p, key, value, err);
}

void sbx_profile_free(struct sbx_profile *p)
{
	free(p);
}

/* ---- reports ------------------------------------------------------------------- */

int sbx_report_level(const struct sbx_report *r)
{
	return (int)r->level;
}

const char *sbx_report_level_name(const struct sbx_report *r)
{
	return sbx_level_name(r->level);
}

bool sbx_report_floor_met(const struct sbx_report *r)
{
	return r->floor_met;
}

const char *sbx_report_refusal(const struct sbx_report *r)
{
	return r->refusal;
}

void sbx_report_free(struct sbx_report *r)
{
	free(r);
}

/* ---- running ------------------------------------------------------------------- */

/* argv[0] as an absolute path: as given, or found in the caller's PATH. */
static int program_path(const char *name, char *out, size_t size, struct sbx_error *err)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL;

	if (name[0] == '/')
		return sbx_strlcpy(out, size, name) ? sbx_error_set(err, ENAMETOOLONG,
								      "run: %s: too long", name) : 0;
	if (strchr(name, '/'))
		return sbx_error_set(err, EINVAL, "run: %s: a relative path (give an absolute one)",
				     name);
	if (sbx_strlcpy(dirs, sizeof(dirs), path && path[0] ? path : "/usr/bin:/bin") != 0)
		return sbx_error_set(err, ENAMETOOLONG, "run: PATH too long");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		struct stat st;

		if (d[0] != '/' || sbx_snprintf(out, size, "%s/%s", d, name) != 0)
			continue;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
	}
	return sbx_error_set(err, ENOENT, "run: %s: not found in PATH", name);
}

/* What sbx_run and an executor need beyond the profile. */
struct run_place {
	const char *workspace;		/* NULL: none */
	const char *home_source;	/* NULL: per the profile */
	const char *tmp_source;		/* NULL: a fresh tmpfs */
	const char *home_note;
	struct sbx_pin home_pin, tmp_pin;	/* what the sources' walk found */
};

static int caller_session(const struct sbx_profile *p, const struct run_place *pl,
			  const struct sbx_account *acc, struct sbx_session *s,
			  const char **note, struct sbx_error *err)
{
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->uid = acc->uid;
	s->gid = acc->gid;
	sbx_strlcpy(s->user, sizeof(s->user), acc->user);
	sbx_strlcpy(s->service, sizeof(s->service), "libsbx");
	sbx_strlcpy(s->client, sizeof(s->client), "local");
	int r = sbx_session_id_new(s->session_id, err);

	if (r)
		return r;
	if (pl->workspace) {
		struct sbx_error why = { 0 };
		int fd = -1;

		/* The directory the walk found is the one checked here and
		 * the one the bind must open (s->workspace_pin). */
		r = sbx_path_walk(pl->workspace, NULL, s->workspace, sizeof(s->workspace), &fd,
				  &why);
		if (r)
			return sbx_error_set(err, -r, "workspace %s: %s", pl->workspace, why.msg);
		r = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
		close(fd);
		if (!r)
			return sbx_error_set(err, ENOTDIR, "workspace %s: not a directory",
					     s->workspace);
		s->workspace_pin = sbx_pin_of(&st);
	}
	/* $HOME: the passwd home when it is a directory, else one under the
	 * sandbox's private /tmp (as agent-shell does). */
	if (stat(acc->home, &st) == 0 && S_ISDIR(st.st_mode) && strcmp(acc->home, "/") != 0)
		sbx_strlcpy(s->home, sizeof(s->home), acc->home);
	else
		sbx_strlcpy(s->home, sizeof(s->home), "/tmp/home");
	if (pl->tmp_source) {
		sbx_strlcpy(s->tmp_source, sizeof(s->tmp_source), pl->tmp_source);
		s->tmp_source_pin = pl->tmp_pin;
	}
	if (pl->home_source) {
		sbx_strlcpy(s->home_source, sizeof(s->home_source), pl->home_source);
		s->home_source_pin = pl->home_pin;
		*note = pl->home_note;
		return 0;
	}
	switch (p->home) {
	case SBX_HOME_REAL:
		if (strcmp(s->home, acc->home) != 0)
			return sbx_error_set(err, ENOENT, "home = real but %s has no home directory "
					     "(%s)", acc->user, acc->home);
		sbx_strlcpy(s->home_source, sizeof(s->home_source), acc->home);
		*note = "the real home";
		return 0;
	case SBX_HOME_ISOLATED:
		return sbx_error_set(err, EOPNOTSUPP,
				     "profile %s: home = isolated is prepared by the PAM stage; through "
				     "libsbx use ephemeral, real, or an executor set", p->name);
	case SBX_HOME_EPHEMERAL:
		break;
	}
	*note = "ephemeral tmpfs home";
	return 0;
}

static int run_in(const struct sbx_profile *prof, const struct run_place *pl,
		  const char *const argv[], int *exit_code, struct sbx_report **report,
		  struct sbx_error *err)
{
	struct sbx_account acc = { 0 };
	struct sbx_profile *p = NULL;
	struct sbx_session *s = NULL;
	struct sbx_report *r = NULL;
	struct sbx_run run;
	char path[PATH_MAX];
	const char *note = "";
	struct run_place place = *pl;
	int ret, code = 126;

	if (!prof || !argv || !argv[0] || !exit_code)
		return sbx_error_set(err, EINVAL, "run: missing argument");
	ret = program_path(argv[0], path, sizeof(path), err);
	if (ret)
		return ret;
	p = malloc(sizeof(*p));
	s = malloc(sizeof(*s));
	r = calloc(1, sizeof(*r));
	if (!p || !s || !r) {
		ret = sbx_error_set(err, ENOMEM, "run: out of memory");
		goto out;
	}
	ret = sbx_account_by_uid_passwd(getuid(), &acc, err);
	if (ret == -ENOENT) {
		/* A uid without a passwd entry (a container's, say): no home
		 * of its own, so one under the sandbox's /tmp. */
		acc.uid = getuid();
		acc.gid = getgid();
		snprintf(acc.user, sizeof(acc.user), "uid%u", (unsigned)acc.uid);
		sbx_strlcpy(acc.home, sizeof(acc.home), "/nonexistent");
		if (err)
			memset(err, 0, sizeof(*err));
		ret = 0;
	}
	if (ret)
		goto out;
	sbx_profile_copy(p, prof);
	ret = sbx_profile_expand(p, acc.user, acc.home, err);
	if (ret)
		goto out;
	/* The workspace: the caller's, else the profile's workspace_root,
	 * else none (then only the rest of the profile is validated). */
	if (!place.workspace && p->workspace_root[0])
		place.workspace = p->workspace_root;
	if (place.workspace && sbx_strlcpy(p->workspace_root, sizeof(p->workspace_root),
					   place.workspace) != 0) {
		ret = sbx_error_set(err, ENAMETOOLONG, "workspace %s: too long", place.workspace);
		goto out;
	}
	ret = place.workspace ? sbx_profile_validate(p, err) : sbx_profile_validate_ceiling(p, err);
	if (ret == 0)
		ret = caller_session(p, &place, &acc, s, &note, err);
	if (ret)
		goto out;
	memset(&run, 0, sizeof(run));
	run.profile = p;
	run.session = s;
	run.path = path;
	run.argv = (char *const *)argv;
	run.envp = environ;
	run.home_note = note;
	ret = sbx_run_confined(&run, r, &code, err);
	if (ret)
		goto out;
	*exit_code = code;
	if (report) {
		*report = r;
		r = NULL;
	}
out:
	sbx_account_free(&acc);
	free(p);
	free(s);
	free(r);
	return ret;
}

int sbx_run(const struct sbx_profile *p, const char *workspace, const char *const argv[],
	    int *exit_code, struct sbx_report **report, struct sbx_error *err)
{
	const struct run_place pl = { .workspace = workspace };

	return run_in(p, &pl, argv, exit_code, report, err);
}

/* ---- executor sets --------------------------------------------------------------- */

#define EXECUTOR_KEY_MAX 64

struct sbx_executor {
	struct sbx_executor_set *set;
	char key[EXECUTOR_KEY_MAX + 1];
	char home[SBX_PATH_MAX];
	char tmp[SBX_PATH_MAX];
	struct sbx_pin home_pin, tmp_pin;	/* the directories made for it */
};

struct sbx_executor_set {
	struct sbx_profile profile;	/* with the scratch root in deny_read */
	char root[PATH_MAX];		/* the path the walk took; shorter than SBX_PATH_MAX */
	int root_fd;			/* the directory the walk checked */
	unsigned max, n;
	struct sbx_executor *ex;
};

/* dir (a directory of the caller, no symlink, not writable by others),
 * created with mode when missing: an O_DIRECTORY fd, or -errno. */
static int own_dir_at(int at, const char *name, mode_t mode, const char *what,
		      struct sbx_error *err)
{
	struct stat st;
	int fd;

	if (mkdirat(at, name, mode) != 0 && errno != EEXIST)
		return sbx_error_set(err, errno, "%s %s: mkdir: %s", what, name, strerror(errno));
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sbx_error_set(err, errno, "%s %s: %s", what, name,
				     errno == ELOOP || errno == ENOTDIR ?
				     "not a directory (or a symlink)" : strerror(errno));
	if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 022)) {
		close(fd);
		return sbx_error_set(err, EPERM, "%s %s: %s", what, name,
				     "not the caller's own directory, or writable by others");
	}
	return fd;
}

/*
 * Every directory from "/" to the scratch root must be one no other user
 * can change: owned by root or the caller, and writable by others only
 * with the sticky bit (as /tmp: nobody may rename an entry of ours
 * there). It is checked on each fd of the walk that reaches the root, and
 * the root's fd is the one used, so the directory checked is the one the
 * keys are made in. The binds at run time go by the path that walk took:
 * with every directory on it closed to other users it still leads there,
 * and the binds check that it does (sbx_pin); the close goes through the
 * root's fd.
 * Checked and bound as two lookups of the name, a live attack had runs
 * bound to another user's directories: the caller's scratch was opened,
 * then realpath() followed that user's symlink, swapped meanwhile, to a
 * root-owned sticky directory holding its 0777 KEY/{home,tmp} (13 of 60
 * runs).
 */
static int scratch_dir_ok(const struct stat *st, const char *shown, void *arg,
			  struct sbx_error *err)
{
	(void)arg;
	if (!S_ISDIR(st->st_mode))
		return sbx_error_set(err, ENOTDIR, "%s is not a directory", shown);
	if ((st->st_uid != 0 && st->st_uid != getuid()) ||
	    ((st->st_mode & 022) && !(st->st_mode & S_ISVTX)))
		return sbx_error_set(err, EPERM, "%s can be changed by another user (owner uid "
				     "%u, mode %04o): refusing", shown, (unsigned)st->st_uid,
				     (unsigned)(st->st_mode & 07777));
	return 0;
}

/*
 * The scratch root, walked once from "/" (sbx_path_walk: a symlink is
 * followed only when root's, in a directory only root may write; another
 * user's is refused), every step checked by scratch_dir_ok, the root made
 * 0700 when missing. It must then be the caller's own and closed to
 * others. real gets the path the walk took, *fd_out a readable fd of the
 * directory it checked. Callers take absolute paths only (a relative one
 * is refused by the walk).
 */
static int scratch_root_open(const char *scratch_root, char real[PATH_MAX], int *fd_out,
			     struct sbx_error *err)
{
	const struct sbx_walk_opts o = { .check = scratch_dir_ok, .create_mode = 0700 };
	struct sbx_error why = { 0 };
	struct stat st;
	int pfd = -1, fd, r;

	r = sbx_path_walk(scratch_root, &o, real, PATH_MAX, &pfd, &why);
	if (r)
		return sbx_error_set(err, -r, "scratch root %s: %s", scratch_root, why.msg);
	/* Listing (the cap) needs a readable fd: the checked inode itself. */
	fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return sbx_error_set(err, errno, "scratch root %s: %s", real, strerror(errno));
	if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 022))
		r = sbx_error_set(err, EPERM, "scratch root %s: not the caller's own directory, "
				  "or writable by others", real);
	else if (strlen(real) + EXECUTOR_KEY_MAX + 6 >= SBX_PATH_MAX)
		r = sbx_error_set(err, ENAMETOOLONG, "scratch root %s: path too long", real);
	if (r) {
		close(fd);
		return r;
	}
	*fd_out = fd;
	return 0;
}

int sbx_executor_set_new(const struct sbx_profile *p, const char *scratch_root, unsigned max,
			 struct sbx_executor_set **out, struct sbx_error *err)
{
	struct sbx_executor_set *set;
	int fd = -1, r;

	if (!p || !scratch_root || !out || max == 0)
		return sbx_error_set(err, EINVAL, "executor set: missing argument (or a cap of 0)");
	if (scratch_root[0] != '/')
		return sbx_error_set(err, EINVAL, "executor set: scratch root %s is not absolute",
				     scratch_root);
	if (p->n_deny_read >= SBX_MAX_DENY)
		return sbx_error_set(err, E2BIG, "executor set: profile %s has no room for the "
				     "scratch root in deny_read", p->name);
	set = calloc(1, sizeof(*set));
	if (!set)
		return sbx_error_set(err, ENOMEM, "executor set: out of memory");
	set->ex = calloc(max, sizeof(*set->ex));
	r = set->ex ? scratch_root_open(scratch_root, set->root, &fd, err) :
		      sbx_error_set(err, ENOMEM, "executor set: out of memory");
	if (r) {
		free(set->ex);
		free(set);
		return r;
	}
	set->root_fd = fd;
	set->max = max;
	sbx_profile_copy(&set->profile, p);
	/* Every executor's view: the scratch root masked, only its own home
	 * and tmp bound back (at $HOME and /tmp). */
	sbx_strlcpy(set->profile.deny_read[set->profile.n_deny_read++], SBX_PATH_MAX, set->root);
	*out = set;
	return 0;
}

static bool key_ok(const char *key)
{
	size_t n = strlen(key);

	if (n == 0 || n > EXECUTOR_KEY_MAX || !strcmp(key, ".") || !strcmp(key, ".."))
		return false;
	return strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") ==
	       n;
}

/* The directories under scratch_root that are executors (counted against
 * a cap by callers that hold no set). Count and creation are two steps:
 * runs started at the same instant may pass a full cap by the few that
 * raced (measured: none in 36 concurrent tries); the cap bounds disk use,
 * not isolation. */
static unsigned count_executors(int root_fd)
{
	unsigned n = 0;
	int fd = dup(root_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (!key_ok(de->d_name))
			continue;
		/* d_type is DT_UNKNOWN on some filesystems: ask. */
		if (de->d_type == DT_DIR ||
		    (de->d_type == DT_UNKNOWN &&
		     fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		     S_ISDIR(st.st_mode)))
			n++;
	}
	closedir(d);
	return n;
}

/* Executor key in the checked scratch root rfd (real: the path its walk
 * took); sbx_executor_place says the rest. */
static int executor_place_at(int rfd, const char *real, const char *key, unsigned max,
			     bool fresh, char root[SBX_PATH_MAX], char home[SBX_PATH_MAX],
			     char tmp[SBX_PATH_MAX], struct sbx_pin *home_pin,
			     struct sbx_pin *tmp_pin, struct sbx_error *err)
{
	struct sbx_pin pins[2];
	struct stat st;
	int kfd, fd, r = 0;

	if (!key_ok(key))
		return sbx_error_set(err, EINVAL, "executor key '%.80s': 1-%d of [A-Za-z0-9._-], "
				     "not . or ..", key, EXECUTOR_KEY_MAX);
	if (fresh && fstatat(rfd, key, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return sbx_error_set(err, EEXIST, "scratch root %s: %s is left from an earlier "
				     "set (a close that could not remove it): remove it first",
				     real, key);
	if (fstatat(rfd, key, &st, AT_SYMLINK_NOFOLLOW) != 0 && count_executors(rfd) >= max)
		return sbx_error_set(err, EUSERS, "scratch root %s: cap of %u executors reached; "
				     "key %s refused", real, max, key);
	kfd = own_dir_at(rfd, key, 0700, "executor", err);
	if (kfd < 0)
		return kfd;
	for (int i = 0; i < 2; i++) {
		fd = own_dir_at(kfd, i ? "tmp" : "home", 0700, "executor directory", err);
		if (fd < 0) {
			close(kfd);
			return fd;
		}
		r = sbx_pin_fd(fd, &pins[i]);
		close(fd);
		if (r) {
			close(kfd);
			return sbx_error_set(err, -r, "executor %s: fstat: %s", key, strerror(-r));
		}
	}
	close(kfd);
	/* Lengths checked when the root was opened: real + key + "/home" fit. */
	if (sbx_strlcpy(root, SBX_PATH_MAX, real) != 0 ||
	    sbx_snprintf(home, SBX_PATH_MAX, "%s/%s/home", real, key) != 0 ||
	    sbx_snprintf(tmp, SBX_PATH_MAX, "%s/%s/tmp", real, key) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "executor %s: path too long", key);
	*home_pin = pins[0];
	*tmp_pin = pins[1];
	return 0;
}

int sbx_executor_place(const char *scratch_root, const char *key, unsigned max, bool fresh,
		       char root[SBX_PATH_MAX], char home[SBX_PATH_MAX], char tmp[SBX_PATH_MAX],
		       struct sbx_pin *home_pin, struct sbx_pin *tmp_pin, struct sbx_error *err)
{
	char real[PATH_MAX];
	int rfd, r;

	if (!key_ok(key))
		return sbx_error_set(err, EINVAL, "executor key '%.80s': 1-%d of [A-Za-z0-9._-], "
				     "not . or ..", key, EXECUTOR_KEY_MAX);
	r = scratch_root_open(scratch_root, real, &rfd, err);
	if (r)
		return r;
	r = executor_place_at(rfd, real, key, max, fresh, root, home, tmp, home_pin, tmp_pin,
			      err);
	close(rfd);
	return r;
}

int sbx_executor_for(struct sbx_executor_set *set, const char *key, struct sbx_executor **out,
		     struct sbx_error *err)
{
	char root[SBX_PATH_MAX];
	struct sbx_executor *e;
	int r;

	if (!set || !key || !out)
		return sbx_error_set(err, EINVAL, "executor: missing argument");
	if (!key_ok(key))
		return sbx_error_set(err, EINVAL, "executor key '%.80s': 1-%d of [A-Za-z0-9._-], "
				     "not . or ..", key, EXECUTOR_KEY_MAX);
	for (unsigned i = 0; i < set->n; i++) {
		if (strcmp(set->ex[i].key, key) == 0) {
			*out = &set->ex[i];
			return 0;
		}
	}
	if (set->n == set->max)
		return sbx_error_set(err, EUSERS, "executor set %s: cap of %u executors reached; "
				     "key %s refused", set->root, set->max, key);
	e = &set->ex[set->n];
	/* From the set's checked root, not its name walked again. */
	r = executor_place_at(set->root_fd, set->root, key, UINT_MAX, true, root, e->home, e->tmp,
			      &e->home_pin, &e->tmp_pin, err);
	if (r)
		return r;
	sbx_strlcpy(e->key, sizeof(e->key), key);
	e->set = set;
	set->n++;
	*out = e;
	return 0;
}

int sbx_executor_home_mountpoint(const char *key, const char *tmp, const struct sbx_pin *tmp_pin,
				 struct sbx_error *err)
{
	struct stat st;
	int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return sbx_error_set(err, errno, "executor %s: %s: %s", key, tmp, strerror(errno));
	if (fstat(fd, &st) != 0 || !sbx_pin_holds(tmp_pin, &st)) {
		close(fd);
		return sbx_error_set(err, ESTALE, "executor %s: %s is not the directory made for "
				     "it (moved or replaced since): refusing", key, tmp);
	}
	if (mkdirat(fd, "home", 0700) != 0 && errno != EEXIST) {
		close(fd);
		return sbx_error_set(err, errno, "executor %s: %s/home: %s", key, tmp,
				     strerror(errno));
	}
	if (fstatat(fd, "home", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
		close(fd);
		return sbx_error_set(err, ENOTDIR, "executor %s: %s/home is not a directory "
				     "(the program replaced it): refusing", key, tmp);
	}
	close(fd);
	return 0;
}

int sbx_executor_view_ok(const struct sbx_profile *p, bool private_netns, const char *key,
			 struct sbx_error *err)
{
	const struct sbx_decide_opts opts = { .private_netns = private_netns };
	const struct sbx_probe *probe;
	struct sbx_decision d;
	int ret;

	ret = sbx_probe_get(&probe, err);
	if (ret == 0)
		ret = sbx_decide(p, probe, &opts, &d, err);
	if (ret)
		return ret;
	if (!d.ns)
		return sbx_error_set(err, EOPNOTSUPP, "executor %s: refused: executors are kept "
				     "apart by the mount view, which this host cannot give (%s)",
				     key, d.ns_why);
	return 0;
}

int sbx_executor_home(const char *key, const char *root, const char *tmp,
		      const struct sbx_pin *tmp_pin, bool home_in_tmp, char *note, size_t note_size,
		      struct sbx_error *err)
{
	if (home_in_tmp) {
		int ret = sbx_executor_home_mountpoint(key, tmp, tmp_pin, err);

		if (ret)
			return ret;
	}
	snprintf(note, note_size, "executor %s's own home (siblings under %s masked)", key, root);
	return 0;
}

int sbx_executor_run(struct sbx_executor *e, const char *workspace, const char *const argv[],
		     int *exit_code, struct sbx_report **report, struct sbx_error *err)
{
	char note[PATH_MAX + 128];
	struct run_place pl = { .workspace = workspace };
	int ret;

	if (!e)
		return sbx_error_set(err, EINVAL, "executor: missing argument");
	ret = sbx_executor_view_ok(&e->set->profile, false, e->key, err);
	if (ret == 0)
		ret = sbx_executor_home(e->key, e->set->root, e->tmp, &e->tmp_pin, true, note,
					sizeof(note), err);
	if (ret)
		return ret;
	pl.home_source = e->home;
	pl.tmp_source = e->tmp;
	pl.home_pin = e->home_pin;
	pl.tmp_pin = e->tmp_pin;
	pl.home_note = note;
	return run_in(&e->set->profile, &pl, argv, exit_code, report, err);
}

/* The scratch root's own name in its parent, removed if it is still the
 * directory the set checked (and empty). */
static int scratch_root_remove(const struct sbx_executor_set *set)
{
	const char *base = strrchr(set->root, '/');
	struct sbx_pin pin;
	struct stat st;
	int parent, r;

	if (!base || !base[1] || sbx_pin_fd(set->root_fd, &pin) != 0)
		return -EINVAL;
	parent = openat(set->root_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0)
		return -errno;
	if (fstatat(parent, base + 1, &st, AT_SYMLINK_NOFOLLOW) != 0)
		r = -errno;
	else if (!sbx_pin_holds(&pin, &st))
		r = -ESTALE;
	else
		r = unlinkat(parent, base + 1, AT_REMOVEDIR) == 0 ? 0 : -errno;
	close(parent);
	return r == -ENOENT ? 0 : r;
}

int sbx_executor_set_close(struct sbx_executor_set *set, struct sbx_error *err)
{
	int r = 0, e;

	if (!set)
		return 0;
	for (unsigned i = 0; i < set->n; i++) {
		char path[PATH_MAX];

		/* Through the checked root's fd, whatever its name leads to
		 * now: what a close removes is what the set made. */
		e = sbx_snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", set->root_fd,
				 set->ex[i].key) ? -ENAMETOOLONG : sbx_remove_tree(path);
		if (e && !r)
			r = sbx_error_set(err, -e, "executor %s: removing %s/%s: %s", set->ex[i].key,
					  set->root, set->ex[i].key, strerror(-e));
	}
	e = scratch_root_remove(set);
	if (e && !r)
		r = sbx_error_set(err, -e, "scratch root %s: rmdir: %s", set->root,
				  e == -ESTALE ? "its name now leads to another directory" :
				  strerror(-e));
	close(set->root_fd);
	free(set->ex);
	free(set);
	return r;
}
