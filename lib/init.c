/* SPDX-License-Identifier: BSD-3-Clause */
/* The PID-1 init of the session's pid namespace and the outer supervisor. */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/*
 * Expected call sequence (no window where a signal is lost or kills us):
 *
 *   sbx_init_block_signals();          // before fork()
 *   pid = fork();
 *   child:  sbx_signals_reset(); ... exec
 *   parent: return sbx_init_supervise(pid);   // or sbx_wait_forward(pid)
 *
 * The signals stay blocked in the parent and are read from a signalfd, so
 * one that arrives between fork() and the supervisor's first read waits in
 * the pending set. Blocking also matters for PID 1: the kernel drops
 * signals whose disposition is SIG_DFL for a namespace init, but a blocked
 * signal is queued (kernel/signal.c sig_ignored()).
 */

static const int forwarded[] = {
	SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT,
};

static void supervised_set(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaddset(set, forwarded[i]);
	sigaddset(set, SIGALRM);
	sigaddset(set, SIGCHLD);
}

void sbx_init_block_signals(void)
{
	sigset_t set;

	supervised_set(&set);
	(void)sigprocmask(SIG_BLOCK, &set, NULL);
}

static int status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

/* An interactive bash leads its own process group and puts jobs in others;
 * the group gets the signal too, but never our own group (that would send
 * it back to us and to our siblings). */
static void forward_signal(pid_t child, int sig, bool to_group)
{
	if (to_group) {
		pid_t pgid = getpgid(child);

		if (pgid > 0 && pgid != getpgrp())
			(void)kill(-pgid, sig);
	}
	(void)kill(child, sig);
}

/* ---- the terminal relay ------------------------------------------------ */

