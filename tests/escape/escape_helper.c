/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * escape_helper: the attacker inside a confined session, run by
 * tests/escape/test_escape.c through the real agent-shell as a throwaway
 * agent account. One subcommand per escape class:
 *
 *   escape_helper CLASS [key=value]...
 *
 * Every variant of the class is tried and reported on stdout as one line,
 * "name OUTCOME": OK (it worked), an errno name (EPERM), SIG<name> for a
 * child killed by a signal (attempts that may be killed run in a forked
 * child), exit=N for a program it ran, or a value the test compares. The
 * first line is "session <id>" (AGENT_SANDBOX_SESSION), so the test can
 * read that session's report. Raw syscalls where libc would translate or
 * refuse on its own. Whatever an attempt creates, it removes again, also
 * when the sandbox let it through.
 *
 * Keys (all optional; a class uses what it needs):
 *   ws=DIR        the workspace (the session's cwd)
 *   host=DIR      a host directory the agent may write by DAC but the
 *                 profile does not grant; holds victim.txt ("VICTIM"),
 *                 secret.txt (a deny_read entry, "TOPSECRET") and, for
 *                 class secret_alias, alias.txt (a hard link to it)
 *   fix=DIR       the root-owned fixture directory: escape_helper (this
 *                 program), host.sock, host.seqpacket, host.dgram,
 *                 id-suid, cat-fcap
 *   abstract=NAME an abstract unix listener of the host network namespace
 *   tcp=PORT udp=PORT  host listeners on 127.0.0.1
 *   fixture=PID   a process of the agent's uid outside any sandbox
 *   mark=NAME     a file the test put in the host's /tmp, /dev/shm and
 *                 the agent's host home: seen, the directory is the host's
 *   shm=DIR       the agent's own directory in the host's /dev/shm
 *   targets=a,b   processes to attack: init (pid 1 of the sandbox's pid
 *                 namespace), parent (getppid()), fixture
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/netlink.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../helpers/inside.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U	/* Linux 6.3; Debian 12's headers predate it */
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef MNT_DETACH
#define MNT_DETACH 2	/* <sys/mount.h> clashes with <linux/mount.h> in glibc 2.36 */
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef NETLINK_AUDIT
#define NETLINK_AUDIT 9
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
/* open_tree_attr(2), Linux 6.15: newer than the headers and libseccomp. */
#define NR_OPEN_TREE_ATTR 467
/* The x32 ABI shares the x86_64 audit arch: only this nr bit tells. */
#define X32_SYSCALL_BIT 0x40000000L
/* High bits the kernel drops from an int argument but a 64-bit seccomp
 * comparison sees. */
#define HIGH_BIT (1ULL << 32)

#define LOADER "/lib64/ld-linux-x86-64.so.2"

#ifdef SBX_SANITIZER
/* LeakSanitizer stops the world with ptrace at exit, which the sandbox's
 * seccomp filter refuses: it would turn every clean exit into 1. */
const char *__asan_default_options(void) __attribute__((visibility("default")));
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

/* ---- arguments ------------------------------------------------------------- */

static struct {
	const char *ws, *host, *fix, *abstract, *targets, *mark, *shm;
	unsigned tcp, udp;
	pid_t fixture;
} A;

static char **self_env;
static char **prog_env;		/* what run_prog passes: self_env unless set */
static char start_fds[256];

/* ---- output ---------------------------------------------------------------- */

/*
 * Run a program: its execve errno when that failed (reported through a
 * close-on-exec pipe), else exit=N or SIG<name>, written to outcome. Its
 * stdout goes to out (NUL-terminated, may be NULL), its stderr to
 * /dev/null unless err_to_out. Returns the wait status, or -1 when it did
 * not run.
 */
static int run_capture(char *const argv[], char *out, size_t out_size, bool err_to_out,
		       char *outcome, size_t outcome_size)
{
	int ep[2], op[2], status = 0, e = 0;
	char sink[512];
	size_t used = 0;
	ssize_t n;
	pid_t pid;

	if (out && out_size)
		out[0] = '\0';
	if (pipe2(ep, O_CLOEXEC) != 0)
		goto pipe_failed;
	if (pipe2(op, O_CLOEXEC) != 0) {
		close(ep[0]);
		close(ep[1]);
		goto pipe_failed;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(outcome, outcome_size, "fork:%s", err_name(errno));
		close(ep[0]);
		close(ep[1]);
		close(op[0]);
		close(op[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		dup2(op[1], 1);
		if (null >= 0) {
			dup2(null, 0);
			dup2(err_to_out ? op[1] : null, 2);
		}
		execve(argv[0], argv, prog_env ? prog_env : self_env);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
			_exit(125);
		_exit(126);
	}
	close(ep[1]);
	close(op[1]);
	/* All of it, so the program never blocks on a full pipe; what does
	 * not fit in out is dropped. */
	while ((n = read(op[0], sink, sizeof(sink))) > 0) {
		size_t k = (size_t)n;

		if (!out || used + 1 >= out_size)
			continue;
		if (k > out_size - 1 - used)
			k = out_size - 1 - used;
		memcpy(out + used, sink, k);
		used += k;
		out[used] = '\0';
	}
	close(op[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	n = read(ep[0], &e, sizeof(e));
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		snprintf(outcome, outcome_size, "%s", err_name(e));
		return -1;
	}
	if (WIFSIGNALED(status))
		snprintf(outcome, outcome_size, "SIG%s", sigabbrev_np(WTERMSIG(status)) ?: "?");
	else
		snprintf(outcome, outcome_size, "exit=%d", WEXITSTATUS(status));
	return status;
pipe_failed:
	snprintf(outcome, outcome_size, "pipe:%s", err_name(errno));
	return -1;
}

static void run_prog(const char *name, char *const argv[], char *out, size_t out_size)
{
	char outcome[64];

	run_capture(argv, out, out_size, false, outcome, sizeof(outcome));
	put(name, "%s", outcome);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	}
	close(in);
	if (fchmod(out, mode) != 0)
		n = -1;
	if (close(out) != 0 || n < 0) {
		unlink(to);
		return -1;
	}
	return 0;
}

/* Append a file's bytes to an open fd. */
static int copy_fd(const char *from, int out)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (in < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	return n < 0 ? -1 : 0;
}

static void path_in(char *buf, size_t size, const char *dir, const char *name)
{
	snprintf(buf, size, "%s/%s", dir ? dir : "/nonexistent", name);
}

/* ---- nonnative ------------------------------------------------------------- */

static int do_native(void *arg)
{
	(void)arg;
	return syscall(SYS_getpid) > 0 ? 0 : errno;
}

static int do_x32(void *arg)
{
	(void)arg;
	return syscall(X32_SYSCALL_BIT | SYS_getpid) >= 0 ? 0 : errno;
}

static int do_int80(void *arg)
{
	long ret = 20;	/* i386 getpid */

	(void)arg;
	/* Where int 0x80 has no entry it faults: the child must end with
	 * SIGSEGV, not in a handler (a sanitizer's) that exits. */
	signal(SIGSEGV, SIG_DFL);
#if defined(__x86_64__)
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
#endif
	return ret >= 0 ? 0 : (int)-ret;
}

static void cls_nonnative(void)
{
	put_child("native_getpid", do_native, NULL);
	put_child("int80_getpid", do_int80, NULL);
	put_child("x32_getpid", do_x32, NULL);
}

/* ---- namespaces ------------------------------------------------------------ */

/* A raw clone that behaves like fork: the child leaves at once. */
static long clone_raw(unsigned long long flags)
{
	long r = syscall(SYS_clone, flags, NULL, NULL, NULL, 0UL);

	if (r == 0)
		syscall(SYS_exit, 0);
	if (r > 0)
		waitpid((pid_t)r, NULL, __WALL);
	return r;
}

static long clone3_raw(unsigned long long flags)
{
	struct clone_args ca;
	long r;

	memset(&ca, 0, sizeof(ca));
	ca.flags = flags;
	ca.exit_signal = SIGCHLD;
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0)
		syscall(SYS_exit, 0);
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	return r;
}

static int do_unshare(void *arg)
{
	return unshare((int)(long)arg) == 0 ? 0 : errno;
}

static void cls_namespaces(void)
{
	pid_t p;
	int fd;

	/* Control: a plain fork. */
	fflush(NULL);
	p = fork();
	if (p == 0)
		_exit(0);
	put_ret("fork", p, false);
	if (p > 0)
		waitpid(p, NULL, 0);
	/* In children: a success must not change this process. */
	put_child("unshare_user", do_unshare, (void *)(long)CLONE_NEWUSER);
	put_child("unshare_mount", do_unshare, (void *)(long)CLONE_NEWNS);
	put_child("unshare_net", do_unshare, (void *)(long)CLONE_NEWNET);
	put_ret("clone_newuser", clone_raw(CLONE_NEWUSER | SIGCHLD), false);
	/* clone(2) takes the flags as unsigned long, the kernel keeps the low
	 * 32 bits: bit 32 must not carry CLONE_NEWUSER past the filter. */
	put_ret("clone_newuser_high", clone_raw(HIGH_BIT | CLONE_NEWUSER | SIGCHLD), false);
	put_ret("clone3_newuser", clone3_raw(CLONE_NEWUSER), false);
	/* Control for clone3's answer: also without any namespace flag, so
	 * the refusal is the filter's and not a flag check. */
	put_ret("clone3_plain", clone3_raw(0), false);
	/* The own user namespace: the kernel answers EINVAL, only the filter
	 * answers EPERM. */
	fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	put_ret("setns_user", fd < 0 ? fd : setns(fd, CLONE_NEWUSER), false);
	if (fd >= 0)
		close(fd);
	fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	put_ret("setns_mnt", fd < 0 ? fd : setns(fd, CLONE_NEWNS), false);
	if (fd >= 0)
		close(fd);
}

/* ---- mounts ---------------------------------------------------------------- */

static void cls_mounts(void)
{
	struct mount_attr attr;
	long r;

	memset(&attr, 0, sizeof(attr));
	put_ret("mount_tmpfs", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0UL, NULL), false);
	put_ret("mount_bind", syscall(SYS_mount, "/", "/tmp", NULL, (unsigned long)MS_BIND, NULL),
		false);
	put_ret("umount2", syscall(SYS_umount2, "/tmp", MNT_DETACH), false);
	put_ret("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"), false);
	put_ret("fsopen", syscall(SYS_fsopen, "tmpfs", 0UL), true);
	/* fd -1: the kernel would say EBADF; only the filter says EPERM. */
	put_ret("fsconfig", syscall(SYS_fsconfig, -1, FSCONFIG_CMD_CREATE, NULL, NULL, 0), false);
	put_ret("fsmount", syscall(SYS_fsmount, -1, 0UL, 0UL), true);
	put_ret("fspick", syscall(SYS_fspick, AT_FDCWD, "/tmp", 0UL), true);
	/* Without OPEN_TREE_CLONE the kernel hands out an O_PATH fd to
	 * anyone: a refusal here is the filter's. */
	put_ret("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/tmp", (unsigned long)OPEN_TREE_CLOEXEC),
		true);
	put_ret("open_tree_clone", syscall(SYS_open_tree, AT_FDCWD, "/tmp",
					   (unsigned long)(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)), true);
	put_ret("move_mount", syscall(SYS_move_mount, -1, "", AT_FDCWD, "/tmp",
				      (unsigned long)MOVE_MOUNT_F_EMPTY_PATH), false);
	/* A no-op mount_setattr succeeds in the kernel without privilege. */
	put_ret("mount_setattr", syscall(SYS_mount_setattr, AT_FDCWD, "/tmp", 0UL, &attr,
					 sizeof(attr)), false);
	r = syscall(NR_OPEN_TREE_ATTR, AT_FDCWD, "/tmp", (unsigned long)OPEN_TREE_CLOEXEC, NULL,
		    0UL);
	put_ret("open_tree_attr", r, true);
}

