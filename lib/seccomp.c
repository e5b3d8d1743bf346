/* SPDX-License-Identifier: BSD-3-Clause */
/* seccomp: the syscall filter loaded last, just before exec. The rules are a
 * table built for the profile's options; the BPF is emitted here, in a few
 * microseconds and without a compiler library on the session's path. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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

#include "internal.h"

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
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif

/*
 * The arches the filter is written for: the audit arch its first
 * instruction checks, and argument words read little-endian (the low 32
 * bits of args[i] at its offset, the high ones 4 bytes on). Elsewhere
 * sbx_seccomp_prepare fails, and the report says seccomp was not achieved.
 */
#if defined(__x86_64__) && !defined(__ILP32__)
#define SBX_NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SBX_NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/*
 * Numbers the C library's headers may lack. From 424 on, every arch but
 * alpha takes its number from one shared table (scripts/syscall.tbl), so
 * these hold for x86_64 and aarch64 alike; Debian 12's headers stop at
 * 6.1. Names a native table does not have at all (x86-only calls on
 * aarch64) are -1: skipped with a note, since there is nothing to refuse.
 */
#ifndef __NR_lsm_get_self_attr
#define __NR_lsm_get_self_attr 459	/* 6.8 */
#endif
#ifndef __NR_lsm_set_self_attr
#define __NR_lsm_set_self_attr 460
#endif
#ifndef __NR_lsm_list_modules
#define __NR_lsm_list_modules 461
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467	/* 6.15 */
#endif
#ifndef __NR_listns
#define __NR_listns 470		/* 6.19 */
#endif
#ifndef __NR_set_mempolicy_home_node
#define __NR_set_mempolicy_home_node 450
#endif
#ifndef __NR_quotactl_fd
#define __NR_quotactl_fd 443
#endif
#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_modify_ldt
#define __NR_modify_ldt -1
#endif
#ifndef __NR_iopl
#define __NR_iopl -1
#endif
#ifndef __NR_ioperm
#define __NR_ioperm -1
#endif
#ifndef __NR_uselib
#define __NR_uselib -1
#endif
#ifndef __NR_ustat
#define __NR_ustat -1
#endif
#ifndef __NR_sysfs
#define __NR_sysfs -1
#endif
#ifndef __NR_lookup_dcookie
#define __NR_lookup_dcookie -1
#endif

struct named {
	const char *name;
	int nr;
};

#define SYS(n) { #n, __NR_##n }

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
static const struct named denied_syscalls[] = {
	/* keyrings are not namespaced */
	SYS(add_key), SYS(keyctl), SYS(request_key),
	/* kernel attack surface with a CVE history */
	SYS(bpf), SYS(perf_event_open), SYS(userfaultfd),
	SYS(io_uring_setup), SYS(io_uring_enter), SYS(io_uring_register),
	SYS(modify_ldt),
	/* NUMA memory policy: moby asks for CAP_SYS_NICE; mempolicy and page
	 * migration code has had use-after-frees (CVE-2018-10675 in
	 * get_mempolicy) and move_pages/migrate_pages act on other pids. With
	 * get_mempolicy refused too, libnuma's numa_available() answers "no
	 * NUMA" (it treats EPERM like ENOSYS) instead of failing later. */
	SYS(get_mempolicy), SYS(set_mempolicy), SYS(mbind), SYS(migrate_pages), SYS(move_pages),
	SYS(set_mempolicy_home_node),
	/* the machine itself */
	SYS(kexec_load), SYS(kexec_file_load), SYS(init_module), SYS(finit_module),
	SYS(delete_module), SYS(reboot), SYS(swapon), SYS(swapoff), SYS(acct), SYS(quotactl),
	SYS(quotactl_fd), SYS(lookup_dcookie), SYS(uselib), SYS(vhangup), SYS(iopl), SYS(ioperm),
	SYS(syslog),
	/* need a capability the sandbox never holds, so EPERM is what the
	 * kernel would say; refused before reaching it all the same */
	SYS(chroot), SYS(settimeofday), SYS(clock_settime), SYS(sethostname), SYS(setdomainname),
	/* obsolete (no glibc wrapper), nothing an agent runs calls them */
	SYS(sysfs), SYS(ustat),
	/* mount API, old and new: the view is fixed before exec */
	SYS(mount), SYS(umount2), SYS(pivot_root), SYS(fsopen), SYS(fsconfig), SYS(fsmount),
	SYS(fspick), SYS(move_mount), SYS(open_tree), SYS(open_tree_attr), SYS(mount_setattr),
	/* filesystem-wide event watching: moby asks for CAP_SYS_ADMIN;
	 * unprivileged fanotify (5.13) is new kernel surface, and inotify
	 * serves file watchers */
	SYS(fanotify_init),
	/* LSM attributes of the process (6.8): moby asks for CAP_SYS_ADMIN;
	 * /proc/self/attr stays, under the LSM's own checks */
	SYS(lsm_get_self_attr), SYS(lsm_set_self_attr), SYS(lsm_list_modules),
	/* namespace enumeration (6.19): nothing for an agent */
	SYS(listns),
	/* other processes' memory */
	SYS(ptrace), SYS(process_vm_readv), SYS(process_vm_writev),
	/* another process's fds and memory advice (defence in depth: the
	 * pid namespace and Landlock's ptrace rule already stop these); kcmp
	 * compares kernel pointers of two processes (moby asks for
	 * CAP_SYS_PTRACE; only checkpoint/restore tools use it) */
	SYS(pidfd_getfd), SYS(process_madvise), SYS(kcmp),
	/* file handles bypass path-based checks (Landlock, mount masks) */
	SYS(open_by_handle_at), SYS(name_to_handle_at),
	/* namespace creation and entry; clone/clone3 below */
	SYS(unshare), SYS(setns),
};


