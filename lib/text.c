/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * text.c — bytes nobody vouches for, on their way to a person or a strict
 * reader: strict UTF-8, the scrub of a report's fields, and the one shown
 * form every printer uses.
 *
 * A command word, a path or a host name may hold any byte but NUL. On a
 * terminal, C0 controls and DEL act (ESC starts a sequence), and so do the
 * C1 controls U+0080-U+009F: as UTF-8 (0xc2 0x9b is CSI) on a terminal in
 * UTF-8 mode, as the single bytes 0x80-0x9f on one that is not. A strict
 * JSON reader (RFC 8259 section 8.1) refuses a document that is not UTF-8.
 * So what is shown keeps printable ASCII and UTF-8 characters from U+00A0
 * up, and writes every other byte as the four characters \xNN, the same
 * spelling the log grammar uses (log.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

size_t sbx_utf8_char(const unsigned char *s, size_t avail, uint32_t *cp)
{
	unsigned char c;
	size_t n, k;
	uint32_t v;

	if (!avail)
		return 0;
	c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
	} else {
		return 0;	/* a continuation byte, 0xc0/0xc1, above 0xf4 */
	}
	if (avail < n)
		return 0;
	for (k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[k] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates, beyond U+10FFFF. */
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) ||
	    (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff)
		return 0;
	*cp = v;
	return n;
}

void sbx_text_scrub(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			p[0] = '?';
			p[1] = '?';
			p++;
		}
	}
}

bool sbx_text_is_scrubbed(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return false;
	return true;
}

size_t sbx_text_step(const char *s, size_t avail, bool *as_is)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t n;

	*as_is = false;
	if (!avail)
		return 0;
	if (p[0] >= 0x20 && p[0] < 0x7f) {
		*as_is = true;
		return 1;
	}
	if (p[0] < 0x80)
		return 1;	/* C0, DEL */
	n = sbx_utf8_char(p, avail, &cp);
	if (n && cp >= 0xa0) {
		*as_is = true;
		return n;
	}
	/* A C1 control, or not UTF-8: one byte at a time, so what follows
	 * a stray byte is read afresh. */
	return 1;
}

bool sbx_text_is_shown(const char *s)
{
	size_t len = strlen(s), n;
	bool as_is;

	for (size_t i = 0; i < len; i += n) {
		n = sbx_text_step(s + i, len - i, &as_is);
		if (!as_is)
			return false;
	}
	return true;
}

int sbx_text_show(char *dst, size_t size, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(s), used = 0, n;
	bool as_is;

	if (!size)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < len; i += n) {
		n = sbx_text_step(s + i, len - i, &as_is);
		/* Whole units only: never half a character or half an escape. */
		if (used + (as_is ? n : 4) >= size) {
			dst[used] = '\0';
			return -ENAMETOOLONG;
		}
		if (as_is) {
			memcpy(dst + used, s + i, n);
			used += n;
		} else {
			unsigned char c = (unsigned char)s[i];

			dst[used++] = '\\';
			dst[used++] = 'x';
			dst[used++] = hex[c >> 4];
			dst[used++] = hex[c & 15];
		}
	}
	dst[used] = '\0';
	return 0;
}

int sbx_text_put(FILE *out, const char *s, size_t max)
{
	size_t len = strnlen(s, max), n;
	bool as_is;

	for (size_t i = 0; i < len; i += n) {
		n = sbx_text_step(s + i, len - i, &as_is);
		if (as_is)
			fwrite(s + i, 1, n, out);
		else
			fprintf(out, "\\x%02x", (unsigned char)s[i]);
	}
	return ferror(out) ? -EIO : 0;
}
