/* SPDX-License-Identifier: BSD-3-Clause */
/* PAM tests: pam_agent_sandbox.so driven through pam_start_confdir with private stacks. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/magic.h>
#include <unistd.h>

#include <security/pam_appl.h>

#include "testlib.h"

#define BIG_GROUP "sbx-test-pambig"

/*
 * Everything this file creates: two accounts (useradd --system, so no
 * /etc/subuid lines; removed in the group teardown even after a failure),
 * and one root-owned 0755 directory under /run holding the configs, the
 * PAM service dir, the state dir, the runtime dir and the accounts' homes.
 * Every PAM call runs in a forked child: open_session unshares the mount
 * namespace of the process that calls it.
 */
struct world {
	char base[64];
	char build[PATH_MAX];
	char so[PATH_MAX + 32];
	char shell[PATH_MAX + 32];
	char confdir[128];
	char rt[128];
	char state[128];
	char agent[32], user[32];	/* account names */
	char agent_home[128], user_home[128];
	uid_t agent_uid;
	gid_t agent_gid;
	bool agent_made, user_made;
	char subuid_before[4096];
};

static struct world W;

static int write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	size_t len = strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len || fchmod(fd, mode) != 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int mkdir_mode(const char *path, mode_t mode)
{
	return (mkdir(path, mode) == 0 && chmod(path, mode) == 0) ? 0 : -1;
}

static void read_small(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = -1;

	buf[0] = '\0';
	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
}

/* Remove lines "name:..." that useradd may have added to /etc/subuid|subgid. */
static void subid_scrub(const char *file, const char *name)
{
	char buf[65536], out[65536], *line, *save = NULL;
	size_t nl = strlen(name), used = 0;
	bool changed = false;

	read_small(file, buf, sizeof(buf));
	out[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, name, nl) && line[nl] == ':') {
			changed = true;
			continue;
		}
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%s\n", line);
	}
	if (changed)
		write_text(file, out, 0644);
}

static const char *profile_text =
	"[profile coder]\n"
	"workspace_root = %h/work\n"
	"home = isolated\n"
	"services = sbxtest sbxtest-only sshd\n"
	"max_sessions = 64\n";

static const char *scratch_text =
	"[profile scratch]\n"
	"workspace_root = %h/work\n"
	"home = ephemeral\n"
	"network = deny\n"
	"services = sbxtest-eph sbxtest-twice\n"
	"max_sessions = 4\n";

static int write_config(const char *path, const char *agent_shell, mode_t mode)
{
	bool eph = strstr(path, "eph.conf") != NULL;
	char text[4096];

	snprintf(text, sizeof(text),
		 "[global]\nstate_dir = %s\nagent_shell = %s\n\n", W.state, agent_shell);
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s",
		 eph ? scratch_text : profile_text);
	/* A secret that covers the config's own directory: the PAM stage
	 * must leave it to agent-shell's view, or no login could read it. */
	if (!eph)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "deny_read = %s/conf\n", W.base);
	snprintf(text + strlen(text), sizeof(text) - strlen(text),
		 "\n[match]\nuser %s = %s\n", W.agent, eph ? "scratch" : "coder");
	return write_text(path, text, mode);
}

/* A PAM service file in the private confdir: our module, then pam_permit
 * (an all-IGNORE stack fails in Linux-PAM, tested separately). */
static int write_service(const char *service, const char *conf, bool with_permit)
{
	char path[256], text[4 * PATH_MAX + 2048], args[PATH_MAX + 512];

	snprintf(args, sizeof(args), "conf=%s/%s runtime_dir=%s skel=%s/skel%s", W.base,
		 conf, W.rt, W.base, strstr(conf, "eph") ? " netns" : "");
	snprintf(text, sizeof(text),
		 "account required %s %s\n%s"
		 "session required %s %s\n%s",
		 W.so, args, with_permit ? "account required pam_permit.so\n" : "",
		 W.so, args, with_permit ? "session required pam_permit.so\n" : "");
	snprintf(path, sizeof(path), "%s/%s", W.confdir, service);
	return write_text(path, text, 0644);
}

/* A stack that names the module twice per phase, as sshd's does when
 * pam-auth-update's common-session line joins a hand-written one. */
static int write_twice_service(void)
{
	char path[256], text[8 * PATH_MAX + 4096], args[PATH_MAX + 512];

	snprintf(args, sizeof(args), "conf=%s/conf/eph.conf runtime_dir=%s skel=%s/skel",
		 W.base, W.rt, W.base);
	snprintf(text, sizeof(text),
		 "account required %s %s\naccount required %s %s\n"
		 "session required %s %s\nsession required %s %s netns\n",
		 W.so, args, W.so, args, W.so, args, W.so, args);
	snprintf(path, sizeof(path), "%s/sbxtest-twice", W.confdir);
	return write_text(path, text, 0644);
}

static int group_teardown(void **state);

static int group_setup_inner(void)
{
	char exe[PATH_MAX], path[256], hex[8];
	unsigned char rnd[3];
	const char *env;
	struct stat st;

	env = getenv("SBX_TEST_BUILD_DIR");
	if (env) {
		if (!realpath(env, W.build))
			return -1;
	} else {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (n <= 0)
			return -1;
		exe[n] = '\0';
		/* <build>/tests/test_pam */
		snprintf(W.build, sizeof(W.build), "%s", dirname(dirname(exe)));
	}
	snprintf(W.so, sizeof(W.so), "%s/pam_agent_sandbox.so", W.build);
	snprintf(W.shell, sizeof(W.shell), "%s/agent-shell", W.build);
	if (stat(W.so, &st) != 0 || stat(W.shell, &st) != 0) {
		fprintf(stderr, "test_pam: %s or %s missing (make all)\n", W.so, W.shell);
		return -1;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -1;
	snprintf(hex, sizeof(hex), "%02x%02x%02x", rnd[0], rnd[1], rnd[2]);
	snprintf(W.agent, sizeof(W.agent), "sbxt-%s", hex);
	snprintf(W.user, sizeof(W.user), "sbxu-%s", hex);
	snprintf(W.base, sizeof(W.base), "/run/sbx-test-pam-XXXXXX");
	if (!mkdtemp(W.base) || chmod(W.base, 0755) != 0)
		return -1;
	snprintf(W.confdir, sizeof(W.confdir), "%s/pam.d", W.base);
	snprintf(W.rt, sizeof(W.rt), "%s/rt", W.base);
	snprintf(W.state, sizeof(W.state), "%s/state", W.base);
	snprintf(W.agent_home, sizeof(W.agent_home), "%s/home-%s", W.base, W.agent);
	snprintf(W.user_home, sizeof(W.user_home), "%s/home-%s", W.base, W.user);
	snprintf(path, sizeof(path), "%s/skel", W.base);
	if (mkdir_mode(W.confdir, 0755) || mkdir_mode(W.agent_home, 0755) ||
	    mkdir_mode(W.user_home, 0755) || mkdir_mode(path, 0755))
		return -1;
	snprintf(path, sizeof(path), "%s/skel/.bashrc", W.base);
	if (write_text(path, "PS1='[sandbox] \\u:\\w\\$ '\n", 0644))
		return -1;
	snprintf(path, sizeof(path), "%s/conf", W.base);
	if (mkdir_mode(path, 0755))
		return -1;
	snprintf(path, sizeof(path), "%s/conf/good.conf", W.base);
	if (write_config(path, W.shell, 0644))
		return -1;
	snprintf(path, sizeof(path), "%s/conf/wrongshell.conf", W.base);
	if (write_config(path, "/usr/local/bin/not-the-agent-shell", 0644))
		return -1;
	snprintf(path, sizeof(path), "%s/conf/untrusted.conf", W.base);
	if (write_config(path, W.shell, 0664))
		return -1;
	snprintf(path, sizeof(path), "%s/conf/eph.conf", W.base);
	if (write_config(path, W.shell, 0644))
		return -1;
	snprintf(path, sizeof(path), "%s/conf/biggroup.conf", W.base);
	{
		char text[2 * PATH_MAX + 512];

		snprintf(text, sizeof(text),
			 "[global]\nstate_dir = %s\nagent_shell = %s\n\n"
			 "[profile coder]\nworkspace_root = %%h/work\nhome = isolated\n"
			 "services = sbxtest-big\n\n[match]\ngroup " BIG_GROUP " = coder\n",
			 W.state, W.shell);
		if (write_text(path, text, 0644))
			return -1;
	}
	/* The login that must make no process: its own state and runtime
	 * directories, since its session is never closed. */
	snprintf(path, sizeof(path), "%s/conf/nofork.conf", W.base);
	{
		char text[2 * PATH_MAX + 512];

		snprintf(text, sizeof(text),
			 "[global]\nstate_dir = %s/state-nofork\nagent_shell = %s\n\n"
			 "[profile coder]\nworkspace_root = %%h/work\nhome = isolated\n"
			 "network = deny\nmax_sessions = 4\nmin_level = degraded\n"
			 "require = write_boundary syscall_filter\n"
			 "services = sbxtest-nofork\n\n[match]\nuser %s = coder\n",
			 W.base, W.shell, W.agent);
		if (write_text(path, text, 0644))
			return -1;
	}
	{
		char text[2 * PATH_MAX + 1024];

		snprintf(path, sizeof(path), "%s/sbxtest-nofork", W.confdir);
		snprintf(text, sizeof(text),
			 "account required %s conf=%s/conf/nofork.conf runtime_dir=%s/rt-nofork "
			 "skel=%s/skel\n"
			 "session required %s conf=%s/conf/nofork.conf runtime_dir=%s/rt-nofork "
			 "skel=%s/skel netns\n",
			 W.so, W.base, W.base, W.base, W.so, W.base, W.base, W.base);
		if (write_text(path, text, 0644))
			return -1;
	}
	if (write_service("sbxtest-big", "conf/biggroup.conf", false) ||
	    write_service("sbxtest-eph", "conf/eph.conf", true) ||
	    write_service("sbxtest", "conf/good.conf", true) ||
	    write_service("cron", "conf/good.conf", true) ||
	    write_service("sbxtest-wrongshell", "conf/wrongshell.conf", true) ||
	    write_service("sbxtest-untrusted", "conf/untrusted.conf", true) ||
	    write_service("sbxtest-only", "conf/good.conf", false) || write_twice_service())
		return -1;
	/* The untrusted config again, with the big group as the agents'. */
	{
		char text[2 * PATH_MAX + 512];

		snprintf(path, sizeof(path), "%s/sbxtest-untrusted-grp", W.confdir);
		snprintf(text, sizeof(text),
			 "account required %s conf=%s/conf/untrusted.conf runtime_dir=%s group="
			 BIG_GROUP "\naccount required pam_permit.so\n",
			 W.so, W.base, W.rt);
		if (write_text(path, text, 0644))
			return -1;
	}
	/* "other" denies: a service file that failed to load cannot pass. */
	snprintf(path, sizeof(path), "%s/other", W.confdir);
	if (write_text(path, "account required pam_deny.so\nsession required pam_deny.so\n",
		       0644))
		return -1;

	read_small("/etc/subuid", W.subuid_before, sizeof(W.subuid_before));
	{
		const char *a[] = { "/usr/sbin/useradd", "--system", "-M", "-N", "-s", W.shell,
				    "-d", W.agent_home, W.agent, NULL };
		const char *b[] = { "/usr/sbin/useradd", "--system", "-M", "-N", "-s",
				    "/bin/sh", "-d", W.user_home, W.user, NULL };

		W.agent_made = sbx_test_run_quiet(a) == 0;
		W.user_made = sbx_test_run_quiet(b) == 0;
	}
	if (!W.agent_made || !W.user_made) {
		fprintf(stderr, "test_pam: useradd failed\n");
		return -1;
	}
	{
		struct passwd *pw = getpwnam(W.agent);

		if (!pw)
			return -1;
		W.agent_uid = pw->pw_uid;
		W.agent_gid = pw->pw_gid;
	}
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	return sbx_test_group_setup(group_setup_inner, group_teardown);
}

static int group_teardown(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	if (W.agent_made) {
		sbx_test_remove_account(W.agent);
		subid_scrub("/etc/subuid", W.agent);
		subid_scrub("/etc/subgid", W.agent);
	}
	if (W.user_made) {
		sbx_test_remove_account(W.user);
		subid_scrub("/etc/subuid", W.user);
		subid_scrub("/etc/subgid", W.user);
	}
	if (strncmp(W.base, "/run/sbx-test-", 14) == 0)
		sbx_test_rmtree(W.base);
	return 0;
}

/* ---- helpers for children ---------------------------------------------- */

static int conv_none(int n, const struct pam_message **msg, struct pam_response **resp,
		     void *data)
{
	(void)n;
	(void)msg;
	(void)resp;
	(void)data;
	return PAM_CONV_ERR;
}

static const struct pam_conv conv = { conv_none, NULL };

#define CHECK(cond, code)                                                        \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
			return (code);                                           \
		}                                                                \
	} while (0)