/* ---- the rules ------------------------------------------------------------ */

/*
 * A rule: syscall nr, an action, and up to three compares that must all
 * hold. The rules of one syscall are tried in the order they were added
 * and the first that holds decides; a syscall whose rules all fail, or
 * that has none, is allowed. Compares read an argument as the kernel
 * hands it to the filter, 64 bits wide:
 *   EQ   (x & mask) == val	NE   (x & mask) != val
 *   ANY  (x & mask) != 0	GE, GT  x >= val, x > val (mask unused)
 * For an int or unsigned int parameter the kernel reads only the low 32
 * bits (the C prototype truncates), so those compares mask 0xffffffff
 * (eq32): with 1 << 32 added a value would slip past a 64-bit compare and
 * still mean the same to the kernel.
 */
enum cmp_op { CMP_EQ, CMP_NE, CMP_ANY, CMP_GE, CMP_GT };

struct cmp {
	uint8_t arg;
	uint8_t op;
	uint64_t mask;
	uint64_t val;
};

#define RULE_CMPS 3
#define RULES_MAX 192

struct rule {
	int nr;
	unsigned seq;		/* the order of adding, which sorting keeps */
	uint32_t action;
	uint8_t n;
	struct cmp c[RULE_CMPS];
};

struct ruleset {
	struct rule r[RULES_MAX];
	size_t n;
	const struct sbx_seccomp_opts *opts;
	struct sbx_error *err;
};

#define LOW32 0xffffffffULL
#define ALL64 UINT64_MAX
#define EPERM_ACTION (SECCOMP_RET_ERRNO | EPERM)
#define ERRNO_ACTION(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))

static struct cmp eq32(unsigned arg, uint32_t v)
{
	return (struct cmp){ .arg = (uint8_t)arg, .op = CMP_EQ, .mask = LOW32, .val = v };
}

static struct cmp eq64(unsigned arg, uint64_t v)
{
	return (struct cmp){ .arg = (uint8_t)arg, .op = CMP_EQ, .mask = ALL64, .val = v };
}

static struct cmp ne64(unsigned arg, uint64_t v)
{
	return (struct cmp){ .arg = (uint8_t)arg, .op = CMP_NE, .mask = ALL64, .val = v };
}

static struct cmp masked_ne(unsigned arg, uint64_t mask, uint64_t v)
{
	return (struct cmp){ .arg = (uint8_t)arg, .op = CMP_NE, .mask = mask, .val = v };
}

static struct cmp any_bit(unsigned arg, uint64_t mask)
{
	return (struct cmp){ .arg = (uint8_t)arg, .op = CMP_ANY, .mask = mask };
}

static struct cmp ge64(unsigned arg, uint64_t v)
{
	return (struct cmp){ .arg = (uint8_t)arg, .op = CMP_GE, .val = v };
}

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

/* A syscall this arch's table lacks (nr -1) is skipped with a note: there
 * is nothing to refuse. The emitter relies on what is checked here: a
 * compare's argument exists, EQ and NE look at some low bit (every
 * compare here does) and ask for no bit the mask drops. */
