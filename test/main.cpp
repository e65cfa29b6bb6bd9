#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <edo/passive_wait.hpp>  // as the tools: idle OpenMP threads sleep
