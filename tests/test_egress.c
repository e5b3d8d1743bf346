/* SPDX-License-Identifier: BSD-3-Clause */
/* The egress policy and parsers (lib/egress.c): entries, matching, address classes, requests, SNI. */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testlib.h"

static struct sbx_egress_entry entry(const char *s)
{
	struct sbx_egress_entry e;
	struct sbx_error err = { 0 };

	if (sbx_egress_entry_parse(s, &e, &err) != 0)
		fail_msg("entry '%s': %s", s, err.msg);
	return e;
}

static struct sbx_egress_target target(const char *host, uint16_t port)
{
	struct sbx_egress_target t = { .port = port };

	assert_int_equal(sbx_egress_host_norm(host, strlen(host), true, t.host, sizeof(t.host),
					      &t.literal), 0);
	return t;
}

static void test_entry_parse(void **state)
{
	struct sbx_egress_entry e;
	struct sbx_error err = { 0 };
	char buf[SBX_EGRESS_HOST_MAX + 16];
	static const char *const bad[] = {
		"", ":443", "example.org:", "example.org:0", "example.org:65536",
		"example.org:044", "example.org:+1", "example.org:44x", "exa mple.org",
		"-a.example.org", "a-.example.org", "a..b", ".", "*", "*.", "*.*.org",
		"a.*.org", "*.127.0.0.1", "ex\xc3\xa4mple.org", "127.1", "0x7f.1", "2130706433",
		"host.123", "[::1", "[::1]x", "[::1]:", "[example.org]:443", "::1:443:x",
		"fe80::1%eth0", "[1.2.3.4]:443", "example.org:443:1",
	};
	size_t i;

	(void)state;
	e = entry("Registry.NPMjs.org.");
	assert_string_equal(e.host, "registry.npmjs.org");
	assert_int_equal(e.port, 443);
	assert_false(e.wildcard);
	assert_false(e.literal);
	assert_int_equal(sbx_egress_entry_format(&e, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "registry.npmjs.org:443");

	e = entry("*.Example.org:8443");
	assert_string_equal(e.host, "*.example.org");
	assert_int_equal(e.port, 8443);
	assert_true(e.wildcard);

	e = entry("127.0.0.1:18443");
	assert_true(e.literal);
	assert_string_equal(e.host, "127.0.0.1");
	e = entry("[::0:1]:8080");
	assert_true(e.literal);
	assert_string_equal(e.host, "::1");
	assert_int_equal(e.port, 8080);
	assert_int_equal(sbx_egress_entry_format(&e, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "[::1]:8080");
	e = entry("fd00:ec2::254");	/* bare IPv6: no port, 443 */
	assert_int_equal(e.port, 443);
	assert_string_equal(e.host, "fd00:ec2::254");
	e = entry("_acme.x-y.example.org:65535");
	assert_int_equal(e.port, 65535);

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		memset(&err, 0, sizeof(err));
		if (sbx_egress_entry_parse(bad[i], &e, &err) != -EINVAL)
			fail_msg("entry '%s' accepted", bad[i]);
		assert_non_null(strstr(err.msg, "egress_allow"));
	}
	/* Label and name lengths: 63 bytes a label, 253 a name. */
	memset(buf, 'a', 63);
	memcpy(buf + 63, ".org", 5);
	entry(buf);
	memset(buf, 'a', 64);
	memcpy(buf + 64, ".org", 5);
	assert_int_equal(sbx_egress_entry_parse(buf, &e, NULL), -EINVAL);
	for (i = 0; i < 4; i++)
		memset(buf + i * 64, 'a', 63), buf[i * 64 + 63] = '.';
	buf[4 * 64 - 1] = '\0';		/* 255 bytes */
	assert_int_equal(sbx_egress_entry_parse(buf, &e, NULL), -EINVAL);
	buf[253] = '\0';
	buf[252] = 'a';
	entry(buf);
}

static void test_match(void **state)
{
	struct sbx_egress_entry wild = entry("*.example.org"), exact = entry("example.org:8443"),
		lit = entry("127.0.0.1:18443"), lit6 = entry("[::1]:443");
	struct sbx_egress_target t;

	(void)state;
	t = target("api.example.org", 443);
	assert_true(sbx_egress_entry_matches(&wild, &t));
	t = target("A.B.Example.ORG.", 443);
	assert_true(sbx_egress_entry_matches(&wild, &t));
	/* Subdomains only, the suffix itself and look-alikes not. */
	t = target("example.org", 443);
	assert_false(sbx_egress_entry_matches(&wild, &t));
	t = target("evilexample.org", 443);
	assert_false(sbx_egress_entry_matches(&wild, &t));
	t = target("api.example.org", 8443);
	assert_false(sbx_egress_entry_matches(&wild, &t));	/* other port */
	t = target("example.org", 8443);
	assert_true(sbx_egress_entry_matches(&exact, &t));
	t = target("example.org", 443);
	assert_false(sbx_egress_entry_matches(&exact, &t));
	/* Literals match only a literal entry naming them. */
	t = target("127.0.0.1", 18443);
	assert_true(t.literal);
	assert_true(sbx_egress_entry_matches(&lit, &t));
	t = target("127.0.0.2", 18443);
	assert_false(sbx_egress_entry_matches(&lit, &t));
	t = target("[0:0::1]", 443);
	assert_true(sbx_egress_entry_matches(&lit6, &t));
	t = target("::ffff:127.0.0.1", 18443);
	assert_false(sbx_egress_entry_matches(&lit, &t));
}

static void test_covers(void **state)
{
	struct sbx_egress_entry a = entry("*.example.org"), b = entry("*.api.example.org"),
		c = entry("x.example.org"), d = entry("example.org"), e = entry("x.example.org:80");

	(void)state;
	assert_true(sbx_egress_entry_covers(&a, &a));
	assert_true(sbx_egress_entry_covers(&a, &b));
	assert_false(sbx_egress_entry_covers(&b, &a));
	assert_true(sbx_egress_entry_covers(&a, &c));
	assert_false(sbx_egress_entry_covers(&c, &a));
	assert_false(sbx_egress_entry_covers(&a, &d));
	assert_false(sbx_egress_entry_covers(&a, &e));
	assert_true(sbx_egress_entry_covers(&c, &c));
}

static enum sbx_egress_addr_class cls(const char *s)
{
	unsigned char a[16];

	if (inet_pton(AF_INET, s, a) == 1)
		return sbx_egress_addr_classify(AF_INET, a);
	assert_int_equal(inet_pton(AF_INET6, s, a), 1);
	return sbx_egress_addr_classify(AF_INET6, a);
}

static void test_classify(void **state)
{
	static const struct {
		const char *addr;
		enum sbx_egress_addr_class c;
	} cases[] = {
		{ "93.184.216.34", SBX_EGRESS_ADDR_PUBLIC },
		{ "8.8.8.8", SBX_EGRESS_ADDR_PUBLIC },
		{ "172.32.0.1", SBX_EGRESS_ADDR_PUBLIC },
		{ "100.128.0.1", SBX_EGRESS_ADDR_PUBLIC },
		{ "2606:4700::1", SBX_EGRESS_ADDR_PUBLIC },
		{ "0.0.0.0", SBX_EGRESS_ADDR_UNSPECIFIED },
		{ "0.1.2.3", SBX_EGRESS_ADDR_RESERVED },
		{ "127.0.0.1", SBX_EGRESS_ADDR_LOOPBACK },
		{ "127.255.255.254", SBX_EGRESS_ADDR_LOOPBACK },
		{ "169.254.169.254", SBX_EGRESS_ADDR_METADATA },
		{ "169.254.1.1", SBX_EGRESS_ADDR_LINK_LOCAL },
		{ "10.1.2.3", SBX_EGRESS_ADDR_PRIVATE },
		{ "172.16.0.1", SBX_EGRESS_ADDR_PRIVATE },
		{ "172.31.255.255", SBX_EGRESS_ADDR_PRIVATE },
		{ "192.168.1.1", SBX_EGRESS_ADDR_PRIVATE },
		{ "100.64.0.1", SBX_EGRESS_ADDR_SHARED },
		{ "100.100.100.200", SBX_EGRESS_ADDR_METADATA },
		{ "192.0.0.192", SBX_EGRESS_ADDR_METADATA },
		{ "224.0.0.1", SBX_EGRESS_ADDR_MULTICAST },
		{ "255.255.255.255", SBX_EGRESS_ADDR_BROADCAST },
		{ "240.0.0.1", SBX_EGRESS_ADDR_RESERVED },
		{ "::", SBX_EGRESS_ADDR_UNSPECIFIED },
		{ "::1", SBX_EGRESS_ADDR_LOOPBACK },
		{ "::ffff:127.0.0.1", SBX_EGRESS_ADDR_LOOPBACK },
		{ "::ffff:169.254.169.254", SBX_EGRESS_ADDR_METADATA },
		{ "::ffff:10.0.0.1", SBX_EGRESS_ADDR_PRIVATE },
		{ "::ffff:8.8.8.8", SBX_EGRESS_ADDR_PUBLIC },
		{ "::127.0.0.1", SBX_EGRESS_ADDR_LOOPBACK },
		{ "64:ff9b::a9fe:a9fe", SBX_EGRESS_ADDR_METADATA },
		{ "64:ff9b:1::1", SBX_EGRESS_ADDR_PRIVATE },
		{ "2002:7f00:1::", SBX_EGRESS_ADDR_LOOPBACK },
		{ "fe80::1", SBX_EGRESS_ADDR_LINK_LOCAL },
		{ "febf::1", SBX_EGRESS_ADDR_LINK_LOCAL },
		{ "fc00::1", SBX_EGRESS_ADDR_PRIVATE },
		{ "fd12:3456::1", SBX_EGRESS_ADDR_PRIVATE },
		{ "fd00:ec2::254", SBX_EGRESS_ADDR_METADATA },
		{ "fec0::1", SBX_EGRESS_ADDR_PRIVATE },
		{ "ff02::1", SBX_EGRESS_ADDR_MULTICAST },
		{ "2001:db8::1", SBX_EGRESS_ADDR_RESERVED },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (cls(cases[i].addr) != cases[i].c)
			fail_msg("%s: %s, want %s", cases[i].addr,
				 sbx_egress_addr_class_name(cls(cases[i].addr)),
				 sbx_egress_addr_class_name(cases[i].c));
	assert_string_equal(sbx_egress_addr_class_name(SBX_EGRESS_ADDR_METADATA), "metadata");
}

static void test_v4_carried(void **state)
{
	static const struct {
		const char *addr;
		const char *v4;		/* NULL: none carried */
	} cases[] = {
		{ "::ffff:198.20.0.1", "198.20.0.1" },
		{ "64:ff9b::c614:1", "198.20.0.1" },
		{ "::198.20.0.1", "198.20.0.1" },
		{ "2002:c614:1::", "198.20.0.1" },
		{ "2002:c614:1:ffff::1", "198.20.0.1" },
		{ "2606:4700::1", NULL },
		{ "64:ff9b:1::c614:1", NULL },	/* local-use NAT64: private as a whole */
		{ "::ffff:0:c614:1", NULL },	/* SIIT's translated form, not mapped */
		{ "2001:db8::1", NULL },
	};
	unsigned char a[16];
	uint8_t v4[4];
	char text[INET_ADDRSTRLEN];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		bool got;

		assert_int_equal(inet_pton(AF_INET6, cases[i].addr, a), 1);
		memset(v4, 0, sizeof(v4));
		got = sbx_egress_addr_v4_carried(a, v4);
		if (got != (cases[i].v4 != NULL))
			fail_msg("%s: carried %d", cases[i].addr, got);
		if (!got)
			continue;
		assert_non_null(inet_ntop(AF_INET, v4, text, sizeof(text)));
		if (strcmp(text, cases[i].v4) != 0)
			fail_msg("%s: carries %s, want %s", cases[i].addr, text, cases[i].v4);
	}
}

/* sbx_egress_addr_local on a text address: 1 local, 0 not, -1 an error. */
static int local(const char *s)
{
	unsigned char a[16];
	struct sbx_error err = { 0 };
	int af = strchr(s, ':') ? AF_INET6 : AF_INET;
	bool here = false;

	if (inet_pton(af, s, a) != 1)
		return -1;
	if (sbx_egress_addr_local(af, a, &here, &err) != 0) {
		fprintf(stderr, "%s: %s\n", s, err.msg);
		return -1;
	}
	return here;
}

static int ip(const char *a1, const char *a2, const char *a3, const char *a4, const char *a5,
	      const char *a6, const char *a7)
{
	const char *const argv[] = { access("/usr/sbin/ip", X_OK) == 0 ? "/usr/sbin/ip" : "/sbin/ip",
				     a1, a2, a3, a4, a5, a6, a7, NULL };

	return sbx_test_run_quiet(argv);
}

/* In a network namespace of the test's own: the host's own addresses
 * whatever their range, as the kernel routes them now. */
static int child_addr_local(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWNET) != 0)
		return 2;
	/* lo is down in a new namespace: not even 127.0.0.1 is delivered
	 * here, and there is no route at all. */
	if (local("127.0.0.1") != 0 || local("198.20.0.1") != 0)
		return 3;
	if (ip("link", "set", "lo", "up", NULL, NULL, NULL) != 0 ||
	    ip("route", "add", "default", "dev", "lo", NULL, NULL) != 0)
		return 4;
	/* A public-class address, and the same with the default route to it:
	 * not this host's (a unicast route). */
	if (local("127.0.0.1") != 1 || local("::1") != 1 || local("198.20.0.1") != 0 ||
	    local("::ffff:198.20.0.1") != 0)
		return 5;
	/* Added now, on lo: this host's, in every form that reaches it. */
	if (ip("addr", "add", "198.20.0.1/32", "dev", "lo", NULL, NULL) != 0)
		return 6;
	if (local("198.20.0.1") != 1 || local("::ffff:198.20.0.1") != 1 ||
	    local("64:ff9b::c614:1") != 1 || local("2002:c614:1::") != 1 ||
	    local("198.20.0.2") != 0)
		return 7;
	/* Removed: not any more. */
	if (ip("addr", "del", "198.20.0.1/32", "dev", "lo", NULL, NULL) != 0 ||
	    local("198.20.0.1") != 0)
		return 8;
	/* A global IPv6 address, and a whole prefix routed local (AnyIP),
	 * which no interface lists. */
	if (ip("-6", "addr", "add", "2a01:4f8::1/128", "dev", "lo", "nodad") != 0 ||
	    ip("route", "add", "local", "198.20.9.0/24", "dev", "lo", NULL) != 0)
		return 9;
	if (local("2a01:4f8::1") != 1 || local("2a01:4f8::2") != 0 ||
	    local("198.20.9.77") != 1 || local("::ffff:198.20.9.77") != 1)
		return 10;
	/* Routes that deliver nowhere: not local, and no error. */
	if (ip("route", "add", "blackhole", "198.20.10.0/24", NULL, NULL, NULL) != 0 ||
	    ip("route", "add", "prohibit", "198.20.11.0/24", NULL, NULL, NULL) != 0)
		return 11;
	if (local("198.20.10.1") != 0 || local("198.20.11.1") != 0)
		return 12;
	return 0;
}

