/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unixsock.c — connect() to pathname unix sockets, decided outside the
 * sandbox.
 *
 * A pathname unix socket is found by its inode, whatever network
 * namespace the caller is in, and neither Landlock below ABI 9 nor a
 * read-only mount stops connect() to one (a socket file needs no write
 * access to the mount). So a host daemon's socket bound outside /run and
 * /tmp with mode 0666 was reachable from a session with network = deny.
 *
 * The sandbox's seccomp filter sends every connect() to this supervisor
 * (SCMP_ACT_NOTIFY), outside the filter: a thread of the session's init
 * (sbx_unix_supervisor_thread), or a process of its own where it decides
 * bind() too, and without user namespaces (sbx_unix_supervisor_start). It
 * acts on behalf of the caller on a copy of everything, so nothing can
 * change between the decision and the act:
 *  - the caller's socket is taken with pidfd_getfd (whatever its fd number
 *    names at that moment), the address is copied out of its memory;
 *  - a pathname is resolved in the caller's view (its cwd for a relative
 *    one; the supervisor shares its root and mount namespace), following
 *    symlinks as connect() would, and the final inode is pinned with an
 *    O_PATH fd;
 *  - the socket is allowed when it lies under a unix_allow entry, or in a
 *    place the session may write and the session bound it itself (tmux,
 *    ssh-agent, a test server started inside): see "the session's own
 *    sockets" below;
 *  - the connect() is then made on the pinned inode, through its
 *    /proc/self/fd link, and its result is the caller's.
 * Abstract names are allowed only in a private network namespace (where
 * every name is the session's own). Every other family is connected on
 * behalf too: answering "continue" would let another thread of the caller
 * swap the fd or the address in between.
 *
 * Without a private network namespace bind() comes here as well: an
 * abstract name the program bound would be the host's, one a host client
 * looks for (X11's, a restarted daemon's) and talks to. Abstract binds are
 * refused; an autobind (a random name) and other families are bound on
 * behalf; a pathname is made in its pinned parent directory when that lies
 * in a place the session may write, by a short-lived child with the
 * caller's umask.
 *
 * The session's own sockets. Owning the file proves nothing: a process of
 * the same uid outside the sandbox (the user's tmux, ssh-agent or IDE, a
 * host tool run as the agent) binds its sockets in the same workspace,
 * home or /tmp, and a tmux server found that way ran the session's
 * commands with no seccomp and no no_new_privs. So every bind() of the
 * session comes here too, and the supervisor keeps the socket cookie
 * (SO_COOKIE: unique until reboot, never reused) of each unix socket the
 * session binds to a path. At connect(), the kernel's socket diagnostics
 * (sock_diag, in the supervisor's network namespace, which is the
 * session's) name the socket bound to the pinned file: it is the
 * session's own only if every socket bound there is one of those cookies.
 * A socket bound in another network namespace is not listed at all, and a
 * file with no socket behind it (one left from an earlier session) is not
 * the session's either: both are refused. Sessions of one account share
 * nothing this way: each supervisor knows its own binds only; unix_allow
 * names what may be shared on purpose.
 *
 * Where nothing is decided at bind() (a private network namespace), the
 * supervisor records the cookie and lets the kernel bind as asked
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE). That grants nothing: another thread
 * may swap the fd in between, but then the socket bound is one not
 * recorded, whose connect() is refused, and the one recorded was the
 * session's anyway.
 *
 * Datagram sockets could name a socket per sendto()/sendmsg(), which the
 * supervisor would then have to see on every send: the filter refuses
 * AF_UNIX SOCK_DGRAM sockets instead (lib/seccomp.c), so connect() is the
 * only way to reach a pathname socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <unistd.h>

#include "internal.h"

#define MAX_THREADS 64

/* Linux 6.6 (Debian 12's headers stop before it). */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)	/* Linux 5.5 */
#endif
#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

/* The unix sockets the session bound to a path that it holds at once. */
#define OWN_MAX 1024
/* af_unix's listening state (TCP_LISTEN in the kernel's numbering). */
#define TCP_LISTEN_STATE 10

/* ---- the decision ---------------------------------------------------------- */

static int add_place(struct sbx_unix_policy *pol, const char *path, struct sbx_error *err)
{
	if (!path || !path[0])
		return 0;
	if (pol->n_places >= ARRAY_SIZE(pol->places))
		return sbx_error_set(err, E2BIG, "unix policy: too many writable places");
	if (sbx_strlcpy(pol->places[pol->n_places], SBX_PATH_MAX, path) != 0)
		return sbx_error_set(err, ENAMETOOLONG, "unix policy: %s: too long", path);
	pol->n_places++;
	return 0;
}

static const struct sbx_list_field unix_policy_lists[] = {
	SBX_LIST_FIELD(struct sbx_unix_policy, places, n_places),
	SBX_LIST_FIELD(struct sbx_unix_policy, allow, n_allow),
	SBX_LIST_FIELD(struct sbx_unix_policy, deny, n_deny),
};

int sbx_unix_policy_build(const struct sbx_profile *p, const struct sbx_session *s,
			  bool private_netns, bool pidns, struct sbx_unix_policy *out,
			  struct sbx_error *err)
{
	struct sbx_unix_policy *pol = malloc(sizeof(*pol));
	size_t i;
	int r = 0;

	if (!pol)
		return sbx_error_set(err, ENOMEM, "unix policy: out of memory");
	sbx_clear_used(pol, sizeof(*pol), unix_policy_lists, ARRAY_SIZE(unix_policy_lists));
	pol->uid = s->uid;
	pol->pidns = pidns;
	pol->abstract_ok = private_netns;
	pol->bind_on_behalf = !private_netns;
	if (p->host_write == SBX_ACCESS_ALLOW)
		r = add_place(pol, "/", err);
	if (r == 0 && p->workspace_write == SBX_ACCESS_ALLOW)
		r = add_place(pol, s->workspace, err);
	if (r == 0)
		r = add_place(pol, s->home, err);
	if (r == 0)
		r = add_place(pol, "/tmp", err);
	if (r == 0)
		r = add_place(pol, "/dev/shm", err);
	for (i = 0; r == 0 && i < p->n_roots; i++)
		if (p->roots[i].write == SBX_ACCESS_ALLOW)
			r = add_place(pol, p->roots[i].path, err);
	for (i = 0; r == 0 && i < p->n_deny_read && i < ARRAY_SIZE(pol->deny); i++) {
		if (sbx_strlcpy(pol->deny[i], SBX_PATH_MAX, p->deny_read[i]) != 0)
			r = sbx_error_set(err, ENAMETOOLONG, "deny_read %s: too long",
					  p->deny_read[i]);
		else
			pol->n_deny++;
	}
	for (i = 0; r == 0 && i < p->n_unix_allow && i < ARRAY_SIZE(pol->allow); i++) {
		if (sbx_strlcpy(pol->allow[i], SBX_PATH_MAX, p->unix_allow[i]) != 0)
			r = sbx_error_set(err, ENAMETOOLONG, "unix_allow %s: too long",
					  p->unix_allow[i]);
		else
			pol->n_allow++;
	}
	if (r == 0)
		sbx_copy_used(out, pol, sizeof(*out), unix_policy_lists,
			      ARRAY_SIZE(unix_policy_lists));
	free(pol);
	return r;
}

