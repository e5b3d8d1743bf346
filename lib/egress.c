/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * egress.c — the policy of network = proxy and the parsers of
 * agent-sandbox-egressd: egress_allow entries, matching, the class of a
 * resolved address, HTTP CONNECT and SOCKS5 requests, and the server name
 * of a TLS ClientHello. Pure functions over buffers: every byte here comes
 * from a sandboxed client (or from the admin's config), so each parser is
 * bounded, needs no NUL terminator, and has a fuzz target in tests/fuzz/.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "internal.h"
#include "sha256.h"

static char lower(char c)
{
	if (c >= 'A' && c <= 'Z')
		return (char)(c + ('a' - 'A'));
	return c;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An address in inet_ntop's form, so that "::0:1" and "::1" or an entry
 * and a request compare as strings. */
static int literal_norm(int af, const char *s, char *out, size_t size)
{
	unsigned char a[16];
	char buf[INET6_ADDRSTRLEN];

	if (inet_pton(af, s, a) != 1 || !inet_ntop(af, a, buf, sizeof(buf)))
		return -EINVAL;
	return sbx_strlcpy(out, size, buf) < 0 ? -EINVAL : 0;
}

/* Labels of [a-z0-9_-], 1-63 bytes, no '-' at either end; at most 253
 * bytes. '_' is not a hostname character (RFC 1123) but DNS names carry
 * it (_acme-challenge, some registries' CNAMEs) and it is harmless here. */
static bool name_ok(const char *s, size_t n)
{
	size_t i, lab = 0, last = 0;

	if (n == 0 || n > 253)
		return false;
	for (i = 0; i <= n; i++) {
		char c = '.';

		if (i < n)
			c = s[i];

		if (c == '.') {
			if (lab == 0 || lab > 63 || s[i - 1] == '-' || s[i - lab] == '-')
				return false;
			last = i - lab;
			lab = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_'))
			return false;
		lab++;
	}
	/* getaddrinfo reads "127.1", "0x7f.1" and "2130706433" as IPv4
	 * addresses (inet_aton), and no top-level domain starts with a
	 * digit: such a "name" is an address in disguise. */
	return !is_digit(s[last]);
}

int sbx_egress_host_norm(const char *in, size_t len, bool bracketed,
			 char *out, size_t size, bool *literal)
{
	char tmp[SBX_EGRESS_HOST_MAX];
	size_t i;

	if (!in || len == 0 || len >= sizeof(tmp) || memchr(in, '\0', len))
		return -EINVAL;
	if (in[0] == '[') {
		if (!bracketed || len < 3 || in[len - 1] != ']')
			return -EINVAL;
		memcpy(tmp, in + 1, len - 2);
		tmp[len - 2] = '\0';
		if (literal_norm(AF_INET6, tmp, out, size) < 0)
			return -EINVAL;
		*literal = true;
		return 0;
	}
	for (i = 0; i < len; i++)
		tmp[i] = lower(in[i]);
	tmp[len] = '\0';
	if (memchr(tmp, ':', len)) {
		if (literal_norm(AF_INET6, tmp, out, size) < 0)
			return -EINVAL;
		*literal = true;
		return 0;
	}
	/* The root's trailing dot names the same host. */
	if (len > 1 && tmp[len - 1] == '.')
		tmp[--len] = '\0';
	if (literal_norm(AF_INET, tmp, out, size) == 0) {
		*literal = true;
		return 0;
	}
	if (!name_ok(tmp, len) || sbx_strlcpy(out, size, tmp) < 0)
		return -EINVAL;
	*literal = false;
	return 0;
}

/* A port: decimal, 1-65535, no sign, no leading zero. */
static int port_parse(const char *s, size_t n, uint16_t *out)
{
	unsigned v = 0;
	size_t i;

	if (n == 0 || n > 5 || s[0] == '0')
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*out = (uint16_t)v;
	return 0;
}

/* Split "HOST:PORT" or "[V6]:PORT" (port_required) or those without the
 * port: host is [s, s + *hlen), the port follows. */
static int split_host_port(const char *s, size_t n, bool port_required,
			   size_t *hlen, uint16_t *port)
{
	const char *colon = NULL;
	size_t i;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close)
			return -EINVAL;
		*hlen = (size_t)(close - s) + 1;
		if (*hlen == n) {
			*port = SBX_EGRESS_DEFAULT_PORT;
			return port_required ? -EINVAL : 0;
		}
		if (s[*hlen] != ':')
			return -EINVAL;
		return port_parse(s + *hlen + 1, n - *hlen - 1, port);
	}
	for (i = 0; i < n; i++)
		if (s[i] == ':') {
			if (colon) {
				/* A bare IPv6 address: no port possible. */
				*hlen = n;
				*port = SBX_EGRESS_DEFAULT_PORT;
				return port_required ? -EINVAL : 0;
			}
			colon = s + i;
		}
	if (!colon) {
		*hlen = n;
		*port = SBX_EGRESS_DEFAULT_PORT;
		return port_required ? -EINVAL : 0;
	}
	*hlen = (size_t)(colon - s);
	return port_parse(colon + 1, n - *hlen - 1, port);
}

int sbx_egress_entry_parse(const char *s, struct sbx_egress_entry *out,
			   struct sbx_error *err)
{
	struct sbx_egress_entry e;
	size_t n, hlen;
	bool wild;

	memset(&e, 0, sizeof(e));
	if (!s || !out)
		return sbx_error_set(err, EINVAL, "egress_allow: NULL entry");
	n = strlen(s);
	if (n == 0 || n >= SBX_EGRESS_HOST_MAX + 6)
		return sbx_error_set(err, EINVAL, "egress_allow '%.64s': empty or longer than %d bytes",
				     s, SBX_EGRESS_HOST_MAX + 5);
	if (split_host_port(s, n, false, &hlen, &e.port) < 0)
		return sbx_error_set(err, EINVAL,
				     "egress_allow '%s': bad port (HOST[:PORT], PORT 1-65535, IPv6 as [ADDR]:PORT)",
				     s);
	wild = hlen >= 2 && s[0] == '*' && s[1] == '.';
	if (wild) {
		if (sbx_egress_host_norm(s + 2, hlen - 2, false, e.host + 2,
					 sizeof(e.host) - 2, &e.literal) < 0 || e.literal)
			return sbx_error_set(err, EINVAL,
					     "egress_allow '%s': '*.' must be followed by a host name (ASCII letters, digits, '-', '_')",
					     s);
		e.host[0] = '*';
		e.host[1] = '.';
		e.wildcard = true;
	} else if (sbx_egress_host_norm(s, hlen, true, e.host, sizeof(e.host), &e.literal) < 0) {
		return sbx_error_set(err, EINVAL,
				     "egress_allow '%s': not a host name (ASCII labels of letters, digits, '-', '_'; no IDNA), '*.NAME' or an IP address",
				     s);
	}
	*out = e;
	return 0;
}

int sbx_egress_entry_format(const struct sbx_egress_entry *e, char *buf, size_t size)
{
	bool v6 = e->literal && strchr(e->host, ':');

	return sbx_snprintf(buf, size, "%s%s%s:%u", v6 ? "[" : "", e->host, v6 ? "]" : "",
			    (unsigned)e->port);
}

/* name is a strict subdomain of suffix. */
static bool under(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s + 1 && name[n - s - 1] == '.' && strcmp(name + n - s, suffix) == 0;
}

bool sbx_egress_entry_matches(const struct sbx_egress_entry *e,
			      const struct sbx_egress_target *t)
{
	if (e->port != t->port || e->literal != t->literal)
		return false;
	if (e->wildcard)
		return under(t->host, e->host + 2);
	return strcmp(e->host, t->host) == 0;
}

bool sbx_egress_entry_covers(const struct sbx_egress_entry *a,
			     const struct sbx_egress_entry *b)
{
	if (a->port != b->port || a->literal != b->literal)
		return false;
	if (!a->wildcard)
		return !b->wildcard && strcmp(a->host, b->host) == 0;
	if (b->wildcard)
		return strcmp(a->host, b->host) == 0 || under(b->host + 2, a->host + 2);
	return under(b->host, a->host + 2);
}

/* ---- address classes ------------------------------------------------------ */

static const char *const class_names[] = {
	"public", "unspecified", "loopback", "link-local", "private", "shared",
	"metadata", "multicast", "broadcast", "reserved",
};

const char *sbx_egress_addr_class_name(enum sbx_egress_addr_class c)
{
	return (size_t)c < ARRAY_SIZE(class_names) ? class_names[c] : "?";
}

static bool in4(uint32_t a, uint32_t net, unsigned bits)
{
	uint32_t mask = bits ? ~0u << (32 - bits) : 0;

	return (a & mask) == net;
}

#define V4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

static enum sbx_egress_addr_class classify4(uint32_t a)
{
	/* The cloud metadata services first: each sits inside a wider
	 * class below, but the log should say what was asked for. AWS,
	 * GCP, Azure, OpenStack: 169.254.169.254; Alibaba 100.100.100.200;
	 * Oracle 192.0.0.192. */
	if (a == V4(169, 254, 169, 254) || a == V4(100, 100, 100, 200) ||
	    a == V4(192, 0, 0, 192))
		return SBX_EGRESS_ADDR_METADATA;
	if (a == 0)
		return SBX_EGRESS_ADDR_UNSPECIFIED;
	if (a == V4(255, 255, 255, 255))
		return SBX_EGRESS_ADDR_BROADCAST;
	if (in4(a, V4(127, 0, 0, 0), 8))
		return SBX_EGRESS_ADDR_LOOPBACK;
	if (in4(a, V4(169, 254, 0, 0), 16))
		return SBX_EGRESS_ADDR_LINK_LOCAL;
	if (in4(a, V4(10, 0, 0, 0), 8) || in4(a, V4(172, 16, 0, 0), 12) ||
	    in4(a, V4(192, 168, 0, 0), 16))
		return SBX_EGRESS_ADDR_PRIVATE;
	if (in4(a, V4(100, 64, 0, 0), 10))
		return SBX_EGRESS_ADDR_SHARED;
	if (in4(a, V4(224, 0, 0, 0), 4))
		return SBX_EGRESS_ADDR_MULTICAST;
	/* "This network", IETF protocol assignments, benchmarking, the
	 * documentation nets and class E: no public service lives there,
	 * and some (0/8 reaches the local host on Linux) are local. */
	if (in4(a, V4(0, 0, 0, 0), 8) || in4(a, V4(192, 0, 0, 0), 24) ||
	    in4(a, V4(198, 18, 0, 0), 15) || in4(a, V4(192, 0, 2, 0), 24) ||
	    in4(a, V4(198, 51, 100, 0), 24) || in4(a, V4(203, 0, 113, 0), 24) ||
	    in4(a, V4(240, 0, 0, 0), 4))
		return SBX_EGRESS_ADDR_RESERVED;
	return SBX_EGRESS_ADDR_PUBLIC;
}

static uint32_t load4(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Forms that carry an IPv4 address: the kernel connects a dual-stack
 * socket to ::ffff:127.0.0.1 as to 127.0.0.1, a NAT64 gateway turns
 * 64:ff9b::a9fe:a9fe into 169.254.169.254, and the deprecated compatible
 * form ::a.b.c.d and 6to4 2002:AABB:CCDD:: are still routed by some
 * stacks. Where the IPv4 address sits in a: 12 (mapped, NAT64,
 * compatible), 2 (6to4), 0 for none. */
static size_t v4_offset(const uint8_t *a)
{
	static const uint8_t zero[12], mapped[12] = { [10] = 0xff, [11] = 0xff },
		nat64[12] = { 0x00, 0x64, 0xff, 0x9b };

	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0 || memcmp(a, zero, 12) == 0)
		return 12;
	if (a[0] == 0x20 && a[1] == 0x02)
		return 2;
	return 0;
}

bool sbx_egress_addr_v4_carried(const uint8_t a[16], uint8_t v4[4])
{
	size_t off = v4_offset(a);

	if (off)
		memcpy(v4, a + off, 4);
	return off != 0;
}

static enum sbx_egress_addr_class classify6(const uint8_t *a)
{
	static const uint8_t zero[16],
		ec2_metadata[16] = { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 };
	size_t off;

	if (memcmp(a, zero, 16) == 0)
		return SBX_EGRESS_ADDR_UNSPECIFIED;
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return SBX_EGRESS_ADDR_LOOPBACK;
	off = v4_offset(a);
	if (off == 12)
		return classify4(load4(a + 12));
	if (off == 2) {
		/* 6to4 is a prefix of its own too: a public IPv4 address
		 * in it leaves the IPv6 classes below to judge. */
		enum sbx_egress_addr_class c = classify4(load4(a + 2));

		if (c != SBX_EGRESS_ADDR_PUBLIC)
			return c;
	}
	if (memcmp(a, ec2_metadata, 16) == 0)
		return SBX_EGRESS_ADDR_METADATA;
	if (a[0] == 0xff)
		return SBX_EGRESS_ADDR_MULTICAST;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return SBX_EGRESS_ADDR_LINK_LOCAL;
	/* fc00::/7 unique local, fec0::/10 the old site-local, and the
	 * local-use NAT64 prefix 64:ff9b:1::/48. */
	if ((a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) ||
	    (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b &&
	     a[4] == 0x00 && a[5] == 0x01))
		return SBX_EGRESS_ADDR_PRIVATE;
	/* Documentation 2001:db8::/32 and discard 100::/64. */
	if ((a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) ||
	    (a[0] == 0x01 && memcmp(a + 1, zero, 7) == 0))
		return SBX_EGRESS_ADDR_RESERVED;
	return SBX_EGRESS_ADDR_PUBLIC;
}

enum sbx_egress_addr_class sbx_egress_addr_classify(int family, const void *addr)
{
	if (family == AF_INET)
		return classify4(load4(addr));
	if (family == AF_INET6)
		return classify6(addr);
	return SBX_EGRESS_ADDR_RESERVED;
}

/* ---- HTTP CONNECT ------------------------------------------------------------- */

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A header line: NAME ":" value, NAME a token, the value visible ASCII,
 * obs-text, space or tab (RFC 9110 5.5; no obs-fold). */
static bool header_ok(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && tchar(s[i]))
		i++;
	if (i == 0 || i >= n || s[i] != ':')
		return false;
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c != '\t' && (c < 0x20 || c == 0x7f))
			return false;
	}
	return true;
}

