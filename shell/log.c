/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c — the session's events go to the system log (lib/log.c: ident
 * "agent-sandbox", authpriv, event=... key=value lines, journal fields
 * where journald runs), and its report to a per-session JSON file owned
 * by the agent, written by the unconfined outer process: once when the
 * sandbox reports, again with the end and exit status when the program
 * has ended.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "shell.h"

/* Where no log daemon listens, a line is dropped: the session's lines
 * then also go to <report dir>/<session>.log (fd kept). */
static int sidecar_fd = -1;

static bool sink_listens(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0 || sbx_strlcpy(sa.sun_path, sizeof(sa.sun_path), path) != 0) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* Does a log daemon listen (journald's socket or /dev/log)? */
bool shell_syslog_available(void)
{
	return sink_listens(SBX_LOG_JOURNAL_PATH) || sink_listens(SBX_LOG_SYSLOG_PATH);
}

/* The PAM stage's ledger channel (lib/ledger.c), when this session has
 * one: root's copy of the report and of the refusals goes over it. */
static int channel_fd = -1;
/* The channel is there and another shell holds it: this shell's refused
 * lines go to the refusals socket beside it instead (refusal_fd, connected
 * at the first one), so root's ledger hears of the refusal. */
static bool channel_taken;
static int refusal_fd = -1;

int shell_ledger_connect(void)
{
	struct sbx_logline l;
	int r;

	if (channel_fd >= 0 || !getenv("AGENT_SANDBOX_SESSION"))
		return 0;
	r = sbx_ledger_channel_connect(SBX_RUNTIME_DIR, &channel_fd);
	if (r == 0 || r == -ENOENT || r == -ECONNREFUSED)
		return 0;
	/* Taken before this shell (it connects first thing), or not
	 * root's: root's copy of this session will not be this shell's.
	 * The slot is taken by another shell of the same PAM session (sshd
	 * opens one per connection, and a connection carries up to
	 * MaxSessions shells; ~/.ssh/rc runs through this shell too): the
	 * caller refuses a login, or the ledger would give that shell's
	 * report and status for this one's work. */
	channel_fd = -1;
	channel_taken = true;
	sbx_log_begin(&l, "warning");
	sbx_log_add(&l, "reason", "ledger_channel");
	sbx_log_add(&l, "session", "%s", getenv("AGENT_SANDBOX_SESSION"));
	sbx_log_add(&l, "msg", "the PAM stage's ledger channel: %s", strerror(-r));
	(void)sbx_log_send(LOG_WARNING, &l);
	return r;
}

static void channel_send(const char *buf, size_t len)
{
	if (channel_fd >= 0 && sbx_ledger_channel_send(channel_fd, buf, len) != 0) {
		close(channel_fd);
		channel_fd = -1;
	}
}

/* A shell without the slot, refusing: its refused line to the refusals
 * socket, once connected, never waiting (a full queue: the line reaches
 * the log and the client only, as before). */
static void refusal_send(const char *line, size_t n)
{
	if (refusal_fd < 0 &&
	    sbx_ledger_refusals_connect(SBX_RUNTIME_DIR, &refusal_fd) != 0) {
		refusal_fd = -1;
		channel_taken = false;	/* one try */
		return;
	}
	if (sbx_ledger_channel_send(refusal_fd, line, n) != 0) {
		close(refusal_fd);
		refusal_fd = -1;
		channel_taken = false;
	}
}

void shell_log_send(int priority, const struct sbx_logline *l)
{
	char line[SBX_LOG_LINE_MAX + 1];
	size_t n = l->lb.len < SBX_LOG_LINE_MAX ? l->lb.len : SBX_LOG_LINE_MAX - 1;

	(void)sbx_log_send(priority, l);
	if (sidecar_fd >= 0)
		dprintf(sidecar_fd, "%s\n", l->line);
	memcpy(line, l->line, n);
	line[n++] = '\n';
	if (channel_fd >= 0)
		channel_send(line, n);
	else if (channel_taken && !strncmp(l->line, "event=refused ", 14))
		refusal_send(line, n);
}

void shell_log_refused(const char *stage, const char *reason, const char *session,
		       const char *user, const char *command, const char *msg)
{
	struct sbx_logline *l = malloc(sizeof(*l));

	if (!l)
		return;
	sbx_log_begin(l, "refused");
	sbx_log_add(l, "stage", "%s", stage);
	sbx_log_add(l, "reason", "%s", reason);
	if (session && session[0])
		sbx_log_add(l, "session", "%s", session);
	sbx_log_add(l, "user", "%s", user && user[0] ? user : "-");
	if (command)
		sbx_log_add(l, "command", "%s", command);
	sbx_log_add(l, "msg", "%s", msg);
	shell_log_send(LOG_WARNING, l);
	free(l);
}

/* A directory of this user's alone, opened once (O_DIRECTORY, never
 * through a link) and checked on the fd: every file is then made in this
 * very directory, whatever is renamed over its name meanwhile. The fd,
 * -EPERM (someone else's, or open to others: *seen says whose and how),
 * or -errno. */
static int private_dir_open(int at, const char *path, bool create, struct stat *seen)
{
	struct stat st;
	int fd;

	if (create && mkdirat(at, path, 0700) != 0 && errno != EEXIST)
		return -errno;
	fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (st.st_uid != getuid() || (st.st_mode & 0077)) {
		if (seen)
			*seen = st;
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * /tmp/agent-sandbox-<uid> is someone else's: any local user can make
 * that name first, to keep this user's report copies and log lines out of
 * it. This user's are then in /tmp/agent-sandbox-<uid>.XXXXXX, a name no
 * one can guess: the one made before (the first in name order, so every
 * session and --report agree), or a new one.
 */
static int report_dir_fallback(const char *squatted, char *base, size_t size)
{
	char prefix[64], best[NAME_MAX + 1] = "";
	struct dirent *de;
	int tmp, fd;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "agent-sandbox-%u.", (unsigned)getuid());
	tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmp < 0)
		return -errno;
	d = fdopendir(tmp);
	if (!d) {
		close(tmp);
		return -ENOMEM;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0 ||
		    strlen(de->d_name) != strlen(prefix) + 6 ||
		    (best[0] && strcmp(de->d_name, best) >= 0))
			continue;
		fd = private_dir_open(dirfd(d), de->d_name, false, NULL);
		if (fd >= 0) {
			close(fd);
			snprintf(best, sizeof(best), "%s", de->d_name);
		}
	}
	closedir(d);
	if (best[0])
		return sbx_snprintf(base, size, "/tmp/%s", best);
	if (sbx_snprintf(base, size, "%s.XXXXXX", squatted) != 0)
		return -ENAMETOOLONG;
	return mkdtemp(base) ? 0 : -errno;
}

