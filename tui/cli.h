/*
 * cli.h - shared by cli.c and the cmd_*.c files: the option table every
 * command parses its arguments with.
 */
#ifndef MS_TUI_CLI_H
#define MS_TUI_CLI_H

#include "ms_fs.h"
#include "ms_pipeline.h"
#include "tui_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One option of a command. `arg` names the value ("DIR") or is NULL for
 * a flag; `choices` ("a|b|c"), when set, are the only values accepted.
 * A FILE or DIR value "-" is refused unless `dash` (export --out: "-"
 * is standard output).
 * After parsing, `count` says how often it was given and `value` holds
 * the last value (borrowed from argv). */
typedef struct ms__opt {
	const char *name;
	const char *arg;
	const char *choices;
	bool required;
	bool repeat;
	bool dash;
	int count;
	const char *value;
} ms__opt;

/* The most options one command has. */
#define MS__MAX_OPTS 32

/* What a command's exec receives: its words (argv[0] is the command's
 * name) and its option table, filled in by the parser. */
typedef struct ms__cmd_args {
	int argc;
	char **argv;
	const ms__opt *o; /* the table's entries in its order, n of them; */
	size_t n;         /* entries past n (up to MS__MAX_OPTS) are zero */
} ms__cmd_args;

/* Run command c on argv: --help prints its usage; a command with run gets
 * argv as it is; else argv is parsed against c's options and exec called
 * with the result. Returns the command's exit status (MS_EXIT_USAGE after
 * one line on err naming the option and what it expects). */
int ms__cmd_main(const ms_cmd *c, int argc, char **argv, FILE *out, FILE *err);
/* Parse argv[1..argc) against opts ("--x V" and "--x=V"): unknown options,
 * missing values, values given to flags, options given twice, an empty
 * FILE or DIR value or "-" (but where `dash`), required options missing and values outside their
 * choices. Returns 0, or
 * MS_EXIT_USAGE after printing what is wrong to err. */
int ms__cmd_parse(const ms_cmd *c, int argc, char **argv, ms__opt *opts,
                  size_t nopts, FILE *err);
/* An option a command requires (o, borrowed) left out: one line on err
 * naming it as `mergescope CMD: option --x V is required` and
 * MS_EXIT_USAGE; 0 when it was given. Commands that check a required
 * option only after its neighbours' values call it themselves. */
int ms__opt_missing(const char *cmd, const ms__opt *o, FILE *err);
/* A count as every option that takes one reads it: digits only, no
 * sign, space or leading zero, from lo to hi (hi < ULONG_MAX / 10), into
 * *out; false (nothing written) otherwise (strtol took "+5" and " 5"). */
bool ms__parse_count(const char *s, unsigned long lo, unsigned long hi,
                     unsigned long *out);
/* Every value of the repeatable option a->o[k], in the order given.
 * Stores at most cap values in out and returns how many were given. */
size_t ms__cmd_values(const ms__cmd_args *a, size_t k, const char **out,
                      size_t cap);

/* ---- The option tables (cli_opts.c) -------------------------------------- */

/* Each command's descriptor points at its table; tests/fuzz/fuzz_cli.c
 * parses with the same tables. */

/* The help lines of --work-dir, the same in `run` and `tui`. */
#define MS__HELP_WORK_DIR                                                      \
	"  --work-dir DIR       where the run's scratch shard goes (new or\n"  \
	"                       empty; deleted after the run, so --db\n"     \
	"                       and --json go elsewhere). Default:\n"         \
	"                       the scratch directory when it has room\n"      \
	"                       for four times the day (by default\n"         \
	"                       /dev/shm/mergescope-<uid>, on a tmpfs;\n"      \
	"                       MERGESCOPE_SCRATCH=DIR names another),\n"      \
	"                       else the cache directory's work/ (one\n"       \
	"                       line says which)\n"

/* The help lines of --variant and --chain, the same in `run` and `tui`.
 * The link limit is the chain's, MS_CHAIN_MAX_LINKS (cmd_run.c checks). */
