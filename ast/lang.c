/*
 * lang.c - the language registry: LSP languageIds and file extensions mapped
 * to the vendored grammars, with what slicing needs to know of each grammar
 * (which node types define things, which import, how blocks are delimited),
 * which languages lend each other lines (a family) and each language's stop
 * strings. The rules a grammar does not enforce are rules.c's table.
 * The table is const data: no state.
 */
#include <string.h>
#include <strings.h>

#include "internal.h"

/* The grammars' entry points (subprojects/tree-sitter-*). */
const TSLanguage *tree_sitter_python(void);
const TSLanguage *tree_sitter_c(void);
const TSLanguage *tree_sitter_cpp(void);
const TSLanguage *tree_sitter_javascript(void);
const TSLanguage *tree_sitter_typescript(void);
const TSLanguage *tree_sitter_tsx(void);
const TSLanguage *tree_sitter_go(void);
const TSLanguage *tree_sitter_rust(void);
const TSLanguage *tree_sitter_java(void);
const TSLanguage *tree_sitter_json(void);
const TSLanguage *tree_sitter_bash(void);
const TSLanguage *tree_sitter_lua(void);

#define LIST(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const char *const c_defs[] = { "function_definition", "struct_specifier", "union_specifier",
	                              "enum_specifier",      "type_definition",  NULL };
static const char *const cpp_defs[] = {
	"function_definition",  "struct_specifier",     "union_specifier",
	"enum_specifier",       "type_definition",      "class_specifier",
	"namespace_definition", "template_declaration", NULL
};
static const char *const js_defs[] = { "function_declaration", "generator_function_declaration",
	                               "class_declaration", "method_definition", NULL };
static const char *const ts_defs[] = { "function_declaration",   "generator_function_declaration",
	                               "class_declaration",      "abstract_class_declaration",
	                               "method_definition",      "interface_declaration",
	                               "type_alias_declaration", "enum_declaration",
	                               "function_signature",     NULL };
static const char *const js_imports[] = { "import_statement", NULL };
static const char *const preproc_closers[] = { "#endif", NULL };

/*
 * Stop strings of each language: where a candidate reaches one it is cut
 * before it (completion.stop adds to them). Each starts a new top-level
 * definition or directive at column 0, which a completion inside a body
 * never means to write: the scope rule cuts a line that closes the body,
 * these the next definition written after a body left unclosed, or at the
 * top level, where there is no scope to leave.
 */
static const char *const python_stops[] = { "\ndef ", "\nclass ",      "\nasync def ",
	                                    "\n@",    "\nif __name__", NULL };
static const char *const c_stops[] = { "\n#include", "\n#define ", NULL };
static const char *const js_stops[] = { "\nfunction ", "\nclass ",         "\nexport ",
	                                "\nimport ",   "\nmodule.exports", NULL };
static const char *const ts_stops[] = { "\nfunction ",  "\nclass ", "\nexport ",    "\nimport ",
	                                "\ninterface ", "\ntype ",  "\nnamespace ", NULL };

