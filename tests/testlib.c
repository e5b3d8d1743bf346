/* SPDX-License-Identifier: BSD-3-Clause */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seccomp.h>

#include "testlib.h"

static uid_t chosen_uid;

uid_t sbx_test_uid(void)
{
	if (chosen_uid == 0) {
		for (uid_t u = 61000; u < 61900; u++) {
			if (!getpwuid(u) && !getgrgid((gid_t)u)) {
				chosen_uid = u;
				break;
			}
		}
		if (chosen_uid == 0)
			abort();
	}
	return chosen_uid;
}

gid_t sbx_test_gid(void)
{
	return (gid_t)sbx_test_uid();
}

void sbx_test_drop_to_agent(void)
{
	uid_t uid = sbx_test_uid();
	gid_t gid = sbx_test_gid();

	if (setgroups(0, NULL) != 0 || setresgid(gid, gid, gid) != 0 ||
	    setresuid(uid, uid, uid) != 0) {
		fprintf(stderr, "drop to agent uid %u: %s\n", uid, strerror(errno));
		_exit(90);
	}
	if (setuid(0) == 0 || geteuid() == 0) {
		fprintf(stderr, "drop to agent: root regained\n");
		_exit(91);
	}
}

int sbx_test_fork(bool drop, int (*fn)(void *), void *arg)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* A crash ends the child with its signal: cmocka's handlers
		 * (inherited) would take it back into the test runner, which
		 * would then go on running the next tests as this child. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		if (drop)
			sbx_test_drop_to_agent();
		_exit(fn(arg));
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

static int int80_child(void *arg)
{
	long ret = 20;	/* i386 getpid */

	(void)arg;
#if defined(__x86_64__)
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
#endif
	return ret == getpid() ? 0 : 2;
}

int sbx_test_int80_native(void)
{
	int st;

#if !defined(__x86_64__)
	return 0;
#endif
	st = sbx_test_fork(false, int80_child, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
		return 0;
	return -1;
}

/* In a child as the test uid: the raw calls sbx_userns_enter stands on.
 * The failing call and its errno go to the pipe in arg. */
static int userns_probe_child(void *arg)
{
	int fd = *(int *)arg, map;
	char line[64], msg[160];
	const char *what;
	uid_t uid = getuid();

	/* setresuid() from root cleared "dumpable": /proc/self/uid_map would
	 * be root's. An exec'd agent-shell is dumpable. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	what = "unshare(CLONE_NEWUSER)";
	if (unshare(CLONE_NEWUSER) == 0) {
		what = "write /proc/self/uid_map";
		snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		map = open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
		if (map >= 0 && write(map, line, strlen(line)) == (ssize_t)strlen(line))
			return 0;
	}
	snprintf(msg, sizeof(msg), "%s as uid %u: %s", what, (unsigned)uid, strerror(errno));
	if (write(fd, msg, strlen(msg)) < 0)
		return 2;
	return 1;
}

bool sbx_test_userns_works(char *why, size_t size)
{
	static int known = -1;	/* -1: not probed yet */
	static char reason[192];
	char buf[32] = "";
	int fds[2], status;
	ssize_t n;
	FILE *f;

	if (known < 0) {
		f = fopen("/proc/sys/user/max_user_namespaces", "re");
		if (f && fgets(buf, sizeof(buf), f) && strtol(buf, NULL, 10) == 0) {
			snprintf(reason, sizeof(reason), "/proc/sys/user/max_user_namespaces is 0");
			known = 0;
		}
		if (f)
			fclose(f);
	}
	if (known < 0) {
		if (pipe2(fds, O_CLOEXEC) != 0)
			abort();
		status = sbx_test_fork(geteuid() == 0, userns_probe_child, &fds[1]);
		close(fds[1]);
		n = read(fds[0], reason, sizeof(reason) - 1);
		reason[n > 0 ? n : 0] = '\0';
		close(fds[0]);
		known = sbx_test_status_code(status) == 0;
		if (!known && !reason[0])
			snprintf(reason, sizeof(reason), "probe child ended with status %d", status);
	}
	if (why)
		snprintf(why, size, "%s", reason);
	return known == 1;
}

static int forbid(size_t n_calls)
{
	static const int calls[] = { SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(clone),
				     SCMP_SYS(clone3) };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; !r && i < n_calls; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, calls[i], 0);
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(unshare), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(setns), 0);
	if (!r)
		r = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	if (r)
		fprintf(stderr, "sbx_test_forbid_processes: %s\n", strerror(-r));
	return r ? -1 : 0;
}

