/* SPDX-License-Identifier: BSD-3-Clause */
/* seccomp: kernel tests that prove each refusal next to a positive control. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/sched.h>

#include "testlib.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef TIOCSETD
#define TIOCSETD 0x5423
#define TIOCGETD 0x5424
#endif

/* Bit 32: the kernel drops it from an int or unsigned int argument. */
#define HI32 (1UL << 32)

/* Syscalls newer than the C library's headers. From 424 on x86_64 and
 * aarch64 share one table, and the tests below that use these are limited
 * to those two arches (NATIVE_AUDIT_ARCH). */
#ifndef SYS_lsm_get_self_attr
#define SYS_lsm_get_self_attr 459
#endif
#ifndef SYS_lsm_set_self_attr
#define SYS_lsm_set_self_attr 460
#endif
#ifndef SYS_lsm_list_modules
#define SYS_lsm_list_modules 461
#endif
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#ifndef SYS_file_getattr
#define SYS_file_getattr 468
#endif
#ifndef SYS_listns
#define SYS_listns 470
#endif

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* The notes of the last child_apply in this process. */
static char child_notes[256];

/* In the child: no_new_privs, then the filter. */
static int child_apply(bool network_denied, bool inet_denied, bool gated)
{
	struct sbx_seccomp_opts o = {
		.network_denied = network_denied,
		.inet_denied = inet_denied,
		.gated = gated,
	};
	struct sbx_error err = { 0 };
	char *notes = child_notes;
	int r;

	o.notes = notes;
	o.notes_size = sizeof(child_notes);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	r = sbx_seccomp_apply(&o, &err);
	if (r != 0)
		fprintf(stderr, "sbx_seccomp_apply: %d %s\n", r, err.msg);
	else if (notes[0])
		fprintf(stderr, "[ note     ] %s\n", notes);
	return r;
}

static void expect_child_ok(int (*fn)(void *), void *arg)
{
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, fn, arg)), 0);
}

#ifdef NATIVE_AUDIT_ARCH
/*
 * The marker: a filter loaded before sbx's that answers EDOM for the given
 * syscall numbers and allows the rest. Over stacked filters the kernel takes
 * the most severe action, and between equally severe ones the errno of the
 * newest filter (Documentation/userspace-api/seccomp_filter.rst, "Return
 * values"). Under sbx's filter a marked call therefore fails with sbx's errno
 * if sbx refused it and with EDOM if sbx let it through, whatever the kernel
 * would have answered (chroot or sethostname say EPERM without a capability
 * anyway, a number past the last syscall says ENOSYS anyway).
 */
static int load_marker(const long *nrs, size_t n)
{
	struct sock_filter insns[64];
	struct sock_fprog prog = { .filter = insns };
	size_t k = 0;

	if (n + 6 > ARRAY_SIZE(insns))
		return -1;
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						  offsetof(struct seccomp_data, arch));
	insns[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						  NATIVE_AUDIT_ARCH, 1, 0);
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						  offsetof(struct seccomp_data, nr));
	/* JEQ nrs[i]: jump over the rest and the ALLOW to the EDOM */
	for (size_t i = 0; i < n; i++)
		insns[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							  (uint32_t)nrs[i],
							  (uint8_t)(n - i), 0);
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	insns[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						  SECCOMP_RET_ERRNO | EDOM);
	prog.len = (unsigned short)k;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}
#endif

static int child_denied_syscalls(void *arg)
{
	char buf[8], rbuf[8];
	struct iovec local = { buf, sizeof(buf) }, remote = { rbuf, sizeof(rbuf) };
	int status;
	pid_t pid;

	(void)arg;
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_ERRNO(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_add_key, "user", "sbx", "x", 1, -3), EPERM);
	CHILD_ERRNO(syscall(SYS_request_key, "user", "sbx", NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	/* UFFD_USER_MODE_ONLY: allowed unprivileged, so EPERM is the filter */
	CHILD_ERRNO(syscall(SYS_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */), EPERM);
	CHILD_ERRNO(syscall(SYS_io_uring_setup, 1, NULL), EPERM);
	CHILD_ERRNO(syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0), EPERM);
	CHILD_ERRNO(ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM);
	/* our own memory: allowed without the filter */
	CHILD_ERRNO(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), EPERM);
	CHILD_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	CHILD_ERRNO(syscall(SYS_setns, 0, 0), EPERM);
	/* mount and fsopen are proved in test_mount_api_userns (EPERM is
	 * also their unprivileged answer); open_tree works unprivileged */
	CHILD_ERRNO(syscall(SYS_open_tree, AT_FDCWD, "/", 0), EPERM);
	/* syslog is EPERM without CAP_SYSLOG too (dmesg_restrict): this only
	 * shows it stays refused */
	CHILD_ERRNO(syscall(SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, buf, 0), EPERM);
	/* personality: the query and PER_LINUX pass, anything else does not */
	CHILD_CHECK(syscall(SYS_personality, 0xffffffffUL) == 0);
	CHILD_CHECK(syscall(SYS_personality, 0UL) == 0);
	CHILD_ERRNO(syscall(SYS_personality, 0x0040000UL /* ADDR_NO_RANDOMIZE */), EPERM);
	CHILD_ERRNO(syscall(SYS_personality, 0xfffffffeUL), EPERM);
	CHILD_ERRNO(syscall(SYS_personality, 0x1ffffffffUL), EPERM);

	/* clone with a namespace flag: EPERM; plain fork still works */
	errno = 0;
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0)
		_exit(0);
	CHILD_CHECK(pid == -1 && errno == EPERM);
	errno = 0;
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0)
		_exit(0);
	CHILD_CHECK(pid == -1 && errno == EPERM);
	pid = fork();
	if (pid == 0)
		_exit(7);
	CHILD_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	CHILD_CHECK(syscall(SYS_getpid) == getpid());
	return 0;
}

static void test_denied_syscalls(void **state)
{
	(void)state;
	expect_child_ok(child_denied_syscalls, NULL);
}

