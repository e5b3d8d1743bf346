/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel tests for canary.c: canaries fail honestly when nothing is enforced and pass when it is. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/wait.h>

#include "testlib.h"

struct child {
	int fd;			/* the report goes back through this pipe */
	const char *workspace;	/* agent-writable directory, or NULL */
};

static const enum sbx_feature boundary[] = {
	SBX_F_USERNS, SBX_F_PIDNS, SBX_F_MOUNTNS, SBX_F_NETNS, SBX_F_IPCNS,
	SBX_F_UTSNS, SBX_F_CGROUPNS, SBX_F_MOUNT_VIEW, SBX_F_DENY_READ,
	SBX_F_CAPS, SBX_F_NO_NEW_PRIVS, SBX_F_LANDLOCK_FS, SBX_F_LANDLOCK_NET,
	SBX_F_LANDLOCK_IOCTL, SBX_F_LANDLOCK_SCOPE, SBX_F_SECCOMP,
	SBX_F_COMMAND_GATE, SBX_F_MEMORY_WX,
};

/* What execve would be given after the scrub. */
static char *const clean_env[] = { "PATH=/usr/bin:/bin", "HOME=/tmp", "TERM=dumb", NULL };

static void host_ns(struct sbx_canary_ctx *ctx, int keep_fd)
{
	static const char *const names[] = { "user", "mnt", "pid", "net", "ipc", "uts", "cgroup" };
	unsigned long *slot[] = {
		&ctx->host_ns_user, &ctx->host_ns_mnt, &ctx->host_ns_pid, &ctx->host_ns_net,
		&ctx->host_ns_ipc, &ctx->host_ns_uts, &ctx->host_ns_cgroup,
	};
	char path[64];
	struct stat st;

	memset(ctx, 0, sizeof(*ctx));
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", names[i]);
		*slot[i] = stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
	}
	ctx->keep_fd = keep_fd;
	ctx->envp = clean_env;
}

/* Only fds 0-2 and the report pipe, a scrubbed environment, the profile's
 * rlimits: the three canaries an unconfined process can pass. */
static int hygiene(int keep_fd)
{
	struct rlimit zero = { 0, 0 }, nproc = { 512, 512 }, nofile = { 1024, 1024 };

	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep_fd)
			close(fd);
	if (clearenv() != 0 || setenv("PATH", "/usr/bin:/bin", 1) != 0)
		return -1;
	if (setrlimit(RLIMIT_CORE, &zero) || setrlimit(RLIMIT_NPROC, &nproc) ||
	    setrlimit(RLIMIT_NOFILE, &nofile))
		return -1;
	return 0;
}

static int send_report(int fd, const struct sbx_report *r)
{
	return write(fd, r, sizeof(*r)) == (ssize_t)sizeof(*r) ? 0 : 3;
}

static void recv_report(int fd, struct sbx_report *r)
{
	size_t got = 0;

	while (got < sizeof(*r)) {
		ssize_t n = read(fd, (char *)r + got, sizeof(*r) - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
}

static int unconfined_child(void *arg)
{
	const struct child *c = arg;
	struct sbx_canary_ctx ctx;
	struct sbx_session s;
	struct sbx_profile p;
	struct sbx_report r;

	if (hygiene(c->fd))
		return 2;
	sbx_profile_init_default(&p);
	p.command = SBX_ACCESS_GATED;
	sbx_report_init(&r, &p);
	r.landlock_abi = 7;
	/* Claim everything was achieved although nothing was applied. */
	for (size_t i = 0; i < ARRAY_SIZE(boundary); i++)
		sbx_report_set(&r, boundary[i], true, false, "claimed");
	sbx_report_set(&r, SBX_F_ENV_SCRUB, true, false, "claimed");
	sbx_report_set(&r, SBX_F_FD_HYGIENE, true, false, "claimed");
	sbx_report_set(&r, SBX_F_RLIMITS, true, false, "claimed");
	memset(&s, 0, sizeof(s));
	host_ns(&ctx, c->fd);
	ctx.wx = SBX_WX_MDWE;	/* claimed, and not set */
	sbx_canary_run(&p, &s, &ctx, &r);
	return send_report(c->fd, &r);
}

/* A filter refusing keyctl with EPERM, and unshare too if asked: the
 * seccomp canary's two calls. Needs no_new_privs. 0, or -1. */
static int seccomp_deny_keyctl(bool and_unshare)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	int rc = -1;

	if (!f)
		return -1;
	if ((!and_unshare ||
	     seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) == 0) &&
	    seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(keyctl), 0) == 0 &&
	    seccomp_load(f) == 0)
		rc = 0;
	seccomp_release(f);
	return rc;
}