int sbx_test_forbid_processes(void)
{
	return forbid(4);
}

int sbx_test_forbid_processes_but_clone3(void)
{
	return forbid(3);
}

int sbx_test_status_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

char *sbx_test_mkdtemp(const char *tag)
{
	char *path = NULL;

	if (asprintf(&path, "/tmp/sbx-test-%s-XXXXXX", tag) < 0)
		abort();
	if (!mkdtemp(path))
		abort();
	if (chmod(path, 0755) != 0)
		abort();
	return path;
}

char *sbx_test_mkdtemp_trusted(const char *tag)
{
	char *path = NULL;

	if (asprintf(&path, "/run/sbx-test-%s-XXXXXX", tag) < 0)
		abort();
	if (!mkdtemp(path))
		abort();
	if (chmod(path, 0755) != 0)
		abort();
	return path;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	if (remove(p) != 0 && errno != ENOENT)
		fprintf(stderr, "rmtree: %s: %s\n", p, strerror(errno));
	return 0;
}

void sbx_test_rmtree(const char *path)
{
	/* Only trees a test made: a typo can never reach anything else. */
	static const char *const ours[] = { "/tmp/sbx-test-", "/run/sbx-test-", "/sbx-test-",
					    "/var/tmp/sbx-test-", "/dev/shm/sbx-test-" };

	for (size_t i = 0; path && i < ARRAY_SIZE(ours); i++) {
		if (strncmp(path, ours[i], strlen(ours[i])) == 0) {
			nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
			return;
		}
	}
}

int sbx_test_log_capture(void)
{
	static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fds[ARRAY_SIZE(nodes)], s;
	size_t i;

	/* Opened after unshare: a bind source must be a mount of this namespace. */
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		perror("log_capture: unshare");
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(nodes); i++) {
		char p[32];

		snprintf(p, sizeof(p), "/dev/%s", nodes[i]);
		fds[i] = open(p, O_PATH | O_CLOEXEC);
		if (fds[i] < 0 && i == 0)
			return -1;
	}
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755,size=64k") != 0) {
		perror("log_capture: private /dev");
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(nodes); i++) {
		char p[32], src[32];
		int fd;

		if (fds[i] < 0)
			continue;
		snprintf(p, sizeof(p), "/dev/%s", nodes[i]);
		snprintf(src, sizeof(src), "/proc/self/fd/%d", fds[i]);
		fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			return -1;
		close(fd);
		if (mount(src, p, NULL, MS_BIND, NULL) != 0) {
			perror("log_capture: bind");
			return -1;
		}
		close(fds[i]);
	}
	/* /dev/shm as on a host (the PAM stage mounts a private one on it). */
	if (mkdir("/dev/shm", 01777) != 0 || chmod("/dev/shm", 01777) != 0) {
		perror("log_capture: /dev/shm");
		return -1;
	}
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/dev/log");
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    chmod("/dev/log", 0666) != 0) {
		perror("log_capture: /dev/log");
		return -1;
	}
	return s;
}

bool sbx_test_log_has(int s, const char *a, const char *b, char *keep, size_t keep_size)
{
	char msg[2048];
	bool found = false;
	ssize_t n;

	while ((n = recv(s, msg, sizeof(msg) - 1, 0)) > 0) {
		msg[n] = '\0';
		fprintf(stderr, "  syslog: %s\n", msg);
		if (strstr(msg, a) && (!b || strstr(msg, b))) {
			found = true;
			if (keep)
				snprintf(keep, keep_size, "%s", msg);
		}
	}
	return found;
}

