/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared test helpers. Include after <cmocka.h>'s prerequisites. */
#ifndef SBX_TESTLIB_H
#define SBX_TESTLIB_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <cmocka.h>

#include "internal.h"

#ifdef __clang_analyzer__
/* cmocka 1.1.5 declares neither _fail() nor its failed assertions as not
 * returning (they longjmp out of the test), so the static analyzer
 * followed tests past a failed assertion and reported what could only go
 * wrong there. These models stop it where cmocka does; the build keeps
 * cmocka's own macros. */
void _fail(const char *const file, const int line) __attribute__((noreturn));
void _skip(const char *const file, const int line) __attribute__((noreturn));
#define SBX_MODEL_ASSERT(c) ((c) ? (void)0 : _fail(__FILE__, __LINE__))
#undef assert_true
#define assert_true(c) SBX_MODEL_ASSERT(c)
#undef assert_false
#define assert_false(c) SBX_MODEL_ASSERT(!(c))
#undef assert_non_null
#define assert_non_null(c) SBX_MODEL_ASSERT((c) != NULL)
#undef assert_null
#define assert_null(c) SBX_MODEL_ASSERT((c) == NULL)
#undef assert_int_equal
#define assert_int_equal(a, b) SBX_MODEL_ASSERT((uintmax_t)(a) == (uintmax_t)(b))
#undef assert_int_not_equal
#define assert_int_not_equal(a, b) SBX_MODEL_ASSERT((uintmax_t)(a) != (uintmax_t)(b))
#undef assert_ptr_equal
#define assert_ptr_equal(a, b) SBX_MODEL_ASSERT((const void *)(a) == (const void *)(b))
#undef assert_string_equal
#define assert_string_equal(a, b) SBX_MODEL_ASSERT(strcmp((a), (b)) == 0)
#undef assert_string_not_equal
#define assert_string_not_equal(a, b) SBX_MODEL_ASSERT(strcmp((a), (b)) != 0)
#endif

/* The unprivileged uid/gid every enforcement test drops to before it tries
 * anything forbidden. Picked once: an id with no passwd/group entry. */
uid_t sbx_test_uid(void);
gid_t sbx_test_gid(void);

/* In a forked child: clear supplementary groups, setresgid/setresuid to the
 * test ids and prove root cannot be regained. Aborts the child on failure. */
void sbx_test_drop_to_agent(void);

/* Fork; in the child run fn(arg) after dropping to the agent when drop is
 * true; the child's return value is its exit code (it _exit()s, so no
 * atexit/LSan in children). Returns the raw wait status. */
int sbx_test_fork(bool drop, int (*fn)(void *), void *arg);
/* Whether int 0x80 reaches the kernel's i386 entry here, unconfined (in a
 * child): 1 yes (getpid answers), 0 no (the call faults with SIGSEGV, as
 * where the CPU or the hypervisor offers no 32-bit syscall entry; always
 * 0 off x86_64), -1 the probe failed some other way. */
int sbx_test_int80_native(void);

/*
 * Independent of libsbx, so never the code under test: can the unprivileged
 * test uid create a user namespace and map itself in it? False, with the
 * reason in why, when /proc/sys/user/max_user_namespaces is 0 or the raw
 * unshare(CLONE_NEWUSER) + uid_map write fails in a child dropped to the
 * test uid. Probed once per process. A test skips on this, never on a
 * failure of sbx_userns_enter: when this says yes, that one must work.
 */
bool sbx_test_userns_works(char *why, size_t size);

/* Exit code of a status, or 128+signal. */
int sbx_test_status_code(int status);

/* A fresh directory under /tmp (mode 0755, root owned) for this test;
 * removed recursively by sbx_test_rmtree. Returns a static-lifetime copy. */
char *sbx_test_mkdtemp(const char *tag);
/* The same under /run (root-owned 0755 all the way up): a place only root
 * can change, for files a trust check must accept (gate_allow programs). */
char *sbx_test_mkdtemp_trusted(const char *tag);
/* Remove a tree a test made: only under /tmp/sbx-test-, /run/sbx-test-,
 * /sbx-test-, /var/tmp/sbx-test- or /dev/shm/sbx-test-; anything else is
 * left alone. */
void sbx_test_rmtree(const char *path);

/* Run argv[0] (absolute) with argv, stdout to /dev/null; its exit code or -1. */
int sbx_test_run_quiet(const char *const argv[]);

/*
 * Capture syslog in the calling process, which must be a forked child
 * running as root: a private mount namespace (the test's own) with a tmpfs
 * /dev holding the usual nodes (bound from the real ones) and a datagram
 * socket at /dev/log, mode 0666 so processes that dropped to another uid
 * can log too. Returns the non-blocking socket, or -1.
 */
int sbx_test_log_capture(void);
/* Drain the captured syslog (each message echoed on stderr); true when one
 * message contains a and, when not NULL, b. keep gets that message. */
bool sbx_test_log_has(int s, const char *a, const char *b, char *keep, size_t keep_size);
/* Drain the captured syslog, appending each message and a newline to buf
 * (kept NUL-terminated; what does not fit is dropped). */
void sbx_test_log_drain(int s, char *buf, size_t size);

/* Every process of real uid uid that can still run (zombies and dead ones
 * do not count): fn(pid, its /proc status text, ctx) for each (fn may be
 * NULL). How many, or -1 when /proc cannot be read. */
int sbx_test_each_proc_of(uid_t uid, void (*fn)(pid_t pid, const char *status, void *ctx),
			  void *ctx);
/* How many live processes (zombies do not count) have real uid uid; with
 * kill_them, SIGKILL each (only ever for a throwaway account's uid: they
 * are all the test's own). */