#define MS__HELP_CHAIN_MAX_LINKS 8 /* the "at most 8" below */
#define MS__HELP_VARIANT_CHAIN                                                 \
	"  --variant V          disabled, alwayskeep, detdrop:PCT,\n"          \
	"                       skywalking (default) or a chain as --chain\n"  \
	"  --chain SPEC         sampler links in order, at most 8, e.g.\n"     \
	"                       'skywalking,detdrop:{\"percent\":35}'\n"

/* The help lines of --plugin-host, --profile and --envelope, which `run`
 * and `tui` accept alike. */
#define MS__HELP_HOST_AND_LIMITS                                               \
	"  --plugin-host H      where Decide runs: inproc (default, worker\n"  \
	"                       threads) or process (a host process per\n"     \
	"                       link: a crash or hang fails the link open)\n"  \
	"  --profile SPEC       limits, e.g. cpus=2,mem=4g: the engine "       \
	"sizes\n"                                                              \
	"                       itself from them and, where a cgroup\n"        \
	"                       hierarchy is writable, runs in a cgroup\n"     \
	"                       that enforces them (see --envelope);\n"        \
	"                       cpus from 0.01, mem from 64m to 64t\n"         \
	"                       (k, m, g, t: powers of 1024)\n"                \
	"  --envelope E         how --profile is held: auto (default: a\n"     \
	"                       real cgroup where possible, else\n"            \
	"                       emulated), cgroup (a real one or fail),\n"     \
	"                       emulated (sized from it, not enforced);\n"     \
	"                       only with --profile\n"

/* `tui` and `run` accept the same options (`tui` hands them to `run`
 * headless); --json, --force and --freeze-at are the headless run's:
 * `tui` refuses them for the screen. */
enum ms__run_opt {
	MS__RO_FIXTURE,
	MS__RO_PRESET,
	MS__RO_VARIANT,
	MS__RO_CHAIN,
	MS__RO_GRACE,
	MS__RO_SERIAL,
	MS__RO_PROFILE,
	MS__RO_DB,
	MS__RO_WORKDIR,
	MS__RO_WAIT_TIMEOUT,
	MS__RO_CACHE,
	MS__RO_BREAK,
	MS__RO_PAUSED,
	MS__RO_SPEED,
	MS__RO_NOCOLOR,
	MS__RO_ASCII,
	MS__RO_HEADLESS,
	MS__RO_PLUGIN_HOST,
	MS__RO_ENVELOPE,
	MS__RO_STAGING,
	MS__RO_CHECKPOINT_EVERY,
	MS__RO_JSON,
	MS__RO_ALLOW_FAIL_OPEN,
	MS__RO_FORCE,
	MS__RO_FREEZE_AT,
	MS__RO_COUNT
};
extern const ms__opt ms__run_opts[MS__RO_COUNT];

/* `fixture build` */
enum {
	MS__FX_PRESET,
	MS__FX_SEED,
	MS__FX_OUT,
	MS__FX_OPENING,
	MS__FX_SCALE,
	MS__FX_DICTIONARY,
	MS__FX_COUNT
};
extern const ms__opt ms__fixture_opts[MS__FX_COUNT];

enum {
	MS__EX_DB,
	MS__EX_FORMAT,
	MS__EX_OUT,
	MS__EX_FILTER,
	MS__EX_FORCE,
	MS__EX_COUNT
};
extern const ms__opt ms__export_opts[MS__EX_COUNT];

enum {
	MS__RP_DB,
	MS__RP_VS,
	MS__RP_JSON,
	MS__RP_HTML,
	MS__RP_FORCE,
	MS__RP_COLLECT,
	MS__RP_COUNT
};
extern const ms__opt ms__report_opts[MS__RP_COUNT];

/* `bench` */
enum {
	MS__BN_VARIANTS,
	MS__BN_REPS,
	MS__BN_FIXTURE,
	MS__BN_PRESET,
	MS__BN_PROFILE,
	MS__BN_CACHE,
	MS__BN_OUT,
	MS__BN_EMIT,
	MS__BN_COLLECT,
	MS__BN_ENVELOPE,
	MS__BN_JOBS,
	MS__BN_VARIANT,
	MS__BN_COUNT
};
extern const ms__opt ms__bench_opts[MS__BN_COUNT];