static int add(struct ruleset *rs, const char *name, int nr, uint32_t action, unsigned n,
	       const struct cmp *c)
{
	struct rule *r;

	if (nr < 0) {
		note(rs->opts, "no such syscall on this arch", name);
		return 0;
	}
	if (rs->n == RULES_MAX || n > RULE_CMPS)
		return sbx_error_set(rs->err, E2BIG, "seccomp: too many rules (%s)", name);
	for (unsigned i = 0; i < n; i++)
		if (c[i].arg > 5 ||
		    ((c[i].op == CMP_EQ || c[i].op == CMP_NE || c[i].op == CMP_ANY) &&
		     ((uint32_t)c[i].mask == 0 || (c[i].val & ~c[i].mask))))
			return sbx_error_set(rs->err, EINVAL, "seccomp: a malformed compare (%s)",
					     name);
	r = &rs->r[rs->n++];
	r->nr = nr;
	r->seq = (unsigned)(rs->n - 1);
	r->action = action;
	r->n = (uint8_t)n;
	if (n)
		memcpy(r->c, c, n * sizeof(*c));
	return 0;
}

#define RULE0(rs, sys, action) add(rs, #sys, __NR_##sys, action, 0, NULL)
#define RULE(rs, sys, action, ...)                                                    \
	add(rs, #sys, __NR_##sys, action,                                              \
	    (unsigned)(sizeof((struct cmp[]){ __VA_ARGS__ }) / sizeof(struct cmp)),    \
	    (struct cmp[]){ __VA_ARGS__ })

/*
 * personality(2): only the query (0xffffffff) and PER_LINUX (0). The
 * kernel takes an unsigned int; any high bit is refused outright.
 */
static int add_personality_rules(struct ruleset *rs)
{
	int r;

	r = RULE(rs, personality, SECCOMP_RET_ALLOW, eq64(0, 0));
	if (r == 0)
		r = RULE(rs, personality, SECCOMP_RET_ALLOW, eq64(0, 0xffffffffULL));
	if (r == 0)
		r = RULE0(rs, personality, EPERM_ACTION);
	return r;
}

/*
 * socket(int family, int type, int protocol): the kernel reads 32 bits of
 * each. Only unix, netlink route and (where the profile has them) inet
 * and inet6 are made; AF_VSOCK in particular is not network-namespaced,
 * AF_PACKET/AF_ALG are attack surface, and a family a later kernel adds is
 * refused too (EAFNOSUPPORT, as from a kernel without it). Any high bit in
 * the family is refused first: it can only refuse more than the kernel's
 * 32-bit view, and libcs sign-extend an int, so no real caller puts bits
 * there.
 *
 * Netlink route only: getaddrinfo(AI_ADDRCONFIG) needs it and it is per
 * network namespace; audit, uevent, xfrm and the rest are not for an
 * agent (the 64-bit NE, like the high-bit rule, errs on refusing).
 *
 * docs/design.md sections 4.9, 10: TCP Fast Open and MPTCP were both seen
 * reaching a host loopback listener past Landlock's TCP connect rule on
 * 6.18; socket(AF_INET, SOCK_STREAM, 1 << 32 | IPPROTO_MPTCP) made an MPTCP
 * socket past a 64-bit EQ, hence eq32.
 *
 * Unix sockets other than stream and seqpacket go when connect() is
 * decided outside (unix_notify): a datagram names its peer per send. The
 * kernel turns SOCK_RAW into SOCK_DGRAM for AF_UNIX, so refusing
 * SOCK_DGRAM alone let a datagram through; the type's low 4 bits are the
 * type (the rest are SOCK_CLOEXEC and SOCK_NONBLOCK). Socket pairs too:
 * sendto() on a datagram one can still name any path.
 */
static int add_socket_rules(struct ruleset *rs)
{
	const struct sbx_seccomp_opts *o = rs->opts;
	const uint32_t afnosupport = ERRNO_ACTION(EAFNOSUPPORT);
	static const int inet[] = { AF_INET, AF_INET6 };
	int r;

	r = 0;
	if (o->unix_notify)
		r = RULE(rs, socket, EPERM_ACTION, eq32(0, AF_UNIX),
			 masked_ne(1, 0xf, SOCK_STREAM), masked_ne(1, 0xf, SOCK_SEQPACKET));
	for (size_t i = 0; r == 0 && !o->inet_denied && o->network_denied &&
	     i < ARRAY_SIZE(inet); i++)
		r = RULE(rs, socket, EPERM_ACTION, eq32(0, (uint32_t)inet[i]),
			 eq32(2, IPPROTO_MPTCP));
	if (r == 0)
		r = RULE(rs, socket, afnosupport, ge64(0, AF_MAX));
	if (r == 0)
		r = RULE(rs, socket, SECCOMP_RET_ALLOW, eq32(0, AF_UNIX));
	if (r == 0)
		r = RULE(rs, socket, afnosupport, eq32(0, AF_NETLINK), ne64(2, NETLINK_ROUTE));
	if (r == 0)
		r = RULE(rs, socket, SECCOMP_RET_ALLOW, eq32(0, AF_NETLINK));
	for (size_t i = 0; r == 0 && !o->inet_denied && i < ARRAY_SIZE(inet); i++)
		r = RULE(rs, socket, SECCOMP_RET_ALLOW, eq32(0, (uint32_t)inet[i]));
	if (r == 0)
		r = RULE0(rs, socket, afnosupport);
	if (r == 0 && o->unix_notify)
		r = RULE(rs, socketpair, EPERM_ACTION, eq32(0, AF_UNIX),
			 masked_ne(1, 0xf, SOCK_STREAM), masked_ne(1, 0xf, SOCK_SEQPACKET));
	return r;
}

