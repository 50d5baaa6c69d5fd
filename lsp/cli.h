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

/* The language server on stdio (also the default with no subcommand). */
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

/* The whole pipeline (cli_pipeline.c). */
int cli_complete(int argc, char **argv);
int cli_replay(int argc, char **argv);
int cli_eval(int argc, char **argv);

#endif
