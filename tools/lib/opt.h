/* opt.h - the one command-line parser shared by every Gregor tool.
 *
 * Kafka's tools (joptsimple) take long options only: `--name value`,
 * `--name=value`, flags without a value, some options repeatable
 * (`--config k=v --config k2=v2`). A tool describes its options once, as a
 * git-style table; the parser, `--help`, `--version` and the usage text all
 * come from that table, so no tool hand-writes any of them.
 *
 *     static const struct opt_def defs[] = {
 *         { "bootstrap-server", true,  false, "<server>", "The Kafka server to connect to." },
 *         { "config",           true,  true,  "<k=v>",    "A topic config override (repeatable)." },
 *         { "create",           false, false, NULL,       "Create a new topic." },
 *         { NULL },
 *     };
 *     static const struct opt_cmd cmd = { "gregor-topics", "Create, delete, describe, or change a topic.", defs };
 *
 *     struct opts *o = opts_parse(&cmd, argc, argv);   // exits on --help, --version, bad flags
 *     opt_require(o, "bootstrap-server");                // exits 2 with usage if absent
 *     const char *bs = opt_str(o, "bootstrap-server", NULL);
 *     for (int i = 0; i < opt_count(o, "config"); i++) use(opt_nth(o, "config", i));
 *     opts_free(o);
 *
 * Exit codes (every tool): 0 success and --help/--version, 1 a runtime
 * failure (broker unreachable, broker error), 2 a usage error (unknown
 * option, missing value, a non-repeatable option given twice, a missing
 * required option, a bad number, a stray positional argument).
 *
 * Names passed to the accessors must be in the table: asking for an
 * unknown name is a programmer error (assert).
 */
#ifndef GREGOR_TOOLS_OPT_H
#define GREGOR_TOOLS_OPT_H

#include <stdbool.h>
#include <stdint.h>

/* Version printed by --version (with librdkafka's version). */
#define OPT_GREGOR_VERSION "0.1.0"

struct opt_def {
	const char *name;    /* long name without the leading "--"; NULL ends the table */
	bool has_arg;        /* true: takes a value; false: a flag */
	bool repeatable;     /* may be given more than once (values kept in order) */
	const char *metavar; /* shown in usage, e.g. "<String: topic>"; NULL for flags */
	const char *help;    /* one or more sentences; wrapped when printed */
};

struct opt_cmd {
	const char *prog;           /* program name, e.g. "gregor-topics" */
	const char *summary;        /* one paragraph printed above the option table */
	const struct opt_def *defs; /* ended by an entry with name == NULL */
};

/* A command word, git style: `gregor-transactions --bootstrap-server h:p list`. */
struct opt_subcmd {
	const char *name; /* NULL ends the table */
	const char *help; /* shown in the usage */
};

struct opts; /* parse result; opaque */

/* Parses argv[1..argc-1] against cmd. `--help` prints usage to stdout and
 * exits 0; `--version` prints "<prog> (Gregor) <v>, librdkafka <v>" and
 * exits 0 (both are implicit: a table need not list them). Any usage error
 * prints "<prog>: <what>" and the usage to stderr and exits 2. Returns a
 * heap object the caller frees with opts_free(). cmd must outlive it. */
struct opts *opts_parse(const struct opt_cmd *cmd, int argc, char **argv);
void opts_free(struct opts *o);
/* Same, for a tool that takes one command word from subcmds, anywhere
 * among the options (opt_subcmd() says which, NULL if none was given); a
 * word not in the table, or a second one, is a usage error. */
struct opts *opts_parse_subcmd(const struct opt_cmd *cmd, const struct opt_subcmd *subcmds, int argc, char **argv);
/* The command word given (its entry's name), or NULL. */
const char *opt_subcmd(const struct opts *o);

/* True if the option was given at least once. */
bool opt_has(const struct opts *o, const char *name);
/* How many times it was given (flags and options alike). */
int opt_count(const struct opts *o, const char *name);
/* The last value given, or dflt if the option is absent. Points into argv. */
const char *opt_str(const struct opts *o, const char *name, const char *dflt);
/* The i-th value (0 <= i < opt_count()) of a repeatable option. */
const char *opt_nth(const struct opts *o, const char *name, int i);
/* The value as a decimal integer in [min, max], or dflt if absent; a value
 * that is not such a number is a usage error (exit 2). */
int64_t opt_int(const struct opts *o, const char *name, int64_t dflt, int64_t min, int64_t max);

/* Exits 2 with "<prog>: Missing required argument "[<name>]"" and usage if
 * the option is absent (Kafka's wording). */
void opt_require(const struct opts *o, const char *name);

/* Prints "<prog>: <formatted message>" and the usage to stderr, exits 2. */
void opt_usage_error(const struct opts *o, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Program name of the last opts_parse() (for messages), "gregor" before. */
const char *opt_prog(void);

#endif