/* The rest of network = deny's TCP Fast Open refusal. Every compare is on
 * the low 32 bits: setsockopt's level and optname are int, the send*
 * flags unsigned int (a one-bit mask in the low half needs nothing more). */
static int add_network_denied_rules(struct ruleset *rs)
{
	int r;

	r = RULE(rs, sendto, EPERM_ACTION, any_bit(3, MSG_FASTOPEN));
	if (r == 0)
		r = RULE(rs, sendmsg, EPERM_ACTION, any_bit(2, MSG_FASTOPEN));
	if (r == 0)
		r = RULE(rs, sendmmsg, EPERM_ACTION, any_bit(3, MSG_FASTOPEN));
	if (r == 0)
		r = RULE(rs, setsockopt, EPERM_ACTION, eq32(1, IPPROTO_TCP),
			 eq32(2, TCP_FASTOPEN_CONNECT));
	if (r == 0)
		r = RULE(rs, setsockopt, EPERM_ACTION, eq32(1, IPPROTO_TCP), eq32(2, TCP_FASTOPEN));
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
static int add_gate_rules(struct ruleset *rs)
{
	int r;

	r = RULE0(rs, memfd_create, EPERM_ACTION);
	if (r == 0)
		r = RULE0(rs, memfd_secret, EPERM_ACTION);
	if (r == 0)
		r = RULE(rs, execveat, EPERM_ACTION, any_bit(4, AT_EMPTY_PATH));
	return r;
}

/*
 * W^X under the gate (docs/design.md section 6). An allowed interpreter
 * made to run crafted code mapped anonymous memory executable and jumped
 * into native code no file had given it. PR_SET_MDWE (Linux 6.3) refuses
 * a mapping both writable and executable and any mapping gaining
 * PROT_EXEC, but not a new executable mapping: on 6.18 under MDWE,
 * mmap(MAP_SHARED|MAP_ANONYMOUS, PROT_READ|PROT_EXEC) and then
 * mremap(old_size 0) gave a second mapping of the same pages, which
 * mprotect made writable (dropping exec is not a gain), and code written
 * there ran through the first; a fork shares the pages the same way, and
 * so does a SysV segment attached twice, once SHM_EXEC. So executable
 * mappings are private file mappings only: what ld.so makes, of files the
 * mount view leaves executable (the allow-list's closure, all root's).
 * Without MDWE the filter refuses what MDWE would too: a mapping both
 * writable and executable, and mprotect/pkey_mprotect to PROT_EXEC at all,
 * since BPF cannot tell a file mapping from anonymous memory. glibc's
 * loader maps code with mmap of the file and asks mprotect for PROT_EXEC
 * only for an executable stack or text relocations, both refused by MDWE
 * as well (bash, python3, git, gcc, make and perl ran alike under both).
 * mmap's prot and flags and mprotect's prot are unsigned long, read whole
 * by the kernel; every bit compared is in the low word. shmflg is an int,
 * SHM_EXEC a low bit.
 */
static int add_wx_rules(struct ruleset *rs)
{
	int r;

	r = RULE(rs, mmap, EPERM_ACTION, any_bit(2, PROT_EXEC),
		 any_bit(3, MAP_ANONYMOUS | MAP_SHARED));
	if (r == 0)
		r = RULE(rs, shmat, EPERM_ACTION, any_bit(2, SHM_EXEC));
	if (r != 0 || !rs->opts->wx_no_mdwe)
		return r;
	r = RULE(rs, mmap, EPERM_ACTION, any_bit(2, PROT_EXEC), any_bit(2, PROT_WRITE));
	if (r == 0)
		r = RULE(rs, mprotect, EPERM_ACTION, any_bit(2, PROT_EXEC));
	if (r == 0)
		r = RULE(rs, pkey_mprotect, EPERM_ACTION, any_bit(2, PROT_EXEC));
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
 *
 * Without a pid namespace, SCHED_IDLE on the outer process, pinned to one
 * CPU beside 400 spinning threads, delayed a 5 s session_time to 196 s.
 * There the scheduling calls take the caller only: pthread_setaffinity_np
 * and pthread_setschedparam (which name a tid) get EPERM. In a pid
 * namespace only the session's own processes have a pid it can name:
 * the program and, of the sandbox's machinery, the init (PID 1) and its
 * supervisor threads, whose slowing delays the session itself and not
 * its deadline (the outer process keeps it). Refusing every other pid
 * there would break taskset -p and pthread_setaffinity_np (README,
 * known limitations).
 * ioprio_set(which, who, prio): IOPRIO_WHO_PROCESS (1) of the caller.
 */
static const struct named sched_calls[] = {
	SYS(sched_setaffinity), SYS(sched_setscheduler), SYS(sched_setparam), SYS(sched_setattr),
};

static int add_process_rules(struct ruleset *rs)
{
	int r;

	r = RULE(rs, prlimit64, EPERM_ACTION, ne64(0, 0));
	if (r == 0)
		r = RULE(rs, setpriority, EPERM_ACTION, ne64(0, PRIO_PROCESS));
	if (r == 0)
		r = RULE(rs, setpriority, EPERM_ACTION, ne64(1, 0));
	if (!rs->opts->host_pids)
		return r;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(sched_calls); i++) {
		struct cmp c = ne64(0, 0);

		r = add(rs, sched_calls[i].name, sched_calls[i].nr, EPERM_ACTION, 1, &c);
	}
	if (r == 0)
		r = RULE(rs, ioprio_set, EPERM_ACTION, ne64(0, 1));
	if (r == 0)
		r = RULE(rs, ioprio_set, EPERM_ACTION, ne64(1, 0));
	return r;
}

/* clone(2) flags that create a namespace. CLONE_NEWTIME (0x80) overlaps the
 * exit-signal byte of clone(2); a signal >= 128 is invalid anyway, so the
 * extra refusal costs nothing. clone takes unsigned long flags but reads
 * lower_32_bits() of them (kernel/fork.c); the mask looks at nothing else. */
#define CLONE_NS_FLAGS                                                              \
	((uint64_t)(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |   \
		    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME))

/* Every rule of the profile, in the order the emitter keeps per syscall. */
static int build_rules(struct ruleset *rs)
{
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < ARRAY_SIZE(denied_syscalls); i++)
		r = add(rs, denied_syscalls[i].name, denied_syscalls[i].nr, EPERM_ACTION, 0, NULL);
	if (r == 0)
		r = add_personality_rules(rs);
	if (r == 0)
		r = RULE(rs, clone, EPERM_ACTION, any_bit(0, CLONE_NS_FLAGS));
	/* clone3's flags live in a struct in memory seccomp cannot read;
	 * ENOSYS makes glibc fall back to clone(2), which is filtered. */
	if (r == 0)
		r = RULE0(rs, clone3, ERRNO_ACTION(ENOSYS));
	/* ioctl(2) takes an unsigned int cmd. TIOCSTI types into the terminal
	 * (CVE-2017-5226 class), TIOCLINUX reaches the console; TIOCSETD
	 * switches line discipline, which loads rarely used ldisc code on the
	 * pty (n_gsm: CVE-2023-6546, CVE-2024-36016). */
	if (r == 0)
		r = RULE(rs, ioctl, EPERM_ACTION, eq32(1, TIOCSTI));
	if (r == 0)
		r = RULE(rs, ioctl, EPERM_ACTION, eq32(1, TIOCLINUX));
	if (r == 0)
		r = RULE(rs, ioctl, EPERM_ACTION, eq32(1, TIOCSETD));
	if (r == 0)
		r = add_socket_rules(rs);
	if (r == 0)
		r = add_process_rules(rs);
	/* A user-notification listener would let the sandbox answer syscalls
	 * for its own children; nested plain filters stay allowed. The op is
	 * an unsigned int: 1 << 32 | SET_MODE_FILTER is SET_MODE_FILTER. */
	if (r == 0)
		r = RULE(rs, seccomp, EPERM_ACTION, eq32(0, SECCOMP_SET_MODE_FILTER),
			 any_bit(1, SECCOMP_FILTER_FLAG_NEW_LISTENER));
	if (r == 0 && rs->opts->network_denied)
		r = add_network_denied_rules(rs);
	if (r == 0 && rs->opts->gated)
		r = add_gate_rules(rs);
	if (r == 0 && rs->opts->wx)
		r = add_wx_rules(rs);
	/* Pathname unix sockets are reached by connect() only once datagram
	 * sockets are gone (add_socket_rules): every connect() goes to the
	 * supervisor (lib/unixsock.c), which decides and connects on the
	 * caller's behalf; bind() too where abstract names are the host's. */
	if (r == 0 && rs->opts->unix_notify)
		r = RULE0(rs, connect, SECCOMP_RET_USER_NOTIF);
	if (r == 0 && rs->opts->unix_notify && rs->opts->unix_bind_notify)
		r = RULE0(rs, bind, SECCOMP_RET_USER_NOTIF);
	/* The supervisor acts for a caller with the rights ptrace would need
	 * (pidfd_getfd, process_vm_readv): a non-dumpable one could bind and
	 * connect nothing (ssh-agent makes itself so before it binds). So
	 * PR_SET_DUMPABLE 0 succeeds and changes nothing; what it guards
	 * against, another process of the uid reading this one, is inside
	 * the sandbox the agent itself (ptrace and process_vm_* refused). */
	if (r == 0 && rs->opts->unix_notify)
		r = RULE(rs, prctl, ERRNO_ACTION(0), eq32(0, PR_SET_DUMPABLE), eq64(1, 0));
	return r;
}

