/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal interfaces of libsbx: shared helpers and one block per
 * mechanism file. Not installed; the shell and the PAM module include it
 * because they link libsbx statically.
 */
#ifndef SBX_INTERNAL_H
#define SBX_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <linux/filter.h>
#include "sbx.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- util.c: errors, bounded strings, numbers, paths -------------------- */

/* Fill err (if not NULL) and return -code. code is a positive errno. */
int sbx_error_set(struct sbx_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#ifdef __clang_analyzer__
/* The analyzer sees one file at a time and would follow a "success" path
 * out of every `return sbx_error_set(...)`; tell it what util.c guarantees:
 * the result is always negative. util.c defines the function as
 * (sbx_error_set) so this macro does not touch the definition. */
#define sbx_error_set(...) ({						\
	int sbx_error_ret_ = sbx_error_set(__VA_ARGS__);		\
	if (sbx_error_ret_ >= 0)					\
		__builtin_unreachable();				\
	sbx_error_ret_;							\
})
#endif
void sbx_error_clear(struct sbx_error *err);

/* Copy with truncation check: 0 or -ENAMETOOLONG (dst left as "" then). */
int sbx_strlcpy(char *dst, size_t size, const char *src);
/*
 * Structs of fixed list arrays (a profile, the plans) are mostly unused
 * room: only each list's first count entries mean anything. Copying or
 * clearing the whole struct costs a page fault per 4 KiB touched, on every
 * run and login. These move everything but the unused room, which in dst
 * keeps whatever it held. lists: in offset order, each count outside
 * every list (a size_t).
 */
struct sbx_list_field {
	size_t off;		/* of the array */
	size_t size;		/* of the whole array */
	size_t elem;		/* of one entry */
	size_t count_off;	/* of its size_t count */
};
#define SBX_LIST_FIELD(type, arr, count)					\
	{ offsetof(type, arr), sizeof(((type *)NULL)->arr),			\
	  sizeof(((type *)NULL)->arr[0]), offsetof(type, count) }
void sbx_copy_used(void *dst, const void *src, size_t size,
		   const struct sbx_list_field *lists, size_t n_lists);
/* Zero everything but the lists' room (their counts included). */
void sbx_clear_used(void *p, size_t size, const struct sbx_list_field *lists, size_t n_lists);

