# Fixture generator: schedule, time map, manifest, whole builds.
ms_add_test(test_fixture_schedule LIBS msfixtures)
ms_add_test(test_fixture_timemap LIBS msfixtures)
ms_add_test(test_fixture_build LIBS msfixtures)
ms_add_test(test_manifest LIBS msfixtures PkgConfig::SQLITE)
# Whole builds run the real sampler plugin.
add_dependencies(test_fixture_build skywalking)