/* A filter is loaded (Seccomp: 2) but refuses only keyctl: the seccomp
 * canary must find unshare allowed, not take the mode for the rules. */
static int keyctl_only_child(void *arg)
{
	const struct child *c = arg;
	struct sbx_canary_ctx ctx;
	struct sbx_session s;
	struct sbx_profile p;
	struct sbx_report r;

	if (hygiene(c->fd))
		return 2;
	sbx_profile_init_default(&p);
	sbx_report_init(&r, &p);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return 3;
	if (seccomp_deny_keyctl(false) != 0)
		return 4;
	sbx_report_set(&r, SBX_F_SECCOMP, true, false, "claimed");
	memset(&s, 0, sizeof(s));
	host_ns(&ctx, c->fd);
	sbx_canary_run(&p, &s, &ctx, &r);
	return send_report(c->fd, &r);
}

static int run_child(bool drop, int (*fn)(void *), struct child *c, struct sbx_report *r)
{
	int fds[2], code;

	assert_int_equal(pipe(fds), 0);
	c->fd = fds[1];
	code = sbx_test_status_code(sbx_test_fork(drop, fn, c));
	close(fds[1]);
	if (code == 0)
		recv_report(fds[0], r);
	close(fds[0]);
	return code;
}

static bool canary_file_left(void)
{
	static const char *const dirs[] = { "/var/tmp", "/run/lock", "/etc" };
	struct dirent *de;
	bool found = false;

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		DIR *d = opendir(dirs[i]);

		if (!d)
			continue;
		while ((de = readdir(d)) != NULL)
			if (strncmp(de->d_name, ".agent-sandbox-canary", 21) == 0)
				found = true;
		closedir(d);
	}
	return found;
}

static void assert_detail(const struct sbx_report *r, enum sbx_feature f, const char *part)
{
	if (!strstr(r->entry[f].detail, part))
		print_message("%s: detail \"%s\" lacks \"%s\"\n", sbx_feature_name(f),
			      r->entry[f].detail, part);
	assert_non_null(strstr(r->entry[f].detail, part));
}

static void test_unconfined_verifies_nothing(void **state)
{
	struct child c = { -1, NULL };
	struct sbx_report r;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(run_child(true, unconfined_child, &c, &r), 0);
	for (size_t i = 0; i < ARRAY_SIZE(boundary); i++) {
		if (r.entry[boundary[i]].verified)
			print_message("%s verified without confinement\n",
				      sbx_feature_name(boundary[i]));
		assert_false(r.entry[boundary[i]].verified);
		assert_true(r.entry[boundary[i]].achieved);	/* untouched */
		/* The canary's reason first, what the layer claimed after it. */
		assert_int_equal(strncmp(r.entry[boundary[i]].detail, "canary: ", 8), 0);
		assert_detail(&r, boundary[i], "; claimed");
	}
	assert_detail(&r, SBX_F_SECCOMP, "Seccomp is not 2");
	assert_detail(&r, SBX_F_NO_NEW_PRIVS, "NoNewPrivs is not 1");
	assert_detail(&r, SBX_F_CAPS, "CapBnd is");	/* bounding set still full */
	assert_detail(&r, SBX_F_NETNS, "still in the host net namespace");
	assert_detail(&r, SBX_F_USERNS, "still in the host user namespace");
	assert_detail(&r, SBX_F_LANDLOCK_NET, "Connection refused, not EACCES");
	assert_detail(&r, SBX_F_LANDLOCK_FS, "write not refused");
	assert_detail(&r, SBX_F_MOUNT_VIEW, "write not refused");
	assert_detail(&r, SBX_F_LANDLOCK_SCOPE, "another uid");
	assert_detail(&r, SBX_F_LANDLOCK_IOCTL, "Inappropriate ioctl");
	assert_detail(&r, SBX_F_COMMAND_GATE, "/tmp is not mounted noexec");
	assert_detail(&r, SBX_F_MEMORY_WX, "PR_GET_MDWE: 0");
	/* Unconfined, a listed secret file opens and reads. */
	assert_detail(&r, SBX_F_DENY_READ, "is readable");
	/* Positive controls in the same child: what it did do is proven. */
	assert_true(r.entry[SBX_F_ENV_SCRUB].verified);
	assert_true(r.entry[SBX_F_FD_HYGIENE].verified);
	assert_true(r.entry[SBX_F_RLIMITS].verified);
	/* The guarantees follow: only env scrub and resource limits. */
	sbx_report_finish(&r);
	assert_int_equal(r.guarantees, SBX_G_ENV_SCRUB | SBX_G_RESOURCE_LIMITS);
	assert_int_equal(r.level, SBX_LEVEL_DEGRADED);
	assert_false(r.floor_met);
	/* The write canaries left nothing behind. */
	assert_int_equal(access("/etc/.agent-sandbox-canary", F_OK), -1);
	assert_false(canary_file_left());
}