static const struct ast_lang langs[] = {
	{ "python", LIST("python3"), LIST(".py", ".pyi", ".pyw"), tree_sitter_python,
	  AST_BLOCK_INDENT, LIST("function_definition", "class_definition", "decorated_definition"),
	  LIST("import_statement", "import_from_statement", "future_import_statement"), NULL, NULL,
	  python_stops },
	{ "c", LIST("c"), LIST(".c", ".h"), tree_sitter_c, AST_BLOCK_BRACE, c_defs,
	  LIST("preproc_include"), preproc_closers, "c", c_stops },
	{ "cpp", LIST("c++", "cuda-cpp", "objective-cpp"),
	  LIST(".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".cu", ".cuh", ".ipp"),
	  tree_sitter_cpp, AST_BLOCK_BRACE, cpp_defs, LIST("preproc_include", "using_declaration"),
	  preproc_closers, "c", c_stops },
	{ "javascript", LIST("javascriptreact", "js", "jsx"), LIST(".js", ".mjs", ".cjs", ".jsx"),
	  tree_sitter_javascript, AST_BLOCK_BRACE, js_defs, js_imports, NULL, "js", js_stops },
	{ "typescript", LIST("ts"), LIST(".ts", ".mts", ".cts"), tree_sitter_typescript,
	  AST_BLOCK_BRACE, ts_defs, js_imports, NULL, "js", ts_stops },
	{ "typescriptreact", LIST("tsx"), LIST(".tsx"), tree_sitter_tsx, AST_BLOCK_BRACE, ts_defs,
	  js_imports, NULL, "js", ts_stops },
	{ "go", LIST("golang"), LIST(".go"), tree_sitter_go, AST_BLOCK_BRACE,
	  LIST("function_declaration", "method_declaration", "type_declaration"),
	  LIST("import_declaration", "package_clause"), NULL, NULL,
	  LIST("\nfunc ", "\ntype ", "\nimport ", "\npackage ") },
	{ "rust", LIST("rs"), LIST(".rs"), tree_sitter_rust, AST_BLOCK_BRACE,
	  LIST("function_item", "function_signature_item", "struct_item", "enum_item", "union_item",
	       "trait_item", "impl_item", "mod_item", "type_item"),
	  LIST("use_declaration", "extern_crate_declaration"), NULL, NULL,
	  LIST("\nfn ", "\npub fn ", "\nimpl ", "\nmod ", "\nuse ", "\n#[") },
	{ "java", LIST("java"), LIST(".java"), tree_sitter_java, AST_BLOCK_BRACE,
	  LIST("class_declaration", "interface_declaration", "enum_declaration",
	       "record_declaration", "method_declaration", "constructor_declaration"),
	  LIST("import_declaration", "package_declaration"), NULL, NULL,
	  LIST("\nimport ", "\npackage ", "\npublic class ") },
	{ "json", LIST("jsonc", "json5"), LIST(".json", ".jsonc"), tree_sitter_json, AST_BLOCK_NONE,
	  LIST("pair"), LIST("__none__"), NULL, NULL, NULL },
	{ "shellscript", LIST("bash", "sh", "shell", "zsh"), LIST(".sh", ".bash"), tree_sitter_bash,
	  AST_BLOCK_KEYWORD, LIST("function_definition"), LIST("__none__"), NULL, NULL, NULL },
	{ "lua", LIST("lua"), LIST(".lua"), tree_sitter_lua, AST_BLOCK_KEYWORD,
	  LIST("function_declaration"), LIST("__none__"), NULL, NULL,
	  LIST("\nfunction ", "\nlocal function ") },
};

#define N_LANGS (sizeof langs / sizeof langs[0])

size_t ast_lang_count(void)
{
	return N_LANGS;
}

const struct ast_lang *ast_lang_at(size_t i)
{
	return i < N_LANGS ? &langs[i] : NULL;
}

const char *ast_lang_name(const struct ast_lang *lang)
{
	return lang ? lang->name : "plaintext";
}

bool lang_type_in(const char *type, const char *const *list)
{
	for (; list && *list; list++)
		if (!strcmp(type, *list)) return true;
	return false;
}

const struct ast_lang *ast_lang_from_id(const char *id)
{
	if (!id) return NULL;
	for (size_t i = 0; i < N_LANGS; i++) {
		if (!strcasecmp(id, langs[i].name)) return &langs[i];
		for (const char *const *a = langs[i].ids; *a; a++)
			if (!strcasecmp(id, *a)) return &langs[i];
	}
	return NULL;
}

const struct ast_lang *ast_lang_from_path(const char *path)
{
	if (!path) return NULL;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	if (!dot || dot == base) return NULL;
	for (size_t i = 0; i < N_LANGS; i++)
		for (const char *const *e = langs[i].exts; *e; e++)
			/* Case matters for .C vs .c elsewhere; here .H/.C are rare
			 * enough that a case-insensitive match helps more. */
			if (!strcasecmp(dot, *e)) return &langs[i];
	return NULL;
}

bool ast_lang_kin(const struct ast_lang *a, const struct ast_lang *b)
{
	if (!a || !b) return false;
	return a == b || (a->family && b->family && !strcmp(a->family, b->family));
}

const char *const *ast_lang_stops(const struct ast_lang *lang)
{
	static const char *const none[] = { NULL };
	return lang && lang->stops ? lang->stops : none;
}

const char *ast_lang_id_from_path(const char *path)
{
	return ast_lang_name(ast_lang_from_path(path));
}

TSParser *lang_parser_new(const struct ast_lang *lang)
{
	if (!lang) return NULL;
	TSParser *p = ts_parser_new();
	if (!p) return NULL;
	if (!ts_parser_set_language(p, lang->grammar())) {
		ts_parser_delete(p);
		return NULL;
	}
	return p;
}

static bool copy_node_text(TSNode n, const char *text, char *buf, size_t cap)
{
	uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e <= s || cap == 0) return false;
	size_t l = e - s < cap - 1 ? e - s : cap - 1;
	memcpy(buf, text + s, l);
	buf[l] = 0;
	return true;
}

static bool is_name_type(const char *t)
{
	return !strcmp(t, "identifier") || !strcmp(t, "field_identifier") ||
	       !strcmp(t, "type_identifier") || !strcmp(t, "property_identifier") ||
	       !strcmp(t, "namespace_identifier") || !strcmp(t, "qualified_identifier") ||
	       !strcmp(t, "destructor_name") || !strcmp(t, "operator_name");
}

bool lang_def_name(TSNode def, const char *text, char *buf, size_t cap)
{
	buf[0] = 0;
	const char *t = ts_node_type(def);
	/* Wrappers: the definition inside carries the name. */
	if (!strcmp(t, "decorated_definition") || !strcmp(t, "template_declaration")) {
		TSNode d = ts_node_child_by_field_name(def, "definition", 10);
		if (ts_node_is_null(d))
			d = ts_node_named_child(def, ts_node_named_child_count(def) - 1);
		return !ts_node_is_null(d) && lang_def_name(d, text, buf, cap);
	}
	if (!strcmp(t, "type_declaration")) { /* Go: type X struct{} */
		TSNode spec = ts_node_named_child(def, 0);
		if (!ts_node_is_null(spec)) def = spec;
	}
	if (!strcmp(t, "impl_item")) { /* Rust: impl Foo / impl Trait for Foo */
		TSNode ty = ts_node_child_by_field_name(def, "type", 4);
		return !ts_node_is_null(ty) && copy_node_text(ty, text, buf, cap);
	}
	TSNode name = ts_node_child_by_field_name(def, "name", 4);
	if (!ts_node_is_null(name)) return copy_node_text(name, text, buf, cap);
	/* C/C++: function_definition -> declarator (pointer/function/...) -> identifier;
	 * type_definition: the last declarator. */
	TSNode d = ts_node_child_by_field_name(def, "declarator", 10);
	for (int depth = 0; !ts_node_is_null(d) && depth < 8; depth++) {
		if (is_name_type(ts_node_type(d))) return copy_node_text(d, text, buf, cap);
		TSNode next = ts_node_child_by_field_name(d, "declarator", 10);
		if (ts_node_is_null(next)) next = ts_node_named_child(d, 0);
		d = next;
	}
	return false;
}
