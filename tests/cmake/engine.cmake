# The picker and the engine (dispatcher, lanes, merge-idle, finalize).
# Threaded code: also run test_engine once under ThreadSanitizer with
#   cmake -S . -B build-tsan -DMS_TSAN=ON -DCMAKE_BUILD_TYPE=Debug
#   cmake --build build-tsan --target test_engine && build-tsan/tests/test_engine
ms_add_test(test_picker LIBS mscore)
