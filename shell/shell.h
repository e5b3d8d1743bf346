/* SPDX-License-Identifier: BSD-3-Clause */
/* agent-shell internals: thin orchestration over libsbx. */
#ifndef SBX_SHELL_H
#define SBX_SHELL_H

#include "internal.h"

/* session.c */
int shell_config_load(struct sbx_config **out, struct sbx_error *err);
const char *shell_config_path(void);
/* -f FILE of --check-config, --explain and --doctor: read the candidate
 * FILE (and its conf.d) instead of the live config, under the same trust
 * rules. Sessions never call it. */
int shell_config_use(const char *file);
bool shell_config_is_candidate(void);
/* The caller's account, its passwd entry (sbx_account_by_uid_passwd); its
 * groups added by shell_identity_groups when cfg has group rules. Free
 * with sbx_account_free. */
int shell_identity(struct sbx_account *id, struct sbx_error *err);
int shell_identity_groups(const struct sbx_config *cfg, struct sbx_account *id,
			  struct sbx_error *err);
bool shell_group_is_privileged(const char *group);
void shell_new_session_id(char out[40]);
int shell_resolve_profile(const struct sbx_config *cfg, const struct sbx_account *id,
			  const char *want_profile, const char *want_workspace,
			  bool login_mode, struct sbx_profile *out, bool *is_agent,
			  struct sbx_error *err);
int shell_build_session(const struct sbx_config *cfg, const struct sbx_account *id,
			const struct sbx_profile *p, const char *service, bool pam_stage,
			struct sbx_session *s, char *home_note, size_t note_size,
			struct sbx_error *err);

/* log.c */
/* Send a line (lib/log.c), and keep it in the session's sidecar file
 * when no log daemon listens. */
/* Connect to the PAM stage's ledger channel, when AGENT_SANDBOX_SESSION
 * is set and it exists: first thing, before anything of the agent runs. */
/* 0 (connected, or the session has no channel) or -errno (the channel
 * is there and not this shell's: taken, or not root's). */
int shell_ledger_connect(void);
void shell_log_send(int priority, const struct sbx_logline *l);
/* event=refused stage=STAGE reason=REASON [session=] user= [command=] msg= */
void shell_log_refused(const char *stage, const char *reason, const char *session,
		       const char *user, const char *command, const char *msg);
bool shell_syslog_available(void);
/* At session start: when no syslog daemon listens, warn on stderr and keep
 * the session's log lines in <report dir>/<session>.log as well. */
void shell_log_session_begin(const char *session_id);
void shell_log_report(const struct sbx_report *r, void *ctx);
/* The program has ended: event=session_end, and the report copy written
 * again with its end time and exit status (set in r). */
/* how: "exit" (the program ended), "root_gone" (its root side died). */
void shell_log_session_end(struct sbx_report *r, int exit_status, long long duration_ms,
			   const char *how);
int shell_report_dir(char *out, size_t size);
/* The same directory opened (O_DIRECTORY, never through a link) and
 * checked on the fd: the fd, or -errno. out may be NULL. */
int shell_report_dir_open(char *out, size_t size);

/* gate.c */
/* Split a -c command for the gate: plain words only (no shell syntax).
 * Returns 0 and a NULL-terminated heap argv, or -EINVAL with a reason. */
int shell_gate_split(const char *cmd, char ***argv_out, struct sbx_error *err);
/* Resolve argv0 through PATH; 0 and an absolute path, or -ENOENT. */
int shell_which(const char *argv0, const char *path_env, char *out, size_t size);
/* Is the absolute path on the profile's gate list? */
bool shell_gate_allows(const struct sbx_profile *p, const char *path);

/* admin.c */
int shell_cmd_probe(bool json);
int shell_cmd_check_config(void);
int shell_cmd_explain(const char *user, bool json);
int shell_cmd_report(const char *session, bool json);
int shell_cmd_selftest(void);

/* doctor.c: argv[0] is "--doctor". Exit 0 (no FAIL), 1 (a FAIL), 2 (usage). */
int shell_cmd_doctor(int argc, char **argv);
/* The kernel probe as uid/gid (user for its groups, NULL: none), run by a
 * child that drops to them and reports JSON. 0, or -errno with why filled. */
int shell_probe_as(uid_t uid, gid_t gid, const char *user, struct sbx_probe *out, char *why,
		   size_t why_size);

/* enroll.c: argv[0] is "--enroll" or "--unenroll", argv[1] the user.
 * Exit 0 (done), 1 (failed), 2 (usage). */
int shell_cmd_enroll(int argc, char **argv);

/* usermgr.c: --user-manager UID, user@.service's ExecCondition. Exit 0:
 * start the user manager; 1: an agent account, skip it. */
int shell_cmd_user_manager(int argc, char **argv);

/* shell/ops.c: root's --sessions, --end, --prune (argv[0] is the verb). */
int shell_cmd_sessions(int argc, char **argv);
int shell_cmd_end(int argc, char **argv);
/* The workspace of an expanded profile, when the session's mount view
 * would fail to open it (stat fails: missing, or not reachable by root):
 * true with why filled. (A missing root is left out instead:
 * sbx_profile_skip_missing_roots.) */
bool shell_workspace_missing(const struct sbx_profile *p, char *why, size_t size);
int shell_cmd_log(int argc, char **argv);
/* Root's copy of a session's report (lib/ledger.c), read for --report. */
int shell_ledger_report(const char *session_id, char **buf, size_t *len, struct sbx_error *err);
int shell_cmd_prune(int argc, char **argv);

/* probe_cache.c: --probe-cache [USER...] (argv[0] is the verb), root only.
 * Exit 0 (every account probed; an account whose probe found something
 * missing is not an error), 1 (failed), 2 (usage). */
int shell_cmd_probe_cache(int argc, char **argv);

#endif