/* In a user+mount namespace the child may mount, so EPERM is the filter's. */
static int child_mount_api(void *arg)
{
	int fd;

	(void)arg;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		return 77;
	CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	CHILD_CHECK(mount("sbx", "/tmp", "tmpfs", 0, "size=64k") == 0);	/* control */
	CHILD_CHECK((fd = (int)syscall(SYS_fsopen, "tmpfs", 0)) >= 0);	/* control */
	close(fd);
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_ERRNO(mount("sbx", "/tmp", "tmpfs", 0, "size=64k"), EPERM);
	CHILD_ERRNO(mount(NULL, "/tmp", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), EPERM);
	CHILD_ERRNO(umount2("/tmp", MNT_DETACH), EPERM);
	CHILD_ERRNO(syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	CHILD_ERRNO(syscall(SYS_fspick, AT_FDCWD, "/tmp", 0), EPERM);
	CHILD_ERRNO(syscall(SYS_pivot_root, "/tmp", "/tmp"), EPERM);
	return 0;
}

static void test_mount_api_userns(void **state)
{
	int code;

	(void)state;
	code = sbx_test_status_code(sbx_test_fork(true, child_mount_api, NULL));
	if (code == 77) {
		print_message("[  SKIP    ] unprivileged user namespaces unavailable\n");
		skip();
	}
	assert_int_equal(code, 0);
}

static int child_clone3(void *arg)
{
	struct clone_args ca = { .flags = 0, .exit_signal = SIGCHLD };
	long pid;

	(void)arg;
	CHILD_CHECK(child_apply(false, false, false) == 0);
	/* even a harmless clone3 is ENOSYS: glibc then falls back to clone */
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0);
	CHILD_CHECK(pid == -1 && errno == ENOSYS);
	ca.flags = CLONE_NEWUSER;
	CHILD_ERRNO(syscall(SYS_clone3, &ca, sizeof(ca)), ENOSYS);
	return 0;
}

static void test_clone3(void **state)
{
	(void)state;
	expect_child_ok(child_clone3, NULL);
}

static int child_tiocsti(void *arg)
{
	struct winsize ws;
	char c = 'x';
	int m, t, ldisc = -1, n_tty = 0 /* N_TTY */;

	(void)arg;
	CHILD_CHECK((m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0);
	CHILD_CHECK(grantpt(m) == 0 && unlockpt(m) == 0);
	/* Make the pty our controlling terminal: without the filter TIOCSTI
	 * on it then works (legacy_tiocsti=1) instead of failing with EPERM
	 * for a foreign tty, so EPERM below is the filter's. */
	CHILD_CHECK(setsid() > 0);
	signal(SIGHUP, SIG_IGN);	/* closing the master hangs up our session */
	CHILD_CHECK((t = open(ptsname(m), O_RDWR | O_CLOEXEC)) >= 0);
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_ERRNO(ioctl(t, TIOCSTI, &c), EPERM);
	/* the kernel truncates cmd to 32 bits; the filter's compare is masked */
	CHILD_ERRNO(syscall(SYS_ioctl, t, (unsigned long)TIOCSTI | (1UL << 32), &c), EPERM);
	CHILD_ERRNO(ioctl(t, TIOCLINUX, &c), EPERM);
	CHILD_ERRNO(syscall(SYS_ioctl, t, (unsigned long)TIOCLINUX | (1UL << 32), &c), EPERM);
	/* Line discipline: reading it works, setting it (even to the N_TTY
	 * it already has, which the kernel grants without a capability) is
	 * refused, with bit 32 in cmd too. */
	CHILD_CHECK(ioctl(t, TIOCGETD, &ldisc) == 0 && ldisc == n_tty);
	CHILD_ERRNO(ioctl(t, TIOCSETD, &n_tty), EPERM);
	CHILD_ERRNO(syscall(SYS_ioctl, t, (unsigned long)TIOCSETD | HI32, &n_tty), EPERM);
	CHILD_CHECK(ioctl(t, TIOCGWINSZ, &ws) == 0);
	CHILD_CHECK(ioctl(m, TIOCGWINSZ, &ws) == 0);
	close(t);
	close(m);
	return 0;
}

static void test_tiocsti(void **state)
{
	(void)state;
	expect_child_ok(child_tiocsti, NULL);
}

static int child_socket_families(void *arg)
{
	int s;

	(void)arg;
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_ERRNO(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_BLUETOOTH, SOCK_STREAM | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_KEY, SOCK_RAW | SOCK_CLOEXEC, 2), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_MAX + 3, SOCK_STREAM, 0), EAFNOSUPPORT);
	/* high bits the kernel would drop (int domain) do not sneak past */
	CHILD_ERRNO(syscall(SYS_socket, (unsigned long)AF_VSOCK | (1UL << 32),
			    SOCK_STREAM, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT),
		    EAFNOSUPPORT);
	CHILD_CHECK((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	close(s);
	CHILD_CHECK((s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) >= 0);
	close(s);
	CHILD_CHECK((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	close(s);
	CHILD_CHECK((s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	close(s);
	return 0;
}

static void test_socket_families(void **state)
{
	(void)state;
	expect_child_ok(child_socket_families, NULL);
}

static int child_network_denied(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9) };
	int s, one = 1;

	(void)arg;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHILD_CHECK(child_apply(true, false, false) == 0);
	CHILD_ERRNO(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_MPTCP), EPERM);
	CHILD_ERRNO(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_MPTCP), EPERM);
	CHILD_CHECK((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_ERRNO(sendto(s, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&sa, sizeof(sa)),
		    EPERM);
	CHILD_ERRNO(setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof(one)),
		    EPERM);
	CHILD_ERRNO(setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN, &one, sizeof(one)), EPERM);
	CHILD_CHECK(setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0);
	close(s);
	return 0;
}

static void test_network_denied(void **state)
{
	(void)state;
	expect_child_ok(child_network_denied, NULL);
}

/* int arguments with bit 32 set: the kernel reads the low 32 bits, so must
 * the filter. Raw syscalls, since the libc wrappers take an int. */
static int child_int_args(void *arg)
{
	int s, one = 1;

	(void)arg;
	CHILD_CHECK(child_apply(true, false, false) == 0);
	/* controls: plain TCP works, and the kernel does drop bit 32 of an
	 * int (level and optname below still mean IPPROTO_TCP, TCP_NODELAY) */
	CHILD_CHECK((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_CHECK(syscall(SYS_setsockopt, s, HI32 | IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one)) == 0);
	CHILD_CHECK(syscall(SYS_setsockopt, s, IPPROTO_TCP, HI32 | TCP_NODELAY, &one,
			    sizeof(one)) == 0);
	CHILD_ERRNO(syscall(SYS_setsockopt, s, HI32 | IPPROTO_TCP, TCP_FASTOPEN, &one,
			    sizeof(one)), EPERM);
	CHILD_ERRNO(syscall(SYS_setsockopt, s, IPPROTO_TCP, HI32 | TCP_FASTOPEN, &one,
			    sizeof(one)), EPERM);
	CHILD_ERRNO(syscall(SYS_setsockopt, s, IPPROTO_TCP, HI32 | TCP_FASTOPEN_CONNECT,
			    &one, sizeof(one)), EPERM);
	close(s);
	CHILD_ERRNO(syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
			    HI32 | IPPROTO_MPTCP), EPERM);
	CHILD_ERRNO(syscall(SYS_socket, AF_INET6, SOCK_STREAM | SOCK_CLOEXEC,
			    HI32 | IPPROTO_MPTCP), EPERM);
	CHILD_ERRNO(syscall(SYS_socket, HI32 | AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0),
		    EAFNOSUPPORT);
	CHILD_ERRNO(syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC,
			    HI32 | NETLINK_AUDIT), EAFNOSUPPORT);
	return 0;
}

