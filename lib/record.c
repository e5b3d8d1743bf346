/* SPDX-License-Identifier: BSD-3-Clause */
/* The session record: the contract the PAM stage (root) leaves for agent-shell. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * <runtime_dir>/sessions/<id>: "key=value\n" lines, root-owned 0600 in a
 * root-only (0700) directory: the records name every agent's client
 * address, and only root counts them (max_sessions) or removes them.
 *
 * The shell gets its own session's record another way: the PAM stage
 * mounts, in the session's mount namespace only, a small read-only tmpfs at
 * <runtime_dir>/session holding a copy ("record", 0444). Only processes of
 * that session see it. The shell trusts it after checking, on the opened
 * fd, that nobody but root could have written it and that it describes the
 * mount namespace the shell is actually in (so it cannot be replayed).
 *
 * The lock that makes "count, then write" atomic is a root-only file
 * (sessions/.lock), taken without blocking for more than LOCK_WAIT_MS: a
 * lock anyone can open is a lock anyone can hold, and sshd's monitor must
 * never hang on it.
 */

#define SESSIONS_MODE 0700
#define RECORD_MODE 0600
#define LOCK_NAME ".lock"
#define LOCK_WAIT_MS 5000
#define SESSION_VIEW "session"		/* <runtime_dir>/session, per mount ns */
#define SESSION_VIEW_FILE "record"

#define RECORD_VERSION 1

static const char *const home_kind_names[] = {
	[SBX_HOME_EPHEMERAL] = "ephemeral",
	[SBX_HOME_ISOLATED] = "isolated",
	[SBX_HOME_REAL] = "real",
};

bool sbx_session_id_is_valid(const char *id)
{
	size_t i;

	if (!id)
		return false;
	for (i = 0; i < SBX_SESSION_ID_HEX; i++) {
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	}
	return id[i] == '\0';
}

int sbx_session_id_new(char out[SBX_SESSION_ID_HEX + 1], struct sbx_error *err)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[SBX_SESSION_ID_HEX / 2];
	size_t got = 0, i;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return sbx_error_set(err, errno, "getrandom(session id): %s",
					     strerror(errno));
		}
		got += (size_t)n;
	}
	for (i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[SBX_SESSION_ID_HEX] = '\0';
	return 0;
}

/* A value is one line of printable bytes (PAM_RHOST and the like come from
 * the network: a newline there must not become a second key). */
static bool value_is_clean(const char *v)
{
	for (; *v; v++) {
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			return false;
	}
	return true;
}

static int sessions_path(const char *runtime_dir, char *out, size_t size,
			 struct sbx_error *err)
{
	if (!runtime_dir || sbx_snprintf(out, size, "%s/sessions",
					 strcmp(runtime_dir, "/") ? runtime_dir : "") != 0)
		return sbx_error_set(err, ENAMETOOLONG, "record: runtime dir path too long");
	return 0;
}

/* The root-only lock file in the open sessions/ directory, taken within
 * LOCK_WAIT_MS. Returns the locked fd or -errno (err filled). */
static int sessions_lock(int dir_fd, const char *sessions, struct sbx_error *err)
{
	struct stat st;
	int fd, waited = 0;

	fd = openat(dir_fd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
		    0600);
	if (fd < 0)
		return sbx_error_set(err, errno, "open(%s/%s): %s", sessions, LOCK_NAME,
				     strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077)) {
		close(fd);
		return sbx_error_set(err, EPERM, "%s/%s: not a root-only regular file",
				     sessions, LOCK_NAME);
	}
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		if (e != EWOULDBLOCK || waited >= LOCK_WAIT_MS) {
			close(fd);
			return sbx_error_set(err, e == EWOULDBLOCK ? ETIMEDOUT : e,
					     "flock(%s/%s): %s", sessions, LOCK_NAME,
					     e == EWOULDBLOCK ? "still held after 5 s" : strerror(e));
		}
		usleep(10 * 1000);
		waited += 10;
	}
	return fd;
}

/* sessions/ is root-only; an older install made it 0755: tighten it. */
static int sessions_dir_private(int dir_fd, const char *sessions, struct sbx_error *err)
{
	char link[32];
	struct stat st;

	if (fstat(dir_fd, &st) != 0)
		return sbx_error_set(err, errno, "fstat(%s): %s", sessions, strerror(errno));
	if ((st.st_mode & 07777) == SESSIONS_MODE)
		return 0;
	/* dir_fd is O_PATH: chmod the directory it pins through its
	 * /proc/self/fd link, never by name. */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dir_fd);
	if (chmod(link, SESSIONS_MODE) != 0)
		return sbx_error_set(err, errno, "chmod(%s, 0700): %s", sessions, strerror(errno));
	return 0;
}

