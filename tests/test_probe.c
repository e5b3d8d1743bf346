/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel tests for probe.c: what this machine offers, as root and as the agent. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock_compat.h"
#include "testlib.h"

static void test_probe_landlock_seccomp(void **state)
{
	const struct sbx_probe *p = NULL, *again = NULL;
	struct sbx_error err;
	long raw;

	(void)state;
	assert_int_equal(sbx_probe_get(&p, &err), 0);
	assert_non_null(p);
	assert_true(p->kernel[0] != '\0');
	assert_true(p->seccomp);
	assert_true(p->seccomp_kill_process);
	assert_true(p->mount_setattr);	/* Linux >= 5.12 */
	/* PR_SET_MDWE (6.3): the probe says what the kernel's own query says. */
	assert_int_equal(p->mdwe, prctl(PR_GET_MDWE, 0, 0, 0, 0) >= 0);
	/* Probed once: the same cache comes back. */
	assert_int_equal(sbx_probe_get(&again, &err), 0);
	assert_ptr_equal(p, again);
	assert_int_equal(sbx_probe_get(NULL, &err), -EINVAL);
	/* The probe under test never decides the skip: the kernel's own
	 * answer does, and the probe must then report exactly it. */
	raw = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (raw <= 0) {
		print_message("[  SKIP    ] Landlock unavailable: %s (probe says: %s)\n",
			      strerror(errno), p->landlock_why);
		assert_int_equal(p->landlock_abi, 0);
		skip();
	}
	assert_int_equal(p->landlock_abi, raw);
	assert_string_equal(p->landlock_why, "");
	if (p->landlock_abi < 7)
		print_message("[  NOTE    ] Landlock ABI %d (this machine was expected to have 7)\n",
			      p->landlock_abi);
	/* root's view is labelled as such */
	if (getuid() == 0)
		assert_non_null(strstr(p->userns_why, "probed as root"));
}

/* Child: drop to the agent, probe from scratch, send the result back. */
static int probe_as_agent(void *arg)
{
	int fd = *(int *)arg;
	const struct sbx_probe *p;

	sbx_probe_set_for_tests(NULL);	/* forget the parent's (root's) cache */
	if (sbx_probe_get(&p, NULL) != 0)
		return 2;
	if (write(fd, p, sizeof(*p)) != (ssize_t)sizeof(*p))
		return 3;
	return 0;
}

static void test_probe_userns_as_agent(void **state)
{
	struct sbx_probe got;
	int fds[2], status;

	(void)state;
	SBX_TEST_REQUIRE_ROOT();
	assert_int_equal(pipe(fds), 0);
	status = sbx_test_fork(true, probe_as_agent, &fds[1]);
	close(fds[1]);
	assert_int_equal(sbx_test_status_code(status), 0);
	assert_int_equal(read(fds[0], &got, sizeof(got)), (ssize_t)sizeof(got));
	close(fds[0]);
	if (!got.userns)
		print_message("userns blocked for the agent: %s\n", got.userns_why);
	assert_true(got.userns);
	assert_true(got.mountns);
	assert_true(got.pidns);
	assert_true(got.netns);
	assert_true(got.ipcns);
	assert_true(got.utsns);
	/* The agent's answer is its own, not root's. */
	assert_null(strstr(got.userns_why, "root"));
	assert_true(got.seccomp);
}

static char *render(const struct sbx_probe *p, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(json ? sbx_probe_to_json(p, f) : sbx_probe_to_text(p, f), 0);
	fclose(f);
	return buf;
}

static void test_override_and_fixes(void **state)
{
	struct sbx_probe fake;
	const struct sbx_probe *p;
	char *text, *json;

	(void)state;
	memset(&fake, 0, sizeof(fake));
	snprintf(fake.kernel, sizeof(fake.kernel), "6.1.0-test");
	snprintf(fake.landlock_why, sizeof(fake.landlock_why),
		 "Landlock not enabled at boot: add landlock to lsm= on the kernel "
		 "command line (current: lockdown,capability,apparmor)");
	snprintf(fake.userns_why, sizeof(fake.userns_why),
		 "sysctl user.max_user_namespaces=0; fix: set it > 0");
	fake.seccomp = true;
	fake.cgroup2 = true;
	sbx_probe_set_for_tests(&fake);
	assert_int_equal(sbx_probe_get(&p, NULL), 0);
	assert_int_equal(p->landlock_abi, 0);
	assert_false(p->userns);
	assert_string_equal(p->kernel, "6.1.0-test");

	text = render(p, false);
	assert_non_null(strstr(text, "landlock             no   Landlock not enabled at boot: "
				"add landlock to lsm="));
	assert_non_null(strstr(text, "userns               no   sysctl user.max_user_namespaces=0; "
				"fix: set it > 0"));
	assert_non_null(strstr(text, "netns                no   needs a user namespace"));
	assert_non_null(strstr(text, "seccomp              yes\n"));
	assert_non_null(strstr(text, "cgroup2_delegated    no   this uid's cgroup is not writable; fix:"));
	json = render(p, true);
	assert_non_null(strstr(json, "{\"kernel\":\"6.1.0-test\",\"landlock_abi\":0,"));
	assert_non_null(strstr(json, "{\"name\":\"landlock\",\"available\":false,\"detail\":"
				"\"Landlock not enabled at boot: add landlock to lsm="));
	assert_non_null(strstr(json, "{\"name\":\"userns\",\"available\":false,\"detail\":"
				"\"sysctl user.max_user_namespaces=0; fix: set it > 0\"}"));
	free(text);
	free(json);

	/* Forget the override: the next get probes the real kernel again. */
	sbx_probe_set_for_tests(NULL);
	assert_int_equal(sbx_probe_get(&p, NULL), 0);
	assert_true(p->kernel[0] && strcmp(p->kernel, "6.1.0-test") != 0);
	assert_true(p->seccomp);
	text = render(p, false);
	assert_non_null(strstr(text, "kernel               "));
	free(text);
}

