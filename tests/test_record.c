/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for record.c: the session contract between the PAM stage and agent-shell. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

struct fixture {
	char base[64];
	char rt[128];		/* runtime dir (created by the first write) */
	char sessions[160];
};

static int setup(void **state)
{
	struct fixture *fx;

	if (geteuid() != 0) {
		*state = NULL;
		return 0;
	}
	fx = calloc(1, sizeof(*fx));
	if (!fx)
		return -1;
	snprintf(fx->base, sizeof(fx->base), "/run/sbx-test-rec-XXXXXX");
	if (!mkdtemp(fx->base) || chmod(fx->base, 0755) != 0) {
		free(fx);
		return -1;
	}
	snprintf(fx->rt, sizeof(fx->rt), "%s/rt", fx->base);
	snprintf(fx->sessions, sizeof(fx->sessions), "%s/sessions", fx->rt);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx) {
		if (strncmp(fx->base, "/run/sbx-test-", 14) == 0)
			sbx_test_rmtree(fx->base);
		free(fx);
	}
	return 0;
}

static unsigned long my_mntns(void)
{
	struct stat st;

	if (stat("/proc/self/ns/mnt", &st) != 0)
		return 0;
	return (unsigned long)st.st_ino;
}

static void fill(struct sbx_record *rec, uid_t uid)
{
	struct sbx_error err = { 0 };

	memset(rec, 0, sizeof(*rec));
	assert_int_equal(sbx_session_id_new(rec->session, &err), 0);
	sbx_strlcpy(rec->user, sizeof(rec->user), "agent1");
	rec->uid = uid;
	rec->mntns = my_mntns();
	rec->netns = 0;
	sbx_strlcpy(rec->profile, sizeof(rec->profile), "coder");
	memset(rec->hash, 'a', 64);
	sbx_strlcpy(rec->client, sizeof(rec->client), "192.0.2.7");
	sbx_strlcpy(rec->service, sizeof(rec->service), "sshd");
	rec->started = 1700000000;
	sbx_strlcpy(rec->home, sizeof(rec->home), "/home/agent1");
	sbx_strlcpy(rec->home_source, sizeof(rec->home_source),
		    "/var/lib/agent-sandbox/homes/agent1");
	rec->home_kind = SBX_HOME_ISOLATED;
	/* The calling process opened it (as pam_open_session's caller does). */
	rec->opener_pid = getpid();
	assert_int_equal(sbx_proc_start_time(rec->opener_pid, &rec->opener_start), 0);
}

struct read_args {
	const char *rt;
	const char *id;
	uid_t uid;
	unsigned long mntns;
};

/* In a child dropped to the agent uid: the shell's side of the contract.
 * Exit code 0 on success, else the errno. */
static int read_as_agent(void *arg)
{
	const struct read_args *a = arg;
	struct sbx_record rec;
	struct sbx_error err = { 0 };
	int r;

	r = sbx_record_read_verified(a->rt, a->id, a->uid, a->mntns, &rec, &err);
	if (r) {
		fprintf(stderr, "read_as_agent: %s\n", err.msg);
		return -r;
	}
	return strcmp(rec.session, a->id) == 0 ? 0 : 99;
}

static int agent_read(const char *rt, const char *id, uid_t uid, unsigned long mntns)
{
	struct read_args a = { rt, id, uid, mntns };

	return sbx_test_status_code(sbx_test_fork(true, read_as_agent, &a));
}

/* Run fn(arg) in a forked root child with a mount namespace of its own
 * (propagation to ours cut), as pam_open_session's caller has. */
struct publish_case {
	const struct fixture *fx;
	uid_t uid;
};

/* In a session namespace: publish, then the shell's side reads it, as root
 * and as the agent; the record names this namespace. */
