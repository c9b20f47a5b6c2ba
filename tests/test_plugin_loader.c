/*
 * test_plugin_loader.c - loading sampler plugins (core/plugin_loader.c):
 * a good plugin loads with its name, projection and file checksum; every
 * kind of bad plugin is refused with a message that names what is wrong
 * and leaves no handle open; shipped plugins export only their entry
 * symbol; chain specs parse into plugin paths and configs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "mem_testlib.h"
#include "ms_chain_spec.h"
#include "ms_loader.h"

#include <xxhash.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
tp_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s.so", MS_TEST_PLUGIN_DIR, name);
}

static void
shipped_path(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s.so", MS_PLUGIN_DIR, name);
}

/* Is the object at path still mapped in this process? */
static bool
still_loaded(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		dlclose(h);
	return h != NULL;
}

/* ms_plugin_load of plugin name (a test plugin when it starts "tp_",
 * else a shipped one) with config (NULL: none) and allocator mem; its
 * path into path[512]. Returns what the loader returned. */
static int
load(const char *name, const char *config, ms_mem *mem, char *path,
     ms_plugin **p, ms_errbuf *eb)
{
	if (strncmp(name, "tp_", 3) == 0)
		tp_path(path, 512, name);
	else
		shipped_path(path, 512, name);
	ms_plugin_load_opts o = { config, mem, NULL, NULL };
	return ms_plugin_load(p, path, &o, eb);
}

static void
expect_refusal(const char *name, const char *config, const char *needle,
               int want)
{
	char path[512];
	ms_plugin *p = (ms_plugin *)0x1;
	ms_errbuf eb = { "" };
	int rc = load(name, config, NULL, path, &p, &eb);
	assert_int_equal(rc, want);
	assert_null(p);
	if (!strstr(eb.msg, needle))
		fail_msg("'%s' not in message: %s", needle, eb.msg);
	assert_non_null(strstr(eb.msg, path));
	assert_false(still_loaded(path));
}

static void
test_alwayskeep_loads(void **st)
{
	(void)st;
	char path[512];
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_plugin *p;
	ms_errbuf eb;
	assert_int_equal(load("alwayskeep", "", &mem, path, &p, &eb), 0);
	assert_string_equal(ms_plugin_name(p), "alwayskeep");
	assert_int_equal(ms_plugin_projection(p), 0);
	assert_string_equal(ms_plugin_path(p), path);

	/* The checksum is XXH3-128 of the file. */
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc((size_t)sz);
	assert_int_equal(fread(buf, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	XXH128_hash_t h = XXH3_128bits(buf, (size_t)sz);
	free(buf);
	char want[33];
	snprintf(want, sizeof(want), "%016llx%016llx",
	         (unsigned long long)h.high64, (unsigned long long)h.low64);
	assert_string_equal(ms_plugin_checksum(p), want);

	ms_plugin_unload(p);
	tl_assert_no_live(&mem);
	assert_false(still_loaded(path));
}

static void
test_alwayskeep_refuses_config(void **st)
{
	(void)st;
	char path[512];
	ms_plugin *p;
	ms_errbuf eb;
	assert_int_equal(
	        load("alwayskeep", "{\"percent\":3}", NULL, path, &p, &eb),
	        MS_ERR_CONFIG);
	assert_non_null(strstr(eb.msg, "no configuration"));
}

static void
test_missing_file(void **st)
{
	(void)st;
	ms_plugin *p;
	ms_errbuf eb;
	int rc = ms_plugin_load(&p, "/nonexistent/x.so", NULL, &eb);
	assert_int_equal(rc, MS_ERR_IO);
	assert_null(p);
	assert_non_null(strstr(eb.msg, "/nonexistent/x.so"));
}

static void
test_not_a_shared_object(void **st)
{
	(void)st;
	char path[] = "/tmp/ms-notso-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello\n", 6), 6);
	close(fd);
	ms_plugin *p;
	ms_errbuf eb;
	int rc = ms_plugin_load(&p, path, NULL, &eb);
	unlink(path);
	assert_int_equal(rc, MS_ERR_PLUGIN);
	/* dlerror() text is passed on. */
	assert_non_null(strstr(eb.msg, "dlopen failed"));
	assert_non_null(strstr(eb.msg, path));
}

