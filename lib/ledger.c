/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ledger.c — root's own account of every session the PAM stage opened:
 * the report as agent-shell sent it, and one line per event (refusals with
 * their reasons, opens, ends), under <state_dir>/ledger, root-only.
 *
 * The copies the agent-shell writes (its report directory, $HOME) belong to
 * the agent, which may rewrite them. Root's copy must not: nothing of the
 * agent's may write into the ledger, and what reaches it must come from
 * agent-shell before the agent's program could have spoken.
 *
 * The channel. No root process of ours acts during a session; the process
 * that opened it (sshd's monitor, su, login) only waits, and closes it (its
 * keeper, when it dies first). So the PAM stage leaves a listening unix
 * stream socket that nobody accepts until the close:
 *   - bound in the session's own read-only view (record.c), so no other
 *     session, and nothing on the host, can reach the path;
 *   - listening with a backlog of 0, which admits exactly one pending
 *     connection (af_unix refuses a connect while the listener's queue
 *     holds more than sk_max_ack_backlog), and a connection is complete
 *     and can carry data before it is accepted;
 *   - agent-shell connects to it first thing, before it reads the config,
 *     long before it forks the sandbox, so the one slot is its own. What
 *     it sends later (the report, its end, its refusals) goes over that
 *     connection, which the sandboxed program never holds (close-on-exec,
 *     another pid namespace, not dumpable).
 * At close, the module accepts (non-blocking) and reads what is queued:
 * the peer's credentials are the kernel's (SO_PEERCRED, taken at connect),
 * the report must name this session and this uid, and every line is
 * parsed and written again through the log grammar, never copied.
 *
 * The refusals. A second shell of the same PAM session (ssh connection
 * sharing; ~/.ssh/rc, which sshd runs through the login shell first) finds
 * the slot taken and refuses itself; its refusal must reach root's ledger
 * too, or the entry is the first shell's run alone. So a second socket,
 * "refusals", is bound beside the channel, under the same rules (root's,
 * the session uid's to connect to, 0600, in the session's view only), with
 * a small backlog (SBX_LEDGER_REFUSALS_BACKLOG + 1 pending connections).
 * A shell whose channel is not its own connects there and sends its
 * refused lines, then refuses as before. At close, the module accepts
 * what is pending, bounded in connections and bytes, keeps only
 * event=refused lines from the session's uid, and writes them again like
 * the channel's. Nothing there can take the channel's slot, or make
 * anyone wait: both ends are non-blocking, and a full queue only means
 * -EAGAIN to the refused shell (which refuses all the same).
 *
 * The events file is appended with O_APPEND (one write per line), rotated
 * to events.log.1 (and .1 to .2, up to EVENTS_KEEP) past EVENTS_ROTATE_AT
 * under a lock on the root-only file itself, so two closing sessions never
 * rotate twice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define LEDGER_DIR "ledger"
#define LEDGER_MODE 0700
#define FILE_MODE 0600
#define EVENTS_NAME "events.log"
#define EVENTS_ROTATE_AT (4u << 20)
/* events.log.1 (newest) to .EVENTS_KEEP: 36 MiB in all, some 45 000
 * sessions at ~0.8 KiB a session (open and close lines), so an agent
 * must log in that often to push its own refusals out of --log. */
#define EVENTS_KEEP 8
#define LOCK_WAIT_MS 2000

/* ---- the channel --------------------------------------------------------- */

/* A listening socket NAME in the detached view mount_fd, owned by uid:gid
 * with mode 0600: only the session's uid may connect (write permission on
 * the socket's inode); the socket stays root's. */
