/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for unixsock.c: connect() decided by the supervisor outside the filter. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <linux/netlink.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

/*
 * A host daemon's socket: root-owned, mode 0666, in a root-owned directory
 * outside every place the agent may write (the case that escaped: the read-
 * only mount view and Landlock below ABI 9 do not stop connect()). The test
 * child drops to the agent, starts the supervisor, loads the filter with
 * unix_notify, hands it the listener, then tries.
 */
static char host_dir[64], host_sock[128], tmp_dir[128];

static int host_fd = -1;

static int child_bind(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || listen(fd, 8) != 0)
		return -1;
	return fd;
}

/* connect() to path: 0 or the errno. */
static int try_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return errno;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	e = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : errno;
	close(fd);
	return e;
}

static int try_abstract(const char *name)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), e;
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));

	memcpy(sun.sun_path + 1, name, strlen(name));
	e = connect(fd, (struct sockaddr *)&sun, len) == 0 ? 0 : errno;
	close(fd);
	return e;
}

struct thread_arg {
	const char *path;
	int result;
};

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* connect() with the caller's own SO_SNDTIMEO: the errno (0 connected),
 * and in *ms how long it took. */
static int connect_timeout(int family, const struct sockaddr *sa, socklen_t len, int timeout_ms,
			   long long *ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), e;
	long long t0 = ms_now();

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
		return -1;
	e = connect(fd, sa, len) == 0 ? 0 : errno;
	*ms = ms_now() - t0;
	close(fd);
	return e;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A caller whose blocking connect() is interrupted every 10 ms and
 * restarted (SA_RESTART): each restart is a new request to the supervisor,
 * and the one before is abandoned. A second thread meanwhile keeps
 * changing what the caller owns of the socket (SO_SNDTIMEO to "forever"
 * and back, O_NONBLOCK on and off): nothing of it may bound, or unbound,
 * the supervisor's wait. */
static volatile int racing_fd = -1;

static void *race_socket(void *arg)
{
	struct timeval forever = { 0, 0 }, short_tv = { 0, 1000 };

	(void)arg;
	for (unsigned i = 0;; i++) {
		int fd = racing_fd;

		if (fd < 0)
			continue;
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, i & 1 ? &forever : &short_tv,
				 sizeof(forever));
		(void)fcntl(fd, F_SETFL, i & 2 ? O_NONBLOCK : 0);
	}
	return NULL;
}

static pid_t restarting_caller(const struct sockaddr_un *sun)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
		struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
		pthread_t racer;

		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
		if (pthread_create(&racer, NULL, race_socket, NULL) != 0)
			_exit(1);
		for (;;) {
			int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

			racing_fd = fd;
			(void)connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
			racing_fd = -1;
			close(fd);
		}
	}
	return pid;
}

/* A program that sets no timeout and whose blocking connect() is
 * interrupted (SA_RESTART) every 150 ms while the listener is full: it
 * connects once a place is free, and its socket keeps no timeout. 0, or
 * what went wrong. */
static int restarted_connect(const struct sockaddr_un *sun)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 150000 }, { 0, 150000 } };
	struct timeval tv = { 1, 1 };
	socklen_t tlen = sizeof(tv);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0 ? 0 : errno;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	if (r)
		return 10 + (r & 0x3f);
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &tlen) != 0 || tv.tv_sec || tv.tv_usec)
		return 2;
	return 0;
}

struct tcp_arg {
	struct sockaddr_in sin;
	int result;
};

/* A blocking TCP connect: its errno (0 connected). */
static void *thread_tcp(void *arg)
{
	struct tcp_arg *t = arg;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	t->result = connect(fd, (struct sockaddr *)&t->sin, sizeof(t->sin)) == 0 ? 0 : errno;
	close(fd);
	return NULL;
}

static void *thread_connect(void *arg)
{
	struct thread_arg *t = arg;

	t->result = try_connect(t->path);
	return NULL;
}

