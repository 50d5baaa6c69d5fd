;;; emacs_nextedit_test.el --- next edits in Emacs with eglot against the real server  -*- lexical-binding: t -*-

;; Run by emacs.sh: emacs --batch -Q -L editors/emacs -l emacs_nextedit_test.el
;; Renames a variable at one place with ordinary keys (keyboard macros, so
;; the command loop and its hooks run as for a user), waits for the next use
;; to be offered, M-] jumps to it, TAB applies it and the one after it is
;; offered, until the file is right; C-g dismisses one; the server counted
;; what was shown, applied and dismissed.  Exit 0 pass, 1 fail, 77 skip.

;;; Code:

(require 'cl-lib)

(unless (require 'eglot nil t)
  (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
    (add-to-list 'load-path dir))
  (unless (require 'eglot nil t)
    (message "SKIP: eglot not installed (apt-get install elpa-eglot, or Emacs 29+)")
    (kill-emacs 77)))

(require 'infill)

(defun test-fail (fmt &rest args)
  (error "check failed: %s" (apply #'format fmt args)))

(defun test-wait (seconds pred)
  (let ((deadline (+ (float-time) seconds)) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    v))

(defun test-type (keys)
  (execute-kbd-macro (kbd keys)))

(defun test-line (n)
  (save-excursion
    (goto-char (point-min))
    (forward-line (1- n))
    (buffer-substring-no-properties (line-beginning-position) (line-end-position))))

(defun test-stat (key)
  (infill--get (jsonrpc-request (eglot-current-server) :infill/stats nil) key))

(defconst test-source "def area(w, h):
    size = w * h
    print(\"size\", size)
    return size


def other():
    size = 3
    return size
")

(defun test-run ()
  (setq infill-command (list (getenv "INFILL_BIN") "--model" (getenv "INFILL_MODEL")
                             "--user-config" "")
        infill-next-edit-delay 0.05)
  (let ((file (expand-file-name "area.py" (getenv "INFILL_TMP"))))
    (with-temp-file file (insert test-source))
    (infill-eglot-setup)
    (find-file file)
    (unless (eq major-mode 'python-mode) (python-mode))
    (apply #'eglot (eglot--guess-contact))
    (unless (test-wait 20 (lambda () (eglot-current-server)))
      (test-fail "eglot did not connect to infill")))
  (infill-mode 1)

  ;; 1. rename `size` at its first use: M-d, then the new name typed
  (goto-char (point-min))
  (forward-line 1)
  (back-to-indentation)
  (test-type "M-d a r e a _ m 2")
  (let ((v (test-wait 10 #'infill-next-edit-visible)))
    (unless v (test-fail "no next edit offered"))
    (unless (and (equal (cdr v) "area_m2") (= (line-number-at-pos (car v)) 3))
      (test-fail "line 3 offered first, got %S at line %d" v (line-number-at-pos (car v))))
    ;; 2. M-] jumps to it, TAB applies it, the next one is offered
    (test-type "M-]")
    (unless (= (point) (car v)) (test-fail "M-] moves point to the edit"))
    (test-type "TAB")
    (unless (equal (test-line 3) "    print(\"size\", area_m2)")
      (test-fail "line 3 is %S" (test-line 3))))
  (let ((v (test-wait 5 (lambda () (let ((n (infill-next-edit-visible)))
                                     (and n (= (line-number-at-pos (car n)) 4) n))))))
    (unless v (test-fail "the use on line 4 not offered"))
    (test-type "M-] TAB"))
  (test-wait 0.3 (lambda () nil))
  (unless (equal (buffer-substring-no-properties (point-min) (point-max))
                 (replace-regexp-in-string
                  "size = w\\|, size)\\|return size\n\n"
                  (lambda (m) (replace-regexp-in-string "size" "area_m2" m))
                  test-source))
    (test-fail "the file is not right:\n%s" (buffer-string)))
  (when (infill-next-edit-visible) (test-fail "nothing more offered (other() keeps its size)"))

  ;; 3. another rename, dismissed with C-g
  (goto-char (point-min))
  (forward-line 7)
  (back-to-indentation)
  (test-type "M-d n")
  (unless (test-wait 10 #'infill-next-edit-visible) (test-fail "no next edit in other()"))
  (test-type "C-g")
  (when (infill-next-edit-visible) (test-fail "C-g leaves it shown"))
  (unless (equal (test-line 9) "    return size") (test-fail "a dismissed edit is not applied"))
  (unless (test-wait 3 (lambda () (equal (test-stat "nextEditRejected") 1)))
    (test-fail "nextEditRejected is %S" (test-stat "nextEditRejected")))
  (unless (equal (test-stat "nextEditAccepted") 2)
    (test-fail "nextEditAccepted is %S" (test-stat "nextEditAccepted")))
  (message "shown %S accepted %S rejected %S" (test-stat "nextEditShown")
           (test-stat "nextEditAccepted") (test-stat "nextEditRejected")))

(condition-case err
    (progn
      (test-run)
      (message "PASS")
      (kill-emacs 0))
  (error
   (message "FAIL: %s" (error-message-string err))
   (kill-emacs 1)))
;;; emacs_nextedit_test.el ends here