static int publish_and_read(void *arg)
{
	const struct publish_case *pc = arg;
	struct sbx_error err = { 0 };
	struct sbx_record rec, got;
	char view[256], file[300];
	struct stat st;

	fill(&rec, pc->uid);
	rec.private_tmp = true;
	CHILD_CHECK(sbx_record_publish(pc->fx->rt, &rec, NULL, NULL, &err) == 0);
	snprintf(view, sizeof(view), "%s/session", pc->fx->rt);
	snprintf(file, sizeof(file), "%s/record", view);
	CHILD_CHECK(lstat(file, &st) == 0);
	CHILD_CHECK(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0444);
	/* Read-only: not even root changes it in place. */
	CHILD_ERRNO(open(file, O_WRONLY | O_CLOEXEC), EROFS);
	CHILD_CHECK(sbx_record_read_verified(pc->fx->rt, rec.session, pc->uid, rec.mntns, &got,
					     &err) == 0);
	CHILD_CHECK(strcmp(got.client, "192.0.2.7") == 0 && got.private_tmp);
	CHILD_CHECK(agent_read(pc->fx->rt, rec.session, pc->uid, rec.mntns) == 0);
	/* The wrong session id is refused. */
	{
		char other[SBX_SESSION_ID_HEX + 1];

		CHILD_CHECK(sbx_session_id_new(other, &err) == 0);
		CHILD_CHECK(sbx_record_read_verified(pc->fx->rt, other, pc->uid, rec.mntns, &got,
						     &err) == -EINVAL);
	}
	return 0;
}

