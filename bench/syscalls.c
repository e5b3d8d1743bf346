/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench/syscalls: ns per call of a few syscalls, for make bench to run
 * natively, under a filter that allows everything, inside agent-shell and
 * inside bubblewrap. What a sandbox adds per syscall is the difference
 * between two rows of the same run.
 *
 * Usage: syscalls [-n N] [-r ROUNDS] [-f FILE] [--allow-all-filter]
 * Prints "name ns_per_op" lines, the median of ROUNDS rounds of N calls
 * (connect: N/100, fork+exec: N/500 per round). --allow-all-filter first loads a
 * one-instruction seccomp filter returning ALLOW: the cost of having any
 * filter at all (the kernel's action cache answers every syscall), the floor
 * a sandbox's filter is compared against.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>

#define MAX_ROUNDS 31

static const char *file = "/bin/true";
static int pipe_fd = -1;
static int listen_fd = -1;
static struct sockaddr_un listen_addr = { .sun_family = AF_UNIX };

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "syscalls: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* getppid: no argument, no path, not cached by glibc; the bare cost of
 * entering the kernel plus what a filter adds. */
static void op_getppid(long n)
{
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
}

static void op_stat(long n)
{
	struct stat st;

	for (long i = 0; i < n; i++)
		if (stat(file, &st) != 0)
			die("stat");
}

static void op_open_close(long n)
{
	for (long i = 0; i < n; i++) {
		int fd = open(file, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			die("open");
		close(fd);
	}
}

/* TCGETS on a pipe: ENOTTY from the pipe's ioctl handler at once, so the
 * time is mostly the syscall path, where an argument-checked filter entry
 * shows. Not /dev/null: agent-shell's Landlock ruleset handles device
 * ioctls (ABI 5), which answer EACCES there, another code path. */
static void op_ioctl(long n)
{
	struct termios t;

	for (long i = 0; i < n; i++)
		if (ioctl(pipe_fd, TCGETS, &t) == 0 || errno != ENOTTY)
			die("ioctl(pipe, TCGETS) did not fail with ENOTTY");
}

/* connect() to a pathname unix socket of its own and the accept() on
 * the other side: inside agent-shell every connect() is decided by the
 * session's unix supervisor (lib/unixsock.c), so this row is the cost of
 * that round trip. */
static void op_connect(long n)
{
	for (long i = 0; i < n; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), a;

		if (c < 0)
			die("socket(AF_UNIX)");
		if (connect(c, (struct sockaddr *)&listen_addr, sizeof(listen_addr)) != 0)
			die("connect(own socket)");
		a = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (a < 0)
			die("accept4");
		close(a);
		close(c);
	}
}

/* The listening socket for op_connect, in $TMPDIR or /tmp (a fresh tmpfs
 * in a sandbox, where a socket of its own may be connected to). */
static void listen_start(void)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(listen_addr.sun_path, sizeof(listen_addr.sun_path), "%s/.bench-syscalls-%d",
		     dir, (int)getpid()) >= (int)sizeof(listen_addr.sun_path)) {
		errno = ENAMETOOLONG;
		die(dir);
	}
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		die("socket(AF_UNIX)");
	(void)unlink(listen_addr.sun_path);
	if (bind(listen_fd, (struct sockaddr *)&listen_addr, sizeof(listen_addr)) != 0)
		die(listen_addr.sun_path);
	if (listen(listen_fd, 16) != 0)
		die("listen");
}

static void op_fork_exec(long n)
{
	static char *const argv[] = { "true", NULL };
	static char *const envp[] = { NULL };

	for (long i = 0; i < n; i++) {
		int st;
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0) {
			execve("/bin/true", argv, envp);
			_exit(127);
		}
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "syscalls: /bin/true: status %#x\n", st);
			exit(1);
		}
	}
}

static const struct {
	const char *name;
	void (*fn)(long);
	long divisor;		/* iterations per round: N / divisor */
} ops[] = {
	{ "getppid", op_getppid, 1 },
	{ "stat", op_stat, 1 },
	{ "open+close", op_open_close, 1 },
	{ "ioctl", op_ioctl, 1 },
	{ "connect", op_connect, 100 },
	{ "fork+exec", op_fork_exec, 500 },
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void allow_all_filter(void)
{
	struct sock_filter allow[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 1, .filter = allow };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die("prctl(PR_SET_NO_NEW_PRIVS)");
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
		die("seccomp(SET_MODE_FILTER, allow all)");
}

static long parse_long(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "syscalls: bad %s '%s' (%ld..%ld)\n", what, s, min, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long n = 100000, rounds = 7;
	double t[MAX_ROUNDS];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			n = parse_long(argv[++i], 200, 100000000, "-n");
		else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
			rounds = parse_long(argv[++i], 1, MAX_ROUNDS, "-r");
		else if (strcmp(argv[i], "-f") == 0 && i + 1 < argc)
			file = argv[++i];
		else if (strcmp(argv[i], "--allow-all-filter") == 0)
			allow_all_filter();
		else {
			fprintf(stderr, "usage: syscalls [-n N] [-r ROUNDS] [-f FILE] [--allow-all-filter]\n");
			return 2;
		}
	}
	{
		int p[2];

		if (pipe2(p, O_CLOEXEC) != 0)
			die("pipe2");
		pipe_fd = p[0];
	}
	listen_start();
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		long iters = n / ops[k].divisor;

		ops[k].fn(iters / 10 + 1);	/* warm caches and the dentry */
		for (long r = 0; r < rounds; r++) {
			double t0 = now_ns();

			ops[k].fn(iters);
			t[r] = (now_ns() - t0) / (double)iters;
		}
		qsort(t, (size_t)rounds, sizeof(t[0]), cmp_double);
		printf("%s %.1f\n", ops[k].name, t[rounds / 2]);
	}
	(void)unlink(listen_addr.sun_path);
	return 0;
}
