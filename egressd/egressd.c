/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agent-sandbox-egressd — the outside half of network = proxy
 * (docs/design.md section 13). One daemon, under a uid of its own, on a
 * pathname unix socket: a session's network namespace holds only lo, but
 * a pathname socket is found by its inode whatever the namespace, and the
 * kernel names the peer (SO_PEERCRED). Each connection is one request,
 * SOCKS5 (first byte 0x05) or HTTP CONNECT, decided against the egress
 * list of the profile the config gives the peer's uid (the same
 * sbx_account_profile agent-shell uses), resolved and checked here, then
 * relayed with splice(2).
 *
 * One thread per connection: getaddrinfo blocks, and a thread makes the
 * handshake a straight line; the number is bounded per uid and in total.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAX_UIDS 1024

struct opts {
	const char *config;
	const char *socket;
	const char *user;
	unsigned max_conns;
	unsigned max_per_uid;
	int handshake_ms;
	int half_closed_ms;	/* one side ended: how long the other may stay idle */
	bool log_stderr;
	bool allow_direct;	/* serve clients that send no bridge hello (tests) */
};

static struct opts o = {
	.config = SBX_CONFIG_PATH,
	.max_conns = 512,
	.max_per_uid = 64,
	.handshake_ms = 10000,
	.half_closed_ms = 60000,
};

/* The config, replaced on SIGHUP; connections hold the read lock only
 * while they look their profile up. */
static pthread_rwlock_t cfg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sbx_config *cfg;
static volatile sig_atomic_t reload, stop;

/* Open connections and decisions, per uid. */
struct uid_stat {
	uid_t uid;
	bool used;
	unsigned open;		/* accepted, PINGs included */
	unsigned active;	/* requests being decided or relayed (at most max_per_uid) */
	unsigned long allowed, refused;
	/* Whether the uid is a proxy agent, as of config generation gen
	 * (0 unknown, 1 yes, -1 no): a known "no" is closed in the accept
	 * loop, with no thread and no lookup. */
	int agent;
	unsigned gen;
	int64_t agent_until_ms;	/* and at most this long (group changes need no reload) */
	/* Refusals that name no destination (not an agent, too many
	 * connections, no request) are logged at most once a second per
	 * uid; the next line says how many were not. */
	int64_t quiet_until_ms;
	unsigned long suppressed;
};

static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uid_stat stats[MAX_UIDS];
static unsigned open_total;
static unsigned cfg_gen = 1;	/* raised by every config (re)load */
/* Connections a uid may hold beyond max_per_uid for PING only: a uid whose
 * sessions hold every slot can still start one (docs/design.md 13.5). */
#define PING_RESERVE 4

static struct uid_stat *stat_for(uid_t uid)
{
	struct uid_stat *unused = NULL, *idle = NULL, *slot;

	for (size_t i = 0; i < MAX_UIDS; i++) {
		if (stats[i].used && stats[i].uid == uid)
			return &stats[i];
		if (!stats[i].used && !unused)
			unused = &stats[i];
		/* A slot with nothing open can be reused for a new uid once
		 * no slot is free: the counters are in every log line
		 * already. */
		if (stats[i].used && !stats[i].open && !idle)
			idle = &stats[i];
	}
	slot = unused ? unused : idle;
	if (slot) {
		memset(slot, 0, sizeof(*slot));
		slot->used = true;
		slot->uid = uid;
	}
	return slot;
}

struct conn {
	int fd, up;
	/* A bridged connection (lib/egress_bridge.c): fd is the sandbox's
	 * socket, passed by the bridge, and ctl the bridge's connection,
	 * which gets the verdict byte; -1 otherwise. */
	int ctl;
	char session[40];
	bool stale_list;
	bool active;		/* holds one of its uid's max_per_uid slots */
	struct {
		bool set;
		int socks_code, http_code;
		const char *http_text;
	} pending;		/* a refusal's reply, sent after its verdict */
	struct ucred cred;
	bool socks;
	char user[SBX_NAME_MAX];
	struct sbx_egress_target t;
	uint8_t buf[SBX_EGRESS_TLS_MAX + SBX_EGRESS_HTTP_MAX];
	size_t len;		/* bytes in buf */
	char addr[INET6_ADDRSTRLEN];
	int64_t deadline_ms;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(const struct conn *c)
{
	int64_t l = c->deadline_ms - now_ms();

	return l < 0 ? 0 : (int)l;
}

/* Read more into c->buf, waiting at most ms. 0, or -ETIMEDOUT, -EPIPE (EOF), -E2BIG, -errno. */
static int fill(struct conn *c, int ms)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	int r;

	if (c->len >= sizeof(c->buf))
		return -E2BIG;
	r = poll(&p, 1, ms);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	c->len += (size_t)n;
	return 0;
}

static void consume(struct conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

static int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		/* MSG_DONTWAIT: a passed socket may be blocking, and a client
		 * that does not read must not hold the thread past the poll. */
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pf = { .fd = fd, .events = POLLOUT };

				if (poll(&pf, 1, o.handshake_ms) <= 0)
					return -ETIMEDOUT;
				continue;
			}
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- the decision's log line ---------------------------------------------- */

static void reply_pending(struct conn *c);