static unsigned long ns_ino(const char *name)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/* ---- scenarios (each runs in a forked child as root) ------------------- */

struct acct_case {
	const char *service;
	const char *user;
	int want;
	const char *log_a, *log_b;	/* expected syslog text, or NULL */
};

static int child_acct(void *arg)
{
	const struct acct_case *c = arg;
	pam_handle_t *h = NULL;
	int s = -1, r;

	if (c->log_a) {
		s = sbx_test_log_capture();
		CHECK(s >= 0, 10);
	}
	CHECK(pam_start_confdir(c->service, c->user, &conv, W.confdir, &h) == PAM_SUCCESS, 11);
	r = pam_acct_mgmt(h, 0);
	if (r != c->want) {
		fprintf(stderr, "pam_acct_mgmt(%s, %s) = %d (%s), want %d\n", c->service,
			c->user, r, pam_strerror(h, r), c->want);
		pam_end(h, r);
		return 12;
	}
	pam_end(h, r);
	if (c->log_a)
		CHECK(sbx_test_log_has(s, c->log_a, c->log_b, NULL, 0), 13);
	return 0;
}

static void run_acct(const char *service, const char *user, int want, const char *log_a,
		     const char *log_b)
{
	struct acct_case c = { service, user, want, log_a, log_b };

	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_acct, &c)), 0);
}

/*
 * The agent is matched through a group whose entry is larger than the
 * 16 KiB lookup buffer the module used to have (ERANGE dropped the group,
 * and the agent got PAM_IGNORE: no record, no namespace, internal-sftp
 * unconfined). The group lives in a copy of /etc/group bound over the
 * real one in a mount namespace of this child only.
 */
#define BIG_GID 59873

/* This child's own mount namespace; with member, /etc/group there has
 * BIG_GROUP added, member among its 1200 members. */
static int big_group_view(const char *member)
{
	char tmpl[] = "/tmp/sbx-test-pamgrp-XXXXXX";
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int fd;

	CHECK(unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
	      100);
	if (!member)
		return 0;
	fd = mkstemp(tmpl);
	CHECK(fd >= 0 && sbx_read_file("/etc/group", 1u << 22, &buf, &len, NULL) == 0, 101);
	f = fdopen(fd, "w");
	CHECK(f != NULL, 102);
	fwrite(buf, 1, len, f);
	free(buf);
	fprintf(f, "%s:x:%d:%s", BIG_GROUP, BIG_GID, member);
	for (int i = 0; i < 1200; i++)
		fprintf(f, ",sbx-filler-member-%05d", i);
	fputc('\n', f);
	CHECK(fclose(f) == 0 && chmod(tmpl, 0644) == 0, 103);
	CHECK(mount(tmpl, "/etc/group", NULL, MS_BIND, NULL) == 0, 104);
	unlink(tmpl);
	return 0;
}

static int child_big_group(void *arg)
{
	bool bind = arg != NULL;
	pam_handle_t *h = NULL;
	int r;

	r = big_group_view(bind ? W.agent : NULL);
	if (r)
		return r;
	CHECK(pam_start_confdir("sbxtest-big", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 105);
	r = pam_acct_mgmt(h, 0);
	pam_end(h, r);
	/* Matched: the module's own PAM_SUCCESS. Not matched: it ignores
	 * and this stack (the module alone) fails. */
	if (r != (bind ? PAM_SUCCESS : PAM_PERM_DENIED)) {
		fprintf(stderr, "big group (bound %d): pam_acct_mgmt = %d\n", bind, r);
		return 106;
	}
	return 0;
}

/* Matched through the group at the account phase, out of it by the
 * session phase: the session phase looks the groups up again, finds the
 * account changed, decides afresh and opens nothing. */
static int child_big_group_left(void *arg)
{
	unsigned long mnt;
	pam_handle_t *h = NULL;
	int r;

	(void)arg;
	r = big_group_view(W.agent);
	if (r)
		return r;
	mnt = ns_ino("mnt");
	CHECK(pam_start_confdir("sbxtest-big", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 121);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 122);
	CHECK(umount2("/etc/group", MNT_DETACH) == 0, 123);
	/* The module alone in the stack, ignoring: the stack fails. */
	r = pam_open_session(h, 0);
	CHECK(r == PAM_PERM_DENIED, 124);
	CHECK(ns_ino("mnt") == mnt && pam_getenv(h, "AGENT_SANDBOX_SESSION") == NULL, 125);
	pam_end(h, r);
	return 0;
}

static void test_big_group(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_big_group, (void *)1)), 0);
	/* Control: without the group the agent is not one. */
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_big_group, NULL)), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_big_group_left, NULL)),
			 0);
}