static void test_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec, got;
	struct publish_case pc;
	char path[256];
	struct stat st;
	unsigned n = 99;
	uid_t u;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	fill(&rec, u);
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 0);		/* no sessions dir yet */
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), 0);
	assert_int_equal(stat(fx->rt, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	/* Root-only: the records name every agent's client address. */
	assert_int_equal(stat(fx->sessions, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(path, sizeof(path), "%s/%s", fx->sessions, rec.session);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(sbx_record_parse("", 0, &got, &err), -EINVAL);

	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sbx_record_count_user(fx->rt, u + 1, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 0);
	/* The same id twice is never overwritten. */
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), -EEXIST);

	/* The shell's copy lives in the session's mount namespace only. */
	pc.fx = fx;
	pc.uid = u;
	assert_int_equal(sbx_test_in_own_mntns(publish_and_read, &pc), 0);
	/* Here, outside that namespace, there is no record to read. */
	assert_int_equal(sbx_record_read_verified(fx->rt, rec.session, u, rec.mntns, &got,
						  &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no record in this mount namespace"));
	assert_int_equal(agent_read(fx->rt, rec.session, u, rec.mntns), ENOENT);

	assert_int_equal(sbx_record_remove(fx->rt, rec.session, &err), 0);
	assert_int_equal(sbx_record_remove(fx->rt, rec.session, &err), -ENOENT);
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 0);
}

/* An agent (or any local user) cannot read the records or take the lock. */
static int agent_pokes_records(void *arg)
{
	const struct fixture *fx = arg;
	char lock[256];
	int fd;

	snprintf(lock, sizeof(lock), "%s/.lock", fx->sessions);
	CHILD_ERRNO(open(fx->sessions, O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);
	CHILD_ERRNO(open(lock, O_RDONLY | O_CLOEXEC), EACCES);
	/* Control: the runtime dir itself is listable (and lockable: it is
	 * not the lock, so holding it stalls nobody). */
	fd = open(fx->rt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(flock(fd, LOCK_EX) == 0);
	/* Keep holding it while the parent writes: exit only on SIGKILL. */
	for (;;)
		pause();
}

static void test_lock_not_takeable(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	struct timespec a, b;
	pid_t holder;
	int status = 0;
	double secs;

	SBX_TEST_REQUIRE_ROOT();
	fill(&rec, sbx_test_uid());
	assert_int_equal(sbx_record_write(fx->rt, &rec, 8, NULL, &err), 0);
	fflush(NULL);
	holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		sbx_test_drop_to_agent();
		_exit(agent_pokes_records(fx));
	}
	usleep(200 * 1000);
	/* The holder is still there (its checks passed) ... */
	assert_int_equal(waitpid(holder, &status, WNOHANG), 0);
	/* ... and a login with max_sessions set is not held up by it. */
	fill(&rec, sbx_test_uid());
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(sbx_record_write(fx->rt, &rec, 8, NULL, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	kill(holder, SIGKILL);
	waitpid(holder, &status, 0);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	print_message("  write with an agent holding what it can: %.3f s\n", secs);
	assert_true(secs < 1.0);
}

/* Even root's own lock is waited for only so long: a stuck writer makes
 * the next login fail closed, named, instead of hanging sshd's monitor.
 * Every write takes it, with a session limit or without (max_live 0 here):
 * a close ending the account's last session relies on that. */
static void test_lock_bounded_wait(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	struct timespec a, b;
	char lock[256];
	double secs;
	int fd;

	SBX_TEST_REQUIRE_ROOT();
	fill(&rec, sbx_test_uid());
	assert_int_equal(sbx_record_write(fx->rt, &rec, 8, NULL, &err), 0);
	snprintf(lock, sizeof(lock), "%s/.lock", fx->sessions);
	fd = open(lock, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	/* flock locks belong to the open file description: a second open
	 * in this process conflicts like another process would. */
	assert_int_equal(flock(fd, LOCK_EX), 0);
	fill(&rec, sbx_test_uid());
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	print_message("  refused after %.2f s: %s\n", secs, err.msg);
	assert_non_null(strstr(err.msg, ".lock"));
	assert_true(secs >= 4.5 && secs < 8.0);
	close(fd);
	/* Control: released, the same write goes through. */
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), 0);
}

/* A view directory the test builds by hand (a rw tmpfs in a namespace of
 * its own) holding a crafted record, to prove what the reader refuses. */
enum craft { C_OK, C_AGENT_OWNED, C_WRITABLE, C_HARDLINK, C_SYMLINK, C_WORLD_DIR };

struct craft_case {
	const struct fixture *fx;
	enum craft how;
	int want;		/* errno the agent's read ends with (0: success) */
	const char *msg;
};

static int craft_and_read(void *arg)
{
	const struct craft_case *c = arg;
	struct sbx_error err = { 0 };
	struct sbx_record rec, got;
	char view[256], file[300], other[300], text[2048];
	uid_t u = sbx_test_uid();
	int fd, r;

	snprintf(view, sizeof(view), "%s/session", c->fx->rt);
	snprintf(file, sizeof(file), "%s/record", view);
	snprintf(other, sizeof(other), "%s/other", view);
	(void)mkdir(c->fx->rt, 0755);
	(void)mkdir(view, 0755);
	CHILD_CHECK(mount("tmpfs", view, "tmpfs", 0, "mode=0755,size=64k") == 0);
	fill(&rec, u);
	snprintf(text, sizeof(text),
		 "version=1\nsession=%s\nuser=agent1\nuid=%u\nmntns=%lu\nstarted=1\n"
		 "home=/h\nhome_kind=ephemeral\n", rec.session, (unsigned)u, rec.mntns);
	fd = open(c->how == C_SYMLINK ? other : file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		  0444);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	switch (c->how) {
	case C_OK: break;
	case C_AGENT_OWNED: CHILD_CHECK(chown(file, u, 0) == 0); break;
	case C_WRITABLE: CHILD_CHECK(chmod(file, 0666) == 0); break;
	case C_HARDLINK: CHILD_CHECK(link(file, other) == 0); break;
	case C_SYMLINK: CHILD_CHECK(symlink("other", file) == 0); break;
	case C_WORLD_DIR: CHILD_CHECK(chmod(view, 0777) == 0); break;
	}
	r = agent_read(c->fx->rt, rec.session, u, rec.mntns);
	if (r != c->want) {
		fprintf(stderr, "craft %d: agent read ended %d, want %d\n", c->how, r, c->want);
		return 1;
	}
	if (c->want) {
		memset(&got, 0x5a, sizeof(got));
		CHILD_CHECK(sbx_record_read_verified(c->fx->rt, rec.session, u, rec.mntns, &got,
						     &err) == -c->want);
		if (!strstr(err.msg, c->msg)) {
			fprintf(stderr, "message '%s' lacks '%s'\n", err.msg, c->msg);
			return 1;
		}
		CHILD_CHECK(got.version == 0x5a5a5a5a);	/* output untouched */
	} else {
		/* Wrong uid and wrong namespace are refused too. */
		CHILD_CHECK(sbx_record_read_verified(c->fx->rt, rec.session, u + 1, rec.mntns,
						     &got, &err) == -EPERM);
		CHILD_CHECK(sbx_record_read_verified(c->fx->rt, rec.session, u, rec.mntns + 1,
						     &got, &err) == -ESTALE);
	}
	return 0;
}

static void test_verify_refusals(void **state)
{
	struct fixture *fx = *state;
	const struct craft_case cases[] = {
		{ fx, C_OK, 0, "" },
		{ fx, C_AGENT_OWNED, EPERM, "not root" },
		{ fx, C_WRITABLE, EPERM, "mode 0666 is group/world writable" },
		{ fx, C_HARDLINK, EMLINK, "refusing a hard-linked record" },
		{ fx, C_SYMLINK, ELOOP, "is a symlink" },
		{ fx, C_WORLD_DIR, EPERM, "mode 0777 is group/world writable" },
	};

	SBX_TEST_REQUIRE_ROOT();
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (sbx_test_in_own_mntns(craft_and_read, (void *)&cases[i]) != 0)
			fail_msg("craft case %zu failed", i);
	}
}

static void test_untrusted_dirs_refused(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	char rt[256], *tmp;

	SBX_TEST_REQUIRE_ROOT();
	(void)fx;
	fill(&rec, sbx_test_uid());
	tmp = sbx_test_mkdtemp("rec");
	snprintf(rt, sizeof(rt), "%s/rt", tmp);
	assert_int_equal(sbx_record_write(rt, &rec, 0, NULL, &err), -EPERM);
	assert_non_null(strstr(err.msg, "/tmp: mode 1777"));
	assert_int_equal(sbx_record_publish(rt, &rec, NULL, NULL, &err), -EPERM);
	sbx_test_rmtree(tmp);
	free(tmp);
}

/* An older install left sessions/ 0755: the next write tightens it. */
static void test_sessions_dir_tightened(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	struct stat st;

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(mkdir(fx->rt, 0755), 0);
	assert_int_equal(mkdir(fx->sessions, 0755), 0);
	assert_int_equal(chmod(fx->sessions, 0755), 0);
	fill(&rec, sbx_test_uid());
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), 0);
	assert_int_equal(stat(fx->sessions, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
}

static void test_values_and_parser(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record rec, got;
	char a[SBX_SESSION_ID_HEX + 1], b[SBX_SESSION_ID_HEX + 1];
	const char *ok = "version=1\nsession=0123456789abcdef0123456789abcdef\nuser=a\n"
			 "uid=5\nmntns=7\nstarted=1\nhome=/h\nhome_kind=ephemeral\n";
	char buf[512];

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_session_id_new(a, &err), 0);
	assert_int_equal(sbx_session_id_new(b, &err), 0);
	assert_true(sbx_session_id_is_valid(a));
	assert_string_not_equal(a, b);
	assert_false(sbx_session_id_is_valid("../../etc/passwd"));
	assert_false(sbx_session_id_is_valid("0123456789ABCDEF0123456789abcdef"));

	/* A newline from the network (PAM_RHOST) must not add a key. */
	fill(&rec, sbx_test_uid());
	sbx_strlcpy(rec.client, sizeof(rec.client), "x\nuid=0");
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "control character"));
	sbx_strlcpy(rec.session, sizeof(rec.session), "../x");
	assert_int_equal(sbx_record_write(fx->rt, &rec, 0, NULL, &err), -EINVAL);

	assert_int_equal(sbx_record_parse(ok, strlen(ok), &got, &err), 0);
	assert_int_equal(got.uid, 5);
	assert_int_equal(got.home_kind, SBX_HOME_EPHEMERAL);
	snprintf(buf, sizeof(buf), "%suid=6\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "duplicate key 'uid'"));
	snprintf(buf, sizeof(buf), "%sopener_pid=9\nopener_start=77\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), 0);
	assert_int_equal(got.opener_pid, 9);
	assert_int_equal(got.opener_start, 77);
	snprintf(buf, sizeof(buf), "%sopener_pid=9\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "come together"));
	snprintf(buf, sizeof(buf), "%sopener_pid=0\nopener_start=77\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	snprintf(buf, sizeof(buf), "%sbogus=1\n", ok);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown key 'bogus'"));
	assert_int_equal(sbx_record_parse(ok, strlen(ok) - 1, &got, &err), -EINVAL);
	snprintf(buf, sizeof(buf), "version=2%s", ok + 9);
	assert_int_equal(sbx_record_parse(buf, strlen(buf), &got, &err), -EINVAL);
	assert_int_equal(sbx_record_parse(ok + 10, strlen(ok + 10), &got, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "required key is missing"));
}

/* A child that makes its own mount namespace, writes a record for it and
 * exits without removing it: what a crashed sshd leaves behind. */
static int write_and_die(void *arg)
{
	const struct fixture *fx = arg;
	struct sbx_error err = { 0 };
	struct sbx_record rec;

	if (unshare(CLONE_NEWNS) != 0)
		return 10;
	fill(&rec, sbx_test_uid());
	if (sbx_record_write(fx->rt, &rec, 0, NULL, &err) != 0) {
		fprintf(stderr, "write_and_die: %s\n", err.msg);
		return 11;
	}
	return 0;
}

static unsigned files_in(const char *dir)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static int count_as_agent(void *arg)
{
	const struct fixture *fx = arg;
	struct sbx_error err = { 0 };
	unsigned n = 0, stale = 99;

	/* The records are root's: an agent can neither count nor prune. */
	if (sbx_record_count_user(fx->rt, getuid(), &n, &stale, NULL, &err) != -EACCES) {
		fprintf(stderr, "count_as_agent: %s\n", err.msg);
		return 10;
	}
	return 0;
}

static void test_stale_records_pruned(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record live, other;
	unsigned n = 99, stale = 99;
	char path[256];
	uid_t u;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	fill(&live, u);				/* this process's namespace: live */
	assert_int_equal(sbx_record_write(fx->rt, &live, 0, NULL, &err), 0);
	fill(&other, u + 1);			/* another uid, live */
	assert_int_equal(sbx_record_write(fx->rt, &other, 0, NULL, &err), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, write_and_die, fx)), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, write_and_die, fx)), 0);
	assert_int_equal(files_in(fx->sessions), 4);

	/* A non-root caller is refused and removes nothing. */
	assert_int_equal(sbx_test_status_code(sbx_test_fork(true, count_as_agent, fx)), 0);
	assert_int_equal(files_in(fx->sessions), 4);
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, &stale, NULL, &err), 0);
	assert_int_equal(n, 1);			/* the two dead ones do not count */
	assert_int_equal(stale, 2);		/* and are gone */
	assert_int_equal(files_in(fx->sessions), 2);
	snprintf(path, sizeof(path), "%s/%s", fx->sessions, live.session);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%s", fx->sessions, other.session);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(sbx_record_count_user(fx->rt, u + 1, &n, &stale, NULL, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(stale, 0);

	/* Without an opener (an older module's record), the mount namespace
	 * decides: this process's is in use; inode 1 is never a namespace. */
	{
		struct sbx_record ns_live, ns_dead;

		fill(&ns_live, u);
		ns_live.opener_pid = 0;
		ns_live.opener_start = 0;
		assert_int_equal(sbx_record_write(fx->rt, &ns_live, 0, NULL, &err), 0);
		ns_dead = ns_live;
		assert_int_equal(sbx_session_id_new(ns_dead.session, &err), 0);
		ns_dead.mntns = 1;
		assert_int_equal(sbx_record_write(fx->rt, &ns_dead, 0, NULL, &err), 0);
		assert_int_equal(sbx_record_count_user(fx->rt, u, &n, &stale, NULL, &err), 0);
		assert_int_equal(n, 2);
		assert_int_equal(stale, 1);
		snprintf(path, sizeof(path), "%s/%s", fx->sessions, ns_dead.session);
		assert_int_equal(access(path, F_OK), -1);
	}
}

