/* SPDX-License-Identifier: BSD-3-Clause */
/* The sysadmin's verbs end to end: agent-shell --enroll/--unenroll, --doctor, and -f. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

/*
 * Real throwaway accounts and groups (names with this run's pid, removed
 * in the group teardown even when a test fails), a trusted config and
 * state dir under /run (root-owned all the way up, as the trust rules
 * need), private PAM stack directories and sshd configs under /tmp. The
 * machine's own /etc/pam.d and sshd configuration are never read by
 * these tests' doctor runs or changed.
 */
struct fx {
	char base[64];		/* /run/sbx-test-admin-XXXXXX: config, state, workspaces */
	char *tmp;		/* /tmp/sbx-test-admin-XXXXXX: PAM dirs, sshd configs */
	char config[128];
	char shell[PATH_MAX];	/* the testable agent-shell, run by the tests */
	char login[PATH_MAX];	/* the config's agent_shell: <base>/bin/agent-shell, the
				 * static launcher, which runs <base>/lib/agent-sandbox/
				 * agent-shell (a link to the testable one), as installed */
	char sshd[PATH_MAX];	/* "" when no sshd is installed */
	char group[32], group2[32];
	char user1[32], user2[32], user3[32];
};

static struct fx fx;

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
}

/* Run a tool with a fixed argv (useradd & co. in set-up and teardown). */
static int run_quiet(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int n = open("/dev/null", O_WRONLY);

		dup2(n, 1);
		dup2(n, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return sbx_test_status_code(status);
}

/* Run the testable agent-shell with argv (NULL-terminated, without
 * argv[0]) against the test config; collect stdout+stderr. drop: as the
 * unprivileged test uid. Returns the exit code. */
/* When set, run_shell's child sees the file run_bind_src over run_bind_dst
 * (a bind in a mount namespace of its own). */
static const char *run_bind_src, *run_bind_dst;

static int run_shell(bool drop, char **out, const char *const *args)
{
	char *argv[16];
	size_t n = 0, len = 0, cap = 65536;
	char *buf = calloc(1, cap);
	int fds[2], status;
	pid_t pid;

	assert_non_null(buf);
	argv[n++] = fx.shell;
	for (; *args && n < ARRAY_SIZE(argv) - 1; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[1]);
		setenv("SBX_TEST_CONFIG", fx.config, 1);
		if (run_bind_src &&
		    (unshare(CLONE_NEWNS) != 0 ||
		     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		     mount(run_bind_src, run_bind_dst, NULL, MS_BIND, NULL) != 0))
			_exit(125);
		if (drop)
			sbx_test_drop_to_agent();
		execv(fx.shell, argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], buf + len, cap - len - 1);

		if (r <= 0)
			break;
		len += (size_t)r;
		if (len + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*out = buf;
	return sbx_test_status_code(status);
}

#define RUN(drop, out, ...) run_shell(drop, out, (const char *const[]){ __VA_ARGS__, NULL })

static void assert_contains(const char *text, const char *needle)
{
	if (!strstr(text, needle)) {
		print_message("expected \"%s\" in:\n%s\n", needle, text);
		fail();
	}
}

/* A --doctor --json row: "area", "subject", "status" are printed in that order. */
static bool has_row(const char *json, const char *area, const char *subject, const char *status)
{
	char want[256];

	snprintf(want, sizeof(want), "{\"area\":\"%s\",\"subject\":\"%s\",\"status\":\"%s\"", area,
		 subject, status);
	return strstr(json, want) != NULL;
}

static void assert_row(const char *json, const char *area, const char *subject, const char *status)
{
	if (!has_row(json, area, subject, status)) {
		print_message("expected row %s/%s %s in:\n%s\n", area, subject, status, json);
		fail();
	}
}

static bool member_of(const char *user, const char *group)
{
	struct group *gr = getgrnam(group);

	for (char **m = gr ? gr->gr_mem : NULL; m && *m; m++) {
		if (!strcmp(*m, user))
			return true;
	}
	return false;
}

static char *file_text(const char *path)
{
	char *buf = NULL, *copy;
	size_t len = 0;
	int ret = sbx_read_file(path, 1 << 20, &buf, &len, NULL);

	assert_int_equal(ret, 0);
	copy = strndup(buf, len);
	free(buf);
	assert_non_null(copy);
	return copy;
}

/* Lines of /etc/subuid or /etc/subgid that give user subordinate ids. */
static unsigned subid_lines(const char *path, const char *user)
{
	char line[512];
	size_t n = strlen(user);
	unsigned count = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		count += !strncmp(line, user, n) && line[n] == ':';
	fclose(f);
	return count;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0;
}

/* The PAM stacks of a host that has the module where it belongs, written
 * the way Debian's are: @include, include and substack one or two levels
 * deep. */
static void write_pam_dir(const char *dir, bool with_module)
{
	static const char *const line_acct =
		"account [success=ok ignore=ignore default=die] pam_agent_sandbox.so\n";
	static const char *const line_sess =
		"session [success=ok ignore=ignore default=die] pam_agent_sandbox.so netns\n";
	char path[PATH_MAX], text[1024];

	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/common-account", dir);
	write_text(path, "account [success=1 new_authtok_reqd=done default=ignore] pam_unix.so\n"
			 "account requisite pam_deny.so\naccount required pam_permit.so\n");
	snprintf(path, sizeof(path), "%s/common-session", dir);
	write_text(path, "session required pam_unix.so\n-session optional pam_systemd.so\n");
	snprintf(text, sizeof(text), "# sshd\n%s@include common-account\n@include common-session\n%s",
		 with_module ? line_acct : "", with_module ? line_sess : "");
	snprintf(path, sizeof(path), "%s/sshd", dir);
	write_text(path, text);
	snprintf(text, sizeof(text), "%saccount include common-account\nsession substack common-session\n%s",
		 with_module ? line_acct : "", with_module ? "session required pam_agent_sandbox.so\n" : "");
	for (const char *const *s = (const char *const[]){ "login", "su", "runuser", NULL }; *s; s++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *s);
		write_text(path, text);
	}
	snprintf(path, sizeof(path), "%s/su-l", dir);
	write_text(path, "account include su\nsession include su\n");
	snprintf(path, sizeof(path), "%s/runuser-l", dir);
	write_text(path, "account include runuser\nsession include runuser\n");
	snprintf(text, sizeof(text), "%s@include common-account\n@include common-session\n",
		 with_module ? line_acct : "");
	for (const char *const *s = (const char *const[]){ "cron", "atd", "systemd-user", NULL }; *s; s++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *s);
		write_text(path, text);
	}
}

/* sshd configs: the shipped drop-in (its Match group renamed to the test
 * group) or nothing; each with its own host key, since sshd -T needs one. */
static void write_sshd_configs(void)
{
	char path[PATH_MAX], key[PATH_MAX], text[3 * PATH_MAX], *dropin;
	size_t cut;
	char *const keygen[] = { (char *)"/usr/bin/ssh-keygen", (char *)"-q", (char *)"-t",
				 (char *)"ed25519", (char *)"-N", (char *)"", (char *)"-f", key,
				 NULL };
	FILE *f;

	snprintf(key, sizeof(key), "%s/hostkey", fx.tmp);
	assert_int_equal(run_quiet(keygen), 0);
	dropin = file_text("etc/sshd_config.d/agent-sandbox.conf");
	assert_non_null(strstr(dropin, "\nMatch Group agents,reviewers"));
	cut = (size_t)(strstr(dropin, "\nMatch Group agents,reviewers") - dropin);
	snprintf(path, sizeof(path), "%s/dropin.conf", fx.tmp);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%.*s\nMatch Group %s%s", (int)cut, dropin, fx.group,
		dropin + cut + strlen("\nMatch Group agents,reviewers"));
	fclose(f);
	free(dropin);
	snprintf(text, sizeof(text),
		 "HostKey %s\nUsePAM yes\nSubsystem sftp /usr/lib/openssh/sftp-server\nInclude %s\n",
		 key, path);
	snprintf(path, sizeof(path), "%s/sshd-good.conf", fx.tmp);
	write_text(path, text);
	snprintf(text, sizeof(text), "HostKey %s\nUsePAM yes\nSubsystem sftp internal-sftp\n", key);
	snprintf(path, sizeof(path), "%s/sshd-bare.conf", fx.tmp);
	write_text(path, text);
}

static int group_teardown(void **state);