static void test_int_args(void **state)
{
	(void)state;
	expect_child_ok(child_int_args, NULL);
}

static int child_inet_denied(void *arg)
{
	int s;

	(void)arg;
	CHILD_CHECK(child_apply(true, true, false) == 0);
	CHILD_ERRNO(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	CHILD_ERRNO(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_MPTCP), EAFNOSUPPORT);
	CHILD_CHECK((s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	close(s);
	return 0;
}

static void test_inet_denied(void **state)
{
	(void)state;
	expect_child_ok(child_inet_denied, NULL);
}

static int child_gated(void *arg)
{
	bool gated = arg != NULL;
	char *const argv[] = { "false", NULL };
	char *const envp[] = { NULL };
	int fd, exe;

	/* /bin/false: if execveat ever got through, the child fails */
	CHILD_CHECK((exe = open("/bin/false", O_RDONLY | O_CLOEXEC)) >= 0);
	CHILD_CHECK(child_apply(false, false, gated) == 0);
	if (!gated) {
		/* control: the same calls without the gate */
		CHILD_CHECK((fd = memfd_create("sbx", MFD_CLOEXEC)) >= 0);
		close(fd);
		return 0;
	}
	CHILD_ERRNO(memfd_create("sbx", 0), EPERM);
	CHILD_ERRNO(memfd_create("sbx", MFD_CLOEXEC | MFD_ALLOW_SEALING), EPERM);
	/* Sealed no-exec too: ld.so maps a sealed memfd PROT_EXEC all the
	 * same (`ld.so /proc/self/fd/N`), so under the gate there is none. */
	CHILD_ERRNO(memfd_create("sbx", MFD_CLOEXEC | MFD_NOEXEC_SEAL), EPERM);
	CHILD_ERRNO(syscall(SYS_memfd_secret, 0), EPERM);
	(void)fd;
	/* fd execution: refused before the kernel looks at the fd */
	CHILD_ERRNO(syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH), EPERM);
	return 0;
}

static void test_gated(void **state)
{
	(void)state;
	expect_child_ok(child_gated, NULL);		/* control */
	expect_child_ok(child_gated, (void *)1);
}

/*
 * W^X under the gate: what the rules refuse, next to what every dynamic
 * program does (a private executable mapping of a file, as ld.so makes,
 * and anonymous memory read-write). arg NULL: the rules beside MDWE;
 * else the rules without it (Linux < 6.3). MDWE itself is not set here:
 * what is left to it must pass the filter.
 */
static int child_wx(void *arg)
{
	struct sbx_seccomp_opts o = { .gated = true, .wx = true, .wx_no_mdwe = arg != NULL };
	struct sbx_error err = { 0 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *m, *f;
	int fd;

	CHILD_CHECK((fd = open("/bin/true", O_RDONLY | O_CLOEXEC)) >= 0);
	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	if (sbx_seccomp_apply(&o, &err) != 0) {
		fprintf(stderr, "sbx_seccomp_apply: %s\n", err.msg);
		return 1;
	}
	/* controls */
	CHILD_CHECK((m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0)) != MAP_FAILED);
	CHILD_CHECK((f = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_DENYWRITE,
			      fd, 0)) != MAP_FAILED);
	CHILD_CHECK(mprotect(m, page, PROT_READ) == 0);
	CHILD_CHECK(mprotect(m, page, PROT_READ | PROT_WRITE) == 0);
	CHILD_ERRNO(shmat(-1, NULL, SHM_RDONLY), EINVAL);	/* the kernel's own answer */
	/* anonymous or shared memory mapped executable */
	CHILD_ERRNO(mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
		    EPERM);
	CHILD_ERRNO(mmap(NULL, page, PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), EPERM);
	CHILD_ERRNO(mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), EPERM);
	CHILD_ERRNO(mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS, -1, 0),
		    EPERM);
	CHILD_ERRNO(mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0), EPERM);
	CHILD_ERRNO(mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_SHARED_VALIDATE, fd, 0), EPERM);
	/* high bits the kernel keeps (unsigned long) change nothing */
	CHILD_ERRNO(syscall(SYS_mmap, NULL, page, HI32 | PROT_READ | PROT_EXEC,
			    HI32 | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), EPERM);
	CHILD_ERRNO(shmat(-1, NULL, SHM_EXEC), EPERM);
	CHILD_ERRNO(syscall(SYS_shmat, -1, NULL, HI32 | SHM_EXEC), EPERM);
	if (!o.wx_no_mdwe) {
		/* left to MDWE, which refuses them where it is set */
		CHILD_CHECK(mprotect(m, page, PROT_READ | PROT_EXEC) == 0);
		CHILD_CHECK(munmap(m, page) == 0);
		CHILD_CHECK((m = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE,
				      fd, 0)) != MAP_FAILED);
	} else {
		CHILD_ERRNO(mprotect(m, page, PROT_READ | PROT_EXEC), EPERM);
		CHILD_ERRNO(mprotect(m, page, PROT_EXEC), EPERM);
		CHILD_ERRNO(syscall(SYS_pkey_mprotect, m, page, PROT_READ | PROT_EXEC, -1), EPERM);
		/* the price: BPF cannot tell file from anonymous memory */
		CHILD_ERRNO(mprotect(f, page, PROT_READ | PROT_EXEC), EPERM);
		CHILD_ERRNO(mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE, fd, 0),
			    EPERM);
		CHILD_ERRNO(mmap(NULL, page, PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0), EPERM);
	}
	munmap(m, page);
	munmap(f, page);
	close(fd);
	return 0;
}

static void test_wx(void **state)
{
	(void)state;
	expect_child_ok(child_wx, NULL);
	expect_child_ok(child_wx, (void *)1);
}

static long x32_getpid(void)
{
	long ret;

	/* x32 ABI: getpid (39) with __X32_SYSCALL_BIT through `syscall` */
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(39L | 0x40000000L)
			 : "rcx", "r11", "memory");
	return ret;
}

static long i386_getpid(void)
{
	long ret;

	/* i386 ABI: getpid is 20 through int 0x80 */
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "0"(20L)
			 : "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "memory");
	return ret;
}

static int child_x32(void *arg)
{
	bool filtered = arg != NULL;

	if (filtered && child_apply(false, false, false) != 0)
		return 1;
	(void)x32_getpid();
	return 0;
}

static int child_i386(void *arg)
{
	bool filtered = arg != NULL;
	long r;

	if (filtered && child_apply(false, false, false) != 0)
		return 1;
	r = i386_getpid();
	return r == getpid() ? 0 : 2;
}

