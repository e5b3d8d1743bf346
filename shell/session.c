/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * session.c — who is running, which profile applies, and the session's
 * paths. Everything here only reads; nothing is enforced yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shell.h"

/* A candidate config named by -f (an admin verb's), or "" for the live one. */
static char candidate[PATH_MAX + 256];

/* "./draft.conf" -> "/abs/dir/draft.conf": the directory is resolved, the
 * last component kept as given, so a symlinked config is still refused.
 * realpath() only spells the path: nothing is opened here, and the load
 * walks the result from "/" on fds with the trust checks (a directory
 * someone else could change on the way refuses it). */
int shell_config_use(const char *file)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(file, '/');
	const char *base = slash ? slash + 1 : file;

	if (file[0] == '/')
		return sbx_strlcpy(candidate, sizeof(candidate), file);
	if (slash) {
		if ((size_t)(slash - file) >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, file, (size_t)(slash - file));
		dir[slash - file] = '\0';
	} else {
		dir[0] = '.';
		dir[1] = '\0';
	}
	if (!realpath(dir, real))
		return -errno;
	return sbx_snprintf(candidate, sizeof(candidate), "%s/%s", strcmp(real, "/") ? real : "",
			    base);
}

bool shell_config_is_candidate(void)
{
	return candidate[0] != '\0';
}

int shell_config_load(struct sbx_config **out, struct sbx_error *err)
{
	int ret;

	ret = sbx_config_load(shell_config_path(), 0, out, err);
	/* No live config means no agent accounts; a candidate that is not
	 * there is an error of the admin's. */
	if (ret == -ENOENT && !shell_config_is_candidate()) {
		*out = NULL;
		return 0;
	}
	/* Read as this user: the admin's fix is to make it readable. */
	if (ret == -EACCES && err) {
		char cause[sizeof(err->msg)];

		memcpy(cause, err->msg, sizeof(cause));
		sbx_error_set(err, EACCES, "%s (agent-shell reads the config as the user it runs "
			      "as; agent-shell --check-config, run as root, names what to make "
			      "readable)", cause);
	}
	return ret;
}

const char *shell_config_path(void)
{
	if (candidate[0])
		return candidate;
#ifdef SBX_TESTING
	/* Test build only: the shipped binary has no way to pick its config. */
	if (getenv("SBX_TEST_CONFIG"))
		return getenv("SBX_TEST_CONFIG");
#endif
	return SBX_CONFIG_PATH;
}

/* The caller's identity: its passwd entry, and its groups only when the
 * config has group rules (shell_identity_groups), the one thing a session
 * needs them for. */
int shell_identity(struct sbx_account *id, struct sbx_error *err)
{
	return sbx_account_by_uid_passwd(getuid(), id, err);
}

int shell_identity_groups(const struct sbx_config *cfg, struct sbx_account *id,
			  struct sbx_error *err)
{
	return sbx_config_has_group_rules(cfg) ? sbx_account_load_groups(id, err) : 0;
}

/* Membership of these gives an account authority outside any sandbox. */
bool shell_group_is_privileged(const char *group)
{
	static const char *const privileged[] = {
		"root", "sudo", "wheel", "adm", "docker", "lxd", "disk",
	};

	for (size_t i = 0; i < ARRAY_SIZE(privileged); i++)
		if (!strcmp(group, privileged[i]))
			return true;
	return false;
}

void shell_new_session_id(char out[40])
{
	if (sbx_session_id_new(out, NULL) != 0) {
		/* No entropy source: still unique on this host. */
		snprintf(out, 40, "%016llx%016llx", (unsigned long long)getpid(),
			 (unsigned long long)time(NULL));
	}
}

/* A profile field by field wider than its ceiling? Names the first one. */
static bool wider_field(const struct sbx_profile *want, const struct sbx_profile *got,
			char *why, size_t size)
{
#define CHECK_ACCESS(f)                                                              \
	if (want->f != got->f) {                                                     \
		snprintf(why, size, "%s %s exceeds the assigned %s", #f,               \
			 sbx_access_name(want->f), sbx_access_name(got->f));           \
		return true;                                                         \
	}
	CHECK_ACCESS(workspace_read)
	CHECK_ACCESS(workspace_write)
	CHECK_ACCESS(host_read)
	CHECK_ACCESS(host_write)
	CHECK_ACCESS(network)
	CHECK_ACCESS(command)
#undef CHECK_ACCESS
	if (want->home != got->home) {
		snprintf(why, size, "home %s exceeds the assigned %s",
			 sbx_home_name(want->home), sbx_home_name(got->home));
		return true;
	}
	if (want->isolation != got->isolation) {
		snprintf(why, size, "isolation %s exceeds the assigned %s",
			 sbx_isolation_name(want->isolation), sbx_isolation_name(got->isolation));
		return true;
	}
	for (size_t i = 0; i < want->n_roots; i++) {
		const char *path = want->roots[i].path;

		if (sbx_profile_path_access(got, path, false) < want->roots[i].read ||
		    sbx_profile_path_access(got, path, true) < want->roots[i].write) {
			snprintf(why, size, "root %s exceeds the assigned access", path);
			return true;
		}
	}
	for (size_t l = 0; l < SBX_LIMIT_COUNT; l++) {
		if ((got->limits.set_mask & (1u << l)) &&
		    (!(want->limits.set_mask & (1u << l)) ||
		     want->limits.value[l] > got->limits.value[l])) {
			snprintf(why, size, "limit %s exceeds the assigned one",
				 sbx_limit_name((enum sbx_limit)l));
			return true;
		}
	}
	return false;
}

