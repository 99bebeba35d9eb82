// Catch2 entry point of the test binaries.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
