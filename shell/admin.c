/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * admin.c — the read-only verbs: --probe, --check-config, --explain,
 * --report, --selftest. None of them changes the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shell.h"

/*
 * --probe answers what this process can do now: it always measures, and
 * never takes the boot's probe cache for its answer. An entry says only
 * "every namespace type" and a session that believes a wrong one is sent
 * back to a probe (lib/probe_cache.c), but --probe's output is the answer
 * itself: under `prlimit --nproc=1` the cache said "netns yes" where a
 * probe said "no (fork: EAGAIN)". When a current entry exists for this uid,
 * the namespaces line says whether the measurement agrees with it.
 */
int shell_cmd_probe(bool json)
{
	const struct sbx_probe *measured;
	struct sbx_error err = { 0 }, why = { 0 };
	struct sbx_probe probe;
	uid_t uid = getuid();
	bool entry = uid != 0 && uid == geteuid() && sbx_probe_cache_check(uid, &why) == 0;

	if (sbx_probe_measure(&measured, &err) != 0) {
		fprintf(stderr, "agent-shell: probe: %s\n", err.msg);
		return 1;
	}
	probe = *measured;
	if (!entry && uid != 0)
		sbx_text_set(probe.ns_source, sizeof(probe.ns_source),
			     "probed now; no probe cache entry: %s", why.msg);
	else if (!entry)
		sbx_strlcpy(probe.ns_source, sizeof(probe.ns_source), "probed now");
	else if (probe.userns && probe.mountns && probe.pidns && probe.netns && probe.ipcns &&
		 probe.utsns && probe.cgroupns)
		sbx_strlcpy(probe.ns_source, sizeof(probe.ns_source),
			    "probed now; agrees with this boot's probe cache (every type)");
	else
		sbx_strlcpy(probe.ns_source, sizeof(probe.ns_source),
			    "probed now; this boot's probe cache says every type, which this "
			    "process could not make (rows below)");
	if (json)
		sbx_probe_to_json(&probe, stdout);
	else
		sbx_probe_to_text(&probe, stdout);
	return 0;
}

/* A file of the config the agents cannot read (lib/config.c's rule). */
static void print_access_problem(void *arg, const char *path, const char *why, const char *fix)
{
	(void)arg;
	fprintf(stderr, "%s: %s; fix: %s\n", path, why, fix);
}

/* "root =" lines that name nothing (templates aside, which name each
 * agent's own): sessions leave them out (lib/apply.c). Each path once:
 * a profile that inherits the line does not name it again. */
static void print_missing_roots(const char *section, const struct sbx_profile *p, char *seen,
				size_t size)
{
	struct stat st;

	for (size_t i = 0; i < p->n_roots; i++) {
		const struct sbx_root *rt = &p->roots[i];
		bool ro = rt->write != SBX_ACCESS_ALLOW;
		size_t used = strlen(seen);
		char key[SBX_PATH_MAX + 2];

		snprintf(key, sizeof(key), "%s\n", rt->path);
		if (rt->read == SBX_ACCESS_DENY || strchr(rt->path, '%') || strstr(seen, key) ||
		    stat(rt->path, &st) == 0 || errno != ENOENT)
			continue;
		snprintf(seen + used, size - used, "%s", key);
		printf("  warning: %s root %s %s: No such file or directory: sessions leave it out "
		       "(their report says \"%s (missing)\")%s; create it (install -d %s) or "
		       "remove the line\n", section, rt->path, ro ? "ro" : "rw", rt->path,
		       ro ? ", or are refused where it is inside a tree they write" : "", rt->path);
	}
}

/* The live config, or the candidate of -f: trusted and parsed with its
 * drop-ins, as a session would read it, and readable by the agents, as
 * agent-shell reads it (exit 1 otherwise). Roots that are not there are
 * warnings. */
