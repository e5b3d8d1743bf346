/* SPDX-License-Identifier: BSD-3-Clause */
/* pam_agent_sandbox: the root half of an agent session
 * (docs/design.md sections 2, 7, 8). */
#define PAM_SM_ACCOUNT
#define PAM_SM_SESSION
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/sched.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "internal.h"

/*
 * Module arguments (unknown ones are logged and ignored):
 *   debug             log each step at LOG_DEBUG
 *   conf=PATH         the config (default SBX_CONFIG_PATH)
 *   runtime_dir=PATH  session records (default /run/agent-sandbox)
 *   skel=PATH         skeleton for new homes (default /etc/agent-sandbox/skel)
 *   group=NAME        agents' group, used only when the config cannot be read
 *                     (default "agents"), see config_failure()
 *   netns             when the profile denies the network, also give the
 *                     session its own network namespace with only "lo" (this
 *                     also cuts sshd's own -L/-D/-W forwarders, docs/design.md section 2).
 *                     A module argument rather than a config key: it changes
 *                     what sshd itself can do, which is the PAM stack's call.
 *
 * What this module never does (docs/design.md section 2): Landlock, seccomp, no_new_privs,
 * capability changes — sshd's root monitor runs in this process.
 * What it never leaves behind: a changed umask, euid, signal disposition,
 * an open fd, or a half-opened session.
 */

#define SBX_EXPORT __attribute__((visibility("default")))
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

SBX_EXPORT int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv);
SBX_EXPORT int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv);
SBX_EXPORT int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv);

#define DATA_NAME "agent_sandbox_session"
#define DEFAULT_SKEL "/etc/agent-sandbox/skel"

struct args {
	bool debug;
	bool silent;		/* PAM_SILENT: the application wants no messages */
	bool netns;
	const char *conf;
	const char *runtime_dir;
	const char *state_dir;	/* the ledger's: the config's once loaded */
	const char *skel;
	const char *group;
	const char *phase;	/* "account" or "session", for the log */
};

/* What open_session did, kept with pam_set_data for close_session. */
#define DID_TMP 1u
#define DID_EPHEMERAL_HOME 2u
#define DID_HOME_BIND 4u
#define DID_NETNS 8u
#define DID_CLOSED 16u
#define DID_SHM 32u
#define DID_VIEW 64u

struct session_state {
	char id[SBX_SESSION_ID_HEX + 1];
	char user[SBX_NAME_MAX];
	uid_t uid;
	gid_t gid;
	char runtime_dir[SBX_PATH_MAX];
	char state_dir[SBX_PATH_MAX];
	char home[SBX_PATH_MAX];
	char profile[SBX_NAME_MAX];
	char client[128];
	char service[64];
	int channel_fd;		/* the ledger's channel, -1 when none */
	int refusals_fd;	/* where a shell without the slot says it refused */
	/* The ledger directory, opened before anything is masked in the
	 * session's mount namespace (which this process stays in until the
	 * close, and where the shipped ceiling hides the state directory);
	 * -1 when it could not be opened: then by path. */
	int ledger_fd;
	unsigned long mntns;
	unsigned did;
	time_t started;
	pid_t opener;		/* the process that opened the session */
	/* The session's keeper (keeper_start): a pidfd, -1 when none. */
	int keeper_fd;
	pid_t keeper_pid;
};

/*
 * Every line of this module goes out in lib/log.c's grammar under the
 * product's ident (never openlog: that would change sshd's own), never
 * blocking sshd's monitor; through pam_syslog (the service's ident) only
 * where no log daemon listens at all.
 */
static void msend(pam_handle_t *pamh, int prio, const struct sbx_logline *l)
{
	if (sbx_log_sink_missing(sbx_log_send(prio, l)))
		pam_syslog(pamh, LOG_AUTHPRIV | prio, "%s", l->line);
}

/* The same line in root's ledger (lib/ledger.c): through the session's
 * ledger directory fd when it has one (>= 0), else when state_dir is given;
 * a ledger that cannot be written is said in the log, and stops nothing. */
static int ledger_note(pam_handle_t *pamh, const char *state_dir, int dir_fd,
		       const struct sbx_logline *l)
{
	struct sbx_error err = { 0 };
	struct sbx_logline *w;
	int r;

	r = dir_fd >= 0 ? sbx_ledger_append_at(dir_fd, l, &err) :
	    state_dir ? sbx_ledger_append(state_dir, l, &err) : 0;
	if (r == 0)
		return 0;
	w = malloc(sizeof(*w));
	if (!w)
		return r;
	sbx_log_begin(w, "warning");
	sbx_log_add(w, "reason", "ledger");
	sbx_log_add(w, "msg", "%s", err.msg);
	msend(pamh, LOG_ERR, w);
	free(w);
	return r;
}

/* event=EVENT [stage=STAGE] [reason=REASON] service= [user=] [rhost=] msg="..." */
static void mlog_v(pam_handle_t *pamh, int prio, const char *ledger, const char *event,
		   const char *stage, const char *reason, const char *user, const char *fmt,
		   va_list ap) __attribute__((format(printf, 8, 0)));
static void mlog_v(pam_handle_t *pamh, int prio, const char *ledger, const char *event,
		   const char *stage, const char *reason, const char *user, const char *fmt,
		   va_list ap)
{
	const void *service = NULL, *rhost = NULL;
	struct sbx_logline *l;
	char msg[2 * SBX_ERROR_MAX];
	int saved = errno;	/* for %m */

	(void)pam_get_item(pamh, PAM_SERVICE, &service);
	(void)pam_get_item(pamh, PAM_RHOST, &rhost);
	errno = saved;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	l = malloc(sizeof(*l));
	if (!l) {
		pam_syslog(pamh, LOG_AUTHPRIV | prio, "%s", msg);
		return;
	}
	sbx_log_begin(l, event);
	if (stage)
		sbx_log_add(l, "stage", "%s", stage);
	if (reason)
		sbx_log_add(l, "reason", "%s", reason);
	sbx_log_add(l, "service", "%s", service ? (const char *)service : "-");
	if (user)
		sbx_log_add(l, "user", "%s", user);
	if (rhost && ((const char *)rhost)[0])
		sbx_log_add(l, "rhost", "%s", (const char *)rhost);
	sbx_log_add(l, "msg", "%s", msg);
	msend(pamh, prio, l);
	ledger_note(pamh, ledger, -1, l);
	free(l);
}

static void mlog(pam_handle_t *pamh, int prio, const char *event, const char *reason,
		 const char *user, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void mlog(pam_handle_t *pamh, int prio, const char *event, const char *reason,
		 const char *user, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mlog_v(pamh, prio, NULL, event, NULL, reason, user, fmt, ap);
	va_end(ap);
}

static void parse_args(pam_handle_t *pamh, int argc, const char **argv, struct args *a)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->conf = SBX_CONFIG_PATH;
	a->runtime_dir = SBX_RUNTIME_DIR;
	a->state_dir = NULL;	/* no ledger until a config names its place */
	a->skel = DEFAULT_SKEL;
	a->group = SBX_DEFAULT_GROUP;
	for (i = 0; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "debug"))
			a->debug = true;
		else if (!strcmp(s, "netns"))
			a->netns = true;
		else if (!strncmp(s, "conf=", 5) && sbx_path_is_canonical(s + 5))
			a->conf = s + 5;
		else if (!strncmp(s, "runtime_dir=", 12) && sbx_path_is_canonical(s + 12))
			a->runtime_dir = s + 12;
		else if (!strncmp(s, "skel=", 5) && (!s[5] || sbx_path_is_canonical(s + 5)))
			a->skel = s + 5;
		else if (!strncmp(s, "group=", 6) && s[6])
			a->group = s + 6;
		else
			mlog(pamh, LOG_ERR, "warning", "bad_argument", NULL,
			     "ignoring unknown or malformed argument '%s'", s);
	}
}

/*
 * A refusal, logged for the admin and told to whoever is logging in: sshd
 * sends an account-phase message to the client as a banner before it
 * closes the connection, login and su print it. REFUSE evaluates to code
 * (a macro, so the static analyzer sees the value).
 */
