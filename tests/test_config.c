/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for config.c: the grammar, inherit, select, and one test per kind of bad input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define NAME "t.conf"

static int parse(const char *text, struct sbx_config **cfg, struct sbx_error *err)
{
	return sbx_config_parse_buffer(text, strlen(text), NAME, cfg, err);
}

/* The documented example config, with the profiles it refers to. */
static const char full_example[] =
	"# whole-line comments; also trailing comments after whitespace: \"network = deny  # no egress\"\n"
	"[global]\n"
	"state_dir = /var/lib/agent-sandbox\n"
	"agent_shell = /usr/local/bin/agent-shell\n"
	"\n"
	"[ceiling]                 # host-wide ceiling: same keys as a profile, workspace_root optional\n"
	"network = deny\n"
	"\n"
	"[profile base]\n"
	"workspace_root = /srv/base\n"
	"deny_read = /srv/base-secret\n"
	"root = /opt/base ro\n"
	"\n"
	"[profile coder]\n"
	"inherit = base            # optional; copy another profile first (defined anywhere in the file)\n"
	"workspace_root = /srv/agents/%u/workspace\n"
	"workspace_read = allow\n"
	"workspace_write = allow\n"
	"host_read = allow\n"
	"host_write = deny\n"
	"network = deny\n"
	"command = allow           # allow | deny | gated\n"
	"home = isolated           # isolated | ephemeral | real\n"
	"isolation = sandboxed     # sandboxed | unconfined\n"
	"ack_unconfined = no       # yes | no\n"
	"shell = /bin/bash\n"
	"root = /opt/toolchains ro        # repeatable: PATH ro|rw|none  (none = deny both)\n"
	"deny_read = /srv/secrets         # repeatable\n"
	"gate_allow = /usr/bin/git        # repeatable\n"
	"services = sshd login su         # space separated PAM service names\n"
	"nproc = 256\n"
	"nofile = 1024\n"
	"fsize = 1G                # K/M/G/T suffixes for byte limits\n"
	"as = 8G\n"
	"cpu = 3600                # seconds\n"
	"core = 0\n"
	"session_time = 28800      # seconds\n"
	"max_sessions = 4\n"
	"tmp_size = 512M\n"
	"memory_max = 2G\n"
	"pids_max = 512\n"
	"cpu_max = 150\n"
	"min_level = degraded\n"
	"require = write_boundary network_boundary\n"
	"\n"
	"[profile reviewer]\n"
	"workspace_root = /srv/agents/%u/workspace\n"
	"workspace_write = deny\n"
	"\n"
	"[match]\n"
	"user alice = coder\n"
	"group agents = reviewer\n";

static void test_full_example(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	const struct sbx_profile *p;
	struct sbx_profile *d = malloc(sizeof(*d));

	(void)state;
	assert_non_null(d);
	sbx_profile_init_default(d);
	if (parse(full_example, &cfg, &err) != 0)
		fail_msg("%s", err.msg);
	assert_string_equal(cfg->path, NAME);
	assert_string_equal(cfg->state_dir, "/var/lib/agent-sandbox");
	assert_string_equal(cfg->agent_shell, "/usr/local/bin/agent-shell");
	assert_string_equal(cfg->ceiling.name, "ceiling");
	assert_int_equal(cfg->ceiling.network, SBX_ACCESS_DENY);
	assert_int_equal(cfg->ceiling.host_write, SBX_ACCESS_ALLOW);	/* open otherwise */
	assert_int_equal(cfg->ceiling.isolation, SBX_ISOLATION_UNCONFINED);
	assert_int_equal(cfg->n_profiles, 3);

	p = sbx_config_find_profile(cfg, "coder");
	assert_non_null(p);
	assert_string_equal(p->name, "coder");
	assert_string_equal(p->workspace_root, "/srv/agents/%u/workspace");
	assert_int_equal(p->workspace_read, SBX_ACCESS_ALLOW);
	assert_int_equal(p->workspace_write, SBX_ACCESS_ALLOW);
	assert_int_equal(p->host_read, SBX_ACCESS_ALLOW);
	assert_int_equal(p->host_write, SBX_ACCESS_DENY);
	assert_int_equal(p->network, SBX_ACCESS_DENY);
	assert_int_equal(p->command, SBX_ACCESS_ALLOW);
	assert_int_equal(p->home, SBX_HOME_ISOLATED);
	assert_int_equal(p->isolation, SBX_ISOLATION_SANDBOXED);
	assert_false(p->ack_unconfined);
	assert_string_equal(p->shell, "/bin/bash");
	/* Inherited from base, then appended. */
	assert_int_equal(p->n_roots, 2);
	assert_string_equal(p->roots[0].path, "/opt/base");
	assert_string_equal(p->roots[1].path, "/opt/toolchains");
	assert_int_equal(p->roots[1].read, SBX_ACCESS_ALLOW);
	assert_int_equal(p->roots[1].write, SBX_ACCESS_DENY);
	assert_int_equal(p->n_deny_read, d->n_deny_read + 2);
	assert_string_equal(p->deny_read[d->n_deny_read], "/srv/base-secret");
	assert_string_equal(p->deny_read[d->n_deny_read + 1], "/srv/secrets");
	assert_int_equal(p->n_gate, 1);
	assert_string_equal(p->gate_allow[0], "/usr/bin/git");
	assert_int_equal(p->n_services, 3);
	assert_string_equal(p->services[2], "su");
	assert_int_equal(p->limits.value[SBX_LIMIT_NPROC], 256);
	assert_int_equal(p->limits.value[SBX_LIMIT_NOFILE], 1024);
	assert_int_equal(p->limits.value[SBX_LIMIT_FSIZE], 1ull << 30);
	assert_int_equal(p->limits.value[SBX_LIMIT_AS], 8ull << 30);
	assert_int_equal(p->limits.value[SBX_LIMIT_CPU], 3600);
	assert_int_equal(p->limits.value[SBX_LIMIT_CORE], 0);
	assert_int_equal(p->limits.value[SBX_LIMIT_SESSION_TIME], 28800);
	assert_int_equal(p->limits.value[SBX_LIMIT_MAX_SESSIONS], 4);
	assert_int_equal(p->limits.value[SBX_LIMIT_TMP_SIZE], 512ull << 20);
	assert_int_equal(p->limits.value[SBX_LIMIT_MEMORY_MAX], 2ull << 30);
	assert_int_equal(p->limits.value[SBX_LIMIT_PIDS_MAX], 512);
	assert_int_equal(p->limits.value[SBX_LIMIT_CPU_MAX], 150);
	assert_int_equal(p->limits.set_mask, (1u << SBX_LIMIT_COUNT) - 1);
	assert_int_equal(p->min_level, SBX_LEVEL_DEGRADED);
	assert_int_equal(p->require, SBX_G_WRITE_BOUNDARY | SBX_G_NETWORK_BOUNDARY);

	/* A profile that does not set a key has the default's value. */
	p = sbx_config_find_profile(cfg, "reviewer");
	assert_non_null(p);
	assert_int_equal(p->workspace_write, SBX_ACCESS_DENY);
	assert_int_equal(p->home, d->home);
	assert_int_equal(p->require, d->require);
	assert_int_equal(p->n_deny_read, d->n_deny_read);
	assert_memory_equal(&p->limits, &d->limits, sizeof(d->limits));

	assert_int_equal(cfg->n_matches, 2);
	assert_int_equal(cfg->matches[0].kind, SBX_MATCH_USER);
	assert_string_equal(cfg->matches[0].name, "alice");
	assert_int_equal(cfg->matches[0].line, 51);
	assert_int_equal(cfg->matches[1].kind, SBX_MATCH_GROUP);
	sbx_config_free(cfg);
	free(d);
}