static bool under_any(const char (*list)[SBX_PATH_MAX], size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (sbx_path_is_under(path, list[i]))
			return true;
	return false;
}

/* A socket file made at path: in a place the session may write, and
 * under no deny_read entry (unix_allow is for connecting only). */
static bool bind_place_allowed(const struct sbx_unix_policy *pol, const char *path)
{
	return !under_any(pol->deny, pol->n_deny, path) &&
	       under_any(pol->places, pol->n_places, path);
}

void sbx_unix_policy_describe(const struct sbx_unix_policy *pol, char *buf, size_t size)
{
	snprintf(buf, size,
		 "connect() decided outside the sandbox: only sockets this session bound "
		 "(by socket cookie) where it may write%s, not this uid's others; bind() %s; "
		 "abstract names %s; unix datagram refused",
		 pol->n_allow ? ", and unix_allow" : "",
		 pol->bind_on_behalf ? "made on its behalf" : "recorded",
		 pol->abstract_ok ? "in its own network namespace only" :
		 "refused (no private network namespace)");
}

enum sbx_unix_verdict sbx_unix_path_verdict(const struct sbx_unix_policy *pol, const char *path)
{
	/* A secret stays one, socket or not, wherever it sits. */
	if (under_any(pol->deny, pol->n_deny, path))
		return SBX_UNIX_REFUSE;
	if (under_any(pol->allow, pol->n_allow, path))
		return SBX_UNIX_ALLOW;
	return under_any(pol->places, pol->n_places, path) ? SBX_UNIX_IF_OWN : SBX_UNIX_REFUSE;
}

/* ---- the session's own sockets ------------------------------------------- */

/* The cookies of the unix sockets the session bound. */
struct own_sockets {
	pthread_mutex_t lock;
	size_t n;
	uint64_t cookie[OWN_MAX];
};

static bool own_has_locked(const struct own_sockets *o, uint64_t cookie)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->cookie[i] == cookie)
			return true;
	return false;
}

/* The kernel's dev_t (MINORBITS 20), as sock_diag reports it, in the
 * form stat() gives. */
static dev_t kernel_dev(uint32_t v)
{
	return makedev(v >> 20, v & 0xfffff);
}

struct diag_sock {
	uint64_t cookie;
	uint32_t sock_ino;	/* the socket's own inode (sockfs) */
	bool listening;
	uint32_t peer_ino;	/* its peer's, 0 when none */
	bool bound;		/* to a path: dev and ino are the file's */
	dev_t dev;
	uint32_t ino;		/* the kernel reports 32 bits of it */
	/* A listener's connections not accepted yet: their clients'
	 * inodes (valid during the callback only). */
	const unsigned char *icons;
	size_t n_icons;
};

/*
 * Every unix socket of this network namespace, from the kernel's socket
 * diagnostics (NETLINK_SOCK_DIAG, unix_diag: no privilege needed, and it
 * lists the caller's network namespace only): fn for each, until it
 * returns false. 0, or -errno (-EPROTO on a reply that does not parse).
 */
static int diag_each(bool (*fn)(void *ctx, const struct diag_sock *d), void *ctx)
{
	struct {
		struct nlmsghdr nh;
		struct unix_diag_req req;
	} msg = { .nh = { .nlmsg_len = sizeof(msg), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			  .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		  .req = { .sdiag_family = AF_UNIX, .udiag_states = ~0u,
			   .udiag_show = UDIAG_SHOW_VFS | UDIAG_SHOW_PEER |
					 UDIAG_SHOW_ICONS } };
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), r = 0;
	bool more = true;

	if (fd < 0)
		return -errno;
	if (sendto(fd, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		r = -errno;
		more = false;
	}
	while (more) {
		/* MSG_TRUNC: the length of the whole datagram, to tell a
		 * reply cut short (the kernel sizes them by this buffer). */
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (size_t)n > sizeof(buf)) {
			r = n < 0 ? -errno : -EPROTO;
			break;
		}
		for (; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			const struct unix_diag_msg *m = NLMSG_DATA(h);
			struct diag_sock d = { 0 };
			size_t left;
			const struct nlattr *a;

			if (h->nlmsg_type == NLMSG_DONE) {
				more = false;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				r = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ?
					    e->error : -EPROTO;
				more = false;
				break;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
			    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m))) {
				r = -EPROTO;
				more = false;
				break;
			}
			d.cookie = (uint64_t)m->udiag_cookie[0] |
				   (uint64_t)m->udiag_cookie[1] << 32;
			d.sock_ino = m->udiag_ino;
			d.listening = m->udiag_state == TCP_LISTEN_STATE;
			a = (const struct nlattr *)((const char *)m + NLMSG_ALIGN(sizeof(*m)));
			left = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*m)));
			while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
			       a->nla_len <= left) {
				if ((a->nla_type & NLA_TYPE_MASK) == UNIX_DIAG_VFS &&
				    a->nla_len >= NLA_HDRLEN + sizeof(struct unix_diag_vfs)) {
					struct unix_diag_vfs v;

					memcpy(&v, (const char *)a + NLA_HDRLEN, sizeof(v));
					d.bound = true;
					d.dev = kernel_dev(v.udiag_vfs_dev);
					d.ino = v.udiag_vfs_ino;
				} else if ((a->nla_type & NLA_TYPE_MASK) == UNIX_DIAG_PEER &&
					   a->nla_len >= NLA_HDRLEN + sizeof(uint32_t)) {
					memcpy(&d.peer_ino, (const char *)a + NLA_HDRLEN,
					       sizeof(d.peer_ino));
				} else if ((a->nla_type & NLA_TYPE_MASK) == UNIX_DIAG_ICONS) {
					d.icons = (const unsigned char *)a + NLA_HDRLEN;
					d.n_icons = (a->nla_len - NLA_HDRLEN) / sizeof(uint32_t);
				}
				size_t step = (size_t)NLA_ALIGN(a->nla_len);

				if (step >= left)
					break;
				left -= step;
				a = (const struct nlattr *)((const char *)a + step);
			}
			if (!fn(ctx, &d)) {
				more = false;
				break;
			}
		}
	}
	close(fd);
	return r;
}