static void test_addr_local(void **state)
{
	struct sbx_error err = { 0 };
	unsigned char a[16] = { 0 };
	bool here = true;

	(void)state;
	/* This namespace's loopback, as any process sees it. */
	assert_int_equal(local("127.0.0.1"), 1);
	assert_int_equal(local("127.0.0.2"), 1);
	assert_int_equal(local("::ffff:127.0.0.1"), 1);
	assert_int_equal(sbx_egress_addr_local(AF_UNIX, a, &here, &err), -EAFNOSUPPORT);
	assert_non_null(strstr(err.msg, "not IPv4 or IPv6"));
	if (geteuid() != 0) {
		print_message("[  SKIP    ] needs root for a network namespace of its own "
			      "(CI runs as root)\n");
		skip();
	}
	assert_int_equal(sbx_test_status_code(sbx_test_fork(false, child_addr_local, NULL)), 0);
}

static int http(const char *req, struct sbx_egress_target *t, size_t *used)
{
	return sbx_egress_http_connect_parse(req, strlen(req), used, t);
}

static void test_http_connect(void **state)
{
	static const char ok[] = "CONNECT Example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n"
				 "User-Agent: curl/7.88.1\r\nProxy-Connection: Keep-Alive\r\n\r\n\x16\x03";
	struct sbx_egress_target t;
	size_t used = 0, n;
	char *big;

	(void)state;
	assert_int_equal(http(ok, &t, &used), 0);
	assert_string_equal(t.host, "example.org");
	assert_int_equal(t.port, 443);
	assert_false(t.literal);
	assert_int_equal(used, strlen(ok) - 2);	/* the TLS bytes after it are not consumed */
	/* Every prefix of the header block asks for more. */
	for (n = 0; n < used; n++)
		assert_int_equal(sbx_egress_http_connect_parse(ok, n, &used, &t), -EAGAIN);

	assert_int_equal(http("CONNECT [::1]:8443 HTTP/1.0\r\n\r\n", &t, &used), 0);
	assert_true(t.literal);
	assert_string_equal(t.host, "::1");
	assert_int_equal(t.port, 8443);
	assert_int_equal(http("CONNECT 10.0.0.1:22 HTTP/1.1\r\n\r\n", &t, &used), 0);
	assert_true(t.literal);

	/* Other methods: 405. */
	assert_int_equal(http("GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n",
			      &t, &used), -EOPNOTSUPP);
	assert_int_equal(http("connect example.org:443 HTTP/1.1\r\n\r\n", &t, &used), -EOPNOTSUPP);
	/* Malformed: 400. */
	static const char *const bad[] = {
		"CONNECT example.org HTTP/1.1\r\n\r\n",		/* no port */
		"CONNECT example.org:0 HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443 HTTP/2\r\n\r\n",
		"CONNECT example.org:443\r\n\r\n",
		"CONNECT  example.org:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1 \r\n\r\n",
		"CONNECT ex\x01mple.org:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1:443 HTTP/1.1\r\n\r\n",
		"CONNECT ::1:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1\r\nNoColon\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1\r\nX: a\nb: c\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1\r\n folded: x\r\n\r\n",
		"CONNECT example.org:443 HTTP/1.1\r\nX\x7f: a\r\n\r\n",
		"C\x80NNECT example.org:443 HTTP/1.1\r\n\r\n",
		" CONNECT example.org:443 HTTP/1.1\r\n\r\n",
	};
	for (n = 0; n < ARRAY_SIZE(bad); n++)
		if (http(bad[n], &t, &used) != -EINVAL)
			fail_msg("request %zu accepted: %s", n, bad[n]);

	/* A header block that never ends: 431 at the bound, not before. */
	big = malloc(SBX_EGRESS_HTTP_MAX + 1);
	assert_non_null(big);
	memset(big, 'a', SBX_EGRESS_HTTP_MAX + 1);
	memcpy(big, "CONNECT a.org:443 HTTP/1.1\r\nX: ", 31);
	assert_int_equal(sbx_egress_http_connect_parse(big, SBX_EGRESS_HTTP_MAX - 1, &used, &t),
			 -EAGAIN);
	assert_int_equal(sbx_egress_http_connect_parse(big, SBX_EGRESS_HTTP_MAX, &used, &t), -E2BIG);
	/* ... and one whose end lies past the bound is refused the same. */
	memcpy(big + SBX_EGRESS_HTTP_MAX - 2, "\r\n\r\n", 3);
	assert_int_equal(sbx_egress_http_connect_parse(big, SBX_EGRESS_HTTP_MAX + 1, &used, &t),
			 -E2BIG);
	free(big);
}

