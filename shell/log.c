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
static int report_base(char *base, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == getuid() && sbx_snprintf(base, size, "%s/agent-sandbox", xdg) == 0)
		return 0;
	if (sbx_snprintf(base, size, "/tmp/agent-sandbox-%u", (unsigned)getuid()) != 0)
		return -ENAMETOOLONG;
	return 0;
}

int shell_report_dir_open(char *out, size_t size)
{
	char base[SBX_PATH_MAX];
	struct stat st;
	int fd, r;

	if ((r = report_base(base, sizeof(base))) != 0)
		return r;
	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return -errno;
	/* Opened once and checked on the fd: every file is then made in this
	 * very directory, whatever is renamed over its name meanwhile. */
	fd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 0077)) {
		close(fd);
		return -EPERM;
	}
	if (out && (r = sbx_strlcpy(out, size, base)) != 0) {
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
	int dir_fd = shell_report_dir_open(NULL, 0);

	if (dir_fd < 0)
		return;
	if (sbx_snprintf(name, sizeof(name), "%s.json", r->session_id) == 0)
		(void)sbx_report_write_at(dir_fd, name, r);
	close(dir_fd);
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