int sbx_egress_http_connect_parse(const char *buf, size_t len, size_t *used,
				  struct sbx_egress_target *out)
{
	struct sbx_egress_target t;
	const char *end, *line, *sp1, *sp2, *eol;
	size_t n = len < SBX_EGRESS_HTTP_MAX ? len : SBX_EGRESS_HTTP_MAX;
	size_t hlen;

	memset(&t, 0, sizeof(t));
	end = memmem(buf, n, "\r\n\r\n", 4);
	if (!end)
		return len >= SBX_EGRESS_HTTP_MAX ? -E2BIG : -EAGAIN;
	eol = memmem(buf, (size_t)(end - buf) + 2, "\r\n", 2);
	/* METHOD SP request-target SP HTTP-version */
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	if (!sp1 || sp1 == buf)
		return -EINVAL;
	for (line = buf; line < sp1; line++)
		if (!tchar(*line))
			return -EINVAL;
	if ((size_t)(sp1 - buf) != 7 || memcmp(buf, "CONNECT", 7) != 0)
		return -EOPNOTSUPP;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1)
		return -EINVAL;
	if (!((eol - sp2 - 1 == 8) && (memcmp(sp2 + 1, "HTTP/1.1", 8) == 0 ||
					memcmp(sp2 + 1, "HTTP/1.0", 8) == 0)))
		return -EINVAL;
	/* CONNECT's target is authority-form: host ":" port, the port
	 * required (RFC 9110 9.3.6). */
	if (split_host_port(sp1 + 1, (size_t)(sp2 - sp1 - 1), true, &hlen, &t.port) < 0 ||
	    sbx_egress_host_norm(sp1 + 1, hlen, true, t.host, sizeof(t.host), &t.literal) < 0)
		return -EINVAL;
	for (line = eol + 2; line < end + 2; line = eol + 2) {
		eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
		if (!eol || memchr(line, '\r', (size_t)(eol - line)) ||
		    memchr(line, '\n', (size_t)(eol - line)) ||
		    !header_ok(line, (size_t)(eol - line)))
			return -EINVAL;
	}
	*used = (size_t)(end - buf) + 4;
	*out = t;
	return 0;
}

