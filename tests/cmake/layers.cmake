# Private headers stay invisible above their layer: each probe includes one
# with only what an upper layer's library exports, and its compile must fail
# on that header. The probes are built by their tests only, never by `all`.
set(MS_PRIVATE_PROBES
	msfixtures:part_int.h msfixtures:pipeline_int.h
	msreplay:merge_int.h msreplay:plugin_host.h msreplay:fx_int.h
	mstui:part_int.h mstui:shape.h mstui:replay_int.h mstui:ev_private.h
	mstui:frozen.h)
foreach(probe ${MS_PRIVATE_PROBES})
	string(REPLACE ":" ";" probe ${probe})
	list(GET probe 0 lib)
	list(GET probe 1 hdr)
	string(REGEX REPLACE "[^a-z]" "_" id "${lib}_${hdr}")
	set(src ${CMAKE_CURRENT_BINARY_DIR}/probe_${id}.c)
	file(CONFIGURE OUTPUT ${src} CONTENT
		"#include \"${hdr}\"\nint ms_probe_${id}(void);\nint ms_probe_${id}(void) { return 0; }\n")
	add_library(probe_${id} OBJECT EXCLUDE_FROM_ALL ${src})
	target_link_libraries(probe_${id} PRIVATE ${lib})
	add_test(NAME private_hidden_${id}
		COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR}
			--target probe_${id})
	string(REPLACE "." "\\." re "${hdr}")
	set_tests_properties(private_hidden_${id} PROPERTIES
		PASS_REGULAR_EXPRESSION "${re}'?:? (No such file|file not found)"
		RESOURCE_LOCK ms_build)
endforeach()
