/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers: the error model, bounded strings, numbers and paths. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Parenthesised: internal.h may define a function-like macro of this name. */
int (sbx_error_set)(struct sbx_error *err, int code, const char *fmt, ...)
{
	if (code <= 0)
		code = EINVAL;
	if (err) {
		char raw[sizeof(err->msg)];
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(raw, sizeof(raw), fmt, ap);
		va_end(ap);
		/* A message names paths, users, and what a config file or a
		 * peer said; it is printed on root's terminal (--explain,
		 * --check-config, the admin verbs), sent to ssh clients and
		 * logged: shown (text.c), so no byte in it acts on a terminal.
		 * The form is its own fixed point, so a message quoting
		 * another is not shown twice. */
		(void)sbx_text_show(err->msg, sizeof(err->msg), raw);
		err->code = code;
	}
	return -code;
}

void sbx_error_clear(struct sbx_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

int sbx_strlcpy(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);

	if (size == 0)
		return -ENAMETOOLONG;
	if (len >= size) {
		dst[0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(dst, src, len + 1);
	return 0;
}

/* Bytes of a list's room in use: its count's entries, at most the room. */
static size_t list_used(const void *base, const struct sbx_list_field *l)
{
	size_t n;

	memcpy(&n, (const char *)base + l->count_off, sizeof(n));
	return n < l->size / l->elem ? n * l->elem : l->size;
}

void sbx_copy_used(void *dst, const void *src, size_t size,
		   const struct sbx_list_field *lists, size_t n_lists)
{
	char *d = dst;
	const char *s = src;
	size_t pos = 0;

	if (dst == src)
		return;
	for (size_t i = 0; i < n_lists; i++) {
		memcpy(d + pos, s + pos, lists[i].off - pos);
		memcpy(d + lists[i].off, s + lists[i].off, list_used(src, &lists[i]));
		pos = lists[i].off + lists[i].size;
	}
	memcpy(d + pos, s + pos, size - pos);
}

void sbx_clear_used(void *p, size_t size, const struct sbx_list_field *lists, size_t n_lists)
{
	char *d = p;
	size_t pos = 0;

	for (size_t i = 0; i < n_lists; i++) {
		memset(d + pos, 0, lists[i].off - pos);
		pos = lists[i].off + lists[i].size;
	}
	memset(d + pos, 0, size - pos);
}

int sbx_snprintf(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (size == 0)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	n = vsnprintf(dst, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		dst[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

void sbx_text_set(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, size, fmt, ap);
	va_end(ap);
}

int sbx_parse_u64(const char *s, bool allow_suffix, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (*p && allow_suffix && p[1] == '\0') {
		switch (*p) {
		case 'K': case 'k': mult = 1ull << 10; break;
		case 'M': case 'm': mult = 1ull << 20; break;
		case 'G': case 'g': mult = 1ull << 30; break;
		case 'T': case 't': mult = 1ull << 40; break;
		default: return -EINVAL;
		}
		p++;
	}
	if (*p)
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	v *= mult;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

bool sbx_path_is_canonical(const char *path)
{
	const char *seg;

	if (!path || path[0] != '/')
		return false;
	if (path[1] == '\0')
		return true;
	seg = path + 1;
	for (;;) {
		const char *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);

		if (len == 0)		/* "//" or trailing "/" */
			return false;
		if ((len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return false;
		if (!end)
			return true;
		seg = end + 1;
	}
}

bool sbx_path_is_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (n == 1 && prefix[0] == '/')
		return path[0] == '/';
	if (strncmp(path, prefix, n) != 0)
		return false;
	return path[n] == '\0' || path[n] == '/';
}

bool sbx_path_owned_above(const char *path, uid_t uid)
{
	char dir[SBX_PATH_MAX];
	struct stat sb;
	char *slash;

	if (sbx_strlcpy(dir, sizeof(dir), path) != 0)
		return true;
	while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (lstat(dir, &sb) == 0 && sb.st_uid == uid)
			return true;
	}
	return false;
}

int sbx_read_fd(int fd, const char *what, size_t max, char **out, size_t *len,
		struct sbx_error *err)
{
	/* Grown as needed, not max + 1 up front: a login reads the config
	 * and every drop-in with a 1 MiB cap, and a mapping of that size per
	 * small file cost ~40 us each (mmap, fault, munmap). */
	size_t cap = max < 16384 ? max + 1 : 16384, used = 0;
	char *buf = malloc(cap);

	if (!buf)
		return sbx_error_set(err, ENOMEM, "read(%s): out of memory", what);
	for (;;) {
		ssize_t n;

		if (used == cap) {
			size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
			char *nbuf = realloc(buf, ncap);

			if (!nbuf) {
				free(buf);
				return sbx_error_set(err, ENOMEM, "read(%s): out of memory", what);
			}
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + used, cap - used);
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			return sbx_error_set(err, e, "read(%s): %s", what, strerror(e));
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > max) {
			free(buf);
			return sbx_error_set(err, EFBIG, "read(%s): larger than %zu bytes", what, max);
		}
	}
	buf[used] = '\0';
	*out = buf;
	if (len)
		*len = used;
	return 0;
}

int sbx_read_file(const char *path, size_t max, char **out, size_t *len,
		  struct sbx_error *err)
{
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sbx_error_set(err, errno, "open(%s): %s", path, strerror(errno));
	r = sbx_read_fd(fd, path, max, out, len, err);
	close(fd);
	return r;
}

int sbx_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

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

int sbx_proc_start_time(pid_t pid, uint64_t *out)
{
	char path[64], buf[1024], *p, *end;
	unsigned long long v;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	/* The command name may hold spaces and ')': fields count from the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	/* p + 2 is field 3 (state); starttime is field 22. */
	p += 2;
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return -EIO;
	/* strtoull, not sscanf: sscanf's overflow is undefined, not ERANGE. */
	errno = 0;
	v = strtoull(p, &end, 10);
	if (end == p || errno)
		return -EIO;
	*out = v;
	return 0;
}

int sbx_status_text_field(const char *text, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);

	for (const char *line = text; *line; ) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);

		if (len > n && strncmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;

			while (*v == '\t' || *v == ' ')
				v++;
			len -= (size_t)(v - line);
			if (len >= size) {
				if (size)
					out[0] = '\0';
				return -ENAMETOOLONG;
			}
			memcpy(out, v, len);
			out[len] = '\0';
			return 0;
		}
		if (!eol)
			break;
		line = eol + 1;
	}
	return -ENOENT;
}