static int group_setup(void **state)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char path[PATH_MAX], text[4 * PATH_MAX];
	unsigned id = (unsigned)getpid() % 100000;

	(void)state;
	memset(&fx, 0, sizeof(fx));
	if (geteuid() != 0)
		return 0;
	sbx_test_cleanup_on_signal(group_teardown);
	snprintf(path, sizeof(path), "%s/tests/agent-shell-testable", build);
	if (!realpath(path, fx.shell))
		return -1;
	if (access("/usr/sbin/sshd", X_OK) == 0)
		snprintf(fx.sshd, sizeof(fx.sshd), "/usr/sbin/sshd");
	if (getenv("SBX_TEST_SSHD"))
		snprintf(fx.sshd, sizeof(fx.sshd), "%s", getenv("SBX_TEST_SSHD"));
	snprintf(fx.group, sizeof(fx.group), "sbxtg%u", id);
	snprintf(fx.group2, sizeof(fx.group2), "sbxth%u", id);
	snprintf(fx.user1, sizeof(fx.user1), "sbxta%u", id);
	snprintf(fx.user2, sizeof(fx.user2), "sbxtb%u", id);
	snprintf(fx.user3, sizeof(fx.user3), "sbxtc%u", id);
	snprintf(fx.base, sizeof(fx.base), "/run/sbx-test-admin-XXXXXX");
	if (!mkdtemp(fx.base) || chmod(fx.base, 0755) != 0)
		return -1;
	fx.tmp = sbx_test_mkdtemp("admin");
	{
		char dir[200], launcher[PATH_MAX];
		char *const cp[] = { (char *)"/bin/cp", launcher, fx.login, NULL };

		snprintf(launcher, sizeof(launcher), "%s/agent-shell-launcher", build);
		snprintf(dir, sizeof(dir), "%s/bin", fx.base);
		snprintf(fx.login, sizeof(fx.login), "%s/agent-shell", dir);
		if (mkdir(dir, 0755) != 0 || run_quiet(cp) != 0 || chmod(fx.login, 0755) != 0)
			return -1;
		snprintf(dir, sizeof(dir), "%s/lib", fx.base);
		if (mkdir(dir, 0755) != 0)
			return -1;
		snprintf(dir, sizeof(dir), "%s/lib/agent-sandbox", fx.base);
		if (mkdir(dir, 0755) != 0)
			return -1;
		snprintf(launcher, sizeof(launcher), "%s/agent-shell", dir);
		if (symlink(fx.shell, launcher) != 0)
			return -1;
	}
	snprintf(fx.config, sizeof(fx.config), "%s/agent-sandbox.conf", fx.base);
	snprintf(text, sizeof(text),
		 "[global]\nstate_dir = %s/state\nagent_shell = %s\n"
		 "[profile agent]\nworkspace_root = %s/ws/%%u\nhost_write = deny\nnetwork = deny\n"
		 "home = isolated\n"
		 "[profile other]\ninherit = agent\nworkspace_root = %s/other/%%u\n"
		 "[match]\ngroup %s = agent\n",
		 fx.base, fx.login, fx.base, fx.base, fx.group);
	write_text(fx.config, text);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (geteuid() != 0)
		return 0;
	for (const char *u = fx.user1; u; u = u == fx.user1 ? fx.user2 : u == fx.user2 ? fx.user3 : NULL) {
		if (getpwnam(u))
			run_quiet((char *const[]){ (char *)"/usr/sbin/userdel", (char *)"--remove",
						   (char *)u, NULL });
	}
	if (getgrnam(fx.group))
		run_quiet((char *const[]){ (char *)"/usr/sbin/groupdel", fx.group, NULL });
	if (getgrnam(fx.group2))
		run_quiet((char *const[]){ (char *)"/usr/sbin/groupdel", fx.group2, NULL });
	if (!strncmp(fx.base, "/run/sbx-test-admin-", 20))
		nftw(fx.base, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	sbx_test_rmtree(fx.tmp);
	free(fx.tmp);
	return 0;
}

/* Enrol a new account, enrol it again (nothing to do), unenrol it: every
 * change printed, made exactly, and the config never edited. */
static void test_enroll_unenroll(void **state)
{
	char *out = NULL, *before, *after, ws[PATH_MAX], home[PATH_MAX], want[2 * PATH_MAX + 64];
	struct passwd *pw;
	struct stat st;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	before = file_text(fx.config);
	assert_null(getgrnam(fx.group));
	assert_int_equal(RUN(false, &out, "--enroll", fx.user1), 0);
	snprintf(want, sizeof(want), "created group %s", fx.group);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "created account %s", fx.user1);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "added %s to group %s", fx.user1, fx.group);
	assert_contains(out, want);
	snprintf(ws, sizeof(ws), "%s/ws/%s", fx.base, fx.user1);
	snprintf(want, sizeof(want), "created workspace %s", ws);
	assert_contains(out, want);
	snprintf(home, sizeof(home), "%s/state/homes/%s", fx.base, fx.user1);
	snprintf(want, sizeof(want), "created isolated home %s", home);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "%s gets profile agent", fx.user1);
	assert_contains(out, want);
	free(out);

	pw = getpwnam(fx.user1);
	assert_non_null(pw);
	assert_string_equal(pw->pw_shell, fx.login);
	assert_true(member_of(fx.user1, fx.group));
	assert_int_equal(lstat(ws, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, getpwnam(fx.user1)->pw_uid);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(lstat(home, &st), 0);
	assert_int_equal(st.st_uid, getpwnam(fx.user1)->pw_uid);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* No subordinate ids (useradd's default adds 65536 where /etc/subuid
	 * exists, as on Debian 12). */
	assert_int_equal(subid_lines("/etc/subuid", fx.user1), 0);
	assert_int_equal(subid_lines("/etc/subgid", fx.user1), 0);

	/* Idempotent. */
	assert_int_equal(RUN(false, &out, "--enroll", fx.user1), 0);
	assert_contains(out, "nothing changed");
	assert_null(strstr(out, "created"));
	free(out);

	assert_int_equal(RUN(false, &out, "--unenroll", fx.user1), 0);
	snprintf(want, sizeof(want), "changed login shell of %s: %s -> /bin/bash", fx.user1, fx.login);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "removed %s from group %s", fx.user1, fx.group);
	assert_contains(out, want);
	assert_contains(out, "left in place");
	free(out);
	pw = getpwnam(fx.user1);
	assert_non_null(pw);	/* never deleted */
	assert_string_equal(pw->pw_shell, "/bin/bash");
	assert_false(member_of(fx.user1, fx.group));
	assert_int_equal(lstat(ws, &st), 0);	/* left in place */
	assert_int_equal(lstat(home, &st), 0);

	after = file_text(fx.config);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* A group no [match] rule names: the account is set up, and the line to
 * add is printed, not written. */
