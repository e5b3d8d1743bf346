/* SPDX-License-Identifier: BSD-3-Clause */
/* End-to-end tests of sbx_run_confined: every layer proven from inside, degraded and refused runs. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#define HELPER_NAME "sbx_probe_inside"
#define SECRET_TEXT "TOPSECRET\n"
#define PUBLIC_TEXT "PUBLIC\n"
#define PROBE_WHY "forced by test_apply"
#define HOME_DIR "/tmp/sbx-test-apply-home"

/* Paths shared by a test and the forked child that runs the session. */
struct fixture {
	char *ws;		/* the workspace, owned by the agent */
	char *bin;		/* read-only additional root holding the helper */
	char host[64];		/* /var/tmp dir the agent may write by DAC only */
	char helper[256];	/* bin/sbx_probe_inside */
	char secret[128];	/* host/secret.txt, a deny_read entry */
	char public[128];	/* host/public.txt, its control */
	char extra[64];		/* a /var/tmp dir of one test, removed in teardown */
	bool have_helper;
};

enum probe_edit { PROBE_REAL = 0, PROBE_NO_USERNS, PROBE_NO_LANDLOCK, PROBE_NO_BOTH, PROBE_NO_NETNS };

/* One confined run, described by the test, executed by an agent child. */
struct scenario {
	const struct fixture *fx;
	struct sbx_profile profile;
	enum probe_edit probe;
	int abi_limit;
	bool probe_program;	/* run the helper with every check */
	bool gated_checks;	/* helper -g */
	const char *script;	/* else /bin/sh -c script */
	char marker[256];	/* checked when on_report runs */
	const char *run_path;	/* override (refusal tests) */
	bool low_fds_free;	/* run with every fd above 2 moved past 19 */
	bool threaded;		/* a second thread in the caller during the run */
	bool refuse_netns;	/* the caller under a filter: no new network namespace */
	bool as_overflow_uid;	/* the agent is uid/gid 65534 (nobody), not the test uid */
	const char *workspace;	/* instead of the fixture's */
	const char *tmp_source;	/* bound at /tmp, as an executor's scratch is */
	const char *made_at_report;	/* made on the host as the report arrives */
	char running_marker[256];	/* on_report notes the processes once it exists */
	int out_fd;
};

/* What the agent child sends back. */
struct outcome {
	int ret;
	int exit_code;
	char err[SBX_ERROR_MAX];
	struct sbx_report report;
	char session_id[40];
	int on_report_calls;
	bool on_report_in_outer;
	bool marker_at_report;
	long report_ms, end_ms;		/* since sbx_run_confined was called */
	bool no_child_left;		/* waitpid(-1) says ECHILD after the run */
	int tcp_accept_errno;		/* host listener after the run: EAGAIN = no one came */
	int udp_recv_errno;
	bool tcp_control, udp_control;	/* the host sockets do work */
	int child_error;		/* set-up failure in the child (line) */
	/* The session's processes as the outer process saw them at on_report:
	 * its child, that child's pid-namespace depth and innermost pid, the
	 * init's depth and pid, and how many processes of the session's tree
	 * (the program and its children aside) there were. */
	int top_levels, top_inner;
	int init_levels, init_inner;
	int sandbox_procs;
	char tree[256];			/* "pid:comm" of each, for a failure's message */
	bool probe_measured;		/* a probe child ran (sbx_probe_get measured) */
};

static struct outcome *cur;	/* the child's outcome, for on_report */
static pid_t outer_pid;
static struct timespec t0;

static long ms_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

static const char *marker_to_check;
static const char *made_at_report;	/* a directory on_report makes on the host */
static const char *running_marker;	/* made by the program once it runs */
static pid_t sleeper_pid;	/* the agent's process outside the sandbox */

/* NSpid of pid: how many pid namespaces see it, and its pid in the
 * innermost (0, 0 when unreadable). */
static void nspid(pid_t pid, int *levels, int *inner)
{
	char v[128], *p, *end;

	*levels = 0;
	*inner = 0;
	if (sbx_proc_status_field(pid, "NSpid", v, sizeof(v)) != 0)
		return;
	for (p = v;; p = end) {
		long x = strtol(p, &end, 10);

		if (end == p)
			break;
		(*levels)++;
		*inner = (int)x;
	}
}

static bool same_comm(pid_t a, pid_t b)
{
	char ca[64], cb[64], path[64];
	int fa, fb;
	ssize_t na, nb;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)a);
	fa = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)b);
	fb = open(path, O_RDONLY | O_CLOEXEC);
	na = fa >= 0 ? read(fa, ca, sizeof(ca)) : -1;
	nb = fb >= 0 ? read(fb, cb, sizeof(cb)) : -1;
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return na > 0 && na == nb && memcmp(ca, cb, (size_t)na) == 0;
}

/* Processes below pid still running this binary (the sandbox's own: the
 * program has exec'd something else by the time it runs), counted from a
 * list of what is still to visit. */
static int sandbox_tree(pid_t top, char *tree, size_t size)
{
	pid_t todo[32], kids[16];
	int n_todo = 0, count = 0;

	todo[n_todo++] = top;
	while (n_todo > 0) {
		pid_t pid = todo[--n_todo];
		int n = sbx_test_children(pid, kids, 16);

		for (int i = 0; i < n && n_todo < 32; i++) {
			char st[8] = "";

			if (!same_comm(kids[i], getpid()))
				continue;
			sbx_proc_status_field(kids[i], "State", st, sizeof(st));
			snprintf(tree + strlen(tree), size - strlen(tree), " %d<-%d(%c)",
				 (int)kids[i], (int)pid, st[0]);
			count++;
			todo[n_todo++] = kids[i];
		}
	}
	return count;
}

/* Who stands between the outer process and the program, once the program
 * runs (the report arrives just before its exec). */
static void note_processes(struct outcome *o)
{
	pid_t kids[8], top = -1;
	struct stat st;
	int n;

	if (!running_marker)
		return;
	for (int i = 0; i < 2000 && stat(running_marker, &st) != 0; i++)
		usleep(1000);
	n = sbx_test_children(getpid(), kids, 8);

	for (int i = 0; i < n; i++)
		if (kids[i] != sleeper_pid)
			top = kids[i];
	if (top < 0)
		return;
	nspid(top, &o->top_levels, &o->top_inner);
	snprintf(o->tree, sizeof(o->tree), "%d", (int)top);
	o->sandbox_procs = 1 + sandbox_tree(top, o->tree, sizeof(o->tree));
	if (o->top_inner == 1) {
		o->init_levels = o->top_levels;
		o->init_inner = 1;
	} else if (sbx_test_children(top, kids, 1) == 1) {
		nspid(kids[0], &o->init_levels, &o->init_inner);
	}
}

static void on_report(const struct sbx_report *r, void *ctx)
{
	struct stat st;

	(void)r;
	(void)ctx;
	cur->on_report_calls++;
	cur->on_report_in_outer = getpid() == outer_pid;
	cur->report_ms = ms_since(&t0);
	cur->marker_at_report = marker_to_check && stat(marker_to_check, &st) == 0;
	if (made_at_report && mkdir(made_at_report, 0755) != 0)
		cur->child_error = __LINE__;
	note_processes(cur);
}

/* ---- fixture --------------------------------------------------------------- */

static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC), out;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	}
	close(in);
	if (close(out) != 0 || n < 0 || fchmodat(AT_FDCWD, to, mode, 0) != 0)
		return -1;
	return 0;
}

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	assert_int_equal(chmod(path, 0644), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char exe[256], src[300];
	ssize_t n;

	if (!fx || geteuid() != 0) {
		*state = fx;
		return 0;
	}
	fx->ws = sbx_test_mkdtemp("apply-ws");
	/* Only root may change a gate_allow program: under /run, not /tmp. */
	fx->bin = sbx_test_mkdtemp_trusted("apply-bin");
	if (chown(fx->ws, sbx_test_uid(), sbx_test_gid()) != 0)
		return -1;
	/* Outside /tmp: the sandbox's /tmp is its own tmpfs. */
	snprintf(fx->host, sizeof(fx->host), "/var/tmp/sbx-test-apply-XXXXXX");
	if (!mkdtemp(fx->host) || chmod(fx->host, 0755) != 0 ||
	    chown(fx->host, sbx_test_uid(), sbx_test_gid()) != 0)
		return -1;
	snprintf(fx->secret, sizeof(fx->secret), "%s/secret.txt", fx->host);
	snprintf(fx->public, sizeof(fx->public), "%s/public.txt", fx->host);
	write_text(fx->secret, SECRET_TEXT);
	write_text(fx->public, PUBLIC_TEXT);
	/* The helper is built next to this binary, possibly under /tmp (a
	 * BUILD dir), which the sandbox does not see: copy it into a
	 * read-only root. Not into the workspace: gated workspaces are
	 * noexec. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(src, sizeof(src), "%s/%s", exe, HELPER_NAME);
		snprintf(fx->helper, sizeof(fx->helper), "%s/%s", fx->bin, HELPER_NAME);
		fx->have_helper = copy_file(src, fx->helper, 0755) == 0;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (!fx)
		return 0;
	sbx_test_rmtree(fx->ws);
	sbx_test_rmtree(fx->bin);
	sbx_test_rmtree(HOME_DIR);
	/* Our mkdtemp name: its files, the extra roots of the decision test,
	 * and a probe the sandbox failed to stop, all at once. */
	if (fx->host[0] && strncmp(fx->host, "/var/tmp/sbx-test-apply-", 24) == 0)
		sbx_test_rmtree(fx->host);
	if (fx->extra[0] && strncmp(fx->extra, "/var/tmp/sbx-test-apply-", 24) == 0)
		sbx_test_rmtree(fx->extra);
	free(fx->ws);
	free(fx->bin);
	free(fx);
	return 0;
}

static bool ready(const struct fixture *fx, bool need_helper)
{
	if (geteuid() != 0) {
		print_message("[  SKIP    ] needs root (CI runs as root)\n");
		return false;
	}
	if (need_helper && !fx->have_helper) {
		print_message("[  SKIP    ] %s not built next to the test (make check builds it)\n",
			      HELPER_NAME);
		return false;
	}
	return true;
}

/* The built-in default profile around the fixture: workspace rw, host ro,
 * network deny, ephemeral home, the helper's directory read-only, the
 * fixture's secret in deny_read. */
static void base_profile(const struct fixture *fx, struct sbx_profile *p)
{
	sbx_profile_init_default(p);
	sbx_strlcpy(p->workspace_root, sizeof(p->workspace_root), fx->ws);
	sbx_strlcpy(p->roots[0].path, sizeof(p->roots[0].path), fx->bin);
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_DENY;
	p->n_roots = 1;
	sbx_strlcpy(p->deny_read[p->n_deny_read], sizeof(p->deny_read[0]), fx->secret);
	p->n_deny_read++;
}

static void scenario_init(struct scenario *sc, const struct fixture *fx)
{
	memset(sc, 0, sizeof(*sc));
	sc->fx = fx;
	base_profile(fx, &sc->profile);
}

/* One more secret for the scenario's profile. */
static void scenario_deny_read(struct scenario *sc, const char *path)
{
	assert_true(sc->profile.n_deny_read < SBX_MAX_DENY);
	assert_int_equal(sbx_strlcpy(sc->profile.deny_read[sc->profile.n_deny_read++],
				     sizeof(sc->profile.deny_read[0]), path), 0);
}

/* One more read-only root for the scenario's profile. */
static void scenario_root_ro(struct scenario *sc, const char *path)
{
	struct sbx_profile *p = &sc->profile;

	assert_true(p->n_roots < SBX_MAX_ROOTS);
	assert_int_equal(sbx_strlcpy(p->roots[p->n_roots].path, sizeof(p->roots[0].path), path), 0);
	p->roots[p->n_roots].read = SBX_ACCESS_ALLOW;
	p->roots[p->n_roots].write = SBX_ACCESS_DENY;
	p->n_roots++;
}

/* ---- the agent child ---------------------------------------------------------- */