static int child(void *arg)
{
	struct sbx_unix_policy pol;
	struct sbx_seccomp_opts o = { .unix_notify = true, .unix_bind_notify = true };
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err = { 0 };
	char mine[200], link[200], rel[64], foreign_sock[200], stale[200];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sin);
	struct thread_arg t;
	pthread_t th;
	pid_t sup;
	char secret_sock[200];
	int chan, own, secret, foreign, tcp, fd, e;

	(void)arg;
	/* Dropping from root left this process non-dumpable; the sandbox's
	 * program is dumpable (see the non-dumpable case below). */
	CHILD_CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);
	sbx_profile_init_default(&p);
	/* A secret socket inside the workspace. */
	snprintf(secret_sock, sizeof(secret_sock), "%s/ws/secret.sock", tmp_dir);
	snprintf(p.deny_read[p.n_deny_read++], SBX_PATH_MAX, "%s", secret_sock);
	memset(&s, 0, sizeof(s));
	s.uid = getuid();
	snprintf(s.home, sizeof(s.home), "%s/home", tmp_dir);
	snprintf(s.workspace, sizeof(s.workspace), "%s/ws", tmp_dir);
	CHILD_CHECK(sbx_unix_policy_build(&p, &s, false, true, &pol, &err) == 0);
	/* The policy's places: the workspace, home, /tmp, /dev/shm. */
	CHILD_CHECK(sbx_unix_path_verdict(&pol, "/tmp/x.sock") == SBX_UNIX_IF_OWN);
	CHILD_CHECK(sbx_unix_path_verdict(&pol, host_sock) == SBX_UNIX_REFUSE);
	CHILD_CHECK(sbx_unix_path_verdict(&pol, "/tmpx/y") == SBX_UNIX_REFUSE);

	snprintf(mine, sizeof(mine), "%s/ws/mine.sock", tmp_dir);
	snprintf(stale, sizeof(stale), "%s/ws/stale.sock", tmp_dir);
	snprintf(link, sizeof(link), "/tmp/sbx-test-unix-link-%d", (int)getpid());
	/* A socket of this very uid in the workspace, bound before the
	 * filter: the same as one bound by the agent's own tmux or IDE
	 * outside the sandbox. */
	snprintf(foreign_sock, sizeof(foreign_sock), "%s/ws/foreign.sock", tmp_dir);
	foreign = child_bind(foreign_sock);
	CHILD_CHECK(foreign >= 0);
	CHILD_CHECK(try_connect(foreign_sock) == 0);	/* control, before the filter */
	secret = child_bind(secret_sock);
	CHILD_CHECK(secret >= 0);
	CHILD_CHECK(try_connect(secret_sock) == 0);	/* control, before the filter */
	CHILD_CHECK(symlink(host_sock, link) == 0);
	/* Controls before the filter: the host socket answers anyone. */
	CHILD_CHECK(try_connect(host_sock) == 0);
	CHILD_CHECK(try_connect(link) == 0);
	tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHILD_CHECK(tcp >= 0 && bind(tcp, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
		    listen(tcp, 4) == 0 && getsockname(tcp, (struct sockaddr *)&sin, &slen) == 0);

	CHILD_CHECK(sbx_unix_supervisor_start(&pol, false, &chan, &sup, &err) == 0);
	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	if (sbx_seccomp_apply(&o, &err) != 0) {
		fprintf(stderr, "seccomp: %s\n", err.msg);
		return 1;
	}
	CHILD_CHECK(o.notify_fd >= 0);
	CHILD_CHECK(sbx_unix_send_listener(chan, o.notify_fd) == 0);
	close(o.notify_fd);
	close(chan);
	/* The session's own socket, bound through the supervisor. */
	own = child_bind(mine);
	CHILD_CHECK(own >= 0);

	/* Refused: a socket of the same uid in a place the session may write
	 * that the session did not bind; one it bound whose listener is gone
	 * (nothing tells it from one bound in another network namespace). */
	CHILD_CHECK(try_connect(foreign_sock) == EACCES);
	fd = child_bind(stale);
	CHILD_CHECK(fd >= 0 && try_connect(stale) == 0);
	close(fd);
	CHILD_CHECK(try_connect(stale) == EACCES);
	unlink(stale);
	/* Refused: the host daemon, also through a symlink the agent made in
	 * a place it may write, and a non-socket outside (the kernel alone
	 * would say ECONNREFUSED). */
	e = try_connect(host_sock);
	if (e != EACCES) {
		fprintf(stderr, "host socket: %s\n", strerror(e));
		return 1;
	}
	CHILD_CHECK(try_connect(link) == EACCES);
	CHILD_CHECK(try_connect("/etc/passwd") == EACCES);
	/* Allowed: its own socket, by absolute and relative path, and from a
	 * thread that does not lead its group. */
	CHILD_CHECK(try_connect(mine) == 0);
	snprintf(rel, sizeof(rel), "ws/mine.sock");
	CHILD_CHECK(chdir(tmp_dir) == 0);
	CHILD_CHECK(try_connect(rel) == 0);
	t.path = mine;
	t.result = -1;
	CHILD_CHECK(pthread_create(&th, NULL, thread_connect, &t) == 0);
	CHILD_CHECK(pthread_join(th, NULL) == 0);
	CHILD_CHECK(t.result == 0);
	/* A missing socket is what the kernel would say. */
	CHILD_CHECK(try_connect("ws/missing.sock") == ENOENT);
	/* Abstract names: refused without a private network namespace. */
	CHILD_CHECK(try_abstract("sbx-test-unix-abstract") == EACCES);
	/* Other families are connected on behalf: a TCP listener of its own. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	close(fd);
	/* Datagram sockets would name a peer per send: none. SOCK_RAW is
	 * one too for AF_UNIX (the kernel makes it SOCK_DGRAM). */
	CHILD_ERRNO(socket(AF_UNIX, SOCK_DGRAM, 0), EPERM);
	CHILD_ERRNO(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), EPERM);
	CHILD_ERRNO(socket(AF_UNIX, SOCK_RAW, 0), EPERM);
	CHILD_ERRNO(socket(AF_UNIX, SOCK_RDM, 0), EPERM);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHILD_CHECK(fd >= 0);
	close(fd);
	/* Magic links would be resolved in the supervisor's context (its
	 * /proc/self is not the caller's): refused. The kernel alone would
	 * have connected this one. */
	CHILD_CHECK(try_connect("/proc/self/cwd/ws/mine.sock") == EACCES);
	/* An address longer than a sockaddr_un is the kernel's EINVAL, and
	 * the supervisor is still there afterwards. */
	{
		struct sockaddr_storage ss;
		struct sockaddr_un *sun = (struct sockaddr_un *)&ss;

		memset(&ss, 'A', sizeof(ss));
		sun->sun_family = AF_UNIX;
		sun->sun_path[0] = '/';
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(fd >= 0);
		CHILD_ERRNO(connect(fd, (struct sockaddr *)&ss, sizeof(ss)), EINVAL);
		close(fd);
		CHILD_CHECK(try_connect(mine) == 0);
	}
	/* A secret stays one, socket or not, in a place it may write. */
	CHILD_CHECK(try_connect(secret_sock) == EACCES);
	/* A connect() that blocks (its listener's queue is full) holds up
	 * no other: the next one is answered while it waits, and it
	 * completes once the listener accepts. Two at once too: the
	 * supervisor's one receiving thread answers each and, when an answer
	 * stalls, another is started (lib/unixsock.c), twice here. */
	{
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		struct thread_arg t2;
		pthread_t th2;
		char full[200];
		int lst, first;

		snprintf(full, sizeof(full), "%s/ws/full.sock", tmp_dir);
		CHILD_CHECK(strlen(full) < sizeof(sun.sun_path));
		memcpy(sun.sun_path, full, strlen(full) + 1);
		lst = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(lst >= 0 && bind(lst, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
			    listen(lst, 0) == 0);
		first = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(first >= 0 && connect(first, (struct sockaddr *)&sun, sizeof(sun)) == 0);
		t.path = full;
		t.result = -1;
		CHILD_CHECK(pthread_create(&th, NULL, thread_connect, &t) == 0);
		usleep(200 * 1000);
		CHILD_CHECK(__atomic_load_n(&t.result, __ATOMIC_SEQ_CST) == -1);	/* waiting */
		alarm(10);	/* a hang is a failure, not a stuck test */
		CHILD_CHECK(try_connect(mine) == 0);
		t2.path = full;
		t2.result = -1;
		CHILD_CHECK(pthread_create(&th2, NULL, thread_connect, &t2) == 0);
		usleep(200 * 1000);
		CHILD_CHECK(__atomic_load_n(&t2.result, __ATOMIC_SEQ_CST) == -1);
		CHILD_CHECK(__atomic_load_n(&t.result, __ATOMIC_SEQ_CST) == -1);
		CHILD_CHECK(try_connect(mine) == 0);
		CHILD_CHECK(try_connect("/etc/passwd") == EACCES);
		alarm(0);
		/* The caller's own timeout still ends its connect, with what the
		 * kernel says (the supervisor's wait is cut every 100 ms). */
		{
			long long ms = 0;

			CHILD_CHECK(connect_timeout(AF_UNIX, (struct sockaddr *)&sun, sizeof(sun), 300,
						    &ms) == EAGAIN);
			CHILD_CHECK(ms >= 250 && ms < 3000);
		}
		/* A caller that restarts its connect every 10 ms for a second
		 * (100 requests, each abandoning the one before; another thread
		 * changing the socket's timeout and O_NONBLOCK all along) holds
		 * no thread for long: the session's next connects are answered.
		 * Before the ticks each abandoned one held a thread to the end,
		 * and the pool (64) was full within 0.7 s. */
		{
			pid_t rc = restarting_caller(&sun);

			CHILD_CHECK(rc > 0);
			sleep(1);
			alarm(10);
			CHILD_CHECK(try_connect(mine) == 0);
			alarm(0);
			CHILD_CHECK(kill(rc, SIGKILL) == 0 && waitpid(rc, NULL, 0) == rc);
			/* A connect made on behalf of a caller that is gone ends
			 * at its next tick; one that wins a free place first
			 * connects for nobody. Let them end before the places
			 * free up below. */
			usleep(300 * 1000);
		}
		for (int k = 0; k < 2; k++) {
			fd = accept4(lst, NULL, NULL, SOCK_CLOEXEC);
			CHILD_CHECK(fd >= 0);
			close(fd);
		}
		CHILD_CHECK(pthread_join(th, NULL) == 0);
		CHILD_CHECK(pthread_join(th2, NULL) == 0);
		CHILD_CHECK(t.result == 0 && t2.result == 0);
		close(first);
		close(lst);
		unlink(full);
	}
	/* A program's connect interrupted and restarted while it waits: it
	 * connects when a place frees up, and keeps no timeout of the
	 * supervisor's (the first version of the bound lowered the socket's
	 * SO_SNDTIMEO, and such a program got EAGAIN). */
	{
		struct sockaddr_un rs = { .sun_family = AF_UNIX };
		int rl, r1, st = -1;
		pid_t pc;

		CHILD_CHECK(strlen(tmp_dir) + sizeof("/ws/restart.sock") <= sizeof(rs.sun_path));
		memcpy(rs.sun_path, tmp_dir, strlen(tmp_dir));
		memcpy(rs.sun_path + strlen(tmp_dir), "/ws/restart.sock", sizeof("/ws/restart.sock"));
		rl = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(rl >= 0 && bind(rl, (struct sockaddr *)&rs, sizeof(rs)) == 0 &&
			    listen(rl, 0) == 0);
		r1 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(r1 >= 0 && connect(r1, (struct sockaddr *)&rs, sizeof(rs)) == 0);
		pc = fork();
		CHILD_CHECK(pc >= 0);
		if (pc == 0)
			_exit(restarted_connect(&rs));
		usleep(600 * 1000);
		fd = accept4(rl, NULL, NULL, SOCK_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		close(fd);
		alarm(10);
		CHILD_CHECK(waitpid(pc, &st, 0) == pc);
		alarm(0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "restarted connect: status %#x\n", st);
		CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(r1);
		close(rl);
		unlink(rs.sun_path);
	}
	/* TCP through the ticks: a full accept queue drops the SYN, so a
	 * connect waits for its retransmission (1 s). With the caller's own
	 * 300 ms timeout it says EINPROGRESS, as the kernel does; without
	 * one it connects once a place is free, across ten ticks. */
	{
		struct sockaddr_in fsin = { .sin_family = AF_INET };
		socklen_t flen = sizeof(fsin);
		struct tcp_arg ta;
		pthread_t tht;
		long long ms = 0;
		int fl, f1;

		fsin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(fl >= 0 && bind(fl, (struct sockaddr *)&fsin, sizeof(fsin)) == 0 &&
			    listen(fl, 0) == 0 &&
			    getsockname(fl, (struct sockaddr *)&fsin, &flen) == 0);
		f1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHILD_CHECK(f1 >= 0 && connect(f1, (struct sockaddr *)&fsin, sizeof(fsin)) == 0);
		CHILD_CHECK(connect_timeout(AF_INET, (struct sockaddr *)&fsin, sizeof(fsin), 300,
					    &ms) == EINPROGRESS);
		CHILD_CHECK(ms >= 250 && ms < 3000);
		ta.sin = fsin;
		ta.result = -1;
		CHILD_CHECK(pthread_create(&tht, NULL, thread_tcp, &ta) == 0);
		usleep(300 * 1000);
		CHILD_CHECK(__atomic_load_n(&ta.result, __ATOMIC_SEQ_CST) == -1);
		fd = accept4(fl, NULL, NULL, SOCK_CLOEXEC);
		CHILD_CHECK(fd >= 0);
		close(fd);
		alarm(20);
		CHILD_CHECK(pthread_join(tht, NULL) == 0);
		alarm(0);
		CHILD_CHECK(ta.result == 0);
		close(f1);
		close(fl);
	}
	{
		int sv[2];

		CHILD_ERRNO(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), EPERM);
		CHILD_ERRNO(socketpair(AF_UNIX, SOCK_RAW, 0, sv), EPERM);
		CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
		close(sv[0]);
		close(sv[1]);
	}
	/* A caller cannot make itself non-dumpable, which would give the
	 * supervisor no access to its fds (ssh-agent does it before it
	 * binds): the call succeeds and changes nothing. */
	CHILD_CHECK(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0);
	CHILD_CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1);
	CHILD_CHECK(try_connect(mine) == 0);
	/* Without the supervisor the filter answers ENOSYS: closed. */
	CHILD_CHECK(kill(sup, SIGKILL) == 0);
	CHILD_CHECK(waitpid(sup, NULL, 0) == sup);
	CHILD_CHECK(try_connect(mine) == ENOSYS);
	CHILD_CHECK(try_connect(host_sock) == ENOSYS);
	close(own);
	close(secret);
	close(foreign);
	close(tcp);
	unlink(mine);
	unlink(foreign_sock);
	unlink(secret_sock);
	unlink(link);
	return 0;
}