static void test_enroll_prints_match_line(void **state)
{
	char *out = NULL, *before, *after, want[128];

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	before = file_text(fx.config);
	assert_int_equal(RUN(false, &out, "--enroll", fx.user2, "--group", fx.group2, "--profile",
			     "other"), 0);
	assert_contains(out, "not yet matched");
	snprintf(want, sizeof(want), "  group %s = other", fx.group2);
	assert_contains(out, want);
	free(out);
	assert_true(member_of(fx.user2, fx.group2));
	after = file_text(fx.config);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

static void test_enroll_refusals(void **state)
{
	char *out = NULL;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	/* Not root: refused before anything is looked at. */
	assert_int_equal(RUN(true, &out, "--enroll", fx.user2), 1);
	assert_contains(out, "must run as root");
	free(out);
	assert_int_equal(RUN(true, &out, "--doctor"), 1);
	assert_contains(out, "must run as root");
	free(out);
	/* Names that are not one safe path component: usage errors. */
	assert_int_equal(RUN(false, &out, "--enroll", "../etc"), 2);
	free(out);
	assert_int_equal(RUN(false, &out, "--enroll", "-rf"), 2);
	free(out);
	assert_int_equal(RUN(false, &out, "--enroll"), 2);
	free(out);
	assert_int_equal(RUN(false, &out, "--enroll", fx.user2, "--workspace", "rel/dir"), 2);
	free(out);
	assert_int_equal(RUN(false, &out, "--doctor", "--bogus"), 2);
	free(out);
	/* root is never an agent; an unknown profile names itself. */
	assert_int_equal(RUN(false, &out, "--enroll", "root"), 1);
	assert_contains(out, "uid 0");
	free(out);
	assert_null(getpwnam("sbx-no-such-user-x"));
	assert_int_equal(RUN(false, &out, "--enroll", "sbx-no-such-user-x", "--profile", "nope"), 1);
	assert_contains(out, "no profile nope");
	free(out);
	assert_null(getpwnam("sbx-no-such-user-x"));	/* nothing created */
}

/* The doctor tests need the third account enrolled (the enrol tests may
 * have done it already). */
static void enroll_user3(void)
{
	char *out = NULL;

	if (!getpwnam(fx.user3)) {
		assert_int_equal(RUN(false, &out, "--enroll", fx.user3), 0);
		free(out);
	}
}

/* A unit directory holding the shipped user@.service drop-in, under dir. */
static void write_unit_dir(const char *dir, bool with_dropin)
{
	char path[PATH_MAX];
	char *dropin;

	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/user@.service.d", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	if (!with_dropin)
		return;
	dropin = file_text("etc/systemd/user@.service.d/agent-sandbox.conf");
	snprintf(path, sizeof(path), "%s/user@.service.d/agent-sandbox.conf", dir);
	write_text(path, dropin);
	free(dropin);
}

/* user@.service's ExecCondition: 1 (skip the user manager) for an agent
 * account, 0 for anyone else; 2 for a bad argument, which also skips. */
static void test_user_manager_condition(void **state)
{
	char *out = NULL, uid[32];
	struct passwd *pw;
	char *text;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	pw = getpwnam(fx.user3);
	assert_non_null(pw);
	snprintf(uid, sizeof(uid), "%u", (unsigned)pw->pw_uid);
	assert_int_equal(RUN(false, &out, "--user-manager", uid), 1);
	assert_contains(out, "is an agent account (profile agent): no user manager");
	free(out);
	/* Controls: root and nobody are not agents; their managers start. */
	assert_int_equal(RUN(false, &out, "--user-manager", "0"), 0);
	free(out);
	assert_int_equal(RUN(false, &out, "--user-manager", "65534"), 0);
	free(out);
	assert_int_equal(RUN(false, &out, "--user-manager", "x"), 2);
	free(out);
	assert_int_equal(RUN(false, &out, "--user-manager"), 2);
	free(out);
	/* An untrusted config: the answer falls back to facts outside it
	 * (this test's agent is in neither group agents nor has a shell named
	 * agent-shell), and says why. */
	text = file_text(fx.config);
	assert_int_equal(chmod(fx.config, 0666), 0);
	assert_int_equal(RUN(false, &out, "--user-manager", "65534"), 0);
	assert_contains(out, "unusable");
	free(out);
	assert_int_equal(chmod(fx.config, 0644), 0);
	free(text);
}

/* A good host: no FAIL, exit 0. Then the agent's shell is changed behind
 * the sandbox's back: FAIL on that account, exit 1. */
static void test_doctor_good_then_wrong_shell(void **state)
{
	char *out = NULL, pam[PATH_MAX], sshd_cfg[PATH_MAX], units[PATH_MAX];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-good", fx.tmp);
	write_pam_dir(pam, true);
	snprintf(sshd_cfg, sizeof(sshd_cfg), "%s/sshd-good.conf", fx.tmp);
	write_sshd_configs();
	snprintf(units, sizeof(units), "%s/units-good", fx.tmp);
	write_unit_dir(units, true);
	if (fx.sshd[0])
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", fx.sshd,
			   "--sshd-config", sshd_cfg, "--unit-dirs", units);
	else
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
			   "/nonexistent/sshd", "--unit-dirs", units);
	if (getenv("SBX_TEST_VERBOSE") || code != 0 || strstr(out, "\"status\":\"FAIL\""))
		fprintf(stderr, "%s\n", out);	/* print_message cuts at 1 KiB */
	assert_int_equal(code, 0);
	assert_null(strstr(out, "\"status\":\"FAIL\""));
	assert_row(out, "config", fx.config, "OK");
	assert_row(out, "accounts", fx.user3, "OK");
	/* Enrolment made homes/ 0711 (agents reach their own home by name):
	 * that is the expected mode, not a warning. */
	{
		char homes[PATH_MAX];
		struct stat st;

		snprintf(homes, sizeof(homes), "%s/state/homes", fx.base);
		assert_int_equal(stat(homes, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0711);
		assert_null(strstr(out, "homes is mode"));
	}
	for (const char *const *s = (const char *const[]){ "sshd", "login", "su", "su-l", "runuser",
							   "runuser-l", "cron", "atd",
							   "systemd-user", NULL }; *s; s++)
		assert_row(out, "pam", *s, "OK");
	if (fx.sshd[0])
		assert_row(out, "sshd", fx.user3, "OK");
	else
		print_message("[  NOTE    ] no sshd installed: the sshd rows are WARN (skipped)\n");
	/* No profile sets session limits: nothing to warn about. */
	assert_row(out, "kernel", "cgroup2", "OK");
	free(out);

	assert_int_equal(run_quiet((char *const[]){ (char *)"/usr/sbin/usermod", (char *)"-s",
						    (char *)"/bin/sh", fx.user3, NULL }), 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "accounts", fx.user3, "FAIL");
	assert_contains(out, "login shell /bin/sh is not agent_shell");
	free(out);
	/* The text table says the same, with the fix. */
	code = RUN(false, &out, "--doctor", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_contains(out, "fix: usermod -s");
	free(out);
	assert_int_equal(run_quiet((char *const[]){ (char *)"/usr/sbin/usermod", (char *)"-s",
						    fx.login, fx.user3, NULL }), 0);
}

/* A profile with memory_max: the doctor says whether this host can hold
 * it, judged here independently (systemd, and the three controllers in the
 * cgroup v2 root). On the development machines (no systemd, memory and
 * pids on cgroup v1) that is a WARN naming the reason. */
static void test_doctor_session_limits(void **state)
{
	char *out = NULL, *text, *edited, *at, pam[PATH_MAX];
	const char *key = "[profile other]\ninherit = agent\n";
	bool can = false;
	struct stat st;
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	if (stat("/run/systemd/system", &st) == 0) {
		char *ctl = NULL;
		size_t len;

		if (sbx_read_file("/sys/fs/cgroup/cgroup.controllers", 4096, &ctl, &len, NULL) == 0) {
			can = strstr(ctl, "memory") && strstr(ctl, "pids") && strstr(ctl, "cpu");
			free(ctl);
		}
	}
	snprintf(pam, sizeof(pam), "%s/pam-limits", fx.tmp);
	write_pam_dir(pam, true);
	text = file_text(fx.config);
	at = strstr(text, key);
	assert_non_null(at);
	edited = malloc(strlen(text) + 32);
	assert_non_null(edited);
	snprintf(edited, strlen(text) + 32, "%.*smemory_max = 1G\n%s", (int)(at - text + strlen(key)),
		 text, at + strlen(key));
	write_text(fx.config, edited);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	write_text(fx.config, text);
	assert_int_equal(code, 0);
	assert_row(out, "kernel", "cgroup2", can ? "OK" : "WARN");
	if (!can)
		assert_contains(out, "a profile sets memory_max, pids_max or cpu_max");
	free(out);
	free(edited);
	free(text);
}

/*
 * fs.suid_dumpable: the host's own value gives OK (0 or 2) or, with 1, a
 * WARN unless Yama's ptrace_scope is 1 or more, both read here on their
 * own. Then 1 seen through a bind in the doctor's mount namespace: the
 * same judgement with the fix named.
 */
static bool dumpable_warns(const char *value)
{
	char *ys = NULL;
	size_t len;
	bool yama = sbx_read_file("/proc/sys/kernel/yama/ptrace_scope", 64, &ys, &len, NULL) == 0;
	bool scoped = yama && ys[0] >= '1' && ys[0] <= '3';

	free(ys);
	return value[0] == '1' && !scoped;
}

static void test_doctor_suid_dumpable(void **state)
{
	char *out = NULL, *host = NULL, pam[PATH_MAX], one[PATH_MAX];
	size_t len;
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-dumpable", fx.tmp);
	write_pam_dir(pam, true);
	assert_int_equal(sbx_read_file("/proc/sys/fs/suid_dumpable", 64, &host, &len, NULL), 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 0);
	assert_row(out, "kernel", "suid_dumpable", dumpable_warns(host) ? "WARN" : "OK");
	free(out);
	free(host);

	snprintf(one, sizeof(one), "%s/suid_dumpable", fx.tmp);
	write_text(one, "1\n");
	run_bind_src = one;
	run_bind_dst = "/proc/sys/fs/suid_dumpable";
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	run_bind_src = NULL;
	unlink(one);
	assert_int_equal(code, 0);	/* a warning: the sandbox itself is not open */
	if (dumpable_warns("1")) {
		assert_row(out, "kernel", "suid_dumpable", "WARN");
		assert_contains(out, "fs.suid_dumpable=1 and ");
		assert_contains(out, "a root process that changes to an agent's uid without exec");
		assert_contains(out, "\"fix\":\"sysctl fs.suid_dumpable=0 (the default), or "
				     "kernel.yama.ptrace_scope=1\"");
	} else {
		assert_row(out, "kernel", "suid_dumpable", "OK");
		assert_contains(out, "fs.suid_dumpable=1, but Yama's ptrace_scope=");
	}
	free(out);
}

/* Subordinate ids of an agent: a WARN naming each range and the usermod
 * that removes them; gone once that runs. Enrolment gives a new account
 * none (test_enroll_unenroll). */
static void test_doctor_subids(void **state)
{
	char *out = NULL, pam[PATH_MAX], want[2 * PATH_MAX + 512], uids[32], gids[32];
	unsigned base = 3000000 + ((unsigned)getpid() % 1000) * 70000;
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-subids", fx.tmp);
	write_pam_dir(pam, true);
	assert_int_equal(subid_lines("/etc/subuid", fx.user3), 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 0);
	assert_null(strstr(out, "subordinate ids"));
	free(out);

	snprintf(uids, sizeof(uids), "%u-%u", base, base + 65535);
	snprintf(gids, sizeof(gids), "%u-%u", base, base + 999);
	assert_int_equal(run_quiet((char *const[]){ (char *)"/usr/sbin/usermod", (char *)"--add-subuids",
						    uids, (char *)"--add-subgids", gids, fx.user3,
						    NULL }), 0);
	assert_int_equal(subid_lines("/etc/subuid", fx.user3), 1);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 0);	/* a warning: the sandbox itself is not open */
	assert_row(out, "accounts", fx.user3, "WARN");
	snprintf(want, sizeof(want), "subordinate ids (/etc/subuid: %s; /etc/subgid: %s)", uids, gids);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "\"fix\":\"usermod --del-subuids %s --del-subgids %s %s\"", uids,
		 gids, fx.user3);
	assert_contains(out, want);
	free(out);

	/* The fix as printed. */
	assert_int_equal(run_quiet((char *const[]){ (char *)"/usr/sbin/usermod", (char *)"--del-subuids",
						    uids, (char *)"--del-subgids", gids, fx.user3,
						    NULL }), 0);
	assert_int_equal(subid_lines("/etc/subuid", fx.user3) + subid_lines("/etc/subgid", fx.user3),
			 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 0);
	assert_null(strstr(out, "subordinate ids"));
	free(out);

	/* Every spelling newuidmap takes (test build: other files than the
	 * host's): the owner as a uid, a hex start, a line longer than any
	 * fixed buffer, an octal start; other owners' lines are not the
	 * agent's. */
	{
		char su[PATH_MAX], sg[PATH_MAX], *text;
		size_t len = 0, cap = 8192;
		struct passwd *pw = getpwnam(fx.user3);

		assert_non_null(pw);
		text = malloc(cap);
		assert_non_null(text);
		len += (size_t)snprintf(text + len, cap - len, "%u:0x2dc6c0:65536\n%s:",
					(unsigned)pw->pw_uid, fx.user3);
		memset(text + len, ' ', 600);
		len += 600;
		snprintf(text + len, cap - len, "4000000:10\n%s:017000000:1\nroot:5000000:65536\n"
			 "%s:6000000:0\n%sx:7000000:1\n%s:8000000:5:more\n%s:0:0\n", fx.user3,
			 fx.user3, fx.user3, fx.user3, fx.user3);
		snprintf(su, sizeof(su), "%s/subuid", fx.tmp);
		snprintf(sg, sizeof(sg), "%s/subgid", fx.tmp);
		write_text(su, text);
		write_text(sg, "root:100000:65536\n");
		setenv("SBX_TEST_SUBUID", su, 1);
		setenv("SBX_TEST_SUBGID", sg, 1);
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
			   "/nonexistent/sshd");
		assert_int_equal(code, 0);
		/* A fourth field is ignored, a count of 0 from 0 wraps to every
		 * id, one that ends below its start holds none (shadow's rules). */
		snprintf(want, sizeof(want), "subordinate ids (%s: 3000000-3065535, 4000000-4000009, "
			 "3932160-3932160, 8000000-8000004, 0-%lu; %s: none)", su, ULONG_MAX, sg);
		assert_contains(out, want);
		/* usermod removes only lines that name the owner, and reads no
		 * number past LLONG_MAX: not a usermod, then. */
		snprintf(want, sizeof(want), "\"fix\":\"edit %s and %s: remove each line that "
			 "gives %s ids", su, sg, fx.user3);
		assert_contains(out, want);
		free(out);

		/* All by name and in range: the exact usermod. */
		snprintf(text, cap, "%s:0x2dc6c0:65536\n%s:4000000:10:x\n", fx.user3, fx.user3);
		write_text(su, text);
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
			   "/nonexistent/sshd");
		assert_int_equal(code, 0);
		snprintf(want, sizeof(want), "\"fix\":\"usermod --del-subuids 3000000-3065535 "
			 "--del-subuids 4000000-4000009 %s\"", fx.user3);
		assert_contains(out, want);
		free(out);

		/* More ranges than a fix line holds: no cut command (it would
		 * remove part), the general one instead. */
		len = 0;
		for (unsigned i = 0; i < 40; i++)
			len += (size_t)snprintf(text + len, cap - len, "%s:%u:65536\n", fx.user3,
						10000000 + i * 65536);
		write_text(su, text);
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
			   "/nonexistent/sshd");
		assert_int_equal(code, 0);
		snprintf(want, sizeof(want), "\"fix\":\"usermod --del-subuids FIRST-LAST "
			 "--del-subgids FIRST-LAST %s, for each range in %s and %s\"", fx.user3, su, sg);
		assert_contains(out, want);
		free(out);
		unsetenv("SBX_TEST_SUBUID");
		unsetenv("SBX_TEST_SUBGID");
		free(text);
	}
}

