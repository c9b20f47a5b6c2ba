/*
 * cli.c - the `mergescope` command line: a table of commands, each defined
 * in its own cmd_*.c and exporting one const ms_cmd with its option table;
 * this file walks the table, prints the command list and per-command
 * --help, and parses every command's options from its descriptor before
 * the command runs (ms__cmd_main), so errors always name the option that
 * is wrong and what was expected.
 */
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static const ms_cmd *const commands[] = {
	&ms_cmd_tui,    &ms_cmd_run,        &ms_cmd_fixture, &ms_cmd_export,
	&ms_cmd_report, &ms_cmd_merge_once, &ms_cmd_clean,   &ms_cmd_bench,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *out)
{
	fprintf(out,
	        "usage: mergescope [COMMAND] [OPTIONS]\n"
	        "\n"
	        "Replays a 24-hour day of trace writes through a real storage "
	        "merge engine\nand shows it live. Without a command: the TUI "
	        "on the default fixture.\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-11s %s\n", commands[i]->name,
		        commands[i]->summary);
	fprintf(out,
	        "\nenvironment:\n"
	        "  MERGESCOPE_SCRATCH  the scratch directory, an absolute path "
	        "(default\n"
	        "                      /dev/shm/mergescope-<uid>): run shards, "
	        "frozen shards;\n"
	        "                      `clean` and the start-up sweep look "
	        "only there and in\n"
	        "                      the cache\n"
	        "  XDG_CACHE_HOME      the cache is $XDG_CACHE_HOME/mergescope "
	        "(default\n"
	        "                      ~/.cache/mergescope): fixtures, run "
	        "databases\n");
	fprintf(out, "\n`mergescope COMMAND --help` describes a command; "
	             "`mergescope --version`\nsays which build this is. "
	             "An option a command does not take, or a value\nit "
	             "does not accept, exits 64 before anything runs, "
	             "naming it; a file\nor directory named that is "
	             "missing or not of the kind expected exits 2.\n"
	             "\"--\" ends the options; \"-\" is standard output "
	             "for export --out only.\n");
}

int
ms__cmd_not_built(const ms_cmd *c, const char *layer, FILE *err)
{
	fprintf(err,
	        "mergescope %s: %s is not built yet in this version; "
	        "nothing was run\n",
	        c->name, layer);
	return MS_EXIT_NOT_BUILT;
}

/* The option argument a names ("--x" or "--x=V"; *alen is the length of
 * "--x"), or -1. */
static ptrdiff_t
find_opt(const ms__opt *opts, size_t nopts, const char *a, size_t *alen)
{
	ptrdiff_t hit = -1;
	*alen = strcspn(a, "=");
	for (size_t k = 0; k < nopts; k++)
		if (strlen(opts[k].name) == *alen &&
		    strncmp(opts[k].name, a, *alen) == 0)
			hit = (ptrdiff_t)k;
	return hit;
}

/* Is v one of choices ("a|b|c")? */
static bool
is_choice(const char *choices, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = choices; *p;) {
		size_t k = strcspn(p, "|");
		if (k == n && strncmp(p, v, n) == 0)
			return true;
		p += k + (p[k] == '|');
	}
	return false;
}

/* "mergescope C: --x "V": expected a, b or c". */
static void
print_choices(const ms_cmd *c, const ms__opt *o, FILE *err)
{
	fprintf(err, "mergescope %s: %s \"%s\": expected ", c->name, o->name,
	        o->value);
	for (const char *p = o->choices; *p;) {
		size_t k = strcspn(p, "|");
		fprintf(err, "%.*s", (int)k, p);
		p += k + (p[k] == '|');
		if (*p)
			fputs(strchr(p, '|') ? ", " : " or ", err);
	}
	fputc('\n', err);
}

/* Is a one of the command's options ("--x" or "--x=V")? Such a word
 * after an option that takes a value is a value forgotten, not the value:
 * `run --db --serial` named its database "--serial" and ran without
 * --serial. A value that starts like an option is written --db=--x. */
static bool
is_option_of(const ms__opt *opts, size_t nopts, const char *a)
{
	size_t alen;
	return strncmp(a, "--", 2) == 0 && find_opt(opts, nopts, a, &alen) >= 0;
}

/* "--" ends the options (the POSIX convention): it is never an option's
 * value, and every word after it is an operand, which no command but
 * `fixture check DIR` takes. */
static bool
is_end_of_options(const char *a)
{
	return strcmp(a, "--") == 0;
}

