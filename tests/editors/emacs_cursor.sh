#!/bin/sh
# emacs_cursor.sh EMACS_DIR - where a terminal Emacs draws the cursor with a
# suggestion shown: before the ghost text, mid-line as at the end of a line
# (an after-string's `cursor t` loses to the buffer's own character after
# point mid-line, and the cursor lands after the ghost). Only a real
# redisplay shows it, so Emacs runs in a tmux pane and tmux says where its
# cursor is. Exit 77 (skipped) without emacs or tmux.
lisp=$1
for t in emacs tmux; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "SKIP: $t not installed"
		exit 77
	fi
done
tmp=$(mktemp -d) || exit 1
# one tmux server per check: a new session started while the last check's
# server was still going away failed ("server exited unexpectedly")
socks=""
trap 'for s in $socks; do tmux -L "$s" kill-server 2>/dev/null; done; rm -rf "$tmp"' EXIT
export HOME="$tmp"
fail=0
# check NAME FILE-TEXT LISP-TO-PLACE-POINT GHOST EXPECTED-X EXPECTED-Y
check() {
	printf '%s' "$2" >"$tmp/$1.py"
	cat >"$tmp/$1.el" <<EOL
(require 'infill)
(find-file "$tmp/$1.py")
$3
(infill--render (point) "$4" (point))
(with-temp-file "$tmp/$1.ready" (insert "ok"))
EOL
	sock="infill-test-$$-$1"
	socks="$socks $sock"
	rm -f "$tmp/$1.ready"
	tmux -L "$sock" new-session -d -x 80 -y 24 \
		"emacs -nw -Q -L '$lisp' -l '$tmp/$1.el'"
	i=0
	while [ ! -f "$tmp/$1.ready" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 0.5 # the redisplay after the file is written
	at=$(tmux -L "$sock" display -p '#{cursor_x} #{cursor_y}')
	tmux -L "$sock" capture-pane -p | sed -n 2,5p
	tmux -L "$sock" kill-server 2>/dev/null
	if [ "$at" = "$5 $6" ]; then
		echo "ok: $1: cursor at $at"
	else
		echo "FAIL: $1: cursor at $at, expected $5 $6 (before the ghost text)"
		fail=1
	fi
}
# mid-line: "print(self.|)" with "append(self.token)" shown
check midline 'class A:
    def f(self):
        print(self.)
' '(goto-char (point-min)) (forward-line 2) (end-of-line) (backward-char 1)' \
	'append(self.token)' 19 3
# at the end of a line, and a multi-line ghost
check eol 'x = 1
print(sel' '(goto-char (point-max))' 'f.x)\nfoo' 9 2
exit $fail