/* ---- SOCKS5 (RFC 1928) ---------------------------------------------------- */

int sbx_egress_socks5_greeting_parse(const uint8_t *buf, size_t len, size_t *used,
				     bool *noauth)
{
	size_t i;

	if (len < 2)
		return len && buf[0] != 5 ? -EINVAL : -EAGAIN;
	if (buf[0] != 5 || buf[1] == 0)
		return -EINVAL;
	if (len < 2u + buf[1])
		return -EAGAIN;
	*noauth = false;
	for (i = 0; i < buf[1]; i++)
		if (buf[2 + i] == 0)
			*noauth = true;
	*used = 2u + buf[1];
	return 0;
}

int sbx_egress_socks5_request_parse(const uint8_t *buf, size_t len, size_t *used,
				    struct sbx_egress_target *out)
{
	struct sbx_egress_target t;
	char addr[INET6_ADDRSTRLEN];
	size_t need;

	memset(&t, 0, sizeof(t));
	if (len < 4)
		return (len >= 1 && buf[0] != 5) || (len >= 3 && buf[2] != 0) ? -EINVAL : -EAGAIN;
	if (buf[0] != 5 || buf[2] != 0)
		return -EINVAL;
	if (buf[1] != 1)
		return -EOPNOTSUPP;
	switch (buf[3]) {
	case 1:
		need = 4 + 4 + 2;
		break;
	case 3:
		if (len < 5)
			return -EAGAIN;
		if (buf[4] == 0)
			return -EINVAL;
		need = 4 + 1 + buf[4] + 2;
		break;
	case 4:
		need = 4 + 16 + 2;
		break;
	default:
		return -EAFNOSUPPORT;
	}
	if (len < need)
		return -EAGAIN;
	t.port = (uint16_t)((buf[need - 2] << 8) | buf[need - 1]);
	if (t.port == 0)
		return -EINVAL;
	if (buf[3] == 3) {
		if (sbx_egress_host_norm((const char *)buf + 5, buf[4], false, t.host,
					 sizeof(t.host), &t.literal) < 0)
			return -EINVAL;
	} else {
		int af = buf[3] == 1 ? AF_INET : AF_INET6;

		if (!inet_ntop(af, buf + 4, addr, sizeof(addr)) ||
		    sbx_strlcpy(t.host, sizeof(t.host), addr) < 0)
			return -EINVAL;
		t.literal = true;
	}
	*used = need;
	*out = t;
	return 0;
}

