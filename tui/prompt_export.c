/*
 * prompt_export.c - `e` (export) as prompts that cannot surprise, and the
 * path editing they need.
 *
 * The export asks two fields in turn: the format (jsonl, csv, chrome),
 * then the path, prefilled with a file next to the run's event database
 * named after it ("<db stem>[-filtered].jsonl"). The path field expands a
 * leading "~/" and completes with Tab. A path that exists is not written
 * until the user answers "y" to a third prompt; anything else keeps the
 * file. `:export FMT [PATH]` goes through the same steps.
 *
 * States (ui.prompt), moved by ms__export_submit: FORMAT -> PATH ->
 * (CONFIRM, when the file exists) -> none, the export done or refused.
 */
#include "tui_int.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *
format_ext(enum ms_tui_format f)
{
	return f == MS_FORMAT_CSV      ? ".csv"
	       : f == MS_FORMAT_CHROME ? ".trace.json"
	                               : ".jsonl";
}

bool
ms__export_default_path(char *buf, size_t n, const ms_tui_view *v,
                        enum ms_tui_format f)
{
	const char *db = v->db_path;
	const char *suffix = v->ui.filter[0] ? "-filtered" : "";
	int w;
	if (!db[0]) {
		w = snprintf(buf, n, "mergescope-events%s%s", suffix,
		             format_ext(f));
		return w >= 0 && (size_t)w < n;
	}
	size_t len = strlen(db);
	if (len + 1 >= sizeof(v->db_path))
		return false; /* the view may hold it cut */
	const char *slash = strrchr(db, '/');
	const char *dot = strrchr(db, '.');
	if (dot && (!slash || dot > slash + 1))
		len = (size_t)(dot - db);
	w = snprintf(buf, n, "%.*s%s%s", (int)len, db, suffix, format_ext(f));
	return w >= 0 && (size_t)w < n;
}

/* The path field, prefilled with the default file when it fits whole;
 * else the export stops and says how to give a path. */
static void
offer_path(ms_tui_session *s)
{
	char def[MS_VIEW_TEXT];
	if (!ms__export_default_path(def, sizeof(def), s->view,
	                             s->export_fmt)) {
		ms_session_say(s, true,
		               "export: a file next to the event database "
		               "has too long a path to offer; give one: "
		               ":export %s PATH",
		               ms_tui_format_name(s->export_fmt));
		return;
	}
	ms__prompt_offer(s, MS_PROMPT_EXPORT_PATH, def);
}

bool
ms__path_expand(const char *in, char *out, size_t n)
{
	const char *home = getenv("HOME");
	int w;
	if ((in[0] == '~' && (in[1] == '/' || in[1] == '\0')) && home && *home)
		w = snprintf(out, n, "%s%s", home, in + 1);
	else
		w = snprintf(out, n, "%s", in);
	return w >= 0 && (size_t)w < n;
}

/* Add name (a "/" after a directory's) to the candidates, blank-separated,
 * while it fits whole. */
static void
add_candidate(char *cands, size_t cn, const char *name, bool dir)
{
	size_t used = strlen(cands);
	int w = snprintf(cands + used, cn - used, "%s%s%s", used ? " " : "",
	                 name, dir ? "/" : "");
	if (w < 0 || (size_t)w >= cn - used)
		cands[used] = '\0';
}

static bool
is_dir(const char *dir, const char *name)
{
	char p[MS_VIEW_TEXT * 3];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Complete the path being edited: the longest common prefix of the
 * directory entries that start with its last component; a single match
 * that is a directory gets its "/". Keeps a leading "~" as typed.
 * Returns how many entries matched; cands[0..cn) gets their names when
 * more than one did (see add_candidate), else "". */
unsigned
ms__path_complete(char *line, size_t n, size_t *cursor, char *cands, size_t cn)
{
	cands[0] = '\0';
	char full[MS_VIEW_TEXT * 2];
	if (!ms__path_expand(line, full, sizeof(full)))
		return 0;
	char *slash = strrchr(full, '/');
	char dir[MS_VIEW_TEXT * 2];
	const char *base;
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s",
		         (int)(slash - full) + (slash == full), full);
		base = slash + 1;
	} else {
		snprintf(dir, sizeof(dir), ".");
		base = full;
	}
	size_t blen = strlen(base);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	char best[256] = "";
	unsigned matches = 0;
	bool best_dir = false;
	const struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, base, blen) != 0 ||
		    strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (blen == 0 && e->d_name[0] == '.')
			continue; /* hidden files only when asked for */
		bool dir_e = is_dir(dir, e->d_name);
		add_candidate(cands, cn, e->d_name, dir_e);
		if (matches++ == 0) {
			snprintf(best, sizeof(best), "%s", e->d_name);
			best_dir = dir_e;
		} else {
			size_t k = 0;
			while (best[k] && best[k] == e->d_name[k])
				k++;
			best[k] = '\0';
		}
	}
	closedir(d);
	if (matches < 2)
		cands[0] = '\0';
	if (matches == 0)
		return 0;
	size_t len = strlen(line);
	size_t add = strlen(best) - blen;
	bool dir_slash = matches == 1 && best_dir;
	if (len + add + dir_slash + 1 > n)
		return matches;
	memcpy(line + len, best + blen, add);
	len += add;
	if (dir_slash)
		line[len++] = '/';
	line[len] = '\0';
	*cursor = len;
	return matches;
}