static void test_foreign_arch_killed(void **state)
{
	int st;

	(void)state;
#if !defined(__x86_64__)
	print_message("[  SKIP    ] x32/i386 checks are x86_64-only\n");
	skip();
#else
	/* control: unfiltered, an x32 call returns (ENOSYS without x32 support) */
	st = sbx_test_fork(true, child_x32, NULL);
	assert_int_equal(sbx_test_status_code(st), 0);
	st = sbx_test_fork(true, child_x32, (void *)1);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);

	/* The probe: unfiltered, int 0x80 answers getpid, or there is no
	 * 32-bit entry here at all (ia32 emulation off, or a hypervisor
	 * without one: the call faults with SIGSEGV before any syscall). */
	st = sbx_test_fork(true, child_i386, NULL);
	if (sbx_test_status_code(st) != 0) {
		print_message("[  SKIP    ] int 0x80 has no entry here (unfiltered: status %d)\n",
			      sbx_test_status_code(st));
		assert_int_equal(sbx_test_int80_native(), 0);
		skip();
	}
	st = sbx_test_fork(true, child_i386, (void *)1);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
#endif
}

static int child_listener(void *arg)
{
	struct sock_filter allow[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 1, .filter = allow };

	(void)arg;
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_ERRNO(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog), EPERM);
	/* op is an unsigned int: bit 32 changes nothing for the kernel */
	CHILD_ERRNO(syscall(SYS_seccomp, HI32 | SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog), EPERM);
	/* a plain nested filter is fine (it can only narrow), with bit 32
	 * in op too, which shows the kernel ignoring it */
	CHILD_CHECK(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0);
	CHILD_CHECK(syscall(SYS_seccomp, HI32 | SECCOMP_SET_MODE_FILTER, 0, &prog) == 0);
	return 0;
}

static void test_new_listener(void **state)
{
	(void)state;
	expect_child_ok(child_listener, NULL);
}

#ifdef NATIVE_AUDIT_ARCH
/* Refused since the comparison with moby's default profile; each under the
 * marker, so EPERM is the filter's and not the kernel's own answer. */
static const long moby_denied[] = {
#ifdef __x86_64__
	SYS_modify_ldt,
#endif
	SYS_kcmp, SYS_get_mempolicy, SYS_set_mempolicy, SYS_mbind,
	SYS_migrate_pages, SYS_move_pages, SYS_set_mempolicy_home_node,
	SYS_quotactl_fd, SYS_fanotify_init, SYS_open_tree_attr,
	SYS_lsm_get_self_attr, SYS_lsm_set_self_attr, SYS_lsm_list_modules,
	SYS_listns, SYS_chroot, SYS_settimeofday, SYS_clock_settime,
	SYS_sethostname, SYS_setdomainname,
#ifdef SYS_sysfs
	SYS_sysfs,
#endif
#ifdef SYS_ustat
	SYS_ustat,
#endif
	SYS_getppid,	/* control: allowed, so the marker answers */
};

static int child_moby_denied(void *arg)
{
	char buf[64] = { 0 };
	unsigned long nodemask = 1;
	struct timespec ts = { 0 };
	size_t size = sizeof(buf);
	void *page;
	int fd;

	(void)arg;
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(page != MAP_FAILED);
	CHILD_CHECK((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0);
	CHILD_CHECK(load_marker(moby_denied, ARRAY_SIZE(moby_denied)) == 0);
	CHILD_CHECK(child_apply(false, false, false) == 0);
	/* controls: an allowed marked call gets the marker's EDOM, an
	 * unmarked one works */
	CHILD_ERRNO(syscall(SYS_getppid), EDOM);
	CHILD_CHECK(syscall(SYS_getpid) == getpid());
#ifdef __x86_64__
	CHILD_ERRNO(syscall(SYS_modify_ldt, 0 /* read */, buf, sizeof(buf)), EPERM);
#endif
	CHILD_ERRNO(syscall(SYS_kcmp, getpid(), getpid(), 0 /* KCMP_FILE */, 0, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_mbind, page, 4096, 0 /* MPOL_DEFAULT */, NULL, 0, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_migrate_pages, 0, 8 * sizeof(nodemask), &nodemask,
			    &nodemask), EPERM);
	CHILD_ERRNO(syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_set_mempolicy_home_node, page, 4096, 0, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_quotactl_fd, fd, 0x800004 /* Q_GETFMT */, 0, buf), EPERM);
	CHILD_ERRNO(syscall(SYS_fanotify_init, 0x200 /* FAN_REPORT_FID */, O_RDONLY), EPERM);
	CHILD_ERRNO(syscall(SYS_open_tree_attr, AT_FDCWD, "/", 0, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_lsm_get_self_attr, 100 /* LSM_ATTR_CURRENT */, buf,
			    &size, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_lsm_set_self_attr, 100, buf, sizeof(buf), 0), EPERM);
	CHILD_ERRNO(syscall(SYS_lsm_list_modules, buf, &size, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_listns, NULL, NULL, 0, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_chroot, "/"), EPERM);
	CHILD_ERRNO(syscall(SYS_settimeofday, NULL, NULL), EPERM);
	CHILD_ERRNO(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), EPERM);
	CHILD_ERRNO(syscall(SYS_sethostname, "sbx", 3), EPERM);
	CHILD_ERRNO(syscall(SYS_setdomainname, "sbx", 3), EPERM);
#ifdef SYS_sysfs
	CHILD_ERRNO(syscall(SYS_sysfs, 3 /* number of fs types */), EPERM);
#endif
#ifdef SYS_ustat
	CHILD_ERRNO(syscall(SYS_ustat, 0, buf), EPERM);
#endif
	close(fd);
	return 0;
}
#endif

/* Limits and priority of other processes: agent-shell's outer process
 * shares the uid on paths without a pid namespace, and a limit of 0 open
 * files kept it from ending the session's leftovers. */
static int child_other_processes(void *arg)
{
	struct rlimit rl;
	pid_t parent = getppid();
	int nice_now;

	(void)arg;
	CHILD_CHECK(child_apply(false, false, false) == 0);
	/* controls: the caller's own */
	CHILD_CHECK(prlimit(0, RLIMIT_NOFILE, NULL, &rl) == 0);
	CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, 0);
	CHILD_CHECK(errno == 0);
	CHILD_CHECK(setpriority(PRIO_PROCESS, 0, nice_now) == 0);
	/* refused: anyone else's, and the caller named by its pid too */
	CHILD_ERRNO(prlimit(parent, RLIMIT_NOFILE, NULL, &rl), EPERM);
	CHILD_ERRNO(prlimit(parent, RLIMIT_NOFILE, &rl, NULL), EPERM);
	CHILD_ERRNO(prlimit(getpid(), RLIMIT_NOFILE, NULL, &rl), EPERM);
	CHILD_ERRNO(syscall(SYS_prlimit64, 1UL << 32, RLIMIT_NOFILE, NULL, &rl), EPERM);
	CHILD_ERRNO(setpriority(PRIO_USER, 0, nice_now), EPERM);
	CHILD_ERRNO(setpriority(PRIO_PGRP, 0, nice_now), EPERM);
	CHILD_ERRNO(setpriority(PRIO_PROCESS, (id_t)parent, nice_now), EPERM);
	return 0;
}