static void test_socks5(void **state)
{
	static const uint8_t greet[] = { 5, 2, 2, 0 }, greet_auth[] = { 5, 1, 2 },
		v4[] = { 5, 1, 0, 1, 127, 0, 0, 1, 0x47, 0x9b },
		v6[] = { 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0xbb },
		dom[] = { 5, 1, 0, 3, 11, 'E', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'o', 'r', 'g',
			  1, 0xbb, 0x16 },
		bind[] = { 5, 2, 0, 1, 1, 2, 3, 4, 0, 80 },
		udp[] = { 5, 3, 0, 1, 1, 2, 3, 4, 0, 80 },
		atyp[] = { 5, 1, 0, 5, 1, 2, 3, 4, 0, 80 },
		zero_len[] = { 5, 1, 0, 3, 0, 0, 80 },
		zero_port[] = { 5, 1, 0, 1, 1, 2, 3, 4, 0, 0 },
		ver4[] = { 4, 1, 0, 80, 1, 2, 3, 4, 0 },
		rsv[] = { 5, 1, 1, 1, 1, 2, 3, 4, 0, 80 },
		dom_ip[] = { 5, 1, 0, 3, 9, '1', '2', '7', '.', '0', '.', '0', '.', '1', 0, 80 },
		dom_bad[] = { 5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80 },
		dom_num[] = { 5, 1, 0, 3, 5, '1', '2', '7', '.', '1', 0, 80 };
	struct sbx_egress_target t;
	size_t used, n;
	bool noauth;

	(void)state;
	assert_int_equal(sbx_egress_socks5_greeting_parse(greet, sizeof(greet), &used, &noauth), 0);
	assert_true(noauth);
	assert_int_equal(used, 4);
	assert_int_equal(sbx_egress_socks5_greeting_parse(greet_auth, 3, &used, &noauth), 0);
	assert_false(noauth);
	for (n = 0; n < sizeof(greet); n++)
		assert_int_equal(sbx_egress_socks5_greeting_parse(greet, n, &used, &noauth), -EAGAIN);
	assert_int_equal(sbx_egress_socks5_greeting_parse((const uint8_t *)"\x04\x01", 2, &used,
							  &noauth), -EINVAL);
	assert_int_equal(sbx_egress_socks5_greeting_parse((const uint8_t *)"\x05\x00", 2, &used,
							  &noauth), -EINVAL);

	assert_int_equal(sbx_egress_socks5_request_parse(v4, sizeof(v4), &used, &t), 0);
	assert_string_equal(t.host, "127.0.0.1");
	assert_true(t.literal);
	assert_int_equal(t.port, 18331);
	assert_int_equal(sbx_egress_socks5_request_parse(v6, sizeof(v6), &used, &t), 0);
	assert_string_equal(t.host, "::1");
	assert_int_equal(t.port, 443);
	assert_int_equal(sbx_egress_socks5_request_parse(dom, sizeof(dom), &used, &t), 0);
	assert_string_equal(t.host, "example.org");
	assert_false(t.literal);
	assert_int_equal(t.port, 443);
	assert_int_equal(used, sizeof(dom) - 1);
	for (n = 0; n < used; n++)
		assert_int_equal(sbx_egress_socks5_request_parse(dom, n, &used, &t), -EAGAIN);
	/* A domain that spells an address is that address. */
	assert_int_equal(sbx_egress_socks5_request_parse(dom_ip, sizeof(dom_ip), &used, &t), 0);
	assert_true(t.literal);

	assert_int_equal(sbx_egress_socks5_request_parse(bind, sizeof(bind), &used, &t), -EOPNOTSUPP);
	assert_int_equal(sbx_egress_socks5_request_parse(udp, sizeof(udp), &used, &t), -EOPNOTSUPP);
	assert_int_equal(sbx_egress_socks5_request_parse(atyp, sizeof(atyp), &used, &t),
			 -EAFNOSUPPORT);
	assert_int_equal(sbx_egress_socks5_request_parse(zero_len, sizeof(zero_len), &used, &t),
			 -EINVAL);
	assert_int_equal(sbx_egress_socks5_request_parse(zero_port, sizeof(zero_port), &used, &t),
			 -EINVAL);
	assert_int_equal(sbx_egress_socks5_request_parse(ver4, sizeof(ver4), &used, &t), -EINVAL);
	assert_int_equal(sbx_egress_socks5_request_parse(ver4, 1, &used, &t), -EINVAL);
	assert_int_equal(sbx_egress_socks5_request_parse(rsv, sizeof(rsv), &used, &t), -EINVAL);
	assert_int_equal(sbx_egress_socks5_request_parse(dom_bad, sizeof(dom_bad), &used, &t),
			 -EINVAL);
	assert_int_equal(sbx_egress_socks5_request_parse(dom_num, sizeof(dom_num), &used, &t),
			 -EINVAL);
}