static void test_inherit(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	const struct sbx_profile *p;

	(void)state;
	/* The parent is defined after the child; chains resolve. */
	assert_int_equal(parse("[profile c]\ninherit = b\nnetwork = allow\n"
			       "[profile b]\ninherit = a\nroot = /opt/b rw\n"
			       "[profile a]\nworkspace_root = /w/%u\nroot = /opt/a ro\n"
			       "home = real\nservices = sshd\npam_stage = required\n", &cfg, &err), 0);
	p = sbx_config_find_profile(cfg, "c");
	assert_string_equal(p->name, "c");
	assert_string_equal(p->workspace_root, "/w/%u");
	assert_int_equal(p->home, SBX_HOME_REAL);
	assert_int_equal(p->network, SBX_ACCESS_ALLOW);
	assert_int_equal(p->n_roots, 2);
	assert_string_equal(p->roots[1].path, "/opt/b");
	assert_int_equal(p->n_services, 1);
	assert_true(p->pam_required);		/* inherited */
	/* The parent itself is unchanged by its child's keys. */
	p = sbx_config_find_profile(cfg, "a");
	assert_int_equal(p->network, SBX_ACCESS_DENY);
	assert_int_equal(p->n_roots, 1);
	assert_null(sbx_config_find_profile(cfg, "zz"));
	sbx_config_free(cfg);
}

/* gate_jit: deny unless a profile says allow, inherited, narrowed by a
 * ceiling that says deny; shown and hashed only where it matters. */
static void test_gate_jit(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	struct sbx_profile *r = malloc(sizeof(*r));
	const struct sbx_profile *a, *b, *c;
	char ha[65], hc[65], *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_non_null(r);
	assert_int_equal(parse("[ceiling]\ngate_jit = deny\n"
			       "[profile a]\nworkspace_root = /w\ncommand = gated\n"
			       "gate_allow = /usr/bin/git\ngate_jit = allow\n"
			       "[profile b]\ninherit = a\n"
			       "[profile c]\nworkspace_root = /w\ncommand = gated\n"
			       "gate_allow = /usr/bin/git\n", &cfg, &err), 0);
	a = sbx_config_find_profile(cfg, "a");
	b = sbx_config_find_profile(cfg, "b");
	c = sbx_config_find_profile(cfg, "c");
	assert_int_equal(a->gate_jit, SBX_ACCESS_ALLOW);
	assert_int_equal(b->gate_jit, SBX_ACCESS_ALLOW);	/* inherited */
	assert_int_equal(c->gate_jit, SBX_ACCESS_DENY);	/* the default */
	assert_int_equal(cfg->ceiling.gate_jit, SBX_ACCESS_DENY);
	assert_int_equal(sbx_profile_restrict(a, &cfg->ceiling, r, &err), 0);
	assert_int_equal(r->gate_jit, SBX_ACCESS_DENY);
	/* Only an allow reaches the hash: profiles without the key keep theirs. */
	sbx_profile_hash(c, hc);
	memcpy(r, c, sizeof(*r));
	r->gate_jit = SBX_ACCESS_ALLOW;
	sbx_profile_hash(r, ha);
	assert_string_not_equal(ha, hc);
	/* --explain shows it under a gate. */
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(sbx_profile_to_text(a, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "gate_jit         allow (anonymous executable memory allowed)"));
	free(text);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(sbx_profile_to_text(c, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "gate_jit         deny (memory W^X)"));
	free(text);
	sbx_config_free(cfg);
	free(r);
}

