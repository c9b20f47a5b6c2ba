/*
 * checkpoint_state.c - the state file of a checkpoint (ms_checkpoint.h;
 * "Checkpoint" in core/FORMAT.md): encoding, decoding and reading it.
 * Apart from checkpoint.c so that the decoder is fuzzed alone.
 */
#define XXH_INLINE_ALL
#include "checkpoint_int.h"
#include "ms_fs.h"

#include <xxhash.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
ms__ck_path(char *out, const char *a, const char *b, ms_errbuf *eb)
{
	int n = snprintf(out, MS_FS_PATH_MAX, "%s/%s", a, b);
	if (n < 0 || n >= MS_FS_PATH_MAX)
		return ms_fail(eb, MS_ERR_RANGE, "%s/%s: path too long", a, b);
	return 0;
}

/* The whole file at path, at most max bytes, into *buf (malloc). */
int
ms__ck_read_all(const char *path, uint64_t max, uint8_t **buf, size_t *n,
         ms_errbuf *eb)
{
	*buf = NULL;
	*n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb, ms_err_from_open_errno(errno), "%s: %s",
		               path, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) != 0) {
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: stat: %s",
		             path, strerror(errno));
	} else if ((uint64_t)st.st_size > max) {
		rc = ms_fail(eb, MS_ERR_CORRUPT, "%s: %lld bytes, at most %llu",
		             path, (long long)st.st_size,
		             (unsigned long long)max);
	} else if (!(*buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "%s: out of memory to read its %lld bytes", path,
		             (long long)st.st_size);
	}
	size_t got = 0;
	while (rc == 0 && got < (size_t)st.st_size) {
		ssize_t r = read(fd, *buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = ms_fail(eb, r ? ms_err_from_errno(errno)
			                   : MS_ERR_CORRUPT,
			             "%s: read: %s", path,
			             r ? strerror(errno) : "file shrank");
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	if (rc) {
		free(*buf);
		*buf = NULL;
		return rc;
	}
	*n = got;
	return 0;
}

/* ---- the state file --------------------------------------------------- */

int
ms__ck_encode(const ms_checkpoint *c, ms_buf *b)
{
	const ms_engine_state *e = &c->engine;
	int rc = ms_buf_append(b, CK_MAGIC, 8);
	uint64_t head[] = {
		c->epoch,        c->next_id,       c->nparts,
		e->seq,          e->fingerprint,   e->picker_runs,
		e->selections,   e->merges_done,   e->merges_failed,
		e->dropped,      e->lane_merges[0], e->lane_merges[1],
		e->lane_merges[2],
	};
	rc = rc ? rc : ms_buf_append_le32(b, MS_CHECKPOINT_VERSION);
	rc = rc ? rc : ms_buf_append_le32(b, 0);
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		rc = rc ? rc : ms_buf_append_le64(b, head[i]);
	rc = rc ? rc : ms_buf_append_le32(b, e->backoff_ms);
	rc = rc ? rc : ms_buf_append_le32(b, e->disk_fails);
	rc = rc ? rc : ms_buf_append_le64(b, e->nquarantined);
	rc = rc ? rc : ms_buf_append_le64(b, e->nfails);
	rc = rc ? rc : ms_buf_append_le64(b, c->user_len);
	for (size_t i = 0; i < c->nparts; i++)
		rc = rc ? rc : ms_buf_append_le64(b, c->parts[i]);
	for (size_t i = 0; i < e->nquarantined; i++)
		rc = rc ? rc : ms_buf_append_le64(b, e->quarantined[i]);
	for (size_t i = 0; i < e->nfails; i++) {
		rc = rc ? rc : ms_buf_append_le64(b, e->fails[i].id);
		rc = rc ? rc : ms_buf_append_le32(b, e->fails[i].n);
		rc = rc ? rc : ms_buf_append_le32(b, 0);
	}
	if (c->user_len)
		rc = rc ? rc : ms_buf_append(b, c->user, c->user_len);
	if (rc)
		return rc;
	return ms_buf_append_le64(b, XXH64(b->data, b->len, 0));
}

/* IDs ascending, non-zero, below `below`. */
static bool
ids_ok(const uint64_t *ids, size_t n, uint64_t below)
{
	for (size_t i = 0; i < n; i++)
		if (!ids[i] || ids[i] >= below ||
		    (i && ids[i] <= ids[i - 1]))
			return false;
	return true;
}

static void
decode_head(const uint8_t *p, ms_checkpoint *c)
{
	ms_engine_state *e = &c->engine;
	uint64_t *dst[] = {
		&c->epoch,         &c->next_id,        NULL,
		&e->seq,           &e->fingerprint,    &e->picker_runs,
		&e->selections,    &e->merges_done,    &e->merges_failed,
		&e->dropped,       &e->lane_merges[0], &e->lane_merges[1],
		&e->lane_merges[2],
	};
	for (size_t i = 0; i < sizeof(dst) / sizeof(dst[0]); i++)
		if (dst[i])
			*dst[i] = ms_le64(p + 16 + 8 * i);
	e->backoff_ms = ms_le32(p + 120);
	e->disk_fails = ms_le32(p + 124);
}

/* Copy the arrays and the blob out of a checked state file: 0,
 * MS_ERR_NOMEM, or MS_ERR_CORRUPT (a reserved field not 0). */
static int
decode_arrays(const uint8_t *p, ms_checkpoint *c, size_t np, size_t nq,
              size_t nf, size_t ul)
{
	ms_engine_state *e = &c->engine;
	c->parts = malloc((np ? np : 1) * sizeof(uint64_t));
	e->quarantined = nq ? malloc(nq * sizeof(uint64_t)) : NULL;
	e->fails = nf ? malloc(nf * sizeof(*e->fails)) : NULL;
	c->user = ul ? malloc(ul) : NULL;
	if (!c->parts || (nq && !e->quarantined) || (nf && !e->fails) ||
	    (ul && !c->user))
		return MS_ERR_NOMEM;
	p += CK_HEAD;
	for (size_t i = 0; i < np; i++, p += 8)
		c->parts[i] = ms_le64(p);
	for (size_t i = 0; i < nq; i++, p += 8)
		e->quarantined[i] = ms_le64(p);
	for (size_t i = 0; i < nf; i++, p += 16) {
		if (ms_le32(p + 12) != 0)
			return MS_ERR_CORRUPT;
		e->fails[i] = (ms_engine_failcount){ .id = ms_le64(p),
		                                     .n = ms_le32(p + 8) };
	}
	if (ul)
		memcpy(c->user, p, ul);
	c->nparts = np;
	e->nquarantined = nq;
	e->nfails = nf;
	c->user_len = ul;
	return 0;
}

int
ms_checkpoint_decode(const void *buf, size_t n, const char *name,
                     ms_checkpoint *out, ms_errbuf *eb)
{
	const uint8_t *p = buf;
	memset(out, 0, sizeof(*out));
	if (n < CK_HEAD + 8 || memcmp(p, CK_MAGIC, 8) != 0)
		return ms_fail(eb, MS_ERR_FORMAT, "%s: not a checkpoint state",
		               name);
	if (ms_le32(p + 8) == 1 && ms_le32(p + 12) == 0)
		return ms_fail(
		        eb, MS_ERR_FORMAT,
		        "%s: checkpoint version 1 holds the snapshot's "
		        "next part ID, not the shard's counter: restored, "
		        "it could hand out part IDs again; this build "
		        "reads version %d only, take the checkpoint again",
		        name, MS_CHECKPOINT_VERSION);
	if (ms_le32(p + 8) != MS_CHECKPOINT_VERSION || ms_le32(p + 12) != 0)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "%s: checkpoint version %u (flags %u), this "
		               "build reads version %d",
		               name, ms_le32(p + 8), ms_le32(p + 12),
		               MS_CHECKPOINT_VERSION);
	uint64_t np = ms_le64(p + 32), nq = ms_le64(p + 128);
	uint64_t nf = ms_le64(p + 136), ul = ms_le64(p + 144);
	if (np > CK_COUNT_MAX || nq > CK_COUNT_MAX || nf > CK_COUNT_MAX ||
	    ul > MS_CHECKPOINT_USER_MAX ||
	    n != CK_HEAD + 8 * np + 8 * nq + 16 * nf + ul + 8)
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "%s: %zu bytes do not hold %llu parts, %llu "
		               "quarantined, %llu failure counts and %llu "
		               "bytes",
		               name, n, (unsigned long long)np,
		               (unsigned long long)nq, (unsigned long long)nf,
		               (unsigned long long)ul);
	if (XXH64(p, n - 8, 0) != ms_le64(p + n - 8))
		return ms_fail(eb, MS_ERR_CORRUPT, "%s: checksum mismatch",
		               name);
	decode_head(p, out);
	int rc = decode_arrays(p, out, np, nq, nf, ul);
	if (rc) {
		ms_checkpoint_release(out);
		return rc == MS_ERR_NOMEM
		               ? ms_fail(eb, rc,
		                         "%s: out of memory for its %llu "
		                         "parts, "
		                         "%llu quarantined and %llu failure "
		                         "counts",
		                         name, (unsigned long long)np,
		                         (unsigned long long)nq,
		                         (unsigned long long)nf)
		               : ms_fail(eb, rc,
		                         "%s: a failure count's reserved "
		                         "field is not 0",
		                         name);
	}
	if (!out->next_id || !ids_ok(out->parts, out->nparts, out->next_id) ||
	    !ids_ok(out->engine.quarantined, out->engine.nquarantined,
	            UINT64_MAX)) {
		ms_checkpoint_release(out);
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "%s: next_id 0, or part IDs not ascending, zero "
		               "or not below next_id",
		               name);
	}
	return 0;
}

int
ms_checkpoint_read(const char *dir, ms_checkpoint *out, ms_errbuf *eb)
{
	ck_path path;
	uint8_t *buf;
	size_t n;
	memset(out, 0, sizeof(*out));
	int rc = ms__ck_path(path, dir, "state", eb);
	if (rc == 0)
		rc = ms__ck_read_all(path, STATE_MAX, &buf, &n, eb);
	if (rc)
		return rc;
	rc = ms_checkpoint_decode(buf, n, path, out, eb);
	free(buf);
	return rc;
}

void
ms_checkpoint_release(ms_checkpoint *c)
{
	if (!c)
		return;
	free(c->parts);
	free(c->user);
	free(c->engine.quarantined);
	free(c->engine.fails);
	memset(c, 0, sizeof(*c));
}

