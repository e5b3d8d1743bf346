/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * apply.c — the one place where a profile becomes enforcement, in the order
 * docs/design.md section 4 gives. Everything before the first fork only describes
 * (plans) and may return an error; the fork is the point of no return.
 *
 * Processes (with user namespaces available):
 *
 *   outer   agent uid, host namespaces, never confined, never execs.
 *           Keeps the read end of the report pipe, calls on_report, waits.
 *     init  cloned into a new userns (own uid mapped to itself, maps written
 *           by itself) + mount/pid/ipc/uts/cgroup [+net] namespaces. PID 1
 *           of the new pid namespace: lo up, mount view, forks the worker,
 *           drops its own capabilities, runs the unix supervisor as a
 *           thread, reaps and forwards.
 *       worker  caps dropped and proven, no_new_privs, Landlock, rlimits,
 *               seccomp (last), canaries, report, floor, exec.
 *
 * A proxy session, or a caller with threads, has a setup process between
 * the outer and the init instead (clone_init_safe says why): it enters the
 * namespaces with unshare(2), forks the init, then only waits and forwards.
 *
 * Without user namespaces the outer forks the worker directly: no
 * namespaces and no mount view, so the report says degraded and why.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* The worker's end of the report pipe, from its fd hygiene to exec (which
 * closes it: close-on-exec). The canaries check no other fd is open. */
#define REPORT_FD 3
#define EXIT_SETUP_FAILED 126

/* After the point of no return: say why on stderr and end this process. */
static void __attribute__((noreturn)) die(const char *stage, const struct sbx_error *err)
{
	dprintf(STDERR_FILENO, "agent-sandbox: %s: %s; nothing was run\n", stage,
		err && err->msg[0] ? err->msg : "failed");
	_exit(EXIT_SETUP_FAILED);
}

static void __attribute__((noreturn)) die_errno(const char *what)
{
	dprintf(STDERR_FILENO, "agent-sandbox: %s: %s; nothing was run\n", what,
		strerror(errno));
	_exit(EXIT_SETUP_FAILED);
}

/* Serialise the report to the pipe: the outer process logs it. */
static void send_report(int fd, const struct sbx_report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die_errno("report: open_memstream");
	if (sbx_report_to_json(r, f) != 0 || fclose(f) != 0)
		die_errno("report: serialise");
	if (sbx_write_all(fd, buf, len) != 0)
		die_errno("report: write to supervisor");
	free(buf);
	close(fd);
}

static void write_report_file(const char *path, const struct sbx_report *r)
{
	char dir[SBX_PATH_MAX];
	char *slash;

	if (!path || !path[0] || sbx_strlcpy(dir, sizeof(dir), path) != 0)
		return;
	/* Best effort, inside the sandbox's own home: the authoritative copy
	 * is the one the outer process logs. */
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		char *p = dir + 1;

		for (;;) {
			char *s = strchr(p, '/');

			if (s)
				*s = '\0';
			(void)mkdir(dir, 0700);
			if (!s)
				break;
			*s = '/';
			p = s + 1;
		}
	}
	(void)sbx_report_write_file(path, r);
}

static int read_report(int fd, struct sbx_report *r, struct sbx_error *err)
{
	char *buf = NULL;
	size_t used = 0;
	int ret;

	ret = sbx_read_fd(fd, "report pipe", SBX_REPORT_JSON_MAX + 1, &buf, &used, err);
	if (ret)
		return ret;
	if (used == 0)
		ret = sbx_error_set(err, EIO, "the sandbox ended before it reported (see the message above)");
	else
		ret = sbx_report_from_json(buf, used, r, err);
	free(buf);
	return ret;
}

/* Capabilities: in our own user namespace we hold the full set and can
 * drop it all. Without one (degraded), an unprivileged process has an
 * empty permitted set but cannot clear the bounding set (CAP_SETPCAP);
 * no_new_privs makes the bounding set unusable, and the report says so. */
static void worker_caps(struct sbx_report *r, bool in_userns)
{
	struct sbx_error err = { 0 };
	int ret = sbx_caps_drop_all(&err);

	if (ret == 0 && (ret = sbx_caps_verify_none(&err)) == 0) {
		sbx_report_set(r, SBX_F_CAPS, true, false,
			       "all five sets empty, securebits locked");
		return;
	}
	if (in_userns)
		die("capabilities", &err);
	/* Degraded: an unprivileged process holds no capability but cannot
	 * clear its bounding set without CAP_SETPCAP. no_new_privs (set
	 * next) means no exec can ever raise one from it. The canary checks
	 * the other four sets are empty and no_new_privs is on. */
	sbx_report_set(r, SBX_F_CAPS, true, false,
		       "permitted, effective, inheritable and ambient empty; bounding set kept "
		       "(no user namespace, so no CAP_SETPCAP) and unusable under no_new_privs");
}

static void worker_landlock(const struct sbx_decision *d, const struct sbx_landlock_plan *plan,
			    struct sbx_report *r)
{
	struct sbx_landlock_result res;
	struct sbx_error err = { 0 };
	int ret;

	memset(&res, 0, sizeof(res));
	/* The decision (from the probe, which tests may force) is the single
	 * source of truth for what the kernel offers. */
	if (d->landlock_abi <= 0)
		ret = sbx_error_set(&err, EOPNOTSUPP, "Landlock unavailable: %s", d->landlock_why);
	else
		ret = sbx_landlock_apply(plan, d->landlock_abi, &res, &err);
	if (ret == -EOPNOTSUPP || ret == -ENOSYS) {
		sbx_report_set(r, SBX_F_LANDLOCK_FS, false, false, "%s", err.msg);
		sbx_report_set(r, SBX_F_LANDLOCK_NET, false, false, "%s", err.msg);
		sbx_report_set(r, SBX_F_LANDLOCK_IOCTL, false, false, "%s", err.msg);
		sbx_report_set(r, SBX_F_LANDLOCK_SCOPE, false, false, "%s", err.msg);
		return;
	}
	if (ret != 0)
		die("landlock", &err);
	r->landlock_abi = res.abi;
	sbx_report_set(r, SBX_F_LANDLOCK_FS, true, false, "ABI %d, %zu rules%s%s%s%s",
		       res.abi, res.n_rules_added, res.dropped[0] ? "; dropped: " : "",
		       res.dropped, plan->missing_roots[0] ? "; not granted: " : "",
		       plan->missing_roots);
	if (plan->net_deny_tcp) {
		if (res.handled_net)
			sbx_report_set(r, SBX_F_LANDLOCK_NET, true, false,
				       "TCP bind and connect denied");
		else
			sbx_report_set(r, SBX_F_LANDLOCK_NET, false, false,
				       "kernel Landlock ABI %d < 4: no TCP rules", res.abi);
	}
	if (res.abi >= 5)
		sbx_report_set(r, SBX_F_LANDLOCK_IOCTL, true, false,
			       "device ioctls only on terminals");
	else
		sbx_report_set(r, SBX_F_LANDLOCK_IOCTL, false, false,
			       "kernel Landlock ABI %d < 5: IOCTL_DEV unavailable", res.abi);
	if (res.scoped)
		sbx_report_set(r, SBX_F_LANDLOCK_SCOPE, true, false,
			       "signals and abstract unix sockets scoped to the sandbox");
	else
		sbx_report_set(r, SBX_F_LANDLOCK_SCOPE, false, false,
			       "kernel Landlock ABI %d < 6: no scopes", res.abi);
}