/* The bridge's count: one byte, once, then its connection is done. */
static void verdict(struct conn *c, enum sbx_egress_verdict v)
{
	unsigned char b = (unsigned char)v;

	if (c->ctl < 0)
		return;
	(void)send(c->ctl, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(c->ctl);
	c->ctl = -1;
}

static void log_decision(struct conn *c, const char *verdict_word, const char *reason)
{
	struct sbx_logline l;
	struct uid_stat *s;
	unsigned long allowed = 0, refused = 0, suppressed = 0;
	bool ok = strcmp(verdict_word, "allowed") == 0, quiet = false;

	pthread_mutex_lock(&stat_lock);
	s = stat_for(c->cred.uid);
	if (s) {
		if (ok)
			s->allowed++;
		else if (strcmp(verdict_word, "refused") == 0)
			s->refused++;
		allowed = s->allowed;
		refused = s->refused;
		/* Every destination is named in the log; what names none is
		 * bounded, so a flood by one uid cannot flood the log. */
		if (!ok && !c->t.host[0]) {
			int64_t now = now_ms();

			if (now < s->quiet_until_ms) {
				s->suppressed++;
				quiet = true;
			} else {
				s->quiet_until_ms = now + 1000;
				suppressed = s->suppressed;
				s->suppressed = 0;
			}
		}
	}
	pthread_mutex_unlock(&stat_lock);

	verdict(c, ok ? SBX_EGRESS_ALLOWED : strcmp(verdict_word, "refused") == 0 ?
		   SBX_EGRESS_REFUSED : SBX_EGRESS_FAILED);
	reply_pending(c);
	if (quiet)
		return;
	sbx_log_begin(&l, "egress");
	if (c->session[0])
		sbx_log_add(&l, "session", "%s", c->session);
	if (c->user[0])
		sbx_log_add(&l, "user", "%s", c->user);
	sbx_log_add(&l, "uid", "%u", (unsigned)c->cred.uid);
	sbx_log_add(&l, "pid", "%d", (int)c->cred.pid);
	sbx_log_add(&l, "proto", "%s", c->socks ? "socks5" : "connect");
	if (c->t.host[0]) {
		sbx_log_add(&l, "host", "%s", c->t.host);
		sbx_log_add(&l, "port", "%u", (unsigned)c->t.port);
	}
	if (c->addr[0])
		sbx_log_add(&l, "addr", "%s", c->addr);
	sbx_log_add(&l, "verdict", "%s", verdict_word);
	if (reason)
		sbx_log_add(&l, "reason", "%s", reason);
	sbx_log_add(&l, "allowed", "%lu", allowed);
	sbx_log_add(&l, "refused", "%lu", refused);
	if (suppressed)
		sbx_log_add(&l, "suppressed", "%lu", suppressed);
	sbx_log_send(ok ? LOG_INFO : LOG_WARNING, &l);
	if (o.log_stderr)
		fprintf(stderr, "%s\n", l.line);
}

/* ---- replies ------------------------------------------------------------------ */

/* SOCKS5 reply codes (RFC 1928 section 6). */
enum { S_OK = 0, S_FAIL = 1, S_RULESET = 2, S_HOSTUNREACH = 4, S_REFUSED = 5,
       S_TTL = 6, S_CMD = 7, S_ATYP = 8 };

static void reply_now(struct conn *c, int socks_code, int http_code, const char *http_text)
{
	if (c->socks) {
		uint8_t r[10] = { 5, (uint8_t)socks_code, 0, 1 };

		send_all(c->fd, r, sizeof(r));
	} else {
		char b[160];

		snprintf(b, sizeof(b), "HTTP/1.1 %d %s\r\n%s\r\n", http_code, http_text,
			 http_code == 200 ? "" : "Connection: close\r\nContent-Length: 0\r\n");
		send_all(c->fd, b, strlen(b));
	}
}

/* A refusal's reply waits for its decision's log line: the bridge's verdict
 * goes first, so a client that leaves on the reply (and ends its session)
 * is counted. Success is answered at once (its verdict comes before the
 * relay, so before any byte of the destination's). */
static void reply(struct conn *c, int socks_code, int http_code, const char *http_text)
{
	if (socks_code == S_OK && (c->socks || http_code == 200)) {
		reply_now(c, socks_code, http_code, http_text);
		return;
	}
	c->pending.set = true;
	c->pending.socks_code = socks_code;
	c->pending.http_code = http_code;
	c->pending.http_text = http_text;
}

static void reply_pending(struct conn *c)
{
	if (!c->pending.set)
		return;
	c->pending.set = false;
	reply_now(c, c->pending.socks_code, c->pending.http_code, c->pending.http_text);
}

/* ---- the bridge's hello ---------------------------------------------------------- */

static int profile_for_uid(uid_t uid, char *user, size_t user_size, struct sbx_profile *p,
			   const char **why);

/* The first bytes of a connection, and the fds that came with them (a
 * bridge passes the sandbox's socket). *fd_out: the one fd received, -1
 * for none; more than one are all closed and make it -2. */
static int first_read(struct conn *c, int *fd_out)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { c->buf, sizeof(c->buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct pollfd pf = { .fd = c->fd, .events = POLLIN };
	struct cmsghdr *cm;
	ssize_t n;
	int r;

	*fd_out = -1;
	r = poll(&pf, 1, left_ms(c));
	if (r <= 0)
		return r == 0 ? -ETIMEDOUT : -errno;
	n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	for (cm = CMSG_FIRSTHDR(&msg); n >= 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
		size_t k, nfd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (k = 0; k < nfd; k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
			if (*fd_out == -1) {
				*fd_out = fd;
				continue;
			}
			if (*fd_out >= 0)
				close(*fd_out);
			close(fd);
			*fd_out = -2;
		}
	}
	if (n >= 0 && (msg.msg_flags & MSG_CTRUNC)) {
		if (*fd_out >= 0)
			close(*fd_out);
		*fd_out = -2;
	}
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	c->len = (size_t)n;
	return 0;
}

/* A socket the bridge may hand over: a connected TCP stream. */
static bool bridgeable(int fd)
{
	struct stat st;
	int v = 0;
	socklen_t l = sizeof(v);

	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) != 0 || v != SOCK_STREAM)
		return false;
	l = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) == 0 &&
	       (v == AF_INET || v == AF_INET6);
}

static void pong(struct conn *c, bool ok, const char *why)
{
	struct sbx_egress_pong a;

	memset(&a, 0, sizeof(a));
	memcpy(a.magic, SBX_EGRESS_HELLO_MAGIC, sizeof(a.magic));
	a.ok = ok;
	if (why)
		sbx_strlcpy(a.why, sizeof(a.why), why);
	send_all(c->fd, &a, sizeof(a));
}

/* PING: is the uid a proxy agent with this list? A uid asks only about
 * itself; root (agent-shell --explain) about anyone. Not logged: no
 * destination is decided. */
static void answer_ping(struct conn *c, const struct sbx_egress_hello *h)
{
	struct sbx_profile *p = calloc(1, sizeof(*p));
	char user[SBX_NAME_MAX], hash[65];
	const char *why = NULL;

	if (!p)
		return;
	if (c->cred.uid != 0 && h->uid != c->cred.uid)
		pong(c, false, "a uid may ask only about itself");
	else if (profile_for_uid(h->uid, user, sizeof(user), p, &why) < 0)
		pong(c, false, why);
	else if (sbx_egress_list_hash(p, hash), h->list_hash[0] && strcmp(hash, h->list_hash))
		pong(c, false, "its egress list is not the session's (the config changed: "
		     "reload agent-sandbox-egressd, or log in again)");
	else
		pong(c, true, NULL);
	free(p);
}