static int host_pids_checks(const struct sbx_seccomp_opts *o, pid_t other, cpu_set_t *cpus, int prio)
{
	struct sched_param sp = { 0 };

	/* controls: the caller's own */
	CHILD_CHECK(sched_setaffinity(0, sizeof(*cpus), cpus) == 0);
	CHILD_CHECK(sched_setscheduler(0, SCHED_OTHER, &sp) == 0);
	CHILD_CHECK(sched_setparam(0, &sp) == 0);
	CHILD_CHECK(syscall(SYS_ioprio_set, 1, 0, prio) == 0);
	if (!o->host_pids) {
		/* In a pid namespace: allowed (the kernel decides). */
		CHILD_CHECK(sched_setaffinity(other, sizeof(*cpus), cpus) == 0);
		CHILD_CHECK(syscall(SYS_ioprio_set, 1, other, prio) == 0);
		return 0;
	}
	CHILD_ERRNO(sched_setaffinity(other, sizeof(*cpus), cpus), EPERM);
	CHILD_ERRNO(sched_setscheduler(other, SCHED_OTHER, &sp), EPERM);
	CHILD_ERRNO(sched_setparam(other, &sp), EPERM);
	CHILD_ERRNO(syscall(SYS_sched_setattr, other, NULL, 0), EPERM);
	CHILD_ERRNO(syscall(SYS_ioprio_set, 1, other, prio), EPERM);
	CHILD_ERRNO(syscall(SYS_ioprio_set, 3 /* IOPRIO_WHO_USER */, getuid(), prio), EPERM);
	CHILD_ERRNO(syscall(SYS_ioprio_set, 2 /* IOPRIO_WHO_PGRP */, 0, prio), EPERM);
	return 0;
}

/* Without a pid namespace (host_pids), scheduling and I/O priority of
 * other processes too: SCHED_IDLE on the outer process delayed its
 * session_time kill by minutes. */
static int child_host_pids(void *arg)
{
	struct sbx_seccomp_opts o = { .host_pids = *(const bool *)arg };
	struct sbx_error err = { 0 };
	cpu_set_t cpus;
	pid_t other;
	int prio, r;

	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHILD_CHECK(sched_getaffinity(0, sizeof(cpus), &cpus) == 0);
	prio = (int)syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	CHILD_CHECK(prio >= 0);
	CHILD_CHECK(sbx_seccomp_apply(&o, &err) == 0);
	/* Another process of the same uid (the kernel alone allows it). */
	other = fork();
	if (other == 0) {
		pause();
		_exit(0);
	}
	CHILD_CHECK(other > 0);
	r = host_pids_checks(&o, other, &cpus, prio);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	return r;
}

static void test_other_processes(void **state)
{
	static const bool no = false, yes = true;

	(void)state;
	expect_child_ok(child_other_processes, NULL);
	expect_child_ok(child_host_pids, (void *)&no);
	expect_child_ok(child_host_pids, (void *)&yes);
}

static void test_moby_denied(void **state)
{
	(void)state;
#ifndef NATIVE_AUDIT_ARCH
	print_message("[  SKIP    ] the marker filter is written for x86_64 and aarch64\n");
	skip();
#else
	expect_child_ok(child_moby_denied, NULL);
#endif
}

#ifdef NATIVE_AUDIT_ARCH
/* Syscall numbers past the cutoff answer ENOSYS from the filter itself
 * (without it they reach the marker: EDOM). */
static int child_cutoff(void *arg)
{
	const long marked[] = {
		SBX_SECCOMP_NR_CUTOFF + 1, 1000,
#ifdef __x86_64__
		337, 400, 423,		/* unassigned x86-only range */
#endif
		SYS_file_getattr,	/* control: allowed, below the cutoff */
	};
	struct { uint64_t a[4]; } fattr;
	char *p;

	(void)arg;
	p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(p != MAP_FAILED);
	/* probe: does this kernel have mseal (6.10), the positive control? */
	if (syscall(SYS_mseal, p, 4096, 0) != 0)
		return 77;
	CHILD_CHECK(load_marker(marked, ARRAY_SIZE(marked)) == 0);
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_ERRNO(syscall(SBX_SECCOMP_NR_CUTOFF + 1, 0, 0, 0, 0, 0), ENOSYS);
	CHILD_ERRNO(syscall(1000, 0, 0, 0, 0, 0), ENOSYS);
#ifdef __x86_64__
	CHILD_ERRNO(syscall(337, 0, 0, 0, 0, 0), ENOSYS);
	CHILD_ERRNO(syscall(400, 0, 0, 0, 0, 0), ENOSYS);
	CHILD_ERRNO(syscall(423, 0, 0, 0, 0, 0), ENOSYS);
#endif
	/* controls: file_getattr (468) reaches the marker, so the cutoff
	 * lies above it; mseal (462, newer than this libseccomp) works */
	CHILD_ERRNO(syscall(SYS_file_getattr, AT_FDCWD, ".", &fattr, sizeof(fattr), 0), EDOM);
	CHILD_CHECK(syscall(SYS_mseal, p + 4096, 4096, 0) == 0);
	return 0;
}
#endif

static void test_cutoff(void **state)
{
	(void)state;
#ifndef NATIVE_AUDIT_ARCH
	print_message("[  SKIP    ] the cutoff filter exists for x86_64 and aarch64 only\n");
	skip();
#else
	int code = sbx_test_status_code(sbx_test_fork(true, child_cutoff, NULL));

	if (code == 77) {
		print_message("[  SKIP    ] kernel without mseal (6.10)\n");
		skip();
	}
	assert_int_equal(code, 0);
#endif
}

static int child_no_skipped(void *arg)
{
	(void)arg;
	CHILD_CHECK(child_apply(true, true, true) == 0);
	if (child_notes[0])
		fprintf(stderr, "skipped: %s\n", child_notes);
	CHILD_CHECK(child_notes[0] == '\0');
	return 0;
}

/* On x86_64 every refused name resolves (libseccomp or the late table):
 * nothing is skipped with a note. */
static void test_no_rule_skipped(void **state)
{
	(void)state;
#ifndef __x86_64__
	print_message("[  SKIP    ] aarch64 lacks x86-only names (modify_ldt, iopl)\n");
	skip();
#else
	expect_child_ok(child_no_skipped, NULL);
#endif
}

static int child_status(void *arg)
{
	char *buf = NULL;
	int ok;

	(void)arg;
	CHILD_CHECK(child_apply(false, false, false) == 0);
	CHILD_CHECK(sbx_read_file("/proc/self/status", 1 << 16, &buf, NULL, NULL) == 0);
	ok = strstr(buf, "\nSeccomp:\t2\n") && strstr(buf, "\nNoNewPrivs:\t1\n");
	if (!ok)
		fprintf(stderr, "%s", buf);
	free(buf);
	return ok ? 0 : 1;
}