/* What a path is to the session: a deny_read entry refuses whatever else
 * allows it, unix_allow allows, a place the session may write allows only
 * the session's own sockets, anything else is refused. */
static void test_path_verdict(void **state)
{
	struct sbx_unix_policy *pol = calloc(1, sizeof(*pol));
	struct sbx_profile *p = calloc(1, sizeof(*p));
	struct sbx_session s;
	struct sbx_error err = { 0 };

	(void)state;
	assert_non_null(pol);
	assert_non_null(p);
	sbx_profile_init_default(p);
	p->n_deny_read = 0;
	snprintf(p->deny_read[p->n_deny_read++], SBX_PATH_MAX, "/srv/ws/secret");
	snprintf(p->unix_allow[p->n_unix_allow++], SBX_PATH_MAX, "/run/shared");
	snprintf(p->unix_allow[p->n_unix_allow++], SBX_PATH_MAX, "/srv/ws/secret/allowed.sock");
	memset(&s, 0, sizeof(s));
	s.uid = 1234;
	snprintf(s.home, sizeof(s.home), "/home/agent");
	snprintf(s.workspace, sizeof(s.workspace), "/srv/ws");
	assert_int_equal(sbx_unix_policy_build(p, &s, true, true, pol, &err), 0);
	assert_false(pol->bind_on_behalf);
	assert_int_equal(sbx_unix_path_verdict(pol, "/srv/ws/x.sock"), SBX_UNIX_IF_OWN);
	assert_int_equal(sbx_unix_path_verdict(pol, "/home/agent/.gnupg/S.gpg-agent"),
			 SBX_UNIX_IF_OWN);
	assert_int_equal(sbx_unix_path_verdict(pol, "/tmp/tmux-1234/default"), SBX_UNIX_IF_OWN);
	assert_int_equal(sbx_unix_path_verdict(pol, "/dev/shm/x"), SBX_UNIX_IF_OWN);
	assert_int_equal(sbx_unix_path_verdict(pol, "/run/shared/db.sock"), SBX_UNIX_ALLOW);
	assert_int_equal(sbx_unix_path_verdict(pol, "/srv/ws/secret/allowed.sock"), SBX_UNIX_REFUSE);
	assert_int_equal(sbx_unix_path_verdict(pol, "/srv/wsx/x.sock"), SBX_UNIX_REFUSE);
	assert_int_equal(sbx_unix_path_verdict(pol, "/run/docker.sock"), SBX_UNIX_REFUSE);
	/* Without a private network namespace bind() is decided here. */
	assert_int_equal(sbx_unix_policy_build(p, &s, false, true, pol, &err), 0);
	assert_true(pol->bind_on_behalf);
	free(p);
	free(pol);
}

