/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for mounts.c: the plan (pure) and the mount view applied in a userns. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define LDSO "/lib64/ld-linux-x86-64.so.2"

/* A child's exit code: sbx_userns_enter failed (its message on stderr). */
#define ENTER_FAILED 60

static char *base;		/* /tmp/sbx-test-mounts-XXXXXX */
static char ws[256], home[256], marker[256], secret_dir[512], secret_file[512];

static void profile_for_test(struct sbx_profile *p, enum sbx_access command)
{
	memset(p, 0, sizeof(*p));
	p->workspace_read = SBX_ACCESS_ALLOW;
	p->workspace_write = SBX_ACCESS_ALLOW;
	p->host_read = SBX_ACCESS_ALLOW;
	p->host_write = SBX_ACCESS_DENY;
	p->network = SBX_ACCESS_DENY;
	p->command = command;
	if (command == SBX_ACCESS_GATED) {
		p->n_gate = 1;
		sbx_strlcpy(p->gate_allow[0], sizeof(p->gate_allow[0]), "/usr/bin/true");
	}
	p->n_deny_read = 2;
	sbx_strlcpy(p->deny_read[0], sizeof(p->deny_read[0]), secret_dir);
	sbx_strlcpy(p->deny_read[1], sizeof(p->deny_read[1]), secret_file);
}

static void session_for_test(struct sbx_session *s)
{
	memset(s, 0, sizeof(*s));
	sbx_strlcpy(s->user, sizeof(s->user), "agent");
	s->uid = sbx_test_uid();
	s->gid = sbx_test_gid();
	sbx_strlcpy(s->home, sizeof(s->home), home);
	sbx_strlcpy(s->workspace, sizeof(s->workspace), ws);
}

static int plan_index(const struct sbx_mount_plan *pl, const char *target)
{
	size_t i;

	for (i = 0; i < pl->n; i++)
		if (strcmp(pl->m[i].target, target) == 0)
			return (int)i;
	return -1;
}

