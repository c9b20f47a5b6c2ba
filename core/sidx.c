/*
 * sidx.c - secondary index parts (placeholder until the index format
 * lands): index parts are refused.
 */
#include "part_int.h"

int
ms__sidx_check_index(const ms_part *p, ms_errbuf *eb)
{
	return ms__part_fail(p, eb, MS_ERR_FORMAT, MS__F_INDEX,
	                     "index parts are not supported yet");
}

int
ms__sidx_verify(const ms_part *p, ms_errbuf *eb)
{
	return ms__part_fail(p, eb, MS_ERR_FORMAT, MS__F_DATA,
	                     "index parts are not supported yet");
}
