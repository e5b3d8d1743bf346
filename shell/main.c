/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agent-shell — the agent account's login shell and the admin's tool.
 *
 * As a login shell (sshd, login, su run it), every way in — interactive,
 * `ssh host cmd`, scp, rsync, the external sftp-server — becomes one
 * confined run (lib/apply.c) with a logged guarantee report, or nothing.
 * The admin verbs only read and report.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shell.h"

#define EXIT_USAGE 2
#define EXIT_REFUSED 126
#define EXIT_NOT_FOUND 127

static void usage(FILE *out)
{
	fputs("usage: agent-shell                       (as a login shell: a confined session)\n"
	      "       agent-shell -c COMMAND            (as sshd runs it: one confined command)\n"
	      "       agent-shell --run [--profile NAME] [--workspace DIR] [--deny-read PATH]...\n"
	      "                   [--executor KEY --scratch DIR [--executors N]]\n"
	      "                   -- CMD [ARG...]    (one confined command outside a login)\n"
	      "       agent-shell --report [--json] [SESSION]\n"
	      "       agent-shell --probe [--json]\n"
	      "       agent-shell --probe-cache [USER...]\n"
	      "       agent-shell --check-config [-f FILE | FILE]\n"
	      "       agent-shell --explain USER [--json] [-f FILE]\n"
	      "       agent-shell --selftest\n"
	      "       agent-shell --doctor [--json] [-f FILE] [--pam-dir DIR] [--pam-vendor-dir DIR]\n"
	      "                    [--sshd PATH] [--sshd-config FILE]\n"
	      "       agent-shell --enroll USER [--profile NAME] [--group GROUP] [--workspace DIR]\n"
	      "       agent-shell --unenroll USER [--group GROUP] [--shell PATH]\n"
	      "       agent-shell --sessions [--json]\n"
	      "       agent-shell --end SESSION|USER\n"
	      "       agent-shell --log [USER] [--since AGE|DATE] [--json]\n"
	      "       agent-shell --prune [--older-than DAYS] [--yes]\n"
	      "       agent-shell --help | --version\n"
	      "\n"
	      "Every session and command runs in a sandbox (namespaces, read-only host,\n"
	      "isolated home, Landlock, seccomp, no capabilities, no_new_privs, rlimits)\n"
	      "and logs a guarantee report (syslog authpriv, ident agent-sandbox).\n"
	      "Configuration: " SBX_CONFIG_PATH " and its conf.d/*.conf (root-owned; see\n"
	      "agent-sandbox.conf(5)). -f FILE (--config FILE) checks a candidate instead.\n",
	      out);
}

/* docs/design.md section 4, first thing: no stray fds, default signals, fixed umask. The
 * environment is rebuilt from an allow-list by the engine before any
 * program in the sandbox starts; here we only make sure nothing we call
 * reads the dangerous variables. */
/* The PAM stage makes the root process that holds the session immune to
 * the OOM killer (else a session at its memory_max, or the host at its
 * end, could lose that process and with it the session's close), and its
 * children inherit that. The agent's own processes go back to the normal
 * score: raising it needs no privilege. */
static void oom_score_reset(void)
{
	char buf[16] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0 && strtol(buf, NULL, 10) < 0 && lseek(fd, 0, SEEK_SET) == 0 &&
	    write(fd, "0", 1) != 1)
		dprintf(STDERR_FILENO, "agent-shell: warning: oom_score_adj stays %s", buf);
	close(fd);
}

static void sanitise_process(void)
{
	static const char *const drop[] = {
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_DEBUG", "LD_PROFILE",
		"GLIBC_TUNABLES", "BASH_ENV", "ENV", "MALLOC_CHECK_", "MALLOC_PERTURB_",
		"LOCPATH", "NLSPATH", "GCONV_PATH", "HOSTALIASES", "RES_OPTIONS",
		"LOCALDOMAIN", "TMPDIR",
	};
	int fd;

	/* Closed stdin/stdout/stderr would let the next open() take their
	 * number: point them at /dev/null. */
	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);

			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	}
	sbx_fd_close_above(2, NULL);
	sbx_signals_reset();
	umask(077);
	oom_score_reset();
	for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
		unsetenv(drop[i]);
	/* Every other LD_* too: the confined worker inherits this environ
	 * until its exec, and the env canary refuses a session in which any
	 * LD_* variable is still visible (LD_BIND_NOW=1 alone did that). */
	for (size_t i = 0; environ[i];) {
		char name[128];
		size_t len = strcspn(environ[i], "=");

		if (strncmp(environ[i], "LD_", 3) != 0 || len >= sizeof(name)) {
			i++;
			continue;
		}
		memcpy(name, environ[i], len);
		name[len] = '\0';
		if (unsetenv(name) != 0)
			i++;	/* never loop on a name unsetenv refuses */
	}
}

