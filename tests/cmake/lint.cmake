# Functions outside the tests stay at most 120 lines, or say above them
# why they are longer (tests/lint/fn_length.awk). The two self-checks
# make sure the check can fail: a 121-line function must be refused, and
# the same function with its reason written above it accepted.
find_program(MS_AWK NAMES awk mawk gawk REQUIRED)
set(MS_LINT_AWK ${CMAKE_CURRENT_SOURCE_DIR}/lint/fn_length.awk)
file(GLOB MS_LINT_SOURCES CONFIGURE_DEPENDS
	${PROJECT_SOURCE_DIR}/core/*.c ${PROJECT_SOURCE_DIR}/replay/*.c
	${PROJECT_SOURCE_DIR}/tui/*.c ${PROJECT_SOURCE_DIR}/fixtures/*.c
	${PROJECT_SOURCE_DIR}/plugins/*/*.c)
add_test(NAME fn_length COMMAND ${MS_AWK} -f ${MS_LINT_AWK} ${MS_LINT_SOURCES})

string(REPEAT "\tx++;\n" 121 ms_lint_body)
set(ms_lint_fn "static int\nlong_one(int x)\n{\n${ms_lint_body}\treturn x;\n}\n")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/lint_too_long.c
	"/* A step of many lines. */\n${ms_lint_fn}")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/lint_said_why.c
	"/* One table of cases; it is over 120 lines because\n * each case is one line. */\n${ms_lint_fn}")
add_test(NAME fn_length_refuses COMMAND ${MS_AWK} -f ${MS_LINT_AWK}
	${CMAKE_CURRENT_BINARY_DIR}/lint_too_long.c)
set_tests_properties(fn_length_refuses PROPERTIES
	PASS_REGULAR_EXPRESSION "lint_too_long.c:3: long_one has 122 lines")
add_test(NAME fn_length_reason COMMAND ${MS_AWK} -f ${MS_LINT_AWK}
	${CMAKE_CURRENT_BINARY_DIR}/lint_said_why.c)
add_test(NAME fn_length_refuses_status COMMAND ${MS_AWK} -f ${MS_LINT_AWK}
	${CMAKE_CURRENT_BINARY_DIR}/lint_too_long.c)
set_tests_properties(fn_length_refuses_status PROPERTIES WILL_FAIL TRUE)

# `make install` says how to put PREFIX/bin on PATH only when no PATH
# entry is that directory (it said it every time).
find_program(MS_MAKE NAMES make gmake)
if(MS_MAKE)
	set(ms_pfx ${CMAKE_CURRENT_BINARY_DIR}/path-note)
	file(MAKE_DIRECTORY ${ms_pfx}/bin)
	add_test(NAME make_path_note_on_path COMMAND env
		PATH=${ms_pfx}/bin/:/usr/bin:/bin ${MS_MAKE} -s
		-C ${PROJECT_SOURCE_DIR} path-note PREFIX=${ms_pfx})
	set_tests_properties(make_path_note_on_path PROPERTIES
		FAIL_REGULAR_EXPRESSION "PATH")
	add_test(NAME make_path_note_off_path COMMAND env PATH=/usr/bin:/bin
		${MS_MAKE} -s -C ${PROJECT_SOURCE_DIR} path-note
		PREFIX=${ms_pfx})
	set_tests_properties(make_path_note_off_path PROPERTIES
		PASS_REGULAR_EXPRESSION "path-note/bin is not on your PATH")
endif()