static int host_listener(int type, unsigned *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	/* Deliberately inheritable: it must not reach the program either. */
	int fd = socket(AF_INET, type | SOCK_NONBLOCK, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    (type == SOCK_STREAM && listen(fd, 4) != 0) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

/* After the run: did anything from inside reach the host sockets, and do
 * they work at all (the controls)? */
static void host_after(struct outcome *o, int tcp, unsigned tcp_port, int udp, unsigned udp_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char buf[16];
	int c, a;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a = accept(tcp, NULL, NULL);
	o->tcp_accept_errno = a < 0 ? errno : 0;
	if (a >= 0)
		close(a);
	o->udp_recv_errno = recv(udp, buf, sizeof(buf), MSG_DONTWAIT) < 0 ? errno : 0;

	sa.sin_port = htons((uint16_t)tcp_port);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c >= 0 && connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		for (int i = 0; i < 100; i++) {
			a = accept(tcp, NULL, NULL);
			if (a >= 0) {
				o->tcp_control = true;
				close(a);
				break;
			}
			usleep(10000);
		}
	}
	if (c >= 0)
		close(c);
	sa.sin_port = htons((uint16_t)udp_port);
	c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (c >= 0 && sendto(c, "ctl", 3, 0, (struct sockaddr *)&sa, sizeof(sa)) == 3) {
		for (int i = 0; i < 100; i++) {
			if (recv(udp, buf, sizeof(buf), MSG_DONTWAIT) == 3) {
				o->udp_control = true;
				break;
			}
			usleep(10000);
		}
	}
	if (c >= 0)
		close(c);
}

static void force_probe(enum probe_edit edit)
{
	const struct sbx_probe *real;
	struct sbx_probe copy;

	/* The parent's cache (root's view) must not leak into the agent. */
	sbx_probe_set_for_tests(NULL);
	if (edit == PROBE_REAL || sbx_probe_get(&real, NULL) != 0)
		return;
	copy = *real;
	if (edit == PROBE_NO_USERNS || edit == PROBE_NO_BOTH) {
		copy.userns = false;
		snprintf(copy.userns_why, sizeof(copy.userns_why),
			 PROBE_WHY ": user namespaces off; fix: user.max_user_namespaces > 0");
	}
	if (edit == PROBE_NO_LANDLOCK || edit == PROBE_NO_BOTH) {
		copy.landlock_abi = 0;
		snprintf(copy.landlock_why, sizeof(copy.landlock_why),
			 PROBE_WHY ": Landlock not in lsm=");
	}
	if (edit == PROBE_NO_NETNS)
		copy.netns = false;
	sbx_probe_set_for_tests(&copy);
}

#define CHILD_FAIL(o) do { (o)->child_error = __LINE__; goto send; } while (0)

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The caller under a filter that refuses any new network namespace with
 * EPERM (clone and unshare; clone3, whose flags a filter cannot read,
 * ENOSYS): a host whose policy refuses the agent network namespaces
 * while it allows the rest. */
static int refuse_netns(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return sbx_test_refuse_clone_flag(CLONE_NEWNET);
}

/* A caller with a second thread (a library user's program, say). */
static int start_idle_thread(void)
{
	pthread_t t;

	return pthread_create(&t, NULL, idle_thread, NULL);
}

static int run_as_agent(void *arg)
{
	const struct scenario *sc = arg;
	const struct fixture *fx = sc->fx;
	static struct outcome o;
	struct sbx_session s;
	struct sbx_error err = { 0 };
	struct sbx_run run;
	char out_path[300], report_path[300], tcp_s[16], udp_s[16], pid_s[16];
	char *argv[32];
	char *envp[] = {
		(char *)"PATH=/usr/bin:/bin", (char *)"TERM=dumb",
		(char *)"LD_PRELOAD=/nonexistent/libsbx-test-evil.so", NULL,
	};
	unsigned tcp_port = 0, udp_port = 0;
	int tcp = -1, udp = -1, argc = 0, status, out_fd = sc->out_fd;
	pid_t sleeper = -1;

	memset(&o, 0, sizeof(o));
	cur = &o;
	outer_pid = getpid();
	/* setresuid made us non-dumpable: /proc/self/{uid,gid}_map and
	 * setgroups would then be root's and the setup child could not
	 * write its own maps. */
	if (prctl(PR_SET_DUMPABLE, 1) != 0)
		CHILD_FAIL(&o);
	force_probe(sc->probe);

	/* An inheritable fd the sandbox must close (fd hygiene). */
	if (dup2(STDERR_FILENO, 9) != 9)
		CHILD_FAIL(&o);
	tcp = host_listener(SOCK_STREAM, &tcp_port);
	udp = host_listener(SOCK_DGRAM, &udp_port);
	if (tcp < 0 || udp < 0)
		CHILD_FAIL(&o);
	/* agent-shell without a syslog socket and without its fallback log
	 * file starts the engine with fd 3 free: the engine's own fds then
	 * land on the numbers it moves them to. */
	if (sc->low_fds_free) {
		out_fd = fcntl(out_fd, F_DUPFD_CLOEXEC, 20);
		tcp = fcntl(tcp, F_DUPFD_CLOEXEC, 20);
		udp = fcntl(udp, F_DUPFD_CLOEXEC, 20);
		if (out_fd < 0 || tcp < 0 || udp < 0 ||
		    close_range(3, 19, 0) != 0)
			CHILD_FAIL(&o);
	}
	/* A process of the same uid outside the sandbox. */
	sleeper = fork();
	if (sleeper < 0)
		CHILD_FAIL(&o);
	if (sleeper == 0) {
		for (;;)
			pause();
	}
	sleeper_pid = sleeper;
	if (sc->threaded && start_idle_thread() != 0)
		CHILD_FAIL(&o);
	if (sc->refuse_netns && refuse_netns() != 0)
		CHILD_FAIL(&o);

	memset(&s, 0, sizeof(s));
	sbx_strlcpy(s.user, sizeof(s.user), "sbxagent");
	s.uid = getuid();	/* the uid this child was dropped to */
	s.gid = getgid();
	/* The agent has no passwd home: like agent-shell, use one under the
	 * sandbox's private /tmp (without a mount view the host's, where the
	 * engine makes it the agent's own: a name teardown removes). */
	sbx_strlcpy(s.home, sizeof(s.home), HOME_DIR);
	sbx_strlcpy(s.workspace, sizeof(s.workspace), sc->workspace ? sc->workspace : fx->ws);
	if (sc->tmp_source)
		sbx_strlcpy(s.tmp_source, sizeof(s.tmp_source), sc->tmp_source);
	if (sbx_session_id_new(s.session_id, &err) != 0)
		CHILD_FAIL(&o);
	sbx_strlcpy(o.session_id, sizeof(o.session_id), s.session_id);
	sbx_strlcpy(s.client, sizeof(s.client), "local");
	sbx_strlcpy(s.service, sizeof(s.service), "test");

	snprintf(out_path, sizeof(out_path), "%s/probe.out", fx->ws);
	snprintf(tcp_s, sizeof(tcp_s), "%u", tcp_port);
	snprintf(udp_s, sizeof(udp_s), "%u", udp_port);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)sleeper);
	if (sc->probe_program) {
		argv[argc++] = (char *)fx->helper;
		argv[argc++] = (char *)"-o";
		argv[argc++] = out_path;
		argv[argc++] = (char *)"-w";
		argv[argc++] = fx->ws;
		argv[argc++] = (char *)"-x";
		argv[argc++] = (char *)fx->host;
		argv[argc++] = (char *)"-s";
		argv[argc++] = (char *)fx->secret;
		argv[argc++] = (char *)"-p";
		argv[argc++] = (char *)fx->public;
		argv[argc++] = (char *)"-t";
		argv[argc++] = tcp_s;
		argv[argc++] = (char *)"-u";
		argv[argc++] = udp_s;
		argv[argc++] = (char *)"-k";
		argv[argc++] = pid_s;
		argv[argc++] = (char *)"-e";
		argv[argc++] = (char *)"/bin/true";
		if (sc->gated_checks)
			argv[argc++] = (char *)"-g";
	} else {
		argv[argc++] = (char *)"/bin/sh";
		argv[argc++] = (char *)"-c";
		argv[argc++] = (char *)sc->script;
	}
	argv[argc] = NULL;

	memset(&run, 0, sizeof(run));
	run.profile = &sc->profile;
	run.session = &s;
	run.path = sc->run_path ? sc->run_path : argv[0];
	run.argv = argv;
	run.envp = envp;
	run.home_note = "ephemeral tmpfs home";
	snprintf(report_path, sizeof(report_path), "%s/report.json", fx->ws);
	run.report_file = report_path;
	run.landlock_abi_limit = sc->abi_limit;
	run.on_report = on_report;
	marker_to_check = sc->marker[0] ? sc->marker : NULL;
	made_at_report = sc->made_at_report;
	running_marker = sc->running_marker[0] ? sc->running_marker : NULL;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	o.ret = sbx_run_confined(&run, &o.report, &o.exit_code, &err);
	o.end_ms = ms_since(&t0);
	o.probe_measured = sbx_probe_namespaces_measured();
	memcpy(o.err, err.msg, sizeof(o.err));

	kill(sleeper, SIGKILL);
	while (waitpid(sleeper, &status, 0) < 0 && errno == EINTR)
		;
	sleeper = -1;
	o.no_child_left = waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD;
	host_after(&o, tcp, tcp_port, udp, udp_port);
send:
	if (sleeper > 0) {
		kill(sleeper, SIGKILL);
		waitpid(sleeper, NULL, 0);
	}
	if (write(out_fd, &o, sizeof(o)) != (ssize_t)sizeof(o))
		return 3;
	return 0;
}

/* The agent as the kernel's overflow uid: nobody/nogroup. */
static int run_as_overflow_uid(void *arg)
{
	if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
	    setresuid(65534, 65534, 65534) != 0)
		return 4;
	return run_as_agent(arg);
}

/* Run a scenario in a forked child dropped to the agent uid. */
static void run_scenario(struct scenario *sc, struct outcome *o)
{
	int fds[2], status;
	size_t got = 0;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	sc->out_fd = fds[1];
	status = sc->as_overflow_uid ? sbx_test_fork(false, run_as_overflow_uid, sc) :
				       sbx_test_fork(true, run_as_agent, sc);
	close(fds[1]);
	assert_int_equal(sbx_test_status_code(status), 0);
	while (got < sizeof(*o)) {
		ssize_t n = read(fds[0], (char *)o + got, sizeof(*o) - got);

		assert_true(n > 0);
		got += (size_t)n;
	}
	close(fds[0]);
	if (o->child_error)
		fail_msg("agent child set-up failed at test_apply.c:%d", o->child_error);
}

/* ---- reading what the helper wrote ------------------------------------------- */

struct results {
	char *text;
};

static void results_load(const struct fixture *fx, struct results *res)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/probe.out", fx->ws);
	res->text = NULL;
	if (stat(path, &st) != 0)
		fail_msg("%s: the helper wrote no results", path);
	res->text = calloc(1, (size_t)st.st_size + 2);
	assert_non_null(res->text);
	res->text[0] = '\n';
	{
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(read(fd, res->text + 1, (size_t)st.st_size), st.st_size);
		close(fd);
	}
}

/* The value of "name VALUE" (static buffer), or "(missing)". */
static const char *result(const struct results *res, const char *name)
{
	static char val[256];
	char key[64];
	const char *p;
	size_t n;

	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(res->text, key);
	if (!p)
		return "(missing)";
	p += strlen(key);
	n = strcspn(p, "\n");
	if (n >= sizeof(val))
		n = sizeof(val) - 1;
	memcpy(val, p, n);
	val[n] = '\0';
	return val;
}

#define EXPECT(res, name, want)                                                  \
	do {                                                                     \
		const char *got_ = result(res, name);                            \
		if (strcmp(got_, want) != 0)                                     \
			fail_msg("check %s: got %s, want %s; all:%s", name, got_, \
				 want, (res)->text);                             \
	} while (0)

static void dump_report(const struct sbx_report *r)
{
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		const struct sbx_report_entry *e = &r->entry[f];

		if (e->requested && (!e->achieved || !e->verified))
			print_message("  %s: requested, %s, %s: %s\n",
				      sbx_feature_name((enum sbx_feature)f),
				      e->achieved ? "achieved" : "NOT achieved",
				      e->verified ? "verified" : "not verified", e->detail);
	}
	if (r->refusal[0])
		print_message("  refusal: %s\n", r->refusal);
}

static bool file_exists(const struct fixture *fx, const char *name)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", fx->ws, name);
	return stat(path, &st) == 0;
}

/* The report the worker wrote inside the sandbox matches the one the
 * outer process received. */
static void check_report_file(const struct fixture *fx, const struct sbx_report *want)
{
	char path[300];
	struct sbx_report got;
	struct sbx_error err;
	char *buf = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/report.json", fx->ws);
	assert_int_equal(sbx_read_file(path, 1u << 20, &buf, &len, &err), 0);
	assert_int_equal(sbx_report_from_json(buf, len, &got, &err), 0);
	free(buf);
	assert_string_equal(got.session_id, want->session_id);
	assert_int_equal(got.level, want->level);
	assert_int_equal(got.guarantees, want->guarantees);
}

/* ---- the tests ------------------------------------------------------------------ */

/* Default profile, everything the kernel offers: each denial is proven from
 * inside next to the allowed thing, and the report says full. */
static void test_full_run(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	struct results res;

	if (!ready(fx, true))
		skip();
	scenario_init(&sc, fx);
	sc.probe_program = true;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	dump_report(&o.report);
	assert_int_equal(o.exit_code, 0);
	results_load(fx, &res);
	EXPECT(&res, "done", "OK");

	/* Report: full, every requested entry achieved and verified. */
	assert_int_equal(o.report.level, SBX_LEVEL_FULL);
	assert_true(o.report.floor_met);
	assert_string_equal(o.report.refusal, "");
	for (unsigned f = 0; f < SBX_F_COUNT; f++) {
		const struct sbx_report_entry *e = &o.report.entry[f];

		if (!e->requested)
			continue;
		if (!e->achieved || !e->verified)
			fail_msg("%s: achieved %d verified %d (%s)",
				 sbx_feature_name((enum sbx_feature)f), e->achieved, e->verified,
				 e->detail);
	}
	assert_string_equal(o.report.session_id, o.session_id);
	assert_string_equal(o.report.user, "sbxagent");
	assert_int_equal(o.report.uid, sbx_test_uid());
	assert_int_equal(o.report.landlock_abi, sbx_landlock_abi());
	assert_int_equal(o.on_report_calls, 1);
	assert_true(o.on_report_in_outer);
	check_report_file(fx, &o.report);

	/* Files: the workspace is writable; a host directory the agent owns
	 * is not (read-only bind: EROFS, before Landlock is asked); the
	 * secret is masked (/dev/null: empty) while its neighbour reads. */
	EXPECT(&res, "write_inside", "OK");
	EXPECT(&res, "write_outside", "EROFS");
	EXPECT(&res, "read_secret", "EMPTY");
	EXPECT(&res, "read_public", "OK");
	EXPECT(&res, "mount", "EPERM");

	/* Network: a private netns. The host's 127.0.0.1 listener is not
	 * there (ECONNREFUSED from the sandbox's own lo) and the host UDP
	 * socket receives nothing; TCP Fast Open and MPTCP are refused by
	 * seccomp (EPERM); ICMP ping sockets are refused by the new netns's
	 * ping_group_range "1 0" (EACCES), raw sockets by the missing
	 * CAP_NET_RAW (EPERM); AF_ALG/AF_PACKET/AF_VSOCK by seccomp
	 * (EAFNOSUPPORT). The sandbox's own loopback works. */
	EXPECT(&res, "tcp_host", "ECONNREFUSED");
	EXPECT(&res, "udp_host", "OK");
	assert_int_equal(o.tcp_accept_errno, EAGAIN);
	assert_int_equal(o.udp_recv_errno, EAGAIN);
	assert_true(o.tcp_control);
	assert_true(o.udp_control);
	EXPECT(&res, "tcp_fastopen", "EPERM");
	EXPECT(&res, "tcp_fastopen_connect", "EPERM");
	EXPECT(&res, "mptcp", "EPERM");
	EXPECT(&res, "ping", "EACCES");
	EXPECT(&res, "raw", "EPERM");
	EXPECT(&res, "af_alg", "EAFNOSUPPORT");
	EXPECT(&res, "af_packet", "EAFNOSUPPORT");
	EXPECT(&res, "af_vsock", "EAFNOSUPPORT");
	EXPECT(&res, "loopback_tcp", "OK");
	EXPECT(&res, "loopback_udp", "OK");

	/* Processes: the outside sleeper has no pid in the sandbox's pid
	 * namespace (ESRCH: it cannot even be named); ptrace is refused by
	 * seccomp before any lookup (EPERM); a child of its own can be
	 * signalled; the program is not PID 1. */
	EXPECT(&res, "kill_outside", "ESRCH");
	EXPECT(&res, "ptrace_outside", "EPERM");
	EXPECT(&res, "kill_inside", "OK");
	assert_string_not_equal(result(&res, "pid"), "1");
	EXPECT(&res, "unshare_user", "EPERM");
	EXPECT(&res, "unshare_net", "EPERM");

	/* Syscall filter: foreign arches die, the native call works. */
	EXPECT(&res, "native_syscall", "OK");
	EXPECT(&res, "x32_syscall", "SIGSYS");
	/* Where int 0x80 has no entry at all (it faults unconfined too, as
	 * under some hypervisors), the call cannot run either way. */
	EXPECT(&res, "int80_syscall", sbx_test_int80_native() == 0 ? "SIGSEGV" : "SIGSYS");
	EXPECT(&res, "tty", "OK");
	EXPECT(&res, "tiocgwinsz", "OK");
	EXPECT(&res, "tiocsti", "EPERM");
	EXPECT(&res, "tiocsti_high", "EPERM");
	EXPECT(&res, "tioclinux", "EPERM");
	/* /dev/null: the driver would say ENOTTY; Landlock's IOCTL_DEV
	 * (granted on terminals only) refuses the harmless TIOCGWINSZ with
	 * EACCES, and seccomp, which runs first, answers EPERM for the
	 * dangerous ones whatever the fd. */
	EXPECT(&res, "null_tiocgwinsz", "EACCES");
	EXPECT(&res, "null_tiocsti", "EPERM");
	EXPECT(&res, "null_tiocsti_high", "EPERM");
	EXPECT(&res, "null_tioclinux", "EPERM");
	EXPECT(&res, "io_uring_setup", "EPERM");
	EXPECT(&res, "keyctl", "EPERM");
	EXPECT(&res, "add_key", "EPERM");
	EXPECT(&res, "bpf", "EPERM");
	EXPECT(&res, "perf_event_open", "EPERM");
	EXPECT(&res, "userfaultfd", "EPERM");
	EXPECT(&res, "open_by_handle_at", "EPERM");
	/* command = allow: memfds are not restricted, exec works. */
	EXPECT(&res, "memfd_exec", "OK");
	EXPECT(&res, "memfd_noexec_seal", "OK");
	EXPECT(&res, "exec_self", "OK");
	EXPECT(&res, "exec_unlisted", "OK");
	EXPECT(&res, "loader_unlisted", "exit=0");
	EXPECT(&res, "loader_self", "exit=0");

	/* Privileges: nothing left, no_new_privs, seccomp filter mode. */
	EXPECT(&res, "CapInh", "0000000000000000");
	EXPECT(&res, "CapPrm", "0000000000000000");
	EXPECT(&res, "CapEff", "0000000000000000");
	EXPECT(&res, "CapBnd", "0000000000000000");
	EXPECT(&res, "CapAmb", "0000000000000000");
	EXPECT(&res, "NoNewPrivs", "1");
	EXPECT(&res, "Seccomp", "2");
	/* Hygiene: fd 9 and the host sockets were inheritable and did not
	 * reach the program; the environment was rebuilt. */
	EXPECT(&res, "fds", "0,1,2");
	EXPECT(&res, "env_ld_preload", "ABSENT");
	EXPECT(&res, "env_home", HOME_DIR);
	EXPECT(&res, "proc_self_mem_write", "EACCES");	/* Landlock: /proc read-only */
	EXPECT(&res, "proc_self_mem_read", "OK");
	free(res.text);
}