/*
 * The dynamic loader read these before main() ran: a preloaded or audited
 * library, another library path or changed tunables already had their say
 * in this process (unsetenv() cannot undo that). sshd's environment comes
 * from the server (PermitUserEnvironment is off in the drop-in), so their
 * presence means a misconfigured or hostile start: a session is refused
 * rather than run from a possibly subverted supervisor.
 */
static const char *const loader_vars[] = {
	"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "GLIBC_TUNABLES",
};

/* Names of loader_vars present at entry, space-separated ("" = none). */
static char loader_env_seen[80];
/* What the installed launcher (shell/launcher.c) removed before this
 * program's loader ran: logged, not refused (the loader never saw it). */
static char loader_env_dropped[256];

static void note_loader_env(void)
{
	const char *dropped = getenv("AGENT_SANDBOX_LOADER_DROPPED");

	if (dropped) {
		sbx_strlcpy(loader_env_dropped, sizeof(loader_env_dropped), dropped);
		sbx_text_scrub(loader_env_dropped);
		unsetenv("AGENT_SANDBOX_LOADER_DROPPED");
	}
	for (size_t i = 0; i < ARRAY_SIZE(loader_vars); i++) {
		if (getenv(loader_vars[i]) &&
		    sbx_snprintf(loader_env_seen + strlen(loader_env_seen),
				 sizeof(loader_env_seen) - strlen(loader_env_seen), "%s%s",
				 loader_env_seen[0] ? " " : "", loader_vars[i]) != 0)
			break;
	}
}

#ifdef SBX_TESTING
/*
 * Test build only (tests/agent-shell-testable): SBX_TEST_PROBE=
 * "no-userns,no-landlock,no-netns,no-mdwe" takes the real probe and removes
 * what it names, so tests can drive the degraded paths on a full kernel
 * (no-mdwe: the gate's W^X by seccomp alone, as on Linux < 6.3). The
 * shipped agent-shell is compiled without this block (check: strings).
 */
static int apply_test_probe(void)
{
	const char *spec = getenv("SBX_TEST_PROBE");
	const struct sbx_probe *real;
	struct sbx_probe forced;
	struct sbx_error err = { 0 };
	char buf[256], *save = NULL;

	if (!spec || !spec[0])
		return 0;
	if (sbx_strlcpy(buf, sizeof(buf), spec) != 0 || sbx_probe_get(&real, &err) != 0) {
		fprintf(stderr, "agent-shell: SBX_TEST_PROBE: %s\n", err.msg[0] ? err.msg : "too long");
		return -EINVAL;
	}
	forced = *real;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "no-userns") == 0) {
			forced.userns = false;
			forced.mountns = forced.pidns = forced.netns = false;
			forced.ipcns = forced.utsns = forced.cgroupns = false;
			sbx_strlcpy(forced.userns_why, sizeof(forced.userns_why),
				    "user namespaces disabled by SBX_TEST_PROBE (test build)");
		} else if (strcmp(t, "no-landlock") == 0) {
			forced.landlock_abi = 0;
			sbx_strlcpy(forced.landlock_why, sizeof(forced.landlock_why),
				    "Landlock disabled by SBX_TEST_PROBE (test build)");
		} else if (strcmp(t, "no-netns") == 0) {
			forced.netns = false;
		} else if (strcmp(t, "no-mdwe") == 0) {
			forced.mdwe = false;
		} else {
			fprintf(stderr, "agent-shell: SBX_TEST_PROBE: unknown item %s\n", t);
			return -EINVAL;
		}
	}
	sbx_probe_set_for_tests(&forced);
	return 0;
}
#endif