/* A bridged connection from here on: the client's socket is fd, the
 * bridge's connection ctl. A session whose list is not the config's any
 * more (the config changed since it started) is refused once its request
 * is read, in its own protocol. */
static void take_bridged(struct conn *c, const struct sbx_egress_hello *h, int passed,
			 const struct sbx_profile *p)
{
	char hash[65];

	sbx_strlcpy(c->session, sizeof(c->session), h->session);
	c->ctl = c->fd;
	c->fd = passed;
	c->len = 0;
	sbx_egress_list_hash(p, hash);
	c->stale_list = strcmp(hash, h->list_hash) != 0;
}

/* ---- the request -------------------------------------------------------------- */

static int read_request(struct conn *c, const char **why)
{
	size_t used = 0;
	bool noauth = false;
	int r;

	while (c->len == 0)
		if ((r = fill(c, left_ms(c))) < 0)
			return *why = "no request", r;
	c->socks = c->buf[0] == 5;
	if (c->socks) {
		while ((r = sbx_egress_socks5_greeting_parse(c->buf, c->len, &used, &noauth)) == -EAGAIN)
			if ((r = fill(c, left_ms(c))) < 0)
				return *why = "incomplete socks5 greeting", r;
		if (r < 0)
			return *why = "bad socks5 greeting", r;
		consume(c, used);
		/* Only "no authentication": the uid is the identity. */
		if (send_all(c->fd, (const uint8_t[]){ 5, noauth ? 0 : 0xff }, 2) < 0 || !noauth)
			return *why = "socks5 client offers no method without authentication", -EACCES;
		while ((r = sbx_egress_socks5_request_parse(c->buf, c->len, &used, &c->t)) == -EAGAIN)
			if ((r = fill(c, left_ms(c))) < 0)
				return *why = "incomplete socks5 request", r;
		if (r == -EOPNOTSUPP)
			return reply(c, S_CMD, 0, NULL), *why = "socks5 command other than CONNECT", r;
		if (r == -EAFNOSUPPORT)
			return reply(c, S_ATYP, 0, NULL), *why = "socks5 address type unknown", r;
		if (r < 0)
			return reply(c, S_FAIL, 0, NULL), *why = "bad socks5 request", r;
		consume(c, used);
		return 0;
	}
	while ((r = sbx_egress_http_connect_parse((const char *)c->buf, c->len, &used, &c->t)) == -EAGAIN)
		if ((r = fill(c, left_ms(c))) < 0)
			return *why = "incomplete http request", r;
	if (r == -EOPNOTSUPP)
		return reply(c, 0, 405, "Method Not Allowed"), *why = "http method other than CONNECT", r;
	if (r == -E2BIG)
		return reply(c, 0, 431, "Request Header Fields Too Large"), *why = "http header block too large", r;
	if (r < 0)
		return reply(c, 0, 400, "Bad Request"), *why = "bad http request", r;
	consume(c, used);
	return 0;
}

/* ---- the policy ---------------------------------------------------------------- */

/* A uid's effective profile: the [match] rules and the ceiling, as
 * agent-shell computes them; user gets its name. */
static int profile_for_uid(uid_t uid, char *user, size_t user_size, struct sbx_profile *p,
			   const char **why)
{
	struct sbx_account a;
	struct sbx_error err = { 0 };
	int r;

	r = sbx_account_by_uid(uid, &a, &err);
	if (r < 0)
		return *why = "no passwd entry for the uid", r;
	sbx_strlcpy(user, user_size, a.user);
	pthread_rwlock_rdlock(&cfg_lock);
	r = sbx_account_profile(cfg, &a, p, &err);
	pthread_rwlock_unlock(&cfg_lock);
	sbx_account_free(&a);
	if (r < 0)
		return *why = r == -ENOENT ? "not an agent account" : "no usable profile", r;
	if (p->network != SBX_NETWORK_PROXY)
		return *why = p->network == SBX_ACCESS_ALLOW ? "profile network is allow, not proxy" :
			      "profile network is deny", -EACCES;
	return 0;
}

static int peer_profile(struct conn *c, struct sbx_profile *p, const char **why)
{
	return profile_for_uid(c->cred.uid, c->user, sizeof(c->user), p, why);
}

static bool listed(const struct sbx_profile *p, const struct sbx_egress_target *t)
{
	for (size_t i = 0; i < p->n_egress; i++)
		if (sbx_egress_entry_matches(&p->egress[i], t))
			return true;
	return false;
}

/* The address bytes of an AF_INET or AF_INET6 socket address. */
static const void *sockaddr_raw(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET ?
		(const void *)&((const struct sockaddr_in *)sa)->sin_addr :
		(const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
}

/* An entry names this very address (as inet_ntop writes it) and port. */
static bool listed_literal(const struct sbx_profile *p, const char *text, uint16_t port)
{
	struct sbx_egress_target lit = { .port = port, .literal = true };

	return sbx_strlcpy(lit.host, sizeof(lit.host), text) == 0 && listed(p, &lit);
}

/*
 * May a name reach this resolved address? An address outside the public
 * classes, or one of this host's own whatever its class (docs/design.md
 * 13.3: a service bound to 0.0.0.0 answers on the host's public address
 * as on 127.0.0.1), is reached only through an entry naming that very
 * address and port. 0 yes; -EACCES no, with the reason; another -errno
 * when whether it is this host's cannot be told (then nothing connects).
 * text gets the address.
 */
static int addr_ok(const struct sbx_profile *p, const struct sockaddr *sa, uint16_t port,
		   char *text, size_t size, char *reason, size_t rsize)
{
	const void *raw = sockaddr_raw(sa);
	enum sbx_egress_addr_class cls;
	struct sbx_error err = { 0 };
	bool here = false;
	int r;

	/* Refused as reserved when it cannot even be printed. */
	if (!inet_ntop(sa->sa_family, raw, text, (socklen_t)size)) {
		sbx_strlcpy(text, size, "?");
		snprintf(reason, rsize, "resolves to %s address",
			 sbx_egress_addr_class_name(SBX_EGRESS_ADDR_RESERVED));
		return -EACCES;
	}
	cls = sbx_egress_addr_classify(sa->sa_family, raw);
	if (cls != SBX_EGRESS_ADDR_PUBLIC) {
		if (listed_literal(p, text, port))
			return 0;
		snprintf(reason, rsize, "resolves to %s address", sbx_egress_addr_class_name(cls));
		return -EACCES;
	}
	if ((r = sbx_egress_addr_local(sa->sa_family, raw, &here, &err)) < 0) {
		snprintf(reason, rsize, "cannot tell whether %s is this host's: %.200s", text, err.msg);
		return r == -EACCES ? -EIO : r;
	}
	if (here && !listed_literal(p, text, port)) {
		snprintf(reason, rsize, "resolves to an address of this host");
		return -EACCES;
	}
	return 0;
}

/*
 * The connected socket's far end is this host. The route was asked before
 * the connect; an address added in between would be reached all the same.
 * The socket's own address equal to its peer's is the kernel's choice for
 * a local route (the destination is its own preferred source), a fact of
 * the connection that no later change undoes; the route asked again
 * covers a local route with another preferred source. 0 with *here, or
 * -errno with the reason.
 */
static int connected_here(int fd, bool *here, char *reason, size_t rsize)
{
	struct sockaddr_storage me = { 0 }, peer = { 0 };
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	struct sbx_error err = { 0 };
	size_t alen;
	int r;

	if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) != 0) {
		r = -errno;
		snprintf(reason, rsize, "connected socket: %s", strerror(-r));
		return r;
	}
	alen = peer.ss_family == AF_INET ? 4 : 16;
	if (me.ss_family == peer.ss_family &&
	    memcmp(sockaddr_raw((struct sockaddr *)&me), sockaddr_raw((struct sockaddr *)&peer),
		   alen) == 0) {
		*here = true;
		return 0;
	}
	if ((r = sbx_egress_addr_local(peer.ss_family, sockaddr_raw((struct sockaddr *)&peer),
				       here, &err)) < 0) {
		snprintf(reason, rsize, "cannot tell whether the peer is this host: %.200s", err.msg);
		return r == -EACCES ? -EIO : r;
	}
	return 0;
}

