/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * egress_bridge.c — network = proxy, the sandbox's half (docs/design.md
 * section 13.6).
 *
 * A proxy session is built as a deny session: its own network namespace
 * with only lo. The bridge listens on that lo (127.0.0.1:3128) and hands
 * every connection it accepts to agent-sandbox-egressd: a new unix stream
 * connection to the daemon's pathname socket (found by its inode whatever
 * the network namespace), one hello carrying the session id, the hash of
 * the session's list and the accepted socket itself in SCM_RIGHTS. The
 * daemon reads the request from that socket, decides, relays, and answers
 * the bridge with one verdict byte, which the bridge counts. No byte of a
 * connection passes through the bridge: the daemon splices between the
 * sandbox's socket and the destination's.
 *
 * Where it runs: forked by the setup process right after the network
 * namespace, before the pid and mount namespaces. So it is in the
 * sandbox's network namespace but in the host's pid namespace (the
 * sandboxed program cannot see it, let alone signal it) and the host's
 * mount namespace (it reaches the daemon's socket by path, so a daemon
 * restarted on a new socket is found again). It is the agent's uid in the
 * agent's user namespace, with no capability, no_new_privs, not dumpable
 * (inherited from setup), and it parses nothing it is sent but one byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* Hand-offs waiting for their verdict; past this, new connections wait
 * in the listener's backlog (the daemon's own bound is 64 per uid). */
#define BRIDGE_PENDING_MAX 256
#define BRIDGE_BACKLOG 128
#define PING_TIMEOUT_MS 2000
#define CONNECT_QUEUE_MS 2000

int sbx_egress_counts_map(struct sbx_egress_counts **out, struct sbx_error *err)
{
	void *p = mmap(NULL, sizeof(struct sbx_egress_counts), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return sbx_error_set(err, errno, "egress counts: mmap: %s", strerror(errno));
	*out = p;
	return 0;
}

void sbx_egress_counts_unmap(struct sbx_egress_counts *c)
{
	if (c)
		(void)munmap(c, sizeof(*c));
}

int sbx_egress_socket_pin(const char *path, int *out_fd, struct sbx_error *err)
{
	char dir[SBX_PATH_MAX];
	const char *name;
	struct sbx_error why = { 0 };
	struct stat st;
	int dfd, fd, e;

	name = strrchr(path, '/');
	if (path[0] != '/' || !name || !name[1] ||
	    sbx_snprintf(dir, sizeof(dir), "%.*s", (int)(name - path), path) != 0)
		return sbx_error_set(err, EINVAL, "egress_socket %s: not an absolute path to a "
				     "socket", path);
	if (!dir[0])
		sbx_strlcpy(dir, sizeof(dir), "/");
	name++;
	/* Every directory root's alone to change, so nobody can swap the
	 * socket under the name; the socket itself root's, so nobody but
	 * root bound it: an impostor's listener is not the daemon. */
	if (sbx_trust_open_dir(dir, true, &dfd, &why) != 0)
		return sbx_error_set(err, why.code ? why.code : EPERM, "egress_socket %s: %s",
				     path, why.msg);
	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	e = errno;
	close(dfd);
	if (fd < 0)
		return sbx_error_set(err, e, "agent-sandbox-egressd not reached at %s: %s", path,
				     strerror(e));
	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0) {
		close(fd);
		return sbx_error_set(err, EPERM, "egress_socket %s: not a socket root made "
				     "(owner uid %u): not agent-sandbox-egressd's", path,
				     (unsigned)st.st_uid);
	}
	*out_fd = fd;
	return 0;
}

/*
 * A connection to the daemon through its pinned socket (an O_PATH fd from
 * sbx_egress_socket_pin), non-blocking once made. The socket is 0666 (every
 * agent uid must reach it), so any local user can keep its backlog full
 * with a flood of connects (an attacker review did): a non-blocking connect
 * then fails with EAGAIN at once, and a proxy session became a deny one. A
 * blocking connect waits in the kernel's queue of connectors, served in
 * turn as the daemon accepts, so a flood delays it but cannot starve it;
 * SO_SNDTIMEO bounds the wait to timeout_ms.
 */