struct plans {
	struct sbx_mount_plan mounts;
	struct sbx_landlock_plan landlock;
	struct sbx_seccomp_opts seccomp;
	struct sbx_unix_policy unix_policy;
	int unix_chan;			/* the worker's end towards the supervisor, or -1 */
	/* A unix socket the outer process made in its own network namespace,
	 * which the init binds in the session's /tmp for the canary, or -1. */
	int foreign_sock;
	struct sbx_canary_ctx canary;
	char **env;
	bool relay;			/* the program gets a pty of its own */
	char slave[64];			/* its name in the sandbox's devpts */
	struct sbx_decision d;		/* what every plan is built from */
	char missing_roots[256];	/* "PATH (missing), ...": left out */
	bool userns;
	int ns_flags;
	/* network = proxy (d.egress): the bridge's options and shared counts. */
	struct sbx_egress_bridge_opts egress;
	char egress_hash[65];
	int egress_pin_rc;		/* sbx_egress_socket_pin's */
	struct sbx_error egress_pin_err;
};

/* fd moved to a number above 10 (close-on-exec); the old one closed. */
static int park_fd(int fd, const char *what)
{
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	if (n < 0) {
		char msg[96];

		snprintf(msg, sizeof(msg), "fcntl(%s, F_DUPFD_CLOEXEC)", what);
		die_errno(msg);
	}
	close(fd);
	return n;
}

/* fd hygiene: only 0-2, the report pipe (moved to 3, close-on-exec,
 * closed before exec) and, until seccomp is loaded, the channel to the unix
 * supervisor (4) survive. Returns the report pipe's fd (3). */
static int worker_fds(struct plans *pl, int report_fd, struct sbx_report *r)
{
	struct sbx_error err = { 0 };

	/* Both go above 10 first: either may sit on the other's target (the
	 * channel on 3 when the caller had fd 3 free), and a dup2 onto it
	 * would close it. */
	report_fd = park_fd(report_fd, "report pipe");
	if (pl->unix_chan >= 0)
		pl->unix_chan = park_fd(pl->unix_chan, "unix supervisor channel");
	if (dup2(report_fd, REPORT_FD) < 0)
		die_errno("dup2(report pipe)");
	close(report_fd);
	report_fd = REPORT_FD;
	if (fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0)
		die_errno("fcntl(report pipe)");
	if (pl->unix_chan >= 0) {
		if (dup2(pl->unix_chan, 4) < 0)
			die_errno("dup2(unix supervisor channel)");
		close(pl->unix_chan);
		pl->unix_chan = 4;
	}
	if (sbx_fd_close_above(pl->unix_chan >= 0 ? 4 : 3, &err) != 0)
		die("fd hygiene", &err);
	sbx_report_set(r, SBX_F_FD_HYGIENE, true, false, "only fds 0-2 reach the program");
	return report_fd;
}

/* The unix supervisor's rules, as the report states them. */
static void report_unix_sockets(const struct plans *pl, struct sbx_report *r)
{
	char line[sizeof(r->entry[0].detail)];

	sbx_unix_policy_describe(&pl->unix_policy, line, sizeof(line));
	sbx_report_set(r, SBX_F_UNIX_SOCKETS, true, false, "%s", line);
}

/* The filter, and the unix supervisor's listener handed over. */
static void worker_seccomp(struct plans *pl, struct sbx_report *r)
{
	struct sbx_error err = { 0 };

	if (sbx_seccomp_apply(&pl->seccomp, &err) != 0)
		die("seccomp", &err);
	/* The listener goes to the supervisor and nowhere else: a program
	 * holding it could answer its own connect() calls. */
	if (pl->seccomp.unix_notify) {
		int e = sbx_unix_send_listener(pl->unix_chan, pl->seccomp.notify_fd);

		close(pl->seccomp.notify_fd);
		close(pl->unix_chan);
		pl->unix_chan = -1;
		if (e != 0) {
			errno = -e;
			die_errno("send the seccomp listener to the unix supervisor");
		}
		report_unix_sockets(pl, r);
	}
	/* What the filter holds, and only that: the gate's memory rules are
	 * named only where they were loaded. */
	sbx_report_set(r, SBX_F_SECCOMP, true, false,
		       "native arch only; %sdangerous syscalls refused%s%s%s",
		       pl->seccomp.network_denied ? "network syscalls narrowed; " : "",
		       pl->seccomp.gated ? "; gate: no memfd, no exec of an fd" : "",
		       pl->seccomp.wx ? ", no executable anonymous or shared mapping, no SHM_EXEC" :
		       "",
		       pl->seccomp.wx_no_mdwe ?
		       ", no writable executable mapping, no mprotect to PROT_EXEC" : "");
}

/* W^X under the gate: set before the filter (which refuses personality()
 * with an argument); the filter's own rules for it load with the rest. */
static void worker_wx(const struct plans *pl)
{
	struct sbx_error err = { 0 };

	if (sbx_wx_apply(pl->d.wx, &err) != 0)
		die("W^X", &err);
}

static void worker_wx_report(const struct plans *pl, struct sbx_report *r)
{
	if (pl->d.wx != SBX_WX_NONE)
		sbx_report_set(r, SBX_F_MEMORY_WX, !pl->d.wx_partial, false, "%s%s%s",
			       pl->d.wx_partial ? SBX_WX_PARTIAL_WHY : "",
			       pl->d.wx_partial ? "; " : "", sbx_wx_describe(pl->d.wx));
}

static void worker_gate_report(const struct plans *pl, struct sbx_report *r)
{
	/*
	 * The gate. What holds it is the mount view: the host noexec, only the
	 * allowed programs with their loader and libraries executable, so
	 * `ld.so /usr/bin/anything` cannot map what it was not allowed.
	 * Landlock EXECUTE on the allow-list is a second layer. Landlock alone
	 * cannot hold it (ld.so maps, it does not execve), so without a mount
	 * view the gate is partial and not reported as achieved.
	 */
	switch (pl->d.gate) {
	case SBX_GATE_NONE:
		break;
	case SBX_GATE_REFUSE_ALL:
		sbx_report_set(r, SBX_F_COMMAND_GATE, true, false, "every command refused");
		break;
	case SBX_GATE_MOUNT_VIEW:
		sbx_report_set(r, SBX_F_COMMAND_GATE, pl->mounts.exec != NULL, false,
			       "host noexec; executable: %zu file(s) (the allow-list, its ELF loader "
			       "and libraries)%s%s%s", pl->mounts.exec ? pl->mounts.exec->n : 0,
			       r->entry[SBX_F_LANDLOCK_FS].achieved ?
			       "; Landlock EXECUTE only on the allow-list" : "",
			       pl->mounts.exec && pl->mounts.exec->unresolved[0] ? "; unresolved: " : "",
			       pl->mounts.exec ? pl->mounts.exec->unresolved : "");
		break;
	case SBX_GATE_LANDLOCK:
		sbx_report_set(r, SBX_F_COMMAND_GATE, false, false,
			       "partial: Landlock EXECUTE on the allow-list only; without a mount view "
			       "the host cannot be made noexec, so ld.so can load any readable program");
		break;
	case SBX_GATE_SHELL:
		sbx_report_set(r, SBX_F_COMMAND_GATE, false, false,
			       "partial: no mount view and no Landlock; the allow-list is checked by "
			       "agent-shell only");
		break;
	}
}