static int connect_to(const struct sockaddr *sa, socklen_t len, int ms)
{
	struct pollfd pf;
	int fd, e = 0;
	socklen_t el = sizeof(e);

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
		e = errno;
		close(fd);
		return -e;
	}
	pf.fd = fd;
	pf.events = POLLOUT;
	if (poll(&pf, 1, ms) <= 0) {
		close(fd);
		return -ETIMEDOUT;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
		close(fd);
		return -(e ? e : EIO);
	}
	return fd;
}

/* Resolve (names only), check every address, connect to a checked one:
 * no second lookup, so a rebinding DNS answer cannot change the address
 * between the check and the connect. A name's connection is checked once
 * more when made: it must not have reached this host. */
static int resolve_and_connect(struct conn *c, const struct sbx_profile *p, const char **why,
			       char *reason, size_t rsize)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL, *ai;
	char port[8], text[INET6_ADDRSTRLEN];
	int r, fd = -ENOENT;

	snprintf(port, sizeof(port), "%u", (unsigned)c->t.port);
	if (c->t.literal)
		hints.ai_flags |= AI_NUMERICHOST;
	r = getaddrinfo(c->t.host, port, &hints, &res);
	if (r != 0) {
		*why = "name does not resolve";
		return -EHOSTUNREACH;
	}
	/* Every address first: one internal address among public ones is
	 * refused as a whole (a rebinding answer mixes them). A literal
	 * target is its entry's own address. */
	for (ai = res; ai && !c->t.literal; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if ((r = addr_ok(p, ai->ai_addr, c->t.port, text, sizeof(text), reason,
				 rsize)) < 0) {
			sbx_strlcpy(c->addr, sizeof(c->addr), text);
			*why = reason;
			freeaddrinfo(res);
			return r;
		}
	}
	*why = "upstream connect failed";
	for (ai = res; ai; ai = ai->ai_next) {
		bool here = false;

		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if (!inet_ntop(ai->ai_family, sockaddr_raw(ai->ai_addr), c->addr, sizeof(c->addr)))
			sbx_strlcpy(c->addr, sizeof(c->addr), "?");
		fd = connect_to(ai->ai_addr, ai->ai_addrlen, left_ms(c));
		if (fd < 0)
			continue;
		if (c->t.literal || listed_literal(p, c->addr, c->t.port))
			break;
		if ((r = connected_here(fd, &here, reason, rsize)) < 0 || here) {
			close(fd);
			fd = r < 0 ? r : -EACCES;
			if (here)
				snprintf(reason, rsize, "connected to an address of this host");
			*why = reason;
		}
		break;
	}
	freeaddrinfo(res);
	return fd;
}

/* ---- the TLS server name ---------------------------------------------------------- */

/* access_denied (RFC 8446 6.2): the client's TLS library names it ("tlsv1
 * alert access denied"), so a refusal after the success reply reads as a
 * refusal, not as a network failure. Sent in the clear, as every alert
 * before the ServerHello is. */
#define TLS_ALERT_ACCESS_DENIED 49

static void tls_alert(struct conn *c, uint8_t description)
{
	const uint8_t alert[7] = { 0x15, 3, 3, 0, 2, 2, description };

	(void)send_all(c->fd, alert, sizeof(alert));
}

/* Until the client's first bytes come: what the server sends meanwhile
 * goes to the client (a protocol whose server speaks first: SMTP, FTP,
 * MySQL), nothing goes the other way. Bounded by the handshake deadline.
 * 0 once c->buf holds a byte, -ETIMEDOUT, -EPIPE (the client ended) or
 * -errno. */
static int wait_first_bytes(struct conn *c)
{
	uint8_t b[4096];
	bool up_open = true;
	int r;

	while (c->len == 0) {
		struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN },
				       { .fd = up_open ? c->up : -1, .events = POLLIN } };
		ssize_t n;

		r = poll(p, 2, left_ms(c));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		if (p[0].revents) {
			if ((r = fill(c, 0)) < 0 && r != -ETIMEDOUT)
				return r;
			continue;
		}
		n = recv(c->up, b, sizeof(b), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			/* The server is done before the client said a word:
			 * the client learns it, and its first bytes are still
			 * judged before any goes upstream. */
			(void)shutdown(c->fd, SHUT_WR);
			up_open = false;
			continue;
		}
		if ((r = send_all(c->fd, b, (size_t)n)) < 0)
			return r;
	}
	return 0;
}

/*
 * After the success reply, the client's first bytes are judged before any
 * of them goes upstream, whenever they come, on every port (docs/design.md
 * 13.4): a TLS handshake must be a ClientHello whose server name is the
 * requested host (none: allowed) and that hides none (ECH); on 443 the
 * client must speak TLS. Another protocol is relayed unchecked on other
 * ports. Not a wait of some milliseconds and then a relay: a client that
 * waited that long sent its ClientHello past the check.
 */