/*
 * The filter's shape, on the BPF the kernel gets for every combination of
 * options a profile can produce (sbx_seccomp_prepare, nothing loaded).
 *
 * 1. The kernel (5.11+) answers a syscall from a per-arch bitmap, without
 *    running the filter, when emulating the filter for that number with
 *    only arch and nr known reaches RET ALLOW (seccomp_cache_prepare and
 *    seccomp_is_const_allow in kernel/seccomp.c: loads of other fields,
 *    ALU ops but AND, and jumps but JA/JEQ/JGE/JGT/JSET with K end the
 *    emulation uncached). This kernel has no CONFIG_SECCOMP_CACHE_DEBUG
 *    (/proc/<pid>/seccomp_cache), so the rule is emulated here. Every
 *    number the filter allows without reading an argument must be cached,
 *    the hot ones named.
 *
 * 2. Argument-checked syscalls are reached in a few instructions. The
 *    libseccomp default list sorted them last: ioctl(TCGETS) ran 81-93
 *    instructions (391-497 in all), socket 131-170, personality 268-282;
 *    libseccomp's binary tree behind a raw cutoff head, 17-21 before the
 *    first argument load, 24-27 for ioctl(TCGETS). The emitted program
 *    (lib/seccomp.c): arch and number checks (4 for a number up to 336,
 *    7 from 424 on), a tree over the ~80 numbers with rules (7 levels, a
 *    JGE each and a JA above a subtree longer than 255) and the leaf's
 *    test: bounded at 16 before the first argument load, measured 11-13. ioctl's three TIOC* compares add 7 (loads,
 *    compares, the RET): at most 22, measured 18.
 */
#define SHAPE_REACH_MAX 16
#define SHAPE_IOCTL_MAX 22
#define SHAPE_NONE UINT32_MAX

struct bpf_walk {
	uint32_t ret;		/* the RET value, or SHAPE_NONE for a bad program */
	unsigned int steps;	/* instructions executed */
	unsigned int first_arg;	/* steps before the first non arch/nr load */
	bool const_only;	/* the kernel's cache emulation would get to ret */
};

static void bpf_walk(const struct sock_filter *f, size_t n, const struct seccomp_data *d,
		     struct bpf_walk *w)
{
	uint32_t a = 0;

	w->ret = SHAPE_NONE;
	w->steps = 0;
	w->first_arg = SHAPE_NONE;
	w->const_only = true;
	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		bool res;

		w->steps++;
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (i->k > sizeof(*d) - 4 || i->k % 4)
				return;
			if (i->k != offsetof(struct seccomp_data, nr) &&
			    i->k != offsetof(struct seccomp_data, arch)) {
				w->const_only = false;
				if (w->first_arg == SHAPE_NONE)
					w->first_arg = w->steps - 1;
			}
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_RET | BPF_K:
			w->ret = i->k;
			return;
		case BPF_JMP | BPF_JA:
			pc += i->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGT | BPF_K:
		case BPF_JMP | BPF_JSET | BPF_K:
			switch (BPF_OP(i->code)) {
			case BPF_JEQ: res = a == i->k; break;
			case BPF_JGE: res = a >= i->k; break;
			case BPF_JGT: res = a > i->k; break;
			default: res = (a & i->k) != 0; break;
			}
			pc += res ? i->jt : i->jf;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= i->k;
			break;
		default:
			/* anything else stops the kernel's emulation; this
			 * walker knows no more either */
			return;
		}
	}
}

static const char *shape_opts_str(const struct sbx_seccomp_opts *o, char *buf, size_t size)
{
	snprintf(buf, size, "network_denied %d inet_denied %d gated %d unix_notify %d "
		 "unix_bind_notify %d host_pids %d wx %d wx_no_mdwe %d", o->network_denied,
		 o->inet_denied, o->gated, o->unix_notify, o->unix_bind_notify, o->host_pids,
		 o->wx, o->wx_no_mdwe);
	return buf;
}

/* The options a profile can produce, one bit each; false for a
 * combination none produces (W^X comes only with the gate, wx_no_mdwe
 * only with wx). */
#define OPT_BITS 256u
#define OPT_ALL (OPT_BITS - 1)
static bool opts_from_bits(struct sbx_seccomp_opts *o, unsigned int bits)
{
	memset(o, 0, sizeof(*o));
	o->network_denied = bits & 1;
	o->inet_denied = bits & 2;
	o->gated = bits & 4;
	o->unix_notify = bits & 8;
	o->unix_bind_notify = bits & 16;
	o->host_pids = bits & 32;
	o->wx = bits & 64;
	o->wx_no_mdwe = bits & 128;
	return (o->gated || !o->wx) && (o->wx || !o->wx_no_mdwe);
}

