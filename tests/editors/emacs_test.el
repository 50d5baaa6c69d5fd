;;; emacs_test.el --- infill.el with eglot against the real server  -*- lexical-binding: t -*-

;; Run by emacs.sh: emacs --batch -Q -L editors/emacs -l emacs_test.el
;; Environment: INFILL_BIN, INFILL_MODEL, INFILL_TMP; INFILL_CLIENT=lsp-mode
;; runs the same steps over lsp-mode instead of eglot.
;; Opens a real Python file, types (keyboard macros, so the command loop and
;; its hooks run as for a user), waits for the overlay, accepts it with TAB
;; (the text lands in the buffer), accepts a word, dismisses with C-g and by
;; moving point.  Exit 0 pass, 1 fail, 77 skip (no eglot).

;;; Code:

(require 'cl-lib)

;; Emacs 28 + Debian's elpa-eglot: the package lives outside -Q's load-path
(unless (require 'eglot nil t)
  (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
    (add-to-list 'load-path dir))
  (unless (require 'eglot nil t)
    (message "SKIP: eglot not installed (apt-get install elpa-eglot, or Emacs 29+)")
    (kill-emacs 77)))

(defvar test-client (if (equal (getenv "INFILL_CLIENT") "lsp-mode") 'lsp-mode 'eglot))

(when (and (eq test-client 'lsp-mode) (not (require 'lsp-mode nil t)))
  (message "SKIP: lsp-mode not installed (apt-get install elpa-lsp-mode)")
  (kill-emacs 77))

(require 'infill)

(defvar test-bin (getenv "INFILL_BIN"))
(defvar test-model (getenv "INFILL_MODEL"))
(defvar test-tmp (getenv "INFILL_TMP"))

(defun test-fail (fmt &rest args)
  (error "check failed: %s" (apply #'format fmt args)))

(defun test-wait (seconds pred)
  "Process events until PRED is non-nil (returned) or SECONDS pass (nil)."
  (let ((deadline (+ (float-time) seconds)) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    v))

(defun test-type (keys)
  (execute-kbd-macro (kbd keys)))

(defun test-overlays ()
  (cl-remove-if-not (lambda (o) (overlay-get o 'infill))
                    (overlays-in (point-min) (point-max))))

(defun test-server-settings ()
  "The server's effective settings for Python, asked over the buffer's connection."
  (if (eq test-client 'eglot)
      (jsonrpc-request (eglot-current-server) :infill/settings '(:languageId "python"))
    (let ((lsp--buffer-workspaces (list (infill--lsp-workspace))))
      (lsp-request "infill/settings" '(:languageId "python")))))

(defun test-feedback (key)
  "The server's feedback count KEY for Python (infill/stats), summed over shapes."
  (let* ((stats (if (eq test-client 'eglot)
                    (jsonrpc-request (eglot-current-server) :infill/stats nil)
                  (let ((lsp--buffer-workspaces (list (infill--lsp-workspace))))
                    (lsp-request "infill/stats" nil))))
         (py (infill--get (infill--get stats "feedback") "python")))
    (+ (or (infill--get (infill--get py "single") key) 0)
       (or (infill--get (infill--get py "block") key) 0))))

(defun test-wait-feedback (key n)
  "Wait until the feedback count KEY reaches N; fail if it does not."
  (unless (test-wait 5 (lambda () (>= (test-feedback key) n)))
    (test-fail "feedback %s is %S, not >= %d" key (test-feedback key) n)))

(defun test-suggest (first more)
  "Type FIRST, then the keys in MORE one at a time until a suggestion shows."
  (test-type first)
;; (an answer is empty while the model still loads: type on)
  (or (test-wait 10 #'infill-visible)
      (cl-loop for k in more
               do (test-type k)
               thereis (test-wait 15 #'infill-visible))
      (test-fail "no suggestion after typing %S %S" first more)))

(defconst test-source "import os


def list_python_files(root):
    \"\"\"Return the paths of the Python files under root.\"\"\"
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(\".py\"):
                found.append(os.path.join(dirpath, name))
    return found


def count_lines(path):
    with open(path) as f:
        return sum(1 for _ in f)


def main():
    total = 0
")

(defun test-run ()
  (setq infill-command (append (list test-bin "--model" test-model "--user-config" "")
                               ;; INFILL_LOG=FILE: the server's debug log, for a failing run
                               (when (getenv "INFILL_LOG")
                                 (list "--log-file" (getenv "INFILL_LOG") "--log-level" "debug")))
        infill-completion-debounce-ms 0
        infill-completion-max-tokens 8
        infill-completion-candidates 1
        infill-idle-delay 0.05)
  (let ((file (expand-file-name "walk.py" test-tmp)))
    (with-temp-file file (insert test-source))
    (if (eq test-client 'eglot)
        (progn
          (infill-eglot-setup)
          (find-file file)
          (unless (eq major-mode 'python-mode) (python-mode))
          (apply #'eglot (eglot--guess-contact))
          (unless (test-wait 20 (lambda () (and (eglot-current-server)
                                                (eq (type-of (eglot-current-server))
                                                    'infill-eglot-server))))
            (test-fail "eglot did not connect to infill")))
      (setq lsp-session-file (expand-file-name "lsp-session" test-tmp)
            lsp-enable-file-watchers nil
            lsp-headerline-breadcrumb-enable nil
            lsp-modeline-code-actions-enable nil
            lsp-modeline-diagnostics-enable nil
            lsp-modeline-workspace-status-enable nil
            lsp-lens-enable nil
            lsp-completion-enable nil
            lsp-diagnostics-provider :none
            lsp-enable-snippet nil
            lsp-restart 'ignore)
      (infill-lsp-setup)
      (find-file file)
      (unless (eq major-mode 'python-mode) (python-mode))
      (lsp-workspace-folders-add test-tmp)
      (lsp)
      (unless (test-wait 20 (lambda () (and (eq (infill--backend) 'lsp-mode)
                                            (eq (lsp--workspace-status (infill--lsp-workspace))
                                                'initialized))))
        (test-fail "lsp-mode did not connect to infill"))))
  (message "client: %s" test-client)
  ;; the defcustoms arrived as initializationOptions
  (let ((got (infill--get (test-server-settings) "completion.maxTokens")))
    (unless (equal got 8) (test-fail "completion.maxTokens is %S on the server, not 8" got)))
  (setq-local indent-tabs-mode nil)
  (infill-mode 1)

  ;; 1. typing shows an overlay (in a comment: random weights give random
  ;; text, which is valid there) at point whose after-string is the suggestion
  (goto-char (point-max))
  (let* ((v (test-suggest "SPC SPC SPC SPC # SPC c o u n t SPC t h e SPC l i n e s SPC o f SPC e v e r y SPC f i l e SPC u n d e r SPC t h e"
                              '("SPC" "r" "o")))
         (ovs (test-overlays)))
    (unless (= (length ovs) 1) (test-fail "one overlay, got %d" (length ovs)))
    (unless (= (overlay-start (car ovs)) (point)) (test-fail "the overlay sits at point"))
    (unless (equal (substring-no-properties (overlay-get (car ovs) 'after-string)) v)
      (test-fail "after-string %S is the suggestion %S" (overlay-get (car ovs) 'after-string) v))
    (message "suggestion: %S" v)
    ;; 2. TAB accepts: the text is inserted at point, point after it
    (let ((before (buffer-substring-no-properties (line-beginning-position) (point)))
          (start (point)))
      (test-type "TAB")
      (unless (equal (buffer-substring-no-properties start (min (point-max) (+ start (length v)))) v)
        (test-fail "accepted text %S, buffer has %S" v
                   (buffer-substring-no-properties start (point-max))))
      (unless (= (point) (+ start (length v))) (test-fail "point after the accepted text"))
      (when (test-overlays) (test-fail "no overlay right after accepting"))
      ;; feedback: the server heard of it shown and accepted
      (test-wait-feedback "accepted" 1)
      (test-wait-feedback "shown" 1)
      (test-wait-feedback "acceptedChars" (length v))
      (message "line after accept: %S" (concat before v))))

  ;; 3. C-g dismisses
  (goto-char (point-max))
  (insert "\n")
  (test-suggest "SPC SPC SPC SPC # SPC t h e n SPC p r i n t SPC t h e SPC t o t a l SPC n u m b e r SPC o f"
                '("SPC" "l" "i"))
  (test-type "C-g")
  (when (or (test-overlays) (infill-visible)) (test-fail "C-g leaves no overlay"))

  ;; 4. accept a word: only the word goes in; the rest stays visible
  (let* ((v (test-suggest "SPC a n d" '("SPC" "t" "h")))
         (word (infill-next-word v))
         (start (point)))
    (test-type "M-f")
    (unless (equal (buffer-substring-no-properties start (point)) word)
      (test-fail "accepted word %S, got %S" word (buffer-substring-no-properties start (point))))
    ;; feedback: what was typed over before was counted dismissed
    (test-wait-feedback "dismissed" 1)
    (when (< (length word) (length v))
      (test-wait-feedback "partlyAccepted" 1)
      (unless (equal (infill-visible) (substring v (length word)))
        (test-fail "the rest %S stays visible, got %S" (substring v (length word)) (infill-visible)))
      ;; 5. moving point dismisses
      (test-type "C-b")
      (when (test-overlays) (test-fail "moving point leaves no overlay"))))

;; 5b. typing along the ghost text shortens it in place at once: it never
  ;; leaves the screen between the key and the server's next answer
  (goto-char (point-max))
  (insert "\n")
  (test-type "SPC SPC SPC SPC # SPC c o u n t SPC")
  (let ((ghost "the lines in every file"))
    (infill--render (point) ghost (point))
    (cl-loop
     for i from 1 to 5
     do (let ((want (substring ghost i)))
          (test-type (let ((ch (substring ghost (1- i) i))) (if (equal ch " ") "SPC" ch)))
          (unless (equal (infill-visible) want)
            (test-fail "key %d: the ghost is %S right after the key, not %S"
                       i (infill-visible) want))
          (let ((t0 (float-time)))
            (while (< (- (float-time) t0) 0.2)
              (unless (infill-visible)
                (test-fail "key %d: the ghost left the screen after %.0f ms"
                           i (* 1000 (- (float-time) t0))))
              (accept-process-output nil 0.003))))
     ;; the server answered something else: type along that from here
     until (not (equal (infill-visible) (substring ghost i))))
    (let ((v (infill-visible)))
      (test-type (if (string-prefix-p "Z" v) "Q" "Z"))
      (when (equal (infill-visible) (substring v 1))
        (test-fail "a key that is not the ghost's next one typed along it"))))
  (infill-dismiss)

  (when (eq test-client 'eglot)
    ;; 6. menu completion (completion-at-point) after a partly
    ;; typed word: the items replace from the word's start, so the word
    ;; typed does not filter them all away
    (goto-char (point-max))
    (insert "\n    # and add the wor")
    (let ((found
           (test-wait 60 (lambda ()
                           (let* ((capf (eglot-completion-at-point))
                                  (typed (buffer-substring-no-properties (nth 0 capf) (nth 1 capf))))
                             (unless (equal typed "wor")
                               (test-fail "completion-at-point's word is %S, not \"wor\"" typed))
                             (all-completions typed (nth 2 capf)))))))
      (unless found (test-fail "no menu item after the partly typed word \"wor\""))
      (dolist (c found)
        (unless (string-prefix-p "wor" c) (test-fail "menu item %S does not start with \"wor\"" c)))
      (message "menu items: %d, first %S" (length found) (car found)))

    ;; 7. each buffer reaches the server with its own languageId
    ;; (eglot 1.9 keeps the first buffer's for the whole server)
    (let ((server (eglot-current-server)))
      (dolist (case '(("util.c" c-mode "c") ("app.js" js-mode "javascript")))
        (let ((file (expand-file-name (car case) test-tmp)))
          (with-temp-file file (insert "int x;\n"))
          (with-current-buffer (find-file-noselect file)
            (funcall (nth 1 case))
            (unless (test-wait 10 (lambda () (eq (eglot-current-server) server)))
              (test-fail "%s is not managed by the infill server" (car case)))
            (let* ((doc (jsonrpc-request server :infill/document
                                         (list :textDocument
                                               (list :uri (eglot--path-to-uri file)))))
                   (id (plist-get doc :languageId)))
              (unless (equal id (nth 2 case))
                (test-fail "%s reached the server as %S, not %S" (car case) id (nth 2 case))))))))

    ;; 8. a model that fails to load: the embedded one stands in
    ;; and the mode line says so
    (let ((kill-buffer-query-functions nil))
      (eglot-shutdown (eglot-current-server)))
    (setq infill-command (list test-bin "--model" (expand-file-name "missing.gguf" test-tmp)
                               "--user-config" ""))
    (apply #'eglot (eglot--guess-contact))
    (unless (test-wait 30 (lambda () (string-match-p "embedded model" infill-status)))
      (test-fail "infill-status does not name the embedded model: %S" infill-status))
    (unless (equal (infill--lighter) " infill[embedded model]")
      (test-fail "the mode line shows %S" (infill--lighter)))
    (message "status: %s" infill-status)

    ;; 9. a setting the load cannot honour (a q8_0 cache on the tiny model,
    ;; whose head size is 16): the model loads, and the mode line says
    ;; warning, not error
    (let ((kill-buffer-query-functions nil))
      (eglot-shutdown (eglot-current-server)))
    (setq infill-status "" infill-cache-kv-type "q8_0")
    (setq infill-command (list test-bin "--model" test-model "--user-config" ""))
    (apply #'eglot (eglot--guess-contact))
    (unless (test-wait 30 (lambda () (string-match-p "cache.kvType" infill-status)))
      (test-fail "infill-status does not name the setting: %S" infill-status))
    (unless (equal (infill--lighter) " infill[warning]")
      (test-fail "the mode line shows %S" (infill--lighter)))
    (message "status: %s" infill-status))
  (message "PASS"))

(condition-case err
    (progn
      (run-with-timer 170 nil (lambda () (message "FAIL: the test took over 170 s") (kill-emacs 1)))
      (test-run)
      (let ((kill-buffer-query-functions nil))
        (if (eq test-client 'eglot)
            (ignore-errors (eglot-shutdown (eglot-current-server)))
          (ignore-errors (lsp-workspace-shutdown (infill--lsp-workspace)))))
      (kill-emacs 0))
  (error (message "FAIL: %s" (error-message-string err))
         (kill-emacs 1)))

;;; emacs_test.el ends here
