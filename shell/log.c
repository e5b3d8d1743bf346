/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c — the session's report goes to syslog (authpriv, ident
 * "agent-sandbox") as one structured line, and to a per-session JSON file
 * owned by the agent, written by the unconfined outer process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "shell.h"

static bool log_opened;
/* Where no syslog daemon listens, syslog(3) drops every line silently: the
 * session's lines then also go to <report dir>/<session>.log (fd kept). */
static int sidecar_fd = -1;

static void log_open(void)
{
	if (!log_opened) {
		openlog("agent-sandbox", LOG_PID, LOG_AUTHPRIV);
		log_opened = true;
	}
}

/* Is a syslog daemon listening on /dev/log? (syslog(3) drops silently.) */
bool shell_syslog_available(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = "/dev/log" };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

void shell_log(int priority, const char *fmt, ...)
{
	va_list ap;

	log_open();
	va_start(ap, fmt);
	vsyslog(priority, fmt, ap);
	va_end(ap);
	if (sidecar_fd >= 0) {
		va_start(ap, fmt);
		vdprintf(sidecar_fd, fmt, ap);
		va_end(ap);
		dprintf(sidecar_fd, "\n");
	}
}

/* $XDG_RUNTIME_DIR/agent-sandbox when it is ours, else
 * /tmp/agent-sandbox-<uid> (created 0700, refused if not ours). */
int shell_report_dir(char *out, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[SBX_PATH_MAX];
	struct stat st;

	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == getuid() && sbx_snprintf(base, sizeof(base), "%s/agent-sandbox", xdg) == 0) {
		/* fine */
	} else if (sbx_snprintf(base, sizeof(base), "/tmp/agent-sandbox-%u", (unsigned)getuid()) != 0) {
		return -ENAMETOOLONG;
	}
	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(base, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0077))
		return -EPERM;
	return sbx_strlcpy(out, size, base);
}

void shell_log_session_begin(const char *session_id)
{
	char dir[SBX_PATH_MAX], path[SBX_PATH_MAX + 64];

	if (sidecar_fd >= 0 || shell_syslog_available())
		return;
	if (shell_report_dir(dir, sizeof(dir)) != 0 ||
	    sbx_snprintf(path, sizeof(path), "%s/%s.log", dir, session_id) != 0) {
		fprintf(stderr, "agent-shell: warning: no syslog daemon listens on /dev/log; "
			"this session is not logged\n");
		return;
	}
	sidecar_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	fprintf(stderr, "agent-shell: warning: no syslog daemon listens on /dev/log; "
		"this session's log lines are kept in %s only\n",
		sidecar_fd >= 0 ? path : "(nowhere: cannot create the file)");
	if (sidecar_fd >= 0)
		dprintf(sidecar_fd, "log_sink=none session=%s: no syslog daemon on /dev/log; "
			"the lines below reached no system log\n", session_id);
}

static void write_report_copy(const struct sbx_report *r)
{
	char dir[SBX_PATH_MAX], path[SBX_PATH_MAX + 64];

	if (shell_report_dir(dir, sizeof(dir)) != 0)
		return;
	if (sbx_snprintf(path, sizeof(path), "%s/%s.json", dir, r->session_id) != 0)
		return;
	(void)sbx_report_write_file(path, r);
}

void shell_log_report(const struct sbx_report *r, void *ctx)
{
	char line[4096];

	(void)ctx;
	if (sbx_report_to_logline(r, line, sizeof(line)) != 0)
		snprintf(line, sizeof(line), "session=%s report=unrenderable", r->session_id);
	shell_log(r->floor_met ? LOG_INFO : LOG_WARNING, "%s", line);
	write_report_copy(r);
}