/* An inherit chain of links profiles p0 -> p1 -> ... -> p<links>, written
 * from p0 down (resolving recurses along it) or from the end up (every
 * parent is resolved already). */
static char *inherit_chain(unsigned links, bool root_first)
{
	size_t size = (links + 1) * 64, used = 0;
	char *text = malloc(size);
	unsigned k;

	assert_non_null(text);
	for (k = 0; k <= links; k++) {
		unsigned i = root_first ? k : links - k;
		int n = i < links ?
			snprintf(text + used, size - used, "[profile p%u]\ninherit = p%u\n", i, i + 1) :
			snprintf(text + used, size - used, "[profile p%u]\nworkspace_root = /w\n", i);

		assert_true(n > 0 && (size_t)n < size - used);
		used += (size_t)n;
	}
	return text;
}

static void test_inherit_depth(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	char *text;

	(void)state;
	for (int root_first = 0; root_first <= 1; root_first++) {
		/* The longest chain allowed resolves: p0 gets the root's keys. */
		text = inherit_chain(SBX_CONFIG_MAX_INHERIT, root_first);
		assert_int_equal(parse(text, &cfg, &err), 0);
		assert_string_equal(sbx_config_find_profile(cfg, "p0")->workspace_root, "/w");
		sbx_config_free(cfg);
		cfg = NULL;
		free(text);
		/* One link more is refused, in either order (resolving it
		 * root first used to recurse once per link: a 1 MiB config
		 * overflowed the stack). */
		text = inherit_chain(SBX_CONFIG_MAX_INHERIT + 1, root_first);
		assert_int_equal(parse(text, &cfg, &err), -ELOOP);
		assert_null(cfg);
		assert_non_null(strstr(err.msg, "inherit links"));
		free(text);
	}
}

static void test_select(void **state)
{
	static const char text[] =
		"[profile coder]\nworkspace_root = /w\n"		/* 1-2 */
		"[profile reviewer]\nworkspace_root = /r\n"		/* 3-4 */
		"[match]\n"						/* 5 */
		"user bob = coder\n"					/* 6 */
		"group agents = coder\n"				/* 7 */
		"group reviewers = reviewer\n"				/* 8 */
		"group staff = coder\n";				/* 9 */
	const char *g1[] = { "users", "reviewers" };
	const char *g2[] = { "agents", "staff" };
	const char *g3[] = { "agents", "reviewers" };
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	const struct sbx_profile *p = NULL;

	(void)state;
	assert_int_equal(parse(text, &cfg, &err), 0);
	/* A user rule beats group rules, even conflicting ones. */
	assert_int_equal(sbx_config_select(cfg, "bob", g3, 2, &p, &err), 0);
	assert_string_equal(p->name, "coder");
	assert_int_equal(sbx_config_select(cfg, "carol", g1, 2, &p, &err), 0);
	assert_string_equal(p->name, "reviewer");
	/* Two group rules naming the same profile: fine. */
	assert_int_equal(sbx_config_select(cfg, "dave", g2, 2, &p, &err), 0);
	assert_string_equal(p->name, "coder");
	/* Different profiles: refused, naming both lines. */
	p = NULL;
	assert_int_equal(sbx_config_select(cfg, "eve", g3, 2, &p, &err), -EINVAL);
	assert_null(p);
	assert_non_null(strstr(err.msg, "user eve matches group rules at " NAME ":7 (coder) "
			       "and " NAME ":8 (reviewer); refusing"));
	/* No rule: not an agent account. */
	assert_int_equal(sbx_config_select(cfg, "root", NULL, 0, &p, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "not an agent account"));
	assert_null(p);
	sbx_config_free(cfg);
}

static void test_comments_and_templates(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	const struct sbx_profile *p;

	(void)state;
	assert_int_equal(parse("  # indented comment\n\t\n[ profile  p ]\t# c\n"
			       "workspace_root=%h/ws#not-a-comment\n"
			       "root = /data/100%%/x none\n"
			       "require = none\n", &cfg, &err), 0);
	p = sbx_config_find_profile(cfg, "p");
	assert_string_equal(p->workspace_root, "%h/ws#not-a-comment");
	assert_string_equal(p->roots[0].path, "/data/100%%/x");
	assert_int_equal(p->roots[0].read, SBX_ACCESS_DENY);
	assert_int_equal(p->require, 0);
	sbx_config_free(cfg);
}