static void
test_rejections_name_the_problem(void **st)
{
	(void)st;
	expect_refusal("tp_noentry", "", "no entry symbol ms_plugin_entry",
	               MS_ERR_PLUGIN);
	expect_refusal("tp_badabi", "", "ABI major 99",
	               MS_ERR_PLUGIN);
	expect_refusal("tp_newminor", "", "ABI minor 1 is newer",
	               MS_ERR_PLUGIN);
	expect_refusal("tp_nodecide", "", "'decide'",
	               MS_ERR_PLUGIN);
	expect_refusal("tp_openfail", "", "unknown key \"bogus\"",
	               MS_ERR_CONFIG);
	/* An open() out of memory is not a refused config (it was said to
	 * be one, and the command line took it for a bad variant). */
	expect_refusal("tp_openfail", "nomem",
	               "open: out of memory (not its config): no memory for "
	               "its tables",
	               MS_ERR_NOMEM);
}

/* Every byte of s is printable ASCII: one line, no escape sequences. */
static void
assert_one_printable_line(const char *s)
{
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
			fail_msg("byte 0x%02x at %zu in: %s", (unsigned char)*c,
			         (size_t)(c - s), s);
}

/* Plugin name (no config) is refused, its message (in *eb) one
 * printable line; its path into path[512]. */
static void
refused_in_one_line(const char *name, char *path, ms_errbuf *eb, int want)
{
	ms_plugin *p;
	assert_int_equal(load(name, NULL, NULL, path, &p, eb), want);
	assert_one_printable_line(eb->msg);
}

static void
test_open_message_one_printable_line(void **st)
{
	(void)st;
	/* open() fails with line breaks, an escape sequence, BEL, DEL, a
	 * C1 byte and 400 more bytes: shown as one printable line, cut at
	 * 200 bytes. */
	char path[512];
	ms_errbuf eb = { "" };
	refused_in_one_line("tp_openmsg", path, &eb, MS_ERR_CONFIG);
	const char *m = strstr(eb.msg, "open: ");
	assert_non_null(m);
	m += strlen("open: ");
	if (strncmp(m, "bad key \"x\" ?[2J?[31mred next line???;zzz", 40))
		fail_msg("shown as: %s", m);
	assert_int_equal(strlen(m), 200);
	assert_string_equal(m + 197, "...");
	assert_false(still_loaded(path));
}

static void
test_bad_name_is_shown_printable(void **st)
{
	(void)st;
	/* A name with a newline and an escape sequence: refused, named as
	 * one printable line. */
	expect_refusal("tp_badname", "", "name \"tp_bad name?[2J\" refused",
	               MS_ERR_PLUGIN);
	char path[512];
	ms_errbuf eb = { "" };
	refused_in_one_line("tp_badname", path, &eb, MS_ERR_PLUGIN);
}

static void
test_older_descriptor_loads(void **st)
{
	(void)st;
	char path[512];
	ms_plugin *p;
	ms_errbuf eb;
	assert_int_equal(load("tp_olddesc", NULL, NULL, path, &p, &eb), 0);
	/* Fields past its struct_size are not read: no stats callback. */
	ms_plugin_stat s[4];
	assert_int_equal(ms_plugin_stats(p, s, 4), 0);
	ms_plugin_unload(p);

	/* The same source with the whole descriptor has stats. */
	assert_int_equal(load("tp_mask", NULL, NULL, path, &p, &eb), 0);
	assert_int_equal(ms_plugin_stats(p, s, 4), 2);
	assert_string_equal(s[0].name, "calls");
	ms_plugin_unload(p);
}

/* nm -D --defined-only lists exactly one symbol: the entry. */
static void
check_exports(const char *path)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd),
	         "nm -D --defined-only '%s' 2>/dev/null | awk '{print $NF}'",
	         path);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char line[256];
	int n = 0, entry = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!*line)
			continue;
		n++;
		if (strcmp(line, "ms_plugin_entry") == 0)
			entry++;
		else
			fail_msg("%s exports %s", path, line);
	}
	pclose(f);
	if (n == 0) {
		/* nm missing or not runnable here (some sanitizer set-ups). */
		print_message("nm gave no output; export check skipped\n");
		return;
	}
	assert_int_equal(entry, 1);
	assert_int_equal(n, 1);
}

static void
test_only_entry_exported(void **st)
{
	(void)st;
	static const char *const names[] = { "alwayskeep", "detdrop",
		                             "skywalking" };
	for (size_t i = 0; i < 3; i++) {
		char path[512];
		shipped_path(path, sizeof(path), names[i]);
		check_exports(path);
	}
}