static int view_listen(int mount_fd, const char *name, int backlog, uid_t uid, gid_t gid,
		       int *out_fd, struct sbx_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	/* The mount is still detached: it has no path but the fd's. */
	if (sbx_snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", mount_fd,
			 name) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "ledger %s: path too long", name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return sbx_error_set(err, errno, "ledger %s: socket: %s", name, strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    fchownat(mount_fd, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
	    fchmodat(mount_fd, name, 0600, 0) != 0 ||
	    listen(fd, backlog) != 0) {
		int e = errno;

		close(fd);
		return sbx_error_set(err, e, "ledger %s: %s", name, strerror(e));
	}
	*out_fd = fd;
	return 0;
}

int sbx_ledger_channel_bind(int mount_fd, uid_t uid, gid_t gid, int *out_fd,
			    struct sbx_error *err)
{
	return view_listen(mount_fd, SBX_LEDGER_CHANNEL, 0, uid, gid, out_fd, err);
}

int sbx_ledger_refusals_bind(int mount_fd, uid_t uid, gid_t gid, int *out_fd,
			     struct sbx_error *err)
{
	return view_listen(mount_fd, SBX_LEDGER_REFUSALS, SBX_LEDGER_REFUSALS_BACKLOG, uid, gid,
			   out_fd, err);
}

static int view_connect(const char *runtime_dir, const char *name, int *out_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	char view[SBX_PATH_MAX];
	int fd, r;

	if ((r = sbx_record_view_path(runtime_dir, view, sizeof(view))) != 0)
		return r;
	if (sbx_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", view, name) != 0)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Non-blocking: a taken slot is -EAGAIN at once, never a wait. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		r = -errno;
		close(fd);
		return r;
	}
	/* The listener's credentials, from when it listened: root's, or
	 * this is not the PAM stage's socket. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) != 0 || cr.uid != 0) {
		close(fd);
		return -EPERM;
	}
	*out_fd = fd;
	return 0;
}

int sbx_ledger_channel_connect(const char *runtime_dir, int *out_fd)
{
	return view_connect(runtime_dir, SBX_LEDGER_CHANNEL, out_fd);
}

int sbx_ledger_refusals_connect(const char *runtime_dir, int *out_fd)
{
	return view_connect(runtime_dir, SBX_LEDGER_REFUSALS, out_fd);
}

int sbx_ledger_channel_send(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbx_ledger_channel_collect(int listen_fd, size_t max, int wait_ms, char **out,
			       size_t *len, struct ucred *peer, struct sbx_error *err)
{
	socklen_t crl = sizeof(*peer);
	struct timespec now, end;
	size_t got = 0;
	char *buf;
	int fd, r = 0;

	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -ENOENT;	/* nobody connected */
		return sbx_error_set(err, errno, "ledger channel: accept: %s", strerror(errno));
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, peer, &crl) != 0) {
		r = sbx_error_set(err, errno, "ledger channel: SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return r;
	}
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		return sbx_error_set(err, ENOMEM, "ledger channel: out of memory");
	}
	/* What is queued; and with wait_ms, what comes until the peer's
	 * end, bounded: the peer may never end (a stopped process). */
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += wait_ms / 1000;
	end.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	while (got < max) {
		ssize_t n = recv(fd, buf + got, max - got, MSG_DONTWAIT);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left;

		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0 || errno != EAGAIN || wait_ms <= 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (end.tv_sec - now.tv_sec) * 1000L + (end.tv_nsec - now.tv_nsec) / 1000000L;
		if (left <= 0)
			break;
		(void)poll(&pfd, 1, (int)left);
	}
	close(fd);
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}

/* ---- the directory and its files ----------------------------------------- */