/* ---- TLS ClientHello server name (RFC 8446 4.1.2, RFC 6066 3) ------------ */

struct rd {
	const uint8_t *p;
	size_t n;
};

static bool take(struct rd *r, size_t n, struct rd *sub)
{
	if (r->n < n)
		return false;
	if (sub) {
		sub->p = r->p;
		sub->n = n;
	}
	r->p += n;
	r->n -= n;
	return true;
}

static bool u8(struct rd *r, size_t *v)
{
	if (r->n < 1)
		return false;
	*v = r->p[0];
	return take(r, 1, NULL);
}

static bool u16(struct rd *r, size_t *v)
{
	if (r->n < 2)
		return false;
	*v = ((size_t)r->p[0] << 8) | r->p[1];
	return take(r, 2, NULL);
}

/* The server_name extension's body: one host_name entry. */
static int sni_ext(struct rd ext, char *out, size_t size)
{
	struct rd list, name;
	size_t n, type;
	bool literal, found = false;

	if (!u16(&ext, &n) || !take(&ext, n, &list) || ext.n || n == 0)
		return -EINVAL;
	while (list.n) {
		if (!u8(&list, &type) || !u16(&list, &n) || !take(&list, n, &name) || n == 0)
			return -EINVAL;
		if (type != 0)
			continue;
		/* RFC 6066: at most one name of a type, and never an
		 * address. */
		if (found || sbx_egress_host_norm((const char *)name.p, name.n, false, out,
						  size, &literal) < 0 || literal)
			return -EINVAL;
		found = true;
	}
	return found ? 0 : -EINVAL;
}