int shell_cmd_check_config(void)
{
	const char *path = shell_config_path();
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	char seen[4096] = "";
	size_t unreadable;
	int ret, status = 0;

	ret = sbx_config_load(path, 0, &cfg, &err);
	if (ret == 0) {
		unreadable = sbx_config_check_agent_access(cfg, print_access_problem, NULL);
		if (unreadable)
			printf("%s: FAIL: trusted and parsed (%zu profile(s), %zu match rule(s), %zu "
			       "drop-in(s)), but the agents cannot read %zu of its files or "
			       "directories (above)\n", path, cfg->n_profiles, cfg->n_matches,
			       cfg->n_files - 1, unreadable);
		else
			printf("%s: OK (%zu profile(s), %zu match rule(s), %zu drop-in(s))\n", path,
			       cfg->n_profiles, cfg->n_matches, cfg->n_files - 1);
		for (size_t i = 1; i < cfg->n_files; i++)
			printf("  drop-in %s\n", cfg->files[i]);
		print_missing_roots("[ceiling]", &cfg->ceiling, seen, sizeof(seen));
		for (size_t i = 0; i < cfg->n_profiles; i++) {
			char section[SBX_NAME_MAX + 16];

			snprintf(section, sizeof(section), "[profile %s]", cfg->profiles[i].name);
			print_missing_roots(section, &cfg->profiles[i], seen, sizeof(seen));
		}
		/* network = proxy needs the daemon: whether it answers at all
		 * (as whoever runs this; --doctor and --explain ask per agent). */
		for (size_t i = 0; i < cfg->n_profiles; i++) {
			const struct sbx_profile *pp = &cfg->profiles[i];
			struct sbx_error perr = { 0 };
			int pr;

			if (pp->network != SBX_NETWORK_PROXY)
				continue;
			pr = sbx_egress_ping(cfg->egress_socket, getuid(), NULL, 2000, &perr);
			printf("  note: profile %s: network = proxy, %zu destination(s) through "
			       "agent-sandbox-egressd at %s%s%s\n", pp->name, pp->n_egress,
			       cfg->egress_socket, pr == 0 || pr == -EACCES ? "" :
			       ": not reachable now: such sessions reach only their private "
			       "loopback: ", pr == 0 || pr == -EACCES ? "" : perr.msg);
		}
		sbx_config_free(cfg);
		return unreadable ? 1 : 0;
	}
	fprintf(stderr, "%s\n", err.msg);
	if (ret == -EACCES)
		fprintf(stderr, "agent-shell: --check-config: this user cannot read it, and "
			"agent-shell reads the config as its user (in a session, the agent); run as "
			"root, --check-config names every file the agents cannot read\n");
	status = 1;
	/* Still report syntax errors in a draft the trust check refused. */
	if (ret == -EPERM || ret == -ELOOP) {
		ret = sbx_config_load(path, SBX_CONFIG_SKIP_TRUST, &cfg, &err);
		if (ret == 0) {
			printf("%s: syntax OK, but not trusted (see above): agent-shell and the PAM "
			       "module would refuse it%s\n", path,
			       shell_config_is_candidate() ? " once live" : "");
			sbx_config_free(cfg);
		} else {
			fprintf(stderr, "%s\n", err.msg);
		}
	}
	return status;
}

