/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests for ledger.c: root's copy of each report and its events file. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

struct fixture {
	char base[64];
	char rt[128];
	char state[128];
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
	snprintf(fx->base, sizeof(fx->base), "/run/sbx-test-ledger-XXXXXX");
	if (!mkdtemp(fx->base) || chmod(fx->base, 0755) != 0) {
		free(fx);
		return -1;
	}
	snprintf(fx->rt, sizeof(fx->rt), "%s/rt", fx->base);
	snprintf(fx->state, sizeof(fx->state), "%s/state", fx->base);
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

static void fill(struct sbx_record *rec, uid_t uid)
{
	struct sbx_error err = { 0 };

	memset(rec, 0, sizeof(*rec));
	assert_int_equal(sbx_session_id_new(rec->session, &err), 0);
	sbx_strlcpy(rec->user, sizeof(rec->user), "agent1");
	rec->uid = uid;
	rec->mntns = sbx_ns_inode("mnt");
	sbx_strlcpy(rec->profile, sizeof(rec->profile), "coder");
	memset(rec->hash, 'a', 64);
	sbx_strlcpy(rec->client, sizeof(rec->client), "192.0.2.7");
	sbx_strlcpy(rec->service, sizeof(rec->service), "sshd");
	rec->started = 1700000000;
	sbx_strlcpy(rec->home, sizeof(rec->home), "/home/agent1");
	rec->home_kind = SBX_HOME_ISOLATED;
}

/* ---- the channel ---------------------------------------------------------- */

struct chan_case {
	const struct fixture *fx;
	int listen_fd;
	int hold[2];		/* the first sender waits on it, connected */
	int ready[2];		/* ... after it said it has sent */
};

static const char said[] = "{\"first\":1}\nevent=refused reason=gate\n";

static int agent_connects_and_sends(void *arg)
{
	struct chan_case *cc = arg;
	int fd = -1;
	char c;

	CHILD_CHECK(sbx_ledger_channel_connect(cc->fx->rt, &fd) == 0);
	CHILD_CHECK(sbx_ledger_channel_send(fd, said, strlen(said)) == 0);
	CHILD_CHECK(write(cc->ready[1], "r", 1) == 1);
	/* Stay connected until the parent has tried a second connection. */
	CHILD_CHECK(read(cc->hold[0], &c, 1) >= 0);
	close(fd);
	return 0;
}

static int agent_second_connect(void *arg)
{
	struct chan_case *cc = arg;
	int fd = -1;

	/* The one slot is taken: refused at once, never a wait. */
	CHILD_CHECK(sbx_ledger_channel_connect(cc->fx->rt, &fd) == -EAGAIN);
	return 0;
}

static int other_uid_connect(void *arg)
{
	struct chan_case *cc = arg;
	int fd = -1;

	CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65533) == 0);
	/* The socket is the session uid's, 0600. */
	CHILD_CHECK(sbx_ledger_channel_connect(cc->fx->rt, &fd) == -EACCES);
	return 0;
}

static int channel_in_session(void *arg)
{
	struct chan_case *cc = arg;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	struct ucred peer;
	char path[256], *buf = NULL;
	struct stat st;
	size_t len = 0;
	pid_t first;
	int status;
	char c;

	fill(&rec, sbx_test_uid());
	CHILD_CHECK(sbx_record_publish(cc->fx->rt, &rec, &cc->listen_fd, NULL, &err) == 0);
	CHILD_CHECK(cc->listen_fd >= 0);
	snprintf(path, sizeof(path), "%s/session/" SBX_LEDGER_CHANNEL, cc->fx->rt);
	CHILD_CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	CHILD_CHECK(st.st_uid == sbx_test_uid() && (st.st_mode & 07777) == 0600);
	/* Nobody connected yet. */
	CHILD_CHECK(sbx_ledger_channel_collect(cc->listen_fd, 4096, 0, &buf, &len, &peer, &err) ==
		    -ENOENT);

	CHILD_CHECK(pipe(cc->hold) == 0 && pipe(cc->ready) == 0);
	fflush(NULL);
	first = fork();
	CHILD_CHECK(first >= 0);
	if (first == 0) {
		sbx_test_drop_to_agent();
		_exit(agent_connects_and_sends(cc));
	}
	CHILD_CHECK(read(cc->ready[0], &c, 1) == 1);
	CHILD_CHECK(sbx_test_fork(true, agent_second_connect, cc) == 0);
	CHILD_CHECK(sbx_test_fork(false, other_uid_connect, cc) == 0);
	CHILD_CHECK(write(cc->hold[1], "x", 1) == 1);
	CHILD_CHECK(waitpid(first, &status, 0) == first && sbx_test_status_code(status) == 0);

	/* Root collects what the first one said, with the kernel's word for
	 * who it was. */
	CHILD_CHECK(sbx_ledger_channel_collect(cc->listen_fd, 4096, 0, &buf, &len, &peer, &err) == 0);
	CHILD_CHECK(len == strlen(said) && memcmp(buf, said, len) == 0);
	CHILD_CHECK(peer.uid == sbx_test_uid() && peer.pid == first);
	free(buf);
	close(cc->listen_fd);
	return 0;
}

