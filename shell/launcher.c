/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * launcher.c — the agent's login shell as installed: a static program that
 * clears what the dynamic loader and libc would read from the environment,
 * then runs agent-shell proper (<prefix>/lib/agent-sandbox/agent-shell,
 * found from this program's own path) with the same arguments.
 *
 * Why: sshd starts the login shell with the PAM environment, and PAM
 * modules after pam_agent_sandbox.so may fill it from files the agent
 * writes. Debian's sshd stack runs "pam_env.so user_readenv=1" after
 * common-session, where pam-auth-update puts the module, so it reads
 * ~/.pam_environment from the agent's isolated home, already bound at
 * $HOME: LD_PRELOAD=~/x.so there ran the agent's code in agent-shell's
 * unconfined outer process before main(). A static program has no dynamic
 * loader to subvert; it removes those variables before any dynamic code
 * runs and names them in AGENT_SANDBOX_LOADER_DROPPED, so agent-shell logs
 * what was dropped.
 *
 * Kept minimal on purpose: no config, no NSS, no allocation beyond the new
 * environment, nothing that reads a file the agent controls.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's list for secure (setuid) mode, and every LD_* variable. */
static const char *const unsafe[] = {
	"GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
	"MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR",
	"TZDIR",
};

#define DROPPED "AGENT_SANDBOX_LOADER_DROPPED="

static int is_unsafe(const char *entry)
{
	size_t len = strcspn(entry, "=");

	if (!strncmp(entry, "LD_", 3))
		return 1;
	if (!strncmp(entry, DROPPED, strlen(DROPPED)))
		return 1;	/* only this program sets it */
	for (size_t i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
		if (len == strlen(unsafe[i]) && !strncmp(entry, unsafe[i], len))
			return 1;
	}
	return 0;
}

/* <dir of this program>/../lib/agent-sandbox/agent-shell, from the
 * kernel's record of what was executed (never argv[0]). */
static int real_path(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash || slash == self)
		return -1;
	*slash = '\0';
	n = snprintf(out, size, "%s/../lib/agent-sandbox/agent-shell", self);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

int main(int argc, char **argv, char **envp)
{
	static char dropped[512] = DROPPED;
	char path[PATH_MAX];
	size_t n = 0, kept = 0, used = strlen(DROPPED);
	char **env;

	(void)argc;
	for (char **e = envp; *e; e++)
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env || real_path(path, sizeof(path)) != 0) {
		fputs("agent-shell: cannot find agent-shell proper "
		      "(<prefix>/lib/agent-sandbox/agent-shell beside this launcher)\n", stderr);
		return 126;
	}
	for (char **e = envp; *e; e++) {
		size_t len = strcspn(*e, "=");

		if (!is_unsafe(*e)) {
			env[kept++] = *e;
			continue;
		}
		if (!strncmp(*e, DROPPED, strlen(DROPPED)))
			continue;
		/* Names only, bounded; a name that does not fit is counted as
		 * "..." (the dropping itself is never bounded). */
		if (used + len + 2 < sizeof(dropped)) {
			if (used > strlen(DROPPED))
				dropped[used++] = ',';
			memcpy(dropped + used, *e, len);
			used += len;
			dropped[used] = '\0';
		} else if (used + 5 < sizeof(dropped) && !strstr(dropped, "...")) {
			memcpy(dropped + used, ",...", 5);
			used += 4;
		}
	}
	if (used > strlen(DROPPED))
		env[kept++] = dropped;
	env[kept] = NULL;
	execve(path, argv, env);
	fprintf(stderr, "agent-shell: cannot run %s: %s\n", path, strerror(errno));
	return 126;
}
