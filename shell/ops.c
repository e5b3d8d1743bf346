/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ops.c — the administrator's day-to-day verbs, root only:
 *
 *   agent-shell --sessions [--json]          live sessions, from the PAM
 *                                            stage's records
 *   agent-shell --end SESSION|USER           end a session's whole tree
 *   agent-shell --log [USER] [--since AGE] [--json]
 *                                            recent sessions and refusals,
 *                                            from root's ledger
 *   agent-shell --prune [--older-than DAYS] [--yes]
 *                                            stale records, old report files
 *                                            (dry run unless --yes)
 *
 * The records under /run/agent-sandbox/sessions are root's (0600 in a 0700
 * directory): they are the source of truth for what is open, and nothing an
 * agent writes is read here except, by --prune, the names and ages of files
 * in the agents' own report directories (reached by directory fds, never
 * following a link).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "shell.h"

#define EXIT_OPS_USAGE 2
#define MAX_PIDS 4096

static int need_root(const char *verb)
{
	if (geteuid() == 0)
		return 0;
	fprintf(stderr, "agent-shell %s: only root can read the session records "
		"(%s/sessions and the ledger are root-only)\n", verb, SBX_RUNTIME_DIR);
	return 1;
}

/* The config's state_dir, or the default where there is no config; a
 * config that is there but unusable is an error (1, said). */
static int state_dir_of_config(const char *verb, char *out, size_t size)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };

	if (sbx_config_load(shell_config_path(), 0, &cfg, &err) != 0) {
		if (err.code != ENOENT) {
			fprintf(stderr, "agent-shell %s: %s\n", verb, err.msg);
			return 1;
		}
		sbx_strlcpy(out, size, SBX_STATE_DIR);
		return 0;
	}
	sbx_strlcpy(out, size, cfg->state_dir);
	sbx_config_free(cfg);
	return 0;
}

static void utc(int64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "%lld", (long long)t);
}

static size_t session_pids(const struct sbx_record *rec, pid_t *pids, size_t max)
{
	size_t n = 0;

	if (sbx_session_procs(rec->uid, rec->mntns, pids, max, &n) != 0)
		return 0;
	return n;
}

static void json_kv(const char *key, const char *value, bool comma)
{
	printf("\"%s\":", key);
	sbx_json_put_string(stdout, value);
	if (comma)
		putchar(',');
}

/* A string from a record or the ledger, as it shows (text.c): a client
 * name or a command word may hold any byte, and this is root's terminal. */
static const char *shown(char *buf, size_t size, const char *s)
{
	(void)sbx_text_show(buf, size, s);
	return buf;
}

static void print_session_json(const struct sbx_record_entry *e, const pid_t *pids, size_t n,
			       bool first)
{
	const struct sbx_record *r = &e->rec;
	char when[32];

	utc(r->started, when, sizeof(when));
	printf("%s{", first ? "" : ",");
	json_kv("session", r->session, true);
	json_kv("user", r->user, true);
	printf("\"uid\":%u,", (unsigned)r->uid);
	json_kv("client", r->client, true);
	json_kv("service", r->service, true);
	json_kv("profile", r->profile, true);
	json_kv("started", when, true);
	printf("\"age_s\":%lld,", (long long)(time(NULL) - r->started));
	json_kv("state", e->live ? "live" : "stale", true);
	printf("\"opener_pid\":%d,\"pids\":[", (int)r->opener_pid);
	for (size_t i = 0; i < n && i < MAX_PIDS; i++)
		printf("%s%d", i ? "," : "", (int)pids[i]);
	printf("]}");
}

