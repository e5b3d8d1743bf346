/* SPDX-License-Identifier: BSD-3-Clause */
/* The reference filter for test_seccomp's equivalence check: lib/seccomp.c
 * as it was when libseccomp compiled the rules (a raw-BPF cutoff in front
 * of libseccomp's program), kept word for word but for the names. The
 * shipped filter is emitted by lib/seccomp.c; this one is never loaded
 * outside the tests. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include "testlib.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#ifndef TCP_FASTOPEN
#define TCP_FASTOPEN 23
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U	/* Linux 6.3 */
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef TIOCSETD
#define TIOCSETD 0x5423
#endif
#ifndef NETLINK_ROUTE
#define NETLINK_ROUTE 0
#endif

/*
 * docs/design.md section 4.9: refused with EPERM whatever the arguments.
 *
 * Checked against moby's default seccomp profile (moby/profiles
 * seccomp/default.json, an allow-list) and the x86_64 table up to
 * SBX_SECCOMP_NR_CUTOFF: every syscall it refuses to a container without
 * capabilities is refused here too, except
 *  - _sysctl, afs_syscall, create_module, get_kernel_syms, getpmsg, putpmsg,
 *    nfsservctl, query_module, security, tuxcall, vserver: no entry point in
 *    the x86_64 table, the kernel answers ENOSYS itself;
 *  - file_getattr, file_setattr (6.17): the FS_IOC_FSGETXATTR/FSSETXATTR
 *    ioctls by path, which stay allowed on an open fd anyway; the owner check
 *    and the read-only mounts apply to both (the profile predates them);
 *  - uprobe (336): the kernel lets it and uretprobe through seccomp
 *    unfiltered (seccomp_uprobe_exception; only its own uprobe trampolines
 *    call them, and refusing would kill a process the host traces), so a
 *    rule would be dead code.
 * Stricter than moby, which allows these: modify_ldt (LDT code has a CVE
 * history, e.g. CVE-2017-17053; only Wine and DOS emulators need it on
 * x86_64), ptrace, process_vm_*, name_to_handle_at.
 */
static const char *const denied_syscalls[] = {
	/* keyrings are not namespaced */
	"add_key", "keyctl", "request_key",
	/* kernel attack surface with a CVE history */
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"modify_ldt",
	/* NUMA memory policy: moby asks for CAP_SYS_NICE; mempolicy and page
	 * migration code has had use-after-frees (CVE-2018-10675 in
	 * get_mempolicy) and move_pages/migrate_pages act on other pids. With
	 * get_mempolicy refused too, libnuma's numa_available() answers "no
	 * NUMA" (it treats EPERM like ENOSYS) instead of failing later. */
	"get_mempolicy", "set_mempolicy", "mbind", "migrate_pages", "move_pages",
	"set_mempolicy_home_node",
	/* the machine itself */
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
	"quotactl_fd", "lookup_dcookie", "uselib", "vhangup", "iopl", "ioperm",
	"syslog",
	/* need a capability the sandbox never holds, so EPERM is what the
	 * kernel would say; refused before reaching it all the same */
	"chroot", "settimeofday", "clock_settime", "sethostname", "setdomainname",
	/* obsolete (no glibc wrapper), nothing an agent runs calls them */
	"sysfs", "ustat",
	/* mount API, old and new: the view is fixed before exec */
	"mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount",
	"fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	/* filesystem-wide event watching: moby asks for CAP_SYS_ADMIN;
	 * unprivileged fanotify (5.13) is new kernel surface, and inotify
	 * serves file watchers */
	"fanotify_init",
	/* LSM attributes of the process (6.8): moby asks for CAP_SYS_ADMIN;
	 * /proc/self/attr stays, under the LSM's own checks */
	"lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules",
	/* namespace enumeration (6.19): nothing for an agent */
	"listns",
	/* other processes' memory */
	"ptrace", "process_vm_readv", "process_vm_writev",
	/* another process's fds and memory advice (defence in depth: the
	 * pid namespace and Landlock's ptrace rule already stop these); kcmp
	 * compares kernel pointers of two processes (moby asks for
	 * CAP_SYS_PTRACE; only checkpoint/restore tools use it) */
	"pidfd_getfd", "process_madvise", "kcmp",
	/* file handles bypass path-based checks (Landlock, mount masks) */
	"open_by_handle_at", "name_to_handle_at",
	/* namespace creation and entry; clone/clone3 below */
	"unshare", "setns",
};

