/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * doctor.c — agent-shell --doctor: is every way into an agent account
 * (docs/design.md section 7) covered on this host? Reads the config, the PAM
 * stacks, sshd's effective configuration for each agent account, the
 * accounts themselves and the kernel as the agent sees it; prints one row
 * per check with OK / WARN / FAIL and the admin's fix. FAIL means an
 * unconfined path (or privilege outside the sandbox), or a config the
 * agents cannot read (every session refused); the exit code is 1 then, 0
 * otherwise, 2 on a usage error. Nothing on the host is changed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shell.h"

#define DOCTOR_MAX_AGENTS 256
#define PAM_MODULE "pam_agent_sandbox.so"
#define PAM_MAX_DEPTH 3		/* su-l -> su -> common-account */
#define SSHD_DEFAULT "/usr/sbin/sshd"
#define SSHD_OUTPUT_MAX (256u * 1024)
#define CHILD_TIMEOUT_MS 10000
#define LINGER_DIR "/var/lib/systemd/linger"
#define NSSWITCH_CONF "/etc/nsswitch.conf"
#define CRONTAB_DIR "/var/spool/cron/crontabs"

enum doc_status { DOC_OK, DOC_WARN, DOC_FAIL };

struct doc_row {
	enum doc_status status;
	char area[16];
	char subject[128];
	char detail[768];
	char fix[512];
};

struct doc_agent {
	char user[SBX_NAME_MAX];
	uid_t uid;
	gid_t gid;
	char shell[SBX_PATH_MAX];
	bool has_crontab;
};

/* One honoured line of /etc/subuid or /etc/subgid, its owner looked up. */
struct subid_entry {
	char *owner;
	bool owner_known;		/* a passwd entry has that name ... */
	uid_t owner_uid;		/* ... and this uid */
	bool owner_numeric;		/* the owner is digits ... */
	unsigned long owner_num;	/* ... of this value */
	unsigned long lo, last;
};

struct subid_file {
	int err;			/* 0, or the file could not be read to its end */
	struct subid_entry *e;
	size_t n;
};

struct doctor {
	const char *pam_dir;		/* the admin's stacks (/etc/pam.d) */
	const char *pam_vendor_dir;	/* the vendor's, read when pam_dir has none */
	const char *sshd;
	const char *sshd_config;
	struct sbx_config *cfg;
	const char *group_fallback;	/* agents' group when there is no config */
	struct doc_row *rows;
	size_t n_rows, cap_rows;
	bool out_of_memory;
	struct doc_agent *agents;
	size_t n_agents;
	const char *unit_dirs;		/* systemd's unit search path, ':'-separated */
	int um_guard;			/* user@.service asks --user-manager: -1 not read */
	char um_where[SBX_PATH_MAX];	/* the drop-in that says so */
	const char *subuid, *subgid;	/* /etc/subuid, /etc/subgid */
	char roots_named[2048];		/* missing roots a paths row named, ", "-separated */
	struct subid_file *subid_files;	/* both, read once for every agent */
};

static const char *status_name(enum doc_status s)
{
	return s == DOC_OK ? "OK" : s == DOC_WARN ? "WARN" : "FAIL";
}