/* spec parsed into *s with plugin directory /p; a refusal fails. */
static void
parse_ok(ms_chain_spec *s, const char *spec)
{
	ms_errbuf eb = { "" };
	if (ms_chain_spec_parse(s, spec, "/p", NULL, &eb) != 0)
		fail_msg("spec '%s' refused: %s", spec, eb.msg);
}

static void
test_spec_variants(void **st)
{
	(void)st;
	ms_chain_spec s;
	parse_ok(&s, "disabled");
	assert_int_equal(s.n, 0);
	ms_chain_spec_release(&s);

	parse_ok(&s, "alwayskeep");
	assert_int_equal(s.n, 1);
	assert_string_equal(s.links[0].path, "/p/alwayskeep.so");
	assert_string_equal(s.links[0].config, "");
	ms_chain_spec_release(&s);

	parse_ok(&s, "detdrop:35");
	assert_string_equal(s.links[0].config, "{\"percent\":35}");
	ms_chain_spec_release(&s);

	/* A percentage is any JSON number without sign or exponent. */
	parse_ok(&s, "detdrop:0.5,detdrop:0");
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "detdrop");
	assert_string_equal(s.links[0].path, "/p/detdrop.so");
	assert_string_equal(s.links[0].config, "{\"percent\":0.5}");
	assert_string_equal(s.links[1].config, "{\"percent\":0}");
	ms_chain_spec_release(&s);

	parse_ok(&s, "skywalking");
	assert_string_equal(s.links[0].config, MS_SKYWALKING_DEFAULT_CONFIG);
	ms_chain_spec_release(&s);

	const char *two = "skywalking:{\"durationThresholdMs\":100,"
	                  "\"keepErrors\":false,\"healthySampleRate\":\"0.5\","
	                  "\"keepTagRules\":[\"a\",\"b=c\"]},"
	                  "detdrop:{ \"percent\": 35 }";
	parse_ok(&s, two);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "skywalking");
	assert_string_equal(s.links[0].config,
	                    "{\"durationThresholdMs\":100,\"keepErrors\":false,"
	                    "\"healthySampleRate\":\"0.5\","
	                    "\"keepTagRules\":[\"a\",\"b=c\"]}");
	assert_string_equal(s.links[1].path, "/p/detdrop.so");
	/* Inside a JSON config, white space is JSON's. */
	assert_string_equal(s.links[1].config, "{ \"percent\": 35 }");
	ms_chain_spec_release(&s);
}

/* A chain holds at most 8 links (what a run's events record): 8 parse,
 * a ninth is refused with its offset, its link and the limit. */
static void
test_spec_link_limit(void **st)
{
	(void)st;
	char spec[256] = "alwayskeep";
	for (int i = 1; i < 8; i++)
		strcat(spec, ",detdrop:35");
	ms_chain_spec s;
	ms_errbuf eb = { "" };
	parse_ok(&s, spec);
	assert_int_equal(s.n, 8);
	assert_string_equal(s.links[7].config, "{\"percent\":35}");
	ms_chain_spec_release(&s);
	size_t eight = strlen(spec);
	strcat(spec, ",skywalking,alwayskeep");
	assert_int_equal(ms_chain_spec_parse(&s, spec, "/p", NULL, &eb),
	                 MS_ERR_RANGE);
	char want[96];
	snprintf(want, sizeof(want),
	         "chain spec: offset %zu (link 9): a chain holds at most 8 "
	         "links",
	         eight + 1);
	assert_string_equal(eb.msg, want);
	ms_chain_spec_release(&s);
}

/* A spec of three links, two with configs, parsed into mem. */
static int
parse_three(void *ctx, ms_mem *mem, ms_errbuf *eb)
{
	(void)ctx;
	ms_chain_spec s;
	int rc = ms_chain_spec_parse(&s, "alwayskeep,detdrop:35,skywalking",
	                             "/p", mem, eb);
	if (rc == 0) {
		assert_int_equal(s.n, 3);
		assert_string_equal(s.links[1].path, "/p/detdrop.so");
	}
	ms_chain_spec_release(&s);
	return rc;
}