static void test_channel_one_slot(void **state)
{
	struct fixture *fx = *state;
	struct chan_case cc = { .fx = fx, .listen_fd = -1 };

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_in_own_mntns(channel_in_session, &cc), 0);
}

/*
 * The refusals socket beside the channel: the same owner and mode, its own
 * small queue. Shells that find the channel taken each connect and say
 * they refused; backlog + 1 are admitted, the next gets -EAGAIN at once,
 * another uid -EACCES; the channel's slot is untouched by all this. Root
 * reads each connection with its sender's credentials, then -ENOENT.
 */
struct refusals_case {
	const struct fixture *fx;
	int sent[2];		/* each sender says it has sent */
	int hold[2];		/* ... and waits, connected */
};

static int refused_shell(void *arg)
{
	struct refusals_case *rc = arg;
	char line[64], c;
	int fd = -1;

	close(rc->hold[1]);	/* the parent's alone: its close is the go */
	CHILD_CHECK(sbx_ledger_refusals_connect(rc->fx->rt, &fd) == 0);
	snprintf(line, sizeof(line), "event=refused reason=ledger_channel n=%d\n", (int)getpid());
	CHILD_CHECK(sbx_ledger_channel_send(fd, line, strlen(line)) == 0);
	CHILD_CHECK(write(rc->sent[1], "s", 1) == 1);
	CHILD_CHECK(read(rc->hold[0], &c, 1) >= 0);
	close(fd);
	return 0;
}

static int refusals_full(void *arg)
{
	struct refusals_case *rc = arg;
	int fd = -1;

	CHILD_CHECK(sbx_ledger_refusals_connect(rc->fx->rt, &fd) == -EAGAIN);
	/* The channel's one slot is still free for the first shell. */
	CHILD_CHECK(sbx_ledger_channel_connect(rc->fx->rt, &fd) == 0);
	close(fd);
	return 0;
}

static int refusals_other_uid(void *arg)
{
	struct refusals_case *rc = arg;
	int fd = -1;

	CHILD_CHECK(setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65533) == 0);
	CHILD_CHECK(sbx_ledger_refusals_connect(rc->fx->rt, &fd) == -EACCES);
	return 0;
}