/* event=refused stage=PHASE reason=REASON ... */
static void refuse_log(pam_handle_t *pamh, const char *ledger, const char *phase,
		       const char *reason, const char *user, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void refuse_log(pam_handle_t *pamh, const char *ledger, const char *phase,
		       const char *reason, const char *user, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	mlog_v(pamh, LOG_ERR, ledger, "refused", phase ? phase : "account", reason, user, fmt,
	       ap);
	va_end(ap);
}

static void refuse_msg(pam_handle_t *pamh, const struct args *a, const char *reason,
		       const char *user, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void refuse_msg(pam_handle_t *pamh, const struct args *a, const char *reason,
		       const char *user, const char *fmt, ...)
{
	char msg[2 * SBX_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	refuse_log(pamh, a->state_dir, a->phase, reason, user, "%s", msg);
	if (!a->silent)
		pam_error(pamh, "agent-sandbox: %s", msg);
}
/* REFUSE(pamh, a, code, reason, user, fmt, ...): reason a stable token. */
#define REFUSE(pamh, a, code, ...) (refuse_msg((pamh), (a), __VA_ARGS__), (code))

/*
 * The PAM user's passwd entry. 0, or a PAM code; a lookup that fails (an
 * NSS error, not "no such entry") refuses the login. Its groups are looked
 * up only when they are needed (account_groups): a config with group
 * rules, or a config that cannot be used. Looking them up loads every NSS
 * module of the group database (on Debian, systemd's userdb with its
 * probes), most of what the module cost a login that is not an agent's.
 */
static int account_load(pam_handle_t *pamh, struct sbx_account *acc)
{
	struct sbx_error err = { 0 };
	const char *user = NULL;
	int r;

	memset(acc, 0, sizeof(*acc));
	if (pam_get_user(pamh, &user, NULL) != PAM_SUCCESS || !user || !user[0]) {
		mlog(pamh, LOG_ERR, "refused", "no_user", NULL, "cannot determine the user name");
		return PAM_USER_UNKNOWN;
	}
	r = sbx_account_by_name_passwd(user, acc, &err);
	if (r == -ENOENT) {
		mlog(pamh, LOG_ERR, "refused", "no_passwd", user, "user %s: no passwd entry", user);
		return PAM_USER_UNKNOWN;
	}
	if (r) {
		mlog(pamh, LOG_ERR, "refused", "account_lookup", user, "user %s: refused: %s", user,
		     err.msg);
		return r == -ENOMEM ? PAM_BUF_ERR : PAM_SYSTEM_ERR;
	}
	return 0;
}

/* The account's groups, when the decision needs them. A lookup that fails
 * refuses the login: a group missing from the list could turn an agent
 * into a non-agent. */
static int account_groups(pam_handle_t *pamh, struct sbx_account *acc)
{
	struct sbx_error err = { 0 };
	int r = sbx_account_load_groups(acc, &err);

	if (r == 0)
		return 0;
	mlog(pamh, LOG_ERR, "refused", "account_lookup", acc->user, "user %s: refused: %s",
	     acc->user, err.msg);
	return r == -ENOMEM ? PAM_BUF_ERR : PAM_SYSTEM_ERR;
}

/*
 * The config could not be loaded. Without it we cannot tell who is an
 * agent, and the module usually sits in a common stack that admins use
 * too. Failing closed for everyone would lock the admins out with a
 * typo; failing open for everyone would let an agent log in unconfined
 * whenever its config breaks (or whenever it can make the config look
 * untrusted). So: refuse anyone who LOOKS like an agent by facts outside
 * the config — a member of group=NAME (default "agents", the group the
 * sshd drop-in matches) or a login shell named agent-shell — and ignore
 * everyone else. agent-shell itself also refuses to run without a valid
 * config and record, so an agent that slips past this still gets no
 * unconfined shell.
 */
static int config_failure(pam_handle_t *pamh, struct args *a,
			  struct sbx_account *acc, const struct sbx_error *err)
{
	struct stat st;
	int r = account_groups(pamh, acc);

	if (r)
		return r;

	/* The refusal goes to the default place's ledger only where the
	 * package made that place: nothing is created from a broken config. */
	if (stat(SBX_STATE_DIR, &st) == 0 && S_ISDIR(st.st_mode))
		a->state_dir = SBX_STATE_DIR;
	if (sbx_account_looks_like_agent(acc, a->group))
		return REFUSE(pamh, a, PAM_PERM_DENIED, "config", acc->user,
			      "user %s: refused: config %s unusable: %s", acc->user, a->conf, err->msg);
	mlog(pamh, LOG_ERR, "warning", "config", acc->user,
		   "user %s: not treated as an agent (not in group %s, shell %s), but config %s is unusable: %s",
		   acc->user, a->group, acc->shell, a->conf, err->msg);
	return PAM_IGNORE;
}

/*
 * Load the config and pick this account's profile, restricted by the
 * ceiling and expanded. Returns 0 for an agent (*cfg_out owned by the
 * caller), PAM_IGNORE for a non-agent, or a PAM error code (logged).
 * *text_out: the config's files as read (owned by the caller), whenever
 * they could be read and parsed.
 */
static int agent_select(pam_handle_t *pamh, struct args *a,
			struct sbx_account *acc, struct sbx_config **cfg_out,
			struct sbx_profile *prof, struct sbx_config_text **text_out)
{
	struct sbx_error err = { 0 };
	struct sbx_config_text *text = NULL;
	struct sbx_config *cfg = NULL;
	int r;

	r = sbx_config_read(a->conf, 0, &text, &err);
	if (r == 0)
		r = sbx_config_parse_text(text, &cfg, &err);
	if (r) {
		sbx_config_text_free(text);
		return config_failure(pamh, a, acc, &err);
	}
	*text_out = text;
	a->state_dir = cfg->state_dir;	/* for the ledger; lives as long as cfg */
	if (sbx_config_has_group_rules(cfg)) {
		r = account_groups(pamh, acc);
		if (r) {
			sbx_config_free(cfg);
			a->state_dir = NULL;
			return r;
		}
	}
	r = sbx_account_profile(cfg, acc, prof, &err);
	if (r == -ENOENT) {
		if (a->debug)
			mlog(pamh, LOG_DEBUG, "debug", NULL, acc->user,
			     "user %s: not an agent account", acc->user);
		sbx_config_free(cfg);
		a->state_dir = NULL;
		return PAM_IGNORE;
	}
	if (r) {
		r = REFUSE(pamh, a, PAM_PERM_DENIED, "profile", acc->user,
			   "user %s: refused: profile: %s", acc->user, err.msg);
		sbx_config_free(cfg);
		a->state_dir = NULL;
		return r;
	}
	*cfg_out = cfg;
	return 0;
}

/*
 * What the account phase decided, kept for the session phase of the same
 * handle (pam_set_data): sshd's monitor runs both, and the session phase
 * would otherwise parse the same config and build the same profile again.
 * The session phase still reads the config and looks the account up; it
 * takes the kept decision only when both are what they were (the same
 * config path, the same files with the same bytes, the same passwd entry
 * and groups), and decides afresh otherwise. Used once: the session phase
 * drops it either way.
 */
#define SELECTED_NAME "agent_sandbox_selected"

struct selected {
	char conf[SBX_PATH_MAX];
	struct sbx_config_text *text;
	struct sbx_account acc;
	bool agent;
	struct sbx_config *cfg;		/* an agent's; NULL for a non-agent */
	struct sbx_profile *prof;	/* an agent's */
};

static void selected_free(struct selected *k)
{
	if (!k)
		return;
	sbx_config_text_free(k->text);
	sbx_account_free(&k->acc);
	sbx_config_free(k->cfg);
	free(k->prof);
	free(k);
}

static void selected_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	(void)pamh;
	(void)error_status;
	selected_free(data);
}

static bool account_same(const struct sbx_account *x, const struct sbx_account *y)
{
	if (strcmp(x->user, y->user) != 0 || x->uid != y->uid || x->gid != y->gid ||
	    strcmp(x->home, y->home) != 0 || strcmp(x->shell, y->shell) != 0 ||
	    x->groups_loaded != y->groups_loaded || x->n_groups != y->n_groups)
		return false;
	for (size_t i = 0; i < x->n_groups; i++)
		if (strcmp(x->groups[i], y->groups[i]) != 0)
			return false;
	return true;
}

static int account_copy(struct sbx_account *dst, const struct sbx_account *src)
{
	*dst = *src;
	dst->n_groups = 0;
	dst->groups = calloc(src->n_groups ? src->n_groups : 1, sizeof(*dst->groups));
	if (!dst->groups)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_groups; i++) {
		dst->groups[i] = strdup(src->groups[i]);
		if (!dst->groups[i])
			return -ENOMEM;
		dst->n_groups = i + 1;
	}
	return 0;
}

/* The account phase: keep its decision (an agent's cfg moves into it).
 * Nothing is kept when memory runs out: the session phase decides again. */
static void selected_keep(pam_handle_t *pamh, const struct args *a,
			  const struct sbx_account *acc, struct sbx_config **cfg,
			  struct sbx_profile **prof, struct sbx_config_text **text)
{
	struct selected *k = calloc(1, sizeof(*k));

	if (!k || sbx_strlcpy(k->conf, sizeof(k->conf), a->conf) != 0 ||
	    account_copy(&k->acc, acc) != 0)
		goto fail;
	k->agent = *cfg != NULL;
	k->text = *text;
	if (pam_set_data(pamh, SELECTED_NAME, k, selected_cleanup) != PAM_SUCCESS) {
		k->text = NULL;
		goto fail;
	}
	*text = NULL;
	k->cfg = *cfg;
	*cfg = NULL;
	if (k->agent) {
		k->prof = *prof;
		*prof = NULL;
	}
	return;
fail:
	selected_free(k);
}

/*
 * The session phase: the account phase's decision when nothing it rests
 * on changed. 0 for an agent (*cfg and *prof filled, both the caller's),
 * PAM_IGNORE for a non-agent, 1 when there is nothing to take (decide
 * afresh). The kept decision is dropped in every case.
 */
static int selected_take(pam_handle_t *pamh, struct args *a, struct sbx_account *acc,
			 struct sbx_config **cfg, struct sbx_profile **prof)
{
	struct sbx_config_text *now = NULL;
	struct sbx_error err = { 0 };
	const void *data = NULL;
	struct selected *k;
	int r = 1;

	if (pam_get_data(pamh, SELECTED_NAME, &data) != PAM_SUCCESS || !data)
		return 1;
	k = (struct selected *)data;
	/* The same config has the same group rules: the groups are looked up
	 * again exactly when the account phase needed them. */
	if (strcmp(k->conf, a->conf) == 0 && sbx_config_read(a->conf, 0, &now, &err) == 0 &&
	    sbx_config_text_equal(k->text, now) &&
	    (!k->acc.groups_loaded || sbx_account_load_groups(acc, &err) == 0) &&
	    account_same(&k->acc, acc)) {
		if (k->agent) {
			free(*prof);
			*prof = k->prof;
			k->prof = NULL;
			*cfg = k->cfg;
			k->cfg = NULL;
			a->state_dir = (*cfg)->state_dir;
			r = 0;
		} else {
			if (a->debug)
				mlog(pamh, LOG_DEBUG, "debug", NULL, acc->user,
				     "user %s: not an agent account", acc->user);
			r = PAM_IGNORE;
		}
	}
	sbx_config_text_free(now);
	(void)pam_set_data(pamh, SELECTED_NAME, NULL, NULL);	/* frees k */
	return r;
}

static const char *pam_str_item(pam_handle_t *pamh, int item)
{
	const void *v = NULL;

	if (pam_get_item(pamh, item, &v) != PAM_SUCCESS || !v)
		return NULL;
	return v;
}

/* The expectation (sbx_decide, sbx_decision_expect) for p on kernel k:
 * 1 floor met, 0 not (why filled), -1 the profile cannot run (why). */
static int expected_floor(const struct sbx_profile *p, const struct sbx_probe *k,
			  char *why, size_t size)
{
	struct sbx_error err = { 0 };
	struct sbx_decision d;
	struct sbx_report *r;
	int met;

	if (sbx_decide(p, k, NULL, &d, &err) != 0) {
		snprintf(why, size, "%s", err.msg);
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	sbx_report_init(r, p);
	sbx_decision_expect(&d, r);
	met = r->floor_met;
	if (!met)
		snprintf(why, size, "%s", r->refusal);
	free(r);
	return met;
}

/*
 * Will the shell be able to meet the floor on this kernel? The session's
 * own decision, from the kernel's facts (sbx_probe_kernel: Landlock,
 * seccomp, mount_setattr, cgroup v2, by plain syscalls and reads, with no
 * process and no namespace made inside sshd's monitor) and every
 * namespace taken as available: whether the agent may create them depends
 * on its uid, which this root process cannot answer for, and the shell
 * decides it again with its own probe. Refused here only when the kernel
 * is the reason (the floor would be met on a kernel with every feature):
 * a profile that asks for what no kernel gives is refused by the shell,
 * whose message reaches the ssh client with a full report. 0, or -1 with
 * why filled.
 */
static int floor_unmeetable(const struct sbx_profile *p, char *why, size_t size)
{
	struct sbx_probe k, ideal;
	char ideal_why[SBX_ERROR_MAX];
	int met;

	if (p->isolation != SBX_ISOLATION_SANDBOXED)
		return 0;
	sbx_probe_kernel(&k);
	k.userns = k.mountns = k.pidns = k.netns = true;
	k.ipcns = k.utsns = k.cgroupns = true;
	met = expected_floor(p, &k, why, size);
	if (met != 0)
		return met > 0 ? 0 : -1;
	ideal = k;
	ideal.seccomp = ideal.mount_setattr = true;
	ideal.landlock_abi = SBX_LANDLOCK_ABI_NEWEST;
	return expected_floor(p, &ideal, ideal_why, sizeof(ideal_why)) > 0 ? -1 : 0;
}

/* The account rules shared by acct_mgmt and open_session (the account
 * phase does not always run: su as root skips it in some stacks).
 * floor_known: the account phase kept this decision, so it checked the
 * floor against the same profile and the same kernel facts (none of them
 * changes while the kernel runs); the shell decides the floor again. */
/* Where a stale session's end goes: root's ledger (by fd in a session's
 * masked namespace, by path elsewhere) and the log. */
struct stale_note {
	pam_handle_t *pamh;
	const char *state_dir;
	int ledger_fd;
};

/*
 * A session whose opener died (an OOM kill or kill -9 of sshd's monitor)
 * never closed: its end is written by whoever removes its record (the next
 * login's count, a close, agent-shell --prune or --end), once its
 * processes are ended. The shell's report went down with the opener (it
 * was queued on the opener's channel): report=lost says so.
 */
static void stale_ended(const struct sbx_record *rec, unsigned killed, void *arg)
{
	const struct stale_note *sn = arg;
	struct sbx_logline *l = malloc(sizeof(*l));

	if (!l)
		return;
	sbx_record_stale_line(rec, killed, l);
	msend(sn->pamh, LOG_ERR, l);
	ledger_note(sn->pamh, sn->state_dir, sn->ledger_fd, l);
	free(l);
}

static int agent_policy(pam_handle_t *pamh, const struct args *a,
			const struct sbx_account *acc, const struct sbx_config *cfg,
			const struct sbx_profile *p, bool floor_known)
{
	struct sbx_error err = { 0 };
	const char *service = pam_str_item(pamh, PAM_SERVICE);
	char missing[SBX_ERROR_MAX];
	unsigned n = 0, stale = 0;

	if (strcmp(acc->shell, cfg->agent_shell) != 0)
		return REFUSE(pamh, a, PAM_PERM_DENIED, "login_shell", acc->user,
			      "user %s: refused: login shell %s is not the agent shell %s",
			      acc->user, acc->shell, cfg->agent_shell);
	if (!service || !sbx_profile_allows_service(p, service))
		return REFUSE(pamh, a, PAM_PERM_DENIED, "service", acc->user,
			      "user %s: refused: PAM service %s is not allowed for profile %s",
			      acc->user, service ? service : "(none)", p->name);
	if (p->limits.set_mask & (1u << SBX_LIMIT_MAX_SESSIONS)) {
		const struct stale_note sn = { pamh, cfg->state_dir, -1 };
		const struct sbx_stale_hook hook = { stale_ended, (void *)&sn };

		if (sbx_record_count_user(a->runtime_dir, acc->uid, &n, &stale, &hook, &err) != 0)
			return REFUSE(pamh, a, PAM_PERM_DENIED, "session_count", acc->user,
				      "user %s: refused: cannot count sessions: %s",
				      acc->user, err.msg);
		if (stale)
			mlog(pamh, LOG_NOTICE, "warning", "stale_records", acc->user,
				   "removed %u stale session record(s): the process that opened "
				   "each is gone (a session that ended without closing)", stale);
		if (n >= p->limits.value[SBX_LIMIT_MAX_SESSIONS])
			return REFUSE(pamh, a, PAM_PERM_DENIED, "max_sessions", acc->user,
				      "user %s: refused: %u sessions open, max_sessions is %llu",
				      acc->user, n,
				      (unsigned long long)p->limits.value[SBX_LIMIT_MAX_SESSIONS]);
	}
	if (!floor_known && floor_unmeetable(p, missing, sizeof(missing)) != 0) {
		return REFUSE(pamh, a, PAM_PERM_DENIED, "kernel_floor", acc->user,
			      "user %s: refused: profile %s cannot meet its floor on this kernel: %s",
			      acc->user, p->name, missing);
	}
	return PAM_SUCCESS;
}

typedef int (*agent_step)(pam_handle_t *pamh, const struct args *a,
			  const struct sbx_account *acc, const struct sbx_config *cfg,
			  const struct sbx_profile *p);

static int account_allowed(pam_handle_t *pamh, const struct args *a,
			   const struct sbx_account *acc, const struct sbx_config *cfg,
			   const struct sbx_profile *p);

/* Both entry points: the account, its profile and the account rules, then
 * step for an agent that passed them. PAM_IGNORE for an account that is
 * not an agent's; otherwise the first PAM code that is not success. */
static int for_agent(pam_handle_t *pamh, int flags, int argc, const char **argv,
		     agent_step step)
{
	struct sbx_config_text *text = NULL;
	struct sbx_config *cfg = NULL;
	struct sbx_profile *prof;
	struct sbx_account acc;
	struct args a;
	bool account_phase = step == account_allowed, kept;
	int r;

	parse_args(pamh, argc, argv, &a);
	a.silent = flags & PAM_SILENT;
	a.phase = account_phase ? "account" : "session";
	r = account_load(pamh, &acc);
	if (r)
		return r;
	/* On the heap: a profile is 170 KiB, mostly list room no login
	 * touches, and a stack frame that size is probed page by page. */
	prof = malloc(sizeof(*prof));
	if (!prof) {
		sbx_account_free(&acc);
		return PAM_BUF_ERR;
	}
	r = account_phase ? 1 : selected_take(pamh, &a, &acc, &cfg, &prof);
	/* An agent's decision is kept only when it passed agent_policy. */
	kept = r == 0;
	if (r == 1)
		r = agent_select(pamh, &a, &acc, &cfg, prof, &text);
	if (r == 0) {
		r = agent_policy(pamh, &a, &acc, cfg, prof, kept);
		if (r == PAM_SUCCESS)
			r = step(pamh, &a, &acc, cfg, prof);
	}
	/* What the account phase found, for its session phase: an agent
	 * allowed in, or an account that is not an agent's. */
	if (account_phase && text && (r == PAM_SUCCESS || (r == PAM_IGNORE && !cfg)))
		selected_keep(pamh, &a, &acc, &cfg, &prof, &text);
	free(prof);
	sbx_config_free(cfg);
	sbx_config_text_free(text);
	sbx_account_free(&acc);
	return r;
}

static int account_allowed(pam_handle_t *pamh, const struct args *a,
			   const struct sbx_account *acc, const struct sbx_config *cfg,
			   const struct sbx_profile *p)
{
	if (a->debug)
		mlog(pamh, LOG_DEBUG, "debug", NULL, acc->user,
		     "user %s: agent account, profile %s: allowed", acc->user, p->name);
	return PAM_SUCCESS;
}

int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	return for_agent(pamh, flags, argc, argv, account_allowed);
}

/* ---- open_session ------------------------------------------------------ */

/* Everything open_session changed in this process, to undo on failure. */
struct undo {
	int old_mnt, old_net, old_cwd;
	size_t n;
	char targets[SBX_MAX_DENY + 6][SBX_PATH_MAX];
};

static void undo_init(struct undo *u)
{
	u->old_mnt = u->old_net = u->old_cwd = -1;
	u->n = 0;
}

static void undo_close(struct undo *u)
{
	if (u->old_mnt >= 0)
		close(u->old_mnt);
	if (u->old_net >= 0)
		close(u->old_net);
	if (u->old_cwd >= 0)
		close(u->old_cwd);
	undo_init(u);
}

static void undo_note(struct undo *u, const char *target)
{
	if (u->n < ARRAY_SIZE(u->targets))
		sbx_strlcpy(u->targets[u->n++], SBX_PATH_MAX, target);
}

/*
 * Back out: detach what we mounted (newest first), then return to the
 * namespaces we came from (root may setns back; this process is
 * single-threaded, as setns(CLONE_NEWNS) needs) and to the old cwd.
 */
static void undo_run(pam_handle_t *pamh, const char *user, struct undo *u)
{
	while (u->n > 0)
		(void)umount2(u->targets[--u->n], MNT_DETACH | UMOUNT_NOFOLLOW);
	if (u->old_net >= 0 && setns(u->old_net, CLONE_NEWNET) != 0)
		mlog(pamh, LOG_ERR, "error", "undo", user, "user %s: setns(old net namespace): %m",
		     user);
	if (u->old_mnt >= 0 && setns(u->old_mnt, CLONE_NEWNS) != 0)
		mlog(pamh, LOG_ERR, "error", "undo", user, "user %s: setns(old mount namespace): %m",
		     user);
	if (u->old_cwd >= 0 && fchdir(u->old_cwd) != 0)
		mlog(pamh, LOG_ERR, "error", "undo", user, "user %s: fchdir(old cwd): %m", user);
	undo_close(u);
}

/* Bind the isolated home (by fd) onto the passwd home (by fd). */
static int bind_home(const char *source, const char *target, struct sbx_error *err)
{
	int sfd, r;

	r = sbx_dir_open_walk(source, false, 0, &sfd, err);
	if (r)
		return r;
	r = sbx_root_mount(target, sfd, NULL, NULL, MS_BIND, NULL, err);
	close(sfd);
	if (r == -ENOENT)
		return sbx_error_set(err, ENOENT,
				     "home mountpoint %s does not exist (create it; the module never does)",
				     target);
	if (r)
		return r;
	return sbx_root_mount(target, -1, NULL, NULL,
			      MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL, err);
}

/* Hide a deny_read secret: an empty read-only tmpfs on a directory,
 * /dev/null on anything else. A missing path needs no mask. */
static int mask_path(const char *path, bool *masked, struct sbx_error *err)
{
	struct stat st;
	int fd, nfd, r;

	*masked = false;
	r = sbx_path_open_nofollow(path, O_PATH, &fd, err);
	if (r == -ENOENT) {
		sbx_error_clear(err);
		return 0;
	}
	if (r)
		return r;
	if (fstat(fd, &st) != 0) {
		r = sbx_error_set(err, errno, "fstat(%s): %s", path, strerror(errno));
		close(fd);
		return r;
	}
	close(fd);
	if (S_ISDIR(st.st_mode)) {
		r = sbx_root_mount(path, -1, "tmpfs", "tmpfs",
				   MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				   "mode=0000,size=4k,nr_inodes=1", err);
	} else {
		nfd = open("/dev/null", O_PATH | O_CLOEXEC);
		if (nfd < 0)
			return sbx_error_set(err, errno, "open(/dev/null): %s", strerror(errno));
		r = sbx_root_mount(path, nfd, NULL, NULL, MS_BIND, NULL, err);
		close(nfd);
		if (r == 0) {
			*masked = true;
			r = sbx_root_mount(path, -1, NULL, NULL,
					   MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID |
					   MS_NODEV | MS_NOEXEC, NULL, err);
		}
	}
	if (r == 0)
		*masked = true;
	return r;
}

static void sanitize(char *dst, size_t size, const char *src)
{
	size_t i;

	sbx_strlcpy(dst, size, "");
	if (!src)
		return;
	for (i = 0; src[i] && i + 1 < size; i++)
		dst[i] = (char)(((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ? '?' : src[i]);
	dst[i] = '\0';
}

static void state_cleanup(pam_handle_t *pamh, void *data, int error_status)
{
	struct session_state *ss = data;

	if (ss && ss->channel_fd >= 0)
		close(ss->channel_fd);
	if (ss && ss->refusals_fd >= 0)
		close(ss->refusals_fd);
	if (ss && ss->ledger_fd >= 0)
		close(ss->ledger_fd);
	/* Only the descriptor: a copy of the host program that ends PAM
	 * (a forked child, say) must not end the keeper of a live session. */
	if (ss && ss->keeper_fd >= 0)
		close(ss->keeper_fd);
	free(data);
}

/*
 * Opening an agent's session: a table of steps, run in order. Each step
 * notes what it changed in the undo list (mounts, namespaces) or the
 * context (the record); on a failure everything done so far is undone, so
 * a refused session leaves sshd's process as it found it. Each step that
 * did something names it in the log line's pam_stage= list.
 */
struct open_ctx {
	pam_handle_t *pamh;
	const struct args *a;
	const struct sbx_account *acc;
	const struct sbx_config *cfg;
	const struct sbx_profile *p;
	struct session_state *ss;
	struct undo u;
	struct sbx_error err;
	struct sbx_record rec;
	char home_source[SBX_PATH_MAX];
	char done[256];
	uint64_t tmp_size;
	bool changed;			/* the mount namespace is ours: undo_run */
	bool record_written;
};

static void did(struct open_ctx *c, const char *what)
{
	if (c->done[0])
		strncat(c->done, ",", sizeof(c->done) - strlen(c->done) - 1);
	strncat(c->done, what, sizeof(c->done) - strlen(c->done) - 1);
}

/* The process holding the session (sshd's monitor) must outlive anything
 * the agent does: an OOM kill of it, which a session at its memory_max
 * can provoke with memory no process is charged for (socket buffers),
 * leaves the session running without its close. Its children inherit the
 * score; agent-shell puts the agent's processes back to 0. */
static int step_oom(struct open_ctx *c)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, "-1000", 5) != 5)
		mlog(c->pamh, LOG_WARNING, "warning", "oom_score_adj", c->acc->user,
			   "user %s: oom_score_adj of the session's process not set: %m",
			   c->acc->user);
	else
		did(c, "oom");
	if (fd >= 0)
		close(fd);
	return 0;
}