static void test_account_phase(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	/* Agent with the right shell through an allowed service. */
	run_acct("sbxtest", W.agent, PAM_SUCCESS, NULL, NULL);
	/* A non-agent: our module says PAM_IGNORE, pam_permit decides. */
	run_acct("sbxtest", W.user, PAM_SUCCESS, NULL, NULL);
	/* Linux-PAM: a stack where every module ignores fails with
	 * PAM_PERM_DENIED (_pam_dispatch_aux's "impression" sanity check),
	 * which is why the snippets put the module before other modules. */
	run_acct("sbxtest-only", W.user, PAM_PERM_DENIED, NULL, NULL);
	run_acct("sbxtest-only", W.agent, PAM_SUCCESS, NULL, NULL);
	/* Service not in the profile's list (cron is in no default list). */
	run_acct("cron", W.agent, PAM_PERM_DENIED, "PAM service cron is not allowed", W.agent);
	/* Under the product's ident (not the service's), in the log grammar. */
	run_acct("cron", W.agent, PAM_PERM_DENIED,
		 "]: event=refused stage=account reason=service service=cron user=", "agent-sandbox[");
	run_acct("cron", W.user, PAM_SUCCESS, NULL, NULL);
	/* Our stacks are the ones in effect: an unknown service gets "other". */
	run_acct("sbxtest-nosuch", W.user, PAM_AUTH_ERR, NULL, NULL);	/* pam_deny */
	/* The account's login shell is not the config's agent_shell. */
	run_acct("sbxtest-wrongshell", W.agent, PAM_PERM_DENIED,
		 "is not the agent shell /usr/local/bin/not-the-agent-shell", W.agent);
}

/* sbxtest-untrusted-grp for the plain user; arg non-NULL: the user is a
 * member of BIG_GROUP, the group= the service names. */
static int child_untrusted_member(void *arg)
{
	struct acct_case c = { "sbxtest-untrusted-grp", W.user, PAM_SUCCESS,
			       "not treated as an agent", W.user };
	int r;

	r = big_group_view(arg ? W.user : NULL);
	if (r)
		return r;
	if (arg) {
		c.want = PAM_PERM_DENIED;
		c.log_a = "untrusted.conf unusable";
		c.log_b = "group-writable";
	}
	return child_acct(&c);
}

/*
 * The groups are looked up only for a config that has group rules: with
 * the group database failing (only "files" in nsswitch.conf, and reading
 * /etc/group an error), a config that matches by user name still decides
 * for the agent and for everyone else. The control, a config with a
 * group rule, refuses the agent: it cannot tell a member from a
 * non-member, and says why.
 */
static int child_group_db_down(void *arg)
{
	char nss[] = "/tmp/sbx-test-pamnss-XXXXXX";
	static const char text[] = "passwd: files\ngroup: files\nshadow: files\n";
	struct acct_case c[] = {
		{ "sbxtest", W.agent, PAM_SUCCESS, NULL, NULL },
		{ "sbxtest", W.user, PAM_SUCCESS, NULL, NULL },
		{ "sbxtest-big", W.agent, PAM_SYSTEM_ERR, "lookup failed", W.agent },
	};
	struct group *g;
	int fd, r;

	(void)arg;
	r = big_group_view(NULL);
	if (r)
		return r;
	fd = mkstemp(nss);
	CHECK(fd >= 0 && write(fd, text, sizeof(text) - 1) == (ssize_t)(sizeof(text) - 1) &&
		      fchmod(fd, 0644) == 0 && close(fd) == 0,
	      111);
	r = mount(nss, "/etc/nsswitch.conf", NULL, MS_BIND, NULL);
	unlink(nss);
	CHECK(r == 0, 112);
	/* Reading this child's own memory at offset 0 fails (EIO). */
	CHECK(mount("/proc/self/mem", "/etc/group", NULL, MS_BIND, NULL) == 0, 113);
	errno = 0;
	g = getgrgid(W.agent_gid);
	CHECK(g == NULL && errno != 0, 114);	/* the database is down */
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		r = child_acct(&c[i]);
		if (r)
			return r;
	}
	return 0;
}

static void test_groups_only_when_needed(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_group_db_down, NULL)), 0);
}

static void test_untrusted_config(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	/* Group-writable config: the agent (shell agent-shell) is refused
	 * with the reason logged; others are left to the rest of the stack. */
	run_acct("sbxtest-untrusted", W.agent, PAM_PERM_DENIED, "untrusted.conf unusable",
		 "group-writable");
	run_acct("sbxtest-untrusted", W.user, PAM_SUCCESS, "not treated as an agent", W.user);
	/* Control: the same config with mode 0644 admits the agent. */
	run_acct("sbxtest", W.agent, PAM_SUCCESS, NULL, NULL);
	/* A member of the agents' group (group=), whose shell is not
	 * agent-shell, is refused too: the groups are looked up for the
	 * refusal, though the unusable config names none. */
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_untrusted_member, "")), 0);
	/* Control: outside the group, the same account is let through. */
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_untrusted_member, NULL)),
			 0);
}