static int ledger_open(const char *state_dir, bool create, int *out_fd, struct sbx_error *err)
{
	char path[SBX_PATH_MAX];
	struct stat st;
	int sd_fd, fd, r;

	if (sbx_snprintf(path, sizeof(path), "%s/" LEDGER_DIR,
			 strcmp(state_dir, "/") ? state_dir : "") != 0)
		return sbx_error_set(err, ENAMETOOLONG, "ledger: state_dir path too long");
	if (create) {
		r = sbx_dir_open_walk(state_dir, true, 0755, &sd_fd, err);
		if (r)
			return r;
		close(sd_fd);
	}
	r = sbx_dir_open_walk(path, true, create ? LEDGER_MODE : 0, &fd, err);
	if (r)
		return r;
	/* Root-only, whatever made it: an agent must not list the reports. */
	if (fstat(fd, &st) != 0 || (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(err, EPERM, "ledger %s: not a root-only directory (mode %04o)",
				     path, (unsigned)(st.st_mode & 07777));
	}
	*out_fd = fd;
	return 0;
}

int sbx_ledger_dir_open(const char *state_dir, int *out_fd, struct sbx_error *err)
{
	return ledger_open(state_dir, true, out_fd, err);
}

int sbx_ledger_store_report(const char *state_dir, const char *session_id, const char *json,
			    size_t len, struct sbx_error *err)
{
	int dir_fd, r;

	if (!sbx_session_id_is_valid(session_id))
		return sbx_error_set(err, EINVAL, "ledger: not a session id");
	r = ledger_open(state_dir, true, &dir_fd, err);
	if (r)
		return r;
	r = sbx_ledger_store_report_at(dir_fd, session_id, json, len, err);
	close(dir_fd);
	return r;
}

int sbx_ledger_store_report_at(int dir_fd, const char *session_id, const char *json,
			       size_t len, struct sbx_error *err)
{
	char name[SBX_SESSION_ID_HEX + 8], tmp[SBX_SESSION_ID_HEX + 16];
	int fd, r = 0;

	if (!sbx_session_id_is_valid(session_id))
		return sbx_error_set(err, EINVAL, "ledger: not a session id");
	snprintf(name, sizeof(name), "%s.json", session_id);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", session_id);
	(void)unlinkat(dir_fd, tmp, 0);
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
	if (fd < 0) {
		r = sbx_error_set(err, errno, "ledger %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (sbx_write_all(fd, json, len) != 0 || fsync(fd) != 0) {
		r = sbx_error_set(err, errno, "ledger %s: write: %s", tmp, strerror(errno));
		close(fd);
		(void)unlinkat(dir_fd, tmp, 0);
		goto out;
	}
	close(fd);
	if (renameat(dir_fd, tmp, dir_fd, name) != 0) {
		r = sbx_error_set(err, errno, "ledger %s: rename: %s", name, strerror(errno));
		(void)unlinkat(dir_fd, tmp, 0);
	}
out:
	return r;
}

int sbx_ledger_read_report(const char *state_dir, const char *session_id, char **out,
			   size_t *len, struct sbx_error *err)
{
	char name[SBX_SESSION_ID_HEX + 8];
	int dir_fd, fd, r;

	if (!sbx_session_id_is_valid(session_id))
		return sbx_error_set(err, EINVAL, "ledger: not a session id");
	r = ledger_open(state_dir, false, &dir_fd, err);
	if (r)
		return r;
	snprintf(name, sizeof(name), "%s.json", session_id);
	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dir_fd);
	if (fd < 0)
		return sbx_error_set(err, errno, "ledger: report %s: %s", session_id,
				     strerror(errno));
	r = sbx_read_fd(fd, name, SBX_REPORT_JSON_MAX, out, len, err);
	close(fd);
	return r;
}

static int lock_wait(int fd)
{
	int waited = 0;

	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
			return -errno;
		usleep(5 * 1000);
		waited += 5;
	}
	return 0;
}

/* events.log, opened for appending, locked, and still the file its name
 * gives (a rotation may have renamed the one opened). */
static int events_open_locked(int dir_fd, struct sbx_error *err)
{
	for (int tries = 0; tries < 4; tries++) {
		struct stat st, now;
		int fd = openat(dir_fd, EVENTS_NAME,
				O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
				FILE_MODE);

		if (fd < 0)
			return sbx_error_set(err, errno, "ledger " EVENTS_NAME ": %s",
					     strerror(errno));
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
		    st.st_nlink != 1 || (st.st_mode & 077)) {
			close(fd);
			return sbx_error_set(err, EPERM,
					     "ledger " EVENTS_NAME ": not a root-only regular file");
		}
		if (lock_wait(fd) != 0) {
			close(fd);
			return sbx_error_set(err, ETIMEDOUT, "ledger " EVENTS_NAME ": lock held");
		}
		if (fstatat(dir_fd, EVENTS_NAME, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now.st_ino == st.st_ino && now.st_dev == st.st_dev)
			return fd;
		close(fd);
	}
	return sbx_error_set(err, EAGAIN, "ledger " EVENTS_NAME ": rotated under us");
}

/* Under the lock: .N-1 -> .N, ..., events.log -> .1 (the oldest goes). */
static int events_rotate(int dir_fd, struct sbx_error *err)
{
	char from[32], to[32];

	for (int i = EVENTS_KEEP; i >= 1; i--) {
		if (i == 1)
			snprintf(from, sizeof(from), EVENTS_NAME);
		else
			snprintf(from, sizeof(from), EVENTS_NAME ".%d", i - 1);
		snprintf(to, sizeof(to), EVENTS_NAME ".%d", i);
		if (renameat(dir_fd, from, dir_fd, to) != 0 && errno != ENOENT)
			return sbx_error_set(err, errno, "ledger: rotate %s: %s", from,
					     strerror(errno));
	}
	return 0;
}