static int record_format(const struct sbx_record *rec, char *buf, size_t size,
			 size_t *len, struct sbx_error *err)
{
	const char *strs[] = { rec->user, rec->profile, rec->hash, rec->client,
			       rec->service, rec->home, rec->home_source };
	int n;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(strs); i++) {
		if (!value_is_clean(strs[i]))
			return sbx_error_set(err, EINVAL,
					     "record %s: a value holds a control character",
					     rec->session);
	}
	if ((unsigned)rec->home_kind >= ARRAY_SIZE(home_kind_names))
		return sbx_error_set(err, EINVAL, "record %s: bad home kind %d",
				     rec->session, (int)rec->home_kind);
	n = snprintf(buf, size,
		     "version=%d\nsession=%s\nuser=%s\nuid=%u\nmntns=%lu\nnetns=%lu\n"
		     "profile=%s\nhash=%s\nclient=%s\nservice=%s\nstarted=%" PRId64 "\n"
		     "home=%s\nhome_source=%s\nhome_kind=%s\n",
		     RECORD_VERSION, rec->session, rec->user, (unsigned)rec->uid,
		     rec->mntns, rec->netns, rec->profile, rec->hash, rec->client,
		     rec->service, rec->started, rec->home, rec->home_source,
		     home_kind_names[rec->home_kind]);
	if (n >= 0 && (size_t)n < size && rec->private_tmp)
		n += snprintf(buf + n, size - (size_t)n, "private_tmp=1\n");
	if (n >= 0 && (size_t)n < size && rec->opener_pid > 0)
		n += snprintf(buf + n, size - (size_t)n, "opener_pid=%d\nopener_start=%" PRIu64 "\n",
			      (int)rec->opener_pid, rec->opener_start);
	if (n < 0 || (size_t)n >= size)
		return sbx_error_set(err, EFBIG, "record %s: larger than %zu bytes",
				     rec->session, size);
	*len = (size_t)n;
	return 0;
}

static int count_live(int path_fd, const char *sessions, uid_t uid, bool prune,
		      const struct sbx_stale_hook *hook, unsigned *live_out, unsigned *stale_out,
		      struct sbx_error *err);
static int record_read_for_count(int dir_fd, const char *name, char *buf,
				 struct sbx_record *rec);
static bool record_is_live(const struct sbx_record *rec, const unsigned long *set,
			   size_t n);

/*
 * Open (creating when missing) <runtime_dir>/sessions, root-only, and take
 * its lock. On success *dir_fd and *lock_fd are the caller's to close
 * (closing lock_fd releases the lock); sessions gets the path for messages.
 */
static int sessions_open_locked(const char *runtime_dir, char *sessions, size_t size,
				int *dir_fd_out, int *lock_fd_out, struct sbx_error *err)
{
	int rt_fd = -1, dir_fd = -1, lock_fd, r;

	r = sessions_path(runtime_dir, sessions, size, err);
	if (r)
		return r;
	r = sbx_dir_open_walk(runtime_dir, true, 0755, &rt_fd, err);
	if (r)
		return r;
	close(rt_fd);
	r = sbx_dir_open_walk(sessions, true, SESSIONS_MODE, &dir_fd, err);
	if (r)
		return r;
	r = sessions_dir_private(dir_fd, sessions, err);
	if (r) {
		close(dir_fd);
		return r;
	}
	lock_fd = sessions_lock(dir_fd, sessions, err);
	if (lock_fd < 0) {
		close(dir_fd);
		return lock_fd;
	}
	*dir_fd_out = dir_fd;
	*lock_fd_out = lock_fd;
	return 0;
}

/* The record as its file's text, in a buffer of the caller's to free. */
static int record_text(const struct sbx_record *rec, char **buf, size_t *len,
		       struct sbx_error *err)
{
	int r;

	*buf = malloc(SBX_RECORD_MAX_BYTES);
	if (!*buf)
		return sbx_error_set(err, ENOMEM, "record %s: out of memory", rec->session);
	r = record_format(rec, *buf, SBX_RECORD_MAX_BYTES, len, err);
	if (r) {
		free(*buf);
		*buf = NULL;
	}
	return r;
}

/* The record's text into the locked sessions/ directory, by a temporary
 * file renamed into place: a new name, or over the old (replace). */
static int record_put(int dir_fd, const char *sessions, const struct sbx_record *rec,
		      bool replace, struct sbx_error *err)
{
	char tmp[SBX_SESSION_ID_HEX + 8];
	char *buf = NULL;
	size_t len = 0, off = 0;
	int fd = -1, r;
	bool made_tmp = false;

	r = record_text(rec, &buf, &len, err);
	if (r)
		return r;
	snprintf(tmp, sizeof(tmp), ".tmp-%s", rec->session);
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = sbx_error_set(err, errno, "create(%s/%s): %s", sessions, tmp,
				  strerror(errno));
		goto out;
	}
	made_tmp = true;
	/* Exact owner and mode whatever the caller's fsgid and umask. */
	if (fchown(fd, 0, 0) != 0 || fchmod(fd, RECORD_MODE) != 0) {
		r = sbx_error_set(err, errno, "fchown/fchmod(%s/%s): %s", sessions, tmp,
				  strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = sbx_error_set(err, errno, "write(%s/%s): %s", sessions, tmp,
					  strerror(errno));
			goto out;
		}
		off += (size_t)n;
	}
	if (renameat2(dir_fd, tmp, dir_fd, rec->session, replace ? 0 : RENAME_NOREPLACE) != 0) {
		r = sbx_error_set(err, errno, "renameat2(%s/%s): %s", sessions,
				  rec->session, strerror(errno));
		goto out;
	}
	made_tmp = false;
out:
	if (made_tmp)
		unlinkat(dir_fd, tmp, 0);
	sbx_close_if(fd);
	free(buf);
	return r;
}

