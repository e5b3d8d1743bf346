/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: the config parser (one file, or a main file and drop-ins split at NUL),
 * then select/expand/restrict/describe on what it accepts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const groups[] = { "agents", "reviewers", "ci" };
	struct sbx_config *cfg = NULL;
	struct sbx_error err;
	const struct sbx_profile *sel = NULL;
	struct sbx_profile *e, *r;
	char hash[65];
	FILE *devnull;
	size_t i;

	/* A NUL (which no config may hold) splits the input into the main
	 * file and its drop-ins: the multi-file parse, as sbx_config_load
	 * runs it; without one, the single-buffer entry point. */
	if (!memchr(data, '\0', size)) {
		if (sbx_config_parse_buffer((const char *)data, size, "fuzz.conf", &cfg, &err) != 0)
			return 0;
	} else {
		static const char *const names[] = {
			"main.conf", "conf.d/a.conf", "conf.d/b.conf", "conf.d/c.conf",
			"conf.d/d.conf", "conf.d/e.conf", "conf.d/f.conf", "conf.d/g.conf",
		};
		struct sbx_config_source src[8];
		size_t n = 0, off = 0;

		while (n < 8) {
			const uint8_t *nul = memchr(data + off, '\0', size - off);
			size_t len = nul ? (size_t)(nul - (data + off)) : size - off;

			src[n] = (struct sbx_config_source){ .name = names[n],
							     .buf = (const char *)data + off,
							     .len = len };
			n++;
			if (!nul)
				break;
			off += len + 1;
		}
		if (sbx_config_parse_sources(src, n, &cfg, &err) != 0)
			return 0;
		/* Every rule names one of the files it came from. */
		for (i = 0; i < cfg->n_matches; i++) {
			size_t k;

			for (k = 0; k < cfg->n_files && cfg->matches[i].file != cfg->files[k]; k++)
				;
			if (k == cfg->n_files || cfg->n_files != n)
				abort();
		}
	}
	e = malloc(sizeof(*e));
	r = malloc(sizeof(*r));
	devnull = fopen("/dev/null", "w");
	if (!e || !r || !devnull)
		abort();
	if (sbx_config_select(cfg, "alice", groups, 3, &sel, &err) == 0 &&
	    sbx_config_find_profile(cfg, sel->name) != sel)
		abort();
	for (i = 0; i < cfg->n_profiles; i++) {
		const struct sbx_profile *p = &cfg->profiles[i];

		/* What the parser accepts, validate accepts. */
		if (sbx_profile_validate(p, &err) != 0)
			abort();
		memcpy(e, p, sizeof(*e));
		if (sbx_profile_expand(e, "alice", "/home/alice", &err) != 0)
			continue;
		if (sbx_profile_restrict(e, &cfg->ceiling, r, &err) != 0)
			continue;
		/* Restrict never widens the workspace or the host. */
		if (sbx_profile_path_access(r, "/", true) > sbx_profile_path_access(e, "/", true) ||
		    sbx_profile_path_access(r, e->workspace_root, true) >
		    sbx_profile_path_access(e, e->workspace_root, true))
			abort();
		sbx_profile_to_json(r, devnull);
		sbx_profile_to_text(r, devnull);
		sbx_profile_hash(r, hash);
		if (strlen(hash) != 64)
			abort();
	}
	fclose(devnull);
	free(e);
	free(r);
	sbx_config_free(cfg);
	return 0;
}
