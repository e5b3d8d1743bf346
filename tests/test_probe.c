/* SPDX-License-Identifier: BSD-3-Clause */
/* Kernel tests for probe.c: what this machine offers, as root and as the agent. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

static void test_probe_landlock_seccomp(void **state)
{
	const struct sbx_probe *p = NULL, *again = NULL;
	struct sbx_error err;

	(void)state;
	assert_int_equal(sbx_probe_get(&p, &err), 0);
	assert_non_null(p);
	assert_true(p->kernel[0] != '\0');
	assert_true(p->seccomp);
	assert_true(p->seccomp_kill_process);
	assert_true(p->mount_setattr);	/* Linux >= 5.12 */
	/* Probed once: the same cache comes back. */
	assert_int_equal(sbx_probe_get(&again, &err), 0);
	assert_ptr_equal(p, again);
	assert_int_equal(sbx_probe_get(NULL, &err), -EINVAL);
	if (p->landlock_abi == 0) {
		print_message("[  SKIP    ] Landlock unavailable: %s\n", p->landlock_why);
		skip();
	}
	assert_true(p->landlock_abi >= 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_landlock_seccomp),
		cmocka_unit_test(test_probe_userns_as_agent),
		cmocka_unit_test(test_override_and_fixes),
	};
	return cmocka_run_group_tests_name("probe", tests, NULL, NULL);
}