/* An outer encrypted_client_hello (RFC 9849 5): type outer, HKDF-SHA256
 * and AES-128-GCM, config_id, a 32-byte enc and a 64-byte payload. */
#define ECH_BODY (1 + 4 + 1 + 2 + 32 + 2 + 64)
static uint8_t *ech_ext(uint8_t *p, unsigned type)
{
	*p++ = (uint8_t)(type >> 8), *p++ = (uint8_t)type;
	*p++ = 0, *p++ = ECH_BODY;
	*p++ = 0;			/* outer */
	*p++ = 0, *p++ = 1, *p++ = 0, *p++ = 1;
	*p++ = 0x2a;			/* config_id */
	*p++ = 0, *p++ = 32, memset(p, 0x5e, 32), p += 32;
	*p++ = 0, *p++ = 64, memset(p, 0xc3, 64), p += 64;
	return p;
}

/* A ClientHello in one or more records; sni NULL: no server_name; ech
 * (an extension type, 0 for none) before the server_name when ech_first. */
static size_t hello_ech(uint8_t *out, size_t size, const char *sni, size_t split, bool extra_ext,
			unsigned ech, bool ech_first)
{
	uint8_t body[1024], *p = body;
	size_t n, i, off = 0, hl;

	*p++ = 3, *p++ = 3;
	memset(p, 0xaa, 32), p += 32;
	*p++ = 0;			/* session id */
	*p++ = 0, *p++ = 2, *p++ = 0x13, *p++ = 1;
	*p++ = 1, *p++ = 0;		/* compression */
	uint8_t *extlen = p;
	p += 2;
	if (extra_ext) {		/* supported_versions */
		*p++ = 0, *p++ = 43, *p++ = 0, *p++ = 3, *p++ = 2, *p++ = 3, *p++ = 4;
	}
	if (ech && ech_first)
		p = ech_ext(p, ech);
	if (sni) {
		n = strlen(sni);
		*p++ = 0, *p++ = 0;
		*p++ = (uint8_t)((n + 5) >> 8), *p++ = (uint8_t)(n + 5);
		*p++ = (uint8_t)((n + 3) >> 8), *p++ = (uint8_t)(n + 3);
		*p++ = 0;
		*p++ = (uint8_t)(n >> 8), *p++ = (uint8_t)n;
		memcpy(p, sni, n), p += n;
	}
	if (ech && !ech_first)
		p = ech_ext(p, ech);
	extlen[0] = (uint8_t)((p - extlen - 2) >> 8);
	extlen[1] = (uint8_t)(p - extlen - 2);
	hl = (size_t)(p - body);
	uint8_t hs[1100];
	hs[0] = 1, hs[1] = 0, hs[2] = (uint8_t)(hl >> 8), hs[3] = (uint8_t)hl;
	memcpy(hs + 4, body, hl);
	hl += 4;
	if (!split || split > hl)
		split = hl;
	for (i = 0; i < hl; i += split) {
		size_t frag = hl - i < split ? hl - i : split;

		assert_true(off + 5 + frag <= size);
		out[off] = 0x16, out[off + 1] = 3, out[off + 2] = 1;
		out[off + 3] = (uint8_t)(frag >> 8), out[off + 4] = (uint8_t)frag;
		memcpy(out + off + 5, hs + i, frag);
		off += 5 + frag;
	}
	return off;
}

