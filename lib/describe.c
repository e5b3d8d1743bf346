/* SPDX-License-Identifier: BSD-3-Clause */
/* Describe a profile: canonical JSON (also the input of the hash) and aligned text. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "sha256.h"

/* One writer for two sinks, so the hash is computed over exactly the bytes
 * sbx_profile_to_json prints (but for a byte that is not UTF-8: put_str),
 * without allocating (a profile's JSON can be several hundred KB with
 * every list full and escaped). */
struct sink {
	FILE *f;
	struct sbx_sha256 *h;
	bool failed;
};

static void put(struct sink *s, const char *data, size_t len)
{
	if (s->failed || len == 0)
		return;
	if (s->h)
		sbx_sha256_update(s->h, data, len);
	else if (fwrite(data, 1, len, s->f) != len)
		s->failed = true;
}

static void puts_(struct sink *s, const char *str)
{
	put(s, str, strlen(str));
}

static void put_u64(struct sink *s, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	puts_(s, buf);
}

/*
 * JSON string, one to one since it is hashed: quotes, backslash and
 * control bytes escaped by sbx_json_escape, the C1 controls U+0080-U+009F
 * as \u0080-\u009f (a terminal acts on them as UTF-8 too), other UTF-8 as
 * it is. A config is strict UTF-8 (config.c), so that is all its profiles
 * hold; a byte that is not UTF-8 (a passwd home through %h, a profile
 * built in memory) is hashed as it is and printed as the text \xNN, as
 * the report shows it (text.c): the printed form stays strict UTF-8, the
 * hash one to one. A string is bounded by size so an unterminated buffer cannot be
 * over-read.
 */
static void put_str(struct sink *s, const char *str, size_t size)
{
	const unsigned char *u = (const unsigned char *)str;
	size_t i, n, run = 0, len = strnlen(str, size);

	puts_(s, "\"");
	for (i = 0; i < len; i += n) {
		char esc[8];
		uint32_t cp = u[i];

		n = u[i] < 0x80 ? 1 : sbx_utf8_char(u + i, len - i, &cp);
		if (n == 0) {
			n = 1;
			if (s->h) {
				run++;
				continue;
			}
			snprintf(esc, sizeof(esc), "\\\\x%02x", u[i]);
		} else if (cp >= 0x80 && cp <= 0x9f) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
		} else if (cp >= 0x80 || sbx_json_escape(u[i], esc) == 0) {
			run += n;
			continue;
		}
		put(s, str + i - run, run);
		run = 0;
		puts_(s, esc);
	}
	put(s, str + i - run, run);
	puts_(s, "\"");
}

static void put_key(struct sink *s, const char *key, bool first)
{
	if (!first)
		puts_(s, ",");
	puts_(s, "\"");
	puts_(s, key);
	puts_(s, "\":");
}

static void put_kv(struct sink *s, const char *key, const char *val, size_t size)
{
	put_key(s, key, false);
	put_str(s, val, size);
}

static void put_list(struct sink *s, const char *key, const char *base,
		     size_t stride, size_t n)
{
	size_t i;

	put_key(s, key, false);
	puts_(s, "[");
	for (i = 0; i < n; i++) {
		if (i)
			puts_(s, ",");
		put_str(s, base + i * stride, stride);
	}
	puts_(s, "]");
}

static size_t clamp(size_t n, size_t max)
{
	return n < max ? n : max;
}