/* memory_max, pids_max, cpu_max on the login's logind scope, first, while
 * systemctl still sees the host's namespaces. Not fatal: the session's
 * report reads back what is in force, and its floor decides. */
static int step_cgroup(struct open_ctx *c)
{
	struct sbx_error err = { 0 };
	char unit[SBX_NAME_MAX];

	if (!sbx_cgroup_requested(c->p))
		return 0;
	if (sbx_cgroup_session_apply(c->p, unit, sizeof(unit), &err) != 0) {
		mlog(c->pamh, LOG_WARNING, "warning", "cgroup_limits", c->acc->user,
			   "user %s: session limits not set: %s", c->acc->user, err.msg);
		return 0;
	}
	did(c, "cgroup");
	return 0;
}

/* The persistent home lives on the host: prepared before unshare. */
static int step_prepare_home(struct open_ctx *c)
{
	if (c->p->home != SBX_HOME_ISOLATED)
		return 0;
	return sbx_home_prepare_isolated(c->cfg->state_dir, c->acc->user, c->acc->uid,
					 c->acc->gid, c->a->skel, c->home_source,
					 sizeof(c->home_source), &c->err);
}

/* The session's mount namespace: host mounts still propagate in (slave),
 * nothing done here propagates out (as pam_namespace). */