static size_t hello(uint8_t *out, size_t size, const char *sni, size_t split, bool extra_ext)
{
	return hello_ech(out, size, sni, split, extra_ext, 0, false);
}

static void test_tls_sni(void **state)
{
	uint8_t buf[2048];
	char sni[SBX_EGRESS_HOST_MAX];
	size_t n, i;

	(void)state;
	n = hello(buf, sizeof(buf), "Api.Example.org", 0, true);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), 0);
	assert_string_equal(sni, "api.example.org");
	for (i = 0; i < n; i++)
		assert_int_equal(sbx_egress_tls_sni(buf, i, sni, sizeof(sni)), -EAGAIN);
	/* Bytes after the ClientHello's record (early data, CCS) are not read. */
	buf[n] = 0x14;
	assert_int_equal(sbx_egress_tls_sni(buf, n + 1, sni, sizeof(sni)), 0);

	/* One handshake message over several records. */
	n = hello(buf, sizeof(buf), "x.example.org", 7, true);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), 0);
	assert_string_equal(sni, "x.example.org");
	assert_int_equal(sbx_egress_tls_sni(buf, n - 1, sni, sizeof(sni)), -EAGAIN);

	/* No server_name: -ENOENT, with and without other extensions. */
	n = hello(buf, sizeof(buf), NULL, 0, true);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -ENOENT);
	n = hello(buf, sizeof(buf), NULL, 0, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -ENOENT);

	/* A name that is an address, or not a host, is malformed. */
	n = hello(buf, sizeof(buf), "127.0.0.1", 0, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EINVAL);
	n = hello(buf, sizeof(buf), "a b", 0, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EINVAL);

	/* Not TLS at all, at the first byte. */
	assert_int_equal(sbx_egress_tls_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, sni,
					    sizeof(sni)), -EINVAL);
	assert_int_equal(sbx_egress_tls_sni((const uint8_t *)"S", 1, sni, sizeof(sni)), -EINVAL);
	assert_int_equal(sbx_egress_tls_sni((const uint8_t *)"\x16\x02", 2, sni, sizeof(sni)),
			 -EINVAL);
	/* A handshake that is not a ClientHello, and a zero-length record. */
	n = hello(buf, sizeof(buf), "a.org", 0, false);
	buf[5] = 2;
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EINVAL);
	assert_int_equal(sbx_egress_tls_sni((const uint8_t *)"\x16\x03\x01\x00\x00", 5, sni,
					    sizeof(sni)), -EINVAL);
	/* A length that overruns its extension. */
	n = hello(buf, sizeof(buf), "a.org", 0, false);
	buf[n - 8] = 0xff;		/* server_name_list length */
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EINVAL);
}