static void row(struct doctor *d, enum doc_status st, const char *area, const char *subject,
		const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void row(struct doctor *d, enum doc_status st, const char *area, const char *subject,
		const char *fix, const char *fmt, ...)
{
	char detail[sizeof(((struct doc_row *)0)->detail)];
	struct doc_row *r;
	va_list ap;

	if (d->n_rows == d->cap_rows) {
		size_t cap = d->cap_rows ? d->cap_rows * 2 : 32;
		struct doc_row *n = realloc(d->rows, cap * sizeof(*n));

		if (!n) {
			/* A row we cannot record must still fail the run. */
			d->out_of_memory = true;
			return;
		}
		d->rows = n;
		d->cap_rows = cap;
	}
	r = &d->rows[d->n_rows++];
	memset(r, 0, sizeof(*r));
	r->status = st;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* A row names files, users and what a config or a PAM stack says, and
	 * goes to root's terminal: kept as it shows (text.c), cut if need be. */
	(void)sbx_text_show(r->area, sizeof(r->area), area);
	(void)sbx_text_show(r->subject, sizeof(r->subject), subject);
	(void)sbx_text_show(r->fix, sizeof(r->fix), fix ? fix : "");
	(void)sbx_text_show(r->detail, sizeof(r->detail), detail);
}

/* Append to a bounded "a, b, c" list; truncation only shortens a message. */
static void list_add(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void list_add(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len && len + 2 < size) {
		memcpy(buf + len, ", ", 3);
		len += 2;
	}
	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

static bool list_has(const char *list, const char *item)
{
	size_t n = strlen(item);

	for (const char *p = list; (p = strstr(p, item)) != NULL; p += n) {
		if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return true;
	}
	return false;
}

static bool file_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- systemd's user manager ------------------------------------------- */

/* systemd's unit search path as Debian builds it, highest priority first
 * (the control and transient directories too: set-property writes there). */
#define UNIT_DIRS_DEFAULT "/etc/systemd/system.control:/run/systemd/system.control:" \
	"/run/systemd/transient:/etc/systemd/system:/run/systemd/system:" \
	"/usr/local/lib/systemd/system:/usr/lib/systemd/system:/lib/systemd/system"

struct dropin {
	char name[SBX_NAME_MAX];
	char path[SBX_PATH_MAX];
};

static int dropin_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

/* An ExecCondition= value that runs agent-shell --user-manager %i as root,
 * whose failure counts: prefix "+" without "-" (ignore-failure), the
 * binary named agent-shell, then exactly those two arguments. */
static bool condition_is_ours(const char *v)
{
	bool full = false, ignore = false;
	char prog[SBX_PATH_MAX], arg1[32], arg2[8], extra[2];
	const char *base;

	for (; *v && strchr("@-:+!", *v); v++) {
		full |= *v == '+';
		ignore |= *v == '-';
	}
	if (!full || ignore)
		return false;
	if (sscanf(v, "%1023s %31s %7s %1s", prog, arg1, arg2, extra) != 3)
		return false;
	base = strrchr(prog, '/');
	return base && !strcmp(base + 1, "agent-shell") && !strcmp(arg1, "--user-manager") &&
	       !strcmp(arg2, "%i");
}

/* One drop-in's ExecCondition lines in its [Service] section, in order:
 * an empty one resets the list (systemd's rule), ours sets it, any other
 * leaves it. What this parser cannot follow (a continued line) counts as
 * a reset: the doctor says OK only for what it understood. */
static void dropin_apply(const char *path, bool *guard)
{
	char line[1024];
	bool service = false;
	FILE *f = fopen(path, "re");

	if (!f)
		return;	/* a mask (/dev/null) reads as empty; a missing file counts nothing */
	while (fgets(line, sizeof(line), f)) {
		char *v = line + strspn(line, " \t");
		size_t len;

		v[strcspn(v, "\r\n")] = '\0';
		len = strlen(v);
		if (*v == '[') {
			service = !strncmp(v, "[Service]", 9);
			continue;
		}
		if (len && v[len - 1] == '\\') {
			*guard = false;
			continue;
		}
		if (!service || strncmp(v, "ExecCondition", 13) != 0)
			continue;
		v += 13 + strspn(v + 13, " \t");
		if (*v != '=')
			continue;
		v++;
		v += strspn(v, " \t");
		if (!*v)
			*guard = false;
		else if (condition_is_ours(v))
			*guard = true;
	}
	(void)fclose(f);	/* read-only: nothing to lose */
}

/* Collect the *.conf names of DIR/sub (a higher-priority directory's name
 * hides the same name below: the first seen wins). */
static void dropins_collect(const char *dir, const char *sub, struct dropin **list, size_t *n,
			    size_t *cap)
{
	char path[SBX_PATH_MAX];
	struct dirent *e;
	DIR *dd;

	if (sbx_snprintf(path, sizeof(path), "%s/%s", dir, sub) != 0)
		return;
	dd = opendir(path);
	if (!dd)
		return;
	while ((e = readdir(dd))) {
		size_t len = strlen(e->d_name), i;

		if (len < 6 || strcmp(e->d_name + len - 5, ".conf") != 0 || len >= SBX_NAME_MAX)
			continue;
		for (i = 0; i < *n && strcmp((*list)[i].name, e->d_name) != 0; i++)
			;
		if (i < *n)
			continue;
		if (*n == *cap) {
			struct dropin *grown = realloc(*list, (*cap ? *cap * 2 : 8) * sizeof(**list));

			if (!grown)
				break;
			*list = grown;
			*cap = *cap ? *cap * 2 : 8;
		}
		memcpy((*list)[*n].name, e->d_name, len + 1);	/* len < SBX_NAME_MAX */
		if (sbx_snprintf((*list)[*n].path, sizeof((*list)[*n].path), "%s/%s", path,
				 e->d_name) == 0)
			(*n)++;
	}
	closedir(dd);
}

/* The drop-ins systemd merges for user@UID.service, read from the unit
 * directories: service.d, user@.service.d and user@UID.service.d, by name. */
static bool files_guard(const struct doctor *d, uid_t uid, char *where, size_t size)
{
	struct dropin *list = NULL;
	size_t n = 0, cap = 0;
	char dirs[2048], inst[64], *save = NULL;
	bool guard = false;

	snprintf(inst, sizeof(inst), "user@%u.service.d", (unsigned)uid);
	snprintf(dirs, sizeof(dirs), "%s", d->unit_dirs);
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		dropins_collect(dir, "service.d", &list, &n, &cap);
		dropins_collect(dir, "user@.service.d", &list, &n, &cap);
		dropins_collect(dir, inst, &list, &n, &cap);
	}
	if (n)
		qsort(list, n, sizeof(*list), dropin_cmp);
	where[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		bool before = guard;

		dropin_apply(list[i].path, &guard);
		if (guard && !before)
			snprintf(where, size, "%s", list[i].path);
	}
	free(list);
	return guard;
}

static int run_capture(char *const argv[], char **out, int *status, bool sshd_run);

/*
 * systemd's own answer, where it manages the host: the merged ExecCondition
 * of user@UID.service, from systemctl show. 1: ours is there, runs as
 * root and its failure counts; 0: not; -1: systemd could not be asked.
 */
static int systemd_guard(uid_t uid, char *where, size_t size)
{
	char unit[64], *out = NULL, *e;
	char *argv[] = { (char *)"/bin/systemctl", (char *)"show", (char *)"-p",
			 (char *)"ExecConditionEx", (char *)"--value", unit, NULL };
	struct stat st;
	int status = 0, ok = 0;

	if (lstat("/run/systemd/system", &st) != 0 || !S_ISDIR(st.st_mode))
		return -1;
	if (access("/usr/bin/systemctl", X_OK) == 0)
		argv[0] = (char *)"/usr/bin/systemctl";
	snprintf(unit, sizeof(unit), "user@%u.service", (unsigned)uid);
	if (run_capture(argv, &out, &status, false) != 0 || !out || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		free(out);
		return -1;
	}
	/* systemd 252: "{ path=P ; argv[]=P --user-manager UID ; flags=privileged ;
	 * ... }", with "ignore-failure" among the flags for a "-" prefix. */
	for (e = strstr(out, "{ "); e; e = strstr(e + 2, "{ ")) {
		char *end = strstr(e, " }"), want[64];

		if (end)
			*end = '\0';
		snprintf(want, sizeof(want), " --user-manager %u ;", (unsigned)uid);
		if (strstr(e, "/agent-shell ;") && strstr(e, want) &&
		    strstr(e, "privileged") && !strstr(e, "ignore-failure"))
			ok = 1;
		if (!end)
			break;
		e = end;
	}
	free(out);
	snprintf(where, size, "systemd (systemctl show %s)", unit);
	return ok;
}

/*
 * Does systemd run "agent-shell --user-manager %i" before it starts each
 * agent's user@UID.service, as root and with its failure counted? Where
 * systemd manages the host and the unit directories are its own, it is
 * asked; else the drop-ins are read and merged as systemd would. Cached.
 */
static bool user_manager_guarded(struct doctor *d)
{
	bool guard = true, asked = strcmp(d->unit_dirs, UNIT_DIRS_DEFAULT) == 0;

	if (d->um_guard >= 0)
		return d->um_guard;
	d->um_where[0] = '\0';
	/* Without agents, the shared drop-ins (uid 0 stands for "any"). */
	for (size_t i = 0; i < (d->n_agents ? d->n_agents : 1); i++) {
		uid_t uid = d->n_agents ? d->agents[i].uid : 0;
		int r = asked ? systemd_guard(uid, d->um_where, sizeof(d->um_where)) : -1;

		if (r < 0)
			r = files_guard(d, uid, d->um_where, sizeof(d->um_where));
		if (r != 1) {
			guard = false;
			break;
		}
	}
	d->um_guard = guard;
	return guard;
}

/* ---- config and directories ------------------------------------------- */

/* Does the login shell have a dynamic loader (PT_INTERP), which reads
 * LD_PRELOAD and friends from the session's environment before main()?
 * The installed launcher is static. Unreadable counts as yes. */
static bool agent_shell_has_loader(const char *path)
{
	struct sbx_elf_info *info = calloc(1, sizeof(*info));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool yes = true;

	if (info && fd >= 0 && sbx_elf_parse_fd(fd, path, info, NULL) == 0 && info->is_elf)
		yes = info->interp[0] != '\0';
	if (fd >= 0)
		close(fd);
	free(info);
	return yes;
}

/* agent_shell names this program (the same file), or a file called
 * agent-shell (another installed copy). */
static bool is_agent_shell(const char *path, const struct stat *st)
{
	const char *base = strrchr(path, '/');
	struct stat self;

	if (stat("/proc/self/exe", &self) == 0 && self.st_dev == st->st_dev &&
	    self.st_ino == st->st_ino)
		return true;
	return !strcmp(base ? base + 1 : path, "agent-shell");
}

/* A config file, conf.d or directory above them the agents cannot read:
 * a FAIL, enrolled agents or not (lib/config.c states the rule). */
static void config_access_row(void *arg, const char *path, const char *why, const char *fix)
{
	row(arg, DOC_FAIL, "config", path, fix, "%s", why);
}

/* A path a "root =" line of section names that is not there: sessions
 * leave it out (apply.c); one of the agent's own (a template) is checked
 * per agent, expanded (check_profile_paths). Noted in d->roots_named so
 * the agents' rows do not name it again. */
static void check_root_lines(struct doctor *d, const char *section, const struct sbx_profile *p)
{
	char fix[SBX_PATH_MAX + 64];
	struct stat st;

	for (size_t i = 0; i < p->n_roots; i++) {
		const struct sbx_root *rt = &p->roots[i];
		size_t used = strlen(d->roots_named);

		if (rt->read == SBX_ACCESS_DENY || strchr(rt->path, '%') ||
		    stat(rt->path, &st) == 0 || errno != ENOENT || list_has(d->roots_named, rt->path))
			continue;
		snprintf(d->roots_named + used, sizeof(d->roots_named) - used, "%s%s",
			 used ? ", " : "", rt->path);
		snprintf(fix, sizeof(fix), "install -d %s, or remove the line", rt->path);
		row(d, DOC_WARN, "paths", section, fix,
		    "root %s %s: No such file or directory: sessions leave it out (their report "
		    "says \"%s (missing)\")%s", rt->path, rt->write == SBX_ACCESS_ALLOW ? "rw" : "ro",
		    rt->path, rt->write == SBX_ACCESS_ALLOW ? "" :
		    ", or are refused where it is inside a tree they write");
	}
}

static void check_config(struct doctor *d)
{
	struct sbx_error err = { 0 };
	const char *path = shell_config_path();
	struct stat st;
	int ret;

	ret = sbx_config_load(path, 0, &d->cfg, &err);
	if (ret == -ENOENT) {
		row(d, DOC_FAIL, "config", path,
		    "write it (see agent-sandbox.conf(5)); root-owned, mode 0644",
		    "missing: no account is an agent; agent-shell refuses every login and the PAM "
		    "module refuses only members of group %s", d->group_fallback);
		return;
	}
	if (ret != 0) {
		row(d, DOC_FAIL, "config", path,
		    "fix the file (agent-shell --check-config shows the error); it and every "
		    "parent directory must be root-owned and not group/world writable",
		    "unusable, agent logins are refused: %s", err.msg);
		return;
	}
	row(d, DOC_OK, "config", path, NULL,
	    "trusted and parsed: %zu profile(s), %zu match rule(s), %zu drop-in(s)%s",
	    d->cfg->n_profiles, d->cfg->n_matches, d->cfg->n_files - 1,
	    shell_config_is_candidate() ? " (a candidate given with -f: not what sessions read)" : "");
	sbx_config_check_agent_access(d->cfg, config_access_row, d);
	check_root_lines(d, "[ceiling]", &d->cfg->ceiling);
	for (size_t i = 0; i < d->cfg->n_profiles; i++) {
		char section[SBX_NAME_MAX + 16];

		snprintf(section, sizeof(section), "[profile %s]", d->cfg->profiles[i].name);
		check_root_lines(d, section, &d->cfg->profiles[i]);
	}
	if (stat(d->cfg->agent_shell, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		row(d, DOC_WARN, "config", "agent_shell", "install agent-shell there or fix agent_shell",
		    "%s is not an executable file: agent logins will fail", d->cfg->agent_shell);
	else if (st.st_uid != 0 || (st.st_mode & 0022))
		row(d, DOC_FAIL, "config", "agent_shell",
		    "chown root:root and chmod 0755 the binary",
		    "%s is not root-owned or is group/world writable: whoever can write it "
		    "decides what agent sessions run", d->cfg->agent_shell);
	else if (!is_agent_shell(d->cfg->agent_shell, &st))
		row(d, DOC_FAIL, "config", "agent_shell",
		    "set agent_shell to the path of agent-shell",
		    "%s is not agent-shell: the PAM module checks that agents have this login "
		    "shell, so their logins would run it, outside any sandbox",
		    d->cfg->agent_shell);
	else if (agent_shell_has_loader(d->cfg->agent_shell))
		row(d, DOC_FAIL, "config", "agent_shell",
		    "point agent_shell (and the agents' login shell) at the installed launcher, "
		    "<prefix>/bin/agent-shell, which runs <prefix>/lib/agent-sandbox/agent-shell",
		    "%s is dynamically linked: sshd starts it with the PAM environment, which "
		    "pam_env fills from the agent's ~/.pam_environment, so LD_PRELOAD there runs "
		    "the agent's code in it before any sandbox", d->cfg->agent_shell);
	else
		row(d, DOC_OK, "config", "agent_shell", NULL, "%s (static launcher)",
		    d->cfg->agent_shell);
}

/* A root-side directory the PAM stage writes into: every component from
 * "/" root-owned and not group/world writable, or an agent could plant a
 * symlink or another account's home there. Its child must have none of
 * the mode bits in forbid, for the reason given. */
static void check_root_dir(struct doctor *d, const char *what, const char *path,
			   const char *child, mode_t forbid, const char *reason)
{
	struct sbx_error err = { 0 };
	char sub[SBX_PATH_MAX + 64];
	int fd = -1, ret;

	ret = sbx_dir_open_walk(path, true, 0, &fd, &err);
	if (ret == -ENOENT) {
		row(d, DOC_OK, "dirs", what, NULL,
		    "%s does not exist yet; the PAM stage creates it root-owned, 0755%s", path,
		    child ? " (and its sessions/ root-only, 0700)" : "");
		return;
	}
	if (ret == 0 && child && sbx_snprintf(sub, sizeof(sub), "%s/%s", path, child) == 0) {
		struct stat st;

		close(fd);
		fd = -1;
		ret = sbx_dir_open_walk(sub, true, 0, &fd, &err);
		if (ret == -ENOENT)
			ret = 0;
		if (ret == 0 && fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & forbid)) {
			char fix[sizeof(sub) + 64];

			snprintf(fix, sizeof(fix), "chmod %04o %s (the next login does it too)",
				 (unsigned)(st.st_mode & 07777 & ~forbid), sub);
			row(d, DOC_WARN, "dirs", what, fix, "%s is mode %04o: %s", sub,
			    (unsigned)(st.st_mode & 07777), reason);
		}
	}
	if (fd >= 0)
		close(fd);
	if (ret != 0) {
		row(d, DOC_FAIL, "dirs", what,
		    "chown root:root and chmod go-w every directory on the way",
		    "%s", err.msg);
		return;
	}
	row(d, DOC_OK, "dirs", what, NULL, "%s: root-owned, not group/world writable", path);
}

/* ---- the agent accounts ----------------------------------------------- */

static bool agent_known(const struct doctor *d, const char *user)
{
	for (size_t i = 0; i < d->n_agents; i++) {
		if (!strcmp(d->agents[i].user, user))
			return true;
	}
	return false;
}

static void agent_add(struct doctor *d, const struct passwd *pw)
{
	struct doc_agent *a;
	char path[SBX_PATH_MAX];

	if (agent_known(d, pw->pw_name) || d->n_agents == DOCTOR_MAX_AGENTS)
		return;
	a = &d->agents[d->n_agents];
	memset(a, 0, sizeof(*a));
	if (sbx_strlcpy(a->user, sizeof(a->user), pw->pw_name) != 0 ||
	    sbx_strlcpy(a->shell, sizeof(a->shell), pw->pw_shell) != 0)
		return;
	a->uid = pw->pw_uid;
	a->gid = pw->pw_gid;
	if (sbx_snprintf(path, sizeof(path), "%s/%s", CRONTAB_DIR, a->user) == 0)
		a->has_crontab = file_exists(path);
	d->n_agents++;
}

static void agents_of_group(struct doctor *d, const char *group, bool warn_missing)
{
	struct group *gr = getgrnam(group);
	struct passwd *pw;
	gid_t gid;

	if (!gr) {
		if (warn_missing)
			row(d, DOC_WARN, "accounts", group, "create the group or remove the rule",
			    "[match] names group %s, which does not exist", group);
		return;
	}
	gid = gr->gr_gid;
	/* getpwnam's static buffer is not getgrnam's: gr stays valid. */
	for (char **m = gr->gr_mem; m && *m; m++) {
		pw = getpwnam(*m);
		if (pw)
			agent_add(d, pw);
	}
	/* Members by primary group only appear in passwd. */
	setpwent();
	while ((pw = getpwent()) != NULL) {
		if (pw->pw_gid == gid)
			agent_add(d, pw);
	}
	endpwent();
}

static void collect_agents(struct doctor *d)
{
	d->agents = calloc(DOCTOR_MAX_AGENTS, sizeof(*d->agents));
	if (!d->agents) {
		d->out_of_memory = true;
		return;
	}
	if (!d->cfg) {
		/* The PAM module's own fallback: members of group=agents. */
		agents_of_group(d, d->group_fallback, false);
		return;
	}
	for (size_t i = 0; i < d->cfg->n_matches; i++) {
		const struct sbx_match *m = &d->cfg->matches[i];

		if (m->kind == SBX_MATCH_USER) {
			struct passwd *pw = getpwnam(m->name);

			if (pw)
				agent_add(d, pw);
			else
				row(d, DOC_WARN, "accounts", m->name, "create the account or remove the rule",
				    "[match] user rule (%s:%u) names an account that does not exist",
				    m->file, m->line);
		}
	}
	for (size_t i = 0; i < d->cfg->n_matches; i++) {
		if (d->cfg->matches[i].kind == SBX_MATCH_GROUP)
			agents_of_group(d, d->cfg->matches[i].name, true);
	}
}

/* A number as shadow reads one (strtoul, base 0: 0x and leading-0 octal
 * too), and nothing after it. */
static bool subid_number(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 0);
	return !errno && end != s && !*end;
}

/*
 * The lines of /etc/subuid or /etc/subgid (path) that give ids, as shadow
 * 4.13 reads them (subordinate_parse, find_range): fields after the third
 * are ignored, and the last id is first + count - 1 in unsigned long
 * arithmetic, so a count of 0 from 0 wraps to every id while one that ends
 * below its start holds none. Each owner is looked up once here, not once
 * per agent (a name lookup may go to a directory server). A missing file
 * gives none (what a host without one has).
 */
static void subid_file_read(const char *path, struct subid_file *sf)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f = fopen(path, "re");

	memset(sf, 0, sizeof(*sf));
	if (!f) {
		sf->err = errno == ENOENT ? 0 : errno;
		return;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *owner = line, *first, *count, *rest;
		unsigned long lo, cnt, last;
		struct subid_entry *e, *grown;
		struct passwd *pw;

		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		first = strchr(owner, ':');
		if (!first)
			continue;
		*first++ = '\0';
		count = strchr(first, ':');
		if (!count)
			continue;
		*count++ = '\0';
		rest = strchr(count, ':');
		if (rest)
			*rest = '\0';
		if (!subid_number(first, &lo) || !subid_number(count, &cnt))
			continue;
		last = lo + cnt - 1;	/* wraps as shadow's does */
		if (last < lo)
			continue;
		grown = realloc(sf->e, (sf->n + 1) * sizeof(*sf->e));
		if (!grown) {
			sf->err = ENOMEM;
			break;
		}
		sf->e = grown;
		e = &sf->e[sf->n];
		e->owner = strdup(owner);
		if (!e->owner) {
			sf->err = ENOMEM;
			break;
		}
		e->owner_numeric = owner[0] >= '0' && owner[0] <= '9';
		if (e->owner_numeric) {
			char *end;

			errno = 0;
			e->owner_num = strtoul(owner, &end, 10);
			e->owner_numeric = !errno && !*end;
		}
		pw = getpwnam(owner);
		e->owner_known = pw != NULL;
		e->owner_uid = pw ? pw->pw_uid : 0;
		e->lo = lo;
		e->last = last;
		sf->n++;
	}
	if (!sf->err && ferror(f))
		sf->err = EIO;
	free(line);
	(void)fclose(f);
}