/*
 * The report's line, in every case a session can be in: bind() made on
 * the program's behalf or only recorded, unix_allow or none, abstract
 * names private or refused. Each fits a report entry's detail whole: its
 * last clause is there, and so is each part that case adds.
 */
static void test_describe_fits(void **state)
{
	struct sbx_unix_policy *pol = calloc(1, sizeof(*pol));
	struct sbx_report_entry e;
	size_t longest = 0;

	(void)state;
	assert_non_null(pol);
	for (unsigned c = 0; c < 8; c++) {
		bool bind = c & 1, allow = c & 2, abstract = c & 4;
		char line[sizeof(e.detail) + 64];

		memset(pol, 0, sizeof(*pol));
		pol->n_allow = allow;
		pol->abstract_ok = abstract;
		pol->bind_on_behalf = bind;
		sbx_unix_policy_describe(pol, line, sizeof(line));
		if (strlen(line) >= sizeof(e.detail))
			fail_msg("%zu bytes, more than a detail holds: %s", strlen(line), line);
		longest = strlen(line) > longest ? strlen(line) : longest;
		assert_true(!strcmp(line + strlen(line) - strlen("; unix datagram refused"),
				    "; unix datagram refused"));
		assert_non_null(strstr(line, "only sockets this session bound"));
		assert_non_null(strstr(line, "not this uid's others"));
		assert_true(!!strstr(line, "bind() made on its behalf") == bind);
		assert_true(!!strstr(line, "bind() recorded") == !bind);
		assert_true(!!strstr(line, ", and unix_allow") == allow);
		assert_true(!!strstr(line, "abstract names in its own network namespace only") ==
			    abstract);
		assert_true(!!strstr(line, "abstract names refused (no private network namespace)") == !abstract);
	}
	/* The longest case is the one with every clause. */
	assert_true(longest > 200);
	free(pol);
}