struct own_check {
	const struct own_sockets *own;
	dev_t dev;
	uint32_t ino;
	bool found, foreign;
};

static bool check_one(void *ctx, const struct diag_sock *d)
{
	struct own_check *c = ctx;

	/* The kernel connects to the socket that bound the file, which
	 * listens; the server's end of each connection made carries the
	 * listener's file too, with a cookie of its own. */
	if (!d->bound || !d->listening || d->dev != c->dev || d->ino != c->ino)
		return true;
	c->found = true;
	if (!own_has_locked(c->own, d->cookie))
		c->foreign = true;
	return !c->foreign;
}

/*
 * Is the socket file st one the session bound? Only if a listening socket
 * of this network namespace is bound to it and every one that is was
 * bound by the session. unix_diag gives 32 bits of the file's inode
 * number: a second match refuses, it never grants. But on a filesystem
 * with 64-bit numbers (XFS) a socket of the session's on another inode can
 * match a foreign file whose listener, in another network namespace, is
 * not listed at all (an attacker review reached a host tmux server so):
 * where the session has a network namespace of its own the connection is
 * checked again once made (listened_inside). Refused when the kernel's
 * diagnostics cannot be read.
 */
static bool own_socket(struct own_sockets *own, const struct stat *st)
{
	struct own_check c = { .own = own, .dev = st->st_dev, .ino = (uint32_t)st->st_ino };
	int r;

	pthread_mutex_lock(&own->lock);
	r = diag_each(check_one, &c);
	pthread_mutex_unlock(&own->lock);
	return r == 0 && c.found && !c.foreign;
}

/*
 * A connection just made to a socket judged the session's own: did its
 * listener listen inside the session? SO_PEERCRED carries the pid that
 * called listen(), numbered in this process's pid namespace. Where the
 * session has one (this is its init), a process outside it reads as 0,
 * whether or not it still lives, so a daemon that forked after listen()
 * still counts. Without one (the PAM stage's network namespace, no user
 * namespace), the listener must be a live process in this network
 * namespace: one that forked and left after listen() is refused.
 */
static bool listened_inside(int fd, bool pidns)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char link[64];
	struct stat st;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof(cr) ||
	    cr.pid <= 0)
		return false;
	if (pidns)
		return true;
	snprintf(link, sizeof(link), "/proc/%d/ns/net", (int)cr.pid);
	return stat(link, &st) == 0 && (unsigned long)st.st_ino == sbx_ns_inode("net");
}

struct own_keep {
	struct own_sockets *own;
	bool *live;
};

static bool mark_live(void *ctx, const struct diag_sock *d)
{
	struct own_keep *k = ctx;

	for (size_t i = 0; i < k->own->n; i++)
		if (k->own->cookie[i] == d->cookie)
			k->live[i] = true;
	return true;
}

/* Forget the cookies of sockets that are gone. With the lock. */
static void own_compact_locked(struct own_sockets *own)
{
	bool live[OWN_MAX] = { false };
	struct own_keep k = { own, live };
	size_t kept = 0;

	if (diag_each(mark_live, &k) != 0)
		return;
	for (size_t i = 0; i < own->n; i++)
		if (live[i])
			own->cookie[kept++] = own->cookie[i];
	own->n = kept;
}

static int sock_cookie(int sfd, uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);

	return getsockopt(sfd, SOL_SOCKET, SO_COOKIE, cookie, &len) == 0 ? 0 : -errno;
}

/* Remember the socket sfd as the session's own: 0, or -ENOBUFS when the
 * session holds OWN_MAX bound sockets already (or -errno of SO_COOKIE). */
static int own_record(struct own_sockets *own, int sfd)
{
	uint64_t cookie;
	int r = sock_cookie(sfd, &cookie);

	if (r)
		return r;
	pthread_mutex_lock(&own->lock);
	if (!own_has_locked(own, cookie)) {
		if (own->n == OWN_MAX)
			own_compact_locked(own);
		if (own->n < OWN_MAX)
			own->cookie[own->n++] = cookie;
		else
			r = -ENOBUFS;
	}
	pthread_mutex_unlock(&own->lock);
	return r;
}

struct peer_find {
	uint32_t self;		/* the client socket's inode */
	dev_t dev;		/* the file it should be connected to */
	uint32_t ino;
	bool found;
};

static bool find_peer(void *ctx, const struct diag_sock *d)
{
	struct peer_find *f = ctx;

	if (!d->listening || !d->bound || d->dev != f->dev || d->ino != f->ino)
		return true;
	for (size_t i = 0; i < d->n_icons && !f->found; i++) {
		uint32_t v;

		memcpy(&v, d->icons + i * sizeof(v), sizeof(v));
		f->found = v == f->self;
	}
	return !f->found;
}

/* Is the connected unix socket fd still in the queue of a listener bound
 * to the file target, in this network namespace? (Only where it waits to
 * be accepted: the server's end of an accepted one is made in the
 * client's namespace, whatever the listener's, so it proves nothing.) */
static bool peer_is(int fd, const struct stat *target)
{
	struct stat self;
	struct peer_find f = { .dev = target->st_dev, .ino = (uint32_t)target->st_ino };

	if (fstat(fd, &self) != 0)
		return false;
	f.self = (uint32_t)self.st_ino;
	return diag_each(find_peer, &f) == 0 && f.found;
}

int sbx_unix_foreign_listener(int sock, const char *dir, char *path, size_t size)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	uint64_t tag = 0;
	int fd = sock, e;

	if (getrandom(&tag, sizeof(tag), GRND_NONBLOCK) != (ssize_t)sizeof(tag))
		tag ^= (uint64_t)sbx_monotonic_ms() << 20 ^ (uint64_t)getpid();
	if (sbx_snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/.agent-sandbox-foreign-%016llx",
			 dir, (unsigned long long)tag) != 0 ||
	    sbx_strlcpy(path, size, sun.sun_path) != 0)
		return -ENAMETOOLONG;
	if (fd < 0)
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		e = errno;
		close(fd);
		path[0] = '\0';
		return -e;
	}
	if (listen(fd, 1) != 0) {
		e = errno;
		(void)unlink(sun.sun_path);
		close(fd);
		path[0] = '\0';
		return -e;
	}
	return fd;
}

/* ---- acting on behalf ------------------------------------------------------- */

struct job {
	int listener;
	const struct sbx_unix_policy *pol;
	struct own_sockets *own;
	struct seccomp_notif req;
};

/* The notification ioctls (linux/seccomp.h). The id is still valid while
 * the caller waits in the syscall it was sent for. */
static int notif_id_valid(int listener, uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 ? 0 : -1;
}