/* Encrypted Client Hello: the server_name beside it is the front end's
 * public name, the real one is in the encrypted inner hello. */
static void test_tls_ech(void **state)
{
	static const unsigned hidden[] = { 0xfe0d, 0xfe08, 0xfe0a, 0xfe0c, 0xffce };
	static const unsigned other[] = { 0xfe07, 0xfe0e, 0xfd00, 0x0a0a, 0xffcd };
	uint8_t buf[2048];
	char sni[SBX_EGRESS_HOST_MAX];
	size_t n, i;

	(void)state;
	/* RFC 9849's code point after and before the listed name, over
	 * several records, and without a name at all. */
	n = hello_ech(buf, sizeof(buf), "api.example.org", 0, true, 0xfe0d, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EOPNOTSUPP);
	for (i = 0; i < n; i++)
		assert_int_equal(sbx_egress_tls_sni(buf, i, sni, sizeof(sni)), -EAGAIN);
	n = hello_ech(buf, sizeof(buf), "api.example.org", 0, true, 0xfe0d, true);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EOPNOTSUPP);
	n = hello_ech(buf, sizeof(buf), "api.example.org", 9, false, 0xfe0d, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EOPNOTSUPP);
	n = hello_ech(buf, sizeof(buf), NULL, 0, false, 0xfe0d, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EOPNOTSUPP);
	/* The drafts' code points and ESNI. */
	for (i = 0; i < ARRAY_SIZE(hidden); i++) {
		n = hello_ech(buf, sizeof(buf), "api.example.org", 0, true, hidden[i], false);
		if (sbx_egress_tls_sni(buf, n, sni, sizeof(sni)) != -EOPNOTSUPP)
			fail_msg("extension 0x%04x not taken for a hidden name", hidden[i]);
	}
	/* Neighbours, ech_outer_extensions (only ever inside the inner hello)
	 * and a GREASE value are other extensions: the name is read. */
	for (i = 0; i < ARRAY_SIZE(other); i++) {
		memset(sni, 0, sizeof(sni));
		n = hello_ech(buf, sizeof(buf), "api.example.org", 0, true, other[i], false);
		if (sbx_egress_tls_sni(buf, n, sni, sizeof(sni)) != 0 ||
		    strcmp(sni, "api.example.org") != 0)
			fail_msg("extension 0x%04x: name not read", other[i]);
	}
	/* A malformed hello stays malformed whatever else it carries. */
	n = hello_ech(buf, sizeof(buf), "a b", 0, false, 0xfe0d, false);
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EINVAL);
	n = hello_ech(buf, sizeof(buf), "a.org", 0, false, 0xfe0d, false);
	buf[n - ECH_BODY - 2] = 0xff;	/* its own length overruns the hello */
	assert_int_equal(sbx_egress_tls_sni(buf, n, sni, sizeof(sni)), -EINVAL);
}