static void test_supervisor(void **state)
{
	char path[200];

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child, NULL)), 0);
	/* Nobody reached the host daemon after the filter: only the two
	 * control connects before it were accepted. */
	{
		int n = 0, c;

		while ((c = accept4(host_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
			close(c);
			n++;
		}
		assert_int_equal(n, 2);
	}
	snprintf(path, sizeof(path), "%s/ws/mine.sock", tmp_dir);
	unlink(path);
}

/*
 * Without a private network namespace abstract names are the host's: a
 * name the program bound would be reached by host clients. bind() then
 * goes to the supervisor as well.
 */
static int bind_errno(int fd, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	return bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : errno;
}

static int new_unix(void)
{
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

static char outside_dir[200];	/* the agent's own, outside every place it may write */

static int child_bind_mediated(void *arg)
{
	struct sbx_unix_policy pol;
	struct sbx_seccomp_opts o = { .unix_notify = true, .unix_bind_notify = true };
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err = { 0 };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	socklen_t slen;
	char path[200], link[200], secret[200], outside[220];
	struct stat st;
	pid_t sup;
	int chan, fd, e;

	(void)arg;
	CHILD_CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);
	sbx_profile_init_default(&p);
	snprintf(secret, sizeof(secret), "%s/ws/secret.sock", tmp_dir);
	snprintf(p.deny_read[p.n_deny_read++], SBX_PATH_MAX, "%s", secret);
	memset(&s, 0, sizeof(s));
	s.uid = getuid();
	snprintf(s.home, sizeof(s.home), "%s/home", tmp_dir);
	snprintf(s.workspace, sizeof(s.workspace), "%s/ws", tmp_dir);
	CHILD_CHECK(sbx_unix_policy_build(&p, &s, false, true, &pol, &err) == 0);
	snprintf(link, sizeof(link), "%s/ws/out-link", tmp_dir);
	CHILD_CHECK(symlink(outside_dir, link) == 0);
	snprintf(outside, sizeof(outside), "%s/s.sock", outside_dir);
	/* Control before the filter: the kernel alone lets the agent make a
	 * socket in its own directory outside the session's places. */
	fd = new_unix();
	CHILD_CHECK(fd >= 0 && bind_errno(fd, outside) == 0);
	close(fd);
	CHILD_CHECK(unlink(outside) == 0);

	CHILD_CHECK(sbx_unix_supervisor_start(&pol, false, &chan, &sup, &err) == 0);
	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	if (sbx_seccomp_apply(&o, &err) != 0) {
		fprintf(stderr, "seccomp: %s\n", err.msg);
		return 1;
	}
	CHILD_CHECK(sbx_unix_send_listener(chan, o.notify_fd) == 0);
	close(o.notify_fd);
	close(chan);

	/* Refused: an abstract name (the host's namespace). */
	fd = new_unix();
	CHILD_CHECK(fd >= 0);
	memcpy(sun.sun_path + 1, "sbx-test-unix-squat", 19);
	CHILD_ERRNO(bind(fd, (struct sockaddr *)&sun,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 20)), EACCES);
	/* Allowed: an autobind (a random name the kernel picks). */
	CHILD_CHECK(bind(fd, (struct sockaddr *)&sun, sizeof(sa_family_t)) == 0);
	slen = sizeof(sun);
	CHILD_CHECK(getsockname(fd, (struct sockaddr *)&sun, &slen) == 0);
	CHILD_CHECK(slen == offsetof(struct sockaddr_un, sun_path) + 6 && sun.sun_path[0] == '\0');
	close(fd);
	/* Allowed: a pathname in the workspace, made with the caller's umask
	 * and owned by it, and a relative one; it then listens and connects. */
	umask(027);
	snprintf(path, sizeof(path), "%s/ws/made.sock", tmp_dir);
	fd = new_unix();
	CHILD_CHECK(fd >= 0 && bind_errno(fd, path) == 0 && listen(fd, 4) == 0);
	CHILD_CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == getuid());
	if ((st.st_mode & 0777) != 0750) {
		fprintf(stderr, "socket mode %o, not 750\n", (unsigned)(st.st_mode & 0777));
		return 1;
	}
	CHILD_CHECK(try_connect(path) == 0);
	/* The kernel's own answer for a name in use. */
	e = new_unix();
	CHILD_CHECK(e >= 0);
	CHILD_CHECK(bind_errno(e, path) == EADDRINUSE);
	close(e);
	close(fd);
	unlink(path);
	CHILD_CHECK(chdir(tmp_dir) == 0);
	fd = new_unix();
	CHILD_CHECK(fd >= 0 && bind_errno(fd, "ws/rel.sock") == 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/ws/rel.sock", tmp_dir);
	CHILD_CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	unlink(path);
	/* Refused: the agent's own directory outside the session's places,
	 * directly and through a symlink in the workspace; a deny_read path;
	 * a magic link. */
	fd = new_unix();
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(bind_errno(fd, outside) == EACCES);
	CHILD_CHECK(bind_errno(fd, "ws/out-link/s.sock") == EACCES);
	CHILD_CHECK(lstat(outside, &st) != 0 && errno == ENOENT);
	CHILD_CHECK(bind_errno(fd, secret) == EACCES);
	CHILD_CHECK(bind_errno(fd, "/proc/self/cwd/ws/x.sock") == EACCES);
	close(fd);
	/* Other families are bound on behalf: netlink, as getifaddrs() does. */
	{
		struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
		socklen_t nlen = sizeof(nl);

		fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
		CHILD_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&nl, sizeof(nl)) == 0);
		CHILD_CHECK(getsockname(fd, (struct sockaddr *)&nl, &nlen) == 0 && nl.nl_pid != 0);
		close(fd);
	}
	/* Without the supervisor: ENOSYS, closed. */
	CHILD_CHECK(kill(sup, SIGKILL) == 0);
	CHILD_CHECK(waitpid(sup, NULL, 0) == sup);
	fd = new_unix();
	CHILD_CHECK(fd >= 0);
	snprintf(path, sizeof(path), "%s/ws/late.sock", tmp_dir);
	CHILD_CHECK(bind_errno(fd, path) == ENOSYS);
	close(fd);
	unlink(link);
	return 0;
}

