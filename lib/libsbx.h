/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libsbx.h — the installed interface of libsbx.so.0 (see libsbx(3)).
 *
 * Confine a command the way agent-sandbox confines an agent's session:
 * namespaces and a read-only mount view, an isolated home, Landlock,
 * seccomp, no capabilities, no_new_privs, limits, and a guarantee report
 * saying what the kernel enforced. Handles are opaque; only what is declared
 * here is exported, and it keeps its ABI within soname 0.
 *
 * Errors: every function that can fail returns 0 or a negative errno, and
 * fills *err (when not NULL) with a message naming the object and the cause.
 * Outputs are set only on success.
 *
 * Threads: a run forks, and the kernel probe is cached per process on first
 * use. Call the library from one thread at a time; handles are not shared
 * between threads without a lock of the caller's. A run from a process
 * with other threads works (it takes a slower way into the namespaces),
 * but signals sent to the process during the run (SIGHUP, SIGINT, SIGTERM,
 * SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM) reach the session
 * only if every other thread blocks them.
 */
#ifndef LIBSBX_H
#define LIBSBX_H

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBX_API __attribute__((visibility("default")))

#define SBX_ERROR_MAX 1024

struct sbx_error {
	int code;			/* positive errno, 0 when no error */
	char msg[SBX_ERROR_MAX];
};

/* The library's version ("0.1.0"). */
SBX_API const char *sbx_version(void);

/* ---- profiles -------------------------------------------------------------- */

struct sbx_profile;

/* The built-in default profile: the workspace read-write, the host read-only,
 * no network, an ephemeral home, every command allowed, floor "degraded". */
SBX_API struct sbx_profile *sbx_profile_new(void);

/* Profile NAME of the config file PATH and its conf.d drop-ins (root-owned
 * and not writable by others, as agent-sandbox.conf(5) requires), inherited
 * and narrowed by the configuration's [ceiling]. */
SBX_API int sbx_profile_from_config(const char *path, const char *name,
				    struct sbx_profile **out, struct sbx_error *err);

/* Set one key with the syntax of a profile line of agent-sandbox.conf(5)
 * ("network", "deny"; "deny_read", "/srv/secrets"). Keys that may repeat
 * (root, deny_read, gate_allow, unix_allow) add an entry. */
SBX_API int sbx_profile_set(struct sbx_profile *p, const char *key, const char *value,
			    struct sbx_error *err);

SBX_API void sbx_profile_free(struct sbx_profile *p);

/* ---- reports ----------------------------------------------------------------- */

struct sbx_report;

/* 0 none, 1 degraded, 2 full, and its name. */
SBX_API int sbx_report_level(const struct sbx_report *r);
SBX_API const char *sbx_report_level_name(const struct sbx_report *r);
/* Whether the profile's floor was met (if not, nothing ran). */
SBX_API bool sbx_report_floor_met(const struct sbx_report *r);
/* Why the floor was not met ("" when it was). */
SBX_API const char *sbx_report_refusal(const struct sbx_report *r);
SBX_API int sbx_report_to_json(const struct sbx_report *r, FILE *out);
SBX_API int sbx_report_to_text(const struct sbx_report *r, FILE *out);
SBX_API void sbx_report_free(struct sbx_report *r);

/* ---- running a command ----------------------------------------------------- */

/*
 * Run argv confined by p, as the calling user, with workspace (an existing
 * directory, or NULL for none) as its read-write tree. argv[0] is an
 * absolute path, or a name looked up in the caller's PATH before anything
 * is confined. The environment is the caller's, rebuilt from an allow-list.
 *
 * Returns 0 when the command ran, or was refused because the floor was not
 * met (then *exit_code is 126 and the report says why); *exit_code is its
 * exit status, or 128 + the signal that ended it. Nothing runs unconfined:
 * a failure after the sandbox started ends it with exit code 126. *report
 * (may be NULL) gets the guarantee report; free it with sbx_report_free.
 */
SBX_API int sbx_run(const struct sbx_profile *p, const char *workspace,
		    const char *const argv[], int *exit_code, struct sbx_report **report,
		    struct sbx_error *err);

/* ---- executor sets -------------------------------------------------------- */

/*
 * Per-key executors under one scratch directory: each key gets its own home
 * and /tmp (0700 directories under scratch_root/KEY), sees only its own (the
 * scratch root is masked in every executor's view and only its key's
 * directories are bound back), and the same key returns the same executor.
 * At most max keys. Executor sets need the mount view (user namespaces):
 * without one a run is refused rather than let siblings see each other.
 *
 * scratch_root (absolute) is created 0700 when missing; an existing one
 * must be a directory of the caller, not writable by others. Every
 * directory on the way to it must be root's or the caller's and not
 * writable by others unless sticky (as /tmp), and a symlink on the way is
 * followed only when root's, in a directory only root may write: anything
 * else is refused (-EPERM, -ELOOP) with the directory or link named.
 */
struct sbx_executor_set;
struct sbx_executor;

SBX_API int sbx_executor_set_new(const struct sbx_profile *p, const char *scratch_root,
				 unsigned max, struct sbx_executor_set **out,
				 struct sbx_error *err);
/* The executor of key (1-64 of [A-Za-z0-9._-], not "." or ".."); a new key
 * past the cap is -EUSERS. The executor belongs to the set. */
SBX_API int sbx_executor_for(struct sbx_executor_set *set, const char *key,
			     struct sbx_executor **out, struct sbx_error *err);
/* sbx_run in the executor: $HOME is its home, /tmp its tmp. */
SBX_API int sbx_executor_run(struct sbx_executor *e, const char *workspace,
			     const char *const argv[], int *exit_code,
			     struct sbx_report **report, struct sbx_error *err);
/* Remove every executor's files and the scratch root, and free the set.
 * Runs are synchronous and end every process they started, so nothing of
 * the set is left running. NULL is accepted. Returns 0, or the first
 * -errno met while removing (the set is freed either way). */
SBX_API int sbx_executor_set_close(struct sbx_executor_set *set, struct sbx_error *err);

#ifdef __cplusplus
}
#endif

#endif /* LIBSBX_H */