/* ---- the BPF ---------------------------------------------------------------- */

/*
 * The program:
 *
 *   arch != native                  -> KILL_PROCESS (i386's int 0x80 too)
 *   x86_64: nr <= 336               -> the tree (the common case first)
 *           nr >= 0x40000000 (x32)  -> KILL_PROCESS, but -1 -> ALLOW
 *           nr > CUTOFF or 337..423 -> ENOSYS
 *           else                    -> the tree
 *   aarch64: nr > CUTOFF            -> ENOSYS, else the tree
 *   the tree: a binary search on the numbers that have rules; each leaf
 *   tests its number, runs that syscall's rules, and allows what none
 *   refused; a number without rules is allowed at the leaf's first test.
 *
 * The cutoff: a deny-list with default ALLOW lets through whatever syscall
 * a later kernel adds, so every number above SBX_SECCOMP_NR_CUTOFF answers
 * ENOSYS (what an older kernel says, so libc falls back as for clone3)
 * until someone reviews it and moves the cutoff. x86_64's x86-only
 * syscalls go after the last 64-bit entry (uretprobe 335, uprobe 336), so
 * 337-423 is refused too; 424 on is the shared table. -1 is what a tracer
 * leaves to skip a call, which the kernel answers itself.
 *
 * Until the number is decided, every path loads only arch and nr and uses
 * only the jumps the kernel's action cache emulates (seccomp_cache_prepare
 * and seccomp_is_const_allow in kernel/seccomp.c): every syscall allowed
 * without an argument rule is answered from the per-arch bitmap, without
 * running the filter. test_filter_shape checks both on every number.
 *
 * Jumps of classic BPF reach 255 instructions; a subtree longer than that
 * is stepped over with a JA (32-bit offset).
 */