/*
 * $XDG_RUNTIME_DIR/agent-sandbox when it is ours, else
 * /tmp/agent-sandbox-<uid> (created 0700), else the fallback above: the
 * directory opened and checked, its path in out (may be NULL).
 */
int shell_report_dir_open(char *out, size_t size)
{
	static bool warned;
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[SBX_PATH_MAX], squatted[64], how[64];
	struct stat st, seen = { 0 };
	int fd, r;

	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == getuid() && sbx_snprintf(base, sizeof(base), "%s/agent-sandbox", xdg) == 0) {
		fd = private_dir_open(AT_FDCWD, base, true, NULL);
	} else {
		snprintf(squatted, sizeof(squatted), "/tmp/agent-sandbox-%u", (unsigned)getuid());
		snprintf(base, sizeof(base), "%s", squatted);
		fd = private_dir_open(AT_FDCWD, base, true, &seen);
		/* Someone else's: not ours (EPERM), not even ours to open
		 * (EACCES), or not a directory at all (ENOTDIR, ELOOP). */
		if (fd == -EPERM || fd == -EACCES || fd == -ENOTDIR || fd == -ELOOP) {
			if ((fd != -EPERM || !seen.st_mode) && lstat(base, &seen) != 0)
				seen.st_mode = 0;
			if (S_ISDIR(seen.st_mode))
				snprintf(how, sizeof(how), "owner uid %u, mode %04o",
					 (unsigned)seen.st_uid, (unsigned)(seen.st_mode & 07777));
			else
				snprintf(how, sizeof(how), "a link, or not a directory (owner uid %u)",
					 (unsigned)seen.st_uid);
			r = report_dir_fallback(squatted, base, sizeof(base));
			fd = r ? r : private_dir_open(AT_FDCWD, base, false, NULL);
			if (!warned) {
				warned = true;
				fprintf(stderr, "agent-shell: warning: %s is not this user's private "
					"directory (%s): report copies and log lines go to %s\n",
					squatted, how, fd >= 0 ? base : "nowhere");
			}
		}
	}
	if (fd >= 0 && out && (r = sbx_strlcpy(out, size, base)) != 0) {
		close(fd);
		return r;
	}
	return fd;
}