/* command = gated: only the allow-list executes, memfd exec and fd exec
 * are refused by seccomp. */
static void test_gated_run(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	struct results res;

	if (!ready(fx, true))
		skip();
	scenario_init(&sc, fx);
	sc.profile.command = SBX_ACCESS_GATED;
	sbx_strlcpy(sc.profile.gate_allow[0], sizeof(sc.profile.gate_allow[0]), fx->helper);
	sc.profile.n_gate = 1;
	sc.probe_program = true;
	sc.gated_checks = true;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	dump_report(&o.report);
	assert_int_equal(o.exit_code, 0);
	assert_int_equal(o.report.level, SBX_LEVEL_FULL);
	assert_true(o.report.entry[SBX_F_COMMAND_GATE].requested);
	assert_true(o.report.entry[SBX_F_COMMAND_GATE].achieved);
	assert_true(o.report.entry[SBX_F_COMMAND_GATE].verified);
	results_load(fx, &res);
	EXPECT(&res, "done", "OK");
	EXPECT(&res, "exec_self", "OK");		/* listed */
	EXPECT(&res, "exec_unlisted", "EACCES");	/* noexec host, Landlock EXECUTE */
	/* ld.so cannot load what the gate does not list: the host is noexec
	 * (Landlock alone would let this run), while the listed program
	 * loads through it. */
	EXPECT(&res, "loader_unlisted", "exit=127");
	EXPECT(&res, "loader_self", "exit=0");
	EXPECT(&res, "memfd_exec", "EPERM");		/* seccomp */
	EXPECT(&res, "memfd_noexec_seal", "EPERM");	/* seccomp: ld.so maps sealed memfds */
	EXPECT(&res, "execveat_fd", "EPERM");		/* seccomp */
	EXPECT(&res, "write_inside", "OK");
	free(res.text);
}

/* on_report runs once, in the outer process, while the command still runs;
 * exit codes pass through (status, 128+signal). */
static void test_report_timing_and_exit(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	char script[512];

	if (!ready(fx, false))
		skip();
	scenario_init(&sc, fx);
	snprintf(sc.marker, sizeof(sc.marker), "%s/marker", fx->ws);
	snprintf(script, sizeof(script), "sleep 0.4; : > %s; exit 7", sc.marker);
	sc.script = script;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 7);
	assert_int_equal(o.on_report_calls, 1);
	assert_true(o.on_report_in_outer);
	assert_false(o.marker_at_report);	/* before the command ended */
	assert_true(file_exists(fx, "marker"));	/* and the command did run */
	if (o.report_ms > o.end_ms - 300)
		fail_msg("on_report at %ld ms, run ended at %ld ms", o.report_ms, o.end_ms);
	assert_true(o.no_child_left);

	scenario_init(&sc, fx);
	sc.script = "kill -TERM $$; sleep 5";
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, 0);
	assert_int_equal(o.exit_code, 128 + SIGTERM);
	assert_int_equal(o.on_report_calls, 1);
}

/*
 * Who runs the session. The outer process clones the init straight into
 * the new namespaces: its child is PID 1 of the session's pid namespace,
 * and the sandbox is that init alone, with the unix supervisor (the
 * built-in profile denies the network, so connect() is decided outside)
 * as one of its threads: one process besides the outer one. A caller with
 * a second thread cannot use the raw clone (glibc's fork handlers would
 * not run): its child is the setup process, one pid namespace up, whose
 * child is the init; the report is the same either way. The supervisor
 * thread is proved by the report's unix_sockets entry, which its canary
 * only passes when a connect() is answered.
 */
static void test_processes_of_a_session(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o, threaded;
	char script[512];

	if (!ready(fx, false))
		skip();
	SBX_TEST_REQUIRE_USERNS();
	scenario_init(&sc, fx);
	snprintf(sc.running_marker, sizeof(sc.running_marker), "%s/running", fx->ws);
	snprintf(script, sizeof(script), ": > %s; sleep 1", sc.running_marker);
	sc.script = script;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 0);
	assert_true(o.report.floor_met);
	assert_true(o.report.entry[SBX_F_UNIX_SOCKETS].achieved);
	if (o.top_levels != 2 || o.top_inner != 1)
		fail_msg("the outer's child is pid %d in %d pid namespace(s): not the init",
			 o.top_inner, o.top_levels);
	if (o.sandbox_procs != 1)	/* the init */
		fail_msg("%d processes of the sandbox: %s", o.sandbox_procs, o.tree);
	assert_true(o.no_child_left);

	unlink(sc.running_marker);
	scenario_init(&sc, fx);
	snprintf(sc.running_marker, sizeof(sc.running_marker), "%s/running", fx->ws);
	sc.script = script;
	sc.threaded = true;
	run_scenario(&sc, &threaded);
	if (threaded.ret != 0)
		fail_msg("sbx_run_confined with a thread: %d %s", threaded.ret, threaded.err);
	assert_int_equal(threaded.exit_code, 0);
	assert_int_equal(threaded.top_levels, 1);		/* the setup process */
	assert_int_equal(threaded.init_levels, 2);
	assert_int_equal(threaded.init_inner, 1);
	if (threaded.sandbox_procs != 2)	/* setup, init */
		fail_msg("%d processes of the sandbox: %s", threaded.sandbox_procs, threaded.tree);
	assert_int_equal(threaded.report.level, o.report.level);
	for (int f = 0; f < SBX_F_COUNT; f++) {
		if (threaded.report.entry[f].achieved != o.report.entry[f].achieved)
			fail_msg("%s: %d with a thread, %d without", sbx_feature_name(f),
				 threaded.report.entry[f].achieved, o.report.entry[f].achieved);
	}
}

/* The direct path's one clone is the namespace probe: a session the
 * kernel lets make every namespace runs full and no probe child ran. A
 * caller the kernel refuses a network namespace (a filter here) has its
 * clone refused before anything runs, measures, and is decided again: the
 * same degraded session a measured probe gives, with the probe's reason,
 * and every other namespace still made. */
static void test_no_probe_before_the_clone(void **state)
{
	const struct fixture *fx = *state;
	const struct sbx_report_entry *e;
	struct scenario sc;
	struct outcome o, refused;

	if (!ready(fx, false))
		skip();
	SBX_TEST_REQUIRE_USERNS();
	scenario_init(&sc, fx);
	sc.script = "exit 3";
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 3);
	assert_int_equal(o.report.level, SBX_LEVEL_FULL);
	assert_true(sbx_report_holds(&o.report, SBX_F_NETNS));
	assert_false(o.probe_measured);

	scenario_init(&sc, fx);
	sc.script = "exit 3";
	sc.refuse_netns = true;
	run_scenario(&sc, &refused);
	if (refused.ret != 0)
		fail_msg("sbx_run_confined, netns refused: %d %s", refused.ret, refused.err);
	assert_int_equal(refused.exit_code, 3);
	assert_true(refused.probe_measured);
	e = &refused.report.entry[SBX_F_NETNS];
	assert_true(e->requested);
	assert_false(e->achieved);
	if (!strstr(e->detail, "network namespaces unavailable"))
		fail_msg("netns detail is not the measured probe's: %s", e->detail);
	assert_true(sbx_report_holds(&refused.report, SBX_F_PIDNS));
	assert_true(sbx_report_holds(&refused.report, SBX_F_MOUNTNS));
	assert_true(sbx_report_holds(&refused.report, SBX_F_USERNS));
	assert_int_not_equal(refused.report.level, SBX_LEVEL_FULL);
}

/* A root-owned unix stream socket at path, mode 0666 (any uid's connect
 * is allowed by DAC): its listening fd. */
static int foreign_listener(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
	    chmod(path, 0666) != 0 || listen(fd, 4) != 0)
		return -1;
	return fd;
}

static int helper_unix_allow(const struct fixture *fx, const char *ws, enum probe_edit probe,
			     const char *allow, bool overflow, const char *mode, const char *path,
			     struct outcome *o)
{
	struct scenario sc;
	char script[1024];

	scenario_init(&sc, fx);
	sc.as_overflow_uid = overflow;
	sc.workspace = ws;
	sc.probe = probe;
	/* Every path runs: the unix_sockets entry is what is read. */
	sc.profile.require = 0;
	sc.profile.min_level = SBX_LEVEL_NONE;
	sbx_strlcpy(sc.profile.workspace_root, sizeof(sc.profile.workspace_root), ws);
	if (allow) {
		sbx_strlcpy(sc.profile.unix_allow[0], sizeof(sc.profile.unix_allow[0]), allow);
		sc.profile.n_unix_allow = 1;
	}
	snprintf(script, sizeof(script), "exec %s %s %s", fx->helper, mode, path);
	sc.script = script;
	run_scenario(&sc, o);
	if (o->ret != 0)
		fail_msg("sbx_run_confined (%s %s): %d %s", mode, path, o->ret, o->err);
	return o->exit_code;
}

static int helper_unix(const struct fixture *fx, const char *ws, enum probe_edit probe,
		       bool overflow, const char *mode, const char *path, struct outcome *o)
{
	return helper_unix_allow(fx, ws, probe, NULL, overflow, mode, path, o);
}

/* The unix_sockets entry was verified, with the rule in its detail. */
static void assert_unix_rule(const struct outcome *o)
{
	const struct sbx_report_entry *e = &o->report.entry[SBX_F_UNIX_SOCKETS];

	assert_true(e->achieved);
	if (!e->verified)
		fail_msg("unix_sockets not verified: %s", e->detail);
	if (!strstr(e->detail, "only sockets this session bound") ||
	    !strstr(e->detail, "not this uid's others"))
		fail_msg("unix_sockets detail does not state the rule: %s", e->detail);
}

/*
 * The unix supervisor's rule through the library (sbx_run_confined), on
 * the full path and every one the kernel can be told to lack: a socket is
 * the session's own only if the session bound it. Refused (EACCES): root's
 * 0666 listener in the workspace, and a listener in the workspace that
 * belongs to the agent's own uid but was bound outside the sandbox (the
 * user's tmux or IDE; before, owning the file was enough). Connected (the
 * controls): sockets the session binds in the workspace and /tmp. The same
 * for the test uid and for the overflow uid (nobody), whose every other
 * owner reads as itself inside a user namespace.
 */
static void test_unix_own_sockets(void **state)
{
	static const enum probe_edit probes[] = { PROBE_REAL, PROBE_NO_LANDLOCK, PROBE_NO_USERNS,
						  PROBE_NO_BOTH };
	struct fixture *fx = *state;
	struct outcome *o = calloc(1, sizeof(*o));
	char ws[64], rootsock[128], agentsock[128], mine[128];

	if (!ready(fx, false))
		skip();
	SBX_TEST_REQUIRE_USERNS();
	assert_non_null(o);
	for (int nobody = 0; nobody < 2; nobody++) {
		uid_t uid = nobody ? 65534 : sbx_test_uid();
		gid_t gid = nobody ? 65534 : sbx_test_gid();
		int lroot, lagent;

		snprintf(ws, sizeof(ws), "/var/tmp/sbx-test-apply-own-XXXXXX");
		assert_non_null(mkdtemp(ws));
		sbx_strlcpy(fx->extra, sizeof(fx->extra), ws);	/* teardown removes it */
		assert_int_equal(chmod(ws, 0755), 0);
		assert_int_equal(chown(ws, uid, gid), 0);
		snprintf(rootsock, sizeof(rootsock), "%s/root.sock", ws);
		snprintf(agentsock, sizeof(agentsock), "%s/agent.sock", ws);
		snprintf(mine, sizeof(mine), "%s/mine.sock", ws);
		lroot = foreign_listener(rootsock);
		lagent = foreign_listener(agentsock);
		assert_true(lroot >= 0 && lagent >= 0);
		assert_int_equal(chown(agentsock, uid, gid), 0);
		for (size_t k = 0; k < ARRAY_SIZE(probes); k++) {
			assert_int_equal(helper_unix(fx, ws, probes[k], nobody, "-c", rootsock, o),
					 EACCES);
			assert_unix_rule(o);
			assert_int_equal(helper_unix(fx, ws, probes[k], nobody, "-c", agentsock, o),
					 EACCES);
			assert_int_equal(helper_unix(fx, ws, probes[k], nobody, "-C", mine, o), 0);
			unlink(mine);
			assert_int_equal(helper_unix(fx, ws, probes[k], nobody, "-C", "/tmp/own.sock",
						     o), 0);
			unlink("/tmp/own.sock");	/* the host's, without a view */
		}
		close(lroot);
		close(lagent);
		sbx_test_rmtree(ws);
		fx->extra[0] = '\0';
	}
	free(o);
}