int sbx_record_write(const char *runtime_dir, const struct sbx_record *rec,
		     unsigned max_live, const struct sbx_stale_hook *hook, struct sbx_error *err)
{
	char sessions[SBX_PATH_MAX];
	int dir_fd = -1, lock_fd = -1, r;

	if (!sbx_session_id_is_valid(rec->session))
		return sbx_error_set(err, EINVAL, "record: bad session id '%.40s'",
				     rec->session);
	/*
	 * Every record is written under the lock (released when lock_fd
	 * closes): the limit is checked in the same hold, so two logins
	 * racing for the last slot cannot both get it; and a close that finds
	 * the account's last session ending (sbx_record_last_close) ends
	 * every process of the uid in its own hold, before any new login of
	 * that account has a record, hence before it has a process.
	 */
	r = sessions_open_locked(runtime_dir, sessions, sizeof(sessions), &dir_fd, &lock_fd,
				 err);
	if (r)
		return r;
	if (max_live) {
		unsigned live = 0;

		r = count_live(dir_fd, sessions, rec->uid, true, hook, &live, NULL, err);
		if (r)
			goto out;
		if (live >= max_live) {
			r = sbx_error_set(err, EUSERS,
					  "%u sessions of uid %u are open, max_sessions is %u",
					  live, (unsigned)rec->uid, max_live);
			goto out;
		}
	}
	r = record_put(dir_fd, sessions, rec, false, err);
out:
	close(lock_fd);
	close(dir_fd);
	return r;
}

/* The record of session_id, read under the sessions lock: 0 with *dir_fd
 * and *lock_fd the caller's to close (closing lock_fd releases it) and
 * *rec filled; -errno (err set) with nothing held. */
static int record_read_locked(const char *runtime_dir, const char *session_id,
			      char *sessions, size_t size, int *dir_fd, int *lock_fd,
			      struct sbx_record *rec, struct sbx_error *err)
{
	char *buf;
	int r;

	if (!sbx_session_id_is_valid(session_id))
		return sbx_error_set(err, EINVAL, "record: bad session id '%.40s'",
				     session_id ? session_id : "(null)");
	buf = malloc(SBX_RECORD_MAX_BYTES + 1);
	if (!buf)
		return sbx_error_set(err, ENOMEM, "record %s: out of memory", session_id);
	r = sessions_open_locked(runtime_dir, sessions, size, dir_fd, lock_fd, err);
	if (r == 0) {
		r = record_read_for_count(*dir_fd, session_id, buf, rec);
		if (r == 0 && strcmp(rec->session, session_id) != 0)
			r = -EINVAL;
		if (r) {
			r = sbx_error_set(err, -r, "record %s/%s: %s", sessions, session_id,
					  strerror(-r));
			close(*lock_fd);
			close(*dir_fd);
		}
	}
	free(buf);
	return r;
}

int sbx_record_take_over(const char *runtime_dir, const char *session_id, pid_t opener,
			 pid_t pid, uint64_t start, struct sbx_error *err)
{
	char sessions[SBX_PATH_MAX];
	struct sbx_record rec;
	int dir_fd, lock_fd, r;

	/* Under the lock: a count that found the record stale has ended the
	 * session and removed the record before this reads it. */
	r = record_read_locked(runtime_dir, session_id, sessions, sizeof(sessions), &dir_fd,
			       &lock_fd, &rec, err);
	if (r)
		return r;
	if (rec.opener_pid != opener) {
		r = sbx_error_set(err, ESTALE, "record %s/%s: not the session's opener's",
				  sessions, session_id);
	} else {
		rec.opener_pid = pid;
		rec.opener_start = start;
		r = record_put(dir_fd, sessions, &rec, true, err);
	}
	close(lock_fd);
	close(dir_fd);
	return r;
}

int sbx_record_remove_stale(const char *runtime_dir, const char *session_id, pid_t opener,
			    uint64_t opener_start, struct sbx_error *err)
{
	char sessions[SBX_PATH_MAX];
	struct sbx_record rec;
	int dir_fd, lock_fd, r;

	r = record_read_locked(runtime_dir, session_id, sessions, sizeof(sessions), &dir_fd,
			       &lock_fd, &rec, err);
	if (r)
		return r;
	/* Taken over (a keeper), or live again. */
	if (rec.opener_pid != opener || rec.opener_start != opener_start ||
	    record_is_live(&rec, NULL, SIZE_MAX))
		r = sbx_error_set(err, ESTALE, "record %s/%s: taken over by a live opener",
				  sessions, session_id);
	else if (unlinkat(dir_fd, session_id, 0) != 0)
		r = sbx_error_set(err, errno, "unlink(%s/%s): %s", sessions, session_id,
				  strerror(errno));
	close(lock_fd);
	close(dir_fd);
	return r;
}

static int parse_str(char *dst, size_t size, const char *v, const char *key,
		     const char *name, struct sbx_error *err)
{
	/* The reader accepts exactly what the writer writes: no control
	 * bytes in a value. */
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return sbx_error_set(err, EINVAL, "record %s: %s holds a control character",
					     name, key);
	if (sbx_strlcpy(dst, size, v) != 0)
		return sbx_error_set(err, EINVAL, "record %s: %s too long", name, key);
	return 0;
}

static int parse_num(const char *v, uint64_t max, uint64_t *out, const char *key,
		     const char *name, struct sbx_error *err)
{
	if (sbx_parse_u64(v, false, 0, max, out) != 0)
		return sbx_error_set(err, EINVAL, "record %s: %s='%.32s' is not a number",
				     name, key, v);
	return 0;
}