static int check_first_bytes(struct conn *c, const char **why, char *reason, size_t rsize)
{
	char sni[SBX_EGRESS_HOST_MAX];
	bool tls_port = c->t.port == 443;
	int r;

	if ((r = wait_first_bytes(c)) < 0)
		return *why = r == -ETIMEDOUT ? "no client data within the handshake timeout" :
			      "no client data after the reply", r;
	if (!tls_port && c->buf[0] != 0x16)
		return 0;
	while ((r = sbx_egress_tls_sni(c->buf, c->len, sni, sizeof(sni))) == -EAGAIN)
		if ((r = fill(c, left_ms(c))) < 0)
			return *why = "incomplete TLS ClientHello", r;
	if (r == -ENOENT)
		return 0;
	if (r == -EOPNOTSUPP) {
		/* The server_name beside it is the front end's public name;
		 * the host the front end serves is in the encrypted inner
		 * hello, which the daemon cannot read: domain fronting past
		 * the list. */
		tls_alert(c, TLS_ALERT_ACCESS_DENIED);
		return *why = "TLS ClientHello carries Encrypted Client Hello or ESNI "
			      "(its real server name is hidden)", -EACCES;
	}
	if (r < 0)
		return *why = tls_port ? "not TLS on port 443" : "malformed TLS ClientHello", r;
	if (c->t.literal || strcmp(sni, c->t.host) != 0) {
		tls_alert(c, TLS_ALERT_ACCESS_DENIED);
		snprintf(reason, rsize, "TLS server name %s is not the requested host", sni);
		*why = reason;
		return -EACCES;
	}
	return 0;
}

/* ---- the relay ------------------------------------------------------------------------ */

/*
 * Each direction is splice(2) from its source socket into a pipe and from
 * the pipe into the other socket: the bytes stay in the kernel's pages.
 * pump() moves what it can until a splice would block, then relay()
 * polls for what it waits on. A direction whose pipe the source cannot
 * fill further (splice in would block with bytes still in the pipe: the
 * pipe's slots are full, or the source is empty) asks only for POLLOUT
 * until some of it is written, so a slow destination never turns poll()
 * into a busy loop.
 *
 * A pipe starts at the kernel's default (16 pages: 64 KiB) and one splice
 * moves at most what it holds. A direction that fills it in one splice
 * is a bulk transfer: its pipe grows to PIPE_GROWN (1 MiB, the default
 * /proc/sys/fs/pipe-max-size). Measured with make bench (1 GiB through
 * the daemon from a session, 2 vCPUs): per GiB the daemon makes 6.6k
 * syscalls instead of 36k and uses 0.13 s of CPU instead of 0.21 s, and
 * throughput rose from 57% of direct loopback TCP to 59% (upload) and
 * 66% (download), about what a bare splice relay gets on that machine;
 * 256 KiB gave about a quarter of the gain. The kernel counts pipe pages per user (pipe-user-pages-soft, 16384 by
 * default): past that limit a new pipe gets 2 pages and none may grow.
 * All connections share the daemon's uid, and 512 connections' default
 * pipes are the whole default limit, so pipes grow only while all
 * relays' pipes together stay within half of it (about 30 grown
 * directions at the defaults); a direction refused stays as it is and
 * asks again at its next full pipe.
 */
#define PIPE_GROWN (1u << 20)

static struct {
	pthread_once_t once;
	size_t page;		/* the kernel's pipe slot: a page */
	size_t grown;		/* PIPE_GROWN, or less when pipe-max-size is */
	size_t budget;		/* pages all relays' pipes may hold with grown ones */
	size_t pages;		/* pages all relays' pipes hold now */
} pipes = { .once = PTHREAD_ONCE_INIT };

static uint64_t proc_sys_number(const char *path, uint64_t def)
{
	char b[32];
	uint64_t v;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return def;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return def;
	b[n] = '\0';
	b[strcspn(b, "\n")] = '\0';
	return sbx_parse_u64(b, false, 0, UINT64_MAX, &v) < 0 ? def : v;
}

static void pipes_init(void)
{
	uint64_t soft = proc_sys_number("/proc/sys/fs/pipe-user-pages-soft", 16384);
	uint64_t hard = proc_sys_number("/proc/sys/fs/pipe-user-pages-hard", 0);
	uint64_t max = proc_sys_number("/proc/sys/fs/pipe-max-size", PIPE_GROWN);
	long page = sysconf(_SC_PAGESIZE);

	pipes.page = page > 0 ? (size_t)page : 4096;
	pipes.grown = max < PIPE_GROWN ? (size_t)max : PIPE_GROWN;
	/* 0 is "no limit" for both. */
	if (hard && (!soft || hard < soft))
		soft = hard;
	pipes.budget = soft ? (size_t)(soft / 2) : SIZE_MAX;
}

/* Count size bytes of pipe in (sign 1) or out (-1) of pipes.pages. */
static void pipes_count(size_t size, int sign)
{
	size_t n = size / pipes.page;

	if (sign > 0)
		__atomic_add_fetch(&pipes.pages, n, __ATOMIC_RELAXED);
	else
		__atomic_sub_fetch(&pipes.pages, n, __ATOMIC_RELAXED);
}

struct dir {
	int from, to;
	int pipe[2];
	size_t in_pipe;		/* bytes in the pipe */
	size_t cap;		/* the pipe's size in bytes */
	bool stalled;		/* splice in would block with bytes in the pipe */
	bool no_grow;		/* the kernel refused to grow the pipe */
	bool eof, done;
};

/* A bulk direction's pipe to pipes.grown, if the budget has room. */
static void grow(struct dir *d)
{
	size_t extra;
	int r;

	if (d->no_grow || d->cap >= pipes.grown)
		return;
	extra = pipes.grown - d->cap;
	if (__atomic_add_fetch(&pipes.pages, extra / pipes.page, __ATOMIC_RELAXED) >
	    pipes.budget) {
		pipes_count(extra, -1);
		return;
	}
	r = fcntl(d->pipe[1], F_SETPIPE_SZ, (int)pipes.grown);
	if (r < 0) {
		pipes_count(extra, -1);
		d->no_grow = true;
		return;
	}
	/* The kernel rounds up to a power of two pages. */
	pipes_count(pipes.grown, -1);
	pipes_count((size_t)r, 1);
	d->cap = (size_t)r;
}

/* Bytes one pump() call moves before relay() polls again, so a busy
 * direction does not starve the other. */
#define PUMP_BUDGET (4u << 20)

