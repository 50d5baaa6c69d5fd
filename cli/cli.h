/*
 * cli.h - the subcommands of the infill binary.
 *
 * main.c picks one by its first argument; each takes the arguments after the
 * subcommand name (argv[0] is the subcommand) and returns the process exit
 * status: 0 success, 1 failure with a message on stderr, 2 usage error.
 * Results go to stdout, diagnostics to stderr.
 */
#ifndef INFILL_LSP_CLI_H
#define INFILL_LSP_CLI_H

#include <stddef.h>

/* The language server on stdio (also the default with no subcommand; cli_serve.c). */
int cli_serve(int argc, char **argv);

/* Engine tools (cli_mkmodel.c, cli_tokenize.c, cli_model.c). */
int cli_tokenize(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_mkmodel(int argc, char **argv);

/* tree-sitter tools (cli_ast.c). */
int cli_context(int argc, char **argv);
int cli_validate(int argc, char **argv);

/* The whole pipeline: one completion (cli_pipeline.c), the typing replay
 * (cli_replay.c), the quality harness (cli_eval.c with eval_*.c). */
int cli_complete(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_eval(int argc, char **argv);
/* `infill eval --next-edit` (eval_nextedit.c): cli_eval hands it argv
 * whole when the flag is there. */
int cli_eval_next_edit(int argc, char **argv);
int cli_pull(int argc, char **argv);   /* cli_pull.c */
int cli_models(int argc, char **argv); /* cli_models.c */

/* Shared by the subcommands that take FILE:LINE:COL (cli_util.c). */

/* Reads path whole into a new NUL-terminated buffer (caller frees) and sets
 * *len; NULL with a message on stderr when it cannot. */
char *cli_read_file(const char *path, size_t *len);
/* Splits FILE:LINE:COL in place (arg keeps the path); 0, or -EINVAL when it
 * is not of that form or LINE or COL is below 1. */
int cli_parse_location(char *arg, long *line, long *col);
/* Byte offset of 1-based LINE and character (code point) COL in text,
 * the column clamped to the line's end; -1 when the file has fewer lines. */
long cli_location_offset(const char *text, size_t len, long line, long col);

#endif
