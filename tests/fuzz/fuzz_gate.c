/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the shell's gate splitter: accepted commands are plain, non-empty words. */
// fuzz-extra: shell/gate.c
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../shell/shell.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* gate.c's list: a gated command holds none of these. */
static const char syntax[] = "|&;<>()$`\\\"'*?[]#~{}!";

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_gate: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbx_error err;
	char **argv = NULL;
	char *cmd;
	size_t n, total = 0;

	/* The shell gets a C string: the command ends at the first NUL. */
	cmd = malloc(size + 1);
	must(cmd != NULL, "malloc");
	memcpy(cmd, data, size);
	cmd[size] = '\0';
	memset(&err, 0, sizeof(err));
	if (shell_gate_split(cmd, &argv, &err) != 0) {
		must(err.code != 0 && err.msg[0], "rejection without a message");
		free(cmd);
		return 0;
	}
	must(argv != NULL && argv[0] != NULL, "no words");
	for (n = 0; argv[n]; n++) {
		const char *w = argv[n];

		must(w[0] != '\0', "empty word");
		for (const char *c = w; *c; c++) {
			must(!strchr(syntax, *c), "shell syntax in a word");
			must((unsigned char)*c >= 0x20, "control byte in a word");
			must(*c != ' ', "space in a word");
		}
		/* Every word is a piece of the command, in order. */
		must(strstr(cmd, w) != NULL, "word not in the command");
		total += strlen(w);
		free(argv[n]);
	}
	must(total <= strlen(cmd), "words longer than the command");
	free(argv);
	free(cmd);
	return 0;
}