static void notif_send(int listener, struct seccomp_notif_resp *resp)
{
	while (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0 && errno == EINTR)
		;
}

/*
 * What the supervisor reads of the caller by pid (its memory, /proc/<pid>/
 * cwd and status) is the caller's only if the caller still waits in the
 * notified call afterwards: a pidfd keeps the task's record, not its pid
 * number, and a pid freed by a dying thread can be handed to another
 * process of the uid within the window (seccomp_unotify(2)). So each such
 * read is followed by this check before anything is decided on it:
 * 0 while valid, 1 ("the caller is gone, send no answer") otherwise.
 */
static int caller_still_waiting(const struct job *j)
{
	return notif_id_valid(j->listener, j->req.id) == 0 ? 0 : 1;
}

static int read_remote(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static int connect_or_errno(int fd, const void *addr, socklen_t len)
{
	return connect(fd, addr, len) == 0 ? 0 : -errno;
}

/*
 * connect() on behalf of a caller that waits in its own. A connect that
 * blocks (a listener's full backlog, a TCP handshake) is interrupted every
 * CONNECT_TICK_MS by a timer of the answering thread (SIGEV_THREAD_ID,
 * CONNECT_SIGNAL, a handler without SA_RESTART, the signal unblocked only
 * around the connect), and between two ticks the caller must still be
 * waiting: a connect whose caller was killed, or interrupted and restarted
 * (a new request), ends at the next tick. Nothing of the caller's socket
 * is changed for it (its SO_SNDTIMEO and O_NONBLOCK are the caller's: a
 * bound made of them, the first version of this, was raced by another
 * thread of the caller). A unix connect interrupted starts again; a TCP
 * one goes on (EALREADY, then 0, or EISCONN when it completed in between).
 * The caller's own SO_SNDTIMEO, read at the start, still ends the call
 * (to the tick), with the kernel's answer: EAGAIN for unix, EINPROGRESS
 * for TCP. 1 when the caller is gone.
 */
#define CONNECT_TICK_MS 100
#define CONNECT_SIGNAL (SIGRTMIN + 3)

static __thread timer_t tick_timer;
static __thread bool tick_ready;

static void on_tick(int sig)
{
	(void)sig;
}

/* This thread's tick timer, made once; false when none could be. */
static bool tick_make(void)
{
	struct sigevent sev;

	if (tick_ready)
		return true;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = CONNECT_SIGNAL;
	sev._sigev_un._tid = gettid();
	tick_ready = timer_create(CLOCK_MONOTONIC, &sev, &tick_timer) == 0;
	return tick_ready;
}

static void tick_set(long ms)
{
	struct itimerspec it = { .it_value = { .tv_nsec = ms * 1000000L },
				 .it_interval = { .tv_nsec = ms * 1000000L } };

	(void)timer_settime(tick_timer, 0, &it, NULL);
}

/* The tick's handler (process-wide), and the signal blocked in the calling
 * thread, hence in every thread it makes: only a connect on behalf takes
 * it. Without the handler its default action would end the process. */
static void tick_signal_setup(void)
{
	struct sigaction sa;
	sigset_t tick;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;	/* no SA_RESTART: the connect returns */
	sigemptyset(&sa.sa_mask);
	sigemptyset(&tick);
	sigaddset(&tick, CONNECT_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &tick, NULL);
	(void)sigaction(CONNECT_SIGNAL, &sa, NULL);
}

/*
 * An earlier request of the same caller (one it abandoned by restarting
 * the call) may have connected its socket in the meantime, and a unix
 * connect waits for room at the listener before it looks at its own
 * socket: it would wait for good. So a unix socket already connected ends
 * the call: 0 when its peer is what this request decided on (the pinned
 * inode, or the same abstract name), EISCONN otherwise. -1: not connected.
 */
static int already_connected(int fd, const void *addr, socklen_t len, const struct stat *target)
{
	struct sockaddr_un peer;
	socklen_t plen = sizeof(peer);
	struct stat st;

	memset(&peer, 0, sizeof(peer));
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0)
		return -1;
	if (plen > offsetof(struct sockaddr_un, sun_path) && peer.sun_path[0] == '\0')
		return plen == len && memcmp(&peer, addr, len) == 0 ? 0 : -EISCONN;
	if (target && plen > offsetof(struct sockaddr_un, sun_path) && plen <= sizeof(peer)) {
		peer.sun_path[sizeof(peer.sun_path) - 1] = '\0';
		if (peer.sun_path[0] == '/' &&
		    fstatat(AT_FDCWD, peer.sun_path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_dev == target->st_dev && st.st_ino == target->st_ino)
			return 0;
		/* A name relative to where it was bound (one bound on the
		 * program's behalf is), or one renamed since: the peer's
		 * file, from the kernel. */
		if (peer_is(fd, target))
			return 0;
	}
	return -EISCONN;
}

static int connect_on_behalf(const struct job *j, int domain, int fd, const void *addr,
			     socklen_t len, const struct stat *target)
{
	struct timeval own;
	socklen_t olen = sizeof(own);
	long long deadline = 0;
	bool started = false;
	sigset_t tick;
	int r;

	if (!tick_make())
		return connect_or_errno(fd, addr, len);	/* as before the ticks */
	/* A timeout of decades (the kernel keeps up to LONG_MAX jiffies) is
	 * none: no overflow in the sum. */
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &own, &olen) == 0 && olen == sizeof(own) &&
	    (own.tv_sec || own.tv_usec) && own.tv_sec >= 0 && own.tv_sec < (1L << 30))
		deadline = sbx_monotonic_ms() + (long long)own.tv_sec * 1000 + own.tv_usec / 1000;
	sigemptyset(&tick);
	sigaddset(&tick, CONNECT_SIGNAL);
	tick_set(CONNECT_TICK_MS);
	for (;;) {
		if (domain == AF_UNIX && (r = already_connected(fd, addr, len, target)) != -1)
			break;
		pthread_sigmask(SIG_UNBLOCK, &tick, NULL);
		r = connect_or_errno(fd, addr, len);
		pthread_sigmask(SIG_BLOCK, &tick, NULL);
		if (r == -EISCONN && started)
			r = 0;		/* TCP: completed between two ticks */
		/* unix: an abandoned request of the same caller took the
		 * free place while this one waited in connect(). */
		if (r == -EISCONN && domain == AF_UNIX && already_connected(fd, addr, len, target) == 0)
			r = 0;
		if (r == -EALREADY && started)
			r = -EINPROGRESS;	/* TCP: its own timeout ran out */
		if (r != -EINTR)
			break;
		if (domain != AF_UNIX)
			started = true;	/* the handshake goes on */
		if (deadline && sbx_monotonic_ms() >= deadline) {
			r = domain == AF_UNIX ? -EAGAIN : -EINPROGRESS;
			break;
		}
		if (caller_still_waiting(j)) {
			r = 1;
			break;
		}
	}
	tick_set(0);
	return r;
}

