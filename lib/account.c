/* SPDX-License-Identifier: BSD-3-Clause */
/* Who an account is: its passwd entry and group names, looked up once, failing closed. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Profiles are chosen by user and group names, so a group that silently
 * drops out of the list can turn an agent into "not an agent" (the PAM
 * stage then ignores it and internal-sftp runs unconfined). Every lookup
 * here therefore grows its buffer on ERANGE instead of skipping the entry,
 * and any other failure is an error the caller refuses the login on. A gid
 * with no group entry has no name a rule could match; it is left out.
 */

#define LOOKUP_BUF_START 16384
#define LOOKUP_BUF_MAX (16u << 20)	/* a group with a very long member list */
#define GROUPS_MAX 65536		/* NGROUPS_MAX on Linux */

/* Call getpwnam_r/getpwuid_r/getgrgid_r with a buffer that grows on ERANGE.
 * Returns 0 (found or not: *found says), or a positive errno. */
static int grow_lookup(int (*fn)(const void *key, void *ent, char *buf, size_t size, void **res),
		       const void *key, void *ent, char **buf, size_t *size, bool *found)
{
	void *res = NULL;
	int r;

	for (;;) {
		if (!*buf) {
			*size = LOOKUP_BUF_START;
			*buf = malloc(*size);
			if (!*buf)
				return ENOMEM;
		}
		errno = 0;
		r = fn(key, ent, *buf, *size, &res);
		if (r == ERANGE) {
			char *bigger;

			if (*size >= LOOKUP_BUF_MAX)
				return ERANGE;
			bigger = realloc(*buf, *size * 2);
			if (!bigger)
				return ENOMEM;
			*buf = bigger;
			*size *= 2;
			continue;
		}
		/* glibc: 0 and NULL is "no such entry"; some NSS modules say
		 * so with ENOENT or ESRCH instead. */
		if (r == 0 || r == ENOENT || r == ESRCH) {
			*found = r == 0 && res != NULL;
			return 0;
		}
		return r;
	}
}

static int pw_by_name(const void *key, void *ent, char *buf, size_t size, void **res)
{
	return getpwnam_r(key, ent, buf, size, (struct passwd **)res);
}

static int pw_by_uid(const void *key, void *ent, char *buf, size_t size, void **res)
{
	return getpwuid_r(*(const uid_t *)key, ent, buf, size, (struct passwd **)res);
}

static int gr_by_gid(const void *key, void *ent, char *buf, size_t size, void **res)
{
	return getgrgid_r(*(const gid_t *)key, ent, buf, size, (struct group **)res);
}

void sbx_account_free(struct sbx_account *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_groups; i++)
		free(a->groups[i]);
	free(a->groups);
	a->groups = NULL;
	a->n_groups = 0;
	a->groups_loaded = false;
}

/* The group names of an account whose passwd entry is in out. */
static int load_groups(struct sbx_account *out, char **buf, size_t *size,
		       struct sbx_error *err)
{
	gid_t *gids = NULL;
	int n = 64, i, r = 0;

	for (;;) {
		gid_t *grown = realloc(gids, (size_t)n * sizeof(*gids));
		int want = n;

		if (!grown) {
			r = sbx_error_set(err, ENOMEM, "groups of %s: out of memory", out->user);
			goto out;
		}
		gids = grown;
		if (getgrouplist(out->user, out->gid, gids, &want) >= 0) {
			n = want;
			break;
		}
		/* -1 with want set to the number needed. */
		if (want <= n || want > GROUPS_MAX) {
			r = sbx_error_set(err, E2BIG, "groups of %s: getgrouplist failed (%d groups)",
					  out->user, want);
			goto out;
		}
		n = want;
	}
	out->groups = calloc((size_t)n + 1, sizeof(char *));
	if (!out->groups) {
		r = sbx_error_set(err, ENOMEM, "groups of %s: out of memory", out->user);
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct group gr;
		bool found = false;
		int e = grow_lookup(gr_by_gid, &gids[i], &gr, buf, size, &found);

		if (e) {
			r = sbx_error_set(err, e, "group %u of %s: lookup failed: %s",
					  (unsigned)gids[i], out->user, strerror(e));
			goto out;
		}
		if (!found)
			continue;
		/* A name no config can hold (names are shorter than
		 * SBX_NAME_MAX) matches no rule and is not "agents": leave it
		 * out. Refusing here refused every account in such a group
		 * (an AD group with a long qualified name), root's sudo
		 * included, since the module runs in every stack. */
		if (strlen(gr.gr_name) >= SBX_NAME_MAX)
			continue;
		out->groups[out->n_groups] = strdup(gr.gr_name);
		if (!out->groups[out->n_groups]) {
			r = sbx_error_set(err, ENOMEM, "groups of %s: out of memory", out->user);
			goto out;
		}
		out->n_groups++;
	}
out:
	free(gids);
	return r;
}

static int account_load(bool by_name, const char *name, uid_t uid, bool with_groups,
			struct sbx_account *out, struct sbx_error *err)
{
	struct sbx_account a;
	struct passwd pw;
	char *buf = NULL;
	size_t size = 0;
	bool found = false;
	int e, r;