/* Extensions that encrypt the real ClientHello, server name included:
 * encrypted_client_hello (RFC 9849: 0xfe0d; its drafts 08 to 12 used
 * 0xfe08 to 0xfe0c, which nothing else uses) and the older ESNI (0xffce).
 * The server_name beside them is the front end's public name, not the host
 * the front end serves (docs/design.md 13.4). */
static bool hides_name(size_t type)
{
	return (type >= 0xfe08 && type <= 0xfe0d) || type == 0xffce;
}

static int client_hello(struct rd m, char *out, size_t size)
{
	struct rd exts, ext;
	size_t n, type;
	bool seen = false, hidden = false;
	int r = -ENOENT;

	if (!take(&m, 2 + 32, NULL) || !u8(&m, &n) || n > 32 || !take(&m, n, NULL) ||
	    !u16(&m, &n) || n < 2 || n % 2 || !take(&m, n, NULL) ||
	    !u8(&m, &n) || n < 1 || !take(&m, n, NULL))
		return -EINVAL;
	if (m.n == 0)
		return -ENOENT;		/* no extensions at all */
	if (!u16(&m, &n) || !take(&m, n, &exts) || m.n)
		return -EINVAL;
	while (exts.n) {
		if (!u16(&exts, &type) || !u16(&exts, &n) || !take(&exts, n, &ext))
			return -EINVAL;
		if (hides_name(type))
			hidden = true;
		if (type != 0)
			continue;
		if (seen)
			return -EINVAL;	/* RFC 8446 4.2: no extension twice */
		seen = true;
		r = sni_ext(ext, out, size);
		if (r < 0)
			return r;
	}
	return hidden ? -EOPNOTSUPP : r;
}