/* Whether the directory holding path may gain entries the agent (uid)
 * makes: its own (it may chmod it), or writable by group or others (a
 * sticky bit still lets anyone add a name, a hard link included). A
 * directory that cannot be opened without symlinks counts as writable. */
static bool dir_writable_by(const char *path, uid_t uid)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	char dir[SBX_PATH_MAX], *slash;
	struct stat st;
	int fd;
	bool w;

	if (sbx_strlcpy(dir, sizeof(dir), path) != 0 || !(slash = strrchr(dir, '/')))
		return true;
	slash[slash == dir ? 1 : 0] = '\0';
	fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
	if (fd < 0)
		return true;
	w = fstat(fd, &st) != 0 || st.st_uid == uid || (st.st_mode & 0022);
	close(fd);
	return w;
}

/* path resolved as the caller (pid) would, from its cwd when relative,
 * without magic links (they would be resolved in the supervisor's context):
 * an O_PATH fd pinning the inode (flags added), and its real path. -errno
 * (-EACCES for a magic link or an unreadable caller). */
static int pin_as_caller(pid_t pid, const char *path, int flags, char *real, size_t size)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC | (unsigned)flags,
				.resolve = RESOLVE_NO_MAGICLINKS };
	char link[64];
	int dirfd = AT_FDCWD, pin, r;
	ssize_t got;

	if (path[0] != '/') {
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
		dirfd = open(link, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0)
			return -EACCES;
	}
	pin = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	r = pin < 0 ? (errno == ELOOP ? -EACCES : -errno) : 0;
	if (dirfd != AT_FDCWD)
		close(dirfd);
	if (pin < 0)
		return r;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", pin);
	got = readlink(link, real, size - 1);
	if (got <= 0) {
		close(pin);
		return -EACCES;
	}
	real[got] = '\0';
	return pin;
}

/* A pathname: resolve it as the caller would, pin the inode, decide, and
 * connect to the pinned inode. */
static int connect_pathname(const struct job *j, pid_t pid, int sfd,
			    const struct sockaddr_un *sun, socklen_t len)
{
	size_t n = len - offsetof(struct sockaddr_un, sun_path);
	char path[sizeof(sun->sun_path) + 1], link[64], real[SBX_PATH_MAX];
	struct sockaddr_un via = { .sun_family = AF_UNIX };
	enum sbx_unix_verdict verdict;
	struct stat st;
	int pin = -1, r;

	memcpy(path, sun->sun_path, n);
	path[n] = '\0';		/* the kernel stops at the first NUL too */
	if (!path[0])
		return -EINVAL;
	pin = pin_as_caller(pid, path, 0, real, sizeof(real));
	if (pin < 0)
		return pin;
	r = caller_still_waiting(j);	/* its cwd was the caller's */
	if (r)
		goto out;
	if (fstat(pin, &st) != 0) {
		r = -EACCES;
		goto out;
	}
	verdict = sbx_unix_path_verdict(j->pol, real);
	if (verdict == SBX_UNIX_REFUSE) {
		r = -EACCES;
		goto out;
	}
	if (!S_ISSOCK(st.st_mode)) {
		r = -ECONNREFUSED;	/* what connect() says of a non-socket */
		goto out;
	}
	/* unix_allow lets a place through, not whatever the agent can put
	 * there: a hard link or a rename brings any socket of its uid into
	 * a directory it may write. There, the socket must be its own. */
	if (verdict == SBX_UNIX_ALLOW && dir_writable_by(real, j->pol->uid))
		verdict = SBX_UNIX_IF_OWN;
	if (verdict == SBX_UNIX_IF_OWN && !own_socket(j->own, &st)) {
		r = -EACCES;
		goto out;
	}
	/* Connect through the pinned inode, not the name. */
	snprintf(link, sizeof(link), "/proc/self/fd/%d", pin);
	snprintf(via.sun_path, sizeof(via.sun_path), "%s", link);
	r = connect_on_behalf(j, AF_UNIX, sfd, &via,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(link) + 1),
			      &st);
	/* Where the session has a network namespace of its own, what 32 bits
	 * of an inode number matched is checked on the connection
	 * (own_socket); a miss is cut before the caller holds it (the
	 * listener sees an empty connection). Without one, the foreign
	 * listener is listed and refused before. */
	if (r == 0 && verdict == SBX_UNIX_IF_OWN && j->pol->abstract_ok &&
	    !listened_inside(sfd, j->pol->pidns)) {
		(void)shutdown(sfd, SHUT_RDWR);
		r = -EACCES;
	}
out:
	close(pin);
	return r;
}

static int bind_or_errno(int fd, const void *addr, socklen_t len)
{
	return bind(fd, addr, len) == 0 ? 0 : -errno;
}

/* The caller's umask (its /proc status), for the socket file made for it;
 * 077 when it cannot be read. */
static mode_t caller_umask(pid_t pid)
{
	char val[16], *end;
	unsigned long m;

	if (sbx_proc_status_field(pid, "Umask", val, sizeof(val)) != 0)
		return 077;
	m = strtoul(val, &end, 8);
	return end != val && m <= 0777 ? (mode_t)m : 077;
}

/*
 * A pathname bind: the parent directory is resolved as the caller would
 * (its cwd for a relative path, no magic links) and pinned, the place
 * checked against the places the session may write, and the socket made
 * in the pinned directory by a short-lived child that first takes the
 * sandbox's own Landlock rules (this process is outside the sandbox's
 * domain and must not make a socket where the program could not: the
 * read-only ancestors of a deny_read hole are inside the places) and the
 * caller's umask (a process-wide setting this threaded supervisor cannot
 * change for one request).
 */