/*
 * unix_allow lets a place through whoever bound there, but not a directory
 * the agent may add names to (its own, or one open to others): a hard
 * link or a rename brings any socket of its uid there. Allowed: a socket
 * of the agent's uid in a root-owned 0755 directory under the entry.
 * Refused: the same listener through a hard link in the agent's own
 * workspace under an entry, and (the control) without any entry. The
 * canary's socket in /tmp stays refused with /tmp listed: /tmp is open to
 * all.
 */
static void test_unix_allow_canary(void **state)
{
	struct fixture *fx = *state;
	struct outcome *o = calloc(1, sizeof(*o));
	char ws[64], rootdir[64], agentsock[128], linked[128];
	int lagent;

	if (!ready(fx, false))
		skip();
	SBX_TEST_REQUIRE_USERNS();
	assert_non_null(o);
	snprintf(ws, sizeof(ws), "/var/tmp/sbx-test-apply-ovc-XXXXXX");
	assert_non_null(mkdtemp(ws));
	sbx_strlcpy(fx->extra, sizeof(fx->extra), ws);	/* teardown removes it */
	assert_int_equal(chmod(ws, 0755), 0);
	assert_int_equal(chown(ws, sbx_test_uid(), sbx_test_gid()), 0);
	snprintf(rootdir, sizeof(rootdir), "/var/tmp/sbx-test-apply-ual-XXXXXX");
	assert_non_null(mkdtemp(rootdir));
	assert_int_equal(chmod(rootdir, 0755), 0);
	snprintf(agentsock, sizeof(agentsock), "%s/agent.sock", rootdir);
	snprintf(linked, sizeof(linked), "%s/linked.sock", ws);
	lagent = foreign_listener(agentsock);
	assert_true(lagent >= 0);
	assert_int_equal(chown(agentsock, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(link(agentsock, linked), 0);

	assert_int_equal(helper_unix_allow(fx, ws, PROBE_REAL, rootdir, false, "-c", agentsock, o),
			 0);
	assert_unix_rule(o);
	if (!strstr(o->report.entry[SBX_F_UNIX_SOCKETS].detail, ", and unix_allow"))
		fail_msg("unix_sockets detail does not name unix_allow: %s",
			 o->report.entry[SBX_F_UNIX_SOCKETS].detail);
	assert_int_equal(helper_unix_allow(fx, ws, PROBE_REAL, ws, false, "-c", linked, o), EACCES);
	assert_int_equal(helper_unix_allow(fx, ws, PROBE_REAL, "/tmp", false, "-c", agentsock, o),
			 EACCES);
	assert_unix_rule(o);
	assert_int_equal(helper_unix(fx, ws, PROBE_REAL, false, "-c", agentsock, o), EACCES);
	close(lagent);
	unlink(linked);
	sbx_test_rmtree(rootdir);
	sbx_test_rmtree(ws);
	fx->extra[0] = '\0';
	free(o);
}

/* Session limits the kernel does not enforce are not reported: 1 MiB of
 * memory and 1 pid for the whole session are in force on no test host's
 * cgroup (nobody set them; the PAM stage is what would), so the entry is
 * not achieved, says which file disagrees, and resource_limits drops out
 * of the guarantees while the rlimits still hold. The positive control
 * runs on Debian 12 with systemd (tests/vm: achieved, and enforced). */
static void test_session_limits_not_claimed(void **state)
{
	const struct fixture *fx = *state;
	const struct sbx_report_entry *e;
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	scenario_init(&sc, fx);
	sc.profile.limits.set_mask |= (1u << SBX_LIMIT_MEMORY_MAX) | (1u << SBX_LIMIT_PIDS_MAX);
	sc.profile.limits.value[SBX_LIMIT_MEMORY_MAX] = 1u << 20;
	sc.profile.limits.value[SBX_LIMIT_PIDS_MAX] = 1;
	sc.script = "exit 0";
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 0);
	e = &o.report.entry[SBX_F_CGROUP_LIMITS];
	assert_true(e->requested);
	assert_false(e->achieved);
	assert_false(e->verified);
	if (!strstr(e->detail, "memory.max") || !strstr(e->detail, "pids.max"))
		fail_msg("cgroup_limits detail names neither file: %s", e->detail);
	assert_true(sbx_report_holds(&o.report, SBX_F_RLIMITS));
	assert_false(o.report.guarantees & SBX_G_RESOURCE_LIMITS);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	/* Control: without them, the same run holds resource_limits. */
	scenario_init(&sc, fx);
	sc.script = "exit 0";
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, 0);
	assert_false(o.report.entry[SBX_F_CGROUP_LIMITS].requested);
	assert_true(o.report.guarantees & SBX_G_RESOURCE_LIMITS);
}

/* session_time: the init ends the whole session when it runs out (the
 * command sees SIGHUP, as on a disconnect), with a control that a command
 * finishing in time is untouched. */
static void test_session_time(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	struct timespec start, end;
	long ms;

	if (!ready(fx, false))
		skip();
	scenario_init(&sc, fx);
	sc.profile.limits.value[SBX_LIMIT_SESSION_TIME] = 1;
	sc.profile.limits.set_mask |= 1u << SBX_LIMIT_SESSION_TIME;
	sc.script = "sleep 30";
	clock_gettime(CLOCK_MONOTONIC, &start);
	run_scenario(&sc, &o);
	clock_gettime(CLOCK_MONOTONIC, &end);
	ms = (end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1000000;
	assert_int_equal(o.ret, 0);
	assert_int_equal(o.exit_code, 128 + SIGHUP);
	if (ms > 5000)
		fail_msg("session_time 1 s: the run took %ld ms", ms);
	assert_true(o.no_child_left);

	scenario_init(&sc, fx);
	sc.profile.limits.value[SBX_LIMIT_SESSION_TIME] = 5;
	sc.profile.limits.set_mask |= 1u << SBX_LIMIT_SESSION_TIME;
	sc.script = "exit 3";
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, 0);
	assert_int_equal(o.exit_code, 3);
}

/* No process of the agent's uid is left (they may take a moment to go). */
static bool agent_procs_gone(void)
{
	for (int i = 0; i < 100; i++) {
		if (sbx_test_procs_of(sbx_test_uid(), false) == 0)
			return true;
		usleep(20 * 1000);
	}
	print_message("  %d process(es) of uid %u left\n", sbx_test_procs_of(sbx_test_uid(), false),
		      (unsigned)sbx_test_uid());
	sbx_test_procs_dump(sbx_test_uid());
	sbx_test_procs_of(sbx_test_uid(), true);
	return false;
}

static long run_timed(struct scenario *sc, struct outcome *o)
{
	struct timespec start, end;

	clock_gettime(CLOCK_MONOTONIC, &start);
	run_scenario(sc, o);
	clock_gettime(CLOCK_MONOTONIC, &end);
	return (end.tv_sec - start.tv_sec) * 1000 + (end.tv_nsec - start.tv_nsec) / 1000000;
}

/*
 * session_time cannot be outlived: a program that ignores SIGHUP is killed
 * SBX_SESSION_GRACE seconds later, with everything it started, on the full
 * path and without user namespaces (where no pid namespace ends the tree).
 * The deadline is kept by the outer process, which never blocks on the
 * terminal relay.
 */
static void test_session_time_not_outlived(void **state)
{
	const struct fixture *fx = *state;
	static const enum probe_edit paths[] = { PROBE_REAL, PROBE_NO_USERNS, PROBE_NO_LANDLOCK };
	struct scenario sc;
	struct outcome o;
	long ms;

	if (!ready(fx, false))
		skip();
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		scenario_init(&sc, fx);
		sc.probe = paths[i];
		sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		sc.profile.limits.value[SBX_LIMIT_SESSION_TIME] = 1;
		sc.profile.limits.set_mask |= 1u << SBX_LIMIT_SESSION_TIME;
		/* HUP ignored, and a detached child that ignores it too. */
		sc.script = "trap '' HUP; setsid sh -c 'trap \"\" HUP; sleep 60' </dev/null >/dev/null 2>&1 & "
			    "sleep 60";
		ms = run_timed(&sc, &o);
		print_message("  path %zu: exit %d after %ld ms\n", i, o.exit_code, ms);
		assert_int_equal(o.ret, 0);
		assert_int_equal(o.exit_code, 128 + SIGKILL);
		if (ms < 1000 * (1 + SBX_SESSION_GRACE) - 200 || ms > 1000 * (1 + SBX_SESSION_GRACE) + 3000)
			fail_msg("session_time 1 s + grace %d s: the run took %ld ms", SBX_SESSION_GRACE, ms);
		assert_true(agent_procs_gone());
		/* A SIGALRM from inside is not the session's timer. */
		scenario_init(&sc, fx);
		sc.probe = paths[i];
		sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		sc.profile.limits.value[SBX_LIMIT_SESSION_TIME] = 30;
		sc.profile.limits.set_mask |= 1u << SBX_LIMIT_SESSION_TIME;
		sc.script = "kill -ALRM $PPID 2>/dev/null; kill -ALRM 1 2>/dev/null; sleep 0.3; exit 4";
		run_scenario(&sc, &o);
		assert_int_equal(o.exit_code, 4);
	}
}

/* What a session leaves running is ended with it, also without a pid
 * namespace: the outer process is a subreaper and kills every descendant. */
static void test_leftovers_ended(void **state)
{
	const struct fixture *fx = *state;
	static const enum probe_edit paths[] = { PROBE_REAL, PROBE_NO_USERNS };
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		scenario_init(&sc, fx);
		sc.probe = paths[i];
		sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		/* A daemon that double-forks away and keeps forking. */
		sc.script = "setsid sh -c 'for i in 1 2 3 4 5 6 7 8; do (sleep 60 &) ; done; sleep 60' "
			    "</dev/null >/dev/null 2>&1 & sleep 0.3; exit 0";
		run_scenario(&sc, &o);
		assert_int_equal(o.ret, 0);
		assert_int_equal(o.exit_code, 0);
		assert_true(agent_procs_gone());
	}
}

/*
 * The one decision: what sbx_decide() expects (and --explain prints, and
 * the PAM stage refuses by) is what a real session reports, for every
 * profile of the shipped config after its ceiling, on the full kernel and
 * every forced probe (no user namespaces, no Landlock, neither, no network
 * namespace, Landlock held at ABI 2 as on Debian 12 and at 5). The extra
 * roots (/opt/toolchains, /srv/agents/...) are re-pointed at directories
 * of the fixture, with their modes as shipped: this machine has none of
 * them, and a missing root ends a session.
 */
static void test_expectation_is_the_report(void **state)
{
	static const struct { enum probe_edit edit; int abi; const char *name; } paths[] = {
		{ PROBE_REAL, 0, "full" }, { PROBE_NO_USERNS, 0, "no userns" },
		{ PROBE_NO_LANDLOCK, 0, "no Landlock" }, { PROBE_NO_BOTH, 0, "neither" },
		{ PROBE_NO_NETNS, 0, "no netns" }, { PROBE_REAL, 2, "Landlock ABI 2" },
		{ PROBE_REAL, 5, "Landlock ABI 5" },
	};
	const struct fixture *fx = *state;
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	struct sbx_report *want = calloc(1, sizeof(*want));
	struct scenario *sc = calloc(1, sizeof(*sc));
	struct outcome *o = calloc(1, sizeof(*o));
	unsigned compared = 0, mismatches = 0;
	char conf[PATH_MAX];

	assert_non_null(want);
	assert_non_null(sc);
	assert_non_null(o);
	if (!ready(fx, false))
		skip();
	assert_non_null(realpath("etc/agent-sandbox.conf", conf));
	if (sbx_config_load(conf, SBX_CONFIG_SKIP_TRUST, &cfg, &err) != 0)
		fail_msg("shipped config: %s", err.msg);
	for (size_t i = 0; i < cfg->n_profiles; i++) {
		for (size_t k = 0; k < ARRAY_SIZE(paths); k++) {
			const struct sbx_probe *probe;
			struct sbx_decision d;
			struct sbx_decide_opts opts = { .landlock_abi_limit = paths[k].abi };

			scenario_init(sc, fx);
			assert_int_equal(sbx_profile_restrict(&cfg->profiles[i], &cfg->ceiling,
							      &sc->profile, &err), 0);
			assert_int_equal(sbx_profile_expand(&sc->profile, "sbxagent", HOME_DIR,
							    &err), 0);
#ifdef SBX_SANITIZER
			/* ASan reserves terabytes of address space: under
			 * the shipped `as` limit the sandboxed side cannot
			 * start. Not a decision input. */
			sc->profile.limits.set_mask &= ~(1u << SBX_LIMIT_AS);
#endif
			for (size_t j = 0; j < sc->profile.n_roots; j++) {
				char *root = sc->profile.roots[j].path;

				snprintf(root, SBX_PATH_MAX, "%s/root%zu", fx->host, j);
				assert_true(mkdir(root, 0755) == 0 || errno == EEXIST);
			}
			sc->probe = paths[k].edit;
			sc->abi_limit = paths[k].abi;
			sc->script = "exit 0";
			/* The expectation, from the probe the agent child will
			 * see (forced the same way, here in the parent). */
			force_probe(paths[k].edit);
			assert_int_equal(sbx_probe_get(&probe, &err), 0);
			assert_int_equal(sbx_decide(&sc->profile, probe, &opts, &d, &err), 0);
			sbx_report_init(want, &sc->profile);
			sbx_decision_expect(&d, want);
			sbx_probe_set_for_tests(NULL);

			run_scenario(sc, o);
			print_message("  %-8s %-15s expected %-8s floor %-3s, session %-8s floor %-3s "
				      "(ret %d)\n", cfg->profiles[i].name, paths[k].name,
				      sbx_level_name(want->level), want->floor_met ? "met" : "not",
				      sbx_level_name(o->report.level),
				      o->report.floor_met ? "met" : "not", o->ret);
			if (o->ret != 0) {
				print_message("    session error: %s\n", o->err);
				mismatches++;
				continue;
			}
			for (unsigned f = 0; f < SBX_F_COUNT; f++) {
				const struct sbx_report_entry *w = &want->entry[f], *g = &o->report.entry[f];

				compared++;
				if (w->requested == g->requested && w->achieved == g->achieved &&
				    g->verified == g->achieved)
					continue;
				mismatches++;
				print_message("    %s: expected %s%s (%s), session %s%s%s (%s)\n",
					      sbx_feature_name((enum sbx_feature)f),
					      w->requested ? "requested, " : "",
					      w->achieved ? "achieved" : "not achieved", w->detail,
					      g->requested ? "requested, " : "",
					      g->achieved ? "achieved" : "not achieved",
					      g->achieved && !g->verified ? " but not verified" : "",
					      g->detail);
			}
			if (want->level != o->report.level || want->floor_met != o->report.floor_met ||
			    want->guarantees != o->report.guarantees)
				mismatches++;
		}
	}
	print_message("  %u entries compared, %u mismatches\n", compared, mismatches);
	sbx_config_free(cfg);
	free(want);
	free(sc);
	free(o);
	assert_int_equal(mismatches, 0);
	assert_true(compared >= 3 * ARRAY_SIZE(paths) * SBX_F_COUNT);
}

