/* SPDX-License-Identifier: BSD-3-Clause */
/* Landlock: plan unit checks and kernel tests that prove each denial. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define REQUIRE_ABI(n)                                                         \
	do {                                                                   \
		if (sbx_landlock_abi() < (n)) {                                \
			print_message("[  SKIP    ] kernel Landlock ABI %d < %d\n", \
				      sbx_landlock_abi(), (n));                \
			skip();                                                \
		}                                                              \
	} while (0)

#define COPY(dst, src) assert_int_equal(sbx_strlcpy((dst), sizeof(dst), (src)), 0)

struct ll_case {
	char *dir;
	struct sbx_landlock_plan *plan;
	struct sbx_landlock_result res;
	int abi_limit;
	int port;		/* TCP test */
	char abstract[64];	/* abstract unix test, without the leading NUL */
	int want;		/* child_apply_fails: expected -errno */
	bool no_nnp;		/* child_apply_fails: leave no_new_privs unset */
};

static int setup(void **state)
{
	struct ll_case *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->plan = calloc(1, sizeof(*c->plan));
	if (!c->plan) {
		free(c);
		return -1;
	}
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ll_case *c = *state;

	if (c->dir) {
		sbx_test_rmtree(c->dir);
		free(c->dir);
	}
	free(c->plan);
	free(c);
	return 0;
}

static const char *pth(struct ll_case *c, const char *rel)
{
	static char buf[8][SBX_PATH_MAX];
	static unsigned next;
	char *b = buf[next++ % 8];

	if (sbx_snprintf(b, SBX_PATH_MAX, "%s/%s", c->dir, rel) != 0)
		abort();
	return b;
}

static void plan_rule(struct sbx_landlock_plan *plan, const char *path,
		      unsigned rights, bool optional)
{
	struct sbx_landlock_rule *r = &plan->rules[plan->n_rules++];

	assert_true(plan->n_rules <= SBX_LANDLOCK_MAX_RULES);
	assert_int_equal(sbx_strlcpy(r->path, sizeof(r->path), path), 0);
	r->rights = rights;
	r->optional = optional;
}

static void plan_deny(struct sbx_landlock_plan *plan, const char *path)
{
	assert_int_equal(sbx_strlcpy(plan->deny[plan->n_deny], SBX_PATH_MAX, path), 0);
	plan->n_deny++;
}

static void mkdir_agent(const char *path, bool agent_owned)
{
	assert_int_equal(mkdir(path, 0755), 0);
	if (agent_owned)
		assert_int_equal(chown(path, sbx_test_uid(), sbx_test_gid()), 0);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char *buf = NULL;
	size_t len = 0;
	int fd;

	assert_int_equal(sbx_read_file(from, 64u << 20, &buf, &len, NULL), 0);
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	free(buf);
}

/* In the child: set no_new_privs (the caller's step) and apply. */
static int child_restrict(struct ll_case *c)
{
	struct sbx_error err = { 0 };
	int r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -errno;
	r = sbx_landlock_apply(c->plan, c->abi_limit, &c->res, &err);
	if (r != 0)
		fprintf(stderr, "sbx_landlock_apply: %d %s\n", r, err.msg);
	return r;
}

/* Run path in a grandchild: its exit code, or 100 + errno when execve failed. */
static int run_exec(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *const argv[] = { (char *)path, NULL };
		char *const envp[] = { NULL };

		execve(path, argv, envp);
		_exit(100 + (errno < 100 ? errno : 99));
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return sbx_test_status_code(status);
}

static bool contains(const char *haystack, const char *needle)
{
	return strstr(haystack, needle) != NULL;
}

/* ---- plan_build: pure ------------------------------------------------------ */

static void profile_base(struct sbx_profile *p, struct sbx_session *s)
{
	memset(p, 0, sizeof(*p));
	memset(s, 0, sizeof(*s));
	p->workspace_read = SBX_ACCESS_ALLOW;
	p->workspace_write = SBX_ACCESS_ALLOW;
	p->host_read = SBX_ACCESS_ALLOW;
	p->host_write = SBX_ACCESS_DENY;
	p->network = SBX_ACCESS_DENY;
	p->command = SBX_ACCESS_ALLOW;
	COPY(s->workspace, "/srv/agents/a1/ws");
	COPY(s->home, "/home/a1");
}

