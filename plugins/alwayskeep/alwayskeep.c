/*
 * alwayskeep.c - the retain-all sampler: keeps every trace and reads no
 * column. It measures the framework's own cost (staging, batch assembly,
 * the call, verdict handling, the guard set-up) with no sampling logic;
 * its merges must produce exactly what a disabled pipeline produces.
 */
#include "ms_plugin.h"

#include <stdlib.h>
#include <string.h>

static int
ak_open(const char *config, const ms_plugin_host *host, char *err,
        size_t errlen, void **state)
{
	(void)host;
	/* No settings: an empty config or an empty object. */
	const char *p = config ? config : "";
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p && strcmp(p, "{}") != 0) {
		if (errlen) {
			strncpy(err, "alwayskeep takes no configuration",
			        errlen - 1);
			err[errlen - 1] = '\0';
		}
		return -1;
	}
	*state = NULL;
	return 0;
}

static int64_t
ak_decide(void *state, const ms_plugin_batch *batch, uint8_t *verdict, size_t n)
{
	(void)state;
	(void)batch;
	memset(verdict, MS_VERDICT_KEEP, n);
	return (int64_t)n;
}

static void
ak_close(void *state)
{
	(void)state;
}

static const ms_plugin_desc ak_desc = {
	.struct_size = sizeof(ms_plugin_desc),
	.abi_major = MS_PLUGIN_ABI_MAJOR,
	.abi_minor = MS_PLUGIN_ABI_MINOR,
	.name = "alwayskeep",
	.version = "1",
	.projection = MS_PROJ_NONE,
	.open = ak_open,
	.decide = ak_decide,
	.close = ak_close,
};

MS_PLUGIN_DEFINE(ak_desc)