static int daemon_connect(int pin, const char *path, int timeout_ms, struct sbx_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long deadline = sbx_monotonic_ms() + timeout_ms;
	int fd, e;

	if (sbx_snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pin) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "agent-sandbox-egressd: fd path");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sbx_error_set(err, errno, "agent-sandbox-egressd: socket: %s",
				     strerror(errno));
	for (;;) {
		long long left = deadline - sbx_monotonic_ms();
		struct timeval tv = { .tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000 };

		if (left <= 0) {
			e = EAGAIN;
			break;
		}
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
			e = errno;
			break;
		}
		if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0) {
			struct timeval none = { 0 };

			if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none)) != 0 ||
			    fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
				e = errno;
				break;
			}
			return fd;
		}
		e = errno;
		if (e != EINTR)
			break;
	}
	close(fd);
	if (e == EAGAIN)
		return sbx_error_set(err, EAGAIN, "agent-sandbox-egressd at %s: its queue stayed "
				     "full for %d ms (a flood of connections, or a daemon that "
				     "does not accept)", path, timeout_ms);
	return sbx_error_set(err, e, "agent-sandbox-egressd not reached at %s: %s", path,
			     strerror(e));
}

/* The hello in one message, with pass_fd (>= 0) in SCM_RIGHTS. */
static int send_hello(int fd, const struct sbx_egress_hello *h, int pass_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)h, sizeof(*h) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (pass_fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(pass_fd));
	}
	n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*h) ? 0 : -EIO;
}

static void hello_init(struct sbx_egress_hello *h, enum sbx_egress_hello_kind kind, uid_t uid,
		       const char *session, const char *list_hash)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, SBX_EGRESS_HELLO_MAGIC, sizeof(h->magic));
	h->version = SBX_EGRESS_HELLO_VERSION;
	h->kind = (uint8_t)kind;
	h->uid = (uint32_t)uid;
	if (session)
		sbx_strlcpy(h->session, sizeof(h->session), session);
	if (list_hash)
		sbx_strlcpy(h->list_hash, sizeof(h->list_hash), list_hash);
}

/* Read exactly size bytes within ms: 0, -ETIMEDOUT, -EPIPE (closed first). */
static int read_exact(int fd, void *buf, size_t size, int ms)
{
	size_t got = 0;

	while (got < size) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&pf, 1, ms);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, (char *)buf + got, size - got);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

static int ping_pinned(int pin, const char *path, uid_t uid, const char *list_hash,
		       int timeout_ms, struct sbx_error *err)
{
	struct sbx_egress_hello h;
	struct sbx_egress_pong pong;
	int fd, r;

	long long deadline = sbx_monotonic_ms() + timeout_ms;

	memset(&pong, 0, sizeof(pong));
	fd = daemon_connect(pin, path, timeout_ms, err);
	if (fd < 0)
		return fd;
	hello_init(&h, SBX_EGRESS_HELLO_PING, uid, NULL, list_hash);
	r = send_hello(fd, &h, -1);
	if (r == 0) {
		long long left = deadline - sbx_monotonic_ms();

		r = read_exact(fd, &pong, sizeof(pong), left > 0 ? (int)left : 0);
	}
	close(fd);
	if (r == -ETIMEDOUT)
		return sbx_error_set(err, ETIMEDOUT, "agent-sandbox-egressd at %s did not answer "
				     "within %d ms", path, timeout_ms);
	if (r < 0)
		return sbx_error_set(err, -r, "agent-sandbox-egressd at %s: %s", path,
				     r == -EPIPE ? "closed the connection without an answer" :
				     strerror(-r));
	if (memcmp(pong.magic, SBX_EGRESS_HELLO_MAGIC, sizeof(pong.magic)) != 0)
		return sbx_error_set(err, EPROTO, "agent-sandbox-egressd at %s: not its answer",
				     path);
	if (!pong.ok) {
		pong.why[sizeof(pong.why) - 1] = '\0';
		sbx_text_scrub(pong.why);
		return sbx_error_set(err, EACCES, "agent-sandbox-egressd refuses uid %u: %s",
				     (unsigned)uid, pong.why);
	}
	return 0;
}