enum {
	MS__MO_FROZEN,
	MS__MO_VARIANT,
	MS__MO_REPS,
	MS__MO_GRACE,
	MS__MO_PLUGIN_HOST,
	MS__MO_STAGING,
	MS__MO_CLOCK,
	MS__MO_COUNT
};
extern const ms__opt ms__merge_once_opts[MS__MO_COUNT];

enum { MS__CL_RUNS, MS__CL_FROZEN, MS__CL_OLDER, MS__CL_DRY, MS__CL_COUNT };
extern const ms__opt ms__clean_opts[MS__CL_COUNT];

/* ---- What mergescope leaves on disk (scratch.c) -------------------------- */

enum ms__item_kind {
	MS__IT_LEFTOVER = 0, /* scratch or temporary directory of a process */
	MS__IT_FROZEN = 1,   /* a frozen shard */
	MS__IT_RUN = 2,      /* a run database (with its -wal and -shm) */
	MS__IT_OTHER = 3,    /* none of these: listed, never removed */
};

/* A run's event database in the cache's runs/ has an owner record (the
 * run's process, ms_owner.h) beside it, DB plus this suffix (DB's name cut
 * short where that would pass NAME_MAX, ms__db_owner_path), while the
 * process that writes it runs. */
#define MS__DB_OWNER_SUFFIX "-owner"

typedef struct ms__scratch_item {
	enum ms__item_kind kind;
	char what[32]; /* "scratch shard", "frozen shard", "run database" */
	char path[4096];
	uint64_t bytes;       /* disk space, each inode once (du -s) */
	uint64_t fresh_bytes; /* of which no item listed before counted */
	int64_t age_s;        /* since last modified */
	bool in_use; /* its owner (or the run writing it, or a merge-once
	              * reading it) is alive */
	pid_t pid;   /* owner, 0 when unknown */
	char why[4200]; /* MS__IT_OTHER: why it is not recognised */
} ms__scratch_item;

typedef int (*ms__scratch_fn)(void *arg, const ms__scratch_item *it);
/* Call fn for each item in the places scratch.c looks: the scratch root
 * (ms_scratch_root) and the cache, nothing else; MS__IT_OTHER items only
 * when others (their trees are not walked for a size otherwise). A
 * non-zero return of fn stops the walk and is returned; a bad
 * MERGESCOPE_SCRATCH is an error (eb names it) before any item. */
int ms__scratch_each(ms__scratch_fn fn, void *arg, bool others,
                     ms_errbuf *eb);
/* Remove one item: 0, MS_ERR_STATE when in use, or an errno-mapped error. */
int ms__scratch_remove(const ms__scratch_item *it);
/* 0, or after one line on err naming a bad MERGESCOPE_SCRATCH, for
 * commands to refuse it before their work: MS_EXIT_USAGE when its words
 * are wrong (not an absolute path, too long), MS_EXIT_ERROR when the path
 * is (a file, one that cannot be looked at), as for a path given on the
 * command line. */
int ms__scratch_check(FILE *err, const char *cmd);
/* Remove the leftovers of dead processes; when there were any, one line on
 * err says how many and how much was freed. A bad MERGESCOPE_SCRATCH is
 * one line on err naming it and the status ms__scratch_check gives; else
 * 0. */
int ms__scratch_sweep(FILE *err, const char *cmd);
/* Remove what builds of the fixture directory dir left beside it when
 * they were killed ("<dir>.tmp-<pid>" and what such a build put next to
 * its staging directory), each whose owner is gone; one line on err for
 * each (cmd names the command). Anywhere dir is, in the cache or not:
 * the next build of dir finds them. */
void ms__scratch_sweep_beside(FILE *err, const char *cmd, const char *dir);

/* The names clean reads in a scratch place. ms__scratch_owner_tmp: is
 * name the owner record of a run database as written before its rename,
 * "<db>-owner.tmp-<pid>", and whose pid (> 0) into *pid. */