static int step_mount_ns(struct open_ctx *c)
{
	int r;

	c->u.old_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	c->u.old_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->u.old_mnt < 0)
		return sbx_error_set(&c->err, errno, "open(/proc/self/ns/mnt): %s",
				     strerror(errno));
	r = sbx_ns_unshare(CLONE_NEWNS, &c->err);
	if (r)
		return r;	/* nothing changed */
	c->changed = true;
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0)
		return sbx_error_set(&c->err, errno, "mount(/, MS_REC|MS_SLAVE): %s",
				     strerror(errno));
	did(c, "mntns");
	return 0;
}

/* The home at the passwd home path. */
static int step_home(struct open_ctx *c)
{
	const struct sbx_account *acc = c->acc;
	int r;

	if (c->p->home == SBX_HOME_ISOLATED && strcmp(c->home_source, acc->home) != 0) {
		r = bind_home(c->home_source, acc->home, &c->err);
		if (r)
			return r;
		undo_note(&c->u, acc->home);
		c->ss->did |= DID_HOME_BIND;
		did(c, "home-bind");
	} else if (c->p->home == SBX_HOME_EPHEMERAL) {
		r = sbx_home_prepare_ephemeral(acc->home, acc->uid, acc->gid, c->tmp_size,
					       c->a->skel, &c->err);
		if (r)
			return r;
		undo_note(&c->u, acc->home);
		c->ss->did |= DID_EPHEMERAL_HOME;
		did(c, "home-tmpfs");
	}
	return 0;
}

/* A private /tmp and /dev/shm: without them a session that cannot make its
 * own mount view (no user namespaces) would share the host's scratch space
 * with every other process. */