static void subid_files_free(struct doctor *d)
{
	for (size_t i = 0; d->subid_files && i < 2; i++) {
		for (size_t k = 0; k < d->subid_files[i].n; k++)
			free(d->subid_files[i].e[k].owner);
		free(d->subid_files[i].e);
	}
	free(d->subid_files);
	d->subid_files = NULL;
}

/* An owner that names the account: its name, its uid in digits, or
 * another name with the same uid (newuidmap takes all three). */
static bool subid_owner_is(const struct subid_entry *e, const struct doc_agent *a)
{
	return !strcmp(e->owner, a->user) ||
	       (e->owner_numeric && e->owner_num == (unsigned long)a->uid) ||
	       (e->owner_known && e->owner_uid == a->uid);
}

/*
 * The account's ranges in one file, as "FIRST-LAST" items appended to list
 * and the usermod option (opt: --del-subuids or --del-subgids) to opts;
 * *usermod_ok is cleared for a line usermod cannot remove (it matches the
 * owner by name only and reads numbers up to LLONG_MAX). Returns how many.
 */
static unsigned subid_ranges(const struct subid_file *sf, const char *opt,
			     const struct doc_agent *a, FILE *list, FILE *opts, bool *usermod_ok)
{
	unsigned n = 0;

	for (size_t i = 0; i < sf->n; i++) {
		const struct subid_entry *e = &sf->e[i];

		if (!subid_owner_is(e, a))
			continue;
		fprintf(list, "%s%lu-%lu", n ? ", " : "", e->lo, e->last);
		fprintf(opts, " %s %lu-%lu", opt, e->lo, e->last);
		if (strcmp(e->owner, a->user) != 0 || e->last > (unsigned long)LLONG_MAX)
			*usermod_ok = false;
		n++;
	}
	return n;
}

/*
 * Subordinate uids or gids of an agent account. Inside the sandbox they
 * are worth nothing (no_new_privs leaves newuidmap without its privilege),
 * but a process of the account outside it (a path this doctor fails) can
 * map one into a user namespace of its own, and the session's sweep, which
 * looks for the agent's uid, no longer finds it. (Ranges from an NSS subid
 * source, not the files, are not seen here.)
 */
static void check_subids(struct doctor *d, const struct doc_agent *a)
{
	char *uids = NULL, *gids = NULL, *opts = NULL, fix[sizeof(d->rows->fix)];
	size_t uids_len = 0, gids_len = 0, opts_len = 0;
	FILE *fu, *fg, *fo;
	bool usermod_ok = true, failed;
	unsigned n = 0;

	if (!d->subid_files) {
		d->subid_files = calloc(2, sizeof(*d->subid_files));
		if (!d->subid_files) {
			d->out_of_memory = true;
			return;
		}
		subid_file_read(d->subuid, &d->subid_files[0]);
		subid_file_read(d->subgid, &d->subid_files[1]);
	}
	fu = open_memstream(&uids, &uids_len);
	fg = open_memstream(&gids, &gids_len);
	fo = open_memstream(&opts, &opts_len);
	failed = d->subid_files[0].err || d->subid_files[1].err || !fu || !fg || !fo;
	if (!failed) {
		n = subid_ranges(&d->subid_files[0], "--del-subuids", a, fu, fo, &usermod_ok);
		n += subid_ranges(&d->subid_files[1], "--del-subgids", a, fg, fo, &usermod_ok);
		failed = ferror(fu) || ferror(fg) || ferror(fo);
	}
	/* fclose of a memstream makes its buffer final (NULL stays NULL if
	 * it could not be made). */
	if (fu)
		failed |= fclose(fu) != 0;
	if (fg)
		failed |= fclose(fg) != 0;
	if (fo)
		failed |= fclose(fo) != 0;
	if (failed || !uids || !gids || !opts) {
		row(d, DOC_WARN, "accounts", a->user, NULL,
		    "subordinate ids: %s or %s could not be read to the end", d->subuid,
		    d->subgid);
	} else if (n) {
		/* The whole command, or none: a cut one would remove part. */
		if (!usermod_ok)
			snprintf(fix, sizeof(fix), "edit %s and %s: remove each line that gives "
				 "%s ids (by name, by uid or by another name with its uid); usermod "
				 "removes only lines that name it", d->subuid, d->subgid, a->user);
		else if (sbx_snprintf(fix, sizeof(fix), "usermod%s %s", opts, a->user) != 0)
			snprintf(fix, sizeof(fix), "usermod --del-subuids FIRST-LAST --del-subgids "
				 "FIRST-LAST %s, for each range in %s and %s", a->user, d->subuid,
				 d->subgid);
		row(d, DOC_WARN, "accounts", a->user, fix,
		    "subordinate ids (%s: %s; %s: %s): with newuidmap, a process of the account "
		    "outside the sandbox can become one in a user namespace of its own, where the "
		    "session's sweep, which looks for the agent's uid, does not find it",
		    d->subuid, uids[0] ? uids : "none", d->subgid, gids[0] ? gids : "none");
	}
	free(uids);
	free(gids);
	free(opts);
}

static void check_account(struct doctor *d, const struct doc_agent *a)
{
	struct sbx_account id = { 0 };
	char bad[256] = "", path[SBX_PATH_MAX], fix[SBX_PATH_MAX + 256];

	if (a->uid == 0)
		row(d, DOC_FAIL, "accounts", a->user, "never make uid 0 an agent account",
		    "uid 0: root is outside every sandbox");
	if (d->cfg && strcmp(a->shell, d->cfg->agent_shell) != 0) {
		snprintf(fix, sizeof(fix), "usermod -s %s %s (or agent-shell --enroll %s)",
			 d->cfg->agent_shell, a->user, a->user);
		row(d, DOC_FAIL, "accounts", a->user, fix,
		    "login shell %s is not agent_shell %s: services that skip the PAM module "
		    "start it unconfined", a->shell, d->cfg->agent_shell);
	} else {
		row(d, DOC_OK, "accounts", a->user, NULL, "login shell %s", a->shell);
	}
	if (sbx_snprintf(path, sizeof(path), "%s/%s", LINGER_DIR, a->user) == 0 &&
	    file_exists(path)) {
		snprintf(fix, sizeof(fix), "loginctl disable-linger %s", a->user);
		if (user_manager_guarded(d))
			row(d, DOC_WARN, "accounts", a->user, fix,
			    "lingering (%s): logind starts user@%u.service at boot, and %s "
			    "skips it (no user manager for agents)", path, (unsigned)a->uid,
			    d->um_where);
		else
			row(d, DOC_FAIL, "accounts", a->user, fix,
			    "lingering (%s): systemd --user runs the account's units outside any "
			    "session", path);
	}
	if (sbx_account_by_name(a->user, &id, NULL) == 0) {
		for (size_t i = 0; i < id.n_groups; i++)
			if (shell_group_is_privileged(id.groups[i]))
				list_add(bad, sizeof(bad), "%s", id.groups[i]);
		sbx_account_free(&id);
	}
	if (bad[0]) {
		snprintf(fix, sizeof(fix), "gpasswd -d %s GROUP for each group listed", a->user);
		row(d, DOC_FAIL, "accounts", a->user, fix,
		    "member of %s: privilege outside the sandbox (sudo, logs, sockets or disks)", bad);
	}
	check_subids(d, a);
}

/*
 * A root the profile asks to write that the ceiling leaves read-only: the
 * session works, but writes there fail (EROFS), and nothing said why. (The
 * README's "create the cache directory" step did nothing under the old
 * shipped ceiling's host_write = deny.) The profile as written, expanded
 * for the account, against the one the session gets.
 */
static void check_ceiling_narrows(struct doctor *d, const struct doc_agent *a,
				  const struct sbx_profile *named, const struct sbx_profile *eff,
				  const char *home)
{
	struct sbx_profile *asked = malloc(sizeof(*asked));
	char fix[SBX_PATH_MAX + 128];

	if (!asked) {
		d->out_of_memory = true;
		return;
	}
	*asked = *named;
	if (sbx_profile_expand(asked, a->user, home, NULL) != 0)
		goto out;
	for (size_t i = 0; i < asked->n_roots; i++) {
		const struct sbx_root *want = &asked->roots[i];

		if (want->write != SBX_ACCESS_ALLOW)
			continue;
		for (size_t j = 0; j < eff->n_roots; j++) {
			const struct sbx_root *got = &eff->roots[j];

			if (strcmp(got->path, want->path) != 0 || got->write == SBX_ACCESS_ALLOW)
				continue;
			snprintf(fix, sizeof(fix), "add \"root = %s rw\" (or a parent) to [ceiling], "
				 "or make the profile's root ro", want->path);
			row(d, DOC_WARN, "paths", a->user, fix,
			    "profile %s: root %s rw is %s in the session: the [ceiling] (its "
			    "host_write and root lines) does not let a profile write there",
			    named->name, want->path, got->read == SBX_ACCESS_DENY ? "hidden" :
			    "read-only");
		}
	}
out:
	free(asked);
}