/* Landlock ABI 1 by raw syscalls (independent of lib/landlock.c): writes
 * handled everywhere, allowed beneath the workspace only. */
static int landlock_workspace_only(const char *workspace)
{
	struct landlock_ruleset_attr attr = {
		.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE |
			LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG |
			LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR,
	};
	struct landlock_path_beneath_attr rule = { .allowed_access = attr.handled_access_fs };
	int rs, rc = -1;

	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (rs < 0)
		return -1;
	rule.parent_fd = open(workspace, O_PATH | O_CLOEXEC);
	if (rule.parent_fd >= 0 &&
	    syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0 &&
	    syscall(SYS_landlock_restrict_self, rs, 0) == 0)
		rc = 0;
	if (rule.parent_fd >= 0)
		close(rule.parent_fd);
	close(rs);
	return rc;
}

/* Inside the test's own user+mount namespace: dir becomes a read-only
 * bind of itself (the mount view in miniature). The flags the parent
 * namespace set are locked and must be repeated in the remount. */
static int readonly_bind(const char *dir)
{
	unsigned long locked = 0;
	struct statvfs sv;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) != 0 || statvfs(dir, &sv) != 0)
		return -1;
	if (sv.f_flag & ST_NOSUID)
		locked |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		locked |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		locked |= MS_NOEXEC;
	if (sv.f_flag & ST_NOATIME)
		locked |= MS_NOATIME;
	if (sv.f_flag & ST_NODIRATIME)
		locked |= MS_NODIRATIME;
	if (sv.f_flag & ST_RELATIME)
		locked |= MS_RELATIME;
	return mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | locked, NULL);
}


static int confined_child(void *arg)
{
	const struct child *c = arg;
	struct sbx_canary_ctx ctx;
	struct sbx_session s;
	struct sbx_profile p;
	struct sbx_report r;

	if (hygiene(c->fd))
		return 2;
	host_ns(&ctx, c->fd);
	sbx_profile_init_default(&p);
	sbx_report_init(&r, &p);
	memset(&s, 0, sizeof(s));
	snprintf(s.workspace, sizeof(s.workspace), "%s", c->workspace);
	/* A minimal real confinement, in the apply order. */
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) != 0)
		return 4;
	if (readonly_bind("/run/lock") != 0)
		return 8;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return 5;
	if (landlock_workspace_only(c->workspace) != 0)
		return 6;
	if (seccomp_deny_keyctl(true) != 0)
		return 7;
	sbx_report_set(&r, SBX_F_USERNS, true, false, "unshared");
	sbx_report_set(&r, SBX_F_NETNS, true, false, "unshared");
	sbx_report_set(&r, SBX_F_NO_NEW_PRIVS, true, false, "set");
	sbx_report_set(&r, SBX_F_LANDLOCK_FS, true, false, "ABI 1 writes");
	sbx_report_set(&r, SBX_F_MOUNTNS, true, false, "unshared");
	sbx_report_set(&r, SBX_F_MOUNT_VIEW, true, false, "/run/lock read-only");
	sbx_report_set(&r, SBX_F_SECCOMP, true, false, "loaded");
	/* Negative controls: claimed, but not done here. */
	sbx_report_set(&r, SBX_F_CAPS, true, false, "claimed");
	sbx_report_set(&r, SBX_F_IPCNS, true, false, "claimed");
	sbx_canary_run(&p, &s, &ctx, &r);
	return send_report(c->fd, &r);
}

