/*
 * freeze.c - freezing the shard at a dispatch barrier, for a controlled
 * re-run of exactly that merge (ms_merge_once, merge_once.c).
 *
 * At a BREAK barrier the selection has not started and its parts are
 * claimed, so they are active in every view taken while the run is
 * stopped. ms_replay_freeze pins one view of the live shard and copies every
 * active part (core, latency and start_time, keeping its ID) into a new,
 * proper shard DIR/shard (opened with create = true, each part copied into
 * its tmp path and introduced), then writes DIR/frozen.txt describing the
 * pending merge. Everything is built in DIR.tmp-<pid> and renamed to DIR
 * at the end, so a failed freeze leaves nothing behind.
 *
 * In lane mode merges of other lanes may still complete while the run is
 * stopped; the frozen shard is the inventory of one epoch (the view's),
 * which is the one the selection's merge would see unless such a merge
 * lands first. Serial runs freeze exactly what the merge sees.
 *
 * FORMAT of DIR/frozen.txt (version 1). UTF-8 text, one `key=value` per
 * line, no spaces around '=', the value runs to the end of the line. Lines
 * starting with '#' and empty lines are ignored. Every key below appears
 * exactly once (ledger keys once per input and kind); unknown keys, repeats,
 * missing keys and malformed values are errors naming the file, the line
 * and the key.
 *   format=2                      this format's version (2 added
 *                                 segment_ns)
 *   fixture_dir=PATH              the fixture the run replayed
 *   fixture_preset=NAME           its preset
 *   fixture_seed=N                its seed (decimal)
 *   fixture_schedule_hash=HEX     the manifest's schedule hash (0-64 hex)
 *   fixture_topology_hash=HEX     the manifest's topology hash (0-64 hex)
 *   now_ns=N                      logical clock at dispatch (unix ns)
 *   frontier_ns=N                 now_ns - grace (<= now_ns)
 *   grace_policy=selection|trace  the run's grace policy
 *   variant=SPEC                  the run's chain spec ("disabled", ...)
 *   seq=N                         the merge's dispatch sequence (>= 1)
 *   lane=fast|slow|finalize       the merge's lane
 *   finalize=0|1                  a forced finalize merge
 *   output_id=HEX16               the output ID the run reserved
 *   epoch=N                       epoch of the frozen view
 *   shard_parts=N                 active parts copied into DIR/shard
 *   cpus=N                        CPU limit in force (>= 1)
 *   mem_limit=N                   memory limit in force (bytes, >= 1)
 *   inputs=HEX16,HEX16,...        input part IDs in selection order
 *   depths=N,N,...                their merge depths, same order
 *   segment_ns=N,N                the segment the run's boundary guard
 *                                 covered (inclusive unix ns; 0,0: none)
 *   selection_fp=HEX16            ms_pick_fp_add(0, inputs): XXH3-64 of
 *                                 LE64(n) || LE64(id[0]) || ... (seed 0)
 *   ledger.HEX16.core=LEDGER      for every input: its ledger of each kind
 *   ledger.HEX16.latency=LEDGER   as ms_ledger_format writes it
 *   ledger.HEX16.start_time=LEDGER  ("<rows>:<32 hex>")
 * HEX16 is exactly 16 lowercase hex digits.
 */
#define _GNU_SOURCE
#include "frozen.h"
#include "replay_int.h"

#include "ms_owner.h"
#include "ms_picker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FROZEN_FILE_MAX (64u << 20)

/* ---- writing ---------------------------------------------------------- */

static bool
has_newline(const char *s)
{
	return strchr(s, '\n') || strchr(s, '\r');
}