/* ---- kernel_surface -------------------------------------------------------- */

static int do_seccomp(void *arg)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { 1, &allow };
	long r = syscall(SYS_seccomp, (long)SECCOMP_SET_MODE_FILTER, (unsigned long)arg, &prog);

	return r < 0 ? errno : 0;
}

static void cls_kernel_surface(void)
{
	/* Big zeroed buffers: the filter answers before the kernel reads. */
	static unsigned char zero[512];
	struct {
		unsigned int handle_bytes;
		int handle_type;
		unsigned char f_handle[128];
	} fh = { .handle_bytes = 128 };
	int mnt_id = 0;
	int fd;

	put_ret("add_key", syscall(SYS_add_key, "user", "sbx-esc", "x", 1UL, -3L /* session */),
		false);
	put_ret("keyctl", syscall(SYS_keyctl, 0L /* GET_KEYRING_ID */, -3L, 0L), false);
	put_ret("request_key", syscall(SYS_request_key, "user", "sbx-esc", NULL, 0L), false);
	put_ret("bpf", syscall(SYS_bpf, 0L /* MAP_CREATE */, zero, 128UL), true);
	put_ret("perf_event_open", syscall(SYS_perf_event_open, zero, 0L, -1L, -1L, 0UL), true);
	put_ret("userfaultfd", syscall(SYS_userfaultfd, (long)O_CLOEXEC), true);
	/* The same object through its device node, past the syscall filter. */
	put_ret("dev_userfaultfd", open("/dev/userfaultfd", O_RDWR | O_CLOEXEC), true);
	put_ret("io_uring_setup", syscall(SYS_io_uring_setup, 1UL, zero), true);
	put_ret("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mnt_id,
					     0L), false);
	fd = (int)syscall(SYS_open_by_handle_at, AT_FDCWD, zero, (long)O_RDONLY);
	put_ret("open_by_handle_at", fd, true);
	/* Only the query and PER_LINUX: no READ_IMPLIES_EXEC, no fixed
	 * layout for an exploit. */
	put_ret("personality_query", syscall(SYS_personality, 0xffffffffUL), false);
	put_ret("personality_no_aslr", syscall(SYS_personality, 0x0040000UL), false);
	/* A nested plain filter is fine; a user-notification listener would
	 * let the sandbox answer syscalls for its own children. In children:
	 * a filter stays for life. */
	put_child("seccomp_nested_filter", do_seccomp, (void *)0UL);
	put_child("seccomp_listener", do_seccomp, (void *)(unsigned long)SECCOMP_FILTER_FLAG_NEW_LISTENER);
}

/* ---- processes ------------------------------------------------------------- */

static void attack_process(const char *tag, pid_t pid)
{
	char name[64], path[64], buf[64], val[64];
	struct iovec local = { buf, 1 }, remote = { (void *)0x10000, 1 };
	struct rlimit rl;
	DIR *d;
	long r;
	int fd, pidfd;

#define N(what) (snprintf(name, sizeof(name), "%s:%s", what, tag), name)
	put_ret(N("ptrace_attach"), ptrace(PTRACE_ATTACH, pid, NULL, NULL), false);
	put_ret(N("ptrace_seize"), ptrace(PTRACE_SEIZE, pid, NULL, NULL), false);
	put_ret(N("process_vm_readv"), process_vm_readv(pid, &local, 1, &remote, 1, 0), false);
	/* pidfd -1 when it cannot be had: the kernel then says EBADF, only
	 * the filter says EPERM. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0L);
	put_ret(N("pidfd_getfd"), syscall(SYS_pidfd_getfd, pidfd, 0L, 0L), true);
	if (pidfd >= 0)
		close(pidfd);

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	put_ret(N("mem_rw"), open(path, O_RDWR | O_CLOEXEC), true);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		r = read(fd, buf, sizeof(buf));
		close(fd);
		put_ret(N("environ"), r, false);
	} else {
		put_ret(N("environ"), fd, false);
	}
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (d) {
		errno = 0;
		while (readdir(d))
			;
		put(N("fd_dir"), "%s", errno ? err_name(errno) : "OK");
		closedir(d);
	} else {
		put_ret(N("fd_dir"), -1, false);
	}
	/* What an fd points at takes ptrace access (proc_fd_link). */
	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)pid);
	put_ret(N("fd_link"), readlink(path, val, sizeof(val)), false);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	put_ret(N("root_readlink"), readlink(path, val, sizeof(val)), false);
	put_ret(N("root_open"), open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), true);
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	put_ret(N("cwd_readlink"), readlink(path, val, sizeof(val)), false);
	put_ret(N("cwd_open"), open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), true);
	/* Reading another process's limits takes the same permission as
	 * changing them (kernel/sys.c check_prlimit_permission). */
	put_ret(N("prlimit"), prlimit(pid, RLIMIT_NOFILE, NULL, &rl), false);
	/* Changing them: set the target's limit to our own, so that a
	 * regression shows without crippling the target (a limit of 0 kept
	 * agent-shell's outer process from ending the session's leftovers). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		put_ret(N("prlimit_set"), prlimit(pid, RLIMIT_NOFILE, &rl, NULL), false);
	else
		put_ret(N("prlimit_set"), -1, false);
	put_ret(N("kill0"), kill(pid, 0), false);
	/* Scheduling and I/O priority, set to what they are (a regression
	 * then changes nothing): SCHED_IDLE on agent-shell's outer process
	 * delayed a session_time kill by minutes. */
	{
		cpu_set_t cpus;
		int prio;

		if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
			put_ret(N("sched_setaffinity"), sched_setaffinity(pid, sizeof(cpus), &cpus),
				false);
		else
			put_ret(N("sched_setaffinity"), -1, false);
		put_ret(N("sched_setscheduler"),
			sched_setscheduler(pid, SCHED_OTHER, &(struct sched_param){ 0 }), false);
		prio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
		put_ret(N("ioprio_set"), prio < 0 ? -1 :
			syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, (int)pid, prio), false);
	}
#undef N
}