static void test_seccomp_canary_checks_the_rules(void **state)
{
	struct child c = { -1, NULL };
	struct sbx_report r;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(run_child(true, keyctl_only_child, &c, &r), 0);
	assert_false(r.entry[SBX_F_SECCOMP].verified);
	assert_detail(&r, SBX_F_SECCOMP, "unshare(0): allowed, not EPERM");
}

static void test_confined_verifies(void **state)
{
	const struct sbx_probe *probe;
	struct child c;
	struct sbx_report r;
	char *ws = *state;
	int code;

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_probe_get(&probe, NULL), 0);
	if (probe->landlock_abi < 1) {
		print_message("[  SKIP    ] Landlock unavailable: %s\n", probe->landlock_why);
		skip();
	}
	c.workspace = ws;
	code = chown(ws, sbx_test_uid(), sbx_test_gid());
	if (code == 0)
		code = run_child(true, confined_child, &c, &r);
	if (code != 0) {
		print_message("confined child failed at step %d\n", code);
		fail();
	}
	assert_true(r.entry[SBX_F_SECCOMP].verified);
	assert_true(r.entry[SBX_F_NO_NEW_PRIVS].verified);
	assert_true(r.entry[SBX_F_NETNS].verified);
	assert_true(r.entry[SBX_F_USERNS].verified);
	if (!r.entry[SBX_F_LANDLOCK_FS].verified)
		print_message("landlock_fs: %s\n", r.entry[SBX_F_LANDLOCK_FS].detail);
	assert_true(r.entry[SBX_F_LANDLOCK_FS].verified);
	assert_string_equal(r.entry[SBX_F_SECCOMP].detail, "loaded");
	/* In a fresh user namespace the process holds every capability
	 * there: the caps canary must say so, not pass. */
	assert_false(r.entry[SBX_F_CAPS].verified);
	assert_detail(&r, SBX_F_CAPS, "CapPrm is ");
	assert_false(r.entry[SBX_F_IPCNS].verified);
	assert_detail(&r, SBX_F_IPCNS, "still in the host ipc namespace");
	assert_true(r.entry[SBX_F_MOUNTNS].verified);
	if (!r.entry[SBX_F_MOUNT_VIEW].verified)
		print_message("mount_view: %s\n", r.entry[SBX_F_MOUNT_VIEW].detail);
	assert_true(r.entry[SBX_F_MOUNT_VIEW].verified);
	/* The workspace positive control left nothing; nothing leaked out. */
	{
		DIR *d = opendir(ws);
		struct dirent *de;
		int n = 0;

		assert_non_null(d);
		while ((de = readdir(d)) != NULL)
			n += de->d_name[0] != '.' || strlen(de->d_name) > 2;
		closedir(d);
		assert_int_equal(n, 0);
	}
	assert_false(canary_file_left());
}

/*
 * memory_wx: verified only where W^X is in force the way the decision
 * said, and every way around it is closed. Each case is a child of the
 * agent's uid with its own user and mount namespace (for a read-only
 * /proc), lib/seccomp.c's W^X rules and lib/wx.c; what the case leaves
 * out must fail the canary with its reason.
 */
struct wx_case {
	const char *name;
	enum sbx_wx_mech claim;		/* what the canary is told */
	enum sbx_wx_mech applied;	/* what sbx_wx_apply does (NONE: not called) */
	enum sbx_wx_mech rules;		/* what the filter is built for */
	bool proc_writable;		/* leave /proc as the host's */
	bool rie;			/* READ_IMPLIES_EXEC handed in */
	const char *fails;		/* NULL: verified; else in the detail */
};

static const struct wx_case *wx_now;