static void test_limit_on_write(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record a, b, c;
	char path[256];
	unsigned n = 0;
	uid_t u;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	fill(&a, u);
	fill(&b, u);
	fill(&c, u);
	assert_int_equal(sbx_record_write(fx->rt, &a, 2, NULL, &err), 0);
	assert_int_equal(sbx_record_write(fx->rt, &b, 2, NULL, &err), 0);
	/* The third is refused and leaves nothing behind. */
	assert_int_equal(sbx_record_write(fx->rt, &c, 2, NULL, &err), -EUSERS);
	if (!strstr(err.msg, "2 sessions of uid") || !strstr(err.msg, "max_sessions is 2"))
		fail_msg("message: %s", err.msg);
	snprintf(path, sizeof(path), "%s/%s", fx->sessions, c.session);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(files_in(fx->sessions), 2);
	/* Other accounts have their own count. */
	c.uid = u + 1;
	assert_int_equal(sbx_record_write(fx->rt, &c, 2, NULL, &err), 0);
	/* A dead session's record frees its slot at the next write. */
	assert_int_equal(sbx_record_remove(fx->rt, b.session, &err), 0);
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, write_and_die, fx)), 0);
	fill(&b, u);
	assert_int_equal(sbx_record_write(fx->rt, &b, 2, NULL, &err), 0);
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(files_in(fx->sessions), 3);
}