static void cls_processes(void)
{
	char list[256], *save = NULL;

	snprintf(list, sizeof(list), "%s", A.targets ? A.targets : "");
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "init") == 0)
			attack_process("init", 1);
		else if (strcmp(t, "parent") == 0)
			attack_process("parent", getppid());
		else if (strcmp(t, "fixture") == 0 && A.fixture > 0)
			attack_process("fixture", A.fixture);
	}
	if (A.targets && strstr(A.targets, "init")) {
		char path[256];

		/* init's cwd is where agent-shell started (sshd: the real home),
		 * a directory the mount view covers with the ephemeral home:
		 * through /proc/1/cwd the covered one shows. */
		snprintf(path, sizeof(path), "/proc/1/cwd/%s", A.mark ? A.mark : "-");
		put("init_cwd_home_mark", "%s", access(path, F_OK) == 0 ? "VISIBLE" : err_name(errno));
		/* The only real signal sent: to the sandbox's own init, which
		 * the kernel protects from its namespace (SIGNAL_UNKILLABLE). */
		put_ret("kill1_sigkill", kill(1, SIGKILL), false);
		sleep_ms(200);
		put("alive_after_kill1", "OK");
	}
	/* Control: a process of the sandbox's own. */
	{
		pid_t c;

		fflush(NULL);
		c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		put_ret("kill0_own_child", c < 0 ? -1 : kill(c, 0), false);
		if (c > 0) {
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
		}
	}
	/* Limits and priority: the caller's own, yes; anyone else's, no. The
	 * values set are the current ones, so a regression changes nothing. */
	{
		struct rlimit rl;
		int nice_now;

		put_ret("prlimit_self", prlimit(0, RLIMIT_NOFILE, NULL, &rl), false);
		bool known;

		errno = 0;
		nice_now = getpriority(PRIO_PROCESS, 0);
		known = errno == 0;
		put_ret("setpriority_self", known ? setpriority(PRIO_PROCESS, 0, nice_now) : -1,
			false);
		put_ret("setpriority_user", known ? setpriority(PRIO_USER, 0, nice_now) : -1, false);
		put_ret("setpriority_pid:parent",
			known ? setpriority(PRIO_PROCESS, (id_t)getppid(), nice_now) : -1, false);
		/* The caller's own scheduling and I/O priority: always. */
		put_ret("sched_setscheduler_self",
			sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ 0 }), false);
		{
			int prio = (int)syscall(SYS_ioprio_get, 1, 0);

			put_ret("ioprio_set_self", prio < 0 ? -1 : syscall(SYS_ioprio_set, 1, 0, prio),
				false);
			/* IOPRIO_WHO_USER (3): every process of the uid. */
			put_ret("ioprio_set_user", prio < 0 ? -1 :
				syscall(SYS_ioprio_set, 3, (int)getuid(), prio), false);
		}
	}
}

/* ---- tty ------------------------------------------------------------------- */

static int ctty_tiocsti(void *arg)
{
	const char *slave = arg;
	char c = '\n';
	int t;

	/* A session of our own whose controlling terminal is the pty: the
	 * kernel itself would then let TIOCSTI through. */
	if (setsid() < 0)
		return errno;
	t = open(slave, O_RDWR | O_CLOEXEC);
	if (t < 0)
		return errno;
	if (ioctl(t, TIOCSTI, &c) != 0)
		return errno;
	return 0;
}

static void tty_ioctls(const char *prefix, int fd)
{
	char name[64], c = '\n';
	int ldisc = N_TTY;

#define N(what) (snprintf(name, sizeof(name), "%s%s", prefix, what), name)
	put_ret(N("tiocsti"), ioctl(fd, TIOCSTI, &c), false);
	put_ret(N("tiocsti_high"), syscall(SYS_ioctl, fd, HIGH_BIT | TIOCSTI, &c), false);
	put_ret(N("tioclinux"), ioctl(fd, TIOCLINUX, &c), false);
	put_ret(N("tiocsetd"), ioctl(fd, TIOCSETD, &ldisc), false);
	put_ret(N("tiocsetd_high"), syscall(SYS_ioctl, fd, HIGH_BIT | TIOCSETD, &ldisc), false);
#undef N
}

static void cls_tty(void)
{
	struct winsize ws;
	struct termios tio;
	char slave[64] = "";
	int m, t = -1;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 &&
	    ptsname_r(m, slave, sizeof(slave)) == 0)
		t = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
	put_ret("openpt", t, false);
	if (t >= 0) {
		put_ret("tcgets", ioctl(t, TCGETS, &tio), false);
		put_ret("tiocgwinsz", ioctl(t, TIOCGWINSZ, &ws), false);
		tty_ioctls("", t);
		put_child("ctty_tiocsti", ctty_tiocsti, slave);
		close(t);
	}
	if (m >= 0)
		close(m);
	/* /dev/null tells the layers apart: the kernel answers ENOTTY, only
	 * the filter answers EPERM. */
	t = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (t >= 0) {
		tty_ioctls("null_", t);
		close(t);
	}
}

/* ---- privileged_binaries --------------------------------------------------- */

static void cls_privileged(void)
{
	char path[512], out[8192];
	const char *p;

	/* The setuid-root copy prints its effective uid. */
	path_in(path, sizeof(path), A.fix, "id-suid");
	{
		char *const argv[] = { path, (char *)"-u", NULL };

		run_prog("suid_id_run", argv, out, sizeof(out));
		if (!out[0])
			put("suid_id", "no-output");
		else if (strtol(out, NULL, 10) == (long)getuid())
			put("suid_id", "euid=agent");
		else
			put("suid_id", "euid=%ld", strtol(out, NULL, 10));
	}
	/* The file-capability copy of cat shows its own capability sets. */
	path_in(path, sizeof(path), A.fix, "cat-fcap");
	{
		char *const argv[] = { path, (char *)"/proc/self/status", NULL };
		static const char *const keys[] = { "CapEff", "CapPrm" };

		run_prog("fcap_cat_run", argv, out, sizeof(out));
		for (size_t i = 0; i < 2; i++) {
			char key[16], name[32];

			snprintf(key, sizeof(key), "\n%s:", keys[i]);
			snprintf(name, sizeof(name), "fcap_%s", keys[i]);
			p = strstr(out, key);
			if (!p) {
				put(name, "no-output");
				continue;
			}
			p += strlen(key);
			p += strspn(p, " \t");
			put(name, "%s=%.*s", keys[i], (int)strcspn(p, "\n"), p);
		}
	}
}

/* ---- fs_boundary ----------------------------------------------------------- */

/* EMPTY (masked), LEAKED (the secret's bytes), VICTIM (the control's
 * bytes), READ (anything else) or the errno of open/read. */
static void put_read(const char *name, const char *path)
{
	char buf[64];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	buf[n] = '\0';
	if (n == 0)
		put(name, "EMPTY");
	else if (strstr(buf, "TOPSECRET"))
		put(name, "LEAKED");
	else if (strstr(buf, "VICTIM"))
		put(name, "VICTIM");
	else
		put(name, "READ");
}

/* Put "VICTIM" back when an attempt that got through truncated it. */
static void restore_victim(const char *victim)
{
	int fd = open(victim, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "VICTIM\n", 7) != 7)
			perror("restore victim");
		close(fd);
	}
}

/*
 * Is dir the host's own (the test's marker file is visible there)? Then a
 * file written there outlives the session and is seen by everyone on the
 * host. "PRIVATE" when the sandbox has its own.
 */
static void host_scratch_write(const char *name, const char *dir)
{
	char mark[512], path[512];
	int fd;

	snprintf(mark, sizeof(mark), "%s/%s", dir, A.mark ? A.mark : "-");
	if (access(mark, F_OK) != 0) {
		put(name, "PRIVATE");
		return;
	}
	snprintf(path, sizeof(path), "%s/esc-scratch-%d", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	put_ret(name, fd, true);
	if (fd >= 0)
		unlink(path);
}

static void cls_fs_boundary(void)
{
	char victim[512], secret[512], p1[512], p2[512];
	struct stat st;
	int fd, r;

	path_in(victim, sizeof(victim), A.host, "victim.txt");
	path_in(secret, sizeof(secret), A.host, "secret.txt");

	/* Controls: the workspace is writable, the victim readable. */
	path_in(p1, sizeof(p1), A.ws, "esc-write.txt");
	fd = open(p1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	put_ret("write_ws", fd, true);
	unlink(p1);
	put_read("read_victim", victim);

	path_in(p1, sizeof(p1), A.host, "esc-created.txt");
	fd = open(p1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	put_ret("create_host", fd, true);
	if (fd >= 0)
		unlink(p1);
	put_ret("victim_wronly", open(victim, O_WRONLY | O_CLOEXEC), true);
	fd = open(victim, O_WRONLY | O_TRUNC | O_CLOEXEC);
	put_ret("victim_trunc", fd, true);
	if (fd >= 0)
		restore_victim(victim);
	put_ret("victim_truncate_path", truncate(victim, 7), false);
	/* Reopening a read-only fd for writing through its magic link. */
	fd = open(victim, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		snprintf(p1, sizeof(p1), "/proc/self/fd/%d", fd);
		put_ret("proc_fd_reopen", open(p1, O_WRONLY | O_CLOEXEC), true);
		close(fd);
	} else {
		put_ret("proc_fd_reopen", fd, false);
	}
	path_in(p1, sizeof(p1), A.ws, "esc-link-victim");
	if (symlink(victim, p1) == 0) {
		put_ret("symlink_victim", open(p1, O_WRONLY | O_CLOEXEC), true);
		unlink(p1);
	} else {
		put_ret("symlink_victim", -1, false);
	}
	path_in(p1, sizeof(p1), A.ws, "esc-hardlink-victim");
	r = link(victim, p1);
	put_ret("link_victim", r, false);
	if (r == 0)
		unlink(p1);
	/* The same from an O_PATH fd (linkat AT_EMPTY_PATH, no capability
	 * needed since Linux 6.10 for the opener's own fd). */
	fd = open(victim, O_PATH | O_CLOEXEC);
	path_in(p1, sizeof(p1), A.ws, "esc-hardlink-victim2");
	r = fd < 0 ? -1 : linkat(fd, "", AT_FDCWD, p1, AT_EMPTY_PATH);
	put_ret("linkat_empty_path", r, false);
	if (r == 0)
		unlink(p1);
	if (fd >= 0)
		close(fd);
	path_in(p1, sizeof(p1), A.ws, "esc-moveme.txt");
	path_in(p2, sizeof(p2), A.host, "esc-moved.txt");
	fd = open(p1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0) {
		close(fd);
		r = rename(p1, p2);
		put_ret("rename_out", r, false);
		unlink(r == 0 ? p2 : p1);
	} else {
		put_ret("rename_out", -1, false);
	}
	/* Metadata of a host file the profile does not grant: the same values
	 * again, so nothing changes when it gets through. */
	if (stat(victim, &st) == 0) {
		struct timespec ts[2] = { st.st_atim, st.st_mtim };

		put_ret("chmod_victim", chmod(victim, st.st_mode & 07777), false);
		put_ret("chown_victim", chown(victim, st.st_uid, st.st_gid), false);
		put_ret("utimes_victim", utimensat(AT_FDCWD, victim, ts, 0), false);
	}
	r = setxattr(victim, "user.sbx-esc", "x", 1, 0);
	put_ret("setxattr_victim", r, false);
	if (r == 0)
		removexattr(victim, "user.sbx-esc");
	fd = open(victim, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int flags = 0;

		if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0)
			put_ret("setflags_victim", ioctl(fd, FS_IOC_SETFLAGS, &flags), false);
		else
			put_ret("setflags_victim", -1, false);
		close(fd);
	}
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		path_in(sa.sun_path, sizeof(sa.sun_path), A.host, "esc.sock");
		r = s < 0 ? -1 : bind(s, (struct sockaddr *)&sa, sizeof(sa));
		put_ret("bind_sock_host", r, false);
		if (r == 0)
			unlink(sa.sun_path);
		if (s >= 0)
			close(s);
	}
	path_in(p1, sizeof(p1), A.host, "esc.fifo");
	r = mkfifo(p1, 0600);
	put_ret("mkfifo_host", r, false);
	if (r == 0)
		unlink(p1);

	put_read("read_secret", secret);
	path_in(p1, sizeof(p1), A.ws, "esc-link-secret");
	if (symlink(secret, p1) == 0) {
		put_read("read_secret_symlink", p1);
		unlink(p1);
	} else {
		put_ret("read_secret_symlink", -1, false);
	}
	path_in(p1, sizeof(p1), A.ws, "esc-hardlink-secret");
	r = link(secret, p1);
	put_ret("link_secret", r, false);
	if (r == 0)
		unlink(p1);

	host_scratch_write("host_tmp_write", "/tmp");
	host_scratch_write("host_shm_write", "/dev/shm");
	host_scratch_write("host_home_write", getenv("HOME") ? getenv("HOME") : "/nonexistent");

	/* The kernel's own knobs and raw devices. */
	put_ret("proc_sys_hostname", open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC), true);
	put_ret("sys_thp", open("/sys/kernel/mm/transparent_hugepage/enabled",
				O_WRONLY | O_CLOEXEC), true);
	put_ret("dev_sda", open("/dev/sda", O_RDONLY | O_CLOEXEC), true);
	put_ret("dev_vda", open("/dev/vda", O_RDONLY | O_CLOEXEC), true);
	put_ret("dev_mem", open("/dev/mem", O_RDONLY | O_CLOEXEC), true);
	put_ret("dev_kmsg", open("/dev/kmsg", O_WRONLY | O_CLOEXEC), true);
	path_in(p1, sizeof(p1), A.ws, "esc-null");
	r = mknod(p1, S_IFCHR | 0666, makedev(1, 3));
	put_ret("mknod_char", r, false);
	if (r == 0)
		unlink(p1);
}