/* What breaks every session, caught before: a config only root can read
 * (agent-shell reads it as the agent), and an agent_shell that is not
 * agent-shell (the PAM module would let agents log in with it). */
static void test_doctor_config_breakers(void **state)
{
	char *out = NULL, *text, *edited, *at, pam[PATH_MAX], want[PATH_MAX + 128];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-breakers", fx.tmp);
	write_pam_dir(pam, true);
	/* Control: 0644, no such row. */
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_null(strstr(out, "agents cannot read it"));
	assert_row(out, "config", "agent_shell", "OK");
	free(out);
	/* 0640 with group root, which holds no agent: a FAIL, and
	 * --check-config fails it too, naming the file and the fix. */
	assert_int_equal(chmod(fx.config, 0640), 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "config", fx.config, "FAIL");
	assert_contains(out, "mode 0640, group root: agents cannot read it, and agent-shell reads "
			"the config as the agent: every agent session (and every --run) is refused");
	free(out);
	code = RUN(false, &out, "--check-config");
	assert_int_equal(code, 1);
	snprintf(want, sizeof(want), "%s: mode 0640, group root: agents cannot read it", fx.config);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "fix: chmod o+r %s\n", fx.config);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "%s: FAIL: trusted and parsed", fx.config);
	assert_contains(out, want);
	free(out);
	/* Group-readable by the group every agent is in (the config's only
	 * [match] rule names it): no such row, and --check-config passes. */
	assert_int_equal(chown(fx.config, 0, getgrnam(fx.group)->gr_gid), 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_null(strstr(out, "agents cannot read it"));
	free(out);
	code = RUN(false, &out, "--check-config");
	assert_int_equal(code, 0);
	free(out);
	assert_int_equal(chown(fx.config, 0, 0), 0);
	assert_int_equal(chmod(fx.config, 0644), 0);
	/* agent_shell = /bin/bash: a FAIL, as the accounts' shell then is. */
	text = file_text(fx.config);
	at = strstr(text, "agent_shell = ");
	assert_non_null(at);
	edited = malloc(strlen(text) + 32);
	assert_non_null(edited);
	snprintf(edited, strlen(text) + 32, "%.*sagent_shell = /bin/bash%s", (int)(at - text), text,
		 strchr(at, '\n'));
	write_text(fx.config, edited);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	write_text(fx.config, text);
	assert_int_equal(code, 1);
	assert_row(out, "config", "agent_shell", "FAIL");
	assert_contains(out, "/bin/bash is not agent-shell");
	free(out);
	free(edited);
	/* agent-shell proper, dynamically linked, as the login shell: the
	 * session's LD_PRELOAD would reach its loader. A FAIL; the launcher
	 * the config names otherwise is OK (the control above). */
	edited = malloc(strlen(text) + PATH_MAX);
	assert_non_null(edited);
	snprintf(edited, strlen(text) + PATH_MAX, "%.*sagent_shell = %s%s", (int)(at - text), text,
		 fx.shell, strchr(at, '\n'));
	write_text(fx.config, edited);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	write_text(fx.config, text);
	assert_int_equal(code, 1);
	assert_row(out, "config", "agent_shell", "FAIL");
	assert_contains(out, "is dynamically linked");
	free(out);
	free(edited);
	/* A profile root rw that the ceiling leaves read-only: a WARN naming
	 * it; a root the ceiling lets it write is not named (the control). */
	{
		char ro[128], rw[128];
		const char *sec = strstr(text, "[profile agent]\n");

		assert_non_null(sec);
		snprintf(ro, sizeof(ro), "%s/ceil-ro", fx.base);
		snprintf(rw, sizeof(rw), "%s/ceil-rw", fx.base);
		assert_true(mkdir(ro, 0755) == 0 || errno == EEXIST);
		assert_true(mkdir(rw, 0755) == 0 || errno == EEXIST);
		edited = malloc(strlen(text) + 1024);
		assert_non_null(edited);
		snprintf(edited, strlen(text) + 1024,
			 "%.*s[profile agent]\nroot = %s rw\nroot = %s rw\n%s"
			 "[ceiling]\nhost_write = deny\nroot = %s rw\n",
			 (int)(sec - text), text, ro, rw, sec + strlen("[profile agent]\n"), rw);
		write_text(fx.config, edited);
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
			   "/nonexistent/sshd");
		write_text(fx.config, text);
		snprintf(want, sizeof(want), "profile agent: root %s rw is read-only in the session", ro);
		assert_contains(out, want);
		snprintf(want, sizeof(want), "root %s rw is", rw);
		assert_null(strstr(out, want));
		free(out);
		free(edited);
	}
	free(text);
}

/* A config that matches nobody yet (as shipped), in a directory of its
 * own: its [ceiling] has a root that does not exist and one that does. */
