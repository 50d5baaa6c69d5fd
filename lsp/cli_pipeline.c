/* cli_pipeline.c - placeholder until its owner lands it. */
#include <stdio.h>

#include "cli.h"

int cli_complete(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: complete is not implemented yet\n");
	return 1;
}

int cli_replay(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: replay is not implemented yet\n");
	return 1;
}

int cli_eval(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: eval is not implemented yet\n");
	return 1;
}