static const struct sbx_landlock_rule *find_rule(const struct sbx_landlock_plan *plan,
						 const char *path)
{
	for (size_t i = 0; i < plan->n_rules; i++)
		if (strcmp(plan->rules[i].path, path) == 0)
			return &plan->rules[i];
	return NULL;
}

static void test_plan_build(void **state)
{
	struct ll_case *c = *state;
	struct sbx_landlock_plan *plan = c->plan;
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err = { 0 };
	const struct sbx_landlock_rule *r;

	/* command allow: EXEC with READ on the host, REFER only where writable */
	profile_base(&p, &s);
	p.n_roots = 2;
	COPY(p.roots[0].path, "/opt/cache");
	p.roots[0].read = SBX_ACCESS_ALLOW;
	p.roots[0].write = SBX_ACCESS_ALLOW;
	COPY(p.roots[1].path, "/opt/tool");
	p.roots[1].read = SBX_ACCESS_ALLOW;
	p.roots[1].write = SBX_ACCESS_DENY;
	p.n_deny_read = 1;
	COPY(p.deny_read[0], "/srv/agents/a1/ws/.env");
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), plan, &err), 0);
	assert_non_null(r = find_rule(plan, "/"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC);
	assert_non_null(r = find_rule(plan, "/srv/agents/a1/ws"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC | SBX_FS_WRITE | SBX_FS_REFER);
	assert_non_null(r = find_rule(plan, "/opt/cache"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC | SBX_FS_WRITE | SBX_FS_REFER);
	assert_non_null(r = find_rule(plan, "/opt/tool"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC);
	assert_non_null(r = find_rule(plan, "/home/a1"));
	assert_false(r->optional);
	assert_int_equal(plan->n_deny, 1);
	assert_string_equal(plan->deny[0], "/srv/agents/a1/ws/.env");
	for (size_t i = 0; i < plan->n_rules; i++) {
		unsigned rt = plan->rules[i].rights;

		/* REFER only in writable trees; IOCTL_DEV only on terminals */
		if (rt & SBX_FS_REFER)
			assert_true(rt & SBX_FS_WRITE);
		if (rt & SBX_FS_IOCTL_DEV)
			assert_true(strcmp(plan->rules[i].path, "/dev/tty") == 0 ||
				    strcmp(plan->rules[i].path, "/dev/pts") == 0 ||
				    strcmp(plan->rules[i].path, "/dev/ptmx") == 0);
	}
	assert_non_null(r = find_rule(plan, "/dev/null"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_WRITE);
	/* network deny with a netns: loopback stays usable, no Landlock TCP */
	assert_false(plan->net_deny_tcp);
	assert_true(plan->scope_signal && plan->scope_abstract_unix && plan->log_new_exec);

	/* without a netns, Landlock TCP is the boundary */
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, false), plan, &err), 0);
	assert_true(plan->net_deny_tcp);
	p.network = SBX_ACCESS_ALLOW;
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, false), plan, &err), 0);
	assert_false(plan->net_deny_tcp);

	/* gated: EXEC only on the listed files and the dynamic loader */
	profile_base(&p, &s);
	p.command = SBX_ACCESS_GATED;
	p.n_gate = 2;
	COPY(p.gate_allow[0], "/usr/bin/git");
	COPY(p.gate_allow[1], "/usr/bin/make");
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), plan, &err), 0);
	for (size_t i = 0; i < plan->n_rules; i++) {
		const char *path = plan->rules[i].path;

		if (!(plan->rules[i].rights & SBX_FS_EXEC))
			continue;
		assert_true(strcmp(path, "/usr/bin/git") == 0 ||
			    strcmp(path, "/usr/bin/make") == 0 ||
			    strstr(path, "/ld-linux") != NULL);
	}
	assert_non_null(r = find_rule(plan, "/usr/bin/git"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC);
	assert_false(r->optional);
	/* The loader's path is resolved at plan time (root-owned links
	 * followed): on merged-/usr Debian /lib64/... is a link into /usr. */
	{
		char ldso[SBX_PATH_MAX];

		assert_int_equal(sbx_path_resolve_trusted("/lib64/ld-linux-x86-64.so.2", ldso,
							  sizeof(ldso), &err), 0);
		assert_non_null(r = find_rule(plan, ldso));
		assert_true(r->optional);
		assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC);
	}
	assert_non_null(r = find_rule(plan, "/"));
	assert_int_equal(r->rights, SBX_FS_READ);
	assert_non_null(r = find_rule(plan, "/srv/agents/a1/ws"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_WRITE | SBX_FS_REFER);

	/* write deny on the workspace: no WRITE, no REFER there */
	profile_base(&p, &s);
	p.workspace_write = SBX_ACCESS_DENY;
	p.host_read = SBX_ACCESS_DENY;
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), plan, &err), 0);
	assert_non_null(r = find_rule(plan, "/srv/agents/a1/ws"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC);
	assert_null(find_rule(plan, "/"));
	assert_non_null(r = find_rule(plan, "/usr"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC);
	assert_non_null(r = find_rule(plan, "/etc/passwd"));
	assert_int_equal(r->rights, SBX_FS_READ);
	assert_true(r->optional);
	assert_non_null(r = find_rule(plan, "/proc"));
	assert_int_equal(r->rights, SBX_FS_READ);
	assert_null(find_rule(plan, "/etc"));

	/* host_write allow: "/" WRITE|REFER, merged with READ|EXEC */
	profile_base(&p, &s);
	p.host_write = SBX_ACCESS_ALLOW;
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), plan, &err), 0);
	assert_non_null(r = find_rule(plan, "/"));
	assert_int_equal(r->rights, SBX_FS_READ | SBX_FS_EXEC | SBX_FS_WRITE | SBX_FS_REFER);

	/* a non-canonical path is refused and the plan left untouched */
	plan->n_rules = 7;
	profile_base(&p, &s);
	p.n_gate = 1;
	p.command = SBX_ACCESS_GATED;
	COPY(p.gate_allow[0], "/usr/bin/../bin/sh");
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), plan, &err), -EINVAL);
	assert_true(contains(err.msg, "/usr/bin/../bin/sh"));
	assert_int_equal(plan->n_rules, 7);
}