static void test_repo_example(void **state)
{
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	const struct sbx_profile *p;
	const char *agents[] = { "agents" };
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	/* Tests run from the repository root. */
	if (sbx_read_file("etc/agent-sandbox.conf", SBX_CONFIG_MAX_BYTES, &buf, &len, &err) != 0)
		fail_msg("%s", err.msg);
	if (sbx_config_parse_buffer(buf, len, "etc/agent-sandbox.conf", &cfg, &err) != 0)
		fail_msg("%s", err.msg);
	/* As shipped, nobody is an agent: installing confines no one. */
	assert_int_equal(cfg->n_matches, 0);
	assert_int_equal(sbx_config_select(cfg, "someone", agents, 1, &p, &err), -ENOENT);
	assert_int_equal(sbx_config_select(cfg, "ci-runner", NULL, 0, &p, &err), -ENOENT);
	sbx_config_free(cfg);
	cfg = NULL;
	{
		/* The admin's drop-in: the header comment's example. */
		static const char local[] = "[match]\ngroup agents = coder\nuser ci-runner = ci\n";
		const struct sbx_config_source src[] = {
			{ .name = "etc/agent-sandbox.conf", .buf = buf, .len = len },
			{ .name = "conf.d/local.conf", .buf = local, .len = sizeof(local) - 1 },
		};

		if (sbx_config_parse_sources(src, 2, &cfg, &err) != 0)
			fail_msg("%s", err.msg);
	}
	assert_int_equal(sbx_config_select(cfg, "ci-runner", NULL, 0, &p, &err), 0);
	assert_string_equal(p->name, "ci");
	assert_non_null(sbx_config_find_profile(cfg, "coder"));
	assert_non_null(sbx_config_find_profile(cfg, "reviewer"));
	p = sbx_config_find_profile(cfg, "ci");
	assert_non_null(p);
	assert_int_equal(p->command, SBX_ACCESS_GATED);
	assert_int_equal(p->gate_jit, SBX_ACCESS_DENY);	/* W^X: no JIT in a C build */
	assert_true(p->n_gate >= 3);
	assert_int_equal(p->home, SBX_HOME_EPHEMERAL);
	assert_int_equal(sbx_config_select(cfg, "someone", agents, 1, &p, &err), 0);
	assert_string_equal(p->name, "coder");
	assert_int_equal(p->network, SBX_ACCESS_DENY);
	assert_int_equal(p->host_write, SBX_ACCESS_DENY);
	assert_int_equal(p->home, SBX_HOME_ISOLATED);
	{
		/* The whole pipeline: expand, restrict by the ceiling, validate. */
		struct sbx_profile *e = malloc(sizeof(*e)), *r = malloc(sizeof(*r));

		assert_non_null(e);
		assert_non_null(r);
		memcpy(e, p, sizeof(*e));
		assert_int_equal(sbx_profile_expand(e, "alice", "/home/alice", &err), 0);
		assert_string_equal(e->workspace_root, "/srv/agents/alice/workspace");
		assert_int_equal(sbx_profile_restrict(e, &cfg->ceiling, r, &err), 0);
		assert_int_equal(sbx_profile_validate(r, &err), 0);
		assert_int_equal(sbx_profile_path_access(r, "/etc/agent-sandbox/x", false),
				 SBX_ACCESS_DENY);
		free(e);
		free(r);
	}
	sbx_config_free(cfg);
	free(buf);
}

/* ---- several files: the main file, then drop-ins ------------------------- */

static int parse2(const char *a, const char *b, struct sbx_config **cfg, struct sbx_error *err)
{
	const struct sbx_config_source src[] = {
		{ .name = "main.conf", .buf = a, .len = strlen(a) },
		{ .name = "conf.d/10-x.conf", .buf = b, .len = strlen(b) },
	};

	return sbx_config_parse_sources(src, 2, cfg, err);
}

static void test_sources(void **state)
{
	static const char main_text[] =
		"[ceiling]\nnetwork = deny\n"			/* 1-2 */
		"[profile p]\ninherit = q\n"			/* 3-4 */
		"[match]\ngroup agents = p\n";			/* 5-6 */
	const char *g[] = { "agents", "staff" };
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	const struct sbx_profile *p = NULL;

	(void)state;
	/* A profile of the main file inherits one a drop-in defines; the
	 * drop-in's [ceiling] continues the main file's. */
	assert_int_equal(parse2(main_text,
				"[profile q]\nworkspace_root = /q\n"
				"[ceiling]\nroot = /srv rw\nroot = /opt ro\n"
				"[match]\ngroup staff = p\n", &cfg, &err), 0);
	p = sbx_config_find_profile(cfg, "p");
	assert_non_null(p);
	assert_string_equal(p->workspace_root, "/q");
	assert_int_equal(cfg->ceiling.network, SBX_ACCESS_DENY);
	assert_int_equal(cfg->ceiling.n_roots, 2);
	assert_int_equal(sbx_config_select(cfg, "dave", g, 2, &p, &err), 0);
	sbx_config_free(cfg);
	cfg = NULL;

	/* A once-only ceiling key again in the drop-in: both places named. */
	assert_int_equal(parse2(main_text, "[profile q]\nworkspace_root = /q\n"
				"[ceiling]\nnetwork = allow\n", &cfg, &err), -EINVAL);
	assert_null(cfg);
	assert_non_null(strstr(err.msg, "conf.d/10-x.conf:4: key 'network': duplicate key "
			       "(first at main.conf:2)"));
	/* A group rule conflicting with one in another file: select names
	 * both files. */
	assert_int_equal(parse2(main_text, "[profile q]\nworkspace_root = /q\n"
				"[match]\ngroup staff = q\n", &cfg, &err), 0);
	assert_int_equal(sbx_config_select(cfg, "eve", g, 2, &p, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "at main.conf:6 (p) and conf.d/10-x.conf:4 (q)"));
	sbx_config_free(cfg);
	cfg = NULL;
	/* [ceiling] twice in one drop-in is still a duplicate section. */
	assert_int_equal(parse2(main_text, "[profile q]\nworkspace_root = /q\n"
				"[ceiling]\n[ceiling]\n", &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "conf.d/10-x.conf:4: [ceiling]: duplicate section"));
	/* Errors in a drop-in name it, not the main file. */
	assert_int_equal(parse2(main_text, "[profile q]\nworkspace_root = q\n", &cfg, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "conf.d/10-x.conf:2: key 'workspace_root'"));
	assert_int_equal(parse2(main_text, "[profile q]\n", &cfg, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "conf.d/10-x.conf:1: [profile q]: missing workspace_root"));
	assert_null(cfg);
}

