/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON for the report, the probe and the profile hash: one string escaper, and the strict reader's primitives. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The escape table of the profile's canonical form (describe.c), which is
 * hashed and so must stay one to one: quote and backslash, \n \t \r,
 * other control bytes and DEL as \u00XX; bytes >= 0x80 are the caller's.
 * out gets the escape; returns its length, or 0 when c is written as it
 * is. */
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

/* Every other string this tree writes as JSON (the report, the probe, the
 * admin verbs' --json) goes out in its shown form (sbx_text_show): strict
 * UTF-8 that a strict reader takes, no control character in the text or
 * in what it decodes to, so a tool that prints a value (jq -r) sends a
 * terminal nothing it acts on. Only quote and backslash need escaping. */
int sbx_json_put_string(FILE *out, const char *s)
{
	size_t len = strlen(s), n;
	bool as_is;

	fputc('"', out);
	for (size_t i = 0; i < len; i += n) {
		n = sbx_text_step(s + i, len - i, &as_is);
		if (!as_is)
			fprintf(out, "\\\\x%02x", (unsigned char)s[i]);
		else if (s[i] == '"' || s[i] == '\\')
			fprintf(out, "\\%c", s[i]);
		else
			fwrite(s + i, 1, n, out);
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}

/* The bytes of s as lower-case hex, in quotes: the exact form beside a
 * shown one (the report's *_hex keys). */
int sbx_json_put_hex(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fprintf(out, "%02x", *p);
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

/* Four hex digits of a \u escape at j->p, or -1. */
static long jr_hex4(struct sbx_jr *j)
{
	long v = 0;

	if (j->end - j->p < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		int h = sbx_hexval(j->p[k]);

		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	j->p += 4;
	return v;
}

/* The code point of a \u escape (j->p after the 'u') into *cp, a UTF-16
 * surrogate pair taken together. */
static int jr_escape_u(struct sbx_jr *j, uint32_t *cp)
{
	long v = jr_hex4(j), lo;

	if (v < 0)
		return sbx_jr_fail(j, "bad \\u escape");
	if (v >= 0xdc00 && v <= 0xdfff)
		return sbx_jr_fail(j, "unpaired surrogate in \\u escape");
	if (v >= 0xd800 && v <= 0xdbff) {
		if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
			return sbx_jr_fail(j, "unpaired surrogate in \\u escape");
		j->p += 2;
		lo = jr_hex4(j);
		if (lo < 0xdc00 || lo > 0xdfff)
			return sbx_jr_fail(j, "unpaired surrogate in \\u escape");
		v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
	}
	*cp = (uint32_t)v;
	return 0;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * A string into out (bounded), by RFC 8259 and more strictly: the text
 * is strict UTF-8 (sbx_utf8_char), any escape may be used (\u with
 * surrogate pairs, as other writers spell text), and what it decodes to
 * holds no control character. What these readers return reaches
 * terminals (a root reading a report an agent could write): no C0
 * control, DEL or C1 control (U+0080-U+009F, which terminals may act on
 * like ESC [), in any spelling. With out NULL the string is checked by the
 * same rules and dropped (a value a newer writer added).
 */
static int jr_string(struct sbx_jr *j, char *out, size_t size)
{
	size_t n = 0;

	if (sbx_jr_expect(j, '"'))
		return -EINVAL;
	for (;;) {
		char buf[4];
		size_t len = 1;
		uint32_t cp;

		if (j->p >= j->end)
			return sbx_jr_fail(j, "unterminated string");
		cp = (unsigned char)*j->p;
		buf[0] = *j->p++;
		if (cp == '"')
			break;
		if (cp == '\\') {
			if (j->p >= j->end)
				return sbx_jr_fail(j, "unterminated escape");
			switch (*j->p++) {
			case '"': cp = '"'; break;
			case '\\': cp = '\\'; break;
			case '/': cp = '/'; break;
			case 'b': cp = '\b'; break;
			case 'f': cp = '\f'; break;
			case 'n': cp = '\n'; break;
			case 'r': cp = '\r'; break;
			case 't': cp = '\t'; break;
			case 'u':
				if (jr_escape_u(j, &cp))
					return -EINVAL;
				break;
			default:
				return sbx_jr_fail(j, "unknown escape");
			}
			len = utf8_encode(cp, buf);
		} else if (cp >= 0x80) {
			len = sbx_utf8_char((const unsigned char *)j->p - 1,
					    (size_t)(j->end - j->p) + 1, &cp);
			if (!len)
				return sbx_jr_fail(j, "invalid UTF-8 in string");
			memcpy(buf, j->p - 1, len);
			j->p += len - 1;
		}
		if (cp < 0x20 || cp == 0x7f)
			return sbx_jr_fail(j, "control character in string");
		if (cp >= 0x80 && cp <= 0x9f)
			return sbx_jr_fail(j, "C1 control character in string");
		if (!out)
			continue;
		if (n + len >= size)
			return sbx_jr_fail(j, "string too long");
		memcpy(out + n, buf, len);
		n += len;
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