int shell_cmd_sessions(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct sbx_record_entry *list = NULL;
	struct sbx_error err = { 0 };
	static pid_t pids[MAX_PIDS];
	bool json = false;
	size_t n = 0;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c != 'j') {
			fprintf(stderr, "usage: agent-shell --sessions [--json]\n");
			return EXIT_OPS_USAGE;
		}
		json = true;
	}
	if (optind != argc) {
		fprintf(stderr, "usage: agent-shell --sessions [--json]\n");
		return EXIT_OPS_USAGE;
	}
	if (need_root("--sessions"))
		return 1;
	if (sbx_record_list(SBX_RUNTIME_DIR, &list, &n, &err) != 0) {
		fprintf(stderr, "agent-shell --sessions: %s\n", err.msg);
		return 1;
	}
	if (json)
		printf("{\"sessions\":[");
	else
		printf("%-32s %-16s %-15s %-8s %-12s %-20s %-5s %s\n", "SESSION", "USER", "CLIENT",
		       "SERVICE", "PROFILE", "STARTED", "STATE", "PIDS");
	for (size_t i = 0; i < n; i++) {
		const struct sbx_record *r = &list[i].rec;
		size_t np = session_pids(r, pids, MAX_PIDS);
		char when[32];

		if (json) {
			print_session_json(&list[i], pids, np, i == 0);
			continue;
		}
		char user[SBX_TEXT_SHOWN_MAX(sizeof(r->user))];
		char client[SBX_TEXT_SHOWN_MAX(sizeof(r->client))];
		char service[SBX_TEXT_SHOWN_MAX(sizeof(r->service))];
		char profile[SBX_TEXT_SHOWN_MAX(sizeof(r->profile))];

		utc(r->started, when, sizeof(when));
		printf("%-32s %-16s %-15s %-8s %-12s %-20s %-5s %zu", r->session,
		       shown(user, sizeof(user), r->user), shown(client, sizeof(client), r->client),
		       shown(service, sizeof(service), r->service),
		       shown(profile, sizeof(profile), r->profile), when,
		       list[i].live ? "live" : "stale", np);
		for (size_t k = 0; k < np && k < 8; k++)
			printf("%s%d", k ? "," : " (", (int)pids[k]);
		printf("%s\n", np > 8 ? ",...)" : np ? ")" : "");
	}
	if (json)
		printf("]}\n");
	free(list);
	return 0;
}

/* Wait (bounded) for the PAM stage to close the session: its record goes. */
static bool record_gone(const char *session, int ms)
{
	for (int waited = 0;; waited += 50) {
		struct sbx_record_entry *list = NULL;
		size_t n = 0;
		bool found = false;

		if (sbx_record_list(SBX_RUNTIME_DIR, &list, &n, NULL) != 0)
			return false;
		for (size_t i = 0; i < n; i++)
			found |= !strcmp(list[i].rec.session, session) && list[i].live;
		free(list);
		if (!found)
			return true;
		if (waited >= ms)
			return false;
		usleep(50 * 1000);
	}
}

/* A stale session ended here: its end in the log and root's ledger. */
static void stale_ended(const struct sbx_record *rec, unsigned killed, void *arg)
{
	const char *state_dir = arg;
	struct sbx_logline *l = malloc(sizeof(*l));
	struct sbx_error err = { 0 };

	if (!l)
		return;
	sbx_record_stale_line(rec, killed, l);
	shell_log_send(LOG_ERR, l);
	if (sbx_ledger_append(state_dir, l, &err) != 0)
		fprintf(stderr, "agent-shell: ledger: %s\n", err.msg);
	printf("session %s (%s): its opener was gone; %u process(es) ended, record removed\n",
	       rec->session, rec->user, killed);
	free(l);
}

/* A session whose opener is gone (sshd's monitor killed): nobody will
 * close it, so --end does what its close would have. */
static int end_stale(const struct sbx_record *r, const char *state_dir)
{
	unsigned passes = 0, killed;
	pid_t pids[MAX_PIDS];
	struct sbx_error err = { 0 };
	size_t left;

	killed = sbx_session_end(r->uid, r->mntns, &passes);
	left = session_pids(r, pids, MAX_PIDS);
	/* Under the lock, and only while it is still the stale record we
	 * listed: a keeper that took it over meanwhile closes the session
	 * (and logs its end); another sweep that removed it logged it. */
	if (sbx_record_remove_stale(SBX_RUNTIME_DIR, r->session, r->opener_pid, r->opener_start,
				    &err) != 0) {
		if (err.code == ESTALE || err.code == ENOENT) {
			printf("session %s: %s; %u process(es) ended here\n", r->session,
			       err.code == ESTALE ? "its keeper took it over and closes it" :
			       "already ended", killed);
			return left == 0 ? 0 : 1;
		}
		fprintf(stderr, "agent-shell --end: %s\n", err.msg);
		return 1;
	}
	stale_ended(r, killed, (void *)state_dir);
	return left == 0 ? 0 : 1;
}