int shell_report_dir(char *out, size_t size)
{
	int fd = shell_report_dir_open(out, size);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

void shell_log_session_begin(const char *session_id)
{
	char dir[SBX_PATH_MAX], path[SBX_PATH_MAX + 64], name[64];
	int dir_fd;

	if (sidecar_fd >= 0 || shell_syslog_available())
		return;
	dir_fd = shell_report_dir_open(dir, sizeof(dir));
	if (dir_fd < 0 || sbx_snprintf(name, sizeof(name), "%s.log", session_id) != 0 ||
	    sbx_snprintf(path, sizeof(path), "%s/%s", dir, name) != 0) {
		if (dir_fd >= 0)
			close(dir_fd);
		fprintf(stderr, "agent-shell: warning: no syslog daemon listens on /dev/log; "
			"this session is not logged\n");
		return;
	}
	sidecar_fd = sbx_open_regular_at(dir_fd, name, O_WRONLY | O_CREAT | O_APPEND, 0600, false);
	if (sidecar_fd < 0)
		sidecar_fd = -1;
	close(dir_fd);
	/* With a PAM stage the lines reach root's ledger too (its channel):
	 * the file above is in the session's own /tmp, gone at its close. */
	if (channel_fd >= 0)
		fprintf(stderr, "agent-shell: warning: no syslog daemon listens on /dev/log; "
			"this session's log lines go to root's ledger (and %s)\n",
			sidecar_fd >= 0 ? path : "no file of the session's");
	else
		fprintf(stderr, "agent-shell: warning: no syslog daemon listens on /dev/log; "
			"this session's log lines are kept in %s only\n",
			sidecar_fd >= 0 ? path : "(nowhere: cannot create the file)");
	if (sidecar_fd >= 0)
		dprintf(sidecar_fd, "log_sink=none session=%s: no syslog daemon on /dev/log; "
			"the lines below reached no system log\n", session_id);
}

static void write_report_copy(const struct sbx_report *r)
{
	char name[64];
	int dir_fd;

	if (channel_fd >= 0) {
		char *json = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&json, &len);

		if (m && sbx_report_to_json(r, m) == 0 && fflush(m) == 0)
			channel_send(json, len);
		if (m)
			(void)fclose(m);
		free(json);
	}
	dir_fd = shell_report_dir_open(NULL, 0);

	if (dir_fd < 0)
		return;
	if (sbx_snprintf(name, sizeof(name), "%s.json", r->session_id) == 0)
		(void)sbx_report_write_at(dir_fd, name, r);
	close(dir_fd);
}

/* The sandbox has reported: the session starts (floor met), or it is
 * refused by its floor. One line either way, with the report's fields. */
void shell_log_report(const struct sbx_report *r, void *ctx)
{
	struct sbx_logline *l = malloc(sizeof(*l));

	(void)ctx;
	if (l) {
		if (r->floor_met) {
			sbx_log_begin(l, "session_start");
		} else {
			sbx_log_begin(l, "refused");
			sbx_log_add(l, "stage", "shell");
			sbx_log_add(l, "reason", "floor");
		}
		sbx_report_log(l, r);
		shell_log_send(r->floor_met ? LOG_INFO : LOG_WARNING, l);
		free(l);
	}
	write_report_copy(r);
}

void shell_log_session_end(struct sbx_report *r, int exit_status, long long duration_ms,
			   const char *how)
{
	struct sbx_logline *l = malloc(sizeof(*l));

	r->ended = (int64_t)time(NULL);
	r->exit_status = exit_status >= 0 && exit_status <= 255 ? exit_status : 255;
	if (l) {
		sbx_log_begin(l, "session_end");
		sbx_log_add(l, "session", "%s", r->session_id);
		sbx_log_add(l, "user", "%s", r->user[0] ? r->user : "-");
		sbx_log_add(l, "exit_status", "%d", r->exit_status);
		sbx_log_add(l, "duration_ms", "%lld", duration_ms);
		sbx_log_add(l, "ended", "%s", how);
		if (r->network == SBX_NETWORK_PROXY) {
			sbx_log_add(l, "egress_allowed", "%llu", (unsigned long long)r->egress_allowed);
			sbx_log_add(l, "egress_refused", "%llu", (unsigned long long)r->egress_refused);
			sbx_log_add(l, "egress_failed", "%llu", (unsigned long long)r->egress_failed);
			sbx_log_add(l, "egress_unanswered", "%llu",
				    (unsigned long long)r->egress_unanswered);
		}
		shell_log_send(r->exit_status ? LOG_NOTICE : LOG_INFO, l);
		free(l);
	}
	/* The copy again, now with its end: the program that could have
	 * replaced it has ended (its home's copy stays as it was sent). */
	write_report_copy(r);
}