struct run_opts {
	const char *profile;
	const char *workspace;
	const char *service;
	bool login_mode;	/* a login session (not --run) */
	bool interactive;
	char *const *cmd_argv;	/* --run */
	const char *command;	/* -c */
	const char *argv0;	/* our argv[0] for a login */
	size_t n_deny_read;	/* --deny-read: extra secrets (only narrows) */
	const char *deny_read[8];
	const char *executor;	/* --executor KEY */
	const char *scratch;	/* --scratch DIR */
	unsigned executors;	/* --executors N: the cap under DIR */
};

/*
 * --deny-read only ever narrows a profile: anyone may add secrets. Each is
 * resolved as the workspace is (relative to the cwd; a symlink followed
 * only when root alone could have made it): realpath followed the agent's
 * own links, so the mask went where a link pointed in this session, and a
 * link retargeted in one session (ln -sfn decoy config) left the real
 * secret readable in the next (found by an attacker review).
 */
static int add_deny_read(struct sbx_profile *p, const struct run_opts *o, struct sbx_error *err)
{
	for (size_t i = 0; i < o->n_deny_read; i++) {
		struct sbx_error why = { 0 };
		char abs[PATH_MAX], real[PATH_MAX];
		int r;

		if (o->deny_read[i][0] == '/')
			r = sbx_strlcpy(abs, sizeof(abs), o->deny_read[i]);
		else if (!getcwd(real, sizeof(real)))
			r = -errno;
		else
			r = sbx_snprintf(abs, sizeof(abs), "%s/%s", real, o->deny_read[i]);
		if (r)
			return sbx_error_set(err, -r, "--deny-read %s: %s", o->deny_read[i],
					     strerror(-r));
		r = sbx_path_resolve_trusted(abs, real, sizeof(real), &why);
		if (r)
			return sbx_error_set(err, -r, "--deny-read %s: %s", o->deny_read[i],
					     why.msg);
		if (p->n_deny_read == SBX_MAX_DENY)
			return sbx_error_set(err, E2BIG, "--deny-read %s: more than %d secrets",
					     real, SBX_MAX_DENY);
		if (sbx_strlcpy(p->deny_read[p->n_deny_read], SBX_PATH_MAX, real) != 0)
			return sbx_error_set(err, ENAMETOOLONG, "--deny-read %s: too long", real);
		p->n_deny_read++;
	}
	return 0;
}

/* What the caller asked to run, for the log: cut at out's size; the log
 * grammar (lib/log.c) scrubs and quotes it, so it stays one line. */
static void command_for_log(const struct run_opts *o, const char *shell, char *out, size_t size)
{
	struct sbx_sbuf b;

	sbx_sbuf_init(&b, out, size);
	if (o->command) {
		sbx_sbuf_str(&b, o->command);
	} else if (o->cmd_argv) {
		for (size_t i = 0; o->cmd_argv[i]; i++) {
			if (i)
				sbx_sbuf_add(&b, " ", 1);
			sbx_sbuf_str(&b, o->cmd_argv[i]);
		}
	} else {
		sbx_sbuf_fmt(&b, "(interactive) %s", shell);
	}
}

/*
 * The process that opened the PAM session (sshd's monitor, su, login)
 * closes it: it writes root's ledger, counts the session and ends what it
 * left. When it dies (the OOM killer, kill -9), nothing root would, so the
 * session ends with it: a pidfd of it is watched while the program runs.
 * The ledger channel's hang-up cannot tell: sshd's unprivileged child,
 * forked after the open, holds a copy of the listener. The pidfd is taken
 * first, then the start time is checked, so it names the record's process.
 */
static int opener_pidfd = -1;

static void opener_watch(const struct sbx_record *rec)
{
	uint64_t start = 0;
	int fd;

	if (opener_pidfd >= 0 || rec->opener_pid <= 0)
		return;
	fd = (int)syscall(SYS_pidfd_open, rec->opener_pid, 0);
	if (fd < 0)
		return;
	if (sbx_proc_start_time(rec->opener_pid, &start) != 0 || start != rec->opener_start) {
		close(fd);
		return;
	}
	opener_pidfd = fd;
}

/*
 * A PAM stage announces itself in AGENT_SANDBOX_SESSION; its record must
 * verify (or the variable was forged and a login is refused), and in a
 * login the profile it prepared the session for must be the one resolved
 * here. *pam_stage: a verified record; *pam_netns: the session is in the
 * network namespace the record names.
 */