static void hello_fill(uint8_t *buf, char kind, const char *session, const char *hash)
{
	struct sbx_egress_hello h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SBX_EGRESS_HELLO_MAGIC, 4);
	h.version = SBX_EGRESS_HELLO_VERSION;
	h.kind = (uint8_t)kind;
	h.uid = 1001;
	snprintf(h.session, sizeof(h.session), "%s", session);
	snprintf(h.list_hash, sizeof(h.list_hash), "%s", hash);
	memcpy(buf, &h, sizeof(h));
}

static void test_hello(void **state)
{
	static const char hash[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	uint8_t buf[sizeof(struct sbx_egress_hello)];
	struct sbx_egress_hello h;

	(void)state;
	hello_fill(buf, 'C', "0123456789abcdef0123456789abcdef", hash);
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), 0);
	assert_int_equal(h.kind, SBX_EGRESS_HELLO_CONNECT);
	assert_int_equal(h.uid, 1001);
	assert_string_equal(h.list_hash, hash);
	/* Short: more wanted while the magic so far agrees, refused when not. */
	assert_int_equal(sbx_egress_hello_parse(buf, 3, &h), -EAGAIN);
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf) - 1, &h), -EAGAIN);
	assert_int_equal(sbx_egress_hello_parse((const uint8_t *)"SBXA", 4, &h), -EINVAL);
	/* A ping with no session and no hash. */
	hello_fill(buf, 'P', "", "");
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), 0);
	/* Refused: another kind, another version, a session that is not hex,
	 * a hash of the wrong length, fields without their NUL. */
	hello_fill(buf, 'X', "", "");
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), -EINVAL);
	hello_fill(buf, 'C', "", "");
	buf[4] = 2;
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), -EINVAL);
	hello_fill(buf, 'C', "0123 user=root", hash);
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), -EINVAL);
	hello_fill(buf, 'C', "ab", "abcd");
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), -EINVAL);
	hello_fill(buf, 'C', "ab", hash);
	memset(buf + offsetof(struct sbx_egress_hello, session), 'a', 40);
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), -EINVAL);
	hello_fill(buf, 'C', "ab", hash);
	memset(buf + offsetof(struct sbx_egress_hello, list_hash), 'a', 65);
	assert_int_equal(sbx_egress_hello_parse(buf, sizeof(buf), &h), -EINVAL);
}

