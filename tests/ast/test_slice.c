#include "harness.h"
TEST_MAIN()
