/* Long on purpose: one throwaway child tries every namespace in turn and
 * reports them as one struct; the tries share its state. */
/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel probe: which confinement layers this kernel and this uid offer, and why not. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "landlock_compat.h"

#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define PROBE_CHILD_TIMEOUT_MS 5000

/*
 * The cache. Every caller of libsbx is single-threaded (agent-shell before
 * exec, the PAM module inside one sshd worker, the tests), so a plain static
 * with no lock is enough; a multi-threaded caller would need a pthread_once.
 */
static struct sbx_probe probe_cache;
static bool probe_cached;

/* Read a small proc/sys file into buf (NUL-terminated, trailing newline
 * stripped). 0 or -errno. */
static int read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	do {
		n = read(fd, buf, size - 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

/* Value of a sysctl-like integer file, or -1 when unreadable. */
static long read_long(const char *path)
{
	char buf[64];
	char *end;
	long v;

	if (read_small(path, buf, sizeof(buf)) != 0)
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -1;
	return v;
}

int sbx_lsm_list(char *out, size_t size)
{
	char cmdline[4096];
	const char *p;

	/* 0 means out was filled; -errno after a failed open() is never 0.
	 * NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Branch) */
	if (read_small("/sys/kernel/security/lsm", out, size) == 0 && out[0])
		return SBX_LSM_FROM_SECURITYFS;
	if (read_small("/proc/cmdline", cmdline, sizeof(cmdline)) == 0) {
		for (p = cmdline; (p = strstr(p, "lsm=")) != NULL; p += 4) {
			if (p == cmdline || p[-1] == ' ') {
				size_t n = strcspn(p + 4, " ");

				if (n >= size)
					n = size - 1;
				memcpy(out, p + 4, n);
				out[n] = '\0';
				return SBX_LSM_FROM_CMDLINE;
			}
		}
	}
	sbx_strlcpy(out, size, "unknown");
	return SBX_LSM_UNKNOWN;
}

static void probe_landlock(struct sbx_probe *p)
{
	long abi, errata;
	char lsm[160];

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
		      LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		int e = errno;

		p->landlock_abi = 0;
		if (e == ENOSYS) {
			sbx_strlcpy(p->landlock_why, sizeof(p->landlock_why),
				    "kernel built without CONFIG_SECURITY_LANDLOCK");
		} else if (e == EOPNOTSUPP) {
			(void)sbx_lsm_list(lsm, sizeof(lsm));
			sbx_text_set(p->landlock_why, sizeof(p->landlock_why),
				 "Landlock not enabled at boot: add landlock to lsm= "
				 "on the kernel command line (current: %s)", lsm);
		} else {
			sbx_text_set(p->landlock_why, sizeof(p->landlock_why),
				 "landlock_create_ruleset(VERSION): %s", strerror(e));
		}
		return;
	}
	p->landlock_abi = (int)abi;
	/* The errata query exists from ABI 7 on; older kernels return EINVAL
	 * for the unknown flag, which reads as "no errata fixed". */
	errata = syscall(SYS_landlock_create_ruleset, NULL, 0,
			 LANDLOCK_CREATE_RULESET_ERRATA);
	p->landlock_errata = errata > 0 ? (int)errata : 0;
}

static void probe_seccomp(struct sbx_probe *p)
{
	uint32_t action = SECCOMP_RET_KILL_PROCESS;

	/* PR_GET_SECCOMP fails with EINVAL on a kernel without CONFIG_SECCOMP. */
	p->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	p->seccomp_kill_process = p->seccomp &&
		syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

/* ---- user and other namespaces, tried in a throwaway child -------------- */

enum { NS_MNT, NS_PID, NS_NET, NS_IPC, NS_UTS, NS_CGROUP, NS_COUNT };

static const int ns_flags[NS_COUNT] = {
	CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
	CLONE_NEWCGROUP,
};

struct ns_result {
	int drop_errno;		/* becoming the probed uid failed (probe as) */
	int userns_errno;	/* 0 = created and mapped */
	int map_errno;		/* writing the maps failed */
	unsigned char ns_ok[NS_COUNT];
	int ns_errno[NS_COUNT];
};

/* Async-signal-safe "%u" into buf (the child of a fork in a possibly
 * multi-threaded caller must not take stdio locks). */
static size_t fmt_uint(char *buf, unsigned long v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

static int write_all_path(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, buf, len);
	if (n < 0 || (size_t)n != len) {
		int e = n < 0 ? errno : EIO;

		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

static int write_id_map(const char *path, unsigned long id)
{
	char line[64];
	size_t n = 0;

	n += fmt_uint(line + n, id);
	line[n++] = ' ';
	n += fmt_uint(line + n, id);
	line[n++] = ' ';
	line[n++] = '1';
	line[n++] = '\n';
	return write_all_path(path, line, n);
}

/* The tries themselves, in the throwaway child. write_maps: map its own
 * uid and gid as the session's setup process does; a child that must stay
 * undumpable cannot (its /proc/self/uid_map is root's), and the maps are
 * not what decides whether the namespaces below can be made. */
static void ns_tries(struct ns_result *res, bool write_maps, uid_t uid, gid_t gid)
{
	int i;

	if (unshare(CLONE_NEWUSER) != 0) {
		res->userns_errno = errno;
		return;
	}
	if (write_maps) {
		res->map_errno = write_all_path("/proc/self/setgroups", "deny", 4);
		if (!res->map_errno)
			res->map_errno = write_id_map("/proc/self/uid_map", uid);
		if (!res->map_errno)
			res->map_errno = write_id_map("/proc/self/gid_map", gid);
	}
	for (i = 0; i < NS_COUNT; i++) {
		if (unshare(ns_flags[i]) == 0)
			res->ns_ok[i] = 1;
		else
			res->ns_errno[i] = errno;
	}
}

static void __attribute__((noreturn)) ns_child_send(int wfd, const struct ns_result *res)
{
	ssize_t n = write(wfd, res, sizeof(*res));

	_exit(n == (ssize_t)sizeof(*res) ? 0 : 1);
}

static void __attribute__((noreturn)) ns_child(int wfd, uid_t uid, gid_t gid)
{
	struct ns_result res;

	memset(&res, 0, sizeof(res));
	ns_tries(&res, true, uid, gid);
	ns_child_send(wfd, &res);
}

/* Whom sbx_probe_namespaces_as() probes as. */
struct ns_identity {
	uid_t uid;
	gid_t gid;
	const char *user;	/* for its groups; NULL: none */
};

/*
 * Root's child for the probe cache: becomes the account and tries, never
 * dumpable. A process of the account's uid cannot ptrace it or open its
 * /proc/<pid>/mem or fds (that needs a dumpable target or CAP_SYS_PTRACE
 * where its memory was made, the host's user namespace, even once it owns
 * the user namespace made here), so what it reports is root's measurement.
 * The uid change sets dumpable to fs.suid_dumpable; with 1 ("debug") there
 * are a few instructions until the second prctl below: what a ptracer could
 * change there is only what this child answers, and a cache entry only ever
 * says "available", which the session's own unshare then holds to
 * (docs/design.md section 4.12).
 */
static void __attribute__((noreturn)) ns_child_as(int wfd, const struct ns_identity *id)
{
	struct ns_result res;

	memset(&res, 0, sizeof(res));
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ||
	    (id->user ? initgroups(id->user, id->gid) : setgroups(0, NULL)) != 0 ||
	    setresgid(id->gid, id->gid, id->gid) != 0 ||
	    setresuid(id->uid, id->uid, id->uid) != 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		res.drop_errno = errno ? errno : EPERM;
		ns_child_send(wfd, &res);
	}
	if (setresuid(0, 0, 0) == 0 || errno != EPERM) {
		res.drop_errno = EPERM;
		ns_child_send(wfd, &res);
	}
	ns_tries(&res, false, id->uid, id->gid);
	ns_child_send(wfd, &res);
}

static bool running_in_container(char *hint, size_t size)
{
	char buf[4096];
	static const char *const markers[] = {
		"docker", "kubepods", "containerd", "lxc", "libpod", "crio",
	};
	size_t i;

	if (access("/.dockerenv", F_OK) == 0) {
		sbx_strlcpy(hint, size, "/.dockerenv exists");
		return true;
	}
	if (access("/run/.containerenv", F_OK) == 0) {
		sbx_strlcpy(hint, size, "/run/.containerenv exists");
		return true;
	}
	if (read_small("/proc/1/cgroup", buf, sizeof(buf)) == 0) {
		for (i = 0; i < ARRAY_SIZE(markers); i++) {
			if (strstr(buf, markers[i])) {
				sbx_text_set(hint, size, "/proc/1/cgroup mentions %s", markers[i]);
				return true;
			}
		}
	}
	return false;
}

/* Name the layer that blocks unprivileged user namespaces, and its fix,
 * checking the usual suspects in order. */
static void explain_userns(struct sbx_probe *p, int e)
{
	char hint[96];

	if (read_long("/proc/sys/user/max_user_namespaces") == 0) {
		sbx_strlcpy(p->userns_why, sizeof(p->userns_why),
			    "sysctl user.max_user_namespaces=0; fix: set it > 0");
	} else if (read_long("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
		sbx_strlcpy(p->userns_why, sizeof(p->userns_why),
			    "sysctl kernel.unprivileged_userns_clone=0 (Debian/Ubuntu "
			    "patch); fix: sysctl kernel.unprivileged_userns_clone=1");
	} else if (read_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1) {
		sbx_strlcpy(p->userns_why, sizeof(p->userns_why),
			    "AppArmor restricts unprivileged user namespaces; fix: an "
			    "AppArmor profile for agent-shell with 'userns,' or sysctl "
			    "kernel.apparmor_restrict_unprivileged_userns=0");
	} else if (running_in_container(hint, sizeof(hint))) {
		sbx_text_set(p->userns_why, sizeof(p->userns_why),
			 "inside a container (%s): its runtime's seccomp profile "
			 "or user namespace blocks unshare(CLONE_NEWUSER): %s; fix: "
			 "allow unshare/clone with CLONE_NEWUSER in the runtime",
			 hint, strerror(e));
	} else {
		sbx_text_set(p->userns_why, sizeof(p->userns_why),
			 "unshare(CLONE_NEWUSER): %s", strerror(e));
	}
}

/*
 * Fork the throwaway child (as it is, or becoming id), collect its answer
 * within PROBE_CHILD_TIMEOUT_MS and reap it. 0 with res filled, or -errno
 * with why filled.
 */
static int ns_child_run(const struct ns_identity *id, struct ns_result *res, char *why,
			size_t why_size)
{
	struct pollfd pfd;
	struct timespec start, now;
	int fds[2], status, left, e;
	ssize_t n = -1;
	size_t got = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	if (pipe2(fds, O_CLOEXEC) != 0) {
		e = errno;
		sbx_text_set(why, why_size, "probe: pipe2: %s", strerror(e));
		return -e;
	}
	/* A real process, not a thread: unshare(CLONE_NEWUSER) refuses a
	 * multi-threaded caller, and the namespaces must die with the child. */
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(fds[0]);
		close(fds[1]);
		sbx_text_set(why, why_size, "probe: fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		close(fds[0]);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (id)
			ns_child_as(fds[1], id);
		/* A process that changed uids without exec (a test child, a
		 * PAM caller) is not dumpable, which makes /proc/self/uid_map
		 * root-owned and the map write fail with EACCES. This
		 * throwaway child holds nothing its own uid may not see. If
		 * this fails, the probe reports that map write failing. */
		(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		ns_child(fds[1], getuid(), getgid());
	}
	close(fds[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = PROBE_CHILD_TIMEOUT_MS -
		       (int)((now.tv_sec - start.tv_sec) * 1000 +
			     (now.tv_nsec - start.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		pfd.fd = fds[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(fds[0], (char *)res + got, sizeof(*res) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(*res))
			break;
	}
	close(fds[0]);
	if (got != sizeof(*res))
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got != sizeof(*res)) {
		memset(res, 0, sizeof(*res));
		sbx_text_set(why, why_size, "probe child gave no answer within %d s",
			     PROBE_CHILD_TIMEOUT_MS / 1000);
		return -ETIMEDOUT;
	}
	return 0;
}

/* The child's answer into p's namespace fields and userns_why. */
static void ns_result_apply(struct sbx_probe *p, const struct ns_result *res)
{
	if (res->drop_errno) {
		sbx_text_set(p->userns_why, sizeof(p->userns_why),
			     "probe: becoming the account failed: %s", strerror(res->drop_errno));
		return;
	}
	if (res->userns_errno) {
		explain_userns(p, res->userns_errno);
		return;
	}
	if (res->map_errno) {
		sbx_text_set(p->userns_why, sizeof(p->userns_why),
			 "user namespace created but writing its uid/gid map "
			 "failed: %s", strerror(res->map_errno));
		return;
	}
	p->userns = true;
	for (int i = 0; i < NS_COUNT; i++) {
		bool ok = res->ns_ok[i] != 0;

		switch (i) {
		case NS_MNT: p->mountns = ok; break;
		case NS_PID: p->pidns = ok; break;
		case NS_NET: p->netns = ok; break;
		case NS_IPC: p->ipcns = ok; break;
		case NS_UTS: p->utsns = ok; break;
		case NS_CGROUP: p->cgroupns = ok; break;
		}
	}
}

static void probe_namespaces(struct sbx_probe *p)
{
	struct ns_result res;

	if (ns_child_run(NULL, &res, p->userns_why, sizeof(p->userns_why)) == 0)
		ns_result_apply(p, &res);
	/* Root may create user namespaces where the agent may not (and the
	 * sysctls above do not apply to CAP_SYS_ADMIN): make it visible. */
	if (getuid() == 0) {
		size_t len = strlen(p->userns_why);

		sbx_text_set(p->userns_why + len, sizeof(p->userns_why) - len,
			 "%sprobed as root: this is root's result; agent-shell "
			 "probes as the agent", len ? "; " : "");
	}
}

int sbx_probe_namespaces_as(uid_t uid, gid_t gid, const char *user, struct sbx_probe *p,
			    struct sbx_error *err)
{
	const struct ns_identity id = { uid, gid, user };
	struct ns_result res;
	char why[sizeof(p->userns_why)] = "";
	int r;

	if (geteuid() != 0)
		return sbx_error_set(err, EPERM, "probe as uid %u: only root can", (unsigned)uid);
	if (uid == 0)
		return sbx_error_set(err, EINVAL, "probe as uid 0: root's probe is its own");
	r = ns_child_run(&id, &res, why, sizeof(why));
	if (r)
		return sbx_error_set(err, -r, "probe as uid %u: %s", (unsigned)uid, why);
	p->userns = p->mountns = p->pidns = p->netns = false;
	p->ipcns = p->utsns = p->cgroupns = false;
	p->userns_why[0] = '\0';
	ns_result_apply(p, &res);
	return 0;
}

/* ---- cgroup v2 ----------------------------------------------------------- */

static void probe_cgroup(struct sbx_probe *p)
{
	const char *mnt = NULL;
	char buf[4096], dir[SBX_PATH_MAX], procs[SBX_PATH_MAX];
	struct statfs sfs;
	char *line, *save = NULL;

	if (statfs("/sys/fs/cgroup", &sfs) == 0 &&
	    (unsigned long)sfs.f_type == CGROUP2_SUPER_MAGIC)
		mnt = "/sys/fs/cgroup";
	else if (statfs("/sys/fs/cgroup/unified", &sfs) == 0 &&
		 (unsigned long)sfs.f_type == CGROUP2_SUPER_MAGIC)
		mnt = "/sys/fs/cgroup/unified";	/* hybrid hierarchy */
	if (!mnt)
		return;
	p->cgroup2 = true;
	/* The session limits (cgroup.c) need these three in the v2 tree; a
	 * hybrid host keeps them in v1. */
	if (sbx_snprintf(dir, sizeof(dir), "%s/cgroup.controllers", mnt) == 0 &&
	    read_small(dir, buf, sizeof(buf)) == 0) {
		char *w, *wsave = NULL;
		unsigned have = 0;

		for (w = strtok_r(buf, " \n", &wsave); w; w = strtok_r(NULL, " \n", &wsave))
			have |= !strcmp(w, "memory") ? 1u : !strcmp(w, "pids") ? 2u :
				!strcmp(w, "cpu") ? 4u : 0u;
		p->cgroup2_limits = have == 7;
	}
	if (read_small("/proc/self/cgroup", buf, sizeof(buf)) != 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		if (line[3] != '/' || strstr(line + 3, "/..") != NULL)
			return;
		if (sbx_snprintf(dir, sizeof(dir), "%s%s", mnt,
				 strcmp(line + 3, "/") == 0 ? "" : line + 3) != 0 ||
		    sbx_snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir) != 0)
			return;
		/* Delegation means this uid may create sub-groups and move
		 * its processes: both the directory and cgroup.procs. */
		p->cgroup2_delegated = access(dir, W_OK) == 0 &&
				       access(procs, W_OK) == 0;
		return;
	}
}

static void probe_mount_setattr(struct sbx_probe *p)
{
	/* Invalid arguments on purpose: EBADF/EINVAL proves the syscall
	 * exists without touching any mount. */
	long r = syscall(SYS_mount_setattr, -1, NULL, 0, NULL, 0);

	p->mount_setattr = !(r < 0 && errno == ENOSYS);
}

/* PR_GET_MDWE is a query: it answers on every kernel that has
 * PR_SET_MDWE (6.3) and fails with EINVAL before, and sets nothing. */
static void probe_mdwe(struct sbx_probe *p)
{
	p->mdwe = prctl(PR_GET_MDWE, 0, 0, 0, 0) >= 0;
}

/* Everything but the namespaces: plain syscalls and reads, no process. */
static void probe_kernel_facts(struct sbx_probe *p)
{
	struct utsname u;

	memset(p, 0, sizeof(*p));
	if (uname(&u) == 0)
		sbx_strlcpy(p->kernel, sizeof(p->kernel), u.release);
	probe_landlock(p);
	probe_seccomp(p);
	probe_cgroup(p);
	probe_mount_setattr(p);
	probe_mdwe(p);
}

void sbx_probe_kernel(struct sbx_probe *out)
{
	probe_kernel_facts(out);
	sbx_strlcpy(out->userns_why, sizeof(out->userns_why),
		    "not probed: this caller makes no process and no namespace");
	sbx_strlcpy(out->ns_source, sizeof(out->ns_source), "not probed");
}

static void probe_all(struct sbx_probe *p, bool trust_cache)
{
	struct sbx_error err = { 0 };
	uid_t uid = geteuid();

	probe_kernel_facts(p);
	if (!trust_cache) {
		probe_namespaces(p);
		sbx_strlcpy(p->ns_source, sizeof(p->ns_source),
			    "probed now, for a session that could not take the cache or its clone on trust");
		return;
	}
	/*
	 * An entry root wrote this boot for this uid says every namespace
	 * type could be made: take it instead of forking. It can only say
	 * "available" (sbx_probe_cache_refresh writes nothing else), and a
	 * session that takes that path makes its namespaces itself: a
	 * refused clone measures again (sbx_run_confined), a refusal after
	 * a setup process's point of no return ends it (exit 126). A wrong
	 * entry costs a probe or refuses a session, it never weakens one.
	 * Anything less than a trusted, current entry is probed here, as
	 * before. Root's own probe is always made here (labelled as root's).
	 */
	if (uid != 0 && uid == getuid() && sbx_probe_cache_check(uid, &err) == 0) {
		p->userns = p->mountns = p->pidns = p->netns = true;
		p->ipcns = p->utsns = p->cgroupns = true;
		sbx_text_set(p->ns_source, sizeof(p->ns_source),
			     "from this boot's probe cache (root probed as uid %u)", (unsigned)uid);
		return;
	}
	probe_namespaces(p);
	sbx_text_set(p->ns_source, sizeof(p->ns_source), "probed now%s%s",
		     uid == 0 ? "" : ": ", uid == 0 ? "" : err.msg);
}

int sbx_probe_get(const struct sbx_probe **out, struct sbx_error *err)
{
	if (!out)
		return sbx_error_set(err, EINVAL, "sbx_probe_get: no output pointer");
	if (!probe_cached) {
		probe_all(&probe_cache, true);
		probe_cached = true;
	}
	*out = &probe_cache;
	return 0;
}

int sbx_probe_measure(const struct sbx_probe **out, struct sbx_error *err)
{
	if (!out)
		return sbx_error_set(err, EINVAL, "sbx_probe_measure: no output pointer");
	probe_all(&probe_cache, false);
	probe_cached = true;
	*out = &probe_cache;
	return 0;
}

/*
 * A session that makes every namespace in one clone (sbx_run_confined's
 * direct path) need not learn first, in a child of its own, whether it
 * can: the clone answers that. Success makes every namespace type the
 * probe would have found; a refusal makes none, runs nothing and sends
 * the session back to sbx_probe_measure(), whose probe decides again
 * (the degraded path and its reasons, or the floor's refusal). So the
 * assumption can only cost a failed clone; it never decides a layer.
 * Everything else here is the real kernel facts. A trusted cache entry is
 * still read: a session that cannot take the direct path (a proxy
 * session, a threaded caller) holds to it as before.
 */
int sbx_probe_for_session(const struct sbx_probe **out, enum sbx_probe_basis *basis,
			  struct sbx_error *err)
{
	static struct sbx_probe assumed;
	static enum sbx_probe_basis assumed_basis;
	static bool ready;
	struct sbx_error why = { 0 };
	uid_t uid = geteuid();

	if (!out || !basis)
		return sbx_error_set(err, EINVAL, "sbx_probe_for_session: no output pointer");
	*basis = SBX_PROBE_MEASURED;
	/* Measured already (or set by a test), or root's, which is always
	 * measured and labelled. */
	if (probe_cached || uid == 0 || uid != getuid())
		return sbx_probe_get(out, err);
	if (!ready) {
		probe_kernel_facts(&assumed);
		assumed.userns = assumed.mountns = assumed.pidns = assumed.netns = true;
		assumed.ipcns = assumed.utsns = assumed.cgroupns = true;
		if (sbx_probe_cache_check(uid, &why) == 0) {
			assumed_basis = SBX_PROBE_CACHE;
			sbx_text_set(assumed.ns_source, sizeof(assumed.ns_source),
				     "from this boot's probe cache (root probed as uid %u)",
				     (unsigned)uid);
		} else {
			assumed_basis = SBX_PROBE_ASSUMED;
			sbx_strlcpy(assumed.ns_source, sizeof(assumed.ns_source),
				    "not probed: the session's clone makes every type, or is "
				    "refused and probes");
		}
		ready = true;
	}
	*basis = assumed_basis;
	*out = &assumed;
	return 0;
}

bool sbx_probe_namespaces_measured(void)
{
	return probe_cached;
}

/* Test binaries only: agent-shell and the PAM module never call this, and
 * no environment variable, argument or file reaches it. */
void sbx_probe_set_for_tests(const struct sbx_probe *p)
{
	if (!p) {
		probe_cached = false;
		return;
	}
	probe_cache = *p;
	probe_cached = true;
}

/* ---- describe ------------------------------------------------------------ */

struct probe_row {
	const char *name;
	bool ok;
	char detail[320];	/* when ok: extra facts; when not: layer and fix */
};

enum { ROW_COUNT = 15 };

static void probe_rows(const struct sbx_probe *p, struct probe_row rows[ROW_COUNT])
{
	const char *nsnote = p->userns ? "" : "needs a user namespace: ";
	size_t i = 0;

#define ROW(n, v) do { rows[i].name = (n); rows[i].ok = (v); rows[i].detail[0] = '\0'; } while (0)
	ROW("landlock", p->landlock_abi > 0);
	if (p->landlock_abi > 0)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail), "ABI %d, errata 0x%x",
			 p->landlock_abi, (unsigned)p->landlock_errata);
	else
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail), "%s",
			 p->landlock_why[0] ? p->landlock_why : "unavailable (cause unknown)");
	i++;
	ROW("seccomp", p->seccomp);
	if (!p->seccomp)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "kernel built without CONFIG_SECCOMP_FILTER; fix: a kernel "
			 "with seccomp filters");
	i++;
	ROW("seccomp_kill_process", p->seccomp_kill_process);
	if (!p->seccomp_kill_process)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "SECCOMP_RET_KILL_PROCESS unavailable (kernel < 4.14); fix: "
			 "a newer kernel");
	i++;
	ROW("userns", p->userns);
	sbx_text_set(rows[i].detail, sizeof(rows[i].detail), "%s", p->userns_why);
	i++;
	ROW("mountns", p->mountns);
	if (!p->mountns)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "%sunshare(CLONE_NEWNS) refused; the PAM stage (root) can "
			 "supply the mount namespace", nsnote);
	i++;
	ROW("pidns", p->pidns);
	if (!p->pidns)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "%sunshare(CLONE_NEWPID) refused", nsnote);
	i++;
	ROW("netns", p->netns);
	if (!p->netns)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "%sunshare(CLONE_NEWNET) refused; the PAM stage (root) can "
			 "supply the network namespace", nsnote);
	i++;
	ROW("ipcns", p->ipcns);
	if (!p->ipcns)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "%sunshare(CLONE_NEWIPC) refused", nsnote);
	i++;
	ROW("utsns", p->utsns);
	if (!p->utsns)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "%sunshare(CLONE_NEWUTS) refused", nsnote);
	i++;
	ROW("cgroupns", p->cgroupns);
	if (!p->cgroupns)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "%sunshare(CLONE_NEWCGROUP) refused (kernel without "
			 "CONFIG_CGROUPS?)", nsnote);
	i++;
	ROW("cgroup2", p->cgroup2);
	if (!p->cgroup2)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "no cgroup2 at /sys/fs/cgroup or /sys/fs/cgroup/unified; fix: "
			 "boot with systemd.unified_cgroup_hierarchy=1");
	i++;
	ROW("cgroup2_delegated", p->cgroup2_delegated);
	if (!p->cgroup2_delegated)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "this uid's cgroup is not writable; fix: systemd delegation "
			 "(user@.service Delegate=yes) or a root-made subtree chowned "
			 "to the agent");
	i++;
	ROW("cgroup2_limits", p->cgroup2_limits);
	if (!p->cgroup2_limits)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "memory, pids or cpu controller not in cgroup v2 (a hybrid host keeps "
			 "them in v1); memory_max, pids_max and cpu_max cannot hold; fix: boot "
			 "with systemd.unified_cgroup_hierarchy=1");
	i++;
	ROW("mount_setattr", p->mount_setattr);
	if (!p->mount_setattr)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "mount_setattr(2) missing (kernel < 5.12); recursive "
			 "read-only falls back to per-mount remounts");
	i++;
	ROW("mdwe", p->mdwe);
	if (!p->mdwe)
		sbx_text_set(rows[i].detail, sizeof(rows[i].detail),
			 "PR_SET_MDWE missing (kernel < 6.3); the command gate keeps memory "
			 "W^X with seccomp rules alone");
	i++;