/* ---- bad input: one test per row ---------------------------------------- */

struct bad {
	const char *name;
	const char *text;
	size_t len;		/* 0 = strlen(text) */
	int rc;
	const char *where;	/* "t.conf:LINE" */
	const char *what;	/* the key, section or cause */
};

#define P "[profile p]\nworkspace_root = /w\n"	/* lines 1-2 */
#define ROW(n, t, rc, w, k) { n, t, 0, rc, w, k }

static char long_line[SBX_CONFIG_MAX_LINE + 64];
static char long_value[SBX_PATH_MAX + 64];
static char many_roots[64 * 40];
static char many_deny[64 * 40];

static struct bad bad_rows[] = {
	ROW("unknown_section", P "[bogus]\n", -EINVAL, NAME ":3:", "[bogus]"),
	ROW("unknown_section_profile_no_name", P "[profile]\n", -EINVAL, NAME ":3:", "[profile]"),
	ROW("section_missing_bracket", P "[global\n", -EINVAL, NAME ":3:", "[global"),
	ROW("key_outside_section", "network = deny\n" P, -EINVAL, NAME ":1:", "'network'"),
	ROW("unknown_key", P "netwrok = deny\n", -EINVAL, NAME ":3:", "'netwrok'"),
	ROW("network_bad", P "network = filtered\n", -EINVAL, NAME ":3:", "allow | proxy | deny"),
	ROW("egress_bad_port", P "network = proxy\negress_allow = a.org:0\n", -EINVAL, NAME ":4:",
	    "egress_allow 'a.org:0': bad port"),
	ROW("egress_not_ascii", P "egress_allow = b\xc3\xbc" "cher.de\n", -EINVAL, NAME ":3:",
	    "no IDNA"),
	ROW("egress_numeric_name", P "egress_allow = 127.1\n", -EINVAL, NAME ":3:",
	    "key 'egress_allow'"),
	ROW("egress_bare_star", P "egress_allow = *.\n", -EINVAL, NAME ":3:", "'*.' must be"),
	ROW("egress_in_ceiling", "[ceiling]\negress_allow = a.org:x\n" P, -EINVAL, NAME ":2:",
	    "bad port"),
	ROW("egress_socket_twice", "[global]\negress_socket = /run/a\negress_socket = /run/b\n" P,
	    -EINVAL, NAME ":3:", "duplicate key (first at line 2)"),
	ROW("egress_socket_relative", "[global]\negress_socket = run/a\n" P, -EINVAL, NAME ":2:",
	    "egress_socket"),
	ROW("unknown_key_global", "[global]\nstate = /x\n" P, -EINVAL, NAME ":2:", "'state'"),
	ROW("inherit_in_ceiling", "[ceiling]\ninherit = p\n" P, -EINVAL, NAME ":2:", "'inherit'"),
	ROW("no_equals", P "network deny\n", -EINVAL, NAME ":3:", "network deny"),
	ROW("empty_value", P "network =\n", -EINVAL, NAME ":3:", "'network'"),
	ROW("bad_value_access", P "network = maybe\n", -EINVAL, NAME ":3:", "'network'"),
	ROW("bad_value_fs_gated", P "host_read = gated\n", -EINVAL, NAME ":3:", "'host_read'"),
	ROW("bad_value_home", P "home = shared\n", -EINVAL, NAME ":3:", "'home'"),
	ROW("bad_value_pam_stage", P "pam_stage = yes\n", -EINVAL, NAME ":3:", "'pam_stage'"),
	ROW("bad_value_yesno", P "ack_unconfined = true\n", -EINVAL, NAME ":3:", "'ack_unconfined'"),
	ROW("bad_value_root_mode", P "root = /opt rx\n", -EINVAL, NAME ":3:", "'root'"),
	ROW("bad_value_root_arity", P "root = /opt\n", -EINVAL, NAME ":3:", "'root'"),
	ROW("bad_value_guarantee", P "require = everything\n", -EINVAL, NAME ":3:", "'require'"),
	ROW("bad_value_level", P "min_level = high\n", -EINVAL, NAME ":3:", "'min_level'"),
	ROW("bad_service_name", P "services = ssh/d\n", -EINVAL, NAME ":3:", "'services'"),
	ROW("duplicate_key", P "network = deny\nnetwork = allow\n", -EINVAL, NAME ":4:", "'network'"),
	ROW("duplicate_profile", P "[profile p]\nworkspace_root = /v\n", -EINVAL, NAME ":3:", "[profile p]"),
	ROW("duplicate_global", "[global]\n" P "[global]\n", -EINVAL, NAME ":4:", "[global]"),
	ROW("duplicate_ceiling", "[ceiling]\n[ceiling]\n" P, -EINVAL, NAME ":2:", "[ceiling]"),
	ROW("duplicate_user_rule", P "[match]\nuser alice = p\nuser alice = p\n", -EINVAL, NAME ":5:", "'user alice'"),
	ROW("duplicate_group_rule", P "[match]\ngroup g = p\ngroup g = p\n", -EINVAL, NAME ":5:", "'group g'"),
	ROW("missing_workspace_root", "[profile p]\nnetwork = deny\n", -EINVAL, NAME ":1:", "workspace_root"),
	ROW("missing_workspace_root_after_inherit", "[profile a]\nnetwork = deny\n[profile b]\ninherit = a\n", -EINVAL, NAME ":1:", "workspace_root"),
	ROW("relative_path", "[profile p]\nworkspace_root = srv/ws\n", -EINVAL, NAME ":2:", "'workspace_root'"),
	ROW("relative_global_path", "[global]\nstate_dir = var/lib\n" P, -EINVAL, NAME ":2:", "'state_dir'"),
	ROW("dotdot_segment", P "root = /opt/../etc ro\n", -EINVAL, NAME ":3:", "'root'"),
	ROW("dot_segment", P "deny_read = /srv/./x\n", -EINVAL, NAME ":3:", "'deny_read'"),
	ROW("double_slash", P "gate_allow = /usr//bin/git\n", -EINVAL, NAME ":3:", "'gate_allow'"),
	ROW("trailing_slash", P "shell = /bin/\n", -EINVAL, NAME ":3:", "'shell'"),
	ROW("template_home_not_first", P "deny_read = /x%h\n", -EINVAL, NAME ":3:", "'deny_read'"),
	ROW("template_dotdot_after_user", P "deny_read = /x/%u/..\n", -EINVAL, NAME ":3:", "'deny_read'"),
	ROW("template_bad_percent", "[profile p]\nworkspace_root = /srv/%x\n", -EINVAL, NAME ":2:", "'workspace_root'"),
	ROW("line_too_long", NULL, -EINVAL, NAME ":3:", "longer than 4096"),
	ROW("value_too_long", NULL, -ENAMETOOLONG, NAME ":2:", "'workspace_root'"),
	{ "nul_byte", P "network = de\0ny\n", sizeof(P "network = de\0ny\n") - 1, -EINVAL, NAME ":3:", "NUL" },
	ROW("utf8_overlong", P "# \xc0\xaf\n", -EILSEQ, NAME ":3:", "UTF-8"),
	ROW("utf8_overlong_3byte", P "# \xe0\x80\xaf\n", -EILSEQ, NAME ":3:", "UTF-8"),
	ROW("utf8_surrogate", P "# \xed\xa0\x80\n", -EILSEQ, NAME ":3:", "UTF-8"),
	ROW("utf8_above_10ffff", P "# \xf4\x90\x80\x80\n", -EILSEQ, NAME ":3:", "UTF-8"),
	ROW("utf8_truncated", P "# \xe2\x82\n", -EILSEQ, NAME ":3:", "UTF-8"),
	ROW("utf8_stray_continuation", P "deny_read = /\x80\n", -EILSEQ, NAME ":3:", "UTF-8"),
	ROW("carriage_return", "[profile p]\r\nworkspace_root = /w\r\n", -EINVAL, NAME ":1:", "carriage return (CRLF line endings?)"),
	ROW("empty_file", "", -EINVAL, NAME ":", "no profile defined"),
	ROW("no_profile", "[global]\nstate_dir = /x\n[match]\n", -EINVAL, NAME ":", "no profile defined"),
	ROW("match_unknown_profile", P "[match]\ngroup agents = nope\n", -ENOENT, NAME ":4:", "'nope'"),
	ROW("bad_profile_name", "[profile bad/name]\nworkspace_root = /w\n", -EINVAL, NAME ":1:", "bad/name"),
	ROW("profile_name_too_long", "[profile a123456789b123456789c123456789d123456789e123456789f1234]\n", -EINVAL, NAME ":1:", "a123456789"),
	ROW("bad_user_name", P "[match]\nuser -alice = p\n", -EINVAL, NAME ":4:", "'user -alice'"),
	ROW("bad_group_name", P "[match]\ngroup ag!ents = p\n", -EINVAL, NAME ":4:", "'group ag!ents'"),
	ROW("user_name_too_long", P "[match]\nuser a23456789012345678901234567890123 = p\n", -EINVAL, NAME ":4:", "'user a2345"),
	ROW("bad_match_kind", P "[match]\nhost x = p\n", -EINVAL, NAME ":4:", "'host x'"),
	ROW("too_many_roots", NULL, -E2BIG, NAME ":35:", "'root'"),
	ROW("too_many_deny_read", NULL, -E2BIG, NAME ":29:", "'deny_read'"),
	ROW("too_many_services", P "services = a b c d e f g h i j k l m n o p q\n", -E2BIG, NAME ":3:", "'services'"),
	ROW("number_out_of_range", P "nproc = 0\n", -ERANGE, NAME ":3:", "'nproc'"),
	ROW("number_too_big", P "as = 99999999999999999999999\n", -ERANGE, NAME ":3:", "'as'"),
	ROW("number_junk", P "nofile = 12x\n", -EINVAL, NAME ":3:", "'nofile'"),
	ROW("number_negative", P "cpu = -1\n", -EINVAL, NAME ":3:", "'cpu'"),
	ROW("number_suffix_not_allowed", P "cpu = 5K\n", -EINVAL, NAME ":3:", "'cpu'"),
	ROW("number_bad_suffix", P "fsize = 1Q\n", -EINVAL, NAME ":3:", "'fsize'"),
	ROW("inherit_self", P "inherit = p\n", -EINVAL, NAME ":3:", "'inherit'"),
	ROW("inherit_cycle", "[profile a]\ninherit = b\n[profile b]\ninherit = a\nworkspace_root = /w\n", -ELOOP, NAME ":", "'inherit'"),
	ROW("inherit_unknown", P "inherit = nope\n", -ENOENT, NAME ":3:", "'inherit'"),
	ROW("unconfined_without_ack", P "isolation = unconfined\n", -EINVAL, NAME ":1:", "ack_unconfined"),
	ROW("ack_on_sandboxed", P "ack_unconfined = yes\n", -EINVAL, NAME ":1:", "ack_unconfined"),
	ROW("gated_without_list", P "command = gated\n", -EINVAL, NAME ":1:", "gate_allow"),
	ROW("gate_jit_gated", P "gate_jit = gated\n", -EINVAL, NAME ":3:", "'gate_jit': bad value 'gated' (allow | deny)"),
	ROW("gate_jit_yes", P "gate_jit = yes\n", -EINVAL, NAME ":3:", "'gate_jit'"),
	ROW("gate_jit_twice", P "gate_jit = deny\ngate_jit = allow\n", -EINVAL, NAME ":4:", "'gate_jit': duplicate key"),
	ROW("root_is_workspace", P "root = /w ro\n", -EINVAL, NAME ":1:", "workspace root"),
	ROW("root_twice_different", P "root = /o ro\nroot = /o rw\n", -EINVAL, NAME ":1:", "/o"),
	ROW("ceiling_unconfined_without_ack", "[ceiling]\nisolation = unconfined\nack_unconfined = no\n" P, -EINVAL, NAME ":1:", "[ceiling]"),
};