bool ms__scratch_owner_tmp(const char *name, pid_t *pid);
/* Does name end in ".frozen-" and digits (a frozen shard's directory)? */
bool ms__scratch_frozen_name(const char *name);
/* When db lies in the cache's runs/ (where `clean` looks), write its owner
 * record (DB-owner) naming this process, so `clean` leaves it alone while
 * this process runs; ms__db_owner_release removes every record this process
 * wrote. 0, or an error naming the file (eb). */
int ms__db_owner_take(const char *db, ms_errbuf *eb);
/* Where run database db's owner record lies, into out (n bytes): DB-owner,
 * db's last name cut short where that would pass NAME_MAX
 * (ms_fs_name_beside). MS_ERR_RANGE and "" if it does not fit. */
int ms__db_owner_path(char *out, size_t n, const char *db);
void ms__db_owner_release(void);
/* $XDG_CACHE_HOME/mergescope (else ~/.cache/mergescope) into buf. */
int ms__cache_root(char *buf, size_t n);

/* ---- Progress (progress.c) ---------------------------------------------- */

/* Progress of one piece of work on a stream: a bar redrawn in place on a
 * terminal, plain lines (each tenth) elsewhere. Plain data, embedded. */
typedef struct ms__progress {
	FILE *out;     /* borrowed; NULL = silent */
	bool bar;      /* draw a bar (a terminal) */
	bool open;     /* a bar line without its newline is on screen */
	char what[48]; /* current stage */
	int last_tenth;
	int64_t last_ns;
} ms__progress;

/* bar: 1 = a bar, 0 = plain lines, -1 = a bar when out is a terminal. */
void ms__progress_init(ms__progress *p, FILE *out, int bar);
/* Stage `what` is at done of total; extra (may be NULL) is appended. */
void ms__progress_update(ms__progress *p, const char *what, uint64_t done,
                         uint64_t total, const char *extra);
/* One line of its own (closes an open bar first). */
void ms__progress_note(ms__progress *p, const char *line);
/* Finish: close an open bar line. */
void ms__progress_end(ms__progress *p);

/* The columns of the terminal f writes to; 0 when f is not a terminal. */
int ms__term_width(FILE *f);
/* Line s on f, wrapped at spaces into lines of at most width columns
 * (the terminal cut words where its edge fell), those after the first
 * indented by two; a word longer than a line (a path) whole on a line
 * of its own, for the terminal to wrap; below 20 columns (0: not a
 * terminal), as it is. */
void ms__say_wrapped(FILE *f, const char *s, int width);
/* Command cmd on f for a shell to be given, two columns in, wrapped at
 * spaces into lines of at most width columns that end in " \\" (a line
 * continued, so that it pastes as one command); a word longer than a
 * line whole; below 20 columns
 * (0: not a terminal), on one line. */
void ms__say_command(FILE *f, const char *cmd, int width);
/* Each line of cmds (one command a line, each of any length) said as
 * ms__say_command says one. */
void ms__say_commands(FILE *f, const char *cmds, int width);

/* ---- What `tui` and `run` share (cli_setup.c) ---------------------------- */

/* Exit status of a command that failed before or during its work. */
#define MS_EXIT_ERROR 2

/* Tell the supervising parent (supervise.c) what to clean up should this
 * process die: key "db" or "scratch" with a path. No-op when the process
 * is not supervised. */
void ms__supervise_note(const char *key, const char *value);

/* Bytes read from a watched process's notes pipe (tui/supervise.c), not
 * yet taken as lines: read into b + len, at most sizeof(b) - 1 - len
 * bytes, then take lines with ms__note_line. Zeroed: empty. */
typedef struct ms__note_buf {
	char b[8192];
	size_t len;   /* bytes in b */
	size_t start; /* where the next line starts */
	bool skip;    /* dropping the rest of a line too long to be ours */
} ms__note_buf;

/* The next whole line of nb, terminated in place without its newline, or
 * NULL when no whole line is left (the part of a line read so far then
 * moves to the front of b). A line that fills b is dropped whole, up to
 * its newline. */
char *ms__note_line(ms__note_buf *nb);
/* Tell it the run's database, scratch shard and cgroup (ms_replay_open
 * has entered it): what to record, remove and read should the process
 * die. */