static int step_tmp(struct open_ctx *c)
{
	char data[64];
	int r;

	snprintf(data, sizeof(data), "mode=1777,size=%llu", (unsigned long long)c->tmp_size);
	r = sbx_root_mount("/tmp", -1, "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, data, &c->err);
	if (r)
		return r;
	undo_note(&c->u, "/tmp");
	c->ss->did |= DID_TMP;
	did(c, "tmp");
	r = sbx_root_mount("/dev/shm", -1, "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, data, &c->err);
	if (r == 0) {
		undo_note(&c->u, "/dev/shm");
		c->ss->did |= DID_SHM;
		did(c, "shm");
	} else if (r != -ENOENT) {
		return r;
	}
	sbx_error_clear(&c->err);
	return 0;
}

/* Secrets. agent-shell still has to read its config and be executed in
 * this namespace: a secret covering either is left to agent-shell's own
 * mount view, which masks it before anything runs (a config hidden here
 * made every login fail). */
static int step_secrets(struct open_ctx *c)
{
	const struct sbx_profile *p = c->p;
	char confd[SBX_PATH_MAX];
	const char *slash = strrchr(c->a->conf, '/');

	/* The config's drop-ins (conf.d beside it) are read by agent-shell
	 * too: a secret inside conf.d, or covering it, hides them. */
	if (!slash || snprintf(confd, sizeof(confd), "%.*s/conf.d", (int)(slash - c->a->conf),
			       c->a->conf) >= (int)sizeof(confd))
		confd[0] = '\0';
	for (size_t i = 0; i < p->n_deny_read; i++) {
		bool masked = false;
		int r;

		if (sbx_path_is_under(SBX_CONFIG_PATH, p->deny_read[i]) ||
		    sbx_path_is_under(c->a->conf, p->deny_read[i]) ||
		    (confd[0] && (sbx_path_is_under(confd, p->deny_read[i]) ||
				  sbx_path_is_under(p->deny_read[i], confd))) ||
		    sbx_path_is_under(c->cfg->agent_shell, p->deny_read[i])) {
			mlog(c->pamh, LOG_NOTICE, "warning", "deny_read_deferred", c->acc->user,
				   "user %s: deny_read %s covers agent-shell or its config; "
				   "masked by agent-shell's view instead of here",
				   c->acc->user, p->deny_read[i]);
			continue;
		}
		r = mask_path(p->deny_read[i], &masked, &c->err);
		if (masked)
			undo_note(&c->u, p->deny_read[i]);
		if (r)
			return r;
	}
	if (p->n_deny_read)
		did(c, "deny_read");
	return 0;
}

/* Optionally no network but lo. */
static int step_net_ns(struct open_ctx *c)
{
	int r;

	if (!c->a->netns || c->p->network == SBX_ACCESS_ALLOW)
		return 0;
	c->u.old_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (c->u.old_net < 0)
		return sbx_error_set(&c->err, errno, "open(/proc/self/ns/net): %s",
				     strerror(errno));
	r = sbx_ns_unshare(CLONE_NEWNET, &c->err);
	if (r) {
		close(c->u.old_net);
		c->u.old_net = -1;
		return r;
	}
	r = sbx_net_lo_up(&c->err);
	if (r)
		return r;
	c->ss->did |= DID_NETNS;
	did(c, "netns");
	return 0;
}

/* The record the shell verifies, written under the sessions lock: the
 * account phase's count was a fast refusal, this is the one that holds. */
static int step_record(struct open_ctx *c)
{
	struct sbx_record *rec = &c->rec;
	const struct sbx_profile *p = c->p;
	const char *service = pam_str_item(c->pamh, PAM_SERVICE);
	const char *rhost = pam_str_item(c->pamh, PAM_RHOST);
	const struct stale_note sn = { c->pamh, c->cfg->state_dir, c->ss->ledger_fd };
	const struct sbx_stale_hook hook = { stale_ended, (void *)&sn };
	char client[128];
	int r;

	memset(rec, 0, sizeof(*rec));
	memcpy(rec->session, c->ss->id, sizeof(rec->session));
	sbx_strlcpy(rec->user, sizeof(rec->user), c->acc->user);
	rec->uid = c->acc->uid;
	rec->mntns = sbx_ns_inode("mnt");
	rec->netns = (c->ss->did & DID_NETNS) ? sbx_ns_inode("net") : 0;
	sbx_strlcpy(rec->profile, sizeof(rec->profile), p->name);
	sbx_profile_hash(p, rec->hash);
	sanitize(client, sizeof(client), rhost && rhost[0] ? rhost : "local");
	sbx_strlcpy(rec->client, sizeof(rec->client), client);
	sanitize(rec->service, sizeof(rec->service), service);
	rec->started = (int64_t)time(NULL);
	sbx_strlcpy(rec->home, sizeof(rec->home), c->acc->home);
	sbx_strlcpy(rec->home_source, sizeof(rec->home_source), c->home_source);
	rec->home_kind = p->home;
	rec->private_tmp = (c->ss->did & DID_TMP) && (c->ss->did & DID_SHM);
	/* This process stays until the session closes (sshd's monitor, su,
	 * login): while it lives, the record is live. */
	if (sbx_proc_start_time(getpid(), &rec->opener_start) == 0)
		rec->opener_pid = getpid();
	r = sbx_record_write(c->a->runtime_dir, rec,
			     (p->limits.set_mask & (1u << SBX_LIMIT_MAX_SESSIONS)) ?
			     (unsigned)p->limits.value[SBX_LIMIT_MAX_SESSIONS] : 0, &hook, &c->err);
	if (r == 0)
		c->record_written = true;
	return r;
}

/* The shell's copy of the record, visible in this session's namespace only. */
static int step_record_view(struct open_ctx *c)
{
	char view[SBX_PATH_MAX];
	int r = sbx_record_publish(c->a->runtime_dir, &c->rec, &c->ss->channel_fd,
				   &c->ss->refusals_fd, &c->err);

	if (r)
		return r;
	if (sbx_record_view_path(c->a->runtime_dir, view, sizeof(view)) == 0)
		undo_note(&c->u, view);
	c->ss->did |= DID_VIEW;
	return 0;
}

/* What the close (and the keeper) needs. */
static int step_state(struct open_ctx *c)
{
	struct session_state *ss = c->ss;

	sbx_strlcpy(ss->user, sizeof(ss->user), c->acc->user);
	ss->uid = c->acc->uid;
	ss->gid = c->acc->gid;
	sbx_strlcpy(ss->runtime_dir, sizeof(ss->runtime_dir), c->a->runtime_dir);
	sbx_strlcpy(ss->state_dir, sizeof(ss->state_dir), c->cfg->state_dir);
	sbx_strlcpy(ss->home, sizeof(ss->home), c->acc->home);
	sbx_strlcpy(ss->profile, sizeof(ss->profile), c->rec.profile);
	sbx_strlcpy(ss->client, sizeof(ss->client), c->rec.client);
	sbx_strlcpy(ss->service, sizeof(ss->service), c->rec.service);
	ss->mntns = c->rec.mntns;
	ss->started = (time_t)c->rec.started;
	ss->opener = c->rec.opener_pid;
	return 0;
}

/* AGENT_SANDBOX_SESSION for the shell, and the state for the close. */
static int step_handoff(struct open_ctx *c)
{
	char env[64];

	snprintf(env, sizeof(env), "AGENT_SANDBOX_SESSION=%s", c->ss->id);
	if (pam_putenv(c->pamh, env) != PAM_SUCCESS)
		return sbx_error_set(&c->err, ENOMEM, "pam_putenv(AGENT_SANDBOX_SESSION) failed");
	if (pam_set_data(c->pamh, DATA_NAME, c->ss, state_cleanup) != PAM_SUCCESS) {
		(void)pam_putenv(c->pamh, "AGENT_SANDBOX_SESSION");
		return sbx_error_set(&c->err, ENOMEM, "pam_set_data failed");
	}
	return 0;
}

/* event=pam_open: what the root stage did for this session; -errno when
 * root's ledger could not take it. */
static int log_opened(pam_handle_t *pamh, const struct open_ctx *c, const struct sbx_profile *p)
{
	struct sbx_logline *l = malloc(sizeof(*l));
	int r;

	if (!l)
		return -ENOMEM;
	sbx_log_begin(l, "pam_open");
	sbx_log_add(l, "session", "%s", c->rec.session);
	sbx_log_add(l, "user", "%s", c->rec.user);
	sbx_log_add(l, "uid", "%u", (unsigned)c->rec.uid);
	sbx_log_add(l, "service", "%s", c->rec.service);
	sbx_log_add(l, "client", "%s", c->rec.client);
	sbx_log_add(l, "profile", "%s", c->rec.profile);
	sbx_log_add(l, "hash", "%s", c->rec.hash);
	sbx_log_add(l, "home", "%s", c->rec.home);
	sbx_log_add(l, "home_kind", "%s", sbx_home_name(p->home));
	sbx_log_add(l, "mntns", "%lu", c->rec.mntns);
	sbx_log_add(l, "pam_stage", "%s", c->done);
	msend(pamh, LOG_INFO, l);
	r = ledger_note(pamh, c->cfg->state_dir, c->ss->ledger_fd, l);
	free(l);
	return r;
}

/* The open, in root's ledger. A session the ledger cannot record (its
 * filesystem full, say) is refused: it would run with no trace where the
 * agent cannot edit it. Before the hand-off, so a refusal undoes all. */
static int step_ledger(struct open_ctx *c)
{
	int r = log_opened(c->pamh, c, c->p);

	if (r)
		return sbx_error_set(&c->err, -r, "root's ledger under %s cannot record the "
				     "session (%s): free space there, or fix the directory",
				     c->cfg->state_dir, strerror(-r));
	return 0;
}

/*
 * The session's keeper. The process that opened the session (sshd's
 * monitor, su, login) closes it. When it dies first (kill -9, the OOM
 * killer), nothing would: the shell's report, queued on the channel that
 * process listened on, would go with it, and the session's processes would
 * run on until someone found its record stale. So the open leaves one
 * small root process beside the opener, which only waits:
 *   - made like the kill helper, with raw clone3 (no fork handlers of the
 *     host program, exit_signal 0: no SIGCHLD to it, out of its
 *     waitpid(-1)), a copy of the opener that keeps four descriptors (the
 *     channel's and the refusals socket's listeners, the ledger directory,
 *     the opener's pidfd), blocks every signal (no handler of the host program runs in
 *     it; SIGKILL still ends it) and leaves the opener's session;
 *   - at a normal close, the opener ends it through its pidfd before it
 *     reads the channel, so the two never read it both;
 *   - when the opener's pidfd says it is gone, the keeper takes the record
 *     over as its opener (under the sessions lock: a count that found the
 *     record stale first has ended the session, and the keeper leaves it
 *     to that), waits up to KEEPER_WAIT_MS for agent-shell (which ends the
 *     session when its opener goes: SIGHUP, SIGKILL 3 s later) to send its
 *     report and end, then closes the session as the close does, with
 *     how=opener_gone, and exits.
 * The hosts of this module (sshd, su, login, runuser) are single-threaded,
 * which is what lets the copy use the C library.
 */
#define KEEPER_WAIT_MS 8000
/* Tries at the sessions lock (5 s each) before the keeper gives up. */
#define KEEPER_LOCK_TRIES 12

static int session_close(pam_handle_t *pamh, struct session_state *ss, int wait_ms,
			 const char *how);

/* A copy of this process for a helper of ours (the keeper, the kill(-1)
 * helper): raw clone3, so no fork handler of the host program runs;
 * exit_signal 0, so the host gets no SIGCHLD and its waitpid(-1) never
 * reaps it; *pidfd to wait on and signal it. As fork(): 0 in the copy,
 * the pid in the caller, -1 (errno) when it failed. */
static pid_t clone_quiet(int *pidfd)
{
	struct clone_args ca;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (uint64_t)(uintptr_t)pidfd;
	ca.exit_signal = 0;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

/* Every descriptor but keep[0..n) (ascending), and 0 to 2 on /dev/null. */
static void keep_only(const int *keep, size_t n)
{
	unsigned lo = 0;
	int null;

	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			(void)syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	(void)syscall(SYS_close_range, lo, ~0u, 0);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; null >= 0 && fd <= 2; fd++) {
		bool kept = false;

		for (size_t i = 0; i < n; i++)
			kept |= keep[i] == fd;
		if (!kept && fd != null)
			(void)dup2(null, fd);
	}
	if (null > 2)
		close(null);
}

static int int_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static __attribute__((noreturn)) void keeper_main(pam_handle_t *pamh, struct session_state *ss,
						 int opener_fd)
{
	uint64_t all = ~(uint64_t)0, start = 0;
	struct pollfd pfd = { .fd = opener_fd, .events = POLLIN };
	struct sbx_error err = { 0 };
	int keep[4] = { opener_fd, ss->channel_fd, ss->refusals_fd, ss->ledger_fd };
	int r;

	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all));
	(void)prctl(PR_SET_NAME, "sbx-keeper", 0, 0, 0);
	qsort(keep, ARRAY_SIZE(keep), sizeof(keep[0]), int_cmp);
	keep_only(keep, ARRAY_SIZE(keep));
	(void)setsid();
	ss->keeper_fd = -1;
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	r = sbx_proc_start_time(getpid(), &start);
	/* The lock is taken within 5 s; a longer hold (a close ending every
	 * process of an account, a login's stale sweep) is no reason to leave
	 * the session unclosed: try again, for a bounded while. */
	for (int tries = 0; r == 0 || (r == -ETIMEDOUT && tries < KEEPER_LOCK_TRIES); tries++) {
		sbx_error_clear(&err);
		r = sbx_record_take_over(ss->runtime_dir, ss->id, ss->opener, getpid(), start,
					 &err);
		if (r != -ETIMEDOUT)
			break;
	}
	if (r == 0)
		(void)session_close(pamh, ss, KEEPER_WAIT_MS, "opener_gone");
	else if (r != -ENOENT)
		mlog(pamh, LOG_ERR, "error", "keeper", ss->user,
		     "session=%s: the session's opener (pid %d) is gone, and its keeper "
		     "cannot take its record: %s", ss->id, (int)ss->opener, err.msg);
	syscall(SYS_exit_group, 0);
	__builtin_unreachable();
}

