/* opt.c - the shared option parser (see opt.h).
 *
 * Values are not copied: each is a pointer into argv (which lives as long
 * as the process). Per option we keep a count and a small growable array
 * of values; the table is tiny, so name lookup is a linear scan. The usage
 * text imitates joptsimple's two-column "Option / Description" table, which
 * is what Kafka's own tools print.
 */
#include "opt.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <librdkafka/rdkafka.h>

struct opt_val {
	int count;         /* times given */
	int cap;           /* capacity of vals */
	const char **vals; /* values in order (NULL for flags) */
};

struct opts {
	const struct opt_cmd *cmd;
	const struct opt_subcmd *subcmds; /* NULL: no command word accepted */
	const char *subcmd;               /* the command word given, or NULL */
	int n;                            /* entries in cmd->defs */
	struct opt_val *v;                /* n entries, parallel to cmd->defs */
};

static const char *prog_name = "gregor";

#define USAGE_COL 41 /* description column, as joptsimple */
#define USAGE_WIDTH 80

const char *opt_prog(void)
{
	return prog_name;
}

static int def_index(const struct opt_cmd *cmd, const char *name, size_t len)
{
	for (int i = 0; cmd->defs[i].name; i++) {
		if (strlen(cmd->defs[i].name) == len && !memcmp(cmd->defs[i].name, name, len))
			return i;
	}
	return -1;
}

static int lookup(const struct opts *o, const char *name)
{
	int i = def_index(o->cmd, name, strlen(name));

	assert(i >= 0 && "option name not in the tool's table");
	return i;
}

/* Prints text word-wrapped into the description column; the first line
 * continues wherever the caller left the cursor (at column col). */
static void print_wrapped(FILE *fp, const char *text, int col)
{
	const char *p = text;
	int width = USAGE_WIDTH - USAGE_COL;

	if (col < USAGE_COL) {
		fprintf(fp, "%*s", USAGE_COL - col, "");
	} else {
		fprintf(fp, "\n%*s", USAGE_COL, "");
	}
	col = 0;
	while (*p) {
		size_t w = strcspn(p, " ");

		if (col > 0 && col + 1 + (int)w > width) {
			fprintf(fp, "\n%*s  ", USAGE_COL, "");
			col = 2;
		} else if (col > 0) {
			fputc(' ', fp);
			col++;
		}
		fwrite(p, 1, w, fp);
		col += (int)w;
		p += w;
		while (*p == ' ')
			p++;
	}
	fputc('\n', fp);
}

static void print_usage(const struct opts *o, FILE *fp)
{
	const struct opt_cmd *cmd = o->cmd;
	static const struct opt_def builtin[] = {
		{ "help", false, false, NULL, "Print usage information." },
		{ "version", false, false, NULL, "Display Gregor and librdkafka versions." },
	};

	fprintf(fp, "Usage: %s [OPTIONS]%s\n%s\n", cmd->prog, o->subcmds ? " COMMAND [OPTIONS]" : "", cmd->summary);
	if (o->subcmds)
		fprintf(fp, "%-*s%s\n%-*s%s\n", USAGE_COL, "Command", "Description", USAGE_COL, "-------",
			"-----------");
	for (int i = 0; o->subcmds && o->subcmds[i].name; i++)
		print_wrapped(fp, o->subcmds[i].help, fprintf(fp, "%s", o->subcmds[i].name));
	fprintf(fp, "%-*s%s\n%-*s%s\n", USAGE_COL, "Option", "Description", USAGE_COL, "------", "-----------");
	for (int i = 0; cmd->defs[i].name; i++) {
		const struct opt_def *d = &cmd->defs[i];
		int col = fprintf(fp, "--%s%s%s", d->name, d->metavar ? " " : "", d->metavar ? d->metavar : "");

		print_wrapped(fp, d->help, col);
	}
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++) {
		int col = fprintf(fp, "--%s", builtin[i].name);

		print_wrapped(fp, builtin[i].help, col);
	}
}

static void __attribute__((noreturn, format(printf, 2, 0)))
usage_fail(const struct opts *o, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", o->cmd->prog);
	vfprintf(stderr, fmt, ap);
	fputs("\n", stderr);
	print_usage(o, stderr);
	exit(2);
}

static void __attribute__((noreturn, format(printf, 2, 3))) cmd_fail(const struct opts *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_fail(o, fmt, ap);
}

void opt_usage_error(const struct opts *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_fail(o, fmt, ap);
}