/* snprintf that fails on truncation: 0 or -ENAMETOOLONG. */
int sbx_snprintf(char *dst, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The value of one hex digit (either case), or -1. */
int sbx_hexval(char c);

/* ---- text.c: strict UTF-8, and how bytes nobody vouches for are shown -- */

/* The length (1-4) of the strict UTF-8 character at s (RFC 3629: no
 * overlong form, no surrogate, nothing above U+10FFFF; ASCII is 1), read
 * from at most avail bytes, its code point in *cp; 0 when the bytes at s
 * are not one. */
size_t sbx_utf8_char(const unsigned char *s, size_t avail, uint32_t *cp);
/* Replace control characters (below 0x20, 0x7f, and UTF-8 C1 U+0080-U+009F)
 * with '?', in place: text that ends up on a terminal. A byte that is not
 * UTF-8 stays; the printers show it (below). sbx_text_is_scrubbed: s has
 * nothing the scrub would replace. */
void sbx_text_scrub(char *s);
bool sbx_text_is_scrubbed(const char *s);
/*
 * The shown form of text, the one every printer of such text uses (the
 * text report, every JSON string the tree writes, journal fields, root's
 * listings): printable ASCII and UTF-8 characters from U+00A0 up as they
 * are; every other byte (C0 controls, DEL, the C1 controls U+0080-U+009F
 * in either spelling, each byte that is not part of strict UTF-8) as the
 * four characters \xNN, lower-case hex. The result is strict UTF-8 and
 * holds no byte a terminal acts on. A backslash stays itself, so the form
 * is for reading; sbx_text_is_shown says whether s shows as itself.
 *
 * sbx_text_step: at s (avail bytes), the length of the next unit, and
 * whether it is shown as it is (else it is one byte, shown as \xNN).
 * sbx_text_show: s shown into dst, whole units only: 0, or -ENAMETOOLONG
 * when cut (dst then holds what fitted). sbx_text_put: at most max bytes
 * of s shown to out; 0 or -EIO.
 */
size_t sbx_text_step(const char *s, size_t avail, bool *as_is);
bool sbx_text_is_shown(const char *s);
int sbx_text_show(char *dst, size_t size, const char *s);
int sbx_text_put(FILE *out, const char *s, size_t max);
/* At most 4 bytes shown for each byte of the text. */
#define SBX_TEXT_SHOWN_MAX(size) (4 * (size_t)(size) + 1)

/* snprintf into a diagnostic buffer where cutting the text is acceptable
 * (report details, probe reasons). */
void sbx_text_set(char *dst, size_t size, const char *fmt, ...)
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
/* Is a directory above path (not path itself) owned by uid? Its owner may
 * chmod it: a refusal there is one the owner can undo. */
bool sbx_path_owned_above(const char *path, uid_t uid);

/* Read a whole small file (bounded by max) into a NUL-terminated buffer. */
int sbx_read_file(const char *path, size_t max, char **out, size_t *len,
		  struct sbx_error *err);
/* The same from an open fd (what names it in messages): read from the fd
 * that was checked, never by name again. -EFBIG past max. */
int sbx_read_fd(int fd, const char *what, size_t max, char **out, size_t *len,
		struct sbx_error *err);
/* write() until done, retrying EINTR: 0 or -errno. */
int sbx_write_all(int fd, const char *buf, size_t len);
/* CLOCK_MONOTONIC in milliseconds, for deadlines. */
long long sbx_monotonic_ms(void);

/* The value of the "name:" line of /proc/<pid>/status (pid 0: self),
 * leading blanks cut: 0, -ENOENT when there is no such line, or -errno. */
int sbx_proc_status_field(pid_t pid, const char *name, char *out, size_t size);
/* The same from the text of a status file already read ... */
int sbx_status_text_field(const char *text, const char *name, char *out, size_t size);
/* ... by this: /proc/<pid>/status (pid 0: self) into buf, NUL-terminated
 * (one read, size - 1 bytes at most): 0, or -errno with buf "". */
int sbx_proc_status_read(pid_t pid, char *buf, size_t size);
/* Its first number (the real uid of "Uid", the "Tgid"), or -1. */
long sbx_proc_status_number(pid_t pid, const char *name);
/* openat(dirfd, name) for writing a regular file of the caller's, in a
 * directory others (the sandboxed program) may write: never through a
 * symlink, never blocking on a FIFO someone put there (O_NONBLOCK until
 * the type is known), nothing but a regular file owned by the caller;
 * truncated after the checks when trunc. The fd (close-on-exec, blocking
 * again), or -errno (-EINVAL: not a regular file of ours). */
int sbx_open_regular_at(int dirfd, const char *name, int flags, mode_t mode, bool trunc);

/* When pid started, in clock ticks after boot (/proc/<pid>/stat field 22):
 * with the pid it names one process for the life of the system. 0, or
 * -ENOENT when there is no such process. */
int sbx_proc_start_time(pid_t pid, uint64_t *out);

/* ---- profile.c, restrict.c, config.c, trust.c: the policy core --------- */

/* sbx_profile_path_access() with the workspace root taken from ws instead
 * of p->workspace_root (Restrict caps a requested workspace with a
 * ceiling's workspace_* fields this way). At equal match length the
 * narrowest value wins; a path at or under any deny_read entry is DENY. */
enum sbx_access sbx_profile_access_at(const struct sbx_profile *p, const char *ws,
				      const char *path, bool want_write);
/* Is path at or under a deny_read entry (by name)? A secret stays hidden
 * whatever the profile grants inside it: neither plan grants such a root. */
bool sbx_profile_in_secret(const struct sbx_profile *p, const char *path);
/* Expand %u, %h and %% of one template into out (no canonical check);
 * -EINVAL on any other '%' sequence, -ENAMETOOLONG when it does not fit. */
int sbx_path_expand(const char *tmpl, const char *user, const char *home,
		    char *out, size_t size);
int sbx_limit_parse(const char *s, enum sbx_limit *out);
/* True for the limits measured in bytes (accept K/M/G/T suffixes). */
bool sbx_limit_is_bytes(enum sbx_limit l);
/* Open an absolute canonical path for reading by an fd walk from "/":
 * every directory opened O_PATH|O_NOFOLLOW and fstat'ed, the file opened
 * O_RDONLY|O_NOFOLLOW|O_NONBLOCK; symlinks anywhere are refused (-ELOOP),
 * the file must be regular (-EINVAL otherwise) and at most max_bytes
 * (-EFBIG). When trusted, every directory and the file must pass
 * sbx_trust_check_fd(). The link count is not checked (a second name
 * anyone may make where fs.protected_hardlinks = 0 changes nothing about
 * who can write the inode). */
int sbx_trust_open_file(const char *path, bool trusted, uint64_t max_bytes,
			int *out_fd, struct sbx_error *err);
/* The same checks for name in dir (an fd the caller has checked), opened
 * O_RDONLY|O_NOFOLLOW|O_NONBLOCK; what names it in messages. */
int sbx_trust_open_at(int dir, const char *name, const char *what, bool trusted,
		      uint64_t max_bytes, int *out_fd, struct sbx_error *err);
/* The same walk to a directory, returned O_RDONLY|O_DIRECTORY (to list
 * it); the directory itself passes the checks too, and -ENOENT (err
 * filled) says it or a parent is missing. */
int sbx_trust_open_dir(const char *path, bool trusted, int *out_fd, struct sbx_error *err);
/* Resolve an absolute path to the canonical path of what it names, by an fd
 * walk from "/" that follows a symlink only when it is root-owned and sits
 * in a root-owned directory nobody else may write (-ELOOP otherwise, the
 * message naming the link). -ENOENT (err filled) when a component is
 * missing. What out names held no symlink at the time: callers open it
 * later with RESOLVE_NO_SYMLINKS, so a link swapped in meanwhile fails. */
int sbx_path_resolve_trusted(const char *path, char *out, size_t out_size,
			     struct sbx_error *err);
/* What a walk asks besides its symlink rule (sbx_path_walk). */
struct sbx_walk_opts {
	/* Each directory or file the walk opens, "/" and the last included,
	 * as fstat found it on the opened fd, with the path it was reached
	 * by (no symlink in it): 0 to go on, or -errno with err filled. */
	int (*check)(const struct stat *st, const char *shown, void *arg,
		     struct sbx_error *err);
	void *arg;
	/* Not 0: a missing last component is made a directory of this mode
	 * (mkdirat in its checked parent), then opened and checked. */
	mode_t create_mode;
};
/* sbx_path_resolve_trusted's walk with o's check on every step, and
 * without its one-call shortcut when o is given. On success out is the
 * path as walked and, with fd_out, *fd_out the O_PATH fd of what it
 * names: the object the checks saw, for callers that go on from it
 * rather than look the name up again. ".." is walked again from "/". */
int sbx_path_walk(const char *path, const struct sbx_walk_opts *o, char *out, size_t out_size,
		  int *fd_out, struct sbx_error *err);

/*
 * A directory as a walk found it. A bind of its path, made later in
 * another mount namespace (where the walk's fd cannot be cloned:
 * open_tree gives EINVAL for a mount of another namespace), must open the
 * same one: apply compares st_dev and st_ino of what it opened and refuses
 * the session on a difference.
 */
struct sbx_pin {
	bool set;
	dev_t dev;
	ino_t ino;
};
/* The pin of what st describes, and of an open fd (0 or -errno). */
struct sbx_pin sbx_pin_of(const struct stat *st);
int sbx_pin_fd(int fd, struct sbx_pin *pin);
/* Whether st is the pinned object (an unset pin holds anything). */
bool sbx_pin_holds(const struct sbx_pin *pin, const struct stat *st);

/* ---- account.c: an account's passwd entry and group names --------------- */

struct sbx_account {
	char user[SBX_NAME_MAX];
	uid_t uid;
	gid_t gid;
	char home[SBX_PATH_MAX];
	char shell[SBX_PATH_MAX];
	size_t n_groups;
	char **groups;		/* names (heap), for [match] group rules */
	bool groups_loaded;	/* groups looked up (sbx_account_by_uid_passwd: not yet) */
};

/* Look an account up with its group names. Buffers grow on ERANGE; any
 * lookup error is returned (callers refuse the login: a group missing
 * from the list could turn an agent into a non-agent). -ENOENT when there
 * is no such account. Free with sbx_account_free. */
int sbx_account_by_name(const char *user, struct sbx_account *out, struct sbx_error *err);
int sbx_account_by_uid(uid_t uid, struct sbx_account *out, struct sbx_error *err);
/* The passwd entry alone, for a caller that needs the groups only when
 * the config has group rules (sbx_config_has_group_rules): looking them up
 * loads every NSS module of the group database (on Debian, systemd's
 * userdb), much of a short session's start-up. sbx_account_load_groups
 * adds them; sbx_account_profile refuses a config with group rules for an
 * account whose groups were not looked up. */
int sbx_account_by_uid_passwd(uid_t uid, struct sbx_account *out, struct sbx_error *err);
int sbx_account_by_name_passwd(const char *user, struct sbx_account *out, struct sbx_error *err);
int sbx_account_load_groups(struct sbx_account *a, struct sbx_error *err);
void sbx_account_free(struct sbx_account *a);

/* One profile key with a config line's syntax (config.c): repeatable keys
 * append; inherit is refused. */
int sbx_profile_set_key(struct sbx_profile *p, const char *key, const char *value,
			struct sbx_error *err);

/*
 * sbx_config_load in two steps, for a caller that loads the same config
 * twice and wants to know whether anything changed: sbx_config_read
 * opens, checks and reads the main file and its drop-ins exactly as the
 * load does (-ENOENT only when the main file is missing);
 * sbx_config_parse_text parses what was read; sbx_config_text_equal says
 * whether two reads got the same files (names, in order) with the same
 * bytes.
 */
struct sbx_config_text;
int sbx_config_read(const char *path, unsigned flags, struct sbx_config_text **out,
		    struct sbx_error *err);
int sbx_config_parse_text(const struct sbx_config_text *t, struct sbx_config **out,
			  struct sbx_error *err);
bool sbx_config_text_equal(const struct sbx_config_text *a, const struct sbx_config_text *b);
/* Whether any [match] rule names a group. */
bool sbx_config_has_group_rules(const struct sbx_config *cfg);
void sbx_config_text_free(struct sbx_config_text *t);
/* Can the agents read the config as agent-shell does (as the agent)?
 * For each file, conf.d or directory above them that they cannot read,
 * list or search (config.c states the rule), fn gets its path, why (its
 * mode and group, and what fails) and the fix. Returns how many. */
typedef void (*sbx_config_access_fn)(void *arg, const char *path, const char *why,
				     const char *fix);
size_t sbx_config_check_agent_access(const struct sbx_config *cfg, sbx_config_access_fn fn,
				     void *arg);

/* The account's profile as both front ends see it: selected by the
 * [match] rules, narrowed by the ceiling, %u and %h expanded. -ENOENT
 * (err filled) when the account is not an agent account. After any error
 * *out is no usable profile (untouched, or cleared once narrowing began). */
int sbx_account_profile(const struct sbx_config *cfg, const struct sbx_account *a,
			struct sbx_profile *out, struct sbx_error *err);

/* PAM services a profile admits: its services list, or when it lists
 * none the interactive ones (sbx_default_services). */
bool sbx_profile_allows_service(const struct sbx_profile *p, const char *service);
const char *const *sbx_default_services(size_t *n);

/* The group an agent account is put in by default (and the sshd drop-in's
 * Match group). */
#define SBX_DEFAULT_GROUP "agents"
bool sbx_account_in_group(const struct sbx_account *a, const char *group);
/* An agent by facts outside the config (for when the config is unusable):
 * a member of group, or a login shell named agent-shell. */
bool sbx_account_looks_like_agent(const struct sbx_account *a, const char *group);

/* ---- session: what the caller knows about this session ----------------- */

struct sbx_session {
	char user[SBX_NAME_MAX];
	uid_t uid;
	gid_t gid;
	char home[SBX_PATH_MAX];	/* $HOME inside the sandbox (passwd home) */
	char home_source[SBX_PATH_MAX];	/* bound at home; "" = fresh tmpfs */
	char tmp_source[SBX_PATH_MAX];	/* bound at /tmp; "" = fresh tmpfs */
	char workspace[SBX_PATH_MAX];	/* resolved, existing workspace root */
	/* What the resolving walks found at home_source, tmp_source and
	 * workspace: their binds must open the same directories. */
	struct sbx_pin home_source_pin, tmp_source_pin, workspace_pin;
	char session_id[40];
	char client[128];
	char service[SBX_NAME_MAX];
	/* Already in a network namespace of its own (the PAM stage's, checked
	 * against its record): abstract unix names are private without one
	 * of the engine's. */
	bool private_netns;
	/* network = proxy: agent-sandbox-egressd's socket ("" = the
	 * default, SBX_EGRESS_SOCKET). */
	char egress_socket[SBX_PATH_MAX];
};

/* ---- env.c: process hygiene (docs/design.md section 4) ------------------ */

/* Build a new environment from envp keeping only the allow-list (PATH,
 * TERM, LANG, LC_*, TZ, SSH_CONNECTION, SSH_CLIENT, SSH_TTY,
 * SSH_ORIGINAL_COMMAND, COLORTERM, AGENT_SANDBOX_SESSION) and setting HOME,
 * USER, LOGNAME, SHELL from the session; PATH gets a safe default when
 * absent. LD_*, BASH_ENV, ENV, GLIBC_TUNABLES and everything else are
 * dropped. Values with bytes < 0x20 (but TAB) are dropped. */
int sbx_env_build(char *const *envp, const struct sbx_session *s,
		  const char *shell, char ***out, struct sbx_error *err);
void sbx_env_free(char **env);
/* network = proxy: add http_proxy, https_proxy, ALL_PROXY (socks5h) and
 * their capitals, and NO_PROXY for loopback, all at 127.0.0.1:port, to an
 * environment from sbx_env_build (which has none of them). */
int sbx_env_set_proxy(char ***env, int port, struct sbx_error *err);
/* Close every fd above maxfd (close_range, with a /proc/self/fd fallback). */
int sbx_fd_close_above(int maxfd, struct sbx_error *err);
/* Reset every signal disposition to default and unblock all signals. */
void sbx_signals_reset(void);

/* ---- ns.c: namespaces -------------------------------------------------- */

/* unshare(CLONE_NEWUSER) and map uid->uid, gid->gid (one entry each),
 * setgroups "deny". The caller keeps all capabilities inside the new
 * namespace until it drops them. */
int sbx_userns_enter(uid_t uid, gid_t gid, struct sbx_error *err);
/* The same maps and "deny", written by a process already in a new user
 * namespace (cloned into it) for ids it had outside: outer_uid/outer_gid,
 * read before the clone (inside, unmapped ids read as the overflow id). */
int sbx_userns_write_maps(uid_t uid, gid_t gid, uid_t outer_uid, gid_t outer_gid,
			  struct sbx_error *err);
/* unshare(flags) with a message naming each namespace. */
int sbx_ns_unshare(int clone_flags, struct sbx_error *err);
/* fork(2) into new namespaces: clone(2) with only namespace flags (and
 * SIGCHLD), no CLONE_VM. *pid is the child's in the parent, 0 in the
 * child. glibc's fork handlers do not run: call it only while no other
 * thread can hold one of its locks (a malloc lock, say). */
int sbx_ns_clone(int clone_flags, pid_t *pid, struct sbx_error *err);
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
/* Block the signals both supervisors forward (and SIGCHLD, SIGALRM); call
 * before fork(), then sbx_signals_reset() in the child. Without it a signal
 * that arrives before the supervisor runs is lost or kills the parent. */
void sbx_init_block_signals(void);
/* The program's terminal: a pty from the sandbox's own devpts, relayed to
 * the session's terminal by the init. */
struct sbx_relay {
	int master;	/* the pty master (sandbox devpts) */
	int slave;	/* held by the init until the program is gone */
	int in_fd;	/* the session's terminal, read side (fd 0) */
	int out_fd;	/* the session's terminal, write side (fd 1) */
};
/* sbx_init_supervise, and relay between the two while the child runs;
 * SIGWINCH resizes the pty instead of being forwarded. */
int sbx_init_supervise_relay(pid_t child, const struct sbx_relay *relay);
/* Forward the signals to child and wait for it (the setup process). */
int sbx_wait_forward(pid_t child);
/* Seconds between a session's SIGHUP (its time is up) and its SIGKILL. */
#define SBX_SESSION_GRACE 3
/* The outer process: the caller must be a subreaper
 * (PR_SET_CHILD_SUBREAPER). Forward signals to child, reap orphans that
 * come back, and when child is gone SIGKILL every descendant left. With
 * session_time > 0: SIGHUP child after that many seconds, SIGKILL it
 * SBX_SESSION_GRACE seconds later. The same when watch_fd (>= 0: a pidfd,
 * or a socket) says its process ended or hangs up, and *gone (may be NULL)
 * is set. Returns child's status as an exit code. */
int sbx_outer_supervise(pid_t child, unsigned session_time, int watch_fd, bool *gone);

/* ---- mounts.c: the mount view (docs/design.md section 4.3) -------------- */

struct sbx_exec_set;

enum sbx_mount_kind {
	SBX_MOUNT_BIND,		/* source -> target */
	SBX_MOUNT_TMPFS,	/* fresh tmpfs at target, size bytes */
	SBX_MOUNT_MASK,		/* hide target: empty ro tmpfs (dir) or /dev/null (file) */
	/* Hold a directory in place: bound onto itself as the view has it
	 * at that point (recursively), so rename(2) and rmdir(2) of it fail
	 * with EBUSY. Planned above each narrower mount in a tree the agent
	 * writes (mounts.c, plan_pins). */
	SBX_MOUNT_PIN,
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
	bool secret;		/* a deny_read mask: a symlink on its path is an error */
	struct sbx_pin pin;	/* a bind: what source must open (unset: anything) */
	enum sbx_mount_role {
		SBX_ROLE_OTHER = 0,
		SBX_ROLE_HOME,		/* $HOME: tmpfs 0700, or the bound home */
		SBX_ROLE_SCRATCH,	/* /tmp and /dev/shm: tmpfs 01777, or bound */
	} role;			/* set by the plan; apply and the report read it */
};

#define SBX_MAX_MOUNTS 96

struct sbx_mount_plan {
	bool host_readonly;	/* whole host tree read-only, nosuid */
	/* command = gated: the whole host noexec (mmap PROT_EXEC of a host
	 * file fails, so ld.so cannot load what the gate does not allow),
	 * and exactly the files and trees in exec bound back executable: the
	 * allowed programs, their ELF interpreter and library closure. */
	bool host_noexec;
	struct sbx_exec_set *exec;	/* owned; NULL unless host_noexec */
	bool fresh_proc;	/* needs to run inside the new pid namespace */
	/* Without Landlock nothing else keeps the program from writing
	 * /proc/<pid>/mem of its own processes (code pages included): the
	 * fresh /proc is then mounted read-only. */
	bool proc_readonly;
	bool minimal_dev;	/* tmpfs /dev with null zero full random urandom tty, new devpts */
	/* What the session left out before the plan was built ("PATH
	 * (missing)": roots that were not there), first in the detail's
	 * "skipped:" list. */
	char skipped[256];
	size_t n;
	struct sbx_mount m[SBX_MAX_MOUNTS];
};

/* Describe: the mount plan for a profile and session (no side effects but
 * reading: under command = gated each gate_allow entry is resolved, must be
 * root's alone to change (file and every directory above it), and its
 * executable closure is computed). Free with sbx_mount_plan_free. */
int sbx_mount_plan_build(const struct sbx_profile *p, const struct sbx_session *s,
			 struct sbx_mount_plan *plan, struct sbx_error *err);
void sbx_mount_plan_free(struct sbx_mount_plan *plan);
/* Apply in a private mount namespace (needs CAP_SYS_ADMIN there). */
int sbx_mount_view_apply(const struct sbx_mount_plan *plan, char *detail, size_t detail_size,
			 struct sbx_error *err);

/* ---- home.c: root-side directory walks and the agent's home ------------
 * (docs/design.md section 8) */

#define SBX_SKEL_FILE_MAX (64u * 1024)	/* per skeleton file */

/* A user name usable as one path component: 1..SBX_NAME_MAX-1 bytes of
 * [A-Za-z0-9._-], not starting with '-' or '.', so never "", ".", "..". */
bool sbx_name_is_safe_component(const char *name);

/* Open an absolute canonical directory path from "/" one component at a
 * time with O_NOFOLLOW (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS
 * where the kernel has it). When trusted, every directory on the way, "/"
 * and the last included, must be root-owned and not group/world writable.
 * When create_mode is not 0 and the LAST component is missing, it is made
 * with mkdirat and chmod to exactly create_mode, owned by root (the parents
 * must exist). *out_fd is O_PATH|O_DIRECTORY|O_CLOEXEC. */
int sbx_dir_open_walk(const char *path, bool trusted, mode_t create_mode,
		      int *out_fd, struct sbx_error *err);

/* <state_dir>/homes/<user>: state_dir (made 0755 when missing) and homes
 * (0711) root-owned and not group/world writable; the home made 0700 and
 * owned by uid:gid when missing and then seeded with the regular top-level
 * files of skel_dir (root-owned, nlink 1, <= SBX_SKEL_FILE_MAX; skel_dir
 * NULL or "" = no seeding; a missing skel_dir is skipped). An existing home
 * must be a real directory owned by uid (-EPERM otherwise; never chowned).
 * Symlinks anywhere -> -ELOOP/-ENOTDIR; hard-linked skeleton file -> -EMLINK.
 * out_path receives the home's path. */
int sbx_home_prepare_isolated(const char *state_dir, const char *user,
			      uid_t uid, gid_t gid, const char *skel_dir,
			      char *out_path, size_t out_size,
			      struct sbx_error *err);

/* Open an absolute canonical path (not "/") with flags|O_NOFOLLOW after an
 * untrusted no-symlink walk of its parent; -ELOOP on any symlink. */
int sbx_path_open_nofollow(const char *path, int flags, int *out_fd,
			   struct sbx_error *err);

/* mount(2) onto target opened by sbx_path_open_nofollow (through its
 * /proc/self/fd link, so a swapped path cannot redirect it). The source is
 * source_fd (when >= 0, also through /proc/self/fd) or the source string. */
int sbx_root_mount(const char *target, int source_fd, const char *source,
		   const char *fstype, unsigned long flags, const char *data,
		   struct sbx_error *err);

/* In the session's mount namespace: a fresh tmpfs (mode 0700, uid:gid,
 * size bytes, 0 = 256 MiB, nosuid,nodev) on the EXISTING directory home,
 * seeded from skel_dir like an isolated home. Never creates the mountpoint
 * (-ENOENT). Unmounts again on failure. */
int sbx_home_prepare_ephemeral(const char *home, uid_t uid, gid_t gid,
			       uint64_t size, const char *skel_dir,
			       struct sbx_error *err);

/* ---- record.c: the session contract PAM (root) -> agent-shell ---------- */

#define SBX_RUNTIME_DIR "/run/agent-sandbox"
#define SBX_SESSION_ID_HEX 32		/* 128 random bits */
#define SBX_RECORD_MAX_BYTES 8192

struct sbx_record {
	unsigned version;		/* 1 */
	char session[SBX_SESSION_ID_HEX + 1];
	char user[SBX_NAME_MAX];
	uid_t uid;
	unsigned long mntns;		/* /proc/self/ns/mnt inode after unshare */
	unsigned long netns;		/* inode, or 0 when no PAM-stage netns */
	char profile[SBX_NAME_MAX];
	char hash[65];
	char client[128];		/* PAM_RHOST or "local" */
	char service[SBX_NAME_MAX];	/* PAM_SERVICE */
	int64_t started;		/* unix time */
	char home[SBX_PATH_MAX];	/* $HOME as the session sees it */
	char home_source[SBX_PATH_MAX];	/* isolated: the state-dir home; else "" */
	enum sbx_home home_kind;
	bool private_tmp;		/* the PAM stage mounted private /tmp and /dev/shm */
	pid_t opener_pid;		/* the process that opened the session */
	uint64_t opener_start;		/* its start time (sbx_proc_start_time) */
};

/* 128 bits from getrandom(), as 32 lowercase hex chars + NUL. */
int sbx_session_id_new(char out[SBX_SESSION_ID_HEX + 1], struct sbx_error *err);
/* 32 lowercase hex chars, nothing else. */
bool sbx_session_id_is_valid(const char *id);

/* Root: write <runtime_dir>/sessions/<rec->session> atomically (temp name +
 * renameat2 RENAME_NOREPLACE), root-owned 0600, under a root-only lock file
 * (sessions/.lock, waited for at most 5 s, then -ETIMEDOUT). runtime_dir
 * (last component, 0755) and sessions/ (0700; an older, wider one is
 * tightened) are created when missing; every directory must be root-owned
 * and not group/world writable. With max_live > 0, stale records are
 * ended and removed (hook, which may be NULL, hears of each: struct
 * sbx_stale_hook) and the write is refused with -EUSERS when rec->uid
 * already has max_live live records. */
struct sbx_stale_hook;
int sbx_record_write(const char *runtime_dir, const struct sbx_record *rec,
		     unsigned max_live, const struct sbx_stale_hook *hook, struct sbx_error *err);
/* The session's keeper (the PAM stage's, once the process that opened the
 * session is gone) becomes the record's opener: pid with its start time,
 * in place of opener, under the sessions lock. -ENOENT when the record is
 * gone (a count found it stale first), -ESTALE when its opener is not
 * opener. */
int sbx_record_take_over(const char *runtime_dir, const char *session_id, pid_t opener,
			 pid_t pid, uint64_t start, struct sbx_error *err);
/* Root: unlink a stale record under the sessions lock, only while it still
 * names opener (with its start time) and that opener is gone: -ESTALE when
 * a keeper took it over (it closes the session), -ENOENT when another
 * sweep removed it (and logged its end). */
int sbx_record_remove_stale(const char *runtime_dir, const char *session_id, pid_t opener,
			    uint64_t opener_start, struct sbx_error *err);

/* Root, in the session's own mount namespace (propagation to the host cut):
 * mount a read-only tmpfs on <runtime_dir>/session (made 0755 when missing)
 * holding the record as "record" (root, 0444): the copy the session's shell
 * reads; nobody outside the session sees it. Undo: unmount that path.
 * With channel_fd, the ledger's channel is bound there too (ledger.c):
 * *channel_fd is the listening socket, for the close to collect; with
 * refusals_fd (only with channel_fd), the refusals socket beside it. */
int sbx_record_publish(const char *runtime_dir, const struct sbx_record *rec,
		       int *channel_fd, int *refusals_fd, struct sbx_error *err);
/* "<runtime_dir>/session": 0 or -ENAMETOOLONG. */
int sbx_record_view_path(const char *runtime_dir, char *out, size_t size);

/* The shell: read <runtime_dir>/session/record (the PAM stage's copy in this
 * mount namespace) by fd walk and refuse one that is missing (-ENOENT), a
 * symlink (-ELOOP), hard-linked (-EMLINK), not a regular root-owned file or
 * group/world writable (-EPERM), names another uid (-EPERM) or session
 * (-EINVAL), or whose mntns differs from expect_mntns (-ESTALE).
 * Malformed -> -EINVAL. */
int sbx_record_read_verified(const char *runtime_dir, const char *session_id,
			     uid_t expect_uid, unsigned long expect_mntns,
			     struct sbx_record *out, struct sbx_error *err);

/* Parse a record's text (no trust checks; for tests and fuzzing). */
int sbx_record_parse(const char *buf, size_t len, struct sbx_record *out,
		     struct sbx_error *err);

/* The inode of the mount namespace process pid (a /proc name) is in, through
 * its threads when its leader has exited and they run on. 0, or -errno. */
int sbx_proc_mntns(const char *pid, unsigned long *ino);
/* Root: SIGKILL every process of uid whose mount namespace is mntns (not
 * the caller), by pidfd, in passes until one finds none (at most 100;
 * *passes says how many). The number killed; 0 for uid 0 or mntns 0. */
unsigned sbx_session_sweep(uid_t uid, unsigned long mntns, unsigned *passes);

/* Root: every well-formed, trusted record, with whether the session is
 * live (its opener runs), oldest first. *out is malloc'd (free() it). */
struct sbx_record_entry {
	struct sbx_record rec;
	bool live;
};
int sbx_record_list(const char *runtime_dir, struct sbx_record_entry **out, size_t *n,
		    struct sbx_error *err);
/* A stale record (its opener is gone: sshd's monitor killed, say) is
 * removed only after its session's processes are ended (sbx_session_end);
 * fn (may be NULL) then hears of each, with how many were killed. */
struct sbx_stale_hook {
	void (*fn)(const struct sbx_record *rec, unsigned killed, void *arg);
	void *arg;
};
/* A stale session's end for the log and root's ledger: event=pam_close
 * how=opener_gone report=lost killed=N result=failed. */
struct sbx_logline;
void sbx_record_stale_line(const struct sbx_record *rec, unsigned killed, struct sbx_logline *l);
/* Root: end and remove the sessions that ended without closing (their
 * opener is gone); *removed says how many. hook may be NULL. */
int sbx_record_prune(const char *runtime_dir, unsigned *removed,
		     const struct sbx_stale_hook *hook, struct sbx_error *err);

/* Root: the pids of a session's tree — uid's processes in mount namespace
 * mntns and their descendants of that uid (the sandbox's own namespaces
 * hang below). Up to max in out, *n the count found. 0 or -errno. */
int sbx_session_procs(uid_t uid, unsigned long mntns, pid_t *out, size_t max, size_t *n);
/* Root: SIGKILL the session's tree (sbx_session_procs) by pidfd, in passes
 * until none is left (at most 100). The number killed. */
unsigned sbx_session_end(uid_t uid, unsigned long mntns, unsigned *passes);

/* Root: unlink the record; -ENOENT when it is not there. */
int sbx_record_remove(const char *runtime_dir, const char *session_id,
		      struct sbx_error *err);

/* Count the live, well-formed, trusted records naming uid (for
 * max_sessions). A record is live while the process that opened the session
 * (opener_pid with its start time) exists; a record without an opener is
 * live while some process is in its mount namespace. As root the stale
 * ones (any uid) are removed and *stale (when not NULL) says how many.
 * A missing sessions/ directory counts 0. */
int sbx_record_count_user(const char *runtime_dir, uid_t uid, unsigned *live,
			  unsigned *stale, const struct sbx_stale_hook *hook, struct sbx_error *err);
/* Root, at a session's close (its record already removed): under the lock
 * sbx_record_write takes, count uid's live records as sbx_record_count_user
 * does (removing stale ones) and, when there is none, call last(arg) before
 * the lock is released: no login of uid can write its record, hence start a
 * process, until last returned. *live: the count (0: last ran). A lock or
 * count failure returns -errno and last does not run. */
int sbx_record_last_close(const char *runtime_dir, uid_t uid, void (*last)(void *arg),
			  void *arg, const struct sbx_stale_hook *hook, unsigned *live,
			  struct sbx_error *err);

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
	/* Optional rules dropped at plan time (an untrusted symlink). */
	char skipped[512];
	/* Roots the session left out because they were not there ("PATH
	 * (missing)"), for the report when no mount view names them. */
	char missing_roots[256];
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

/* Describe: Landlock rules for a profile and session as decided (the home
 * rule optional, deny_read holes, TCP rules), with no side effects. */
int sbx_landlock_plan_build(const struct sbx_profile *p, const struct sbx_session *s,
			    const struct sbx_decision *d, struct sbx_landlock_plan *plan,
			    struct sbx_error *err);
/* Kernel ABI (0 when unavailable). */
int sbx_landlock_abi(void);
/* Restrict the calling thread at min(kernel ABI, abi_limit) (abi_limit 0 =
 * no limit). Needs no_new_privs already set. */
int sbx_landlock_apply(const struct sbx_landlock_plan *plan, int abi_limit,
		       struct sbx_landlock_result *res, struct sbx_error *err);

/* ---- wx.c: W^X under the command gate ----------------------------------- */

/*
 * PR_SET_MDWE (Linux 6.3, include/uapi/linux/prctl.h), spelled as the
 * kernel spells it so a newer <sys/prctl.h> repeats it harmlessly; Debian
 * 12's headers predate it. REFUSE_EXEC_GAIN refuses a mapping that is
 * writable and executable, and mprotect/pkey_mprotect adding PROT_EXEC to
 * a mapping that lacks it. It is inherited by fork and kept across execve
 * unless NO_INHERIT (6.6) is set, and once set it cannot be cleared.
 */
#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#endif
#ifndef PR_GET_MDWE
#define PR_GET_MDWE 66
#endif
#ifndef PR_MDWE_REFUSE_EXEC_GAIN
# define PR_MDWE_REFUSE_EXEC_GAIN (1UL << 0)
#endif
#ifndef PR_MDWE_NO_INHERIT
# define PR_MDWE_NO_INHERIT (1UL << 1)
#endif

/* In the worker, before the filter is loaded (it refuses personality()
 * with an argument): READ_IMPLIES_EXEC inherited from whoever started
 * agent-shell cleared, then PR_SET_MDWE when m is SBX_WX_MDWE. 0 or
 * -errno with the call named in err. */
int sbx_wx_apply(enum sbx_wx_mech m, struct sbx_error *err);
/* What holds under m, for the report's memory_wx entry. */
const char *sbx_wx_describe(enum sbx_wx_mech m);
/* The memory_wx entry of a gated profile that lets programs JIT. */
#define SBX_WX_JIT_ALLOWED "anonymous executable memory allowed (gate_jit = allow)"
/* Why W^X is partial where the decision says so (wx_partial). */
#define SBX_WX_PARTIAL_WHY "partial: without Landlock or a mount view /proc/self/mem opens " \
			   "for writing, and its writes reach executable pages"

/* ---- seccomp.c --------------------------------------------------------- */

#define SBX_SECCOMP_MAX_INSNS 1024

struct sbx_seccomp_opts {
	bool network_denied;	/* deny MSG_FASTOPEN, MPTCP (TCP_FASTOPEN* sockopts) */
	bool inet_denied;	/* also deny AF_INET/AF_INET6 sockets (no netns) */
	bool gated;		/* deny memfd_create and memfd_secret, execveat of fds */
	/* W^X under the gate (docs/design.md section 6): no mmap of anonymous
	 * or shared memory with PROT_EXEC, no shmat(SHM_EXEC): what
	 * PR_SET_MDWE leaves open. */
	bool wx;
	/* And without PR_SET_MDWE (Linux < 6.3) what it would hold: no mmap
	 * both writable and executable, no mprotect/pkey_mprotect to
	 * PROT_EXEC. Only with wx. */
	bool wx_no_mdwe;
	/* connect() goes to a user-notification supervisor (unixsock.c) and
	 * AF_UNIX datagram sockets are refused; notify_fd gets the listener
	 * (close-on-exec) after a successful load, else -1. */
	bool unix_notify;
	/* bind() goes to the supervisor too (no private network namespace:
	 * abstract names are the host's, and one the program bound would be
	 * reached by host clients). */
	bool unix_bind_notify;
	/* No pid namespace: agent-shell's outer process and the supervisor
	 * are reachable by pid, so scheduling and I/O priority calls are
	 * allowed on the caller only (pid 0). */
	bool host_pids;
	int notify_fd;
	/* The program sbx_seccomp_prepare emitted, prog_len 0 until then:
	 * 362-529 instructions by the options; a longer one than this array
	 * is an error (E2BIG), not a truncation. */
	struct sock_filter prog[SBX_SECCOMP_MAX_INSNS];
	size_t prog_len;
	/* Optional output (may be NULL): refused syscalls this arch does not
	 * have and therefore skipped, "; "-separated. Families other than
	 * unix/inet/inet6/netlink-route are refused whatever these say. */
	char *notes;
	size_t notes_size;
};

/* Newest syscall number reviewed for the deny list (listns, Linux 6.19;
 * x86_64 and aarch64 share it). Native syscalls above it answer ENOSYS. */
#define SBX_SECCOMP_NR_CUTOFF 470

/* Emit the filter into o->prog (no-op when emitted already): non-native
 * arches and x32 killed, syscall numbers above SBX_SECCOMP_NR_CUTOFF
 * refused with ENOSYS, the dangerous list of docs/design.md section 4.9
 * refused with EPERM (clone3 with ENOSYS), the argument rules of the
 * profile's options. x86_64 and aarch64 only: elsewhere it fails (ENOTSUP).
 * No fd, no allocation, a few microseconds. */
int sbx_seccomp_prepare(struct sbx_seccomp_opts *o, struct sbx_error *err);
/* Prepare if needed, then load o->prog as one filter (no_new_privs set
 * first), with a listener in notify_fd when unix_notify. */
int sbx_seccomp_apply(struct sbx_seccomp_opts *o, struct sbx_error *err);

/* ---- unixsock.c: connect() to pathname unix sockets, decided outside ---- */

/* What the supervisor allows: sockets under unix_allow, and sockets the
 * session itself bound in places it may write; abstract names only in a
 * private network namespace. */
struct sbx_unix_policy {
	uid_t uid;		/* the agent's */
	bool pidns;		/* the session (and its supervisor) has a pid namespace */
	bool abstract_ok;
	/* bind() is decided and made here (no private network namespace:
	 * abstract names are the host's); otherwise only recorded. */
	bool bind_on_behalf;
	/* The sandbox's own Landlock rules (the caller's plan, not owned),
	 * applied by the child that makes a pathname socket on the
	 * program's behalf, so it can make one only where the program could
	 * (places[] alone misses the deny holes' read-only ancestors). NULL
	 * or abi <= 0: none. */
	const struct sbx_landlock_plan *landlock;
	int landlock_abi;
	size_t n_places;
	char places[SBX_MAX_ROOTS + 5][SBX_PATH_MAX];
	size_t n_allow;
	char allow[SBX_MAX_UNIX_ALLOW][SBX_PATH_MAX];
	size_t n_deny;			/* deny_read: never, whatever else allows */
	char deny[SBX_MAX_DENY][SBX_PATH_MAX];
};

/* private_netns: the session has a network namespace of its own (abstract
 * names are its own, bind() needs no decision); pidns: a pid namespace,
 * whose init the supervisor runs in. */
int sbx_unix_policy_build(const struct sbx_profile *p, const struct sbx_session *s,
			  bool private_netns, bool pidns, struct sbx_unix_policy *out,
			  struct sbx_error *err);
/* The report's line for the policy (SBX_F_UNIX_SOCKETS). Every case fits a
 * report entry's detail (test_unixsock). */
void sbx_unix_policy_describe(const struct sbx_unix_policy *pol, char *buf, size_t size);
/* What a socket at path (canonical, as the sandbox sees it) is to the
 * session: refused, allowed (unix_allow), or allowed only if the session
 * bound it (the supervisor asks the kernel which socket is bound there). */
enum sbx_unix_verdict { SBX_UNIX_REFUSE, SBX_UNIX_ALLOW, SBX_UNIX_IF_OWN };
enum sbx_unix_verdict sbx_unix_path_verdict(const struct sbx_unix_policy *pol, const char *path);
/* A listening unix socket in dir that the session did not bind through the
 * supervisor, for the canary: its connect() must be refused. sock: a unix
 * stream socket made outside the session's network namespace (the outer
 * process's, before the clone), or -1 to make one here. The fd, or -errno;
 * its path in path. */
int sbx_unix_foreign_listener(int sock, const char *dir, char *path, size_t size);
/* Fork the supervisor: it waits on its end of a channel for the filter's
 * listener fd (sbx_unix_send_listener from the worker), then answers every
 * connect() of the sandbox until no process uses the filter. *chan_out is
 * the worker's end. in_userns: it can (and must) drop every capability. */
int sbx_unix_supervisor_start(const struct sbx_unix_policy *pol, bool in_userns, int *chan_out,
			      pid_t *pid_out, struct sbx_error *err);
/* Send the listener over the channel (SCM_RIGHTS): 0 or -errno. */
int sbx_unix_send_listener(int chan, int listener);
/* The same supervisor as a thread of the calling process (the init, where
 * bind() is not decided: that one forks, and the init reaps every child).
 * sbx_unix_channel makes the channel; the thread takes supervisor_end. The
 * thread has the caller's capabilities, no_new_privs and signal mask: call
 * it once they are dropped, set and blocked. */
int sbx_unix_channel(int *worker_end, int *supervisor_end, struct sbx_error *err);
int sbx_unix_supervisor_thread(const struct sbx_unix_policy *pol, int supervisor_end,
			       struct sbx_error *err);

/* ---- egress.c, egress_bridge.c: network = proxy, the sandbox's half ---- */

/* The profile's egress list as "host:port, ..." in buf, whole entries only
 * (*truncated when one did not fit). */
void sbx_egress_list_format(const struct sbx_profile *p, char *buf, size_t size,
			    bool *truncated);
/* SHA-256 (hex) of the list, each entry formatted and newline-ended, in
 * the profile's order: what the bridge and the daemon compare. */
void sbx_egress_list_hash(const struct sbx_profile *p, char out[65]);

/* The bridge's counts of the daemon's verdicts, in a shared anonymous page
 * the outer process maps before the sandbox forks: the bridge adds, the
 * outer process reads them into the report when the session ends. */
struct sbx_egress_counts {
	uint64_t allowed, refused, failed;
	uint64_t accepted;	/* connections the bridge accepted */
	uint64_t none;		/* closed before a request (no verdict to count) */
};
int sbx_egress_counts_map(struct sbx_egress_counts **out, struct sbx_error *err);
void sbx_egress_counts_unmap(struct sbx_egress_counts *c);

/* Is addr (AF_INET: 4 bytes, AF_INET6: 16) this host's own? The kernel's
 * route to it, asked now (RTM_GETROUTE), is one it delivers here (local,
 * anycast, broadcast); for an IPv6 form that carries an IPv4 address
 * (sbx_egress_addr_v4_carried), the route to that one too. No route at
 * all is not local (a connect fails there). 0 with *local set, or -errno
 * with the call and the cause in err: the caller cannot tell, and must
 * not connect. */
int sbx_egress_addr_local(int family, const void *addr, bool *local, struct sbx_error *err);

/* agent-sandbox-egressd's socket at path, as an O_PATH fd: every directory
 * on the way root's alone to change (sbx_trust_open_dir), the socket a
 * socket root owns, so nobody but root can have bound it. 0, or -errno
 * with the reason (-ENOENT: no socket there). */
int sbx_egress_socket_pin(const char *path, int *out_fd, struct sbx_error *err);
/* Ask agent-sandbox-egressd at path (pinned as above) whether uid is a proxy agent whose
 * list has list_hash (NULL or "": any list), within timeout_ms. 0 yes;
 * -EACCES no (err: the daemon's reason); other -errno: the daemon was not
 * reached or did not answer (err says which). */
int sbx_egress_ping(const char *path, uid_t uid, const char *list_hash, int timeout_ms,
		    struct sbx_error *err);

struct sbx_egress_bridge_opts {
	const char *socket_path;	/* the daemon's, for messages */
	int socket_fd;			/* the same, pinned (sbx_egress_socket_pin) */
	uid_t uid;
	const char *session_id;
	const char *list_hash;
	struct sbx_egress_counts *counts;	/* shared, may be NULL */
};
/* In the sandbox's network namespace (lo up) and user namespace, before
 * its pid and mount namespaces: listen on 127.0.0.1:SBX_EGRESS_PROXY_PORT
 * and fork the bridge, which drops every capability, asks the daemon
 * (sbx_egress_ping) and then hands it each connection. 0 when the bridge
 * runs; otherwise -errno with the reason in err, and nothing listens. */
int sbx_egress_bridge_start(const struct sbx_egress_bridge_opts *o, pid_t *pid_out,
			    struct sbx_error *err);

/* ---- probe.c ----------------------------------------------------------- */

/* What sbx_probe_get() finds, except the namespaces, without making a
 * process or a namespace: uname, landlock_create_ruleset(VERSION),
 * prctl/seccomp queries, mount_setattr with invalid arguments, statfs and
 * /proc, /sys reads. The namespace fields are false and userns_why says
 * they were not probed. For the PAM stage, inside sshd's root monitor
 * (docs/design.md section 8). */
void sbx_probe_kernel(struct sbx_probe *out);
/* Root: the namespace fields of p (and userns_why) as uid would find
 * them, tried in a child that becomes uid/gid (user's groups; NULL: none)
 * and is never dumpable, so no process of that uid can change its answer
 * (its own uid map is not written: an undumpable process's map file is
 * root's). Other fields are untouched. 0, or -errno with err (not root,
 * uid 0, the child gave no answer). */
int sbx_probe_namespaces_as(uid_t uid, gid_t gid, const char *user, struct sbx_probe *p,
			    struct sbx_error *err);

/* Where sbx_probe_for_session's namespace fields come from. */
enum sbx_probe_basis {
	SBX_PROBE_MEASURED,	/* sbx_probe_get's: a child tried each type */
	SBX_PROBE_CACHE,	/* root's entry for this uid and boot: "all" */
	SBX_PROBE_ASSUMED,	/* nothing: "all", until a clone is refused */
};
/* The probe a session decides on: sbx_probe_get's when it was measured
 * already (or for root), else the kernel facts with every namespace type
 * taken as available, from a trusted cache entry or assumed (basis says
 * which). A caller that takes it must make all its namespaces in one
 * clone before anything runs, and on a refusal decide again on
 * sbx_probe_measure's; with SBX_PROBE_ASSUMED it must measure first when it
 * cannot (sbx_run_confined). 0, or -errno with err. */
int sbx_probe_for_session(const struct sbx_probe **out, enum sbx_probe_basis *basis,
			  struct sbx_error *err);
/* What sbx_probe_get returns from now on, measured by a child whatever
 * the cache says: for a session whose clone was refused. */
int sbx_probe_measure(const struct sbx_probe **out, struct sbx_error *err);
/* Whether sbx_probe_get has measured in this process (tests). */
bool sbx_probe_namespaces_measured(void);
/* Test-only: replace the cached probe. Only test binaries call this; the
 * shipped binaries have no path (env, argument, file) that reaches it.
 * NULL forgets the cache, so the next sbx_probe_get probes again. */
void sbx_probe_set_for_tests(const struct sbx_probe *p);
/* The active LSM list (Landlock must be in it to work): securityfs, else
 * lsm= on the boot command line, else "unknown"; which one it came from. */
enum { SBX_LSM_FROM_SECURITYFS, SBX_LSM_FROM_CMDLINE, SBX_LSM_UNKNOWN };
int sbx_lsm_list(char *out, size_t size);

/* ---- probe_cache.c: the boot's probe, per uid, written by root --------- */

/*
 * /run/agent-sandbox/probe/<uid>: root-owned 0644 in a root-owned 0755
 * directory, one per uid, saying that root probed as that uid in this
 * boot and it could make a user namespace and every namespace type in it.
 * Nothing else is ever written: a probe that finds anything missing
 * removes the entry, so sessions of that uid probe for themselves. An
 * entry is valid only for the boot (boot_id), kernel (release and
 * version), user namespace, seccomp mode of the reader and the values of
 * the sysctls that gate namespaces that it names.
 */
#define SBX_PROBE_CACHE_DIR SBX_RUNTIME_DIR "/probe"
#define SBX_PROBE_CACHE_MAX 4096

/* 0 when uid's entry is there, trusted (every directory from "/" and the
 * file root-owned and not group/world writable, no symlink anywhere,
 * checked on the opened fds) and current for this boot, kernel and
 * process. Otherwise -errno with err saying why: -ENOENT none, -EPERM or
 * -ELOOP untrusted, -ESTALE written for another boot, kernel or setting,
 * -EINVAL malformed. */
int sbx_probe_cache_check(uid_t uid, struct sbx_error *err);
/* Does an entry's text (buf, len; what names it) match key, the lines this
 * process expects (the entry text up to its "written" line)? 0, -ESTALE
 * naming the first line that differs, or -EINVAL (malformed). */
int sbx_probe_cache_match(const char *key, const char *buf, size_t len, const char *what,
			  struct sbx_error *err);
/* Root: probe as uid (sbx_probe_namespaces_as) and record the result:
 * *cached true when every namespace type was available (the entry is
 * written atomically: a temporary file in the directory, renamed over the
 * name), false when not (why says what was missing; any entry is removed).
 * 0, or -errno with err (any entry is removed then too). */
int sbx_probe_cache_refresh(uid_t uid, gid_t gid, const char *user, bool *cached,
			    char *why, size_t why_size, struct sbx_error *err);
/* Remove uid's entry (root); 0 when there is none. */
int sbx_probe_cache_remove(uid_t uid, struct sbx_error *err);
/* Test binaries only: keep entries under dir (absolute, canonical, its
 * parent must exist); NULL: the default again. */
void sbx_probe_cache_dir_for_tests(const char *dir);
/* The entry text for uid as this process would write it now (for tests
 * that make a file by hand); 0 or -errno. */
int sbx_probe_cache_entry_text(uid_t uid, char *out, size_t size, struct sbx_error *err);

/* ---- cgroup.c: limits on the whole session ------------------------------ */

/* The profile sets memory_max, pids_max or cpu_max. */
bool sbx_cgroup_requested(const struct sbx_profile *p);
/* The outer process: read back the limits in force on its cgroup (the
 * lowest up to the root) and record the cgroup_limits entry. */
void sbx_cgroup_report(const struct sbx_profile *p, struct sbx_report *r);
/* The PAM stage: put them on the login's logind scope through systemd.
 * -ENOTSUP without systemd, -ENOENT outside a session scope, -EIO when
 * systemctl refuses; unit receives the scope's name. */
int sbx_cgroup_session_apply(const struct sbx_profile *p, char *unit, size_t unit_size,
			     struct sbx_error *err);

/* ---- report.c ---------------------------------------------------------- */

/* Change whether a feature is requested after sbx_report_init (e.g. the
 * apply code drops landlock_net when a private netns makes it moot); why,
 * when not NULL, replaces the entry's detail. */
void sbx_report_set_requested(struct sbx_report *r, enum sbx_feature f,
			      bool requested, const char *why);
/* A report's JSON is a few KiB; the reader refuses anything larger than
 * this, and the outer process reads no more from the worker's pipe. */
#define SBX_REPORT_JSON_MAX (64u * 1024)

/* Write s as a JSON string (quotes included) in its shown form
 * (sbx_text_show): strict UTF-8, no control character, quote and
 * backslash escaped. 0 or -EIO. */
int sbx_json_put_string(FILE *out, const char *s);
/* Write s's bytes as a JSON string of lower-case hex. 0 or -EIO. */
int sbx_json_put_hex(FILE *out, const char *s);
/* The escape for c (out, NUL-terminated) and its length, or 0 when c is
 * written as it is: the table of the profile's canonical form, which is
 * hashed and so one to one (describe.c). */
size_t sbx_json_escape(unsigned char c, char out[7]);

/* A strict, bounded reader for the JSON libsbx writes (the report, the
 * probe): each returns 0 or -EINVAL with err naming what (the document)
 * and the byte offset. Strings are bounded by the caller's buffer, strict
 * UTF-8, any JSON escape allowed (\u with surrogate pairs), and refused
 * when what they decode to holds a control character (C0, DEL, C1);
 * numbers are unsigned integers up to max. sbx_jr_key reads "key": and returns the
 * index of key in keys, refusing unknown and repeated ones (seen: bits). */
struct sbx_jr {
	const char *base, *p, *end;
	const char *what;
	struct sbx_error *err;
	/* Readers of documents a newer version may extend (the report): a
	 * key not in keys is read (any JSON value, nested at most
	 * SBX_JR_SKIP_DEPTH, its strings by sbx_jr_string's rules) and
	 * dropped instead of refused. Keys are at most SBX_JR_KEY_MAX-1 bytes. */
	bool skip_unknown;
};
#define SBX_JR_SKIP_DEPTH 16
#define SBX_JR_KEY_MAX 64
/* An object with exactly keys (at most 32), each once, in any order:
 * field(j, k, ctx) reads the value of keys[k] (0 or -errno). A key left
 * out is named ("what: missing key \"k\""; what may be NULL). */
int sbx_jr_object(struct sbx_jr *j, const char *const *keys, size_t n, const char *what,
		  int (*field)(struct sbx_jr *j, int k, void *ctx), void *ctx);
/* The same, where the keys whose bit is set in optional may be left out. */
int sbx_jr_object_opt(struct sbx_jr *j, const char *const *keys, size_t n, uint32_t optional,
		      const char *what, int (*field)(struct sbx_jr *j, int k, void *ctx),
		      void *ctx);
int sbx_jr_fail(struct sbx_jr *j, const char *msg);
void sbx_jr_ws(struct sbx_jr *j);
bool sbx_jr_peek(struct sbx_jr *j, char c);	/* consume c if it is next */
int sbx_jr_expect(struct sbx_jr *j, char c);
int sbx_jr_string(struct sbx_jr *j, char *out, size_t size);
int sbx_jr_bool(struct sbx_jr *j, bool *out);
int sbx_jr_uint(struct sbx_jr *j, uint64_t max, uint64_t *out);
int sbx_jr_key(struct sbx_jr *j, const char *const *keys, size_t n, uint32_t *seen);

/* ---- mountinfo.c: the mount table, and other mounts of a secret ---------- */

#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U	/* Linux 5.8 */
#endif

struct sbx_mount_entry {
	int id, parent;
	unsigned major, minor;
	/* A mount's path can be as long as the kernel names (PATH_MAX), and
	 * the agent can move a host mount below its workspace: room for it. */
	char root[4096];	/* of the mount, in its filesystem */
	char point[4096];	/* where it is mounted */
	char fstype[64];
};
/* The line of /proc/<pid>/mountinfo at *pos (before end), decoded into m,
 * and *pos moved past it: 1, or 0 at the end, or -EINVAL/-ENAMETOOLONG
 * for a line that cannot be read (*pos is past it all the same). */
int sbx_mountinfo_next(const char **pos, const char *end, struct sbx_mount_entry *m);
/* Is path where something is mounted in this mount namespace? */
bool sbx_mountinfo_is_mount_point(const char *path);

/*
 * A mask covers a path. The same filesystem can be mounted again (a bind of
 * the secret, of a directory above it, of `/`), and the secret shows under
 * that mount's path. The outer process finds each secret's place (the
 * filesystem and the path in it) before the clone; the confined canary
 * then reads its own mount table and finds every mount of that filesystem
 * that shows the secret, or a part of it, and that no other mount covers.
 */
struct sbx_secret_place {
	unsigned major, minor;	/* the filesystem's device, as mountinfo shows it */
	int own_id;		/* its mount in the finder's table, or -1: not found */
	uint16_t where;		/* offset in text: the path inside the filesystem */
	uint16_t deny;		/* which deny_read entry */
};
struct sbx_secret_places {
	size_t n;
	struct sbx_secret_place s[2 * SBX_MAX_DENY];	/* secrets, then mounts inside them */
	char text[4096];
	char unsearched[200];	/* why not every secret was placed, or "" */
};
/* Each existing deny_read entry of p, placed in the caller's mount table,
 * and each filesystem mounted inside one (a part of that secret). */
void sbx_secret_places_find(const struct sbx_profile *p, struct sbx_secret_places *out);
/* For each mount in table (a mountinfo text) that shows a placed secret
 * and that no other mount covers: fn(ctx, index in sp, the path through
 * that mount, its id); a non-zero return stops the walk and is returned.
 * -EINVAL or -ENAMETOOLONG (why says what) when the table cannot be read
 * whole, -ENOMEM. */
typedef int (*sbx_secret_shown_fn)(void *ctx, size_t secret, const char *path, int mnt_id);
int sbx_secret_mounts_shown(const char *table, size_t len, const struct sbx_secret_places *sp,
			    sbx_secret_shown_fn fn, void *ctx, char *why, size_t why_size);

/* ---- canary.c ---------------------------------------------------------- */

struct sbx_canary_ctx {
	unsigned long host_ns_user, host_ns_mnt, host_ns_pid, host_ns_net,
		host_ns_ipc, host_ns_uts, host_ns_cgroup;	/* before unshare */
	int keep_fd;	/* an fd above 2 the caller keeps open (report pipe), or -1 */
	char *const *envp;	/* the environment execve will pass, or NULL */
	char exec_control[SBX_PATH_MAX];	/* gated: a file left executable, or "" */
	enum sbx_wx_mech wx;		/* how memory is kept W^X (memory_wx) */
	/* The gate's executables that ask for an executable stack
	 * (sbx_exec_set.exec_stack), or "". */
	char exec_stack[256];
	bool unix_bind_mediated;	/* bind() of abstract names must be refused */
	/* A socket of the agent's uid listening in /tmp that the session did
	 * not bind (sbx_unix_foreign_listener), or "": its connect() must be
	 * refused (unix_allow never grants in a directory the agent may write,
	 * and /tmp is one). The canary removes it. */
	char unix_foreign[SBX_PATH_MAX];
	int unix_foreign_err;	/* why there is none (an errno) */
	/* deny_read files with more than one name (a hard link elsewhere is
	 * not under the mask), "; "-separated, or "" */
	char secret_aliases[256];
	/* Where each secret lies, for the mounts that show it (mountinfo.c). */
	struct sbx_secret_places secret_places;
	/* The mount plan applied (its pins must hold), or NULL. */
	const struct sbx_mount_plan *mounts;
};

/* Run inside the fully confined process (after seccomp): try the forbidden
 * things and set entry[].verified in r only for canaries that passed. */
void sbx_canary_run(const struct sbx_profile *p, const struct sbx_session *s,
		    const struct sbx_canary_ctx *ctx, struct sbx_report *r);


/* ---- apply.c: one confined run, in docs/design.md section 4's order ----- */

struct sbx_run {
	const struct sbx_profile *profile;	/* restricted and expanded */
	const struct sbx_session *session;
	const char *path;		/* absolute path of the program */
	char *const *argv;		/* its argv ("-bash" for a login) */
	const char *home_note;		/* how the home was chosen, for the report */
	char *const *envp;		/* the caller's environment; scrubbed here */
	bool pam_stage;			/* a verified PAM session record exists */
	const char *report_file;	/* written inside the sandbox; may be NULL */
	int landlock_abi_limit;		/* 0 = best available (tests lower it) */
	/* Called in the unconfined outer process as soon as the confined
	 * worker has sent its report (before the command ends). */
	void (*on_report)(const struct sbx_report *r, void *ctx);
	void *ctx;
	/* A pidfd of the process that opened the PAM session (sshd's
	 * monitor), whose end ends the session, or 0 (a zeroed run: none);
	 * *root_gone (may be NULL) says it did. */
	int watch_fd;
	bool *root_gone;
};

/* Run argv confined. Returns 0 when the confined process ran or was
 * refused by the floor (then *exit_code is 126 and report->floor_met is
 * false), with *exit_code the command's status (or 128+signal); -errno
 * when nothing could be started. Nothing ever runs unconfined: past the
 * point of no return (the first fork) a failure ends the child with a
 * message on stderr and exit code 126. */
int sbx_run_confined(const struct sbx_run *run, struct sbx_report *report,
		     int *exit_code, struct sbx_error *err);
/* The roots of an expanded profile as a session starts with them: an ro or
 * rw root that does not exist is removed from p and named in note
 * ("PATH (missing), ..."; "" when none), where what is around it is no
 * wider than the root; -ENOENT with err when it is wider (an ro root
 * missing inside a tree the session writes: the session is refused, and
 * p is of no further use).
 * sbx_run_confined does this to its copy; --explain and --doctor to
 * theirs, to say the same. */
int sbx_profile_skip_missing_roots(struct sbx_profile *p, char *note, size_t size,
				   struct sbx_error *err);

/* ---- elf.c: what the command gate must leave executable ---- */

/*
 * Under command = gated the host is mounted noexec (mmap PROT_EXEC of a
 * host file fails, so ld.so cannot map what it was not allowed to) and
 * only the allowed programs, their ELF interpreter and their library
 * closure are bound back executable. These compute that set; they only
 * read files.
 */

#define SBX_ELF_MAX_NEEDED 128
#define SBX_ELF_NAME_MAX 256

struct sbx_elf_info {
	bool is_elf;		/* false: not ELF (a script, data): nothing else set */
	unsigned elf_class;	/* 1 = ELFCLASS32, 2 = ELFCLASS64 */
	unsigned machine;	/* e_machine */
	char interp[SBX_PATH_MAX];	/* PT_INTERP, "" when none */
	size_t n_needed;
	char needed[SBX_ELF_MAX_NEEDED][SBX_ELF_NAME_MAX];	/* DT_NEEDED, in order */
	char rpath[1024];	/* DT_RPATH, "" when none */
	char runpath[1024];	/* DT_RUNPATH, "" when none */
	bool exec_stack;	/* PT_GNU_STACK asks for PF_X */
};

/* Fill buf with len bytes at off: 0 or -errno (-EIO when short). */
typedef int (*sbx_read_at_fn)(void *ctx, uint64_t off, void *buf, size_t len);

/* Parse one object through read_at. Bounded: ELF header, program headers
 * (at most 64 KiB, the kernel's own limit), PT_INTERP, PT_DYNAMIC (at most
 * 64 KiB) and the strings DT_NEEDED, DT_RPATH and DT_RUNPATH name in the
 * dynamic string table, located through the PT_LOAD that maps DT_STRTAB's
 * address (under 200 KiB read in all). Little-endian ELF32 and ELF64.
 * Not ELF -> 0 with is_elf false. Malformed -> -ENOEXEC naming what;
 * well-formed but past these bounds (more than SBX_ELF_MAX_NEEDED
 * DT_NEEDED, a longer name or path) -> -E2BIG; a read_at error is
 * returned as it is. */
int sbx_elf_parse(sbx_read_at_fn read_at, void *ctx, uint64_t file_size,
		  struct sbx_elf_info *out, struct sbx_error *err);
/* The same from an open regular file (-EINVAL otherwise); what names it
 * in messages. */
int sbx_elf_parse_fd(int fd, const char *what, struct sbx_elf_info *out,
		     struct sbx_error *err);

/* /etc/ld.so.cache contents: the "glibc-ld.so.cache" + "1.1" format, after
 * an optional old "ld.so-1.7.0" part. cb per entry (soname, path, flags),
 * called only once the whole table checked out; a nonzero cb return stops
 * and is returned. Malformed (offsets/strings out of range, no new-format
 * part) -> -EINVAL. */
int sbx_ldcache_parse(const unsigned char *buf, size_t len,
		      int (*cb)(void *ctx, const char *soname, const char *path,
				uint32_t flags),
		      void *ctx, struct sbx_error *err);

struct sbx_ldcache_entry;

struct sbx_exec_set {
	size_t n, cap;
	char **paths;		/* canonical, symlink-free files and directories */
	char unresolved[512];	/* "libx.so.1 (needed by /usr/bin/y)", "; "-separated, "..." if cut */
	/* Objects in the set whose PT_GNU_STACK asks for an executable stack,
	 * "; "-separated, "..." if cut: the kernel gives one at execve, past
	 * every W^X layer (docs/design.md section 6). */
	char exec_stack[256];
	/* Private. */
	const char *ldcache_file;	/* NULL: /etc/ld.so.cache (tests point elsewhere) */
	bool ldcache_loaded;
	char *ldcache_buf;
	size_t ldcache_n;
	struct sbx_ldcache_entry *ldcache;
};

void sbx_exec_set_init(struct sbx_exec_set *set);
/*
 * Add path (resolved with sbx_path_resolve_trusted; its errors, and a path
 * that is neither a regular file nor a directory, or a malformed ELF, are
 * returned). A regular file is added with, when ELF, its PT_INTERP and its
 * DT_NEEDED closure found the way glibc's ld.so finds it (DT_RPATH of the
 * object and its loaders up to the executable unless DT_RUNPATH,
 * DT_RUNPATH, every matching ld.so.cache entry, the default directories;
 * glibc-hwcaps and legacy platform subdirectories of each searched
 * directory too). A directory is added as one entry with the closure of
 * every regular ELF file below it (depth <= 16, <= 4096 entries, -E2BIG
 * past either). Libraries and interpreters are taken only where nobody but
 * root can change them or a directory above them (sbx_trust_open_file);
 * those not found, found only through an untrusted symlink or in an
 * untrusted place are noted in unresolved, not added. On success an entry
 * under a directory entry is dropped (the directory covers it); on error
 * the set is as it was before the call.
 */
int sbx_exec_set_add(struct sbx_exec_set *set, const char *path, struct sbx_error *err);
/* True when path (canonical) is an entry or below a directory entry. */
bool sbx_exec_set_contains(const struct sbx_exec_set *set, const char *path);
void sbx_exec_set_free(struct sbx_exec_set *set);

/* ---- api.c: executors for agent-shell --run --executor ------------------- */

/* Executor KEY under scratch_root (absolute): the scratch root walked once
 * from "/" on directory fds, each directory on the way owned by root or
 * the caller and not writable by others unless sticky, a symlink followed
 * only when root's (-EPERM or -ELOOP naming the directory or link
 * otherwise); made 0700 when missing, and then the caller's own. A new key refused past max keys already there
 * (-EUSERS), an existing one refused when fresh (-EEXIST: a set's
 * executors start empty), its home and tmp made 0700 in the checked
 * root's fd. root, home, tmp get the paths that walk took, home_pin and
 * tmp_pin the directories made (their binds must open those). */
int sbx_executor_place(const char *scratch_root, const char *key, unsigned max, bool fresh,
		       char root[SBX_PATH_MAX], char home[SBX_PATH_MAX], char tmp[SBX_PATH_MAX],
		       struct sbx_pin *home_pin, struct sbx_pin *tmp_pin, struct sbx_error *err);
/* A caller without a home directory of its own gets $HOME at /tmp/home,
 * inside the executor's bound tmp: the mountpoint must be there, a
 * directory and not a link, and tmp the directory tmp_pin holds. */
int sbx_executor_home_mountpoint(const char *key, const char *tmp, const struct sbx_pin *tmp_pin,
				 struct sbx_error *err);
/* Executor runs need the mount view: 0, or -EOPNOTSUPP naming why this
 * host cannot give it. */
int sbx_executor_view_ok(const struct sbx_profile *p, bool private_netns, const char *key,
			 struct sbx_error *err);
/* Executor KEY's home for a run: the /tmp/home mountpoint in its tmp when
 * $HOME is there, and the report's note on the home. */
int sbx_executor_home(const char *key, const char *root, const char *tmp,
		      const struct sbx_pin *tmp_pin, bool home_in_tmp, char *note, size_t note_size,
		      struct sbx_error *err);

/* util.c: remove path and everything below it, depth first, never
 * following a symlink (remove() takes the link) nor crossing into another
 * mount; a directory made unreadable (mode 000) is made the caller's 0700
 * and the walk runs again. For trees nobody else can move meanwhile (their
 * parents the caller's or root's alone, no process of the owner left).
 * 0, or the first -errno of the last pass. Not thread-safe (nftw state). */
int sbx_remove_tree(const char *path);

/* util.c: close fd unless it is negative (cleanup paths). */
void sbx_close_if(int fd);

/* Run argv[0] (an absolute path) with envp, stdin from /dev/null, stdout and
 * stderr into *out (NUL-terminated, at most about max bytes); in_child, when
 * not NULL, runs in the child just before the exec. Past timeout_ms the
 * child is killed (-ETIMEDOUT); more output than max, -EFBIG. 0 with
 * *status from waitpid, or -errno. */
int sbx_run_capture(char *const argv[], char *const envp[], void (*in_child)(void),
		    int timeout_ms, size_t max, char **out, int *status);

/* ---- util.c: a bounded appender that marks truncation with "..." -------- */

struct sbx_sbuf {
	char *buf;
	size_t size, len;
	bool truncated;
};

void sbx_sbuf_init(struct sbx_sbuf *b, char *buf, size_t size);
/* Append raw bytes; stop (and mark) when fewer than 4 bytes would remain
 * for the "..." and the NUL. */
void sbx_sbuf_add(struct sbx_sbuf *b, const char *s, size_t n);
void sbx_sbuf_str(struct sbx_sbuf *b, const char *s);
void sbx_sbuf_fmt(struct sbx_sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- log.c: one ident, one key=value grammar, syslog and journald ------- */

#define SBX_LOG_IDENT "agent-sandbox"
#define SBX_LOG_SYSLOG_PATH "/dev/log"
#define SBX_LOG_JOURNAL_PATH "/run/systemd/journal/socket"
#define SBX_LOG_LINE_MAX 4096
#define SBX_LOG_VALUE_MAX 1024

/* One log line being built: "event=NAME key=value ..." and, beside it,
 * the same fields as journal fields (AGENT_SANDBOX_KEY=value lines). */
struct sbx_logline {
	char line[SBX_LOG_LINE_MAX];
	char journal[2 * SBX_LOG_LINE_MAX];
	struct sbx_sbuf lb, jb;
};

/* Start a line with event=NAME. */
void sbx_log_begin(struct sbx_logline *l, const char *event);
/* Append key=value: key [a-z][a-z0-9_]* (others are dropped), the value
 * formatted, cut at SBX_LOG_VALUE_MAX, scrubbed (sbx_text_scrub), bare
 * when it is made of [A-Za-z0-9._:/@,+-] only, else in double quotes with
 * \" and \\ escaped and bytes outside 0x20-0x7e as \xNN. Keys "msg" (the
 * human text, last by convention) and "command" are always quoted. */
void sbx_log_add(struct sbx_logline *l, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Append key=VALUE where VALUE is already in the grammar (bare or quoted). */
void sbx_log_add_raw(struct sbx_logline *l, const char *key, const char *value);
/* A value in the grammar above (force_quote: even when it could be bare). */
void sbx_log_value(struct sbx_sbuf *b, const char *s, bool force_quote);
/* Send with priority (LOG_ERR, ...; facility authpriv is added): to
 * journald natively when its socket exists, else to /dev/log, never
 * blocking. 0, or -errno: -EAGAIN when the daemon's queue was full (the
 * line is dropped), a missing sink (sbx_log_sink_missing) when nobody
 * listens. sbx_log_send_to: the same with the sockets' paths given
 * (either may be NULL). */
int sbx_log_send(int priority, const struct sbx_logline *l);
int sbx_log_send_to(int priority, const struct sbx_logline *l, const char *syslog_path,
		    const char *journal_path);
bool sbx_log_sink_missing(int r);
/* The report's fields (session, user, ..., level, floor, guarantees,
 * degraded, refusal) appended to l (report_text.c). */
void sbx_report_log(struct sbx_logline *l, const struct sbx_report *r);

/* report.c: achieved and proven by a canary, the only thing a guarantee
 * may rest on. */
bool sbx_report_holds(const struct sbx_report *r, enum sbx_feature f);

/* ---- ledger.c: root's copy of each report, and its events -------------- */

#define SBX_LEDGER_CHANNEL "channel"
/* Where a shell that finds the channel taken says it refused itself:
 * backlog 4, so up to 5 such shells per PAM session are heard. */
#define SBX_LEDGER_REFUSALS "refusals"
#define SBX_LEDGER_REFUSALS_BACKLOG 4
#define SBX_LEDGER_KEYS_MAX 40

struct ucred;

/* Root: bind the channel in the detached view mount_fd (owned by uid:gid,
 * 0600) and listen with a backlog of 0 (one pending connection). */
int sbx_ledger_channel_bind(int mount_fd, uid_t uid, gid_t gid, int *out_fd,
			    struct sbx_error *err);
/* Root: bind the refusals socket beside it (same owner and mode), with a
 * backlog of SBX_LEDGER_REFUSALS_BACKLOG. */
int sbx_ledger_refusals_bind(int mount_fd, uid_t uid, gid_t gid, int *out_fd,
			     struct sbx_error *err);
/* agent-shell: connect to <runtime_dir>/session/channel without waiting;
 * -ENOENT (no PAM stage), -EAGAIN (the slot is taken), -EPERM (the
 * listener is not root's), or 0 with *out_fd. */
int sbx_ledger_channel_connect(const char *runtime_dir, int *out_fd);
/* The same for <runtime_dir>/session/refusals (-EAGAIN: its queue is
 * full). */
int sbx_ledger_refusals_connect(const char *runtime_dir, int *out_fd);
/* Everything or -errno, never waiting (-EAGAIN when the peer's queue is
 * full). */
int sbx_ledger_channel_send(int fd, const char *buf, size_t len);
/* Root at close: accept one pending connection and read what it queued,
 * at most max bytes (NUL-terminated, the caller's to free), with the
 * peer's credentials from its connect. wait_ms 0: what is queued now;
 * otherwise until the peer's end (its last holder closed it) or wait_ms
 * have passed. -ENOENT: nobody (else) connected. For the channel and for
 * the refusals socket alike. */
int sbx_ledger_channel_collect(int listen_fd, size_t max, int wait_ms, char **out,
			       size_t *len, struct ucred *peer, struct sbx_error *err);

/* <state_dir>/ledger, made root 0700 if missing, opened: the PAM stage
 * opens it before it masks anything in the session's mount namespace (the
 * shipped ceiling hides the state directory there), and writes through
 * the fd for the rest of the session. */
int sbx_ledger_dir_open(const char *state_dir, int *out_fd, struct sbx_error *err);
/* <state_dir>/ledger/<id>.json (root 0600, the directory 0700), replaced
 * atomically; _at: in the ledger directory dir_fd. */
int sbx_ledger_store_report(const char *state_dir, const char *session_id, const char *json,
			    size_t len, struct sbx_error *err);
int sbx_ledger_store_report_at(int dir_fd, const char *session_id, const char *json,
			       size_t len, struct sbx_error *err);
int sbx_ledger_read_report(const char *state_dir, const char *session_id, char **out,
			   size_t *len, struct sbx_error *err);
/* "<UTC time> <l->line>\n" appended to <state_dir>/ledger/events.log,
 * rotated past 4 MiB (events.log.1 newest, up to events.log.8). */
int sbx_ledger_append(const char *state_dir, const struct sbx_logline *l,
		      struct sbx_error *err);
int sbx_ledger_append_at(int dir_fd, const struct sbx_logline *l, struct sbx_error *err);

struct sbx_ledger_event {
	char time[21];
	int64_t when;
	size_t n;
	const char *key[SBX_LEDGER_KEYS_MAX];
	const char *value[SBX_LEDGER_KEYS_MAX];
	char text[SBX_LOG_LINE_MAX + 2 * SBX_LEDGER_KEYS_MAX];
};
/* One events.log line (without its newline): the time, then key=value in
 * lib/log.c's grammar, event= first. 0 or -EINVAL / -E2BIG. */
int sbx_ledger_parse_line(const char *line, size_t len, struct sbx_ledger_event *ev);
/* The same without the time: one line of lib/log.c's grammar. */
int sbx_ledger_parse_fields(const char *line, size_t len, struct sbx_ledger_event *ev);
const char *sbx_ledger_get(const struct sbx_ledger_event *ev, const char *key);
/* Every event at or after since, oldest first (events.log.8 ... .1, then
 * events.log); fn's non-zero return stops the walk and is returned. Lines
 * that do not parse are counted in *bad. No ledger yet: 0. */
int sbx_ledger_events(const char *state_dir, int64_t since,
		      int (*fn)(const struct sbx_ledger_event *, void *), void *arg,
		      unsigned *bad, struct sbx_error *err);
/* Root's report copies last changed before older_than: counted in *n, and
 * removed when apply. */
int sbx_ledger_prune(const char *state_dir, int64_t older_than, bool apply, unsigned *n,
		     struct sbx_error *err);

#endif /* SBX_INTERNAL_H */