int shell_cmd_explain(const char *user, bool json)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	struct sbx_account id = { 0 };
	struct sbx_profile *p = calloc(1, sizeof(*p));
	struct sbx_report *r = calloc(1, sizeof(*r));
	const struct sbx_probe *probe;
	struct sbx_probe agent_probe;
	struct sbx_decision d;
	struct passwd *pw;
	struct sbx_profile *left = NULL;
	char why_path[SBX_PATH_MAX + 64] = "", missing[256] = "";
	int status = 1;
	bool is_agent;

	if (!p || !r)
		goto out;
	pw = getpwnam(user);
	if (!pw) {
		fprintf(stderr, "agent-shell: --explain %s: no such user\n", user);
		goto out;
	}
	if (sbx_account_by_name(pw->pw_name, &id, &err) != 0) {
		fprintf(stderr, "agent-shell: %s\n", err.msg);
		goto out;
	}
	if (shell_config_load(&cfg, &err) != 0) {
		fprintf(stderr, "agent-shell: %s\n", err.msg);
		goto out;
	}
	if (!cfg) {
		fprintf(stderr, "agent-shell: --explain %s: no configuration at %s, so no account is "
			"an agent account: every login through agent-shell is refused, and --run uses "
			"the built-in default profile\n", id.user, shell_config_path());
		goto out;
	}
	if (shell_resolve_profile(cfg, &id, NULL, NULL, true, p, &is_agent, &err) != 0) {
		fprintf(stderr, "agent-shell: %s\n", err.msg);
		goto out;
	}
	/* Root's probe is not the agent's (user namespaces, for one, may be
	 * refused to unprivileged uids): as root, probe as the agent. */
	if (geteuid() == 0 && id.uid != 0) {
		char why[256];

		if (shell_probe_as(id.uid, id.gid, id.user, &agent_probe, why, sizeof(why)) != 0) {
			fprintf(stderr, "agent-shell: probe as %s: %s\n", id.user, why);
			goto out;
		}
		probe = &agent_probe;
	} else if (sbx_probe_get(&probe, &err) != 0) {
		fprintf(stderr, "agent-shell: probe: %s\n", err.msg);
		goto out;
	}
	/* The session's own decision, with what --run and a login without
	 * the PAM stage's network namespace would get. */
	if (sbx_decide(p, probe, NULL, &d, &err) != 0) {
		fprintf(stderr, "agent-shell: --explain %s: every session would be refused: %s\n",
			id.user, err.msg);
		goto out;
	}
	/* What the decision does not see: the mount view opens the
	 * workspace, and a missing one refuses the session before it
	 * reports ("open bind source"); a missing root is left out, or
	 * refuses the session where leaving it out would widen it. The
	 * session's own test (lib/apply.c), on a copy. */
	left = malloc(sizeof(*left));
	if (!left)
		goto out;
	*left = *p;
	if (shell_workspace_missing(p, why_path, sizeof(why_path)) ||
	    sbx_profile_skip_missing_roots(left, missing, sizeof(missing), &err) != 0) {
		if (!json) {
			printf("Effective profile for %s (after the host ceiling):\n", id.user);
			sbx_profile_to_text(p, stdout);
			fflush(stdout);
		}
		fprintf(stderr, "agent-shell: --explain %s: every session would be refused: "
			"profile %s: %s (the session's mount view opens it)\n", id.user, p->name,
			why_path[0] ? why_path : err.msg);
		goto out;
	}
	sbx_report_init(r, p);
	sbx_strlcpy(r->user, sizeof(r->user), id.user);
	r->uid = id.uid;
	sbx_strlcpy(r->session_id, sizeof(r->session_id), "predicted");
	sbx_strlcpy(r->service, sizeof(r->service), "explain");
	sbx_strlcpy(r->client, sizeof(r->client), "local");
	sbx_decision_expect(&d, r);
	/* Named where the session names them: the mount view, or without
	 * one the Landlock rules. */
	if (missing[0]) {
		struct sbx_report_entry *e = &r->entry[d.ns ? SBX_F_MOUNT_VIEW : SBX_F_LANDLOCK_FS];
		size_t used = strlen(e->detail);

		snprintf(e->detail + used, sizeof(e->detail) - used, "%s%s%s",
			 used ? "; " : "", d.ns ? "skipped: " : "not granted: ", missing);
	}
	/* The bridge's start asks the daemon whether this uid is a proxy
	 * agent with this list; the prediction asks it the same. */
	if (d.egress) {
		char hash[65];
		int pr;

		sbx_egress_list_hash(p, hash);
		pr = sbx_egress_ping(cfg->egress_socket, id.uid, hash, 2000, &err);
		sbx_egress_report(r, cfg->egress_socket, pr, &err);
		/* Counted as its canary would, as sbx_decision_expect counts
		 * every entry; cleared with the others below. */
		r->entry[SBX_F_NETWORK_EGRESS].verified = r->entry[SBX_F_NETWORK_EGRESS].achieved;
		sbx_report_finish(r);
	}
	/* The level and guarantees above count what the decision expects; no
	 * canary has run, so no entry of a prediction says verified. */
	for (unsigned f = 0; f < SBX_F_COUNT; f++)
		r->entry[f].verified = false;
	if (json) {
		printf("{\"profile\":");
		sbx_profile_to_json(p, stdout);
		printf(",\"predicted_report\":");
		sbx_report_to_json(r, stdout);
		printf("}\n");
	} else {
		printf("Effective profile for %s (after the host ceiling):\n", id.user);
		sbx_profile_to_text(p, stdout);
		printf("\nExpected report on this host (the session's own decision from the probe;\n"
		       "nothing is verified yet: a real session proves each entry with a canary,\n"
		       "and reports less only where one fails):\n");
		sbx_report_to_text(r, stdout);
	}
	status = 0;
out:
	free(left);
	sbx_config_free(cfg);
	sbx_account_free(&id);
	free(p);
	free(r);
	return status;
}

static int newest_report(const char *dir, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct timespec best = { 0, 0 };
	int ret = -ENOENT;

	if (!d)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		char path[SBX_PATH_MAX + 300];
		struct stat st;
		size_t len = strlen(e->d_name);

		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		if (sbx_snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) != 0)
			continue;
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		/* To the nanosecond: sessions a second apart are common. */
		if ((st.st_mtim.tv_sec > best.tv_sec ||
		     (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec >= best.tv_nsec)) &&
		    sbx_strlcpy(out, size, path) == 0) {
			best = st.st_mtim;
			ret = 0;
		}
	}
	closedir(d);
	return ret;
}