int sbx_test_procs_of(uid_t uid, bool kill_them);
/* Print each process of uid (pid, parent, state, name) to stderr. */
void sbx_test_procs_dump(uid_t uid);

/* Remove a throwaway account (or group) the test created: userdel/groupdel,
 * retried for a few seconds while another process holds the passwd lock,
 * until getpwnam/getgrnam no longer finds it. Says so on stderr if it
 * cannot. 0 when gone. */
int sbx_test_remove_account(const char *user);
int sbx_test_remove_group(const char *group);

/* Run teardown(NULL) (a group teardown) when this process is ended by
 * SIGTERM, SIGINT or SIGHUP (a timeout, ^C), then die of the signal as
 * before: what a test made on the host goes even when the test is stopped.
 * Forked children inherit the handler but only die. */
void sbx_test_cleanup_on_signal(int (*teardown)(void **state));

/* A cmocka group set-up for a suite that changes the host: as root, arm
 * sbx_test_cleanup_on_signal(teardown), run inner, and on its failure run
 * teardown (cmocka skips the group teardown after a failed set-up). */
int sbx_test_group_setup(int (*inner)(void), int (*teardown)(void **state));

/* fn(arg) in a forked child (root stays root) that has its own mount
 * namespace, propagation from the host kept (MS_SLAVE) and none back: its
 * exit code, or -1 when it cannot fork. */
int sbx_test_in_own_mntns(int (*fn)(void *), void *arg);

/* Checks inside a forked child (a function returning its exit code): on
 * failure say what and where on stderr and return 1. CHILD_ERRNO wants the
 * call to fail with exactly that errno. */
#define CHILD_CHECK(cond)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: failed: %s (errno %s)\n",      \
				__FILE__, __LINE__, #cond, strerror(errno));   \
			return 1;                                              \
		}                                                              \
	} while (0)

#define CHILD_ERRNO(expr, want)                                                \
	do {                                                                   \
		long r_;                                                       \
		errno = 0;                                                     \
		r_ = (long)(expr);                                             \
		if (r_ != -1 || errno != (want)) {                             \
			fprintf(stderr, "%s:%d: %s: want -1/%s, got %ld/%s\n", \
				__FILE__, __LINE__, #expr, strerror(want), r_, \
				strerror(errno));                              \
			return 1;                                              \
		}                                                              \
	} while (0)

/* In a forked child: load a seccomp filter (libseccomp, independent of
 * libsbx's) under which fork, vfork, clone, clone3 (threads too), setns,
 * and unshare with CLONE_NEWUSER kill the whole process with SIGSYS. Whatever
 * the child does next either makes no process and no user namespace, or
 * dies: the parent sees 128 + SIGSYS. 0, or -1 when it cannot be loaded. */
int sbx_test_forbid_processes(void);
/* The same, but clone3 (whose arguments a filter cannot read) is let
 * through: the caller checks what it made. */
int sbx_test_forbid_processes_but_clone3(void);
/* pid's children, from /proc/<pid>/task/<pid>/children: how many were
 * stored in out (at most max). */
int sbx_test_children(pid_t pid, pid_t *out, int max);
/* From here on unshare(2) and clone(2) with flag (a CLONE_NEW* bit) fail
 * with EPERM, and clone3 (whose flags a filter cannot read) with ENOSYS,
 * as container runtimes answer: a host whose policy refuses that
 * namespace. An unprivileged caller sets no_new_privs first. 0 or -1. */
int sbx_test_refuse_clone_flag(unsigned long flag);

/* tests/seccomp_ref.c: the filter as libseccomp compiled the same rules
 * (a raw cutoff head in front of its export) into o->prog; test_seccomp
 * checks that lib/seccomp.c's emitted program decides every input alike. */
int sbx_seccomp_ref_prepare(struct sbx_seccomp_opts *o, struct sbx_error *err);

/*
 * A strict JSON checker written apart from lib/json.c, so the tests hold
 * the writers to what other readers take: the RFC 8259 grammar (one value,
 * nested at most 64 deep), the text strict UTF-8 (RFC 3629: no overlong
 * form, surrogate or code point above U+10FFFF), no raw C0 control but
 * whitespace between tokens, no raw DEL or C1 control (U+0080-U+009F)
 * anywhere, and in what each string decodes to no control character at
 * all (C0, DEL, C1) and no unpaired surrogate. 0, or -1 with why.
 */
int sbx_test_json_strict(const char *buf, size_t len, char *why, size_t why_size);
/* Text for a terminal: strict UTF-8, no control character but newline
 * (no C0, DEL or C1, in either of C1's spellings). 0, or -1 with why. */
int sbx_test_text_safe(const char *buf, size_t len, char *why, size_t why_size);

/* Skip (with a printed reason) unless running as root. */
#define SBX_TEST_REQUIRE_ROOT()                                              \
	do {                                                                 \
		if (geteuid() != 0) {                                        \
			print_message("[  SKIP    ] needs root (CI runs as root)\n"); \
			skip();                                              \
		}                                                            \
	} while (0)

/* Skip (with the probe's reason) unless user namespaces work for the test uid. */
#define SBX_TEST_REQUIRE_USERNS()                                            \
	do {                                                                 \
		char why_[192];                                              \
		if (!sbx_test_userns_works(why_, sizeof(why_))) {            \
			print_message("[  SKIP    ] no user namespaces: %s\n", why_); \
			skip();                                              \
		}                                                            \
	} while (0)

/* A decision for plan-level tests: Landlock holds deny_read (holes), and
 * TCP rules are handled when the network is denied without a netns. */
const struct sbx_decision *sbx_test_decision(const struct sbx_profile *p, bool netns);

#endif