#if defined(__x86_64__) || defined(__aarch64__)
/*
 * Refused syscalls newer than Debian 12's libseccomp 2.5.4, which resolves
 * names up to futex_requeue (456, Linux 6.7). From 424 on, every arch but
 * alpha takes its number from one shared table (scripts/syscall.tbl), so
 * these hold for x86_64 and aarch64 alike. A newer libseccomp resolves the
 * name itself and this table is not consulted.
 */
static const struct {
	const char *name;
	int nr;
} late_syscalls[] = {
	{ "lsm_get_self_attr", 459 },	/* 6.8 */
	{ "lsm_set_self_attr", 460 },
	{ "lsm_list_modules", 461 },
	{ "open_tree_attr", 467 },	/* 6.15 */
	{ "listns", 470 },		/* 6.19 */
};
#endif

/* The low 32 bits of argument i equal v. For an int or unsigned int
 * parameter the kernel reads only those bits (the C prototype truncates),
 * while a plain SCMP_CMP_EQ compares all 64: with 1 << 32 added, the value
 * would slip past an EQ rule and still mean v to the kernel. */
static struct scmp_arg_cmp int_eq(unsigned int i, uint32_t v)
{
	return (struct scmp_arg_cmp){ .arg = i, .op = SCMP_CMP_MASKED_EQ,
				      .datum_a = 0xffffffffULL, .datum_b = v };
}

/* clone(2) flags that create a namespace. CLONE_NEWTIME (0x80) overlaps the
 * exit-signal byte of clone(2); a signal >= 128 is invalid anyway, so the
 * extra refusal costs nothing. */
static const unsigned long clone_ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME,
};

struct filter_ctx {
	scmp_filter_ctx ctx;
	const struct sbx_seccomp_opts *opts;
	struct sbx_error *err;
};

static void note(const struct sbx_seccomp_opts *o, const char *what, const char *name)
{
	size_t len;

	if (!o->notes || o->notes_size == 0)
		return;
	len = strnlen(o->notes, o->notes_size);
	if (len >= o->notes_size - 1)
		return;
	snprintf(o->notes + len, o->notes_size - len, "%s%s: %s", len ? "; " : "",
		 what, name);
}

/* The number of a syscall by name: libseccomp's, else late_syscalls'. */
static int syscall_nr(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

#if defined(__x86_64__) || defined(__aarch64__)
	for (size_t i = 0; nr == __NR_SCMP_ERROR && i < ARRAY_SIZE(late_syscalls); i++)
		if (strcmp(late_syscalls[i].name, name) == 0)
			nr = late_syscalls[i].nr;
#endif
	return nr;
}

/* Add one rule by syscall name. A name neither libseccomp nor late_syscalls
 * knows is skipped with a note, not a failure: the syscall is absent on this
 * arch (modify_ldt on aarch64), or newer than this libseccomp on an arch
 * without late_syscalls. */
static int rule(struct filter_ctx *f, const char *name, uint32_t action,
		unsigned n, const struct scmp_arg_cmp *cmp)
{
	int nr = syscall_nr(name);
	int r;

	if (nr == __NR_SCMP_ERROR) {
		note(f->opts, "unknown to libseccomp", name);
		return 0;
	}
	r = seccomp_rule_add_array(f->ctx, action, nr, n, cmp);
	if (r < 0)
		return sbx_error_set(f->err, -r, "seccomp_rule_add(%s): %s", name,
				     strerror(-r));
	return 0;
}

static int rule1(struct filter_ctx *f, const char *name, uint32_t action,
		 struct scmp_arg_cmp a)
{
	return rule(f, name, action, 1, &a);
}

static int rule2(struct filter_ctx *f, const char *name, uint32_t action,
		 struct scmp_arg_cmp a, struct scmp_arg_cmp b)
{
	struct scmp_arg_cmp cmp[2] = { a, b };

	return rule(f, name, action, 2, cmp);
}

/*
 * personality(2): allow only the query (0xffffffff) and PER_LINUX (0). The
 * kernel takes an unsigned int, so any high bit is refused outright. For the
 * low 32 bits, libseccomp accepts one comparison per argument per rule, so
 * "neither all zeros nor all ones" is written as "some pair of adjacent bits
 * differs": 31 masks, two values each.
 */