static void
run_export(ms_tui_session *s, bool overwrite)
{
	ms_tui_ui *ui = &s->view->ui;
	ms_errbuf eb = { "" };
	uint64_t written = 0;
	int rc = s->ctl->ops->export_events(s->ctl->self, s->export_fmt,
	                                    &ui->filt, ui->export_path,
	                                    overwrite, &written, &eb);
	if (rc < 0)
		ms_session_say(s, true, "%s",
		               eb.msg[0] ? eb.msg : ms_strerror(rc));
	else
		ms_session_say(
		        s, false, "exported %" PRIu64 " merges%s%s as %s to %s",
		        written, ui->filter[0] ? " matching /" : "", ui->filter,
		        ms_tui_format_name(s->export_fmt), ui->export_path);
}

/* The path is chosen: write, or ask first when the file is there. */
static void
export_to(ms_tui_session *s, const char *typed)
{
	ms_tui_ui *ui = &s->view->ui;
	char path[MS_VIEW_TEXT];
	size_t l = strlen(typed);
	while (l && typed[l - 1] == ' ')
		l--;
	while (*typed == ' ')
		typed++, l--;
	char trimmed[MS_VIEW_TEXT];
	snprintf(trimmed, sizeof(trimmed), "%.*s", (int)l, typed);
	if (!trimmed[0]) {
		ms_session_say(s, true,
		               "export: no path given; nothing written");
		return;
	}
	if (!ms__path_expand(trimmed, path, sizeof(path))) {
		ms_session_say(s, true, "export: the path is too long");
		return;
	}
	snprintf(ui->export_path, sizeof(ui->export_path), "%s", path);
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			ms_session_say(s, true,
			               "export: %s is a directory; give a file "
			               "name",
			               path);
			return;
		}
		ms__prompt_open(s, MS_PROMPT_CONFIRM, "");
		return;
	}
	run_export(s, false);
}

static bool
parse_format(ms_tui_session *s, const char *word)
{
	if (!ms_tui_format_parse(word, &s->export_fmt)) {
		ms_session_say(s, true,
		               "export: unknown format \"%s\" (expected jsonl, "
		               "csv or chrome)",
		               word);
		return false;
	}
	return true;
}

void
ms__export_begin(ms_tui_session *s)
{
	ms__prompt_offer(s, MS_PROMPT_EXPORT,
	                 ms_tui_format_name(s->export_fmt));
}

void
ms__export_command(ms_tui_session *s, const char *args)
{
	char fmt[32] = "", path[MS_VIEW_TEXT] = "";
	_Static_assert(MS_VIEW_TEXT == 256, "the %255 below");
	if (sscanf(args, "%31s %255[^\n]", fmt, path) < 1) {
		ms_session_say(s, true,
		               "export: expected FORMAT [PATH], FORMAT one of "
		               "jsonl, csv, chrome");
		return;
	}
	if (!parse_format(s, fmt))
		return;
	if (!path[0]) {
		offer_path(s);
		return;
	}
	export_to(s, path);
}

void
ms__export_submit(ms_tui_session *s, enum ms_tui_prompt p, const char *line)
{
	switch (p) {
	case MS_PROMPT_EXPORT: {
		char word[32] = "";
		if (sscanf(line, "%31s", word) != 1)
			snprintf(word, sizeof(word), "%s", "jsonl");
		if (!parse_format(s, word))
			return;
		offer_path(s);
		break;
	}
	case MS_PROMPT_EXPORT_PATH:
		export_to(s, line);
		break;
	case MS_PROMPT_CONFIRM:
		if (strcmp(line, "y") == 0 || strcmp(line, "yes") == 0)
			run_export(s, true);
		else
			ms_session_say(s, false,
			               "not exported: %s is kept as it was",
			               s->view->ui.export_path);
		break;
	default:
		break;
	}
}