static int
write_frozen(const char *path, const ms__frozen *f, ms_errbuf *eb)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return ms_fail(eb, MS_ERR_RANGE, "freeze: path too long: %s",
		               path);
	FILE *fp = fopen(tmp, "w");
	if (!fp)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "freeze: cannot create %s: %s", tmp,
		               strerror(errno));
	char hex[17];
	fprintf(fp, "# mergescope frozen merge: the pending selection of a "
	            "replay, frozen at its\n# dispatch barrier. Format: "
	            "replay/freeze.c. Replay it with merge-once.\n");
	fprintf(fp, "format=%u\n", MS_FROZEN_FORMAT);
	fprintf(fp, "fixture_dir=%s\n", f->fixture_dir);
	fprintf(fp, "fixture_preset=%s\n", f->fixture_preset);
	fprintf(fp, "fixture_seed=%" PRIu64 "\n", f->fixture_seed);
	fprintf(fp, "fixture_schedule_hash=%s\n", f->schedule_hash);
	fprintf(fp, "fixture_topology_hash=%s\n", f->topology_hash);
	fprintf(fp, "now_ns=%" PRId64 "\n", f->now_ns);
	fprintf(fp, "frontier_ns=%" PRId64 "\n", f->frontier_ns);
	fprintf(fp, "grace_policy=%s\n", ms_grace_policy_name(f->policy));
	fprintf(fp, "variant=%s\n", f->variant);
	fprintf(fp, "seq=%" PRIu64 "\n", f->seq);
	fprintf(fp, "lane=%s\n", f->lane);
	fprintf(fp, "finalize=%d\n", f->finalize ? 1 : 0);
	ms_part_id_str(f->output_id, hex);
	fprintf(fp, "output_id=%s\n", hex);
	fprintf(fp, "epoch=%" PRIu64 "\n", f->epoch);
	fprintf(fp, "shard_parts=%" PRIu64 "\n", f->shard_parts);
	fprintf(fp, "cpus=%u\n", f->cpus);
	fprintf(fp, "mem_limit=%" PRIu64 "\n", f->mem_limit);
	fputs("inputs=", fp);
	for (size_t i = 0; i < f->ninputs; i++) {
		ms_part_id_str(f->ids[i], hex);
		fprintf(fp, "%s%s", i ? "," : "", hex);
	}
	fputs("\ndepths=", fp);
	for (size_t i = 0; i < f->ninputs; i++)
		fprintf(fp, "%s%" PRIu32, i ? "," : "", f->depths[i]);
	fprintf(fp, "\nsegment_ns=%" PRId64 ",%" PRId64, f->segment_min_ns,
	        f->segment_max_ns);
	fprintf(fp, "\nselection_fp=%016" PRIx64 "\n", f->selection_fp);
	for (size_t i = 0; i < f->ninputs; i++) {
		ms_part_id_str(f->ids[i], hex);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			char l[MS_LEDGER_STR_MAX];
			ms_ledger_format(&f->ledgers[i].kind[k], l);
			fprintf(fp, "ledger.%s.%s=%s\n", hex,
			        ms_part_kind_name((enum ms_part_kind)k), l);
		}
	}
	int bad = ferror(fp);
	if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
		bad = 1;
	int err = errno;
	if (fclose(fp) != 0)
		bad = 1;
	if (bad) {
		unlink(tmp);
		return ms_fail(eb, ms_err_from_errno(err),
		               "freeze: cannot write %s: %s", tmp,
		               strerror(err));
	}
	if (rename(tmp, path) != 0) {
		err = errno;
		unlink(tmp);
		return ms_fail(eb, ms_err_from_errno(err),
		               "freeze: cannot rename %s to %s: %s", tmp, path,
		               strerror(err));
	}
	return 0;
}

void
ms__frozen_release(ms__frozen *f)
{
	if (!f)
		return;
	free(f->ids);
	free(f->depths);
	free(f->ledgers);
	f->ids = NULL;
	f->depths = NULL;
	f->ledgers = NULL;
	f->ninputs = 0;
}

static int
frozen_alloc(ms__frozen *f, size_t n)
{
	f->ids = calloc(n ? n : 1, sizeof(*f->ids));
	f->depths = calloc(n ? n : 1, sizeof(*f->depths));
	f->ledgers = calloc(n ? n : 1, sizeof(*f->ledgers));
	if (!f->ids || !f->depths || !f->ledgers) {
		ms__frozen_release(f);
		return MS_ERR_NOMEM;
	}
	f->ninputs = n;
	return 0;
}

/* Copy every part of view v of shard src, and src's dictionaries (under
 * the same IDs, which the parts' blocks name), into the new shard at dir
 * (created). */