static int add_personality_rules(struct filter_ctx *f)
{
	int r;

	r = rule1(f, "personality", SCMP_ACT_ERRNO(EPERM),
		  SCMP_A0(SCMP_CMP_GT, 0xffffffffULL));
	for (unsigned i = 0; r == 0 && i < 31; i++) {
		uint64_t lo = 1ULL << i, hi = 1ULL << (i + 1);

		r = rule1(f, "personality", SCMP_ACT_ERRNO(EPERM),
			  SCMP_A0(SCMP_CMP_MASKED_EQ, lo | hi, lo));
		if (r == 0)
			r = rule1(f, "personality", SCMP_ACT_ERRNO(EPERM),
				  SCMP_A0(SCMP_CMP_MASKED_EQ, lo | hi, hi));
	}
	return r;
}

static int add_socket_rules(struct filter_ctx *f)
{
	const struct sbx_seccomp_opts *o = f->opts;
	const uint32_t afnosupport = SCMP_ACT_ERRNO(EAFNOSUPPORT);
	int r = 0;

	/*
	 * socket(int family, int type, int protocol): the kernel reads 32 bits
	 * of each. Families other than unix, inet, inet6 and netlink: AF_VSOCK
	 * in particular is not network-namespaced, AF_PACKET/AF_ALG are attack
	 * surface. Low 32 bits >= AF_MAX too (families a later kernel adds).
	 * That GE compares all 64 bits, so it also refuses any family with a
	 * high bit set: it can only refuse more than the kernel's 32-bit view
	 * (a value is >= AF_MAX if its low half is), and libcs sign-extend an
	 * int, so no real caller puts bits there.
	 */
	for (int af = 0; r == 0 && af < AF_MAX; af++) {
		if (af == AF_UNIX || af == AF_NETLINK)
			continue;
		if ((af == AF_INET || af == AF_INET6) && !o->inet_denied)
			continue;
		r = rule1(f, "socket", afnosupport, int_eq(0, (uint32_t)af));
	}
	if (r == 0)
		r = rule1(f, "socket", afnosupport, SCMP_A0(SCMP_CMP_GE, AF_MAX));
	/* Netlink route only: getaddrinfo(AI_ADDRCONFIG) needs it and it is
	 * per network namespace; audit, uevent, xfrm and the rest are not for
	 * an agent. The 64-bit NE, like the GE above, errs on refusing. */
	if (r == 0)
		r = rule2(f, "socket", afnosupport, int_eq(0, AF_NETLINK),
			  SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
	return r;
}

/* docs/design.md sections 4.9, 10: TCP Fast Open and MPTCP were both seen reaching a host
 * loopback listener past Landlock's TCP connect rule on 6.18. Every compare
 * is on the low 32 bits: socket's family and protocol, setsockopt's level
 * and optname are int, the send* flags unsigned int (a one-bit mask in the
 * low half needs nothing more). socket(AF_INET, SOCK_STREAM,
 * 1 << 32 | IPPROTO_MPTCP) made an MPTCP socket past a 64-bit EQ. */
static int add_network_denied_rules(struct filter_ctx *f)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int r = 0;

	/* With inet_denied every inet socket is refused already. */
	if (!f->opts->inet_denied) {
		r = rule2(f, "socket", eperm, int_eq(0, AF_INET),
			  int_eq(2, IPPROTO_MPTCP));
		if (r == 0)
			r = rule2(f, "socket", eperm, int_eq(0, AF_INET6),
				  int_eq(2, IPPROTO_MPTCP));
	}
	if (r == 0)
		r = rule1(f, "sendto", eperm,
			  SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN));
	if (r == 0)
		r = rule1(f, "sendmsg", eperm,
			  SCMP_A2(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN));
	if (r == 0)
		r = rule1(f, "sendmmsg", eperm,
			  SCMP_A3(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN));
	if (r == 0)
		r = rule2(f, "setsockopt", eperm, int_eq(1, IPPROTO_TCP),
			  int_eq(2, TCP_FASTOPEN_CONNECT));
	if (r == 0)
		r = rule2(f, "setsockopt", eperm, int_eq(1, IPPROTO_TCP),
			  int_eq(2, TCP_FASTOPEN));
	return r;
}

