/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * probe_cache.c — agent-shell --probe-cache [USER...], root only: probe the
 * kernel as each agent account (or each USER) and keep the answer for this
 * boot, so that sessions of the account do not fork a probe child at every
 * start (lib/probe_cache.c says what an entry holds and why it can only
 * say "available"). Run at boot by agent-sandbox-probe.service; run it
 * again after changing an LSM's policy on user namespaces.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shell.h"

#define EXIT_CACHE_USAGE 2
#define CACHE_MAX_ACCOUNTS 4096

struct cache_account {
	char user[SBX_NAME_MAX];
	uid_t uid;
	gid_t gid;
};

struct cache_list {
	struct cache_account *a;
	size_t n;
	bool full;
};

static void list_add(struct cache_list *l, const struct passwd *pw)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->a[i].uid == pw->pw_uid)
			return;
	}
	if (l->n == CACHE_MAX_ACCOUNTS) {
		l->full = true;
		return;
	}
	if (sbx_strlcpy(l->a[l->n].user, sizeof(l->a[l->n].user), pw->pw_name) != 0)
		return;
	l->a[l->n].uid = pw->pw_uid;
	l->a[l->n].gid = pw->pw_gid;
	l->n++;
}

/* The accounts the config's [match] rules name, as --doctor finds them:
 * user rules, then the members of each group rule (listed in the group,
 * or by primary group in passwd). */
static void list_agents(const struct sbx_config *cfg, struct cache_list *l)
{
	struct passwd *pw;

	for (size_t i = 0; i < cfg->n_matches; i++) {
		if (cfg->matches[i].kind == SBX_MATCH_USER && (pw = getpwnam(cfg->matches[i].name)))
			list_add(l, pw);
	}
	for (size_t i = 0; i < cfg->n_matches; i++) {
		const struct group *gr;
		gid_t gid;

		if (cfg->matches[i].kind != SBX_MATCH_GROUP ||
		    !(gr = getgrnam(cfg->matches[i].name)))
			continue;
		gid = gr->gr_gid;
		/* getpwnam's static buffer is not getgrnam's: gr stays valid. */
		for (char **m = gr->gr_mem; m && *m; m++) {
			if ((pw = getpwnam(*m)))
				list_add(l, pw);
		}
		setpwent();
		while ((pw = getpwent()) != NULL) {
			if (pw->pw_gid == gid)
				list_add(l, pw);
		}
		endpwent();
	}
}

static int usage_error(void)
{
	fprintf(stderr, "usage: agent-shell --probe-cache [USER...]\n");
	return EXIT_CACHE_USAGE;
}

int shell_cmd_probe_cache(int argc, char **argv)
{
	static const struct option opts[] = {
		{ NULL, 0, NULL, 0 },
	};
	struct cache_list l = { 0 };
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	int status = 0;

	optind = 1;
	opterr = 0;
	if (getopt_long(argc, argv, "+", opts, NULL) != -1)
		return usage_error();
	if (geteuid() != 0) {
		fprintf(stderr, "agent-shell --probe-cache: only root writes the probe cache (%s)\n",
			SBX_PROBE_CACHE_DIR);
		return 1;
	}
	l.a = calloc(CACHE_MAX_ACCOUNTS, sizeof(*l.a));
	if (!l.a) {
		fprintf(stderr, "agent-shell --probe-cache: out of memory\n");
		return 1;
	}
	if (optind < argc) {
		for (int i = optind; i < argc; i++) {
			const struct passwd *pw = getpwnam(argv[i]);

			if (!pw) {
				fprintf(stderr, "agent-shell --probe-cache: %s: no such user\n", argv[i]);
				status = 1;
				continue;
			}
			list_add(&l, pw);
		}
	} else if (shell_config_load(&cfg, &err) != 0) {
		fprintf(stderr, "agent-shell --probe-cache: %s\n", err.msg);
		free(l.a);
		return 1;
	} else if (!cfg) {
		printf("no configuration at %s: no agent accounts to probe as\n", shell_config_path());
	} else {
		list_agents(cfg, &l);
		if (!l.n)
			printf("no agent accounts: nothing is matched by the config's [match] rules\n");
	}
	if (l.full)
		fprintf(stderr, "agent-shell --probe-cache: more than %d accounts: the rest are "
			"probed by their sessions\n", CACHE_MAX_ACCOUNTS);
	for (size_t i = 0; i < l.n; i++) {
		const struct cache_account *a = &l.a[i];
		char why[512];
		bool cached = false;

		if (a->uid == 0) {
			printf("%s (uid 0): skipped: root is never an agent\n", a->user);
			continue;
		}
		if (sbx_probe_cache_refresh(a->uid, a->gid, a->user, &cached, why, sizeof(why),
					    &err) != 0) {
			fprintf(stderr, "agent-shell --probe-cache: %s (uid %u): %s\n", a->user,
				(unsigned)a->uid, err.msg);
			status = 1;
		} else if (cached) {
			printf("%s (uid %u): cached for this boot: user, mount, pid, net, ipc, uts "
			       "and cgroup namespaces\n", a->user, (unsigned)a->uid);
		} else {
			printf("%s (uid %u): not cached, its sessions probe at each start: %s\n",
			       a->user, (unsigned)a->uid, why);
		}
	}
	sbx_config_free(cfg);
	free(l.a);
	return status;
}
