/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON for the report, the probe and the profile hash: one string escaper, and the strict reader's primitives. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The one escape table of every JSON this tree writes (the report, the
 * probe, the profile's canonical form that is hashed): quote and
 * backslash, \n \t \r, other control bytes and DEL as \u00XX; bytes
 * >= 0x80 pass through. out gets the escape; returns its length, or 0
 * when c is written as it is. */
size_t sbx_json_escape(unsigned char c, char out[7])
{
	static const char hex[] = "0123456789abcdef";

	switch (c) {
	case '"': memcpy(out, "\\\"", 3); return 2;
	case '\\': memcpy(out, "\\\\", 3); return 2;
	case '\n': memcpy(out, "\\n", 3); return 2;
	case '\t': memcpy(out, "\\t", 3); return 2;
	case '\r': memcpy(out, "\\r", 3); return 2;
	default:
		break;
	}
	if (c >= 0x20 && c != 0x7f)
		return 0;
	memcpy(out, "\\u00", 4);
	out[4] = hex[c >> 4];
	out[5] = hex[c & 15];
	out[6] = '\0';
	return 6;
}

int sbx_json_put_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[7];

	fputc('"', out);
	for (; *p; p++) {
		size_t n = sbx_json_escape(*p, esc);

		if (n)
			fwrite(esc, 1, n, out);
		else
			fputc(*p, out);
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}

/* The primitives (sbx_jr_*, internal.h) also read the probe's JSON. */
int sbx_jr_fail(struct sbx_jr *j, const char *msg)
{
	return sbx_error_set(j->err, EINVAL, "%s: %s at byte %zu", j->what, msg,
			     (size_t)(j->p - j->base));
}

void sbx_jr_ws(struct sbx_jr *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* Skip whitespace and consume c if it is next. */
bool sbx_jr_peek(struct sbx_jr *j, char c)
{
	sbx_jr_ws(j);
	if (j->p < j->end && *j->p == c) {
		j->p++;
		return true;
	}
	return false;
}

int sbx_jr_expect(struct sbx_jr *j, char c)
{
	char msg[32];

	if (sbx_jr_peek(j, c))
		return 0;
	snprintf(msg, sizeof(msg), "expected '%c'", c);
	return sbx_jr_fail(j, msg);
}

int sbx_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string into out (bounded); only the escapes our writer emits plus the
 * short JSON ones; \u limited to 0x01..0x7f (we never write more). With
 * out NULL the string is checked by the same rules and dropped (a value
 * a newer writer added). */
static int jr_string(struct sbx_jr *j, char *out, size_t size)
{
	size_t n = 0;

	if (sbx_jr_expect(j, '"'))
		return -EINVAL;
	for (;;) {
		unsigned char c;

		if (j->p >= j->end)
			return sbx_jr_fail(j, "unterminated string");
		c = (unsigned char)*j->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return sbx_jr_fail(j, "control byte in string");
		if (c == '\\') {
			if (j->p >= j->end)
				return sbx_jr_fail(j, "unterminated escape");
			switch (*j->p++) {
			case '"': c = '"'; break;
			case '\\': c = '\\'; break;
			case '/': c = '/'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u': {
				int v = 0, k, h;

				if (j->end - j->p < 4)
					return sbx_jr_fail(j, "short \\u escape");
				for (k = 0; k < 4; k++) {
					h = sbx_hexval(j->p[k]);
					if (h < 0)
						return sbx_jr_fail(j, "bad \\u escape");
					v = v * 16 + h;
				}
				j->p += 4;
				if (v < 1 || v > 0x7f)
					return sbx_jr_fail(j, "\\u escape outside 0x01-0x7f");
				c = (unsigned char)v;
				break;
			}
			default:
				return sbx_jr_fail(j, "unknown escape");
			}
		}
		/* What these readers return reaches terminals (a root reading
		 * a report an agent could write): no control character, in any
		 * spelling, and no C1 control as UTF-8 (U+0080-U+009F, which
		 * terminals may act on like ESC [). */
		if (c < 0x20 || c == 0x7f)
			return sbx_jr_fail(j, "control character in string");
		if (c == 0xc2 && j->p < j->end && (unsigned char)*j->p >= 0x80 &&
		    (unsigned char)*j->p <= 0x9f)
			return sbx_jr_fail(j, "C1 control character in string");
		if (!out)
			continue;
		if (n + 1 >= size)
			return sbx_jr_fail(j, "string too long");
		out[n++] = (char)c;
	}
	if (out)
		out[n] = '\0';
	return 0;
}

int sbx_jr_string(struct sbx_jr *j, char *out, size_t size)
{
	return jr_string(j, out, size);
}

int sbx_jr_bool(struct sbx_jr *j, bool *out)
{
	sbx_jr_ws(j);
	if (j->end - j->p >= 4 && memcmp(j->p, "true", 4) == 0) {
		j->p += 4;
		*out = true;
		return 0;
	}
	if (j->end - j->p >= 5 && memcmp(j->p, "false", 5) == 0) {
		j->p += 5;
		*out = false;
		return 0;
	}
	return sbx_jr_fail(j, "expected true or false");
}

