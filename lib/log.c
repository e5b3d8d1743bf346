/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c — every line the product logs, from agent-shell and from the PAM
 * module alike: one ident ("agent-sandbox"), facility authpriv, one
 * key=value grammar with an event= field first (docs/design.md section 12).
 *
 * The PAM module runs inside sshd's monitor, where openlog(3) would change
 * the host application's ident for the rest of its life, and syslog(3)
 * blocks when the syslog daemon's queue is full. So lines are written here
 * to the log sockets directly, as glibc's syslog(3) formats them for
 * /dev/log (RFC 3164 without hostname), from a socket of our own that is
 * non-blocking: a stuck syslog daemon costs a dropped line, never a stuck
 * login. Where journald runs, the same fields go to it natively, as
 * journal fields a query can select on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static bool value_plain(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!*p)
		return false;
	for (; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._:/@,+-", *p)))
			return false;
	}
	return true;
}

void sbx_log_value(struct sbx_sbuf *b, const char *s, bool force_quote)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	if (!force_quote && value_plain(s)) {
		sbx_sbuf_str(b, s);
		return;
	}
	sbx_sbuf_add(b, "\"", 1);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			sbx_sbuf_add(b, esc, 2);
		} else if (*p < 0x20 || *p >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			sbx_sbuf_add(b, esc, 4);
		} else {
			sbx_sbuf_add(b, (const char *)p, 1);
		}
	}
	sbx_sbuf_add(b, "\"", 1);
}