int sbx_ledger_append(const char *state_dir, const struct sbx_logline *l, struct sbx_error *err)
{
	int dir_fd, r;

	r = ledger_open(state_dir, true, &dir_fd, err);
	if (r)
		return r;
	r = sbx_ledger_append_at(dir_fd, l, err);
	close(dir_fd);
	return r;
}

int sbx_ledger_append_at(int dir_fd, const struct sbx_logline *l, struct sbx_error *err)
{
	char line[SBX_LOG_LINE_MAX + 32], when[32];
	time_t now = time(NULL);
	struct stat st;
	struct tm tm;
	int fd, r = 0;
	size_t n;

	if (!gmtime_r(&now, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return sbx_error_set(err, EINVAL, "ledger: no time");
	n = (size_t)snprintf(line, sizeof(line), "%s %s\n", when, l->line);
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	fd = events_open_locked(dir_fd, err);
	if (fd < 0)
		return fd;
	if (sbx_write_all(fd, line, n) != 0)
		r = sbx_error_set(err, errno, "ledger " EVENTS_NAME ": write: %s", strerror(errno));
	if (r == 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= EVENTS_ROTATE_AT)
		r = events_rotate(dir_fd, err);
	close(fd);
	return r;
}

/* ---- reading the events ---------------------------------------------------- */

static bool key_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c == '_' && !first) || (!first && c >= '0' && c <= '9');
}

static int parse_fields(const char *p, const char *end, struct sbx_ledger_event *ev);

int sbx_ledger_parse_line(const char *line, size_t len, struct sbx_ledger_event *ev)
{
	const char *end = line + len;

	memset(ev, 0, sizeof(*ev));
	/* "YYYY-MM-DDTHH:MM:SSZ " */
	if (len < 21 || line[20] != ' ')
		return -EINVAL;
	memcpy(ev->time, line, 20);
	ev->time[20] = '\0';
	{
		struct tm tm = { 0 };
		const char *t = strptime(ev->time, "%Y-%m-%dT%H:%M:%SZ", &tm);

		if (!t || *t)
			return -EINVAL;
		ev->when = (int64_t)timegm(&tm);
	}
	return parse_fields(line + 21, end, ev);
}

int sbx_ledger_parse_fields(const char *line, size_t len, struct sbx_ledger_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	return parse_fields(line, line + len, ev);
}

static int parse_fields(const char *p, const char *end, struct sbx_ledger_event *ev)
{
	char *w = ev->text;
	char *wend = ev->text + sizeof(ev->text);

	while (p < end) {
		const char *k = p;
		size_t klen;

		if (ev->n == SBX_LEDGER_KEYS_MAX)
			return -E2BIG;
		while (p < end && key_char(*p, p == k))
			p++;
		klen = (size_t)(p - k);
		if (!klen || p >= end || *p != '=' || (size_t)(wend - w) < klen + 2)
			return -EINVAL;
		memcpy(w, k, klen);
		w[klen] = '\0';
		ev->key[ev->n] = w;
		w += klen + 1;
		p++;
		ev->value[ev->n] = w;
		if (p < end && *p == '"') {
			for (p++; p < end && *p != '"'; p++) {
				char c = *p;

				if (c == '\\') {
					if (++p >= end)
						return -EINVAL;
					if (*p == 'x') {
						int hi, lo;

						if (end - p < 3 || (hi = sbx_hexval(p[1])) < 0 ||
						    (lo = sbx_hexval(p[2])) < 0)
							return -EINVAL;
						c = (char)(hi << 4 | lo);
						p += 2;
					} else if (*p == '"' || *p == '\\') {
						c = *p;
					} else {
						return -EINVAL;
					}
				}
				if ((unsigned char)c < 0x20 || c == 0x7f || wend - w < 2)
					return -EINVAL;
				*w++ = c;
			}
			if (p >= end)
				return -EINVAL;
			p++;
		} else {
			const char *v = p;
			bool quoted = false;

			/* Bare, or with quoted runs kept as written: the
			 * report's degraded=feature:"why",... (sbx_report_log). */
			for (; p < end && (quoted || *p != ' '); p++) {
				if ((unsigned char)*p < 0x20 || *p == 0x7f)
					return -EINVAL;
				if (*p == '"') {
					quoted = !quoted;
				} else if (quoted && *p == '\\') {
					if (++p >= end || (*p != '"' && *p != '\\' && *p != 'x'))
						return -EINVAL;
				}
			}
			if (quoted || p == v || (size_t)(wend - w) < (size_t)(p - v) + 1)
				return -EINVAL;
			memcpy(w, v, (size_t)(p - v));
			w += p - v;
		}
		*w++ = '\0';
		ev->n++;
		if (p < end) {
			if (*p != ' ')
				return -EINVAL;
			p++;
		}
	}
	if (!ev->n || strcmp(ev->key[0], "event") != 0)
		return -EINVAL;
	return 0;
}