/* The record's keys, in the order the writer puts them. */
enum record_key {
	K_VERSION, K_SESSION, K_USER, K_UID, K_MNTNS, K_NETNS, K_PROFILE,
	K_HASH, K_CLIENT, K_SERVICE, K_STARTED, K_HOME, K_HOME_SOURCE,
	K_HOME_KIND, K_OPENER_PID, K_OPENER_START, K_PRIVATE_TMP, K_COUNT
};

/* The string field of key k (a string key), and its size. */
static char *record_string(struct sbx_record *rec, unsigned k, size_t *size)
{
	switch (k) {
	case K_USER: *size = sizeof(rec->user); return rec->user;
	case K_PROFILE: *size = sizeof(rec->profile); return rec->profile;
	case K_HASH: *size = sizeof(rec->hash); return rec->hash;
	case K_CLIENT: *size = sizeof(rec->client); return rec->client;
	case K_SERVICE: *size = sizeof(rec->service); return rec->service;
	case K_HOME: *size = sizeof(rec->home); return rec->home;
	default: *size = sizeof(rec->home_source); return rec->home_source;
	}
}

/* Long on purpose: a strict line-by-line reader, one short case per field,
 * every field once and in order. */
int sbx_record_parse(const char *buf, size_t len, struct sbx_record *out,
		     struct sbx_error *err)
{
	static const char *const keys[K_COUNT] = {
		"version", "session", "user", "uid", "mntns", "netns", "profile",
		"hash", "client", "service", "started", "home", "home_source",
		"home_kind", "opener_pid", "opener_start", "private_tmp",
	};
	const uint32_t required = 1u << K_VERSION | 1u << K_SESSION | 1u << K_USER |
				  1u << K_UID | 1u << K_MNTNS | 1u << K_STARTED |
				  1u << K_HOME | 1u << K_HOME_KIND;
	struct sbx_record rec;
	char line[SBX_PATH_MAX + 32];
	const char *p = buf, *end = buf + len, *name = "(record)";
	uint32_t seen = 0;
	uint64_t v = 0;
	int r = 0;

	memset(&rec, 0, sizeof(rec));
	if (memchr(buf, '\0', len))
		return sbx_error_set(err, EINVAL, "record: holds a NUL byte");
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char *eq;
		size_t n, k;

		if (!nl)
			return sbx_error_set(err, EINVAL, "record %s: last line has no newline",
					     name);
		n = (size_t)(nl - p);
		if (n >= sizeof(line))
			return sbx_error_set(err, EINVAL, "record %s: line too long", name);
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl + 1;
		eq = strchr(line, '=');
		if (!eq)
			return sbx_error_set(err, EINVAL, "record %s: line without '='", name);
		*eq++ = '\0';
		for (k = 0; k < K_COUNT; k++) {
			if (!strcmp(line, keys[k]))
				break;
		}
		if (k == K_COUNT)
			return sbx_error_set(err, EINVAL, "record %s: unknown key '%.32s'",
					     name, line);
		if (seen & (1u << k))
			return sbx_error_set(err, EINVAL, "record %s: duplicate key '%s'",
					     name, keys[k]);
		seen |= 1u << k;
		switch (k) {
		case K_VERSION:
			r = parse_num(eq, UINT32_MAX, &v, line, name, err);
			if (!r && v != RECORD_VERSION)
				r = sbx_error_set(err, EINVAL, "record %s: version %" PRIu64
						  " is not %d", name, v, RECORD_VERSION);
			rec.version = (unsigned)v;
			break;
		case K_SESSION:
			if (!sbx_session_id_is_valid(eq))
				return sbx_error_set(err, EINVAL, "record: bad session id");
			memcpy(rec.session, eq, SBX_SESSION_ID_HEX + 1);
			name = rec.session;
			break;
		case K_UID:
			r = parse_num(eq, (uid_t)-2, &v, line, name, err);
			rec.uid = (uid_t)v;
			break;
		case K_MNTNS:
		case K_NETNS:
			r = parse_num(eq, UINT64_MAX, &v, line, name, err);
			*(k == K_MNTNS ? &rec.mntns : &rec.netns) = (unsigned long)v;
			break;
		case K_STARTED:
			r = parse_num(eq, INT64_MAX, &v, line, name, err);
			rec.started = (int64_t)v;
			break;
		case K_USER: case K_PROFILE: case K_HASH: case K_CLIENT: case K_SERVICE:
		case K_HOME: case K_HOME_SOURCE: {
			size_t size;
			char *dst = record_string(&rec, k, &size);

			r = parse_str(dst, size, eq, line, name, err);
			break;
		}
		case K_HOME_KIND:
			for (k = 0; k < ARRAY_SIZE(home_kind_names); k++) {
				if (!strcmp(eq, home_kind_names[k]))
					break;
			}
			if (k == ARRAY_SIZE(home_kind_names))
				return sbx_error_set(err, EINVAL,
						     "record %s: bad home_kind '%.16s'",
						     name, eq);
			rec.home_kind = (enum sbx_home)k;
			break;
		case K_OPENER_PID:
			r = parse_num(eq, INT32_MAX, &v, line, name, err);
			if (!r && v == 0)
				r = sbx_error_set(err, EINVAL, "record %s: opener_pid 0", name);
			rec.opener_pid = (pid_t)v;
			break;
		case K_OPENER_START:
			r = parse_num(eq, UINT64_MAX, &v, line, name, err);
			rec.opener_start = v;
			break;
		case K_PRIVATE_TMP:
			r = parse_num(eq, 1, &v, line, name, err);
			rec.private_tmp = v == 1;
			break;
		}
		if (r)
			return r;
	}
	if ((seen & required) != required)
		return sbx_error_set(err, EINVAL, "record %s: a required key is missing",
				     name);
	if (!(seen & (1u << K_OPENER_PID)) != !(seen & (1u << K_OPENER_START)))
		return sbx_error_set(err, EINVAL,
				     "record %s: opener_pid and opener_start come together",
				     name);
	*out = rec;
	return 0;
}