/*
 * Resolve the effective profile:
 *   ceiling = host ceiling, narrowed to the account's assigned profile when
 *             the caller is an agent account;
 *   result  = Restrict(requested, ceiling).
 * An agent asking for something wider is refused (not silently narrowed),
 * so what it asked for and what it got never differ unnoticed.
 */
/* Long on purpose: the request/ceiling/result steps of Restrict with their
 * refusals, in order. */
int shell_resolve_profile(const struct sbx_config *cfg, const struct sbx_account *id,
			  const char *want_profile, const char *want_workspace,
			  bool login_mode, struct sbx_profile *out, bool *is_agent,
			  struct sbx_error *err)
{
	struct sbx_profile *req = NULL, *ceil = NULL, *tmp = NULL;
	char why[256];
	int ret;

	*is_agent = false;
	req = calloc(1, sizeof(*req));
	ceil = calloc(1, sizeof(*ceil));
	tmp = calloc(1, sizeof(*tmp));
	if (!req || !ceil || !tmp) {
		ret = sbx_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (cfg) {
		/* The assigned profile, narrowed by the host ceiling, is the
		 * most this account can ever get (the PAM stage's own). */
		ret = sbx_account_profile(cfg, id, ceil, err);
		if (ret == 0)
			*is_agent = true;
		else if (ret != -ENOENT)
			goto out;
		else
			sbx_profile_copy(ceil, &cfg->ceiling);
	} else {
		sbx_profile_reset_open(ceil);	/* calloc'd */
	}
	if (login_mode && !*is_agent) {
		if (cfg)
			ret = sbx_error_set(err, EPERM,
					    "%s is not an agent account in %s; refusing to run a session",
					    id->user, shell_config_path());
		else
			ret = sbx_error_set(err, EPERM,
					    "no configuration at %s; refusing to run a login session for %s",
					    shell_config_path(), id->user);
		goto out;
	}
	if (want_profile) {
		const struct sbx_profile *named;

		if (!cfg) {
			ret = sbx_error_set(err, ENOENT, "--profile %s: no configuration at %s",
					    want_profile, shell_config_path());
			goto out;
		}
		named = sbx_config_find_profile(cfg, want_profile);
		if (!named) {
			ret = sbx_error_set(err, ENOENT, "--profile %s: no such profile in %s",
					    want_profile, shell_config_path());
			goto out;
		}
		sbx_profile_copy(req, named);
	} else if (*is_agent && !want_workspace) {
		/* The account's own profile, exactly as the PAM stage has it
		 * (the record's hash is checked against it). */
		ret = sbx_profile_validate(ceil, err);
		if (ret == 0)
			sbx_profile_copy(out, ceil);
		goto out;
	} else if (*is_agent) {
		sbx_profile_copy(req, ceil);
	} else {
		sbx_profile_reset_default(req);	/* calloc'd */
	}
	if (want_workspace) {
		char real[PATH_MAX];

		struct sbx_error cause = { 0 };
		char abs[PATH_MAX];

		/* Relative to the caller's cwd, then resolved as the
		 * workspace is (untrusted symlinks refused). */
		if (want_workspace[0] != '/') {
			if (!getcwd(abs, sizeof(abs)) ||
			    sbx_snprintf(real, sizeof(real), "%s/%s", abs, want_workspace) != 0) {
				ret = sbx_error_set(err, ENAMETOOLONG, "--workspace %s: too long",
						    want_workspace);
				goto out;
			}
		} else if (sbx_strlcpy(real, sizeof(real), want_workspace) != 0) {
			ret = sbx_error_set(err, ENAMETOOLONG, "--workspace %s: too long",
					    want_workspace);
			goto out;
		}
		memcpy(abs, real, sizeof(abs));
		ret = sbx_path_resolve_trusted(abs, real, sizeof(real), &cause);
		if (ret) {
			ret = sbx_error_set(err, -ret, "--workspace %s: %s", want_workspace, cause.msg);
			goto out;
		}
		ret = sbx_strlcpy(req->workspace_root, sizeof(req->workspace_root), real);
		if (ret) {
			ret = sbx_error_set(err, ENAMETOOLONG, "--workspace %s: too long", real);
			goto out;
		}
	}
	if (!req->workspace_root[0]) {
		ret = sbx_error_set(err, EINVAL,
				    "profile %s has no workspace_root; pass --workspace DIR",
				    req->name);
		goto out;
	}
	ret = sbx_profile_expand(req, id->user, id->home, err);
	if (ret)
		goto out;
	ret = sbx_profile_restrict(req, ceil, tmp, err);
	if (ret)
		goto out;
	if (*is_agent && (want_profile || want_workspace) && wider_field(req, tmp, why, sizeof(why))) {
		ret = sbx_error_set(err, EPERM, "refused: requested profile %s is wider than %s's assigned profile: %s",
				    req->name, id->user, why);
		goto out;
	}
	ret = sbx_profile_validate(tmp, err);
	if (ret)
		goto out;
	sbx_profile_copy(out, tmp);
out:
	free(req);
	free(ceil);
	free(tmp);
	return ret;
}

/* Where the isolated home lives when the PAM stage did not bind it. */
static bool isolated_home_ready(const struct sbx_config *cfg, const struct sbx_account *id,
				char *path, size_t size)
{
	struct stat st;
	int fd;

	if (!cfg || sbx_snprintf(path, size, "%s/homes/%s", cfg->state_dir, id->user) != 0)
		return false;
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || st.st_uid != id->uid || (st.st_mode & 0022)) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

int shell_build_session(const struct sbx_config *cfg, const struct sbx_account *id,
			const struct sbx_profile *p, const char *service, bool pam_stage,
			struct sbx_session *s, char *home_note, size_t note_size,
			struct sbx_error *err)
{
	char real[PATH_MAX];
	const char *sid = getenv("AGENT_SANDBOX_SESSION");
	const char *conn = getenv("SSH_CONNECTION");
	struct stat st;