static void write_noagent_config(char *conf, size_t size, char *gone, size_t gsize, char *here,
				 size_t hsize)
{
	char dir[128], text[2 * PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/noagent", fx.base);
	if (mkdir(dir, 0755) != 0)
		assert_int_equal(errno, EEXIST);
	snprintf(conf, size, "%s/agent-sandbox.conf", dir);
	snprintf(gone, gsize, "%s/no-such-root", dir);
	snprintf(here, hsize, "%s/root-here", dir);
	if (mkdir(here, 0755) != 0)
		assert_int_equal(errno, EEXIST);
	snprintf(text, sizeof(text),
		 "[global]\nstate_dir = %s/state\nagent_shell = %s\n"
		 "[ceiling]\nhost_write = deny\nroot = %s rw\nroot = %s ro\n"
		 "[profile p]\nworkspace_root = %s/ws/%%u\n",
		 fx.base, fx.login, gone, here, fx.base);
	write_text(conf, text);
}

/* A [ceiling] root that does not exist: a warning of --check-config (exit
 * 0) and a WARN row of the doctor, each naming it and what sessions do
 * with it; the root that exists is not named (the control). */
static void test_missing_roots_named(void **state)
{
	char *out = NULL, conf[160], gone[160], here[160], want[PATH_MAX + 128], pam[PATH_MAX];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	snprintf(pam, sizeof(pam), "%s/pam-roots", fx.tmp);
	write_pam_dir(pam, true);
	write_noagent_config(conf, sizeof(conf), gone, sizeof(gone), here, sizeof(here));
	code = RUN(false, &out, "--check-config", "-f", conf);
	assert_int_equal(code, 0);
	snprintf(want, sizeof(want), "%s: OK (1 profile(s), 0 match rule(s), 0 drop-in(s))", conf);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "  warning: [ceiling] root %s rw: No such file or directory: "
		 "sessions leave it out (their report says \"%s (missing)\"); create it "
		 "(install -d %s) or remove the line\n", gone, gone, gone);
	assert_contains(out, want);
	assert_null(strstr(out, here));
	free(out);
	code = RUN(false, &out, "--doctor", "--json", "-f", conf, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_row(out, "paths", "[ceiling]", "WARN");
	snprintf(want, sizeof(want), "root %s rw: No such file or directory: sessions leave it out",
		 gone);
	assert_contains(out, want);
	assert_null(strstr(out, here));
	free(out);
}

/*
 * A config that matches nobody yet (as shipped) and only root can read:
 * both checks fail it, though no agent is enrolled, naming the file and
 * the fix; readable, neither does (the control, test_missing_roots_named).
 */
static void test_config_unreadable_without_agents(void **state)
{
	char *out = NULL, conf[160], dir[160], gone[160], here[160], want[PATH_MAX + 128];
	char pam[PATH_MAX];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	snprintf(pam, sizeof(pam), "%s/pam-noagent", fx.tmp);
	write_pam_dir(pam, true);
	write_noagent_config(conf, sizeof(conf), gone, sizeof(gone), here, sizeof(here));
	assert_int_equal(chmod(conf, 0600), 0);
	code = RUN(false, &out, "--check-config", "-f", conf);
	assert_int_equal(code, 1);
	snprintf(want, sizeof(want), "%s: mode 0600, group root: agents cannot read it, and "
		 "agent-shell reads the config as the agent: every agent session (and every --run) "
		 "is refused (Permission denied, exit 126); fix: chmod o+r %s\n", conf, conf);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "%s: FAIL: trusted and parsed (1 profile(s), 0 match rule(s), "
		 "0 drop-in(s)), but the agents cannot read 1 of its files or directories", conf);
	assert_contains(out, want);
	assert_null(strstr(out, ": OK ("));
	free(out);
	code = RUN(false, &out, "--doctor", "--json", "-f", conf, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "config", conf, "FAIL");
	assert_contains(out, "no agent accounts");
	free(out);
	assert_int_equal(chmod(conf, 0644), 0);
	code = RUN(false, &out, "--doctor", "--json", "-f", conf, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_null(strstr(out, "agents cannot"));
	free(out);
	/* A directory above it the agents cannot search: the same. */
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(conf, '/') - conf), conf);
	assert_int_equal(chmod(dir, 0750), 0);
	code = RUN(false, &out, "--check-config", "-f", conf);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(code, 1);
	snprintf(want, sizeof(want), "%s: mode 0750, group root: agents cannot reach the config "
		 "through it", dir);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "fix: chmod o+x %s\n", dir);
	assert_contains(out, want);
	free(out);
}

/* A candidate config in its own trusted directory, with a conf.d drop-in
 * that gives user3 profile "other" (the live config gives it "agent"). */
static void write_candidate(char *main_path, size_t size, char *dropin, size_t dsize)
{
	char dir[128], text[4096], *live = file_text(fx.config), *match;

	snprintf(dir, sizeof(dir), "%s/cand", fx.base);
	if (mkdir(dir, 0755) != 0)
		assert_int_equal(errno, EEXIST);
	snprintf(main_path, size, "%s/cand.conf", dir);
	/* The live text without its [match] section: nothing matches. */
	match = strstr(live, "[match]");
	assert_non_null(match);
	*match = '\0';
	write_text(main_path, live);
	free(live);
	snprintf(text, sizeof(text), "%s/conf.d", dir);
	if (mkdir(text, 0755) != 0)
		assert_int_equal(errno, EEXIST);
	snprintf(dropin, dsize, "%s/conf.d/50-local.conf", dir);
	snprintf(text, sizeof(text), "[match]\nuser %s = other\n", fx.user3);
	write_text(dropin, text);
}

/*
 * The NSS services that answer group rules: local ones give OK, any other
 * (sss, ldap, winbind, compat with NIS lines) a WARN naming it, from the
 * group and initgroups lines only (comments, actions and other databases
 * left out). Each nsswitch.conf is bound over the host's in the doctor's
 * own mount namespace. A config with user rules only looks nothing up.
 */
static char *doctor_with_nsswitch(const char *text, const char *pam, const char *config)
{
	char path[PATH_MAX], *out = NULL;
	int code;

	snprintf(path, sizeof(path), "%s/nsswitch.conf", fx.tmp);
	write_text(path, text);
	run_bind_src = path;
	run_bind_dst = "/etc/nsswitch.conf";
	if (config)
		code = RUN(false, &out, "--doctor", "--json", "-f", config, "--pam-dir", pam,
			   "--sshd", "/nonexistent/sshd");
	else
		code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
			   "/nonexistent/sshd");
	run_bind_src = NULL;
	unlink(path);
	assert_int_equal(code, 0);	/* a warning: the sandbox itself is not open */
	return out;
}

/* A secret (the built-in /etc/ssh) bound elsewhere, in the doctor's own
 * mount namespace: a paths row names the other mount and the fix; the
 * control without the bind has no such row. */
static void test_doctor_secret_mounts(void **state)
{
	char *out, pam[PATH_MAX], alias[PATH_MAX], want[PATH_MAX + 128];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-mounts", fx.tmp);
	write_pam_dir(pam, true);
	snprintf(alias, sizeof(alias), "%s/ssh-alias", fx.tmp);
	assert_int_equal(mkdir(alias, 0755), 0);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_true(code == 0 || code == 1);
	assert_null(strstr(out, "also shows through another mount"));
	free(out);
	run_bind_src = "/etc/ssh";
	run_bind_dst = alias;
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	run_bind_src = NULL;
	assert_true(code == 0 || code == 1);
	snprintf(want, sizeof(want), "a secret also shows through another mount at %s: sessions "
		 "that see it there report deny_read not verified", alias);
	assert_contains(out, want);
	assert_contains(out, "\"fix\":\"add each path to deny_read, or remove the mount\"");
	assert_row(out, "paths", fx.user3, "WARN");
	free(out);
	assert_int_equal(rmdir(alias), 0);
}

static void test_doctor_nss_groups(void **state)
{
	char *out, pam[PATH_MAX], cand[PATH_MAX], dropin[PATH_MAX];

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-nss", fx.tmp);
	write_pam_dir(pam, true);

	/* Control: local services only, the test config's group rule. */
	out = doctor_with_nsswitch("passwd: files\ngroup: files systemd\ninitgroups: files\n",
				   pam, NULL);
	assert_row(out, "accounts", "nsswitch group", "OK");
	assert_contains(out, "the group rules are answered by local services only");
	free(out);

	out = doctor_with_nsswitch("passwd: files sss\n"
				   "group:  files [NOTFOUND=return] sss # ldap\n"
				   "netgroup: nis\n", pam, NULL);
	assert_row(out, "accounts", "nsswitch group", "WARN");
	assert_contains(out, "group rules are answered through sss (/etc/nsswitch.conf)");
	assert_contains(out, "getgrouplist does not report a service that fails");
	assert_contains(out, "\"fix\":\"name agents by [match] user rules");
	free(out);

	/* getgrouplist reads initgroups when it is there. */
	out = doctor_with_nsswitch("passwd: files\ngroup: files\ninitgroups: files ldap winbind\n",
				   pam, NULL);
	assert_row(out, "accounts", "nsswitch group", "WARN");
	assert_contains(out, "answered through ldap, winbind (");
	free(out);

	/* No group rules: nothing is looked up, whatever answers groups. */
	write_candidate(cand, sizeof(cand), dropin, sizeof(dropin));
	out = doctor_with_nsswitch("passwd: files\ngroup: files sss\n", pam, cand);
	assert_row(out, "accounts", "nsswitch group", "OK");
	assert_contains(out, "no [match] group rules");
	free(out);
}

/* -f FILE: --check-config, --explain and --doctor read a candidate and
 * its conf.d under the live config's trust rules; sessions refuse -f. */