int sbx_proc_status_read(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t got;
	int fd;

	buf[0] = '\0';		/* "" on any failure */
	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = read(fd, buf, size - 1);
	close(fd);
	if (got <= 0) {
		buf[0] = '\0';
		return -EIO;
	}
	buf[got] = '\0';
	return 0;
}

int sbx_proc_status_field(pid_t pid, const char *name, char *out, size_t size)
{
	char buf[8192];
	int r = sbx_proc_status_read(pid, buf, sizeof(buf));

	return r ? r : sbx_status_text_field(buf, name, out, size);
}

long sbx_proc_status_number(pid_t pid, const char *name)
{
	char v[64], *end = NULL;
	unsigned long n;

	if (sbx_proc_status_field(pid, name, v, sizeof(v)) != 0)
		return -1;
	errno = 0;
	n = strtoul(v, &end, 10);	/* the first number (Uid: real effective ...) */
	if (end == v || errno || n > LONG_MAX)
		return -1;
	return (long)n;
}

int sbx_open_regular_at(int dirfd, const char *name, int flags, mode_t mode, bool trunc)
{
	struct stat st;
	int fd, fl, e;

	fd = openat(dirfd, name, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EINVAL;
	}
	/* A file that is already empty (the usual case: a name of its own,
	 * just made) is not truncated: on ext4 a truncate to 0 marks the file
	 * for writeback at close (auto_da_alloc), which made the outer process
	 * wait for the disk at the end of every session. */
	if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ||
	    (trunc && st.st_size != 0 && ftruncate(fd, 0) != 0)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* ---- sbx_sbuf: a bounded appender (internal.h) --------------------------------- */

void sbx_sbuf_init(struct sbx_sbuf *b, char *buf, size_t size)
{
	b->buf = buf;
	b->size = size;
	b->len = 0;
	b->truncated = false;
	if (size)
		buf[0] = '\0';
}

/* Append raw bytes; stop (and mark) when fewer than 4 bytes would remain
 * for the "..." and the NUL. */
void sbx_sbuf_add(struct sbx_sbuf *b, const char *s, size_t n)
{
	if (b->truncated || b->size < 4)
		return;
	if (b->len + n > b->size - 4) {
		size_t room = b->size - 4 - b->len;

		memcpy(b->buf + b->len, s, room);
		b->len += room;
		memcpy(b->buf + b->len, "...", 4);
		b->len += 3;
		b->truncated = true;
		return;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

void sbx_sbuf_str(struct sbx_sbuf *b, const char *s)
{
	sbx_sbuf_add(b, s, strlen(s));
}

void sbx_sbuf_fmt(struct sbx_sbuf *b, const char *fmt, ...)
{
	char tmp[600];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sbx_sbuf_add(b, tmp, strlen(tmp));
	if ((size_t)n >= sizeof(tmp) && !b->truncated)
		sbx_sbuf_str(b, "...");
}

struct sbx_pin sbx_pin_of(const struct stat *st)
{
	return (struct sbx_pin){ .set = true, .dev = st->st_dev, .ino = st->st_ino };
}

int sbx_pin_fd(int fd, struct sbx_pin *pin)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return -errno;
	*pin = sbx_pin_of(&st);
	return 0;
}

bool sbx_pin_holds(const struct sbx_pin *pin, const struct stat *st)
{
	return !pin->set || (pin->dev == st->st_dev && pin->ino == st->st_ino);
}

void sbx_close_if(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* ---- sbx_remove_tree (internal.h) ---------------------------------------- */

static int remove_first_errno;
static bool remove_again;

/* A directory the program made unreadable (mode 000) is made the caller's
 * 0700 and the walk runs again. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DNR) {
		if (chmod(path, 0700) == 0)
			remove_again = true;
		else if (!remove_first_errno)
			remove_first_errno = errno;
		return 0;
	}
	if (remove(path) != 0 && errno != ENOENT && !remove_first_errno)
		remove_first_errno = errno;
	return 0;
}

int sbx_remove_tree(const char *path)
{
	for (int pass = 0; pass < 16; pass++) {
		remove_first_errno = 0;
		remove_again = false;
		if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 &&
		    errno != ENOENT && !remove_first_errno)
			remove_first_errno = errno;
		if (!remove_again)
			break;
	}
	return -remove_first_errno;
}

int sbx_run_capture(char *const argv[], char *const envp[], void (*in_child)(void),
		    int timeout_ms, size_t max, char **out, int *status)
{
	struct timespec start, now;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fds[2], ret = 0, waited;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return ret;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		if (in_child)
			in_child();
		execve(argv[0], argv, envp);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		long left;
		ssize_t n;
		int pr;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = timeout_ms - ((now.tv_sec - start.tv_sec) * 1000 +
				     (now.tv_nsec - start.tv_nsec) / 1000000);
		pr = left > 0 ? poll(&pfd, 1, (int)left) : 0;
		if (pr == 0) {
			kill(pid, SIGKILL);
			ret = -ETIMEDOUT;
			break;
		}
		if (pr < 0 && errno == EINTR)
			continue;
		if (len + 4096 + 1 > cap) {
			char *nb;

			if (cap >= max) {
				kill(pid, SIGKILL);
				ret = -EFBIG;
				break;
			}
			nb = realloc(buf, cap + 8192);
			if (!nb) {
				kill(pid, SIGKILL);
				ret = -ENOMEM;
				break;
			}
			buf = nb;
			cap += 8192;
		}
		n = read(fds[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fds[0]);
	while ((waited = waitpid(pid, status, 0)) < 0 && errno == EINTR)
		;
	if (ret == 0 && waited < 0)
		ret = -errno;
	if (ret != 0) {
		free(buf);
		return ret;
	}
	if (!buf && !(buf = calloc(1, 1)))
		return -ENOMEM;
	buf[len] = '\0';
	*out = buf;
	return 0;
}

long long sbx_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