static int wx_child(void *arg)
{
	const struct child *c = arg;
	const struct wx_case *k = wx_now;
	struct sbx_seccomp_opts o = { .gated = true, .wx = true };
	struct sbx_error err = { 0 };
	struct sbx_canary_ctx ctx;
	struct sbx_profile p;
	struct sbx_report r;

	if (hygiene(c->fd))
		return 2;
	host_ns(&ctx, c->fd);
	ctx.wx = k->claim;
	sbx_profile_init_default(&p);
	p.command = SBX_ACCESS_GATED;
	sbx_report_init(&r, &p);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		return 3;
	if (!k->proc_writable && readonly_bind("/proc") != 0)
		return 4;
	if (k->rie && personality(READ_IMPLIES_EXEC) < 0)
		return 5;
	if (sbx_wx_apply(k->applied, &err) != 0)
		return 6;
	o.wx_no_mdwe = k->rules == SBX_WX_SECCOMP;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || sbx_seccomp_apply(&o, &err) != 0)
		return 7;
	/* As the worker: dumpable again before the canaries (a uid change
	 * left /proc/self root's). */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
		return 8;
	sbx_report_set(&r, SBX_F_MEMORY_WX, true, false, "claimed");
	sbx_canary_run(&p, NULL, &ctx, &r);
	return write(c->fd, &r.entry[SBX_F_MEMORY_WX], sizeof(r.entry[0])) ==
	       (ssize_t)sizeof(r.entry[0]) ? 0 : 9;
}

static void test_memory_wx_canary(void **state)
{
	static const struct wx_case cases[] = {
		{ "seccomp alone", SBX_WX_SECCOMP, SBX_WX_SECCOMP, SBX_WX_SECCOMP, false, false,
		  NULL },
		{ "READ_IMPLIES_EXEC cleared", SBX_WX_SECCOMP, SBX_WX_SECCOMP, SBX_WX_SECCOMP,
		  false, true, NULL },
		{ "MDWE", SBX_WX_MDWE, SBX_WX_MDWE, SBX_WX_MDWE, false, false, NULL },
		{ "MDWE claimed, not set", SBX_WX_MDWE, SBX_WX_SECCOMP, SBX_WX_SECCOMP, false,
		  false, "PR_GET_MDWE: 0, not REFUSE_EXEC_GAIN" },
		{ "MDWE's rules without MDWE", SBX_WX_SECCOMP, SBX_WX_SECCOMP, SBX_WX_MDWE, false,
		  false, "mprotect(anonymous, PROT_EXEC): made executable, not Operation not "
		  "permitted" },
		{ "the filter's EPERM, not MDWE's", SBX_WX_MDWE, SBX_WX_MDWE, SBX_WX_SECCOMP, false,
		  false, "mprotect(anonymous, PROT_EXEC): Operation not permitted, not Permission "
		  "denied" },
		{ "READ_IMPLIES_EXEC left", SBX_WX_SECCOMP, SBX_WX_NONE, SBX_WX_SECCOMP, false,
		  true, "personality: READ_IMPLIES_EXEC is set" },
		{ "/proc/self/mem writable", SBX_WX_SECCOMP, SBX_WX_SECCOMP, SBX_WX_SECCOMP, true,
		  false, "/proc/self/mem opens for writing" },
	};
	bool mdwe = prctl(PR_GET_MDWE, 0, 0, 0, 0) >= 0;	/* the kernel's own answer */

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sbx_report_entry e;
		struct child c = { -1, NULL };
		int fds[2], code;
		size_t got = 0;

		if (cases[i].applied == SBX_WX_MDWE && !mdwe) {
			print_message("[  SKIP    ] %s: the kernel has no PR_SET_MDWE (< 6.3)\n",
				      cases[i].name);
			continue;
		}
		wx_now = &cases[i];
		assert_int_equal(pipe(fds), 0);
		c.fd = fds[1];
		code = sbx_test_status_code(sbx_test_fork(true, wx_child, &c));
		close(fds[1]);
		while (code == 0 && got < sizeof(e)) {
			ssize_t n = read(fds[0], (char *)&e + got, sizeof(e) - got);

			assert_true(n > 0);
			got += (size_t)n;
		}
		close(fds[0]);
		if (code != 0)
			fail_msg("%s: the child failed at step %d", cases[i].name, code);
		print_message("  %-30s %s: %s\n", cases[i].name, e.verified ? "verified" : "refused",
			      e.detail);
		assert_true(e.achieved);
		if (!cases[i].fails) {
			assert_true(e.verified);
			assert_string_equal(e.detail, "claimed");
		} else {
			assert_false(e.verified);
			assert_non_null(strstr(e.detail, cases[i].fails));
		}
	}
}