/* The child that makes a socket takes the sandbox's Landlock rules: the
 * workspace root, an ancestor of a deny_read hole inside it, is read-only
 * to Landlock (only the hole's siblings are granted), though it is one of
 * the session's places. */
static int child_bind_landlock(void *arg)
{
	static struct sbx_landlock_plan plan;
	struct sbx_unix_policy pol;
	struct sbx_seccomp_opts o = { .unix_notify = true, .unix_bind_notify = true };
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err = { 0 };
	char path[220];
	pid_t sup;
	int chan, fd;

	(void)arg;
	CHILD_CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);
	sbx_profile_init_default(&p);
	p.n_deny_read = 0;
	snprintf(p.deny_read[p.n_deny_read++], SBX_PATH_MAX, "%s/ws/hole/key", tmp_dir);
	memset(&s, 0, sizeof(s));
	s.uid = getuid();
	snprintf(s.home, sizeof(s.home), "%s/ws", tmp_dir);
	snprintf(s.workspace, sizeof(s.workspace), "%s/ws", tmp_dir);
	CHILD_CHECK(sbx_unix_policy_build(&p, &s, false, true, &pol, &err) == 0);
	if (sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, false), &plan, &err) != 0) {
		fprintf(stderr, "landlock plan: %s\n", err.msg);
		return 1;
	}
	pol.landlock = &plan;
	pol.landlock_abi = sbx_landlock_abi();
	CHILD_CHECK(pol.landlock_abi > 0);
	/* Control before the filter: the kernel alone lets it. */
	snprintf(path, sizeof(path), "%s/ws/root.sock", tmp_dir);
	fd = new_unix();
	CHILD_CHECK(fd >= 0 && bind_errno(fd, path) == 0);
	close(fd);
	CHILD_CHECK(unlink(path) == 0);

	CHILD_CHECK(sbx_unix_supervisor_start(&pol, false, &chan, &sup, &err) == 0);
	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHILD_CHECK(sbx_seccomp_apply(&o, &err) == 0);
	CHILD_CHECK(sbx_unix_send_listener(chan, o.notify_fd) == 0);
	close(o.notify_fd);
	close(chan);
	/* Refused: the workspace root (Landlock: read only there). */
	fd = new_unix();
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(bind_errno(fd, path) == EACCES);
	/* Allowed: a sibling of the hole, which Landlock grants. */
	snprintf(path, sizeof(path), "%s/ws/sub/ok.sock", tmp_dir);
	CHILD_CHECK(bind_errno(fd, path) == 0);
	close(fd);
	unlink(path);
	return 0;
}

