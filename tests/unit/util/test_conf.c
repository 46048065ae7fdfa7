/* test_conf.c - the table-driven settings engine (util/conf.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/conf.h"

#define NDEFS 9

struct sample {
	bool flag;
	int32_t parts;
	int64_t big;
	int64_t maybe;
	char *name;
	char *dirs;
	int mode;
	int32_t any;
	char *nothing;
	bool set[NDEFS];
};

#define F(x) offsetof(struct sample, x)
static const struct conf_def defs[NDEFS] = {
	{ "a.flag", CONF_BOOL, F(flag), 0, 0, "true", false, "A flag.", NULL },
	{ "num.partitions", CONF_INT32, F(parts), 1, 1000000, "1", true, "Partitions.", NULL },
	{ "big.bytes", CONF_INT64, F(big), -1, INT64_MAX, "9223372036854775807", false, "Big.", NULL },
	{ "maybe.ms", CONF_INT64, F(maybe), -1, INT64_MAX, NULL, false, "Nullable.", NULL },
	{ "a.name", CONF_STRING, F(name), 0, 0, "gregor", false, "Name | with pipe.", NULL },
	{ "some.dirs", CONF_LIST, F(dirs), 0, 0, "./data", false, "Dirs.", NULL },
	{ "a.mode", CONF_ENUM, F(mode), 0, 0, "CreateTime", false, "Mode.", "CreateTime|LogAppendTime" },
	{ "any.int", CONF_INT32, F(any), INT32_MIN, INT32_MAX, "-5", false, "Any.", NULL },
	{ "a.nothing", CONF_STRING, F(nothing), 0, 0, NULL, false, "Null string.", NULL },
};
static const struct conf_table tbl = { defs, NDEFS, offsetof(struct sample, set), true, NULL };

static int setup(void **state)
{
	struct sample *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	assert_int_equal(conf_defaults(&tbl, s), 0);
	*state = s;
	return 0;
}

static int teardown(void **state)
{
	conf_release(&tbl, *state);
	free(*state);
	return 0;
}

static int load(struct sample *s, const char *text, char *err, size_t n)
{
	return conf_load_text(&tbl, s, text, strlen(text), "t.properties", err, n);
}

static void test_defaults(void **state)
{
	struct sample *s = *state;
	char buf[64];

	assert_true(s->flag);
	assert_int_equal(s->parts, 1);
	assert_true(s->big == INT64_MAX);
	assert_true(s->maybe == CONF_UNSET64);
	assert_string_equal(s->name, "gregor");
	assert_string_equal(s->dirs, "./data");
	assert_int_equal(s->mode, 0);
	assert_int_equal(s->any, -5);
	assert_null(s->nothing);
	assert_false(conf_is_set(&tbl, s, "num.partitions"));
	assert_int_equal(conf_get(&tbl, s, "maybe.ms", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "");
	assert_int_equal(conf_get(&tbl, s, "a.nothing", buf, sizeof(buf)), 1);
	assert_int_equal(conf_get(&tbl, s, "big.bytes", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "9223372036854775807");
	assert_int_equal(conf_get(&tbl, s, "a.mode", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "CreateTime");
	assert_int_equal(conf_get(&tbl, s, "no.such", buf, sizeof(buf)), -ENOENT);
}

static void test_parse_forms(void **state)
{
	struct sample *s = *state;
	char err[256] = "";
	const char *text = "# a comment\n"
			   "! another comment\n"
			   "\n"
			   "   \t\n"
			   "  num.partitions = 12  \n"
			   "a.name: hello world\r\n"
			   "a.flag false\n"
			   "some.dirs=/a, /b,\\\n"
			   "          /c\n"
			   "a.mode=logappendtime\n"
			   "maybe.ms=60000\n"
			   "#num.partitions=99\n"
			   "any.int=-2147483648";
	char buf[64];

	assert_int_equal(load(s, text, err, sizeof(err)), 0);
	assert_int_equal(s->parts, 12);
	assert_string_equal(s->name, "hello world");
	assert_false(s->flag);
	assert_string_equal(s->dirs, "/a,/b,/c");
	assert_int_equal(s->mode, 1);
	assert_int_equal(conf_get(&tbl, s, "a.mode", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "LogAppendTime");
	assert_true(s->maybe == 60000);
	assert_int_equal(s->any, INT32_MIN);
	assert_true(conf_is_set(&tbl, s, "num.partitions"));
	assert_false(conf_is_set(&tbl, s, "big.bytes"));
}

static void test_escapes(void **state)
{
	struct sample *s = *state;
	char err[256];

	/* even number of trailing backslashes: no continuation */
	assert_int_equal(load(s, "a.name=x\\\\\nnum.partitions=3\n", err, sizeof(err)), 0);
	assert_string_equal(s->name, "x\\");
	assert_int_equal(s->parts, 3);
	assert_int_equal(load(s, "a\\.name=\\u0041\\tb\\=c\n", err, sizeof(err)), 0);
	assert_string_equal(s->name, "A\tb=c");
	/* key with escaped '=' never matches, the error names the unescaped key */
	assert_int_equal(load(s, "a.na\\=me=1\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:1: unknown setting 'a.na=me'");
	/* continuation at end of file */
	assert_int_equal(load(s, "a.name=abc\\", err, sizeof(err)), 0);
	assert_string_equal(s->name, "abc");
	/* empty value */
	assert_int_equal(load(s, "a.name=\n", err, sizeof(err)), 0);
	assert_string_equal(s->name, "");
}

