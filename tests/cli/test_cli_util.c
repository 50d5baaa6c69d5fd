/*
 * test_cli_util.c - the helpers the FILE:LINE:COL subcommands share
 * (cli/cli_util.c): parsing a location, and turning it into an offset.
 */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "harness.h"

TEST(parse_location)
{
	char ok[] = "dir/a:b.py:12:7";
	long line = 0, col = 0;
	CHECK_INT_EQ(cli_parse_location(ok, &line, &col), 0);
	CHECK_STR_EQ(ok, "dir/a:b.py"); /* the last two colons split, the path keeps its own */
	CHECK_INT_EQ(line, 12);
	CHECK_INT_EQ(col, 7);
	/* not of the form, or a line or column below 1: -EINVAL, as errno codes elsewhere */
	const char *bad[] = { "a.py", "a.py:3", "a.py:x:2", "a.py:0:1", "a.py:1:0", "a.py:2:3z" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char buf[32];
		snprintf(buf, sizeof buf, "%s", bad[i]);
		CHECK_INT_EQ(cli_parse_location(buf, &line, &col), -EINVAL);
	}
}

TEST(location_offset)
{
	const char *t = "ab\ncd\n";
	CHECK_INT_EQ(cli_location_offset(t, strlen(t), 1, 1), 0);
	CHECK_INT_EQ(cli_location_offset(t, strlen(t), 2, 2), 4);
	CHECK_INT_EQ(cli_location_offset(t, strlen(t), 2, 99), 5); /* clamped to the line's end */
	CHECK_INT_EQ(cli_location_offset(t, strlen(t), 9, 1), -1); /* fewer lines */
}

TEST_MAIN()