static int
copy_shard(ms_view *v, const ms_shard *src, const char *dir, ms_errbuf *eb)
{
	if (ms_fs_mkdir_p(dir, 0755, NULL) < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "freeze: cannot create %s: %s", dir,
		               strerror(errno));
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_shard *s = NULL;
	ms_shard_opts so = { .dir = dir, .create = true, .mem = &mem };
	int rc = ms_shard_open(&s, &so, eb);
	const ms_part_dict *d;
	for (uint32_t id = 1; rc == 0 && (d = ms_shard_dict(src, id)); id++) {
		size_t dn;
		const uint8_t *b = ms_part_dict_bytes(d, &dn);
		uint32_t got = 0;
		if ((rc = ms_shard_add_dict(s, b, dn, &got, eb)) == 0 &&
		    got != id)
			rc = ms_fail(eb, MS_ERR_STATE,
			             "freeze: dictionary %u became %u in %s",
			             id, got, dir);
	}
	if (rc) {
		ms_shard_close(s);
		return rc;
	}
	size_t n = ms_view_count(v);
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t id = ms_view_id(v, i);
		bool reflinked = false;
		for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
			const ms_part *p =
			        ms_view_part(v, i, (enum ms_part_kind)k);
			char to[PATH_MAX];
			rc = ms_shard_tmp_path(s, (enum ms_part_kind)k, id, to,
			                       sizeof(to));
			if (rc) {
				rc = ms_fail(eb, rc,
				             "freeze: part %016" PRIx64
				             ": tmp path under %s too long",
				             id, dir);
				break;
			}
			rc = ms__copy_tree(ms_part_dir(p), to, &reflinked, eb);
			/* The shard publishes by rename: sync the copy. */
			if (rc == 0)
				rc = ms_part_sync_tree(to, NULL, eb);
		}
		if (rc == 0)
			rc = ms_shard_introduce(s, id, eb);
	}
	ms_shard_close(s);
	return rc;
}