static void test_plan_build(void **state)
{
	struct sbx_mount_plan *pl = calloc(1, sizeof(*pl));
	struct sbx_profile *p = calloc(1, sizeof(*p));
	struct sbx_session s;
	struct sbx_error err;
	size_t i;
	int w, h, t;

	(void)state;
	memset(&s, 0, sizeof(s));
	sbx_strlcpy(s.home, sizeof(s.home), "/home/agent");
	sbx_strlcpy(s.workspace, sizeof(s.workspace), "/srv/ws/agent");
	profile_for_test(p, SBX_ACCESS_GATED);
	p->host_read = SBX_ACCESS_DENY;
	p->n_deny_read = 1;
	sbx_strlcpy(p->deny_read[0], sizeof(p->deny_read[0]), "/srv/ws/agent/.env");
	p->n_roots = 2;
	sbx_strlcpy(p->roots[0].path, sizeof(p->roots[0].path), "/var/lib/cache");
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_DENY;
	sbx_strlcpy(p->roots[1].path, sizeof(p->roots[1].path), "/opt");
	p->roots[1].read = SBX_ACCESS_ALLOW;
	p->roots[1].write = SBX_ACCESS_ALLOW;
	p->limits.set_mask = 1u << SBX_LIMIT_TMP_SIZE;
	p->limits.value[SBX_LIMIT_TMP_SIZE] = 64 << 20;
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), 0);
	assert_true(pl->host_readonly && pl->fresh_proc && pl->minimal_dev);
	for (i = 1; i < pl->n; i++)	/* parents before children */
		assert_true(strcmp(pl->m[i - 1].target, pl->m[i].target) < 0);
	w = plan_index(pl, "/srv/ws/agent");
	assert_true(w >= 0);
	assert_int_equal(pl->m[w].kind, SBX_MOUNT_BIND);
	assert_int_equal(pl->m[w].flags, SBX_MOUNT_RW | SBX_MOUNT_NOEXEC);
	h = plan_index(pl, "/home/agent");
	assert_int_equal(pl->m[h].kind, SBX_MOUNT_TMPFS);
	assert_int_equal(pl->m[h].size, 64 << 20);
	t = plan_index(pl, "/tmp");
	assert_int_equal(pl->m[t].flags, SBX_MOUNT_RW | SBX_MOUNT_NOEXEC);
	assert_int_equal(pl->m[plan_index(pl, "/dev/shm")].kind, SBX_MOUNT_TMPFS);
	assert_int_equal(pl->m[plan_index(pl, "/srv/ws/agent/.env")].kind, SBX_MOUNT_MASK);
	assert_int_equal(pl->m[plan_index(pl, "/var/lib/cache")].flags, 0);	/* ro */
	/* Host masks: above allowed paths kept (mountpoints get made inside),
	 * at or below an allowed path dropped. */
	assert_int_equal(pl->m[plan_index(pl, "/home")].kind, SBX_MOUNT_MASK);
	assert_int_equal(pl->m[plan_index(pl, "/srv")].kind, SBX_MOUNT_MASK);
	assert_int_equal(pl->m[plan_index(pl, "/var/lib")].kind, SBX_MOUNT_MASK);
	assert_int_equal(pl->m[plan_index(pl, "/opt")].kind, SBX_MOUNT_BIND);
	assert_true(plan_index(pl, "/boot") >= 0);
	/* /run (the host's unix sockets) is always hidden; with the network
	 * denied the resolver directory is not bound back. */
	assert_int_equal(pl->m[plan_index(pl, "/run")].kind, SBX_MOUNT_MASK);
	assert_int_equal(plan_index(pl, "/run/systemd/resolve"), -1);
	/* Gated: the host noexec, and the allowed program with its closure
	 * (the loader, libc) executable. */
	{
		char real[PATH_MAX];

		assert_true(pl->host_noexec);
		assert_non_null(pl->exec);
		assert_non_null(realpath("/usr/bin/true", real));
		assert_true(sbx_exec_set_contains(pl->exec, real));
		assert_non_null(realpath("/lib64/ld-linux-x86-64.so.2", real));
		assert_true(sbx_exec_set_contains(pl->exec, real));
		assert_false(sbx_exec_set_contains(pl->exec, "/usr/bin/id"));
	}
	sbx_mount_plan_free(pl);
	assert_null(pl->exec);

	/* Not gated, host writable, workspace fully denied. */
	p->command = SBX_ACCESS_ALLOW;
	p->host_write = SBX_ACCESS_ALLOW;
	p->host_read = SBX_ACCESS_ALLOW;
	p->workspace_read = SBX_ACCESS_DENY;
	p->workspace_write = SBX_ACCESS_DENY;
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), 0);
	assert_false(pl->host_readonly);
	assert_int_equal(pl->m[plan_index(pl, "/tmp")].flags, SBX_MOUNT_RW);
	assert_int_equal(pl->m[plan_index(pl, "/srv/ws/agent")].kind, SBX_MOUNT_MASK);
	/* No host mask at /home: only the pin above the home's tmpfs. */
	assert_int_equal(pl->m[plan_index(pl, "/home")].kind, SBX_MOUNT_PIN);
	/* A home source is bound rw. */
	sbx_strlcpy(s.home_source, sizeof(s.home_source), "/var/lib/agent-sandbox/homes/agent");
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), 0);
	h = plan_index(pl, "/home/agent");
	assert_int_equal(pl->m[h].kind, SBX_MOUNT_BIND);
	assert_string_equal(pl->m[h].source, "/var/lib/agent-sandbox/homes/agent");

	/* Bad input: a non-canonical path is refused, the plan untouched. */
	pl->n = 5;
	sbx_strlcpy(p->roots[0].path, sizeof(p->roots[0].path), "/var/../etc");
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "/var/../etc"));
	assert_int_equal(pl->n, 5);
	free(p);
	free(pl);
}

/* ---- applied, in userns + mntns + pidns ------------------------------- */

struct view_case {
	enum sbx_access command;
	char copied_true[600];
};