int sbx_record_view_path(const char *runtime_dir, char *out, size_t size)
{
	if (!runtime_dir || sbx_snprintf(out, size, "%s/" SESSION_VIEW,
					 strcmp(runtime_dir, "/") ? runtime_dir : "") != 0)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * In the session's mount namespace (after the PAM stage's unshare, with
 * propagation to the host cut): a fresh tmpfs, the record written into it
 * while it is still detached, made read-only, then attached on
 * <runtime_dir>/session by fd. The host and every other session see only
 * the empty mountpoint.
 */
int sbx_record_publish(const char *runtime_dir, const struct sbx_record *rec,
		       int *channel_fd, int *refusals_fd, struct sbx_error *err)
{
	char view[SBX_PATH_MAX], *buf = NULL;
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	size_t len = 0;
	int rt_fd = -1, view_fd = -1, fsfd = -1, mfd = -1, fd = -1, chan = -1, refu = -1, r;

	if (sbx_record_view_path(runtime_dir, view, sizeof(view)) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "record: runtime dir path too long");
	r = record_text(rec, &buf, &len, err);
	if (r)
		return r;
	r = sbx_dir_open_walk(runtime_dir, true, 0755, &rt_fd, err);
	if (r == 0)
		r = sbx_dir_open_walk(view, true, 0755, &view_fd, err);
	if (r)
		goto out;
	fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC);
	if (fsfd < 0 ||
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "size", "16k", 0) != 0 ||
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "nr_inodes", "5", 0) != 0 ||
	    fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
	    fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) {
		r = sbx_error_set(err, errno, "record view %s: tmpfs: %s", view, strerror(errno));
		goto out;
	}
	mfd = fsmount(fsfd, FSMOUNT_CLOEXEC,
		      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (mfd < 0) {
		r = sbx_error_set(err, errno, "record view %s: fsmount: %s", view, strerror(errno));
		goto out;
	}
	fd = openat(mfd, SESSION_VIEW_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0444);
	if (fd < 0 || fchown(fd, 0, 0) != 0 || fchmod(fd, 0444) != 0 ||
	    sbx_write_all(fd, buf, len) != 0) {
		r = sbx_error_set(err, errno, "record view %s/%s: write: %s", view,
				  SESSION_VIEW_FILE, strerror(errno));
		goto out;
	}
	/* A file still open for writing would keep the mount from going
	 * read-only (EBUSY). */
	close(fd);
	fd = -1;
	/* The ledger's channel (ledger.c), bound while the mount is ours
	 * alone; a bound socket holds no write access to the mount. */
	if (channel_fd &&
	    (r = sbx_ledger_channel_bind(mfd, rec->uid, (gid_t)-1, &chan, err)) != 0)
		goto out;
	if (channel_fd && refusals_fd &&
	    (r = sbx_ledger_refusals_bind(mfd, rec->uid, (gid_t)-1, &refu, err)) != 0)
		goto out;
	if (mount_setattr(mfd, "", AT_EMPTY_PATH, &ro, sizeof(ro)) != 0 ||
	    move_mount(mfd, "", view_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
		r = sbx_error_set(err, errno, "record view %s: mount: %s", view, strerror(errno));
		goto out;
	}
	r = 0;
	if (channel_fd) {
		*channel_fd = chan;
		chan = -1;
	}
	if (channel_fd && refusals_fd) {
		*refusals_fd = refu;
		refu = -1;
	}
out:
	sbx_close_if(refu);
	sbx_close_if(chan);
	sbx_close_if(fd);
	sbx_close_if(mfd);
	sbx_close_if(fsfd);
	sbx_close_if(view_fd);
	sbx_close_if(rt_fd);
	free(buf);
	return r;
}

int sbx_record_read_verified(const char *runtime_dir, const char *session_id,
			     uid_t expect_uid, unsigned long expect_mntns,
			     struct sbx_record *out, struct sbx_error *err)
{
	char view[SBX_PATH_MAX], path[SBX_PATH_MAX + 16];
	struct sbx_record rec;
	struct stat st;
	char *buf = NULL;
	size_t used = 0;
	int dir_fd = -1, fd = -1, r;

	if (!sbx_session_id_is_valid(session_id))
		return sbx_error_set(err, EINVAL, "record: bad session id '%.40s'",
				     session_id ? session_id : "(null)");
	if (sbx_record_view_path(runtime_dir, view, sizeof(view)) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "record: runtime dir path too long");
	snprintf(path, sizeof(path), "%s/%s", view, SESSION_VIEW_FILE);
	r = sbx_dir_open_walk(view, true, 0, &dir_fd, err);
	if (r)
		return r;
	fd = openat(dir_fd, SESSION_VIEW_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			r = sbx_error_set(err, ELOOP,
					  "record %s: is a symlink; refusing to follow it", path);
		else if (errno == ENOENT)
			r = sbx_error_set(err, ENOENT,
					  "%s: no record in this mount namespace (no PAM session stage "
					  "prepared it)", path);
		else
			r = sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = sbx_error_set(err, EPERM, "record %s: not a regular file", path);
		goto out;
	}
	if (st.st_uid != 0) {
		r = sbx_error_set(err, EPERM, "record %s: owned by uid %u, not root",
				  path, (unsigned)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		r = sbx_error_set(err, EPERM, "record %s: mode %04o is group/world writable",
				  path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (st.st_nlink != 1) {
		r = sbx_error_set(err, EMLINK,
				  "record %s: has %lu links; refusing a hard-linked record",
				  path, (unsigned long)st.st_nlink);
		goto out;
	}
	r = sbx_read_fd(fd, path, SBX_RECORD_MAX_BYTES, &buf, &used, err);
	if (r < 0)
		goto out;
	r = sbx_record_parse(buf, used, &rec, err);
	if (r)
		goto out;
	if (strcmp(rec.session, session_id) != 0) {
		r = sbx_error_set(err, EINVAL, "record %s: names session %s, not %s", path,
				  rec.session, session_id);
		goto out;
	}
	if (rec.uid != expect_uid) {
		r = sbx_error_set(err, EPERM, "record %s: names uid %u, caller is uid %u",
				  path, (unsigned)rec.uid, (unsigned)expect_uid);
		goto out;
	}
	if (rec.mntns != expect_mntns) {
		r = sbx_error_set(err, ESTALE,
				  "record %s: mount namespace %lu is not the caller's %lu",
				  path, rec.mntns, expect_mntns);
		goto out;
	}
	*out = rec;
out:
	sbx_close_if(fd);
	sbx_close_if(dir_fd);
	free(buf);
	return r;
}

int sbx_record_remove(const char *runtime_dir, const char *session_id,
		      struct sbx_error *err)
{
	char sessions[SBX_PATH_MAX];
	int dir_fd, r;

	if (!sbx_session_id_is_valid(session_id))
		return sbx_error_set(err, EINVAL, "record: bad session id '%.40s'",
				     session_id ? session_id : "(null)");
	r = sessions_path(runtime_dir, sessions, sizeof(sessions), err);
	if (r)
		return r;
	r = sbx_dir_open_walk(sessions, true, 0, &dir_fd, err);
	if (r)
		return r;
	if (unlinkat(dir_fd, session_id, 0) != 0)
		r = sbx_error_set(err, errno, "unlink(%s/%s): %s", sessions, session_id,
				  strerror(errno));
	close(dir_fd);
	return r;
}

/* Read one record for counting; 0 only for a trusted, well-formed one. */
static int record_read_for_count(int dir_fd, const char *name, char *buf,
				 struct sbx_record *rec)
{
	struct stat st;
	size_t used = 0;
	int fd, r = -EINVAL;

	fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_nlink != 1)
		goto out;
	for (;;) {
		ssize_t n = read(fd, buf + used, SBX_RECORD_MAX_BYTES + 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > SBX_RECORD_MAX_BYTES)
			goto out;
	}
	r = sbx_record_parse(buf, used, rec, NULL);
out:
	close(fd);
	return r;
}

/*
 * The mount namespaces some process is in now, sorted (for records without
 * an opener). *n_out = SIZE_MAX when /proc cannot be read, or when the
 * caller is not root (it cannot see other users' namespaces): then every
 * such record counts as live (never under-count).
 */
static int ulong_cmp(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static unsigned long *mntns_in_use(size_t *n_out)
{
	unsigned long *set = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*n_out = SIZE_MAX;
	if (geteuid() != 0 || !(d = opendir("/proc")))
		return NULL;
	while ((errno = 0, de = readdir(d)) != NULL) {
		unsigned long ino = 0;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (sbx_proc_mntns(de->d_name, &ino) != 0)
			continue;	/* gone since readdir */
		if (n == cap) {
			unsigned long *grown;

			cap = cap ? cap * 2 : 256;
			grown = realloc(set, cap * sizeof(*set));
			if (!grown)
				goto fail;
			set = grown;
		}
		set[n++] = ino;
	}
	if (errno)
		goto fail;
	closedir(d);
	if (n)
		qsort(set, n, sizeof(*set), ulong_cmp);
	*n_out = n;
	return set;
fail:
	closedir(d);
	free(set);
	*n_out = SIZE_MAX;
	return NULL;
}

/*
 * The opener is the precise test: a pid with its start time names one
 * process, and the sshd monitor (or su, or login) that opened the session
 * lives until it closes. The namespace scan is the fallback for a record
 * without one; namespace inode numbers are reused once freed, so it can
 * over-count, never under-count.
 */
static bool record_is_live(const struct sbx_record *rec, const unsigned long *set,
			   size_t n)
{
	uint64_t start;
	int r;

	if (rec->opener_pid > 0) {
		r = sbx_proc_start_time(rec->opener_pid, &start);
		if (r == -ENOENT || r == -ESRCH)
			return false;
		return r != 0 || start == rec->opener_start;
	}
	if (n == SIZE_MAX || rec->mntns == 0)
		return true;
	return n && bsearch(&rec->mntns, set, n, sizeof(*set), ulong_cmp) != NULL;
}

/* Called for each well-formed, trusted record of the open sessions/
 * directory with whether it is live; dir_fd and name let the visitor
 * unlink it. A nonzero return (-errno, err set) ends the walk. */
typedef int (*record_visit_fn)(int dir_fd, const char *name, const struct sbx_record *rec,
			       bool live, void *arg, struct sbx_error *err);

static int records_walk(int path_fd, const char *sessions, record_visit_fn visit, void *arg,
			struct sbx_error *err)
{
	struct sbx_record rec;
	struct dirent *de;
	unsigned long *set = NULL;
	size_t n_set = SIZE_MAX;
	bool set_loaded = false;
	char *buf = NULL;
	DIR *dir = NULL;
	int fd, r = 0;

	buf = malloc(SBX_RECORD_MAX_BYTES + 1);
	if (!buf) {
		r = sbx_error_set(err, ENOMEM, "records(%s): out of memory", sessions);
		goto out;
	}
	fd = openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		r = sbx_error_set(err, errno, "opendir(%s): %s", sessions, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	while ((errno = 0, de = readdir(dir)) != NULL) {
		if (!sbx_session_id_is_valid(de->d_name))
			continue;	/* ".", "..", temp files */
		if (record_read_for_count(dirfd(dir), de->d_name, buf, &rec) != 0 ||
		    strcmp(rec.session, de->d_name) != 0)
			continue;
		/* rec was read: record_read_for_count() returned 0, and its -errno
		 * is never 0.
		 * NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult) */
		if (rec.opener_pid <= 0 && !set_loaded) {
			set = mntns_in_use(&n_set);
			set_loaded = true;
		}
		r = visit(dirfd(dir), de->d_name, &rec, record_is_live(&rec, set, n_set), arg, err);
		if (r)
			goto out;
	}
	if (errno)
		r = sbx_error_set(err, errno, "readdir(%s): %s", sessions, strerror(errno));
out:
	if (dir)
		closedir(dir);
	free(buf);
	free(set);
	return r;
}

/* Stale records handled per walk; more wait for the next one. */
#define STALE_PER_WALK 32

struct count_ctx {
	uid_t uid;
	bool prune;
	unsigned live, stale;
	size_t n_stale, n_live_ns;
	struct sbx_record stale_rec[STALE_PER_WALK];
	unsigned long live_ns[256];	/* the live records' namespaces */
	bool live_ns_full;
};

static int count_visit(int dir_fd, const char *name, const struct sbx_record *rec, bool live,
		       void *arg, struct sbx_error *err)
{
	struct count_ctx *c = arg;

	(void)dir_fd;
	(void)name;
	(void)err;
	if (!live) {
		if (c->prune && c->n_stale < STALE_PER_WALK)
			c->stale_rec[c->n_stale++] = *rec;
		return 0;
	}
	if (rec->uid == c->uid)
		c->live++;
	if (c->n_live_ns < ARRAY_SIZE(c->live_ns))
		c->live_ns[c->n_live_ns++] = rec->mntns;
	else
		c->live_ns_full = true;
	return 0;
}

/*
 * A record whose opener is gone (an OOM kill or kill -9 of sshd's
 * monitor): nothing closed the session, and its processes may still run,
 * outside max_sessions. They are ended first (the tree in the session's
 * mount namespace, the sandbox's own namespaces below it), then the record
 * goes, and the hook hears of it (root's ledger). Not when a live record
 * names the same namespace, or it is the host's or the caller's: a freed
 * namespace's inode number can be given to a later one.
 */
static void stale_end(int dir_fd, struct count_ctx *c, const struct sbx_stale_hook *hook)
{
	/* Never the host's namespace, nor the caller's own: both are alive,
	 * so a stale record naming either names a reused number. */
	unsigned long self = sbx_ns_inode("mnt"), host = 0;
	struct stat st;

	if (stat("/proc/1/ns/mnt", &st) == 0)
		host = (unsigned long)st.st_ino;
	for (size_t i = 0; i < c->n_stale; i++) {
		const struct sbx_record *rec = &c->stale_rec[i];
		unsigned killed = 0, passes = 0;
		bool shared = c->live_ns_full || rec->mntns == 0 || rec->mntns == self ||
			      rec->mntns == host;

		for (size_t k = 0; k < c->n_live_ns && !shared; k++)
			shared = c->live_ns[k] == rec->mntns;
		if (!shared && rec->uid != 0)
			killed = sbx_session_end(rec->uid, rec->mntns, &passes);
		if (unlinkat(dir_fd, rec->session, 0) != 0)
			continue;	/* another walk took it */
		c->stale++;
		if (hook && hook->fn)
			hook->fn(rec, killed, hook->arg);
	}
}

void sbx_record_stale_line(const struct sbx_record *rec, unsigned killed, struct sbx_logline *l)
{
	sbx_log_begin(l, "pam_close");
	sbx_log_add(l, "session", "%s", rec->session);
	sbx_log_add(l, "user", "%s", rec->user);
	sbx_log_add(l, "uid", "%u", (unsigned)rec->uid);
	sbx_log_add(l, "service", "%s", rec->service);
	sbx_log_add(l, "client", "%s", rec->client);
	sbx_log_add(l, "profile", "%s", rec->profile);
	sbx_log_add(l, "duration_s", "%lld", (long long)((int64_t)time(NULL) - rec->started));
	sbx_log_add(l, "how", "opener_gone");
	/* The shell's report was queued on the opener's channel, and went
	 * with it. */
	sbx_log_add(l, "report", "lost");
	sbx_log_add(l, "killed", "%u", killed);
	sbx_log_add(l, "result", "failed");
	sbx_log_add(l, "msg", "the process that opened the session (pid %d) is gone; the session "
		    "never closed: %u of its process(es) ended here", (int)rec->opener_pid, killed);
}

/* Count the live records of uid in the open sessions/ directory; end and
 * remove the stale ones (of every uid) when prune is set. */
static int count_live(int path_fd, const char *sessions, uid_t uid, bool prune,
		      const struct sbx_stale_hook *hook, unsigned *live_out, unsigned *stale_out,
		      struct sbx_error *err)
{
	struct count_ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return sbx_error_set(err, ENOMEM, "records(%s): out of memory", sessions);
	c->uid = uid;
	c->prune = prune;
	r = records_walk(path_fd, sessions, count_visit, c, err);
	if (r == 0) {
		stale_end(path_fd, c, hook);
		*live_out = c->live;
		if (stale_out)
			*stale_out = c->stale;
	}
	free(c);
	return r;
}

int sbx_record_count_user(const char *runtime_dir, uid_t uid, unsigned *live,
			  unsigned *stale, const struct sbx_stale_hook *hook, struct sbx_error *err)
{
	char sessions[SBX_PATH_MAX];
	int path_fd = -1, r;

	if (stale)
		*stale = 0;
	r = sessions_path(runtime_dir, sessions, sizeof(sessions), err);
	if (r)
		return r;
	r = sbx_dir_open_walk(sessions, true, 0, &path_fd, err);
	if (r == -ENOENT) {
		sbx_error_clear(err);
		*live = 0;
		return 0;
	}
	if (r)
		return r;
	/* As root the walk ends stale sessions: under the lock, as every other
	 * writer, so a keeper's take-over (sbx_record_take_over) cannot come
	 * between the read that found the record stale and its unlink (which
	 * would remove the keeper's record, and log the session's end twice). */
	if (geteuid() == 0) {
		int lock_fd = sessions_lock(path_fd, sessions, err);

		if (lock_fd < 0) {
			close(path_fd);
			return lock_fd;
		}
		r = count_live(path_fd, sessions, uid, true, hook, live, stale, err);
		close(lock_fd);
	} else {
		r = count_live(path_fd, sessions, uid, false, hook, live, stale, err);
	}
	close(path_fd);
	return r;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sbx_record_entry *x = a, *y = b;

	if (x->rec.started != y->rec.started)
		return x->rec.started < y->rec.started ? -1 : 1;
	return strcmp(x->rec.session, y->rec.session);
}

struct list_ctx {
	struct sbx_record_entry *list;
	size_t n, cap;
};

static int list_visit(int dir_fd, const char *name, const struct sbx_record *rec, bool live,
		      void *arg, struct sbx_error *err)
{
	struct list_ctx *c = arg;

	(void)dir_fd;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct sbx_record_entry *grown = realloc(c->list, cap * sizeof(*grown));

		if (!grown)
			return sbx_error_set(err, ENOMEM, "session list at %s: out of memory", name);
		c->list = grown;
		c->cap = cap;
	}
	c->list[c->n].rec = *rec;
	c->list[c->n].live = live;
	c->n++;
	return 0;
}

int sbx_record_list(const char *runtime_dir, struct sbx_record_entry **out, size_t *n_out,
		    struct sbx_error *err)
{
	struct list_ctx c = { 0 };
	char sessions[SBX_PATH_MAX];
	int path_fd = -1, r;

	r = sessions_path(runtime_dir, sessions, sizeof(sessions), err);
	if (r)
		return r;
	r = sbx_dir_open_walk(sessions, true, 0, &path_fd, err);
	if (r == -ENOENT) {
		sbx_error_clear(err);
		*out = NULL;
		*n_out = 0;
		return 0;
	}
	if (r)
		return r;
	r = records_walk(path_fd, sessions, list_visit, &c, err);
	close(path_fd);
	if (r) {
		free(c.list);
		return r;
	}
	if (c.n)
		qsort(c.list, c.n, sizeof(*c.list), entry_cmp);
	*out = c.list;
	*n_out = c.n;
	return 0;
}

int sbx_record_prune(const char *runtime_dir, unsigned *removed,
		     const struct sbx_stale_hook *hook, struct sbx_error *err)
{
	unsigned live = 0;

	return sbx_record_count_user(runtime_dir, (uid_t)-1, &live, removed, hook, err);
}

int sbx_record_last_close(const char *runtime_dir, uid_t uid, void (*last)(void *arg),
			  void *arg, const struct sbx_stale_hook *hook, unsigned *live_out,
			  struct sbx_error *err)
{
	char sessions[SBX_PATH_MAX];
	unsigned live = 0;
	int dir_fd = -1, lock_fd = -1, r;

	r = sessions_open_locked(runtime_dir, sessions, sizeof(sessions), &dir_fd, &lock_fd,
				 err);
	if (r)
		return r;
	/* The same liveness rule as max_sessions: a record counts while the
	 * process that opened its session lives. */
	r = count_live(dir_fd, sessions, uid, true, hook, &live, NULL, err);
	if (r == 0 && live == 0)
		last(arg);	/* still under the lock */
	close(lock_fd);
	close(dir_fd);
	if (r == 0)
		*live_out = live;
	return r;
}