/* sbx_record_last_close's action: counts its calls and tries the lock
 * from a second open file description, which conflicts while the caller
 * holds it. */
struct last_probe {
	const struct fixture *fx;
	unsigned calls;
	int lock_errno;		/* flock(LOCK_NB) from inside the action */
};

static void last_action(void *arg)
{
	struct last_probe *lp = arg;
	char lock[256];
	int fd;

	lp->calls++;
	snprintf(lock, sizeof(lock), "%s/.lock", lp->fx->sessions);
	fd = open(lock, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		lp->lock_errno = errno;
		return;
	}
	lp->lock_errno = flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
	close(fd);
}

static void test_last_close(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_record mine, other;
	struct last_probe lp = { .fx = fx, .lock_errno = -1 };
	char lock[256];
	unsigned live = 99;
	uid_t u;
	int fd;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	fill(&mine, u);				/* live: this process opened it */
	assert_int_equal(sbx_record_write(fx->rt, &mine, 0, NULL, &err), 0);
	fill(&other, u + 1);			/* another account's, live */
	assert_int_equal(sbx_record_write(fx->rt, &other, 0, NULL, &err), 0);
	/* A session of u whose opener died without closing: not live. */
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, write_and_die, fx)), 0);
	assert_int_equal(files_in(fx->sessions), 3);

	/* A live session of u remains: the action does not run. */
	assert_int_equal(sbx_record_last_close(fx->rt, u, last_action, &lp, NULL, &live, &err), 0);
	assert_int_equal(live, 1);
	assert_int_equal(lp.calls, 0);
	assert_int_equal(files_in(fx->sessions), 2);	/* the stale one removed */

	/* The last one is removed (as close_session does first): the action
	 * runs once, with the lock held. */
	assert_int_equal(sbx_record_remove(fx->rt, mine.session, &err), 0);
	assert_int_equal(sbx_record_last_close(fx->rt, u, last_action, &lp, NULL, &live, &err), 0);
	assert_int_equal(live, 0);
	assert_int_equal(lp.calls, 1);
	assert_int_equal(lp.lock_errno, EWOULDBLOCK);
	/* The other account's session was never u's to count. */
	assert_int_equal(sbx_record_last_close(fx->rt, u + 1, last_action, &lp, NULL, &live, &err), 0);
	assert_int_equal(live, 1);
	assert_int_equal(lp.calls, 1);
	/* Control: afterwards the lock is free. */
	snprintf(lock, sizeof(lock), "%s/.lock", fx->sessions);
	fd = open(lock, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
}