int shell_cmd_report(const char *session, bool json)
{
	const char *sid = session ? session : getenv("AGENT_SANDBOX_SESSION");
	const char *home = getenv("HOME");
	char path[SBX_PATH_MAX + 128] = "", dir[SBX_PATH_MAX];
	struct sbx_report *r = calloc(1, sizeof(*r));
	struct sbx_error err = { 0 };
	char *buf = NULL;
	size_t len = 0;
	bool newest = false;
	int status = 1;

	if (!r)
		return 1;
	if (sid && !sbx_session_id_is_valid(sid)) {
		fprintf(stderr, "agent-shell: --report: %s is not a session id\n", sid);
		goto out;
	}
	/* Root: its own copy, from the ledger, which no agent wrote. */
	if (sid && session && geteuid() == 0) {
		int lr = shell_ledger_report(sid, &buf, &len, &err);

		if (lr != 0 && lr != -ENOENT) {
			fprintf(stderr, "agent-shell: --report: %s\n",
				err.msg[0] ? err.msg : "the config is unusable");
			goto out;
		}
		if (lr == -ENOENT)
			err = (struct sbx_error){ 0 };
	}
	/* Inside a session the copy in $HOME; outside, the agent's own copies. */
	if (!buf && sid && home && home[0] == '/') {
		snprintf(path, sizeof(path), "%s/.agent-sandbox/reports/%s.json", home, sid);
		if (access(path, R_OK) != 0)
			path[0] = '\0';
	}
	if (!buf && !path[0] && shell_report_dir(dir, sizeof(dir)) == 0) {
		if (sid)
			snprintf(path, sizeof(path), "%s/%s.json", dir, sid);
		else if (newest_report(dir, path, sizeof(path)) == 0)
			newest = true;
		else
			path[0] = '\0';
	}
	if (!buf && !path[0]) {
		fprintf(stderr, "agent-shell: --report: no report found%s%s\n", sid ? " for session " : "",
			sid ? sid : "");
		goto out;
	}
	if ((!buf && sbx_read_file(path, SBX_REPORT_JSON_MAX, &buf, &len, &err) != 0) ||
	    sbx_report_from_json(buf, len, r, &err) != 0) {
		fprintf(stderr, "agent-shell: --report: %s\n", err.msg);
		goto out;
	}
	/* Not "the report of your last run": any session of this user may
	 * have ended since (another terminal, a script). Said on stderr, so
	 * --json stays one object. */
	if (newest)
		fprintf(stderr, "agent-shell: --report: no SESSION given: this is the newest report "
			"in %s, of session %s; it may be another session's than the one you mean "
			"(agent-shell --report SESSION names one)\n", dir,
			sbx_session_id_is_valid(r->session_id) ? r->session_id : "(no valid id)");
	if (json)
		sbx_report_to_json(r, stdout);
	else
		sbx_report_to_text(r, stdout);
	status = 0;
out:
	free(buf);
	free(r);
	return status;
}

/*
 * --selftest: run a real confined command in a scratch workspace with the
 * built-in default profile, check its exit status and its write, and
 * refuse level none. The seed's runnable checkpoint.
 */
int shell_cmd_selftest(void)
{
	char ws[] = "/var/tmp/agent-sandbox-selftest.XXXXXX";
	char self[PATH_MAX], marker[sizeof(ws) + 16];
	pid_t pid;
	int status, code;
	struct stat st;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0) {
		perror("agent-shell: --selftest: /proc/self/exe");
		return 1;
	}
	self[n] = '\0';
	if (!mkdtemp(ws)) {
		perror("agent-shell: --selftest: mkdtemp");
		return 1;
	}
	snprintf(marker, sizeof(marker), "%s/written", ws);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { self, (char *)"--run", (char *)"--workspace", ws, (char *)"--",
				 (char *)"/bin/sh", (char *)"-c",
				 (char *)"echo ok > written && ! touch /etc/agent-sandbox-selftest 2>/dev/null && exit 42",
				 NULL };

		execv(self, argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (code == 42 && stat(marker, &st) == 0) {
		printf("selftest: PASS (confined command exited 42, wrote inside the workspace, "
		       "was refused /etc)\n");
		unlink(marker);
		rmdir(ws);
		return 0;
	}
	printf("selftest: FAIL (exit %d, workspace write %s)\n", code,
	       stat(marker, &st) == 0 ? "present" : "missing");
	unlink(marker);
	rmdir(ws);
	return 1;
}