/*
 * docs/design.md section 6: a memfd holding a binary runs through execveat(AT_EMPTY_PATH)
 * under the Landlock gate, and vm.memfd_noexec cannot be set from a user
 * namespace. MFD_NOEXEC_SEAL is not enough either: a sealed memfd cannot be
 * execve'd, but ld.so maps it PROT_EXEC all the same (`ld.so
 * /proc/self/fd/N` ran a copied binary; memfds live on an internal mount no
 * noexec reaches). Under the gate no memfd is made at all, nor a
 * memfd_secret.
 */
static int add_gate_rules(struct filter_ctx *f)
{
	int r;

	r = rule(f, "memfd_create", SCMP_ACT_ERRNO(EPERM), 0, NULL);
	if (r == 0)
		r = rule(f, "memfd_secret", SCMP_ACT_ERRNO(EPERM), 0, NULL);
	if (r == 0)
		r = rule1(f, "execveat", SCMP_ACT_ERRNO(EPERM),
			  SCMP_A4(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
	return r;
}

/* W^X under the gate (lib/seccomp.c, add_wx_rules): no executable mapping
 * of anonymous or shared memory, no SHM_EXEC; without MDWE also no mapping
 * writable and executable, no mprotect/pkey_mprotect to PROT_EXEC. Written
 * the way libseccomp takes them: one compare per argument per rule, so
 * "anonymous or shared" is two rules. */
static int add_wx_rules(struct filter_ctx *f)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	const struct scmp_arg_cmp exec = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC);
	int r;

	r = rule2(f, "mmap", eperm, exec,
		  SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_ANONYMOUS, MAP_ANONYMOUS));
	if (r == 0)
		r = rule2(f, "mmap", eperm, exec,
			  SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED, MAP_SHARED));
	if (r == 0)
		r = rule1(f, "shmat", eperm, SCMP_A2(SCMP_CMP_MASKED_EQ, SHM_EXEC, SHM_EXEC));
	if (r != 0 || !f->opts->wx_no_mdwe)
		return r;
	r = rule1(f, "mmap", eperm, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC | PROT_WRITE,
					    PROT_EXEC | PROT_WRITE));
	if (r == 0)
		r = rule1(f, "mprotect", eperm, exec);
	if (r == 0)
		r = rule1(f, "pkey_mprotect", eperm, exec);
	return r;
}

/*
 * Other processes of the agent's uid outside the sandbox (on a path without
 * a pid namespace: agent-shell's outer process, which ends the session, and
 * the unix supervisor) are reachable by pid. Signals are Landlock's scope;
 * their limits are not: prlimit(outer, RLIMIT_NOFILE, 0) left the outer
 * unable to open /proc/self/task/N/children, so it could not end what the
 * session left behind. prlimit64 is allowed on the caller only (pid 0:
 * setrlimit, ulimit); a 64-bit NE also refuses 1 << 32, which the kernel
 * would read as 0, a harmless over-refusal. setpriority(PRIO_USER, 0, 19)
 * would slow every process of the uid, the outer included: only
 * PRIO_PROCESS of the caller (nice(1), nice(3)).
 */
static const char *const sched_calls[] = {
	"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
};

static int add_process_rules(struct filter_ctx *f)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int r;

	r = rule1(f, "prlimit64", eperm, SCMP_A0(SCMP_CMP_NE, 0));
	if (r == 0)
		r = rule1(f, "setpriority", eperm, SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS));
	if (r == 0)
		r = rule1(f, "setpriority", eperm, SCMP_A1(SCMP_CMP_NE, 0));
	/*
	 * Without a pid namespace, SCHED_IDLE on the outer process, pinned to
	 * one CPU beside 400 spinning threads, delayed a 5 s session_time to
	 * 196 s. There these calls take the caller only: pthread_setaffinity_np
	 * and pthread_setschedparam (which name a tid) get EPERM. In a pid
	 * namespace nothing outside the sandbox has a pid it can name.
	 */
	for (size_t i = 0; r == 0 && f->opts->host_pids && i < ARRAY_SIZE(sched_calls); i++)
		r = rule1(f, sched_calls[i], eperm, SCMP_A0(SCMP_CMP_NE, 0));
	/* ioprio_set(which, who, prio): IOPRIO_WHO_PROCESS (1) of the caller. */
	if (r == 0 && f->opts->host_pids)
		r = rule1(f, "ioprio_set", eperm, SCMP_A0(SCMP_CMP_NE, 1));
	if (r == 0 && f->opts->host_pids)
		r = rule1(f, "ioprio_set", eperm, SCMP_A1(SCMP_CMP_NE, 0));
	return r;
}