/* A spec parsed out of memory at each of its allocations says which
 * plugin's path or config it was for and how many bytes, and leaves
 * nothing allocated: it said only "chain spec: out of memory", and a
 * config that found no memory left its link's path unwritten, to be
 * measured with strlen when released. */
static void
test_spec_out_of_memory(void **st)
{
	(void)st;
	assert_int_equal(tl_mem_sweep(parse_three, NULL, "chain spec: "), 6);
}

static void
test_spec_errors(void **st)
{
	(void)st;
	static const struct {
		const char *spec, *needle;
	} bad[] = {
		{ "", "empty" },
		{ "detdrop:abc", "percentage" },
		{ "alwayskeep,disabled", "disabled" },
		{ "../evil", "must be [a-z0-9_-]" },
		{ "skywalking:{\"a\":1", "unbalanced" },
		{ "alwayskeep,", "expected a plugin name" },
		{ "alwayskeep:3", "JSON object" },
		/* Refused by the spec, not as a config nobody wrote
		 * ({"percent":007} "leading zero at offset 11"). */
		{ "detdrop:007", "detdrop expects a percentage" },
		{ "detdrop:00", "detdrop expects a percentage" },
		{ "detdrop:1.", "detdrop expects a percentage" },
		{ "skywalking,detdrop:.5", "offset 11: detdrop expects" },
		/* A name too long is named so, not "expected a name". */
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaa:{}",
		  "plugin name of 64 characters, expected at most 63" },
		/* White space outside a JSON config was trimmed away:
		 * "detdrop:35 " ran as detdrop:35. It is named, with its
		 * offset and link. */
		{ "detdrop:35 ", "offset 10 (link 1): a space; expected none "
		                 "outside a JSON config" },
		{ " skywalking", "offset 0 (link 1): a space" },
		{ "skywalking,\tdetdrop:35", "offset 11 (link 2): a tab" },
		{ "skywalking ,detdrop:35", "offset 10 (link 1): a space" },
		{ "detdrop :35", "offset 7 (link 1): a space" },
		{ "detdrop: 35", "offset 8 (link 1): a space" },
		{ "alwayskeep,detdrop:{\"percent\":35}\n",
		  "offset 33 (link 2): a newline" },
		{ "detdrop: {\"percent\":35}", "offset 8 (link 1): a space" },
		{ "disabled ", "offset 8 (link 1): a space" },
		{ " ", "offset 0 (link 1): a space" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms_chain_spec s;
		ms_errbuf eb = { "" };
		int rc = ms_chain_spec_parse(&s, bad[i].spec, "/p", NULL, &eb);
		if (rc == 0)
			fail_msg("spec '%s' accepted", bad[i].spec);
		if (!strstr(eb.msg, bad[i].needle))
			fail_msg("spec '%s': '%s' not in: %s", bad[i].spec,
			         bad[i].needle, eb.msg);
		ms_chain_spec_release(&s);
	}
}

static void
test_chain_open_names_failing_link(void **st)
{
	(void)st;
	char ok[512], badp[512];
	shipped_path(ok, sizeof(ok), "alwayskeep");
	tp_path(badp, sizeof(badp), "tp_badabi");
	ms_chain_link_spec links[2] = { { ok, "" }, { badp, "" } };
	ms_chain *c = (ms_chain *)0x1;
	ms_errbuf eb;
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_chain_opts o = { &mem, 0, 0, NULL, NULL, 0, 0, NULL, 0, 0 };
	assert_int_equal(ms_chain_open(&c, links, 2, &o, &eb), MS_ERR_PLUGIN);
	assert_null(c);
	assert_non_null(strstr(eb.msg, "chain link 2"));
	assert_non_null(strstr(eb.msg, "ABI major 99"));
	tl_assert_no_live(&mem);
	assert_false(still_loaded(ok));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alwayskeep_loads),
		cmocka_unit_test(test_alwayskeep_refuses_config),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_not_a_shared_object),
		cmocka_unit_test(test_rejections_name_the_problem),
		cmocka_unit_test(test_open_message_one_printable_line),
		cmocka_unit_test(test_bad_name_is_shown_printable),
		cmocka_unit_test(test_older_descriptor_loads),
		cmocka_unit_test(test_only_entry_exported),
		cmocka_unit_test(test_spec_variants),
		cmocka_unit_test(test_spec_link_limit),
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_spec_out_of_memory),
		cmocka_unit_test(test_chain_open_names_failing_link),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