static void build_generated_rows(void)
{
	size_t i, off;

	/* Line 3 is one byte over the limit. */
	off = (size_t)snprintf(long_line, sizeof(long_line), "%s#", P);
	memset(long_line + off, 'x', SBX_CONFIG_MAX_LINE);
	long_line[off + SBX_CONFIG_MAX_LINE] = '\n';
	long_line[off + SBX_CONFIG_MAX_LINE + 1] = '\0';

	off = (size_t)snprintf(long_value, sizeof(long_value), "[profile p]\nworkspace_root = /");
	memset(long_value + off, 'a', SBX_PATH_MAX);
	long_value[off + SBX_PATH_MAX] = '\n';
	long_value[off + SBX_PATH_MAX + 1] = '\0';

	/* 33 roots: the 33rd, on line 35, overflows. */
	off = (size_t)snprintf(many_roots, sizeof(many_roots), "%s", P);
	for (i = 0; i < SBX_MAX_ROOTS + 1; i++)
		off += (size_t)snprintf(many_roots + off, sizeof(many_roots) - off,
					"root = /r%zu ro\n", i);
	/* The default's 6 secrets plus 26 fill 32: line 29 is the 27th. */
	off = (size_t)snprintf(many_deny, sizeof(many_deny), "%s", P);
	for (i = 0; i < 27; i++)
		off += (size_t)snprintf(many_deny + off, sizeof(many_deny) - off,
					"deny_read = /d%zu\n", i);
	for (i = 0; i < ARRAY_SIZE(bad_rows); i++) {
		if (strcmp(bad_rows[i].name, "line_too_long") == 0)
			bad_rows[i].text = long_line;
		else if (strcmp(bad_rows[i].name, "value_too_long") == 0)
			bad_rows[i].text = long_value;
		else if (strcmp(bad_rows[i].name, "too_many_roots") == 0)
			bad_rows[i].text = many_roots;
		else if (strcmp(bad_rows[i].name, "too_many_deny_read") == 0)
			bad_rows[i].text = many_deny;
	}
}

