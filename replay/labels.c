/*
 * labels.c - how a table names the variants it compares (labels.h).
 */
#include "labels.h"

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
