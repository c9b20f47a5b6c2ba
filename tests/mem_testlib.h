/*
 * mem_testlib.h - shared by the tests that account memory through an
 * ms_mem: the check that nothing is left allocated. Include after
 * <cmocka.h>.
 */
#ifndef MS_MEM_TESTLIB_H
#define MS_MEM_TESTLIB_H

#include "ms_mem.h"

/* Fails the test unless every byte allocated through m was freed. */
static inline void
tl_assert_no_live(const ms_mem *m)
{
	ms_mem_stats st;
	ms_mem_stats_get(m, &st);
	assert_int_equal(st.live, 0);
}

#endif