/* --help or -h, where an option may stand. */
static bool
is_help(const char *a)
{
	return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

/* Is a a word the parser reads as an option, not as the value of the
 * option before it: one of the command's options or --help (`export
 * --db --help` asks for help; it never names a database "--help"). */
static bool
is_option_word(const ms__opt *opts, size_t nopts, const char *a)
{
	return is_option_of(opts, nopts, a) || strcmp(a, "--help") == 0 ||
	       is_end_of_options(a);
}

/* A word parsed as no option: an option this command does not have, or
 * a word (any word after "--") where it takes options only. */
static int
not_an_option(const ms_cmd *c, const char *a, bool operand, FILE *err)
{
	bool word = operand || a[0] != '-';
	fprintf(err, "mergescope %s: %s \"%s\"%s (see mergescope %s --help)\n",
	        c->name, word ? "unexpected argument" : "unknown option", a,
	        word ? ": the command takes options only" : "", c->name);
	return MS_EXIT_USAGE;
}

/* Where --help or -h stands: found where an option may stand, walking
 * argv as the parser does: not after "--", and never as an option's value
 * (`export --filter -h` filters on "-h"). A command without an option
 * table (its own parser, `fixture`) is asked for help by its first word
 * only. Its index, or 0. */
static int
help_at(const ms_cmd *c, int argc, char **argv)
{
	for (int i = 1; i < argc && !is_end_of_options(argv[i]); i++) {
		const char *a = argv[i];
		if (is_help(a))
			return i;
		if (!c->opts)
			return 0;
		size_t alen;
		ptrdiff_t k = find_opt(c->opts, c->nopts, a, &alen);
		if (k >= 0 && c->opts[k].arg && a[alen] != '=' &&
		    i + 1 < argc &&
		    !is_option_word(c->opts, c->nopts, argv[i + 1]))
			i++;
	}
	return 0;
}

/* The other words of a line that asks for help (h: --help's index): the
 * command's options, each with its value or without it, and more help
 * words; a word that is none (a stray word, an option the command does
 * not take, a word after "--") is refused as the parser refuses it, as
 * `help run extra` and `--version extra` are (`run --help extra` printed
 * the help). A command without an option table takes no other word. */
static int
help_alone(const ms_cmd *c, int h, int argc, char **argv, FILE *err)
{
	if (!c->opts && h + 1 < argc) {
		fprintf(err,
		        "mergescope %s: %s takes no other argument (got "
		        "\"%s\")\n",
		        c->name, argv[h], argv[h + 1]);
		return MS_EXIT_USAGE;
	}
	if (!c->opts)
		return 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t alen;
		if (is_end_of_options(a))
			return i + 1 < argc
			               ? not_an_option(c, argv[i + 1], true, err)
			               : 0;
		if (is_help(a))
			continue;
		ptrdiff_t k = find_opt(c->opts, c->nopts, a, &alen);
		if (k < 0)
			return not_an_option(c, a, false, err);
		if (c->opts[k].arg && a[alen] != '=' && i + 1 < argc &&
		    !is_option_word(c->opts, c->nopts, argv[i + 1]))
			i++;
	}
	return 0;
}

int
ms__cmd_help(const ms_cmd *c, int argc, char **argv, FILE *out, FILE *err)
{
	int h = help_at(c, argc, argv);
	if (!h)
		return -1;
	int rc = help_alone(c, h, argc, argv, err);
	if (!rc)
		fputs(c->usage, out);
	return rc;
}

static void
value_is_option(const ms_cmd *c, const ms__opt *o, const char *next, FILE *err)
{
	fprintf(err,
	        "mergescope %s: option %s expects %s, not %s \"%s\" "
	        "(a value that starts like an option is written %s=VALUE)\n",
	        c->name, o->name, o->arg,
	        is_end_of_options(next) ? "the end of the options" : "the option",
	        next, o->name);
}

/* A FILE or DIR value, as written, each one given (a repeated --collect
 * too): an empty name is no file or directory, in every command (it was
 * refused only by `run` and `tui`, and elsewhere came out as an error of
 * the command's work, exit 2, or was passed over for a required option
 * missing); "-" is standard output for export --out only (`dash`), and
 * elsewhere was a file or directory named "-" (`run --db -`) or one that
 * does not exist. */
static int
path_value(const ms_cmd *c, const ms__opt *o, const char *val, FILE *err)
{
	bool dir = strcmp(o->arg, "DIR") == 0;
	if (!dir && strcmp(o->arg, "FILE") != 0)
		return 0;
	const char *what = dir ? "directory" : "file";
	if (!val[0]) {
		fprintf(err, "mergescope %s: %s \"\": expected a %s name\n",
		        c->name, o->name, what);
		return MS_EXIT_USAGE;
	}
	if (strcmp(val, "-") == 0 && !o->dash) {
		fprintf(err,
		        "mergescope %s: %s -: \"-\" stands for standard "
		        "output only in export --out; give a %s name (./- for "
		        "one named -)\n",
		        c->name, o->name, what);
		return MS_EXIT_USAGE;
	}
	return 0;
}