/*
 * The paths a session of this account needs, as PAM and the shell compute
 * its profile. A missing workspace refuses every login (fail closed, so
 * WARN, not FAIL: "open bind source ...: No such file or directory"); a
 * missing root is left out of every session (lib/apply.c), unless it is
 * read-only inside a tree the session writes, which refuses it.
 */
/* A root the mount view would bind (read not deny) that is not there. */
static bool root_missing(const struct sbx_root *rt, int *e)
{
	struct stat st;

	if (rt->read == SBX_ACCESS_DENY || stat(rt->path, &st) == 0)
		return false;
	*e = errno;
	return true;
}

bool shell_workspace_missing(const struct sbx_profile *p, char *why, size_t size)
{
	/* The path as it shows (text.c): it goes to root's terminal. */
	char shown[SBX_TEXT_SHOWN_MAX(SBX_PATH_MAX)];
	struct stat st;
	int e;

	if (p->workspace_root[0] && stat(p->workspace_root, &st) != 0) {
		e = errno;
		(void)sbx_text_show(shown, sizeof(shown), p->workspace_root);
		snprintf(why, size, "workspace %s: %s", shown, strerror(e));
		return true;
	}
	return false;
}

/* network = proxy: the daemon must answer for this agent, with the list
 * its sessions have; otherwise they reach only their own loopback. */
static void check_egress(struct doctor *d, const struct doc_agent *a, const struct sbx_profile *p)
{
	struct sbx_error err = { 0 };
	char hash[65];

	if (p->network != SBX_NETWORK_PROXY)
		return;
	sbx_egress_list_hash(p, hash);
	if (sbx_egress_ping(d->cfg->egress_socket, a->uid, hash, 2000, &err) == 0)
		row(d, DOC_OK, "egress", a->user, NULL,
		    "profile %s: network = proxy, %zu destination(s); agent-sandbox-egressd at %s "
		    "answers with the same list", p->name, p->n_egress, d->cfg->egress_socket);
	else
		row(d, DOC_WARN, "egress", a->user,
		    err.code == EACCES ? "systemctl reload agent-sandbox-egressd" :
		    "systemctl enable --now agent-sandbox-egressd.socket",
		    "profile %s: network = proxy: %s: its sessions reach only their private "
		    "loopback (report: network_egress not achieved)", p->name, err.msg);
}

struct shown_list {
	const struct sbx_profile *p;
	const struct sbx_secret_places *sp;
	char text[SBX_PATH_MAX * 2];
	bool more;
};

/* A mount other than the secret's own that shows it: named in the list. */
static int note_shown(void *arg, size_t k, const char *path, int mnt_id)
{
	struct shown_list *l = arg;
	size_t used = strlen(l->text);

	if (mnt_id == l->sp->s[k].own_id)
		return 0;
	for (size_t i = 0; i < l->p->n_deny_read; i++)
		if (sbx_path_is_under(path, l->p->deny_read[i]))
			return 0;	/* masked in a session as a secret of its own */
	if (sbx_snprintf(l->text + used, sizeof(l->text) - used, "%s%s", used ? ", " : "",
			 path) != 0) {
		l->text[used] = '\0';
		l->more = true;
	}
	return 0;
}

/*
 * A secret another mount shows under another path (a bind of it, of a
 * directory above it, of /): sessions that see that path report deny_read
 * as not verified, until it is a deny_read entry too or the mount goes.
 * Searched as root in the host's table; a session searches its own view.
 */
static void check_secret_mounts(struct doctor *d, const struct doc_agent *a,
				const char *profile, const struct sbx_profile *p)
{
	struct sbx_secret_places *sp = malloc(sizeof(*sp));
	struct shown_list *l = calloc(1, sizeof(*l));
	char *table = NULL, why[200] = "";
	size_t len;

	if (!sp || !l) {
		d->out_of_memory = true;
		goto out;
	}
	sbx_secret_places_find(p, sp);
	l->p = p;
	l->sp = sp;
	if (!sp->unsearched[0] &&
	    (sbx_read_file("/proc/self/mountinfo", 16u << 20, &table, &len, NULL) != 0 ||
	     sbx_secret_mounts_shown(table, len, sp, note_shown, l, why, sizeof(why)) != 0))
		snprintf(sp->unsearched, sizeof(sp->unsearched), "%s",
			 why[0] ? why : "/proc/self/mountinfo is not readable");
	if (l->text[0])
		row(d, DOC_WARN, "paths", a->user, "add each path to deny_read, or remove the mount",
		    "profile %s: a secret also shows through another mount at %s%s: sessions "
		    "that see it there report deny_read not verified", profile, l->text,
		    l->more ? " (and more)" : "");
	if (sp->unsearched[0])
		row(d, DOC_WARN, "paths", a->user, "see the detail",
		    "profile %s: other mounts of its secrets not searched: %s", profile,
		    sp->unsearched);
out:
	free(table);
	free(l);
	free(sp);
}

/* The account's roots that are not there: each named once (not again when
 * a config row named it), and the refusal when one cannot be left out. */
static void check_missing_roots(struct doctor *d, const struct doc_agent *a, const char *profile,
				const struct sbx_profile *p)
{
	struct sbx_profile *left = malloc(sizeof(*left));
	struct sbx_error why = { 0 };
	char fix[SBX_PATH_MAX + 128], note[256];

	if (!left) {
		d->out_of_memory = true;
		return;
	}
	*left = *p;
	if (sbx_profile_skip_missing_roots(left, note, sizeof(note), &why) != 0)
		row(d, DOC_WARN, "paths", a->user, "create it, or remove the root line",
		    "profile %s: every session is refused: %s", profile, why.msg);
	free(left);
	for (size_t i = 0; i < p->n_roots; i++) {
		const struct sbx_root *rt = &p->roots[i];
		int e;

		if (!root_missing(rt, &e) || list_has(d->roots_named, rt->path))
			continue;
		snprintf(fix, sizeof(fix), "install -d %s%s, or remove the root line", rt->path,
			 rt->write == SBX_ACCESS_ALLOW ? " (owned by the agent)" : "");
		row(d, DOC_WARN, "paths", a->user, fix,
		    "profile %s: root %s %s: %s: left out of every session (its report says "
		    "\"%s (missing)\")", profile, rt->path,
		    rt->write == SBX_ACCESS_ALLOW ? "rw" : "ro", strerror(e), rt->path);
	}
}

static void check_profile_paths(struct doctor *d, const struct doc_agent *a)
{
	struct sbx_error err = { 0 };
	const struct sbx_profile *named = NULL;
	struct sbx_profile *p = NULL;
	struct sbx_account id = { 0 };
	char fix[SBX_PATH_MAX + 128];
	struct stat st;

	if (sbx_account_by_name(a->user, &id, NULL) != 0)
		return;
	p = malloc(sizeof(*p));
	if (!p) {
		d->out_of_memory = true;
		return;
	}
	if (sbx_config_select(d->cfg, a->user, (const char *const *)id.groups, id.n_groups,
			      &named, &err) != 0 ||
	    sbx_profile_restrict(named, &d->cfg->ceiling, p, &err) != 0 ||
	    sbx_profile_expand(p, a->user, id.home, &err) != 0) {
		row(d, DOC_WARN, "paths", a->user, "fix the config's [match] rules or the profile",
		    "no usable profile: %s", err.msg);
		goto out;
	}
	if (p->workspace_root[0] && stat(p->workspace_root, &st) != 0) {
		int e = errno;

		snprintf(fix, sizeof(fix), "agent-shell --enroll %s", a->user);
		row(d, DOC_WARN, "paths", a->user, fix,
		    "profile %s: workspace %s: %s: every session is refused", named->name,
		    p->workspace_root, strerror(e));
	}
	check_missing_roots(d, a, named->name, p);
	check_secret_mounts(d, a, named->name, p);
	check_ceiling_narrows(d, a, named, p, id.home);
	check_egress(d, a, p);
out:
	sbx_account_free(&id);
	free(p);
}

/* ---- PAM stacks ------------------------------------------------------- */

struct pam_found {
	bool account, session;
	bool account_weak, session_weak;	/* optional/sufficient: a refusal is not enforced */
	char where[256];			/* files read, for the detail */
	char source[SBX_PATH_MAX];		/* the stack file libpam reads */
};

/* Where libpam finds the stack or include NAME: the admin's directory
 * first, then the vendor directory (Debian's libpam reads /usr/lib/pam.d,
 * where systemd ships systemd-user, when /etc/pam.d has no such file).
 * 0 with path filled, or -ENOENT. */