static int check_pam_stage(const struct run_opts *o, const struct sbx_account *id,
			   const struct sbx_profile *p, bool *pam_stage, bool *pam_netns,
			   struct sbx_error *err)
{
	const char *sid = getenv("AGENT_SANDBOX_SESSION");
	struct sbx_record rec;
	char hash[65];
	int ret;

	*pam_stage = *pam_netns = false;
	if (sid) {
		ret = sbx_record_read_verified(SBX_RUNTIME_DIR, sid, id->uid, sbx_ns_inode("mnt"),
					       &rec, err);
		if (ret != 0 && o->login_mode) {
			char why[SBX_ERROR_MAX];

			sbx_strlcpy(why, sizeof(why), err->msg);
			return sbx_error_set(err, -ret,
					     "AGENT_SANDBOX_SESSION does not name this login's PAM "
					     "session (%.200s): refusing the session", why);
		}
		*pam_stage = ret == 0;
		*pam_netns = *pam_stage && rec.netns != 0 && rec.netns == sbx_ns_inode("net");
		if (*pam_stage)
			opener_watch(&rec);
	}
	/* Both stages resolve the account against the config; the session
	 * runs only what the PAM stage decided (its home, its namespaces) if
	 * the shell arrived at the same profile. */
	if (*pam_stage && o->login_mode) {
		sbx_profile_hash(p, hash);
		if (strcmp(hash, rec.hash) != 0)
			return sbx_error_set(err, EPERM,
					     "refusing the session: the PAM stage prepared it for "
					     "profile %s (hash %.12s), and this shell resolved profile "
					     "%s (hash %.12s): the configuration changed between the "
					     "two, log in again", rec.profile, rec.hash, p->name, hash);
	}
	if (p->pam_required && !*pam_stage)
		return sbx_error_set(err, EPERM,
				     "refusing the session: profile %s has pam_stage = required, and "
				     "no pam_agent_sandbox.so session stage prepared this login "
				     "(add it to the PAM service's session stack)", p->name);
	return 0;
}

/*
 * --run --executor KEY --scratch DIR: the session's home and /tmp are
 * executor KEY's own directories under DIR, and DIR itself is masked, so
 * no executor sees another's files (libsbx(3), executor sets). That needs
 * the mount view: without one, refused.
 */
static int executor_session(const struct run_opts *o, struct sbx_profile *p,
			    struct sbx_session *s, char *home_note, size_t note_size,
			    struct sbx_error *err)
{
	char root[SBX_PATH_MAX];
	int ret;

	ret = sbx_executor_view_ok(p, s->private_netns, o->executor, err);
	if (ret == 0)
		ret = sbx_executor_place(o->scratch, o->executor, o->executors, false, root,
					 s->home_source, s->tmp_source, &s->home_source_pin,
					 &s->tmp_source_pin, err);
	if (ret)
		return ret;
	if (p->n_deny_read == SBX_MAX_DENY)
		return sbx_error_set(err, E2BIG, "--executor: profile %s has no room to mask %s",
				     p->name, root);
	sbx_strlcpy(p->deny_read[p->n_deny_read++], SBX_PATH_MAX, root);
	return sbx_executor_home(o->executor, root, s->tmp_source, &s->tmp_source_pin,
				 sbx_path_is_under(s->home, "/tmp"), home_note, note_size, err);
}

/* event=command gate=allow: what is about to run, before it runs. */
static void log_command(const struct sbx_session *s, const char *user, const char *command,
			const char *prog, const char *profile)
{
	struct sbx_logline *l = malloc(sizeof(*l));

	if (!l)
		return;
	sbx_log_begin(l, "command");
	sbx_log_add(l, "session", "%s", s->session_id);
	sbx_log_add(l, "user", "%s", user);
	sbx_log_add(l, "gate", "allow");
	sbx_log_add(l, "command", "%s", command);
	sbx_log_add(l, "program", "%s", prog);
	sbx_log_add(l, "profile", "%s", profile);
	shell_log_send(LOG_INFO, l);
	free(l);
}

/* The confined run, with the report copy under the session's home. */
static int run_session(const struct sbx_profile *p, const struct sbx_session *s,
		       const char *prog, char *const *argv, bool pam_stage, const char *home_note,
		       struct sbx_report *report, int *exit_code, struct sbx_error *err)
{
	char report_file[SBX_PATH_MAX + 128];
	struct timespec t0, t1;
	struct sbx_run run;
	bool root_gone = false;
	int ret;

