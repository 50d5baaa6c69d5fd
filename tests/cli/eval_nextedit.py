#!/usr/bin/python3
"""eval_nextedit.py INFILL DATA_DIR EXAMPLES_DIR - `infill eval --next-edit`
end to end on the eval data and the examples: the finder's kinds need no
model (the model-rewrite kind's places are written by the embedded one), the
JSON has a row per kind beside "all", every kind has cases (the enum-member,
call and import kinds on files written for them), and on this small
set of mechanical changes every place is found and written exactly, and no
offered edit breaks the syntax (the field-init, import-missing and
rename-cross-file kinds on a small project of files written for them) (the aims are 90% on larger sets; here the
cases are few and plain, so anything less is a regression).
"""
import json
import os
import subprocess
import sys

infill, data, examples = sys.argv[1:4]
files = [os.path.join(data, f) for f in ("shapes.py", "stack.c", "queue.js")]
files.append(os.path.join(examples, "files.py"))
p = subprocess.run([infill, "eval", "--next-edit", "--json", "--files"] + files,
                   capture_output=True, text=True, timeout=120)
if p.returncode != 0:
    print(p.stderr)
    sys.exit("infill eval --next-edit exited %d" % p.returncode)
out = json.loads(p.stdout)
rows = {r["kind"]: r for r in out["rows"]}
fail = []
if out["files"] != 4:
    fail.append("files: %r" % out["files"])
for k in ("rename", "repeat", "signature-rename", "signature-remove", "signature-add", "all"):
    r = rows.get(k)
    if not r or r["mode"] != "next-edit" or r["cases"] < 1:
        fail.append("no cases for %s: %r" % (k, r))
        continue
    if r["recall"] < 1.0 or r["precision"] < 1.0:
        fail.append("%s: precision %.2f recall %.2f" % (k, r["precision"], r["recall"]))
    if r["breaks"] != 0:
        fail.append("%s: %d offered edits break the syntax" % (k, r["breaks"]))
    if k != "signature-add" and r["exact"] != 1.0:
        fail.append("%s: exact %r" % (k, r["exact"]))
if rows.get("signature-add", {}).get("exact", 0) is not None:
    fail.append("signature-add has no text to be exact about: %r" % rows.get("signature-add"))
if "| rename |" not in p.stderr:
    fail.append("no table on stderr")

# The kinds that reach across a file's structure, on files written for
# them: an enum member appended (C switch, Python match, TypeScript
# switch), a call's last argument added or removed, an import's one use
# removed. Every expected place found, every text exact where one is
# expected, nothing breaks.
more = [os.path.join(data, f) for f in ("lexer.c", "palette.py", "router.ts")]
q = subprocess.run([infill, "eval", "--next-edit", "--json", "--files"] + more,
                   capture_output=True, text=True, timeout=120)
if q.returncode != 0:
    print(q.stderr)
    sys.exit("infill eval --next-edit (more kinds) exited %d" % q.returncode)
rows2 = {r["kind"]: r for r in json.loads(q.stdout)["rows"]}
for k, min_cases in (("enum-member", 3), ("call-add", 2), ("call-remove", 2),
                     ("import-unused", 3)):
    r = rows2.get(k)
    if not r or r["cases"] < min_cases:
        fail.append("%s: %r cases, want %d or more" % (k, r and r["cases"], min_cases))
        continue
    if r["recall"] < 1.0 or r["breaks"] != 0:
        fail.append("%s: recall %.2f breaks %d" % (k, r["recall"], r["breaks"]))
    if r["precision"] < 1.0:
        fail.append("%s: precision %.2f" % (k, r["precision"]))
    if r["exact"] is not None and r["exact"] != 1.0:
        fail.append("%s: exact %r" % (k, r["exact"]))
if rows2.get("enum-member", {}).get("exact") is None:
    fail.append("enum-member: no arm with text expected: %r" % rows2.get("enum-member"))
# model-rewrite: a parameter and its arguments taken out, the parameter put
# back; the finder finds each call (a place with no mechanical text) and the
# model (the embedded one) writes it: every place found, nothing written
# breaks the syntax, and exact is measured (what it is depends on the model).
r = rows2.get("model-rewrite")
if not r or r["cases"] < 1:
    fail.append("model-rewrite: no cases: %r" % r)
elif r["recall"] < 1.0 or r["breaks"] != 0 or r["exact"] is None or r["offered"] < 1:
    fail.append("model-rewrite: recall %.2f breaks %d exact %r offered %d (the embedded "
                "model wrote none of its places)"
                % (r["recall"], r["breaks"], r["exact"], r["offered"]))
if rows2.get("all", {}).get("cases") != sum(rows2[k]["cases"] for k in rows2
                                            if k not in ("all", "model-rewrite")):
    fail.append("all counts the finder's kinds only: %r" % rows2.get("all"))
print(q.stderr)

# The kinds of eval_nextedit_files.c, on files written as one small
# project (inventory.py imports shapes.py and palette.py, router.ts url.ts
# and view.ts, vec.c and canvas.c include vec.h): a struct or dataclass
# field appended (its initialisers and constructions, places with no
# text), a name another file defines used (its import), a top-level name
# renamed (its uses in the files that import it). Every place found, every
# text exact, nothing breaks; and the rows of the other kinds keep their
# names beside them.
proj = [os.path.join(data, f) for f in ("shapes.py", "palette.py", "inventory.py", "router.ts",
                                        "url.ts", "view.ts", "vec.h", "vec.c", "canvas.c")]
x = subprocess.run([infill, "eval", "--next-edit", "--json", "--files"] + proj,
                   capture_output=True, text=True, timeout=120)
if x.returncode != 0:
    print(x.stderr)
    sys.exit("infill eval --next-edit (project kinds) exited %d" % x.returncode)
rows3 = {r["kind"]: r for r in json.loads(x.stdout)["rows"]}
for k in ("rename", "repeat", "signature-rename", "signature-remove", "signature-add",
          "enum-member", "call-add", "call-remove", "import-unused", "all"):
    if k not in rows3:
        fail.append("row %s missing" % k)
for k, min_cases, min_places in (("field-init", 3, 8), ("import-missing", 8, 8),
                                 ("rename-cross-file", 10, 25)):
    r = rows3.get(k)
    if not r or r["cases"] < min_cases or r["places"] < min_places:
        fail.append("%s: %r, want %d cases and %d places or more" % (k, r, min_cases,
                                                                      min_places))
        continue
    if r["recall"] < 1.0 or r["precision"] < 1.0 or r["breaks"] != 0:
        fail.append("%s: precision %.2f recall %.2f breaks %d" % (k, r["precision"],
                                                                  r["recall"], r["breaks"]))
    want_exact = None if k == "field-init" else 1.0
    if r["exact"] != want_exact:
        fail.append("%s: exact %r, want %r" % (k, r["exact"], want_exact))
if rows3.get("all", {}).get("breaks", 1) != 0:
    fail.append("project files: offered edits break the syntax: %r" % rows3.get("all"))
print(x.stderr)
if fail:
    print(p.stderr)
    sys.exit("\n".join(fail))
print(p.stderr)