static int pam_locate(const struct doctor *d, const char *name, char *path, size_t size)
{
	const char *dirs[] = { d->pam_dir, d->pam_vendor_dir };

	if (name[0] == '/')
		return sbx_strlcpy(path, size, name) ? -ENAMETOOLONG :
		       access(path, F_OK) == 0 ? 0 : -ENOENT;
	if (strchr(name, '/'))
		return -ENOENT;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		if (!dirs[i] || sbx_snprintf(path, size, "%s/%s", dirs[i], name) != 0)
			continue;
		if (access(path, F_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

/* A control that makes a refusal from the module end the stack. */
/* The action a [...] control gives return code `code` (its own entry,
 * else default=), copied to act; false when neither is there. */
static bool control_action(const char *control, const char *code, char *act, size_t size)
{
	char want[64], dflt[32] = "";
	const char *p = control + 1;
	bool found = false;

	snprintf(want, sizeof(want), "%s=", code);
	while (*p && *p != ']') {
		size_t n = strcspn(p, " \t]");

		if (n > strlen(want) && !strncmp(p, want, strlen(want))) {
			snprintf(act, size, "%.*s", (int)(n - strlen(want)), p + strlen(want));
			found = true;
		} else if (n > 8 && !strncmp(p, "default=", 8)) {
			snprintf(dflt, sizeof(dflt), "%.*s", (int)(n - 8), p + 8);
		}
		p += n;
		p += strspn(p, " \t");
	}
	if (!found && dflt[0])
		snprintf(act, size, "%s", dflt);
	return found || dflt[0];
}

/* Does the control end the stack on the module's refusal? code is the
 * PAM code the module refuses with in that phase: perm_denied (account),
 * session_err (session). A jump or ignore for that code lets the stack
 * go on past the refusal, whatever default= says. */
static bool control_enforces(const char *control, const char *code)
{
	char act[32];

	if (!strcmp(control, "required") || !strcmp(control, "requisite"))
		return true;
	if (control[0] != '[' || !control_action(control, code, act, sizeof(act)))
		return false;
	return !strcmp(act, "die") || !strcmp(act, "bad");
}

static bool module_is_ours(const char *module)
{
	const char *base = strrchr(module, '/');

	return !strcmp(base ? base + 1 : module, PAM_MODULE);
}

/* Read the next token; a control in [brackets] may hold spaces. */
static char *next_token(char **s)
{
	char *p = *s, *start;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return NULL;
	start = p;
	if (*p == '[') {
		while (*p && *p != ']')
			p++;
		if (*p)
			p++;
	} else {
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	if (*p)
		*p++ = '\0';
	*s = p;
	return start;
}

/* Scan one stack file for our module in the account and session phases,
 * following @include, include and substack (only_type: the phase an
 * include/substack line brings in; NULL = all). 0, or -errno of the
 * top-level file. */
/* Recursion: at most PAM_MAX_DEPTH includes deep. NOLINTNEXTLINE(misc-no-recursion) */
static int pam_scan(const struct doctor *d, const char *name, const char *only_type, int depth,
		    struct pam_found *f)
{
	char path[SBX_PATH_MAX], *buf = NULL, *line, *save = NULL;
	struct sbx_error err = { 0 };
	size_t len = 0;
	int ret;

	if (depth > PAM_MAX_DEPTH)
		return 0;
	ret = pam_locate(d, name, path, sizeof(path));
	if (ret != 0)
		return ret;
	if (depth == 0)
		sbx_strlcpy(f->source, sizeof(f->source), path);
	ret = sbx_read_file(path, 256 * 1024, &buf, &len, &err);
	if (ret != 0)
		return ret;
	if (depth > 0 && !list_has(f->where, path))
		list_add(f->where, sizeof(f->where), "%s", path);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#'), *p = line, *type, *control, *module;

		if (hash)
			*hash = '\0';
		type = next_token(&p);
		if (!type)
			continue;
		if (!strcmp(type, "@include")) {
			module = next_token(&p);
			if (module)
				pam_scan(d, module, only_type, depth + 1, f);
			continue;
		}
		if (type[0] == '-')
			type++;
		control = next_token(&p);
		module = next_token(&p);
		if (!control || !module)
			continue;
		if (only_type && strcmp(type, only_type) != 0)
			continue;
		if (!strcmp(control, "include") || !strcmp(control, "substack")) {
			pam_scan(d, module, type, depth + 1, f);
			continue;
		}
		if (!module_is_ours(module))
			continue;
		if (!strcmp(type, "account")) {
			f->account_weak |= !control_enforces(control, "perm_denied");
			f->account = true;
		} else if (!strcmp(type, "session")) {
			f->session_weak |= !control_enforces(control, "session_err");
			f->session = true;
		}
	}
	free(buf);
	return 0;
}

static const char *const job_services[] = { "cron", "atd", "systemd-user" };

#define PAM_FIX_ACCOUNT "account [success=ok ignore=ignore default=die] " PAM_MODULE
#define PAM_FIX_SESSION "session [success=ok ignore=ignore default=die] " PAM_MODULE

/* The package's pam-auth-update profile: for a stack that includes the
 * common-* file of a phase, enabling it is the fix (pam-auth-update
 * leaves common-* files edited by hand alone, and says so). */
#define PAM_CONFIGS_PROFILE "/usr/share/pam-configs/agent-sandbox"

static bool pam_auth_update_fixes(const struct pam_found *f, const char *common)
{
	return strstr(f->where, common) && file_exists(PAM_CONFIGS_PROFILE);
}

static void check_pam_interactive(struct doctor *d, const char *svc)
{
	struct pam_found f, other;
	char fix[512], where[300] = "";
	int ret;

	memset(&f, 0, sizeof(f));
	ret = pam_scan(d, svc, NULL, 0, &f);
	if (f.where[0])
		snprintf(where, sizeof(where), " (read %s too)", f.where);
	if (ret == -ENOENT) {
		memset(&other, 0, sizeof(other));
		pam_scan(d, "other", NULL, 0, &other);
		if (other.session && !other.session_weak)
			row(d, DOC_OK, "pam", svc, NULL,
			    "no %s stack in %s or %s; PAM falls back to %s, which has the module",
			    svc, d->pam_dir, d->pam_vendor_dir, other.source);
		else
			row(d, DOC_WARN, "pam", svc,
			    "if a program uses this service, give it a stack with the module",
			    "no %s stack in %s or %s: a program using service %s falls back to "
			    "'other', which lacks the module", svc, d->pam_dir, d->pam_vendor_dir, svc);
		return;
	}
	if (ret != 0) {
		row(d, DOC_WARN, "pam", svc, NULL, "%s stack: cannot read: %s", svc, strerror(-ret));
		return;
	}
	if (!f.session || f.session_weak) {
		if (pam_auth_update_fixes(&f, "common-session"))
			snprintf(fix, sizeof(fix), "pam-auth-update --enable agent-sandbox (if it "
				 "reports local changes to common-session, add \"%s\" there by hand)",
				 PAM_FIX_SESSION);
		else
			snprintf(fix, sizeof(fix), "add \"%s\" at the end of the session lines "
				 "of %s/%s (see the agent-sandbox-* snippets)", PAM_FIX_SESSION,
				 d->pam_dir, svc);
		row(d, DOC_FAIL, "pam", svc, fix,
		    "%s: %s in the session phase%s: agent sessions through %s get no PAM stage "
		    "(no mount namespace, no record, no checks)", f.source,
		    f.session ? "module is optional/sufficient" : "module missing", where, svc);
		return;
	}
	if (!f.account || f.account_weak) {
		if (pam_auth_update_fixes(&f, "common-account"))
			snprintf(fix, sizeof(fix), "pam-auth-update --enable agent-sandbox (if it "
				 "reports local changes to common-account, add \"%s\" there by hand)",
				 PAM_FIX_ACCOUNT);
		else
			snprintf(fix, sizeof(fix), "add \"%s\" before @include common-account in %s/%s",
				 PAM_FIX_ACCOUNT, d->pam_dir, svc);
		row(d, DOC_WARN, "pam", svc, fix,
		    "%s: account phase %s%s: the session phase repeats the checks, but refusals "
		    "come only after authentication", f.source,
		    f.account ? "does not enforce a refusal" : "lacks the module", where);
		return;
	}
	row(d, DOC_OK, "pam", svc, NULL, "%s: module in the account and session phases%s", f.source,
	    where);
}

static void cron_evidence(const struct doctor *d, char *buf, size_t size)
{
	bool allow = file_exists("/etc/cron.allow"), deny = file_exists("/etc/cron.deny");

	buf[0] = '\0';
	list_add(buf, size, "/etc/cron.allow %s", allow ? "present" : "absent");
	list_add(buf, size, "/etc/cron.deny %s", deny ? "present" : "absent");
	for (size_t i = 0; i < d->n_agents; i++) {
		if (d->agents[i].has_crontab)
			list_add(buf, size, "%s/%s exists", CRONTAB_DIR, d->agents[i].user);
	}
}

static void check_pam_job(struct doctor *d, const char *svc)
{
	struct pam_found f;
	char fix[SBX_PATH_MAX + 512], evidence[512] = "";
	bool crontab = false;
	int ret;

	memset(&f, 0, sizeof(f));
	ret = pam_scan(d, svc, NULL, 0, &f);
	if (!strcmp(svc, "cron")) {
		cron_evidence(d, evidence, sizeof(evidence));
		for (size_t i = 0; i < d->n_agents; i++)
			crontab |= d->agents[i].has_crontab;
	}
	if (ret == -ENOENT) {
		row(d, DOC_OK, "pam", svc, NULL, "no %s stack in %s or %s (service not installed)%s%s",
		    svc, d->pam_dir, d->pam_vendor_dir, evidence[0] ? "; " : "", evidence);
		return;
	}
	if (ret != 0) {
		row(d, DOC_WARN, "pam", svc, NULL, "%s stack: cannot read: %s", svc, strerror(-ret));
		return;
	}
	/* systemd --user: the package's drop-in keeps it from starting for
	 * agents, a clean skip; a PAM refusal alone leaves a failed unit. */
	if (!strcmp(svc, "systemd-user") && user_manager_guarded(d)) {
		row(d, DOC_OK, "pam", svc, NULL,
		    "%s: %s; %s runs agent-shell --user-manager first: agents get no user "
		    "manager, and no failed unit", f.source,
		    f.account && !f.account_weak ? "module in the account phase"
						 : "account phase without the module",
		    d->um_where);
		return;
	}
	if (!strcmp(svc, "systemd-user") && f.account && !f.account_weak) {
		row(d, DOC_WARN, "pam", svc,
		    "install the package's user@.service drop-in (make install or the .deb), "
		    "then systemctl daemon-reload",
		    "%s: module in the account phase: agents are refused, but every agent login "
		    "leaves user@UID.service failed (no user@.service drop-in in %s)", f.source,
		    d->unit_dirs);
		return;
	}
	if (f.account && !f.account_weak) {
		row(d, DOC_OK, "pam", svc, NULL,
		    "%s: module in the account phase: agent accounts are refused%s%s", f.source,
		    evidence[0] ? "; " : "", evidence);
		return;
	}
	/* The fix goes to the admin's directory: a copy there overrides the
	 * vendor's file, which a package upgrade would overwrite. */
	if (!strcmp(svc, "systemd-user"))
		snprintf(fix, sizeof(fix), "install the package's user@.service drop-in "
			 "(ExecCondition=+%s --user-manager %%i), then systemctl daemon-reload",
			 d->cfg ? d->cfg->agent_shell : "/usr/bin/agent-shell");
	else if (pam_auth_update_fixes(&f, "common-account"))
		snprintf(fix, sizeof(fix), "pam-auth-update --enable agent-sandbox (if it reports "
			 "local changes to common-account, add \"%s\" there by hand)%s",
			 PAM_FIX_ACCOUNT,
			 !strcmp(svc, "cron") ? "; list agents in /etc/cron.deny" : "");
	else
		snprintf(fix, sizeof(fix), "%sadd \"%s\" before @include common-account in %s/%s%s",
			 strncmp(f.source, d->pam_dir, strlen(d->pam_dir)) != 0 ?
			 "copy the vendor stack there, then " : "", PAM_FIX_ACCOUNT, d->pam_dir,
			 svc, !strcmp(svc, "cron") ? "; list agents in /etc/cron.deny" : "");
	/* A crontab that exists already is an unconfined path today, not a
	 * possibility: cron runs it with /bin/sh, never through agent-shell. */
	row(d, crontab ? DOC_FAIL : DOC_WARN, "pam", svc, fix,
	    "%s: account phase %s: agents could get %s jobs that run outside the sandbox%s%s",
	    f.source, f.account ? "does not enforce a refusal" : "lacks the module",
	    !strcmp(svc, "systemd-user") ? "systemd --user" : svc, evidence[0] ? "; " : "",
	    evidence);
}

/* ---- sshd's effective configuration ------------------------------------ */

/* In the child of sshd -T: when /run/sshd (sshd's privilege separation
 * directory, present only while sshd runs) is missing, a private mount
 * namespace with an empty /run so it can start; nothing outside that child
 * changes. */
static void sshd_private_run(void)
{
	struct stat st;

	if (stat("/run/sshd", &st) != 0 && geteuid() == 0 &&
	    (unshare(CLONE_NEWNS) != 0 ||
	     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	     mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") != 0 ||
	     mkdir("/run/sshd", 0755) != 0))
		dprintf(2, "doctor: private /run/sshd for sshd -T: %s\n", strerror(errno));
}

/* Run argv with stdout+stderr into *out (NUL-terminated, bounded); sshd_run
 * gives sshd -T the /run it needs. */
static int run_capture(char *const argv[], char **out, int *status, bool sshd_run)
{
	static char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };

	return sbx_run_capture(argv, envp, sshd_run ? sshd_private_run : NULL, CHILD_TIMEOUT_MS,
			       SSHD_OUTPUT_MAX, out, status);
}

/* The value sshd -T printed for a lowercase keyword, or NULL. */
static const char *sshd_value(char *text, const char *key, char *val, size_t size)
{
	size_t klen = strlen(key);

	for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, klen) && p[klen] == ' ') {
			size_t n = strcspn(p + klen + 1, "\n");

			if (n >= size)
				n = size - 1;
			memcpy(val, p + klen + 1, n);
			val[n] = '\0';
			return val;
		}
	}
	return NULL;
}

/* What sshd must say for an agent (docs/design.md section 7): each one open is a way
 * around agent-shell — a forwarder, a tunnel, ~/.ssh/rc via /bin/sh,
 * ~/.ssh/environment into sshd's exec of the shell. */
static const struct {
	const char *key;
	const char *want;
} sshd_required[] = {
	{ "allowtcpforwarding", "no" },
	{ "allowstreamlocalforwarding", "no" },
	{ "x11forwarding", "no" },
	{ "allowagentforwarding", "no" },
	{ "permittunnel", "no" },
	{ "permituserrc", "no" },
	{ "permituserenvironment", "no" },
	{ "disableforwarding", "yes" },
	{ "usepam", "yes" },
};