static void emit_json(const struct sbx_profile *p, struct sink *s)
{
	size_t i, n;
	unsigned l;
	bool first;

	puts_(s, "{");
	put_key(s, "name", true);
	put_str(s, p->name, sizeof(p->name));
	put_kv(s, "workspace_root", p->workspace_root, sizeof(p->workspace_root));
	put_kv(s, "workspace_read", sbx_access_name(p->workspace_read), 16);
	put_kv(s, "workspace_write", sbx_access_name(p->workspace_write), 16);
	put_kv(s, "host_read", sbx_access_name(p->host_read), 16);
	put_kv(s, "host_write", sbx_access_name(p->host_write), 16);
	put_kv(s, "network", sbx_network_name(p->network), 16);
	put_kv(s, "command", sbx_access_name(p->command), 16);
	put_kv(s, "home", sbx_home_name(p->home), 16);
	put_kv(s, "isolation", sbx_isolation_name(p->isolation), 16);
	put_key(s, "ack_unconfined", false);
	puts_(s, p->ack_unconfined ? "true" : "false");
	put_kv(s, "shell", p->shell, sizeof(p->shell));
	put_kv(s, "pam_stage", p->pam_required ? "required" : "optional", 16);

	put_key(s, "roots", false);
	puts_(s, "[");
	n = clamp(p->n_roots, SBX_MAX_ROOTS);
	for (i = 0; i < n; i++) {
		if (i)
			puts_(s, ",");
		puts_(s, "{");
		put_key(s, "path", true);
		put_str(s, p->roots[i].path, sizeof(p->roots[i].path));
		put_kv(s, "read", sbx_access_name(p->roots[i].read), 16);
		put_kv(s, "write", sbx_access_name(p->roots[i].write), 16);
		puts_(s, "}");
	}
	puts_(s, "]");
	put_list(s, "deny_read", p->deny_read[0], SBX_PATH_MAX,
		 clamp(p->n_deny_read, SBX_MAX_DENY));
	put_list(s, "gate_allow", p->gate_allow[0], SBX_PATH_MAX,
		 clamp(p->n_gate, SBX_MAX_GATE));
	put_list(s, "services", p->services[0], SBX_NAME_MAX,
		 clamp(p->n_services, SBX_MAX_SERVICES));
	/* Only when set, so the hash of a profile without it is unchanged. */
	if (p->n_unix_allow)
		put_list(s, "unix_allow", p->unix_allow[0], SBX_PATH_MAX,
			 clamp(p->n_unix_allow, SBX_MAX_UNIX_ALLOW));
	if (p->unix_allow_any)
		put_kv(s, "unix_allow", "any", 8);
	/* The same: only when set. */
	if (p->n_egress) {
		char e[SBX_EGRESS_HOST_MAX + 16];

		put_key(s, "egress_allow", false);
		puts_(s, "[");
		for (i = 0; i < clamp(p->n_egress, SBX_MAX_EGRESS); i++) {
			if (i)
				puts_(s, ",");
			if (sbx_egress_entry_format(&p->egress[i], e, sizeof(e)) < 0)
				e[0] = '\0';
			put_str(s, e, sizeof(e));
		}
		puts_(s, "]");
	}
	if (p->egress_any)
		put_kv(s, "egress_allow", "any", 8);
	/* Only when allowed, so the hash of a profile without it is unchanged. */
	if (p->gate_jit != SBX_ACCESS_DENY)
		put_kv(s, "gate_jit", sbx_access_name(p->gate_jit), 16);

	put_key(s, "limits", false);
	puts_(s, "{");
	first = true;
	for (l = 0; l < SBX_LIMIT_COUNT; l++) {
		if (!(p->limits.set_mask & (1u << l)))
			continue;
		put_key(s, sbx_limit_name((enum sbx_limit)l), first);
		put_u64(s, p->limits.value[l]);
		first = false;
	}
	puts_(s, "}");
	put_kv(s, "min_level", sbx_level_name(p->min_level), 16);
	put_key(s, "require", false);
	puts_(s, "[");
	first = true;
	for (l = 0; l < SBX_G_COUNT; l++) {
		if (!(p->require & (1u << l)))
			continue;
		if (!first)
			puts_(s, ",");
		put_str(s, sbx_guarantee_name((enum sbx_guarantee)(1u << l)), 32);
		first = false;
	}
	puts_(s, "]}");
}

int sbx_profile_to_json(const struct sbx_profile *p, FILE *out)
{
	struct sink s = { .f = out };

	emit_json(p, &s);
	puts_(&s, "\n");
	if (s.failed || ferror(out))
		return -EIO;
	return 0;
}

/* The hash covers the JSON without the trailing newline. */
void sbx_profile_hash(const struct sbx_profile *p, char out[65])
{
	struct sbx_sha256 h;
	uint8_t d[SBX_SHA256_DIGEST];
	struct sink s = { .h = &h };

	sbx_sha256_init(&h);
	emit_json(p, &s);
	sbx_sha256_final(&h, d);
	sbx_sha256_to_hex(d, out);
}

static const char *or_dash(const char *s)
{
	return s[0] ? s : "-";
}