/* Replace the first "from" in text by "to" (a fresh string). */
static char *edited(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	char *out = NULL;

	assert_non_null(at);
	assert_true(asprintf(&out, "%.*s%s%s", (int)(at - text), text, to,
			     at + strlen(from)) > 0);
	return out;
}

static void refused(const char *json, const char *why)
{
	struct sbx_probe got;
	struct sbx_error err = { 0 };

	memset(&got, 0x5a, sizeof(got));
	assert_int_equal(sbx_probe_from_json(json, strlen(json), &got, &err), -EINVAL);
	if (!strstr(err.msg, why)) {
		print_message("want \"%s\" in \"%s\"\n", why, err.msg);
		fail();
	}
	assert_int_equal(((unsigned char *)&got)[0], 0x5a);	/* untouched */
}

/* What the doctor reads back from the probe it ran as the agent: the
 * JSON round-trips every field, and anything else is refused. */
static void test_json_round_trip(void **state)
{
	static const size_t flags[] = {
		offsetof(struct sbx_probe, seccomp), offsetof(struct sbx_probe, seccomp_kill_process),
		offsetof(struct sbx_probe, userns), offsetof(struct sbx_probe, mountns),
		offsetof(struct sbx_probe, pidns), offsetof(struct sbx_probe, netns),
		offsetof(struct sbx_probe, ipcns), offsetof(struct sbx_probe, utsns),
		offsetof(struct sbx_probe, cgroupns), offsetof(struct sbx_probe, cgroup2),
		offsetof(struct sbx_probe, cgroup2_delegated), offsetof(struct sbx_probe, cgroup2_limits),
		offsetof(struct sbx_probe, mount_setattr), offsetof(struct sbx_probe, mdwe),
	};
	struct sbx_probe a, b;
	const struct sbx_probe *real;
	struct sbx_error err = { 0 };
	char *json, *bad;

	(void)state;
	/* The real probe, then one with each kind of field flipped. */
	assert_int_equal(sbx_probe_get(&real, NULL), 0);
	for (int round = 0; round < 2; round++) {
		if (round == 0) {
			a = *real;
		} else {
			memset(&a, 0, sizeof(a));
			snprintf(a.kernel, sizeof(a.kernel), "6.1.0-\"quoted\"\\x");
			snprintf(a.landlock_why, sizeof(a.landlock_why), "off at boot");
			snprintf(a.userns_why, sizeof(a.userns_why), "max_user_namespaces=0");
			a.seccomp = a.netns = a.cgroup2_delegated = a.cgroup2_limits = true;
			a.mdwe = !real->mdwe;
		}
		json = render(&a, true);
		memset(&b, 0, sizeof(b));
		assert_int_equal(sbx_probe_from_json(json, strlen(json), &b, &err), 0);
		assert_string_equal(a.kernel, b.kernel);
		assert_int_equal(a.landlock_abi, b.landlock_abi);
		assert_int_equal(a.landlock_errata, b.landlock_errata);
		assert_string_equal(a.landlock_why, b.landlock_why);
		assert_string_equal(a.userns_why, b.userns_why);
		for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
			assert_int_equal(*(const bool *)((const char *)&a + flags[i]),
					 *(const bool *)((const char *)&b + flags[i]));
		free(json);
	}

	json = render(&a, true);
	refused("", "expected '{'");
	bad = edited(json, "]}", "]");
	refused(bad, "expected '}'");
	free(bad);
	bad = edited(json, "\n", " x\n");
	refused(bad, "trailing bytes");
	free(bad);
	bad = edited(json, "\"name\":\"seccomp\"", "\"name\":\"seccomp_kill_process\"");
	refused(bad, "features out of order");
	free(bad);
	bad = edited(json, "\"landlock_abi\":0", "\"landlock_abi\":3");
	refused(bad, "landlock available disagrees");
	free(bad);
	bad = edited(json, "\"landlock_abi\":0", "\"landlock_abi\":-1");
	refused(bad, "expected a number");
	free(bad);
	bad = edited(json, "\"landlock_abi\":0,", "");
	refused(bad, "missing key \"landlock_abi\"");
	free(bad);
	bad = edited(json, "\"kernel\"", "\"kernel\":\"x\",\"kernel\"");
	refused(bad, "duplicate key");
	free(bad);
	bad = edited(json, "\"kernel\"", "\"extra\":1,\"kernel\"");
	refused(bad, "unknown key");
	free(bad);
	/* What reaches root's terminal: no escape sequences, raw or \u. */
	bad = edited(json, "6.1.0-", "6.1.0-\\u001b[2J");
	refused(bad, "control character in string");	/* the JSON reader, first */
	free(bad);
	bad = edited(json, "off at boot", "off \xc2\x9b at boot");
	refused(bad, "C1 control character in string");
	free(bad);
	bad = edited(json, "off at boot", "off caf\xc3\xa9 boot");
	refused(bad, "outside printable ASCII");		/* the probe's own rule */
	free(bad);
	bad = edited(json, "\"available\":true", "\"available\":1");
	refused(bad, "expected true or false");
	free(bad);
	{
		/* A kernel string longer than the field: refused, not cut. */
		char longer[200];

		memset(longer, 'k', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = '\0';
		bad = edited(json, "6.1.0-", longer);
		refused(bad, "string too long");
		free(bad);
	}
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_landlock_seccomp),
		cmocka_unit_test(test_probe_userns_as_agent),
		cmocka_unit_test(test_override_and_fixes),
		cmocka_unit_test(test_json_round_trip),
	};
	return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