/* A jump target inside one compare's code: the next instruction, the
 * compare's "holds" exit (the next compare, or the rule's RET) or its
 * "fails" exit (the next rule). */
enum { T_NEXT, T_PASS, T_FAIL };

struct insn {
	uint16_t code;
	uint32_t k;
	uint8_t jt, jf;		/* T_* for a conditional jump */
};

struct emit {
	struct sock_filter *p;	/* NULL: count only */
	size_t n, max;
	int bad;		/* -E2BIG: too long; -ERANGE: a jump too far */
};

static void put(struct emit *e, uint16_t code, uint32_t k, size_t jt, size_t jf)
{
	if (jt > 255 || jf > 255)
		e->bad = -ERANGE;
	if (e->p) {
		if (e->n >= e->max)
			e->bad = -E2BIG;
		else
			e->p[e->n] = (struct sock_filter){ code, (uint8_t)jt, (uint8_t)jf, k };
	}
	e->n++;
}

#define LD_W (BPF_LD | BPF_W | BPF_ABS)
#define JEQ (BPF_JMP | BPF_JEQ | BPF_K)
#define JGT (BPF_JMP | BPF_JGT | BPF_K)
#define JGE (BPF_JMP | BPF_JGE | BPF_K)
#define JSET (BPF_JMP | BPF_JSET | BPF_K)
#define JA (BPF_JMP | BPF_JA)
#define RET (BPF_RET | BPF_K)
#define AND (BPF_ALU | BPF_AND | BPF_K)

