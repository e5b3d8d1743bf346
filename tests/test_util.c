/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for util.c: bounded strings, numbers, canonical paths. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testlib.h"

static void test_strlcpy(void **state)
{
	char buf[4];

	(void)state;
	assert_int_equal(sbx_strlcpy(buf, sizeof(buf), "abc"), 0);
	assert_string_equal(buf, "abc");
	assert_int_equal(sbx_strlcpy(buf, sizeof(buf), "abcd"), -ENAMETOOLONG);
	assert_string_equal(buf, "");
}

static void test_parse_u64(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(sbx_parse_u64("42", false, 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(sbx_parse_u64("4K", true, 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(sbx_parse_u64("4K", false, 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(sbx_parse_u64("101", false, 0, 100, &v), -ERANGE);
	assert_int_equal(sbx_parse_u64("-1", false, 0, 100, &v), -EINVAL);
	assert_int_equal(sbx_parse_u64("", false, 0, 100, &v), -EINVAL);
	assert_int_equal(sbx_parse_u64("18446744073709551616", false, 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(sbx_parse_u64("17179869184G", true, 0, UINT64_MAX, &v), -ERANGE);
}

static void test_canonical(void **state)
{
	(void)state;
	assert_true(sbx_path_is_canonical("/"));
	assert_true(sbx_path_is_canonical("/srv/agents/a"));
	assert_true(sbx_path_is_canonical("/a/.hidden/..x"));
	assert_false(sbx_path_is_canonical("relative"));
	assert_false(sbx_path_is_canonical(""));
	assert_false(sbx_path_is_canonical("/a//b"));
	assert_false(sbx_path_is_canonical("/a/"));
	assert_false(sbx_path_is_canonical("/a/./b"));
	assert_false(sbx_path_is_canonical("/a/../b"));
	assert_false(sbx_path_is_canonical("/a/.."));
}

static void test_under(void **state)
{
	(void)state;
	assert_true(sbx_path_is_under("/a/b", "/a"));
	assert_true(sbx_path_is_under("/a", "/a"));
	assert_true(sbx_path_is_under("/a", "/"));
	assert_false(sbx_path_is_under("/ab", "/a"));
	assert_false(sbx_path_is_under("/a", "/a/b"));
}

/* A directory above the path owned by the uid counts; the path itself
 * does not; nor do others' directories. */
static void test_owned_above(void **state)
{
	char *dir = sbx_test_mkdtemp("owned");
	char sub[300], leaf[320];
	struct stat st;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(stat(dir, &st), 0);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(leaf, sizeof(leaf), "%s/leaf", sub);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_true(sbx_path_owned_above(leaf, st.st_uid));	/* sub and dir */
	assert_true(sbx_path_owned_above(sub, st.st_uid));	/* dir */
	assert_false(sbx_path_owned_above(dir, st.st_uid + 1));
	assert_false(sbx_path_owned_above("/etc/passwd", 65533));	/* /etc is root's */
	assert_false(sbx_path_owned_above("/", st.st_uid + 1));
	sbx_test_rmtree(dir);
	free(dir);
}

/* Copy and clear move every byte but the lists' unused room: the
 * fields, the counts and the entries in use; the room past a count keeps
 * what dst held; a count past its list's room copies the room, no more. */
struct two_lists {
	int head;
	size_t n_a;
	char a[4][8];
	long mid;
	size_t n_b;
	short b[3];
	char tail[5];
};

static const struct sbx_list_field two_lists_fields[] = {
	SBX_LIST_FIELD(struct two_lists, a, n_a),
	SBX_LIST_FIELD(struct two_lists, b, n_b),
};

static void test_copy_used(void **state)
{
	struct two_lists src, dst;

	(void)state;
	memset(&src, 0x11, sizeof(src));
	src.head = 7;
	src.n_a = 2;
	src.mid = -3;
	src.n_b = 99;	/* out of range: the whole room, and no further */
	memcpy(src.tail, "tail", 5);
	memset(&dst, 0xee, sizeof(dst));
	sbx_copy_used(&dst, &src, sizeof(dst), two_lists_fields, ARRAY_SIZE(two_lists_fields));
	assert_int_equal(dst.head, 7);
	assert_int_equal(dst.n_a, 2);
	assert_memory_equal(dst.a, src.a, 2 * sizeof(dst.a[0]));
	assert_int_equal((unsigned char)dst.a[2][0], 0xee);
	assert_int_equal((unsigned char)dst.a[3][7], 0xee);
	assert_int_equal(dst.mid, -3);
	assert_int_equal(dst.n_b, 99);
	assert_memory_equal(dst.b, src.b, sizeof(dst.b));
	assert_string_equal(dst.tail, "tail");
	/* Copying onto itself changes nothing. */
	sbx_copy_used(&dst, &dst, sizeof(dst), two_lists_fields, ARRAY_SIZE(two_lists_fields));
	assert_int_equal(dst.head, 7);

	sbx_clear_used(&dst, sizeof(dst), two_lists_fields, ARRAY_SIZE(two_lists_fields));
	assert_int_equal(dst.head, 0);
	assert_int_equal(dst.n_a, 0);
	assert_int_equal(dst.mid, 0);
	assert_int_equal(dst.n_b, 0);
	assert_int_equal(dst.tail[0], 0);
	assert_int_equal(dst.tail[4], 0);
	assert_int_equal((unsigned char)dst.a[0][0], 0x11);	/* room, left */
	assert_int_equal((unsigned char)dst.a[3][7], 0xee);
}

/* A field of a status file's text: the line whose name matches whole,
 * its value without leading blanks; a value too long, or no such line,
 * gives an error and an empty result. */
/* The mount table as proc(5) writes it: octal escapes decoded, optional
 * tags skipped, a line that cannot be read refused and stepped over. */
static void test_mountinfo(void **state)
{
	static const char table[] =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"41 22 8:1 /var/tmp/a\\040b /mnt/x\\134y rw shared:1 master:2 - ext4 /dev/sda1 rw\n"
		"bad line\n"
		"42 22 8:1 /a\\9 /b rw - ext4 /dev/sda1 rw\n"
		"43 22 0:5 / /dev rw - devtmpfs udev rw";
	const char *pos = table, *end = table + sizeof(table) - 1;
	struct sbx_mount_entry *m = malloc(sizeof(*m));

	(void)state;
	assert_non_null(m);
	assert_int_equal(sbx_mountinfo_next(&pos, end, m), 1);
	assert_int_equal(m->id, 22);
	assert_int_equal(m->parent, 1);
	assert_int_equal(m->major, 8);
	assert_int_equal(m->minor, 1);
	assert_string_equal(m->root, "/");
	assert_string_equal(m->point, "/");
	assert_string_equal(m->fstype, "ext4");
	assert_int_equal(sbx_mountinfo_next(&pos, end, m), 1);
	assert_string_equal(m->root, "/var/tmp/a b");
	assert_string_equal(m->point, "/mnt/x\\y");
	assert_int_equal(sbx_mountinfo_next(&pos, end, m), -EINVAL);
	assert_int_equal(sbx_mountinfo_next(&pos, end, m), -EINVAL);	/* \9 */
	assert_int_equal(sbx_mountinfo_next(&pos, end, m), 1);
	assert_int_equal(m->id, 43);
	assert_string_equal(m->fstype, "devtmpfs");
	assert_int_equal(sbx_mountinfo_next(&pos, end, m), 0);
	assert_ptr_equal(pos, end);
	free(m);
}

struct shown_seen {
	char paths[1024];
};

static int shown_note(void *arg, size_t k, const char *path, int mnt_id)
{
	struct shown_seen *seen = arg;
	size_t used = strlen(seen->paths);

	snprintf(seen->paths + used, sizeof(seen->paths) - used, "%zu:%d:%s;", k, mnt_id, path);
	return 0;
}

/*
 * Which mounts show a secret (on 8:1, at /srv/keys in its filesystem) and
 * are covered by none: the secret's own mount under a mask (hidden); a
 * bind of it with a mask on top (hidden); a bind of / under a tmpfs on
 * /home (hidden by the tmpfs in its parent); a bind of /srv at /var/x
 * (shown, at /var/x/keys); a bind of /srv/keys/sub (shown); another
 * device (not its filesystem). A line that cannot be read stops it all.
 */
static void test_secret_mounts_shown(void **state)
{
	static const char table[] =
		"1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
		"2 1 0:40 / /srv/keys ro - tmpfs mask ro\n"
		"3 1 8:1 /srv/keys /mnt/a rw - ext4 /dev/sda1 rw\n"
		"4 3 0:41 / /mnt/a ro - tmpfs mask ro\n"
		"5 1 8:1 / /home/u/root rw - ext4 /dev/sda1 rw\n"
		"6 1 0:42 / /home rw - tmpfs home rw\n"
		"7 1 8:1 /srv /var/x rw - ext4 /dev/sda1 rw\n"
		"8 1 8:1 /srv/keys/sub /opt/s\\040t rw - ext4 /dev/sda1 rw\n"
		"9 1 8:2 /srv/keys /mnt/other rw - ext4 /dev/sdb1 rw\n";
	struct sbx_secret_places *sp = calloc(1, sizeof(*sp));
	struct shown_seen seen = { "" };
	char why[200] = "";

	(void)state;
	assert_non_null(sp);
	sp->n = 1;
	sp->s[0] = (struct sbx_secret_place){ .major = 8, .minor = 1, .own_id = 1 };
	strcpy(sp->text, "/srv/keys");
	assert_int_equal(sbx_secret_mounts_shown(table, sizeof(table) - 1, sp, shown_note, &seen,
						 why, sizeof(why)), 0);
	assert_string_equal(seen.paths, "0:7:/var/x/keys;0:8:/opt/s t;");
	seen.paths[0] = '\0';
	assert_int_equal(sbx_secret_mounts_shown("1 0 8:1 / / rw\n", 15, sp, shown_note, &seen,
						 why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a line of the mount table cannot be read");
	free(sp);
}

static void test_status_text_field(void **state)
{
	static const char text[] = "Name:\tsh\nNoNewPrivs:\t1\nSeccomp:\t2\n"
				   "Seccomp_filters:\t1\nCapEff:\t0000000000000000\nLast: x";
	char v[32];

	(void)state;
	assert_int_equal(sbx_status_text_field(text, "Seccomp", v, sizeof(v)), 0);
	assert_string_equal(v, "2");
	assert_int_equal(sbx_status_text_field(text, "Seccomp_filters", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(sbx_status_text_field(text, "CapEff", v, sizeof(v)), 0);
	assert_string_equal(v, "0000000000000000");
	assert_int_equal(sbx_status_text_field(text, "Last", v, sizeof(v)), 0);
	assert_string_equal(v, "x");
	assert_int_equal(sbx_status_text_field(text, "Name", v, sizeof(v)), 0);
	assert_string_equal(v, "sh");
	assert_int_equal(sbx_status_text_field(text, "Seccom", v, sizeof(v)), -ENOENT);
	assert_int_equal(sbx_status_text_field(text, "CapEff", v, 8), -ENAMETOOLONG);
	assert_string_equal(v, "");
	assert_int_equal(sbx_status_text_field("", "Name", v, sizeof(v)), -ENOENT);
	/* The file itself agrees with the text. */
	assert_int_equal(sbx_proc_status_field(0, "Seccomp", v, sizeof(v)), 0);
	assert_true(strcmp(v, "0") == 0 || strcmp(v, "2") == 0);
}

/* Strict UTF-8: what RFC 3629 allows and nothing else, each refusal next
 * to the character it imitates. */
static void test_utf8_char(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		uint32_t cp;
	} cases[] = {
		{ "A", 1, 0x41 },
		{ "\xc2\x80", 2, 0x80 },		/* a C1 control is UTF-8 */
		{ "\xc3\xa9", 2, 0xe9 },		/* é */
		{ "\xe6\x97\xa5", 3, 0x65e5 },		/* 日 */
		{ "\xef\xbf\xbd", 3, 0xfffd },
		{ "\xf0\x9f\x98\x80", 4, 0x1f600 },	/* an emoji */
		{ "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
		{ "\x80", 0, 0 },			/* a continuation alone */
		{ "\x9b", 0, 0 },			/* C1 CSI as one byte */
		{ "\xc0\xaf", 0, 0 },			/* overlong '/' */
		{ "\xc1\xbf", 0, 0 },
		{ "\xe0\x80\xaf", 0, 0 },		/* overlong, 3 bytes */
		{ "\xf0\x80\x80\xaf", 0, 0 },		/* overlong, 4 bytes */
		{ "\xed\xa0\x80", 0, 0 },		/* surrogate U+D800 */
		{ "\xed\xbf\xbf", 0, 0 },		/* surrogate U+DFFF */
		{ "\xf4\x90\x80\x80", 0, 0 },		/* above U+10FFFF */
		{ "\xf8\x88\x80\x80\x80", 0, 0 },	/* 5 bytes */
		{ "\xe2\x82", 0, 0 },			/* cut short */
		{ "\xc3(", 0, 0 },
		{ "\xfe", 0, 0 }, { "\xff", 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint32_t cp = 0xdead;
		size_t n = sbx_utf8_char((const unsigned char *)cases[i].s, strlen(cases[i].s), &cp);

		if (n != cases[i].len || (n && cp != cases[i].cp))
			fail_msg("case %zu: length %zu code point %x", i, n, (unsigned)cp);
	}
	/* Bounded by avail, not by a NUL. */
	assert_int_equal(sbx_utf8_char((const unsigned char *)"\xe6\x97\xa5", 2, &(uint32_t){ 0 }), 0);
	assert_int_equal(sbx_utf8_char((const unsigned char *)"", 0, &(uint32_t){ 0 }), 0);
}

/* The shown form: printable UTF-8 as it is, every other byte as \xNN. */
static void test_text_show(void **state)
{
	static const struct {
		const char *in, *shown;
	} cases[] = {
		{ "plain ASCII ~!", "plain ASCII ~!" },
		{ "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80" },
		{ "a\\b \\xe9", "a\\b \\xe9" },		/* a backslash stays one */
		{ "caf\xe9", "caf\\xe9" },
		{ "\x1b[2J\x07\n\t\x7f", "\\x1b[2J\\x07\\x0a\\x09\\x7f" },
		{ "\x9b" "2J", "\\x9b2J" },			/* C1 as one byte */
		{ "\xc2\x9b" "2J", "\\xc2\\x9b2J" },		/* C1 as UTF-8 */
		{ "\xc2\xa0", "\xc2\xa0" },			/* U+00A0: the first shown */
		{ "\xc0\xaf", "\\xc0\\xaf" },
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },
		{ "\xe6\x97", "\\xe6\\x97" },			/* cut short */
		{ "\xe6\x97" "A\xe6\x97\xa5", "\\xe6\\x97A\xe6\x97\xa5" },	/* read afresh after */
	};
	char out[64], small[8];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(sbx_text_show(out, sizeof(out), cases[i].in), 0);
		assert_string_equal(out, cases[i].shown);
		assert_int_equal(sbx_text_is_shown(cases[i].in), !strcmp(cases[i].in, cases[i].shown));
		f = open_memstream(&buf, &len);
		assert_int_equal(sbx_text_put(f, cases[i].in, strlen(cases[i].in)), 0);
		fclose(f);
		assert_string_equal(buf, cases[i].shown);
		free(buf);
		buf = NULL;
	}
	/* Cut at whole units: never half an escape or half a character. */
	assert_int_equal(sbx_text_show(small, sizeof(small), "ab\x9b" "cd"), -ENAMETOOLONG);
	assert_string_equal(small, "ab\\x9bc");
	assert_int_equal(sbx_text_show(small, 6, "ab\x9b" "cd"), -ENAMETOOLONG);
	assert_string_equal(small, "ab");
	assert_int_equal(sbx_text_show(small, 4, "a\xe6\x97\xa5"), -ENAMETOOLONG);
	assert_string_equal(small, "a");
	/* sbx_text_put reads at most max bytes: an unterminated buffer. */
	f = open_memstream(&buf, &len);
	assert_int_equal(sbx_text_put(f, "abc\x9b", 4), 0);
	assert_int_equal(sbx_text_put(f, "xyz", 2), 0);
	fclose(f);
	assert_string_equal(buf, "abc\\x9bxy");
	free(buf);
	/* An error message names paths and what a peer said: shown, and a
	 * message that quotes another (even its own buffer) stays the same. */
	{
		struct sbx_error err = { 0 };

		assert_int_equal(sbx_error_set(&err, ENOENT, "open(%s): %s", "/srv/a\x1b]0;T\007b\x9b",
					       strerror(ENOENT)), -ENOENT);
		assert_string_equal(err.msg, "open(/srv/a\\x1b]0;T\\x07b\\x9b): No such file or directory");
		assert_int_equal(sbx_error_set(&err, EPERM, "caf\xc3\xa9: %s", err.msg), -EPERM);
		assert_string_equal(err.msg, "caf\xc3\xa9: open(/srv/a\\x1b]0;T\\x07b\\x9b): No such file "
				    "or directory");
	}
	/* The scrub replaces what a terminal acts on in UTF-8 and leaves the
	 * rest for the printers; sbx_text_is_scrubbed agrees with it. */
	{
		char s[] = "a\x1b" "b\xc2\x9b" "c\x9b" "d\xc3\xa9\x7f";

		assert_false(sbx_text_is_scrubbed(s));
		sbx_text_scrub(s);
		assert_string_equal(s, "a?b??c\x9b" "d\xc3\xa9?");
		assert_true(sbx_text_is_scrubbed(s));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strlcpy),
		cmocka_unit_test(test_utf8_char),
		cmocka_unit_test(test_text_show),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_under),
		cmocka_unit_test(test_owned_above),
		cmocka_unit_test(test_copy_used),
		cmocka_unit_test(test_status_text_field),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_secret_mounts_shown),
	};
	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