static void add_value(struct opts *o, int i, const char *val)
{
	struct opt_val *v = &o->v[i];

	if (v->count > 0 && !o->cmd->defs[i].repeatable)
		cmd_fail(o, "Option \"--%s\" given more than once", o->cmd->defs[i].name);
	if (val) {
		if (v->count == v->cap) {
			v->cap = v->cap ? v->cap * 2 : 4;
			v->vals = realloc(v->vals, (size_t)v->cap * sizeof(*v->vals));
			if (!v->vals) {
				fprintf(stderr, "%s: out of memory\n", o->cmd->prog);
				exit(1);
			}
		}
		v->vals[v->count] = val;
	}
	v->count++;
}

/* Handles argv[*ip]; advances *ip past a separate value. */
static void parse_one(struct opts *o, int argc, char **argv, int *ip)
{
	const char *arg = argv[*ip];
	const char *name = arg + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	int i;

	if (strncmp(arg, "--", 2) != 0 && o->subcmds && !o->subcmd) {
		for (int k = 0; o->subcmds[k].name; k++)
			if (!strcmp(arg, o->subcmds[k].name))
				o->subcmd = o->subcmds[k].name;
		if (!o->subcmd)
			cmd_fail(o, "invalid command \"%s\"", arg);
		return;
	}
	if (strncmp(arg, "--", 2) != 0 || len == 0)
		cmd_fail(o, "Unexpected argument \"%s\"", arg);
	if (!eq && !strcmp(name, "help")) {
		print_usage(o, stdout);
		exit(0);
	}
	if (!eq && !strcmp(name, "version")) {
		printf("%s (Gregor) %s, librdkafka %s\n", o->cmd->prog, OPT_GREGOR_VERSION, rd_kafka_version_str());
		exit(0);
	}
	i = def_index(o->cmd, name, len);
	if (i < 0)
		cmd_fail(o, "%.*s is not a recognized option", (int)len + 2, arg);
	if (!o->cmd->defs[i].has_arg) {
		if (eq)
			cmd_fail(o, "Option \"--%s\" does not take an argument", o->cmd->defs[i].name);
		add_value(o, i, NULL);
		return;
	}
	if (eq) {
		add_value(o, i, eq + 1);
		return;
	}
	if (*ip + 1 >= argc)
		cmd_fail(o, "Option \"--%s\" requires an argument", o->cmd->defs[i].name);
	*ip += 1;
	add_value(o, i, argv[*ip]);
}

struct opts *opts_parse(const struct opt_cmd *cmd, int argc, char **argv)
{
	return opts_parse_subcmd(cmd, NULL, argc, argv);
}

struct opts *opts_parse_subcmd(const struct opt_cmd *cmd, const struct opt_subcmd *subcmds, int argc, char **argv)
{
	struct opts *o = calloc(1, sizeof(*o));

	prog_name = cmd->prog;
	if (!o)
		goto out_oom;
	o->cmd = cmd;
	o->subcmds = subcmds;
	while (cmd->defs[o->n].name)
		o->n++;
	o->v = calloc((size_t)o->n + 1, sizeof(*o->v));
	if (!o->v)
		goto out_oom;
	for (int i = 1; i < argc; i++)
		parse_one(o, argc, argv, &i);
	return o;
out_oom:
	fprintf(stderr, "%s: out of memory\n", cmd->prog);
	exit(1);
}

void opts_free(struct opts *o)
{
	if (!o)
		return;
	for (int i = 0; i < o->n; i++) {
		free(o->v[i].vals);
		o->v[i].vals = NULL;
	}
	free(o->v);
	o->v = NULL;
	free(o);
}

bool opt_has(const struct opts *o, const char *name)
{
	return o->v[lookup(o, name)].count > 0;
}

int opt_count(const struct opts *o, const char *name)
{
	return o->v[lookup(o, name)].count;
}

const char *opt_str(const struct opts *o, const char *name, const char *dflt)
{
	int i = lookup(o, name);

	assert(o->cmd->defs[i].has_arg);
	return o->v[i].count ? o->v[i].vals[o->v[i].count - 1] : dflt;
}

const char *opt_nth(const struct opts *o, const char *name, int n)
{
	int i = lookup(o, name);

	assert(o->cmd->defs[i].has_arg && n >= 0 && n < o->v[i].count);
	return o->v[i].vals[n];
}

int64_t opt_int(const struct opts *o, const char *name, int64_t dflt, int64_t min, int64_t max)
{
	const char *s = opt_str(o, name, NULL);
	char *end;
	long long v;

	if (!s)
		return dflt;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		opt_usage_error(o, "Option \"--%s\": \"%s\" is not a number in [%lld, %lld]", name, s, (long long)min,
				(long long)max);
	return v;
}

const char *opt_subcmd(const struct opts *o)
{
	return o->subcmd;
}

void opt_require(const struct opts *o, const char *name)
{
	if (!opt_has(o, name))
		opt_usage_error(o, "Missing required argument \"[%s]\"", name);
}