struct ms_replay;
void ms__supervise_run(const struct ms_replay *r);
/* ms_replay_opts.created of every replay the commands open: the watcher
 * is told the scratch shard and the database the moment they exist (a
 * process killed from then on leaves them to it). */
void ms__supervise_created(void *arg, const char *what, const char *path);
/* path with ".rerun-K" before its extension (ext) or at its end (the
 * TUI's restarts: a new database and scratch shard beside the first), its
 * last name cut short where it would pass name_max bytes
 * (MS_EV_DB_NAME_MAX for a database, NAME_MAX for a directory), the
 * extension dropped where even it would not fit. */
void ms__rerun_name(char *buf, size_t n, const char *path, unsigned k, bool ext,
                    size_t name_max);
/* The database of the TUI's restart k: ms__rerun_name's, its last name
 * cut further where the path (made absolute) would pass the longest
 * SQLite opens, as --db's own path was checked (ms_evdb_path_fits). */
void ms__rerun_db_name(char *buf, size_t n, const char *path, unsigned k);
/* What --preset takes, said the same by every command that has it:
 * "expected day-1x, day-2x, smoke, or day-<N>x (N from 1 to 1000)" and a
 * newline, on err. */
void ms__say_presets(FILE *err);
/* A --fixture DIR that did not open or check (rc, eb) said in one line on
 * err for command cmd; returns MS_EXIT_ERROR. */
int ms__say_fixture_error(FILE *err, const char *cmd, const char *dir, int rc,
                          const ms_errbuf *eb);
/* A stop point for the tests: with MERGESCOPE_TEST_STOP=POINT in the
 * environment the process stops itself (SIGSTOP) at POINT, for a test to
 * kill it at exactly that instant. Points: "scratch" and "db" (each just
 * made, empty: ms__supervise_created), "opened" (the replay open, its
 * run recorded, not started: ms__supervise_run). */
void ms__test_stop(const char *point);
/* The stop signals of a `tui` session (cmd_tui.c, its file comment):
 * SIGINT, SIGTERM, SIGHUP and SIGPIPE blocked on every thread but SIGHUP
 * on the caller's, taken by a thread that sleeps until one comes.
 * ms__stopper_start: 0, or the error number of the thread that could not
 * start (nothing changed). ms__stopper_end puts the mask and the actions
 * back and returns the first stop signal of the session, 0 if none. */
#define MS__STOPPER_HANDLED 3
typedef struct ms__stopper {
	pthread_t main, thread;
	sigset_t all, old; /* the four; the mask before */
	struct sigaction act[MS__STOPPER_HANDLED]; /* the actions before */
	int sfd, wake[2]; /* signalfd of the three it takes; wake pipe */
	atomic_bool done;
	/* The session loop (ms_tui_run) runs: only then is the main thread
	 * sent SIGHUP, which would otherwise interrupt its system calls. */
	atomic_bool in_loop;
	atomic_uint wakes; /* the thread's returns from its wait (a test's) */
	atomic_uint hups;  /* SIGHUPs sent to the main thread (a test's) */
} ms__stopper;
int ms__stopper_start(ms__stopper *s);
int ms__stopper_end(ms__stopper *s);
/* The curses screen is up (restore the terminal on a crash) or down. */
void ms__supervise_screen(bool up);

/* Default replay speed of the TUI in logical seconds per wall second: a
 * 24-hour day in 72 s. `+`/`-` change it, up to "max" (0). */
#define MS_TUI_DEFAULT_SPEED 1200.0
/* Where plugins run unless --plugin-host says otherwise. */
#define MS_DEFAULT_PLUGIN_HOST "inproc"
/* Default variant of both commands. */
#define MS_DEFAULT_VARIANT "skywalking"
#define MS_FIXTURE_SEED 1