const char *sbx_ledger_get(const struct sbx_ledger_event *ev, const char *key)
{
	for (size_t i = 0; i < ev->n; i++)
		if (!strcmp(ev->key[i], key))
			return ev->value[i];
	return NULL;
}

static int events_read_one(int dir_fd, const char *name, int64_t since,
			   int (*fn)(const struct sbx_ledger_event *, void *), void *arg,
			   unsigned *bad)
{
	struct sbx_ledger_event *ev;
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, r;

	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
		close(fd);
		return -EPERM;
	}
	r = sbx_read_fd(fd, name, 2 * EVENTS_ROTATE_AT, &buf, &len, NULL);
	close(fd);
	if (r)
		return r;
	ev = malloc(sizeof(*ev));
	if (!ev) {
		free(buf);
		return -ENOMEM;
	}
	for (char *p = buf, *nl; p < buf + len && r == 0; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			break;	/* a line still being written */
		if (sbx_ledger_parse_line(p, (size_t)(nl - p), ev) != 0) {
			(*bad)++;
			continue;
		}
		if (ev->when >= since)
			r = fn(ev, arg);
	}
	free(ev);
	free(buf);
	return r;
}

int sbx_ledger_events(const char *state_dir, int64_t since,
		      int (*fn)(const struct sbx_ledger_event *, void *), void *arg,
		      unsigned *bad, struct sbx_error *err)
{
	int dir_fd, r;

	*bad = 0;
	r = ledger_open(state_dir, false, &dir_fd, err);
	if (r == -ENOENT)
		return 0;	/* nothing logged yet */
	if (r)
		return r;
	r = 0;
	for (int i = EVENTS_KEEP; i >= 0 && r == 0; i--) {
		char name[32];

		if (i == 0)
			snprintf(name, sizeof(name), EVENTS_NAME);
		else
			snprintf(name, sizeof(name), EVENTS_NAME ".%d", i);
		r = events_read_one(dir_fd, name, since, fn, arg, bad);
	}
	close(dir_fd);
	if (r < 0)
		return sbx_error_set(err, -r, "ledger events: %s", strerror(-r));
	return r;
}

int sbx_ledger_prune(const char *state_dir, int64_t older_than, bool apply, unsigned *n,
		     struct sbx_error *err)
{
	struct dirent *de;
	DIR *d;
	int dir_fd, fd, r;

	*n = 0;
	r = ledger_open(state_dir, false, &dir_fd, err);
	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(dir_fd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		r = sbx_error_set(err, errno, "ledger: opendir: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		char id[SBX_SESSION_ID_HEX + 1];
		size_t len = strlen(de->d_name);
		struct stat st;

		if (len != SBX_SESSION_ID_HEX + 5 || strcmp(de->d_name + SBX_SESSION_ID_HEX, ".json"))
			continue;
		memcpy(id, de->d_name, SBX_SESSION_ID_HEX);
		id[SBX_SESSION_ID_HEX] = '\0';
		if (!sbx_session_id_is_valid(id) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) || (int64_t)st.st_mtime >= older_than)
			continue;
		if (apply && unlinkat(dirfd(d), de->d_name, 0) != 0)
			continue;
		(*n)++;
	}
	closedir(d);
	return 0;
}