/*
 * Pathname unix sockets are reached by connect() only once datagram
 * sockets are gone (a datagram names its peer per send): every connect()
 * goes to the supervisor (lib/unixsock.c), which decides and connects on
 * the caller's behalf, and AF_UNIX sockets other than stream and seqpacket
 * are refused. Socket pairs too: sendto() on a datagram one can still name
 * any path.
 */
static int add_unix_rules(struct filter_ctx *f)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int r;

	r = rule(f, "connect", SCMP_ACT_NOTIFY, 0, NULL);
	if (r == 0 && f->opts->unix_bind_notify)
		r = rule(f, "bind", SCMP_ACT_NOTIFY, 0, NULL);
	/* PR_SET_DUMPABLE 0 succeeds and changes nothing: the supervisor
	 * needs ptrace rights over every caller. */
	if (r == 0)
		r = rule2(f, "prctl", SCMP_ACT_ERRNO(0), int_eq(0, PR_SET_DUMPABLE),
			  SCMP_A1(SCMP_CMP_EQ, 0));
	/* Every type but stream and seqpacket: the kernel turns SOCK_RAW
	 * into SOCK_DGRAM for AF_UNIX, so refusing SOCK_DGRAM alone let a
	 * datagram through. The type's low 4 bits are the type (the rest
	 * are SOCK_CLOEXEC and SOCK_NONBLOCK). */
	for (uint32_t type = 0; r == 0 && type <= 0xf; type++) {
		if (type == SOCK_STREAM || type == SOCK_SEQPACKET)
			continue;
		r = rule2(f, "socket", eperm, int_eq(0, AF_UNIX),
			  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
		if (r == 0)
			r = rule2(f, "socketpair", eperm, int_eq(0, AF_UNIX),
				  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
	}
	return r;
}

/*
 * The cutoff: a deny-list with default ALLOW lets through whatever syscall a
 * later kernel adds, so on the native arch every number above
 * SBX_SECCOMP_NR_CUTOFF answers ENOSYS (what an older kernel says, so libc
 * falls back as for clone3) until someone reviews it and moves the cutoff.
 * libseccomp cannot express a range, hence raw BPF put in front of
 * libseccomp's program: one program, not two stacked filters, because the
 * kernel runs every filter of the stack for each syscall its action cache
 * does not answer, and the second one cost ~18 ns on every ioctl, sendto
 * and other argument-checked call (bench/syscalls, 6.18, x86_64).
 *
 * x86_64: x86-only syscalls go after the last 64-bit entry (uretprobe 335,
 * uprobe 336), so 337-423 is refused too; 424 on is the shared table.
 * Numbers with __X32_SYSCALL_BIT go on to libseccomp's part, which kills
 * them. aarch64 has only the shared table: everything above the cutoff. A
 * foreign arch gets KILL_PROCESS as in libseccomp's part.
 *
 * The head returns only ENOSYS, and only for numbers libseccomp's part has
 * no rule for (every rule is at or below the cutoff, and x86_64 has no
 * syscall in 337-423), so it answers what two stacked filters answered:
 * the most severe of both. test_filter_shape checks this on every number.
 * The head loads arch and nr only, so the kernel's action cache still
 * covers every allowed syscall.
 */
#if defined(__x86_64__)
#define SBX_NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SBX_NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef SBX_NATIVE_AUDIT_ARCH
/* Falls through (its last jump's false branch, or "next") into the first
 * instruction of libseccomp's program. */
static const struct sock_filter cutoff_head[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SBX_NATIVE_AUDIT_ARCH, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
	/* x32 -> next; > cutoff -> ENOSYS; 424..cutoff -> next;
	 * 337..423 -> ENOSYS; 0..336 -> next */
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 4, 0),
	BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, SBX_SECCOMP_NR_CUTOFF, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 424, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, 336, 0, 1),
#else
	BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, SBX_SECCOMP_NR_CUTOFF, 0, 1),
#endif
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	/* next: libseccomp's program */
};
#define CUTOFF_HEAD_LEN ARRAY_SIZE(cutoff_head)
#else
#define CUTOFF_HEAD_LEN 0
#endif

