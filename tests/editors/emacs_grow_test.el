;;; emacs_grow_test.el --- a suggestion grows on screen while the user waits  -*- lexical-binding: t -*-

;; infill.el with eglot against the real server and the tiny model, a 1 ms
;; deadline (so the first answer is cut) and the server's live slices slowed
;; (INFILL_TEST_LIVE_DELAY_MS, set by meson).  Type in a comment until the
;; overlay shows, then type nothing: the server's infill/suggestionGrew
;; makes the client ask again, and the overlay at the same place becomes
;; longer, beginning with what was shown, point unmoved.
;; Run by emacs.sh.  Exit 0 pass, 1 fail, 77 skip (no eglot).

;;; Code:

(require 'cl-lib)

(unless (require 'eglot nil t)
  (dolist (dir (file-expand-wildcards "/usr/share/emacs/site-lisp/elpa/*"))
    (add-to-list 'load-path dir))
  (unless (require 'eglot nil t)
    (message "SKIP: eglot not installed")
    (kill-emacs 77)))

(require 'infill)

(defun grow-fail (fmt &rest args)
  (princ (format "FAIL: %s\n" (apply #'format fmt args)) #'external-debugging-output)
  (kill-emacs 1))

(defun grow-wait (seconds pred)
  "Process events until PRED is non-nil (returned) or SECONDS pass (nil)."
  (let ((deadline (+ (float-time) seconds)) v)
    (while (and (not (setq v (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.02))
    v))

(defun grow-stats (key)
  (infill--get (jsonrpc-request (eglot-current-server) :infill/stats nil) key))

(condition-case err
    (let ((file (expand-file-name "grow.py" (getenv "INFILL_TMP"))))
      (setq infill-command (list (getenv "INFILL_BIN") "--model" (getenv "INFILL_MODEL")
                                 "--user-config" "")
            infill-completion-debounce-ms 0
            infill-completion-max-tokens 32
            infill-completion-candidates 1
            infill-completion-temperature 0
            infill-completion-deadline-ms 1
            infill-completion-prefill-budget :json-false
            infill-idle-delay 0.05)
      (with-temp-file file (insert "import os\n\n\ndef main():\n    total = 0\n"))
      (infill-eglot-setup)
      (find-file file)
      (unless (eq major-mode 'python-mode) (python-mode))
      (apply #'eglot (eglot--guess-contact))
      (unless (grow-wait 20 (lambda () (eglot-current-server)))
        (grow-fail "eglot did not connect"))
      (unless (grow-wait 30 (lambda () (equal (grow-stats "backend") "cpu")))
        (grow-fail "the model did not load"))
      (setq-local indent-tabs-mode nil)
      (infill-mode 1)
      (goto-char (point-max))
      ;; type in a comment (random weights write random text, valid there)
      ;; a word at a time until a suggestion shows; then wait
      (execute-kbd-macro (kbd "SPC SPC SPC SPC #"))
      (cl-loop
       for word in '(" count the lines" " in every" " file under" " the root" " and" " print")
       do (execute-kbd-macro word)
       (let ((first (grow-wait 3 #'infill-visible)))
         (when first
           (let* ((at (point))
                  (grown (grow-wait 8 (lambda ()
                                        (let ((v (infill-visible)))
                                          (and v (> (length v) (length first)) v))))))
             (when grown
               (unless (string-prefix-p first grown)
                 (grow-fail "did not grow in place: %S -> %S" first grown))
               (unless (= (point) at) (grow-fail "point moved"))
               (unless (>= (or (grow-stats "grewNotices") 0) 1)
                 (grow-fail "no infill/suggestionGrew sent"))
               (let ((ov (cl-find-if (lambda (o) (overlay-get o 'infill))
                                     (overlays-in (point-min) (point-max)))))
                 (unless (and ov (= (overlay-start ov) at)
                              (string-prefix-p grown (substring-no-properties
                                                      (overlay-get ov 'after-string))))
                   (grow-fail "the overlay at point does not show %S" grown)))
               (message "shown %S, then %S" first grown)
               (message "PASS")
               (kill-emacs 0))
             (message "no growth after %S (the answer was whole): type on" first))))
       finally (grow-fail "no suggestion grew on screen")))
  (error (grow-fail "%s" (error-message-string err))))