/* The list as the report writes it and the hash the bridge and the
 * daemon compare: order and every entry count, nothing else does. */
static void test_list_format_hash(void **state)
{
	struct sbx_profile *p = calloc(1, sizeof(*p)), *q = calloc(1, sizeof(*q));
	char buf[64], h1[65], h2[65];
	bool cut;

	(void)state;
	assert_non_null(p);
	assert_non_null(q);
	sbx_profile_init_default(p);
	sbx_egress_list_hash(p, h1);
	assert_int_equal(strlen(h1), 64);
	assert_int_equal(sbx_egress_entry_parse("a.example.org", &p->egress[0], NULL), 0);
	assert_int_equal(sbx_egress_entry_parse("*.b.example.org:8443", &p->egress[1], NULL), 0);
	assert_int_equal(sbx_egress_entry_parse("[::1]:80", &p->egress[2], NULL), 0);
	p->n_egress = 3;
	sbx_egress_list_format(p, buf, sizeof(buf), &cut);
	assert_string_equal(buf, "a.example.org:443, *.b.example.org:8443, [::1]:80");
	assert_false(cut);
	/* Whole entries only. */
	sbx_egress_list_format(p, buf, 30, &cut);
	assert_string_equal(buf, "a.example.org:443");
	assert_true(cut);
	sbx_egress_list_hash(p, h1);
	*q = *p;
	sbx_egress_list_hash(q, h2);
	assert_string_equal(h1, h2);
	q->egress[2].port = 81;
	sbx_egress_list_hash(q, h2);
	assert_string_not_equal(h1, h2);
	*q = *p;
	q->n_egress = 2;
	sbx_egress_list_hash(q, h2);
	assert_string_not_equal(h1, h2);
	free(p);
	free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_parse),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_covers),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_v4_carried),
		cmocka_unit_test(test_addr_local),
		cmocka_unit_test(test_http_connect),
		cmocka_unit_test(test_socks5),
		cmocka_unit_test(test_tls_sni),
		cmocka_unit_test(test_tls_ech),
		cmocka_unit_test(test_hello),
		cmocka_unit_test(test_list_format_hash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