static void test_bad_row(void **state)
{
	const struct bad *b = *state;
	struct sbx_config *cfg = (struct sbx_config *)0x1;	/* must stay untouched */
	struct sbx_error err = { 0 };
	size_t len = b->len ? b->len : strlen(b->text);
	int r = sbx_config_parse_buffer(b->text, len, NAME, &cfg, &err);

	if (r != b->rc)
		fail_msg("%s: rc %d, want %d (%s)", b->name, r, b->rc, err.msg);
	assert_int_equal(err.code, -b->rc);
	assert_ptr_equal(cfg, (struct sbx_config *)0x1);
	if (!strstr(err.msg, b->where) || !strstr(err.msg, b->what))
		fail_msg("%s: message '%s' lacks '%s' or '%s'", b->name, err.msg,
			 b->where, b->what);
}

/* The same row parsed with the good line instead proves the row fails for
 * its stated reason, not for something else in the text. */
static void test_positive_controls(void **state)
{
	static const char *const good[] = {
		P "network = deny\n",
		P "root = /opt ro\nroot = /opt ro\n",
		P "deny_read = /x/%u/y\n",
		P "nofile = 12\ncpu = 5\nfsize = 1K\n",
		P "[match]\nuser alice$ = p\ngroup _g.x-1 = p\nuser alice = p\n",
		P "# \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 UTF-8 is fine\n",
		P "command = gated\ngate_allow = /usr/bin/git\n",
		P "command = gated\ngate_allow = /usr/bin/git\ngate_jit = allow\n",
		P "gate_jit = deny\n",
		("[ceiling]\ngate_jit = deny\n" P),
		P "isolation = unconfined\nack_unconfined = yes\n",
		P "pam_stage = required\n",
		P "network = proxy\negress_allow = a.org:8443\n",
		P "egress_allow = xn--bcher-kva.de\n",
		P "egress_allow = 127.0.0.1\n",
		P "egress_allow = *.a.org:443\n",
		("[ceiling]\negress_allow = a.org:443\n" P),
		("[global]\negress_socket = /run/a\n" P),
		("[ceiling]\nisolation = sandboxed\n" P),	/* () : one string, no comma missed */
	};
	struct sbx_config *cfg;
	struct sbx_error err;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(good); i++) {
		cfg = NULL;
		if (parse(good[i], &cfg, &err) != 0)
			fail_msg("good[%zu]: %s", i, err.msg);
		assert_non_null(cfg);
		sbx_config_free(cfg);
	}
}