	memset(&run, 0, sizeof(run));
	run.profile = p;
	run.session = s;
	run.path = prog;
	run.argv = argv;
	run.envp = environ;
	run.pam_stage = pam_stage;
	snprintf(report_file, sizeof(report_file), "%s/.agent-sandbox/reports/%s.json", s->home,
		 s->session_id);
	run.report_file = report_file;
	run.home_note = home_note;
	run.on_report = shell_log_report;
	/* The session's opener (opener_watch): its death ends the session. */
	run.watch_fd = opener_pidfd > 0 ? opener_pidfd : 0;
	run.root_gone = &root_gone;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = sbx_run_confined(&run, report, exit_code, err);
	if (ret == 0 && root_gone)
		fprintf(stderr, "agent-sandbox: the session's root process (sshd's monitor, su or "
			"login) is gone: session ended\n");
	if (ret == 0 && !report->floor_met)
		*exit_code = EXIT_REFUSED;
	else if (ret == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		shell_log_session_end(report, *exit_code,
				      (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
				      (t1.tv_nsec - t0.tv_nsec) / 1000000,
				      root_gone ? "root_gone" : "exit");
	}
	return ret;
}

/* Long on purpose: a login's refusals in the order they are checked, each
 * with its log line, sharing one cleanup path. */
static int start_session(const struct run_opts *o)
{
	struct sbx_error err = { 0 };
	struct sbx_config *cfg = NULL;
	struct sbx_account id = { 0 };
	struct sbx_profile *p = NULL;
	struct sbx_session s;
	struct sbx_report *report = NULL;
	char home_note[SBX_PATH_MAX + 160];
	char prog[PATH_MAX];
	char login_argv0[PATH_MAX + 2];
	char **gate_argv = NULL;
	char *argv_buf[4] = { NULL, NULL, NULL, NULL };
	char *const *argv;
	const char *shell;
	char logged_cmd[512] = "";
	/* The reason= of a refusal: a stable token per check (docs/design.md
	 * section 12); the message says the rest. */
	const char *reason = "identity";
	bool is_agent = false;
	bool pam_stage = false, pam_netns = false;
	int exit_code = EXIT_REFUSED;
	int ledger_r;
	int ret;

	/* Before anything else: the slot is this shell's (lib/ledger.c).
	 * --run too: a PAM session whose shell is "--run" (su USER -- --run)
	 * must not leave the slot free for whatever runs next. */
	ledger_r = shell_ledger_connect();
	p = calloc(1, sizeof(*p));
	report = calloc(1, sizeof(*report));
	if (!p || !report) {
		fprintf(stderr, "agent-shell: out of memory\n");
		goto out;
	}
	if ((ret = shell_identity(&id, &err)) != 0)
		goto refuse;
	/* A login whose PAM session has a ledger channel that another shell
	 * took: what root's ledger says of the session would be that
	 * shell's, and this one's command, status and refusals would reach
	 * no root-only record (measured over sshd with two channels on one
	 * connection). One shell per PAM session. */
	if (ledger_r && o->login_mode) {
		reason = "ledger_channel";
		ret = sbx_error_set(&err, -ledger_r,
				    "refusing the session: this PAM session's ledger channel is not "
				    "this shell's (%s): another shell of the same login took it (one "
				    "shell per login: no ssh connection sharing, no ~/.ssh/rc)",
				    strerror(-ledger_r));
		goto refuse;
	}
	if (loader_env_dropped[0]) {
		struct sbx_logline l;

		sbx_log_begin(&l, "warning");
		sbx_log_add(&l, "reason", "loader_env_dropped");
		sbx_log_add(&l, "user", "%s", id.user);
		sbx_log_add(&l, "dropped", "%s", loader_env_dropped);
		sbx_log_add(&l, "msg", "the session's environment set %s (a PAM module such as "
			    "pam_env with user_readenv, or the home's ~/.pam_environment); the "
			    "launcher removed it before the dynamic loader ran", loader_env_dropped);
		shell_log_send(LOG_WARNING, &l);
	}
	if (loader_env_seen[0]) {
		reason = "loader_env";
		ret = sbx_error_set(&err, EPERM,
				    "refusing to start a session: %s was set when agent-shell started "
				    "(the dynamic loader has already used it); start it with a clean environment",
				    loader_env_seen);
		goto refuse;
	}
	reason = "config";
	if ((ret = shell_config_load(&cfg, &err)) != 0)
		goto refuse;
	reason = "identity";
	if ((ret = shell_identity_groups(cfg, &id, &err)) != 0)
		goto refuse;
	reason = "profile";
	if ((ret = shell_resolve_profile(cfg, &id, o->profile, o->workspace, o->login_mode,
					 p, &is_agent, &err)) != 0 ||
	    (ret = add_deny_read(p, o, &err)) != 0)
		goto refuse;

	reason = "pam_stage";
	ret = check_pam_stage(o, &id, p, &pam_stage, &pam_netns, &err);
	if (ret)
		goto refuse;
	reason = "session_setup";
	ret = shell_build_session(cfg, &id, p, o->service, pam_stage, &s, home_note,
				  sizeof(home_note), &err);
	if (ret)
		goto refuse;
	s.private_netns = pam_netns;
	sbx_strlcpy(s.egress_socket, sizeof(s.egress_socket),
		    cfg ? cfg->egress_socket : SBX_EGRESS_SOCKET);
	if (o->executor) {
		reason = "executor";
		ret = executor_session(o, p, &s, home_note, sizeof(home_note), &err);
		if (ret)
			goto refuse;
	}
	reason = "session_setup";
	if (setenv("AGENT_SANDBOX_SESSION", s.session_id, 1) != 0) {
		ret = sbx_error_set(&err, errno, "setenv: %s", strerror(errno));
		goto refuse;
	}
	shell_log_session_begin(s.session_id);

	shell = p->shell[0] ? p->shell : "/bin/bash";
	command_for_log(o, shell, logged_cmd, sizeof(logged_cmd));
	if (o->cmd_argv) {
		if (shell_which(o->cmd_argv[0], getenv("PATH"), prog, sizeof(prog)) != 0) {
			fprintf(stderr, "agent-shell: %s: command not found\n", o->cmd_argv[0]);
			shell_log_refused("gate", "not_found", s.session_id, id.user, logged_cmd,
					  "command not found");
			exit_code = EXIT_NOT_FOUND;
			goto out;
		}
		argv = o->cmd_argv;
	} else if (p->command == SBX_ACCESS_GATED && o->command) {
		reason = "gate_syntax";
		ret = shell_gate_split(o->command, &gate_argv, &err);
		if (ret)
			goto gate_refuse;
		if (shell_which(gate_argv[0], getenv("PATH"), prog, sizeof(prog)) != 0) {
			fprintf(stderr, "agent-shell: %s: command not found\n", gate_argv[0]);
			shell_log_refused("gate", "not_found", s.session_id, id.user, logged_cmd,
					  "command not found");
			exit_code = EXIT_NOT_FOUND;
			goto out;
		}
		argv = gate_argv;
	} else if (o->command) {
		if (sbx_strlcpy(prog, sizeof(prog), shell) != 0)
			goto out;
		argv_buf[0] = (char *)shell;
		argv_buf[1] = (char *)"-c";
		argv_buf[2] = (char *)o->command;
		argv = argv_buf;
	} else {
		const char *base = strrchr(shell, '/');

		base = base ? base + 1 : shell;
		if (sbx_strlcpy(prog, sizeof(prog), shell) != 0)
			goto out;
		snprintf(login_argv0, sizeof(login_argv0), "%s%s", o->argv0 && o->argv0[0] == '-' ? "-" : "",
			 base);
		argv_buf[0] = login_argv0;
		argv_buf[1] = o->argv0 && o->argv0[0] == '-' ? NULL : (char *)"-i";
		argv = argv_buf;
	}

	/* The gate: decided here with a clear message, enforced by the
	 * kernel (Landlock EXECUTE) whatever this check says. */
	if (p->command == SBX_ACCESS_DENY) {
		reason = "command_denied";
		ret = sbx_error_set(&err, EPERM, "profile %s denies every command", p->name);
		goto gate_refuse;
	}
	if (p->command == SBX_ACCESS_GATED && !shell_gate_allows(p, prog)) {
		reason = "not_allowed";
		ret = sbx_error_set(&err, EPERM, "%s is not on profile %s's command allow-list",
				    prog, p->name);
		goto gate_refuse;
	}
	/* Every decision is logged with the user and the command. */
	log_command(&s, id.user, logged_cmd, prog, p->name);

	reason = "sandbox_setup";
	ret = run_session(p, &s, prog, argv, pam_stage, home_note, report, &exit_code, &err);
	if (ret)
		goto refuse;
	goto out;

gate_refuse:
	fprintf(stderr, "agent-shell: %s\n", err.msg);
	shell_log_refused("gate", reason, s.session_id, id.user, logged_cmd, err.msg);
	exit_code = EXIT_REFUSED;
	goto out;
refuse:
	fprintf(stderr, "agent-shell: %s\n", err.msg);
	shell_log_refused("shell", reason, NULL, id.user, NULL, err.msg);
	exit_code = EXIT_REFUSED;
out:
	if (gate_argv) {
		for (size_t i = 0; gate_argv[i]; i++)
			free(gate_argv[i]);
		free(gate_argv);
	}
	sbx_config_free(cfg);
	sbx_account_free(&id);
	free(p);
	free(report);
	return exit_code;
}

enum {
	OPT_RUN = 0x100, OPT_PROFILE, OPT_WORKSPACE, OPT_REPORT, OPT_JSON, OPT_PROBE,
	OPT_CHECK_CONFIG, OPT_EXPLAIN, OPT_SELFTEST, OPT_HELP, OPT_VERSION, OPT_DENY_READ,
	OPT_EXECUTOR, OPT_SCRATCH, OPT_EXECUTORS,
};

/* Long on purpose: the option table and one short case per option. */
int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run", no_argument, NULL, OPT_RUN },
		{ "profile", required_argument, NULL, OPT_PROFILE },
		{ "workspace", required_argument, NULL, OPT_WORKSPACE },
		{ "deny-read", required_argument, NULL, OPT_DENY_READ },
		{ "executor", required_argument, NULL, OPT_EXECUTOR },
		{ "scratch", required_argument, NULL, OPT_SCRATCH },
		{ "executors", required_argument, NULL, OPT_EXECUTORS },
		{ "report", no_argument, NULL, OPT_REPORT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "probe", no_argument, NULL, OPT_PROBE },
		{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
		{ "explain", required_argument, NULL, OPT_EXPLAIN },
		{ "selftest", no_argument, NULL, OPT_SELFTEST },
		{ "config", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct run_opts o = { .service = "login", .executors = 16 };
	int verb = 0, c;
	bool json = false;
	const char *explain_user = NULL;
	const char *command = NULL;
	const char *config_file = NULL;

	note_loader_env();
	sanitise_process();
#ifdef SBX_TESTING
	if (apply_test_probe() != 0)
		return EXIT_USAGE;
#endif
	/* The admin's host verbs parse their own options (shell/doctor.c,
	 * shell/enroll.c). Only as the first argument: a login shell's
	 * argv[1] is "-c", so an agent's command can never land here. */
	if (argc > 1 && strcmp(argv[1], "--doctor") == 0)
		return shell_cmd_doctor(argc - 1, argv + 1);
	if (argc > 1 && (strcmp(argv[1], "--enroll") == 0 || strcmp(argv[1], "--unenroll") == 0))
		return shell_cmd_enroll(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--user-manager") == 0)
		return shell_cmd_user_manager(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--sessions") == 0)
		return shell_cmd_sessions(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--end") == 0)
		return shell_cmd_end(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--prune") == 0)
		return shell_cmd_prune(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--log") == 0)
		return shell_cmd_log(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "--probe-cache") == 0)
		return shell_cmd_probe_cache(argc - 1, argv + 1);
	o.argv0 = argc > 0 ? argv[0] : NULL;
	if (getenv("SSH_CONNECTION"))
		o.service = "sshd";

	/* "+": stop at the first non-option (the command of --run). */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:f:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			command = optarg;
			break;
		case 'f':
			config_file = optarg;
			break;
		case OPT_RUN: case OPT_REPORT: case OPT_PROBE: case OPT_CHECK_CONFIG:
		case OPT_SELFTEST: case OPT_HELP: case OPT_VERSION:
			if (verb && verb != c) {
				fprintf(stderr, "agent-shell: one action at a time\n");
				return EXIT_USAGE;
			}
			verb = c;
			break;
		case OPT_EXPLAIN:
			verb = c;
			explain_user = optarg;
			break;
		case OPT_PROFILE:
			o.profile = optarg;
			break;
		case OPT_WORKSPACE:
			o.workspace = optarg;
			break;
		case OPT_DENY_READ:
			if (o.n_deny_read == ARRAY_SIZE(o.deny_read)) {
				fprintf(stderr, "agent-shell: at most %zu --deny-read\n",
					ARRAY_SIZE(o.deny_read));
				return EXIT_USAGE;
			}
			o.deny_read[o.n_deny_read++] = optarg;
			break;
		case OPT_EXECUTOR:
			o.executor = optarg;
			break;
		case OPT_SCRATCH:
			o.scratch = optarg;
			break;
		case OPT_EXECUTORS: {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*optarg < '1' || *optarg > '9' || *end || n > 4096) {
				fprintf(stderr, "agent-shell: --executors takes 1 to 4096\n");
				return EXIT_USAGE;
			}
			o.executors = (unsigned)n;
			break;
		}
		case OPT_JSON:
			json = true;
			break;
		case '?':
		default:
			if (optopt == 'c')
				fprintf(stderr, "agent-shell: -c needs a command\n");
			else if (optopt == 'f')
				fprintf(stderr, "agent-shell: -f needs a FILE\n");
			else
				fprintf(stderr, "agent-shell: unknown option %s\n",
					argv[optind - 1] ? argv[optind - 1] : "?");
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (command && verb) {
		fprintf(stderr, "agent-shell: -c cannot be combined with other actions\n");
		return EXIT_USAGE;
	}
	if ((o.profile || o.workspace || o.n_deny_read || o.executor || o.scratch) &&
	    verb != OPT_RUN) {
		fprintf(stderr, "agent-shell: --profile, --workspace, --deny-read, --executor and "
			"--scratch only go with --run\n");
		return EXIT_USAGE;
	}
	/* A session (a login, -c, --run) reads the live config and nothing
	 * else: whoever can pass it arguments (su USER -- ARGS) must not
	 * choose its policy. Only the read-only checks take a candidate. */
	if (config_file && verb != OPT_CHECK_CONFIG && verb != OPT_EXPLAIN) {
		fprintf(stderr, "agent-shell: -f/--config only goes with --check-config, --explain and "
			"--doctor; sessions always read %s\n", SBX_CONFIG_PATH);
		return EXIT_USAGE;
	}
	if (verb == OPT_CHECK_CONFIG && optind < argc) {
		if (config_file || optind < argc - 1) {
			fprintf(stderr, "agent-shell: --check-config takes one FILE (-f FILE or FILE)\n");
			return EXIT_USAGE;
		}
		config_file = argv[optind++];
	}
	if (config_file) {
		int r = config_file[0] ? shell_config_use(config_file) : -EINVAL;

		if (r != 0) {
			fprintf(stderr, "agent-shell: -f %s: %s\n", config_file,
				r == -EINVAL ? "empty file name" : strerror(-r));
			return EXIT_USAGE;
		}
	}
	if (!o.executor != !o.scratch || (o.scratch && o.scratch[0] != '/')) {
		fprintf(stderr, "agent-shell: --executor KEY and --scratch DIR (absolute) go together\n");
		return EXIT_USAGE;
	}

	switch (verb) {
	case OPT_HELP:
		usage(stdout);
		return 0;
	case OPT_VERSION:
		puts("agent-shell " SBX_VERSION);
		return 0;
	case OPT_PROBE:
		return shell_cmd_probe(json);
	case OPT_CHECK_CONFIG:
		return shell_cmd_check_config();
	case OPT_EXPLAIN:
		return shell_cmd_explain(explain_user, json);
	case OPT_REPORT:
		return shell_cmd_report(optind < argc ? argv[optind] : NULL, json);
	case OPT_SELFTEST:
		return shell_cmd_selftest();
	case OPT_RUN:
		if (optind >= argc) {
			fprintf(stderr, "agent-shell: --run needs a command after --\n");
			return EXIT_USAGE;
		}
		o.cmd_argv = argv + optind;
		o.service = "run";
		return start_session(&o);
	default:
		break;
	}
	if (optind < argc) {
		fprintf(stderr, "agent-shell: unexpected argument %s\n", argv[optind]);
		return EXIT_USAGE;
	}
	o.login_mode = true;
	o.command = command;
	o.interactive = !command;
	return start_session(&o);
}