static int run_checks(const struct view_case *vc)
{
	struct statfs sfs;
	struct stat sb;
	char path[700], buf[64];
	DIR *d;
	struct dirent *de;
	int fd, n, ptn = -1;
	pid_t pid;
	int status;

	/* Host is read-only, the workspace is not. */
	errno = 0;
	if (open("/etc/sbx-test-x", O_WRONLY | O_CREAT, 0644) != -1 || errno != EROFS)
		return 20;
	errno = 0;
	if (open("/usr/sbx-test-x", O_WRONLY | O_CREAT, 0644) != -1 || errno != EROFS)
		return 21;
	snprintf(path, sizeof(path), "%s/out", ws);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "persist", 7) != 7 || close(fd) != 0)
		return 22;
	/* $HOME: a fresh, empty, writable tmpfs. */
	if (statfs(home, &sfs) != 0 || sfs.f_type != TMPFS_MAGIC)
		return 23;
	d = opendir(home);
	n = 0;
	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (!d || n != 0)
		return 24;
	closedir(d);
	snprintf(path, sizeof(path), "%s/.bashrc", home);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		return 25;
	close(fd);
	/* /tmp: new tmpfs, the host's marker is not there. */
	if (statfs("/tmp", &sfs) != 0 || sfs.f_type != TMPFS_MAGIC)
		return 26;
	errno = 0;
	if (stat(marker, &sb) != -1 || errno != ENOENT)
		return 27;
	/* /proc: only this namespace; /proc/1 is us. */
	if (getpid() != 1 || readlink("/proc/self", buf, sizeof(buf)) != 1 || buf[0] != '1')
		return 28;
	d = opendir("/proc");
	n = 0;
	while (d && (de = readdir(d)))
		n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
	if (!d || n != 1)
		return 29;
	closedir(d);
	/* /dev: the safe nodes, nothing else. */
	fd = open("/dev/null", O_WRONLY);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return 30;
	close(fd);
	fd = open("/dev/urandom", O_RDONLY);
	if (fd < 0 || read(fd, buf, 8) != 8)
		return 31;
	close(fd);
	if (stat("/dev/sda", &sb) == 0 || stat("/dev/vda", &sb) == 0 ||
	    stat("/dev/kmsg", &sb) == 0 || stat("/dev/mem", &sb) == 0 ||
	    stat("/dev/zram0", &sb) == 0)
		return 32;
	errno = 0;
	if (mknod("/dev/sbx-x", S_IFREG | 0600, 0) != -1 || errno != EROFS)
		return 33;
	/* /dev/pts: a new instance, so the first pty is number 0. */
	if (statfs("/dev/pts", &sfs) != 0 || sfs.f_type != DEVPTS_SUPER_MAGIC)
		return 34;
	fd = open("/dev/ptmx", O_RDWR | O_NOCTTY);
	if (fd < 0 || ioctl(fd, TIOCGPTN, &ptn) != 0 || ptn != 0)
		return 35;
	close(fd);
	/* Secrets: the dir is empty, the file reads as nothing. */
	d = opendir(secret_dir);
	n = 0;
	while (d && (de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (!d || n != 0)
		return 36;
	closedir(d);
	snprintf(path, sizeof(path), "%s/key", secret_dir);
	errno = 0;
	if (open(path, O_RDONLY) != -1 || errno != ENOENT)
		return 37;
	fd = open(secret_file, O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf)) != 0)
		return 38;
	close(fd);
	/* Exec: /usr/bin/true always runs; the copy in the workspace only
	 * when the gate is off (noexec workspace under the gate). */
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "true", NULL };

		execv("/usr/bin/true", argv);
		_exit(40);
	}
	if (waitpid(pid, &status, 0) != pid || sbx_test_status_code(status) != 0)
		return 41;
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "true", NULL };

		execv(vc->copied_true, argv);
		_exit(errno == EACCES ? 42 : 43);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 44;
	if (vc->command != SBX_ACCESS_GATED)
		return sbx_test_status_code(status) == 0 ? 0 : 46;
	if (sbx_test_status_code(status) != 42)
		return 45;
	/* The gate: a host program not on the list is refused by the
	 * kernel (noexec), also when the loader is asked to map it, while
	 * the listed one runs either way. */
	{
		static const char *const runs[][3] = {
			{ "/usr/bin/id", NULL, "refused" },
			{ LDSO, "/usr/bin/id", "loader refused" },
			{ LDSO, "/usr/bin/true", "ok" },
		};

		for (size_t i = 0; i < ARRAY_SIZE(runs); i++) {
			pid = fork();
			if (pid == 0) {
				char *argv[] = { (char *)runs[i][0], (char *)runs[i][1], NULL };
				int devnull = open("/dev/null", O_WRONLY);

				dup2(devnull, 2);
				execv(runs[i][0], argv);
				_exit(errno == EACCES ? 42 : 43);
			}
			if (waitpid(pid, &status, 0) != pid)
				return 47;
			status = sbx_test_status_code(status);
			if (i == 0 && status != 42)
				return 48;	/* execve(id) must be EACCES */
			if (i == 1 && status != 127)
				return 49;	/* ld.so cannot map id */
			if (i == 2 && status != 0)
				return 50;	/* ld.so runs the listed program */
		}
	}
	return 0;
}