int
ms_replay_freeze(ms_replay *r, const char *dir, char *out_dir, size_t n,
                 ms_errbuf *eb)
{
	if (out_dir && n)
		out_dir[0] = '\0';
	ms__frozen f;
	memset(&f, 0, sizeof(f));
	ms_dispatch d;
	ms_dispatch_input in[MS_PICKER_PARTS_LIMIT];

	pthread_mutex_lock(&r->mu);
	if (r->state != MS_REPLAY_BREAK || !r->has_pending) {
		enum ms_replay_state st = r->state;
		pthread_mutex_unlock(&r->mu);
		return ms_fail(eb, MS_ERR_STATE,
		               "freeze needs a dispatch barrier (the run is "
		               "%s): add a breakpoint or step to one",
		               ms_replay_state_name(st));
	}
	d = r->pending;
	memcpy(in, r->pending_inputs, sizeof(in));
	d.inputs = in;
	pthread_mutex_unlock(&r->mu);

	if (d.finalize && d.ninputs >= MS_PICKER_PARTS_LIMIT)
		return ms_fail(eb, MS_ERR_RANGE,
		               "freeze: finalize merge #%" PRIu64
		               " has %d or more inputs; only the first %d are "
		               "known at the barrier",
		               d.seq, MS_PICKER_PARTS_LIMIT,
		               MS_PICKER_PARTS_LIMIT);
	if (d.ninputs == 0)
		return ms_fail(eb, MS_ERR_STATE,
		               "freeze: merge #%" PRIu64 " has no inputs",
		               d.seq);

	char path[PATH_MAX], tmpdir[PATH_MAX], sub[PATH_MAX];
	if (dir)
		snprintf(path, sizeof(path), "%s", dir);
	else
		snprintf(path, sizeof(path), "%s.frozen-%" PRIu64, r->work_dir,
		         d.seq);
	if (has_newline(path) || has_newline(r->fixture_dir) ||
	    has_newline(r->variant))
		return ms_fail(eb, MS_ERR_INVAL,
		               "freeze: %s: paths and the variant must not "
		               "contain line breaks",
		               path);
	struct stat st;
	if (stat(path, &st) == 0)
		return ms_fail(eb, MS_ERR_EXISTS,
		               "freeze: %s exists; choose a new directory",
		               path);
	if ((size_t)snprintf(tmpdir, sizeof(tmpdir), "%s.tmp-%ld", path,
	                     (long)getpid()) >= sizeof(tmpdir) ||
	    (size_t)snprintf(sub, sizeof(sub), "%s/%s", tmpdir,
	                     MS_FROZEN_SHARD) >= sizeof(sub))
		return ms_fail(eb, MS_ERR_RANGE, "freeze: path too long: %s",
		               path);
	ms_fs_rm_tree(tmpdir, NULL);

	int rc = frozen_alloc(&f, d.ninputs);
	if (rc)
		return ms_fail(eb, rc, "freeze: out of memory");
	f.format = MS_FROZEN_FORMAT;
	snprintf(f.fixture_dir, sizeof(f.fixture_dir), "%s", r->fixture_dir);
	snprintf(f.fixture_preset, sizeof(f.fixture_preset), "%s",
	         r->info->preset);
	f.fixture_seed = r->info->seed;
	snprintf(f.schedule_hash, sizeof(f.schedule_hash), "%s",
	         r->info->schedule_hash ? r->info->schedule_hash : "");
	snprintf(f.topology_hash, sizeof(f.topology_hash), "%s",
	         r->info->topology_hash ? r->info->topology_hash : "");
	f.now_ns = d.now_ns;
	f.frontier_ns = d.frontier_ns;
	ms__replay_segment(r, &f.segment_min_ns, &f.segment_max_ns);
	f.policy = r->policy;
	memcpy(f.variant, r->variant, strlen(r->variant) + 1); /* fits */
	f.seq = d.seq;
	snprintf(f.lane, sizeof(f.lane), "%s", ms_lane_name(d.lane));
	f.finalize = d.finalize;
	f.output_id = d.output_id;
	f.cpus = r->limits.cpus ? r->limits.cpus : 1;
	f.mem_limit = r->limits.mem;
	for (size_t i = 0; i < d.ninputs; i++) {
		f.ids[i] = d.inputs[i].id;
		f.depths[i] = d.inputs[i].depth;
	}
	f.selection_fp = ms_pick_fp_add(0, f.ids, f.ninputs);

	ms_view *v = NULL;
	if ((rc = ms_shard_view(r->shard, &v, eb)))
		goto out;
	f.epoch = ms_view_epoch(v);
	f.shard_parts = ms_view_count(v);
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	for (size_t i = 0; i < f.ninputs && rc == 0; i++) {
		for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
			const ms_part *p =
			        ms_view_find(v, f.ids[i], (enum ms_part_kind)k);
			if (!p) {
				rc = ms_fail(eb, MS_ERR_CONFLICT,
				             "freeze: input %016" PRIx64
				             " of merge #%" PRIu64
				             " is not active in the shard",
				             f.ids[i], f.seq);
				break;
			}
			rc = ms_ledger_of_part(p, &f.ledgers[i].kind[k], &mem,
			                       eb);
		}
	}
	if (rc == 0)
		rc = ms_fs_mkdir_p(tmpdir, 0755, NULL) < 0
		             ? ms_fail(eb, ms_err_from_errno(errno),
		                       "freeze: cannot create %s: %s", tmpdir,
		                       strerror(errno))
		             : 0;
	if (rc == 0)
		rc = ms_owner_write(tmpdir, "frozen-tmp", r->db_path, eb);
	if (rc == 0)
		rc = copy_shard(v, r->shard, sub, eb);
	ms_view_release(v);
	if (rc)
		goto out;
	char file[PATH_MAX];
	snprintf(file, sizeof(file), "%s/%s", tmpdir, MS_FROZEN_FILE);
	if ((rc = write_frozen(file, &f, eb)))
		goto out;
	if ((rc = ms_owner_write(tmpdir, "frozen", r->db_path, eb)))
		goto out;
	if (rename(tmpdir, path) != 0) {
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "freeze: cannot rename %s to %s: %s", tmpdir, path,
		             strerror(errno));
		goto out;
	}
	if (out_dir && n)
		snprintf(out_dir, n, "%s", path);
out:
	if (rc)
		ms_fs_rm_tree(tmpdir, NULL);
	ms__frozen_release(&f);
	return rc;
}

/* ---- reading ---------------------------------------------------------- */

