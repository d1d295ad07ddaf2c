// The translation unit that builds the tests' precompiled header
// (cairn_test_pch in tests/CMakeLists.txt); it has no code of its own.