static void test_candidate_config(void **state)
{
	char *out = NULL, cand[PATH_MAX], dropin[PATH_MAX], want[PATH_MAX + 64], pam[PATH_MAX];
	char untrusted[PATH_MAX];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	write_candidate(cand, sizeof(cand), dropin, sizeof(dropin));
	snprintf(pam, sizeof(pam), "%s/pam-candidate", fx.tmp);
	write_pam_dir(pam, true);

	/* Controls: the candidate and its drop-in check out, and --explain
	 * answers from it, not from the live config. */
	code = RUN(false, &out, "--check-config", "-f", cand);
	assert_int_equal(code, 0);
	snprintf(want, sizeof(want), "%s: OK (2 profile(s), 1 match rule(s), 1 drop-in(s))", cand);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "  drop-in %s\n", dropin);
	assert_contains(out, want);
	assert_null(strstr(out, "network = proxy is not wired"));
	free(out);
	/* A proxy profile is accepted, and said to reach nothing yet. */
	{
		char px[PATH_MAX + 16], *slash;
		FILE *f;

		snprintf(px, sizeof(px), "%s", dropin);
		slash = strrchr(px, '/');
		assert_non_null(slash);
		snprintf(slash + 1, sizeof(px) - (size_t)(slash + 1 - px), "zz-proxy.conf");
		f = fopen(px, "w");
		assert_non_null(f);
		fputs("[profile px]\nworkspace_root = /srv/px/%u\nnetwork = proxy\n"
		      "egress_allow = pypi.org\n", f);
		assert_int_equal(fclose(f), 0);
		assert_int_equal(chmod(px, 0644), 0);
		code = RUN(false, &out, "--check-config", "-f", cand);
		assert_int_equal(code, 0);
		/* No daemon listens at the default socket here. */
		assert_contains(out, "note: profile px: network = proxy, 1 destination(s) through "
				"agent-sandbox-egressd at /run/agent-sandbox/egress.sock: not reachable "
				"now: such sessions reach only their private loopback");
		free(out);
		assert_int_equal(unlink(px), 0);
	}
	/* The candidate's workspace does not exist yet: the profile, and
	 * the refusal every session would get (the mount view opens it). */
	code = RUN(false, &out, "--explain", fx.user3, "--config", cand);
	assert_int_equal(code, 1);
	snprintf(want, sizeof(want), "workspace_root   %s/other/%s\n", fx.base, fx.user3);
	assert_contains(out, want);
	snprintf(want, sizeof(want), "every session would be refused: profile %s: workspace %s/other/%s: "
		 "No such file or directory", "other", fx.base, fx.user3);
	assert_contains(out, want);
	free(out);
	code = RUN(false, &out, "--explain", fx.user3);
	assert_int_equal(code, 0);
	snprintf(want, sizeof(want), "workspace_root   %s/ws/%s\n", fx.base, fx.user3);
	assert_contains(out, want);
	free(out);
	code = RUN(false, &out, "--doctor", "--json", "-f", cand, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_row(out, "config", cand, "OK");
	assert_contains(out, "1 drop-in(s) (a candidate given with -f");
	assert_null(strstr(out, "cannot list the drop-ins"));
	free(out);

	/* A drop-in others may write: the candidate is refused by every
	 * verb, naming the drop-in. */
	assert_int_equal(chmod(dropin, 0664), 0);
	code = RUN(false, &out, "--check-config", "-f", cand);
	assert_int_equal(code, 1);
	snprintf(want, sizeof(want), "%s: group-writable (mode 0664)", dropin);
	assert_contains(out, want);
	assert_contains(out, "syntax OK, but not trusted");
	free(out);
	code = RUN(false, &out, "--explain", fx.user3, "-f", cand);
	assert_int_equal(code, 1);
	assert_contains(out, want);
	free(out);
	code = RUN(false, &out, "--doctor", "--json", "-f", cand, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "config", cand, "FAIL");
	free(out);
	assert_int_equal(chmod(dropin, 0644), 0);

	/* Trusted but unreadable to agents: a FAIL of the doctor and of
	 * --check-config (agent-shell reads the drop-ins as the agent). */
	assert_int_equal(chmod(dropin, 0600), 0);
	code = RUN(false, &out, "--doctor", "--json", "-f", cand, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "config", dropin, "FAIL");
	free(out);
	code = RUN(false, &out, "--check-config", "-f", cand);
	assert_int_equal(code, 1);
	snprintf(want, sizeof(want), "%s: mode 0600, group root: agents cannot read it", dropin);
	assert_contains(out, want);
	free(out);
	assert_int_equal(chmod(dropin, 0644), 0);
	snprintf(want, sizeof(want), "%s/cand/conf.d", fx.base);
	assert_int_equal(chmod(want, 0750), 0);
	code = RUN(false, &out, "--doctor", "--json", "-f", cand, "--pam-dir", pam, "--sshd",
		   "/nonexistent/sshd");
	assert_int_equal(chmod(want, 0755), 0);
	assert_int_equal(code, 1);
	assert_row(out, "config", want, "FAIL");
	assert_contains(out, "agents cannot list the drop-ins in it");
	assert_contains(out, "\"fix\":\"chmod o+rx ");
	free(out);

	/* A candidate under a world-writable directory (/tmp): refused, and
	 * said to be only syntax-checked. */
	snprintf(untrusted, sizeof(untrusted), "%s/cand.conf", fx.tmp);
	write_text(untrusted, "[profile p]\nworkspace_root = /w\n");
	code = RUN(false, &out, "--check-config", "-f", untrusted);
	assert_int_equal(code, 1);
	assert_contains(out, "world-writable");
	assert_contains(out, "syntax OK, but not trusted");
	free(out);
	/* A missing candidate is an error, not "no configuration". */
	snprintf(want, sizeof(want), "%s/cand/missing.conf", fx.base);
	code = RUN(false, &out, "--explain", fx.user3, "-f", want);
	assert_int_equal(code, 1);
	assert_contains(out, "No such file or directory");
	free(out);

	/* Sessions never take -f: a login command, --run, and as the agent. */
	code = RUN(true, &out, "-c", "true", "-f", cand);
	assert_int_equal(code, 2);
	assert_contains(out, "-f/--config only goes with --check-config, --explain and --doctor");
	free(out);
	code = RUN(true, &out, "-f", cand, "--run", "--", "/bin/true");
	assert_int_equal(code, 2);
	free(out);
	code = RUN(true, &out, "--config", cand);
	assert_int_equal(code, 2);
	free(out);
}

/* --doctor --json with these PAM and unit directories and no sshd. */
static int doctor_json(char **out, const char *pam, const char *vendor, const char *units)
{
	return RUN(false, out, "--doctor", "--json", "--pam-dir", pam, "--pam-vendor-dir", vendor,
		   "--sshd", "/nonexistent/sshd", "--unit-dirs", units);
}

/* libpam reads a stack from the vendor directory (/usr/lib/pam.d on
 * Debian, where systemd ships systemd-user) when the admin's has none: the
 * doctor must too, and name the file it read. What keeps systemd --user
 * from agents is the package's user@.service drop-in, read the way systemd
 * merges drop-ins; a PAM refusal alone leaves a failed unit per login. */