/* The options of a run as given on the command line (borrowed). */
typedef struct ms__run_args {
	const char *cmd;       /* "tui" or "run", for messages */
	const char *fixture;   /* --fixture DIR, or NULL */
	const char *preset;    /* --preset P, or NULL (day-2x) */
	const char *variant;   /* --variant or --chain, or NULL (skywalking) */
	const char *grace;     /* --grace-policy, or NULL */
	const char *staging;   /* --staging, or NULL (retain) */
	const char *profile;   /* --profile, or NULL */
	const char *work_dir;  /* --work-dir DIR, or NULL (tmpfs if there) */
	const char *db;        /* --db FILE, or NULL (the cache's runs/) */
	const char *json;      /* --json FILE (run), or NULL */
	bool force;            /* --force (run): replace an existing --json */
	const char *freeze_at; /* --freeze-at SPEC (run), or NULL */
	bool serial;           /* --serial */
	int64_t wait_timeout_ns; /* --wait-timeout, or 0 (the default) */
	/* --checkpoint-every (the TUI's; 0: none), when given. */
	bool checkpoint_every_set;
	int64_t checkpoint_every_ns;
	bool allow_fail_open;    /* --allow-fail-open */
	const char *cache;       /* --cache warm|cold, or NULL */
	const char *envelope;    /* --envelope auto|cgroup|emulated, or NULL */
	enum ms_plugin_host_mode plugin_host; /* --plugin-host */
	/* The option that gave variant ("--variant", "--chain"), named in
	 * messages; NULL: "variant" (the default, or a command's own). */
	const char *variant_opt;
} ms__run_args;

/* What a run needs, resolved. */
typedef struct ms__run_cfg {
	char plugin_dir[4096];
	char fixture_dir[4096];
	char preset[32];
	const char *variant; /* borrowed from the arguments, never cut */
	char db[4096];
	char host_exe[4096]; /* this executable (the process plugin host) */
} ms__run_cfg;

/* --plugin-host's value (checked against its choices; NULL = the
 * default) as a mode. */
enum ms_plugin_host_mode ms__plugin_host_mode(const char *value);
/* "SIGINT" and the like for the signals mergescope stops or dies on, else
 * "a signal" (supervise.c; safe in a signal handler). */
const char *ms__signal_name(int sig);
/* This executable's path (the plugin host of process mode), or "". */
void ms__self_exe(char *buf, size_t n);
/* The plugin directory of this installation: <exe dir>/../plugins, else
 * the build's plugin directory, else $MERGESCOPE_PLUGIN_DIR. */
void ms__plugin_dir(char *buf, size_t n);
/* When the first link of spec names no plugin in plugin_dir, the variants
 * there into buf as "; the variants in DIR are A, B:PCT, disabled": every
 * NAME.so that opens as a file, and after "; not runnable:" each that
 * does not (a dangling link, with its target and why); "" otherwise. */
void ms__variants_hint(char *buf, size_t n, const char *spec,
                       const char *plugin_dir);
/* "$XDG_CACHE_HOME/mergescope" (else ~/.cache/mergescope) into buf; 0,
 * MS_ERR_NOTFOUND without either variable, MS_ERR_RANGE if too long. */
int ms__cache_root(char *buf, size_t n);
/* The TUI's memory of a fixture (tui_memory.c): the breakpoints and the
 * filter of the last session on it, offered at the next start. */
#define MS__MEMORY_BREAKS 64 /* MS__MAX_BREAKS: every one the replay holds */
typedef struct ms__tui_memory {
	size_t nbreaks;
	char breaks[MS__MEMORY_BREAKS][64];
	char filter[256];
} ms__tui_memory;
/* "<cache>/tui/<fixture dir name>-<hash of its path>.last", creating the
 * directory. 0 or a negative ms_err. */
int ms__tui_memory_path(char *buf, size_t n, const char *fixture_dir);
/* Read it; false when there is none or nothing in it. */
bool ms__tui_memory_load(const char *path, ms__tui_memory *m);
/* Write it (temp file, then rename); nothing to remember removes it. */
int ms__tui_memory_save(const char *path, const ms__tui_memory *m);
/* "$XDG_CACHE_HOME/mergescope/runs/<preset>-<variant>-<stamp>-<pid>.sqlite"
 * (or ~/.cache/...), creating the directories; a name no file has, so
 * runs started in the same second (in one process or several) never share
 * one. 0 or a negative ms_err. */
int ms__default_db(char *buf, size_t n, const char *preset, const char *variant,
                   ms_errbuf *eb);
