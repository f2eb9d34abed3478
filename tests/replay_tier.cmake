# The replay tier: tests/replay_test replays the stored captures
# (testdata/captures/) from their own tables against their expected frames.
# Links bpf_host and GoogleTest only, so it builds and passes on any machine
# (another Debian release, arm64), with or without the rest of ehprof
# (EHPROF_REPLAY_ONLY, the top-level CMakeLists.txt).
include(GoogleTest)
add_executable(replay_test ${CMAKE_SOURCE_DIR}/tests/replay_test.cc)
target_link_libraries(replay_test PRIVATE bpf_host GTest::gtest GTest::gtest_main)
target_compile_definitions(replay_test PRIVATE EHPROF_CAPTURES_DIR="${CMAKE_SOURCE_DIR}/testdata/captures")
gtest_discover_tests(replay_test PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