static bool wants_input(const struct dir *d)
{
	return !d->eof && !d->stalled && d->in_pipe < d->cap;
}

/* readable: the source had POLLIN, POLLHUP or POLLERR. 0, or -errno. */
static int pump(struct dir *d, bool readable)
{
	size_t moved = 0;
	ssize_t n;

	while (moved < PUMP_BUDGET) {
		bool progress = false;

		if (readable && wants_input(d)) {
			n = splice(d->from, NULL, d->pipe[1], NULL, d->cap - d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n == 0) {
				d->eof = true;
			} else if (n > 0) {
				/* A full pipe in one splice: more is waiting. */
				if ((size_t)n == d->cap - d->in_pipe)
					grow(d);
				d->in_pipe += (size_t)n;
				progress = true;
			} else if (errno == EAGAIN) {
				d->stalled = d->in_pipe > 0;
				readable = false;
			} else {
				return -errno;
			}
		}
		if (d->in_pipe) {
			n = splice(d->pipe[0], NULL, d->to, NULL, d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0 && errno != EAGAIN)
				return -errno;
			if (n > 0) {
				d->in_pipe -= (size_t)n;
				moved += (size_t)n;
				d->stalled = false;
				/* Room again: what arrived meanwhile is read
				 * without another poll. */
				readable = true;
				progress = true;
			}
		}
		if (!progress)
			break;
	}
	if (d->eof && !d->in_pipe && !d->done) {
		shutdown(d->to, SHUT_WR);
		d->done = true;
	}
	return 0;
}

/* The relay's pipes, made before the connection is counted allowed: a
 * daemon out of file descriptors says "failed", not "allowed". */