static int end_one(const struct sbx_record *r)
{
	unsigned passes = 0, killed;
	pid_t pids[MAX_PIDS];
	size_t left;
	bool closed;

	killed = sbx_session_end(r->uid, r->mntns, &passes);
	left = session_pids(r, pids, MAX_PIDS);
	/* The shell's tree is gone; the process that opened the session
	 * (sshd's monitor, su, login) sees its child end and closes it. */
	closed = record_gone(r->session, 10000);
	{
		struct sbx_logline l;

		sbx_log_begin(&l, "session_ended_by_root");
		sbx_log_add(&l, "session", "%s", r->session);
		sbx_log_add(&l, "user", "%s", r->user);
		sbx_log_add(&l, "uid", "%u", (unsigned)r->uid);
		sbx_log_add(&l, "killed", "%u", killed);
		sbx_log_add(&l, "left", "%zu", left);
		sbx_log_add(&l, "closed", "%s", closed ? "yes" : "no");
		shell_log_send(LOG_NOTICE, &l);
	}
	{
		char user[SBX_TEXT_SHOWN_MAX(sizeof(r->user))];

		printf("session %s (%s): %u process(es) ended, %zu left; %s\n", r->session,
		       shown(user, sizeof(user), r->user), killed, left,
		       closed ? "the session closed (record removed)" :
		       "the record is still there: its opener has not closed it yet");
	}
	return left == 0 ? 0 : 1;
}

int shell_cmd_end(int argc, char **argv)
{
	struct sbx_record_entry *list = NULL;
	struct sbx_error err = { 0 };
	char state_dir[SBX_PATH_MAX];
	const char *what;
	size_t n = 0, matched = 0;
	int status = 0;

	if (argc != 2 || argv[1][0] == '-' || !argv[1][0]) {
		fprintf(stderr, "usage: agent-shell --end SESSION|USER\n");
		return EXIT_OPS_USAGE;
	}
	what = argv[1];
	if (need_root("--end") || state_dir_of_config("--end", state_dir, sizeof(state_dir)))
		return 1;
	if (sbx_record_list(SBX_RUNTIME_DIR, &list, &n, &err) != 0) {
		fprintf(stderr, "agent-shell --end: %s\n", err.msg);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct sbx_record *r = &list[i].rec;

		if (strcmp(r->session, what) && strcmp(r->user, what))
			continue;
		matched++;
		if ((list[i].live ? end_one(r) : end_stale(r, state_dir)) != 0)
			status = 1;
	}
	free(list);
	if (!matched) {
		fprintf(stderr, "agent-shell --end: no session is %s or belongs to user %s "
			"(agent-shell --sessions lists them)\n", what, what);
		return 1;
	}
	return status;
}

/* ---- --prune -------------------------------------------------------- */

struct prune {
	bool yes;
	long days;
	unsigned files, kept;
	unsigned long long bytes;
};

static bool report_name(const char *name)
{
	size_t len = strlen(name);

	if (len != SBX_SESSION_ID_HEX + 5 && len != SBX_SESSION_ID_HEX + 4)
		return false;
	if (strcmp(name + SBX_SESSION_ID_HEX, ".json") && strcmp(name + SBX_SESSION_ID_HEX, ".log"))
		return false;
	for (size_t i = 0; i < SBX_SESSION_ID_HEX; i++) {
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	}
	return true;
}

/* Old report files in one directory an agent owns, reached by fd (no link
 * followed, so the agent cannot point root's unlink anywhere else). */
static void prune_dir(struct prune *p, int dir_fd, const char *shown, uid_t owner)
{
	time_t cutoff = time(NULL) - (time_t)p->days * 86400;
	struct dirent *de;
	struct stat st;
	int fd = dup(dir_fd);
	DIR *d;

	if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != owner || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!report_name(de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtime > cutoff) {
			p->kept++;
			continue;
		}
		if (p->yes && unlinkat(dirfd(d), de->d_name, 0) != 0) {
			fprintf(stderr, "agent-shell --prune: unlink %s/%s: %s\n", shown, de->d_name,
				strerror(errno));
			continue;
		}
		p->files++;
		p->bytes += (unsigned long long)st.st_size;
	}
	closedir(d);
}