static int refusals_in_session(void *arg)
{
	struct refusals_case *rc = arg;
	struct sbx_error err = { 0 };
	struct sbx_record rec;
	struct ucred peer;
	pid_t pids[SBX_LEDGER_REFUSALS_BACKLOG + 1];
	char path[256], want[64], *buf = NULL;
	struct stat st;
	size_t len = 0;
	int chan = -1, refu = -1, status, n;
	char c;

	fill(&rec, sbx_test_uid());
	CHILD_CHECK(sbx_record_publish(rc->fx->rt, &rec, &chan, &refu, &err) == 0);
	CHILD_CHECK(chan >= 0 && refu >= 0);
	snprintf(path, sizeof(path), "%s/session/" SBX_LEDGER_REFUSALS, rc->fx->rt);
	CHILD_CHECK(lstat(path, &st) == 0 && S_ISSOCK(st.st_mode));
	CHILD_CHECK(st.st_uid == sbx_test_uid() && (st.st_mode & 07777) == 0600);
	CHILD_CHECK(sbx_ledger_channel_collect(refu, 4096, 0, &buf, &len, &peer, &err) == -ENOENT);

	CHILD_CHECK(pipe(rc->sent) == 0 && pipe(rc->hold) == 0);
	for (n = 0; n < SBX_LEDGER_REFUSALS_BACKLOG + 1; n++) {
		fflush(NULL);
		pids[n] = fork();
		CHILD_CHECK(pids[n] >= 0);
		if (pids[n] == 0) {
			sbx_test_drop_to_agent();
			_exit(refused_shell(rc));
		}
		CHILD_CHECK(read(rc->sent[0], &c, 1) == 1);
	}
	CHILD_CHECK(sbx_test_fork(true, refusals_full, rc) == 0);
	CHILD_CHECK(sbx_test_fork(false, refusals_other_uid, rc) == 0);
	close(rc->hold[1]);
	for (n = 0; n < SBX_LEDGER_REFUSALS_BACKLOG + 1; n++)
		CHILD_CHECK(waitpid(pids[n], &status, 0) == pids[n] &&
			    sbx_test_status_code(status) == 0);

	/* Root hears each, oldest first, with the kernel's word for who. */
	for (n = 0; n < SBX_LEDGER_REFUSALS_BACKLOG + 1; n++) {
		CHILD_CHECK(sbx_ledger_channel_collect(refu, 4096, 0, &buf, &len, &peer, &err) == 0);
		snprintf(want, sizeof(want), "event=refused reason=ledger_channel n=%d\n",
			 (int)pids[n]);
		CHILD_CHECK(peer.uid == sbx_test_uid() && peer.pid == pids[n]);
		CHILD_CHECK(len == strlen(want) && memcmp(buf, want, len) == 0);
		free(buf);
		buf = NULL;
	}
	CHILD_CHECK(sbx_ledger_channel_collect(refu, 4096, 0, &buf, &len, &peer, &err) == -ENOENT);
	/* The channel's slot went to refusals_full's connection. */
	CHILD_CHECK(sbx_ledger_channel_collect(chan, 4096, 0, &buf, &len, &peer, &err) == 0);
	free(buf);
	close(refu);
	close(chan);
	return 0;
}

static void test_refusals_beside_channel(void **state)
{
	struct fixture *fx = *state;
	struct refusals_case rc = { .fx = fx };

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_test_in_own_mntns(refusals_in_session, &rc), 0);
}

/* A socket at the channel's path that root does not listen on: refused by
 * the shell (the listener's credentials). */
static int fake_listener(void *arg)
{
	const char *dir = arg;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char view[80];
	int l, fd = -1;

	CHILD_CHECK(sbx_snprintf(view, sizeof(view), "%s/session", dir) == 0);
	CHILD_CHECK(mkdir(view, 0700) == 0);
	CHILD_CHECK(sbx_snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" SBX_LEDGER_CHANNEL,
				 view) == 0);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    listen(l, 4) == 0);
	CHILD_CHECK(sbx_ledger_channel_connect(dir, &fd) == -EPERM);
	/* Positive control: the path was reachable and listening. */
	{
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		CHILD_CHECK(c >= 0 && connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0);
		close(c);
	}
	close(l);
	return 0;
}

static void test_channel_not_roots_refused(void **state)
{
	struct fixture *fx = *state;
	char dir[200];

	SBX_TEST_REQUIRE_ROOT();
	snprintf(dir, sizeof(dir), "%s/fake", fx->base);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chown(dir, sbx_test_uid(), sbx_test_gid()), 0);
	assert_int_equal(sbx_test_fork(true, fake_listener, dir), 0);
	/* No PAM stage at all: -ENOENT. */
	{
		int fd = -1;

		assert_int_equal(sbx_ledger_channel_connect(fx->base, &fd), -ENOENT);
	}
}

/* ---- the store ---------------------------------------------------------- */

static int agent_reads(void *arg)
{
	const char *path = arg;

	CHILD_ERRNO(open(path, O_RDONLY | O_CLOEXEC), EACCES);
	return 0;
}

