/*
 * labels.h - how a table names the variants it compares (labels.c):
 * merge-once's tables and bench's summary; and the links of a chain.
 * Private to replay/.
 *
 * A variant is printed whole when every one fits the widest column the
 * table allows; otherwise (a chain spec may be 4 KiB long, and two long
 * specs often share their first columns, so a cut name could not tell
 * them apart) the table says V1, V2, ... and a legend above it gives
 * each its spec.
 *
 * A chain link is named by its plugin, and by its place among the links
 * of that plugin when a chain holds one plugin twice: "detdrop" and
 * "detdrop#2" in `detdrop:35,detdrop:50`.
 */
#ifndef MS_LABELS_H
#define MS_LABELS_H

#include "ms_replay_events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ms__labels {
	const char *const *spec; /* borrowed: n variant specs */
	size_t n;
	int width;     /* of the variant column */
	bool numbered; /* V1, V2, ... */
} ms__labels;

/* The labels of spec[0..n): width at least min_width, at most
 * max_width. */
ms__labels ms__labels_of(const char *const *spec, size_t n, int min_width,
                         int max_width);
/* Variant i's name in the table: its spec, or "V<i+1>" written in buf. */
const char *ms__label(const ms__labels *l, size_t i, char buf[24]);
/* The legend ("variants: V1 = SPEC", a line each) when the variants are
 * numbered; nothing otherwise. */
void ms__labels_legend(const ms__labels *l, FILE *out);

/* Link i of merge m's event named as ms_ev_link_label names it. */
void ms__ev_link_label(const ms_ev_merge *m, uint32_t i, char *buf, size_t n);
/* Room for a link label: a plugin name and "#N". */
#define MS__LINK_LABEL_MAX (MS_EV_NAME_MAX + 12)

#endif