/* openat one component, never following a link, as a directory. */
static int open_dir_at(int at, const char *name)
{
	return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Reports of sessions without the PAM stage: /tmp/agent-sandbox-UID (or
 * /tmp/agent-sandbox-UID.XXXXXX).
 * Reports of PAM-stage sessions: <home>/.agent-sandbox/reports, for the
 * isolated homes under state_dir/homes. */
static void prune_reports(struct prune *p, const char *state_dir)
{
	char path[SBX_PATH_MAX];
	struct dirent *de;
	int tmp, homes;
	DIR *d;

	tmp = open_dir_at(AT_FDCWD, "/tmp");
	if (tmp >= 0 && (d = fdopendir(tmp)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			unsigned long uid;
			char *end;
			int fd;

			if (strncmp(de->d_name, "agent-sandbox-", 14) != 0)
				continue;
			errno = 0;
			uid = strtoul(de->d_name + 14, &end, 10);
			/* agent-sandbox-UID, or its fallback agent-sandbox-UID.XXXXXX
			 * when another user made that name first (log.c). */
			if (errno || (*end && (*end != '.' || strlen(end) != 7)) ||
			    end == de->d_name + 14 || uid == 0 || uid > (uid_t)-2)
				continue;
			fd = open_dir_at(dirfd(d), de->d_name);
			if (fd < 0)
				continue;
			snprintf(path, sizeof(path), "/tmp/%s", de->d_name);
			prune_dir(p, fd, path, (uid_t)uid);
			close(fd);
		}
		closedir(d);
	} else if (tmp >= 0) {
		close(tmp);
	}
	if (sbx_snprintf(path, sizeof(path), "%s/homes", state_dir) != 0)
		return;
	homes = open_dir_at(AT_FDCWD, path);
	if (homes < 0)
		return;
	d = fdopendir(homes);
	if (!d) {
		close(homes);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		int home, dot, reports;

		if (de->d_name[0] == '.')
			continue;
		home = open_dir_at(dirfd(d), de->d_name);
		if (home < 0)
			continue;
		if (fstat(home, &st) == 0 && st.st_uid != 0) {
			dot = open_dir_at(home, ".agent-sandbox");
			reports = dot >= 0 ? open_dir_at(dot, "reports") : -1;
			if (reports >= 0) {
				char shown[SBX_PATH_MAX + 300];

				snprintf(shown, sizeof(shown), "%s/homes/%.255s/.agent-sandbox/reports",
					 state_dir, de->d_name);
				prune_dir(p, reports, shown, st.st_uid);
				close(reports);
			}
			if (dot >= 0)
				close(dot);
		}
		close(home);
	}
	closedir(d);
}

/* Isolated homes whose account is gone or no longer an agent: listed, never
 * deleted (they hold what the agent made). */
static unsigned list_orphan_homes(const struct sbx_config *cfg)
{
	struct sbx_profile *prof = malloc(sizeof(*prof));
	char path[SBX_PATH_MAX];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	if (!prof || sbx_snprintf(path, sizeof(path), "%s/homes", cfg->state_dir) != 0 ||
	    !(d = opendir(path))) {
		free(prof);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		struct sbx_account acc;
		const char *why = NULL;

		if (de->d_name[0] == '.')
			continue;
		if (sbx_account_by_name(de->d_name, &acc, NULL) != 0) {
			why = "no such account";
		} else {
			if (sbx_account_profile(cfg, &acc, prof, NULL) != 0)
				why = "the account matches no profile";
			sbx_account_free(&acc);
		}
		if (!why)
			continue;
		printf("home %s/%s: %s; kept (remove it by hand once its contents are "
		       "saved)\n", path, de->d_name, why);
		n++;
	}
	closedir(d);
	free(prof);
	return n;
}

int shell_cmd_prune(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "yes", no_argument, NULL, 'y' },
		{ NULL, 0, NULL, 0 },
	};
	struct prune p = { .days = 30 };
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	unsigned stale = 0, orphans = 0, copies = 0;
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			errno = 0;
			p.days = strtol(optarg, &end, 10);
			if (errno || *end || p.days < 0 || p.days > 36500) {
				fprintf(stderr, "agent-shell --prune: --older-than %s: a number of "
					"days (0 to 36500)\n", optarg);
				return EXIT_OPS_USAGE;
			}
			break;
		case 'y':
			p.yes = true;
			break;
		default:
			fprintf(stderr, "usage: agent-shell --prune [--older-than DAYS] [--yes]\n");
			return EXIT_OPS_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: agent-shell --prune [--older-than DAYS] [--yes]\n");
		return EXIT_OPS_USAGE;
	}
	if (need_root("--prune"))
		return 1;
	/* No config at all: records and reports still go (the homes' place
	 * is the default state_dir); a config that is there must be sound. */
	if (sbx_config_load(shell_config_path(), 0, &cfg, &err) != 0 && err.code != ENOENT) {
		fprintf(stderr, "agent-shell --prune: %s\n", err.msg);
		return 1;
	}
	if (p.yes) {
		const struct sbx_stale_hook hook = {
			stale_ended, (void *)(cfg ? cfg->state_dir : SBX_STATE_DIR)
		};

		if (sbx_record_prune(SBX_RUNTIME_DIR, &stale, &hook, &err) != 0) {
			fprintf(stderr, "agent-shell --prune: %s\n", err.msg);
			sbx_config_free(cfg);
			return 1;
		}
	} else {
		struct sbx_record_entry *list = NULL;
		size_t n = 0;

		if (sbx_record_list(SBX_RUNTIME_DIR, &list, &n, &err) != 0) {
			fprintf(stderr, "agent-shell --prune: %s\n", err.msg);
			sbx_config_free(cfg);
			return 1;
		}
		for (size_t i = 0; i < n; i++)
			stale += !list[i].live;
		free(list);
	}
	prune_reports(&p, cfg ? cfg->state_dir : SBX_STATE_DIR);
	if (cfg)
		orphans = list_orphan_homes(cfg);
	/* Root's own copies (the ledger) age out the same way; its events
	 * file rotates by itself. */
	if (sbx_ledger_prune(cfg ? cfg->state_dir : SBX_STATE_DIR,
			     (int64_t)time(NULL) - (int64_t)p.days * 86400, p.yes, &copies,
			     &err) != 0)
		fprintf(stderr, "agent-shell --prune: %s\n", err.msg);
	printf("%s %u stale session record(s) and %u report file(s) older than %ld day(s) "
	       "(%llu bytes), and %u of root's report copies; %u newer kept; %u home(s) of "
	       "former agents kept%s\n",
	       p.yes ? "removed" : "would remove", stale, p.files, p.days, p.bytes, copies, p.kept,
	       orphans, p.yes ? "" : " (dry run: --yes to remove)");
	if (p.yes) {
		struct sbx_logline l;

		sbx_log_begin(&l, "prune");
		sbx_log_add(&l, "records", "%u", stale);
		sbx_log_add(&l, "reports", "%u", p.files);
		sbx_log_add(&l, "ledger_copies", "%u", copies);
		sbx_log_add(&l, "bytes", "%llu", p.bytes);
		sbx_log_add(&l, "days", "%ld", p.days);
		shell_log_send(LOG_NOTICE, &l);
	}
	sbx_config_free(cfg);
	return 0;
}

