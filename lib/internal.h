/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal interfaces of libsbx: shared helpers and one block per
 * mechanism file. Not installed; the shell and the PAM module include it
 * because they link libsbx statically.
 */
#ifndef SBX_INTERNAL_H
#define SBX_INTERNAL_H

#include <stdarg.h>
#include "sbx.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- util.c: errors, bounded strings, numbers, paths -------------------- */

/* Fill err (if not NULL) and return -code. code is a positive errno. */
int sbx_error_set(struct sbx_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sbx_error_clear(struct sbx_error *err);

/* Copy with truncation check: 0 or -ENAMETOOLONG (dst left as "" then). */
int sbx_strlcpy(char *dst, size_t size, const char *src);
/* snprintf that fails on truncation: 0 or -ENAMETOOLONG. */
int sbx_snprintf(char *dst, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Decimal u64 with optional suffix K/M/G/T (powers of 1024) when
 * allow_suffix; bounds inclusive. 0 or -EINVAL / -ERANGE. */
int sbx_parse_u64(const char *s, bool allow_suffix, uint64_t min, uint64_t max,
		  uint64_t *out);

/* Absolute, no "//", no "." or ".." segment, no trailing "/" (except "/"). */
bool sbx_path_is_canonical(const char *path);
/* Component-wise prefix: "/a/b" is under "/a" and "/a/b", not under "/a/bc";
 * everything is under "/". */
bool sbx_path_is_under(const char *path, const char *prefix);

/* Read a whole small file (bounded by max) into a NUL-terminated buffer. */
int sbx_read_file(const char *path, size_t max, char **out, size_t *len,
		  struct sbx_error *err);

/* ---- session: what the caller knows about this session ----------------- */

struct sbx_session {
	char user[SBX_NAME_MAX];
	uid_t uid;
	gid_t gid;
	char home[SBX_PATH_MAX];	/* $HOME inside the sandbox (passwd home) */
	char home_source[SBX_PATH_MAX];	/* bound at home; "" = fresh tmpfs */
	char workspace[SBX_PATH_MAX];	/* resolved, existing workspace root */
	char session_id[40];
	char client[128];
	char service[SBX_NAME_MAX];
};

/* ---- env.c: process hygiene (DESIGN 4.1) -------------------------------- */

/* Build a new environment from envp keeping only the allow-list (PATH,
 * TERM, LANG, LC_*, TZ, SSH_CONNECTION, SSH_CLIENT, SSH_TTY,
 * SSH_ORIGINAL_COMMAND, COLORTERM, AGENT_SANDBOX_SESSION) and setting HOME,
 * USER, LOGNAME, SHELL from the session; PATH gets a safe default when
 * absent. LD_*, BASH_ENV, ENV, GLIBC_TUNABLES and everything else are
 * dropped. Values with bytes < 0x20 (but TAB) are dropped. */
int sbx_env_build(char *const *envp, const struct sbx_session *s,
		  const char *shell, char ***out, struct sbx_error *err);
void sbx_env_free(char **env);
/* Close every fd above maxfd (close_range, with a /proc/self/fd fallback). */
int sbx_fd_close_above(int maxfd, struct sbx_error *err);
/* Reset every signal disposition to default and unblock all signals. */
void sbx_signals_reset(void);

/* ---- ns.c: namespaces -------------------------------------------------- */

/* unshare(CLONE_NEWUSER) and map uid->uid, gid->gid (one entry each),
 * setgroups "deny". The caller keeps all capabilities inside the new
 * namespace until it drops them. */
int sbx_userns_enter(uid_t uid, gid_t gid, struct sbx_error *err);
/* unshare(flags) with a message naming each namespace. */
int sbx_ns_unshare(int clone_flags, struct sbx_error *err);
/* Bring "lo" up in the current network namespace. */
int sbx_net_lo_up(struct sbx_error *err);
/* Inode of /proc/self/ns/<name>, or 0. */
unsigned long sbx_ns_inode(const char *name);

/* ---- init.c: the PID-1 init and the outer supervisor ------------------- */

/* Run as PID 1 of a new pid namespace: forward SIGHUP/SIGINT/SIGTERM/
 * SIGQUIT/SIGUSR1/SIGUSR2/SIGWINCH/SIGCONT to child (and its process group
 * when it has one), reap every zombie, and when child exits return its
 * status as an exit code (status, or 128+signal). */
int sbx_init_supervise(pid_t child);
/* Same for the outer process in the host pid namespace waiting for init. */
int sbx_wait_forward(pid_t child);

/* ---- mounts.c: the mount view (DESIGN 4.4) ----------------------------- */

enum sbx_mount_kind {
	SBX_MOUNT_BIND,		/* source -> target */
	SBX_MOUNT_TMPFS,	/* fresh tmpfs at target, size bytes */
	SBX_MOUNT_MASK,		/* hide target: empty ro tmpfs (dir) or /dev/null (file) */
};

#define SBX_MOUNT_RW 1u
#define SBX_MOUNT_NOEXEC 2u

struct sbx_mount {
	enum sbx_mount_kind kind;
	char source[SBX_PATH_MAX];
	char target[SBX_PATH_MAX];
	unsigned flags;		/* SBX_MOUNT_RW, SBX_MOUNT_NOEXEC */
	uint64_t size;		/* tmpfs only */
	bool optional;		/* skip (and say so) when source is missing */
};

#define SBX_MAX_MOUNTS 96

struct sbx_mount_plan {
	bool host_readonly;	/* whole host tree read-only, nosuid */
	bool fresh_proc;	/* needs to run inside the new pid namespace */
	bool minimal_dev;	/* tmpfs /dev with null zero full random urandom tty, new devpts */
	size_t n;
	struct sbx_mount m[SBX_MAX_MOUNTS];
};

/* Describe: the mount plan for a profile and session (no side effects). */
int sbx_mount_plan_build(const struct sbx_profile *p, const struct sbx_session *s,
			 struct sbx_mount_plan *plan, struct sbx_error *err);
/* Apply in a private mount namespace (needs CAP_SYS_ADMIN there). */
int sbx_mount_view_apply(const struct sbx_mount_plan *plan,
			 char *detail, size_t detail_size, struct sbx_error *err);

/* ---- caps.c ------------------------------------------------------------ */

/* Clear bounding, ambient, inheritable, permitted and effective sets and
 * lock securebits (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS off, NO_CAP_AMBIENT_RAISE,
 * all with their _LOCKED bits). */
int sbx_caps_drop_all(struct sbx_error *err);
/* Prove it: re-read all five sets; -EPERM naming what is left. */
int sbx_caps_verify_none(struct sbx_error *err);

/* ---- limits.c ---------------------------------------------------------- */

/* Apply the set rlimits; RLIMIT_CORE is always 0. Never raises a hard limit. */
int sbx_rlimits_apply(const struct sbx_limits *l, struct sbx_error *err);

/* ---- landlock.c -------------------------------------------------------- */

enum sbx_fs_right {
	SBX_FS_READ = 1u << 0,		/* READ_FILE, READ_DIR on dirs */
	SBX_FS_WRITE = 1u << 1,		/* WRITE_FILE, TRUNCATE, MAKE_*, REMOVE_* */
	SBX_FS_EXEC = 1u << 2,		/* EXECUTE */
	SBX_FS_REFER = 1u << 3,		/* REFER (rename/link across dirs) */
	SBX_FS_IOCTL_DEV = 1u << 4,	/* IOCTL_DEV */
};

#define SBX_LANDLOCK_MAX_RULES 160

struct sbx_landlock_rule {
	char path[SBX_PATH_MAX];
	unsigned rights;	/* SBX_FS_* */
	bool optional;		/* a missing path is skipped, not an error */
};

struct sbx_landlock_plan {
	size_t n_rules;
	struct sbx_landlock_rule rules[SBX_LANDLOCK_MAX_RULES];
	/* Holes: no rule may grant anything at or under these. A rule on an
	 * ancestor is expanded into rules on the siblings along the way. */
	size_t n_deny;
	char deny[SBX_MAX_DENY][SBX_PATH_MAX];
	bool net_deny_tcp;	/* handle TCP bind+connect with no port rule */
	bool scope_signal;	/* ABI 6 */
	bool scope_abstract_unix;	/* ABI 6 */
	bool log_new_exec;	/* ABI 7: audit denials after exec too */
};

struct sbx_landlock_result {
	int abi;			/* ABI used, 0 = none */
	uint64_t handled_fs;
	uint64_t handled_net;
	uint64_t scoped;
	char dropped[512];	/* rights/features requested but not in this ABI */
	size_t n_rules_added;
	char skipped[512];	/* optional paths that did not exist */
};

/* Describe: Landlock rules for a profile and session (no side effects). */
int sbx_landlock_plan_build(const struct sbx_profile *p, const struct sbx_session *s,
			    bool netns, struct sbx_landlock_plan *plan,
			    struct sbx_error *err);
/* Kernel ABI (0 when unavailable). */
int sbx_landlock_abi(void);
/* Restrict the calling thread at min(kernel ABI, abi_limit) (abi_limit 0 =
 * no limit). Needs no_new_privs already set. */
int sbx_landlock_apply(const struct sbx_landlock_plan *plan, int abi_limit,
		       struct sbx_landlock_result *res, struct sbx_error *err);

/* ---- seccomp.c --------------------------------------------------------- */

struct sbx_seccomp_opts {
	bool network_denied;	/* deny MSG_FASTOPEN, MPTCP, non-unix/inet families */
	bool inet_denied;	/* also deny AF_INET/AF_INET6 sockets (no netns) */
	bool gated;		/* deny memfd_create without MFD_NOEXEC_SEAL, execveat of fds */
};

/* Load the filter (libseccomp): non-native arches and x32 killed; the
 * dangerous list of DESIGN 4.9 refused with EPERM (clone3 with ENOSYS). */
int sbx_seccomp_apply(const struct sbx_seccomp_opts *o, struct sbx_error *err);

/* ---- probe.c ----------------------------------------------------------- */

/* Test-only: replace the cached probe. Only test binaries call this; the
 * shipped binaries have no path (env, argument, file) that reaches it. */
void sbx_probe_set_for_tests(const struct sbx_probe *p);

/* ---- canary.c ---------------------------------------------------------- */

struct sbx_canary_ctx {
	unsigned long host_ns_user, host_ns_mnt, host_ns_pid, host_ns_net,
		host_ns_ipc, host_ns_uts, host_ns_cgroup;	/* before unshare */
};

/* Run inside the fully confined process (after seccomp): try the forbidden
 * things and set entry[].verified in r only for canaries that passed. */
void sbx_canary_run(const struct sbx_profile *p, const struct sbx_session *s,
		    const struct sbx_canary_ctx *ctx, struct sbx_report *r);

#endif /* SBX_INTERNAL_H */