int
ms__cmd_parse(const ms_cmd *c, int argc, char **argv, ms__opt *opts,
              size_t nopts, FILE *err)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		ms__opt *o = NULL;
		const char *val = NULL;
		size_t alen;
		if (is_end_of_options(a)) {
			/* No command takes an operand here: a word after
			 * "--" is refused as such, never read as an option. */
			if (i + 1 < argc)
				return not_an_option(c, argv[i + 1], true, err);
			break;
		}
		ptrdiff_t k = find_opt(opts, nopts, a, &alen);
		if (k >= 0)
			o = &opts[k];
		/* A word that is not an option at all: a value whose option
		 * was left out. */
		if (!o)
			return not_an_option(c, a, false, err);
		if (a[alen] == '=') {
			val = a + alen + 1;
			if (!o->arg) {
				fprintf(err,
				        "mergescope %s: option %s takes no "
				        "value\n",
				        c->name, o->name);
				return MS_EXIT_USAGE;
			}
		} else if (o->arg) {
			if (i + 1 >= argc) {
				fprintf(err,
				        "mergescope %s: option %s expects %s\n",
				        c->name, o->name, o->arg);
				return MS_EXIT_USAGE;
			}
			if (is_option_word(opts, nopts, argv[i + 1])) {
				value_is_option(c, o, argv[i + 1], err);
				return MS_EXIT_USAGE;
			}
			val = argv[++i];
		}
		if (o->count > 0 && !o->repeat) {
			if (o->arg)
				fprintf(err,
				        "mergescope %s: option %s given twice "
				        "(\"%s\" and \"%s\")\n",
				        c->name, o->name, o->value, val);
			else
				fprintf(err,
				        "mergescope %s: option %s given "
				        "twice\n",
				        c->name, o->name);
			return MS_EXIT_USAGE;
		}
		int rc = val ? path_value(c, o, val, err) : 0;
		if (rc)
			return rc;
		o->count++;
		o->value = val;
	}
	/* A value given wrong before an option left out: the one is a
	 * mistake in what was typed, the other may be the next thing the
	 * user meant to type (`export --format xml` said --db was
	 * required). */
	for (size_t k = 0; k < nopts; k++) {
		if (opts[k].count && opts[k].choices &&
		    !is_choice(opts[k].choices, opts[k].value)) {
			print_choices(c, &opts[k], err);
			return MS_EXIT_USAGE;
		}
	}
	for (size_t k = 0; k < nopts; k++) {
		if (opts[k].required && ms__opt_missing(c->name, &opts[k], err))
			return MS_EXIT_USAGE;
	}
	return 0;
}

int
ms__opt_missing(const char *cmd, const ms__opt *o, FILE *err)
{
	if (o->count)
		return 0;
	fprintf(err, "mergescope %s: option %s %s is required\n", cmd,
	        o->name, o->arg);
	return MS_EXIT_USAGE;
}

bool
ms__parse_count(const char *s, unsigned long lo, unsigned long hi,
                unsigned long *out)
{
	unsigned long n = 0;
	if (!s[0] || (s[0] == '0' && s[1]))
		return false;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || n > (hi - (unsigned)(*p - '0')) / 10)
			return false;
		n = n * 10 + (unsigned)(*p - '0');
	}
	if (n < lo)
		return false;
	*out = n;
	return true;
}

size_t
ms__cmd_values(const ms__cmd_args *a, size_t k, const char **out, size_t cap)
{
	size_t n = 0;
	for (int i = 1; i < a->argc && !is_end_of_options(a->argv[i]); i++) {
		size_t alen;
		ptrdiff_t hit = find_opt(a->o, a->n, a->argv[i], &alen);
		if (hit < 0 || !a->o[hit].arg)
			continue;
		const char *val = a->argv[i][alen] == '='
		                          ? a->argv[i] + alen + 1
		                  : i + 1 < a->argc ? a->argv[++i]
		                                    : NULL;
		if ((size_t)hit == k && val) {
			if (n < cap)
				out[n] = val;
			n++;
		}
	}
	return n;
}