static int bind_pathname(const struct job *j, pid_t pid, int sfd,
			 const struct sockaddr_un *sun, socklen_t len)
{
	size_t n = len - offsetof(struct sockaddr_un, sun_path);
	char path[sizeof(sun->sun_path) + 1], real[SBX_PATH_MAX], *slash;
	char target[SBX_PATH_MAX + sizeof(path) + 2];
	const char *dir, *base;
	struct sockaddr_un leaf = { .sun_family = AF_UNIX };
	int pin = -1, r, status;
	mode_t mask = caller_umask(pid);
	size_t leaf_len;
	pid_t child;

	memcpy(path, sun->sun_path, n);
	path[n] = '\0';
	slash = strrchr(path, '/');
	if (!slash) {
		dir = ".";
		base = path;
	} else {
		*slash = '\0';
		dir = slash == path ? "/" : path;
		base = slash + 1;
	}
	if (!base[0])
		return -ENOENT;
	if (!strcmp(base, ".") || !strcmp(base, ".."))
		return -EEXIST;
	pin = pin_as_caller(pid, dir, O_DIRECTORY, real, sizeof(real));
	if (pin < 0)
		return pin;
	r = caller_still_waiting(j);	/* its cwd and umask were the caller's */
	if (r)
		goto out;
	if (sbx_snprintf(target, sizeof(target), "%s%s%s", real,
			 strcmp(real, "/") != 0 ? "/" : "", base) != 0) {
		r = -ENAMETOOLONG;
		goto out;
	}
	if (!bind_place_allowed(j->pol, target)) {
		r = -EACCES;
		goto out;
	}
	/* base fits: it is part of what the caller's sockaddr_un held (108
	 * bytes need no NUL, as for the kernel). */
	leaf_len = strlen(base);
	memcpy(leaf.sun_path, base, leaf_len);
	leaf_len += offsetof(struct sockaddr_un, sun_path) +
		    (leaf_len < sizeof(leaf.sun_path) ? 1 : 0);
	child = fork();
	if (child < 0) {
		r = -errno;
		goto out;
	}
	if (child == 0) {
		/* glibc's fork left malloc usable; the sandbox's Landlock
		 * domain, then the caller's umask and directory. */
		if (j->pol->landlock && j->pol->landlock_abi > 0) {
			struct sbx_landlock_result res;

			if (sbx_landlock_apply(j->pol->landlock, j->pol->landlock_abi, &res, NULL) != 0)
				_exit(EACCES);
		}
		umask(mask);
		if (fchdir(pin) != 0)
			_exit(EACCES);
		_exit(bind(sfd, (struct sockaddr *)&leaf, (socklen_t)leaf_len) == 0 ? 0 : errno);
	}
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) {
			r = -ECHILD;
			goto out;
		}
	r = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;
out:
	close(pin);
	return r;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL	/* Linux 6.9 */
#endif

/*
 * A pidfd for the calling task. The notice names a thread, which need not
 * lead its group: a thread pidfd (Linux 6.9) is exact, also for a thread
 * with an fd table of its own; before that, the group's leader. Whichever
 * table the fd is taken from, the decision is made on the supervisor's own
 * copy of the address and on the socket it took, so a mismatch can only
 * connect another socket of the caller to an allowed place.
 */
static int caller_pidfd(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	pid_t tgid;

	if (fd >= 0 || errno != EINVAL)
		return fd;
	fd = (int)syscall(SYS_pidfd_open, tid, 0);
	if (fd >= 0 || errno != EINVAL)
		return fd;
	tgid = (pid_t)sbx_proc_status_number(tid, "Tgid");
	return tgid > 0 ? (int)syscall(SYS_pidfd_open, tgid, 0) : -1;
}

/* bind() of the caller, where it is decided here (without a private
 * network namespace abstract names are the host's): abstract names refused, an autobind
 * (the kernel picks a random name no host client expects) and a pathname
 * in a place the session may write made here, any other family bound here
 * as it asked (answering "continue" would let another thread swap the fd
 * or the address in between). */
static int decide_bind(const struct job *j, pid_t pid, int sfd, int domain,
		       const struct sockaddr_storage *ss, socklen_t len)
{
	const struct sockaddr_un *sun = (const struct sockaddr_un *)ss;

	if (domain != AF_UNIX || ss->ss_family != AF_UNIX)
		return bind_or_errno(sfd, ss, len);
	if (len == sizeof(sa_family_t))
		return bind_or_errno(sfd, ss, len);
	if (len <= offsetof(struct sockaddr_un, sun_path) || len > sizeof(struct sockaddr_un))
		return -EINVAL;
	if (sun->sun_path[0] == '\0')
		return j->pol->abstract_ok ? bind_or_errno(sfd, ss, len) : -EACCES;
	return bind_pathname(j, pid, sfd, sun, len);
}

/* handle_call's answers besides 0 and -errno. */
#define ANSWER_NONE 1		/* the caller is gone: no answer to send */
#define ANSWER_CONTINUE 2	/* let the kernel do the call as asked */

/* connect(fd, addr, len) or bind(fd, addr, len) of the caller, done here
 * (a bind only recorded is done by the kernel: ANSWER_CONTINUE). The
 * result, or ANSWER_NONE. */
static int handle_call(const struct job *j)
{
	const struct seccomp_notif *req = &j->req;
	pid_t pid = (pid_t)req->pid;
	struct sockaddr_storage ss;
	socklen_t len = (socklen_t)(uint32_t)req->data.args[2];
	int fd = (int)(uint32_t)req->data.args[0];
	int pidfd, sfd = -1, domain = 0, r;
	socklen_t dlen = sizeof(domain);

	pidfd = caller_pidfd(pid);
	if (pidfd < 0) {
		/* Gone, or no way to reach it: a refusal, never a hang. */
		return caller_still_waiting(j) ? 1 : -EACCES;
	}
	/* The pid named the caller when the notice was sent: is it still
	 * that one (not a recycled pid) now that the pidfd is open? The
	 * pidfd then names that task for pidfd_getfd; reads by pid are
	 * checked again after each (caller_still_waiting). */
	if (caller_still_waiting(j)) {
		close(pidfd);
		return 1;
	}
	if (len == 0 || len > sizeof(ss)) {
		r = -EINVAL;
		goto out;
	}
	sfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (sfd < 0) {
		/* EPERM: the caller made itself non-dumpable; no access. */
		r = errno == EBADF ? -EBADF : errno == EPERM ? -EACCES : -errno;
		goto out;
	}
	memset(&ss, 0, sizeof(ss));
	r = read_remote(pid, req->data.args[1], &ss, len);
	if (r == 0)
		r = caller_still_waiting(j);	/* the address was the caller's */
	if (r)
		goto out;
	if (getsockopt(sfd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) != 0) {
		r = errno == ENOTSOCK ? -ENOTSOCK : -errno;
		goto out;
	}
	if (req->data.nr == __NR_bind) {
		/* Every unix socket the session binds is its own, before
		 * the bind (a socket recorded and then not bound is
		 * harmless; one bound and not recorded is refused). */
		if (domain == AF_UNIX)
			r = own_record(j->own, sfd);
		if (r == 0)
			r = j->pol->bind_on_behalf ? decide_bind(j, pid, sfd, domain, &ss, len) :
						     ANSWER_CONTINUE;
	} else if (domain == AF_UNIX && ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *sun = (const struct sockaddr_un *)&ss;

		/* The kernel's own bounds (unix_validate_addr): the path
		 * copy below relies on them. */
		if (len <= offsetof(struct sockaddr_un, sun_path) ||
		    len > sizeof(struct sockaddr_un))
			r = -EINVAL;
		else if (sun->sun_path[0] == '\0')
			r = j->pol->abstract_ok ? connect_on_behalf(j, AF_UNIX, sfd, &ss, len, NULL) : -EACCES;
		else
			r = connect_pathname(j, pid, sfd, sun, len);
	} else {
		/* Not a unix socket, or not a unix address: no path is
		 * looked up, so the kernel's own checks are all there is. */
		r = connect_on_behalf(j, domain, sfd, &ss, len, NULL);
	}
out:
	if (sfd >= 0)
		close(sfd);
	close(pidfd);
	return r;
}