/* ---- --log ---------------------------------------------------------------- */

/* "30" (days), "12h", "45m", "7d", or a UTC date "YYYY-MM-DD[THH:MM:SS]":
 * the time from which on events are shown. */
static int parse_since(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	const char *end;
	char *e;
	long n;

	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end || *end) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, "%Y-%m-%d", &tm);
	}
	if (end && !*end) {
		*out = (int64_t)timegm(&tm);
		return 0;
	}
	errno = 0;
	n = strtol(s, &e, 10);
	if (errno || e == s || n < 0 || n > 36500L * 24 * 60)
		return -EINVAL;
	if (!*e || !strcmp(e, "d"))
		n *= 86400;
	else if (!strcmp(e, "h"))
		n *= 3600;
	else if (!strcmp(e, "m"))
		n *= 60;
	else
		return -EINVAL;
	*out = (int64_t)time(NULL) - n;
	return 0;
}

/* A value as the log grammar writes it (bare, or quoted and escaped), so a
 * value with a space cannot pass for more fields. */
static const char *log_value(char *buf, size_t size, const char *v)
{
	struct sbx_sbuf b;

	sbx_sbuf_init(&b, buf, size);
	sbx_log_value(&b, v, false);
	return buf;
}

struct log_walk {
	const char *user;
	bool json;
	size_t shown;
};

