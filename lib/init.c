/* SPDX-License-Identifier: BSD-3-Clause */
/* The PID-1 init of the session's pid namespace and the outer supervisor. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
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

/* Shared loop. as_init: we are PID 1 of the namespace, reap everything and
 * kill what is left once the main child is gone. */
static int supervise(pid_t child, bool as_init)
{
	struct signalfd_siginfo si;
	sigset_t set, old;
	int sfd, status = 0, code = 255;
	bool done = false;

	supervised_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, &old) != 0)
		return 255;
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

		while ((p = waitpid(as_init ? -1 : child, &status, WNOHANG)) > 0) {
			if (p == child) {
				code = status_code(status);
				done = true;
			}
		}
		if (done)
			break;
		if (p < 0 && errno == ECHILD)	/* the child is not ours */
			break;
		if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si)) {
			if (errno == EINTR)
				continue;
			break;
		}
		switch (si.ssi_signo) {
		case SIGCHLD:
			break;
		case SIGALRM:
			/* Session time limit hook: end it like a disconnect. */
			forward_signal(child, SIGHUP, as_init);
			break;
		default:
			forward_signal(child, (int)si.ssi_signo, as_init);
			break;
		}
	}
	close(sfd);
	if (!done) {
		pid_t p;

		while ((p = waitpid(child, &status, 0)) < 0 && errno == EINTR)
			;
		code = p == child ? status_code(status) : 255;
	}
	if (as_init && getpid() == 1) {
		/* kill(-1) from a namespace's init reaches every process in the
		 * namespace and nothing outside it; orphans were reparented to
		 * us, so reap until none is left. */
		(void)kill(-1, SIGKILL);
		while (waitpid(-1, &status, 0) > 0 || errno == EINTR)
			;
	}
out:
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}

int sbx_init_supervise(pid_t child)
{
	return supervise(child, true);
}

int sbx_wait_forward(pid_t child)
{
	return supervise(child, false);
}
