/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * confine: run one command confined with libsbx, print its guarantee report.
 *
 *   confine [-c CONFIG -p PROFILE] [-s KEY=VALUE]... [-w WORKSPACE] [-j] -- CMD [ARG...]
 *
 * Built against the installed library alone:
 *   cc -o confine confine.c $(pkg-config --cflags --libs libsbx)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libsbx.h>

static void usage(void)
{
	fputs("usage: confine [-c CONFIG -p PROFILE] [-s KEY=VALUE]... [-w WORKSPACE] [-j] "
	      "-- CMD [ARG...]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	struct sbx_error err = { 0 };
	struct sbx_profile *p = NULL;
	struct sbx_report *report = NULL;
	const char *config = NULL, *profile = NULL, *workspace = NULL;
	const char *sets[32];
	int n_sets = 0, opt, code = 0;
	int json = 0;

	while ((opt = getopt(argc, argv, "c:p:s:w:j")) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'p': profile = optarg; break;
		case 's':
			if (n_sets == 32)
				usage();
			sets[n_sets++] = optarg;
			break;
		case 'w': workspace = optarg; break;
		case 'j': json = 1; break;
		default: usage();
		}
	}
	if (optind >= argc || !config != !profile)
		usage();
	if (config ? sbx_profile_from_config(config, profile, &p, &err) != 0 :
		     !(p = sbx_profile_new())) {
		fprintf(stderr, "confine: %s\n", config ? err.msg : "out of memory");
		return 125;
	}
	for (int i = 0; i < n_sets; i++) {
		char key[64];
		const char *eq = strchr(sets[i], '=');

		if (!eq || (size_t)(eq - sets[i]) >= sizeof(key))
			usage();
		memcpy(key, sets[i], (size_t)(eq - sets[i]));
		key[eq - sets[i]] = '\0';
		if (sbx_profile_set(p, key, eq + 1, &err) != 0) {
			fprintf(stderr, "confine: %s\n", err.msg);
			return 125;
		}
	}
	if (sbx_run(p, workspace, (const char *const *)argv + optind, &code, &report, &err) != 0) {
		fprintf(stderr, "confine: %s\n", err.msg);
		sbx_profile_free(p);
		return 125;
	}
	if (json)
		sbx_report_to_json(report, stderr);
	else
		sbx_report_to_text(report, stderr);
	fprintf(stderr, "\nconfine: level %s, floor %s, exit %d\n", sbx_report_level_name(report),
		sbx_report_floor_met(report) ? "met" : "not met", code);
	sbx_report_free(report);
	sbx_profile_free(p);
	return code;
}