/* Twenty writers race for five slots: exactly five win. Each stays alive
 * (its record live) until every writer has answered. */
static void test_limit_under_race(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	pid_t pids[20];
	unsigned won = 0, lost = 0, n = 0;
	int go[2], answers[2], release[2];
	uid_t u;

	SBX_TEST_REQUIRE_ROOT();
	u = sbx_test_uid();
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(answers), 0);
	assert_int_equal(pipe(release), 0);
	fflush(NULL);
	for (size_t i = 0; i < ARRAY_SIZE(pids); i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			struct sbx_record rec;
			char c;
			int r;

			close(go[1]);
			close(release[1]);
			close(answers[0]);
			if (read(go[0], &c, 1) != 0)
				_exit(9);
			fill(&rec, u);
			r = sbx_record_write(fx->rt, &rec, 5, NULL, &err);
			c = (char)(r == 0 ? 'w' : r == -EUSERS ? 'l' : '?');
			if (write(answers[1], &c, 1) != 1)
				_exit(8);
			(void)!read(release[0], &c, 1);	/* EOF: the parent is done */
			_exit(0);
		}
	}
	close(go[0]);
	close(answers[1]);
	close(release[0]);
	close(go[1]);			/* everyone starts now */
	for (size_t i = 0; i < ARRAY_SIZE(pids); i++) {
		char c = 0;

		assert_int_equal(read(answers[0], &c, 1), 1);
		if (c == 'w')
			won++;
		else if (c == 'l')
			lost++;
		else
			fail_msg("a writer failed otherwise");
	}
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, NULL, NULL, &err), 0);
	close(release[1]);
	close(answers[0]);
	for (size_t i = 0; i < ARRAY_SIZE(pids); i++) {
		int status = 0;

		while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
			;
		assert_int_equal(sbx_test_status_code(status), 0);
	}
	assert_int_equal(won, 5);
	assert_int_equal(lost, 15);
	assert_int_equal(n, 5);
	/* Their openers gone, all five are stale now. */
	assert_int_equal(sbx_record_count_user(fx->rt, u, &n, NULL, NULL, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(files_in(fx->sessions), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_dirs_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sessions_dir_tightened, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_not_takeable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_bounded_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values_and_parser, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_records_pruned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limit_on_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limit_under_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_close, setup, teardown),
	};
	return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