static void test_filter_shape(void **state)
{
	/* hot syscalls without argument rules: cached in every profile */
	static const long hot[] = {
		SYS_getppid, SYS_openat, SYS_close, SYS_read, SYS_write, SYS_mmap,
		SYS_futex, SYS_execve, SYS_wait4, SYS_newfstatat, SYS_fstat,
		SYS_lseek, SYS_brk, SYS_rt_sigaction, SYS_getpid,
#ifdef SYS_stat
		SYS_stat,
#endif
	};
	/* argument-checked in every profile */
	static const long checked[] = {
		SYS_ioctl, SYS_socket, SYS_clone, SYS_personality, SYS_seccomp,
		SYS_prlimit64, SYS_setpriority,
	};
	static struct sbx_seccomp_opts o;
	struct seccomp_data d;
	struct bpf_walk w;
	char desc[160];

	(void)state;
#ifndef NATIVE_AUDIT_ARCH
	print_message("[  SKIP    ] the bounds are worked out for x86_64 and aarch64\n");
	skip();
#else
	for (unsigned int bits = 0; bits < OPT_BITS; bits++) {
		struct sbx_error err = { 0 };
		unsigned int n_cached = 0;

		if (!opts_from_bits(&o, bits))
			continue;
		if (sbx_seccomp_prepare(&o, &err) != 0)
			fail_msg("sbx_seccomp_prepare(%s): %s",
				 shape_opts_str(&o, desc, sizeof(desc)), err.msg);
		assert_in_range(o.prog_len, 1, BPF_MAXINSNS);

		memset(&d, 0, sizeof(d));
		d.arch = NATIVE_AUDIT_ARCH;
		/* 1. every number allowed without an argument read is cached */
		for (uint32_t nr = 0; nr <= SBX_SECCOMP_NR_CUTOFF; nr++) {
			d.nr = (int)nr;
			bpf_walk(o.prog, o.prog_len, &d, &w);
			if (w.ret == SECCOMP_RET_ALLOW && w.const_only)
				n_cached++;
			if (w.ret == SECCOMP_RET_ALLOW && w.first_arg == SHAPE_NONE &&
			    !w.const_only)
				fail_msg("nr %u allowed without an argument read but not "
					 "cacheable (%s)", nr,
					 shape_opts_str(&o, desc, sizeof(desc)));
		}
		for (size_t i = 0; i < ARRAY_SIZE(hot); i++) {
			/* W^X reads mmap's prot: the price of the gate's rule */
			if (o.wx && hot[i] == SYS_mmap)
				continue;
			d.nr = (int)hot[i];
			bpf_walk(o.prog, o.prog_len, &d, &w);
			if (w.ret != SECCOMP_RET_ALLOW || !w.const_only)
				fail_msg("nr %ld: not in the kernel's action cache (ret %#x, %s)",
					 hot[i], w.ret, shape_opts_str(&o, desc, sizeof(desc)));
		}
		/* positive control for the emulator: the refused and the
		 * argument-checked are not cached */
		d.nr = SYS_ptrace;
		bpf_walk(o.prog, o.prog_len, &d, &w);
		assert_int_equal(w.ret, SECCOMP_RET_ERRNO | EPERM);
		assert_true(n_cached > 250);

		/* 2. argument-checked syscalls reached in a few instructions */
		for (size_t i = 0; i < ARRAY_SIZE(checked); i++) {
			d.nr = (int)checked[i];
			bpf_walk(o.prog, o.prog_len, &d, &w);
			assert_false(w.const_only);
			if (w.first_arg > SHAPE_REACH_MAX)
				fail_msg("nr %ld: first argument read after %u instructions "
					 "(at most %d; %s)", checked[i], w.first_arg,
					 SHAPE_REACH_MAX, shape_opts_str(&o, desc, sizeof(desc)));
		}
		/* and W^X's mmap, which every malloc of a large block pays */
		if (o.wx) {
			d.nr = SYS_mmap;
			d.args[2] = PROT_READ | PROT_WRITE;
			d.args[3] = MAP_PRIVATE | MAP_ANONYMOUS;
			bpf_walk(o.prog, o.prog_len, &d, &w);
			assert_int_equal(w.ret, SECCOMP_RET_ALLOW);
			if (w.first_arg > SHAPE_REACH_MAX)
				fail_msg("mmap: first argument read after %u instructions "
					 "(at most %d; %s)", w.first_arg, SHAPE_REACH_MAX,
					 shape_opts_str(&o, desc, sizeof(desc)));
			memset(d.args, 0, sizeof(d.args));
		}
		d.nr = SYS_ioctl;
		d.args[0] = 1;
		d.args[1] = TCGETS;
		bpf_walk(o.prog, o.prog_len, &d, &w);
		assert_int_equal(w.ret, SECCOMP_RET_ALLOW);
		if (w.steps > SHAPE_IOCTL_MAX)
			fail_msg("ioctl(TCGETS): %u instructions (at most %d; %s)", w.steps,
				 SHAPE_IOCTL_MAX, shape_opts_str(&o, desc, sizeof(desc)));
		/* and the check still bites on that path */
		d.args[1] = TIOCSTI;
		bpf_walk(o.prog, o.prog_len, &d, &w);
		assert_int_equal(w.ret, SECCOMP_RET_ERRNO | EPERM);
		memset(d.args, 0, sizeof(d.args));
	}
#endif
}

/*
 * The emitted filter decides as libseccomp compiled the same rules
 * (tests/seccomp_ref.c, the filter this project shipped before it emitted
 * its own BPF): for every combination of options, every syscall number up
 * to past the cutoff, the x32 range, -1 and a foreign arch, the two
 * programs give the same action. A number neither program reads an
 * argument for is decided on its number alone; one that has argument
 * rules gets every value of a pool (each constant a rule compares, its
 * neighbours, its high-bit twin, the extremes) in each argument alone,
 * random vectors from that pool, every pair of the first four arguments,
 * and every constant either program compares or masks with (its
 * neighbours, three high words) in each of the six arguments alone.
 */
static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void same_decision(const struct sbx_seccomp_opts *mine, const struct sbx_seccomp_opts *ref,
			  const struct seccomp_data *d, unsigned long *checked)
{
	struct bpf_walk a, b;
	char desc[160];

	bpf_walk(mine->prog, mine->prog_len, d, &a);
	bpf_walk(ref->prog, ref->prog_len, d, &b);
	(*checked)++;
	if (a.ret == SHAPE_NONE || a.ret != b.ret)
		fail_msg("nr %u args %#" PRIx64 " %#" PRIx64 " %#" PRIx64 " %#" PRIx64 " %#" PRIx64
			 " %#" PRIx64 ": emitted %#x, reference %#x (%s)", (unsigned)d->nr,
			 (uint64_t)d->args[0], (uint64_t)d->args[1], (uint64_t)d->args[2],
			 (uint64_t)d->args[3], (uint64_t)d->args[4], (uint64_t)d->args[5], a.ret,
			 b.ret, shape_opts_str(mine, desc, sizeof(desc)));
}

