/* cli_mkmodel.c - placeholder until its owner lands it. */
#include <stdio.h>

#include "cli.h"

int cli_mkmodel(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: mkmodel is not implemented yet\n");
	return 1;
}

