/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for util.c: bounded strings, numbers, canonical paths. */
#include <errno.h>
#include <string.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strlcpy),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_under),
	};
	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