/* Keys are the grammar's, never data: [a-z0-9_], starting with a letter. */
static bool key_ok(const char *key)
{
	size_t n = strlen(key);

	return n > 0 && n < 32 && key[0] >= 'a' && key[0] <= 'z' &&
	       strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

void sbx_log_begin(struct sbx_logline *l, const char *event)
{
	sbx_sbuf_init(&l->lb, l->line, sizeof(l->line));
	sbx_sbuf_init(&l->jb, l->journal, sizeof(l->journal));
	sbx_log_add(l, "event", "%s", event);
}

/* key= on the line, and the journal field's name AGENT_SANDBOX_KEY=:
 * upper case [A-Z0-9_], not starting with "_" (systemd.journal-fields(7)). */
static void put_key(struct sbx_logline *l, const char *key)
{
	if (l->lb.len)
		sbx_sbuf_add(&l->lb, " ", 1);
	sbx_sbuf_str(&l->lb, key);
	sbx_sbuf_add(&l->lb, "=", 1);
	sbx_sbuf_str(&l->jb, "AGENT_SANDBOX_");
	for (const char *k = key; *k; k++) {
		char u = (char)(*k >= 'a' && *k <= 'z' ? *k - 'a' + 'A' : *k);

		sbx_sbuf_add(&l->jb, &u, 1);
	}
	sbx_sbuf_add(&l->jb, "=", 1);
}

void sbx_log_add(struct sbx_logline *l, const char *key, const char *fmt, ...)
{
	char val[SBX_LOG_VALUE_MAX], shown[SBX_TEXT_SHOWN_MAX(SBX_LOG_VALUE_MAX)];
	va_list ap;

	if (!key_ok(key))
		return;
	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	/* Whatever the value came from (a user name, an error text naming a
	 * path the agent chose), no control character reaches a log reader's
	 * terminal, and no newline splits a line or a journal field. */
	sbx_text_scrub(val);
	put_key(l, key);
	sbx_log_value(&l->lb, val, !strcmp(key, "msg") || !strcmp(key, "command"));
	/* The journal field unquoted, but as it shows (text.c): a byte that
	 * is not UTF-8 (0x9b is CSI to a terminal not in UTF-8 mode) as \xNN,
	 * as the line has it; UTF-8 text as it is, so a query can name it. */
	(void)sbx_text_show(shown, sizeof(shown), val);
	sbx_sbuf_str(&l->jb, shown);
	sbx_sbuf_add(&l->jb, "\n", 1);
}

void sbx_log_add_raw(struct sbx_logline *l, const char *key, const char *value)
{
	if (!key_ok(key) || strpbrk(value, "\n\r"))
		return;
	put_key(l, key);
	sbx_sbuf_str(&l->lb, value);
	sbx_sbuf_str(&l->jb, value);
	sbx_sbuf_add(&l->jb, "\n", 1);
}

/* One datagram to a unix socket, never waiting: -errno when it was not
 * taken (-ENOENT/-ECONNREFUSED: nobody listens; -EAGAIN: queue full). */
static int send_dgram(const char *path, const struct iovec *iov, size_t n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct msghdr mh = { 0 };
	int fd, r = 0;

	if (sbx_strlcpy(sa.sun_path, sizeof(sa.sun_path), path) != 0)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	mh.msg_name = &sa;
	mh.msg_namelen = sizeof(sa);
	mh.msg_iov = (struct iovec *)iov;
	mh.msg_iovlen = n;
	if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int send_journal(const char *path, int priority, const struct sbx_logline *l)
{
	char head[160];
	struct iovec iov[4];

	if (sbx_snprintf(head, sizeof(head),
			 "PRIORITY=%d\nSYSLOG_FACILITY=%d\nSYSLOG_IDENTIFIER=" SBX_LOG_IDENT
			 "\nSYSLOG_PID=%d\nMESSAGE=", priority & LOG_PRIMASK,
			 LOG_AUTHPRIV >> 3, (int)getpid()) != 0)
		return -ENAMETOOLONG;
	iov[0] = (struct iovec){ head, strlen(head) };
	iov[1] = (struct iovec){ (void *)l->line, l->lb.len };
	iov[2] = (struct iovec){ (void *)"\n", 1 };
	iov[3] = (struct iovec){ (void *)l->journal, l->jb.len };
	return send_dgram(path, iov, ARRAY_SIZE(iov));
}

static int send_syslog(const char *path, int priority, const struct sbx_logline *l)
{
	static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	char head[96];
	struct iovec iov[2];
	struct tm tm;
	time_t now = time(NULL);

	/* What glibc's syslog(3) sends to /dev/log: <PRI>, the local time
	 * as "Mmm dd hh:mm:ss" (month names not localised), tag[pid]: */
	if (!localtime_r(&now, &tm))
		memset(&tm, 0, sizeof(tm));
	if (sbx_snprintf(head, sizeof(head), "<%d>%s %2d %02d:%02d:%02d " SBX_LOG_IDENT "[%d]: ",
			 LOG_AUTHPRIV | (priority & LOG_PRIMASK), mon[tm.tm_mon % 12],
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid()) != 0)
		return -ENAMETOOLONG;
	iov[0] = (struct iovec){ head, strlen(head) };
	iov[1] = (struct iovec){ (void *)l->line, l->lb.len };
	return send_dgram(path, iov, ARRAY_SIZE(iov));
}

int sbx_log_send_to(int priority, const struct sbx_logline *l, const char *syslog_path,
		    const char *journal_path)
{
	int r = -ENOENT;

	/* journald also reads /dev/log: one of the two, or a line twice. */
	if (journal_path && access(journal_path, F_OK) == 0) {
		r = send_journal(journal_path, priority, l);
		if (r == 0 || r == -EAGAIN)
			return r;
	}
	if (syslog_path)
		r = send_syslog(syslog_path, priority, l);
	return r;
}

int sbx_log_send(int priority, const struct sbx_logline *l)
{
	return sbx_log_send_to(priority, l, SBX_LOG_SYSLOG_PATH, SBX_LOG_JOURNAL_PATH);
}

bool sbx_log_sink_missing(int r)
{
	return r == -ENOENT || r == -ECONNREFUSED || r == -ENOTSOCK || r == -EPROTOTYPE;
}