enum key_id {
	K_FORMAT,
	K_FIXTURE_DIR,
	K_FIXTURE_PRESET,
	K_FIXTURE_SEED,
	K_SCHEDULE_HASH,
	K_TOPOLOGY_HASH,
	K_NOW,
	K_FRONTIER,
	K_POLICY,
	K_VARIANT,
	K_SEQ,
	K_LANE,
	K_FINALIZE,
	K_OUTPUT_ID,
	K_EPOCH,
	K_SHARD_PARTS,
	K_CPUS,
	K_MEM_LIMIT,
	K_INPUTS,
	K_DEPTHS,
	K_SELECTION_FP,
	K_SEGMENT,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"format",
	"fixture_dir",
	"fixture_preset",
	"fixture_seed",
	"fixture_schedule_hash",
	"fixture_topology_hash",
	"now_ns",
	"frontier_ns",
	"grace_policy",
	"variant",
	"seq",
	"lane",
	"finalize",
	"output_id",
	"epoch",
	"shard_parts",
	"cpus",
	"mem_limit",
	"inputs",
	"depths",
	"selection_fp",
	"segment_ns",
};

typedef struct parser {
	const char *file;
	unsigned line;
	ms_errbuf *eb;
	/* Lists seen before their lengths are known. */
	char *inputs_val, *depths_val;
	unsigned inputs_line, depths_line;
} parser;

static int
bad(parser *p, const char *key, const char *want, const char *got)
{
	return ms_fail(p->eb, MS_ERR_FORMAT,
	               "%s:%u: key '%s': expected %s, got '%.80s'", p->file,
	               p->line, key, want, got);
}