static unsigned cmp_code(const struct cmp *c, struct insn *o)
{
	uint32_t lo = (uint32_t)(offsetof(struct seccomp_data, args) + 8u * c->arg);
	uint32_t hi = lo + 4;
	uint32_t mh = (uint32_t)(c->mask >> 32), ml = (uint32_t)c->mask;
	uint32_t vh = (uint32_t)(c->val >> 32), vl = (uint32_t)c->val;
	unsigned n = 0;

#define I(code_, k_, jt_, jf_) (o[n++] = (struct insn){ (code_), (k_), (jt_), (jf_) })
	switch (c->op) {
	case CMP_EQ:
		if (mh) {
			I(LD_W, hi, 0, 0);
			if (mh != UINT32_MAX)
				I(AND, mh, 0, 0);
			I(JEQ, vh, T_NEXT, T_FAIL);
		}
		I(LD_W, lo, 0, 0);
		if (vl == ml && (ml & (ml - 1)) == 0) {
			I(JSET, ml, T_PASS, T_FAIL);	/* one bit, asked set */
		} else {
			if (ml != UINT32_MAX)
				I(AND, ml, 0, 0);
			I(JEQ, vl, T_PASS, T_FAIL);
		}
		break;
	case CMP_NE:
		if (mh) {
			I(LD_W, hi, 0, 0);
			if (mh != UINT32_MAX)
				I(AND, mh, 0, 0);
			I(JEQ, vh, T_NEXT, T_PASS);
		}
		I(LD_W, lo, 0, 0);
		if (ml != UINT32_MAX)
			I(AND, ml, 0, 0);
		I(JEQ, vl, T_FAIL, T_PASS);
		break;
	case CMP_ANY:
		if (mh) {
			I(LD_W, hi, 0, 0);
			I(JSET, mh, T_PASS, T_NEXT);
		}
		I(LD_W, lo, 0, 0);
		I(JSET, ml, T_PASS, T_FAIL);
		break;
	default:	/* CMP_GE, CMP_GT: unsigned, all 64 bits */
		I(LD_W, hi, 0, 0);
		if (vh == 0) {
			I(JEQ, 0, T_NEXT, T_PASS);
		} else {
			I(JGT, vh, T_PASS, T_NEXT);
			I(JEQ, vh, T_NEXT, T_FAIL);
		}
		I(LD_W, lo, 0, 0);
		I(c->op == CMP_GE ? JGE : JGT, vl, T_PASS, T_FAIL);
		break;
	}
#undef I
	return n;
}

/* One compare's code; fail_after: instructions between its end and the
 * next rule. */
static void emit_cmp(struct emit *e, const struct cmp *c, size_t fail_after)
{
	struct insn code[8];
	unsigned len = cmp_code(c, code);

	for (unsigned j = 0; j < len; j++) {
		size_t to_end = len - j - 1;
		size_t t[3] = { 0, to_end, to_end + fail_after };

		if (BPF_CLASS(code[j].code) == BPF_JMP)
			put(e, code[j].code, code[j].k, t[code[j].jt], t[code[j].jf]);
		else
			put(e, code[j].code, code[j].k, 0, 0);
	}
}

static size_t cmp_len(const struct cmp *c)
{
	struct insn code[8];

	return cmp_code(c, code);
}

/* The rules of one syscall, then RET ALLOW: a rule's failed compare goes
 * to the next rule, the last rule's to the RET ALLOW. */
static void emit_block(struct emit *e, const struct rule *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t after[RULE_CMPS + 1];

		after[r[i].n] = 1;	/* the RET */
		for (unsigned j = r[i].n; j-- > 0;)
			after[j] = after[j + 1] + cmp_len(&r[i].c[j]);
		for (unsigned j = 0; j < r[i].n; j++)
			emit_cmp(e, &r[i].c[j], after[j + 1]);
		put(e, RET, r[i].action, 0, 0);
	}
	put(e, RET, SECCOMP_RET_ALLOW, 0, 0);
}

/* One syscall's rules: r[first..first+count) of a ruleset sorted by nr. */
struct leaf {
	int nr;
	size_t first, count;
};

static size_t block_len(const struct ruleset *rs, const struct leaf *l)
{
	struct emit dry = { 0 };

	emit_block(&dry, &rs->r[l->first], l->count);
	return dry.n;
}

/* Recursion: halves [lo, hi) each level, at most 8 deep for RULES_MAX leaves.
 * NOLINTNEXTLINE(misc-no-recursion) */
static void emit_tree(struct emit *e, const struct ruleset *rs, const struct leaf *leaves,
		      size_t lo, size_t hi)
{
	if (hi - lo == 1) {
		const struct leaf *l = &leaves[lo];
		size_t len = block_len(rs, l);

		/* JEQ nr: the rules; else the block's closing RET ALLOW */
		put(e, JEQ, (uint32_t)l->nr, 0, len - 1);
		emit_block(e, &rs->r[l->first], l->count);
	} else {
		size_t mid = lo + (hi - lo) / 2;
		struct emit dry = { 0 };

		emit_tree(&dry, rs, leaves, lo, mid);
		if (dry.n <= 255) {
			put(e, JGE, (uint32_t)leaves[mid].nr, dry.n, 0);
		} else {
			put(e, JGE, (uint32_t)leaves[mid].nr, 0, 1);
			put(e, JA, (uint32_t)dry.n, 0, 0);
		}
		emit_tree(e, rs, leaves, lo, mid);
		emit_tree(e, rs, leaves, mid, hi);
	}
}