static void test_store_is_roots(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	char id[SBX_SESSION_ID_HEX + 1], path[300], *buf = NULL;
	const char json[] = "{\"schema\":1}\n";
	struct stat st;
	size_t len = 0;

	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(sbx_session_id_new(id, &err), 0);
	assert_int_equal(sbx_ledger_read_report(fx->state, id, &buf, &len, &err), -ENOENT);
	assert_int_equal(sbx_ledger_store_report(fx->state, id, json, strlen(json), &err), 0);
	snprintf(path, sizeof(path), "%s/ledger", fx->state);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_uid == 0 && (st.st_mode & 07777) == 0700);
	snprintf(path, sizeof(path), "%s/ledger/%s.json", fx->state, id);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0600);
	assert_int_equal(sbx_ledger_read_report(fx->state, id, &buf, &len, &err), 0);
	assert_int_equal(len, strlen(json));
	assert_int_equal(memcmp(buf, json, len), 0);
	free(buf);
	/* The agent can neither read nor list it. */
	assert_int_equal(sbx_test_fork(true, agent_reads, path), 0);
	assert_int_equal(sbx_ledger_store_report(fx->state, "../x", json, 3, &err), -EINVAL);

	/* A ledger directory others can enter is refused, not used. */
	snprintf(path, sizeof(path), "%s/ledger", fx->state);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(sbx_ledger_read_report(fx->state, id, &buf, &len, &err), -EPERM);
	assert_non_null(strstr(err.msg, "not a root-only directory"));
	assert_int_equal(chmod(path, 0700), 0);

	/* Prune: dry run counts, --yes removes, a newer copy stays. */
	{
		char id2[SBX_SESSION_ID_HEX + 1];
		struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
		unsigned n = 0;

		assert_int_equal(sbx_session_id_new(id2, &err), 0);
		assert_int_equal(sbx_ledger_store_report(fx->state, id2, json, strlen(json), &err), 0);
		snprintf(path, sizeof(path), "%s/ledger/%s.json", fx->state, id);
		assert_int_equal(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW), 0);
		assert_int_equal(sbx_ledger_prune(fx->state, time(NULL) - 86400, false, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(access(path, F_OK), 0);
		assert_int_equal(sbx_ledger_prune(fx->state, time(NULL) - 86400, true, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(access(path, F_OK), -1);
		snprintf(path, sizeof(path), "%s/ledger/%s.json", fx->state, id2);
		assert_int_equal(access(path, F_OK), 0);
	}
}

/* ---- events --------------------------------------------------------------- */

struct collected {
	size_t n;
	char events[8][32];
	char msgs[8][128];
};

static int collect(const struct sbx_ledger_event *ev, void *arg)
{
	struct collected *c = arg;
	const char *msg = sbx_ledger_get(ev, "msg");

	if (c->n < 8) {
		sbx_strlcpy(c->events[c->n], sizeof(c->events[0]), ev->value[0]);
		sbx_strlcpy(c->msgs[c->n], sizeof(c->msgs[0]), msg ? msg : "");
	}
	c->n++;
	return 0;
}

static void test_events_append_and_read(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_logline *l = malloc(sizeof(*l));
	struct collected c = { 0 };
	char path[300];
	unsigned bad = 9;
	struct stat st;
	FILE *f;

	SBX_TEST_REQUIRE_ROOT();
	assert_non_null(l);
	/* No ledger yet: nothing, no error. */
	assert_int_equal(sbx_ledger_events(fx->state, 0, collect, &c, &bad, &err), 0);
	assert_int_equal(c.n, 0);

	sbx_log_begin(l, "refused");
	sbx_log_add(l, "user", "alice");
	sbx_log_add(l, "msg", "a \"quoted\" reason\twith a tab \\ and more");
	assert_int_equal(sbx_ledger_append(fx->state, l, &err), 0);
	sbx_log_begin(l, "pam_close");
	sbx_log_add(l, "user", "bob");
	sbx_log_add(l, "exit_status", "3");
	assert_int_equal(sbx_ledger_append(fx->state, l, &err), 0);
	snprintf(path, sizeof(path), "%s/ledger/events.log", fx->state);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0600);
	/* A line that does not parse is counted, not shown. */
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("2026-01-01T00:00:00Z event=x bad=\"unterminated\n", f);
	fclose(f);

	assert_int_equal(sbx_ledger_events(fx->state, 0, collect, &c, &bad, &err), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(bad, 1);
	assert_string_equal(c.events[0], "refused");
	/* The tab was scrubbed on the way in; quotes and backslash survive. */
	assert_string_equal(c.msgs[0], "a \"quoted\" reason?with a tab \\ and more");
	assert_string_equal(c.events[1], "pam_close");
	/* --since: nothing from the future. */
	c.n = 0;
	assert_int_equal(sbx_ledger_events(fx->state, time(NULL) + 3600, collect, &c, &bad, &err),
			 0);
	assert_int_equal(c.n, 0);
	free(l);
}

/* Past 4 MiB the file rotates once; both halves are read, oldest first. */
static void test_events_rotate(void **state)
{
	struct fixture *fx = *state;
	struct sbx_error err = { 0 };
	struct sbx_logline *l = malloc(sizeof(*l));
	struct collected c = { 0 };
	char big[3000], path[300];
	unsigned bad = 0;
	struct stat st;

	SBX_TEST_REQUIRE_ROOT();
	assert_non_null(l);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 1500; i++) {
		sbx_log_begin(l, i ? "filler" : "first");
		sbx_log_add_raw(l, "pad", big);
		assert_int_equal(sbx_ledger_append(fx->state, l, &err), 0);
	}
	snprintf(path, sizeof(path), "%s/ledger/events.log.1", fx->state);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(st.st_size >= 4 << 20);
	snprintf(path, sizeof(path), "%s/ledger/events.log", fx->state);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(st.st_size < 1 << 20);
	assert_int_equal(sbx_ledger_events(fx->state, 0, collect, &c, &bad, &err), 0);
	assert_int_equal(c.n, 1500);
	assert_int_equal(bad, 0);
	assert_string_equal(c.events[0], "first");
	free(l);
}

static void test_parse_line(void **state)
{
	struct sbx_ledger_event *ev = malloc(sizeof(*ev));
	static const char *const bad[] = {
		"",
		"2026-01-01T00:00:00Z",
		"2026-01-01 00:00:00Z event=x",
		"2026-01-01T00:00:00Z user=a event=x",	/* event= first */
		"2026-01-01T00:00:00Z event=x k=\"open",
		"2026-01-01T00:00:00Z event=x k=\"\\q\"",
		"2026-01-01T00:00:00Z event=x k=\"\\x0a\"",
		"2026-01-01T00:00:00Z event=x K=v",
		"2026-01-01T00:00:00Z event=x  k=v",
		"2026-01-01T00:00:00Z event=x k=",
		"2026-01-01T00:00:00Z event=x k=a:\"open",
		"2026-01-01T00:00:00Z event=x k=a:\"\\q\"",
		"2026-01-01T00:00:00Z event=x k=a:\"\x01\"",
	};

	(void)state;
	assert_non_null(ev);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_not_equal(sbx_ledger_parse_line(bad[i], strlen(bad[i]), ev), 0);
	{
		const char ok[] = "2026-01-02T03:04:05Z event=refused reason=gate "
				  "msg=\"say \\\"hi\\\" \\\\ \\x41\"";

		assert_int_equal(sbx_ledger_parse_line(ok, strlen(ok), ev), 0);
		assert_int_equal(ev->n, 3);
		assert_int_equal(ev->when, 1767323045);
		assert_string_equal(sbx_ledger_get(ev, "reason"), "gate");
		assert_string_equal(sbx_ledger_get(ev, "msg"), "say \"hi\" \\ A");
		assert_null(sbx_ledger_get(ev, "user"));
	}
	{
		/* session_start of a degraded session (sbx_report_log): its
		 * degraded= is feature:"why",... with each why quoted; the
		 * value is kept as written. */
		const char deg[] = "event=session_start level=degraded "
				   "degraded=netns:\"userns blocked\",landlock_net:\"ABI 2 < 4: \\\"x\\\"\" "
				   "egress=-";

		assert_int_equal(sbx_ledger_parse_fields(deg, strlen(deg), ev), 0);
		assert_int_equal(ev->n, 4);
		assert_string_equal(sbx_ledger_get(ev, "degraded"),
				    "netns:\"userns blocked\",landlock_net:\"ABI 2 < 4: \\\"x\\\"\"");
		assert_string_equal(sbx_ledger_get(ev, "egress"), "-");
	}
	free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_channel_one_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals_beside_channel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_channel_not_roots_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_is_roots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_append_and_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events_rotate, setup, teardown),
		cmocka_unit_test(test_parse_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