int sbx_egress_tls_sni(const uint8_t *buf, size_t len, char *out, size_t size)
{
	/* The handshake message may span records (a post-quantum key share
	 * makes a ClientHello of a few KiB); its fragments are joined here. */
	uint8_t hs[SBX_EGRESS_TLS_MAX + 4];
	size_t have = 0, off = 0, need = 0;
	struct rd m;

	for (;;) {
		size_t rlen;

		if (len - off < 5) {
			/* Refuse early what cannot become a handshake record. */
			if (len > off && buf[off] != 0x16)
				return -EINVAL;
			if (len > off + 1 && buf[off + 1] != 3)
				return -EINVAL;
			return -EAGAIN;
		}
		rlen = ((size_t)buf[off + 3] << 8) | buf[off + 4];
		if (buf[off] != 0x16 || buf[off + 1] != 3 || rlen == 0 || rlen > 16384)
			return -EINVAL;
		if (len - off - 5 < rlen)
			return -EAGAIN;
		if (have + rlen > sizeof(hs))
			return -EINVAL;
		memcpy(hs + have, buf + off + 5, rlen);
		have += rlen;
		off += 5 + rlen;
		if (have >= 4 && !need) {
			if (hs[0] != 1)
				return -EINVAL;	/* not a ClientHello */
			need = 4 + (((size_t)hs[1] << 16) | ((size_t)hs[2] << 8) | hs[3]);
			if (need > sizeof(hs))
				return -EINVAL;
		}
		if (need && have >= need)
			break;
	}
	/* Bytes of the next message in the same record: not a ClientHello
	 * alone, as RFC 8446 5.1 requires before a key change. */
	if (have != need)
		return -EINVAL;
	m.p = hs + 4;
	m.n = need - 4;
	return client_hello(m, out, size);
}

/* ---- the bridge's messages and the list they name ------------------------ */

static bool hex_string(const char *s, size_t max, bool exact)
{
	size_t n = strnlen(s, max);

	if (n == max || (exact && n != max - 1 && n != 0))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

int sbx_egress_hello_parse(const uint8_t *buf, size_t len, struct sbx_egress_hello *out)
{
	struct sbx_egress_hello h;

	if (len < sizeof(h))
		return memcmp(buf, SBX_EGRESS_HELLO_MAGIC, len < 4 ? len : 4) == 0 ? -EAGAIN :
		       -EINVAL;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, SBX_EGRESS_HELLO_MAGIC, 4) != 0 ||
	    h.version != SBX_EGRESS_HELLO_VERSION ||
	    (h.kind != SBX_EGRESS_HELLO_CONNECT && h.kind != SBX_EGRESS_HELLO_PING) ||
	    !hex_string(h.session, sizeof(h.session), false) ||
	    !hex_string(h.list_hash, sizeof(h.list_hash), true))
		return -EINVAL;
	*out = h;
	return 0;
}

void sbx_egress_list_format(const struct sbx_profile *p, char *buf, size_t size,
			    bool *truncated)
{
	size_t used = 0;

	*truncated = false;
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < p->n_egress; i++) {
		char one[SBX_EGRESS_HOST_MAX + 8];
		size_t n;

		if (sbx_egress_entry_format(&p->egress[i], one, sizeof(one)) != 0)
			continue;
		n = strlen(one) + (used ? 2 : 0);
		if (used + n + 1 > size) {
			*truncated = true;
			return;
		}
		snprintf(buf + used, size - used, "%s%s", used ? ", " : "", one);
		used += n;
	}
}

void sbx_egress_list_hash(const struct sbx_profile *p, char out[65])
{
	struct sbx_sha256 c;
	uint8_t d[SBX_SHA256_DIGEST];

	sbx_sha256_init(&c);
	for (size_t i = 0; i < p->n_egress; i++) {
		char one[SBX_EGRESS_HOST_MAX + 8];

		if (sbx_egress_entry_format(&p->egress[i], one, sizeof(one)) != 0)
			continue;
		sbx_sha256_update(&c, one, strlen(one));
		sbx_sha256_update(&c, "\n", 1);
	}
	sbx_sha256_final(&c, d);
	sbx_sha256_to_hex(d, out);
}