static void cls_secret_alias(void)
{
	char p[512];

	path_in(p, sizeof(p), A.host, "secret.txt");
	put_read("read_secret", p);
	path_in(p, sizeof(p), A.host, "alias.txt");
	put_read("read_alias", p);
}

/* ---- gate ------------------------------------------------------------------ */

static void exec_copy(const char *tag, const char *dir)
{
	char path[512], name[64];
	char *const argv[] = { path, (char *)"-u", NULL };
	char *const ld_argv[] = { (char *)LOADER, path, (char *)"-u", NULL };

	if (!dir) {
		snprintf(name, sizeof(name), "copy_%s", tag);
		put(name, "no-dir");
		return;
	}
	snprintf(path, sizeof(path), "%s/esc-id-%d", dir, (int)getpid());
	snprintf(name, sizeof(name), "copy_%s", tag);
	if (copy_file("/usr/bin/id", path, 0755) != 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	put(name, "OK");
	snprintf(name, sizeof(name), "exec_copy_%s", tag);
	run_prog(name, argv, NULL, 0);
	snprintf(name, sizeof(name), "ldso_copy_%s", tag);
	run_prog(name, ld_argv, NULL, 0);
	unlink(path);
}

static void exec_fd(const char *name, int fd)
{
	char path[64];
	char *const argv[] = { path, (char *)"-u", NULL };

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	run_prog(name, argv, NULL, 0);
}

static int do_execveat(void *arg)
{
	char *const argv[] = { (char *)"id", NULL };
	int fd = open(arg, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno;
	syscall(SYS_execveat, fd, "", argv, self_env, (long)AT_EMPTY_PATH);
	return errno;
}

static void cls_gate(void)
{
	char self[512], home_dir[512];
	int fd;

	/* Controls: the allow-listed shell and this helper run. */
	{
		char *const argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"exit 7", NULL };

		run_prog("sh_exit7", argv, NULL, 0);
	}
	path_in(self, sizeof(self), A.fix, "escape_helper");
	{
		char *const argv[] = { self, (char *)"noop", NULL };

		run_prog("self_exec", argv, NULL, 0);
	}
	{
		char *const argv[] = { (char *)"/usr/bin/id", (char *)"-u", NULL };

		run_prog("exec_id", argv, NULL, 0);
	}
	fd = open("/usr/bin/id", O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		exec_fd("exec_procfd_id", fd);
		close(fd);
	} else {
		put_ret("exec_procfd_id", fd, false);
	}
	{
		char *const argv[] = { (char *)LOADER, (char *)"/usr/bin/id", (char *)"-u", NULL };

		run_prog("ldso_id", argv, NULL, 0);
	}
	{
		char *const argv[] = { (char *)LOADER, (char *)"/usr/bin/perl", (char *)"-e",
				       (char *)"1", NULL };

		run_prog("ldso_perl", argv, NULL, 0);
	}
	put_ret("memfd_plain", syscall(SYS_memfd_create, "sbx-esc", (unsigned long)MFD_CLOEXEC),
		true);
	put_ret("memfd_mfd_exec", syscall(SYS_memfd_create, "sbx-esc",
					  (unsigned long)(MFD_CLOEXEC | MFD_EXEC)), true);
	fd = (int)syscall(SYS_memfd_create, "sbx-esc",
			  (unsigned long)(MFD_CLOEXEC | MFD_NOEXEC_SEAL));
	if (fd >= 0) {
		copy_fd("/usr/bin/id", fd);
		/* fexecve() without execveat: what glibc falls back to. */
		exec_fd("memfd_sealed_exec", fd);
		close(fd);
	} else {
		put_ret("memfd_sealed_exec", fd, false);
	}
	put_child("execveat_empty_path", do_execveat, (void *)"/usr/bin/id");
	/*
	 * The sealed memfd again, handed to the dynamic loader as a program:
	 * ld.so maps it with PROT_EXEC, and a memfd lives on the kernel's
	 * internal tmpfs, which no noexec mount option reaches. Not
	 * close-on-exec, so the loader's /proc/self/fd/N is this memfd.
	 */
	fd = (int)syscall(SYS_memfd_create, "sbx-esc", (unsigned long)MFD_NOEXEC_SEAL);
	if (fd >= 0 && copy_fd("/usr/bin/id", fd) == 0) {
		char path[64];
		char *const argv[] = { (char *)LOADER, path, (char *)"-u", NULL };

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		run_prog("ldso_memfd", argv, NULL, 0);
	} else {
		put_ret("ldso_memfd", -1, false);
	}
	if (fd >= 0)
		close(fd);
	/* SysV shared memory attached executable: code memory outside every
	 * mount. A segment of our own, removed at once. */
	{
		int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
		void *p;

		if (id >= 0) {
			p = shmat(id, NULL, SHM_RDONLY);
			put_ret("shmat_plain", p == (void *)-1 ? -1 : 0, false);
			if (p != (void *)-1)
				shmdt(p);
			p = shmat(id, NULL, SHM_RDONLY | SHM_EXEC);
			put_ret("shmat_exec", p == (void *)-1 ? -1 : 0, false);
			if (p != (void *)-1)
				shmdt(p);
			shmctl(id, IPC_RMID, NULL);
		} else {
			put_ret("shmat_plain", -1, false);
			put_ret("shmat_exec", -1, false);
		}
	}
	exec_copy("tmp", "/tmp");
	exec_copy("shm", "/dev/shm");
	exec_copy("ws", A.ws);
	snprintf(home_dir, sizeof(home_dir), "%s", getenv("HOME") ? getenv("HOME") : "/nonexistent");
	exec_copy("home", home_dir);
}

/* ---- wx: W^X under the gate (classes wx and wx_jit) -------------------------- */

/*
 * Every way an allowed program could turn memory into code: each attempt
 * runs in a child and, where it gets executable memory it could write,
 * runs native code there. Its outcome: RAN (the code ran), MAPPED (an
 * executable mapping it could not write), OK (done, nothing to run), or
 * the errno of the step that was refused.
 */
#define WX_RAN 0
#define WX_MAPPED 250
#define WX_DONE 251

#if defined(__x86_64__)
static const unsigned char native_code[] = { 0xb8, 42, 0, 0, 0, 0xc3 };	/* mov eax,42; ret */
#elif defined(__aarch64__)
static const unsigned char native_code[] = {
	0x40, 0x05, 0x80, 0x52,		/* mov w0, #42 */
	0xc0, 0x03, 0x5f, 0xd6,		/* ret */
};
#endif

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static int call_code(void *p)
{
	/* Code that cannot run must end the child with SIGSEGV, not in a
	 * handler (a sanitizer's) that exits. */
	signal(SIGSEGV, SIG_DFL);
	__builtin___clear_cache((char *)p, (char *)p + sizeof(native_code));
	return ((int (*)(void))p)() == 42 ? WX_RAN : EDOM;
}

static int write_and_call(void *w, void *x)
{
	memcpy(w, native_code, sizeof(native_code));
	return call_code(x);
}

static int wx_anon_rwx(void *arg)
{
	void *p = mmap(NULL, page_size(), PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	return p == MAP_FAILED ? errno : write_and_call(p, p);
}

static int wx_anon_rx(void *arg)
{
	void *p = mmap(NULL, page_size(), PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	(void)arg;
	return p == MAP_FAILED ? errno : WX_MAPPED;
}

/* An executable shared mapping, then a second mapping of the same pages
 * made writable: mremap(old_size 0) where MDWE refuses only gains. */
static int wx_alias_of(int fd)
{
	size_t n = page_size();
	void *x = mmap(NULL, n, PROT_READ | PROT_EXEC, MAP_SHARED | (fd < 0 ? MAP_ANONYMOUS : 0),
		       fd, 0), *w;

	if (x == MAP_FAILED)
		return errno;
	w = mremap(x, 0, n, MREMAP_MAYMOVE);
	if (w == MAP_FAILED)
		return errno;
	if (mprotect(w, n, PROT_READ | PROT_WRITE) != 0)
		return errno;
	return write_and_call(w, x);
}

static int wx_shared_rx(void *arg)
{
	(void)arg;
	return wx_alias_of(-1);
}

static int wx_devzero_shared_rx(void *arg)
{
	int fd = open("/dev/zero", O_RDWR | O_CLOEXEC);

	(void)arg;
	return fd < 0 ? errno : wx_alias_of(fd);
}

/* This program's own file: on an executable mount, as every allowed one. */
static int open_self(void)
{
	char self[512];

	path_in(self, sizeof(self), A.fix, "escape_helper");
	return open(self, O_RDONLY | O_CLOEXEC);
}

static int wx_file_rwx(void *arg)
{
	int fd = open_self();
	void *p;

	(void)arg;
	if (fd < 0)
		return errno;
	p = mmap(NULL, page_size(), PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE, fd, 0);
	return p == MAP_FAILED ? errno : write_and_call(p, p);
}

static int wx_file_shared_rx(void *arg)
{
	int fd = open_self();
	void *p;

	(void)arg;
	if (fd < 0)
		return errno;
	p = mmap(NULL, page_size(), PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? errno : WX_MAPPED;
}

/* A private executable mapping of the file (what ld.so makes), made
 * writable (a loss of exec, which MDWE allows), then executable again. */
static int wx_file_regain(void *arg)
{
	size_t n = page_size();
	int fd = open_self();
	void *p;

	(void)arg;
	if (fd < 0)
		return errno;
	p = mmap(NULL, n, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return errno;
	if (mprotect(p, n, PROT_READ | PROT_WRITE) != 0)
		return errno;
	memcpy(p, native_code, sizeof(native_code));
	if (mprotect(p, n, PROT_READ | PROT_EXEC) != 0)
		return errno;
	return call_code(p);
}

/* A file the agent writes (the workspace), mapped shared read-write,
 * then made executable: the page the write changed is the code. */
static int wx_ws_file(void *arg)
{
	size_t n = page_size();
	char path[512];
	void *p;
	int fd;

	(void)arg;
	snprintf(path, sizeof(path), "%s/esc-wx-%d", A.ws ? A.ws : "/nonexistent", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (fd < 0)
		return errno;
	unlink(path);
	if (ftruncate(fd, (off_t)n) != 0)
		return errno;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errno;
	memcpy(p, native_code, sizeof(native_code));
	if (mprotect(p, n, PROT_READ | PROT_EXEC) != 0)
		return errno;
	return call_code(p);
}

static int wx_mprotect(int prot, bool pkey)
{
	size_t n = page_size();
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long r;

	if (p == MAP_FAILED)
		return errno;
	memcpy(p, native_code, sizeof(native_code));
	r = pkey ? syscall(SYS_pkey_mprotect, p, n, prot, -1) : mprotect(p, n, prot);
	return r != 0 ? errno : call_code(p);
}

static int wx_mprotect_rx(void *arg)
{
	(void)arg;
	return wx_mprotect(PROT_READ | PROT_EXEC, false);
}

static int wx_mprotect_rwx(void *arg)
{
	(void)arg;
	return wx_mprotect(PROT_READ | PROT_WRITE | PROT_EXEC, false);
}

static int wx_pkey_mprotect_rx(void *arg)
{
	(void)arg;
	return wx_mprotect(PROT_READ | PROT_EXEC, true);
}

/* What glibc does for a thread stack when its stack flags say exec (the
 * live attack flipped them): the stack made executable in place. */
static int wx_stack(void *arg)
{
	unsigned char code[64] __attribute__((aligned(16)));
	uintptr_t at = (uintptr_t)code & ~(uintptr_t)(page_size() - 1);

	(void)arg;
	memcpy(code, native_code, sizeof(native_code));
	if (mprotect((void *)at, page_size(), PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return errno;
	return call_code(code);
}

/* SysV shared memory attached read-write, then made executable; or
 * attached a second time with SHM_EXEC. The segment goes at once. */
static int wx_shm(bool second_attach)
{
	/* Mode 0700: SHM_EXEC asks for x on the segment too. */
	int id = shmget(IPC_PRIVATE, page_size(), IPC_CREAT | 0700), r;
	void *w, *x;

	if (id < 0)
		return errno;
	w = shmat(id, NULL, 0);
	x = w == (void *)-1 ? w : second_attach ? shmat(id, NULL, SHM_RDONLY | SHM_EXEC) : w;
	r = w == (void *)-1 || x == (void *)-1 ? errno : 0;
	shmctl(id, IPC_RMID, NULL);
	if (r)
		return r;
	memcpy(w, native_code, sizeof(native_code));
	if (!second_attach && mprotect(w, page_size(), PROT_READ | PROT_EXEC) != 0)
		return errno;
	return call_code(x);
}

static int wx_shm_mprotect(void *arg)
{
	(void)arg;
	return wx_shm(false);
}

static int wx_shmat_exec(void *arg)
{
	(void)arg;
	return wx_shm(true);
}

/* An anonymous shared mapping read-write, a second mapping of its pages
 * (mremap, old size 0), that one made executable. */
static int wx_mremap_alias(void *arg)
{
	size_t n = page_size();
	void *w = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0), *x;

	(void)arg;
	if (w == MAP_FAILED)
		return errno;
	memcpy(w, native_code, sizeof(native_code));
	x = mremap(w, 0, n, MREMAP_MAYMOVE);
	if (x == MAP_FAILED)
		return errno;
	if (mprotect(x, n, PROT_READ | PROT_EXEC) != 0)
		return errno;
	return call_code(x);
}

/* The deprecated remap takes its protection from the mapping; a prot
 * other than 0 is refused by the kernel itself. */
static int wx_remap_file_pages(void *arg)
{
	size_t n = page_size();
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (p == MAP_FAILED)
		return errno;
	return syscall(SYS_remap_file_pages, p, n, PROT_EXEC, 0, 0) == 0 ? WX_DONE : errno;
}

/* READ_IMPLIES_EXEC: every readable mapping executable, after the filter
 * has looked at the arguments. */
static int wx_personality(void *arg)
{
	void *p;

	(void)arg;
	if (syscall(SYS_personality, 0x0400000UL /* READ_IMPLIES_EXEC */) < 0)
		return errno;
	p = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? errno : write_and_call(p, p);
}

static int wx_mdwe_clear(void *arg)
{
	(void)arg;
	return prctl(65 /* PR_SET_MDWE */, 0UL, 0UL, 0UL, 0UL) == 0 ? WX_DONE : errno;
}

/* A function of this program overwritten through /proc/self/mem (its
 * writes reach read-only, executable pages), then called. */
static int __attribute__((noinline)) victim(void)
{
	return 1;
}

static int wx_procmem(void *arg)
{
	int (*volatile fn)(void) = victim;
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

	(void)arg;
	if (fd < 0)
		return errno;
	if (pwrite(fd, native_code, sizeof(native_code), (off_t)(uintptr_t)fn) < 0)
		return errno;
	return fn() == 42 ? WX_RAN : EDOM;
}

static int wx_process_vm_writev(void *arg)
{
	int (*volatile fn)(void) = victim;
	struct iovec local = { (void *)native_code, sizeof(native_code) };
	struct iovec remote = { (void *)(uintptr_t)fn, sizeof(native_code) };

	(void)arg;
	if (process_vm_writev(getpid(), &local, 1, &remote, 1, 0) < 0)
		return errno;
	return fn() == 42 ? WX_RAN : EDOM;
}

static void put_wx(const char *name, int (*fn)(void *))
{
	int status = inside_fork_wait(name, fn, NULL);

	if (status < 0)
		return;
	if (WIFSIGNALED(status))
		put(name, "SIG%s", sigabbrev_np(WTERMSIG(status)) ?: "?");
	else if (WEXITSTATUS(status) == WX_RAN)
		put(name, "RAN");
	else if (WEXITSTATUS(status) == WX_MAPPED)
		put(name, "MAPPED");
	else if (WEXITSTATUS(status) == WX_DONE)
		put(name, "OK");
	else
		put(name, "%s", err_name(WEXITSTATUS(status)));
}

/* A copy of this program whose PT_GNU_STACK asks for an executable stack,
 * run through the loader: ld.so must make the stack executable first. */
static int set_exec_stack(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), r = -1;
	Elf64_Ehdr eh;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64) {
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);

			if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
				break;
			if (ph.p_type != PT_GNU_STACK)
				continue;
			ph.p_flags = PF_R | PF_W | PF_X;
			if (pwrite(fd, &ph, sizeof(ph), at) == (ssize_t)sizeof(ph))
				r = 0;
			break;
		}
	}
	close(fd);
	return r;
}

static void ldso_execstack(void)
{
	char copy[512], self[512];
	char *const argv[] = { (char *)LOADER, copy, (char *)"noop", NULL };

	path_in(self, sizeof(self), A.fix, "escape_helper");
	snprintf(copy, sizeof(copy), "/tmp/esc-execstack-%d", (int)getpid());
	if (copy_file(self, copy, 0755) != 0 || set_exec_stack(copy) != 0) {
		put("ldso_execstack", "setup:%s", err_name(errno));
		unlink(copy);
		return;
	}
	run_prog("ldso_execstack", argv, NULL, 0);
	unlink(copy);
}

/*
 * git grep through PCRE2, whose JIT needs executable memory: OK (found),
 * JIT-REFUSED (git died saying so: before 2.40 it does not fall back to
 * the interpreter), or the exit status. A file of the workspace, no
 * repository (--no-index).
 */
static void git_grep(const char *name, const char *how, const char *pattern)
{
	char out[2048], outcome[64];
	/* Relative: git 2.39 aborts (a BUG()) on an absolute path with
	 * --no-index outside a repository. */
	char *const argv[] = { (char *)"/usr/bin/git", (char *)"grep", (char *)"--no-index",
			       (char *)"-n", (char *)how, (char *)pattern, (char *)"--",
			       (char *)"esc-grep.c", NULL };
	int status;

	status = run_capture(argv, out, sizeof(out), true, outcome, sizeof(outcome));
	if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    strstr(out, "int main(void)"))
		put(name, "OK");
	else if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 128 &&
		 strstr(out, "Couldn't JIT the PCRE2 pattern"))
		put(name, "JIT-REFUSED");
	else
		put(name, "%s", outcome);
}

/* An allowed program whose ELF asks for an executable stack (the test's
 * patched copy of this one), next to this one: its stack runs code. */
static void cls_wx_stack(void)
{
	char self[512], copy[512];
	char *const argv_self[] = { self, (char *)"stack_run", NULL };
	char *const argv_copy[] = { copy, (char *)"stack_run", NULL };

	path_in(self, sizeof(self), A.fix, "escape_helper");
	path_in(copy, sizeof(copy), A.fix, "escape_helper_execstack");
	run_prog("stack_run_self", argv_self, NULL, 0);
	run_prog("stack_run_execstack", argv_copy, NULL, 0);
}

static void cls_wx(void)
{
	char self[512], file[512];
	void *p;
	long v;
	int fd;

	/* Controls: anonymous memory read-write, allowed programs that load
	 * their libraries (the helper itself, sh), git's regex engine. */
	p = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	put_ret("mmap_rw", p == MAP_FAILED ? -1 : 0, false);
	if (p != MAP_FAILED)
		munmap(p, page_size());
	path_in(self, sizeof(self), A.fix, "escape_helper");
	{
		char *const argv[] = { self, (char *)"noop", NULL };

		run_prog("self_exec", argv, NULL, 0);
	}
	{
		char *const argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"exit 7", NULL };

		run_prog("sh_exit7", argv, NULL, 0);
	}
	path_in(file, sizeof(file), A.ws, "esc-grep.c");
	if (!A.ws || chdir(A.ws) != 0)
		put("grep_dir", "%s", err_name(errno));
	fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "int main(void)\n", 15) != 15)
		put("grep_file", "%s", err_name(errno));
	if (fd >= 0)
		close(fd);
	git_grep("git_grep_regex", "-e", "ma.n");
	git_grep("git_grep_fixed", "-F", "main");
	git_grep("git_grep_P", "-P", "ma\\w+");
	unlink(file);

	put_wx("mmap_anon_rwx", wx_anon_rwx);
	put_wx("mmap_anon_rx", wx_anon_rx);
	put_wx("mmap_shared_rx_alias", wx_shared_rx);
	put_wx("devzero_shared_rx_alias", wx_devzero_shared_rx);
	put_wx("mmap_file_rwx", wx_file_rwx);
	put_wx("mmap_file_shared_rx", wx_file_shared_rx);
	put_wx("file_regain_exec", wx_file_regain);
	put_wx("ws_file_shared_rx", wx_ws_file);
	put_wx("mprotect_rx", wx_mprotect_rx);
	put_wx("mprotect_rwx", wx_mprotect_rwx);
	put_wx("pkey_mprotect_rx", wx_pkey_mprotect_rx);
	put_wx("stack_exec", wx_stack);
	put_wx("shm_mprotect_rx", wx_shm_mprotect);
	put_wx("shmat_exec_alias", wx_shmat_exec);
	put_wx("mremap_alias_rx", wx_mremap_alias);
	put_wx("remap_file_pages_exec", wx_remap_file_pages);
	put_wx("personality_rie", wx_personality);
	put_wx("mdwe_clear", wx_mdwe_clear);
	v = prctl(66 /* PR_GET_MDWE */, 0UL, 0UL, 0UL, 0UL);
	if (v < 0)
		put("mdwe_get", "%s", err_name(errno));
	else
		put("mdwe_get", "%ld", v);
	put_wx("procmem_write_text", wx_procmem);
	put_wx("process_vm_writev_text", wx_process_vm_writev);
	ldso_execstack();
}

