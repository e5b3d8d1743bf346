/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for log.c: the key=value grammar, quoting and scrubbing, every
 * event's line, and the sender (syslog, journald, never blocking). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

static struct sbx_logline *line_new(const char *event)
{
	struct sbx_logline *l = malloc(sizeof(*l));

	assert_non_null(l);
	sbx_log_begin(l, event);
	return l;
}

/* Nothing outside printable ASCII, and never a newline, on the line. */
static void assert_one_printable_line(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
}

static void test_quoting_and_scrubbing(void **state)
{
	struct sbx_logline *l = line_new("refused");

	(void)state;
	sbx_log_add(l, "stage", "gate");
	sbx_log_add(l, "plain", "a-Z_0.9:/@,+");
	sbx_log_add(l, "empty", "%s", "");
	sbx_log_add(l, "space", "two words");
	sbx_log_add(l, "eq", "k=v");
	sbx_log_add(l, "quotes", "say \"hi\" \\o/");
	/* Control characters (C0, DEL, UTF-8 C1) scrubbed to '?' first;
	 * other bytes outside ASCII as \xNN. */
	sbx_log_add(l, "ctl", "a\nb\rc\x1b[2Jd\x7f\xc2\x9b" "e caf\xc3\xa9");
	sbx_log_add(l, "command", "true");		/* always quoted */
	sbx_log_add(l, "Bad-Key", "dropped");		/* not a key of the grammar */
	sbx_log_add(l, "", "dropped");
	sbx_log_add(l, "msg", "done");		/* always quoted */
	assert_string_equal(l->line,
			    "event=refused stage=gate plain=a-Z_0.9:/@,+ empty=\"\" "
			    "space=\"two words\" eq=\"k=v\" quotes=\"say \\\"hi\\\" \\\\o/\" "
			    "ctl=\"a?b?c?[2Jd???e caf\\xc3\\xa9\" command=\"true\" msg=\"done\"");
	assert_one_printable_line(l->line);
	/* The journal fields: the same values, scrubbed, unquoted. */
	assert_non_null(strstr(l->journal, "AGENT_SANDBOX_EVENT=refused\n"
					   "AGENT_SANDBOX_STAGE=gate\n"));
	assert_non_null(strstr(l->journal, "\nAGENT_SANDBOX_QUOTES=say \"hi\" \\o/\n"));
	assert_non_null(strstr(l->journal, "\nAGENT_SANDBOX_CTL=a?b?c?[2Jd???e caf\xc3\xa9\n"));
	assert_null(strstr(l->journal, "dropped"));
	free(l);

	/* Bytes that are not UTF-8 (0x9b alone is CSI to a terminal not in
	 * UTF-8 mode): \xNN on the line and in the journal field alike, where
	 * UTF-8 text stays readable. */
	l = line_new("command");
	sbx_log_add(l, "command", "/bin/echo caf\xe9 \x9b" "2J \x9d" "0;T\x9c caf\xc3\xa9 \xe6\x97\xa5");
	assert_string_equal(l->line, "event=command command=\"/bin/echo caf\\xe9 \\x9b2J "
			    "\\x9d0;T\\x9c caf\\xc3\\xa9 \\xe6\\x97\\xa5\"");
	assert_one_printable_line(l->line);
	assert_non_null(strstr(l->journal, "\nAGENT_SANDBOX_COMMAND=/bin/echo caf\\xe9 \\x9b2J "
					   "\\x9d0;T\\x9c caf\xc3\xa9 \xe6\x97\xa5\n"));
	for (const unsigned char *p = (const unsigned char *)l->journal; *p; p++)
		assert_false(*p == 0x9b || *p == 0x9d || *p == 0xe9 || *p == 0x1b);
	free(l);
}

/* Each event as its writer builds it (the fields docs/design.md section
 * 12 lists), the line exact. */