int sbx_egress_ping(const char *path, uid_t uid, const char *list_hash, int timeout_ms,
		    struct sbx_error *err)
{
	int pin, r;

	r = sbx_egress_socket_pin(path, &pin, err);
	if (r)
		return r;
	r = ping_pinned(pin, path, uid, list_hash, timeout_ms, err);
	close(pin);
	return r;
}

/* ---- the bridge process ---------------------------------------------------- */

struct ready_msg {
	int code;			/* 0, or a positive errno */
	char msg[SBX_ERROR_MAX];
};

static void count_verdict(struct sbx_egress_counts *c, int byte)
{
	uint64_t *n;

	if (!c)
		return;
	n = byte == SBX_EGRESS_ALLOWED ? &c->allowed :
	    byte == SBX_EGRESS_REFUSED ? &c->refused :
	    byte == SBX_EGRESS_NO_REQUEST ? &c->none : &c->failed;
	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

/* Accept, hand off, count. Never returns; ends with the session (its
 * parent's death). */
static void __attribute__((noreturn)) bridge_loop(int lfd, const struct sbx_egress_bridge_opts *o)
{
	static struct pollfd pf[1 + BRIDGE_PENDING_MAX];
	struct sbx_egress_hello h;
	size_t n = 0;

	hello_init(&h, SBX_EGRESS_HELLO_CONNECT, o->uid, o->session_id, o->list_hash);
	for (;;) {
		struct sbx_error e = { 0 };
		size_t i;
		int c, ctl;

		pf[0].fd = lfd;
		pf[0].events = n < BRIDGE_PENDING_MAX ? POLLIN : 0;
		pf[0].revents = 0;
		if (poll(pf, 1 + n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (i = n; i >= 1; i--) {
			unsigned char byte = SBX_EGRESS_FAILED;

			if (!pf[i].revents)
				continue;
			/* No byte (the daemon ended mid-way): not reached. */
			if (read(pf[i].fd, &byte, 1) != 1)
				byte = SBX_EGRESS_FAILED;
			count_verdict(o->counts, byte);
			close(pf[i].fd);
			pf[i] = pf[n--];
		}
		if (!(pf[0].revents & POLLIN))
			continue;
		c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* Every accepted connection gets one verdict counted, or
		 * none when the session ends first (unanswered). */
		if (o->counts)
			__atomic_add_fetch(&o->counts->accepted, 1, __ATOMIC_RELAXED);
		/* Waits its turn under a flood, up to CONNECT_QUEUE_MS; what
		 * the bridge has handed off meanwhile is the daemon's. */
		ctl = daemon_connect(5, o->socket_path, CONNECT_QUEUE_MS, &e);
		if (ctl < 0 || send_hello(ctl, &h, c) != 0) {
			/* The client sees its connection closed: as refused
			 * as a connection can be without a daemon to say why. */
			count_verdict(o->counts, SBX_EGRESS_FAILED);
			if (ctl >= 0)
				close(ctl);
			close(c);
			continue;
		}
		close(c);
		n++;
		pf[n].fd = ctl;
		pf[n].events = POLLIN;
		pf[n].revents = 0;
	}
}

static void __attribute__((noreturn)) bridge_main(const struct sbx_egress_bridge_opts *o,
						  int lfd, int ready)
{
	struct ready_msg m = { 0 };
	struct sbx_error e = { 0 };
	int null, pin;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(1);
	/* Only the listener (3), the ready pipe (4) and the daemon's pinned
	 * socket (5); 0-2 on /dev/null, so the bridge holds none of the
	 * session's terminal or channel. */
	lfd = fcntl(lfd, F_DUPFD_CLOEXEC, 10);
	ready = fcntl(ready, F_DUPFD_CLOEXEC, 10);
	pin = fcntl(o->socket_fd, F_DUPFD_CLOEXEC, 10);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (lfd < 0 || ready < 0 || pin < 0 || null < 0 || dup2(null, 0) < 0 ||
	    dup2(null, 1) < 0 || dup2(null, 2) < 0 || dup2(lfd, 3) < 0 || dup2(ready, 4) < 0 ||
	    dup2(pin, 5) < 0 || sbx_fd_close_above(5, &e) != 0)
		_exit(1);
	if (chdir("/") != 0)
		_exit(1);
	sbx_signals_reset();
	if (sbx_caps_drop_all(&e) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		m.code = e.code ? e.code : errno;
		snprintf(m.msg, sizeof(m.msg), "egress bridge: %.900s",
			 e.msg[0] ? e.msg : "no_new_privs");
	} else if (ping_pinned(5, o->socket_path, o->uid, o->list_hash, PING_TIMEOUT_MS,
			       &e) != 0) {
		m.code = e.code ? e.code : EIO;
		sbx_strlcpy(m.msg, sizeof(m.msg), e.msg);
	}
	if (write(4, &m, sizeof(m)) != (ssize_t)sizeof(m) || m.code)
		_exit(0);
	close(4);
	(void)fcntl(3, F_SETFL, O_NONBLOCK);
	bridge_loop(3, o);
}

int sbx_egress_bridge_start(const struct sbx_egress_bridge_opts *o, pid_t *pid_out,
			    struct sbx_error *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(SBX_EGRESS_PROXY_PORT),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct ready_msg m = { 0 };
	int lfd, ready[2], r, one = 1, status;
	pid_t pid;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return sbx_error_set(err, errno, "egress bridge: socket: %s", strerror(errno));
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(lfd, (const struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(lfd, BRIDGE_BACKLOG) != 0) {
		r = errno;
		close(lfd);
		return sbx_error_set(err, r, "egress bridge: listen on 127.0.0.1:%d: %s",
				     SBX_EGRESS_PROXY_PORT, strerror(r));
	}
	if (pipe2(ready, O_CLOEXEC) != 0) {
		r = errno;
		close(lfd);
		return sbx_error_set(err, r, "egress bridge: pipe2: %s", strerror(r));
	}
	pid = fork();
	if (pid < 0) {
		r = errno;
		close(lfd);
		close(ready[0]);
		close(ready[1]);
		return sbx_error_set(err, r, "egress bridge: fork: %s", strerror(r));
	}
	if (pid == 0) {
		close(ready[0]);
		bridge_main(o, lfd, ready[1]);
	}
	/* Only the bridge keeps the listener: with no bridge, nothing does,
	 * and a client inside is refused at once. */
	close(lfd);
	close(ready[1]);
	r = read_exact(ready[0], &m, sizeof(m), PING_TIMEOUT_MS + 1000);
	close(ready[0]);
	if (r == 0 && m.code == 0) {
		*pid_out = pid;
		return 0;
	}
	(void)kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return sbx_error_set(err, -r, "egress bridge: did not start (%s)",
				     r == -ETIMEDOUT ? "timed out" : strerror(-r));
	m.msg[sizeof(m.msg) - 1] = '\0';
	return sbx_error_set(err, m.code, "%s", m.msg);
}

void sbx_egress_report(struct sbx_report *r, const char *socket_path, int rc,
		       const struct sbx_error *err)
{
	if (rc == 0)
		sbx_report_set(r, SBX_F_NETWORK_EGRESS, true, false,
			       "only the listed destinations, enforced outside the sandbox by "
			       "agent-sandbox-egressd (%s); proxy at 127.0.0.1:%d (HTTP CONNECT, "
			       "SOCKS5)", socket_path, SBX_EGRESS_PROXY_PORT);
	else
		sbx_report_set(r, SBX_F_NETWORK_EGRESS, false, false,
			       "no egress: %s; the session reaches only its private loopback",
			       err && err->msg[0] ? err->msg : strerror(-rc));
}