/* Once the record and the channel exist: a session whose keeper cannot be
 * made is refused (it would end untracked if its opener died). */
static int step_keeper(struct open_ctx *c)
{
	struct session_state *ss = c->ss;
	int opener_fd, pidfd = -1, e;
	pid_t pid;

	opener_fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (opener_fd < 0)
		return sbx_error_set(&c->err, errno, "keeper: pidfd_open: %s", strerror(errno));
	pid = clone_quiet(&pidfd);
	if (pid == 0)
		keeper_main(c->pamh, ss, opener_fd);
	e = errno;
	close(opener_fd);
	if (pid < 0)
		return sbx_error_set(&c->err, e, "keeper: clone3: %s", strerror(e));
	ss->keeper_fd = pidfd;
	ss->keeper_pid = pid;
	did(c, "keeper");
	return 0;
}

/* The keeper ends (it has done nothing yet) and is reaped. */
static void keeper_stop(struct session_state *ss)
{
	siginfo_t si;

	if (ss->keeper_fd < 0)
		return;
	(void)syscall(SYS_pidfd_send_signal, ss->keeper_fd, SIGKILL, NULL, 0);
	(void)syscall(SYS_waitid, P_PIDFD, ss->keeper_fd, &si, WEXITED | __WALL, NULL);
	close(ss->keeper_fd);
	ss->keeper_fd = -1;
}

static int (*const open_steps[])(struct open_ctx *) = {
	step_oom, step_cgroup, step_prepare_home, step_mount_ns, step_home, step_tmp, step_secrets,
	step_net_ns,
	step_record, step_record_view, step_state, step_keeper, step_ledger, step_handoff,
};

static int open_agent_session(pam_handle_t *pamh, const struct args *a,
			      const struct sbx_account *acc, const struct sbx_config *cfg,
			      const struct sbx_profile *p)
{
	struct open_ctx *c = calloc(1, sizeof(*c));
	int r = 0;

	if (!c)
		return PAM_BUF_ERR;
	c->pamh = pamh;
	c->a = a;
	c->acc = acc;
	c->cfg = cfg;
	c->p = p;
	undo_init(&c->u);
	c->tmp_size = SBX_DEFAULT_TMP_SIZE;
	if (p->limits.set_mask & (1u << SBX_LIMIT_TMP_SIZE))
		c->tmp_size = p->limits.value[SBX_LIMIT_TMP_SIZE];
	c->ss = calloc(1, sizeof(*c->ss));
	if (!c->ss) {
		free(c);
		return PAM_BUF_ERR;
	}
	c->ss->channel_fd = -1;
	c->ss->refusals_fd = -1;
	c->ss->ledger_fd = -1;
	c->ss->keeper_fd = -1;
	/* Before any step: step_secrets may mask the state directory in the
	 * session's namespace, where this process writes the rest. */
	if (sbx_ledger_dir_open(cfg->state_dir, &c->ss->ledger_fd, &c->err) != 0) {
		mlog(pamh, LOG_ERR, "warning", "ledger", acc->user, "user %s: %s", acc->user,
		     c->err.msg);
		sbx_error_clear(&c->err);
	}
	r = sbx_session_id_new(c->ss->id, &c->err);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(open_steps); i++)
		r = open_steps[i](c);
	if (r == 0) {
		undo_close(&c->u);
		free(c);
		return PAM_SUCCESS;
	}
	keeper_stop(c->ss);
	if (c->record_written)
		sbx_record_remove(a->runtime_dir, c->ss->id, NULL);
	if (c->changed)
		undo_run(pamh, acc->user, &c->u);
	undo_close(&c->u);
	refuse_msg(pamh, a, "session_setup", acc->user,
		   "user %s: session refused: %s (pam stage had done: %s)", acc->user, c->err.msg,
		   c->done[0] ? c->done : "nothing");
	if (c->ss->channel_fd >= 0)
		close(c->ss->channel_fd);
	if (c->ss->refusals_fd >= 0)
		close(c->ss->refusals_fd);
	if (c->ss->ledger_fd >= 0)
		close(c->ss->ledger_fd);
	free(c->ss);
	free(c);
	return PAM_SESSION_ERR;
}

int pam_sm_open_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	const void *data = NULL;
	int r;

	/*
	 * A stack may name the module twice: pam-auth-update puts it in
	 * common-session, and a stack from before that keeps its own line.
	 * The first line opened the session; a second one must not open
	 * another (a second mount namespace and record, and a max_sessions
	 * count that includes this very session and refuses it).
	 */
	if (pam_get_data(pamh, DATA_NAME, &data) == PAM_SUCCESS && data &&
	    !(((const struct session_state *)data)->did & DID_CLOSED)) {
		const struct session_state *ss = data;

		mlog(pamh, LOG_INFO, "pam_open_again", "already_open", ss->user,
		     "session=%s: already opened by an earlier line of this stack", ss->id);
		return PAM_SUCCESS;
	}
	r = for_agent(pamh, flags, argc, argv, open_agent_session);

	/* A session stage fails as a session error, whatever stopped it. */
	return r == PAM_SUCCESS || r == PAM_IGNORE ? r : PAM_SESSION_ERR;
}

/* Nothing of a closed session outlives it: sbx_session_sweep() ends every
 * process of the agent's uid still in the session's mount namespace. */

/*
 * A scan cannot win against a fork chain (each process forks its successor
 * and exits at once): the live member is microseconds old whenever a pass
 * looks (measured: one outlived 100 passes in 14 of 15 runs). kill(-1)
 * can: the kernel signals every target under the tasklist lock, and a fork
 * racing it fails (copy_process refuses a parent with a fatal signal
 * pending), so no successor escapes. Sent from a process whose real and
 * effective uids are the agent's, it reaches every process of that uid (in any user
 * namespace mapped to it) and every process inside a user namespace the
 * agent owns, whatever its uid there (the kernel grants CAP_KILL in a
 * namespace to its owner: an administrator's nsenter shell inside an
 * agent's namespace ends too). Never the monitor, nor a root process that
 * borrowed the uid as euid alone (kill checks the target's real and saved
 * uid).
 *
 * It ends every process of the account, including ones an administrator
 * started as that user outside any session, so it runs only for the
 * account's last session, decided under the sessions lock
 * (sbx_record_last_close): no other login of the account can write its
 * record, hence have a process, until the kill is done.
 *
 * The helper is a separate process made with raw clone3: no fork handlers
 * of the host program run, exit_signal 0 sends sshd no SIGCHLD (and its
 * waitpid(-1) never reaps a child that is not a SIGCHLD one), and
 * CLONE_PIDFD gives a descriptor to wait on. The monitor's own credentials
 * are never touched. The helper's saved uid and gid stay 0, which keeps
 * its memory (a copy of the monitor's) out of the agent's reach. The
 * helper makes raw system calls only (glibc's
 * setresuid would signal the parent's threads) and runs no code of the
 * agent's. Once it is the agent, an agent process may kill it first (its
 * own kill(-1)) or stop it: it reports success by a pipe, and a silent end
 * is retried, bounded.
 */
#define KILL_ALL_TRIES 5
#define KILL_ALL_WAIT_MS 500

struct kill_all {
	pam_handle_t *pamh;
	const char *user;
	uid_t uid;
	gid_t gid;
	bool ran;		/* the account's last session: the helper ran */
	bool ended;		/* a helper reported kill(-1) done */
	unsigned tries;
};

/* What the helper writes: the failed step (0: none) and its errno. */
enum { STEP_DONE, STEP_SIGMASK, STEP_SETGROUPS, STEP_SETRESGID, STEP_SETRESUID, STEP_KILL };

static const char *const step_names[] = {
	[STEP_DONE] = "", [STEP_SIGMASK] = "rt_sigprocmask", [STEP_SETGROUPS] = "setgroups",
	[STEP_SETRESGID] = "setresgid", [STEP_SETRESUID] = "setresuid", [STEP_KILL] = "kill(-1)",
};

static __attribute__((noreturn)) void kill_all_helper(int fd, uid_t uid, gid_t gid)
{
	int res[2] = { STEP_DONE, 0 };
	uint64_t all = ~(uint64_t)0;

	/* While still root (the agent cannot signal it yet): block every
	 * signal, so none runs a handler of the host program in here. */
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all)) != 0)
		res[0] = STEP_SIGMASK;
	else if (syscall(SYS_setgroups, 0, NULL) != 0)
		res[0] = STEP_SETGROUPS;
#ifdef SYS_setresgid32
	else if (syscall(SYS_setresgid32, gid, gid, 0) != 0)
#else
	else if (syscall(SYS_setresgid, gid, gid, 0) != 0)
#endif
		res[0] = STEP_SETRESGID;
#ifdef SYS_setresuid32
	else if (syscall(SYS_setresuid32, uid, uid, 0) != 0)
#else
	else if (syscall(SYS_setresuid, uid, uid, 0) != 0)
