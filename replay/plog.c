/*
 * plog.c - the run's plugin log: the chain's log sink (ms_chain_log_fn),
 * which keeps what the links' plugins log, and its way into the event
 * database (the plugin_log and plugin_log_count tables) and to the screen
 * (ms_replay_plugin_log).
 *
 * Design:
 *  1. The sink is called on merge workers, plugin threads and the threads
 *     that wait for plugin hosts, often inside Decide: it copies the line
 *     under its own lock and returns. It never touches SQLite; the
 *     controller's thread records what was kept (ms__plog_record).
 *  2. Bounded: the first MS_EV_PLOG_KEEP lines of each link are kept (room
 *     for them all is allocated when the chain is known, so a kept line
 *     never allocates); every later line only counts in suppressed, as do
 *     lines a plugin host lost on the way. Kept + suppressed is every line
 *     the link logged.
 *  3. recorded <= n: lines [0, recorded) are in the database. The counts
 *     are recorded again whenever they changed (the last record wins).
 *  4. A seek back keeps the lines: they were logged, and the log is not
 *     part of what a rerun must reproduce.
 */
#include "replay_int.h"

#include "ms_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
ms__plog_init(ms__plog *p, const ms_clock *clock)
{
	memset(p, 0, sizeof(*p));
	p->clock = clock;
	p->cap = (size_t)MS_EV_LINKS_MAX * MS_EV_PLOG_KEEP;
	p->lines = calloc(p->cap, sizeof(*p->lines));
	if (!p->lines)
		return MS_ERR_NOMEM;
	pthread_mutex_init(&p->mu, NULL);
	p->inited = true;
	return 0;
}

void
ms__plog_release(ms__plog *p)
{
	if (!p->inited)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p->lines);
	memset(p, 0, sizeof(*p));
}

void
ms__plog_sink(void *ctx, const ms_chain_log_line *ln)
{
	ms__plog *p = ctx;
	if (!p || !p->inited || ln->link >= MS_EV_LINKS_MAX)
		return;
	int64_t mono = ms_mono_ns();
	int64_t logical = ms_clock_now(p->clock);
	pthread_mutex_lock(&p->mu);
	size_t l = ln->link;
	if (!ln->msg) {
		p->suppressed[l] += ln->lost;
	} else if (p->kept[l] >= MS_EV_PLOG_KEEP || p->n >= p->cap) {
		p->suppressed[l]++;
	} else {
		ms__plog_line *d = &p->lines[p->n++];
		d->mono_ns = mono;
		d->logical_ns = logical;
		d->link = (uint32_t)l;
		d->level = ln->level;
		snprintf(d->msg, sizeof(d->msg), "%s", ln->msg);
		p->kept[l]++;
	}
	p->changed = true;
	if (l + 1 > p->nseen)
		p->nseen = l + 1;
	pthread_mutex_unlock(&p->mu);
}

void
ms__plog_set_names(ms__plog *p, const char *const *names, size_t n)
{
	if (!p->inited)
		return;
	pthread_mutex_lock(&p->mu);
	p->nlinks = n < MS_EV_LINKS_MAX ? n : MS_EV_LINKS_MAX;
	for (size_t i = 0; i < p->nlinks; i++)
		ms_ev_link_label(names, i, p->label[i], sizeof(p->label[i]));
	p->changed = true;
	pthread_mutex_unlock(&p->mu);
}

/* Link l's label; its index when the chain's names are not known. Under
 * mu. */
static void
label_of(const ms__plog *p, size_t l, char *buf, size_t n)
{
	if (l < p->nlinks && p->label[l][0])
		snprintf(buf, n, "%s", p->label[l]);
	else
		snprintf(buf, n, "link %zu", l + 1);
}

static void
fill(const ms__plog *p, const ms__plog_line *s, int64_t t0_mono,
     ms_ev_plugin_log *out)
{
	memset(out, 0, sizeof(*out));
	out->wall_ns = t0_mono ? s->mono_ns - t0_mono : 0;
	out->logical_ns = s->logical_ns;
	out->link = s->link;
	label_of(p, s->link, out->label, sizeof(out->label));
	out->level = s->level;
	snprintf(out->message, sizeof(out->message), "%s", s->msg);
}

static void
count_of(const ms__plog *p, size_t l, ms_ev_plugin_log_count *c)
{
	memset(c, 0, sizeof(*c));
	c->link = (uint32_t)l;
	label_of(p, l, c->label, sizeof(c->label));
	c->lines = p->kept[l];
	c->suppressed = p->suppressed[l];
}

void
ms__plog_record(ms__plog *p, ms_rec *rec, int64_t t0_mono)
{
	if (!p->inited || !rec)
		return;
	/* Copied out under the lock, recorded after it: the sink never waits
	 * for SQLite (design 1). */
	for (;;) {
		ms_ev_plugin_log batch[16];
		size_t k = 0;
		pthread_mutex_lock(&p->mu);
		while (k < 16 && p->recorded < p->n)
			fill(p, &p->lines[p->recorded++], t0_mono, &batch[k++]);
		pthread_mutex_unlock(&p->mu);
		for (size_t i = 0; i < k; i++)
			ms_rec_plugin_log(rec, &batch[i], NULL);
		if (k < 16)
			break;
	}
	ms_ev_plugin_log_count c[MS_EV_LINKS_MAX];
	size_t nc = 0;
	pthread_mutex_lock(&p->mu);
	if (p->changed) {
		size_t n = p->nlinks > p->nseen ? p->nlinks : p->nseen;
		for (size_t l = 0; l < n; l++)
			count_of(p, l, &c[nc++]);
		p->changed = false;
	}
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < nc; i++)
		ms_rec_plugin_log_count(rec, &c[i], NULL);
}

size_t
ms__plog_link(ms__plog *p, size_t link, int64_t t0_mono, ms_ev_plugin_log *out,
              size_t cap, ms_ev_plugin_log_count *count)
{
	if (count)
		memset(count, 0, sizeof(*count));
	if (!p->inited || link >= MS_EV_LINKS_MAX)
		return 0;
	pthread_mutex_lock(&p->mu);
	if (count)
		count_of(p, link, count);
	/* The link's last cap lines, oldest first. */
	size_t k = 0, i = p->n;
	while (i > 0 && k < cap)
		if (p->lines[--i].link == link)
			k++;
	size_t m = 0;
	for (; i < p->n && m < k; i++)
		if (p->lines[i].link == link)
			fill(p, &p->lines[i], t0_mono, &out[m++]);
	pthread_mutex_unlock(&p->mu);
	return m;
}
