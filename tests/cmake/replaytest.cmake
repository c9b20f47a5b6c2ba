# Replay controller end to end on the smoke fixture: whole runs per
# variant, breakpoints and stepping, SIGKILL, bad input (test_replay);
# freeze at a barrier and merge-once (test_freeze); the end-of-run gates
# seen failing (test_gates).
foreach(t test_replay test_freeze test_gates test_replay_seek)
	if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
		ms_add_test(${t} LIBS msreplay msfixtures mscore)
		foreach(p alwayskeep detdrop skywalking tp_badval tp_fail
				tp_slow tp_liar)
			if(TARGET ${p})
				add_dependencies(${t} ${p})
			endif()
		endforeach()
	endif()
endforeach()
# test_replay fills the event database's disk as the run records its end,
# records a row the database refuses as the run closes, leaves a run no
# room for a thread and fails the allocations of an open (wrappers of
# ms_rec_run_end and ms_pipeline_close in the test, of pthread_create in
# tests/thread_testlib.h, of malloc in tests/alloc_testlib.h).
if(TARGET test_replay)
	target_link_options(test_replay PRIVATE -Wl,--wrap=ms_rec_run_end
		-Wl,--wrap=ms_pipeline_close -Wl,--wrap=pthread_create)
	ms_alloc_fail_test(test_replay)
endif()
# test_freeze fails the allocations of a frozen file's read
# (tests/alloc_testlib.h).
if(TARGET test_freeze)
	ms_alloc_fail_test(test_freeze)
endif()
# test_gates and test_replay run whole days (test_gates a day-1x one):
# under ASan on a loaded two-core machine they took 247 s and 171 s of
# the 300 s hang guard; a slower machine would kill them part-way (and
# leave their ms-replaytest-* directories), so they get what test_engine
# gets. (The ThreadSanitizer build's guard is longer already.)
if(NOT MS_TSAN)
	foreach(t test_gates test_replay)
		if(TEST ${t})
			set_tests_properties(${t} PROPERTIES TIMEOUT 900)
		endif()
	endforeach()
endif()