static bool
parse_u64(const char *s, uint64_t *out)
{
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool
parse_i64(const char *s, int64_t *out)
{
	if (!*s || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool
is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Exactly 16 lowercase hex digits in s[0..15]. */
static bool
parse_hex16(const char *s, size_t len, uint64_t *out)
{
	if (len != 16)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < 16; i++) {
		if (!is_lower_hex(s[i]))
			return false;
		v = v << 4 |
		    (uint64_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
	}
	*out = v;
	return true;
}

static bool
hex_upto64(const char *s)
{
	size_t n = strlen(s);
	if (n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

static int
set_str(parser *p, const char *key, const char *val, char *dst, size_t n,
        bool nonempty)
{
	if (strlen(val) >= n)
		return bad(p, key, "a shorter value", val);
	if (nonempty && !*val)
		return bad(p, key, "a non-empty value", val);
	memcpy(dst, val, strlen(val) + 1);
	return 0;
}

static size_t
count_items(const char *s)
{
	size_t n = 1;
	for (; *s; s++)
		if (*s == ',')
			n++;
	return n;
}

static int
scalar(parser *p, enum key_id k, const char *val, ms__frozen *f)
{
	const char *key = key_names[k];
	uint64_t u;
	switch (k) {
	case K_FORMAT:
		if (!parse_u64(val, &u))
			return bad(p, key, "a version number", val);
		if (u != MS_FROZEN_FORMAT)
			return ms_fail(p->eb, MS_ERR_FORMAT,
			               "%s:%u: key 'format': version %s, this "
			               "build reads version %d",
			               p->file, p->line, val, MS_FROZEN_FORMAT);
		f->format = (unsigned)u;
		return 0;
	case K_FIXTURE_DIR:
		return set_str(p, key, val, f->fixture_dir,
		               sizeof(f->fixture_dir), true);
	case K_FIXTURE_PRESET:
		return set_str(p, key, val, f->fixture_preset,
		               sizeof(f->fixture_preset), true);
	case K_FIXTURE_SEED:
		if (!parse_u64(val, &f->fixture_seed))
			return bad(p, key, "a decimal seed", val);
		return 0;
	case K_SCHEDULE_HASH:
	case K_TOPOLOGY_HASH:
		if (!hex_upto64(val))
			return bad(p, key, "at most 64 lowercase hex digits",
			           val);
		return set_str(p, key, val,
		               k == K_SCHEDULE_HASH ? f->schedule_hash
		                                    : f->topology_hash,
		               sizeof(f->schedule_hash), false);
	case K_NOW:
		if (!parse_i64(val, &f->now_ns))
			return bad(p, key, "unix nanoseconds", val);
		return 0;
	case K_FRONTIER:
		if (!parse_i64(val, &f->frontier_ns))
			return bad(p, key, "unix nanoseconds", val);
		return 0;
	case K_POLICY:
		if (ms_grace_policy_parse(val, &f->policy))
			return bad(p, key, "selection or trace", val);
		return 0;
	case K_VARIANT:
		return set_str(p, key, val, f->variant, sizeof(f->variant),
		               true);
	case K_SEQ:
		if (!parse_u64(val, &f->seq) || f->seq == 0)
			return bad(p, key, "a merge sequence number >= 1", val);
		return 0;
	case K_LANE:
		if (strcmp(val, MS_LANE_FAST) && strcmp(val, MS_LANE_SLOW) &&
		    strcmp(val, MS_LANE_FINALIZE))
			return bad(p, key, "fast, slow or finalize", val);
		return set_str(p, key, val, f->lane, sizeof(f->lane), true);
	case K_FINALIZE:
		if (strcmp(val, "0") && strcmp(val, "1"))
			return bad(p, key, "0 or 1", val);
		f->finalize = val[0] == '1';
		return 0;
	case K_OUTPUT_ID:
		if (!parse_hex16(val, strlen(val), &f->output_id) ||
		    f->output_id == 0)
			return bad(p, key,
			           "a non-zero part ID of 16 hex digits", val);
		return 0;
	case K_EPOCH:
		if (!parse_u64(val, &f->epoch))
			return bad(p, key, "an epoch number", val);
		return 0;
	case K_SHARD_PARTS:
		if (!parse_u64(val, &f->shard_parts) || f->shard_parts == 0)
			return bad(p, key, "a part count >= 1", val);
		return 0;
	case K_CPUS:
		if (!parse_u64(val, &u) || u == 0 || u > 65536)
			return bad(p, key, "a CPU count from 1 to 65536", val);
		f->cpus = (unsigned)u;
		return 0;
	case K_MEM_LIMIT:
		if (!parse_u64(val, &f->mem_limit) || f->mem_limit == 0)
			return bad(p, key, "a byte count >= 1", val);
		return 0;
	case K_SELECTION_FP:
		if (!parse_hex16(val, strlen(val), &f->selection_fp))
			return bad(p, key, "16 lowercase hex digits", val);
		return 0;
	case K_SEGMENT: {
		char lo[32];
		const char *comma = strchr(val, ',');
		size_t n = comma ? (size_t)(comma - val) : 0;
		if (!comma || n == 0 || n >= sizeof(lo))
			return bad(p, key, "two unix nanosecond values MIN,MAX",
			           val);
		memcpy(lo, val, n);
		lo[n] = '\0';
		if (!parse_i64(lo, &f->segment_min_ns) ||
		    !parse_i64(comma + 1, &f->segment_max_ns) ||
		    f->segment_min_ns > f->segment_max_ns)
			return bad(p, key, "two unix nanosecond values MIN,MAX",
			           val);
		return 0;
	}
	case K_INPUTS:
	case K_DEPTHS:
	case K_COUNT:
		break;
	}
	return 0;
}

static int
parse_inputs(parser *p, ms__frozen *f)
{
	p->line = p->inputs_line;
	const char *s = p->inputs_val;
	size_t n = count_items(s);
	if (n > MS_FROZEN_MAX_INPUTS)
		return bad(p, "inputs", "at most 65536 part IDs", s);
	if (frozen_alloc(f, n))
		return ms_fail(p->eb, MS_ERR_NOMEM, "%s: out of memory",
		               p->file);
	for (size_t i = 0; i < n; i++) {
		const char *c = strchr(s, ',');
		size_t len = c ? (size_t)(c - s) : strlen(s);
		if (!parse_hex16(s, len, &f->ids[i]) || f->ids[i] == 0)
			return bad(p, "inputs",
			           "comma-separated non-zero part IDs of 16 "
			           "hex digits",
			           s);
		for (size_t j = 0; j < i; j++)
			if (f->ids[j] == f->ids[i])
				return bad(p, "inputs", "distinct part IDs", s);
		s = c ? c + 1 : s + len;
	}
	p->line = p->depths_line;
	s = p->depths_val;
	if (count_items(s) != n) {
		char want[64];
		snprintf(want, sizeof(want), "%zu depths (one per input)", n);
		return bad(p, "depths", want, s);
	}
	for (size_t i = 0; i < n; i++) {
		const char *c = strchr(s, ',');
		size_t len = c ? (size_t)(c - s) : strlen(s);
		char num[24];
		uint64_t u;
		if (len == 0 || len >= sizeof(num))
			return bad(p, "depths", "comma-separated depths", s);
		memcpy(num, s, len);
		num[len] = '\0';
		if (!parse_u64(num, &u) || u > UINT32_MAX)
			return bad(p, "depths", "comma-separated depths", s);
		f->depths[i] = (uint32_t)u;
		s = c ? c + 1 : s + len;
	}
	return 0;
}

/* "ledger.HEX16.KIND": which input and kind; the ledger value parsed. */
static int
ledger_line(parser *p, const char *key, const char *val, ms__frozen *f,
            uint8_t *seen)
{
	const char *rest = key + strlen("ledger.");
	const char *dot = strchr(rest, '.');
	uint64_t id;
	if (!dot || !parse_hex16(rest, (size_t)(dot - rest), &id))
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s': expected "
		               "ledger.<16 hex digits>.<kind>",
		               p->file, p->line, key);
	int kind = -1;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (!strcmp(dot + 1, ms_part_kind_name((enum ms_part_kind)k)))
			kind = k;
	if (kind < 0)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s': kind '%s' is not core, "
		               "latency or start_time",
		               p->file, p->line, key, dot + 1);
	size_t i = 0;
	while (i < f->ninputs && f->ids[i] != id)
		i++;
	if (i == f->ninputs)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s': part %016" PRIx64
		               " is not one of the inputs",
		               p->file, p->line, key, id);
	if (seen[i] & (1u << kind))
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s' appears twice", p->file,
		               p->line, key);
	seen[i] |= (uint8_t)(1u << kind);
	if (ms_ledger_parse(&f->ledgers[i].kind[kind], val))
		return bad(p, key, "<rows>:<32 hex digits>", val);
	return 0;
}

static enum key_id
key_lookup(const char *key)
{
	for (int k = 0; k < K_COUNT; k++)
		if (!strcmp(key, key_names[k]))
			return (enum key_id)k;
	return K_COUNT;
}

static int
read_all(const char *file, char **out, size_t *len, ms_errbuf *eb)
{
	*out = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb,
		               errno == ENOENT ? MS_ERR_NOTFOUND
		                               : ms_err_from_errno(errno),
		               "%s: cannot open: %s (not a frozen merge "
		               "directory?)",
		               file, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < 0 ||
	    (uint64_t)st.st_size > FROZEN_FILE_MAX) {
		close(fd);
		return ms_fail(eb, MS_ERR_RANGE,
		               "%s: not a regular file of at most %u bytes",
		               file, FROZEN_FILE_MAX);
	}
	size_t n = (size_t)st.st_size;
	char *buf = malloc(n + 1);
	if (!buf) {
		close(fd);
		return ms_fail(eb, MS_ERR_NOMEM, "%s: out of memory", file);
	}
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : EIO;
			close(fd);
			free(buf);
			return ms_fail(eb, ms_err_from_errno(err),
			               "%s: read failed: %s", file,
			               strerror(err));
		}
		got += (size_t)k;
	}
	close(fd);
	buf[n] = '\0';
	if (memchr(buf, '\0', n)) {
		free(buf);
		return ms_fail(eb, MS_ERR_FORMAT,
		               "%s: contains a NUL byte (not a text file)",
		               file);
	}
	*out = buf;
	*len = n;
	return 0;
}