/* A non-negative integer without sign, fraction or leading zeros. */
int sbx_jr_uint(struct sbx_jr *j, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *start;

	sbx_jr_ws(j);
	start = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		unsigned d = (unsigned)(*j->p - '0');

		if (v > (max - d) / 10)
			return sbx_jr_fail(j, "number out of range");
		v = v * 10 + d;
		j->p++;
	}
	if (j->p == start)
		return sbx_jr_fail(j, "expected a number");
	if (j->p - start > 1 && *start == '0')
		return sbx_jr_fail(j, "leading zero");
	*out = v;
	return 0;
}

/* A JSON number of any form, checked and dropped. */
static int jr_skip_number(struct sbx_jr *j)
{
	const char *d;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	d = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	if (j->p == d || (j->p - d > 1 && *d == '0'))
		return sbx_jr_fail(j, "bad number");
	if (j->p < j->end && *j->p == '.') {
		d = ++j->p;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p == d)
			return sbx_jr_fail(j, "bad number");
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		d = j->p;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p == d)
			return sbx_jr_fail(j, "bad number");
	}
	return 0;
}

static bool jr_word(struct sbx_jr *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return false;
	j->p += n;
	return true;
}

/* Any JSON value, nested at most SBX_JR_SKIP_DEPTH deep, read by the same
 * rules as the values we know (strings: no control characters) and
 * dropped. depth bounds the recursion, so the stack.
 * NOLINTNEXTLINE(misc-no-recursion) */
static int jr_skip_value(struct sbx_jr *j, unsigned depth)
{
	char c;

	sbx_jr_ws(j);
	if (j->p >= j->end)
		return sbx_jr_fail(j, "expected a value");
	c = *j->p;
	if (c == '"')
		return jr_string(j, NULL, 0);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';

		if (depth >= SBX_JR_SKIP_DEPTH)
			return sbx_jr_fail(j, "value nested too deep");
		j->p++;
		if (sbx_jr_peek(j, close))
			return 0;
		do {
			if (c == '{' && (jr_string(j, NULL, 0) || sbx_jr_expect(j, ':')))
				return -EINVAL;
			if (jr_skip_value(j, depth + 1))
				return -EINVAL;
		} while (sbx_jr_peek(j, ','));
		return sbx_jr_expect(j, close);
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return jr_skip_number(j);
	if (jr_word(j, "true") || jr_word(j, "false") || jr_word(j, "null"))
		return 0;
	return sbx_jr_fail(j, "expected a value");
}

/* An enum given by name: the index i < n for which name(i) matches. */

int sbx_jr_key(struct sbx_jr *j, const char *const *keys, size_t n, uint32_t *seen)
{
	char key[SBX_JR_KEY_MAX];
	size_t i;

	if (sbx_jr_string(j, key, sizeof(key)))
		return -EINVAL;
	if (sbx_jr_expect(j, ':'))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (strcmp(key, keys[i]) == 0) {
			if (*seen & (1u << i))
				return sbx_jr_fail(j, "duplicate key");
			*seen |= 1u << i;
			return (int)i;
		}
	}
	if (j->skip_unknown)
		return (int)n;
	return sbx_jr_fail(j, "unknown key");
}

int sbx_jr_object(struct sbx_jr *j, const char *const *keys, size_t n, const char *what,
		  int (*field)(struct sbx_jr *j, int k, void *ctx), void *ctx)
{
	return sbx_jr_object_opt(j, keys, n, 0, what, field, ctx);
}

int sbx_jr_object_opt(struct sbx_jr *j, const char *const *keys, size_t n, uint32_t optional,
		      const char *what, int (*field)(struct sbx_jr *j, int k, void *ctx),
		      void *ctx)
{
	char msg[96];
	uint32_t seen = 0;
	int k, rc;

	if (sbx_jr_expect(j, '{'))
		return -EINVAL;
	do {
		k = sbx_jr_key(j, keys, n, &seen);
		if (k < 0)
			return k;
		/* A key this reader does not know (only with skip_unknown):
		 * a newer writer's, its value read and dropped. */
		if (k == (int)n) {
			if (jr_skip_value(j, 0))
				return -EINVAL;
			continue;
		}
		rc = field(j, k, ctx);
		if (rc)
			return rc < 0 ? rc : -EINVAL;
	} while (sbx_jr_peek(j, ','));
	if (sbx_jr_expect(j, '}'))
		return -EINVAL;
	for (k = 0; k < (int)n; k++) {
		if ((seen | optional) & (1u << k))
			continue;
		snprintf(msg, sizeof(msg), "%s%smissing key \"%s\"", what ? what : "",
			 what ? ": " : "", keys[k]);
		return sbx_jr_fail(j, msg);
	}
	return 0;
}