/* ---- kernel tests ------------------------------------------------------------ */

static int child_write_boundary(void *arg)
{
	struct ll_case *c = arg;
	int fd;

	/* control before restricting: DAC allows both */
	CHILD_CHECK((fd = open(pth(c, "outside/before"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	close(fd);
	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_ERRNO(open(pth(c, "outside/f"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
	CHILD_ERRNO(open(pth(c, "outside/before"), O_WRONLY | O_CLOEXEC), EACCES);
	CHILD_ERRNO(unlink(pth(c, "outside/before")), EACCES);
	CHILD_CHECK((fd = open(pth(c, "ws/f"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	CHILD_CHECK(write(fd, "ok", 2) == 2);
	close(fd);
	CHILD_CHECK((fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	return 0;
}

static void test_write_boundary(void **state)
{
	struct ll_case *c = *state;

	REQUIRE_ABI(1);
	c->dir = sbx_test_mkdtemp("ll");
	mkdir_agent(pth(c, "ws"), true);
	mkdir_agent(pth(c, "outside"), true);
	plan_rule(c->plan, "/", SBX_FS_READ | SBX_FS_EXEC, false);
	plan_rule(c->plan, pth(c, "ws"), SBX_FS_READ | SBX_FS_WRITE | SBX_FS_REFER, false);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_write_boundary, c)), 0);
}

static int child_deny_hole(void *arg)
{
	struct ll_case *c = arg;
	bool saw_secret = false;
	struct dirent *de;
	DIR *d;
	int fd;

	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_ERRNO(open(pth(c, "tree/secret"), O_RDONLY | O_CLOEXEC), EACCES);
	CHILD_ERRNO(open(pth(c, "tree/sub/vault/inner"), O_RDONLY | O_CLOEXEC), EACCES);
	/* the sibling is readable, the parent listable (names, not contents) */
	CHILD_CHECK((fd = open(pth(c, "tree/sibling"), O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	CHILD_CHECK((fd = open(pth(c, "tree/sub/other"), O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	CHILD_CHECK((d = opendir(pth(c, "tree"))) != NULL);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, "secret") == 0)
			saw_secret = true;
	closedir(d);
	CHILD_CHECK(saw_secret);
	/* the rule on the hole itself and the one under it were dropped */
	CHILD_ERRNO(open(pth(c, "tree/sub/vault/deeper/f"), O_RDONLY | O_CLOEXEC), EACCES);
	/* outside every rule */
	CHILD_ERRNO(open("/etc/hostname", O_RDONLY | O_CLOEXEC), EACCES);
	return 0;
}

static void test_deny_hole(void **state)
{
	struct ll_case *c = *state;

	REQUIRE_ABI(1);
	c->dir = sbx_test_mkdtemp("ll");
	mkdir_agent(pth(c, "tree"), false);
	mkdir_agent(pth(c, "tree/sub"), false);
	mkdir_agent(pth(c, "tree/sub/vault"), false);
	mkdir_agent(pth(c, "tree/sub/vault/deeper"), false);
	write_file(pth(c, "tree/secret"), "s", 0644);
	write_file(pth(c, "tree/sibling"), "x", 0644);
	write_file(pth(c, "tree/sub/other"), "x", 0644);
	write_file(pth(c, "tree/sub/vault/inner"), "s", 0644);
	write_file(pth(c, "tree/sub/vault/deeper/f"), "s", 0644);
	plan_rule(c->plan, pth(c, "tree"), SBX_FS_READ, false);
	plan_rule(c->plan, pth(c, "tree/sub/vault"), SBX_FS_READ, false);
	plan_rule(c->plan, pth(c, "tree/sub/vault/deeper"), SBX_FS_READ, false);
	plan_deny(c->plan, pth(c, "tree/secret"));
	plan_deny(c->plan, pth(c, "tree/sub/vault"));
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_deny_hole, c)), 0);
}

static int child_deny_under_root(void *arg)
{
	struct ll_case *c = arg;
	int fd;

	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_ERRNO(open(pth(c, "secret"), O_RDONLY | O_CLOEXEC), EACCES);
	CHILD_CHECK((fd = open(pth(c, "sibling"), O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	CHILD_CHECK((fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	CHILD_CHECK((fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	CHILD_CHECK(c->res.n_rules_added > c->plan->n_rules);
	return 0;
}

/* The real shape: host_read allow ("/") with a secret under /tmp, so the
 * expansion walks "/", /tmp and the test directory on the live system. */
static void test_deny_under_root(void **state)
{
	struct ll_case *c = *state;
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err = { 0 };

	REQUIRE_ABI(1);
	c->dir = sbx_test_mkdtemp("ll");
	write_file(pth(c, "secret"), "s", 0644);
	write_file(pth(c, "sibling"), "x", 0644);
	mkdir_agent(pth(c, "ws"), true);
	profile_base(&p, &s);
	p.n_deny_read = 1;
	COPY(p.deny_read[0], pth(c, "secret"));
	COPY(s.workspace, pth(c, "ws"));
	s.home[0] = '\0';
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), c->plan, &err), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_deny_under_root, c)), 0);
}

static int child_refer(void *arg)
{
	struct ll_case *c = arg;
	int fd;

	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK((fd = open(pth(c, "ws/a/f"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	close(fd);
	/* REFER inside the writable tree: mv across directories works */
	CHILD_CHECK(rename(pth(c, "ws/a/f"), pth(c, "ws/b/f")) == 0);
	/* no rights at the destination: EACCES (it prevails over EXDEV) */
	CHILD_ERRNO(link(pth(c, "ws/b/f"), pth(c, "nogrant/f")), EACCES);
	/* writable destination without REFER: EXDEV */
	CHILD_ERRNO(link(pth(c, "ws/b/f"), pth(c, "wonly/f")), EXDEV);
	CHILD_ERRNO(rename(pth(c, "ws/b/f"), pth(c, "wonly/f")), EXDEV);
	return 0;
}

static void test_refer(void **state)
{
	struct ll_case *c = *state;

	REQUIRE_ABI(2);
	c->dir = sbx_test_mkdtemp("ll");
	mkdir_agent(pth(c, "ws"), true);
	mkdir_agent(pth(c, "ws/a"), true);
	mkdir_agent(pth(c, "ws/b"), true);
	mkdir_agent(pth(c, "nogrant"), true);
	mkdir_agent(pth(c, "wonly"), true);
	plan_rule(c->plan, pth(c, "ws"), SBX_FS_READ | SBX_FS_WRITE | SBX_FS_REFER, false);
	plan_rule(c->plan, pth(c, "wonly"), SBX_FS_READ | SBX_FS_WRITE, false);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_refer, c)), 0);
}

static int child_exec_gate(void *arg)
{
	struct ll_case *c = arg;

	CHILD_CHECK(run_exec(pth(c, "gate/no")) == 0);	/* control */
	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK(run_exec(pth(c, "gate/ok")) == 0);
	CHILD_CHECK(run_exec(pth(c, "gate/no")) == 100 + EACCES);
	CHILD_CHECK(run_exec("/bin/true") == 100 + EACCES);
	CHILD_CHECK(run_exec(pth(c, "ws/copy")) == 100 + EACCES);
	return 0;
}

static void test_exec_gate(void **state)
{
	struct ll_case *c = *state;
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err = { 0 };

	REQUIRE_ABI(1);
	c->dir = sbx_test_mkdtemp("ll");
	mkdir_agent(pth(c, "gate"), false);
	mkdir_agent(pth(c, "ws"), true);
	mkdir_agent(pth(c, "home"), true);
	copy_file("/bin/true", pth(c, "gate/ok"), 0755);
	copy_file("/bin/true", pth(c, "gate/no"), 0755);
	copy_file("/bin/true", pth(c, "ws/copy"), 0755);
	profile_base(&p, &s);
	p.command = SBX_ACCESS_GATED;
	p.n_gate = 1;
	COPY(p.gate_allow[0], pth(c, "gate/ok"));
	COPY(s.workspace, pth(c, "ws"));
	COPY(s.home, pth(c, "home"));
	assert_int_equal(sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), c->plan, &err), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_exec_gate, c)), 0);
}

static int child_net_tcp(void *arg)
{
	struct ll_case *c = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char byte = 'x';
	int s, sp[2];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)c->port);
	/* control: the parent's listener is reachable before restricting */
	CHILD_CHECK((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_CHECK(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(s);
	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_ERRNO(connect(s, (struct sockaddr *)&sa, sizeof(sa)), EACCES);
	close(s);
	sa.sin_port = 0;
	CHILD_CHECK((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_ERRNO(bind(s, (struct sockaddr *)&sa, sizeof(sa)), EACCES);
	close(s);
	CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	CHILD_CHECK(write(sp[0], &byte, 1) == 1);
	CHILD_CHECK(read(sp[1], &byte, 1) == 1 && byte == 'x');
	return 0;
}

static void test_net_tcp(void **state)
{
	struct ll_case *c = *state;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int l;

	REQUIRE_ABI(4);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 8), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	c->port = ntohs(sa.sin_port);
	plan_rule(c->plan, "/", SBX_FS_READ, false);
	c->plan->net_deny_tcp = true;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_net_tcp, c)), 0);
	close(l);
}

static int child_scope_signal(void *arg)
{
	struct ll_case *c = arg;
	pid_t sibling, own;
	int pfd[2], status;
	char b;

	/* A same-uid process outside the domain: it exits when pfd closes. */
	CHILD_CHECK(pipe2(pfd, O_CLOEXEC) == 0);
	sibling = fork();
	CHILD_CHECK(sibling >= 0);
	if (sibling == 0) {
		close(pfd[1]);
		while (read(pfd[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pfd[0]);
	CHILD_CHECK(kill(sibling, 0) == 0);	/* control */
	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_ERRNO(kill(sibling, 0), EPERM);
	CHILD_ERRNO(kill(getppid(), 0), EPERM);
	own = fork();
	CHILD_CHECK(own >= 0);
	if (own == 0) {
		pause();
		_exit(0);
	}
	CHILD_CHECK(kill(own, 0) == 0);
	CHILD_CHECK(kill(own, SIGKILL) == 0);
	CHILD_CHECK(waitpid(own, &status, 0) == own && WIFSIGNALED(status));
	close(pfd[1]);
	CHILD_CHECK(waitpid(sibling, &status, 0) == sibling);
	return 0;
}

static void test_scope_signal(void **state)
{
	struct ll_case *c = *state;

	REQUIRE_ABI(6);
	plan_rule(c->plan, "/", SBX_FS_READ, false);
	c->plan->scope_signal = true;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_scope_signal, c)), 0);
}

static socklen_t abstract_addr(struct sockaddr_un *sun, const char *name)
{
	size_t n = strlen(name);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int child_scope_unix(void *arg)
{
	struct ll_case *c = arg;
	struct sockaddr_un sun;
	socklen_t len = abstract_addr(&sun, c->abstract);
	char own[80];
	int s, l;

	CHILD_CHECK((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_CHECK(connect(s, (struct sockaddr *)&sun, len) == 0);	/* control */
	close(s);
	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_ERRNO(connect(s, (struct sockaddr *)&sun, len), EPERM);
	close(s);
	/* an abstract socket made inside the domain is reachable */
	snprintf(own, sizeof(own), "%s-own", c->abstract);
	len = abstract_addr(&sun, own);
	CHILD_CHECK((l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_CHECK(bind(l, (struct sockaddr *)&sun, len) == 0);
	CHILD_CHECK(listen(l, 1) == 0);
	CHILD_CHECK((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHILD_CHECK(connect(s, (struct sockaddr *)&sun, len) == 0);
	return 0;
}

static void test_scope_abstract_unix(void **state)
{
	struct ll_case *c = *state;
	struct sockaddr_un sun;
	socklen_t len;
	int l;

	REQUIRE_ABI(6);
	snprintf(c->abstract, sizeof(c->abstract), "sbx-test-ll-%d", (int)getpid());
	len = abstract_addr(&sun, c->abstract);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sun, len), 0);
	assert_int_equal(listen(l, 8), 0);
	plan_rule(c->plan, "/", SBX_FS_READ, false);
	c->plan->scope_abstract_unix = true;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_scope_unix, c)), 0);
	close(l);
}

static int child_ioctl_dev(void *arg)
{
	struct ll_case *c = arg;
	struct winsize ws;
	unsigned ptn;
	int fd, m;

	/* control: /dev/null is no tty, the driver says ENOTTY */
	CHILD_CHECK((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0);
	CHILD_ERRNO(ioctl(fd, TIOCGWINSZ, &ws), ENOTTY);
	close(fd);
	CHILD_CHECK(child_restrict(c) == 0);
	/* READ|WRITE without IOCTL_DEV: Landlock refuses before the driver */
	CHILD_CHECK((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0);
	CHILD_ERRNO(ioctl(fd, TIOCGWINSZ, &ws), EACCES);
	/* FIOCLEX targets the fd, not the device: always allowed */
	CHILD_CHECK(ioctl(fd, FIOCLEX) == 0);
	close(fd);
	/* terminals get IOCTL_DEV */
	CHILD_CHECK((m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0);
	CHILD_CHECK(ioctl(m, TIOCGPTN, &ptn) == 0);
	close(m);
	return 0;
}

static void test_ioctl_dev(void **state)
{
	struct ll_case *c = *state;

	REQUIRE_ABI(5);
	plan_rule(c->plan, "/", SBX_FS_READ, false);
	plan_rule(c->plan, "/dev/null", SBX_FS_READ | SBX_FS_WRITE, false);
	plan_rule(c->plan, "/dev/ptmx", SBX_FS_READ | SBX_FS_WRITE | SBX_FS_IOCTL_DEV, false);
	plan_rule(c->plan, "/dev/pts", SBX_FS_READ | SBX_FS_WRITE | SBX_FS_IOCTL_DEV, false);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_ioctl_dev, c)), 0);
}

static int child_abi1(void *arg)
{
	struct ll_case *c = arg;
	int fd;

	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK(c->res.abi == 1);
	CHILD_CHECK(c->res.handled_fs == 0x1fff);	/* bits 0..12: ABI 1 */
	CHILD_CHECK(c->res.handled_net == 0 && c->res.scoped == 0);
	CHILD_CHECK(contains(c->res.dropped, "REFER (ABI 2)"));
	CHILD_CHECK(contains(c->res.dropped, "cross-directory rename/link"));
	CHILD_CHECK(contains(c->res.dropped, "TRUNCATE (ABI 3)"));
	CHILD_CHECK(contains(c->res.dropped, "TCP bind/connect (ABI 4)"));
	CHILD_CHECK(contains(c->res.dropped, "IOCTL_DEV (ABI 5)"));
	CHILD_CHECK(contains(c->res.dropped, "scope signal (ABI 6)"));
	CHILD_CHECK(contains(c->res.dropped, "audit log flags (ABI 7)"));
	CHILD_CHECK((fd = open(pth(c, "ws/a/f"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0);
	close(fd);
	/* same directory: fine; across directories: ABI 1 always says EXDEV */
	CHILD_CHECK(rename(pth(c, "ws/a/f"), pth(c, "ws/a/g")) == 0);
	CHILD_ERRNO(rename(pth(c, "ws/a/g"), pth(c, "ws/b/g")), EXDEV);
	return 0;
}

static int child_abi3(void *arg)
{
	struct ll_case *c = arg;

	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK(c->res.abi == 3);
	CHILD_CHECK(!contains(c->res.dropped, "REFER"));
	CHILD_CHECK(!contains(c->res.dropped, "TRUNCATE"));
	CHILD_CHECK(contains(c->res.dropped, "TCP bind/connect (ABI 4)"));
	CHILD_CHECK(contains(c->res.dropped, "IOCTL_DEV (ABI 5)"));
	CHILD_CHECK(rename(pth(c, "ws/a/g"), pth(c, "ws/b/g")) == 0);
	return 0;
}

static void test_abi_limit(void **state)
{
	struct ll_case *c = *state;
	int fd;

	REQUIRE_ABI(3);
	c->dir = sbx_test_mkdtemp("ll");
	mkdir_agent(pth(c, "ws"), true);
	mkdir_agent(pth(c, "ws/a"), true);
	mkdir_agent(pth(c, "ws/b"), true);
	plan_rule(c->plan, pth(c, "ws"), SBX_FS_READ | SBX_FS_WRITE | SBX_FS_REFER, false);
	c->plan->net_deny_tcp = true;
	c->plan->scope_signal = c->plan->scope_abstract_unix = true;
	c->plan->log_new_exec = true;
	c->abi_limit = 1;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_abi1, c)), 0);
	fd = open(pth(c, "ws/a/g"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, sbx_test_uid(), sbx_test_gid()), 0);
	close(fd);
	c->abi_limit = 3;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_abi3, c)), 0);
}

static int child_symlink_root(void *arg)
{
	struct ll_case *c = arg;
	int fd;

	CHILD_CHECK(child_restrict(c) == 0);
	CHILD_CHECK((fd = open(pth(c, "real/f"), O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	CHILD_ERRNO(open(pth(c, "other/f"), O_RDONLY | O_CLOEXEC), EACCES);
	CHILD_CHECK(contains(c->res.skipped, "/nonexistent/sbx-optional"));
	return 0;
}

static int child_apply_fails(void *arg)
{
	struct ll_case *c = arg;
	struct sbx_error err = { 0 };
	int want = c->want;
	int r;

	if (!c->no_nnp)
		CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	r = sbx_landlock_apply(c->plan, 0, &c->res, &err);
	if (r != want) {
		fprintf(stderr, "apply: want %d got %d (%s)\n", want, r, err.msg);
		return 1;
	}
	CHILD_CHECK(err.code == -want);
	fprintf(stderr, "[ expected ] %s\n", err.msg);
	/* nothing was enforced */
	CHILD_CHECK(access("/etc/hostname", R_OK) == 0);
	return 0;
}

/* A plan from a profile whose only extra root is rel (read-only). */
static int plan_with_root(struct ll_case *c, const char *rel, bool host_read,
			  struct sbx_error *err)
{
	struct sbx_profile p;
	struct sbx_session s;

	profile_base(&p, &s);
	s.workspace[0] = '\0';
	s.home[0] = '\0';
	p.host_read = host_read ? SBX_ACCESS_ALLOW : SBX_ACCESS_DENY;
	p.n_roots = 1;
	COPY(p.roots[0].path, pth(c, rel));
	p.roots[0].read = SBX_ACCESS_ALLOW;
	p.roots[0].write = SBX_ACCESS_DENY;
	return sbx_landlock_plan_build(&p, &s, sbx_test_decision(&p, true), c->plan, err);
}

static void test_symlinks_and_missing(void **state)
{
	struct ll_case *c = *state;
	struct sbx_error err = { 0 };

	REQUIRE_ABI(1);
	c->dir = sbx_test_mkdtemp("ll");
	mkdir_agent(pth(c, "real"), false);
	mkdir_agent(pth(c, "other"), false);
	write_file(pth(c, "real/f"), "x", 0644);
	write_file(pth(c, "other/f"), "x", 0644);
	assert_int_equal(symlink("real", pth(c, "rootlink")), 0);
	assert_int_equal(symlink("real", pth(c, "agentlink")), 0);
	assert_int_equal(lchown(pth(c, "agentlink"), sbx_test_uid(), sbx_test_gid()), 0);

	/* A root-owned symlink in a root-owned directory is followed at plan
	 * time, so the rule names the real directory. */
	assert_int_equal(plan_with_root(c, "rootlink", false, &err), 0);
	assert_non_null(find_rule(c->plan, pth(c, "real")));
	assert_null(find_rule(c->plan, pth(c, "rootlink")));

	/* ... and enforced: the target is readable, its sibling is not; a
	 * missing optional path is skipped. */
	c->plan->n_rules = 0;
	plan_rule(c->plan, pth(c, "real"), SBX_FS_READ, false);
	plan_rule(c->plan, "/nonexistent/sbx-optional", SBX_FS_READ, true);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_symlink_root, c)), 0);

	/* A symlink the agent owns is refused at plan time, named. */
	assert_int_equal(plan_with_root(c, "agentlink", false, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "owned by uid"));
	/* ... also as an intermediate component. */
	assert_int_equal(plan_with_root(c, "agentlink/f", false, &err), -ELOOP);

	/* A symlink met at apply time (swapped in after the plan, which
	 * resolved every path) fails a mandatory rule. */
	c->plan->n_rules = 0;
	c->plan->skipped[0] = '\0';
	plan_rule(c->plan, pth(c, "rootlink"), SBX_FS_READ, false);
	c->want = -ELOOP;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_apply_fails, c)), 0);

	/* a missing mandatory path is an error */
	c->plan->n_rules = 0;
	plan_rule(c->plan, "/nonexistent/sbx-mandatory", SBX_FS_READ, false);
	c->want = -ENOENT;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_apply_fails, c)), 0);

	/* no_new_privs not set: refused before anything is built */
	c->plan->n_rules = 0;
	plan_rule(c->plan, "/", SBX_FS_READ, false);
	c->want = -EPERM;
	c->no_nnp = true;
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, child_apply_fails, c)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plan_build, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_boundary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deny_hole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deny_under_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_gate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_net_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scope_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scope_abstract_unix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ioctl_dev, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abi_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_and_missing, setup, teardown),
	};
	return cmocka_run_group_tests_name("landlock", tests, NULL, NULL);
}