int sbx_profile_to_text(const struct sbx_profile *p, FILE *out)
{
	char hash[65];
	size_t i;
	unsigned l;

	sbx_profile_hash(p, hash);
#define ROW(k, fmt, ...) fprintf(out, "%-16s " fmt "\n", k, __VA_ARGS__)
/* A config's own text, or a passwd home through %h: shown (text.c). */
#define ROW_TEXT(k, prefix, str, size)				\
	do {							\
		fprintf(out, "%-16s %s", k, prefix);		\
		sbx_text_put(out, str, size);			\
		fputc('\n', out);				\
	} while (0)
	ROW_TEXT("profile", "", p->name, SBX_NAME_MAX);
	ROW("hash", "%s", hash);
	ROW_TEXT("workspace_root", "", or_dash(p->workspace_root), SBX_PATH_MAX);
	ROW("workspace", "read %-5s  write %s", sbx_access_name(p->workspace_read),
	    sbx_access_name(p->workspace_write));
	ROW("host", "read %-5s  write %s", sbx_access_name(p->host_read),
	    sbx_access_name(p->host_write));
	ROW("network", "%s", sbx_network_name(p->network));
	ROW("command", "%s", sbx_access_name(p->command));
	if (p->command != SBX_ACCESS_ALLOW)
		ROW("gate_jit", "%s", p->gate_jit == SBX_ACCESS_ALLOW ?
		    "allow (anonymous executable memory allowed)" : "deny (memory W^X)");
	ROW("home", "%s", sbx_home_name(p->home));
	ROW("isolation", "%s%s", sbx_isolation_name(p->isolation),
	    p->ack_unconfined ? " (acknowledged)" : "");
	ROW_TEXT("shell", "", or_dash(p->shell), SBX_PATH_MAX);
	ROW("pam_stage", "%s", p->pam_required ? "required" : "optional");
	for (i = 0; i < clamp(p->n_roots, SBX_MAX_ROOTS); i++) {
		char access[40];

		snprintf(access, sizeof(access), "read %-5s  write %-5s  ",
			 sbx_access_name(p->roots[i].read), sbx_access_name(p->roots[i].write));
		ROW_TEXT(i ? "" : "roots", access, p->roots[i].path, SBX_PATH_MAX);
	}
	for (i = 0; i < clamp(p->n_deny_read, SBX_MAX_DENY); i++)
		ROW_TEXT(i ? "" : "deny_read", "", p->deny_read[i], SBX_PATH_MAX);
	for (i = 0; i < clamp(p->n_gate, SBX_MAX_GATE); i++)
		ROW_TEXT(i ? "" : "gate_allow", "", p->gate_allow[i], SBX_PATH_MAX);
	if (p->unix_allow_any)
		ROW("unix_allow", "%s", "(no list restricts)");
	for (i = 0; i < clamp(p->n_unix_allow, SBX_MAX_UNIX_ALLOW); i++)
		ROW_TEXT(i ? "" : "unix_allow", "", p->unix_allow[i], SBX_PATH_MAX);
	if (p->egress_any)
		ROW("egress_allow", "%s", "(no list restricts)");
	for (i = 0; i < clamp(p->n_egress, SBX_MAX_EGRESS); i++) {
		char e[SBX_EGRESS_HOST_MAX + 16];

		if (sbx_egress_entry_format(&p->egress[i], e, sizeof(e)) == 0)
			ROW_TEXT(i ? "" : "egress_allow", "", e, sizeof(e));
	}
	if (p->n_services == 0)
		ROW("services", "%s", "(no cap)");
	for (i = 0; i < clamp(p->n_services, SBX_MAX_SERVICES); i++)
		ROW_TEXT(i ? "" : "services", "", p->services[i], SBX_NAME_MAX);
	for (l = 0; l < SBX_LIMIT_COUNT; l++)
		if (p->limits.set_mask & (1u << l))
			ROW(sbx_limit_name((enum sbx_limit)l), "%" PRIu64, p->limits.value[l]);
	ROW("min_level", "%s", sbx_level_name(p->min_level));
	fprintf(out, "%-16s", "require");
	if (p->require == 0)
		fputs(" (none)", out);
	for (l = 0; l < SBX_G_COUNT; l++)
		if (p->require & (1u << l))
			fprintf(out, " %s", sbx_guarantee_name((enum sbx_guarantee)(1u << l)));
	fputc('\n', out);
#undef ROW_TEXT
#undef ROW
	return ferror(out) ? -EIO : 0;
}