static void answer(const struct job *j)
{
	struct seccomp_notif_resp resp;
	int r = handle_call(j);

	if (r == ANSWER_NONE)
		return;
	memset(&resp, 0, sizeof(resp));
	resp.id = j->req.id;
	resp.val = 0;
	resp.error = r == ANSWER_CONTINUE ? 0 : r;	/* 0 or -errno */
	resp.flags = r == ANSWER_CONTINUE ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
	notif_send(j->listener, &resp);
}

/*
 * The threads that answer. The idle one waits in SECCOMP_IOCTL_NOTIF_RECV
 * itself and answers what it received on its own: no hand-off between
 * threads on a connect()'s path, and no second thread woken with it
 * (waking another thread costs an inter-processor interrupt: measured, a
 * hand-off or a second waiter made a round trip half as long again). With
 * SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6) the kernel wakes the
 * receiver on the caller's CPU and the caller on the receiver's.
 *
 * One waits at a time. While none does (the one that received is
 * answering), a timer runs: an answer that takes longer than
 * POOL_STALL_NS (a connect() that blocks on a listener's full backlog or
 * a TCP handshake) makes the supervisor's own thread start another
 * receiver, so the session's other calls are not held up by it beyond
 * that; a thread that finishes while another waits ends. At MAX_THREADS
 * blocked at once the session's further calls wait until one ends (the
 * timer then retries every POOL_FULL_NS); a connect() whose caller is gone
 * ends at its next tick (connect_on_behalf), so only that many callers
 * waiting at once hold them. The supervisor's thread otherwise
 * only waits for the end (POLLHUP: no process uses the filter any more),
 * and requests do not wake it.
 *
 * The pool belongs to its supervisor (not static: a process that runs a
 * session after another must not inherit the first one's state) and is
 * freed by the last thread that leaves it.
 */
#define POOL_STALL_NS 2000000L
#define POOL_FULL_NS 100000000L

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int listener;		/* -1 until the worker sent it */
	int timer;		/* a timerfd: armed while no thread receives */
	const struct sbx_unix_policy *pol;
	struct own_sockets own;	/* what the session bound */
	size_t notif_size;
	bool done;		/* no process uses the filter any more */
	unsigned idle;		/* threads waiting for a request, or made to */
	unsigned threads;	/* receiving threads alive, or being made */
	unsigned refs;
};

static void pool_put(struct pool *p)
{
	bool last;

	pthread_mutex_lock(&p->lock);
	last = --p->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (last) {
		if (p->timer >= 0)
			close(p->timer);
		if (p->listener >= 0)
			close(p->listener);	/* no thread can use it any more */
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->own.lock);
		pthread_mutex_destroy(&p->lock);
		free(p);
	}
}

/* Arm (no thread receives) or disarm the stall timer. With the lock. */
static void pool_timer_in(struct pool *p, long ns)
{
	struct itimerspec it = { .it_value = { .tv_nsec = ns } };

	(void)timerfd_settime(p->timer, 0, &it, NULL);
}

static void pool_timer(struct pool *p, bool arm)
{
	pool_timer_in(p, arm ? POOL_STALL_NS : 0);
}

static void *receiver(void *arg);

/* One more receiving thread, counted idle from now on. With the lock;
 * false when none could be made (or too many are). */
static bool receiver_start(struct pool *p)
{
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;

	if (p->threads >= MAX_THREADS || pthread_attr_init(&attr) != 0)
		return false;
	p->idle++;
	p->threads++;
	p->refs++;
	if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
	    pthread_create(&t, &attr, receiver, p) == 0)
		started = true;
	pthread_attr_destroy(&attr);
	if (!started) {
		p->idle--;
		p->threads--;
		p->refs--;	/* the caller holds a reference: never the last */
	} else if (p->idle == 1) {
		pool_timer(p, false);
	}
	return started;
}

/* Wait for one request into req: 1 with one, 0 to try again (a signal, or
 * a caller that died before it was received), -1 when no process uses
 * the filter any more. */
static int receive_one(struct pool *p, struct seccomp_notif *req)
{
	struct pollfd pf = { .fd = p->listener, .events = POLLIN };

	/* The kernel wants the whole (kernel-sized) request zeroed. */
	memset(req, 0, p->notif_size);
	if (ioctl(p->listener, SECCOMP_IOCTL_NOTIF_RECV, req) == 0)
		return 1;
	if (errno == EINTR)
		return 0;
	/* ENOENT: the caller died meanwhile, or (Linux 6.6 on) nothing
	 * uses the filter any more and every receive fails at once. poll()
	 * tells the two apart, and waits for the next request otherwise. */
	if (poll(&pf, 1, -1) < 0)
		return errno == EINTR ? 0 : -1;
	return pf.revents & (POLLHUP | POLLERR | POLLNVAL) ? -1 : 0;
}

