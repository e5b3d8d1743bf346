/* SPDX-License-Identifier: BSD-3-Clause */
/* agent-shell: placeholder until the shell issue lands; refuses everything. */
#include <stdio.h>

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "agent-shell: not implemented yet; refusing\n");
	return 126;
}