#undef ROW
}

int sbx_probe_to_text(const struct sbx_probe *p, FILE *out)
{
	struct probe_row rows[ROW_COUNT];
	size_t i;

	if (!p || !out)
		return -EINVAL;
	probe_rows(p, rows);
	fprintf(out, "%-20s %s\n", "kernel", p->kernel[0] ? p->kernel : "unknown");
	if (p->ns_source[0])
		fprintf(out, "%-20s %s\n", "namespaces", p->ns_source);
	for (i = 0; i < ROW_COUNT; i++)
		fprintf(out, "%-20s %-3s%s%s\n", rows[i].name, rows[i].ok ? "yes" : "no",
			rows[i].detail[0] ? "  " : "", rows[i].detail);
	return ferror(out) ? -EIO : 0;
}

int sbx_probe_to_json(const struct sbx_probe *p, FILE *out)
{
	struct probe_row rows[ROW_COUNT];
	size_t i;

	if (!p || !out)
		return -EINVAL;
	probe_rows(p, rows);
	fputs("{\"kernel\":", out);
	sbx_json_put_string(out, p->kernel);
	fprintf(out, ",\"landlock_abi\":%d,\"landlock_errata\":%d,\"features\":[",
		p->landlock_abi, p->landlock_errata);
	for (i = 0; i < ROW_COUNT; i++) {
		fprintf(out, "%s{\"name\":\"%s\",\"available\":%s,\"detail\":",
			i ? "," : "", rows[i].name, rows[i].ok ? "true" : "false");
		sbx_json_put_string(out, rows[i].detail);
		fputc('}', out);
	}
	fputs("]}\n", out);
	return ferror(out) ? -EIO : 0;
}

