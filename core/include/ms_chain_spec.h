/*
 * ms_chain_spec.h - the chain-spec parser (chain_spec.c): "detdrop:35,
 * skywalking", "disabled" or JSON configs turned into the link specs of a
 * chain. Nothing is loaded (ms_loader.h) nor run (ms_chain.h) here.
 *
 * Ownership: an ms_chain_spec is embedded by its caller (_parse fills it,
 * _release frees what it owns, also after a failed parse). The paths and
 * configs are owned by the spec, allocated from its mem; links[] are
 * views of them, valid until the release.
 */
#ifndef MS_CHAIN_SPEC_H
#define MS_CHAIN_SPEC_H

#include "ms_chain.h"
#include "ms_err.h"
#include "ms_mem.h"

#include <stddef.h>

/* A parsed chain spec: "disabled", "alwayskeep", "detdrop:35",
 * "skywalking", "skywalking:{json}", "detdrop:{\"percent\":35}", or
 * several joined by commas. */
/* A chain's most links, for a spec and ms_chain_open alike: 8, as many as
 * a replay event records per merge and run (MS_EV_LINKS_MAX) and the TUI
 * shows, so no link's figures can be left out of the event log, its
 * gates or the screen. */
#define MS_CHAIN_MAX_LINKS 8
typedef struct ms_chain_spec {
	size_t n; /* 0 for "disabled" */
	char names[MS_CHAIN_MAX_LINKS][64];
	char *paths[MS_CHAIN_MAX_LINKS];              /* owned */
	char *configs[MS_CHAIN_MAX_LINKS];            /* owned */
	ms_chain_link_spec links[MS_CHAIN_MAX_LINKS]; /* views of the above */
	ms_mem *mem;
} ms_chain_spec;

/*
 * Parse spec; plugin paths are plugin_dir/<name>.so. Names are
 * [a-z0-9_-]+. "detdrop:PCT" becomes {"percent":PCT}; "skywalking" alone
 * gets the default SkyWalking config. White space is taken only inside a
 * JSON config's braces. Errors name the position (and link) and what was
 * expected. Release with ms_chain_spec_release (also after failure).
 */
int ms_chain_spec_parse(ms_chain_spec *out, const char *spec,
                        const char *plugin_dir, ms_mem *mem, ms_errbuf *eb);
void ms_chain_spec_release(ms_chain_spec *s);

#define MS_SKYWALKING_DEFAULT_CONFIG                                           \
	"{\"durationThresholdMs\":500,\"keepErrors\":true,"                    \
	"\"healthySampleRate\":0.1}"

#endif