#endif
		res[0] = STEP_SETRESUID;
	else {
		/* Real and effective ids are the agent's (kill checks the
		 * sender's real and effective uid, and the effective
		 * capabilities are gone with the effective uid 0); the saved
		 * ones stay 0. So no process of the agent may ptrace this copy
		 * of the host program's memory or open its /proc/<pid>/mem
		 * (that needs all three ids equal to its own, and no
		 * capability it lacks), whatever fs.suid_dumpable made of
		 * dumpable, and even while the agent holds it with SIGSTOP.
		 * Not dumpable again besides (PR_SET_DUMPABLE 0 cannot fail). */
		(void)syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
		if (syscall(SYS_kill, -1, SIGKILL) != 0)
			res[0] = STEP_KILL;
	}
	if (res[0] != STEP_DONE)
		res[1] = errno;
	/* ESRCH: no other process at all (kill(-1) counts every process it
	 * looked at, signalled or not, so this is rare). Nothing to end. */
	if (res[0] == STEP_KILL && res[1] == ESRCH)
		res[0] = STEP_DONE;
	(void)!write(fd, res, sizeof(res));
	syscall(SYS_exit_group, 0);
	__builtin_unreachable();
}

/* One helper, waited for through its pidfd. 0 with res filled when it
 * reported, -ESRCH when it ended without a word, another -errno when it
 * could not be made (logged). */
static int kill_all_once(struct kill_all *k, int res[2])
{
	struct pollfd pfd;
	siginfo_t si;
	int p[2], pidfd = -1, waited = 0, got = 0, e;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
		e = errno;
		mlog(k->pamh, LOG_ERR, "error", "kill_helper", k->user, "user %s: pipe2: %m", k->user);
		return -e;
	}
	pid = clone_quiet(&pidfd);
	if (pid == 0)
		kill_all_helper(p[1], k->uid, k->gid);
	e = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		mlog(k->pamh, LOG_ERR, "error", "kill_helper", k->user, "user %s: clone3(CLONE_PIDFD): %s",
			   k->user, strerror(e));
		return -e;
	}
	/* Never waitpid's status: the pidfd says when it is gone, the pipe
	 * what it did. */
	pfd.fd = pidfd;
	pfd.events = POLLIN;
	while (waited < KILL_ALL_WAIT_MS + 1000) {
		int r = poll(&pfd, 1, 50);

		if (r > 0)
			break;
		if (r < 0 && errno != EINTR)
			break;
		waited += 50;	/* EINTR counts as a full step: bounded either way */
		if (waited == KILL_ALL_WAIT_MS)	/* stopped or stuck: root may end it */
			(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	}
	n = read(p[0], res, 2 * sizeof(int));
	memset(&si, 0, sizeof(si));
	if (n == (ssize_t)(2 * sizeof(int)))
		got = 1;
	/* Reap it (a child with exit_signal 0 is ours alone to wait for). */
	if (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | WNOHANG | __WALL, NULL) != 0 ||
	    si.si_pid == 0)
		mlog(k->pamh, LOG_WARNING, "warning", "kill_helper", k->user,
			   "user %s: kill helper %d not reaped after %d ms", k->user, (int)pid,
			   waited);
	close(pidfd);
	close(p[0]);
	return got ? 0 : -ESRCH;
}

/* sbx_record_last_close's callback: runs under the sessions lock. */
static void kill_all_of_uid(void *arg)
{
	struct kill_all *k = arg;
	int res[2] = { 0, 0 }, r = -ESRCH;

	k->ran = true;
	while (k->tries < KILL_ALL_TRIES) {
		k->tries++;
		memset(&res, 0, sizeof(res));
		r = kill_all_once(k, res);
		if (r != -ESRCH)
			break;
	}
	if (r == -ESRCH) {
		mlog(k->pamh, LOG_ERR, "error", "kill_helper", k->user,
			   "user %s: the helper ending every process of uid %u died without "
			   "reporting, %u times", k->user, (unsigned)k->uid, KILL_ALL_TRIES);
		return;
	}
	if (r)
		return;		/* logged */
	if (res[0] != STEP_DONE) {
		mlog(k->pamh, LOG_ERR, "error", "kill_helper", k->user,
			   "user %s: ending every process of uid %u: %s: %s", k->user,
			   (unsigned)k->uid,
			   (unsigned)res[0] < ARRAY_SIZE(step_names) ? step_names[res[0]] : "?",
			   strerror(res[1]));
		return;
	}
	k->ended = true;
}

/*
 * What agent-shell sent over the ledger's channel (lib/ledger.c), read at
 * the close: its last report that names this session and uid becomes
 * root's copy; its refusal and warning lines go to the ledger, parsed and
 * written again (bounded, scrubbed), marked origin=shell. Nothing else of
 * the text is kept.
 */
#define CHANNEL_LINES_MAX 32

struct shell_said {
	const char *report;	/* "kept", "none" (nobody connected), "invalid" */
	char command[160];	/* what ran: the kept report's words */
	char level[16];
	int exit_status;	/* -1: not sent */
	bool floor_met;
	char refusal[160];
	/* Shells of this PAM session that found the channel taken and said
	 * so on the refusals socket (each with a refused line kept), and the
	 * first one's reason. */
	unsigned refused_shells;
	char refused_reason[32];
};

/* The shell's own lines root keeps: without a syslog daemon the ledger is
 * the only place they reach. */
static bool shell_event(const char *event)
{
	static const char *const kept[] = { "command", "session_start", "session_end", "refused",
					    "warning" };

	for (size_t i = 0; i < ARRAY_SIZE(kept); i++)
		if (!strcmp(event, kept[i]))
			return true;
	return false;
}

/* A report's words, space-separated, for the close's line. */
static void report_command(const struct sbx_report *rep, char *buf, size_t size)
{
	size_t used = 0;
	const char *w = rep->argv_buf;

	buf[0] = '\0';
	for (size_t i = 0; i < rep->argc && w < rep->argv_buf + sizeof(rep->argv_buf) &&
	     used + 1 < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s", i ? " " : "", w);

		if (n < 0)
			break;
		used += (size_t)n;
		w += strnlen(w, (size_t)(rep->argv_buf + sizeof(rep->argv_buf) - w)) + 1;
	}
}

/* One line of the shell's, parsed, written again to the ledger. Whose it
 * is, root says: this session and its user, whatever the line claims. */
static void shell_line_note(pam_handle_t *pamh, const struct session_state *ss,
			    const struct sbx_ledger_event *ev, const struct ucred *peer,
			    struct sbx_logline *l)
{
	sbx_log_begin(l, ev->value[0]);
	sbx_log_add(l, "session", "%s", ss->id);
	sbx_log_add(l, "user", "%s", ss->user);
	for (size_t i = 1; i < ev->n; i++)
		if (strcmp(ev->key[i], "origin") && strcmp(ev->key[i], "peer_pid") &&
		    strcmp(ev->key[i], "session") && strcmp(ev->key[i], "user"))
			sbx_log_add(l, ev->key[i], "%s", ev->value[i]);
	sbx_log_add(l, "origin", "shell");
	sbx_log_add(l, "peer_pid", "%d", (int)peer->pid);
	ledger_note(pamh, ss->state_dir, ss->ledger_fd, l);
}

static void channel_lines(pam_handle_t *pamh, const struct session_state *ss, char *buf,
			  size_t len, const struct ucred *peer, struct shell_said *said)
{
	struct sbx_ledger_event *ev = malloc(sizeof(*ev));
	struct sbx_report *rep = malloc(sizeof(*rep));
	struct sbx_logline *l = malloc(sizeof(*l));
	const char *kept = NULL;
	size_t kept_len = 0;
	unsigned lines = 0;
	struct sbx_error err = { 0 };

	if (!ev || !rep || !l)
		goto out;
	for (char *p = buf, *nl; p < buf + len; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			break;	/* cut short: not a whole line */
		if (*p == '{') {
			if (sbx_report_from_json(p, (size_t)(nl - p), rep, NULL) == 0 &&
			    !strcmp(rep->session_id, ss->id) && rep->uid == ss->uid) {
				kept = p;
				kept_len = (size_t)(nl - p) + 1;
				sbx_strlcpy(said->level, sizeof(said->level),
					    sbx_level_name(rep->level));
				said->exit_status = rep->exit_status;
				said->floor_met = rep->floor_met;
				sbx_strlcpy(said->refusal, sizeof(said->refusal), rep->refusal);
				report_command(rep, said->command, sizeof(said->command));
			} else {
				said->report = "invalid";
			}
			continue;
		}
		if (lines >= CHANNEL_LINES_MAX ||
		    sbx_ledger_parse_fields(p, (size_t)(nl - p), ev) != 0 ||
		    !shell_event(ev->value[0]))
			continue;
		lines++;
		shell_line_note(pamh, ss, ev, peer, l);
	}
	if (kept) {
		said->report = "kept";
		if ((ss->ledger_fd >= 0 ?
		     sbx_ledger_store_report_at(ss->ledger_fd, ss->id, kept, kept_len, &err) :
		     sbx_ledger_store_report(ss->state_dir, ss->id, kept, kept_len, &err)) != 0) {
			said->report = "not_stored";
			mlog(pamh, LOG_ERR, "warning", "ledger", ss->user, "session=%s: %s", ss->id,
			     err.msg);
		}
	}
out:
	free(ev);
	free(rep);
	free(l);
}

static void channel_collect(pam_handle_t *pamh, struct session_state *ss, int wait_ms,
			    struct shell_said *said)
{
	struct sbx_error err = { 0 };
	struct ucred peer;
	char *buf = NULL;
	size_t len = 0;
	int r;

	said->report = "none";
	said->exit_status = -1;
	if (ss->channel_fd < 0)
		return;
	r = sbx_ledger_channel_collect(ss->channel_fd, 2 * SBX_REPORT_JSON_MAX +
				       CHANNEL_LINES_MAX * SBX_LOG_LINE_MAX, wait_ms, &buf, &len,
				       &peer, &err);
	close(ss->channel_fd);
	ss->channel_fd = -1;
	if (r == -ENOENT)
		return;
	if (r) {
		mlog(pamh, LOG_ERR, "warning", "ledger", ss->user, "session=%s: %s", ss->id,
		     err.msg);
		return;
	}
	/* Only the session's own uid could connect (the socket is 0600,
	 * its); say it if the kernel names anyone else. */
	if (peer.uid != ss->uid)
		said->report = "invalid";
	else
		channel_lines(pamh, ss, buf, len, &peer, said);
	free(buf);
}

/*
 * The refusals socket (lib/ledger.c): each pending connection is a shell of
 * this PAM session that found the channel taken and refused itself. Read
 * at the close, bounded (REFUSALS_CONN_MAX connections, REFUSALS_READ_MAX
 * bytes and REFUSALS_LINES_MAX lines each, never waiting); only refused
 * lines of the session's uid are kept, re-written as the channel's.
 */