static int count_fds(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The full session: returns 0 when every observable effect is right. */
/* Reap pid within ms milliseconds; past that, kill it (it is ours) and
 * say false, so a missing kill fails the test instead of hanging it. */
static bool reaped_within(pid_t pid, int ms, int *status)
{
	for (int waited = 0; waited < ms; waited += 20) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		usleep(20 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

/*
 * A second session of the same account, held by a process of its own (as
 * each sshd connection has its own monitor): it opens, starts one agent
 * process in its namespace, reports that pid on reply, and closes when a
 * byte arrives on cmd, or EOF (the test failed and its process is gone: the
 * session is still closed, so no record outlives the failure). Exit 0 when
 * its close succeeded and ended that process with SIGKILL.
 */
static int second_session(int cmd, int reply)
{
	pam_handle_t *h = NULL;
	pid_t member;
	char c = 0;
	int r, wst = 0;
	bool told;

	if (pam_start_confdir("sbxtest", W.agent, &conv, W.confdir, &h) != PAM_SUCCESS)
		return 80;
	if (pam_open_session(h, 0) != PAM_SUCCESS)
		return 81;
	member = fork();
	if (member == 0) {
		if (setresgid(W.agent_gid, W.agent_gid, W.agent_gid) != 0 ||
		    setresuid(W.agent_uid, W.agent_uid, W.agent_uid) != 0)
			_exit(70);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(71);
	}
	told = member > 0 && write(reply, &member, sizeof(member)) == sizeof(member) &&
	       read(cmd, &c, 1) == 1;
	r = pam_close_session(h, 0);
	pam_end(h, r);
	if (member > 0 && (!reaped_within(member, 2000, &wst) || !WIFSIGNALED(wst) ||
			   WTERMSIG(wst) != SIGKILL))
		return 83;
	if (!told)
		return 82;
	return r == PAM_SUCCESS ? 0 : 84;
}

/* A thread that waits to be killed (the leader of its process has left). */
static void *pause_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;)
		pause();
	return NULL;
}

/* A leftover whose leader calls exit(2) and leaves a thread running: the
 * leader keeps its pid, as a zombie, without namespace links of its own. */
static int zombie_leader(void)
{
	pthread_t t;

	setsid();
	if (setresgid(W.agent_gid, W.agent_gid, W.agent_gid) != 0 ||
	    setresuid(W.agent_uid, W.agent_uid, W.agent_uid) != 0)
		return 70;
	if (pthread_create(&t, NULL, pause_thread, NULL) != 0)
		return 72;
	syscall(SYS_exit, 0);	/* this thread only */
	return 73;
}

static int child_session(void *arg)
{
	int fds_before = count_fds();
	mode_t mask_before = umask(022);
	char rec_path[256], view_path[256], home_src[256], id[64] = "", logline[2048], marker[64];
	unsigned long mnt_before = ns_ino("mnt");
	struct stat st, st2, host_tmp, host_shm;
	struct statfs sfs;
	pam_handle_t *h = NULL;
	bool capture = arg != NULL;
	char **env;
	int s = -1, i, wst, cmd[2], reply[2], member_fd;
	pid_t leftover, zleader, outsider, second, bystander, member = 0;
	struct pollfd pfd;

	if (capture) {
		s = sbx_test_log_capture();
		CHECK(s >= 0, 20);
		mnt_before = ns_ino("mnt");
	}
	CHECK(stat("/tmp", &host_tmp) == 0, 21);
	CHECK(stat("/dev/shm", &host_shm) == 0, 68);
	CHECK(pam_start_confdir("sbxtest", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 22);
	CHECK(pam_set_item(h, PAM_RHOST, "192.0.2.9") == PAM_SUCCESS, 23);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 24);
	/* Control: the agent's process outside this session (forked before
	 * the session's namespace existed) survives the close while another
	 * session of the account is live, and ends with the last one. */
	outsider = fork();
	if (outsider == 0) {
		if (setresgid(W.agent_gid, W.agent_gid, W.agent_gid) != 0 ||
		    setresuid(W.agent_uid, W.agent_uid, W.agent_uid) != 0)
			_exit(70);
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive a failed test */
		pause();
		_exit(71);
	}
	CHECK(outsider > 0, 63);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 25);

	env = pam_getenvlist(h);
	CHECK(env != NULL, 26);
	for (i = 0; env[i]; i++) {
		if (!strncmp(env[i], "AGENT_SANDBOX_SESSION=", 22))
			snprintf(id, sizeof(id), "%s", env[i] + 22);
		free(env[i]);
	}
	free(env);
	CHECK(sbx_session_id_is_valid(id), 27);

	/* The record: root-only (0600 in a 0700 directory); the shell's copy
	 * is the read-only one this session's namespace alone sees. */
	snprintf(rec_path, sizeof(rec_path), "%s/sessions/%s", W.rt, id);
	CHECK(lstat(rec_path, &st) == 0 && S_ISREG(st.st_mode), 28);
	CHECK(st.st_uid == 0 && (st.st_mode & 07777) == 0600, 29);
	snprintf(view_path, sizeof(view_path), "%s/session/record", W.rt);
	CHECK(lstat(view_path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0444, 65);
	/* A private /dev/shm too (the host's would be shared). */
	CHECK(statfs("/dev/shm", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC, 66);
	CHECK(stat("/dev/shm", &st) == 0 && st.st_dev != host_shm.st_dev, 67);
	{
		struct sbx_record rec;
		struct sbx_error err = { 0 };

		CHECK(sbx_record_read_verified(W.rt, id, W.agent_uid, ns_ino("mnt"), &rec,
					       &err) == 0, 30);
		CHECK(rec.home_kind == SBX_HOME_ISOLATED && rec.private_tmp, 31);
		CHECK(!strcmp(rec.client, "192.0.2.9") && !strcmp(rec.service, "sbxtest"), 32);
		CHECK(!strcmp(rec.profile, "coder") && strlen(rec.hash) == 64, 33);
	}
	/* A new mount namespace for this process. */
	CHECK(ns_ino("mnt") != mnt_before, 34);
	/* The isolated home, and it is what the passwd home shows. */
	snprintf(home_src, sizeof(home_src), "%s/homes/%s", W.state, W.agent);
	CHECK(lstat(home_src, &st) == 0 && S_ISDIR(st.st_mode), 35);
	CHECK(st.st_uid == W.agent_uid && (st.st_mode & 07777) == 0700, 36);
	CHECK(stat(W.agent_home, &st2) == 0, 37);
	CHECK(st2.st_ino == st.st_ino && st2.st_dev == st.st_dev, 38);
	/* A private /tmp: a tmpfs that is not the host's. */
	CHECK(statfs("/tmp", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC, 39);
	CHECK(stat("/tmp", &st) == 0 && st.st_dev != host_tmp.st_dev, 40);
	CHECK((st.st_mode & 07777) == 01777, 41);
	snprintf(marker, sizeof(marker), "/tmp/sbx-pam-marker-%d", (int)getpid());
	CHECK(write_text(marker, "x", 0600) == 0, 42);
	/* A deny_read secret is masked. */
	CHECK(stat("/etc/shadow", &st) == 0 && S_ISCHR(st.st_mode), 43);
	/* ... but not one that covers the config: agent-shell reads it next. */
	{
		char conf[256];

		snprintf(conf, sizeof(conf), "%s/conf/good.conf", W.base);
		CHECK(stat(conf, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0, 60);
	}

	if (capture) {
		CHECK(sbx_test_log_has(s, "session=", id, logline, sizeof(logline)), 44);
		CHECK(strstr(logline, "client=192.0.2.9") && strstr(logline, "profile=coder") &&
		      strstr(logline, "pam_stage=mntns,home-bind,tmp,shm,deny_read"), 45);
	}

	/* A leftover of the session (the agent's uid, in the session's
	 * mount namespace, e.g. a setsid'ed daemon) dies at close. */
	leftover = fork();
	if (leftover == 0) {
		setsid();
		if (setresgid(W.agent_gid, W.agent_gid, W.agent_gid) != 0 ||
		    setresuid(W.agent_uid, W.agent_uid, W.agent_uid) != 0)
			_exit(70);
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive a failed test */
		pause();
		_exit(71);
	}
	CHECK(leftover > 0, 61);
	/* The same, with its leader gone and a thread running on. */
	zleader = fork();
	if (zleader == 0)
		_exit(zombie_leader());
	CHECK(zleader > 0, 79);
	/* Control: a process of another uid (root) in the same namespace
	 * is not the session's and stays. */
	bystander = fork();
	if (bystander == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive a failed test */
		pause();
		_exit(71);
	}
	CHECK(bystander > 0, 75);
	usleep(50 * 1000);	/* let it drop its privileges first */

	/* A second live session of the account, with a process of its own. */
	CHECK(pipe2(cmd, O_CLOEXEC) == 0 && pipe2(reply, O_CLOEXEC) == 0, 53);
	second = fork();
	if (second == 0) {
		close(cmd[1]);
		close(reply[0]);
		_exit(second_session(cmd[0], reply[1]));
	}
	CHECK(second > 0, 54);
	close(cmd[0]);
	close(reply[1]);
	CHECK(read(reply[0], &member, sizeof(member)) == sizeof(member) && member > 0, 55);
	close(reply[0]);
	member_fd = (int)syscall(SYS_pidfd_open, member, 0);
	CHECK(member_fd >= 0, 56);
	usleep(50 * 1000);	/* let the member drop its privileges first */

	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 46);
	CHECK(reaped_within(leftover, 2000, &wst) && WIFSIGNALED(wst) &&
	      WTERMSIG(wst) == SIGKILL, 62);
	CHECK(reaped_within(zleader, 2000, &wst) && WIFSIGNALED(wst) &&
	      WTERMSIG(wst) == SIGKILL, 80);
	/* Another session of the account is live: the agent's processes
	 * outside this session (the outsider, the second session's) stay. */
	usleep(100 * 1000);
	CHECK(waitpid(outsider, &wst, WNOHANG) == 0, 64);	/* still alive */
	CHECK(waitpid(bystander, &wst, WNOHANG) == 0, 76);	/* still alive */
	kill(bystander, SIGKILL);
	CHECK(reaped_within(bystander, 2000, &wst), 77);
	pfd.fd = member_fd;
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 0) == 0, 57);			/* still alive */
	CHECK(lstat(rec_path, &st) != 0 && errno == ENOENT, 47);
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 48);	/* twice is fine */
	if (capture) {
		CHECK(sbx_test_log_has(s, "closed after", id, logline, sizeof(logline)), 49);
		CHECK(strstr(logline, "; 1 other live session(s) of the account: "
			      "only this session's namespace swept"), 58);
		/* The sweep ended the two leftovers, and only them. */
		CHECK(strstr(logline, ": record removed, 2 leftover process(es) killed in "), 78);
	}
	CHECK(pam_end(h, PAM_SUCCESS) == PAM_SUCCESS, 50);

	/* The account's last session closes: every process of the uid ends,
	 * the outsider too. */
	CHECK(write(cmd[1], "c", 1) == 1, 59);
	close(cmd[1]);
	CHECK(reaped_within(second, 5000, &wst) && sbx_test_status_code(wst) == 0, 69);
	CHECK(poll(&pfd, 1, 0) == 1, 72);
	close(member_fd);
	CHECK(reaped_within(outsider, 2000, &wst) && WIFSIGNALED(wst) &&
	      WTERMSIG(wst) == SIGKILL, 73);
	if (capture) {
		char want[128];

		snprintf(want, sizeof(want),
			 "; last session of the account: every process of uid %u ended",
			 (unsigned)W.agent_uid);
		CHECK(sbx_test_log_has(s, "closed after", want, NULL, 0), 74);
	}
	/* The module leaves no fd open and the umask as it was. */
	CHECK(capture || count_fds() == fds_before, 51);
	CHECK(umask(mask_before) == 022, 52);
	return 0;
}

static void read_mountinfo(char *buf, size_t size)
{
	read_small("/proc/self/mountinfo", buf, size);
}

static void assert_no_records(void)
{
	char path[256];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sessions", W.rt);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		/* ".", ".." and the lock file */
		if (de->d_name[0] != '.')
			fail_msg("leftover record %s", de->d_name);
	}
	closedir(d);
}

static void test_session_open_close(void **state)
{
	static char before[65536], after[65536];
	char marker_glob[64];
	int status;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	read_mountinfo(before, sizeof(before));
	/* With syslog captured, checking the one-line summary, then again
	 * without (fds are counted only then). */
	status = sbx_test_fork(false, child_session, (void *)1);
	assert_int_equal(sbx_test_status_code(status), 0);
	status = sbx_test_fork(false, child_session, NULL);
	assert_int_equal(sbx_test_status_code(status), 0);
	read_mountinfo(after, sizeof(after));
	assert_string_equal(before, after);
	assert_no_records();
	snprintf(marker_glob, sizeof(marker_glob), "/tmp/sbx-pam-marker-");
	{
		struct dirent *de;
		DIR *d = opendir("/tmp");

		assert_non_null(d);
		while ((de = readdir(d)) != NULL)
			assert_null(strstr(de->d_name, marker_glob + 5));
		closedir(d);
	}
}

