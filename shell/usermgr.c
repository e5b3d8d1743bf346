/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * usermgr.c — agent-shell --user-manager UID: may systemd start a user
 * manager (user@UID.service) for this account?
 *
 * A user manager runs as the account in the host's namespaces, outside
 * any sandbox, and runs the account's own units, timers and sockets
 * (~/.config/systemd/user), even after logout with linger. For an agent
 * account that is a way in that is not confined. logind starts it for
 * every login, whatever the PAM stack says; refusing it in the
 * systemd-user PAM stack leaves user@UID.service failed after every
 * login. So the package's drop-in for user@.service asks this verb first:
 *
 *   [Service]
 *   ExecCondition=+/usr/bin/agent-shell --user-manager %i
 *
 * Exit 0: not an agent, the manager starts. Exit 1: an agent (or one we
 * cannot rule out): systemd skips the unit as a clean condition failure,
 * nothing is left failed, and logind's session goes on without it. Any
 * other exit below 255 also skips; 255 would mark the unit failed.
 *
 * With the config unusable, the answer follows the PAM module's: an
 * account that looks like an agent by facts outside the config (group
 * agents, a login shell named agent-shell) gets no manager; anyone else
 * does, with a line in the journal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell.h"

#define UM_START 0
#define UM_SKIP 1

int shell_cmd_user_manager(int argc, char **argv)
{
	struct sbx_error err = { 0 };
	struct sbx_config *cfg = NULL;
	struct sbx_account acc;
	struct sbx_profile *prof;
	unsigned long uid;
	char *end;
	int r, verdict;

	/* argv[0] is "--user-manager". */
	if (argc != 2 || !argv[1][0] || argv[1][0] == '-') {
		fprintf(stderr, "usage: agent-shell --user-manager UID (systemd's ExecCondition)\n");
		return 2;	/* usage: also a skip */
	}
	errno = 0;
	uid = strtoul(argv[1], &end, 10);
	if (errno || *end || uid > (uid_t)-2) {
		fprintf(stderr, "agent-shell --user-manager: %s is not a uid\n", argv[1]);
		return 2;	/* usage: also a skip */
	}
	r = sbx_account_by_uid((uid_t)uid, &acc, &err);
	if (r == -ENOENT) {
		/* No account: not ours to judge (systemd fails it by itself). */
		fprintf(stderr, "agent-shell --user-manager: uid %lu has no passwd entry\n", uid);
		return UM_START;
	}
	if (r) {
		fprintf(stderr, "agent-shell --user-manager: uid %lu: %s: no user manager "
			"(an agent cannot be ruled out)\n", uid, err.msg);
		return UM_SKIP;
	}
	if (sbx_config_load(shell_config_path(), 0, &cfg, &err) != 0) {
		bool agent = sbx_account_looks_like_agent(&acc, SBX_DEFAULT_GROUP);

		fprintf(stderr, "agent-shell --user-manager: config %s unusable: %s; %s %s\n",
			shell_config_path(), err.msg, acc.user,
			agent ? "looks like an agent (group " SBX_DEFAULT_GROUP " or login shell "
				"agent-shell): no user manager"
			      : "does not look like an agent: its user manager starts");
		sbx_account_free(&acc);
		return agent ? UM_SKIP : UM_START;
	}
	prof = malloc(sizeof(*prof));
	if (!prof) {
		fprintf(stderr, "agent-shell --user-manager: out of memory: no user manager\n");
		verdict = UM_SKIP;
	} else {
		r = sbx_account_profile(cfg, &acc, prof, &err);
		if (r == 0) {
			fprintf(stderr, "agent-shell --user-manager: %s (uid %lu) is an agent account "
				"(profile %s): no user manager; its sessions run in the sandbox\n",
				acc.user, uid, prof->name);
			verdict = UM_SKIP;
		} else if (r != -ENOENT) {
			fprintf(stderr, "agent-shell --user-manager: %s: %s: no user manager\n",
				acc.user, err.msg);
			verdict = UM_SKIP;
		} else if (sbx_account_looks_like_agent(&acc, SBX_DEFAULT_GROUP)) {
			/* Matched by no rule, yet in the group the sshd drop-in
			 * treats as agents, or with agent-shell as its shell. */
			fprintf(stderr, "agent-shell --user-manager: %s matches no [match] rule but "
				"looks like an agent: no user manager\n", acc.user);
			verdict = UM_SKIP;
		} else {
			verdict = UM_START;
		}
		free(prof);
	}
	sbx_config_free(cfg);
	sbx_account_free(&acc);
	return verdict;
}
