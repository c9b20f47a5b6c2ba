# Fixture generator: schedule, time map, manifest, whole builds.
ms_add_test(test_fixture_schedule LIBS msfixtures)
ms_add_test(test_fixture_timemap LIBS msfixtures)