/* Ephemeral home (tmpfs at the passwd home, seeded) and the netns option. */
static int child_ephemeral(void *arg)
{
	unsigned long net_before = ns_ino("net");
	char rcfile[256], id[64] = "";
	struct sbx_record rec;
	struct sbx_error err = { 0 };
	struct statfs sfs;
	struct stat st;
	pam_handle_t *h = NULL;
	const char *v;

	(void)arg;
	CHECK(pam_start_confdir("sbxtest-eph", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS,
	      80);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 81);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 82);
	v = pam_getenv(h, "AGENT_SANDBOX_SESSION");
	CHECK(v && sbx_session_id_is_valid(v), 83);
	snprintf(id, sizeof(id), "%s", v);
	CHECK(statfs(W.agent_home, &sfs) == 0 && sfs.f_type == TMPFS_MAGIC, 84);
	CHECK(stat(W.agent_home, &st) == 0 && st.st_uid == W.agent_uid &&
	      (st.st_mode & 07777) == 0700, 85);
	snprintf(rcfile, sizeof(rcfile), "%s/.bashrc", W.agent_home);
	CHECK(stat(rcfile, &st) == 0 && st.st_uid == W.agent_uid, 86);
	CHECK(ns_ino("net") != net_before, 87);
	CHECK(sbx_record_read_verified(W.rt, id, W.agent_uid, ns_ino("mnt"), &rec, &err) == 0,
	      88);
	CHECK(rec.home_kind == SBX_HOME_EPHEMERAL && rec.netns == ns_ino("net") &&
	      rec.home_source[0] == '\0', 89);
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 90);
	/* close detached the tmpfs home in the session's namespace. */
	CHECK(statfs(W.agent_home, &sfs) == 0 && sfs.f_type != TMPFS_MAGIC, 91);
	CHECK(stat(rcfile, &st) != 0, 92);
	pam_end(h, PAM_SUCCESS);
	return 0;
}

static void test_ephemeral_netns(void **state)
{
	static char before[65536], after[65536];

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	read_mountinfo(before, sizeof(before));
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_ephemeral, NULL)), 0);
	read_mountinfo(after, sizeof(after));
	assert_string_equal(before, after);
	assert_no_records();
}

/* A failure after unshare is undone: same namespace, no record, no mounts. */
static int child_open_fails(void *arg)
{
	unsigned long mnt_before = ns_ino("mnt");
	char away[192];
	struct stat host_tmp, st;
	pam_handle_t *h = NULL;
	int r;

	(void)arg;
	snprintf(away, sizeof(away), "%s.away", W.agent_home);
	CHECK(stat("/tmp", &host_tmp) == 0, 100);
	CHECK(rename(W.agent_home, away) == 0, 101);
	CHECK(pam_start_confdir("sbxtest", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 102);
	r = pam_open_session(h, 0);
	rename(away, W.agent_home);
	CHECK(r == PAM_SESSION_ERR, 103);
	CHECK(pam_getenv(h, "AGENT_SANDBOX_SESSION") == NULL, 104);
	CHECK(ns_ino("mnt") == mnt_before, 105);	/* setns back */
	CHECK(stat("/tmp", &st) == 0 && st.st_dev == host_tmp.st_dev, 106);
	/* Our close after a failed open: nothing to do, PAM_IGNORE. (What the
	 * whole stack returns is Linux-PAM's business: 1.5.2 reports the
	 * failed open's verdict again, PAM_PERM_DENIED, seen here.) */
	{
		int (*close_s)(pam_handle_t *, int, int, const char **);
		void *so = dlopen(W.so, RTLD_NOW | RTLD_LOCAL);

		CHECK(so, 107);
		*(void **)&close_s = dlsym(so, "pam_sm_close_session");
		CHECK(close_s && close_s(h, 0, 0, NULL) == PAM_IGNORE, 108);
		CHECK(close_s(h, 0, 0, NULL) == PAM_IGNORE, 109);
	}
	pam_end(h, r);
	return 0;
}

static void test_open_failure_undone(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_open_fails, NULL)), 0);
	assert_no_records();
}

static int child_one_session(void *arg)
{
	pam_handle_t *h = NULL;

	(void)arg;
	CHECK(pam_start_confdir("sbxtest", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 60);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 61);
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 62);
	CHECK(pam_end(h, PAM_SUCCESS) == PAM_SUCCESS, 63);
	return 0;
}

static void test_concurrent_sessions(void **state)
{
	static char before[65536], after[65536];
	pid_t pids[50];
	char homes[256];
	struct dirent *de;
	unsigned n_homes = 0;
	size_t i;
	DIR *d;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	read_mountinfo(before, sizeof(before));
	/* Start from no home at all, so the 50 also race to create it. */
	snprintf(homes, sizeof(homes), "%s/homes/%s", W.state, W.agent);
	assert_true(strncmp(homes, "/run/sbx-test-", 14) == 0);
	sbx_test_rmtree(homes);
	assert_int_equal(access(homes, F_OK), -1);
	fflush(NULL);
	for (i = 0; i < ARRAY_SIZE(pids); i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(child_one_session(NULL));
	}
	for (i = 0; i < ARRAY_SIZE(pids); i++) {
		int status = 0;

		while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
			;
		assert_int_equal(sbx_test_status_code(status), 0);
	}
	read_mountinfo(after, sizeof(after));
	assert_string_equal(before, after);
	assert_no_records();
	snprintf(homes, sizeof(homes), "%s/homes", W.state);
	d = opendir(homes);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		assert_string_equal(de->d_name, W.agent);	/* no .new-* leftovers */
		n_homes++;
	}
	closedir(d);
	assert_int_equal(n_homes, 1);
}

static unsigned count_records(void)
{
	char path[256];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sessions", W.rt);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Until the keepers of sessions whose openers died have closed them
 * (bounded: one that connected no shell closes at once). */
static void wait_no_records(void)
{
	for (int i = 0; i < 100 && count_records() != 0; i++)
		usleep(50 * 1000);
	assert_int_equal(count_records(), 0);
}

static int child_twice(void *arg)
{
	pam_handle_t *h = NULL;
	unsigned long mnt_before = ns_ino("mnt"), net_before = ns_ino("net");
	char line[1024];
	int s;

	(void)arg;
	s = sbx_test_log_capture();
	CHECK(s >= 0, 90);
	CHECK(pam_start_confdir("sbxtest-twice", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS,
	      91);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 92);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 93);
	/* One session: one record, one new mount namespace (the positive
	 * control: the first line did open it); the second line's "netns"
	 * did nothing, though the profile denies the network and would
	 * have had one had that line opened a session of its own. */
	CHECK(count_records() == 1, 94);
	CHECK(ns_ino("mnt") != mnt_before, 95);
	CHECK(ns_ino("net") == net_before, 96);
	CHECK(sbx_test_log_has(s, "already opened by an earlier line", NULL, line, sizeof(line)),
	      97);
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 98);
	CHECK(count_records() == 0, 99);
	CHECK(pam_end(h, PAM_SUCCESS) == PAM_SUCCESS, 100);
	close(s);
	return 0;
}

/* The module named twice in one stack opens one session, and closes it. */
static void test_stack_names_module_twice(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_twice, NULL)), 0);
	assert_no_records();
}

/*
 * Root's ledger: what the session's first connection sends over the PAM
 * stage's channel becomes root's copy at the close (its last report that
 * names this session and uid; its refusal lines, re-written). Run twice:
 * an honest report is kept; one naming another session is not.
 */
struct ledger_case {
	bool honest;
	bool second_shell;	/* a second shell finds the slot taken */
	char id[SBX_SESSION_ID_HEX + 1];
};

/*
 * A second shell of the same PAM session: the channel's slot is taken, so
 * it says it refused itself on the refusals socket. Its line claims another
 * session, user and origin, and comes with a line that is not a refusal;
 * then the queue is filled with connections that say nothing a refusal is
 * made of, and the one after that is refused at once (never a wait).
 */
static int second_shell_refuses(void)
{
	static const char said[] =
		"event=refused stage=shell reason=ledger_channel session=forged user=forged "
		"origin=root msg=\"refusing the session\"\n"
		"event=session_end exit_status=0 ended=exit\n";
	static const char junk[] = "garbage\nevent=warning reason=x\n";
	int fd = -1, more[SBX_LEDGER_REFUSALS_BACKLOG + 1];

	if (sbx_ledger_channel_connect(W.rt, &fd) != -EAGAIN)
		return 20;
	if (sbx_ledger_refusals_connect(W.rt, &fd) != 0)
		return 21;
	if (sbx_ledger_channel_send(fd, said, strlen(said)) != 0)
		return 22;
	close(fd);
	for (int i = 0; i < SBX_LEDGER_REFUSALS_BACKLOG; i++) {
		if (sbx_ledger_refusals_connect(W.rt, &more[i]) != 0)
			return 23;
		if (sbx_ledger_channel_send(more[i], junk, strlen(junk)) != 0)
			return 24;
	}
	/* backlog + 1 pending: the next one is not admitted. */
	if (sbx_ledger_refusals_connect(W.rt, &fd) != -EAGAIN)
		return 25;
	for (int i = 0; i < SBX_LEDGER_REFUSALS_BACKLOG; i++)
		close(more[i]);
	return 0;
}