static void test_errors(void **state)
{
	struct sample *s = *state;
	char err[256];

	assert_int_equal(load(s, "# x\n\nfoo.bar=1\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:3: unknown setting 'foo.bar'");
	assert_int_equal(load(s, "num.partitions=x\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:1: invalid value 'x' for 'num.partitions': "
				 "expected an integer between 1 and 1000000");
	/* line of the entry's start, through a continuation */
	assert_int_equal(load(s, "a.flag=true\nnum.partitions=\\\n  0\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:2: invalid value '0' for 'num.partitions': "
				 "expected an integer between 1 and 1000000");
	assert_int_equal(s->parts, 1); /* unchanged */
	assert_int_equal(load(s, "num.partitions=1000001\n", err, sizeof(err)), -EINVAL);
	assert_int_equal(load(s, "num.partitions=5ms\n", err, sizeof(err)), -EINVAL);
	assert_int_equal(load(s, "num.partitions=99999999999999999999\n", err, sizeof(err)), -EINVAL);
	assert_int_equal(load(s, "big.bytes=-2\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:1: invalid value '-2' for 'big.bytes': "
				 "expected an integer of at least -1");
	assert_int_equal(load(s, "a.flag=yes\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:1: invalid value 'yes' for 'a.flag': expected true or false");
	assert_int_equal(load(s, "a.mode=Now\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:1: invalid value 'Now' for 'a.mode': "
				 "expected one of CreateTime, LogAppendTime");
	assert_int_equal(load(s, "any.int=2147483648\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.properties:1: invalid value '2147483648' for 'any.int': "
				 "expected an integer");
	/* entries before the bad one are applied */
	assert_int_equal(load(s, "num.partitions=7\nbad=1\n", err, sizeof(err)), -EINVAL);
	assert_int_equal(s->parts, 7);
}

static void test_set_apply_unset(void **state)
{
	struct sample *s = *state;
	char err[256];

	assert_int_equal(conf_set(&tbl, s, "num.partitions", " 42 ", err, sizeof(err)), 0);
	assert_int_equal(s->parts, 42);
	assert_int_equal(conf_set(&tbl, s, "nope", "1", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "unknown setting 'nope'");
	assert_int_equal(conf_apply(&tbl, s, "a.name=x=y", err, sizeof(err)), 0);
	assert_string_equal(s->name, "x=y");
	assert_int_equal(conf_apply(&tbl, s, " some.dirs = a,,b ", err, sizeof(err)), 0);
	assert_string_equal(s->dirs, "a,b");
	assert_int_equal(conf_apply(&tbl, s, "novalue", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "expected key=value, got 'novalue'");
	assert_int_equal(conf_apply(&tbl, s, "num.partitions=0", err, sizeof(err)), -EINVAL);
	assert_true(conf_is_set(&tbl, s, "a.name"));
	assert_int_equal(conf_unset(&tbl, s, "a.name"), 0);
	assert_string_equal(s->name, "gregor");
	assert_false(conf_is_set(&tbl, s, "a.name"));
	assert_int_equal(conf_set(&tbl, s, "maybe.ms", "5", err, sizeof(err)), 0);
	assert_int_equal(conf_unset(&tbl, s, "maybe.ms"), 0);
	assert_true(s->maybe == CONF_UNSET64);
	assert_int_equal(conf_unset(&tbl, s, "nope"), -ENOENT);
}

static void test_copy(void **state)
{
	struct sample *s = *state, d;
	char err[64];

	assert_int_equal(conf_set(&tbl, s, "a.name", "copy me", err, sizeof(err)), 0);
	memset(&d, 0, sizeof(d));
	assert_int_equal(conf_copy(&tbl, &d, s), 0);
	assert_string_equal(d.name, "copy me");
	assert_ptr_not_equal(d.name, s->name);
	assert_true(d.set[4]);
	assert_int_equal(d.parts, s->parts);
	conf_release(&tbl, &d);
}

static void test_list_next(void **state)
{
	const char *p = " a , ,b,c ,";
	struct kstr it;

	(void)state;
	assert_true(conf_list_next(&p, &it));
	assert_int_equal(it.len, 1);
	assert_memory_equal(it.p, "a", 1);
	assert_true(conf_list_next(&p, &it));
	assert_memory_equal(it.p, "b", 1);
	assert_true(conf_list_next(&p, &it));
	assert_int_equal(it.len, 1);
	assert_memory_equal(it.p, "c", 1);
	assert_false(conf_list_next(&p, &it));
	p = NULL;
	assert_false(conf_list_next(&p, &it));
}

static void test_file(void **state)
{
	struct sample *s = *state;
	char path[] = "/tmp/test_conf_XXXXXX", err[512], want[600];
	int fd = mkstemp(path);
	const char *text = "num.partitions=9\nbogus.key=1\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	assert_int_equal(conf_load_file(&tbl, s, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: unknown setting 'bogus.key'", path);
	assert_string_equal(err, want);
	assert_int_equal(s->parts, 9);
	unlink(path);
	assert_int_equal(conf_load_file(&tbl, s, path, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	assert_string_equal(err, want);
}

static void test_doc(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	assert_int_equal(conf_write_doc(&tbl, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "| Name | Type | Default | Valid values | Dynamic | Description |"));
	assert_non_null(strstr(text, "| `num.partitions` | int | `1` | 1 &hellip; 1000000 | yes | Partitions. |"));
	assert_non_null(strstr(text, "| `maybe.ms` | long | *null* | &ge; -1 | no | Nullable. |"));
	assert_non_null(strstr(text, "`CreateTime`, `LogAppendTime`"));
	assert_non_null(strstr(text, "Name \\| with pipe."));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_forms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_apply_unset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
		cmocka_unit_test(test_list_next),
		cmocka_unit_test_setup_teardown(test_file, setup, teardown),
		cmocka_unit_test(test_doc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
