;;; infill-nextedit.el --- next edits from infill: where an edit implies another  -*- lexical-binding: t -*-

;; After an edit settles (a pause of `infill-next-edit-delay' seconds), ask
;; the server where the edit implies another one (infill/nextEdit: a
;; rename's other uses, a changed signature's calls, the same fix on alike
;; lines) and show the first at its place: the text it replaces in
;; `infill-next-edit-old-face', the new text after it in
;; `infill-next-edit-face'.
;;
;; Keys while one is shown (`infill-next-edit-map'):
;;   M-]   jump to it
;;   TAB   apply it, when point is at it (then the one after it is shown)
;;   C-g   dismiss it
;; The server counts what was shown, applied and dismissed (infill/stats
;; nextEdit*).  Turned on with `infill-mode' (`infill-next-edits' nil: off).

;;; Code:

(require 'cl-lib)
(require 'infill)

(declare-function eglot-current-server "eglot")
(declare-function eglot--TextDocumentPositionParams "eglot")
(declare-function eglot--signal-textDocument/didChange "eglot")
(declare-function eglot--lsp-position-to-point "eglot")
(declare-function jsonrpc-async-request "jsonrpc")
(declare-function lsp-request-async "lsp-mode")
(declare-function lsp--text-document-position-params "lsp-mode")
(declare-function lsp--position-to-point "lsp-mode")
(defvar lsp--buffer-workspaces)

(defcustom infill-next-edits t
  "Non-nil: show next edits in buffers where `infill-mode' is on."
  :type 'boolean :group 'infill)

(defcustom infill-next-edit-delay 0.3
  "Seconds without an edit before asking for next edits."
  :type 'number :group 'infill)

(defface infill-next-edit-face '((t :inherit shadow))
  "Face of a next edit's new text." :group 'infill)

(defface infill-next-edit-old-face '((t :strike-through t))
  "Face of the text a next edit replaces." :group 'infill)

(defvar-local infill--ne nil
  "The next edit shown: (:start MARKER :end MARKER :text STRING :edit PLIST-OR-HASH).")
(defvar-local infill--ne-overlay nil)
(defvar-local infill--ne-timer nil)
(defvar-local infill--ne-seq 0)
(defvar-local infill--ne-tick nil "`buffer-chars-modified-tick' last asked about.")

(defun infill--ne-at-point (cmd)
  "CMD when point is at the next edit shown, else nil (TAB keeps its meaning)."
  (and infill--ne (= (point) (marker-position (plist-get infill--ne :start))) cmd))

(defvar infill-next-edit-map
  (let ((m (make-sparse-keymap)))
    (define-key m (kbd "M-]") #'infill-next-edit-jump)
    (define-key m (kbd "TAB") '(menu-item "" infill-next-edit-accept :filter infill--ne-at-point))
    (define-key m (kbd "<tab>") '(menu-item "" infill-next-edit-accept :filter infill--ne-at-point))
    (define-key m (kbd "C-g") #'infill-next-edit-dismiss)
    m)
  "Keys active while a next edit is shown.")

(defvar-local infill--ne-active nil "Non-nil while a next edit is shown (enables its keys).")
(add-to-list 'minor-mode-map-alist (cons 'infill--ne-active infill-next-edit-map))

(defun infill--ne-clear ()
  (when infill--ne-overlay
    (delete-overlay infill--ne-overlay)
    (setq infill--ne-overlay nil))
  (setq infill--ne nil
        infill--ne-active nil))

(defun infill--ne-show (edit start end)
  "Show EDIT (as the server sent it) replacing START..END."
  (infill--ne-clear)
  (let* ((text (infill--get edit "text"))
         (first (car (split-string text "\n")))
         (ov (make-overlay start end nil t nil)))
    (overlay-put ov 'infill-next-edit t)
    (when (< start end) (overlay-put ov 'face 'infill-next-edit-old-face))
    (overlay-put ov 'after-string
                 (propertize (if (string-empty-p text) " ⇢ (delete)" (concat " ⇢ " first))
                             'face 'infill-next-edit-face))
    (setq infill--ne-overlay ov
          infill--ne (list :start (copy-marker start) :end (copy-marker end t)
                           :text text :edit edit :tick (buffer-chars-modified-tick))
          infill--ne-active t)
    (infill--send "textDocument/didShowInlineEdit"
                  (list :item (list :command (infill--get edit "command"))))))

(defun infill-next-edit-visible ()
  "The next edit shown: (POS . TEXT), or nil."
  (when (and infill--ne (eql (plist-get infill--ne :tick) (buffer-chars-modified-tick)))
    (cons (marker-position (plist-get infill--ne :start)) (plist-get infill--ne :text))))

(defun infill-next-edit-request ()
  "Ask the server for the next edits of this buffer and show the first."
  (interactive)
  (let ((buffer (current-buffer))
        (seq (cl-incf infill--ne-seq))
        (tick (buffer-chars-modified-tick)))
    (cl-flet ((take (result to-point)
                (when (buffer-live-p buffer)
                  (with-current-buffer buffer
                    (when (and (= seq infill--ne-seq) (eql tick (buffer-chars-modified-tick)))
                      (let ((e (car (append (infill--get result "edits") nil))))
                        (if (not e)
                            (infill--ne-clear)
                          (let ((r (infill--get e "range")))
                            (infill--ne-show e (funcall to-point (infill--get r "start"))
                                             (funcall to-point (infill--get r "end")))))))))))
      (pcase (infill--backend)
        ('eglot
         (eglot--signal-textDocument/didChange)
         (jsonrpc-async-request
          (eglot-current-server) :infill/nextEdit (eglot--TextDocumentPositionParams)
          :success-fn (lambda (result) (take result #'eglot--lsp-position-to-point))
          :error-fn #'ignore :timeout-fn #'ignore))
        ('lsp-mode
         (let ((lsp--buffer-workspaces (list (infill--lsp-workspace))))
           (lsp-request-async
            "infill/nextEdit" (lsp--text-document-position-params)
            (lambda (results) (take (cdr (car results)) #'lsp--position-to-point))
            :mode 'tick :error-handler #'ignore :no-merge t)))))))

(defun infill-next-edit-jump ()
  "Move point to the next edit shown."
  (interactive)
  (let ((v (infill-next-edit-visible)))
    (if (not v)
        (message "infill: no next edit")
      (push-mark nil t)
      (goto-char (car v)))))

(defun infill-next-edit-accept ()
  "Apply the next edit shown, report it, and ask for the one after it."
  (interactive)
  (when (infill-next-edit-visible)
    (let* ((ne infill--ne)
           (start (marker-position (plist-get ne :start)))
           (end (marker-position (plist-get ne :end)))
           (command (infill--get (plist-get ne :edit) "command")))
      (infill--ne-clear)
      (save-excursion
        (goto-char start)
        (delete-region start end)
        (insert (plist-get ne :text)))
      (when command
        (infill--send "workspace/executeCommand"
                      (list :command (infill--get command "command")
                            :arguments (infill--get command "arguments"))
                      t))
      (setq infill--ne-tick (buffer-chars-modified-tick))
      (infill-next-edit-request))))

(defun infill-next-edit-dismiss ()
  "Hide the next edit shown; the server counts it rejected."
  (interactive)
  (let ((command (and infill--ne (infill--get (plist-get infill--ne :edit) "command"))))
    (cl-incf infill--ne-seq)
    (infill--ne-clear)
    (when command
      (infill--send "infill/didRejectNextEdit" (list :item (list :command command))))))

(defun infill--ne-post-command ()
  "After an edit, ask again once the text has not changed for a while."
  (let ((tick (buffer-chars-modified-tick)))
    (unless (or (eql tick infill--ne-tick) (minibufferp))
      (setq infill--ne-tick tick)
      (when (and infill--ne (not (eql tick (plist-get infill--ne :tick))))
        (infill--ne-clear))
      (when infill--ne-timer (cancel-timer infill--ne-timer))
      (let ((buffer (current-buffer)))
        (setq infill--ne-timer
              (run-with-timer
               infill-next-edit-delay nil
               (lambda ()
                 (when (buffer-live-p buffer)
                   (with-current-buffer buffer
                     (setq infill--ne-timer nil)
                     (when (eql tick (buffer-chars-modified-tick))
                       (infill-next-edit-request)))))))))))

(defun infill--ne-mode-hook ()
  (if (and infill-mode infill-next-edits)
      (progn
        (setq infill--ne-tick (buffer-chars-modified-tick))
        (add-hook 'post-command-hook #'infill--ne-post-command nil t))
    (remove-hook 'post-command-hook #'infill--ne-post-command t)
    (infill--ne-clear)))

(add-hook 'infill-mode-hook #'infill--ne-mode-hook)

(provide 'infill-nextedit)
;;; infill-nextedit.el ends here
