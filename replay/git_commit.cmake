# Writes OUT (a C header defining MS_GIT_COMMIT) from the git commit of
# SRC, with "-dirty" when tracked files differ from it; "unknown" outside
# a git checkout. Run at every build; the file changes only when the
# commit does, so nothing recompiles otherwise.
execute_process(COMMAND git -C ${SRC} rev-parse --short=12 HEAD
	OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
	RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
	set(commit "unknown")
else()
	execute_process(COMMAND git -C ${SRC} status --porcelain
		--untracked-files=no
		OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE
		ERROR_QUIET)
	if(NOT dirty STREQUAL "")
		set(commit "${commit}-dirty")
	endif()
endif()
set(text "#define MS_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
	file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
	file(WRITE ${OUT} "${text}")
endif()