/* ---- read back ----------------------------------------------------------- */

/* sbx_probe_to_json writes about 2 KiB; anything far larger is not ours. */
#define PROBE_JSON_MAX (16u * 1024)

static bool printable_ascii(const char *s)
{
	for (; *s; s++) {
		if (*s < 0x20 || *s > 0x7e)
			return false;
	}
	return true;
}

/* The field behind each of probe_rows' rows, in its order (landlock's is
 * landlock_abi > 0, checked after the whole object is read). */
static bool *probe_row_flag(struct sbx_probe *p, size_t i)
{
	bool *flags[ROW_COUNT] = {
		NULL, &p->seccomp, &p->seccomp_kill_process, &p->userns, &p->mountns,
		&p->pidns, &p->netns, &p->ipcns, &p->utsns, &p->cgroupns, &p->cgroup2,
		&p->cgroup2_delegated, &p->cgroup2_limits, &p->mount_setattr, &p->mdwe,
	};

	return flags[i];
}

struct feature_ctx {
	struct sbx_probe *p;
	const char *name;	/* the row's expected name */
	size_t i;
	bool ok;
};

static int feature_field(struct sbx_jr *j, int k, void *ctx)
{
	struct feature_ctx *c = ctx;
	char name[32], detail[sizeof(((struct probe_row *)0)->detail)];
	int rc;

	if (k == 0) {
		rc = sbx_jr_string(j, name, sizeof(name));
		if (!rc && strcmp(name, c->name) != 0)
			rc = sbx_jr_fail(j, "features out of order or unknown feature");
		return rc;
	}
	if (k == 1)
		return sbx_jr_bool(j, &c->ok);
	if (c->i == 0)
		return sbx_jr_string(j, c->p->landlock_why, sizeof(c->p->landlock_why));
	if (c->i == 3)
		return sbx_jr_string(j, c->p->userns_why, sizeof(c->p->userns_why));
	return sbx_jr_string(j, detail, sizeof(detail));
}