static void test_every_event(void **state)
{
	static const struct {
		const char *event;
		const char *kv[14];
		const char *want;
	} cases[] = {
		{ "session_start", { "session", "0123abcd", "user", "alice", "uid", "1001",
				     "level", "full", "floor", "met", NULL },
		  "event=session_start session=0123abcd user=alice uid=1001 level=full floor=met" },
		{ "session_end", { "session", "0123abcd", "user", "alice", "exit_status", "130",
				   "duration_ms", "1500", NULL },
		  "event=session_end session=0123abcd user=alice exit_status=130 duration_ms=1500" },
		{ "refused", { "stage", "account", "reason", "login_shell", "service", "sshd",
			       "user", "bob", "rhost", "192.0.2.1",
			       "msg", "user bob: refused: login shell /bin/bash", NULL },
		  "event=refused stage=account reason=login_shell service=sshd user=bob "
		  "rhost=192.0.2.1 msg=\"user bob: refused: login shell /bin/bash\"" },
		{ "refused", { "stage", "gate", "reason", "not_allowed", "session", "0123abcd",
			       "user", "alice", "command", "cat /etc/shadow", "msg", "no", NULL },
		  "event=refused stage=gate reason=not_allowed session=0123abcd user=alice "
		  "command=\"cat /etc/shadow\" msg=\"no\"" },
		{ "command", { "session", "0123abcd", "user", "alice", "gate", "allow",
			       "command", "id -u", "program", "/usr/bin/id", NULL },
		  "event=command session=0123abcd user=alice gate=allow command=\"id -u\" "
		  "program=/usr/bin/id" },
		{ "pam_open", { "session", "0123abcd", "user", "alice", "service", "sshd",
				"pam_stage", "oom,mntns,tmp", NULL },
		  "event=pam_open session=0123abcd user=alice service=sshd pam_stage=oom,mntns,tmp" },
		{ "pam_close", { "session", "0123abcd", "user", "alice", "duration_s", "12",
				 "killed", "0", "result", "ok", "msg", "closed after 12s", NULL },
		  "event=pam_close session=0123abcd user=alice duration_s=12 killed=0 result=ok "
		  "msg=\"closed after 12s\"" },
		{ "warning", { "reason", "cgroup_limits", "service", "sshd", "msg", "x y", NULL },
		  "event=warning reason=cgroup_limits service=sshd msg=\"x y\"" },
		{ "error", { "reason", "kill_helper", "msg", "pipe2", NULL },
		  "event=error reason=kill_helper msg=\"pipe2\"" },
		{ "debug", { "user", "bob", "msg", "not an agent account", NULL },
		  "event=debug user=bob msg=\"not an agent account\"" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sbx_logline *l = line_new(cases[i].event);

		for (size_t k = 0; cases[i].kv[k]; k += 2)
			sbx_log_add(l, cases[i].kv[k], "%s", cases[i].kv[k + 1]);
		assert_string_equal(l->line, cases[i].want);
		free(l);
	}
}

/* Bounded: a value at SBX_LOG_VALUE_MAX, the line at SBX_LOG_LINE_MAX
 * (marked "..."), the journal fields too; never a newline. */
static void test_bounded(void **state)
{
	struct sbx_logline *l = line_new("refused");
	char *big = malloc(3 * SBX_LOG_LINE_MAX);

	(void)state;
	assert_non_null(big);
	memset(big, '\n', 3 * SBX_LOG_LINE_MAX - 1);
	big[3 * SBX_LOG_LINE_MAX - 1] = '\0';
	sbx_log_add(l, "msg", "%s", big);
	/* one value: cut at SBX_LOG_VALUE_MAX - 1 bytes, each '?' */
	assert_int_equal(strlen(l->line), strlen("event=refused msg=\"\"") + SBX_LOG_VALUE_MAX - 1);
	for (int i = 0; i < 10; i++)
		sbx_log_add(l, "msg", "%s", big);
	assert_true(strlen(l->line) < SBX_LOG_LINE_MAX);
	assert_string_equal(l->line + strlen(l->line) - 3, "...");
	assert_true(strlen(l->journal) < sizeof(l->journal));
	assert_one_printable_line(l->line);
	free(big);
	free(l);
}

/* A datagram socket at dir/name, non-blocking: the test's log daemon. */
static int sink(const char *dir, const char *name, char *path, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	snprintf(path, size, "%s/%s", dir, name);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return s;
}

static ssize_t take(int s, char *buf, size_t size)
{
	ssize_t n = recv(s, buf, size - 1, 0);

	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static void test_send_syslog(void **state)
{
	char *dir = sbx_test_mkdtemp("log");
	char path[256], jpath[256], buf[8192], want[64];
	struct sbx_logline *l = line_new("refused");
	int s;

	(void)state;
	sbx_log_add(l, "reason", "floor");
	s = sink(dir, "log", path, sizeof(path));
	/* No journal socket at its path: /dev/log's format, the product's
	 * tag, facility authpriv (10 * 8 + 4). */
	snprintf(jpath, sizeof(jpath), "%s/journal", dir);
	assert_int_equal(sbx_log_send_to(LOG_WARNING, l, path, jpath), 0);
	assert_true(take(s, buf, sizeof(buf)) > 0);
	assert_memory_equal(buf, "<84>", 4);
	/* "Mmm dd hh:mm:ss " then the tag */
	assert_true(buf[7] == ' ' && buf[10] == ' ' && buf[13] == ':' && buf[16] == ':');
	snprintf(want, sizeof(want), " agent-sandbox[%d]: ", (int)getpid());
	assert_memory_equal(buf + 19, want, strlen(want));
	assert_string_equal(buf + 19 + strlen(want), "event=refused reason=floor");
	close(s);
	sbx_test_rmtree(dir);
	free(dir);
	free(l);
}

/* journald's socket present: the line goes there, natively, with the
 * fields as journal fields, and not to /dev/log as well. */
static void test_send_journal(void **state)
{
	char *dir = sbx_test_mkdtemp("log");
	char path[256], jpath[256], buf[16384], want[256];
	struct sbx_logline *l = line_new("session_end");
	int s, j;

	(void)state;
	sbx_log_add(l, "session", "0123abcd");
	sbx_log_add(l, "exit_status", "%d", 3);
	s = sink(dir, "log", path, sizeof(path));
	j = sink(dir, "journal", jpath, sizeof(jpath));
	assert_int_equal(sbx_log_send_to(LOG_NOTICE, l, path, jpath), 0);
	assert_true(take(j, buf, sizeof(buf)) > 0);
	snprintf(want, sizeof(want),
		 "PRIORITY=5\nSYSLOG_FACILITY=10\nSYSLOG_IDENTIFIER=agent-sandbox\nSYSLOG_PID=%d\n"
		 "MESSAGE=event=session_end session=0123abcd exit_status=3\n"
		 "AGENT_SANDBOX_EVENT=session_end\nAGENT_SANDBOX_SESSION=0123abcd\n"
		 "AGENT_SANDBOX_EXIT_STATUS=3\n", (int)getpid());
	assert_string_equal(buf, want);
	assert_int_equal(take(s, buf, sizeof(buf)), -1);
	assert_int_equal(errno, EAGAIN);
	/* journald gone (its socket file left, nobody bound): /dev/log. */
	close(j);
	assert_int_equal(sbx_log_send_to(LOG_NOTICE, l, path, jpath), 0);
	assert_true(take(s, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "]: event=session_end session=0123abcd exit_status=3"));
	close(s);
	sbx_test_rmtree(dir);
	free(dir);
	free(l);
}

/* Nobody listens: a missing sink (the PAM module then uses pam_syslog);
 * a daemon that reads nothing: the line dropped with -EAGAIN, at once,
 * never a blocked caller (sshd's monitor). */
static void test_send_never_blocks(void **state)
{
	char *dir = sbx_test_mkdtemp("log");
	char path[256];
	struct sbx_logline *l = line_new("debug");
	struct timespec t0, t1;
	int s, r = 0, sent = 0;

	(void)state;
	snprintf(path, sizeof(path), "%s/none", dir);
	r = sbx_log_send_to(LOG_INFO, l, path, NULL);
	assert_int_equal(r, -ENOENT);
	assert_true(sbx_log_sink_missing(r));
	s = sink(dir, "gone", path, sizeof(path));
	close(s);
	r = sbx_log_send_to(LOG_INFO, l, path, NULL);
	assert_int_equal(r, -ECONNREFUSED);
	assert_true(sbx_log_sink_missing(r));

	/* control: a reading daemon takes the line */
	s = sink(dir, "full", path, sizeof(path));
	assert_int_equal(sbx_log_send_to(LOG_INFO, l, path, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 100000; i++) {
		r = sbx_log_send_to(LOG_INFO, l, path, NULL);
		if (r)
			break;
		sent++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(r, -EAGAIN);
	assert_false(sbx_log_sink_missing(r));
	assert_true(sent > 0);
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	close(s);
	sbx_test_rmtree(dir);
	free(dir);
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quoting_and_scrubbing),
		cmocka_unit_test(test_every_event),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_send_syslog),
		cmocka_unit_test(test_send_journal),
		cmocka_unit_test(test_send_never_blocks),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