/*
 * Check everything that can be checked before work starts (variant or
 * chain with its plugins, grace policy, profile, fixture directory, --db
 * and --json paths), then, without --fixture, find the preset's cached
 * fixture or build it once (progress on err). Errors are one line on err
 * naming the option, the path and what was expected. Returns 0 or the
 * exit status (2).
 */
int ms__run_prepare(const ms__run_args *a, ms__run_cfg *cfg, FILE *err);
/* s as one word of a POSIX shell command line: single-quoted (a quote
 * inside as '\'') when always or when it holds anything but letters,
 * digits and _@%+=:,./- , else as it is. */
void ms__shell_word(FILE *f, const char *s, bool always);
/* The first checks of ms__run_prepare, which touch nothing: the chain
 * spec's length, the grace policy, --fixture (it must open) or the
 * preset's name, --profile and the variant with its plugins. Fills cfg's
 * plugin_dir, host_exe, variant and fixture_dir or preset. `bench` runs
 * it for each variant before its series. 0 or the exit status. */
int ms__run_check(const ms__run_args *a, ms__run_cfg *cfg, FILE *err);
/* --envelope (envelope, or NULL) without --profile (profile NULL) cannot
 * take effect: one line on err naming both options (cmd names the
 * command) and MS_EXIT_USAGE; else 0. */
int ms__envelope_check(const char *cmd, const char *envelope,
                       const char *profile, FILE *err);
/* One note on err when profile (a valid --profile, or NULL) asks more
 * CPUs or memory than this process has (ms_limits_beyond). */
void ms__profile_note(const char *cmd, const char *profile, FILE *err);
/*
 * Take the build lock of the fixture directory dir ("<dir>.lock", an
 * flock): one build of a preset and seed at a time. When another process
 * holds it, one line on err says so (cmd names the command) and the call
 * waits. Returns the lock's descriptor, to release with
 * ms__fixture_unlock, or -1 after printing why on err.
 */
int ms__fixture_lock(const char *cmd, const char *dir, FILE *err);
/* Release the lock ms__fixture_lock returned for dir and remove its file,
 * so nothing is left beside the fixture; fd -1 does nothing. */
void ms__fixture_unlock(int fd, const char *dir);
/* The directory dir of path (its parent; "." for a bare name) created
 * with its parents, for a lock file or an output beside it. 0 or -1 with
 * errno. */
int ms__mkdir_parent(const char *path);
/* What differs between the fixture have and the one asked for (preset,
 * seed, opening "empty" or "warm", a dictionary or not), into buf (n
 * bytes) as "seed 2 (this build: 1), opening warm (this build: empty)",
 * with `asked` naming the one asked for ("this build"); "" when nothing
 * does. */
struct ms_fixture_info;
void ms__fixture_differences(char *buf, size_t n,
                             const struct ms_fixture_info *have,
                             const char *asked, const char *preset,
                             uint64_t seed, const char *opening,
                             bool dictionary);
/*
 * The checks `tui` and `run` make on their parsed options (a->o holds the
 * run table, MS__RO_COUNT entries) beyond the parser's: --fixture with --preset, --variant
 * with --chain, the durations, --speed, the --profile spec, and every
 * --break (at most MS__MAX_BREAKS) parsed as the TUI would.
 * Prints one line naming the command to err and returns MS_EXIT_USAGE,
 * else 0.
 */
int ms__run_opts_check(const ms_cmd *c, const ms__cmd_args *a, FILE *err);
/* The most --break options (the replay holds this many breakpoints). */
#define MS__MAX_BREAKS 64
_Static_assert(MS__MEMORY_BREAKS >= MS__MAX_BREAKS,
               "the TUI's memory keeps every breakpoint");
/* The longest --wait-timeout and --checkpoint-every: 366 days. */
#define MS__DURATION_MAX_S (366 * 86400LL)
/* A duration (every option that takes one: --wait-timeout,
 * --checkpoint-every, clean --older-than): digits, optionally a dot and
 * more digits, then a unit s (the default), m, h or d ("90", "1.5h",
 * "7d"); nothing else (no sign, space, exponent or hex). Into *ns, in
 * nanoseconds (fraction digits past the ninth only round up, so only a
 * zero duration gives 0). False, *ns unchanged, when s is not one or is
 * longer than max_s seconds (at most INT64_MAX / 1e9). */
