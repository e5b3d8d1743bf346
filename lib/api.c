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
	if (pl->tmp_source)
		sbx_strlcpy(s->tmp_source, sizeof(s->tmp_source), pl->tmp_source);
	if (pl->home_source) {
		sbx_strlcpy(s->home_source, sizeof(s->home_source), pl->home_source);
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
};

struct sbx_executor_set {
	struct sbx_profile profile;	/* with the scratch root in deny_read */
	char root[PATH_MAX];		/* realpath; shorter than SBX_PATH_MAX */
	int root_fd;
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
 * The scratch root (real path) and every directory above it must be ones
 * no other user can change: owned by root or the caller, and writable by
 * others only with the sticky bit (as /tmp: nobody may rename an entry of
 * ours there). Everything after this check (the binds at run time, the
 * removal at close) goes by path; under a parent another user may write,
 * a rename between the check and the use would hand a run the other
 * user's directories, or make close delete somewhere else.
 */
static int scratch_dir_ok(const char *real, const char *path, struct sbx_error *err)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return sbx_error_set(err, errno, "scratch root %s: %s: %s", real, path,
				     strerror(errno));
	if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != getuid()) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)))
		return sbx_error_set(err, EPERM, "scratch root %s: %s can be changed by another user "
				     "(owner uid %u, mode %04o): refusing", real, path,
				     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 0;
}

static int scratch_ancestors_ok(const char *real, struct sbx_error *err)
{
	char path[SBX_PATH_MAX];
	size_t n = strlen(real);
	int r;

	if (n >= sizeof(path))
		return sbx_error_set(err, ENAMETOOLONG, "scratch root %s: path too long", real);
	r = scratch_dir_ok(real, "/", err);
	for (size_t i = 1; r == 0 && i <= n; i++) {
		if (i < n && real[i] != '/')
			continue;
		memcpy(path, real, i);
		path[i] = '\0';
		r = scratch_dir_ok(real, path, err);
	}
	return r;
}

int sbx_executor_set_new(const struct sbx_profile *p, const char *scratch_root, unsigned max,
			 struct sbx_executor_set **out, struct sbx_error *err)
{
	struct sbx_executor_set *set;
	int fd;

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
	fd = set->ex ? own_dir_at(AT_FDCWD, scratch_root, 0700, "scratch root", err) :
		       sbx_error_set(err, ENOMEM, "executor set: out of memory");
	if (fd >= 0 && !realpath(scratch_root, set->root)) {
		close(fd);
		fd = sbx_error_set(err, errno, "scratch root %s: %s", scratch_root, strerror(errno));
	}
	if (fd >= 0 && strlen(set->root) + EXECUTOR_KEY_MAX + 6 >= SBX_PATH_MAX) {
		close(fd);
		fd = sbx_error_set(err, ENAMETOOLONG, "scratch root %s: path too long", set->root);
	}
	if (fd >= 0) {
		int r = scratch_ancestors_ok(set->root, err);

		if (r) {
			close(fd);
			fd = r;
		}
	}
	if (fd < 0) {
		free(set->ex);
		free(set);
		return fd;
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

int sbx_executor_place(const char *scratch_root, const char *key, unsigned max, bool fresh,
		       char root[SBX_PATH_MAX], char home[SBX_PATH_MAX], char tmp[SBX_PATH_MAX],
		       struct sbx_error *err)
{
	char real[PATH_MAX];
	struct stat st;
	int rfd, kfd, fd, r = 0;

	if (!key_ok(key))
		return sbx_error_set(err, EINVAL, "executor key '%.80s': 1-%d of [A-Za-z0-9._-], "
				     "not . or ..", key, EXECUTOR_KEY_MAX);
	rfd = own_dir_at(AT_FDCWD, scratch_root, 0700, "scratch root", err);
	if (rfd < 0)
		return rfd;
	if (!realpath(scratch_root, real))
		r = sbx_error_set(err, errno, "scratch root %s: %s", scratch_root, strerror(errno));
	else if (strlen(real) + EXECUTOR_KEY_MAX + 6 >= SBX_PATH_MAX)
		r = sbx_error_set(err, ENAMETOOLONG, "scratch root %s: path too long", real);
	else
		r = scratch_ancestors_ok(real, err);
	if (r == 0 && fresh && fstatat(rfd, key, &st, AT_SYMLINK_NOFOLLOW) == 0)
		r = sbx_error_set(err, EEXIST, "scratch root %s: %s is left from an earlier set "
				  "(a close that could not remove it): remove it first", real, key);
	if (r == 0 && fstatat(rfd, key, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
	    count_executors(rfd) >= max)
		r = sbx_error_set(err, EUSERS, "scratch root %s: cap of %u executors reached; key %s "
				  "refused", real, max, key);
	if (r) {
		close(rfd);
		return r;
	}
	kfd = own_dir_at(rfd, key, 0700, "executor", err);
	close(rfd);
	if (kfd < 0)
		return kfd;
	for (int i = 0; i < 2; i++) {
		fd = own_dir_at(kfd, i ? "tmp" : "home", 0700, "executor directory", err);
		if (fd < 0) {
			close(kfd);
			return fd;
		}
		close(fd);
	}
	close(kfd);
	/* Lengths checked above: real + key + "/home" fit. */
	if (sbx_strlcpy(root, SBX_PATH_MAX, real) != 0 ||
	    sbx_snprintf(home, SBX_PATH_MAX, "%s/%s/home", real, key) != 0 ||
	    sbx_snprintf(tmp, SBX_PATH_MAX, "%s/%s/tmp", real, key) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "executor %s: path too long", key);
	return 0;
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
	r = sbx_executor_place(set->root, key, UINT_MAX, true, root, e->home, e->tmp, err);
	if (r)
		return r;
	sbx_strlcpy(e->key, sizeof(e->key), key);
	e->set = set;
	set->n++;
	*out = e;
	return 0;
}

int sbx_executor_home_mountpoint(const char *key, const char *tmp, struct sbx_error *err)
{
	struct stat st;
	int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return sbx_error_set(err, errno, "executor %s: %s: %s", key, tmp, strerror(errno));
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

int sbx_executor_home(const char *key, const char *root, const char *tmp, bool home_in_tmp,
		      char *note, size_t note_size, struct sbx_error *err)
{
	if (home_in_tmp) {
		int ret = sbx_executor_home_mountpoint(key, tmp, err);

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
		ret = sbx_executor_home(e->key, e->set->root, e->tmp, true, note, sizeof(note), err);
	if (ret)
		return ret;
	pl.home_source = e->home;
	pl.tmp_source = e->tmp;
	pl.home_note = note;
	return run_in(&e->set->profile, &pl, argv, exit_code, report, err);
}

int sbx_executor_set_close(struct sbx_executor_set *set, struct sbx_error *err)
{
	int r = 0;

	if (!set)
		return 0;
	for (unsigned i = 0; i < set->n; i++) {
		char path[PATH_MAX];
		int e = sbx_snprintf(path, sizeof(path), "%s/%s", set->root, set->ex[i].key) ?
			-ENAMETOOLONG : sbx_remove_tree(path);

		if (e && !r)
			r = sbx_error_set(err, -e, "executor %s: removing %s/%s: %s", set->ex[i].key,
					  set->root, set->ex[i].key, strerror(-e));
	}
	close(set->root_fd);
	if (rmdir(set->root) != 0 && errno != ENOENT && !r)
		r = sbx_error_set(err, errno, "scratch root %s: rmdir: %s", set->root,
				  strerror(errno));
	free(set->ex);
	free(set);
	return r;
}