static ssize_t write_full(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Copy what is ready from one side to the other. false: that side is
 * finished (EOF, EIO when the last slave fd closed, or an error). */
static bool relay_once(int from, int to)
{
	char buf[16384];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	return write_full(to, buf, (size_t)n) == n;
}

static void relay_winsize(const struct sbx_relay *r)
{
	struct winsize ws;

	if (ioctl(r->in_fd, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(r->master, TIOCSWINSZ, &ws);
}

/* What is still buffered in the pty once the program is gone. */
static void relay_drain(const struct sbx_relay *r)
{
	int flags = fcntl(r->master, F_GETFL);

	if (flags >= 0 && fcntl(r->master, F_SETFL, flags | O_NONBLOCK) == 0)
		while (relay_once(r->master, r->out_fd)) {
			struct pollfd p = { .fd = r->master, .events = POLLIN };

			if (poll(&p, 1, 0) <= 0)
				break;
		}
}

/* Every process left below the caller (a subreaper, so orphans came back
 * to it): SIGKILL what is there, reap, and again, until nothing is left.
 * A process can only fork while alive; each pass kills every current child
 * and reaps it, and the grandchildren that reparent to us meanwhile are
 * the next pass's children. Bounded, in case /proc is unreadable. */
static int children_open(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The list is opened afresh on every pass (reading one descriptor again
 * at offset 0 left a process behind in about one run in three, and a
 * fresh open never did). reserve: a descriptor opened before the session
 * ran; if the open fails for want of descriptors (someone lowered this
 * process's RLIMIT_NOFILE), it is closed to make room.
 *
 * A pass kills every child it lists, reaps what has died, and waits a
 * moment before the next; it ends when no child is left at all (ECHILD).
 * kill() of a process already dying, or a zombie, succeeds too, so a pass
 * that "killed" something proves nothing: counting that as progress let a
 * thousand passes run out in milliseconds while a killed daemon was still
 * exiting, and the child it was about to hand to us went to init instead
 * (seen about one run in six without a pid namespace). The bound is time:
 * KILL_DESCENDANTS_MS. */
#define KILL_DESCENDANTS_MS 10000

static void kill_descendants(int reserve)
{
	long long deadline = sbx_monotonic_ms() + KILL_DESCENDANTS_MS;
	char buf[4096];
	int status;

	for (;;) {
		ssize_t n = -1;
		pid_t p;
		int fd = children_open();

		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && reserve >= 0) {
			close(reserve);
			reserve = -1;
			fd = children_open();
		}
		if (fd >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
		}
		if (n > 0) {
			char *q = buf, *end;

			buf[n] = '\0';
			for (;;) {
				long pid = strtol(q, &end, 10);

				if (end == q)
					break;
				if (pid > 1)
					(void)kill((pid_t)pid, SIGKILL);
				q = end;
			}
		}
		while ((p = waitpid(-1, &status, WNOHANG)) > 0)
			;
		if (p < 0 && errno == ECHILD)
			break;
		if (sbx_monotonic_ms() > deadline)
			break;
		usleep(1000);
	}
	if (reserve >= 0)
		close(reserve);
}

/*
 * Shared loop.
 *   as_init: we are PID 1 of the namespace: reap everything, and kill what
 *            is left once the main child is gone.
 *   subreaper: the outer process (PR_SET_CHILD_SUBREAPER): reap orphans
 *            that come back to us while waiting, kill every descendant at
 *            the end.
 *   relay:   copy between the session's terminal and the program's pty.
 *   session_time: after that many seconds SIGHUP the session, and SIGKILL
 *            it SBX_SESSION_GRACE seconds later if it is still there (a
 *            program may ignore SIGHUP; the init may be stuck writing to a
 *            terminal nobody reads). The kill goes to the child itself: the
 *            init, whose death ends the whole pid namespace (or the setup
 *            process, whose death takes the init: PR_SET_PDEATHSIG);
 *            without namespaces the worker, and then every descendant.
 */
struct supervise_opts {
	bool as_init;
	bool subreaper;
	const struct sbx_relay *relay;
	unsigned session_time;
	/* watch_fd: a pidfd of the session's root side (sshd's monitor, su,
	 * login), or a socket whose hang-up means it is gone: the session
	 * then ends as at its session_time, and *gone is set. */
	int watch_fd;
	bool *gone;
};

/* Long on purpose: one event loop (signalfd, relay, timers, reaping); its
 * states are shared by every branch. */
static int supervise(pid_t child, const struct supervise_opts *o)
{
	const struct sbx_relay *relay = o->relay;
	bool as_init = o->as_init, reap_all = o->as_init || o->subreaper;
	struct signalfd_siginfo si;
	sigset_t set, old;
	int sfd, status = 0, code = 255, timer_stage = 0;
	int children_fd = o->subreaper ? children_open() : -1;
	/* The child's end is seen on its pidfd too: a caller's other thread
	 * that does not block SIGCHLD takes the signal (it is the process's,
	 * and goes to any thread not blocking it), and the signalfd would
	 * then wait for good. -1 without pidfd_open (Linux < 5.3). */
	int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	bool pidfd_fired = false;
	bool done = false, in_open = relay != NULL, master_open = relay != NULL;
	bool ending = false;	/* our own timer runs: session_time or watch_fd */
	int watch = o->watch_fd;
	/* The relay's ends (open only with a relay). */
	const int in_fd = relay ? relay->in_fd : -1, master = relay ? relay->master : -1;
	const int out_fd = relay ? relay->out_fd : -1;

	supervised_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, &old) != 0) {
		if (children_fd >= 0)
			close(children_fd);
		return 255;
	}
	if (o->session_time)
		alarm(o->session_time);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		/* Without a signalfd we cannot forward; still never return
		 * before the child is gone. */
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		code = status_code(status);
		goto out;
	}
	/* A child that died before the signalfd existed left SIGCHLD pending
	 * (blocked), so the first read sees it; reap once anyway in case the
	 * caller never blocked SIGCHLD. */
	for (;;) {
		pid_t p;

		while ((p = waitpid(reap_all ? -1 : child, &status, WNOHANG)) > 0) {
			if (p == child) {
				code = status_code(status);
				done = true;
			}
		}
		if (done)
			break;
		if (p < 0 && errno == ECHILD)	/* the child is not ours */
			break;
		/* The pidfd said the child ended, yet it could not be reaped: a
		 * tracer holds the zombie until it waits for it. The pidfd stays
		 * readable, so polling it again would spin; SIGCHLD says when the
		 * zombie comes back to us. */
		if (pidfd_fired) {
			close(pidfd);
			pidfd = -1;
			pidfd_fired = false;
		}
		if (in_open || master_open || pidfd >= 0 || watch >= 0) {
			struct pollfd pf[5] = {
				{ .fd = sfd, .events = POLLIN },
				{ .fd = in_open ? in_fd : -1, .events = POLLIN },
				{ .fd = master_open ? master : -1, .events = POLLIN },
				{ .fd = pidfd, .events = POLLIN },
				/* A pidfd is readable once its process ended; the
				 * channel never carries data to this end. */
				{ .fd = watch, .events = POLLIN | POLLRDHUP },
			};

			if (poll(pf, 5, -1) < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			/* The child has ended: reaped at the top of the loop. */
			if (pf[3].revents & POLLIN) {
				pidfd_fired = true;
				continue;
			}
			/* The root side is gone: end the session like a
			 * disconnect, then for good (as at session_time). */
			if (pf[4].revents & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) {
				watch = -1;
				if (o->gone)
					*o->gone = true;
				if (timer_stage == 0) {
					timer_stage = 1;
					ending = true;
					forward_signal(child, SIGHUP, as_init);
					alarm(SBX_SESSION_GRACE);
				}
				continue;
			}
			/* A pending signal first: a resize is signalled before
			 * the bytes typed after it arrive, and must reach the
			 * pty before they do. The bytes wait one turn. */
			if (!(pf[0].revents & POLLIN)) {
				if (pf[1].revents && !relay_once(in_fd, master))
					in_open = false;
				if (pf[2].revents && !relay_once(master, out_fd))
					master_open = false;
				continue;
			}
		}
		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si)) {
			if (errno == EINTR)
				continue;
			break;
		}
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;
		case SIGWINCH:
			/* The program's terminal is the pty: resizing it is
			 * what tells the program (the kernel sends SIGWINCH to
			 * the pty's foreground group). */
			if (relay)
				relay_winsize(relay);
			else
				forward_signal(child, SIGWINCH, as_init);
			break;
		case SIGALRM:
			/* Only our own timer counts: another process of the
			 * same uid may send SIGALRM too. */
			if (!(o->session_time || ending) || si.ssi_code != SI_KERNEL)
				break;
			if (timer_stage++ == 0) {
				/* The session's time is up: end it like a
				 * disconnect, then for good. */
				forward_signal(child, SIGHUP, as_init);
				alarm(SBX_SESSION_GRACE);
			} else {
				(void)kill(child, SIGKILL);
			}
			break;
		default:
			forward_signal(child, (int)si.ssi_signo, as_init);
			break;
		}
	}
	close(sfd);
	if (pidfd >= 0)
		close(pidfd);
	pidfd = -1;
	if (relay && master_open)
		relay_drain(relay);
	if (relay)
		close(relay->slave);
	if (!done) {
		pid_t p;

		while ((p = waitpid(child, &status, 0)) < 0 && errno == EINTR)
			;
		code = p == child ? status_code(status) : 255;
	}
	if (o->session_time || ending)
		alarm(0);
	if (as_init && getpid() == 1) {
		/* kill(-1) from a namespace's init reaches every process in the
		 * namespace and nothing outside it; orphans were reparented to
		 * us, so reap until none is left. */
		(void)kill(-1, SIGKILL);
		while (waitpid(-1, &status, 0) > 0 || errno == EINTR)
			;
	} else if (o->subreaper) {
		kill_descendants(children_fd);
		children_fd = -1;
	}
out:
	if (pidfd >= 0)
		close(pidfd);
	if (children_fd >= 0)
		close(children_fd);
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}

int sbx_init_supervise(pid_t child)
{
	const struct supervise_opts o = { .as_init = true, .watch_fd = -1 };

	return supervise(child, &o);
}

int sbx_init_supervise_relay(pid_t child, const struct sbx_relay *relay)
{
	const struct supervise_opts o = { .as_init = true, .relay = relay, .watch_fd = -1 };

	return supervise(child, &o);
}

int sbx_wait_forward(pid_t child)
{
	const struct supervise_opts o = { .watch_fd = -1 };

	return supervise(child, &o);
}

int sbx_outer_supervise(pid_t child, unsigned session_time, int watch_fd, bool *gone)
{
	const struct supervise_opts o = { .subreaper = true, .session_time = session_time,
					  .watch_fd = watch_fd, .gone = gone };

	return supervise(child, &o);
}