bool ms__parse_duration(const char *s, int64_t max_s, int64_t *ns);
/* --checkpoint-every: a duration up to MS__DURATION_MAX_S, zero ("0",
 * "0s", "0m") for none (*ns = 0). False when s is not one. */
bool ms__parse_checkpoint_every(const char *s, int64_t *ns);
/* The fastest --speed short of max. */
#define MS__SPEED_MAX 1e9
/* --speed: "max" (*x = 0, as fast as the engine goes) or a multiple of
 * real time, digits, optionally a dot and digits, optionally x ("60",
 * "60x", "1.5"), more than 0 and at most MS__SPEED_MAX; read the same
 * way in every locale. False, *x unchanged, otherwise. */
bool ms__parse_speed(const char *s, double *x);
/* The run arguments the parsed options o (MS__RO_COUNT entries) give;
 * strings are borrowed from argv. */
void ms__run_args_from(ms__run_args *a, const ms_cmd *c, const ms__opt *o);
/* ms__run_args_from, then ms__run_prepare into a new configuration (the
 * caller frees it). NULL after the error went to err, *rc the exit
 * status. */
ms__run_cfg *ms__run_begin(const ms_cmd *c, const ms__opt *o, ms__run_args *a,
                           FILE *err, int *rc);
struct ms_replay_opts; /* ms_replay.h */
/* ms_replay.h: what this build is, for `mergescope --version` (declared
 * here too, so the command line builds without the replay's headers). */
void ms_build_describe(char *out, size_t n);
/* Replay options for the resolved run: fixture, database, variant, plugin
 * directory, grace policy, --serial and --profile; everything else zero
 * (the caller sets speed, breakpoints and the like). Strings are borrowed
 * from a and cfg. */
void ms__replay_opts_from(struct ms_replay_opts *ro, const ms__run_args *a,
                          const ms__run_cfg *cfg);
/* "mergescope CMD: " and the error rc of opening or starting the replay
 * (eb's message, else ms_strerror) on err; a message about the shard
 * directory given with --work-dir names the option
 * ("--work-dir DIR exists and is not an empty directory; ..."). */
void ms__say_replay_error(FILE *err, const ms__run_args *a, int rc,
                          const ms_errbuf *eb);
/* The one line for an error about an output file the user named with
 * option opt (ms_outfile's messages begin "PATH: "): "mergescope CMD:
 * OPT PATH: CAUSE"; a message about something else (the database being
 * read) is said as it is, after "CMD: ". Returns MS_EXIT_ERROR. */
/* Whether message m is about path: it begins "PATH:", or, cut short
 * around " [...] " (a long path's, ms_fail), with a head of PATH. */
bool ms__msg_names_path(const char *m, const char *path);
int ms__say_out_error(FILE *err, const char *cmd, const char *opt,
                      const char *path, int rc, const ms_errbuf *eb);
struct ms_replay_status;
/* What a failed run's line says after "mergescope CMD: ", into line (n
 * bytes, cut there): "the run failed: ERROR (in the PHASE phase, after P
 * of N publications and M merges)", or "(before the day began)": the
 * engine's words name a file and a system call (a snapshot that found
 * the disk full), not the step of the day. Shared by run and the TUI. */
void ms__run_failed_text(char *line, size_t n,
                         const struct ms_replay_status *st);
/* The one line for an error about the event database the user named with
 * option opt (the recorder's messages begin "event database PATH: "):
 * "mergescope CMD: OPT PATH: CAUSE", the path said once. Returns
 * MS_EXIT_ERROR. */
int ms__say_db_error(FILE *err, const char *cmd, const char *opt,
                     const char *path, int rc, const ms_errbuf *eb);
/* "mergescope CMD: out of memory for WHAT (BYTES bytes)" on err, WHAT
 * formatted from fmt; returns MS_EXIT_ERROR. */
int ms__say_oom(FILE *err, const char *cmd, size_t bytes, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#endif