int
ms__frozen_read(const char *dir, ms__frozen *f, ms_errbuf *eb)
{
	memset(f, 0, sizeof(*f));
	char file[PATH_MAX];
	if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir,
	                     MS_FROZEN_FILE) >= sizeof(file))
		return ms_fail(eb, MS_ERR_RANGE, "%s: path too long", dir);
	char *buf;
	size_t len;
	int rc = read_all(file, &buf, &len, eb);
	if (rc)
		return rc;
	parser p = { .file = file, .eb = eb };
	unsigned seen_line[K_COUNT] = { 0 };
	/* Ledger lines wait until the inputs are known. */
	size_t nledger = 0, cap_ledger = 0;
	struct ledger_ref {
		char *key, *val;
		unsigned line;
	} *lrefs = NULL;

	char *save = NULL;
	char *line = buf;
	unsigned lineno = 0;
	while (rc == 0 && line && *line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		save = nl ? nl + 1 : NULL;
		lineno++;
		p.line = lineno;
		size_t ll = strlen(line);
		if (ll && line[ll - 1] == '\r')
			line[--ll] = '\0';
		if (ll == 0 || line[0] == '#') {
			line = save;
			continue;
		}
		char *eq = strchr(line, '=');
		if (!eq || eq == line) {
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "%s:%u: expected key=value, got '%.80s'",
			             file, lineno, line);
			break;
		}
		*eq = '\0';
		const char *key = line, *val = eq + 1;
		if (!strncmp(key, "ledger.", 7)) {
			if (nledger == cap_ledger) {
				size_t nc = cap_ledger ? cap_ledger * 2 : 64;
				void *nr = realloc(lrefs, nc * sizeof(*lrefs));
				if (!nr) {
					rc = ms_fail(eb, MS_ERR_NOMEM,
					             "%s: out of memory", file);
					break;
				}
				lrefs = nr;
				cap_ledger = nc;
			}
			lrefs[nledger++] =
			        (struct ledger_ref){ line, eq + 1, lineno };
			line = save;
			continue;
		}
		enum key_id k = key_lookup(key);
		if (k == K_COUNT) {
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "%s:%u: unknown key '%.60s'", file, lineno,
			             key);
			break;
		}
		if (seen_line[k]) {
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "%s:%u: key '%s' repeated (first on line "
			             "%u)",
			             file, lineno, key, seen_line[k]);
			break;
		}
		seen_line[k] = lineno;
		if (k == K_INPUTS) {
			p.inputs_val = eq + 1;
			p.inputs_line = lineno;
		} else if (k == K_DEPTHS) {
			p.depths_val = eq + 1;
			p.depths_line = lineno;
		} else {
			rc = scalar(&p, k, val, f);
		}
		line = save;
	}
	for (int k = 0; rc == 0 && k < K_COUNT; k++)
		if (!seen_line[k])
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "%s: key '%s' is missing", file,
			             key_names[k]);
	if (rc == 0)
		rc = parse_inputs(&p, f);
	if (rc == 0 && f->ninputs < (f->finalize ? 1u : 2u)) {
		p.line = p.inputs_line;
		rc = bad(&p, "inputs",
		         f->finalize ? "at least 1 part ID"
		                     : "at least 2 part IDs (a merge)",
		         p.inputs_val);
	}
	uint8_t *seen = NULL;
	if (rc == 0 && !(seen = calloc(f->ninputs, 1)))
		rc = ms_fail(eb, MS_ERR_NOMEM, "%s: out of memory", file);
	for (size_t i = 0; rc == 0 && i < nledger; i++) {
		p.line = lrefs[i].line;
		rc = ledger_line(&p, lrefs[i].key, lrefs[i].val, f, seen);
	}
	for (size_t i = 0; rc == 0 && i < f->ninputs; i++)
		for (int k = 0; rc == 0 && k < MS_KIND_COUNT; k++)
			if (!(seen[i] & (1u << k)))
				rc = ms_fail(eb, MS_ERR_FORMAT,
				             "%s: key 'ledger.%016" PRIx64
				             ".%s' is missing",
				             file, f->ids[i],
				             ms_part_kind_name(
				                     (enum ms_part_kind)k));
	if (rc == 0 && f->frontier_ns > f->now_ns)
		rc = ms_fail(eb, MS_ERR_FORMAT,
		             "%s:%u: key 'frontier_ns': %" PRId64
		             " is after now_ns %" PRId64,
		             file, seen_line[K_FRONTIER], f->frontier_ns,
		             f->now_ns);
	if (rc == 0) {
		uint64_t fp = ms_pick_fp_add(0, f->ids, f->ninputs);
		if (fp != f->selection_fp)
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "%s:%u: key 'selection_fp': %016" PRIx64
			             " does not match the inputs (they give "
			             "%016" PRIx64 ")",
			             file, seen_line[K_SELECTION_FP],
			             f->selection_fp, fp);
	}
	(void)len;
	free(seen);
	free(lrefs);
	free(buf);
	if (rc)
		ms__frozen_release(f);
	return rc;
}