/* The confined worker: never returns. */
static void __attribute__((noreturn)) worker(const struct sbx_run *run, struct plans *pl,
					     struct sbx_report *r, int report_fd)
{
	const struct sbx_profile *p = run->profile;
	const struct sbx_session *s = run->session;
	struct sbx_error err = { 0 };
	const char *dir;

	/* Signals were blocked across the forks so none is lost before the
	 * supervisors run; the program gets default dispositions. */
	sbx_signals_reset();
	if (pl->slave[0]) {
		int tty, fd;

		/* A session of its own with the sandbox's pty as its
		 * controlling terminal, on each of 0-2 that was a terminal. */
		if (setsid() < 0)
			die_errno("setsid");
		tty = open(pl->slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (tty < 0 || ioctl(tty, TIOCSCTTY, 0) != 0)
			die_errno("open the session's pty");
		for (fd = 0; fd <= 2; fd++)
			if (isatty(fd) && dup2(tty, fd) < 0)
				die_errno("dup2(pty)");
		if (tty > 2)
			close(tty);
	}
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die_errno("prctl(PR_SET_PDEATHSIG)");

	/* 5. capabilities, proven by re-reading. */
	worker_caps(r, pl->userns);

	/* 6. no_new_privs: also what makes Landlock and seccomp legal here. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die_errno("prctl(PR_SET_NO_NEW_PRIVS)");
	sbx_report_set(r, SBX_F_NO_NEW_PRIVS, true, false, "set before Landlock and seccomp");

	/* 7. Landlock at the best ABI the kernel offers. */
	worker_landlock(&pl->d, &pl->landlock, r);

	/* The filter is emitted now (no fd, no allocation: lib/seccomp.c),
	 * loaded at 9. */
	if (sbx_seccomp_prepare(&pl->seccomp, &err) != 0)
		die("seccomp", &err);
	/* 8. rlimits (core 0 always). */
	if (sbx_rlimits_apply(&p->limits, &err) != 0)
		die("rlimits", &err);
	sbx_report_set(r, SBX_F_RLIMITS, true, false, "core 0%s",
		       p->limits.set_mask ? " and the profile's limits" : "");

	report_fd = worker_fds(pl, report_fd, r);

	/* 9. W^X under the gate, then seccomp, last. */
	worker_wx(pl);
	worker_seccomp(pl, r);
	worker_gate_report(pl, r);
	worker_wx_report(pl, r);

	/* Fully confined now: the program will be dumpable after its exec
	 * anyway, and the canaries need /proc/self files owned by this uid
	 * (a non-dumpable process's are root's). */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		die_errno("prctl(PR_SET_DUMPABLE, 1)");

	/* 10. canaries: verified, not hoped. */
	pl->canary.envp = pl->env;
	sbx_canary_run(p, s, &pl->canary, r);

	/* 11. report and floor. */
	sbx_report_finish(r);
	write_report_file(run->report_file, r);
	send_report(report_fd, r);
	if (!r->floor_met) {
		dprintf(STDERR_FILENO, "agent-sandbox: session refused: %s\n", r->refusal);
		_exit(EXIT_SETUP_FAILED);
	}

	/* command = deny: the report is logged, nothing runs. */
	if (p->command == SBX_ACCESS_DENY) {
		dprintf(STDERR_FILENO, "agent-sandbox: profile %s denies every command\n", p->name);
		_exit(EXIT_SETUP_FAILED);
	}
	dir = s->workspace[0] ? s->workspace : s->home;
	if (chdir(dir) != 0 && chdir(s->home) != 0 && chdir("/") != 0)
		die_errno("chdir");
	execve(run->path, run->argv, pl->env);
	dprintf(STDERR_FILENO, "agent-sandbox: %s: %s\n", run->path, strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/*
 * In init, after the mount view: a pty from the sandbox's devpts with the
 * session terminal's modes and size, and the session terminal in raw mode
 * so every byte (^C included) reaches the pty, whose line discipline the
 * program controls. The outer process restores the terminal's modes.
 * The init keeps a slave fd open until the program is gone: with no slave
 * open, a read of the master fails with EIO, and a relay that polled before
 * the worker opened its slave would stop for good (the lost first prompt).
 */
static int open_session_pty(struct plans *pl, int *slave_out)
{
	struct termios tio, raw;
	struct winsize ws;
	int master, slave;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 ||
	    ptsname_r(master, pl->slave, sizeof(pl->slave)) != 0)
		die_errno("posix_openpt in the sandbox's devpts");
	slave = open(pl->slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		die_errno("open the session's pty");
	if (tcgetattr(STDIN_FILENO, &tio) == 0)
		(void)tcsetattr(slave, TCSANOW, &tio);
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(slave, TIOCSWINSZ, &ws);
	*slave_out = slave;
	if (tcgetattr(STDIN_FILENO, &raw) == 0) {
		cfmakeraw(&raw);
		(void)tcsetattr(STDIN_FILENO, TCSADRAIN, &raw);
	}
	return master;
}

/*
 * The masks as the view holds them. A mask covers what is at the path
 * when the session starts: a file secret's /dev/null stays on that
 * file, so one renamed over it on the host during the session is seen
 * unmasked, and so is a missing secret made then. The detail says so
 * where it applies, with what was missing.
 */
static void note_masks(const struct sbx_profile *p, struct sbx_report *r)
{
	size_t missing = 0, files = 0;
	struct stat st;

	for (size_t i = 0; i < p->n_deny_read; i++) {
		if (lstat(p->deny_read[i], &st) != 0)
			missing++;
		else if (!S_ISDIR(st.st_mode))
			files++;
	}
	if (!missing && !files)
		sbx_report_set(r, SBX_F_DENY_READ, true, false,
			       "%zu secret(s) masked and left out of Landlock rules",
			       p->n_deny_read);
	else
		sbx_report_set(r, SBX_F_DENY_READ, true, false,
			       "%zu secret(s) masked, %zu missing, left out of Landlock "
			       "rules; masks hold what was there at the start (not a file "
			       "renamed over one, or one made, on the host after)",
			       p->n_deny_read - missing, missing);
}

/* PID 1 of the new pid namespace: never returns. */
static void __attribute__((noreturn)) init_main(const struct sbx_run *run, struct plans *pl,
						struct sbx_report *r, int report_fd)
{
	struct sbx_error err = { 0 };
	struct sbx_relay relay = { .master = -1, .slave = -1, .in_fd = STDIN_FILENO,
				   .out_fd = STDOUT_FILENO };
	char detail[256] = "";
	pid_t child, supervisor = -1;
	int supervisor_end = -1;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die_errno("prctl(PR_SET_PDEATHSIG)");
	if (sbx_mount_view_apply(&pl->mounts, detail, sizeof(detail), &err) != 0)
		die("mount view", &err);
	sbx_report_set(r, SBX_F_MOUNT_VIEW, true, false, "%s", detail);
	if (run->profile->home != SBX_HOME_REAL)
		sbx_report_set(r, SBX_F_HOME, true, false, "%s at %s",
			       run->home_note && run->home_note[0] ? run->home_note :
			       run->session->home_source[0] ? run->session->home_source :
			       "fresh tmpfs", run->session->home);
	if (run->profile->n_deny_read)
		note_masks(run->profile, r);

	/* In the sandbox's mount view and network namespace, so it resolves
	 * and connects exactly as the program would. A thread of this init
	 * once its capabilities are gone; a process of its own where it also
	 * makes bind() on the program's behalf, which forks a child per
	 * socket it makes (the init reaps every child of its own, and would
	 * take that one's status). */
	if (pl->seccomp.unix_notify) {
		/* The canary's socket bound outside the supervisor, made by
		 * the outer process in the host's network namespace (as a
		 * host tmux's would be): never the program's. It lives as
		 * long as the init. */
		int fd = sbx_unix_foreign_listener(pl->foreign_sock, "/tmp", pl->canary.unix_foreign,
						   sizeof(pl->canary.unix_foreign));

		pl->canary.unix_foreign_err = fd < 0 ? -fd : 0;
	}
	if (pl->seccomp.unix_notify && !pl->unix_policy.bind_on_behalf) {
		if (sbx_unix_channel(&pl->unix_chan, &supervisor_end, &err) != 0)
			die("unix supervisor", &err);
	} else if (pl->seccomp.unix_notify &&
		   sbx_unix_supervisor_start(&pl->unix_policy, true, &pl->unix_chan, &supervisor,
					     &err) != 0) {
		die("unix supervisor", &err);
	}
	if (pl->relay)
		relay.master = open_session_pty(pl, &relay.slave);
	child = fork();
	if (child < 0)
		die_errno("fork(worker)");
	if (child == 0) {
		if (relay.master >= 0) {
			close(relay.master);
			close(relay.slave);
		}
		if (supervisor_end >= 0)
			close(supervisor_end);
		worker(run, pl, r, report_fd);
	}
	close(report_fd);
	if (pl->unix_chan >= 0)
		close(pl->unix_chan);
	/* init keeps nothing it does not need. */
	if (sbx_caps_drop_all(&err) != 0)
		die("init: capabilities", &err);
	/* The supervisor thread starts with what the init has now: no
	 * capability, no_new_privs, the supervised signals blocked (they stay
	 * the init's, read from its signalfd), and / as its directory (paths
	 * are resolved from the caller's). The init never execs. */
	if (supervisor_end >= 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
			die_errno("init: prctl(PR_SET_NO_NEW_PRIVS)");
		if (chdir("/") != 0)
			die_errno("init: chdir(/)");
		if (sbx_unix_supervisor_thread(&pl->unix_policy, supervisor_end, &err) != 0)
			die("unix supervisor", &err);
	}
	if (relay.master >= 0)
		_exit(sbx_init_supervise_relay(child, &relay));
	_exit(sbx_init_supervise(child));
}

/* What the setup process, or the init cloned into them, entered. */
static void report_namespaces(const struct plans *pl, struct sbx_report *r, uid_t uid)
{
	sbx_report_set(r, SBX_F_USERNS, true, false, "uid %u mapped to itself; setgroups denied",
		       (unsigned)uid);
	sbx_report_set(r, SBX_F_MOUNTNS, true, false, "private, no propagation to the host");
	sbx_report_set(r, SBX_F_PIDNS, true, false, "the program is never PID 1");
	sbx_report_set(r, SBX_F_IPCNS, pl->d.ipcns, false, "%s", pl->d.ipcns ?
		       "private SysV IPC and POSIX queues" : "IPC namespaces unavailable");
	sbx_report_set(r, SBX_F_UTSNS, pl->d.utsns, false, "%s", pl->d.utsns ?
		       "private hostname" : "UTS namespaces unavailable");
	sbx_report_set(r, SBX_F_CGROUPNS, pl->d.cgroupns, false, "%s", pl->d.cgroupns ?
		       "private cgroup root" : "cgroup namespaces unavailable");
	if (pl->ns_flags & CLONE_NEWNET)
		sbx_report_set(r, SBX_F_NETNS, true, false, "only a private loopback");
}

/*
 * The usual way in: the outer process clones the init straight into a new
 * user namespace and every other one (clone(2) with CLONE_NEWUSER and the
 * plan's flags), so the session is the outer process and the init, with
 * nothing between them. The init writes its own maps, with the outer's ids
 * read before the clone (inside, unmapped ids read as the overflow id).
 *
 * Its /proc/self/uid_map belongs to root while it is not dumpable (it is
 * born not dumpable: the outer is not), so it is dumpable for the few
 * system calls that write the maps. Nothing of the session runs yet: the
 * window is open only to another process of the same uid in the host pid
 * namespace, but what such a process opens in it (/proc/<pid>/mem, a
 * ptrace attach) stays usable after it closes (docs/design.md section 4.1,
 * a known limitation). Not dumpable from then on: the sandboxed program runs as the
 * same uid in the same user namespace and could otherwise open the init's
 * /proc/<pid>/mem where no Landlock domain stops it (a ptrace access check
 * needs a dumpable target or CAP_SYS_PTRACE where the target's memory was
 * made, which is the host's user namespace).
 */
static void __attribute__((noreturn)) init_cloned(const struct sbx_run *run, struct plans *pl,
						  struct sbx_report *r, int report_fd,
						  uid_t outer_uid, gid_t outer_gid)
{
	const struct sbx_session *s = run->session;
	struct sbx_error err = { 0 };

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die_errno("prctl(PR_SET_PDEATHSIG)");
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		die_errno("prctl(PR_SET_DUMPABLE, 1)");
	if (sbx_userns_write_maps(s->uid, s->gid, outer_uid, outer_gid, &err) != 0)
		die("user namespace", &err);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		die_errno("prctl(PR_SET_DUMPABLE, 0)");
	if ((pl->ns_flags & CLONE_NEWNET) && sbx_net_lo_up(&err) != 0)
		die("network namespace", &err);
	report_namespaces(pl, r, s->uid);
	init_main(run, pl, r, report_fd);
}

/* A proxy session needs the setup process (its bridge is forked between
 * the network namespace and the rest). So does a caller with threads:
 * glibc's fork handlers do not run in a raw clone (sbx_ns_clone), and a
 * lock another thread held then would be held in the init for good.
 * __libc_single_threaded errs on the safe side: once false, it stays so. */
static bool clone_init_safe(const struct plans *pl)
{
	return !pl->d.egress && __libc_single_threaded;
}

/*
 * The setup process, for the sessions clone_init_safe() turns away: enters
 * the namespaces one by one, forks the init, waits. Dumpable while it
 * writes its maps, as the cloned init is (above).
 */
static void __attribute__((noreturn)) setup_main(const struct sbx_run *run, struct plans *pl,
						 struct sbx_report *r, int report_fd)
{
	const struct sbx_session *s = run->session;
	struct sbx_error err = { 0 };
	pid_t init;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die_errno("prctl(PR_SET_PDEATHSIG)");
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		die_errno("prctl(PR_SET_DUMPABLE, 1)");
	if (sbx_userns_enter(s->uid, s->gid, &err) != 0)
		die("user namespace", &err);
	/* Not dumpable from here on, and so neither is the init forked
	 * below (init_cloned says why). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		die_errno("prctl(PR_SET_DUMPABLE, 0)");
	/* network = proxy: the bridge goes into the network namespace alone,
	 * before the pid and mount namespaces (lib/egress_bridge.c). */
	if (pl->d.egress) {
		pid_t bridge;
		int rc;

		if (sbx_ns_unshare(CLONE_NEWNET, &err) != 0)
			die("namespaces", &err);
		if (sbx_net_lo_up(&err) != 0)
			die("network namespace", &err);
		rc = pl->egress_pin_rc;
		if (rc == 0)
			rc = sbx_egress_bridge_start(&pl->egress, &bridge, &err);
		else
			err = pl->egress_pin_err;
		if (pl->egress.socket_fd >= 0)
			close(pl->egress.socket_fd);
		sbx_egress_report(r, pl->egress.socket_path, rc, &err);
	}
	if (sbx_ns_unshare(pl->ns_flags & ~(pl->d.egress ? CLONE_NEWNET : 0), &err) != 0)
		die("namespaces", &err);
	if ((pl->ns_flags & CLONE_NEWNET) && !pl->d.egress && sbx_net_lo_up(&err) != 0)
		die("network namespace", &err);
	report_namespaces(pl, r, s->uid);

	init = fork();
	if (init < 0)
		die_errno("fork(init)");
	if (init == 0)
		init_main(run, pl, r, report_fd);
	close(report_fd);
	_exit(sbx_wait_forward(init));
}

/*
 * A deny_read mask covers a path, not an inode: a hard link to a secret
 * made elsewhere (by anyone, at any time before) reads it under another
 * name. The outer process still sees the real files, so it counts their
 * names here (find_secret_aliases). How much is searched, every secret
 * together: past this a secret is reported as not searched.
 */
#define SECRET_SCAN_MAX 4096
#define SECRET_SCAN_DEPTH 32

/* Anything but a directory or a link with a second name: a file read, a
 * FIFO or device opened, a socket connected to under that name. */
static bool has_other_names(const struct stat *st)
{
	return !S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode) && st->st_nlink > 1;
}

static void note_alias(char *buf, size_t size, const char *path, nlink_t n)
{
	size_t used = strlen(buf);

	snprintf(buf + used, size - used, "%s%s (%lu names)", used ? "; " : "", path,
		 (unsigned long)n);
}

/* Every entry below fd (which this takes) with another name
 * (has_other_names); false once the budget is spent or the tree is too
 * deep to search. A stack of open directories, one per level, not recursion. */
static bool scan_secret_dir(int fd, const char *top, unsigned *budget, char *buf, size_t size)
{
	DIR *stack[SECRET_SCAN_DEPTH];
	size_t len[SECRET_SCAN_DEPTH];
	char path[SBX_PATH_MAX];
	unsigned depth = 0;
	bool whole = true;

	stack[0] = fdopendir(fd);
	if (!stack[0]) {
		close(fd);
		return true;	/* unreadable here: unreadable to the agent too */
	}
	snprintf(path, sizeof(path), "%s", top);
	len[0] = strlen(path);
	for (;;) {
		struct dirent *de = whole ? readdir(stack[depth]) : NULL;
		char sub[SBX_PATH_MAX];
		struct stat est;
		DIR *child;
		int cfd;

		if (!de) {
			closedir(stack[depth]);
			if (depth == 0)
				break;
			path[len[--depth]] = '\0';
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((*budget)-- == 0) {
			whole = false;
			continue;
		}
		/* A link's other names give nothing away (it is resolved by
		 * path); a FIFO's, a socket's or a device's do, like a file's. */
		if (de->d_type == DT_LNK)
			continue;
		if (fstatat(dirfd(stack[depth]), de->d_name, &est, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		/* Too long to name: named by its directory. */
		if (sbx_snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) != 0)
			(void)sbx_strlcpy(sub, sizeof(sub), path);
		if (has_other_names(&est))
			note_alias(buf, size, sub, est.st_nlink);
		if (!S_ISDIR(est.st_mode))
			continue;
		if (depth + 1 >= SECRET_SCAN_DEPTH) {
			whole = false;
			continue;
		}
		cfd = openat(dirfd(stack[depth]), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		child = fdopendir(cfd);
		if (!child) {
			close(cfd);
			continue;
		}
		stack[++depth] = child;
		snprintf(path, sizeof(path), "%s", sub);
		len[depth] = strlen(path);
	}
	return whole;
}

/*
 * A mask covers a path, not an inode: a file below a secret that has a
 * name elsewhere too is readable there, mask or not. The whole tree is
 * searched (the first level alone missed secrets/prod/key linked into
 * the workspace), up to SECRET_SCAN_MAX entries: past that the secret is
 * named as not checked, and the canary does not count it as hidden.
 */
static void find_secret_aliases(const struct sbx_profile *p, char *buf, size_t size)
{
	unsigned budget = SECRET_SCAN_MAX;

	buf[0] = '\0';
	for (size_t i = 0; i < p->n_deny_read; i++) {
		struct stat st;
		int fd;

		if (lstat(p->deny_read[i], &st) != 0)
			continue;
		if (has_other_names(&st))
			note_alias(buf, size, p->deny_read[i], st.st_nlink);
		if (!S_ISDIR(st.st_mode))
			continue;
		fd = open(p->deny_read[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (!scan_secret_dir(fd, p->deny_read[i], &budget, buf, size)) {
			size_t used = strlen(buf);

			snprintf(buf + used, size - used, "%s%s (over %d entries or %d levels: "
				 "not searched for other names)", used ? "; " : "",
				 p->deny_read[i], SECRET_SCAN_MAX, SECRET_SCAN_DEPTH);
			break;
		}
	}
}

static int build_plans(const struct sbx_run *run, struct plans *pl, struct sbx_report *r,
		       struct sbx_error *err)
{
	const struct sbx_profile *p = run->profile;
	const struct sbx_decision *d = &pl->d;	/* made by sbx_run_confined */
	int ret;

	pl->userns = d->ns;
	/* An interactive session's terminal belongs to the host's devpts,
	 * which the sandbox's own devpts instance hides (no tty name, and
	 * the program would hold a host terminal). With a mount view the
	 * program gets a pty of the sandbox's devpts instead, relayed by
	 * the init. */
	pl->relay = pl->userns && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	pl->ns_flags = CLONE_NEWNS | CLONE_NEWPID;
	if (d->ipcns)
		pl->ns_flags |= CLONE_NEWIPC;
	if (d->utsns)
		pl->ns_flags |= CLONE_NEWUTS;
	if (d->cgroupns)
		pl->ns_flags |= CLONE_NEWCGROUP;
	if (d->netns)
		pl->ns_flags |= CLONE_NEWNET;

	ret = sbx_env_build(run->envp, run->session, p->shell, &pl->env, err);
	if (ret)
		return ret;
	if (d->egress) {
		const struct sbx_session *s = run->session;

		ret = sbx_env_set_proxy(&pl->env, SBX_EGRESS_PROXY_PORT, err);
		if (ret)
			return ret;
		sbx_egress_list_hash(p, pl->egress_hash);
		pl->egress.socket_path = s->egress_socket[0] ? s->egress_socket : SBX_EGRESS_SOCKET;
		/* Pinned here, in the host's user namespace, where the socket's
		 * owner and its directories' are seen as they are; a socket that
		 * cannot be pinned leaves the bridge out (the report says why). */
		pl->egress_pin_rc = sbx_egress_socket_pin(pl->egress.socket_path,
							  &pl->egress.socket_fd, &pl->egress_pin_err);
		pl->egress.uid = s->uid;
		pl->egress.session_id = s->session_id;
		pl->egress.list_hash = pl->egress_hash;
		ret = sbx_egress_counts_map(&pl->egress.counts, err);
		if (ret)
			return ret;
	}
	ret = sbx_mount_plan_build(p, run->session, &pl->mounts, err);
	if (ret)
		return ret;
	pl->mounts.proc_readonly = d->proc_readonly;
	ret = sbx_landlock_plan_build(p, run->session, d, &pl->landlock, err);
	if (ret)
		return ret;
	/* The roots left out are named where the report shows the trees the
	 * session sees: the mount view, or without one the Landlock rules. */
	if (pl->userns)
		sbx_strlcpy(pl->mounts.skipped, sizeof(pl->mounts.skipped), pl->missing_roots);
	else
		sbx_strlcpy(pl->landlock.missing_roots, sizeof(pl->landlock.missing_roots),
			    pl->missing_roots);
	pl->seccomp.network_denied = d->network_denied;
	pl->seccomp.inet_denied = d->inet_denied;
	pl->seccomp.gated = p->command != SBX_ACCESS_ALLOW;
	pl->seccomp.wx = d->wx != SBX_WX_NONE;
	pl->seccomp.wx_no_mdwe = d->wx == SBX_WX_SECCOMP;
	pl->canary.wx = d->wx;
	pl->seccomp.host_pids = d->host_pids;
	/* Host daemons' pathname sockets are part of the network: with the
	 * network denied, connect() is decided by the unix supervisor. */
	pl->unix_chan = -1;
	pl->seccomp.unix_notify = d->unix_mediated;
	if (d->unix_mediated) {
		ret = sbx_unix_policy_build(p, run->session, !d->unix_bind_mediated, d->ns,
					    &pl->unix_policy, err);
		if (ret)
			return ret;
		/* Every bind() too: the supervisor records what the session
		 * binds (its own sockets), and decides it where abstract
		 * names are the host's. */
		pl->seccomp.unix_bind_notify = true;
		pl->canary.unix_bind_mediated = d->unix_bind_mediated;
		/* A socket made on the program's behalf, only where the
		 * program's own Landlock rules let it make one. */
		if (d->unix_bind_mediated && d->landlock_abi > 0) {
			pl->unix_policy.landlock = &pl->landlock;
			pl->unix_policy.landlock_abi = d->landlock_abi;
		}
	}

	if (d->netns)
		sbx_report_set_requested(r, SBX_F_LANDLOCK_NET, false,
					 "not needed: the private network namespace is the boundary "
					 "and keeps the sandbox's own loopback usable");

	pl->canary.mounts = pl->userns ? &pl->mounts : NULL;
	pl->canary.host_ns_user = sbx_ns_inode("user");
	pl->canary.host_ns_mnt = sbx_ns_inode("mnt");
	pl->canary.host_ns_pid = sbx_ns_inode("pid");
	pl->canary.host_ns_net = sbx_ns_inode("net");
	pl->canary.host_ns_ipc = sbx_ns_inode("ipc");
	pl->canary.host_ns_uts = sbx_ns_inode("uts");
	pl->canary.host_ns_cgroup = sbx_ns_inode("cgroup");
	pl->canary.keep_fd = REPORT_FD;
	find_secret_aliases(p, pl->canary.secret_aliases, sizeof(pl->canary.secret_aliases));
	sbx_secret_places_find(p, &pl->canary.secret_places);
	/* A file the gate leaves executable, for its canary's control; and
	 * those the kernel would give an executable stack, for W^X's. */
	if (pl->mounts.exec)
		sbx_strlcpy(pl->canary.exec_stack, sizeof(pl->canary.exec_stack),
			    pl->mounts.exec->exec_stack);
	if (pl->mounts.exec) {
		for (size_t i = 0; i < pl->mounts.exec->n && !pl->canary.exec_control[0]; i++) {
			struct stat st;

			if (stat(pl->mounts.exec->paths[i], &st) == 0 && S_ISREG(st.st_mode))
				sbx_strlcpy(pl->canary.exec_control, sizeof(pl->canary.exec_control),
					    pl->mounts.exec->paths[i]);
		}
	}
	return 0;
}

/*
 * Without a mount view and without the PAM stage's private /tmp, a home
 * under /tmp (an account without a home directory gets /tmp/home) would be
 * in the host's shared /tmp: the first uid to make a given name owns it, so
 * a fixed name let any local user block every such account, or plant a
 * .profile there first. Such a session gets a directory of its own instead
 * (mkdtemp: 0700, a name nobody can guess, in sticky /tmp nobody can swap),
 * removed when the session ends: an ephemeral home, as asked. *made is its
 * path, or "" when the session's home stands.
 */
static int fresh_home_if_shared(const struct sbx_run *run, const struct sbx_decision *d,
				struct sbx_session *copy, char *made, size_t size,
				struct sbx_error *err)
{
	int r;

	made[0] = '\0';
	if (d->ns || run->pam_stage || run->session->home_source[0] ||
	    !sbx_path_is_under(run->session->home, "/tmp"))
		return 0;
	if (sbx_strlcpy(made, size, "/tmp/agent-home-XXXXXX") != 0 || !mkdtemp(made)) {
		r = sbx_error_set(err, errno ? errno : ENAMETOOLONG,
				  "home: a private directory in the host's /tmp: %s", strerror(errno));
		made[0] = '\0';
		return r;
	}
	*copy = *run->session;
	sbx_strlcpy(copy->home, sizeof(copy->home), made);
	return 0;
}

/* Record, before anything runs, why layers that need user namespaces are
 * missing: the report names the layer and the admin's fix. */
static void report_missing_userns(struct sbx_report *r, const struct sbx_decision *d)
{
	static const enum sbx_feature ns_features[] = {
		SBX_F_USERNS, SBX_F_PIDNS, SBX_F_MOUNTNS, SBX_F_NETNS, SBX_F_IPCNS,
		SBX_F_UTSNS, SBX_F_CGROUPNS, SBX_F_MOUNT_VIEW, SBX_F_HOME,
	};

	for (size_t i = 0; i < ARRAY_SIZE(ns_features); i++)
		sbx_report_set(r, ns_features[i], false, false, "%s", d->ns_why);
	if (d->deny_read == SBX_DENY_READ_LANDLOCK)
		sbx_report_set(r, SBX_F_DENY_READ, true, false,
			       "no mount masks (%s); Landlock leaves the secrets out", d->ns_why);
	else if (r->entry[SBX_F_DENY_READ].requested)
		sbx_report_set(r, SBX_F_DENY_READ, false, false,
			       "no mount view and no Landlock: nothing keeps the secrets out");
}

/*
 * deny_read entries as the kernel finds them. A secret named through a
 * root-owned symlink in a root-only directory (a link under /run to the
 * workspace, say) was masked at the link's path, which the mount view's
 * fresh /run does not have, while its target stayed readable, and the
 * canary, checking the written path, found it hidden. Resolved here, in
 * the caller's user namespace (where root's links can be told from the
 * agent's), before any plan is built. A missing path stays as written;
 * one through a link the agent could change refuses the session: where
 * the secret really is cannot be known.
 */
static int resolve_deny_read(struct sbx_profile *p, struct sbx_error *err)
{
	char real[SBX_PATH_MAX];

	for (size_t i = 0; i < p->n_deny_read; i++) {
		struct sbx_error why = { 0 };
		int r = sbx_path_resolve_trusted(p->deny_read[i], real, sizeof(real), &why);

		if (r == -ENOENT)
			continue;
		if (r == -EACCES)
			return sbx_error_set(err, EACCES, "deny_read %s: %s (the agent cannot "
					     "reach this path, so where it leads cannot be "
					     "checked: name the secret where the agent could "
					     "reach it, or drop the entry if file permissions "
					     "already keep it out)", p->deny_read[i], why.msg);
		if (r)
			return sbx_error_set(err, -r, "deny_read %s: %s", p->deny_read[i], why.msg);
		sbx_strlcpy(p->deny_read[i], sizeof(p->deny_read[i]), real);
	}
	return 0;
}

/*
 * Roots as the kernel finds them when the session starts. An ro or rw root
 * that is not there (the shipped ceiling's /srv/agents before any agent
 * is enrolled) is left out of the session: no bind, no Landlock rule, and
 * its path keeps the access of what is around it (the host, the
 * workspace, a root above), which is never wider than the root's own, so
 * a tree made there later is reachable no more than the report says; the
 * report names it ("PATH (missing)", in *note). A missing root narrower
 * than what is around it (ro inside a tree the session writes) refuses
 * the session: left out, it would give the agent more at that path than
 * the profile does. A none root is a mask, which the mount view skips
 * when missing. Other errors are left to the plans, which refuse them.
 */
int sbx_profile_skip_missing_roots(struct sbx_profile *p, char *note, size_t size,
				   struct sbx_error *err)
{
	struct sbx_root *gone = calloc(SBX_MAX_ROOTS, sizeof(*gone));
	size_t kept = 0, n_gone = 0;
	int r = 0;

	note[0] = '\0';
	if (!gone)
		return sbx_error_set(err, ENOMEM, "roots: out of memory");
	for (size_t i = 0; i < p->n_roots && i < SBX_MAX_ROOTS; i++) {
		char real[SBX_PATH_MAX];
		struct sbx_error why = { 0 };
		const struct sbx_root rt = p->roots[i];

		if (rt.read != SBX_ACCESS_DENY && !sbx_profile_in_secret(p, rt.path) &&
		    sbx_path_resolve_trusted(rt.path, real, sizeof(real), &why) == -ENOENT)
			gone[n_gone++] = rt;
		else
			p->roots[kept++] = rt;
	}
	p->n_roots = kept;
	for (size_t i = 0; i < n_gone; i++) {
		const struct sbx_root *rt = &gone[i];
		enum sbx_access read = sbx_profile_path_access(p, rt->path, false);
		enum sbx_access write = sbx_profile_path_access(p, rt->path, true);
		size_t used = strlen(note);

		if (read > rt->read || write > rt->write) {
			/* Only an ro root can be narrower (read is allow). */
			r = sbx_error_set(err, ENOENT, "root %s ro: No such file or directory, inside "
					  "a tree the session writes: left out, the agent could "
					  "make it and write there (create it, or remove the line)",
					  rt->path);
			goto out;
		}
		snprintf(note + used, size - used, "%s%s (missing)", used ? ", " : "", rt->path);
	}
out:
	free(gone);
	return r;
}

/* Who and where, for the report. */
static void report_identity(struct sbx_report *r, const struct sbx_session *s)
{
	sbx_strlcpy(r->session_id, sizeof(r->session_id), s->session_id);
	sbx_strlcpy(r->user, sizeof(r->user), s->user);
	r->uid = s->uid;
	sbx_strlcpy(r->client, sizeof(r->client), s->client);
	sbx_strlcpy(r->service, sizeof(r->service), s->service);
	/* SSH_CONNECTION is whatever the caller's environment says. */
	sbx_text_scrub(r->user);
	sbx_text_scrub(r->client);
	sbx_text_scrub(r->service);
	r->started = (int64_t)time(NULL);
}

/*
 * The outer process runs as the agent's uid, unconfined, for the whole
 * session: not dumpable, so the sandboxed program cannot open its
 * /proc/<pid>/mem, fds or root where no pid namespace or Landlock domain
 * hides it. A subreaper, so whatever the session leaves behind (a daemon
 * that double-forked) comes back to it and is ended with it. Without
 * namespaces the unix supervisor is its child, in the same view as the
 * worker. *dumpable_before: to restore on the way out.
 */
static int outer_enter(struct plans *pl, int *dumpable_before, struct sbx_error *err)
{
	*dumpable_before = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		return sbx_error_set(err, errno, "prctl(DUMPABLE 0, CHILD_SUBREAPER): %s",
				     strerror(errno));
	if (!pl->userns && pl->seccomp.unix_notify) {
		pid_t supervisor;

		return sbx_unix_supervisor_start(&pl->unix_policy, false, &pl->unix_chan,
						 &supervisor, err);
	}
	return 0;
}

/* Long on purpose: the order of enforcement (docs/design.md section 4) reads
 * top to bottom here, with one cleanup path for everything the outer process
 * changed. */
/* One try on the probe given; *reprobe set: it was not measured and must
 * be (nothing ran, everything made here is undone), then try again. */
static int run_on(const struct sbx_run *run, const struct sbx_probe *probe,
		  enum sbx_probe_basis basis, struct sbx_report *report, int *exit_code,
		  bool *reprobe, struct sbx_error *err)
{
	const struct sbx_profile *p = run->profile;
	const struct sbx_decide_opts opts = {
		.landlock_abi_limit = run->landlock_abi_limit,
		.private_netns = run->session ? run->session->private_netns : false,
	};
	struct sbx_report *r = NULL;
	struct plans *pl = NULL;
	struct sbx_profile *resolved = NULL;
	struct sbx_run local;
	struct sbx_session fresh_session;
	char fresh_home[32] = "";
	int pipefd[2] = { -1, -1 };
	int ret, status, foreign_fd = -1;
	sigset_t old_mask;
	struct termios tty_modes;
	bool mask_saved = false, tty_saved = false, outer_set = false, direct;
	int dumpable_before = 1;
	pid_t child;

	if (!run->path || run->path[0] != '/' || !run->argv || !run->argv[0])
		return sbx_error_set(err, EINVAL, "run: the program must be an absolute path");
	r = calloc(1, sizeof(*r));
	pl = calloc(1, sizeof(*pl));
	if (!r || !pl) {
		ret = sbx_error_set(err, ENOMEM, "run: out of memory");
		goto out;
	}
	pl->unix_chan = -1;
	pl->foreign_sock = -1;
	pl->egress.socket_fd = -1;
	sbx_report_init(r, p);
	/* Every layer (mount masks, Landlock, the unix supervisor, the
	 * canaries) works on the secrets' real paths from here on. */
	resolved = malloc(sizeof(*resolved));
	if (!resolved) {
		ret = sbx_error_set(err, ENOMEM, "run: out of memory");
		goto out;
	}
	sbx_profile_copy(resolved, p);
	ret = resolve_deny_read(resolved, err);
	if (ret == 0)
		ret = sbx_profile_skip_missing_roots(resolved, pl->missing_roots,
						     sizeof(pl->missing_roots), err);
	if (ret)
		goto out;
	local = *run;
	local.profile = resolved;
	run = &local;
	p = resolved;
	report_identity(r, run->session);
	sbx_report_set_argv(r, run->argv);

	/* The one decision: every plan, and the home below, follow it. */
	ret = sbx_decide(p, probe, &opts, &pl->d, err);
	if (ret)
		goto out;
	/* Only the direct path's one clone can stand in for the probe. */
	if (basis == SBX_PROBE_ASSUMED && !(pl->d.ns && clone_init_safe(pl))) {
		*reprobe = true;
		ret = -EAGAIN;
		goto out;
	}
	ret = fresh_home_if_shared(run, &pl->d, &fresh_session, fresh_home, sizeof(fresh_home),
				   err);
	if (ret)
		goto out;
	if (fresh_home[0])
		local.session = &fresh_session;
	ret = build_plans(run, pl, r, err);
	if (ret)
		goto out;
	/* 1. The environment is rebuilt from an allow-list before any
	 * library code in the sandbox can read it. */
	sbx_report_set(r, SBX_F_ENV_SCRUB, true, false, "allow-list; LD_*, BASH_ENV, ENV, GLIBC_TUNABLES dropped");
	if (!pl->userns)
		report_missing_userns(r, &pl->d);
	if (p->network == SBX_NETWORK_PROXY && !pl->d.egress)
		sbx_report_set(r, SBX_F_NETWORK_EGRESS, false, false, "%s", pl->d.egress_why);
	if (pl->userns && !pl->d.netns && pl->d.network_denied)
		sbx_report_set(r, SBX_F_NETNS, false, false, "%s", pl->d.ns_why);
	/* The session's cgroup, read here: the worker's cgroup namespace
	 * would show it as the root. */
	sbx_cgroup_report(p, r);

	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		ret = sbx_error_set(err, errno, "pipe2: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	/* Block the forwarded signals until a supervisor (signalfd) reads
	 * them: nothing sent during set-up is lost. */
	sigprocmask(SIG_SETMASK, NULL, &old_mask);
	mask_saved = true;
	/* The init puts the session's terminal in raw mode for the relay;
	 * whatever happens inside, the outer process puts it back. */
	tty_saved = pl->relay && tcgetattr(STDIN_FILENO, &tty_modes) == 0;
	ret = outer_enter(pl, &dumpable_before, err);
	outer_set = true;	/* restored on the way out, whatever failed */
	if (ret)
		goto out;
	/* Without a user namespace there is no init: the canary's socket
	 * bound outside the supervisor is this process's (an unconfined one
	 * of the agent's uid, as a host tmux would be). */
	if (!pl->userns && pl->seccomp.unix_notify) {
		foreign_fd = sbx_unix_foreign_listener(-1, "/tmp", pl->canary.unix_foreign,
						       sizeof(pl->canary.unix_foreign));
		pl->canary.unix_foreign_err = foreign_fd < 0 ? -foreign_fd : 0;
	} else if (pl->userns && pl->seccomp.unix_notify) {
		pl->foreign_sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	}
	sbx_init_block_signals();
	/* Point of no return: from here on children never return. */
	direct = pl->userns && clone_init_safe(pl);
	if (direct) {
		uid_t outer_uid = geteuid();
		gid_t outer_gid = getegid();
		struct sbx_error why = { 0 };

		/* Nothing has run if it fails: the caller refuses the session
		 * with this message (the namespaces named, and the errno). */
		ret = sbx_ns_clone(CLONE_NEWUSER | pl->ns_flags, &child, &why);
		if (ret) {
			*reprobe = basis != SBX_PROBE_MEASURED;
			ret = sbx_error_set(err, -ret, "namespaces: %s; nothing was run", why.msg);
			goto out;
		}
		if (child == 0) {
			close(pipefd[0]);
			init_cloned(run, pl, r, pipefd[1], outer_uid, outer_gid);
		}
	} else {
		child = fork();
		if (child < 0) {
			ret = sbx_error_set(err, errno, "fork: %s", strerror(errno));
			goto out;
		}
		if (child == 0) {
			close(pipefd[0]);
			if (pl->userns)
				setup_main(run, pl, r, pipefd[1]);
			worker(run, pl, r, pipefd[1]);
		}
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	if (pl->unix_chan >= 0) {
		close(pl->unix_chan);
		pl->unix_chan = -1;
	}
	if (pl->foreign_sock >= 0) {
		close(pl->foreign_sock);	/* the init's now */
		pl->foreign_sock = -1;
	}

	ret = read_report(pipefd[0], report, err);
	if (ret == 0 && run->on_report)
		run->on_report(report, run->ctx);
	status = sbx_outer_supervise(child, (p->limits.set_mask & (1u << SBX_LIMIT_SESSION_TIME)) ?
				     (unsigned)p->limits.value[SBX_LIMIT_SESSION_TIME] : 0,
				     run->watch_fd > 0 ? run->watch_fd : -1, run->root_gone);
	if (ret == 0)
		*exit_code = status;
	/* The bridge has ended with the session: its counts are final. */
	if (ret == 0 && pl->egress.counts) {
		const struct sbx_egress_counts *c = pl->egress.counts;
		uint64_t answered, accepted;

		report->egress_allowed = __atomic_load_n(&c->allowed, __ATOMIC_RELAXED);
		report->egress_refused = __atomic_load_n(&c->refused, __ATOMIC_RELAXED);
		report->egress_failed = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
		/* Handed over, but the session ended before the daemon's
		 * verdict came back (it may still have been allowed). */
		answered = report->egress_allowed + report->egress_refused +
			   report->egress_failed + __atomic_load_n(&c->none, __ATOMIC_RELAXED);
		accepted = __atomic_load_n(&c->accepted, __ATOMIC_RELAXED);
		report->egress_unanswered = accepted > answered ? accepted - answered : 0;
	}
out:
	if (outer_set) {
		(void)prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
		(void)prctl(PR_SET_DUMPABLE, dumpable_before == 1 ? 1 : 0, 0, 0, 0);
	}
	if (tty_saved)
		(void)tcsetattr(STDIN_FILENO, TCSADRAIN, &tty_modes);
	if (mask_saved)
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (foreign_fd >= 0) {
		/* The canary removes it; not when the session ended first. */
		(void)unlink(pl->canary.unix_foreign);
		close(foreign_fd);
	}
	if (pl) {
		if (pl->unix_chan >= 0)
			close(pl->unix_chan);
		if (pl->foreign_sock >= 0)
			close(pl->foreign_sock);
		sbx_env_free(pl->env);
		sbx_mount_plan_free(&pl->mounts);
		sbx_egress_counts_unmap(pl->egress.counts);
		if (pl->egress.socket_fd >= 0)
			close(pl->egress.socket_fd);
	}
	free(pl);
	free(r);
	free(resolved);
	/* The session's processes are gone (outer_supervise ended them). */
	if (fresh_home[0])
		(void)sbx_remove_tree(fresh_home);
	return ret;
}

int sbx_run_confined(const struct sbx_run *run, struct sbx_report *report,
		     int *exit_code, struct sbx_error *err)
{
	const struct sbx_probe *probe;
	enum sbx_probe_basis basis;
	bool reprobe = false;
	int ret;

	/* No probe child on the direct path: its clone is the probe
	 * (sbx_probe_for_session). Refused, or another path: measure, and
	 * decide again on what was measured. */
	ret = sbx_probe_for_session(&probe, &basis, err);
	if (ret == 0)
		ret = run_on(run, probe, basis, report, exit_code, &reprobe, err);
	if (ret == 0 || !reprobe)
		return ret;
	if (err)
		memset(err, 0, sizeof(*err));
	ret = sbx_probe_measure(&probe, err);
	if (ret == 0)
		ret = run_on(run, probe, SBX_PROBE_MEASURED, report, exit_code, &reprobe, err);
	return ret;
}