/* The first filter, built but not loaded: every rule of the profile. On
 * success *out owns the context (seccomp_release it). */
static int build_filter(struct sbx_seccomp_opts *o, scmp_filter_ctx *out,
			struct sbx_error *err)
{
	struct filter_ctx f = { .opts = o, .err = err };
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	size_t i;
	int r;

	if (o->notes && o->notes_size)
		o->notes[0] = '\0';
	f.ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!f.ctx)
		return sbx_error_set(err, ENOMEM, "seccomp_init: failed");
	/*
	 * Only the native arch is in the filter, so i386 (int 0x80) hits the
	 * bad-arch action. x32 shares AUDIT_ARCH_X86_64 with native calls;
	 * libseccomp 2.5.4 emits "nr >= 0x40000000 (and != -1) -> bad-arch" for
	 * an x86_64 filter without the x32 arch (checked with
	 * seccomp_export_pfc/bpf), and tests/test_seccomp.c proves both die with
	 * SIGSYS. KILL_PROCESS, not KILL_THREAD: no half-dead process.
	 */
	r = seccomp_attr_set(f.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0) {
		r = sbx_error_set(err, -r, "seccomp_attr_set(ACT_BADARCH, KILL_PROCESS): %s",
				  strerror(-r));
		goto out;
	}
	/*
	 * A binary tree on the syscall number (libseccomp >= 2.5.0) instead of
	 * the default list, where argument-checked syscalls sort last: ioctl
	 * ran 81-93 BPF instructions before its first argument compare, 17 in
	 * the tree (tests/test_seccomp.c test_filter_shape bounds it).
	 * Syscalls without a rule stay in the kernel's per-arch cache either
	 * way: every path loads only arch and nr until the number is decided,
	 * which is what seccomp_cache_prepare() emulates. The arch check and
	 * x32 preamble above come first in both shapes (checked with
	 * seccomp_export_pfc on 2.5.4). The tree over no rules ignored the
	 * default action before 2.5.4 (libseccomp issue 370); this filter
	 * always has rules.
	 */
	r = seccomp_attr_set(f.ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0) {
		r = sbx_error_set(err, -r, "seccomp_attr_set(CTL_OPTIMIZE, 2): %s",
				  strerror(-r));
		goto out;
	}

	for (i = 0; i < ARRAY_SIZE(denied_syscalls); i++)
		if ((r = rule(&f, denied_syscalls[i], eperm, 0, NULL)) != 0)
			goto out;
	if ((r = add_personality_rules(&f)) != 0)
		goto out;

	/* clone takes unsigned long flags but reads lower_32_bits() of them
	 * (kernel/fork.c); the one-bit masks look at nothing else. */
	for (i = 0; i < ARRAY_SIZE(clone_ns_flags); i++)
		if ((r = rule1(&f, "clone", eperm,
			       SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i],
				       clone_ns_flags[i]))) != 0)
			goto out;
	/* clone3's flags live in a struct in memory seccomp cannot read;
	 * ENOSYS makes glibc fall back to clone(2), which is filtered. */
	if ((r = rule(&f, "clone3", SCMP_ACT_ERRNO(ENOSYS), 0, NULL)) != 0)
		goto out;

	/* ioctl(2) takes an unsigned int cmd: compare 32 bits so that
	 * TIOCSTI | 1 << 32 is caught too. TIOCSTI types into the terminal
	 * (CVE-2017-5226 class), TIOCLINUX reaches the console; TIOCSETD
	 * switches line discipline, which loads rarely used ldisc code on
	 * the pty (n_gsm: CVE-2023-6546, CVE-2024-36016). */
	if ((r = rule1(&f, "ioctl", eperm, int_eq(1, TIOCSTI))) != 0 ||
	    (r = rule1(&f, "ioctl", eperm, int_eq(1, TIOCLINUX))) != 0 ||
	    (r = rule1(&f, "ioctl", eperm, int_eq(1, TIOCSETD))) != 0)
		goto out;

	if ((r = add_socket_rules(&f)) != 0)
		goto out;
	if ((r = add_process_rules(&f)) != 0)
		goto out;

	/* A user-notification listener would let the sandbox answer syscalls
	 * for its own children; nested plain filters stay allowed. The op is
	 * an unsigned int: 1 << 32 | SET_MODE_FILTER is SET_MODE_FILTER. */
	if ((r = rule2(&f, "seccomp", eperm, int_eq(0, SECCOMP_SET_MODE_FILTER),
		       SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			       SECCOMP_FILTER_FLAG_NEW_LISTENER))) != 0)
		goto out;

	if (o->network_denied && (r = add_network_denied_rules(&f)) != 0)
		goto out;
	if (o->gated && (r = add_gate_rules(&f)) != 0)
		goto out;
	if (o->wx && (r = add_wx_rules(&f)) != 0)
		goto out;
	if (o->unix_notify && (r = add_unix_rules(&f)) != 0)
		goto out;

	*out = f.ctx;
	return 0;