/* A pathname unix socket on the host's /run, like D-Bus or docker.sock. */
static char run_sock[108];

static int connect_run_sock(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return errno;
	memcpy(sa.sun_path, run_sock, sizeof(run_sock));
	e = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	close(fd);
	return e;
}

static int child_view(void *arg)
{
	const struct view_case *vc = arg;
	struct sbx_mount_plan *pl = calloc(1, sizeof(*pl));
	struct sbx_profile p;
	struct sbx_session s;
	struct sbx_error err;
	char detail[256], buf[16];
	int status = 0, fd;
	pid_t init;

	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);	/* see test_ns.c */
	if (!pl)
		return 10;
	/* Positive control: before the view, the secret is readable. */
	fd = open(secret_file, O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf)) != 6)
		return 11;
	close(fd);
	/* Positive control: the host socket under /run answers. */
	if (connect_run_sock() != 0)
		return 17;
	/* Described before the user namespace, as apply.c does: inside it
	 * root's files show as the overflow uid. */
	profile_for_test(&p, vc->command);
	session_for_test(&s);
	if (sbx_mount_plan_build(&p, &s, pl, &err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 13;
	}
	if (sbx_userns_enter(getuid(), getgid(), &err) != 0) {
		fprintf(stderr, "sbx_userns_enter: %s\n", err.msg);
		return ENTER_FAILED;
	}
	if (sbx_ns_unshare(CLONE_NEWNS | CLONE_NEWPID, &err) != 0)
		return 12;
	init = fork();
	if (init == 0) {
		if (sbx_mount_view_apply(pl, detail, sizeof(detail), &err) != 0) {
			fprintf(stderr, "%s\n", err.msg);
			_exit(14);
		}
		if (!strstr(detail, vc->command == SBX_ACCESS_GATED ? "ro noexec host" : "ro host") ||
		    !strstr(detail, "home tmpfs 256M") ||
		    !strstr(detail, "3 masks")) {	/* 2 deny_read + /run */
			fprintf(stderr, "detail: %s\n", detail);
			_exit(15);
		}
		/* /run is hidden: the socket cannot even be named. */
		if (connect_run_sock() != ENOENT)
			_exit(18);
		_exit(run_checks(vc));
	}
	if (init < 0 || waitpid(init, &status, 0) != init)
		return 16;
	sbx_mount_plan_free(pl);
	free(pl);
	return sbx_test_status_code(status);
}