static int agent_sends(const struct ledger_case *lc)
{
	struct sbx_profile p;
	struct sbx_report *r = calloc(1, sizeof(*r));
	char *json = NULL;
	size_t len = 0;
	FILE *m;
	int fd = -1, second = -1;
	static const char refusal[] = "event=refused stage=gate reason=not_allowed "
				      "user=forged origin=root msg=\"no\"\n";

	if (!r || setresgid(W.agent_gid, W.agent_gid, W.agent_gid) != 0 ||
	    setresuid(W.agent_uid, W.agent_uid, W.agent_uid) != 0)
		return 1;
	if (sbx_ledger_channel_connect(W.rt, &fd) != 0)
		return 2;
	/* The one slot is this connection's. */
	if (sbx_ledger_channel_connect(W.rt, &second) != -EAGAIN)
		return 3;
	sbx_profile_init_default(&p);
	sbx_report_init(r, &p);
	if (lc->honest)
		sbx_strlcpy(r->session_id, sizeof(r->session_id), lc->id);
	else if (sbx_session_id_new(r->session_id, NULL) != 0)
		return 4;
	r->uid = W.agent_uid;
	sbx_strlcpy(r->user, sizeof(r->user), W.agent);
	r->exit_status = 7;
	m = open_memstream(&json, &len);
	if (!m || sbx_report_to_json(r, m) != 0 || fclose(m) != 0)
		return 5;
	if (sbx_ledger_channel_send(fd, json, len) != 0 ||
	    sbx_ledger_channel_send(fd, refusal, strlen(refusal)) != 0)
		return 6;
	free(json);
	free(r);
	close(fd);
	return lc->second_shell ? second_shell_refuses() : 0;
}

static int child_ledger(void *arg)
{
	struct ledger_case *lc = arg;
	pam_handle_t *h = NULL;
	const char *v;
	int st;
	pid_t pid;

	CHECK(pam_start_confdir("sbxtest", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 110);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 111);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 112);
	v = pam_getenv(h, "AGENT_SANDBOX_SESSION");
	CHECK(v && sbx_session_id_is_valid(v), 113);
	sbx_strlcpy(lc->id, sizeof(lc->id), v);
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		_exit(agent_sends(lc));
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, 114);
	if (sbx_test_status_code(st) != 0) {
		fprintf(stderr, "agent_sends: %d\n", sbx_test_status_code(st));
		return 115;
	}
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 116);
	CHECK(pam_end(h, PAM_SUCCESS) == PAM_SUCCESS, 117);
	/* The id for the parent, through a file: this is a forked child. */
	return 0;
}

static bool events_have(const char *a, const char *b, const char *c)
{
	char path[256], *buf = NULL, *save = NULL;
	size_t len = 0;
	bool found = false;

	snprintf(path, sizeof(path), "%s/ledger/events.log", W.state);
	if (sbx_read_file(path, 1 << 20, &buf, &len, NULL) != 0)
		return false;
	for (char *line = strtok_r(buf, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save))
		found = strstr(line, a) && (!b || strstr(line, b)) && (!c || strstr(line, c));
	free(buf);
	return found;
}

static void test_ledger_channel(void **state)
{
	struct ledger_case *lc = mmap(NULL, sizeof(*lc), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct sbx_error err = { 0 };
	char key[80], who[64], *buf = NULL;
	size_t len = 0;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_true(lc != MAP_FAILED);
	lc->honest = true;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_ledger, lc)), 0);
	assert_int_equal(sbx_ledger_read_report(W.state, lc->id, &buf, &len, &err), 0);
	assert_non_null(strstr(buf, lc->id));
	assert_non_null(strstr(buf, "\"exit_status\":7"));
	free(buf);
	buf = NULL;
	snprintf(key, sizeof(key), "session=%s", lc->id);
	assert_true(events_have("event=pam_close", key, "report=kept"));
	assert_true(events_have("exit_status=7", key, NULL));
	/* The shell's refusal line, re-written: its own origin= is replaced,
	 * and it is attributed to this session. */
	assert_true(events_have("stage=gate reason=not_allowed", key, "origin=shell"));
	assert_false(events_have("origin=root", NULL, NULL));
	/* ... and to this session's user, whatever the line said. */
	snprintf(who, sizeof(who), "user=%s ", W.agent);
	assert_true(events_have("event=refused", key, who));
	assert_false(events_have("user=forged", NULL, NULL));
	/* One shell: the close says so (the control of the case below). */
	assert_true(events_have("event=pam_close", key, "result=ok"));
	assert_false(events_have("refused_shells=", key, NULL));
	assert_false(events_have("reason=ledger_channel", key, NULL));

	/* A second shell that found the slot taken: its refusal reaches the
	 * ledger, as this session's and this user's, with its reason; the
	 * close counts it and says the session was not one clean run. The
	 * report kept is still the first shell's. */
	lc->second_shell = true;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_ledger, lc)), 0);
	snprintf(key, sizeof(key), "session=%s", lc->id);
	assert_true(events_have("event=refused", key, "stage=shell reason=ledger_channel"));
	assert_true(events_have("reason=ledger_channel", key, who));
	assert_true(events_have("reason=ledger_channel", key, "origin=shell"));
	assert_true(events_have("event=pam_close", key,
				"refused_shells=1 refused_reason=ledger_channel"));
	assert_true(events_have("event=pam_close", key, "report=kept"));
	assert_true(events_have("event=pam_close", key, "result=refused"));
	/* Nothing but refused lines from that socket; nothing forged. */
	assert_false(events_have("event=session_end", key, "exit_status=0"));
	assert_false(events_have("event=warning", key, "reason=x"));
	assert_false(events_have("user=forged", NULL, NULL));
	assert_false(events_have("session=forged", NULL, NULL));
	assert_false(events_have("origin=root", NULL, NULL));
	lc->second_shell = false;

	/* A report that names another session is not root's copy. */
	lc->honest = false;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_ledger, lc)), 0);
	assert_int_equal(sbx_ledger_read_report(W.state, lc->id, &buf, &len, &err), -ENOENT);
	snprintf(key, sizeof(key), "session=%s", lc->id);
	assert_true(events_have("event=pam_close", key, "report=invalid"));
	munmap(lc, sizeof(*lc));
	assert_no_records();
}

/*
 * max_sessions (4 for the scratch profile), end to end: eight logins race
 * for the four slots and exactly four get a session; a fifth account
 * phase is refused; two holders then die without closing (a crashed
 * sshd), and the next login gets in, the module removing their records.
 */
struct holder {
	pid_t pid;
	int to[2], from[2];	/* parent -> holder, holder -> parent */
	bool opened;		/* it said 'o': it holds a session */
};

static int hold_session(struct holder *me, int go)
{
	pam_handle_t *h = NULL;
	char c = 0;
	int r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive a failed test */
	if (read(go, &c, 1) != 0)
		return 70;
	if (pam_start_confdir("sbxtest-eph", W.agent, &conv, W.confdir, &h) != PAM_SUCCESS)
		return 71;
	r = pam_open_session(h, 0);
	c = (char)(r == PAM_SUCCESS ? 'o' : r == PAM_SESSION_ERR ? 'f' : '?');
	if (write(me->from[1], &c, 1) != 1)
		return 72;
	if (r != PAM_SUCCESS) {
		pam_end(h, r);
		return 0;
	}
	if (read(me->to[0], &c, 1) != 1)
		return 73;
	if (c == 'x')
		_exit(0);	/* dies holding the session */
	r = pam_close_session(h, 0);
	pam_end(h, r);
	return r == PAM_SUCCESS ? 0 : 74;
}

/* The session keeper the PAM stage left beside holder, or 0. */
static pid_t keeper_of(pid_t holder)
{
	char path[64], comm[32];
	pid_t kids[16];
	int n = sbx_test_children(holder, kids, (int)ARRAY_SIZE(kids));

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)kids[i]);
		read_small(path, comm, sizeof(comm));
		if (!strcmp(comm, "sbx-keeper\n"))
			return kids[i];
	}
	return 0;
}