void sbx_test_log_drain(int s, char *buf, size_t size)
{
	char msg[4096];
	size_t used = strlen(buf);
	ssize_t n;

	while ((n = recv(s, msg, sizeof(msg) - 1, 0)) > 0) {
		msg[n] = '\0';
		if (used + (size_t)n + 2 <= size) {
			memcpy(buf + used, msg, (size_t)n);
			used += (size_t)n;
			buf[used++] = '\n';
			buf[used] = '\0';
		}
	}
}

int sbx_test_run_quiet(const char *const argv[])
{
	int status = 0;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int sbx_test_each_proc_of(uid_t uid, void (*fn)(pid_t pid, const char *status, void *ctx),
			  void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], buf[4096], *l, *st;
		ssize_t len;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* A zombie (or a dead one) runs nothing: only its parent's
		 * reaping is left (PID 1 on some hosts reaps late). */
		st = strstr(buf, "\nState:\t");
		if (st && (st[8] == 'Z' || st[8] == 'X'))
			continue;
		l = strstr(buf, "\nUid:\t");
		if (!l || (uid_t)strtoul(l + 6, NULL, 10) != uid)
			continue;
		n++;
		if (fn)
			fn((pid_t)strtol(e->d_name, NULL, 10), buf, ctx);
	}
	closedir(d);
	return n;
}

static void kill_one(pid_t pid, const char *status, void *ctx)
{
	(void)status;
	(void)ctx;
	kill(pid, SIGKILL);
}

int sbx_test_procs_of(uid_t uid, bool kill_them)
{
	return sbx_test_each_proc_of(uid, kill_them ? kill_one : NULL, NULL);
}

/* userdel and groupdel fail while another process holds /etc/passwd's
 * lock (a concurrent useradd): retry instead of leaving the entry behind. */
int sbx_test_remove_account(const char *user)
{
	const char *argv[] = { "/usr/sbin/userdel", user, NULL };
	struct passwd *pw = getpwnam(user);

	/* userdel refuses an account with a live process: a failed test can
	 * leave one (a child it never reaped). */
	if (pw && pw->pw_uid != 0) {
		sbx_test_procs_of(pw->pw_uid, true);
		usleep(50 * 1000);
	}

	for (int i = 0; i < 50 && getpwnam(user); i++) {
		if (sbx_test_run_quiet(argv) == 0)
			break;
		usleep(100 * 1000);
	}
	if (getpwnam(user)) {
		fprintf(stderr, "test cleanup: could not remove account %s\n", user);
		return -1;
	}
	return 0;
}

int sbx_test_remove_group(const char *group)
{
	const char *argv[] = { "/usr/sbin/groupdel", group, NULL };

	for (int i = 0; i < 50 && getgrnam(group); i++) {
		if (sbx_test_run_quiet(argv) == 0)
			break;
		usleep(100 * 1000);
	}
	if (getgrnam(group)) {
		fprintf(stderr, "test cleanup: could not remove group %s\n", group);
		return -1;
	}
	return 0;
}

static int (*volatile signal_cleanup)(void **state);
static volatile pid_t signal_cleanup_pid;

static void on_stop_signal(int sig)
{
	int (*fn)(void **) = signal_cleanup;

	signal_cleanup = NULL;
	if (fn && getpid() == signal_cleanup_pid)
		fn(NULL);
	signal(sig, SIG_DFL);
	raise(sig);
}

int sbx_test_group_setup(int (*inner)(void), int (*teardown)(void **state))
{
	if (geteuid() != 0)
		return 0;
	sbx_test_cleanup_on_signal(teardown);
	if (inner() != 0) {
		teardown(NULL);
		return -1;
	}
	return 0;
}

void sbx_test_cleanup_on_signal(int (*teardown)(void **state))
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigfillset(&sa.sa_mask);
	signal_cleanup_pid = getpid();
	signal_cleanup = teardown;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static void dump_one(pid_t pid, const char *status, void *ctx)
{
	const char *st = strstr(status, "\nState:\t"), *pp = strstr(status, "\nPPid:\t");
	const char *name = strncmp(status, "Name:\t", 6) == 0 ? status + 6 : "?";

	(void)ctx;
	fprintf(stderr, "  pid %d ppid %ld state %c name %.*s\n", (int)pid,
		pp ? strtol(pp + 7, NULL, 10) : -1L, st ? st[8] : '?', (int)strcspn(name, "\n"),
		name);
}