static void *receiver(void *arg)
{
	struct pool *p = arg;
	struct seccomp_notif *req = NULL;
	bool counted_idle = true;

	pthread_mutex_lock(&p->lock);
	while (p->listener < 0 && !p->done)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
	req = calloc(1, p->notif_size ? p->notif_size : sizeof(*req));
	while (req && !__atomic_load_n(&p->done, __ATOMIC_SEQ_CST)) {
		struct job j;
		int got = receive_one(p, req);

		if (got < 0)
			break;
		if (got == 0)
			continue;
		pthread_mutex_lock(&p->lock);
		counted_idle = false;
		if (--p->idle == 0)
			pool_timer(p, true);	/* none receives meanwhile */
		pthread_mutex_unlock(&p->lock);

		j.listener = p->listener;
		j.pol = p->pol;
		j.own = &p->own;
		j.req = *req;
		answer(&j);

		pthread_mutex_lock(&p->lock);
		if (p->idle >= 1 || p->done) {
			pthread_mutex_unlock(&p->lock);
			break;		/* another receives: this one ends */
		}
		p->idle++;
		counted_idle = true;
		pool_timer(p, false);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_lock(&p->lock);
	if (counted_idle && --p->idle == 0 && !p->done)
		pool_timer(p, true);
	p->threads--;
	pthread_mutex_unlock(&p->lock);
	free(req);
	if (tick_ready) {
		timer_delete(tick_timer);
		tick_ready = false;
	}
	pool_put(p);
	return NULL;
}

/* Until no process uses the filter (0; 1 on an error): POLLHUP and
 * POLLERR of the listener (events 0: a request does not wake this
 * thread), and the stall timer, which starts a receiver when none has
 * waited for POOL_STALL_NS. */
static int wait_end(struct pool *p)
{
	for (;;) {
		struct pollfd pf[2] = { { .fd = p->listener, .events = 0 },
					{ .fd = p->timer, .events = POLLIN } };
		uint64_t ticks;

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pf[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			return 0;
		if (!(pf[1].revents & POLLIN))
			continue;
		(void)!read(p->timer, &ticks, sizeof(ticks));
		pthread_mutex_lock(&p->lock);
		if (p->idle == 0 && !p->done && !receiver_start(p))
			pool_timer_in(p, POOL_FULL_NS);	/* full: try again later */
		pthread_mutex_unlock(&p->lock);
	}
}

/* Receive one fd over a unix socket (SCM_RIGHTS). */
static int recv_fd(int chan)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(chan, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
	    c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(fd));
	return fd;
}

int sbx_unix_send_listener(int chan, int listener)
{
	char byte = 'L', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &listener, sizeof(listener));
	return sendmsg(chan, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* The supervisor, in a process of its own or a thread of the init: 0 when
 * no process uses the filter any more (or the worker failed before it),
 * 1 on an error. It never exits the process. */
static int supervise(int chan, const struct sbx_unix_policy *pol)
{
	struct seccomp_notif_sizes sizes;
	struct pool *p = calloc(1, sizeof(*p));
	int listener, result = 1;

	if (!p) {
		close(chan);
		return 1;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->own.lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->listener = -1;
	p->pol = pol;
	p->refs = 1;
	tick_signal_setup();
	p->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	/* The receiver, made while the worker is still on its way. */
	pthread_mutex_lock(&p->lock);
	if (p->timer >= 0)
		(void)receiver_start(p);
	pthread_mutex_unlock(&p->lock);
	listener = recv_fd(chan);
	close(chan);
	/* No listener: the worker failed before its filter; it ends the
	 * session itself. No timer or no thread: no supervisor. Without
	 * one a notifying filter answers ENOSYS, so nothing is let through
	 * either way. */
	if (listener >= 0 && p->timer >= 0 &&
	    syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0) {
		/* The kernel's request may be larger than this header's. */
		size_t size = sizes.seccomp_notif > sizeof(struct seccomp_notif) ?
				      sizes.seccomp_notif : sizeof(struct seccomp_notif);

		/* An older kernel refuses the flag: the same without it. */
		(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
			    SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
		pthread_mutex_lock(&p->lock);
		p->notif_size = size;
		p->listener = listener;
		pthread_cond_broadcast(&p->cond);
		if (p->threads > 0 || receiver_start(p))
			result = 0;
		pthread_mutex_unlock(&p->lock);
		if (result == 0)
			result = wait_end(p);
	} else if (listener < 0) {
		result = 0;
	}
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->done, true, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&p->cond);
	if (listener >= 0 && p->listener != listener)
		close(listener);	/* never the pool's: the last user closes that */
	pthread_mutex_unlock(&p->lock);
	pool_put(p);
	return result;
}

int sbx_unix_channel(int *worker_end, int *supervisor_end, struct sbx_error *err)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
		return sbx_error_set(err, errno, "unix supervisor: socketpair: %s", strerror(errno));
	*worker_end = sp[0];
	*supervisor_end = sp[1];
	return 0;
}

struct supervisor_thread {
	int chan;
	const struct sbx_unix_policy *pol;
};

static void *supervisor_thread(void *arg)
{
	struct supervisor_thread t = *(struct supervisor_thread *)arg;

	free(arg);
	(void)supervise(t.chan, t.pol);
	return NULL;
}

int sbx_unix_supervisor_thread(const struct sbx_unix_policy *pol, int supervisor_end,
			       struct sbx_error *err)
{
	struct supervisor_thread *t = malloc(sizeof(*t));
	pthread_attr_t attr;
	pthread_t id;
	int e;

	if (!t) {
		close(supervisor_end);
		return sbx_error_set(err, ENOMEM, "unix supervisor: out of memory");
	}
	t->chan = supervisor_end;
	t->pol = pol;
	/* The init's own thread too: a tick never reaches it. */
	tick_signal_setup();
	e = pthread_attr_init(&attr);
	if (e == 0) {
		e = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (e == 0)
			e = pthread_create(&id, &attr, supervisor_thread, t);
		pthread_attr_destroy(&attr);
	}
	if (e != 0) {
		free(t);
		close(supervisor_end);
		return sbx_error_set(err, e, "unix supervisor: pthread_create: %s", strerror(e));
	}
	return 0;
}

int sbx_unix_supervisor_start(const struct sbx_unix_policy *pol, bool in_userns, int *chan_out,
			      pid_t *pid_out, struct sbx_error *err)
{
	struct sbx_error e = { 0 };
	int sp[2], r;
	pid_t pid;

	r = sbx_unix_channel(&sp[0], &sp[1], err);
	if (r)
		return r;
	pid = fork();
	if (pid < 0) {
		int x = errno;

		close(sp[0]);
		close(sp[1]);
		return sbx_error_set(err, x, "unix supervisor: fork: %s", strerror(x));
	}
	if (pid == 0) {
		/* Nothing of the session but its channel; default signals,
		 * no capabilities, no way to gain any. It is not dumpable
		 * (inherited): the sandbox runs as the same uid. */
		close(sp[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
			_exit(1);
		if (sp[1] != 3 && (dup2(sp[1], 3) < 0 || close(sp[1]) != 0))
			_exit(1);
		if (sbx_fd_close_above(3, &e) != 0)
			_exit(1);
		/* Nothing is resolved against this process's own cwd (the
		 * real home under the sandbox's tmpfs, for the outer
		 * process): relative paths use the caller's. */
		if (chdir("/") != 0)
			_exit(1);
		sbx_signals_reset();
		/* Without a user namespace there is nothing to drop (and no
		 * CAP_SETPCAP to clear the bounding set with). */
		if ((sbx_caps_drop_all(&e) != 0 && in_userns) ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
			dprintf(STDERR_FILENO, "agent-sandbox: unix supervisor: %s\n",
				e.msg[0] ? e.msg : "no_new_privs");
			_exit(1);
		}
		_exit(supervise(3, pol));
	}
	close(sp[1]);
	*chan_out = sp[0];
	*pid_out = pid;
	return 0;
}