	memset(&a, 0, sizeof(a));
	e = by_name ? grow_lookup(pw_by_name, name, &pw, &buf, &size, &found) :
		      grow_lookup(pw_by_uid, &uid, &pw, &buf, &size, &found);
	if (e) {
		r = by_name ? sbx_error_set(err, e, "user %s: passwd lookup failed: %s", name, strerror(e)) :
			      sbx_error_set(err, e, "uid %u: passwd lookup failed: %s", (unsigned)uid,
					    strerror(e));
		goto out;
	}
	if (!found) {
		r = by_name ? sbx_error_set(err, ENOENT, "user %s: no passwd entry", name) :
			      sbx_error_set(err, ENOENT, "uid %u: no passwd entry", (unsigned)uid);
		goto out;
	}
	if (sbx_strlcpy(a.user, sizeof(a.user), pw.pw_name) ||
	    sbx_strlcpy(a.home, sizeof(a.home), pw.pw_dir ? pw.pw_dir : "") ||
	    sbx_strlcpy(a.shell, sizeof(a.shell), pw.pw_shell ? pw.pw_shell : "")) {
		r = sbx_error_set(err, ENAMETOOLONG, "user %s: name, home or shell too long",
				  pw.pw_name);
		goto out;
	}
	a.uid = pw.pw_uid;
	a.gid = pw.pw_gid;
	if (with_groups) {
		r = load_groups(&a, &buf, &size, err);
		if (r)
			goto out;
		a.groups_loaded = true;
	}
	r = 0;
	*out = a;
	memset(&a, 0, sizeof(a));
out:
	sbx_account_free(&a);
	free(buf);
	return r;
}

int sbx_account_by_name(const char *user, struct sbx_account *out, struct sbx_error *err)
{
	if (!user || !user[0])
		return sbx_error_set(err, EINVAL, "account: empty user name");
	return account_load(true, user, 0, true, out, err);
}

int sbx_account_by_name_passwd(const char *user, struct sbx_account *out, struct sbx_error *err)
{
	if (!user || !user[0])
		return sbx_error_set(err, EINVAL, "account: empty user name");
	return account_load(true, user, 0, false, out, err);
}

int sbx_account_by_uid(uid_t uid, struct sbx_account *out, struct sbx_error *err)
{
	return account_load(false, NULL, uid, true, out, err);
}

int sbx_account_by_uid_passwd(uid_t uid, struct sbx_account *out, struct sbx_error *err)
{
	return account_load(false, NULL, uid, false, out, err);
}

int sbx_account_load_groups(struct sbx_account *a, struct sbx_error *err)
{
	char *buf = NULL;
	size_t size = 0;
	int r;

	if (a->groups_loaded)
		return 0;
	sbx_account_free(a);
	r = load_groups(a, &buf, &size, err);
	free(buf);
	if (r) {
		sbx_account_free(a);
		return r;
	}
	a->groups_loaded = true;
	return 0;
}

bool sbx_account_in_group(const struct sbx_account *a, const char *group)
{
	for (size_t i = 0; i < a->n_groups; i++)
		if (strcmp(a->groups[i], group) == 0)
			return true;
	return false;
}

bool sbx_account_looks_like_agent(const struct sbx_account *a, const char *group)
{
	const char *base = strrchr(a->shell, '/');

	base = base ? base + 1 : a->shell;
	return sbx_account_in_group(a, group) || strcmp(base, "agent-shell") == 0;
}

int sbx_account_profile(const struct sbx_config *cfg, const struct sbx_account *a,
			struct sbx_profile *out, struct sbx_error *err)
{
	const struct sbx_profile *sel = NULL;
	int r;

	/* Without its groups a member of a matched group would read as no
	 * agent at all: never decide on half the facts. */
	if (!a->groups_loaded && sbx_config_has_group_rules(cfg))
		return sbx_error_set(err, EINVAL, "account %s: group names not looked up, and %s "
				     "has group rules", a->user, cfg->path);
	r = sbx_config_select(cfg, a->user, (const char *const *)a->groups, a->n_groups, &sel,
			      err);
	if (r == 0)
		r = sbx_profile_restrict(sel, &cfg->ceiling, out, err);
	if (r == 0) {
		r = sbx_profile_expand(out, a->user, a->home, err);
		if (r)
			sbx_profile_clear(out);
	}
	return r;
}

/* PAM services an agent may use when a profile lists none: the
 * interactive entries agent-shell covers. cron, atd and systemd-user run
 * no login shell, so they are not. */
static const char *const default_services[] = {
	"sshd", "login", "su", "su-l", "runuser", "runuser-l",
};

const char *const *sbx_default_services(size_t *n)
{
	*n = ARRAY_SIZE(default_services);
	return default_services;
}

bool sbx_profile_allows_service(const struct sbx_profile *p, const char *service)
{
	size_t n;
	const char *const *list = p->n_services ? NULL : sbx_default_services(&n);

	if (!service)
		return false;
	if (list) {
		for (size_t i = 0; i < n; i++)
			if (strcmp(list[i], service) == 0)
				return true;
		return false;
	}
	for (size_t i = 0; i < p->n_services; i++)
		if (strcmp(p->services[i], service) == 0)
			return true;
	return false;
}