#define REFUSALS_CONN_MAX (2 * (SBX_LEDGER_REFUSALS_BACKLOG + 1))
#define REFUSALS_READ_MAX (2 * SBX_LOG_LINE_MAX)
#define REFUSALS_LINES_MAX 2

static unsigned refusal_lines(pam_handle_t *pamh, const struct session_state *ss, char *buf,
			      size_t len, const struct ucred *peer, struct shell_said *said,
			      struct sbx_ledger_event *ev, struct sbx_logline *l)
{
	unsigned kept = 0;

	for (char *p = buf, *nl; p < buf + len && kept < REFUSALS_LINES_MAX; p = nl + 1) {
		const char *reason;

		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			break;	/* cut short: not a whole line */
		if (sbx_ledger_parse_fields(p, (size_t)(nl - p), ev) != 0 ||
		    strcmp(ev->value[0], "refused") != 0)
			continue;
		reason = sbx_ledger_get(ev, "reason");
		if (!said->refused_reason[0] && reason &&
		    sbx_strlcpy(said->refused_reason, sizeof(said->refused_reason), reason) != 0)
			said->refused_reason[0] = '\0';	/* too long for a token */
		shell_line_note(pamh, ss, ev, peer, l);
		kept++;
	}
	return kept;
}

static void refusals_collect(pam_handle_t *pamh, struct session_state *ss,
			     struct shell_said *said)
{
	struct sbx_ledger_event *ev = NULL;
	struct sbx_logline *l = NULL;
	unsigned others = 0;

	if (ss->refusals_fd < 0)
		return;
	ev = malloc(sizeof(*ev));
	l = malloc(sizeof(*l));
	for (unsigned i = 0; ev && l && i < REFUSALS_CONN_MAX; i++) {
		struct sbx_error err = { 0 };
		struct ucred peer;
		char *buf = NULL;
		size_t len = 0;
		int r = sbx_ledger_channel_collect(ss->refusals_fd, REFUSALS_READ_MAX, 0, &buf,
						   &len, &peer, &err);

		if (r == -ENOENT)
			break;
		if (r) {
			mlog(pamh, LOG_ERR, "warning", "ledger", ss->user, "session=%s: %s",
			     ss->id, err.msg);
			break;
		}
		/* Only the session's uid could connect (0600, its own). */
		if (peer.uid != ss->uid)
			others++;
		else if (refusal_lines(pamh, ss, buf, len, &peer, said, ev, l))
			said->refused_shells++;
		free(buf);
	}
	if (others)
		mlog(pamh, LOG_ERR, "warning", "ledger", ss->user,
		     "session=%s: %u connection(s) to the refusals socket not of uid %u: ignored",
		     ss->id, others, (unsigned)ss->uid);
	free(ev);
	free(l);
	close(ss->refusals_fd);
	ss->refusals_fd = -1;
}

/* event=pam_close: what the close did, FAILED parts in msg; with what the
 * shell said, and in the ledger too. */
static void log_closed(pam_handle_t *pamh, const struct session_state *ss, const char *how,
		       const struct shell_said *said, bool failed, unsigned killed,
		       const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static void log_closed(pam_handle_t *pamh, const struct session_state *ss, const char *how,
		       const struct shell_said *said, bool failed, unsigned killed,
		       const char *fmt, ...)
{
	struct sbx_logline *l = malloc(sizeof(*l));
	char msg[2 * SBX_ERROR_MAX];
	va_list ap;

	if (!l)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sbx_log_begin(l, "pam_close");
	sbx_log_add(l, "session", "%s", ss->id);
	sbx_log_add(l, "user", "%s", ss->user);
	sbx_log_add(l, "uid", "%u", (unsigned)ss->uid);
	sbx_log_add(l, "service", "%s", ss->service);
	sbx_log_add(l, "client", "%s", ss->client);
	sbx_log_add(l, "profile", "%s", ss->profile);
	sbx_log_add(l, "duration_s", "%lld", (long long)(time(NULL) - ss->started));
	sbx_log_add(l, "how", "%s", how);
	sbx_log_add(l, "report", "%s", said->report);
	if (said->command[0])
		sbx_log_add(l, "command", "%s", said->command);
	if (said->level[0]) {
		sbx_log_add(l, "level", "%s", said->level);
		sbx_log_add(l, "floor_met", "%s", said->floor_met ? "yes" : "no");
	}
	if (said->refusal[0])
		sbx_log_add(l, "refusal", "%s", said->refusal);
	if (said->exit_status >= 0)
		sbx_log_add(l, "exit_status", "%d", said->exit_status);
	/* A shell of this login refused itself (its own line is in the
	 * ledger, with the reason): the entry is not one clean run. */
	if (said->refused_shells) {
		sbx_log_add(l, "refused_shells", "%u", said->refused_shells);
		if (said->refused_reason[0])
			sbx_log_add(l, "refused_reason", "%s", said->refused_reason);
	}
	sbx_log_add(l, "killed", "%u", killed);
	sbx_log_add(l, "result", "%s", failed ? "failed" : said->refused_shells ? "refused" : "ok");
	sbx_log_add(l, "msg", "%s", msg);
	msend(pamh, failed ? LOG_ERR : LOG_INFO, l);
	ledger_note(pamh, ss->state_dir, ss->ledger_fd, l);
	free(l);
}

/*
 * The session's end: what the shell sent, the record, the session's
 * processes, the account's when this was its last session, the mounts,
 * and the line. how: "closed" (the opener's close) or "opener_gone" (its
 * keeper's, wait_ms for the shell to end first).
 */
static int session_close(pam_handle_t *pamh, struct session_state *ss, int wait_ms,
			 const char *how)
{
	struct sbx_error err = { 0 }, lerr = { 0 };
	struct shell_said said = { 0 };
	struct kill_all k;
	const char *outcome = "record removed";
	char view[SBX_PATH_MAX], account[160] = "", opener[96] = "";
	unsigned killed, passes, live = 0;
	bool same_ns, gone = !strcmp(how, "opener_gone"), failed = gone;
	const struct stale_note sn = { pamh, ss->state_dir, ss->ledger_fd };
	const struct sbx_stale_hook hook = { stale_ended, (void *)&sn };
	int r, lr = 0;

	channel_collect(pamh, ss, wait_ms, &said);
	refusals_collect(pamh, ss, &said);
	if (gone) {
		/* Its report, when the shell had no time to send it. */
		if (!strcmp(said.report, "none"))
			said.report = "lost";
		snprintf(opener, sizeof(opener), "the session's opener (pid %d) was gone: its "
			 "keeper closed it; ", (int)ss->opener);
	}

	r = sbx_record_remove(ss->runtime_dir, ss->id, &err);
	if (r == -ENOENT)
		outcome = "record already gone";
	else if (r)
		outcome = err.msg;
	/* This session's processes first: while the account has other live
	 * sessions, this is all that ends. */
	killed = sbx_session_sweep(ss->uid, ss->mntns, &passes);
	/* Then, for the account's last session, every process of the uid. */
	memset(&k, 0, sizeof(k));
	k.pamh = pamh;
	k.user = ss->user;
	k.uid = ss->uid;
	k.gid = ss->gid;
	if (ss->uid != 0)
		lr = sbx_record_last_close(ss->runtime_dir, ss->uid, kill_all_of_uid, &k, &hook, &live,
					   &lerr);
	if (ss->uid == 0) {
		snprintf(account, sizeof(account), "; uid 0: no account-wide kill");
	} else if (lr) {
		mlog(pamh, LOG_ERR, "error", "session_count", ss->user,
			   "user %s: cannot tell whether this was the account's last session: %s",
			   ss->user, lerr.msg);
		snprintf(account, sizeof(account),
			 "; processes of uid %u outside this session not ended (sessions not counted)",
			 (unsigned)ss->uid);
		failed = true;
	} else if (!k.ran) {
		snprintf(account, sizeof(account),
			 "; %u other live session(s) of the account: only this session's namespace swept",
			 live);
	} else if (k.ended) {
		snprintf(account, sizeof(account),
			 "; last session of the account: every process of uid %u ended%s",
			 (unsigned)ss->uid, k.tries > 1 ? " (helper retried)" : "");
	} else {
		snprintf(account, sizeof(account),
			 "; last session of the account: ending every process of uid %u FAILED",
			 (unsigned)ss->uid);
		failed = true;
	}
	/* Unmount by path only inside the session's own namespace; best
	 * effort, as the namespace ends with the session anyway. */
	same_ns = sbx_ns_inode("mnt") == ss->mntns;
	if (same_ns && (ss->did & DID_EPHEMERAL_HOME))
		(void)umount2(ss->home, MNT_DETACH | UMOUNT_NOFOLLOW);
	if (same_ns && (ss->did & DID_TMP))
		(void)umount2("/tmp", MNT_DETACH | UMOUNT_NOFOLLOW);
	if (same_ns && (ss->did & DID_SHM))
		(void)umount2("/dev/shm", MNT_DETACH | UMOUNT_NOFOLLOW);
	if (same_ns && (ss->did & DID_VIEW) &&
	    sbx_record_view_path(ss->runtime_dir, view, sizeof(view)) == 0)
		(void)umount2(view, MNT_DETACH | UMOUNT_NOFOLLOW);
	if (r && r != -ENOENT)
		failed = true;
	log_closed(pamh, ss, how, &said, failed, killed,
		   "%sclosed after %llds: %s, %u leftover process(es) killed in %u pass(es)%s%s",
		   opener, (long long)(time(NULL) - ss->started), outcome, killed, passes, account,
		   same_ns ? "" : " (other mount namespace: mounts left to it)");
	return failed ? PAM_SESSION_ERR : PAM_SUCCESS;
}

int pam_sm_close_session(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
	struct session_state *ss = NULL;
	const void *data = NULL;

	if (pam_get_data(pamh, DATA_NAME, &data) != PAM_SUCCESS || !data)
		return PAM_IGNORE;	/* not an agent session, or open failed */
	ss = (struct session_state *)data;
	if (ss->did & DID_CLOSED)
		return PAM_SUCCESS;	/* closing twice is fine */
	ss->did |= DID_CLOSED;
	/* First: the keeper reads the channel only once this process is gone. */
	keeper_stop(ss);
	return session_close(pamh, ss, 0, "closed");
}