/* The workspace is made and removed outside the test body, so a failed
 * assertion still cleans up. */
static int ws_setup(void **state)
{
	*state = sbx_test_mkdtemp("canary");
	return 0;
}

static int ws_teardown(void **state)
{
	sbx_test_rmtree(*state);
	free(*state);
	return 0;
}

/*
 * The env canary checks the list execve is given, not this process's own
 * environ (the worker's environ is agent-shell's; the program gets the
 * rebuilt list). Here the two disagree on purpose, both ways.
 */
static int env_child(void *arg)
{
	const struct child *c = arg;
	char *const dirty_env[] = { "PATH=/usr/bin", "HOME=/tmp", "LD_PRELOAD=/x.so", NULL };
	char *const bash_env[] = { "PATH=/usr/bin", "HOME=/tmp", "BASH_ENV=/x", NULL };
	char *const no_home[] = { "PATH=/usr/bin", NULL };
	struct sbx_canary_ctx ctx;
	struct sbx_profile p;
	struct sbx_report r[4];

	if (hygiene(c->fd))
		return 2;
	host_ns(&ctx, c->fd);
	sbx_profile_init_default(&p);
	/* Own environ dirty, the program's list clean: verified. */
	if (setenv("BASH_ENV", "/x", 1) != 0 || setenv("LD_PRELOAD", "/x.so", 1) != 0)
		return 3;
	for (size_t i = 0; i < 4; i++) {
		sbx_report_init(&r[i], &p);
		sbx_report_set(&r[i], SBX_F_ENV_SCRUB, true, false, "claimed");
	}
	sbx_canary_run(&p, NULL, &ctx, &r[0]);
	/* Own environ clean, the program's list dirty: refused. */
	if (clearenv() != 0 || setenv("PATH", "/usr/bin", 1) != 0)
		return 4;
	ctx.envp = dirty_env;
	sbx_canary_run(&p, NULL, &ctx, &r[1]);
	ctx.envp = bash_env;
	sbx_canary_run(&p, NULL, &ctx, &r[2]);
	ctx.envp = no_home;
	sbx_canary_run(&p, NULL, &ctx, &r[3]);
	for (size_t i = 0; i < 4; i++)
		if (write(c->fd, &r[i].entry[SBX_F_ENV_SCRUB], sizeof(r[i].entry[0])) !=
		    (ssize_t)sizeof(r[i].entry[0]))
			return 5;
	return 0;
}

static void test_env_checks_the_programs_environment(void **state)
{
	struct sbx_report_entry e[4];
	int fds[2], status;
	struct child c;
	pid_t pid;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(pipe(fds), 0);
	c.fd = fds[1];
	c.workspace = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		sbx_test_drop_to_agent();
		_exit(env_child(&c));
	}
	close(fds[1]);
	for (size_t i = 0; i < 4; i++) {
		size_t got = 0;

		while (got < sizeof(e[i])) {
			ssize_t n = read(fds[0], (char *)&e[i] + got, sizeof(e[i]) - got);

			assert_true(n > 0);
			got += (size_t)n;
		}
	}
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(sbx_test_status_code(status), 0);
	assert_true(e[0].verified);
	assert_false(e[1].verified);
	assert_non_null(strstr(e[1].detail, "LD_* variable present"));
	assert_false(e[2].verified);
	assert_non_null(strstr(e[2].detail, "BASH_ENV present"));
	assert_false(e[3].verified);
	assert_non_null(strstr(e[3].detail, "HOME or PATH not set"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unconfined_verifies_nothing),
		cmocka_unit_test(test_seccomp_canary_checks_the_rules),
		cmocka_unit_test(test_env_checks_the_programs_environment),
		cmocka_unit_test(test_memory_wx_canary),
		cmocka_unit_test_setup_teardown(test_confined_verifies, ws_setup, ws_teardown),
	};
	return cmocka_run_group_tests_name("canary", tests, NULL, NULL);
}