/*
 * With PermitUserRC on, sshd runs ~/.ssh/rc through the login shell before
 * the session's own: that agent-shell takes the PAM session's ledger
 * channel, and the login's shell then refuses itself, at every login, for
 * as long as the file is there (its ledger entry is the rc's run, with the
 * refusal and result=refused on its pam_close). Name the
 * file, in the isolated home under the state directory, which the session
 * sees at the passwd home.
 */
static void check_user_rc(struct doctor *d, const struct doc_agent *a)
{
	char path[SBX_PATH_MAX];
	struct stat st;

	if (!d->cfg || sbx_snprintf(path, sizeof(path), "%s/homes/%s/.ssh/rc",
				    d->cfg->state_dir, a->user) != 0)
		return;
	if (lstat(path, &st) == 0)
		row(d, DOC_FAIL, "sshd", a->user,
		    "remove the file, or set PermitUserRC no for the account",
		    "%s exists and PermitUserRC is on: it runs first and takes the session's "
		    "ledger channel, so every login of %s refuses itself (--log: result=refused, "
		    "reason=ledger_channel)", path, a->user);
}

static void check_sshd_agent(struct doctor *d, const struct doc_agent *a)
{
	char conn[SBX_NAME_MAX + 64], bad[512] = "", val[256], *text = NULL;
	char *argv[8];
	size_t k = 0;
	int status = 0, ret;
	bool sftp_internal = false;

	snprintf(conn, sizeof(conn), "user=%s,host=localhost,addr=127.0.0.1", a->user);
	argv[k++] = (char *)d->sshd;
	argv[k++] = (char *)"-T";
	if (d->sshd_config) {
		argv[k++] = (char *)"-f";
		argv[k++] = (char *)d->sshd_config;
	}
	argv[k++] = (char *)"-C";
	argv[k++] = conn;
	argv[k] = NULL;
	ret = run_capture(argv, &text, &status, true);
	if (ret != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char *last = text ? strrchr(text, '\n') : NULL;

		while (last && last > text && last[1] == '\0') {
			*last = '\0';
			last = strrchr(text, '\n');
		}
		row(d, DOC_WARN, "sshd", a->user, "run the command by hand and fix sshd's configuration",
		    "%s -T%s%s -C %s failed (%s): %s: not verified", d->sshd,
		    d->sshd_config ? " -f " : "", d->sshd_config ? d->sshd_config : "", conn,
		    ret ? strerror(-ret) : "exit status", text ? (last ? last + 1 : text) : "");
		free(text);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(sshd_required); i++) {
		if (!sshd_value(text, sshd_required[i].key, val, sizeof(val)))
			list_add(bad, sizeof(bad), "%s missing", sshd_required[i].key);
		else if (strcmp(val, sshd_required[i].want) != 0)
			list_add(bad, sizeof(bad), "%s %s", sshd_required[i].key, val);
	}
	/* Several "subsystem" lines may follow; any internal-sftp one counts. */
	for (char *p = strstr(text, "subsystem "); p; p = strstr(p + 1, "subsystem ")) {
		if ((p == text || p[-1] == '\n') && strstr(p, "internal-sftp") &&
		    strstr(p, "internal-sftp") < (strchr(p, '\n') ? strchr(p, '\n') : p + strlen(p)))
			sftp_internal = true;
	}
	if (sshd_value(text, "permituserrc", val, sizeof(val)) && strcmp(val, "no") != 0)
		check_user_rc(d, a);
	if (bad[0])
		row(d, DOC_FAIL, "sshd", a->user,
		    "install /etc/ssh/sshd_config.d/agent-sandbox.conf (Match Group listing the account's group: "
		    "DisableForwarding yes, AllowTcpForwarding no, ..., PermitUserRC no) and keep "
		    "UsePAM yes; the account must be in the Match group",
		    "effective config for %s: %s: a way around agent-shell", a->user, bad);
	else if (sftp_internal)
		row(d, DOC_WARN, "sshd", a->user,
		    "Subsystem sftp /usr/lib/openssh/sftp-server in sshd_config",
		    "forwarding, tunnels, user rc and environment off, UsePAM yes; but sftp is "
		    "internal-sftp, which runs inside sshd with only the PAM stage's confinement");
	else
		row(d, DOC_OK, "sshd", a->user, NULL,
		    "forwarding, tunnels, user rc and environment off; UsePAM yes; external sftp");
	free(text);
}

static void check_sshd(struct doctor *d)
{
	if (access(d->sshd, X_OK) != 0) {
		row(d, DOC_WARN, "sshd", d->sshd, "none if sshd is not used; else pass --sshd PATH",
		    "not installed or not executable (%s): sshd checks skipped", strerror(errno));
		return;
	}
	if (!d->n_agents) {
		row(d, DOC_OK, "sshd", d->sshd, NULL, "no agent accounts to check");
		return;
	}
	for (size_t i = 0; i < d->n_agents; i++)
		check_sshd_agent(d, &d->agents[i]);
}

/* ---- kernel, as the agent ----------------------------------------------- */

/*
 * The probe runs as the caller; for root it would always find user
 * namespaces. So a child becomes the agent (same groups, gid, uid) and
 * probes. It must not probe in the doctor's own image: a fork of root holds
 * root's memory (the config, sshd -T output, PAM stacks) and fds (the
 * admin's terminal on 0-2), and once it runs as the agent's uid another
 * process of that uid may ptrace it or read /proc/<pid>/mem and
 * /proc/<pid>/fd. So the child keeps only /dev/null and two pipes on 0-2,
 * drops, proves root cannot be regained and execs a fresh
 * "agent-shell --probe --json" with a fixed two-variable environment.
 * The binary is the doctor's own, opened O_PATH from /proc/self/exe
 * before the fork and run with execveat: no path an agent could influence
 * is looked up after the drop. The exec also makes the child dumpable
 * again (the kernel does, for a readable binary and equal ids), which the
 * probe needs for its own /proc/self/uid_map writes. What it prints is
 * parsed strictly and bounded (sbx_probe_from_json): an agent process may
 * ptrace the fresh image and print anything, so the result is the agent's
 * word, as the probe of any uid is.
 */
#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUT_MAX (16u * 1024)

static void probe_child_die(const char *what)
{
	dprintf(2, "%s: %s\n", what, strerror(errno));
	_exit(126);
}

static void probe_child(int exe, int out, int errw, uid_t uid, gid_t gid, const char *user)
{
	static char *const argv[] = {
		(char *)"agent-shell", (char *)"--probe", (char *)"--json", NULL,
	};
	static char *const envp[] = { (char *)"PATH=/usr/bin:/bin", (char *)"LANG=C", NULL };
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* 0-2 first (the doctor always has them open, so the pipes and exe
	 * are above 2), then exe at 3, close-on-exec: nothing else survives. */
	if (null < 0 || dup2(null, 0) != 0 || dup2(out, 1) != 1 || dup2(errw, 2) != 2)
		_exit(126);
	if (exe != 3 && dup3(exe, 3, O_CLOEXEC) != 3)
		probe_child_die("dup3(agent-shell)");
	if (sbx_fd_close_above(3, NULL) != 0)
		probe_child_die("close_range(4, ~0)");
	if ((user ? initgroups(user, gid) : setgroups(0, NULL)) != 0)
		probe_child_die(user ? "initgroups" : "setgroups");
	if (setresgid(gid, gid, gid) != 0)
		probe_child_die("setresgid");
	if (setresuid(uid, uid, uid) != 0)
		probe_child_die("setresuid");
	/* The uid change set dumpable to fs.suid_dumpable: with 1 ("debug")
	 * this image, still root's memory, would be open to the agent. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		probe_child_die("prctl(PR_SET_DUMPABLE, 0)");
	if (setresuid(0, 0, 0) == 0 || errno != EPERM) {
		dprintf(2, "setresuid(0) after the drop to uid %u did not fail with EPERM: "
			"root could be regained\n", (unsigned)uid);
		_exit(126);
	}
	/* Whatever initgroups' NSS modules left open. */
	if (sbx_fd_close_above(3, NULL) != 0)
		probe_child_die("close_range(4, ~0)");
	execveat(3, "", argv, envp, AT_EMPTY_PATH);
	probe_child_die("execveat(agent-shell --probe --json)");
}

/* Read the child's stdout (bounded) and stderr (first line kept) until both
 * end or the deadline passes; on the deadline or overflow kill it (by pid:
 * our unreaped child, so the pid cannot be reused). */
static int probe_collect(pid_t pid, int out, int errr, char *buf, size_t *len, char *msg,
			 size_t msg_size)
{
	struct pollfd pfd[2] = { { .fd = out, .events = POLLIN }, { .fd = errr, .events = POLLIN } };
	struct timespec start, now;
	size_t mlen = 0;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	*len = 0;
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		long left;
		int pr;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = PROBE_TIMEOUT_MS - ((now.tv_sec - start.tv_sec) * 1000 +
					   (now.tv_nsec - start.tv_nsec) / 1000000);
		pr = left > 0 ? poll(pfd, 2, (int)left) : 0;
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			ret = pr == 0 ? -ETIMEDOUT : -errno;
			break;
		}
		for (int i = 0; i < 2; i++) {
			char junk[256], *dst = i ? junk : buf + *len;
			size_t room = i ? sizeof(junk) : PROBE_OUT_MAX - *len;
			ssize_t n;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if (!room) {
				ret = -EFBIG;
				goto out;
			}
			n = read(pfd[i].fd, dst, room);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				pfd[i].fd = -1;
				continue;
			}
			if (!i) {
				*len += (size_t)n;
				continue;
			}
			/* The first line is enough. A process of the agent's uid
			 * may write here: printable ASCII only reaches root's
			 * terminal. */
			for (ssize_t k = 0; k < n && mlen + 1 < msg_size; k++) {
				if (junk[k] == '\n') {
					msg[mlen] = '\0';
					mlen = msg_size;
					break;
				}
				msg[mlen++] = (char)(junk[k] >= 0x20 && junk[k] < 0x7f ? junk[k] : '?');
				msg[mlen] = '\0';
			}
		}
	}
out:
	if (ret != 0)
		kill(pid, SIGKILL);
	return ret;
}

/* The probe as uid/gid (user for its groups, NULL: none). 0, or -errno
 * with why (for the WARN row) filled. */
int shell_probe_as(uid_t uid, gid_t gid, const char *user, struct sbx_probe *out, char *why,
		   size_t why_size)
{
	struct sbx_error err = { 0 };
	char *buf = NULL, msg[256] = "";
	int exe, outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, status = 0, ret;
	size_t len = 0;
	pid_t pid;

	exe = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	if (exe < 0) {
		ret = -errno;
		sbx_text_set(why, why_size, "open /proc/self/exe: %s", strerror(-ret));
		return ret;
	}
	buf = malloc(PROBE_OUT_MAX + 1);
	if (!buf || pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
		ret = buf ? -errno : -ENOMEM;
		sbx_text_set(why, why_size, "pipe: %s", strerror(-ret));
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		sbx_text_set(why, why_size, "fork: %s", strerror(-ret));
		goto out;
	}
	if (pid == 0)
		probe_child(exe, outp[1], errp[1], uid, gid, user);
	close(outp[1]);
	close(errp[1]);
	outp[1] = errp[1] = -1;
	ret = probe_collect(pid, outp[0], errp[0], buf, &len, msg, sizeof(msg));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (ret == -ETIMEDOUT) {
		sbx_text_set(why, why_size, "no answer within %d s, killed", PROBE_TIMEOUT_MS / 1000);
	} else if (ret != 0) {
		sbx_text_set(why, why_size, "reading its output: %s", strerror(-ret));
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		ret = -EIO;
		if (WIFSIGNALED(status))
			sbx_text_set(why, why_size, "killed by signal %d%s%s", WTERMSIG(status),
				 msg[0] ? ": " : "", msg);
		else
			sbx_text_set(why, why_size, "exit status %d%s%s", WEXITSTATUS(status),
				 msg[0] ? ": " : "", msg);
	} else {
		buf[len] = '\0';
		ret = sbx_probe_from_json(buf, len, out, &err);
		if (ret != 0)
			sbx_text_set(why, why_size, "%s", err.msg);
	}
out:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	close(exe);
	free(buf);
	return ret;
}