/* A deny_read entry named through a root-owned symlink in a root-only
 * directory (/run here) covers the file it points at: the mount view's
 * fresh /run has no such link, and a mask at the written path left the
 * real file readable while the canary, checking the written path, said
 * hidden. */
static void test_deny_read_through_link(void **state)
{
	const struct fixture *fx = *state;
	static const enum probe_edit paths[] = { PROBE_REAL, PROBE_NO_LANDLOCK, PROBE_NO_USERNS };
	char link[64], script[512], *slash;
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(link, sizeof(link), "/run/sbx-test-apply-link-%d", (int)getpid());
	assert_int_equal(symlink(fx->host, link), 0);
	slash = strrchr(fx->secret, '/');
	assert_non_null(slash);
	/* A mask leaves an empty file or none: any content read is a leak. */
	snprintf(script, sizeof(script), "grep -q . %s 2>/dev/null && exit 9; grep -q . %s || exit 8; exit 0",
		 fx->secret, fx->public);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		scenario_init(&sc, fx);
		sc.probe = paths[i];
		sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		/* base_profile put the secret last, by its real path: name it
		 * through the link instead. */
		snprintf(sc.profile.deny_read[sc.profile.n_deny_read - 1],
			 sizeof(sc.profile.deny_read[0]), "%s%s", link, slash);
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0) {
			unlink(link);
			fail_msg("path %zu: sbx_run_confined: %d %s", i, o.ret, o.err);
		}
		if (o.exit_code != 0) {
			unlink(link);
			dump_report(&o.report);
			print_message("  deny_read: %s\n", o.report.entry[SBX_F_DENY_READ].detail);
			fail_msg("path %zu: exit %d (9: the secret was read; 8: the control was not)", i,
				 o.exit_code);
		}
	}
	unlink(link);
}

/*
 * A secret and a read-only root two levels down the workspace: the
 * directories above them are pinned, so a session cannot move the real
 * tree aside and leave a decoy for the next session's mask to cover.
 * Renaming them fails with EBUSY; the controls: a sibling directory
 * renames, the pinned one takes new files and renames inside it, and a
 * second session still hides the secret and keeps the root read-only.
 */
static bool contains(const char *hay, const char *needle);

static void test_pinned_above_narrower_mounts(void **state)
{
	const struct fixture *fx = *state;
	char keys[512], frozen[512], script[2048], path[600];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(keys, sizeof(keys), "%s/config/keys", fx->ws);
	snprintf(frozen, sizeof(frozen), "%s/lib/frozen", fx->ws);
	snprintf(path, sizeof(path), "%s/config", fx->ws);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(mkdir(keys, 0755), 0);
	snprintf(path, sizeof(path), "%s/lib", fx->ws);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(mkdir(frozen, 0755), 0);
	snprintf(path, sizeof(path), "%s/prod.key", keys);
	write_text(path, SECRET_TEXT);
	snprintf(path, sizeof(path), "%s/policy", frozen);
	write_text(path, PUBLIC_TEXT);
	snprintf(path, sizeof(path), "%s/free", fx->ws);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(script, sizeof(script), "chown -R %u:%u %s", (unsigned)sbx_test_uid(),
		 (unsigned)sbx_test_gid(), fx->ws);
	assert_int_equal(system(script), 0);

	/* Exit codes name the step that went wrong. */
	snprintf(script, sizeof(script),
		 "export LC_ALL=C; cd %s || exit 2\n"
		 "grep -q . config/keys/prod.key 2>/dev/null && exit 3\n"
		 "grep -q . lib/frozen/policy || exit 4\n"
		 "mv config config.old 2>e; r=$?; [ $r -eq 0 ] && exit 5\n"
		 "grep -q 'Device or resource busy' e || exit 6\n"
		 "mv lib lib.old 2>e && exit 7; grep -q 'Device or resource busy' e || exit 8\n"
		 "echo x >lib/frozen/policy 2>/dev/null && exit 9\n"
		 "mv free free2 && mv free2 free || exit 10\n"
		 "touch config/new && mv config/new config/new2 && rm config/new2 || exit 11\n"
		 "rm -f e; exit 0\n", fx->ws);
	for (int round = 0; round < 2; round++) {
		scenario_init(&sc, fx);
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, keys);
		scenario_root_ro(&sc, frozen);
		sc.profile.require |= SBX_G_READ_BOUNDARY | SBX_G_WRITE_BOUNDARY;
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("round %d: sbx_run_confined: %d %s", round, o.ret, o.err);
		if (o.exit_code != 0) {
			dump_report(&o.report);
			fail_msg("round %d: exit %d (see the script's steps)", round, o.exit_code);
		}
		/* config and lib; and the fixture's host directory, the
		 * agent's own in sticky /var/tmp, above its secret.txt. */
		assert_true(contains(o.report.entry[SBX_F_MOUNT_VIEW].detail, ", 3 pinned"));
		assert_true(sbx_report_holds(&o.report, SBX_F_MOUNT_VIEW));
		assert_true(sbx_report_holds(&o.report, SBX_F_DENY_READ));
	}
	/* Nothing moved on the host. */
	snprintf(path, sizeof(path), "%s/prod.key", keys);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/config.old", fx->ws);
	assert_int_equal(access(path, F_OK), -1);
}

/*
 * A file anywhere below a secret directory with a name outside it is
 * readable there: deny_read is then not verified, and the report names
 * the file. The control: without the second name it holds. A tree too
 * large to search is named as not searched, never passed.
 */
static void test_secret_aliases(void **state)
{
	const struct fixture *fx = *state;
	char dir[512], path[600], link_path[600];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(dir, sizeof(dir), "%s/secrets", fx->ws);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/prod", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/prod/key", dir);
	write_text(path, SECRET_TEXT);
	snprintf(link_path, sizeof(link_path), "%s/notes.txt", fx->ws);
	assert_int_equal(link(path, link_path), 0);
	/* The search runs as the agent: a directory it cannot list hides
	 * its files from the agent too (but for their other names). */
	snprintf(path, sizeof(path), "chown -R %u:%u %s", (unsigned)sbx_test_uid(),
		 (unsigned)sbx_test_gid(), dir);
	assert_int_equal(system(path), 0);
	for (int round = 0; round < 3; round++) {
		const char *detail;

		if (round == 1)
			assert_int_equal(unlink(link_path), 0);
		if (round == 2) {
			/* Past the search's budget (4096 entries). */
			for (int i = 0; i < 4100; i++) {
				snprintf(path, sizeof(path), "%s/f%04d", dir, i);
				write_text(path, "");
			}
		}
		scenario_init(&sc, fx);
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, dir);
		sc.script = "exit 0";
		run_scenario(&sc, &o);
		if (o.ret != 0 || o.exit_code != 0)
			fail_msg("round %d: %d %s, exit %d", round, o.ret, o.err, o.exit_code);
		detail = o.report.entry[SBX_F_DENY_READ].detail;
		if (round == 1) {
			assert_true(sbx_report_holds(&o.report, SBX_F_DENY_READ));
			continue;
		}
		if (!o.report.entry[SBX_F_DENY_READ].achieved ||
		    o.report.entry[SBX_F_DENY_READ].verified)
			fail_msg("round %d: deny_read verified: %s", round, detail);
		snprintf(path, sizeof(path), round == 0 ? "%s/prod/key (2 names)" :
			 "%s (over 4096 entries or 32 levels: not searched for other names)", dir);
		if (!contains(detail, path))
			fail_msg("round %d: '%s' does not name '%s'", round, detail, path);
	}
}

/*
 * Another mount of a secret's filesystem shows the secret under another
 * path, which no mask covers. Made here in this test's own mount
 * namespace (teardown_mounts leaves it): a bind of the secret directory,
 * of a directory below it, and of the directory above it. Each is named
 * in the report and deny_read is not verified; the session really reads
 * the secret there (the report is right). Listed as deny_read too, the
 * bind is masked and reads nothing; with no other mount it holds. The
 * same without a user namespace, where Landlock's holes stand for masks.
 */
static int host_mnt_ns = -1;

/* A mount namespace of the test's own, left by leave_test_mnt_ns (or by
 * teardown_mounts when the test fails). */
static void enter_test_mnt_ns(void)
{
	host_mnt_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	assert_true(host_mnt_ns >= 0);
	assert_int_equal(unshare(CLONE_NEWNS), 0);
	assert_int_equal(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
}

/* Back in the host's mount namespace, in the same directory (setns
 * moves the caller to the namespace's root). */
static int leave_test_mnt_ns(void)
{
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC), r;

	r = cwd >= 0 && setns(host_mnt_ns, CLONE_NEWNS) == 0 && fchdir(cwd) == 0 ? 0 : -1;
	if (cwd >= 0)
		close(cwd);
	close(host_mnt_ns);
	host_mnt_ns = -1;
	return r;
}

static int teardown_mounts(void **state)
{
	const struct fixture *fx = *state;
	const char *names[] = { "alias", "part", "above", "alias2", "alias3", "nl\nx",
				"alias4", "alias5", "keys/sub", "alias6", "key.pem" };
	char path[300];

	for (size_t i = 0; fx && i < ARRAY_SIZE(names); i++) {
		snprintf(path, sizeof(path), "%s/%s", fx->host, names[i]);
		(void)umount2(path, MNT_DETACH);
	}
	if (fx) {
		snprintf(path, sizeof(path), "%s/d/alias", fx->ws);
		(void)umount2(path, MNT_DETACH);
		snprintf(path, sizeof(path), "%s/realalias", fx->host);
		(void)umount2(path, MNT_DETACH);
	}
	if (host_mnt_ns >= 0 && leave_test_mnt_ns() != 0)
		return -1;
	return teardown(state);
}

static void test_secret_mounts(void **state)
{
	const struct fixture *fx = *state;
	char secret[160], point[160], path[600], script[2000];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	enter_test_mnt_ns();
	snprintf(secret, sizeof(secret), "%s/keys", fx->host);
	assert_int_equal(mkdir(secret, 0755), 0);
	snprintf(path, sizeof(path), "%s/prod", secret);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/prod/key", secret);
	write_text(path, SECRET_TEXT);
	for (int round = 0; round < 7; round++) {
		/* 0: bind of the secret; 1: the same, listed as deny_read;
		 * 2: bind of a directory below it; 3: bind of the directory
		 * above it; 4: none (the control); 5, 6: 0 and 4 without a
		 * user namespace (Landlock's holes, no masks). */
		static const char *const name[] = { "alias", "alias", "part", "above", NULL,
						    "alias", NULL };
		char where[400] = "";
		const char *detail;

		if (name[round]) {
			snprintf(point, sizeof(point), "%s/%s", fx->host, name[round]);
			if (round != 1) {
				(void)mkdir(point, 0755);
				snprintf(path, sizeof(path), "%s%s", round == 3 ? fx->host : secret,
					 round == 2 ? "/prod" : "");
				assert_int_equal(mount(path, point, NULL, MS_BIND, NULL), 0);
			}
			snprintf(where, sizeof(where), "%s%s", point,
				 round == 2 ? "/key" : round == 3 ? "/keys/prod/key" : "/prod/key");
		}
		scenario_init(&sc, fx);
		if (round >= 5) {
			sc.probe = PROBE_NO_USERNS;
			sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		}
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, secret);
		if (round == 1)
			scenario_deny_read(&sc, point);
		/* 3: the secret read through the other mount; 4: not at all
		 * (masked or no such file); the public file is the control. */
		snprintf(script, sizeof(script),
			 "grep -q PUBLIC %s || exit 2\n"
			 "cat %s/prod/key >/dev/null 2>&1 && exit 5\n"
			 "[ -z '%s' ] && exit 4\n"
			 "grep -q TOPSECRET '%s' 2>/dev/null && exit 3\n"
			 "exit 4\n", fx->public, secret, where, where);
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("round %d: %d %s", round, o.ret, o.err);
		detail = o.report.entry[SBX_F_DENY_READ].detail;
		if (round == 1 || round == 4 || round == 6) {
			if (o.exit_code != 4 || !sbx_report_holds(&o.report, SBX_F_DENY_READ))
				fail_msg("round %d: exit %d, deny_read: %s", round, o.exit_code, detail);
			if (round == 1)
				assert_int_equal(umount2(point, 0), 0);
			continue;
		}
		/* Without masks, Landlock's grant of the secret's sibling
		 * "alias" is a grant of the mounted secret itself: its own
		 * path reads too (5). Either way the report says so. */
		if (o.exit_code != (round == 5 ? 5 : 3))
			fail_msg("round %d: exit %d (3: the other mount reads the secret; 5: its "
				 "own path does): %s", round, o.exit_code, detail);
		if (!o.report.entry[SBX_F_DENY_READ].achieved ||
		    o.report.entry[SBX_F_DENY_READ].verified)
			fail_msg("round %d: deny_read verified: %s", round, detail);
		/* Above: the fixture's own secret.txt may be found first. */
		snprintf(path, sizeof(path), "no mask covers it: %s", round == 3 ? point : where);
		if (!contains(detail, path) || !contains(detail, "is readable"))
			fail_msg("round %d: '%s' does not name '%s'", round, detail, path);
		if (round != 0)
			assert_int_equal(umount2(point, 0), 0);
	}
	assert_int_equal(leave_test_mnt_ns(), 0);
}

/*
 * What attacker reviews did to the earlier searches, each now caught: a
 * second bind of the secret when the first is listed as deny_read (the
 * search kept one path per inode); a directory the agent may pass through
 * but not list (0711), whose file opens by name; a mountpoint whose name
 * holds a newline; a bind below the agent's own directory, made 000 to
 * hide it from the check and opened up again; a filesystem mounted inside
 * the secret and bound elsewhere; a socket in the secret; a file secret
 * bound elsewhere and already masked where the session starts (as the PAM
 * stage masks it). Each reads (or
 * could reach) the secret in the session, and the report says deny_read
 * is not verified.
 */