/* "features": exactly ROW_COUNT objects named as probe_rows names them. The
 * details the writer derives are read (bounded) and dropped; only
 * landlock's (its why when unavailable) and userns' (userns_why) are kept. */
static int jr_features(struct sbx_jr *j, struct sbx_probe *p, bool *landlock_ok)
{
	static const char *const keys[] = { "name", "available", "detail" };
	struct probe_row names[ROW_COUNT];
	struct sbx_probe blank;

	memset(&blank, 0, sizeof(blank));
	probe_rows(&blank, names);	/* for the names only */
	if (sbx_jr_expect(j, '['))
		return -EINVAL;
	for (size_t i = 0; i < ROW_COUNT; i++) {
		struct feature_ctx c = { p, names[i].name, i, false };
		int rc;

		if (i && sbx_jr_expect(j, ','))
			return -EINVAL;
		rc = sbx_jr_object(j, keys, ARRAY_SIZE(keys), "feature", feature_field, &c);
		if (rc)
			return rc;
		if (i == 0)
			*landlock_ok = c.ok;
		else
			*probe_row_flag(p, i) = c.ok;
	}
	return sbx_jr_expect(j, ']');
}

struct probe_ctx {
	struct sbx_probe *p;
	bool landlock_ok;
};

static int probe_field(struct sbx_jr *j, int k, void *ctx)
{
	struct probe_ctx *c = ctx;
	uint64_t n = 0;
	int rc;

	switch (k) {
	case 0:
		return sbx_jr_string(j, c->p->kernel, sizeof(c->p->kernel));
	case 1:
		rc = sbx_jr_uint(j, 1000, &n);
		c->p->landlock_abi = (int)n;
		return rc;
	case 2:
		rc = sbx_jr_uint(j, INT_MAX, &n);
		c->p->landlock_errata = (int)n;
		return rc;
	default:
		return jr_features(j, c->p, &c->landlock_ok);
	}
}