/* ---- network --------------------------------------------------------------- */

static struct sockaddr_in loopback4(unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

static void net_connect(const char *name, int s, const struct sockaddr *sa, socklen_t len)
{
	if (s < 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	put_ret(name, connect(s, sa, len), false);
	close(s);
}

static void cls_network(void)
{
	struct sockaddr_in sa = loopback4(A.tcp);
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)A.tcp) };
	int s, one = 1;

	inet_pton(AF_INET6, "::ffff:127.0.0.1", &sa6.sin6_addr);
	net_connect("tcp_host", socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
		    (struct sockaddr *)&sa, sizeof(sa));
	net_connect("tcp6_mapped_host", socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0),
		    (struct sockaddr *)&sa6, sizeof(sa6));
	/* Bit 32 of the family: the kernel takes an int. */
	net_connect("tcp_host_family_high",
		    (int)syscall(SYS_socket, HIGH_BIT | AF_INET, (long)(SOCK_STREAM | SOCK_CLOEXEC),
				 0L),
		    (struct sockaddr *)&sa, sizeof(sa));
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		put_ret("tcp_fastopen", sendto(s, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&sa,
					       sizeof(sa)), false);
		close(s);
	} else {
		put("tcp_fastopen", "%s", err_name(errno));
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		put_ret("tfo_connect_opt", setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one,
						      sizeof(one)), false);
		put_ret("tfo_connect_opt_high",
			syscall(SYS_setsockopt, s, HIGH_BIT | IPPROTO_TCP, (long)TCP_FASTOPEN_CONNECT,
				&one, (long)sizeof(one)), false);
		close(s);
	} else {
		put("tfo_connect_opt", "%s", err_name(errno));
		put("tfo_connect_opt_high", "%s", err_name(errno));
	}
	s = A.udp ? socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) : -1;
	if (s >= 0) {
		struct sockaddr_in u = loopback4(A.udp);

		put_ret("udp_host", sendto(s, "sbx-esc", 7, 0, (struct sockaddr *)&u, sizeof(u)),
			false);
		close(s);
	} else {
		put("udp_host", "%s", err_name(errno));
	}
	put_ret("mptcp", socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_MPTCP), true);
	put_ret("mptcp_high", syscall(SYS_socket, (long)AF_INET, (long)(SOCK_STREAM | SOCK_CLOEXEC),
				      HIGH_BIT | IPPROTO_MPTCP), true);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (s >= 0) {
		struct sockaddr_in dst = { .sin_family = AF_INET };
		unsigned char echo[8] = { 8, 0, 0, 0, 0, 0, 0, 1 };

		inet_pton(AF_INET, "1.1.1.1", &dst.sin_addr);
		put_ret("ping", sendto(s, echo, sizeof(echo), 0, (struct sockaddr *)&dst,
				       sizeof(dst)), false);
		close(s);
	} else {
		put("ping", "%s", err_name(errno));
	}
	put_ret("raw_icmp", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP), true);
	put_ret("af_packet", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), true);
	put_ret("af_vsock", socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), true);
	put_ret("af_alg", socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), true);
	put_ret("netlink_audit", socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT), true);
	/* Controls: route netlink (getaddrinfo needs it) and the sandbox's
	 * own loopback. */
	put_ret("netlink_route", socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), true);
	{
		struct sockaddr_in l = loopback4(0);
		socklen_t len = sizeof(l);
		int ls, c = -1, a = -1;

		ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (ls < 0 || bind(ls, (struct sockaddr *)&l, sizeof(l)) != 0 || listen(ls, 1) != 0 ||
		    getsockname(ls, (struct sockaddr *)&l, &len) != 0 ||
		    (c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
		    connect(c, (struct sockaddr *)&l, sizeof(l)) != 0 ||
		    (a = accept4(ls, NULL, NULL, SOCK_CLOEXEC)) < 0)
			put("loopback_own", "%s", err_name(errno));
		else
			put("loopback_own", "OK");
		if (ls >= 0)
			close(ls);
		if (c >= 0)
			close(c);
		if (a >= 0)
			close(a);
	}
}