static void test_secret_mounts_evasions(void **state)
{
	const struct fixture *fx = *state;
	char secret[160], secret2[160], secret3[160], point[300], path[600], script[1600];
	char where[400], file_secret[160];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	enter_test_mnt_ns();
	snprintf(secret, sizeof(secret), "%s/keys", fx->host);
	snprintf(secret2, sizeof(secret2), "%s/keys2", fx->host);
	assert_int_equal(mkdir(secret, 0755), 0);
	snprintf(path, sizeof(path), "%s/key", secret);
	write_text(path, SECRET_TEXT);
	assert_int_equal(mkdir(secret2, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub", secret2);
	assert_int_equal(mkdir(path, 0711), 0);
	assert_int_equal(chmod(path, 0711), 0);
	snprintf(path, sizeof(path), "%s/sub/id_key", secret2);
	write_text(path, SECRET_TEXT);
	snprintf(secret3, sizeof(secret3), "%s/keys3", fx->host);
	assert_int_equal(mkdir(secret3, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub", secret);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(file_secret, sizeof(file_secret), "%s/key.pem", fx->host);
	write_text(file_secret, SECRET_TEXT);
	assert_int_equal(chmod(file_secret, 0644), 0);
	for (int round = 0; round < 7; round++) {
		static const char *const name[] = { "alias2", "alias3", "nl\nx", NULL, "alias4",
						    "alias5", "alias6" };
		const char *detail, *source = round == 1 ? secret2 : round == 5 ? secret3 :
					      round == 6 ? file_secret : secret;
		char agent_dir[200] = "", sub[200] = "";
		int listener = -1;

		if (round == 3) {
			/* Below the agent's own directory, which it made 000 in
			 * a session before and opens up again in this one. */
			snprintf(agent_dir, sizeof(agent_dir), "%s/d", fx->ws);
			assert_int_equal(mkdir(agent_dir, 0755), 0);
			snprintf(point, sizeof(point), "%s/alias", agent_dir);
			assert_int_equal(mkdir(point, 0755), 0);
			assert_int_equal(chown(agent_dir, sbx_test_uid(), sbx_test_gid()), 0);
		} else if (round == 6) {
			snprintf(point, sizeof(point), "%s/%s", fx->host, name[round]);
			write_text(point, "");
		} else {
			snprintf(point, sizeof(point), "%s/%s", fx->host, name[round]);
			(void)mkdir(point, 0755);
		}
		if (round == 4) {
			/* A filesystem of its own inside the secret. */
			snprintf(sub, sizeof(sub), "%s/sub", secret);
			assert_int_equal(mount("sbx-test-sub", sub, "tmpfs", 0, "mode=0755"), 0);
			snprintf(path, sizeof(path), "%s/k", sub);
			write_text(path, SECRET_TEXT);
			source = sub;
		}
		if (round == 5) {
			struct sockaddr_un sa = { .sun_family = AF_UNIX };

			assert_int_equal(sbx_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock",
						      secret3), 0);
			listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			assert_true(listener >= 0);
			assert_int_equal(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
			assert_int_equal(chmod(sa.sun_path, 0666), 0);
			assert_int_equal(listen(listener, 4), 0);
		}
		assert_int_equal(mount(source, point, NULL, MS_BIND, NULL), 0);
		if (round == 3)
			assert_int_equal(chmod(agent_dir, 0), 0);
		/* The file secret already masked where the session starts, as
		 * the PAM stage masks it (/dev/null bound over it). */
		if (round == 6)
			assert_int_equal(mount("/dev/null", file_secret, NULL, MS_BIND, NULL), 0);
		snprintf(where, sizeof(where), "%s%s%s", point, round == 6 ? "" : "/",
			 round == 1 ? "sub/id_key" : round == 4 ? "k" : round == 5 ? "sock" :
			 round == 6 ? "" : "key");
		scenario_init(&sc, fx);
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, secret);
		scenario_deny_read(&sc, secret2);
		scenario_deny_read(&sc, secret3);
		scenario_deny_read(&sc, file_secret);
		if (round == 0) {
			/* The first bind, listed as the report advised. */
			snprintf(path, sizeof(path), "%s/alias", fx->host);
			(void)mkdir(path, 0755);
			assert_int_equal(mount(secret, path, NULL, MS_BIND, NULL), 0);
			scenario_deny_read(&sc, path);
		}
		/* The newline as a glob's ? (no shell quoting names it). */
		snprintf(path, sizeof(path), "%s", where);
		if (strchr(path, '\n'))
			*strchr(path, '\n') = '?';
		snprintf(script, sizeof(script),
			 "grep -q PUBLIC %s || exit 2\n"
			 "cat %s/key >/dev/null 2>&1 && exit 5\n"
			 "%s%s%s"
			 "grep -q TOPSECRET %s 2>/dev/null && exit 3\n"
			 "exit 4\n", fx->public, secret, agent_dir[0] ? "chmod 755 " : "",
			 agent_dir, agent_dir[0] ? " || exit 6\n" : "", path);
		sc.script = script;
		run_scenario(&sc, &o);
		if (listener >= 0)
			close(listener);
		if (o.ret != 0)
			fail_msg("round %d: %d %s", round, o.ret, o.err);
		detail = o.report.entry[SBX_F_DENY_READ].detail;
		/* 3: the secret read through the other mount (a socket is
		 * not read: 4). */
		if (o.exit_code != (round == 5 ? 4 : 3))
			fail_msg("round %d: exit %d (3: the secret read through %s): %s", round,
				 o.exit_code, point, detail);
		if (!o.report.entry[SBX_F_DENY_READ].achieved ||
		    o.report.entry[SBX_F_DENY_READ].verified)
			fail_msg("round %d: deny_read verified: %s", round, detail);
		if (round != 2) {
			snprintf(path, sizeof(path), round == 1 || round == 3 ? "%s" :
				 round == 5 ? "no mask covers it: %s is a socket it may connect to" :
				 "no mask covers it: %s is readable", round == 1 || round == 3 ?
				 point : where);
			if (!contains(detail, path))
				fail_msg("round %d: '%s' does not name '%s'", round, detail, path);
		}
		assert_int_equal(umount2(point, 0), 0);
		if (sub[0])
			assert_int_equal(umount2(sub, 0), 0);
		if (round == 6)
			assert_int_equal(umount2(file_secret, 0), 0);
		if (round == 0) {
			snprintf(path, sizeof(path), "%s/alias", fx->host);
			assert_int_equal(umount2(path, 0), 0);
		}
	}
	assert_int_equal(leave_test_mnt_ns(), 0);
}

/*
 * The workspace reaches the secret's parent tree under another name (the
 * workspace is a bind of it): the agent could move the secret's
 * parent from there, and the next session would mask an empty decoy at
 * the old path (an attacker review did). The secret's parent, whose own
 * parent is the agent's, is pinned: the move fails with EBUSY through any
 * name; a sibling not above a secret still moves (the control).
 */
static void test_secret_parent_pinned_through_alias(void **state)
{
	const struct fixture *fx = *state;
	char real[160], path[1200], alias[300], script[1200];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	enter_test_mnt_ns();
	snprintf(real, sizeof(real), "%s/real", fx->host);
	snprintf(path, sizeof(path), "mkdir -p %s/proj/.env %s/other && echo TOPSECRET >"
		 "%s/proj/.env/key && chown %u %s %s/proj %s/other", real, real, real,
		 (unsigned)sbx_test_uid(), real, real, real);
	assert_int_equal(system(path), 0);
	snprintf(alias, sizeof(alias), "%s/realalias", fx->host);
	assert_int_equal(mkdir(alias, 0755), 0);
	assert_int_equal(mount(real, alias, NULL, MS_BIND, NULL), 0);
	scenario_init(&sc, fx);
	sc.workspace = alias;	/* the secret's parent tree, under another name */
	snprintf(path, sizeof(path), "%s/proj/.env", real);
	scenario_deny_read(&sc, path);
	snprintf(script, sizeof(script),
		 "cd %s || exit 2\n"
		 "mv other other2 && mv other2 other || exit 3\n"
		 "mv proj stash 2>e && exit 4\n"
		 "grep -q 'Device or resource busy' e || exit 5\n"
		 "exit 0\n", alias);
	sc.script = script;
	run_scenario(&sc, &o);
	if (o.ret != 0 || o.exit_code != 0)
		fail_msg("%d %s, exit %d (4: the secret's parent moved)", o.ret, o.err, o.exit_code);
	snprintf(path, sizeof(path), "%s/proj/.env/key", real);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(umount2(alias, 0), 0);
	assert_int_equal(leave_test_mnt_ns(), 0);
}

/*
 * A root, or the workspace, that is the host's other mount of a part of
 * a secret (here a bind of <secret>/pub): the profile names a path, and
 * what the host mounted there shows the secret. The session reads the
 * note through it (the report must say so); an attacker review found the
 * report saying deny_read held, because the canary took a mount exactly
 * at a root or the workspace for the session's own grant. The control
 * is test_secret_mounts' round without another mount.
 */
static void test_secret_shown_by_a_grant(void **state)
{
	const struct fixture *fx = *state;
	char secret[160], pub[200], point[200], path[300], script[1200];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	enter_test_mnt_ns();
	snprintf(secret, sizeof(secret), "%s/keys", fx->host);
	snprintf(pub, sizeof(pub), "%s/pub", secret);
	assert_int_equal(mkdir(secret, 0755), 0);
	assert_int_equal(mkdir(pub, 0777), 0);
	assert_int_equal(chmod(pub, 0777), 0);
	snprintf(path, sizeof(path), "%s/note", pub);
	write_text(path, SECRET_TEXT);
	snprintf(point, sizeof(point), "%s/alias", fx->host);
	assert_int_equal(mkdir(point, 0755), 0);
	assert_int_equal(mount(pub, point, NULL, MS_BIND, NULL), 0);
	snprintf(script, sizeof(script),
		 "grep -q PUBLIC %s || exit 2\n"
		 "grep -q TOPSECRET %s/note 2>/dev/null && exit 3\n"
		 "exit 0\n", fx->public, point);
	for (int round = 0; round < 2; round++) {
		/* 0: a read-only root; 1: the workspace. */
		scenario_init(&sc, fx);
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, secret);
		if (round == 0) {
			scenario_root_ro(&sc, point);
		} else {
			sc.workspace = point;
			sbx_strlcpy(sc.profile.workspace_root, sizeof(sc.profile.workspace_root),
				    point);
		}
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("round %d: sbx_run_confined: %d %s", round, o.ret, o.err);
		assert_int_equal(o.exit_code, 3);
		assert_false(sbx_report_holds(&o.report, SBX_F_DENY_READ));
		assert_true(contains(o.report.entry[SBX_F_DENY_READ].detail, point));
	}
	assert_int_equal(umount2(point, MNT_DETACH), 0);
	assert_int_equal(leave_test_mnt_ns(), 0);
}

/*
 * A secret stays hidden whatever the profile grants inside it (design
 * section 4.3): a root below a deny_read directory is left under the mask
 * in the mount view, and without a user namespace Landlock does not grant
 * it either. Both sessions read keys/pub/note before (the mount view's
 * with deny_read verified: its canary looked at one level of regular
 * files). A FIFO in it must not open either. The control: the public file.
 */
static void test_secret_nested_grant(void **state)
{
	const struct fixture *fx = *state;
	char secret[160], pub[200], path[300], script[1200];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(secret, sizeof(secret), "%s/keys", fx->host);
	snprintf(pub, sizeof(pub), "%s/pub", secret);
	assert_int_equal(mkdir(secret, 0755), 0);
	assert_int_equal(mkdir(pub, 0755), 0);
	snprintf(path, sizeof(path), "%s/note", pub);
	write_text(path, SECRET_TEXT);
	snprintf(path, sizeof(path), "%s/fifo", pub);
	assert_int_equal(mkfifo(path, 0666), 0);
	snprintf(path, sizeof(path), "%s/key", secret);
	write_text(path, SECRET_TEXT);
	snprintf(script, sizeof(script),
		 "grep -q PUBLIC %s || exit 2\n"
		 "cat %s/key >/dev/null 2>&1 && exit 5\n"
		 "grep -q TOPSECRET %s/note 2>/dev/null && exit 3\n"
		 "(: <>%s/fifo) 2>/dev/null && exit 6\n"
		 "exit 0\n", fx->public, secret, pub, pub);
	for (int round = 0; round < 2; round++) {
		scenario_init(&sc, fx);
		if (round == 1) {
			sc.probe = PROBE_NO_USERNS;
			sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		}
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, secret);
		scenario_root_ro(&sc, pub);
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("round %d: sbx_run_confined: %d %s", round, o.ret, o.err);
		if (o.exit_code != 0) {
			dump_report(&o.report);
			fail_msg("round %d: exit %d (see the script's steps)", round, o.exit_code);
		}
		assert_true(sbx_report_holds(&o.report, SBX_F_DENY_READ));
	}
}

/*
 * The agent alone, racing its own sessions: a secret below a directory it
 * owns (config, here with a group the session's user namespace does not
 * map, so the init's capabilities do not pass it) that a second process
 * keeps closing (chmod 0) and opening. The outer process found the secret
 * reachable; the init, a moment later, could not open it and skipped the
 * mask as unreachable; the session opened config again and read the key
 * while the report said deny_read verified (3 sessions in 55 before). A
 * mask behind a directory the agent owns is now never skipped: the
 * session is refused, and the canary fails a secret refused only by
 * permissions the agent may change. No session may read the key and
 * claim deny_read; some must run (the control).
 */
static void test_secret_mask_race(void **state)
{
	const struct fixture *fx = *state;
	char cfg[200], secret[240], path[300], script[1200];
	int ran = 0, leaked = 0;
	struct scenario sc;
	struct outcome o;
	pid_t flipper;

	if (!ready(fx, false))
		skip();
	snprintf(cfg, sizeof(cfg), "%s/config", fx->ws);
	snprintf(secret, sizeof(secret), "%s/keys", cfg);
	assert_int_equal(mkdir(cfg, 0755), 0);
	assert_int_equal(mkdir(secret, 0755), 0);
	snprintf(path, sizeof(path), "%s/key", secret);
	write_text(path, SECRET_TEXT);
	assert_int_equal(chown(path, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(chown(secret, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(chown(cfg, sbx_test_uid(), 100), 0);
	flipper = fork();
	assert_true(flipper >= 0);
	if (flipper == 0) {
		sbx_test_drop_to_agent();
		for (unsigned i = 0;; i++) {
			(void)chmod(cfg, 0755);
			for (volatile int k = 0; k < 20000 + (int)(i * 7919 % 200000); k++)
				;
			(void)chmod(cfg, 0);
			for (volatile int k = 0; k < 20000 + (int)(i * 104729 % 400000); k++)
				;
		}
	}
	snprintf(script, sizeof(script),
		 "chmod 755 %s || exit 9\n"
		 "grep -q TOPSECRET %s/key 2>/dev/null && exit 3\n"
		 "exit 0\n", cfg, secret);
	for (int round = 0; round < 200; round++) {
		scenario_init(&sc, fx);
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		scenario_deny_read(&sc, secret);
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0)
			continue;	/* refused: unreachable when placed or masked */
		ran++;
		if (o.exit_code == 3 && sbx_report_holds(&o.report, SBX_F_DENY_READ)) {
			leaked++;
			print_message("  round %d: read the key, deny_read verified: %s\n", round,
				      o.report.entry[SBX_F_DENY_READ].detail);
		}
	}
	kill(flipper, SIGKILL);
	waitpid(flipper, NULL, 0);
	(void)chmod(cfg, 0755);
	print_message("  %d of 200 sessions ran\n", ran);
	assert_int_equal(leaked, 0);
	assert_true(ran > 0);
}

/*
 * What a mask covers, said in the report: the fixture's secret is a file
 * (its /dev/null stays on that file; one renamed over it on the host
 * during the session is not covered), and a missing secret is counted as
 * missing, not as masked. A profile of directory secrets alone keeps the
 * short detail.
 */
static void test_mask_scope_in_report(void **state)
{
	const struct fixture *fx = *state;
	char missing[200], dir[200];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(missing, sizeof(missing), "%s/not-yet", fx->host);
	snprintf(dir, sizeof(dir), "%s/keys", fx->host);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (int round = 0; round < 2; round++) {
		const char *d;

		scenario_init(&sc, fx);
		/* The built-in secrets vary by host: only the test's own. */
		sc.profile.n_deny_read = 0;
		if (round == 0) {
			scenario_deny_read(&sc, fx->secret);
			scenario_deny_read(&sc, missing);
		} else {
			scenario_deny_read(&sc, dir);
		}
		sc.script = "exit 0";
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("round %d: sbx_run_confined: %d %s", round, o.ret, o.err);
		d = o.report.entry[SBX_F_DENY_READ].detail;
		assert_true(sbx_report_holds(&o.report, SBX_F_DENY_READ));
		if (round == 0) {
			assert_true(contains(d, "1 secret(s) masked, 1 missing"));
			assert_true(contains(d, "masks hold what was there at the start"));
		} else {
			assert_true(contains(d, "1 secret(s) masked and left out of Landlock rules"));
		}
	}
}

/* A listening socket at path (0777) whose every connection is sent the
 * secret, served by a child of root's; the caller kills it. */
static pid_t secret_server(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	assert_true(s >= 0);
	assert_true(strlen(path) < sizeof(a.sun_path));
	memcpy(a.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(listen(s, 16), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Gone with the test, and holding none of its output open
		 * when an assertion skips the caller's kill. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		(void)close(STDOUT_FILENO);
		(void)close(STDERR_FILENO);
		for (;;) {
			int c = accept(s, NULL, NULL);

			if (c >= 0) {
				if (write(c, SECRET_TEXT, strlen(SECRET_TEXT)) < 0)
					_exit(1);
				close(c);
			}
		}
	}
	close(s);
	return pid;
}

/* Exit 3 when the socket at $1 hands over the secret. */
#define CONNECT_SCRIPT "python3 -c 'import socket,sys\n" \
	"s=socket.socket(socket.AF_UNIX)\n" \
	"try: s.connect(sys.argv[1])\n" \
	"except OSError: sys.exit(0)\n" \
	"sys.exit(3 if b\"TOPSECRET\" in s.recv(64) else 0)' "

/*
 * A FIFO and a socket are part of a secret as much as its files (an
 * attacker review). Round 0, 1: a socket in the secret directory and
 * network allow, so no unix supervisor mediates connect(); with the mount
 * view the mask hides it (the control), without a user namespace
 * Landlock does not govern connect() and the session reads the secret
 * through it: the canary must say so (it left sockets to the supervisor).
 * Round 2, 3: the secret's FIFO and socket, each with a second name
 * outside it: the search for other names must name them (it looked at
 * regular files only), in both modes.
 */
static void test_secret_nonregular(void **state)
{
	const struct fixture *fx = *state;
	char secret[160], pub[160], sock[200], lsock[200], fifo[200], lfifo[200], script[1500];
	struct scenario sc;
	struct outcome o;
	pid_t srv;

	if (!ready(fx, false))
		skip();
	snprintf(secret, sizeof(secret), "%s/keys", fx->host);
	snprintf(pub, sizeof(pub), "%s/pub", fx->host);
	assert_int_equal(mkdir(secret, 0755), 0);
	assert_int_equal(mkdir(pub, 0755), 0);
	snprintf(sock, sizeof(sock), "%s/agent.sock", secret);
	snprintf(lsock, sizeof(lsock), "%s/agent.sock", pub);
	snprintf(fifo, sizeof(fifo), "%s/feed", secret);
	snprintf(lfifo, sizeof(lfifo), "%s/feed", pub);
	srv = secret_server(sock);
	for (int round = 0; round < 4; round++) {
		scenario_init(&sc, fx);
		if (round & 1) {
			sc.probe = PROBE_NO_USERNS;
			sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		}
		if (round == 2) {
			assert_int_equal(link(sock, lsock), 0);
			assert_int_equal(mkfifo(fifo, 0644), 0);
			assert_int_equal(link(fifo, lfifo), 0);
		}
		sc.profile.host_read = SBX_ACCESS_ALLOW;
		sc.profile.network = SBX_ACCESS_ALLOW;
		sc.profile.require &= ~(uint32_t)SBX_G_NETWORK_BOUNDARY;
		scenario_deny_read(&sc, secret);
		snprintf(script, sizeof(script), CONNECT_SCRIPT "%s\n", round < 2 ? sock : lsock);
		sc.script = script;
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("round %d: sbx_run_confined: %d %s", round, o.ret, o.err);
		if (round == 0) {
			assert_int_equal(o.exit_code, 0);	/* masked */
			assert_true(sbx_report_holds(&o.report, SBX_F_DENY_READ));
			continue;
		}
		/* Read (the report must not say otherwise), and named. */
		assert_int_equal(o.exit_code, 3);
		assert_false(sbx_report_holds(&o.report, SBX_F_DENY_READ));
		assert_true(contains(o.report.entry[SBX_F_DENY_READ].detail,
				     round == 1 ? "agent.sock is a socket it may connect to" :
				     "other names"));
		if (round >= 2)
			assert_true(contains(o.report.entry[SBX_F_DENY_READ].detail,
					     "keys/feed (2 names)"));
	}
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
}

/*
 * A deny_read path the agent cannot reach (below another user's 0700
 * directory): where it leads cannot be checked from here, so the session
 * is refused, and the message says what to do about the entry.
 */
static void test_secret_unreachable_refused(void **state)
{
	const struct fixture *fx = *state;
	char locked[160], secret[200];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(locked, sizeof(locked), "%s/locked", fx->host);
	snprintf(secret, sizeof(secret), "%s/.ssh", locked);
	assert_int_equal(mkdir(locked, 0700), 0);
	assert_int_equal(chown(locked, 0, 0), 0);
	assert_int_equal(mkdir(secret, 0700), 0);
	scenario_init(&sc, fx);
	scenario_deny_read(&sc, secret);
	sc.script = "exit 0";
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, -EACCES);
	assert_true(contains(o.err, "cannot reach this path"));
	assert_true(contains(o.err, secret));
}

/*
 * A root that is not there when the session starts (the shipped
 * ceiling's /srv/agents before any agent is enrolled) is left out and
 * named in the report, "PATH (missing)": the session runs. Made on the
 * host once the session runs, it is not writable there (neither bound
 * nor granted: it has the read-only host's access), while a root that
 * exists is written in the same run (the control). With and without a
 * mount view. An ro root missing inside the writable workspace refuses
 * the session: left out, the agent could make it and write there.
 */
static void test_missing_root_left_out(void **state)
{
	const struct fixture *fx = *state;
	static const enum probe_edit paths[] = { PROBE_REAL, PROBE_NO_USERNS };
	char present[128], later[128], want[320], script[1024], path[200];
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	snprintf(present, sizeof(present), "%s/present", fx->host);
	snprintf(later, sizeof(later), "%s/later", fx->host);
	assert_int_equal(mkdir(present, 0755), 0);
	assert_int_equal(chown(present, sbx_test_uid(), sbx_test_gid()), 0);
	/* Exit codes name the step that went wrong. */
	snprintf(script, sizeof(script),
		 "i=0; while [ ! -d %s ]; do i=$((i + 1)); [ $i -gt 100 ] && exit 2; sleep 0.05; done\n"
		 "echo ok >%s/f || exit 3\n"
		 "(echo x >%s/f) 2>/dev/null && exit 4\n"
		 "mkdir %s/d 2>/dev/null && exit 5\n"
		 "exit 0\n", later, present, later, later);
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		scenario_init(&sc, fx);
		sc.probe = paths[i];
		if (paths[i] == PROBE_NO_USERNS)
			sc.profile.require &= ~(uint32_t)(SBX_G_WRITE_BOUNDARY |
							  SBX_G_NO_PRIVILEGE_GAIN);
		scenario_root_ro(&sc, present);
		sc.profile.roots[sc.profile.n_roots - 1].write = SBX_ACCESS_ALLOW;
		scenario_root_ro(&sc, later);
		sc.profile.roots[sc.profile.n_roots - 1].write = SBX_ACCESS_ALLOW;
		sc.made_at_report = later;
		sc.script = script;
		run_scenario(&sc, &o);
		rmdir(later);
		if (o.ret != 0)
			fail_msg("path %zu: sbx_run_confined: %d %s", i, o.ret, o.err);
		if (o.exit_code != 0) {
			dump_report(&o.report);
			fail_msg("path %zu: exit %d (see the script's steps)", i, o.exit_code);
		}
		snprintf(path, sizeof(path), "%s/f", present);
		assert_int_equal(access(path, F_OK), 0);
		assert_int_equal(unlink(path), 0);
		if (paths[i] == PROBE_REAL) {
			snprintf(want, sizeof(want), "skipped: %s (missing)", later);
			assert_true(contains(o.report.entry[SBX_F_MOUNT_VIEW].detail, want));
			assert_true(sbx_report_holds(&o.report, SBX_F_MOUNT_VIEW));
		} else {
			snprintf(want, sizeof(want), "not granted: %s (missing)", later);
			assert_true(contains(o.report.entry[SBX_F_LANDLOCK_FS].detail, want));
		}
		assert_true(o.report.floor_met);
	}

	/* Read-only inside the writable workspace, and missing: refused. */
	snprintf(path, sizeof(path), "%s/vendor", fx->ws);
	scenario_init(&sc, fx);
	scenario_root_ro(&sc, path);
	sc.script = "exit 0";
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, -ENOENT);
	snprintf(want, sizeof(want), "root %s ro: No such file or directory, inside a tree the "
		 "session writes", path);
	if (!contains(o.err, want))
		fail_msg("refusal: %s", o.err);
}

/* The engine's own fds (report pipe, unix supervisor channel) must not
 * land on each other when it starts with fd 3 free: moving the report
 * pipe to 3 closed the channel there, and every session with the network
 * denied was refused. */
static void test_low_fds_free(void **state)
{
	const struct fixture *fx = *state;
	static const enum probe_edit paths[] = { PROBE_REAL, PROBE_NO_LANDLOCK,
						 PROBE_NO_USERNS };
	struct scenario sc;
	struct outcome o;

	if (!ready(fx, false))
		skip();
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
		scenario_init(&sc, fx);
		sc.probe = paths[i];
		sc.low_fds_free = true;
		sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
		sc.script = "exit 7";
		run_scenario(&sc, &o);
		if (o.ret != 0)
			fail_msg("path %zu: sbx_run_confined: %d %s", i, o.ret, o.err);
		assert_int_equal(o.exit_code, 7);
		assert_true(o.report.entry[SBX_F_UNIX_SOCKETS].achieved);
	}
}

static bool contains(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		return true;
	print_message("  '%s' does not contain '%s'\n", hay, needle);
	return false;
}

/* Without user namespaces: no namespaces, no mount view, but Landlock and
 * seccomp still hold; the report says degraded and why. */
static void test_degraded_no_userns(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	struct results res;

	if (!ready(fx, true))
		skip();
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_USERNS;
	sc.probe_program = true;
	/* Without a user namespace the bounding set cannot be cleared (no
	 * CAP_SETPCAP), so caps is not achieved and no_privilege_gain, which
	 * the default profile requires, never holds: see test_floor_refusals.
	 * This profile accepts that to show what still holds. */
	sc.profile.require &= ~(uint32_t)SBX_G_NO_PRIVILEGE_GAIN;
	/* Nor does write_boundary: Landlock has no right for chmod, chown,
	 * utimes or xattrs of host files the agent owns, and the host's /tmp
	 * is shared; only a read-only mount view holds it. */
	sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 0);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	assert_true(o.report.floor_met);
	assert_false(o.report.guarantees & SBX_G_WRITE_BOUNDARY);
	/* The network boundary still holds: Landlock TCP, seccomp, and the
	 * unix supervisor outside the sandbox. */
	assert_true(o.report.entry[SBX_F_UNIX_SOCKETS].verified);
	assert_true(o.report.guarantees & SBX_G_NETWORK_BOUNDARY);
	assert_false(o.report.entry[SBX_F_USERNS].achieved);
	assert_false(o.report.entry[SBX_F_MOUNT_VIEW].achieved);
	assert_true(contains(o.report.entry[SBX_F_USERNS].detail, PROBE_WHY));
	assert_true(contains(o.report.entry[SBX_F_MOUNT_VIEW].detail, PROBE_WHY));
	assert_true(o.report.entry[SBX_F_LANDLOCK_FS].achieved);
	assert_true(o.report.entry[SBX_F_SECCOMP].achieved);
	assert_int_equal(o.on_report_calls, 1);

	results_load(fx, &res);
	EXPECT(&res, "done", "OK");
	/* The layers that remain do the work: Landlock refuses the write
	 * (no read-only mount: EACCES) and the secret (a hole in the rules:
	 * EACCES); seccomp refuses inet sockets (no netns: EAFNOSUPPORT);
	 * Landlock's signal scope refuses the outside process it can now
	 * name (EPERM). */
	EXPECT(&res, "write_inside", "OK");
	EXPECT(&res, "write_outside", "EACCES");
	EXPECT(&res, "read_secret", "EACCES");
	EXPECT(&res, "read_public", "OK");
	EXPECT(&res, "tcp_host", "EAFNOSUPPORT");
	EXPECT(&res, "udp_host", "EAFNOSUPPORT");
	assert_int_equal(o.tcp_accept_errno, EAGAIN);
	assert_int_equal(o.udp_recv_errno, EAGAIN);
	assert_true(o.tcp_control);
	EXPECT(&res, "kill_outside", "EPERM");
	EXPECT(&res, "kill_inside", "OK");
	EXPECT(&res, "proc_self_mem_write", "EACCES");	/* Landlock */
	EXPECT(&res, "ptrace_outside", "EPERM");
	EXPECT(&res, "unshare_user", "EPERM");
	EXPECT(&res, "x32_syscall", "SIGSYS");
	EXPECT(&res, "NoNewPrivs", "1");
	EXPECT(&res, "CapEff", "0000000000000000");
	EXPECT(&res, "CapPrm", "0000000000000000");
	/* No capability is held; the bounding set cannot be cleared without
	 * a user namespace, and no_new_privs makes it unusable: achieved and
	 * verified, with the limit named. */
	assert_true(o.report.entry[SBX_F_CAPS].achieved);
	assert_true(o.report.entry[SBX_F_CAPS].verified);
	assert_true(contains(o.report.entry[SBX_F_CAPS].detail, "bounding set kept"));
	assert_true(o.report.guarantees & SBX_G_NO_PRIVILEGE_GAIN);
	EXPECT(&res, "fds", "0,1,2");
	free(res.text);
}