static int relay_prepare(struct dir d[2], int a, int b)
{
	int sz;

	pthread_once(&pipes.once, pipes_init);
	d[0] = (struct dir){ .from = a, .to = b, .pipe = { -1, -1 } };
	d[1] = (struct dir){ .from = b, .to = a, .pipe = { -1, -1 } };
	for (int i = 0; i < 2; i++) {
		if (pipe2(d[i].pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
		sz = fcntl(d[i].pipe[1], F_GETPIPE_SZ);
		if (sz <= 0)
			return sz < 0 ? -errno : -EIO;
		d[i].cap = (size_t)sz;
		pipes_count(d[i].cap, 1);
	}
	return 0;
}

static void relay_close(struct dir d[2])
{
	for (int i = 0; i < 2; i++) {
		/* cap is 0 until relay_prepare counted the pipe (and set
		 * pipes.page). */
		if (d[i].cap)
			pipes_count(d[i].cap, -1);
		d[i].cap = 0;
		if (d[i].pipe[0] >= 0)
			close(d[i].pipe[0]);
		if (d[i].pipe[1] >= 0)
			close(d[i].pipe[1]);
		d[i].pipe[0] = d[i].pipe[1] = -1;
	}
}

static void relay(struct dir d[2], int a, int b)
{
	int i;

	fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
	fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
	while (!(d[0].done && d[1].done)) {
		struct pollfd p[2] = { { .fd = a }, { .fd = b } };
		/* Once one side has ended, the other may finish sending, but
		 * not hold the connection (and a slot of the uid) for ever: a
		 * server that never closes after its client did would keep a
		 * slot past its session's end. */
		int idle_ms = d[0].done != d[1].done ? o.half_closed_ms : -1, r;

		for (i = 0; i < 2; i++) {
			if (wants_input(&d[i]))
				p[i].events |= POLLIN;
			if (d[i].in_pipe)
				p[1 - i].events |= POLLOUT;
		}
		/* poll() reports POLLHUP and POLLERR whatever was asked: a
		 * socket nothing waits on now (its direction is done, or
		 * stalled behind a full destination) leaves the set, or a
		 * source that hung up while its pipe waits would spin. */
		for (i = 0; i < 2; i++)
			if (!p[i].events)
				p[i].fd = -1;
		r = poll(p, 2, idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;	/* an error, or half-closed and idle too long */
		if ((p[0].revents | p[1].revents) & POLLNVAL)
			break;
		if (pump(&d[0], p[0].revents & (POLLIN | POLLHUP | POLLERR)) < 0 ||
		    pump(&d[1], p[1].revents & (POLLIN | POLLHUP | POLLERR)) < 0)
			break;
		/* An error or hang-up with nothing left to move ends it. */
		if (((p[0].revents | p[1].revents) & POLLERR) && !d[0].in_pipe && !d[1].in_pipe)
			break;
	}
}

/* ---- one connection ------------------------------------------------------------------- */

static void remember_agent(uid_t uid, int agent)
{
	struct uid_stat *s;

	if (!agent)
		return;
	pthread_mutex_lock(&stat_lock);
	s = stat_for(uid);
	if (s) {
		s->agent = agent;
		s->gen = cfg_gen;
		s->agent_until_ms = now_ms() + 30000;
	}
	pthread_mutex_unlock(&stat_lock);
}

static bool take_active_slot(struct conn *c)
{
	struct uid_stat *s;

	pthread_mutex_lock(&stat_lock);
	s = stat_for(c->cred.uid);
	c->active = s && s->active < o.max_per_uid;
	if (c->active)
		s->active++;
	pthread_mutex_unlock(&stat_lock);
	return c->active;
}

static void serve(struct conn *c)
{
	struct sbx_profile *p;
	struct sbx_egress_hello h;
	struct dir d[2] = { { .pipe = { -1, -1 } }, { .pipe = { -1, -1 } } };
	char reason[SBX_EGRESS_HOST_MAX + 64];
	const char *why = NULL;
	int r, passed = -1, pr;

	c->deadline_ms = now_ms() + o.handshake_ms;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	/* Whose connection first: only a proxy agent (and root, to ask)
	 * gets a byte read, so nobody else holds a thread for long; a "no"
	 * is remembered until the config changes. */
	pr = peer_profile(c, p, &why);
	remember_agent(c->cred.uid, pr == 0 ? 1 : pr == -ENOENT || pr == -EACCES ? -1 : 0);
	if (pr < 0 && c->cred.uid != 0) {
		log_decision(c, "refused", why);
		goto out;
	}
	r = first_read(c, &passed);
	if (r == 0 && c->buf[0] == SBX_EGRESS_HELLO_MAGIC[0]) {
		while ((r = sbx_egress_hello_parse(c->buf, c->len, &h)) == -EAGAIN)
			if ((r = fill(c, left_ms(c))) < 0)
				break;
		if (r == 0 && h.kind == SBX_EGRESS_HELLO_PING && passed == -1) {
			answer_ping(c, &h);
			goto out;
		}
		if (r < 0 || h.kind != SBX_EGRESS_HELLO_CONNECT || passed < 0 || pr < 0 ||
		    !bridgeable(passed)) {
			log_decision(c, "refused", "bad bridge hello");
			goto out;
		}
		take_bridged(c, &h, passed, p);
		passed = -1;
		r = 0;
	} else if (pr < 0) {
		/* Root speaks only PING. */
		log_decision(c, "refused", why);
		goto out;
	} else if (!o.allow_direct) {
		/* A client speaking SOCKS5 or CONNECT on the socket itself has
		 * no session: no list hash to hold it to, no report to count
		 * it. Only a bridge's connection is served (tests may allow
		 * direct clients). */
		if (r == -EPIPE)
			goto out;
		log_decision(c, "refused", "no bridge hello (direct clients are not served)");
		goto out;
	}

	if (passed >= 0)
		close(passed);
	passed = -1;
	/* A direct client that closed without a byte: nothing asked. */
	if (r == -EPIPE && c->ctl < 0)
		goto out;
	if ((r = read_request(c, &why)) < 0) {
		/* Connected and closed without a byte: a probe (the session's
		 * canary), not a request; nothing to decide or count. */
		if (r == -EPIPE && c->len == 0) {
			verdict(c, SBX_EGRESS_NO_REQUEST);
			goto out;
		}
		log_decision(c, "refused", why);
		goto out;
	}
	/* A request to decide: within the uid's max_per_uid (PINGs used the
	 * accept loop's reserve). */
	if (!take_active_slot(c)) {
		reply(c, S_RULESET, 403, "Forbidden");
		log_decision(c, "refused", "too many connections");
		goto out;
	}
	if (c->stale_list) {
		reply(c, S_RULESET, 403, "Forbidden");
		log_decision(c, "refused", "the session's egress list is not the config's "
			     "(changed since the session started)");
		goto out;
	}
	if (!listed(p, &c->t)) {
		reply(c, S_RULESET, 403, "Forbidden");
		log_decision(c, "refused", c->t.literal ? "address not listed" : "host:port not listed");
		goto out;
	}
	c->up = resolve_and_connect(c, p, &why, reason, sizeof(reason));
	if (c->up < 0) {
		if (c->up == -EACCES) {
			reply(c, S_RULESET, 403, "Forbidden");
			log_decision(c, "refused", why);
		} else {
			reply(c, c->up == -ECONNREFUSED ? S_REFUSED : S_HOSTUNREACH, 502, "Bad Gateway");
			log_decision(c, "failed", why);
		}
		goto out;
	}
	reply(c, S_OK, 200, "Connection established");
	if ((r = check_first_bytes(c, &why, reason, sizeof(reason))) < 0) {
		/* A client that ended without a word had the tunnel: the
		 * destination was allowed, and what its server said first (a
		 * banner) reached it; nothing went upstream. */
		if (r == -EPIPE)
			log_decision(c, "allowed", "the client ended before it sent a byte");
		else
			log_decision(c, "refused", why);
		goto out;
	}
	/* What the client sent with or after its request goes first. */
	if (c->len && send_all(c->up, c->buf, c->len) < 0) {
		log_decision(c, "failed", "upstream write failed");
		goto out;
	}
	if ((r = relay_prepare(d, c->fd, c->up)) < 0) {
		snprintf(reason, sizeof(reason), "relay pipes: %s", strerror(-r));
		log_decision(c, "failed", reason);
		goto out;
	}
	log_decision(c, "allowed", NULL);
	free(p);
	p = NULL;
	relay(d, c->fd, c->up);
out:
	relay_close(d);
	if (passed >= 0)
		close(passed);
	free(p);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	struct uid_stat *s;

	c->up = -1;
	c->ctl = -1;
	serve(c);
	if (c->active) {
		pthread_mutex_lock(&stat_lock);
		s = stat_for(c->cred.uid);
		if (s && s->active)
			s->active--;
		pthread_mutex_unlock(&stat_lock);
	}
	verdict(c, SBX_EGRESS_FAILED);
	close(c->fd);
	if (c->up >= 0)
		close(c->up);
	pthread_mutex_lock(&stat_lock);
	s = stat_for(c->cred.uid);
	if (s && s->open)
		s->open--;
	open_total--;
	pthread_mutex_unlock(&stat_lock);
	free(c);
	return NULL;
}

/* ---- start-up -------------------------------------------------------------------------- */

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload = 1;
	else
		stop = 1;
}

static int load_config(void)
{
	struct sbx_config *n = NULL;
	struct sbx_error err = { 0 };

	if (sbx_config_load(o.config, 0, &n, &err) < 0) {
		fprintf(stderr, "agent-sandbox-egressd: %s\n", err.msg);
		return -1;
	}
	pthread_rwlock_wrlock(&cfg_lock);
	sbx_config_free(cfg);
	cfg = n;
	pthread_rwlock_unlock(&cfg_lock);
	pthread_mutex_lock(&stat_lock);
	cfg_gen++;
	pthread_mutex_unlock(&stat_lock);
	return 0;
}

static int listen_on(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (sbx_strlcpy(sun.sun_path, sizeof(sun.sun_path), path) < 0) {
		fprintf(stderr, "agent-sandbox-egressd: socket path %s: too long\n", path);
		return -1;
	}
	/* A stale socket of an earlier run is replaced; anything else is not. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			fprintf(stderr, "agent-sandbox-egressd: %s exists and is not a socket\n", path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, 0666) < 0 || listen(fd, 128) < 0) {
		fprintf(stderr, "agent-sandbox-egressd: listen on %s: %s\n", path, strerror(errno));
		return -1;
	}
	return fd;
}

/* A relayed connection holds about six fds (the client, the destination,
 * two pipes of two ends): the soft limit goes to the hard one, and
 * max_conns comes down to what that allows, said once at start, so a
 * tunnel is never counted allowed and then starved of a pipe. */
#define FDS_PER_CONN 6
#define FDS_SPARE 64

static int nofile_fit(void)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)o.max_conns * FDS_PER_CONN + FDS_SPARE;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_cur < FDS_SPARE + FDS_PER_CONN) {
		fprintf(stderr, "agent-sandbox-egressd: RLIMIT_NOFILE %llu is too low to serve "
			"anyone\n", (unsigned long long)rl.rlim_cur);
		return -1;
	}
	o.max_conns = (unsigned)((rl.rlim_cur - FDS_SPARE) / FDS_PER_CONN);
	if (o.max_per_uid > o.max_conns)
		o.max_per_uid = o.max_conns;
	fprintf(stderr, "agent-sandbox-egressd: RLIMIT_NOFILE %llu: at most %u connections "
		"(%u per uid)\n", (unsigned long long)rl.rlim_cur, o.max_conns, o.max_per_uid);
	return 0;
}