static void test_bind_landlock(void **state)
{
	char path[220];

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	snprintf(path, sizeof(path), "%s/ws/hole", tmp_dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, sbx_test_uid(), sbx_test_gid()), 0);
	snprintf(path, sizeof(path), "%s/ws/sub", tmp_dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_bind_landlock, NULL)), 0);
}

static void test_bind_mediated(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	snprintf(outside_dir, sizeof(outside_dir), "%s/agent-own", host_dir);
	assert_int_equal(mkdir(outside_dir, 0700), 0);
	assert_int_equal(chown(outside_dir, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_bind_mediated, NULL)), 0);
}

static int setup(void **state)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char path[200];
	char *t;

	(void)state;
	if (geteuid() != 0)
		return 0;
	snprintf(host_dir, sizeof(host_dir), "/sbx-test-unix-XXXXXX");
	if (!mkdtemp(host_dir) || chmod(host_dir, 0755) != 0)
		return -1;
	snprintf(host_sock, sizeof(host_sock), "%s/daemon.sock", host_dir);
	memcpy(sun.sun_path, host_sock, strlen(host_sock) + 1);
	host_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (host_fd < 0 || bind(host_fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
	    chmod(host_sock, 0666) != 0 || listen(host_fd, 16) != 0)
		return -1;
	t = sbx_test_mkdtemp("unix");
	snprintf(tmp_dir, sizeof(tmp_dir), "%s", t);
	free(t);
	snprintf(path, sizeof(path), "%s/ws", tmp_dir);
	if (mkdir(path, 0755) != 0 || chown(path, sbx_test_uid(), sbx_test_gid()) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (host_fd >= 0)
		close(host_fd);
	if (host_dir[0])
		sbx_test_rmtree(host_dir);
	if (tmp_dir[0])
		sbx_test_rmtree(tmp_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_verdict),
		cmocka_unit_test(test_describe_fits),
		cmocka_unit_test(test_supervisor),
		cmocka_unit_test(test_bind_mediated),
		cmocka_unit_test(test_bind_landlock),
	};
	return cmocka_run_group_tests_name("unixsock", tests, setup, teardown);
}