static int log_row(const struct sbx_ledger_event *ev, void *arg)
{
	struct log_walk *w = arg;
	const char *user = sbx_ledger_get(ev, "user");
	const char *session = sbx_ledger_get(ev, "session");
	const char *msg = sbx_ledger_get(ev, "msg");

	if (w->user && (!user || strcmp(user, w->user)))
		return 0;
	/* What the ledger holds was scrubbed of control characters when it was
	 * written, but a value may still hold a byte that is not UTF-8 (a C1
	 * control on a terminal not in UTF-8 mode, and no JSON): each is shown
	 * as \xNN, in the JSON (sbx_json_put_string) as in the columns, and
	 * the fields keep the grammar's own quoting (log_value). */
	if (w->json) {
		printf("%s{", w->shown ? "," : "");
		json_kv("time", ev->time, true);
		for (size_t i = 0; i < ev->n; i++)
			json_kv(ev->key[i], ev->value[i], i + 1 < ev->n);
		printf("}");
	} else {
		char event[64], who[SBX_TEXT_SHOWN_MAX(SBX_NAME_MAX)], v[SBX_LOG_LINE_MAX];

		printf("%s  %-10s %-16s", ev->time, shown(event, sizeof(event), ev->value[0]),
		       shown(who, sizeof(who), user ? user : "-"));
		printf(" %-12.12s", shown(who, sizeof(who), session ? session : "-"));
		for (size_t i = 1; i < ev->n; i++) {
			const char *k = ev->key[i];

			if (!strcmp(k, "user") || !strcmp(k, "session") || !strcmp(k, "msg") ||
			    !strcmp(k, "hash") || !strcmp(k, "mntns") || !strcmp(k, "home"))
				continue;
			printf(" %s=%s", k, log_value(v, sizeof(v), ev->value[i]));
		}
		if (msg)
			printf(" : %s", log_value(v, sizeof(v), msg));
		putchar('\n');
	}
	w->shown++;
	return 0;
}

int shell_cmd_log(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "since", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	static const char usage[] = "usage: agent-shell --log [USER] [--since AGE|DATE] [--json]\n";
	struct log_walk w = { 0 };
	struct sbx_error err = { 0 };
	char state_dir[SBX_PATH_MAX];
	int64_t since = (int64_t)time(NULL) - 86400;
	unsigned bad = 0;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'j') {
			w.json = true;
		} else if (c == 's' && parse_since(optarg, &since) == 0) {
			continue;
		} else {
			if (c == 's')
				fprintf(stderr, "agent-shell --log: --since %s: a number of days, Nh, "
					"Nm, Nd, or a UTC date YYYY-MM-DD[THH:MM:SS]\n", optarg);
			fputs(usage, stderr);
			return EXIT_OPS_USAGE;
		}
	}
	if (optind < argc)
		w.user = argv[optind++];
	if (optind != argc) {
		fputs(usage, stderr);
		return EXIT_OPS_USAGE;
	}
	if (need_root("--log") || state_dir_of_config("--log", state_dir, sizeof(state_dir)))
		return 1;
	if (w.json)
		printf("[");
	if (sbx_ledger_events(state_dir, since, log_row, &w, &bad, &err) != 0) {
		if (w.json)
			printf("]\n");
		fprintf(stderr, "agent-shell --log: %s\n", err.msg);
		return 1;
	}
	if (w.json)
		printf("]\n");
	else if (!w.shown)
		printf("no event%s%s in %s/ledger since then\n", w.user ? " of " : "",
		       w.user ? w.user : "", state_dir);
	if (bad)
		fprintf(stderr, "agent-shell --log: %u line(s) of the ledger did not parse; "
			"skipped\n", bad);
	return 0;
}

/* --report ID as root: root's copy from the ledger. 0, or -errno. */
int shell_ledger_report(const char *session_id, char **buf, size_t *len, struct sbx_error *err)
{
	char state_dir[SBX_PATH_MAX];

	if (state_dir_of_config("--report", state_dir, sizeof(state_dir)) != 0)
		return -EINVAL;
	return sbx_ledger_read_report(state_dir, session_id, buf, len, err);
}