/*
 * Without a mount view and without the PAM stage, a home under /tmp is in
 * the host's shared /tmp, where another user may have made that name first
 * (here: root's, 0777, with a .profile in it). Such a session gets a fresh
 * private directory instead (it used to be refused: a fixed name let any
 * local user block every account without a home), and it is gone after
 * the session. The planted directory is neither used nor touched.
 */
static void test_degraded_foreign_tmp_home(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	char planted[128], out[300], *text = NULL, *home, *save = NULL;
	struct stat st;

	if (!ready(fx, false))
		skip();
	sbx_test_rmtree(HOME_DIR);
	assert_int_equal(mkdir(HOME_DIR, 0777), 0);
	assert_int_equal(chmod(HOME_DIR, 0777), 0);	/* root's, open to all */
	snprintf(planted, sizeof(planted), "%s/.profile", HOME_DIR);
	write_text(planted, "echo planted\n");
	snprintf(out, sizeof(out), "%s/home.out", fx->ws);
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_USERNS;
	sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
	sc.script = "echo \"$HOME $(stat -c %u:%a \"$HOME\") $(ls -A \"$HOME\" | wc -l)\" "
		    ">\"$PWD/home.out\"; touch \"$HOME/mine\"";
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, 0);
	assert_int_equal(o.exit_code, 0);
	{
		size_t len = 0;

		assert_int_equal(sbx_read_file(out, 4096, &text, &len, NULL), 0);
	}
	print_message("  inside: %s", text);
	home = strtok_r(text, " ", &save);
	assert_non_null(home);
	assert_true(strncmp(home, "/tmp/agent-home-", 16) == 0);
	assert_non_null(strstr(text + strlen(home) + 1, ":700 0"));	/* ours, 0700, empty */
	/* Gone after the session; the planted one untouched, its .profile
	 * still the only entry. */
	assert_int_equal(lstat(home, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(lstat(planted, &st), 0);
	snprintf(out, sizeof(out), "%s/mine", HOME_DIR);
	assert_int_equal(lstat(out, &st), -1);
	free(text);
	sbx_test_rmtree(HOME_DIR);
}

/* Landlock missing: degraded, landlock_fs names the reason; under the gate
 * command_gate is not achieved either. */
static void test_degraded_no_landlock(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	char script[512], marker[300];
	const char *sh = "/bin/sh";
	char real_sh[PATH_MAX];

	if (!ready(fx, false))
		skip();
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_LANDLOCK;
	/* The read-only mount view alone holds the write boundary. */
	snprintf(marker, sizeof(marker), "%s/marker", fx->ws);
	snprintf(script, sizeof(script), ": > %s", marker);
	sc.script = script;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 0);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	assert_true(o.report.floor_met);
	assert_false(o.report.entry[SBX_F_LANDLOCK_FS].achieved);
	assert_true(contains(o.report.entry[SBX_F_LANDLOCK_FS].detail,
			     "Landlock unavailable: " PROBE_WHY));
	assert_true(o.report.entry[SBX_F_MOUNT_VIEW].achieved);
	assert_true(o.report.entry[SBX_F_MOUNT_VIEW].verified);
	assert_true(o.report.guarantees & SBX_G_WRITE_BOUNDARY);
	assert_true(file_exists(fx, "marker"));
	assert_int_equal(o.report.landlock_abi, 0);

	/* Without Landlock the fresh /proc is mounted read-only: the program
	 * cannot rewrite its own code pages through /proc/self/mem (under a
	 * gate, an allowed program's), which Landlock would otherwise stop. */
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_LANDLOCK;
	sc.probe_program = true;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	{
		struct results res;

		results_load(fx, &res);
		EXPECT(&res, "done", "OK");
		EXPECT(&res, "proc_self_mem_write", "EROFS");
		EXPECT(&res, "proc_self_mem_read", "OK");
		free(res.text);
	}

	/* Gated: the mount view holds the gate without Landlock (the host
	 * noexec, only the allowed program, its loader and libraries bound
	 * back executable). */
	assert_int_equal(unlink(marker), 0);
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_LANDLOCK;
	sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
	sc.script = script;
	sc.profile.command = SBX_ACCESS_GATED;
	if (realpath(sh, real_sh))
		sh = real_sh;
	sbx_strlcpy(sc.profile.gate_allow[0], sizeof(sc.profile.gate_allow[0]), sh);
	sc.profile.n_gate = 1;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	assert_true(o.report.entry[SBX_F_COMMAND_GATE].requested);
	assert_true(o.report.entry[SBX_F_COMMAND_GATE].achieved);
	if (!o.report.entry[SBX_F_COMMAND_GATE].verified)
		fail_msg("command_gate: %s", o.report.entry[SBX_F_COMMAND_GATE].detail);
	assert_true(contains(o.report.entry[SBX_F_COMMAND_GATE].detail, "host noexec"));
	assert_false(contains(o.report.entry[SBX_F_COMMAND_GATE].detail, "Landlock EXECUTE"));
	assert_true(o.report.guarantees & SBX_G_EXEC_BOUNDARY);
	assert_false(o.report.entry[SBX_F_LANDLOCK_FS].achieved);
}