/* The active LSMs (Landlock must be among them), and where that was read. */
static void lsm_list(char *out, size_t size)
{
	char list[1024];

	switch (sbx_lsm_list(list, sizeof(list))) {
	case SBX_LSM_FROM_SECURITYFS:
		snprintf(out, size, "%.200s", list);
		break;
	case SBX_LSM_FROM_CMDLINE:
		snprintf(out, size, "%.200s (boot command line)", list);
		break;
	default:
		snprintf(out, size, "kernel default (securityfs not mounted, no lsm= at boot)");
	}
}

static bool any_gated(const struct doctor *d)
{
	if (!d->cfg)
		return false;
	for (size_t i = 0; i < d->cfg->n_profiles; i++) {
		if (d->cfg->profiles[i].command == SBX_ACCESS_GATED)
			return true;
	}
	return false;
}

static bool any_session_limits(const struct doctor *d)
{
	if (!d->cfg)
		return false;
	for (size_t i = 0; i < d->cfg->n_profiles; i++) {
		if (sbx_cgroup_requested(&d->cfg->profiles[i]))
			return true;
	}
	return false;
}

/* cgroup v2, and whether memory_max, pids_max and cpu_max can hold: the
 * controllers in v2 and systemd to set them on the logind scope. */
static void check_cgroup(struct doctor *d, const struct sbx_probe *p)
{
	struct stat st;
	bool systemd = lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
	bool limits = p->cgroup2 && p->cgroup2_limits && systemd;

	if (!p->cgroup2) {
		row(d, any_session_limits(d) ? DOC_WARN : DOC_OK, "kernel", "cgroup2",
		    "boot with systemd.unified_cgroup_hierarchy=1",
		    "cgroup v2 not mounted: rlimits only%s", any_session_limits(d) ?
		    "; the profiles' memory_max, pids_max, cpu_max cannot hold (those "
		    "sessions are degraded)" : "");
		return;
	}
	if (!limits && any_session_limits(d)) {
		row(d, DOC_WARN, "kernel", "cgroup2",
		    !p->cgroup2_limits ? "boot with systemd.unified_cgroup_hierarchy=1" :
		    "run the host under systemd, or remove memory_max, pids_max, cpu_max",
		    "a profile sets memory_max, pids_max or cpu_max, but %s: those sessions are "
		    "degraded", !p->cgroup2_limits ? "the memory, pids or cpu controller is not "
		    "in cgroup v2 (kept in v1)" : "systemd does not manage this host");
		return;
	}
	row(d, DOC_OK, "kernel", "cgroup2", NULL, "mounted; %s",
	    limits ? "memory, pids and cpu controllers and systemd: session limits can hold" :
	    "session limits (memory_max, pids_max, cpu_max) could not hold here, and no "
	    "profile sets them");
}

static void check_kernel(struct doctor *d)
{
	struct sbx_probe p;
	char who[SBX_NAME_MAX + 32], lsm[256], why[384], *mfd = NULL;
	size_t len;
	const struct doc_agent *a = d->n_agents ? &d->agents[0] : NULL;
	struct passwd *nobody = a ? NULL : getpwnam("nobody");
	uid_t uid = a ? a->uid : nobody ? nobody->pw_uid : 65534;
	gid_t gid = a ? a->gid : nobody ? nobody->pw_gid : 65534;
	int ret;

	snprintf(who, sizeof(who), "%s%s", a ? a->user : "nobody", a ? "" : " (no agent account)");
	ret = shell_probe_as(uid, gid, a ? a->user : NULL, &p, why, sizeof(why));
	if (ret != 0) {
		row(d, DOC_WARN, "kernel", who,
		    "run agent-shell --probe as that account to see what its sessions get",
		    "probe as uid %u (agent-shell --probe --json) failed: %s: what the kernel "
		    "offers this account (Landlock, namespaces, cgroups) is not checked",
		    (unsigned)uid, why);
		return;
	}
	lsm_list(lsm, sizeof(lsm));
	/* p is filled: shell_probe_as() returned 0, and its -errno is never 0.
	 * NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult) */
	if (p.landlock_abi == 0)
		row(d, DOC_WARN, "kernel", "landlock", p.landlock_why,
		    "unavailable (lsm=%s): sessions are degraded or refused by their floor", lsm);
	else
		row(d, DOC_OK, "kernel", "landlock", NULL, "ABI %d, errata %d (lsm=%s)%s",
		    p.landlock_abi, p.landlock_errata, lsm,
		    p.landlock_abi < 6 ? "; older ABI: the report names each dropped right" : "");
	if (!p.seccomp || !p.seccomp_kill_process)
		row(d, DOC_WARN, "kernel", "seccomp", "a kernel with CONFIG_SECCOMP_FILTER (4.14+)",
		    "seccomp filter%s unavailable: sessions requiring syscall_filter are refused",
		    p.seccomp ? " KILL_PROCESS" : "");
	else
		row(d, DOC_OK, "kernel", "seccomp", NULL, "filter with KILL_PROCESS");
	if (!p.userns || !p.mountns || !p.pidns)
		row(d, DOC_WARN, "kernel", "userns", p.userns_why,
		    "as %s: no user/mount/pid namespaces: no mount view in the shell; sessions are "
		    "degraded", who);
	else
		row(d, DOC_OK, "kernel", "userns", NULL,
		    "as %s: user, mount, pid%s%s%s%s namespaces", who, p.netns ? ", net" : "",
		    p.ipcns ? ", ipc" : "", p.utsns ? ", uts" : "", p.cgroupns ? ", cgroup" : "");
	check_cgroup(d, &p);
	/* docs/design.md section 6: W^X under the gate holds either way; which
	 * layers hold it is worth knowing (the report's memory_wx says it too). */
	if (any_gated(d))
		row(d, DOC_OK, "kernel", "mdwe", NULL, "%s", p.mdwe ?
		    "PR_SET_MDWE: the gate keeps memory W^X with the kernel's MDWE and seccomp" :
		    "no PR_SET_MDWE (kernel < 6.3): the gate keeps memory W^X with seccomp alone, "
		    "which also refuses every mprotect to PROT_EXEC");
	/* docs/design.md section 6: under the gate seccomp already refuses exec-able memfds;
	 * the sysctl adds a host-wide layer on dedicated agent hosts. */
	if (any_gated(d) && sbx_read_file("/proc/sys/vm/memfd_noexec", 64, &mfd, &len, NULL) == 0) {
		uint64_t v = 0;

		mfd[strcspn(mfd, "\n")] = '\0';
		if (sbx_parse_u64(mfd, false, 0, 2, &v) == 0 && v == 2)
			row(d, DOC_OK, "kernel", "memfd_noexec", NULL, "vm.memfd_noexec=2");
		else
			row(d, DOC_WARN, "kernel", "memfd_noexec",
			    "sysctl vm.memfd_noexec=2 on a dedicated agent host",
			    "a profile is gated; vm.memfd_noexec is %s (seccomp still refuses "
			    "exec-able memfds under the gate)", mfd);
	}
	free(mfd);
}

/*
 * fs.suid_dumpable = 1 ("debug"): a process that changes its uid stays
 * dumpable, so a root process that becomes the agent is open to the
 * agent's other processes (ptrace, /proc/<pid>/mem) for as long as the
 * agent can hold it with SIGSTOP. The PAM close's kill helper keeps its
 * saved ids 0, which denies that whatever dumpable says; the probe's child
 * (a root copy of agent-shell, no secrets) makes itself non-dumpable
 * after the change; anything else on the host that drops to an agent's
 * uid without exec is exposed. Yama's ptrace_scope 1 or more closes it
 * (only an ancestor may attach). 0 and 2 are safe: with 2 only a holder
 * of CAP_SYS_PTRACE may attach.
 */
static void check_dumpable(struct doctor *d)
{
	char *sd = NULL, *ys = NULL;
	uint64_t v = 0, scope = 0;
	bool yama;
	size_t len;

	if (sbx_read_file("/proc/sys/fs/suid_dumpable", 64, &sd, &len, NULL) == 0)
		sd[strcspn(sd, "\n")] = '\0';
	if (!sd || sbx_parse_u64(sd, false, 0, 2, &v) != 0) {
		row(d, DOC_WARN, "kernel", "suid_dumpable", "check sysctl fs.suid_dumpable (0 or 2)",
		    "/proc/sys/fs/suid_dumpable unreadable: whether root's helpers become readable "
		    "by the agent when they change to its uid is not checked");
		free(sd);
		return;
	}
	if (sbx_read_file("/proc/sys/kernel/yama/ptrace_scope", 64, &ys, &len, NULL) == 0)
		ys[strcspn(ys, "\n")] = '\0';
	yama = ys && sbx_parse_u64(ys, false, 0, 3, &scope) == 0;
	if (v != 1)
		row(d, DOC_OK, "kernel", "suid_dumpable", NULL,
		    "fs.suid_dumpable=%llu: a root process that changes to an agent's uid is not "
		    "dumpable", (unsigned long long)v);
	else if (yama && scope >= 1)
		row(d, DOC_OK, "kernel", "suid_dumpable", NULL,
		    "fs.suid_dumpable=1, but Yama's ptrace_scope=%llu: only an ancestor may read a "
		    "process's memory", (unsigned long long)scope);
	else
		row(d, DOC_WARN, "kernel", "suid_dumpable",
		    "sysctl fs.suid_dumpable=0 (the default), or kernel.yama.ptrace_scope=1",
		    "fs.suid_dumpable=1 and %s: a root process that changes to an agent's uid "
		    "without exec (this product's own helpers excepted) is readable by the "
		    "agent's other processes", yama ? "Yama's ptrace_scope=0" : "no Yama");
	free(sd);
	free(ys);
}

/* ---- output ------------------------------------------------------------- */

static void print_text(const struct doctor *d, size_t n_ok, size_t n_warn, size_t n_fail)
{
	printf("agent-shell --doctor: config %s, %zu agent account(s), PAM stacks in %s\n\n",
	       shell_config_path(), d->n_agents, d->pam_dir);
	printf("%-6s %-9s %-24s %s\n", "STATUS", "AREA", "SUBJECT", "DETAIL");
	for (size_t i = 0; i < d->n_rows; i++) {
		const struct doc_row *r = &d->rows[i];

		printf("%-6s %-9s %-24s %s\n", status_name(r->status), r->area, r->subject, r->detail);
		if (r->status != DOC_OK && r->fix[0])
			printf("%-6s %-9s %-24s fix: %s\n", "", "", "", r->fix);
	}
	printf("\n%zu OK, %zu WARN, %zu FAIL%s\n", n_ok, n_warn, n_fail,
	       n_fail ? ": an agent account has a way in that is not confined, or the agents "
			"cannot read the config (see the FAIL rows)" : "");
}

