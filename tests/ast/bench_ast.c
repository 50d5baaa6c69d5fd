#include "ast.h"
#include "harness.h"
TEST_MAIN()