/* Below the floor: refused, exit 126, the refusal names the missing layer,
 * and the program never ran. */
static void test_floor_refusals(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	char script[512];

	if (!ready(fx, false))
		skip();
	snprintf(script, sizeof(script), ": > %s/marker", fx->ws);

	/* min_level = full with Landlock missing. */
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_LANDLOCK;
	sc.profile.min_level = SBX_LEVEL_FULL;
	sc.script = script;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 126);
	assert_false(o.report.floor_met);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	assert_true(contains(o.report.refusal, "below floor full"));
	assert_true(contains(o.report.refusal, "landlock_fs"));
	assert_int_equal(o.on_report_calls, 1);
	assert_false(file_exists(fx, "marker"));

	/* A required guarantee that is then missing: home isolation needs
	 * the mount view, which needs a user namespace. */
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_USERNS;
	sc.profile.require &= ~(uint32_t)SBX_G_NO_PRIVILEGE_GAIN;
	sc.profile.require |= SBX_G_HOME_ISOLATION;
	sc.script = script;
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 126);
	assert_false(o.report.floor_met);
	assert_true(contains(o.report.refusal, sbx_guarantee_name(SBX_G_HOME_ISOLATION)));
	assert_true(contains(o.report.refusal, PROBE_WHY));
	assert_false(file_exists(fx, "marker"));

	/* The default profile requires write_boundary, which Landlock alone
	 * does not hold (no right for chmod, chown, utimes, xattrs; the
	 * host's /tmp shared): without user namespaces it is refused, and
	 * the refusal says why. */
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_USERNS;
	sc.script = script;
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, 0);
	assert_int_equal(o.exit_code, 126);
	assert_false(o.report.floor_met);
	assert_true(contains(o.report.refusal, "write_boundary not held: mount_view"));
	assert_false(file_exists(fx, "marker"));
	/* Control: without that requirement it runs, degraded (Landlock,
	 * seccomp, NNP and limits still hold, no_privilege_gain included). */
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_USERNS;
	sc.profile.require &= ~(uint32_t)SBX_G_WRITE_BOUNDARY;
	sc.script = script;
	run_scenario(&sc, &o);
	assert_int_equal(o.ret, 0);
	assert_int_equal(o.exit_code, 0);
	assert_true(o.report.floor_met);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	assert_true(file_exists(fx, "marker"));
}

/* An older Landlock ABI (the run's limit): the dropped rights are named and
 * the entries that need them are not achieved. */
static void test_abi_limit(void **state)
{
	const struct fixture *fx = *state;
	struct scenario sc;
	struct outcome o;
	const char *d;

	if (!ready(fx, false))
		skip();
	if (sbx_landlock_abi() < 6) {
		print_message("[  SKIP    ] kernel Landlock ABI %d < 6: nothing to drop at 3\n",
			      sbx_landlock_abi());
		skip();
	}
	scenario_init(&sc, fx);
	sc.abi_limit = 3;
	sc.script = ":";
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	assert_int_equal(o.exit_code, 0);
	assert_int_equal(o.report.landlock_abi, 3);
	assert_int_equal(o.report.level, SBX_LEVEL_DEGRADED);
	assert_true(o.report.floor_met);
	d = o.report.entry[SBX_F_LANDLOCK_FS].detail;
	assert_true(o.report.entry[SBX_F_LANDLOCK_FS].achieved);
	assert_true(contains(d, "ABI 3"));
	assert_true(contains(d, "dropped"));
	assert_true(contains(d, "IOCTL_DEV"));
	assert_true(contains(d, "scope signal"));
	assert_true(contains(d, "scope abstract unix socket"));
	assert_false(o.report.entry[SBX_F_LANDLOCK_IOCTL].achieved);
	assert_false(o.report.entry[SBX_F_LANDLOCK_SCOPE].achieved);
	/* With a private netns Landlock TCP is not requested at all. */
	assert_false(o.report.entry[SBX_F_LANDLOCK_NET].requested);

	/* Without a netns (no user namespaces) Landlock TCP is the network
	 * boundary: at ABI 3 it is dropped and named, and the floor (the
	 * default profile requires network_boundary) refuses the run. */
	scenario_init(&sc, fx);
	sc.probe = PROBE_NO_USERNS;
	sc.abi_limit = 3;
	sc.script = ":";
	run_scenario(&sc, &o);
	if (o.ret != 0)
		fail_msg("sbx_run_confined: %d %s", o.ret, o.err);
	d = o.report.entry[SBX_F_LANDLOCK_FS].detail;
	assert_true(contains(d, "TCP"));
	assert_true(o.report.entry[SBX_F_LANDLOCK_NET].requested);
	assert_false(o.report.entry[SBX_F_LANDLOCK_NET].achieved);
	assert_true(contains(o.report.entry[SBX_F_LANDLOCK_NET].detail, "ABI 3"));
	assert_int_equal(o.exit_code, 126);
	assert_false(o.report.floor_met);
	assert_true(contains(o.report.refusal, sbx_guarantee_name(SBX_G_NETWORK_BOUNDARY)));
}

static int refuse_child(void *arg)
{
	const struct fixture *fx = arg;
	struct sbx_profile *p = calloc(1, sizeof(*p));
	struct sbx_session s;
	struct sbx_report *r = calloc(1, sizeof(*r));
	struct sbx_error err = { 0 };
	struct sbx_run run;
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)":", NULL };
	int exit_code = -1, status, ret;
	static struct outcome o;

	if (!p || !r)
		return 10;
	cur = &o;
	base_profile(fx, p);
	memset(&s, 0, sizeof(s));
	s.uid = sbx_test_uid();
	s.gid = sbx_test_gid();
	sbx_strlcpy(s.home, sizeof(s.home), HOME_DIR);
	sbx_strlcpy(s.workspace, sizeof(s.workspace), fx->ws);
	memset(&run, 0, sizeof(run));
	run.profile = p;
	run.session = &s;
	run.argv = argv;
	run.on_report = on_report;

	/* A relative program path. */
	run.path = "sh";
	ret = sbx_run_confined(&run, r, &exit_code, &err);
	if (ret != -EINVAL || err.code != EINVAL || !strstr(err.msg, "absolute"))
		return 11;
	/* An unconfined profile (acknowledged, so it validates). */
	run.path = "/bin/sh";
	p->isolation = SBX_ISOLATION_UNCONFINED;
	p->ack_unconfined = true;
	ret = sbx_run_confined(&run, r, &exit_code, &err);
	if (ret != -EPERM || err.code != EPERM || !strstr(err.msg, "unconfined"))
		return 12;
	/* Nothing forked, nothing reported, no output touched. */
	if (waitpid(-1, &status, WNOHANG) != -1 || errno != ECHILD)
		return 13;
	if (o.on_report_calls != 0 || exit_code != -1)
		return 14;
	free(p);
	free(r);
	return 0;
}

static void test_refusals_without_fork(void **state)
{
	const struct fixture *fx = *state;

	if (!ready(fx, false))
		skip();
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, refuse_child, (void *)fx)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refusals_without_fork, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_probe_before_the_clone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unix_own_sockets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unix_allow_canary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_processes_of_a_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gated_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_limits_not_claimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_time_not_outlived, setup, teardown),
		cmocka_unit_test_setup_teardown(test_low_fds_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deny_read_through_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pinned_above_narrower_mounts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_aliases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_mounts, setup, teardown_mounts),
		cmocka_unit_test_setup_teardown(test_secret_mounts_evasions, setup, teardown_mounts),
		cmocka_unit_test_setup_teardown(test_secret_parent_pinned_through_alias, setup,
						teardown_mounts),
		cmocka_unit_test_setup_teardown(test_secret_shown_by_a_grant, setup, teardown_mounts),
		cmocka_unit_test_setup_teardown(test_secret_nested_grant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_mask_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mask_scope_in_report, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_nonregular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_secret_unreachable_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_root_left_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leftovers_ended, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report_timing_and_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_no_userns, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_no_landlock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_foreign_tmp_home, setup, teardown),
		cmocka_unit_test_setup_teardown(test_floor_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abi_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expectation_is_the_report, setup, teardown),
	};
	return cmocka_run_group_tests_name("apply", tests, NULL, NULL);
}
