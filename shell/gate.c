/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gate.c — the command gate's user-space half: under command = gated a
 * `-c` command is split into plain words and its program must be on the
 * allow-list. This is a usability check with a clear message; the
 * boundary is the kernel's (Landlock EXECUTE only on the allow-list,
 * noexec writable mounts, no memfd, memory W^X), see docs/design.md section 6.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shell.h"

#define GATE_MAX_WORDS 256

/* Characters with a meaning to a shell: a gated command has none, so what
 * runs is exactly the words written. */
static const char shell_syntax[] = "|&;<>()$`\\\"'*?[]#~{}!";

int shell_gate_split(const char *cmd, char ***argv_out, struct sbx_error *err)
{
	char **argv = calloc(GATE_MAX_WORDS + 1, sizeof(char *));
	size_t n = 0;
	const char *p = cmd;

	if (!argv)
		return sbx_error_set(err, ENOMEM, "gate: out of memory");
	for (const char *c = cmd; *c; c++) {
		if (strchr(shell_syntax, *c) || ((unsigned char)*c < 0x20 && *c != '\t')) {
			free(argv);
			return sbx_error_set(err, EINVAL,
					     "gate: the command uses shell syntax (%c); a gated profile runs plain commands only",
					     *c == '\n' ? ' ' : *c);
		}
	}
	while (*p) {
		size_t len;

		p += strspn(p, " \t");
		if (!*p)
			break;
		len = strcspn(p, " \t");
		if (n == GATE_MAX_WORDS) {
			for (size_t i = 0; i < n; i++)
				free(argv[i]);
			free(argv);
			return sbx_error_set(err, E2BIG, "gate: more than %d words", GATE_MAX_WORDS);
		}
		argv[n] = strndup(p, len);
		if (!argv[n]) {
			for (size_t i = 0; i < n; i++)
				free(argv[i]);
			free(argv);
			return sbx_error_set(err, ENOMEM, "gate: out of memory");
		}
		n++;
		p += len;
	}
	if (n == 0) {
		free(argv);
		return sbx_error_set(err, EINVAL, "gate: empty command");
	}
	*argv_out = argv;
	return 0;
}

int shell_which(const char *argv0, const char *path_env, char *out, size_t size)
{
	char dirs[4096];
	char *save = NULL;

	if (strchr(argv0, '/')) {
		char real[PATH_MAX];

		if (argv0[0] != '/' || !realpath(argv0, real))
			return -ENOENT;
		return sbx_strlcpy(out, size, real);
	}
	if (!path_env || sbx_strlcpy(dirs, sizeof(dirs), path_env) != 0)
		sbx_strlcpy(dirs, sizeof(dirs), "/usr/local/bin:/usr/bin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		struct stat st;

		if (d[0] != '/')
			continue;	/* relative PATH entries are never searched */
		if (sbx_snprintf(cand, sizeof(cand), "%s/%s", d, argv0) != 0)
			continue;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111))
			return sbx_strlcpy(out, size, cand);
	}
	return -ENOENT;
}

/*
 * The early answer, for a refusal with a message and a log line before
 * anything starts. realpath() looks names up, and the program is then
 * exec'd by name again, so this is not what keeps other programs from
 * running: the mount view is (the host noexec, only the allow-list's
 * files bound back executable, each resolved by the trusted walk; design
 * section 6; without a mount view the gate is partial, and reported so).
 * A link changed after this check runs nothing the gate does not allow;
 * it can only turn an allowed command into a failed exec.
 */
bool shell_gate_allows(const struct sbx_profile *p, const char *path)
{
	char real[PATH_MAX];

	if (!realpath(path, real))
		return false;
	for (size_t i = 0; i < p->n_gate; i++) {
		char allowed[PATH_MAX];

		if (strcmp(p->gate_allow[i], path) == 0)
			return true;
		if (realpath(p->gate_allow[i], allowed) && strcmp(allowed, real) == 0)
			return true;
	}
	return false;
}