out:
	seccomp_release(f.ctx);
	return r;
}

/*
 * libseccomp 2.5 exports only to an fd. A memfd, or where an outer sandbox
 * refuses memfd_create, a pipe whose write end is non-blocking: a pipe
 * shrunk to one page (the user past pipe-user-pages-soft) makes the export
 * fail instead of hang. Called before the rlimits (apply.c), so neither
 * RLIMIT_NOFILE nor RLIMIT_FSIZE is in the way.
 */
static int export_lib_bpf(scmp_filter_ctx ctx, struct sock_filter *out, size_t max,
			  size_t *n, struct sbx_error *err)
{
	size_t cap = max * sizeof(*out), got = 0;
	int p[2] = { -1, -1 };
	int rfd, wfd, r;

	rfd = wfd = (int)syscall(SYS_memfd_create, "sbx-seccomp", MFD_CLOEXEC);
	if (rfd < 0) {
		if (pipe2(p, O_CLOEXEC) != 0 || fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
			r = errno;
			if (p[0] >= 0) {
				close(p[0]);
				close(p[1]);
			}
			return sbx_error_set(err, r, "seccomp: memfd_create and pipe2 for the BPF export: %s",
					     strerror(r));
		}
		rfd = p[0];
		wfd = p[1];
	}
	r = seccomp_export_bpf(ctx, wfd);
	if (r < 0) {
		r = sbx_error_set(err, -r, "seccomp_export_bpf: %s", strerror(-r));
		goto out;
	}
	if (rfd == wfd && lseek(rfd, 0, SEEK_SET) != 0) {
		r = sbx_error_set(err, errno, "seccomp: lseek(BPF memfd): %s", strerror(errno));
		goto out;
	}
	if (p[1] >= 0) {
		close(p[1]);
		p[1] = -1;
	}
	for (;;) {
		/* one byte past the cap tells "too long" from "exactly full" */
		char *dst = (char *)out + got;
		char spare;
		ssize_t k = read(rfd, got < cap ? dst : &spare, got < cap ? cap - got : 1);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = sbx_error_set(err, errno, "seccomp: read(BPF export): %s",
					  strerror(errno));
			goto out;
		}
		if (k == 0)
			break;
		if (got >= cap) {
			r = sbx_error_set(err, E2BIG, "seccomp: the filter exceeds %zu instructions",
					  max);
			goto out;
		}
		got += (size_t)k;
	}
	if (got == 0 || got % sizeof(*out) != 0) {
		r = sbx_error_set(err, EPROTO, "seccomp: libseccomp exported %zu bytes of BPF", got);
		goto out;
	}
	*n = got / sizeof(*out);
	r = 0;
out:
	if (p[1] >= 0)
		close(p[1]);
	close(rfd);
	return r;
}

int sbx_seccomp_ref_prepare(struct sbx_seccomp_opts *o, struct sbx_error *err)
{
	scmp_filter_ctx ctx;
	size_t n = 0;
	int r;

	if (o->prog_len)
		return 0;
	r = build_filter(o, &ctx, err);
	if (r != 0)
		return r;
#ifdef SBX_NATIVE_AUDIT_ARCH
	memcpy(o->prog, cutoff_head, sizeof(cutoff_head));
#else
	note(o, "no syscall cutoff on this arch", "new syscalls are allowed");
#endif
	r = export_lib_bpf(ctx, o->prog + CUTOFF_HEAD_LEN,
			   ARRAY_SIZE(o->prog) - CUTOFF_HEAD_LEN, &n, err);
	seccomp_release(ctx);
	if (r != 0)
		return r;
	o->prog_len = CUTOFF_HEAD_LEN + n;
	return 0;
}