/* Every constant a program compares or masks with, its neighbours, and
 * each with a high word of 0, 1 or all ones: the values a future rule adds
 * reach the comparison without anyone updating a pool by hand. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static size_t program_values(const struct sock_filter *f, size_t n, uint64_t *out, size_t max,
			     size_t have)
{
	static const uint64_t his[] = { 0, 1ULL << 32, 0xffffffff00000000ULL };

	for (size_t pc = 0; pc < n; pc++) {
		uint16_t c = f[pc].code;

		if (!((BPF_CLASS(c) == BPF_JMP && BPF_OP(c) != BPF_JA && BPF_SRC(c) == BPF_K) ||
		      c == (BPF_ALU | BPF_AND | BPF_K)))
			continue;
		for (int d = -1; d <= 1; d++)
			for (size_t h = 0; h < ARRAY_SIZE(his) && have < max; h++)
				out[have++] = his[h] | (uint32_t)(f[pc].k + (uint32_t)d);
	}
	return have;
}

static size_t unique_values(uint64_t *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

#define SAME_RANDOM 6000

static void test_same_as_reference(void **state)
{
	static const uint64_t base[] = {
		0, 1, 2, 3, 4, 5, 6, 10, 15, 16, 17, 23, 30, 38, 40, 44, 45, 46,
		AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_MAX - 1, AF_MAX, AF_MAX + 1,
		SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET, SOCK_PACKET,
		SOCK_STREAM | SOCK_CLOEXEC, SOCK_DGRAM | SOCK_NONBLOCK, SOCK_SEQPACKET | SOCK_CLOEXEC,
		IPPROTO_TCP, IPPROTO_MPTCP, IPPROTO_MPTCP + 1, TCP_FASTOPEN, TCP_FASTOPEN_CONNECT,
		TIOCSTI, TIOCLINUX, TIOCSETD, TCGETS, TIOCSTI + 1,
		MSG_FASTOPEN, MSG_FASTOPEN | MSG_DONTWAIT, MSG_DONTWAIT,
		AT_EMPTY_PATH, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, SHM_EXEC, SHM_RDONLY,
		PROT_READ | PROT_WRITE | PROT_EXEC, PROT_READ | PROT_EXEC, MAP_ANONYMOUS,
		MAP_PRIVATE | MAP_ANONYMOUS, MAP_SHARED | MAP_ANONYMOUS, MAP_SHARED_VALIDATE,
		MAP_PRIVATE | MAP_DENYWRITE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS,
		SECCOMP_SET_MODE_STRICT, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
		SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC,
		CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
		CLONE_NEWPID, CLONE_NEWNET, 0x80, SIGCHLD, CLONE_VM | CLONE_FS | CLONE_FILES |
		CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_SETTLS,
		0x7ffffffe, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
		0xffffffff00000000ULL, UINT64_MAX, UINT64_MAX - 1,
	};
	static uint64_t pool[3 * ARRAY_SIZE(base)];
	static uint64_t derived[8192];
	size_t nder;
	static struct sbx_seccomp_opts mine, ref;
	struct seccomp_data d;
	struct bpf_walk a, b;
	size_t npool = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	unsigned long checked = 0;

	(void)state;
#ifndef NATIVE_AUDIT_ARCH
	print_message("[  SKIP    ] the filter is emitted for x86_64 and aarch64 only\n");
	skip();
#else
	for (size_t i = 0; i < ARRAY_SIZE(base); i++) {
		pool[npool++] = base[i];
		pool[npool++] = base[i] ^ HI32;
		pool[npool++] = base[i] | 0xffffffff00000000ULL;
	}
	for (unsigned int bits = 0; bits < OPT_BITS; bits++) {
		struct sbx_error err = { 0 };
		static const uint32_t extra_nrs[] = {
			SBX_SECCOMP_NR_CUTOFF + 1, 512, 1000, 0x3fffffff, 0x40000000,
			0x40000000 + 1, 0x40000000 + 59, 0x40000000 + 512, 0x7fffffff,
			0x80000000, 0xfffffffe, 0xffffffff,
		};
		uint32_t nrs[SBX_SECCOMP_NR_CUTOFF + 11 + ARRAY_SIZE(extra_nrs)];
		size_t n_nrs = 0;

		if (!opts_from_bits(&mine, bits))
			continue;
		ref = mine;
		if (sbx_seccomp_prepare(&mine, &err) != 0)
			fail_msg("sbx_seccomp_prepare: %s", err.msg);
		if (sbx_seccomp_ref_prepare(&ref, &err) != 0)
			fail_msg("sbx_seccomp_ref_prepare: %s", err.msg);
		nder = program_values(mine.prog, mine.prog_len, derived, ARRAY_SIZE(derived), 0);
		nder = program_values(ref.prog, ref.prog_len, derived, ARRAY_SIZE(derived), nder);
		assert_true(nder < ARRAY_SIZE(derived));
		nder = unique_values(derived, nder);
		for (uint32_t nr = 0; nr <= SBX_SECCOMP_NR_CUTOFF + 10; nr++)
			nrs[n_nrs++] = nr;
		for (size_t i = 0; i < ARRAY_SIZE(extra_nrs); i++)
			nrs[n_nrs++] = extra_nrs[i];

		for (size_t k = 0; k < n_nrs; k++) {
			memset(&d, 0, sizeof(d));
			d.arch = NATIVE_AUDIT_ARCH;
			d.nr = (int)nrs[k];
			for (int round = -1; round < (int)(6 * npool) + SAME_RANDOM; round++) {
				if (round >= 0 && round < (int)(6 * npool)) {
					memset(d.args, 0, sizeof(d.args));
					d.args[round / (int)npool] = pool[round % (int)npool];
				} else if (round >= 0) {
					for (int i = 0; i < 6; i++)
						d.args[i] = pool[xorshift(&rng) % npool];
				}
				same_decision(&mine, &ref, &d, &checked);
				bpf_walk(mine.prog, mine.prog_len, &d, &a);
				bpf_walk(ref.prog, ref.prog_len, &d, &b);
				/* decided on the number alone by both: no arguments to vary */
				if (round == -1 && a.first_arg == SHAPE_NONE &&
				    b.first_arg == SHAPE_NONE)
					break;
			}
			if (a.first_arg == SHAPE_NONE && b.first_arg == SHAPE_NONE)
				continue;
			/* the programs' own constants, in each argument alone */
			for (int i = 0; i < 6; i++)
				for (size_t x = 0; x < nder; x++) {
					memset(d.args, 0, sizeof(d.args));
					d.args[i] = derived[x];
					same_decision(&mine, &ref, &d, &checked);
				}
			/* every pair of the first four arguments, over the base pool:
			 * the rules compare at most two arguments. For the options
			 * that shape socket's rules, and all of them on (mmap's
			 * W^X rules among them). */
			if ((bits & ~(1u | 2u | 8u)) != 0 && bits != OPT_ALL)
				continue;
			for (int i = 0; i < 4; i++)
				for (int j = i + 1; j < 4; j++)
					for (size_t x = 0; x < ARRAY_SIZE(base); x++)
						for (size_t y = 0; y < ARRAY_SIZE(base); y++) {
							memset(d.args, 0, sizeof(d.args));
							d.args[i] = base[x];
							d.args[j] = base[y];
							same_decision(&mine, &ref, &d, &checked);
						}
		}
		/* a foreign arch (i386's int 0x80) is killed by both */
		d.arch = AUDIT_ARCH_I386;
		d.nr = SYS_getpid;
		bpf_walk(mine.prog, mine.prog_len, &d, &a);
		bpf_walk(ref.prog, ref.prog_len, &d, &b);
		assert_int_equal(a.ret, SECCOMP_RET_KILL_PROCESS);
		assert_int_equal(a.ret, b.ret);
	}
	print_message("[          ] %lu inputs decided alike\n", checked);
#endif
}

static void test_proc_status(void **state)
{
	(void)state;
	expect_child_ok(child_status, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_denied_syscalls),
		cmocka_unit_test(test_mount_api_userns),
		cmocka_unit_test(test_clone3),
		cmocka_unit_test(test_tiocsti),
		cmocka_unit_test(test_socket_families),
		cmocka_unit_test(test_network_denied),
		cmocka_unit_test(test_int_args),
		cmocka_unit_test(test_other_processes),
		cmocka_unit_test(test_inet_denied),
		cmocka_unit_test(test_gated),
		cmocka_unit_test(test_wx),
		cmocka_unit_test(test_foreign_arch_killed),
		cmocka_unit_test(test_new_listener),
		cmocka_unit_test(test_moby_denied),
		cmocka_unit_test(test_cutoff),
		cmocka_unit_test(test_no_rule_skipped),
		cmocka_unit_test(test_proc_status),
		cmocka_unit_test(test_filter_shape),
		cmocka_unit_test(test_same_as_reference),
	};
	return cmocka_run_group_tests_name("seccomp", tests, NULL, NULL);
}
