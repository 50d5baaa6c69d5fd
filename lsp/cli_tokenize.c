/* cli_tokenize.c - placeholder until its owner lands it. */
#include <stdio.h>

#include "cli.h"

int cli_tokenize(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: tokenize is not implemented yet\n");
	return 1;
}