/* ---- unix ------------------------------------------------------------------ */

static void unix_connect(const char *name, int type, const char *path, bool abstract)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int s;

	if (abstract) {
		snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s", path);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	} else {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
		len = sizeof(sa);
	}
	s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (s < 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	put_ret(name, connect(s, (struct sockaddr *)&sa, len), false);
	close(s);
}

/* bind + listen + connect + accept, all our own, in dir. */
static void own_socket(const char *name, const char *dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int l, c = -1, a = -1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/esc-own-%d.sock", dir, (int)getpid());
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 1) != 0 ||
	    (c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(c, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    (a = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0)
		put(name, "%s", err_name(errno));
	else
		put(name, "OK");
	unlink(sa.sun_path);
	if (l >= 0)
		close(l);
	if (c >= 0)
		close(c);
	if (a >= 0)
		close(a);
}

static void cls_unix(void)
{
	char sock[108], seqpacket[108], dgram[108], link_path[108];
	int sv[2], s;

	path_in(sock, sizeof(sock), A.fix, "host.sock");
	path_in(seqpacket, sizeof(seqpacket), A.fix, "host.seqpacket");
	path_in(dgram, sizeof(dgram), A.fix, "host.dgram");
	unix_connect("host_sock", SOCK_STREAM, sock, false);
	unix_connect("host_seqpacket", SOCK_SEQPACKET, seqpacket, false);
	snprintf(link_path, sizeof(link_path), "/tmp/esc-link-%d.sock", (int)getpid());
	if (symlink(sock, link_path) == 0) {
		unix_connect("host_sock_symlink", SOCK_STREAM, link_path, false);
		unlink(link_path);
	} else {
		put("host_sock_symlink", "symlink:%s", err_name(errno));
	}
	put_ret("dgram_socket", socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), true);
	s = socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv);
	put_ret("dgram_socketpair", s, false);
	if (s == 0) {
		close(sv[0]);
		close(sv[1]);
	}
	/* SOCK_RAW is a datagram socket for AF_UNIX (the kernel makes it
	 * SOCK_DGRAM): the same ban must hold. */
	put_ret("raw_socket", socket(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0), true);
	s = socketpair(AF_UNIX, SOCK_RAW | SOCK_CLOEXEC, 0, sv);
	put_ret("raw_socketpair", s, false);
	if (s == 0) {
		close(sv[0]);
		close(sv[1]);
	}
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "host_dgram_raw" : "host_dgram";

		s = socket(AF_UNIX, (k ? SOCK_RAW : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
		if (s >= 0) {
			struct sockaddr_un sa = { .sun_family = AF_UNIX };

			snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dgram);
			put_ret(name, sendto(s, "sbx-esc", 7, 0, (struct sockaddr *)&sa, sizeof(sa)),
				false);
			close(s);
		} else {
			put(name, "%s", err_name(errno));
		}
	}
	if (A.abstract)
		unix_connect("abstract_host", SOCK_STREAM, A.abstract, true);
	/* Squatting an abstract name host clients may look for (X11, a
	 * restarted daemon's): a name bound here must not be the host's. An
	 * autobind (a random name) is the control. */
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "sbx-esc-squat-%d",
				 (int)getpid());

		put_ret("abstract_bind", bind(s, (struct sockaddr *)&sa,
					     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
							 (size_t)n)), false);
		close(s);
	} else {
		put("abstract_bind", "%s", err_name(errno));
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		put_ret("autobind", bind(s, (struct sockaddr *)&sa, sizeof(sa_family_t)), false);
		close(s);
	} else {
		put("autobind", "%s", err_name(errno));
	}
	/* Controls: sockets of the session's own. */
	own_socket("own_sock_tmp", "/tmp");
	own_socket("own_sock_ws", A.ws ? A.ws : "/tmp");
	s = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	put_ret("socketpair_stream", s, false);
	if (s == 0) {
		close(sv[0]);
		close(sv[1]);
	}
}