static void test_doctor_vendor_stacks(void **state)
{
	char *out = NULL, pam[PATH_MAX], vendor[PATH_MAX], path[PATH_MAX + 64];
	char units[PATH_MAX], etc_units[PATH_MAX], dirs[2 * PATH_MAX + 2];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-novendor", fx.tmp);
	write_pam_dir(pam, true);
	snprintf(path, sizeof(path), "%s/systemd-user", pam);
	assert_int_equal(unlink(path), 0);
	snprintf(vendor, sizeof(vendor), "%s/pam-vendor", fx.tmp);
	assert_int_equal(mkdir(vendor, 0755), 0);
	snprintf(path, sizeof(path), "%s/systemd-user", vendor);
	write_text(path, "@include common-account\nsession required pam_limits.so\n");
	snprintf(units, sizeof(units), "%s/units-lib", fx.tmp);
	write_unit_dir(units, false);
	snprintf(etc_units, sizeof(etc_units), "%s/units-etc", fx.tmp);
	write_unit_dir(etc_units, false);
	snprintf(dirs, sizeof(dirs), "%s:%s", etc_units, units);

	/* Denial: the vendor's stack lacks the module, and is read; no
	 * drop-in: the fix is the drop-in. */
	code = doctor_json(&out, pam, vendor, dirs);
	assert_int_equal(code, 0);	/* no crontab: a WARN, not a FAIL */
	assert_row(out, "pam", "systemd-user", "WARN");
	assert_contains(out, path);
	assert_contains(out, "user@.service drop-in");
	free(out);
	/* Read only the admin's directory, as the doctor did before, the same host
	 * looks like one without the service. */
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--pam-vendor-dir", pam,
		   "--sshd", "/nonexistent/sshd", "--unit-dirs", dirs);
	assert_row(out, "pam", "systemd-user", "OK");
	assert_contains(out, "service not installed");
	free(out);

	/* An admin copy with the module overrides the vendor's: agents are
	 * refused, but that leaves a failed unit: still a WARN. */
	snprintf(path, sizeof(path), "%s/systemd-user", pam);
	write_text(path, "account [success=ok ignore=ignore default=die] pam_agent_sandbox.so\n"
			 "@include common-account\n");
	code = doctor_json(&out, pam, vendor, dirs);
	assert_row(out, "pam", "systemd-user", "WARN");
	assert_contains(out, "leaves user@UID.service failed");
	assert_contains(out, path);
	free(out);
	assert_int_equal(unlink(path), 0);

	/* The shipped drop-in: OK with the vendor's stack as it is. */
	snprintf(path, sizeof(path), "%s/user@.service.d/agent-sandbox.conf", units);
	{
		char *dropin = file_text("etc/systemd/user@.service.d/agent-sandbox.conf");

		write_text(path, dropin);
		free(dropin);
	}
	code = doctor_json(&out, pam, vendor, dirs);
	assert_row(out, "pam", "systemd-user", "OK");
	assert_contains(out, "runs agent-shell --user-manager first");
	assert_contains(out, path);
	free(out);

	/* Denials: a drop-in sorted later that empties ExecCondition, and a
	 * mask of the same name in a higher-priority directory. */
	snprintf(path, sizeof(path), "%s/user@.service.d/zz-local.conf", etc_units);
	write_text(path, "[Service]\nExecCondition=\n");
	code = doctor_json(&out, pam, vendor, dirs);
	assert_row(out, "pam", "systemd-user", "WARN");
	free(out);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/user@.service.d/agent-sandbox.conf", etc_units);
	assert_int_equal(symlink("/dev/null", path), 0);
	code = doctor_json(&out, pam, vendor, dirs);
	assert_row(out, "pam", "systemd-user", "WARN");
	free(out);
	assert_int_equal(unlink(path), 0);
	/* Copies of the same name that systemd would not run as a condition
	 * whose failure counts: no [Service] header, "-" (ignore failure),
	 * another program, a continued line; and a reset in the agent's own
	 * instance directory. Each hides or undoes the shipped one. */
	{
		static const char *const hiding[] = {
			"ExecCondition=+/usr/bin/agent-shell --user-manager %i\n",
			"[Service]\nExecCondition=+-/usr/bin/agent-shell --user-manager %i\n",
			"[Service]\nExecCondition=+/bin/true agent-shell --user-manager %i\n",
			"[Service]\nExecCondition=+/usr/bin/agent-shell \\\n --user-manager %i\n",
			"[Unit]\nExecCondition=+/usr/bin/agent-shell --user-manager %i\n",
		};
		struct passwd *pw = getpwnam(fx.user3);
		char inst[PATH_MAX + 64];

		for (size_t i = 0; i < ARRAY_SIZE(hiding); i++) {
			write_text(path, hiding[i]);
			code = doctor_json(&out, pam, vendor, dirs);
			if (!has_row(out, "pam", "systemd-user", "WARN"))
				fail_msg("drop-in %zu taken as the guard:\n%s", i, hiding[i]);
			free(out);
		}
		assert_int_equal(unlink(path), 0);
		assert_non_null(pw);
		snprintf(inst, sizeof(inst), "%s/user@%u.service.d", etc_units, (unsigned)pw->pw_uid);
		assert_int_equal(mkdir(inst, 0755), 0);
		snprintf(inst + strlen(inst), sizeof(inst) - strlen(inst), "/zz.conf");
		write_text(inst, "[Service]\nExecCondition=\n");
		code = doctor_json(&out, pam, vendor, dirs);
		assert_row(out, "pam", "systemd-user", "WARN");
		free(out);
		/* Control: without the reset the shipped drop-in is in effect. */
		assert_int_equal(unlink(inst), 0);
		code = doctor_json(&out, pam, vendor, dirs);
		assert_row(out, "pam", "systemd-user", "OK");
		free(out);
	}
}

/* Stacks without the module, and sshd without the drop-in: FAIL rows
 * naming what is open, exit 1. */
static void test_doctor_pam_and_sshd_failures(void **state)
{
	char *out = NULL, pam[PATH_MAX], sshd_cfg[PATH_MAX];
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	enroll_user3();
	snprintf(pam, sizeof(pam), "%s/pam-bare", fx.tmp);
	write_pam_dir(pam, false);
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "pam", "sshd", "FAIL");
	assert_row(out, "pam", "su-l", "FAIL");
	assert_row(out, "pam", "cron", "WARN");	/* no crontab for the agent: a possibility */
	assert_row(out, "sshd", "/nonexistent/sshd", "WARN");
	free(out);

	/* Controls that ignore the module's own refusal code while saying
	 * default=die: the stack goes on past a refused agent. The same
	 * stacks with the shipped control are OK (the control row). */
	snprintf(pam, sizeof(pam), "%s/pam-lax", fx.tmp);
	write_pam_dir(pam, true);
	{
		char path[PATH_MAX + 16];

		snprintf(path, sizeof(path), "%s/sshd", pam);
		write_text(path, "account [perm_denied=ignore default=die] pam_agent_sandbox.so\n"
				 "@include common-account\n@include common-session\n"
				 "session [session_err=ignore success=ok default=die] "
				 "pam_agent_sandbox.so netns\n");
		snprintf(path, sizeof(path), "%s/login", pam);
		write_text(path, "account [success=ok perm_denied=ignore default=die] "
				 "pam_agent_sandbox.so\naccount include common-account\n"
				 "session substack common-session\n"
				 "session [success=ok default=bad] pam_agent_sandbox.so\n");
	}
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", "/nonexistent/sshd");
	assert_int_equal(code, 1);
	assert_row(out, "pam", "sshd", "FAIL");		/* session_err=ignore */
	assert_row(out, "pam", "login", "WARN");	/* perm_denied=ignore */
	assert_row(out, "pam", "su", "OK");		/* control */
	free(out);

	if (!fx.sshd[0]) {
		print_message("[  SKIP    ] sshd half: no sshd installed (/usr/sbin/sshd)\n");
		return;
	}
	snprintf(pam, sizeof(pam), "%s/pam-good", fx.tmp);
	snprintf(sshd_cfg, sizeof(sshd_cfg), "%s/sshd-bare.conf", fx.tmp);
	if (access(pam, F_OK) != 0)
		write_pam_dir(pam, true);
	if (access(sshd_cfg, F_OK) != 0)
		write_sshd_configs();
	code = RUN(false, &out, "--doctor", "--json", "--pam-dir", pam, "--sshd", fx.sshd,
		   "--sshd-config", sshd_cfg);
	assert_int_equal(code, 1);
	assert_row(out, "sshd", fx.user3, "FAIL");
	assert_contains(out, "allowtcpforwarding yes");
	assert_contains(out, "permituserrc yes");
	assert_contains(out, "disableforwarding no");
	free(out);
}

/* Append "fd=target" to a space-separated list. */
static void list_fd(char *buf, size_t size, const char *fd, const char *target)
{
	size_t len = strlen(buf);

	snprintf(buf + len, size - len, "%s%s=%s", len ? " " : "", fd, target);
}

/* What a traced doctor run saw of the processes that ran as the agent. */
struct probe_seen {
	int execs;		/* execs by a process whose four uids are the agent's */
	char cmdline[256];	/* of the first such exec, NULs as spaces */
	char environ[256];
	char fds[256];		/* its fds right after that exec: "0=/dev/null 1=pipe ..." */
	int leaks;		/* agent-uid processes seen holding the doctor's output file */
	char leak[256];
};

static void read_nul_list(pid_t pid, const char *what, char *out, size_t size)
{
	char path[64], *buf = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	out[0] = '\0';
	if (sbx_read_file(path, 1 << 16, &buf, &len, NULL) != 0)
		return;
	while (len && buf[len - 1] == '\0')
		len--;
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	snprintf(out, size, "%.*s", (int)len, buf);
	free(buf);
}

static bool runs_as(pid_t pid, uid_t uid)
{
	char path[64], *buf = NULL, *l;
	unsigned r, e, s, f;
	bool yes = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (sbx_read_file(path, 1 << 16, &buf, NULL, NULL) != 0)
		return false;
	l = strstr(buf, "\nUid:");
	/* The kernel writes these ids; a misparse only fails the test.
	 * NOLINTNEXTLINE(cert-err34-c) */
	if (l && sscanf(l + 5, "%u %u %u %u", &r, &e, &s, &f) == 4)
		yes = r == uid && e == uid && s == uid && f == uid;
	free(buf);
	return yes;
}

/* At an exec or exit stop of a tracee: if it runs as the agent, note its
 * exec (command line, environment, fds) and any fd on the doctor's output. */
static void inspect_tracee(pid_t pid, bool exec, uid_t agent, const struct stat *out_st,
			   struct probe_seen *seen)
{
	char dir[64], path[64 + 256], target[256];
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (!runs_as(pid, agent))
		return;
	if (exec && seen->execs++ == 0) {
		read_nul_list(pid, "cmdline", seen->cmdline, sizeof(seen->cmdline));
		read_nul_list(pid, "environ", seen->environ, sizeof(seen->environ));
	}
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) == 0 && st.st_dev == out_st->st_dev &&
		    st.st_ino == out_st->st_ino) {
			if (seen->leaks++ == 0)
				snprintf(seen->leak, sizeof(seen->leak), "pid %d fd %.16s at %s",
					 (int)pid, de->d_name, exec ? "exec" : "exit");
		}
		if (!exec || seen->execs != 1)
			continue;
		n = readlink(path, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		if (!strncmp(target, "pipe:", 5))
			target[4] = '\0';
		list_fd(seen->fds, sizeof(seen->fds), de->d_name, target);
	}
	closedir(d);
}