static int cmp_rule_nr(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;

	if (x->nr != y->nr)
		return x->nr < y->nr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

#ifdef SBX_NATIVE_AUDIT_ARCH
static void emit_head(struct emit *e)
{
	put(e, LD_W, offsetof(struct seccomp_data, arch), 0, 0);
	put(e, JEQ, SBX_NATIVE_AUDIT_ARCH, 1, 0);
	put(e, RET, SECCOMP_RET_KILL_PROCESS, 0, 0);
	put(e, LD_W, offsetof(struct seccomp_data, nr), 0, 0);
#if defined(__x86_64__)
	put(e, JGT, 336, 0, 7);			/* -> the tree */
	put(e, JGE, 0x40000000, 0, 3);
	put(e, JEQ, UINT32_MAX, 0, 1);
	put(e, RET, SECCOMP_RET_ALLOW, 0, 0);
	put(e, RET, SECCOMP_RET_KILL_PROCESS, 0, 0);
	put(e, JGT, SBX_SECCOMP_NR_CUTOFF, 1, 0);
	put(e, JGE, 424, 1, 0);			/* -> the tree */
#else
	put(e, JGT, SBX_SECCOMP_NR_CUTOFF, 0, 1);
#endif
	put(e, RET, SECCOMP_RET_ERRNO | ENOSYS, 0, 0);
}
#endif

int sbx_seccomp_prepare(struct sbx_seccomp_opts *o, struct sbx_error *err)
{
#ifndef SBX_NATIVE_AUDIT_ARCH
	(void)o;
	return sbx_error_set(err, ENOTSUP, "seccomp: no filter is written for this arch");
#else
	struct ruleset rs;
	struct leaf leaves[RULES_MAX];
	struct emit e = { .p = o->prog, .max = ARRAY_SIZE(o->prog) };
	size_t nleaves = 0;
	int r;

	if (o->prog_len)
		return 0;
	if (o->notes && o->notes_size)
		o->notes[0] = '\0';
	memset(&rs, 0, sizeof(rs));
	rs.opts = o;
	rs.err = err;
	r = build_rules(&rs);
	if (r != 0)
		return r;
	qsort(rs.r, rs.n, sizeof(rs.r[0]), cmp_rule_nr);
	for (size_t i = 0; i < rs.n; i++) {
		if (nleaves && leaves[nleaves - 1].nr == rs.r[i].nr) {
			leaves[nleaves - 1].count++;
			continue;
		}
		leaves[nleaves++] = (struct leaf){ rs.r[i].nr, i, 1 };
	}
	emit_head(&e);
	if (nleaves)
		emit_tree(&e, &rs, leaves, 0, nleaves);
	else
		put(&e, RET, SECCOMP_RET_ALLOW, 0, 0);
	if (e.bad == -E2BIG || e.n > e.max)
		return sbx_error_set(err, E2BIG, "seccomp: the filter exceeds %zu instructions",
				     e.max);
	if (e.bad)
		return sbx_error_set(err, ERANGE, "seccomp: a jump past 255 instructions");
	o->prog_len = e.n;
	return 0;
#endif
}

int sbx_seccomp_apply(struct sbx_seccomp_opts *o, struct sbx_error *err)
{
	struct sock_fprog prog;
	unsigned int flags = 0;
	long r;

	o->notify_fd = -1;
	r = sbx_seccomp_prepare(o, err);
	if (r != 0)
		return (int)r;
	prog.len = (unsigned short)o->prog_len;
	prog.filter = o->prog;
	/* no_new_privs (already set by every caller in this tree; unprivileged
	 * loading needs it), and a listener when connect() is sent to the
	 * supervisor (without one, a notifying filter answers ENOSYS). The
	 * kernel makes the listener close-on-exec. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return sbx_error_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	if (o->unix_notify)
		flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (r < 0) {
		int e = errno;

		return sbx_error_set(err, e, "seccomp(SET_MODE_FILTER, %u instructions%s): %s",
				     prog.len, o->unix_notify ? ", NEW_LISTENER" : "", strerror(e));
	}
	if (o->unix_notify)
		o->notify_fd = (int)r;
	return 0;
}
