/*
 * labels.c - how a table names the variants it compares and the links of
 * a chain (labels.h).
 */
#include "labels.h"

#include <stdio.h>
#include <string.h>

ms__labels
ms__labels_of(const char *const *spec, size_t n, int min_width, int max_width)
{
	size_t w = min_width > 0 ? (size_t)min_width : 0;
	for (size_t i = 0; i < n; i++)
		if (strlen(spec[i]) > w)
			w = strlen(spec[i]);
	bool numbered = w > (size_t)max_width;
	return (ms__labels){
		.spec = spec,
		.n = n,
		.width = numbered ? min_width : (int)w,
		.numbered = numbered,
	};
}

const char *
ms__label(const ms__labels *l, size_t i, char buf[24])
{
	if (!l->numbered)
		return l->spec[i];
	snprintf(buf, 24, "V%zu", i + 1);
	return buf;
}

void
ms__labels_legend(const ms__labels *l, FILE *out)
{
	if (!l->numbered)
		return;
	for (size_t i = 0; i < l->n; i++)
		fprintf(out, "%-9s V%zu = %s\n", i ? "" : "variants:", i + 1,
		        l->spec[i]);
}

void
ms_ev_link_label(const char *const *names, size_t i, char *buf, size_t n)
{
	unsigned nth = 1;
	for (size_t l = 0; l < i; l++)
		nth += strcmp(names[l], names[i]) == 0;
	if (nth > 1)
		snprintf(buf, n, "%s#%u", names[i], nth);
	else
		snprintf(buf, n, "%s", names[i]);
}

void
ms__ev_link_label(const ms_ev_merge *m, uint32_t i, char *buf, size_t n)
{
	const char *names[MS_EV_LINKS_MAX];
	for (uint32_t l = 0; l <= i && l < MS_EV_LINKS_MAX; l++)
		names[l] = m->links[l].name;
	ms_ev_link_label(names, i < MS_EV_LINKS_MAX ? i : MS_EV_LINKS_MAX - 1,
	                 buf, n);
}
