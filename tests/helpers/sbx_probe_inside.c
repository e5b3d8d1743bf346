/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sbx_probe_inside: run as the program of a confined session by
 * tests/test_apply.c. It tries, one after the other, what the sandbox must
 * refuse next to what it must still allow, and writes one line per check,
 * "name RESULT", to the file given with -o. RESULT is OK, an errno name
 * (EPERM), a signal name (SIGSYS, for checks run in a child) or a value.
 * /bin/sh cannot do most of these (TCP Fast Open, x32, int 0x80, TIOCSTI
 * with high bits, raw syscalls), hence a C helper.
 *
 *   -o FILE   where the results go (required)
 *   -w DIR    a writable directory (the workspace)
 *   -x DIR    a host directory the agent may write by DAC but the profile
 *             does not grant (write_outside)
 *   -s FILE   a deny_read secret holding "TOPSECRET"
 *   -p FILE   a readable file holding "PUBLIC" (the control for -s)
 *   -t PORT   a host TCP listener on 127.0.0.1
 *   -u PORT   a host UDP socket on 127.0.0.1
 *   -k PID    a process outside the sandbox (same uid)
 *   -a NAME   an abstract unix socket listening outside (same uid); on a
 *             kernel without Landlock scopes only the network namespace
 *             keeps it out of reach
 *   -e PROG   a program not on the gate's allow-list (exec_unlisted, and
 *             loader_unlisted: the ELF loader asked to load it)
 *   -g        the profile is gated: also try execveat(AT_EMPTY_PATH)
 *   -n        do nothing and exit 0 (the exec controls run this)
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sched.h>
#include <termios.h>
#include <unistd.h>

#include "inside.h"

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U	/* Linux 6.3; Debian 12's headers predate it */
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#define X32_SYSCALL_BIT 0x40000000L

#ifdef SBX_SANITIZER
/* LeakSanitizer stops the world with ptrace at exit, which the sandbox's
 * seccomp filter refuses: it would turn every clean exit into 1. */
const char *__asan_default_options(void) __attribute__((visibility("default")));
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif

static const char *self_path;
static char **self_env;

static void check_status(void)
{
	static const char *const keys[] = {
		"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
	};
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f) {
		put("status", "%s", err_name(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t n = strlen(keys[i]);

			if (strncmp(line, keys[i], n) == 0 && line[n] == ':') {
				char *v = line + n + 1;

				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = '\0';
				put(keys[i], "%s", v);
			}
		}
	}
	fclose(f);
}

static void check_write(const char *name, const char *dir)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.probe", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		put(name, "%s", err_name(errno));
		return;
	}
	if (write(fd, "probe\n", 6) != 6) {
		put(name, "write:%s", err_name(errno));
		close(fd);
		return;
	}
	close(fd);
	put(name, "OK");
}

/* EMPTY (masked), LEAKED (the secret's bytes), OK (the public control's
 * bytes), READ (something else) or the errno of open/read. */
static void check_read(const char *name, const char *path)
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
	else if (strstr(buf, "PUBLIC"))
		put(name, "OK");
	else
		put(name, "READ");
}

static struct sockaddr_in loopback(unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

static void check_abstract(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int s;

	if (n + 1 > sizeof(sa.sun_path)) {
		put("abstract_host", "ENAMETOOLONG");
		return;
	}
	memcpy(sa.sun_path + 1, name, n);	/* sun_path[0] = 0: abstract */
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		put("abstract_host", "%s", err_name(errno));
		return;
	}
	put_ret("abstract_host", connect(s, (struct sockaddr *)&sa,
					 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)),
		false);
	close(s);
}

static void check_host_network(unsigned tcp_port, unsigned udp_port)
{
	struct sockaddr_in sa;
	int one = 1, s;

	if (tcp_port) {
		sa = loopback(tcp_port);
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0) {
			put("tcp_host", "%s", err_name(errno));
		} else {
			put_ret("tcp_host", connect(s, (struct sockaddr *)&sa, sizeof(sa)), false);
			close(s);
		}
		/* TCP Fast Open: the SYN carries data and skips connect(). */
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0) {
			put("tcp_fastopen", "%s", err_name(errno));
			put("tcp_fastopen_connect", "%s", err_name(errno));
		} else {
			put_ret("tcp_fastopen", sendto(s, "x", 1, MSG_FASTOPEN,
						       (struct sockaddr *)&sa, sizeof(sa)), false);
			close(s);
			s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			put_ret("tcp_fastopen_connect",
				s < 0 ? -1 : setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN_CONNECT,
							&one, sizeof(one)), false);
			if (s >= 0)
				close(s);
		}
	}
	if (udp_port) {
		sa = loopback(udp_port);
		s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (s < 0) {
			put("udp_host", "%s", err_name(errno));
		} else {
			put_ret("udp_host", sendto(s, "sbx-probe", 9, 0, (struct sockaddr *)&sa,
						   sizeof(sa)), false);
			close(s);
		}
	}
	put_ret("mptcp", socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_MPTCP), true);
	put_ret("ping", socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP), true);
	put_ret("raw", socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP), true);
	put_ret("af_alg", socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), true);
	put_ret("af_packet", socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), true);
	put_ret("af_vsock", socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), true);
}