/* ---- fds_cwd, env ---------------------------------------------------------- */

static void cls_fds_cwd(void)
{
	char cwd[4096];

	put("fds", "%s", start_fds);
	if (!getcwd(cwd, sizeof(cwd)))
		put("cwd", "%s", err_name(errno));
	else if (A.ws && strcmp(cwd, A.ws) == 0)
		put("cwd", "WS");
	else
		put("cwd", "%s", cwd);
}

static void cls_env(void)
{
	static const char *const gone[] = { "BASH_ENV", "ENV", "FOO", "GLIBC_TUNABLES" };
	static const char *const set[] = { "HOME", "USER", "PATH" };
	char name[64];
	bool ld = false;

	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
		snprintf(name, sizeof(name), "env_%s", gone[i]);
		put(name, "%s", getenv(gone[i]) ? "PRESENT" : "ABSENT");
	}
	for (char **e = self_env; e && *e; e++)
		if (strncmp(*e, "LD_", 3) == 0)
			ld = true;
	put("env_LD_any", "%s", ld ? "PRESENT" : "ABSENT");
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		snprintf(name, sizeof(name), "env_%s", set[i]);
		put(name, "%s", getenv(set[i]) && getenv(set[i])[0] ? "SET" : "UNSET");
	}
}

/* ---- rlimits, fork_bomb, tmp_fill ------------------------------------------ */

static void raise_limit(const char *name, int res)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) != 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	if (rl.rlim_max == RLIM_INFINITY) {
		put(name, "INFINITE");
		return;
	}
	rl.rlim_max += 1;
	rl.rlim_cur = rl.rlim_max;
	put_ret(name, setrlimit(res, &rl), false);
}

static void cls_rlimits(void)
{
	raise_limit("raise_nproc", RLIMIT_NPROC);
	raise_limit("raise_nofile", RLIMIT_NOFILE);
	raise_limit("raise_core", RLIMIT_CORE);
	raise_limit("raise_fsize", RLIMIT_FSIZE);
}

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