static void test_max_sessions(void **state)
{
	struct holder hs[8];
	struct pollfd kpfd = { .events = POLLIN };
	unsigned open_n = 0, refused = 0;
	pid_t keeper;
	int go[2], kfd;
	size_t i;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	fflush(NULL);
	for (i = 0; i < ARRAY_SIZE(hs); i++) {
		assert_int_equal(pipe2(hs[i].to, O_CLOEXEC), 0);
		assert_int_equal(pipe2(hs[i].from, O_CLOEXEC), 0);
		hs[i].pid = fork();
		assert_true(hs[i].pid >= 0);
		if (hs[i].pid == 0) {
			close(go[1]);
			_exit(hold_session(&hs[i], go[0]));
		}
		close(hs[i].to[0]);
		close(hs[i].from[1]);
	}
	close(go[0]);
	close(go[1]);		/* all eight log in at once */
	for (i = 0; i < ARRAY_SIZE(hs); i++) {
		char c = 0;

		assert_int_equal(read(hs[i].from[0], &c, 1), 1);
		hs[i].opened = c == 'o';
		if (c == 'o')
			open_n++;
		else if (c == 'f')
			refused++;
		else
			fail_msg("holder %zu: pam_open_session gave an unexpected code", i);
	}
	assert_int_equal(open_n, 4);
	assert_int_equal(refused, 4);
	/* The account phase refuses the fifth early, naming the limit. */
	run_acct("sbxtest-eph", W.agent, PAM_PERM_DENIED, "4 sessions open",
		 "max_sessions is 4");
	/* Two session holders die without closing: the first alone (its
	 * keeper closes its session), the second with its keeper killed
	 * first (its record is left stale, for the next count). Who holds a
	 * session is
	 * what each said, not whether it has exited yet: a refused one may
	 * still be on its way out (ASan's leak check at exit takes a while),
	 * and was taken for a holder, told to die in its place, and only one
	 * stale record was left (a pause before a refused holder's exit
	 * failed this every time). The refused ones end by themselves. */
	for (i = 0, open_n = 0; i < ARRAY_SIZE(hs); i++) {
		int status = 0;

		if (!hs[i].opened) {
			assert_int_equal(waitpid(hs[i].pid, &status, 0), hs[i].pid);
			assert_int_equal(sbx_test_status_code(status), 0);
			hs[i].pid = 0;
			continue;
		}
		if (open_n >= 2)
			continue;
		keeper = keeper_of(hs[i].pid);
		assert_true(keeper > 0);
		kfd = (int)syscall(SYS_pidfd_open, keeper, 0);
		assert_true(kfd >= 0);
		if (open_n++ == 1) {
			assert_int_equal(kill(keeper, SIGKILL), 0);
			kpfd.fd = kfd;
			assert_int_equal(poll(&kpfd, 1, 5000), 1);
		}
		assert_int_equal(write(hs[i].to[1], "x", 1), 1);
		assert_int_equal(waitpid(hs[i].pid, &status, 0), hs[i].pid);
		assert_int_equal(sbx_test_status_code(status), 0);
		hs[i].pid = 0;
		/* The keeper ends once it has closed the session. */
		kpfd.fd = kfd;
		assert_int_equal(poll(&kpfd, 1, 5000), 1);
		close(kfd);
	}
	assert_int_equal(count_records(), 3);
	/* ...and their slots come back, the stale record removed. */
	run_acct("sbxtest-eph", W.agent, PAM_SUCCESS, "removed 1 stale session record(s)",
		 NULL);
	for (i = 0; i < ARRAY_SIZE(hs); i++) {
		int status = 0;

		if (hs[i].pid > 0) {
			assert_int_equal(write(hs[i].to[1], "c", 1), 1);
			assert_int_equal(waitpid(hs[i].pid, &status, 0), hs[i].pid);
			assert_int_equal(sbx_test_status_code(status), 0);
		}
		close(hs[i].to[1]);
		close(hs[i].from[0]);
	}
	assert_no_records();
}

/*
 * A fork chain: each member forks its successor and exits at once, so the
 * one live member is microseconds old whenever a /proc scan looks for it
 * (a reviewer saw one write "alive" 7 s after the close, 5 runs of 5, with
 * the pass loop alone). PR_SET_PDEATHSIG is no brake here (every member's
 * parent has just exited), so each member stops at a deadline or when the
 * test removes the flag file, and only a member alive at the deadline
 * writes "alive".
 */
#define CHAIN_DEADLINE_MS 2500	/* after the child starts; the close is at ~0.4 s */

struct chain {
	char dir[192], flag[224], alive[224];
	struct timespec end;	/* CLOCK_MONOTONIC */
	double close_at;	/* seconds after start, filled by the child */
	unsigned long forks;	/* members made so far (shared memory: every
				 * member counts its fork here) */
	unsigned long forks_at_close;
};

static unsigned long chain_forks(const struct chain *c)
{
	return __atomic_load_n(&c->forks, __ATOMIC_SEQ_CST);
}

static double ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(a->tv_sec - b->tv_sec) + (double)(a->tv_nsec - b->tv_nsec) / 1e9;
}

static __attribute__((noreturn)) void chain_run(struct chain *c)
{
	struct timespec now;
	int fd;

	for (;;) {
		pid_t p = fork();

		if (p > 0)
			_exit(0);
		if (p == 0)
			__atomic_add_fetch(&c->forks, 1, __ATOMIC_SEQ_CST);
		/* p < 0 (EAGAIN): this member stays and tries again. */
		if (access(c->flag, F_OK) != 0)
			_exit(0);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ts_diff(&now, &c->end) >= 0) {
			fd = open(c->alive, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
			if (fd >= 0) {
				(void)!write(fd, "alive\n", 6);
				close(fd);
			}
			_exit(0);
		}
	}
}

static int child_fork_chain(void *arg)
{
	struct chain *c = arg;
	struct timespec start, now;
	pam_handle_t *h = NULL;
	char want[128];
	pid_t starter;
	int wst, s;

	s = sbx_test_log_capture();
	CHECK(s >= 0, 119);
	clock_gettime(CLOCK_MONOTONIC, &start);
	CHECK(pam_start_confdir("sbxtest", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS, 120);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 121);
	starter = fork();
	if (starter == 0) {
		setsid();
		if (setgroups(0, NULL) != 0 ||
		    setresgid(W.agent_gid, W.agent_gid, W.agent_gid) != 0 ||
		    setresuid(W.agent_uid, W.agent_uid, W.agent_uid) != 0)
			_exit(70);
		chain_run(c);
	}
	CHECK(starter > 0, 122);
	CHECK(waitpid(starter, &wst, 0) == starter && WIFEXITED(wst) && WEXITSTATUS(wst) == 0,
	      123);
	/* Control: the chain runs (its count of members still grows; a /proc
	 * scan almost never catches the one live member). On a loaded machine
	 * its first fork can take a while: wait for it, bounded. */
	for (int i = 0; i < 100 && chain_forks(c) == 0; i++)
		usleep(50 * 1000);
	usleep(250 * 1000);
	{
		unsigned long before = chain_forks(c);

		usleep(50 * 1000);
		CHECK(chain_forks(c) > before, 124);
	}
	/* This is the account's last session. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	c->close_at = ts_diff(&now, &start);
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 125);
	c->forks_at_close = chain_forks(c);
	CHECK(pam_end(h, PAM_SUCCESS) == PAM_SUCCESS, 126);
	snprintf(want, sizeof(want), "; last session of the account: every process of uid %u ended",
		 (unsigned)W.agent_uid);
	CHECK(sbx_test_log_has(s, "closed after", want, NULL, 0), 127);
	return 0;
}

static void test_fork_chain_ended(void **state)
{
	struct chain *c;
	struct timespec t0, t1, back;
	struct stat st;
	int status, left = -1, later = 0, fd;
	unsigned long grew;
	bool alive;
	double gone_after = -1;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	/* Shared with the child: it fills close_at. */
	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(c != MAP_FAILED);
	snprintf(c->dir, sizeof(c->dir), "%s/chain", W.base);
	snprintf(c->flag, sizeof(c->flag), "%s/run", c->dir);
	snprintf(c->alive, sizeof(c->alive), "%s/alive", c->dir);
	assert_int_equal(mkdir_mode(c->dir, 0700), 0);
	assert_int_equal(chown(c->dir, W.agent_uid, W.agent_gid), 0);
	fd = open(c->flag, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c->end = t0;
	c->end.tv_sec += CHAIN_DEADLINE_MS / 1000;
	c->end.tv_nsec += (CHAIN_DEADLINE_MS % 1000) * 1000000L;
	if (c->end.tv_nsec >= 1000000000L) {
		c->end.tv_sec++;
		c->end.tv_nsec -= 1000000000L;
	}
	status = sbx_test_fork(false, child_fork_chain, c);
	/* After the close: every process of the uid ends within moments... */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	back = t1;
	do {
		left = sbx_test_procs_of(W.agent_uid, false);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (left == 0) {
			gone_after = ts_diff(&t1, &t0) - c->close_at;
			break;
		}
		usleep(10 * 1000);
	} while (ts_diff(&t1, &back) < 1.0);
	/* ... and none comes back until past the deadline. */
	while (ts_diff(&t1, &c->end) < 0.3) {
		int n = sbx_test_procs_of(W.agent_uid, false);

		later = n > later ? n : later;
		usleep(50 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	}
	alive = stat(c->alive, &st) == 0;
	/* Past the deadline: the chain made no member after the close (a
	 * few in flight while the kill landed at most). */
	grew = chain_forks(c) - c->forks_at_close;
	print_message("  close at %.2f s after %lu members; running agent processes after it: %d "
		      "(none from %.3f s after it); most seen later: %d; members made after it: %lu; "
		      "\"alive\" written: %s (deadline %.2f s after the close)\n",
		      c->close_at, c->forks_at_close, left, gone_after, later, grew,
		      alive ? "yes" : "no", CHAIN_DEADLINE_MS / 1000.0 - c->close_at);
	/* Cleanup before any assertion: stop the chain, end what is left
	 * (the throwaway account's processes are all this test's). */
	unlink(c->flag);
	usleep(20 * 1000);
	sbx_test_procs_of(W.agent_uid, true);
	sbx_test_rmtree(c->dir);
	munmap(c, sizeof(*c));
	assert_int_equal(sbx_test_status_code(status), 0);
	assert_int_equal(left, 0);
	assert_int_equal(later, 0);
	assert_true(grew <= 2);
	assert_false(alive);
	assert_no_records();
}

static void test_dlopen_exports(void **state)
{
	void *so;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();	/* W is filled only for root */
	so = dlopen(W.so, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		fail_msg("dlopen(%s): %s", W.so, dlerror());
	assert_non_null(dlsym(so, "pam_sm_open_session"));
	assert_non_null(dlsym(so, "pam_sm_close_session"));
	assert_non_null(dlsym(so, "pam_sm_acct_mgmt"));
	assert_null(dlsym(so, "pam_sm_authenticate"));
	assert_null(dlsym(so, "sbx_config_load"));
	assert_null(dlsym(so, "sbx_record_write"));
	assert_null(dlsym(so, "sbx_home_prepare_isolated"));
	dlclose(so);
}

/* The module's own verdict for a non-agent, without the stack around it. */
static int child_direct_ignore(void *arg)
{
	int (*acct)(pam_handle_t *, int, int, const char **);
	int (*open_s)(pam_handle_t *, int, int, const char **);
	int (*close_s)(pam_handle_t *, int, int, const char **);
	char conf[192], rt[192];
	const char *argv[2];
	pam_handle_t *h = NULL;
	unsigned long mnt = ns_ino("mnt");
	void *so;

	(void)arg;
	snprintf(conf, sizeof(conf), "conf=%s/conf/good.conf", W.base);
	snprintf(rt, sizeof(rt), "runtime_dir=%s", W.rt);
	argv[0] = conf;
	argv[1] = rt;
	so = dlopen(W.so, RTLD_NOW | RTLD_LOCAL);
	CHECK(so, 70);
	*(void **)&acct = dlsym(so, "pam_sm_acct_mgmt");
	*(void **)&open_s = dlsym(so, "pam_sm_open_session");
	*(void **)&close_s = dlsym(so, "pam_sm_close_session");
	CHECK(acct && open_s && close_s, 71);
	CHECK(pam_start_confdir("sbxtest", W.user, &conv, W.confdir, &h) == PAM_SUCCESS, 72);
	CHECK(acct(h, 0, 2, argv) == PAM_IGNORE, 73);
	CHECK(open_s(h, 0, 2, argv) == PAM_IGNORE, 74);
	CHECK(ns_ino("mnt") == mnt, 75);	/* nothing done for a non-agent */
	CHECK(close_s(h, 0, 2, argv) == PAM_IGNORE, 76);
	pam_end(h, PAM_SUCCESS);
	return 0;
}

/* conf/switch.conf: the agent's profile for user, the same size for
 * every user name of the same length, written in place. */
static int write_switch(const char *path, const char *user)
{
	char text[2 * PATH_MAX + 512];

	snprintf(text, sizeof(text),
		 "[global]\nstate_dir = %s\nagent_shell = %s\n\n"
		 "[profile coder]\nworkspace_root = %%h/work\nhome = isolated\n"
		 "services = sbxtest-switch\nmax_sessions = 64\n\n[match]\nuser %s = coder\n",
		 W.state, W.shell, user);
	return write_text(path, text, 0644);
}

/*
 * The session phase takes the account phase's decision only while the
 * config is what it read: the config rewritten in between (in place, the
 * same size, within the same second) is read and decided again, in both
 * directions. arg NULL: not an agent at the account phase, an agent at
 * the session phase (which must open the agent's session); otherwise the
 * other way round (which must do nothing).
 */
static int child_config_changed(void *arg)
{
	char path[192], other[SBX_NAME_MAX];
	bool to_agent = arg == NULL;
	pam_handle_t *h = NULL;
	unsigned long mnt = ns_ino("mnt");
	struct stat before, after;

	snprintf(path, sizeof(path), "%s/conf/switch.conf", W.base);
	/* Another account name of the same length: the file keeps its size. */
	snprintf(other, sizeof(other), "%s", W.agent);
	other[0] = other[0] == 'x' ? 'y' : 'x';
	CHECK(write_service("sbxtest-switch", "conf/switch.conf", true) == 0, 80);
	CHECK(write_switch(path, to_agent ? other : W.agent) == 0 && stat(path, &before) == 0, 81);
	CHECK(pam_start_confdir("sbxtest-switch", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS,
	      82);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 83);
	CHECK(write_switch(path, to_agent ? W.agent : other) == 0 && stat(path, &after) == 0, 84);
	CHECK(after.st_ino == before.st_ino && after.st_size == before.st_size, 85);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 86);
	if (to_agent) {
		CHECK(ns_ino("mnt") != mnt, 87);	/* the agent's session namespace */
		CHECK(pam_getenv(h, "AGENT_SANDBOX_SESSION") != NULL, 88);
	} else {
		CHECK(ns_ino("mnt") == mnt, 89);	/* nothing done for a non-agent */
		CHECK(pam_getenv(h, "AGENT_SANDBOX_SESSION") == NULL, 90);
	}
	CHECK(pam_close_session(h, 0) == PAM_SUCCESS, 91);
	pam_end(h, PAM_SUCCESS);
	return 0;
}

static void test_config_changed_between_phases(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_config_changed, NULL)),
			 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_config_changed, "")),
			 0);
	assert_no_records();
}