void sbx_test_procs_dump(uid_t uid)
{
	(void)sbx_test_each_proc_of(uid, dump_one, NULL);
}

const struct sbx_decision *sbx_test_decision(const struct sbx_profile *p, bool netns)
{
	static struct sbx_decision d;

	memset(&d, 0, sizeof(d));
	d.netns = netns;
	d.network_denied = p->network != SBX_ACCESS_ALLOW;
	d.landlock_tcp = d.network_denied && !netns;
	d.deny_read = SBX_DENY_READ_LANDLOCK;
	return &d;
}

int sbx_test_in_own_mntns(int (*fn)(void *), void *arg)
{
	pid_t pid;
	int status = 0;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
			_exit(90);
		_exit(fn(arg));
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return sbx_test_status_code(status);
}

int sbx_test_refuse_clone_flag(unsigned long flag)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? 0 : -1;

	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
	if (!r)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (!r)
		r = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return r ? -1 : 0;
}

/* ---- a strict JSON checker of the tests' own ------------------------------ */

struct jcheck {
	const unsigned char *base, *p, *end;
	char *why;
	size_t why_size;
};

static int jc_fail(struct jcheck *c, const char *msg)
{
	snprintf(c->why, c->why_size, "%s at byte %zu", msg, (size_t)(c->p - c->base));
	return -1;
}

/* The length of the strict UTF-8 character at p, its code point in *cp;
 * 0 when it is not one. */
static size_t jc_utf8(const unsigned char *p, const unsigned char *end, uint32_t *cp)
{
	size_t n = end > p ? (size_t)(end - p) : 0, need;
	uint32_t v, min;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		need = 2;
		v = p[0] & 0x1f;
		min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		need = 3;
		v = p[0] & 0x0f;
		min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		need = 4;
		v = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return need;
}

static bool jc_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

static void jc_ws(struct jcheck *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static long jc_hex4(struct jcheck *c)
{
	long v = 0;

	if (c->end - c->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		const char *digits = "0123456789abcdef", *d;
		unsigned char x = c->p[i];

		if (x >= 'A' && x <= 'F')
			x = (unsigned char)(x - 'A' + 'a');
		d = x ? strchr(digits, x) : NULL;
		if (!d)
			return -1;
		v = v * 16 + (d - digits);
	}
	c->p += 4;
	return v;
}

static int jc_string(struct jcheck *c)
{
	c->p++;	/* the quote */
	for (;;) {
		uint32_t cp;
		size_t n;

		if (c->p >= c->end)
			return jc_fail(c, "unterminated string");
		if (*c->p == '"') {
			c->p++;
			return 0;
		}
		if (*c->p == '\\') {
			long v;

			if (++c->p >= c->end)
				return jc_fail(c, "unterminated escape");
			switch (*c->p++) {
			case '"': case '\\': case '/':
				continue;
			case 'b': case 'f': case 'n': case 'r': case 't':
				return jc_fail(c, "a string decodes to a control character");
			case 'u':
				break;
			default:
				return jc_fail(c, "unknown escape");
			}
			v = jc_hex4(c);
			if (v < 0)
				return jc_fail(c, "bad \\u escape");
			if (v >= 0xdc00 && v <= 0xdfff)
				return jc_fail(c, "unpaired low surrogate");
			if (v >= 0xd800 && v <= 0xdbff) {
				long lo;

				if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
					return jc_fail(c, "unpaired high surrogate");
				c->p += 2;
				lo = jc_hex4(c);
				if (lo < 0xdc00 || lo > 0xdfff)
					return jc_fail(c, "unpaired high surrogate");
				continue;
			}
			if (jc_control((uint32_t)v))
				return jc_fail(c, "a string decodes to a control character");
			continue;
		}
		n = jc_utf8(c->p, c->end, &cp);
		if (n == 0)
			return jc_fail(c, "not UTF-8");
		if (jc_control(cp))
			return jc_fail(c, "raw control character in a string");
		c->p += n;
	}
}

static int jc_number(struct jcheck *c)
{
	const unsigned char *d;

	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0') {
		c->p++;
	} else {
		d = c->p;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
			c->p++;
		if (c->p == d)
			return jc_fail(c, "bad number");
	}
	if (c->p < c->end && *c->p == '.') {
		d = ++c->p;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
			c->p++;
		if (c->p == d)
			return jc_fail(c, "bad fraction");
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		d = c->p;
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
			c->p++;
		if (c->p == d)
			return jc_fail(c, "bad exponent");
	}
	return 0;
}