/* The sandbox's own loopback: a listener and a client, both inside. */
static void check_inner_loopback(void)
{
	struct sockaddr_in sa = loopback(0);
	socklen_t len = sizeof(sa);
	char buf[8] = "";
	int l, c = -1, a = -1, u1 = -1, u2 = -1;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&sa, &len) != 0 ||
	    (c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(c, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    (a = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0 || write(c, "ping", 4) != 4 ||
	    read(a, buf, sizeof(buf)) != 4)
		put("loopback_tcp", "%s", err_name(errno));
	else
		put("loopback_tcp", "%s", memcmp(buf, "ping", 4) ? "WRONG" : "OK");
	if (l >= 0)
		close(l);
	if (c >= 0)
		close(c);
	if (a >= 0)
		close(a);

	sa = loopback(0);
	len = sizeof(sa);
	memset(buf, 0, sizeof(buf));
	u1 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (u1 < 0 || bind(u1, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(u1, (struct sockaddr *)&sa, &len) != 0 ||
	    (u2 = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0 ||
	    sendto(u2, "ping", 4, 0, (struct sockaddr *)&sa, sizeof(sa)) != 4 ||
	    recv(u1, buf, sizeof(buf), 0) != 4)
		put("loopback_udp", "%s", err_name(errno));
	else
		put("loopback_udp", "%s", memcmp(buf, "ping", 4) ? "WRONG" : "OK");
	if (u1 >= 0)
		close(u1);
	if (u2 >= 0)
		close(u2);
}

static void check_processes(pid_t outside)
{
	pid_t child;

	if (outside > 0) {
		put_ret("kill_outside", kill(outside, 0), false);
		put_ret("ptrace_outside", ptrace(PTRACE_ATTACH, outside, NULL, NULL), false);
	}
	/* Control: a process of the sandbox's own can be signalled. */
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	if (child < 0) {
		put("kill_inside", "fork:%s", err_name(errno));
	} else {
		put_ret("kill_inside", kill(child, 0), false);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	put("pid", "%d", (int)getpid());
	/* Writing its own /proc/self/mem rewrites code pages (of an allowed
	 * program too, under the gate): Landlock refuses the open, and
	 * without Landlock the read-only /proc does. Control: reading. */
	put_ret("proc_self_mem_write", open("/proc/self/mem", O_RDWR | O_CLOEXEC), true);
	put_ret("proc_self_mem_read", open("/proc/self/mem", O_RDONLY | O_CLOEXEC), true);
	put_ret("unshare_user", unshare(CLONE_NEWUSER), false);
	put_ret("unshare_net", unshare(CLONE_NEWNET), false);
}

static int do_native(void *arg)
{
	(void)arg;
	return syscall(SYS_getpid) > 0 ? 0 : errno;
}

/* The x32 ABI shares the x86_64 audit arch: only the nr bit tells. */
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

static int do_exec(void *arg)
{
	const char *prog = arg;
	char *argv[] = { (char *)prog, (char *)"-n", NULL };

	execve(prog, argv, self_env);
	return errno;
}

/* ld.so asked to load a program (it maps it; Landlock's EXECUTE is not
 * consulted for that, only the mount's noexec). The child's exit code is
 * ld.so's: 127 when it cannot map the program. */
static int do_exec_loader(void *arg)
{
	static const char *const loaders[] = {
		"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1",
	};
	const char *prog = arg;

	for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
		char *argv[] = { (char *)loaders[i], (char *)prog, (char *)"-n", NULL };
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (access(loaders[i], F_OK) != 0)
			continue;
		if (devnull >= 0)
			dup2(devnull, 2);
		execve(loaders[i], argv, self_env);
		return 200 + (errno & 0x3f);
	}
	return 250;
}

static int do_execveat_self(void *arg)
{
	char *argv[] = { (char *)self_path, (char *)"-n", NULL };
	int fd = open(self_path, O_RDONLY | O_CLOEXEC);

	(void)arg;
	if (fd < 0)
		return errno;
	syscall(SYS_execveat, fd, "", argv, self_env, AT_EMPTY_PATH);
	return errno;
}

static void check_arches(void)
{
	put_child("native_syscall", do_native, NULL);
	put_child("x32_syscall", do_x32, NULL);
	put_child("int80_syscall", do_int80, NULL);
}

static void check_tty(void)
{
	struct winsize ws;
	char c = 'x';
	int m, t = -1;

	/* A terminal of our own: the sandbox's private devpts. */
	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 && ptsname(m))
		t = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t < 0) {
		put("tty", "%s", err_name(errno));
		if (m >= 0)
			close(m);
		return;
	}
	put("tty", "OK");
	put_ret("tiocgwinsz", ioctl(t, TIOCGWINSZ, &ws), false);
	put_ret("tiocsti", ioctl(t, TIOCSTI, &c), false);
	/* ioctl(2) takes a 32-bit cmd: bit 32 must not slip past the filter. */
	put_ret("tiocsti_high", ioctl(t, (unsigned long)TIOCSTI | (1UL << 32), &c), false);
	put_ret("tioclinux", ioctl(t, TIOCLINUX, &c), false);
	close(t);
	close(m);
	/* On a terminal the kernel itself may answer EPERM (not our
	 * controlling tty) or EIO (legacy_tiocsti off). /dev/null tells the
	 * layers apart: the kernel says ENOTTY, only the filter says EPERM. */
	t = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (t < 0) {
		put("null", "%s", err_name(errno));
		return;
	}
	put_ret("null_tiocgwinsz", ioctl(t, TIOCGWINSZ, &ws), false);
	put_ret("null_tiocsti", ioctl(t, TIOCSTI, &c), false);
	put_ret("null_tiocsti_high", ioctl(t, (unsigned long)TIOCSTI | (1UL << 32), &c), false);
	put_ret("null_tioclinux", ioctl(t, TIOCLINUX, &c), false);
	close(t);
}

static void check_syscalls(const char *ws)
{
	/* Big zeroed buffers: the filter answers before the kernel reads. */
	static unsigned char zero[512];

	put_ret("io_uring_setup", syscall(SYS_io_uring_setup, 1, zero), true);
	put_ret("keyctl", syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0), false);
	put_ret("add_key", syscall(SYS_add_key, "user", "sbx", "x", 1, -3), false);
	put_ret("bpf", syscall(SYS_bpf, 0 /* MAP_CREATE */, zero, 128), true);
	put_ret("perf_event_open", syscall(SYS_perf_event_open, zero, 0, -1, -1, 0), true);
	put_ret("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC), true);
	put_ret("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, zero, O_RDONLY), true);
	if (ws)
		put_ret("mount", syscall(SYS_mount, "none", ws, "tmpfs", 0, NULL), false);
	put_ret("memfd_exec", syscall(SYS_memfd_create, "sbx-probe", MFD_CLOEXEC), true);
	put_ret("memfd_noexec_seal",
		syscall(SYS_memfd_create, "sbx-probe", MFD_CLOEXEC | MFD_NOEXEC_SEAL), true);
}

static void check_env(void)
{
	const char *home = getenv("HOME");

	put("env_ld_preload", "%s", getenv("LD_PRELOAD") ? "PRESENT" : "ABSENT");
	put("env_home", "%s", home ? home : "(unset)");
}

/* -c PATH: connect to the unix stream socket at PATH; -C PATH: make one
 * there first (listening), then connect. The exit status is 0 or the
 * errno of the step that failed (bind's + 100), for a test to assert. */
static int unix_try(const char *path, bool make)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int lfd = -1, fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return 99;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (make) {
		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
		    listen(lfd, 1) != 0)
			return 100 + errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	return connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 : errno;
}

int main(int argc, char **argv, char **envp)
{
	const char *out_path = NULL, *ws = NULL, *host_dir = NULL, *secret = NULL;
	const char *public = NULL, *unlisted = NULL, *abstract = NULL;
	unsigned tcp_port = 0, udp_port = 0;
	pid_t outside = 0;
	bool gated = false;
	char fds[256];
	int opt;

	/* First, before any open of ours: what the sandbox handed over. */
	list_fds(fds, sizeof(fds));
	self_path = argv[0];
	self_env = envp;
	while ((opt = getopt(argc, argv, "o:w:x:s:p:t:u:k:a:e:gnc:C:")) != -1) {
		switch (opt) {
		case 'c': return unix_try(optarg, false);
		case 'C': return unix_try(optarg, true);
		case 'o': out_path = optarg; break;
		case 'w': ws = optarg; break;
		case 'x': host_dir = optarg; break;
		case 's': secret = optarg; break;
		case 'p': public = optarg; break;
		case 't': tcp_port = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'u': udp_port = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'k': outside = (pid_t)strtol(optarg, NULL, 10); break;
		case 'a': abstract = optarg; break;
		case 'e': unlisted = optarg; break;
		case 'g': gated = true; break;
		case 'n': return 0;
		default: return 2;
		}
	}
	if (!out_path)
		return 2;
	inside_out = fopen(out_path, "we");
	if (!inside_out)
		return 3;
	put("fds", "%s", fds);
	put("uid", "%u", (unsigned)getuid());
	check_status();
	check_env();
	if (ws)
		check_write("write_inside", ws);
	if (host_dir)
		check_write("write_outside", host_dir);
	if (secret)
		check_read("read_secret", secret);
	if (public)
		check_read("read_public", public);
	check_host_network(tcp_port, udp_port);
	if (abstract)
		check_abstract(abstract);
	check_inner_loopback();
	check_processes(outside);
	check_arches();
	check_tty();
	check_syscalls(ws);
	put_child("exec_self", do_exec, (void *)self_path);
	if (unlisted) {
		put_child("exec_unlisted", do_exec, (void *)unlisted);
		put_exit("loader_unlisted", do_exec_loader, (void *)unlisted);
	}
	put_exit("loader_self", do_exec_loader, (void *)self_path);
	if (gated)
		put_child("execveat_fd", do_execveat_self, NULL);
	put("done", "OK");
	fclose(inside_out);
	return 0;
}