static void copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ssize_t n;

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void run_view(enum sbx_access command)
{
	struct view_case vc = { .command = command };
	char *before = NULL, *after = NULL, path[600];
	int fd, code, sock_fd;

	SBX_TEST_REQUIRE_ROOT();
	/* The independent probe, before anything is made: skipping on a
	 * failure of sbx_userns_enter would hide a bug in it. */
	SBX_TEST_REQUIRE_USERNS();
	base = sbx_test_mkdtemp("mounts");
	assert_int_equal(sbx_snprintf(ws, sizeof(ws), "%s/ws", base), 0);
	assert_int_equal(sbx_snprintf(home, sizeof(home), "%s/home", base), 0);
	assert_int_equal(sbx_snprintf(marker, sizeof(marker), "%s/marker", base), 0);
	snprintf(secret_dir, sizeof(secret_dir), "%s/secrets", ws);
	snprintf(secret_file, sizeof(secret_file), "%s/.env", ws);
	snprintf(vc.copied_true, sizeof(vc.copied_true), "%s/true", ws);
	assert_int_equal(mkdir(ws, 0755), 0);
	assert_int_equal(chown(ws, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(mkdir(secret_dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/key", secret_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0 && write(fd, "s3cret", 6) == 6);
	close(fd);
	fd = open(secret_file, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0 && write(fd, "s3cret", 6) == 6);
	close(fd);
	fd = open(marker, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	copy_file("/usr/bin/true", vc.copied_true, 0755);
	assert_int_equal(sbx_read_file("/proc/self/mountinfo", 1 << 20, &before, NULL, NULL), 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(run_sock, sizeof(run_sock), "/run/sbx-test-mounts-%d.sock", (int)getpid());
		memcpy(sa.sun_path, run_sock, sizeof(run_sock));
		sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(sock_fd >= 0);
		unlink(run_sock);
		assert_int_equal(bind(sock_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(chmod(run_sock, 0777), 0);
		assert_int_equal(listen(sock_fd, 8), 0);
	}

	code = sbx_test_status_code(sbx_test_fork(true, child_view, &vc));
	close(sock_fd);
	unlink(run_sock);

	assert_int_equal(sbx_read_file("/proc/self/mountinfo", 1 << 20, &after, NULL, NULL), 0);
	snprintf(path, sizeof(path), "%s/out", ws);
	fd = open(path, O_RDONLY);
	if (code == 0) {
		char buf[16] = "";

		/* The workspace write persisted on the host. */
		assert_true(fd >= 0);
		assert_int_equal(read(fd, buf, sizeof(buf)), 7);
		assert_memory_equal(buf, "persist", 7);
	}
	if (fd >= 0)
		close(fd);
	/* Nothing leaked into the host: mount table and no mountpoint dirs. */
	assert_string_equal(before, after);
	assert_int_equal(access(home, F_OK), -1);
	free(before);
	free(after);
	sbx_test_rmtree(base);
	free(base);
	if (code == ENTER_FAILED)
		fail_msg("sbx_userns_enter failed (message above) although a raw "
			 "unshare(CLONE_NEWUSER) works for the test uid");
	assert_int_equal(code, 0);
}

/* Directories the agent could rename above a narrower mount are pinned;
 * nothing else is. */
static void test_plan_pins(void **state)
{
	struct sbx_mount_plan *pl = calloc(1, sizeof(*pl));
	struct sbx_profile *p = calloc(1, sizeof(*p));
	struct sbx_session s;
	struct sbx_error err;
	size_t i, pins = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	sbx_strlcpy(s.home, sizeof(s.home), "/home/agent");
	sbx_strlcpy(s.workspace, sizeof(s.workspace), "/srv/ws/agent");
	profile_for_test(p, SBX_ACCESS_ALLOW);
	p->n_deny_read = 4;
	/* Two levels below the workspace: config can be renamed. */
	sbx_strlcpy(p->deny_read[0], sizeof(p->deny_read[0]), "/srv/ws/agent/config/keys");
	/* Right below it: the bind's top is a mountpoint already. */
	sbx_strlcpy(p->deny_read[1], sizeof(p->deny_read[1]), "/srv/ws/agent/.env");
	/* On the read-only host: nothing to rename. */
	sbx_strlcpy(p->deny_read[2], sizeof(p->deny_read[2]), "/etc/agent/secret");
	/* In the home's fresh tmpfs: nothing of it outlives the session. */
	sbx_strlcpy(p->deny_read[3], sizeof(p->deny_read[3]), "/home/agent/a/b/key");
	p->n_roots = 3;
	sbx_strlcpy(p->roots[0].path, sizeof(p->roots[0].path), "/srv/cache");
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_ALLOW;
	/* A read-only root three levels down a writable one. */
	sbx_strlcpy(p->roots[1].path, sizeof(p->roots[1].path), "/srv/cache/a/b/frozen");
	p->roots[1].read = SBX_ACCESS_ALLOW;
	p->roots[1].write = SBX_ACCESS_DENY;
	/* A hidden root right below the frozen one: its parent is
	 * read-only, but the writable tree's directories above still count. */
	sbx_strlcpy(p->roots[2].path, sizeof(p->roots[2].path), "/srv/cache/a/b/frozen/x/none");
	p->roots[2].read = SBX_ACCESS_DENY;
	p->roots[2].write = SBX_ACCESS_DENY;
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), 0);
	for (i = 1; i < pl->n; i++)	/* parents before children, pins too */
		assert_true(strcmp(pl->m[i - 1].target, pl->m[i].target) < 0);
	for (i = 0; i < pl->n; i++)
		pins += pl->m[i].kind == SBX_MOUNT_PIN;
	assert_int_equal(pl->m[plan_index(pl, "/srv/ws/agent/config")].kind, SBX_MOUNT_PIN);
	assert_int_equal(pl->m[plan_index(pl, "/srv/cache/a")].kind, SBX_MOUNT_PIN);
	assert_int_equal(pl->m[plan_index(pl, "/srv/cache/a/b")].kind, SBX_MOUNT_PIN);
	assert_true(pl->m[plan_index(pl, "/srv/ws/agent/config")].optional);
	assert_int_equal(pins, 3);
	assert_int_equal(plan_index(pl, "/srv/cache/a/b/frozen/x"), -1);
	assert_int_equal(plan_index(pl, "/etc/agent"), -1);
	assert_int_equal(plan_index(pl, "/home/agent/a"), -1);
	assert_int_equal(plan_index(pl, "/srv/ws"), -1);

	/* host_write allow: the host is a tree the agent writes, so a
	 * secret's directories up to / are pinned. */
	p->host_write = SBX_ACCESS_ALLOW;
	p->n_roots = 0;
	p->n_deny_read = 1;
	sbx_strlcpy(p->deny_read[0], sizeof(p->deny_read[0]), "/var/lib/app/secret");
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), 0);
	assert_int_equal(pl->m[plan_index(pl, "/var/lib/app")].kind, SBX_MOUNT_PIN);
	assert_int_equal(pl->m[plan_index(pl, "/var/lib")].kind, SBX_MOUNT_PIN);
	assert_int_equal(pl->m[plan_index(pl, "/var")].kind, SBX_MOUNT_PIN);
	assert_int_equal(plan_index(pl, "/"), -1);
	/* Above the home's tmpfs too, but not in the view's own /dev. */
	assert_int_equal(pl->m[plan_index(pl, "/home")].kind, SBX_MOUNT_PIN);
	assert_int_equal(plan_index(pl, "/dev"), -1);

	/* An ephemeral home inside a writable root hides the passwd home
	 * there: the directories above it are pinned as well. */
	p->host_write = SBX_ACCESS_DENY;
	sbx_strlcpy(s.home, sizeof(s.home), "/srv/users/agent");
	p->n_roots = 1;
	sbx_strlcpy(p->roots[0].path, sizeof(p->roots[0].path), "/srv");
	p->roots[0].read = SBX_ACCESS_ALLOW;
	p->roots[0].write = SBX_ACCESS_ALLOW;
	assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), 0);
	assert_int_equal(pl->m[plan_index(pl, "/srv/users")].kind, SBX_MOUNT_PIN);
	assert_int_equal(pl->m[plan_index(pl, "/srv/users/agent")].kind, SBX_MOUNT_TMPFS);

	/* Too deep to pin within the plan's room: refused, and said why. */
	{
		char deep[SBX_PATH_MAX] = "/srv/ws/agent";

		for (size_t d = 0, n = strlen(deep); d < 100; d++, n += 2)
			snprintf(deep + n, sizeof(deep) - n, "/d");
		sbx_strlcpy(p->deny_read[0], sizeof(p->deny_read[0]), deep);
		assert_int_equal(sbx_mount_plan_build(p, &s, pl, &err), -E2BIG);
		assert_non_null(strstr(err.msg, "the directories pinned above /srv/ws/agent/d/d"));
	}
	sbx_mount_plan_free(pl);
	free(pl);
	free(p);
}

static void test_view_allow(void **state)
{
	(void)state;
	run_view(SBX_ACCESS_ALLOW);
}

static void test_view_gated(void **state)
{
	(void)state;
	run_view(SBX_ACCESS_GATED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_build),
		cmocka_unit_test(test_plan_pins),
		cmocka_unit_test(test_view_allow),
		cmocka_unit_test(test_view_gated),
	};
	return cmocka_run_group_tests_name("mounts", tests, NULL, NULL);
}