	memset(s, 0, sizeof(*s));
	home_note[0] = '\0';
	s->uid = id->uid;
	s->gid = id->gid;
	sbx_strlcpy(s->user, sizeof(s->user), id->user);
	sbx_strlcpy(s->service, sizeof(s->service), service);
	if (pam_stage && sid)
		sbx_strlcpy(s->session_id, sizeof(s->session_id), sid);
	else
		shell_new_session_id(s->session_id);
	if (conn && conn[0]) {
		size_t n = strcspn(conn, " ");

		if (n >= sizeof(s->client))
			n = sizeof(s->client) - 1;
		memcpy(s->client, conn, n);
		s->client[n] = '\0';
	} else {
		sbx_strlcpy(s->client, sizeof(s->client), "local");
	}

	/*
	 * Not realpath(3): where workspace_root sits under a directory the
	 * agent may write, it could swap the workspace for a symlink to any
	 * host directory it can write (/dev/shm, say), which would then become
	 * a read-write bind and a Landlock write grant. Only root-owned links
	 * in root-only directories are followed; the mount view then opens the
	 * resolved path without following any link, and must find there the
	 * directory this walk found (workspace_pin), so a swap after this
	 * fails the session.
	 */
	{
		struct sbx_error why = { 0 };
		int fd = -1, r = sbx_path_walk(p->workspace_root, NULL, real, sizeof(real), &fd,
					       &why);

		if (r)
			return sbx_error_set(err, -r, "workspace %s: %s", p->workspace_root, why.msg);
		r = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
		close(fd);
		if (!r)
			return sbx_error_set(err, ENOTDIR, "workspace %s: not a directory", real);
		s->workspace_pin = sbx_pin_of(&st);
	}
	if (sbx_strlcpy(s->workspace, sizeof(s->workspace), real))
		return sbx_error_set(err, ENAMETOOLONG, "workspace %s: too long", real);

	/* $HOME inside: the passwd home when it exists as a directory;
	 * accounts such as nobody (/nonexistent) get a home under the
	 * sandbox's private /tmp. */
	if (stat(id->home, &st) == 0 && S_ISDIR(st.st_mode) && strcmp(id->home, "/") != 0)
		sbx_strlcpy(s->home, sizeof(s->home), id->home);
	else
		sbx_strlcpy(s->home, sizeof(s->home), "/tmp/home");

	switch (p->home) {
	case SBX_HOME_REAL:
		if (strcmp(s->home, id->home) != 0)
			return sbx_error_set(err, ENOENT, "home = real but %s has no home directory (%s)",
					     id->user, id->home);
		sbx_strlcpy(s->home_source, sizeof(s->home_source), id->home);
		snprintf(home_note, note_size, "the real home %s", id->home);
		break;
	case SBX_HOME_ISOLATED:
		if (pam_stage) {
			/* The PAM stage bound the isolated home here. */
			sbx_strlcpy(s->home_source, sizeof(s->home_source), s->home);
			snprintf(home_note, note_size, "isolated home bound by the PAM stage");
		} else if (isolated_home_ready(cfg, id, s->home_source, sizeof(s->home_source))) {
			snprintf(home_note, note_size, "isolated home %s", s->home_source);
		} else {
			s->home_source[0] = '\0';
			snprintf(home_note, note_size,
				 "isolated home requested but not prepared (no PAM stage): a fresh tmpfs instead");
		}
		break;
	case SBX_HOME_EPHEMERAL:
		s->home_source[0] = '\0';
		snprintf(home_note, note_size, "ephemeral tmpfs home");
		break;
	}
	return 0;
}