/*
 * Run the doctor under ptrace, following every process it starts, with its
 * stdout and stderr on a root-owned 0600 file: at each exec and exit of a
 * process running as the agent, inspect_tracee looks at it. The old probe
 * child (a fork that dropped and probed in root's image) never execs and
 * holds that file on fds 1 and 2 until it exits.
 */
enum probe_trace {
	TRACE_WATCH,		/* only look */
	TRACE_KILL_PROBE,	/* SIGKILL the agent's exec at its exec stop */
	TRACE_HOLD_PROBE,	/* leave it stopped there: it never answers */
};

static int run_doctor_traced(const char *const *args, uid_t agent, enum probe_trace mode,
			     struct probe_seen *seen, char **out)
{
	char out_path[PATH_MAX], *argv[16];
	struct stat out_st;
	int status = 0, code = -1, fd;
	size_t n = 0;
	pid_t pid, w;

	memset(seen, 0, sizeof(*seen));
	argv[n++] = fx.shell;
	for (; *args && n < ARRAY_SIZE(argv) - 1; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	snprintf(out_path, sizeof(out_path), "%s/doctor-traced.out", fx.tmp);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &out_st), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		setenv("SBX_TEST_CONFIG", fx.config, 1);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(125);
		raise(SIGSTOP);
		execv(fx.shell, argv);
		_exit(127);
	}
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSTOPPED(status))
		fail_msg("the doctor did not stop for tracing (PTRACE_TRACEME refused?)");
	assert_int_equal(ptrace(PTRACE_SETOPTIONS, pid, NULL,
				(void *)(long)(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
					       PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
					       PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)), 0);
	assert_int_equal(ptrace(PTRACE_CONT, pid, NULL, NULL), 0);
	/* Every tracee is reported here, ours or not, until none is left. */
	while ((w = waitpid(-1, &status, __WALL)) != -1 || errno == EINTR) {
		int ev = status >> 16, sig = 0;

		if (w < 0)
			continue;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (w == pid)
				code = sbx_test_status_code(status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (ev == PTRACE_EVENT_EXEC || ev == PTRACE_EVENT_EXIT) {
			int before = seen->execs;

			inspect_tracee(w, ev == PTRACE_EVENT_EXEC, agent, &out_st, seen);
			if (seen->execs != before && mode == TRACE_KILL_PROBE)
				kill(w, SIGKILL);
			if (seen->execs != before && mode == TRACE_HOLD_PROBE)
				continue;
		} else if (!ev && WSTOPSIG(status) != SIGSTOP && WSTOPSIG(status) != SIGTRAP)
			sig = WSTOPSIG(status);	/* a real signal: deliver it */
		ptrace(PTRACE_CONT, w, NULL, (void *)(long)sig);
	}
	assert_int_equal(errno, ECHILD);
	*out = file_text(out_path);
	return code;
}

/* The kernel rows come from a fresh "agent-shell --probe --json" running
 * as the agent, which holds nothing of root's: no fd the doctor had open
 * (its output file), a two-variable environment, only 0-2. */
/* Under the sanitizer build LeakSanitizer stops the world with ptrace at
 * exit, which a process this test already traces cannot do (it dies with
 * "LeakSanitizer has encountered a fatal error"): the two traced tests run
 * in the normal build only, as the e2e tier does. */
#ifdef SBX_SANITIZER
#define REQUIRE_UNTRACED_BUILD()                                                  \
	do {                                                                      \
		print_message("[  SKIP    ] sanitizer build: LeakSanitizer cannot run " \
			      "in a traced process (the normal build runs this)\n");   \
		skip();                                                           \
	} while (0)
#else
#define REQUIRE_UNTRACED_BUILD() do { } while (0)
#endif

static void test_doctor_probe_child_is_fresh(void **state)
{
	char *out = NULL, pam[PATH_MAX], want[128];
	struct probe_seen seen;
	struct passwd *pw;
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	REQUIRE_UNTRACED_BUILD();
	enroll_user3();
	pw = getpwnam(fx.user3);
	assert_non_null(pw);
	snprintf(pam, sizeof(pam), "%s/pam-good", fx.tmp);
	if (access(pam, F_OK) != 0)
		write_pam_dir(pam, true);
	code = run_doctor_traced((const char *const[]){ "--doctor", "--json", "--pam-dir", pam,
							"--sshd", "/nonexistent/sshd", NULL },
				 pw->pw_uid, TRACE_WATCH, &seen, &out);
	if (getenv("SBX_TEST_VERBOSE") || seen.execs != 1 || seen.leaks)
		fprintf(stderr, "%s\nexecs %d: [%s] env [%s] fds [%s]; leaks %d: %s\n", out,
			seen.execs, seen.cmdline, seen.environ, seen.fds, seen.leaks, seen.leak);
	assert_int_equal(code, 0);
	/* Still what the kernel offers that uid (user namespaces work here). */
	snprintf(want, sizeof(want), "as %s: user, mount, pid", fx.user3);
	assert_row(out, "kernel", "userns", "OK");
	assert_contains(out, want);
	assert_row(out, "kernel", "landlock", "OK");
	/* The denial: no process of the agent's uid ever held root's fd. */
	assert_int_equal(seen.leaks, 0);
	/* Exactly one exec as the agent: the probe, fresh. */
	assert_int_equal(seen.execs, 1);
	assert_string_equal(seen.cmdline, "agent-shell --probe --json");
	assert_string_equal(seen.environ, "PATH=/usr/bin:/bin LANG=C");
	assert_string_equal(seen.fds, "0=/dev/null 1=pipe 2=pipe");
	free(out);
}

/* The probe as the agent fails (killed) or never answers (held stopped):
 * a WARN row that says so and what is then not checked; the doctor ends
 * (it kills the silent child after 5 s) and the rest of its rows stand. */
static void test_doctor_probe_failure_warns(void **state)
{
	const char *args[] = { "--doctor", "--json", "--pam-dir", NULL,
			       "--sshd", "/nonexistent/sshd", NULL };
	char *out = NULL, pam[PATH_MAX], want[256];
	struct probe_seen seen;
	struct passwd *pw;
	struct timespec t0, t1;
	int code;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	REQUIRE_UNTRACED_BUILD();
	enroll_user3();
	pw = getpwnam(fx.user3);
	assert_non_null(pw);
	snprintf(pam, sizeof(pam), "%s/pam-good", fx.tmp);
	if (access(pam, F_OK) != 0)
		write_pam_dir(pam, true);
	args[3] = pam;

	code = run_doctor_traced((const char *const *)args, pw->pw_uid, TRACE_KILL_PROBE,
				 &seen, &out);
	assert_int_equal(code, 0);	/* a WARN, not a FAIL */
	assert_int_equal(seen.execs, 1);
	assert_row(out, "kernel", fx.user3, "WARN");
	snprintf(want, sizeof(want),
		 "probe as uid %u (agent-shell --probe --json) failed: killed by signal %d",
		 (unsigned)pw->pw_uid, SIGKILL);
	assert_contains(out, want);
	assert_contains(out, "is not checked");
	assert_false(has_row(out, "kernel", "userns", "OK"));
	assert_row(out, "pam", "sshd", "OK");	/* the rest stands */
	free(out);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	code = run_doctor_traced((const char *const *)args, pw->pw_uid, TRACE_HOLD_PROBE,
				 &seen, &out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(code, 0);
	assert_int_equal(seen.execs, 1);
	assert_row(out, "kernel", fx.user3, "WARN");
	assert_contains(out, "failed: no answer within 5 s, killed");
	/* Killed at its limit, not at some later one. */
	assert_true(t1.tv_sec - t0.tv_sec >= 4 && t1.tv_sec - t0.tv_sec <= 9);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enroll_unenroll),
		cmocka_unit_test(test_enroll_prints_match_line),
		cmocka_unit_test(test_enroll_refusals),
		cmocka_unit_test(test_user_manager_condition),
		cmocka_unit_test(test_doctor_good_then_wrong_shell),
		cmocka_unit_test(test_doctor_pam_and_sshd_failures),
		cmocka_unit_test(test_doctor_vendor_stacks),
		cmocka_unit_test(test_doctor_session_limits),
		cmocka_unit_test(test_doctor_subids),
		cmocka_unit_test(test_doctor_suid_dumpable),
		cmocka_unit_test(test_doctor_nss_groups),
		cmocka_unit_test(test_doctor_secret_mounts),
		cmocka_unit_test(test_doctor_config_breakers),
		cmocka_unit_test(test_missing_roots_named),
		cmocka_unit_test(test_config_unreadable_without_agents),
		cmocka_unit_test(test_candidate_config),
		cmocka_unit_test(test_doctor_probe_child_is_fresh),
		cmocka_unit_test(test_doctor_probe_failure_warns),
	};
	return cmocka_run_group_tests_name("admin", tests, group_setup, group_teardown);
}