/* systemd's socket activation (sd_listen_fds(3)): one listening socket at
 * fd 3 when LISTEN_PID names this process. -1: not activated; -2: the
 * environment names sockets but not one this daemon can use. */
static int activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	uint64_t v;
	int acc = 0;
	socklen_t l = sizeof(acc);

	if (!pid || !n || sbx_parse_u64(pid, false, 1, UINT32_MAX, &v) < 0 ||
	    v != (uint64_t)getpid())
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (strcmp(n, "1") != 0 || getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l) != 0 ||
	    !acc) {
		fprintf(stderr, "agent-sandbox-egressd: socket activation: expected one "
			"listening socket at fd 3 (LISTEN_FDS=%s)\n", n);
		return -2;
	}
	(void)fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

/* Root only binds; the daemon runs as its own user, so a bug in a parser
 * reached by an agent gives the agent nothing root has. */
static int drop_to(const char *user)
{
	struct sbx_account acc;
	struct sbx_error err = { 0 };
	int r = -1;

	if (sbx_account_by_name(user, &acc, &err) != 0) {
		fprintf(stderr, "agent-sandbox-egressd: user %s: %s\n", user,
			err.msg[0] ? err.msg : "no such user");
		return -1;
	}
	if (acc.uid == 0 || setgroups(0, NULL) < 0 || setresgid(acc.gid, acc.gid, acc.gid) < 0 ||
	    setresuid(acc.uid, acc.uid, acc.uid) < 0 || setuid(0) == 0)
		fprintf(stderr, "agent-sandbox-egressd: cannot become %s\n", user);
	else
		r = 0;
	sbx_account_free(&acc);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: agent-sandbox-egressd [--config PATH] [--socket PATH] [--user NAME]\n"
		   "                             [--max-conns N] [--max-per-uid N]\n"
		   "                             [--handshake-timeout MS] [--half-closed-timeout MS]\n"
		   "                             [--log-stderr]\n"
		   "                             [--allow-direct]\n");
}

static unsigned num(const char *s, uint64_t max)
{
	uint64_t v;

	if (sbx_parse_u64(s, false, 1, max, &v) < 0) {
		usage(stderr);
		exit(2);
	}
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "user", required_argument, NULL, 'u' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "max-per-uid", required_argument, NULL, 'p' },
		{ "handshake-timeout", required_argument, NULL, 't' },
		{ "half-closed-timeout", required_argument, NULL, 'H' },
		{ "log-stderr", no_argument, NULL, 'l' },
		{ "allow-direct", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_attr_t attr;
	char sock[SBX_PATH_MAX];
	bool activated;
	int c, lfd;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o.config = optarg; break;
		case 's': o.socket = optarg; break;
		case 'u': o.user = optarg; break;
		case 'm': o.max_conns = num(optarg, 1u << 16); break;
		case 'p': o.max_per_uid = num(optarg, 1u << 16); break;
		case 't': o.handshake_ms = (int)num(optarg, 600000); break;
		case 'H': o.half_closed_ms = (int)num(optarg, 86400000); break;
		case 'l': o.log_stderr = true; break;
		case 'd': o.allow_direct = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	/* fds 0-2 open on something, so that no socket or pipe of a
	 * connection is ever fd 0 (a stray close or write to it). */
	for (;;) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (fd > 2)
			close(fd);
		if (fd < 0 || fd > 2)
			break;
		(void)fcntl(fd, F_SETFD, 0);
	}
	if (nofile_fit() < 0)
		return 1;
	if (load_config() < 0)
		return 1;
	if (sbx_strlcpy(sock, sizeof(sock), o.socket ? o.socket : cfg->egress_socket) < 0)
		return 1;
	lfd = activated_socket();
	if (lfd == -2)
		return 1;
	activated = lfd >= 0;
	if (!activated)
		lfd = listen_on(sock);
	if (lfd < 0 || (o.user && drop_to(o.user) < 0))
		return 1;
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	fprintf(stderr, "agent-sandbox-egressd: listening on %s%s as uid %u\n", sock,
		activated ? " (socket activation)" : "", (unsigned)getuid());

	while (!stop) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		struct conn *cn;
		struct uid_stat *s;
		pthread_t th;
		bool over, not_agent;
		int fd;

		if (reload) {
			reload = 0;
			load_config();	/* a bad new config keeps the old one */
		}
		if (poll(&p, 1, 1000) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
			close(fd);
			continue;
		}
		pthread_mutex_lock(&stat_lock);
		s = stat_for(cr.uid);
		not_agent = s && cr.uid != 0 && s->agent < 0 && s->gen == cfg_gen &&
			    now_ms() < s->agent_until_ms;
		over = !s || not_agent || open_total >= o.max_conns ||
		       s->open >= o.max_per_uid + PING_RESERVE;
		if (!over) {
			s->open++;
			open_total++;
		}
		pthread_mutex_unlock(&stat_lock);
		if (not_agent) {
			struct conn tmp = { .fd = fd, .up = -1, .ctl = -1, .cred = cr };

			log_decision(&tmp, "refused", "not a proxy agent");
			close(fd);
			continue;
		}
		cn = over ? NULL : calloc(1, sizeof(*cn));
		if (!cn) {
			struct conn tmp = { .fd = fd, .up = -1, .ctl = -1, .cred = cr };

			log_decision(&tmp, "refused", "too many connections");
			close(fd);
			if (!over) {
				pthread_mutex_lock(&stat_lock);
				s->open--;
				open_total--;
				pthread_mutex_unlock(&stat_lock);
			}
			continue;
		}
		cn->fd = fd;
		cn->cred = cr;
		if (pthread_create(&th, &attr, conn_thread, cn) != 0) {
			cn->up = -1;
			close(fd);
			pthread_mutex_lock(&stat_lock);
			s->open--;
			open_total--;
			pthread_mutex_unlock(&stat_lock);
			free(cn);
		}
	}
	close(lfd);
	/* An activated socket is systemd's, and stays for the next start. */
	if (!activated)
		unlink(sock);
	return 0;
}
