/* SPDX-License-Identifier: BSD-3-Clause */
/* Landlock uapi constants newer than Debian 12's <linux/landlock.h> (ABI 2). */
#ifndef SBX_LANDLOCK_COMPAT_H
#define SBX_LANDLOCK_COMPAT_H

/*
 * Values checked against the upstream uapi header include/uapi/linux/landlock.h
 * as of Linux 6.15 (ABI 7; unchanged through 6.18). Every constant is guarded
 * so a newer system header wins without a redefinition warning. Only the
 * structs are our own (sbx_ prefix): a struct cannot be #ifndef-guarded and
 * the system header's struct landlock_ruleset_attr has only the ABI-1 field.
 */
#include <stdint.h>
#include <sys/syscall.h>
#include <linux/landlock.h>

/* ABI 1 (Linux 5.13) */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
/* Errata query (Linux 6.15) */
#ifndef LANDLOCK_CREATE_RULESET_ERRATA
#define LANDLOCK_CREATE_RULESET_ERRATA (1U << 1)
#endif
/* ABI 2 (Linux 5.19) */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
/* ABI 3 (Linux 6.2) */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
/* ABI 5 (Linux 6.10) */
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
/* ABI 4 (Linux 6.7): TCP ports. enum landlock_rule_type value 2. */
#ifndef LANDLOCK_RULE_NET_PORT
#define LANDLOCK_RULE_NET_PORT 2
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
/* ABI 6 (Linux 6.12): IPC scopes */
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
/* ABI 7 (Linux 6.15): landlock_restrict_self() audit-log flags */
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)
#endif

/* Syscall numbers: Debian 12's glibc <sys/syscall.h> has all three
 * (x86_64: 444, 445, 446; same on aarch64 through the generic table). */
#if !defined(SYS_landlock_create_ruleset) || !defined(SYS_landlock_add_rule) || \
	!defined(SYS_landlock_restrict_self)
#error "libc headers lack the Landlock syscall numbers"
#endif

/* The full ABI-6 layout of struct landlock_ruleset_attr. The kernel takes the
 * size as an argument (copy_struct_from_user), so older kernels accept a
 * shorter size and we pass only the fields the ABI in use knows. */
struct sbx_landlock_ruleset_attr {
	uint64_t handled_access_fs;	/* ABI 1 */
	uint64_t handled_access_net;	/* ABI 4 */
	uint64_t scoped;		/* ABI 6 */
};

/* struct landlock_net_port_attr (ABI 4); not packed upstream either. */
struct sbx_landlock_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

#endif /* SBX_LANDLOCK_COMPAT_H */