static void cls_fork_bomb(void)
{
	static pid_t kids[4096];
	struct sigaction sa;
	int gate[2], e = 0, n = 0;
	char c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	if (pipe2(gate, O_CLOEXEC) != 0) {
		put("fork_bomb", "pipe:%s", err_name(errno));
		return;
	}
	/* Time-boxed: 10 s, and never more children than the array holds. */
	alarm(10);
	fflush(NULL);
	while (!timed_out && n < (int)(sizeof(kids) / sizeof(kids[0]))) {
		pid_t p = fork();

		if (p < 0) {
			e = errno;
			break;
		}
		if (p == 0) {
			close(gate[1]);
			/* Wait for the end of the bomb: EOF on the pipe. */
			while (read(gate[0], &c, 1) < 0 && errno == EINTR)
				;
			_exit(0);
		}
		kids[n++] = p;
	}
	alarm(0);
	put("fork_bomb", "%s", e ? err_name(e) : timed_out ? "TIMEOUT" : "CAPPED");
	put("fork_count", "%d", n);
	close(gate[1]);
	close(gate[0]);
	for (int i = 0; i < n; i++)
		while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
			;
	/* Control: once they are gone, fork works again. */
	{
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		put_ret("fork_after", p, false);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
}

static void cls_tmp_fill(void)
{
	static char chunk[65536];
	char path[128];
	long long total = 0;
	int fd, e = 0;

	/* Ignored, so the fsize limit shows as EFBIG from write(). */
	signal(SIGXFSZ, SIG_IGN);
	memset(chunk, 'x', sizeof(chunk));
	snprintf(path, sizeof(path), "/tmp/esc-fill-%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		put("tmp_fill", "open:%s", err_name(errno));
		return;
	}
	while (total < (64LL << 20)) {
		ssize_t n = write(fd, chunk, sizeof(chunk));

		if (n < 0) {
			e = errno;
			break;
		}
		total += n;
	}
	close(fd);
	unlink(path);
	put("tmp_fill", "%s", e ? err_name(e) : "CAPPED");
	put("tmp_fill_bytes", "%lld", total);
}

/* ---- session_time, leftovers, workspace_swap ------------------------------- */

static void cls_session_time(void)
{
	pid_t p;

	signal(SIGHUP, SIG_IGN);
	fflush(NULL);
	p = fork();
	if (p == 0) {
		setsid();
		signal(SIGHUP, SIG_IGN);
		sleep_ms(60000);
		_exit(0);
	}
	put_ret("started", p, false);
	sleep_ms(60000);
	put("survived", "OK");
}

static void cls_leftovers(void)
{
	pid_t p;

	fflush(NULL);
	p = fork();
	if (p == 0) {
		pid_t q;

		setsid();
		q = fork();
		if (q == 0) {
			/* Bounded: 200 children, 30 s each. */
			for (int i = 0; i < 200; i++) {
				pid_t k = fork();

				if (k == 0) {
					sleep_ms(30000);
					_exit(0);
				}
				sleep_ms(5);
			}
			sleep_ms(30000);
			_exit(0);
		}
		_exit(q > 0 ? 0 : 1);
	}
	if (p > 0) {
		int status = 0;

		waitpid(p, &status, 0);
		put("spawned", "%s", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "OK" : "FAILED");
	} else {
		put("spawned", "%s", err_name(errno));
	}
}

/* ---- unix_sameuid ------------------------------------------------------------ */

/* A program run with one variable ("NAME=value") set in its environment. */
static void run_with_var(const char *name, const char *var, char *const argv[])
{
	size_t k = strcspn(var, "=") + 1, n = 0;
	char *env[64];

	for (char **e = self_env; *e && n < 62; e++)
		if (strncmp(*e, var, k) != 0)
			env[n++] = *e;
	env[n++] = (char *)var;
	env[n] = NULL;
	prog_env = env;
	run_prog(name, argv, NULL, 0);
	prog_env = NULL;
}

static void run_with_agent(const char *name, const char *sock, char *const argv[])
{
	char var[160];

	snprintf(var, sizeof(var), "SSH_AUTH_SOCK=%s", sock);
	run_with_var(name, var, argv);
}

/* Wait up to 3 s for a path to appear. */
static bool appears(const char *path)
{
	struct stat st;

	for (int i = 0; i < 300; i++) {
		if (lstat(path, &st) == 0)
			return true;
		sleep_ms(10);
	}
	return false;
}

/*
 * The agent's own uid, unconfined, outside the sandbox (the test started
 * them): listeners in the workspace, the host's /tmp, the real home and
 * the host's /dev/shm; a tmux server and an ssh-agent holding a key, both
 * with their sockets in the workspace. Owning a socket file makes none of
 * them the session's. The controls: a tmux server and an ssh-agent
 * started inside answer.
 */
static void cls_unix_sameuid(void)
{
	char path[108], tmux[108], agent[108], pwned[160], in_tmux[] = "/tmp/esc-in.tmux",
	     in_agent[] = "/tmp/esc-in.agent", cmd[200];
	const char *home = getenv("HOME");
	pid_t ag;

	path_in(path, sizeof(path), A.ws, ".esc-outside.sock");
	unix_connect("sameuid_ws", SOCK_STREAM, path, false);
	snprintf(path, sizeof(path), "/tmp/sbx-test-esc-out-%s.sock", A.mark ? A.mark : "");
	unix_connect("sameuid_tmp", SOCK_STREAM, path, false);
	path_in(path, sizeof(path), home ? home : "/nonexistent", ".esc-outside.sock");
	unix_connect("sameuid_home", SOCK_STREAM, path, false);
	path_in(path, sizeof(path), A.shm ? A.shm : "/nonexistent", "esc-outside.sock");
	unix_connect("sameuid_shm", SOCK_STREAM, path, false);

	/* tmux outside: run-shell would run its command unconfined. */
	path_in(tmux, sizeof(tmux), A.ws, ".hosttmux");
	snprintf(pwned, sizeof(pwned), "touch %s/tmux-pwned", A.host ? A.host : "/nonexistent");
	{
		char *argv[] = { "/usr/bin/tmux", "-S", tmux, "run-shell", pwned, NULL };

		run_prog("tmux_outside", argv, NULL, 0);
	}
	/* ssh-agent outside: its key must not be listed (exit 2: no agent). */
	path_in(agent, sizeof(agent), A.ws, ".hostagent");
	{
		char *argv[] = { "/usr/bin/ssh-add", "-l", NULL };

		run_with_agent("sshagent_outside", agent, argv);
	}

	/* Controls: a tmux server of the session's own, and an ssh-agent. */
	{
		char *start[] = { "/usr/bin/tmux", "-S", in_tmux, "new-session", "-d", "-s", "in",
				  "/bin/sleep 60", NULL };
		char *run[] = { "/usr/bin/tmux", "-S", in_tmux, "run-shell", cmd, NULL };
		char *stop[] = { "/usr/bin/tmux", "-S", in_tmux, "kill-server", NULL };
		struct stat st;

		snprintf(cmd, sizeof(cmd), "touch /tmp/esc-in-tmux-ran");
		/* The session's command runs in SHELL (else the passwd shell:
		 * agent-shell). */
		run_with_var("tmux_inside_new", "SHELL=/bin/sh", start);
		run_prog("tmux_inside_run", run, NULL, 0);
		put("tmux_inside_ran", "%s", stat("/tmp/esc-in-tmux-ran", &st) == 0 ? "OK" : "ABSENT");
		/* A second client while one stays connected: the server's end of
		 * the first connection carries the socket's file too. */
		{
			char *waiter[] = { "/usr/bin/tmux", "-S", in_tmux, "wait-for", "esc", NULL };
			char *ls[] = { "/usr/bin/tmux", "-S", in_tmux, "ls", NULL };
			char *wake[] = { "/usr/bin/tmux", "-S", in_tmux, "wait-for", "-S", "esc", NULL };
			pid_t w;

			fflush(NULL);
			w = fork();
			if (w == 0) {
				int null = open("/dev/null", O_RDWR | O_CLOEXEC);

				if (null >= 0) {
					dup2(null, 0);
					dup2(null, 1);
					dup2(null, 2);
				}
				execve(waiter[0], waiter, self_env);
				_exit(127);
			}
			sleep_ms(300);
			run_prog("tmux_inside_second_client", ls, NULL, 0);
			run_prog("tmux_inside_wake", wake, NULL, 0);
			if (w > 0)
				waitpid(w, NULL, 0);
		}
		/* Cleanup only: the client may see the server go before it
		 * answers, and say so with exit 1. */
		run_prog("tmux_inside_kill", stop, NULL, 0);
		unlink("/tmp/esc-in-tmux-ran");
		unlink(in_tmux);
	}
	fflush(NULL);
	ag = fork();
	if (ag == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int errf = open("/tmp/esc-in.err", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(errf >= 0 ? errf : null, 2);
		}
		execl("/usr/bin/ssh-agent", "ssh-agent", "-D", "-a", in_agent, (char *)NULL);
		_exit(127);
	}
	if (ag > 0 && appears(in_agent)) {
		char *argv[] = { "/usr/bin/ssh-add", "-l", NULL };

		/* exit 1: connected, "The agent has no identities." */
		run_with_agent("sshagent_inside", in_agent, argv);
	} else {
		char why[120] = "";
		int fd = open("/tmp/esc-in.err", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, why, sizeof(why) - 1) : -1;

		for (ssize_t i = 0; i < n; i++)
			if (why[i] == '\n' || why[i] == ' ')
				why[i] = '_';
		why[n > 0 ? n : 0] = '\0';
		if (fd >= 0)
			close(fd);
		put("sshagent_inside", "%s:%s", ag > 0 ? "NOSOCKET" : err_name(errno), why);
	}
	unlink("/tmp/esc-in.err");
	if (ag > 0) {
		kill(ag, SIGKILL);
		waitpid(ag, NULL, 0);
	}
	unlink(in_agent);
}

static void cls_touch(void)
{
	int fd = open("esc-swapped.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	put_ret("touched", fd, true);
}

/* ---- main ------------------------------------------------------------------ */

static const struct {
	const char *name;
	void (*fn)(void);
} classes[] = {
	{ "nonnative", cls_nonnative },
	{ "namespaces", cls_namespaces },
	{ "mounts", cls_mounts },
	{ "kernel_surface", cls_kernel_surface },
	{ "processes", cls_processes },
	{ "tty", cls_tty },
	{ "privileged_binaries", cls_privileged },
	{ "fs_boundary", cls_fs_boundary },
	{ "secret_alias", cls_secret_alias },
	{ "gate", cls_gate },
	{ "wx", cls_wx },
	{ "wx_jit", cls_wx },
	{ "wx_stack", cls_wx_stack },
	{ "network", cls_network },
	{ "unix", cls_unix },
	{ "unix_sameuid", cls_unix_sameuid },
	{ "fds_cwd", cls_fds_cwd },
	{ "env", cls_env },
	{ "rlimits", cls_rlimits },
	{ "fork_bomb", cls_fork_bomb },
	{ "tmp_fill", cls_tmp_fill },
	{ "session_time", cls_session_time },
	{ "leftovers", cls_leftovers },
	{ "touch", cls_touch },
};

int main(int argc, char **argv, char **envp)
{
	const char *sid = getenv("AGENT_SANDBOX_SESSION");

	/* First, before any open of ours: what the sandbox handed over. */
	list_fds(start_fds, sizeof(start_fds));
	self_env = envp;
	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "noop") == 0)
		return 0;
	/* Native code on the stack, called: 0 when it ran (the kernel gave
	 * this program an executable stack), else it dies with SIGSEGV. */
	if (strcmp(argv[1], "stack_run") == 0) {
		unsigned char code[64] __attribute__((aligned(16)));

		memcpy(code, native_code, sizeof(native_code));
		return call_code(code) == WX_RAN ? 0 : 1;
	}
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char *v;

		if (!eq)
			return 2;
		v = eq + 1;
		*eq = '\0';
		if (!strcmp(argv[i], "ws"))
			A.ws = v;
		else if (!strcmp(argv[i], "host"))
			A.host = v;
		else if (!strcmp(argv[i], "fix"))
			A.fix = v;
		else if (!strcmp(argv[i], "abstract"))
			A.abstract = v;
		else if (!strcmp(argv[i], "mark"))
			A.mark = v;
		else if (!strcmp(argv[i], "shm"))
			A.shm = v;
		else if (!strcmp(argv[i], "targets"))
			A.targets = v;
		else if (!strcmp(argv[i], "tcp"))
			A.tcp = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "udp"))
			A.udp = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(argv[i], "fixture"))
			A.fixture = (pid_t)strtol(v, NULL, 10);
		else
			return 2;
	}
	put("session", "%s", sid && sid[0] ? sid : "-");
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strcmp(argv[1], classes[i].name) == 0) {
			classes[i].fn();
			put("done", "OK");
			return 0;
		}
	}
	put("unknown_class", "%s", argv[1]);
	return 2;
}