int
ms__cmd_main(const ms_cmd *c, int argc, char **argv, FILE *out, FILE *err)
{
	int hrc = ms__cmd_help(c, argc, argv, out, err);
	if (hrc >= 0)
		return hrc;
	if (c->run)
		return c->run(argc, argv, out, err);
	ms__opt o[MS__MAX_OPTS] = { { 0 } };
	if (c->nopts > MS__MAX_OPTS) {
		fprintf(err, "mergescope %s: %zu options, at most %d\n",
		        c->name, c->nopts, MS__MAX_OPTS);
		return MS_EXIT_ERROR;
	}
	memcpy(o, c->opts, c->nopts * sizeof(o[0]));
	int rc = ms__cmd_parse(c, argc, argv, o, c->nopts, err);
	if (rc)
		return rc;
	ms__cmd_args a = { .argc = argc, .argv = argv, .o = o, .n = c->nopts };
	return c->exec(&a, out, err);
}

static int
dispatch(int argc, char **argv, FILE *out, FILE *err)
{
	if (argc < 2 || argv[1][0] == '-') {
		if (argc >= 2 && is_help(argv[1])) {
			/* As --version and `help`: one word (`--help
			 * extra` printed the list). */
			if (argc > 2) {
				fprintf(err,
				        "mergescope: %s takes no other "
				        "argument (got \"%s\"); a command's "
				        "help: mergescope help COMMAND\n",
				        argv[1], argv[2]);
				return MS_EXIT_USAGE;
			}
			usage(out);
			return 0;
		}
		if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
			/* Not the TUI's option: it was refused as one
			 * ("mergescope tui: unknown option"). */
			if (argc > 2) {
				fprintf(err, "mergescope: --version takes no "
				             "other argument (got \"%s\")\n",
				        argv[2]);
				return MS_EXIT_USAGE;
			}
			char v[256];
			ms_build_describe(v, sizeof(v));
			fprintf(out, "%s\n", v);
			return 0;
		}
		/* Bare `mergescope` into a file or a pipe (`| less`, a
		 * look at what it is): refused at once, before the day's
		 * fixture is built and a whole day run for an output no
		 * one watches. With options, tui hands them to run. */
		if (argc < 2 && !isatty(STDOUT_FILENO)) {
			fprintf(err, "mergescope: the TUI needs a terminal "
			             "and standard output is not one; for a "
			             "run without one: mergescope run "
			             "--headless (mergescope --help lists "
			             "the commands)\n");
			return MS_EXIT_USAGE;
		}
		/* Plain `mergescope [tui options]`: the TUI. */
		return ms__cmd_main(&ms_cmd_tui, argc, argv, out, err);
	}
	/* `help COMMAND`: its --help; a command there is not is refused as
	 * below (it printed the command list, exit 0). */
	bool help = strcmp(argv[1], "help") == 0;
	/* `help COMMAND` takes one word (`help run extra` gave run's help;
	 * `help --help extra` the list). */
	if (help && argc > 3) {
		fprintf(err, "mergescope help: unexpected argument \"%s\": "
		             "help takes one command (mergescope help COMMAND)\n",
		        argv[3]);
		return MS_EXIT_USAGE;
	}
	/* `help --help` and `help help` are help too (they were an unknown
	 * command). */
	if (help && (argc < 3 || is_help(argv[2]) ||
	             strcmp(argv[2], "help") == 0)) {
		usage(out);
		return 0;
	}
	const char *name = argv[help ? 2 : 1];
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(name, commands[i]->name) != 0)
			continue;
		if (help) {
			fputs(commands[i]->usage, out);
			return 0;
		}
		return ms__cmd_main(commands[i], argc - 1, argv + 1, out, err);
	}
	fprintf(err, "mergescope: unknown command \"%s\"\n\n", name);
	usage(err);
	return MS_EXIT_USAGE;
}

int
ms_cli_main(int argc, char **argv, FILE *out, FILE *err)
{
	int rc = dispatch(argc, argv, out, err);
	/* The run databases it wrote are no longer in use. */
	ms__db_owner_release();
	/* What a command printed must have arrived: a full disk or a closed
	 * standard output is a failure, not a silent success. */
	errno = 0;
	bool bad = fflush(out) != 0;
	int e = errno;
	bad = bad || ferror(out);
	/* Also after a verdict (1: a gate failed, an unfinished run, runs
	 * that differ): the report that says why never arrived. */
	if (bad && (rc == 0 || rc == 1)) {
		bool cmd = argc >= 2 && argv[1][0] != '-';
		fprintf(err,
		        "mergescope%s%s: writing to standard output "
		        "failed%s%s\n",
		        cmd ? " " : "", cmd ? argv[1] : "", e ? ": " : "",
		        e ? strerror(e) : "");
		rc = MS_EXIT_ERROR;
	}
	return rc;
}
