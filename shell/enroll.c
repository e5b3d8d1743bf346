/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * enroll.c — agent-shell --enroll / --unenroll: make an account an agent
 * account (login shell, group, workspace, isolated home) and undo it,
 * printing every change. The config file is never edited: the [match]
 * line to add is printed instead. Accounts, workspaces and homes are
 * never deleted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shell.h"

#define DEFAULT_SKEL "/etc/agent-sandbox/skel"
#define DEFAULT_UNENROLL_SHELL "/bin/bash"
#define USER_NAME_MAX 32	/* useradd's limit on Linux */

struct enroll_opts {
	bool unenroll;
	const char *user;
	const char *profile;
	const char *group;
	const char *workspace;
	const char *shell;
};

/* useradd & co. from a fixed place, with a fixed environment: root runs
 * them with an argv we built, never through a shell. */
static const char *tool_path(const char *name, char *buf, size_t size)
{
	static const char *const dirs[] = { "/usr/sbin", "/sbin", "/usr/bin", "/bin" };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		if (sbx_snprintf(buf, size, "%s/%s", dirs[i], name) == 0 && access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

/* argv: the tool's name, its arguments, NULL. */
static int run_tool_argv(const char *const *argv, struct sbx_error *err)
{
	static char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	const char *name = argv[0];
	char path[64];
	int status;
	pid_t pid;

	if (!tool_path(name, path, sizeof(path)))
		return sbx_error_set(err, ENOENT, "%s: not found in /usr/sbin, /sbin, /usr/bin, /bin",
				     name);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return sbx_error_set(err, errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* The tools write into /etc with root's umask, not ours. */
		umask(022);
		execve(path, (char *const *)argv, envp);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return sbx_error_set(err, errno, "waitpid(%s): %s", name, strerror(errno));
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return sbx_error_set(err, EIO, "%s %s%s%s: failed (%s %d)", name,
				     argv[1] ? argv[1] : "", argv[1] && argv[2] ? " " : "",
				     argv[1] && argv[2] ? argv[2] : "",
				     WIFEXITED(status) ? "exit" : "signal",
				     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}

#define run_tool(err, ...) run_tool_argv((const char *const[]){ __VA_ARGS__, NULL }, err)

static bool in_group(const char *user, const char *group)
{
	struct group *gr = getgrnam(group);
	struct passwd *pw;

	if (!gr)
		return false;
	for (char **m = gr->gr_mem; m && *m; m++) {
		if (!strcmp(*m, user))
			return true;
	}
	pw = getpwnam(user);
	return pw && pw->pw_gid == gr->gr_gid;
}

static bool supplementary_member(const char *user, const char *group)
{
	struct group *gr = getgrnam(group);

	for (char **m = gr ? gr->gr_mem : NULL; m && *m; m++) {
		if (!strcmp(*m, user))
			return true;
	}
	return false;
}

/*
 * mkdir -p from "/" on directory fds (O_NOFOLLOW each step, so a symlink
 * planted on the way is refused, docs/design.md section 8): missing parents root-owned
 * 0755, the last component owned by uid:gid with mode. An existing last
 * directory is left exactly as it is (root never chowns a path an agent
 * may have prepared). *created says whether it was made.
 */
static int make_workspace(const char *path, uid_t uid, gid_t gid, mode_t mode, bool *created,
			  struct stat *st_out, struct sbx_error *err)
{
	char buf[SBX_PATH_MAX], *comp, *save = NULL, *next;
	int dirfd, fd = -1, ret = 0;

	*created = false;
	if (!sbx_path_is_canonical(path) || !strcmp(path, "/"))
		return sbx_error_set(err, EINVAL, "workspace %s: not an absolute canonical path", path);
	if (sbx_strlcpy(buf, sizeof(buf), path) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "workspace %s: too long", path);
	dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return sbx_error_set(err, errno, "open(/): %s", strerror(errno));
	for (comp = strtok_r(buf + 1, "/", &save); comp; comp = next) {
		bool last;

		next = strtok_r(NULL, "/", &save);
		last = next == NULL;
		fd = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			if (mkdirat(dirfd, comp, 0700) != 0 && errno != EEXIST) {
				ret = sbx_error_set(err, errno, "mkdir(%s, component %s): %s", path, comp,
						    strerror(errno));
				goto out;
			}
			fd = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 &&
			    ((last && fchown(fd, uid, gid) != 0) || fchmod(fd, last ? mode : 0755) != 0)) {
				ret = sbx_error_set(err, errno, "chown/chmod(%s): %s", path,
						    strerror(errno));
				goto out;
			}
			if (fd >= 0 && last)
				*created = true;
		}
		if (fd < 0) {
			ret = sbx_error_set(err, errno, "open(%s, component %s): %s%s", path, comp,
					    strerror(errno),
					    errno == ELOOP || errno == ENOTDIR ? " (a symlink or file is on the way)" : "");
			goto out;
		}
		close(dirfd);
		dirfd = fd;
		fd = -1;
	}
	if (fstat(dirfd, st_out) != 0)
		ret = sbx_error_set(err, errno, "fstat(%s): %s", path, strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	close(dirfd);
	return ret;
}

/* The group the config's [match] rules use for profile (NULL: any). */
static const char *rule_group(const struct sbx_config *cfg, const char *profile)
{
	for (size_t i = 0; cfg && i < cfg->n_matches; i++) {
		const struct sbx_match *m = &cfg->matches[i];

		if (m->kind == SBX_MATCH_GROUP && (!profile || !strcmp(m->profile, profile)))
			return m->name;
	}
	return NULL;
}

static const struct sbx_match *rule_for(const struct sbx_config *cfg, enum sbx_match_kind kind,
					const char *name)
{
	for (size_t i = 0; cfg && i < cfg->n_matches; i++) {
		if (cfg->matches[i].kind == kind && !strcmp(cfg->matches[i].name, name))
			return &cfg->matches[i];
	}
	return NULL;
}

/* The group, the account with the agent shell, and its membership:
 * whatever is missing is made, each change printed and counted. pw: the
 * account before (NULL: none yet). A new account gets no subordinate uids
 * or gids (useradd adds a range by default where /etc/subuid exists): with
 * newuidmap, a process holding them maps a uid the session's sweep does not
 * know as the agent's (the doctor warns about existing ones). */
static int enroll_account(const struct enroll_opts *o, const struct sbx_config *cfg,
			  const char *group, struct passwd *pw, unsigned *changes,
			  struct sbx_error *err)
{
	int ret;

	if (!getgrnam(group)) {
		if ((ret = run_tool(err, "groupadd", "--system", group)) != 0)
			return ret;
		printf("created group %s\n", group);
		(*changes)++;
	}
	if (!pw) {
		if ((ret = run_tool(err, "useradd", "--create-home", "--shell",
				    cfg->agent_shell, "--key", "SUB_UID_COUNT=0", "--key",
				    "SUB_GID_COUNT=0", o->user)) != 0)
			return ret;
		pw = getpwnam(o->user);
		if (!pw)
			return sbx_error_set(err, ENOENT, "useradd %s: no passwd entry afterwards",
					     o->user);
		printf("created account %s (uid %u, home %s, login shell %s, password locked)\n",
		       o->user, (unsigned)pw->pw_uid, pw->pw_dir, pw->pw_shell);
		(*changes)++;
	} else if (strcmp(pw->pw_shell, cfg->agent_shell) != 0) {
		char old[SBX_PATH_MAX];

		sbx_strlcpy(old, sizeof(old), pw->pw_shell);
		if ((ret = run_tool(err, "usermod", "--shell", cfg->agent_shell, o->user)) != 0)
			return ret;
		printf("changed login shell of %s: %s -> %s\n", o->user, old, cfg->agent_shell);
		(*changes)++;
	}
	if (!in_group(o->user, group)) {
		if ((ret = run_tool(err, "usermod", "--append", "--groups", group, o->user)) != 0)
			return ret;
		printf("added %s to group %s\n", o->user, group);
		(*changes)++;
	}
	return 0;
}

/* Does the config now select the account, and for the profile asked? What
 * to add if not, and the privileged groups it is still in. */
static void enroll_report_match(const struct enroll_opts *o, const struct sbx_config *cfg,
				const struct passwd *pw, const char *profile, const char *group)
{
	const struct sbx_profile *selected = NULL;
	struct sbx_account id = { 0 };
	struct sbx_error err = { 0 };
	int ret;

	ret = sbx_account_by_name(pw->pw_name, &id, &err);
	if (ret == 0)
		ret = sbx_config_select(cfg, o->user, (const char *const *)id.groups, id.n_groups,
					&selected, &err);
	if (ret == -ENOENT || (ret == 0 && strcmp(selected->name, profile) != 0)) {
		char dropin[SBX_PATH_MAX + 32];
		const char *slash = strrchr(shell_config_path(), '/');

		/* A drop-in of the admin's own, which package upgrades of the
		 * main file never touch (agent-sandbox.conf(5), "Drop-ins"). */
		snprintf(dropin, sizeof(dropin), "%.*s/%s/local.conf",
			 slash ? (int)(slash - shell_config_path()) : 0, shell_config_path(),
			 SBX_CONFIG_DROPIN_DIR);
		printf("not yet matched%s%s: add to a [match] section, in a drop-in such as %s:\n",
		       ret == 0 ? " to profile " : "", ret == 0 ? profile : "", dropin);
		if (ret == 0 || rule_for(cfg, SBX_MATCH_GROUP, group))
			printf("  user %s = %s\n", o->user, profile);
		else
			printf("  group %s = %s\n", group, profile);
	} else if (ret != 0) {
		printf("warning: the config refuses %s: %s\n", o->user, err.msg);
	} else {
		printf("%s gets profile %s (%s)\n", o->user, profile,
		       rule_for(cfg, SBX_MATCH_USER, o->user) ? "user rule" : "group rule");
	}
	for (size_t i = 0; i < id.n_groups; i++) {
		if (shell_group_is_privileged(id.groups[i]))
			printf("warning: %s is in group %s: privilege outside the sandbox "
			       "(gpasswd -d %s %s)\n", o->user, id.groups[i], o->user, id.groups[i]);
	}
	sbx_account_free(&id);
}

/* Long on purpose: the enrolment steps in the order an admin reads them
 * back, each printing what it changed, with one failure path. */
static int enroll(const struct enroll_opts *o, struct sbx_config *cfg)
{
	struct sbx_error err = { 0 };
	const struct sbx_match *urule = rule_for(cfg, SBX_MATCH_USER, o->user);
	const struct sbx_profile *named;
	struct sbx_profile *p = calloc(1, sizeof(*p));
	char home[SBX_PATH_MAX], workspace[SBX_PATH_MAX], uidbuf[32];
	const char *group, *profile;
	struct passwd *pw;
	struct stat st;
	unsigned changes = 0;
	bool created, home_existed;
	int status = 1, ret;

	if (!p) {
		fprintf(stderr, "agent-shell: out of memory\n");
		return 1;
	}
	/* Which profile, and which group gives it. */
	if (o->profile)
		profile = o->profile;
	else if (urule)
		profile = urule->profile;
	else if (o->group && rule_for(cfg, SBX_MATCH_GROUP, o->group))
		profile = rule_for(cfg, SBX_MATCH_GROUP, o->group)->profile;
	else if (!o->group && rule_group(cfg, NULL))
		profile = rule_for(cfg, SBX_MATCH_GROUP, rule_group(cfg, NULL))->profile;
	else
		profile = NULL;
	if (!profile) {
		fprintf(stderr, "agent-shell: --enroll %s: no [match] rule gives a profile; pass --profile NAME\n",
			o->user);
		goto out;
	}
	named = sbx_config_find_profile(cfg, profile);
	if (!named) {
		fprintf(stderr, "agent-shell: --enroll %s: no profile %s in %s\n", o->user, profile,
			shell_config_path());
		goto out;
	}
	group = o->group ? o->group : rule_group(cfg, profile) ? rule_group(cfg, profile) :
			   rule_group(cfg, NULL) ? rule_group(cfg, NULL) : SBX_DEFAULT_GROUP;
	if (!sbx_name_is_safe_component(group) || strlen(group) > USER_NAME_MAX) {
		fprintf(stderr, "agent-shell: --enroll: group name %s is not usable\n", group);
		status = 2;
		goto out;
	}

	pw = getpwnam(o->user);
	if (pw && pw->pw_uid == 0) {
		fprintf(stderr, "agent-shell: --enroll %s: uid 0 is never an agent account\n", o->user);
		goto out;
	}
	if ((ret = enroll_account(o, cfg, group, pw, &changes, &err)) != 0)
		goto fail;
	pw = getpwnam(o->user);
	if (!pw) {
		ret = sbx_error_set(&err, ENOENT, "%s: passwd entry vanished", o->user);
		goto fail;
	}
	snprintf(uidbuf, sizeof(uidbuf), "%u", (unsigned)pw->pw_uid);
	sbx_strlcpy(home, sizeof(home), pw->pw_dir);

	/* The profile this account gets: assigned, narrowed by the ceiling,
	 * expanded for this account (as PAM and the shell compute it). */
	if ((ret = sbx_profile_restrict(named, &cfg->ceiling, p, &err)) != 0 ||
	    (ret = sbx_profile_expand(p, o->user, home, &err)) != 0)
		goto fail;
	if (o->workspace)
		ret = sbx_strlcpy(workspace, sizeof(workspace), o->workspace);
	else
		ret = sbx_strlcpy(workspace, sizeof(workspace), p->workspace_root);
	if (ret != 0 || !workspace[0]) {
		ret = sbx_error_set(&err, EINVAL, "profile %s has no workspace_root; pass --workspace DIR",
				    profile);
		goto fail;
	}
	if ((ret = make_workspace(workspace, pw->pw_uid, pw->pw_gid, 0750, &created, &st, &err)) != 0)
		goto fail;
	if (created) {
		printf("created workspace %s (owner %s, mode 0750)\n", workspace, o->user);
		changes++;
	} else if (st.st_uid != pw->pw_uid) {
		printf("warning: workspace %s exists, owned by uid %u, not %s: left as it is\n",
		       workspace, (unsigned)st.st_uid, o->user);
	}

	if (p->home == SBX_HOME_ISOLATED) {
		char path[SBX_PATH_MAX + 80];
		struct stat hs;

		home_existed = sbx_snprintf(path, sizeof(path), "%s/homes/%s", cfg->state_dir,
					    o->user) == 0 && lstat(path, &hs) == 0;
		if ((ret = sbx_home_prepare_isolated(cfg->state_dir, o->user, pw->pw_uid, pw->pw_gid,
						     DEFAULT_SKEL, path, sizeof(path), &err)) != 0)
			goto fail;
		if (!home_existed) {
			printf("created isolated home %s (owner %s, mode 0700)\n", path, o->user);
			changes++;
		}
	}
	if (!changes)
		printf("%s is already enrolled: nothing changed\n", o->user);

	enroll_report_match(o, cfg, pw, profile, group);
	printf("next: put the agent's SSH key in %s/.ssh/authorized_keys, then run agent-shell --doctor\n",
	       home);
	status = 0;
	goto out;
fail:
	fprintf(stderr, "agent-shell: --enroll %s: %s\n", o->user, err.msg);
	if (changes)
		fprintf(stderr, "agent-shell: the changes printed above were made; run --enroll again "
			"after fixing the cause\n");
out:
	free(p);
	return status;
}

static int unenroll(const struct enroll_opts *o, struct sbx_config *cfg)
{
	struct sbx_error err = { 0 };
	const char *new_shell = o->shell ? o->shell : DEFAULT_UNENROLL_SHELL;
	const struct sbx_match *urule = rule_for(cfg, SBX_MATCH_USER, o->user);
	const char *groups[SBX_MAX_DENY];
	size_t n_groups = 0;
	struct passwd *pw = getpwnam(o->user);
	char home[SBX_PATH_MAX], shell_now[SBX_PATH_MAX];
	unsigned changes = 0;
	int ret;

	if (!pw) {
		fprintf(stderr, "agent-shell: --unenroll %s: no such account\n", o->user);
		return 1;
	}
	if (pw->pw_uid == 0) {
		fprintf(stderr, "agent-shell: --unenroll %s: uid 0 is never an agent account\n", o->user);
		return 1;
	}
	if (!sbx_path_is_canonical(new_shell)) {
		fprintf(stderr, "agent-shell: --unenroll: --shell %s is not an absolute path\n", new_shell);
		return 2;
	}
	sbx_strlcpy(home, sizeof(home), pw->pw_dir);
	sbx_strlcpy(shell_now, sizeof(shell_now), pw->pw_shell);

	/* Only the agent shell is replaced: another shell was set by someone
	 * on purpose. */
	if (!strcmp(shell_now, cfg ? cfg->agent_shell : "") ||
	    (strrchr(shell_now, '/') && !strcmp(strrchr(shell_now, '/'), "/agent-shell"))) {
		if ((ret = run_tool(&err, "usermod", "--shell", new_shell, o->user)) != 0)
			goto fail;
		printf("changed login shell of %s: %s -> %s\n", o->user, shell_now, new_shell);
		changes++;
	} else {
		printf("login shell of %s is %s, not the agent shell: left as it is\n", o->user,
		       shell_now);
	}

	/* Which groups: --group, else every group the [match] rules name
	 * (and "agents", the sshd drop-in's Match group). */
	if (o->group) {
		groups[n_groups++] = o->group;
	} else {
		for (size_t i = 0; cfg && i < cfg->n_matches && n_groups < ARRAY_SIZE(groups) - 1; i++) {
			if (cfg->matches[i].kind == SBX_MATCH_GROUP)
				groups[n_groups++] = cfg->matches[i].name;
		}
		groups[n_groups++] = SBX_DEFAULT_GROUP;
	}
	for (size_t i = 0; i < n_groups; i++) {
		struct group *gr = getgrnam(groups[i]);

		if (!gr)
			continue;
		if (pw->pw_gid == gr->gr_gid)
			printf("warning: %s is %s's primary group; change it with usermod -g\n",
			       groups[i], o->user);
		if (!supplementary_member(o->user, groups[i]))
			continue;
		if ((ret = run_tool(&err, "gpasswd", "--delete", o->user, groups[i])) != 0)
			goto fail;
		printf("removed %s from group %s\n", o->user, groups[i]);
		changes++;
	}
	if (urule)
		printf("still matched by \"user %s = %s\" (%s:%u): remove that line, or the PAM module "
		       "keeps refusing %s (its login shell is no longer the agent shell)\n",
		       o->user, urule->profile, urule->file, urule->line, o->user);
	if (!changes)
		printf("%s was not enrolled: nothing changed\n", o->user);
	printf("left in place: the account %s and its home %s", o->user, home);
	if (cfg)
		printf(", the isolated home %s/homes/%s (if any), the workspace", cfg->state_dir,
		       o->user);
	printf("\n");
	return 0;
fail:
	fprintf(stderr, "agent-shell: --unenroll %s: %s\n", o->user, err.msg);
	return 1;
}

static void enroll_usage(FILE *out)
{
	fputs("usage: agent-shell --enroll USER [--profile NAME] [--group GROUP] [--workspace DIR]\n"
	      "       agent-shell --unenroll USER [--group GROUP] [--shell PATH]\n"
	      "Run as root. Prints every change; never edits the config, never deletes anything.\n",
	      out);
}

int shell_cmd_enroll(int argc, char **argv)
{
	enum { OPT_PROFILE = 0x100, OPT_GROUP, OPT_WORKSPACE, OPT_SHELL };
	static const struct option longopts[] = {
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "group", required_argument, NULL, OPT_GROUP },
		{ "workspace", required_argument, NULL, OPT_WORKSPACE },
		{ "shell", required_argument, NULL, OPT_SHELL },
		{ NULL, 0, NULL, 0 },
	};
	struct enroll_opts o = { 0 };
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	int c, status;

	o.unenroll = !strcmp(argv[0], "--unenroll");
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "agent-shell: %s needs a USER\n", argv[0]);
		enroll_usage(stderr);
		return 2;
	}
	o.user = argv[1];
	optind = 2;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PROFILE:
			o.profile = optarg;
			break;
		case OPT_GROUP:
			o.group = optarg;
			break;
		case OPT_WORKSPACE:
			o.workspace = optarg;
			break;
		case OPT_SHELL:
			o.shell = optarg;
			break;
		default:
			fprintf(stderr, "agent-shell: %s: unknown option or missing argument: %s\n",
				argv[0], argv[optind - 1] ? argv[optind - 1] : "?");
			enroll_usage(stderr);
			return 2;
		}
	}
	if (optind < argc || (o.unenroll && (o.profile || o.workspace)) ||
	    (!o.unenroll && o.shell)) {
		fprintf(stderr, "agent-shell: %s: unexpected argument\n", argv[0]);
		enroll_usage(stderr);
		return 2;
	}
	/* Names go into passwd, group and paths: the PAM module's rule. */
	if (!sbx_name_is_safe_component(o.user) || strlen(o.user) > USER_NAME_MAX ||
	    (o.group && (!sbx_name_is_safe_component(o.group) || strlen(o.group) > USER_NAME_MAX))) {
		fprintf(stderr, "agent-shell: %s: user and group names are [A-Za-z0-9._-], at most %d "
			"bytes, not starting with '-' or '.'\n", argv[0], USER_NAME_MAX);
		return 2;
	}
	if (o.workspace && (!sbx_path_is_canonical(o.workspace) || !strcmp(o.workspace, "/"))) {
		fprintf(stderr, "agent-shell: --enroll: --workspace %s is not an absolute canonical path\n",
			o.workspace);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "agent-shell: %s must run as root\n", argv[0]);
		return 1;
	}
	if (shell_config_load(&cfg, &err) != 0) {
		fprintf(stderr, "agent-shell: %s: %s\n", argv[0], err.msg);
		return 1;
	}
	if (!cfg && !o.unenroll) {
		fprintf(stderr, "agent-shell: --enroll: no configuration at %s; write it first "
			"(agent-sandbox.conf(5))\n", shell_config_path());
		return 1;
	}
	status = o.unenroll ? unenroll(&o, cfg) : enroll(&o, cfg);
	sbx_config_free(cfg);
	return status;
}