/*
 * The login path inside sshd's monitor makes one process, the session's
 * keeper, and no user namespace. The account phase runs under a filter
 * that kills the process for any fork, clone, clone3, vfork, setns or
 * unshare(CLONE_NEWUSER) (the kernel probe used to fork a child that made
 * every namespace type, in both phases). The session phase runs under the
 * same filter but for clone3, whose arguments a filter cannot read: what
 * it made is checked after, exactly one child, the keeper, in this user
 * namespace. The session still gets its mount and network namespaces
 * (unshare without CLONE_NEWUSER). It is never closed: the process ends
 * with it, and the keeper closes it then.
 */
static int child_acct_no_process(void *arg)
{
	pam_handle_t *h = NULL;

	(void)arg;
	CHECK(sbx_test_forbid_processes() == 0, 80);
	CHECK(pam_start_confdir("sbxtest-nofork", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS,
	      81);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 82);
	return 0;
}

static int child_login_no_process(void *arg)
{
	unsigned long mnt_before = ns_ino("mnt"), net_before = ns_ino("net");
	unsigned long user_before = ns_ino("user");
	pam_handle_t *h = NULL;
	char path[64], comm[32], ns[64] = "", want[64];
	pid_t kids[4];

	(void)arg;
	CHECK(sbx_test_children(getpid(), kids, (int)ARRAY_SIZE(kids)) == 0, 89);
	CHECK(sbx_test_forbid_processes_but_clone3() == 0, 90);
	CHECK(pam_start_confdir("sbxtest-nofork", W.agent, &conv, W.confdir, &h) == PAM_SUCCESS,
	      91);
	CHECK(pam_acct_mgmt(h, 0) == PAM_SUCCESS, 92);
	CHECK(pam_open_session(h, 0) == PAM_SUCCESS, 93);
	CHECK(ns_ino("mnt") != mnt_before && ns_ino("net") != net_before, 94);
	CHECK(sbx_test_children(getpid(), kids, (int)ARRAY_SIZE(kids)) == 1, 95);
	/* It names itself first thing; it may not have run yet. */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)kids[0]);
	for (int i = 0; i < 100; i++) {
		read_small(path, comm, sizeof(comm));
		if (!strcmp(comm, "sbx-keeper\n"))
			break;
		usleep(10 * 1000);
	}
	CHECK(!strcmp(comm, "sbx-keeper\n"), 96);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)kids[0]);
	snprintf(want, sizeof(want), "user:[%lu]", user_before);
	CHECK(readlink(path, ns, sizeof(ns) - 1) > 0, 97);
	ns[strlen(want)] = '\0';
	CHECK(!strcmp(ns, want), 98);
	return 0;
}

/* The control: the same filter catches the probe that forks. */
static int child_probe_forks(void *arg)
{
	const struct sbx_probe *p;

	(void)arg;
	CHECK(sbx_test_forbid_processes() == 0, 95);
	sbx_probe_set_for_tests(NULL);
	(void)sbx_probe_get(&p, NULL);
	return 96;	/* not reached: its child is a fork */
}

static void test_login_makes_no_process(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_acct_no_process, NULL)),
			 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_login_no_process, NULL)),
			 0);
	/* Its opener gone, the keeper closed the session. */
	wait_no_records();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_probe_forks, NULL)),
			 128 + SIGSYS);
}

static void test_non_agent_ignored(void **state)
{
	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_direct_ignore, NULL)),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_group),
		cmocka_unit_test(test_groups_only_when_needed),
		cmocka_unit_test(test_dlopen_exports),
		cmocka_unit_test(test_account_phase),
		cmocka_unit_test(test_login_makes_no_process),
		cmocka_unit_test(test_untrusted_config),
		cmocka_unit_test(test_non_agent_ignored),
		cmocka_unit_test(test_config_changed_between_phases),
		cmocka_unit_test(test_session_open_close),
		cmocka_unit_test(test_concurrent_sessions),
		cmocka_unit_test(test_ephemeral_netns),
		cmocka_unit_test(test_max_sessions),
		cmocka_unit_test(test_stack_names_module_twice),
		cmocka_unit_test(test_ledger_channel),
		cmocka_unit_test(test_fork_chain_ended),
		cmocka_unit_test(test_open_failure_undone),
	};
	return cmocka_run_group_tests_name("pam", tests, group_setup, group_teardown);
}