static void print_json(const struct doctor *d, size_t n_ok, size_t n_warn, size_t n_fail)
{
	printf("{\"config\":");
	sbx_json_put_string(stdout, shell_config_path());
	printf(",\"agents\":[");
	for (size_t i = 0; i < d->n_agents; i++) {
		printf("%s", i ? "," : "");
		sbx_json_put_string(stdout, d->agents[i].user);
	}
	printf("],\"rows\":[");
	for (size_t i = 0; i < d->n_rows; i++) {
		const struct doc_row *r = &d->rows[i];

		printf("%s{\"area\":", i ? "," : "");
		sbx_json_put_string(stdout, r->area);
		printf(",\"subject\":");
		sbx_json_put_string(stdout, r->subject);
		printf(",\"status\":\"%s\",\"detail\":", status_name(r->status));
		sbx_json_put_string(stdout, r->detail);
		printf(",\"fix\":");
		sbx_json_put_string(stdout, r->fix);
		printf("}");
	}
	printf("],\"ok\":%zu,\"warn\":%zu,\"fail\":%zu}\n", n_ok, n_warn, n_fail);
}

static void doctor_usage(FILE *out)
{
	fputs("usage: agent-shell --doctor [--json] [-f FILE] [--pam-dir DIR] [--pam-vendor-dir DIR]\n"
	      "                           [--sshd PATH] [--sshd-config FILE] [--unit-dirs DIR:DIR...]\n"
	      "-f FILE (--config FILE): check a candidate config and its conf.d instead of the\n"
	      "live one (the rest of the host as it is).\n"
	      "Run as root. Exit 0: no FAIL; 1: an entry into an agent account is not confined,\n"
	      "or the agents cannot read the config; 2: usage error.\n", out);
}

/* The interactive services an agent may use by default, and the job
 * services that must refuse agents. */
static void check_pam_stacks(struct doctor *d)
{
	size_t n;
	const char *const *interactive = sbx_default_services(&n);

	for (size_t i = 0; i < n; i++)
		check_pam_interactive(d, interactive[i]);
	for (size_t i = 0; i < ARRAY_SIZE(job_services); i++)
		check_pam_job(d, job_services[i]);
}

/* The root-owned directories the PAM stage writes. */
static void check_dirs(struct doctor *d)
{
	/* homes/ is 0711 on purpose: an agent reaches its own home by name
	 * (a session without the PAM stage), nobody lists the others. */
	check_root_dir(d, "state_dir", d->cfg ? d->cfg->state_dir : "/var/lib/agent-sandbox",
		       "homes", 0066, "other users can list or change the agents' homes");
	check_root_dir(d, "runtime_dir", SBX_RUNTIME_DIR, "sessions", 0077,
		       "the session records, which name every agent's client address, "
		       "are readable by other users");
}

/*
 * Group rules are matched through getgrouplist(3), and glibc's
 * getgrouplist reports no failing NSS service: with "group: files sss" and
 * sssd or its directory unreachable, an account that is in the agents group
 * only through the directory reads as not in it. The PAM stage then takes
 * it for an account that is not an agent's (a login shell of agent-shell
 * still refuses: it finds no profile either; internal-sftp and any other
 * shell run unconfined), and the sshd drop-in's Match Group misses it too.
 * Local services cannot become unreachable that way; any other is named.
 * "compat" is local unless /etc/group has NIS "+" lines.
 */
static const char *const nss_local[] = { "files", "systemd", "compat", "db", "altfiles" };

static bool nss_service_local(const char *s, size_t n, bool nis_lines)
{
	for (size_t i = 0; i < ARRAY_SIZE(nss_local); i++)
		if (strlen(nss_local[i]) == n && strncmp(s, nss_local[i], n) == 0)
			return !(nis_lines && strcmp(nss_local[i], "compat") == 0);
	return false;
}

/* Append to bad the services of a database's lines ("group: files
 * [NOTFOUND=return] sss") that are not local. Every line of that database
 * counts: a duplicate line is not left out of the judgement. */
static void nss_db_remote(const char *text, const char *db, bool nis_lines, char *bad,
			  size_t size)
{
	size_t dl = strlen(db);
	const char *l = text;

	while (l && *l) {
		const char *end = l + strcspn(l, "\n#");
		const char *p = l + strspn(l, " \t");
		const char *nl = strchr(l, '\n');

		l = nl ? nl + 1 : NULL;
		if (p + dl >= end || strncmp(p, db, dl) != 0 || p[dl] != ':')
			continue;
		for (p += dl + 1; p < end;) {
			size_t n;

			p += strspn(p, " \t");
			if (p >= end)
				break;
			if (*p == '[') {	/* an action, [NOTFOUND=return] */
				const char *close = memchr(p, ']', (size_t)(end - p));

				p = close ? close + 1 : end;
				continue;
			}
			n = strcspn(p, " \t[");
			if (n > (size_t)(end - p))
				n = (size_t)(end - p);
			if (!nss_service_local(p, n, nis_lines)) {
				char name[64];

				snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), p);
				if (!list_has(bad, name))
					list_add(bad, size, "%s", name);
			}
			p += n;
		}
	}
}

static void check_nss_groups(struct doctor *d)
{
	char *text = NULL, *group = NULL, bad[256] = "";
	bool nis_lines;
	size_t len;
	int r;

	if (d->cfg && !sbx_config_has_group_rules(d->cfg)) {
		row(d, DOC_OK, "accounts", "nsswitch group", NULL,
		    "no [match] group rules: agents are named by account, groups are not looked up");
		return;
	}
	r = sbx_read_file(NSSWITCH_CONF, 1u << 20, &text, &len, NULL);
	if (r && r != -ENOENT) {
		row(d, DOC_WARN, "accounts", "nsswitch group", "check " NSSWITCH_CONF,
		    "%s unreadable (%s): which services answer the group rules is not checked",
		    NSSWITCH_CONF, strerror(-r));
		return;
	}
	/* NIS lines ("+" or "-" at the start) make compat a network service. */
	nis_lines = sbx_read_file("/etc/group", 64u << 20, &group, &len, NULL) == 0 &&
		    (group[0] == '+' || group[0] == '-' || strstr(group, "\n+") ||
		     strstr(group, "\n-"));
	free(group);
	/* getgrouplist reads "initgroups" when the file has it; the names come
	 * from "group". No file, or no line: glibc's default, files. */
	if (text) {
		nss_db_remote(text, "initgroups", nis_lines, bad, sizeof(bad));
		nss_db_remote(text, "group", nis_lines, bad, sizeof(bad));
	}
	free(text);
	if (!bad[0]) {
		row(d, DOC_OK, "accounts", "nsswitch group", NULL,
		    "the group rules are answered by local services only (%s)", NSSWITCH_CONF);
		return;
	}
	row(d, DOC_WARN, "accounts", "nsswitch group",
	    "name agents by [match] user rules, or keep the agents' groups and their members in "
	    "/etc/group, and give every agent account agent-shell as its login shell",
	    "group rules are answered through %s (%s): getgrouplist does not report a service "
	    "that fails, so while it is unreachable a member of an agents group through it is "
	    "taken for an account that is not an agent's (internal-sftp and a login shell other "
	    "than agent-shell run unconfined; the sshd drop-in's Match Group misses it too)",
	    bad, NSSWITCH_CONF);
}

/* Every agent account, each as the agent: its shell, groups, profile paths. */
static void check_accounts(struct doctor *d)
{
	check_nss_groups(d);
	collect_agents(d);
	if (!d->n_agents)
		row(d, DOC_WARN, "accounts", "-", "agent-shell --enroll USER",
		    "no agent accounts: nothing is matched by the config's [match] rules");
	for (size_t i = 0; i < d->n_agents; i++) {
		check_account(d, &d->agents[i]);
		if (d->cfg)
			check_profile_paths(d, &d->agents[i]);
	}
}

/* The areas, in the order their rows are printed; each adds its rows. */
static void (*const doctor_areas[])(struct doctor *) = {
	check_config, check_dirs, check_accounts, check_pam_stacks, check_sshd, check_kernel,
	check_dumpable,
};

int shell_cmd_doctor(int argc, char **argv)
{
	enum { OPT_JSON = 0x100, OPT_PAM_DIR, OPT_PAM_VENDOR_DIR, OPT_UNIT_DIRS, OPT_SSHD,
	       OPT_SSHD_CONFIG,
	       OPT_HELP };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "pam-dir", required_argument, NULL, OPT_PAM_DIR },
		{ "pam-vendor-dir", required_argument, NULL, OPT_PAM_VENDOR_DIR },
		{ "unit-dirs", required_argument, NULL, OPT_UNIT_DIRS },
		{ "sshd", required_argument, NULL, OPT_SSHD },
		{ "sshd-config", required_argument, NULL, OPT_SSHD_CONFIG },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "config", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_file = NULL;
	struct doctor d = {
		.pam_dir = "/etc/pam.d",
		.pam_vendor_dir = "/usr/lib/pam.d",
		.unit_dirs = UNIT_DIRS_DEFAULT,
		.subuid = "/etc/subuid",
		.subgid = "/etc/subgid",
		.um_guard = -1,
		.sshd = SSHD_DEFAULT,
		.group_fallback = SBX_DEFAULT_GROUP,
	};
#ifdef SBX_TESTING
	/* Test build only: other subordinate id files than the host's. */
	if (getenv("SBX_TEST_SUBUID"))
		d.subuid = getenv("SBX_TEST_SUBUID");
	if (getenv("SBX_TEST_SUBGID"))
		d.subgid = getenv("SBX_TEST_SUBGID");
#endif
	size_t n_ok = 0, n_warn = 0, n_fail = 0;
	bool json = false;
	int c;

	/* argv[0] is "--doctor"; options follow. */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			config_file = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_PAM_DIR:
			d.pam_dir = optarg;
			break;
		case OPT_PAM_VENDOR_DIR:
			d.pam_vendor_dir = optarg;
			break;
		case OPT_UNIT_DIRS:
			d.unit_dirs = optarg;
			break;
		case OPT_SSHD:
			d.sshd = optarg;
			break;
		case OPT_SSHD_CONFIG:
			d.sshd_config = optarg;
			break;
		case OPT_HELP:
			doctor_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "agent-shell: --doctor: unknown option or missing argument: %s\n",
				argv[optind - 1] ? argv[optind - 1] : "?");
			doctor_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "agent-shell: --doctor: unexpected argument %s\n", argv[optind]);
		doctor_usage(stderr);
		return 2;
	}
	if (d.pam_dir[0] != '/' || d.pam_vendor_dir[0] != '/' || d.sshd[0] != '/' ||
	    d.unit_dirs[0] != '/' ||
	    (d.sshd_config && d.sshd_config[0] != '/')) {
		fprintf(stderr, "agent-shell: --doctor: --pam-dir, --pam-vendor-dir, --unit-dirs, "
			"--sshd and --sshd-config take absolute paths\n");
		return 2;
	}
	if (config_file) {
		int r = config_file[0] ? shell_config_use(config_file) : -EINVAL;

		if (r != 0) {
			fprintf(stderr, "agent-shell: --doctor: -f %s: %s\n", config_file,
				r == -EINVAL ? "empty file name" : strerror(-r));
			return 2;
		}
	}
	if (geteuid() != 0) {
		fprintf(stderr, "agent-shell: --doctor must run as root (it reads sshd's effective "
			"configuration and probes as each agent)\n");
		return 1;
	}

	for (size_t i = 0; i < ARRAY_SIZE(doctor_areas); i++)
		doctor_areas[i](&d);

	for (size_t i = 0; i < d.n_rows; i++) {
		if (d.rows[i].status == DOC_OK)
			n_ok++;
		else if (d.rows[i].status == DOC_WARN)
			n_warn++;
		else
			n_fail++;
	}
	if (d.out_of_memory)
		n_fail++;
	if (json)
		print_json(&d, n_ok, n_warn, n_fail);
	else
		print_text(&d, n_ok, n_warn, n_fail);
	fflush(stdout);
	sbx_config_free(d.cfg);
	subid_files_free(&d);
	free(d.rows);
	free(d.agents);
	return n_fail ? 1 : 0;
}