/* One value, depth bounding the recursion.
 * NOLINTNEXTLINE(misc-no-recursion) */
static int jc_value(struct jcheck *c, int depth)
{
	static const char *const words[] = { "true", "false", "null" };
	unsigned char open;

	jc_ws(c);
	if (c->p >= c->end)
		return jc_fail(c, "expected a value");
	open = *c->p;
	if (open == '"')
		return jc_string(c);
	if (open == '-' || (open >= '0' && open <= '9'))
		return jc_number(c);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i]);

		if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, words[i], n)) {
			c->p += n;
			return 0;
		}
	}
	if (open != '{' && open != '[')
		return jc_fail(c, "expected a value");
	if (depth >= 64)
		return jc_fail(c, "nested too deep");
	c->p++;
	jc_ws(c);
	if (c->p < c->end && *c->p == (open == '{' ? '}' : ']')) {
		c->p++;
		return 0;
	}
	for (;;) {
		if (open == '{') {
			jc_ws(c);
			if (c->p >= c->end || *c->p != '"')
				return jc_fail(c, "expected a key");
			if (jc_string(c))
				return -1;
			jc_ws(c);
			if (c->p >= c->end || *c->p != ':')
				return jc_fail(c, "expected ':'");
			c->p++;
		}
		if (jc_value(c, depth + 1))
			return -1;
		jc_ws(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			continue;
		}
		if (c->p < c->end && *c->p == (open == '{' ? '}' : ']')) {
			c->p++;
			return 0;
		}
		return jc_fail(c, "expected ',' or the end of the value");
	}
}

int sbx_test_json_strict(const char *buf, size_t len, char *why, size_t why_size)
{
	struct jcheck c = { (const unsigned char *)buf, (const unsigned char *)buf,
			    (const unsigned char *)buf + len, why, why_size };

	/* The whole text first: raw bytes between tokens count too. */
	while (c.p < c.end) {
		uint32_t cp;
		size_t n = jc_utf8(c.p, c.end, &cp);

		if (n == 0)
			return jc_fail(&c, "not UTF-8");
		if (jc_control(cp) && cp != ' ' && cp != '\t' && cp != '\n' && cp != '\r')
			return jc_fail(&c, "raw control character");
		c.p += n;
	}
	c.p = c.base;
	if (jc_value(&c, 0))
		return -1;
	jc_ws(&c);
	if (c.p != c.end)
		return jc_fail(&c, "trailing bytes");
	return 0;
}

int sbx_test_text_safe(const char *buf, size_t len, char *why, size_t why_size)
{
	struct jcheck c = { (const unsigned char *)buf, (const unsigned char *)buf,
			    (const unsigned char *)buf + len, why, why_size };

	while (c.p < c.end) {
		uint32_t cp;
		size_t n = jc_utf8(c.p, c.end, &cp);

		if (n == 0)
			return jc_fail(&c, "not UTF-8");
		if (jc_control(cp) && cp != '\n')
			return jc_fail(&c, "control character");
		c.p += n;
	}
	return 0;
}

int sbx_test_children(pid_t pid, pid_t *out, int max)
{
	char path[64], buf[512], *p, *end;
	int fd, n = 0;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	for (p = buf; n < max; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		out[n++] = (pid_t)v;
	}
	return n;
}