int sbx_probe_from_json(const char *buf, size_t len, struct sbx_probe *out,
			struct sbx_error *err)
{
	static const char *const keys[] = {
		"kernel", "landlock_abi", "landlock_errata", "features",
	};
	struct sbx_jr j;
	struct sbx_probe p;
	struct probe_ctx c = { &p, false };
	int rc;

	if (!buf || !out)
		return sbx_error_set(err, EINVAL, "probe JSON: no input");
	if (len > PROBE_JSON_MAX)
		return sbx_error_set(err, EINVAL, "probe JSON: larger than %u bytes",
				     PROBE_JSON_MAX);
	j = (struct sbx_jr){ buf, buf, buf + len, "probe JSON", err, false };
	memset(&p, 0, sizeof(p));
	rc = sbx_jr_object(&j, keys, ARRAY_SIZE(keys), NULL, probe_field, &c);
	if (rc)
		return rc;
	sbx_jr_ws(&j);
	if (j.p != j.end)
		return sbx_jr_fail(&j, "trailing bytes after the object");
	/* The doctor prints these on root's terminal, and a process of the
	 * agent's uid may have written them: no escape sequences. The writer's
	 * own (uname, LANG=C strerror, fixed text) are printable ASCII. */
	if (!printable_ascii(p.kernel) || !printable_ascii(p.landlock_why) ||
	    !printable_ascii(p.userns_why))
		return sbx_error_set(err, EINVAL, "probe JSON: a string holds a byte "
				     "outside printable ASCII");
	if (c.landlock_ok != (p.landlock_abi > 0))
		return sbx_jr_fail(&j, "landlock available disagrees with landlock_abi");
	if (c.landlock_ok)	/* the row's detail was "ABI n, errata x", not a why */
		memset(p.landlock_why, 0, sizeof(p.landlock_why));
	*out = p;
	return 0;
}
