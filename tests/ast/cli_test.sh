#!/bin/sh
# cli_test.sh INFILL DATA_DIR - `infill context` and `infill validate` end to end.
set -u
infill=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # name, command output, expected substring
	case "$2" in
	*"$3"*) echo "ok   $1" ;;
	*) echo "FAIL $1: expected $3 in:"; echo "$2"; fail=1 ;;
	esac
}

printf 'def add(a, b):\n    \n\ndef sub(a, b):\n    return a - b\n' > "$tmp/m.py"
out=$("$infill" validate "$tmp/m.py:2:5" --text 'return a + b' 2>&1)
check validate-valid "$out" '"valid": true'
out=$("$infill" validate "$tmp/m.py:2:5" --text 'return a +' 2>&1)
check validate-invalid "$out" '"valid": false'
out=$("$infill" validate "$tmp/m.py:2:5" --text 'x = 1
def h():
    pass' 2>&1)
check validate-trimmed "$out" '"trimmed": true'
check validate-trimmed-text "$out" '"text": "x = 1"'

# a language rule names itself: an empty if body in C
printf 'int f(int x)\n{\n    if (x == 0)\n    return 1;\n}\n' > "$tmp/r.c"
out=$("$infill" validate "$tmp/r.c:3:16" --text ';' 2>&1)
check validate-rule "$out" '"rule": "empty-if-body"'
out=$("$infill" validate "$tmp/r.c:3:16" --text ' return 0;' 2>&1)
check validate-no-rule "$out" '"rule": null'

# COL counts characters: the cursor after "é" (2 bytes) is column 6.
printf 'x = "é"\ny = len(\n' > "$tmp/u.py"
out=$("$infill" validate "$tmp/u.py:2:9" --text 'x)' 2>&1)
check validate-column-chars "$out" '"valid": true'

out=$("$infill" context "$data/inventory.py:237:5" --budget 200 2>&1)
check context-syntactic "$out" '"syntactic": true'
check context-signature "$out" '"name": "advice"'
check context-imports "$out" '"kind": "imports"'
check context-shape "$out" '"kind": "rest_of_line"'

printf 'some notes\nmore text\n' > "$tmp/notes.txt"
out=$("$infill" context "$tmp/notes.txt:2:5" 2>&1)
check context-plaintext "$out" '"lang": "plaintext"'
out=$("$infill" validate "$tmp/notes.txt:2:5" --text ' words' 2>&1)
check validate-plaintext "$out" '"verdict": "unchecked"'

# The project around the file (project context): a definition from the file it
# imports, with its source, tokens and reason; none with --no-project.
mkdir -p "$tmp/proj/pkg"
printf 'def fetch_page(url, retries=3):\n    return url\n' > "$tmp/proj/pkg/net.py"
printf 'from pkg.net import fetch_page\n\ndef run(u):\n    page = fetch_page(u)\n    \n' > "$tmp/proj/main.py"
out=$("$infill" context "$tmp/proj/main.py:5:5" --workspace "$tmp/proj" 2>&1)
check context-project-definition "$out" '"source": "definition"'
check context-project-signature "$out" 'def fetch_page(url, retries=3): ...'
check context-project-why "$out" 'fetch_page: defined in pkg/net.py, imported'
check context-project-path "$out" '"path": "pkg/net.py"'
out=$("$infill" context "$tmp/proj/main.py:5:5" --workspace "$tmp/proj" --no-project 2>&1)
case "$out" in *'"project"'*) echo "FAIL context-no-project"; fail=1 ;; *) echo "ok   context-no-project" ;; esac

"$infill" context "$tmp/m.py:99:1" > /dev/null 2>&1
[ $? -eq 1 ] && echo "ok   context-bad-line" || { echo "FAIL context-bad-line"; fail=1; }
"$infill" validate "$tmp/m.py" --text x > /dev/null 2>&1
[ $? -eq 2 ] && echo "ok   validate-usage" || { echo "FAIL validate-usage"; fail=1; }
exit $fail