static void test_egress(void **state)
{
	static const char text[] =
		"[global]\n"
		"egress_socket = /run/test-egress/e.sock\n"
		"[ceiling]\n"
		"network = proxy\n"
		"[profile base]\n"
		"workspace_root = /w\n"
		"network = gated\n"
		"egress_allow = Registry.NPMjs.org\n"
		"[profile p]\n"
		"inherit = base\n"
		"workspace_root = /w\n"
		"egress_allow = *.pythonhosted.org:443\n"
		"egress_allow = registry.npmjs.org:443\n"	/* the same entry: once */
		"egress_allow = [::1]:8080\n"
		"[profile q]\n"
		"workspace_root = /w\n";
	const struct sbx_profile *p, *q, *base;
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	char buf[SBX_EGRESS_HOST_MAX + 16];

	(void)state;
	if (parse(text, &cfg, &err) != 0)
		fail_msg("%s", err.msg);
	assert_string_equal(cfg->egress_socket, "/run/test-egress/e.sock");
	/* The ceiling names no list: it restricts none. */
	assert_int_equal(cfg->ceiling.network, SBX_NETWORK_PROXY);
	assert_true(cfg->ceiling.egress_any);
	assert_int_equal(cfg->ceiling.n_egress, 0);
	base = sbx_config_find_profile(cfg, "base");
	assert_non_null(base);
	assert_int_equal(base->network, SBX_NETWORK_PROXY);	/* "gated": the old spelling */
	assert_int_equal(base->n_egress, 1);
	p = sbx_config_find_profile(cfg, "p");
	assert_non_null(p);
	assert_int_equal(p->network, SBX_NETWORK_PROXY);
	assert_false(p->egress_any);
	assert_int_equal(p->n_egress, 3);
	assert_int_equal(sbx_egress_entry_format(&p->egress[0], buf, sizeof(buf)), 0);
	assert_string_equal(buf, "registry.npmjs.org:443");
	assert_true(p->egress[1].wildcard);
	assert_int_equal(sbx_egress_entry_format(&p->egress[2], buf, sizeof(buf)), 0);
	assert_string_equal(buf, "[::1]:8080");
	assert_int_equal(sbx_profile_validate(p, &err), 0);
	/* A profile without the keys: network deny, no list. */
	q = sbx_config_find_profile(cfg, "q");
	assert_non_null(q);
	assert_int_equal(q->network, SBX_ACCESS_DENY);
	assert_int_equal(q->n_egress, 0);
	assert_false(q->egress_any);
	assert_string_equal(sbx_network_name(p->network), "proxy");
	sbx_config_free(cfg);

	/* Without [global] egress_socket: the default path. */
	assert_int_equal(parse(P, &cfg, &err), 0);
	assert_string_equal(cfg->egress_socket, SBX_EGRESS_SOCKET);
	sbx_config_free(cfg);
}

static void test_egress_too_many(void **state)
{
	char text[64 * (SBX_MAX_EGRESS + 4)];
	struct sbx_config *cfg = NULL;
	struct sbx_error err = { 0 };
	size_t off, i;

	(void)state;
	off = (size_t)snprintf(text, sizeof(text), "%s", P);
	for (i = 0; i < SBX_MAX_EGRESS; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "egress_allow = h%zu.org\n", i);
	assert_int_equal(parse(text, &cfg, &err), 0);	/* control: the bound itself */
	assert_int_equal(cfg->profiles[0].n_egress, SBX_MAX_EGRESS);
	sbx_config_free(cfg);
	snprintf(text + off, sizeof(text) - off, "egress_allow = last.org\n");
	cfg = NULL;
	assert_int_equal(parse(text, &cfg, &err), -E2BIG);
	assert_null(cfg);
	assert_non_null(strstr(err.msg, NAME ":67: key 'egress_allow': more than 64 entries"));
}

int main(void)
{
	const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_full_example),
		cmocka_unit_test(test_inherit),
		cmocka_unit_test(test_gate_jit),
		cmocka_unit_test(test_inherit_depth),
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_comments_and_templates),
		cmocka_unit_test(test_repo_example),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_positive_controls),
		cmocka_unit_test(test_egress),
		cmocka_unit_test(test_egress_too_many),
	};
	struct CMUnitTest tests[ARRAY_SIZE(fixed) + ARRAY_SIZE(bad_rows)];
	size_t i;

	build_generated_rows();
	memcpy(tests, fixed, sizeof(fixed));
	for (i = 0; i < ARRAY_SIZE(bad_rows); i++) {
		struct CMUnitTest t = cmocka_unit_test_prestate(test_bad_row, &bad_rows[i]);

		t.name = bad_rows[i].name;
		tests[ARRAY_SIZE(fixed) + i] = t;
	}
	return _cmocka_run_group_tests("config", tests, ARRAY_SIZE(tests), NULL, NULL);
}
