;;; infill.el --- Inline completions from the infill language server  -*- lexical-binding: t -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "27.1") (jsonrpc "1.0.9"))
;; Keywords: convenience, languages, tools

;;; Commentary:

;; infill is an LSP server that runs a code model in-process.  Neither
;; eglot nor Debian's lsp-mode shows `textDocument/inlineCompletion', so this
;; package asks for it over the connection the buffer already has and draws
;; the answer itself, as an overlay after point ("ghost text").
;;
;; With eglot (built in since Emacs 29; the elpa-eglot package on Emacs 28):
;;
;;   (require 'infill)
;;   (setq infill-command '("infill" "--model" "/path/to/model.gguf"))
;;   (infill-eglot-setup)                ; registers the server for `infill-major-modes'
;;   (infill-eglot-hooks)                ; eglot-ensure in each of them, infill-mode with eglot
;;
;; (`infill-eglot-hooks' adds `eglot-ensure' to the hook of every mode in
;; `infill-major-modes', not Python's alone, and `infill-mode' to
;; `eglot-managed-mode-hook'.)
;;
;; With lsp-mode: (infill-lsp-setup) registers infill as an add-on client,
;; so it runs next to the buffer's usual server; then `lsp' and
;; (add-hook 'lsp-mode-hook #'infill-mode).
;;
;; While a suggestion is visible: TAB accepts it, M-f accepts a word, M-e
;; a line, M-n / M-p show the next / previous candidate, C-g dismisses it.
;; Moving point or leaving the buffer also dismisses it; typing asks again
;; after `infill-idle-delay'.  The server's settings are the variables in
;; the `infill-settings' group (infill-settings.el, generated from the
;; server's table); they travel as initializationOptions.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'url-util)
(require 'eieio)
(require 'infill-settings)

(defvar infill-mode)

(declare-function eglot-current-server "eglot")
(declare-function eglot--TextDocumentPositionParams "eglot")
(declare-function eglot--signal-textDocument/didChange "eglot")
(declare-function eglot--lsp-position-to-point "eglot")
(declare-function jsonrpc-async-request "jsonrpc")
(declare-function jsonrpc-notify "jsonrpc")
(declare-function lsp-request-async "lsp-mode")
(declare-function lsp--text-document-position-params "lsp-mode")
(declare-function lsp--position-to-point "lsp-mode")
(declare-function lsp-register-client "lsp-mode")
(declare-function make-lsp-client "lsp-mode")
(declare-function lsp-stdio-connection "lsp-mode")
(declare-function lsp-find-workspace "lsp-mode")
(declare-function lsp-workspaces "lsp-mode")
(declare-function lsp--workspace-client "lsp-mode")
(declare-function lsp--client-server-id "lsp-mode")
(declare-function lsp-notify "lsp-mode")
(defvar eglot-server-programs)
(defvar lsp-mode)
(defvar lsp--buffer-workspaces)

(defgroup infill nil
  "Inline code completions from the infill language server."
  :group 'tools
  :prefix "infill-")

(defcustom infill-command '("infill" "--stdio")
  "The infill server's command line (program and arguments)."
  :type '(repeat string))

(defcustom infill-major-modes
  '(python-mode c-mode c++-mode js-mode typescript-mode go-mode rust-mode java-mode
                lua-mode sh-mode)
  "Major modes `infill-eglot-setup' and `infill-lsp-setup' register infill for."
  :type '(repeat symbol))

(defcustom infill-language-ids
  '((python-mode . "python") (python-ts-mode . "python")
    (c-mode . "c") (c-ts-mode . "c") (c++-mode . "cpp") (c++-ts-mode . "cpp")
    (js-mode . "javascript") (js2-mode . "javascript") (js-ts-mode . "javascript")
    (typescript-mode . "typescript") (typescript-ts-mode . "typescript")
    (go-mode . "go") (go-ts-mode . "go") (rust-mode . "rust") (rust-ts-mode . "rust")
    (java-mode . "java") (java-ts-mode . "java") (lua-mode . "lua")
    (sh-mode . "shellscript") (bash-ts-mode . "shellscript"))
  "The LSP languageId of each major mode, as the server knows them.
Modes not listed send their name without \"-mode\"."
  :type '(alist :key-type symbol :value-type string))

(defcustom infill-idle-delay 0.1
  "Seconds of no typing before a suggestion is requested."
  :type 'number)

(defcustom infill-init-options nil
  "Extra initializationOptions (a plist), merged over the `infill-settings' ones."
  :type '(plist))

(defface infill-ghost-face
  '((t :inherit shadow))
  "Face of the suggestion shown after point.")

;;; Settings

(defun infill--put-path (plist path value)
  "Return PLIST with VALUE stored at PATH, a list of keyword keys (nested)."
  (if (null (cdr path))
      (plist-put plist (car path) value)
    (plist-put plist (car path)
               (infill--put-path (plist-get plist (car path)) (cdr path) value))))

(defun infill-settings-plist ()
  "The customized server settings as a nested plist ({} when none).
Only variables set to non-nil are included, so a project's
.infill.json keeps working for everything else."
  (let (plist)
    (dolist (entry infill-settings-table)
      (let ((value (symbol-value (cdr entry))))
        (when value
          (setq plist (infill--put-path
                       plist
                       (mapcar (lambda (k) (intern (concat ":" k)))
                               (split-string (car entry) "\\."))
                       (if (and (listp value) (not (keywordp value)))
                           (vconcat value) ; a list of strings: a JSON array
                         value))))))
    (dolist (k (cl-loop for (k _v) on infill-init-options by #'cddr collect k))
      (setq plist (plist-put plist k (plist-get infill-init-options k))))
    plist))

;;; Pure text logic (the same rules as editors/nvim/lua/infill/text.lua)

(defun infill-remainder (insert-text typed)
  "The part of INSERT-TEXT after TYPED, or nil if it does not start with TYPED."
  (when (and (string-prefix-p typed insert-text)
             (> (length insert-text) (length typed)))
    (substring insert-text (length typed))))

(defun infill-next-word (s)
  "The next word of suggestion S: blanks, then word or symbol characters.
A leading line break comes with the next line's indentation."
  (cond
   ((string-match "\\`\r?\n[ \t]*" s) (match-string 0 s))
   ((string-match "\\`[ \t]*\\(?:[[:alnum:]_]+\\|[^[:alnum:]_ \t\n]+\\)" s) (match-string 0 s))
   ((string-match "\\`[ \t]+" s) (match-string 0 s))
   (t s)))

(defun infill-next-line (s)
  "The next line of suggestion S with its line break.
A leading line break comes with the whole following line."
  (cond
   ((string-match "\\`\r?\n[^\n]*" s) (match-string 0 s))
   ((string-match "\\`[^\n]*\n" s) (match-string 0 s))
   (t s)))

;;; Talking to the server

(defun infill--get (obj key)
  "Field KEY (a string) of OBJ: a plist (eglot) or a hash table (lsp-mode)."
  (cond ((hash-table-p obj) (gethash key obj))
        ((listp obj) (plist-get obj (intern (concat ":" key))))))

(defun infill--backend ()
  "The connection to use in this buffer: `eglot', `lsp-mode' or nil."
  (cond
   ((and (fboundp 'eglot-current-server) (eglot-current-server)) 'eglot)
   ((and (bound-and-true-p lsp-mode) (fboundp 'lsp-workspaces) (infill--lsp-workspace))
    'lsp-mode)))

(defun infill--lsp-workspace ()
  "The lsp-mode workspace of the infill server in this buffer, or nil."
  (cl-find-if (lambda (w) (eq (lsp--client-server-id (lsp--workspace-client w)) 'infill))
              (lsp-workspaces)))

(defun infill--result-items (result)
  "The items of an inline completion RESULT (list or {items})."
  (let ((items (if (and result (not (vectorp result)) (infill--get result "items"))
                   (infill--get result "items")
                 result)))
    (append items nil)))

(defun infill--request (invoked callback)
  "Ask for inline completions at point; call CALLBACK with the items.
INVOKED non-nil: the user asked (triggerKind 1).  Items become plists
\(:text STRING :start POS :end POS) with buffer positions."
  (let ((context (list :triggerKind (if invoked 1 2)))
        (buffer (current-buffer)))
    (pcase (infill--backend)
      ('eglot
       ;; the request must follow the edit it is about
       (eglot--signal-textDocument/didChange)
       (jsonrpc-async-request
        (eglot-current-server) :textDocument/inlineCompletion
        (append (eglot--TextDocumentPositionParams) (list :context context))
        :success-fn
        (lambda (result)
          (when (buffer-live-p buffer)
            (with-current-buffer buffer
              (funcall callback
                       (infill--convert result
                                        (lambda (p) (eglot--lsp-position-to-point p)))))))
        :error-fn #'ignore
        :timeout-fn #'ignore))
      ('lsp-mode
       ;; only to infill: the buffer's other servers know nothing of it
       (let ((lsp--buffer-workspaces (list (infill--lsp-workspace))))
         (lsp-request-async
          "textDocument/inlineCompletion"
          (append (lsp--text-document-position-params) (list :context context))
          (lambda (results)
            ;; :no-merge gives ((WORKSPACE . RESULT) ...)
            (when (buffer-live-p buffer)
              (with-current-buffer buffer
                (funcall callback
                         (infill--convert (cdr (car results)) #'lsp--position-to-point)))))
          :mode 'tick :error-handler #'ignore :no-merge t))))))

(defun infill--convert (result to-point)
  "RESULT's items as (:text :start :end) plists, positions by TO-POINT."
  (delq nil
        (mapcar
         (lambda (item)
           (let* ((text (infill--get item "insertText"))
                  (text (if (stringp text) text (infill--get text "value")))
                  (range (infill--get item "range")))
             (when (stringp text)
               (list :text text
                     :item item         ; as the server sent it, for the reports
                     :start (if range (funcall to-point (infill--get range "start")) (point))
                     :end (if range (funcall to-point (infill--get range "end")) (point))))))
         (infill--result-items result))))

;;; Feedback

;; The server counts what becomes of each suggestion (infill/stats
;; "feedback", kept on the machine): shown, accepted whole (the item's
;; command, run as workspace/executeCommand), accepted by word or line
;; (textDocument/didPartiallyAcceptCompletion, Copilot's name).  It infers
;; dismissals from the edits.  Items without a command are not reported.

(defun infill--send (method params &optional request)
  "Send METHOD with PARAMS to the infill server of this buffer.
REQUEST non-nil: as a request whose answer is ignored."
  (pcase (infill--backend)
    ('eglot
     (if request
         (jsonrpc-async-request (eglot-current-server) (intern (concat ":" method)) params
                                :success-fn #'ignore :error-fn #'ignore :timeout-fn #'ignore)
       (jsonrpc-notify (eglot-current-server) (intern (concat ":" method)) params)))
    ('lsp-mode
     ;; only to infill: the buffer's other servers know nothing of it
     (let ((lsp--buffer-workspaces (list (infill--lsp-workspace))))
       (if request
           (lsp-request-async method params #'ignore :error-handler #'ignore :no-merge t)
         (lsp-notify method params))))))

(defun infill--utf16-length (s)
  "Length of S in UTF-16 code units (the position encoding eglot 1.9 and
lsp-mode 8 use)."
  (let ((n 0))
    (dotimes (i (length s) n)
      (setq n (+ n (if (> (aref s i) #xFFFF) 2 1))))))

(defun infill--report-shown (item)
  "Tell the server ITEM (as it sent it) is on screen, once per item."
  (when (and item (infill--get item "command") (not (eq item infill--reported)))
    (setq infill--reported item)
    (infill--send "textDocument/didShowCompletion" (list :item item))))

(defun infill--report-accept (shown accepted)
  "Tell the server the first ACCEPTED characters of SHOWN's item text are in."
  (let* ((item (plist-get shown :item))
         (command (and item (infill--get item "command")))
         (text (plist-get shown :text)))
    (when (and command text)
      (if (>= accepted (length text))
          (infill--send "workspace/executeCommand"
                        (list :command (infill--get command "command")
                              :arguments (infill--get command "arguments"))
                        t)
        (infill--send "textDocument/didPartiallyAcceptCompletion"
                      (list :item item
                            :acceptedLength (infill--utf16-length
                                             (substring text 0 accepted))))))))

;;; The overlay

(defvar infill-status ""
  "The server's state when it is not plain \"ready\": a model that failed
to load (and the embedded model standing in), or the last error.  Shown in
the mode line after \"infill\"; \"\" when all is well.")

(defvar infill--status-type nil
  "The window/showMessage type `infill-status' came with: 1 an error, 2 a warning.")

(defun infill--note-message (type message)
  "Keep MESSAGE (a window/showMessage of TYPE) as `infill-status' when it
is an error, or a warning about the model."
  (when (and (stringp message)
             (or (eql type 1) (and (eql type 2) (string-match-p "model" message))))
    (setq infill-status (string-remove-prefix "infill: " message)
          infill--status-type type)
    (force-mode-line-update t)))

(defun infill--lighter ()
  "The mode line text of `infill-mode'."
  (cond ((string-empty-p infill-status) " infill")
        ((string-match-p "embedded model" infill-status) " infill[embedded model]")
        ((eql infill--status-type 2) " infill[warning]")
        (t " infill[error]")))

(defvar-local infill--overlay nil "The overlay showing the suggestion.")
(defvar-local infill--items nil "Items of the last answer (plists).")
(defvar-local infill--index 0 "Which of `infill--items' is shown.")
(defvar-local infill--reported nil "The last item reported shown.")
(defvar-local infill--shown nil
  "The visible suggestion: (:pos POS :rest STRING :end POS), or nil.")
(defvar-local infill--timer nil "Pending idle request.")
(defvar-local infill--seq 0 "Counter that makes stale answers recognizable.")
(defvar-local infill--tick nil "`buffer-chars-modified-tick' after the last command.")
(defvar-local infill--active nil "Non-nil while a suggestion is visible (enables its keys).")

(defvar infill-active-map
  (let ((m (make-sparse-keymap)))
    (define-key m (kbd "TAB") #'infill-accept)
    (define-key m (kbd "<tab>") #'infill-accept)
    (define-key m (kbd "M-f") #'infill-accept-word)
    (define-key m (kbd "M-e") #'infill-accept-line)
    (define-key m (kbd "M-n") #'infill-next)
    (define-key m (kbd "M-p") #'infill-previous)
    (define-key m (kbd "C-g") #'infill-dismiss)
    m)
  "Keys active while a suggestion is visible.")

(add-to-list 'minor-mode-map-alist (cons 'infill--active infill-active-map))

(defun infill--clear ()
  "Remove the suggestion from the screen."
  (when infill--overlay
    (delete-overlay infill--overlay)
    (setq infill--overlay nil))
  (setq infill--shown nil
        infill--active nil))

(defun infill--render (pos rest end)
  "Show REST at POS; accepting all replaces up to END."
  (infill--clear)
  (let ((ov (make-overlay pos pos nil nil t))
        (str (propertize rest 'face 'infill-ghost-face)))
    ;; the cursor stays before the ghost text, not after it: `cursor 1'
    ;; (point within 1 of the overlay's start), since `cursor t' loses to
    ;; the buffer's own character after point in the middle of a line
    (put-text-property 0 1 'cursor 1 str)
    (overlay-put ov 'after-string str)
    (overlay-put ov 'infill t)
    (overlay-put ov 'priority 100)
    (setq infill--overlay ov
          infill--shown (list :pos pos :rest rest :end (max pos end))
          infill--active t)))

(defun infill--show-current ()
  "Show item `infill--index' if it fits point; return non-nil if shown."
  (infill--clear)
  (let ((item (nth infill--index infill--items)))
    (when item
      (let* ((start (plist-get item :start))
             (end (plist-get item :end))
             (rest (and (<= start (point)) (>= end (point))
                        (infill-remainder (plist-get item :text)
                                          (buffer-substring-no-properties start (point))))))
        (when rest
          (infill--render (point) rest end)
          (setq infill--shown (append infill--shown
                                      (list :item (plist-get item :item)
                                            :text (plist-get item :text))))
          (infill--report-shown (plist-get item :item))
          t)))))

(defun infill-visible ()
  "The visible suggestion text, or nil."
  (plist-get infill--shown :rest))

(defun infill-complete (&optional invoked)
  "Ask for a suggestion at point now (INVOKED: as an explicit request)."
  (interactive (list t))
  (let ((seq (cl-incf infill--seq))
        (pos (point))
        (tick (buffer-chars-modified-tick)))
    (infill--request
     invoked
     (lambda (items)
       ;; stale when the user typed or moved meanwhile
       (when (and infill-mode (= seq infill--seq) (= pos (point))
                  (= tick (buffer-chars-modified-tick)))
         (let ((along (and (plist-get infill--shown :along) infill--shown)))
           (setq infill--items items
                 infill--index 0)
           (when (and (not (infill--show-current)) along)
             ;; nothing new fits here: keep what the user is typing along
             (infill--render (plist-get along :pos) (plist-get along :rest)
                             (plist-get along :end))
             (setq infill--shown along))))))))

(defun infill--schedule ()
  "Ask again after `infill-idle-delay' unless something else happens first."
  (when infill--timer
    (cancel-timer infill--timer))
  (cl-incf infill--seq)
  (let ((buffer (current-buffer)))
    (setq infill--timer
          (run-with-timer
           infill-idle-delay nil
           (lambda ()
             (when (and (buffer-live-p buffer) (eq buffer (current-buffer)))
               (with-current-buffer buffer
                 (setq infill--timer nil)
                 (when infill-mode
                   (infill-complete nil)))))))))

(defconst infill--own-commands
  '(infill-accept infill-accept-word infill-accept-line infill-next infill-previous
                  infill-complete)
  "Commands that keep the suggestion (or manage it themselves).")

(defun infill--type-along ()
  "Shorten the suggestion in place when the text just typed before point
is its start (no flicker while the answer for the new point is on its way).
Return non-nil when it is still shown; else remove it."
  (let* ((s infill--shown)
         (pos (plist-get s :pos))
         (rest (plist-get s :rest))
         (n (and s (- (point) pos))))
    (if (and s (> n 0) (< n (length rest))
             (string= (buffer-substring-no-properties pos (point)) (substring rest 0 n)))
        (progn
          (infill--render (point) (substring rest n) (+ (plist-get s :end) n))
          (setq infill--shown (append infill--shown
                                      (list :item (plist-get s :item)
                                            :text (plist-get s :text)
                                            :along t)))
          t)
      (infill--clear)
      nil)))

(defun infill--post-command ()
  "After each command: ask again after typing, dismiss after a move."
  (let ((tick (buffer-chars-modified-tick)))
    (cond
     ((memq this-command infill--own-commands))
     ((not (eql tick infill--tick))
      (infill--type-along)
      (unless (minibufferp)
        (infill--schedule)))
     ((and infill--shown (/= (point) (plist-get infill--shown :pos)))
      (infill--clear)))
    (setq infill--tick tick)))

;;; Commands

(defun infill--accept-with (split)
  "Insert the part of the suggestion that SPLIT picks (nil: all of it)."
  (let ((s infill--shown))
    (when s
      (let* ((rest (plist-get s :rest))
             (piece (if split (funcall split rest) rest))
             (left (substring rest (length piece)))
             (end (plist-get s :end)))
        (infill--clear)
        (cl-incf infill--seq)
        (goto-char (plist-get s :pos))
        (when (string-empty-p left)
          ;; the item replaces what it covers after point
          (delete-region (point) (max (point) end)))
        (insert piece)
        (setq infill--tick (buffer-chars-modified-tick))
        (infill--report-accept s (- (length (or (plist-get s :text) "")) (length left)))
        (if (string-empty-p left)
            (setq infill--items nil)
          (infill--render (point) left (+ (point) (- end (plist-get s :pos))))
          (setq infill--shown (append infill--shown
                                      (list :item (plist-get s :item)
                                            :text (plist-get s :text)))))
        t))))

(defun infill-accept ()
  "Insert the whole suggestion."
  (interactive)
  (infill--accept-with nil))

(defun infill-accept-word ()
  "Insert the next word of the suggestion."
  (interactive)
  (infill--accept-with #'infill-next-word))

(defun infill-accept-line ()
  "Insert the next line of the suggestion."
  (interactive)
  (infill--accept-with #'infill-next-line))

(defun infill--cycle (n)
  "Show the candidate N places further."
  (when infill--items
    (setq infill--index (mod (+ infill--index n) (length infill--items)))
    (infill--show-current)))

(defun infill-next ()
  "Show the next candidate."
  (interactive)
  (infill--cycle 1))

(defun infill-previous ()
  "Show the previous candidate."
  (interactive)
  (infill--cycle -1))

(defun infill-dismiss ()
  "Hide the suggestion."
  (interactive)
  (cl-incf infill--seq)
  (when infill--timer
    (cancel-timer infill--timer)
    (setq infill--timer nil))
  (setq infill--items nil)
  (infill--clear))

;;;###autoload
(define-minor-mode infill-mode
  "Show infill's suggestions as ghost text after point while typing."
  :lighter (:eval (infill--lighter))
  (if infill-mode
      (progn
        (setq infill--tick (buffer-chars-modified-tick))
        (add-hook 'post-command-hook #'infill--post-command nil t)
        (add-hook 'window-selection-change-functions #'infill--window-change nil t))
    (remove-hook 'post-command-hook #'infill--post-command t)
    (remove-hook 'window-selection-change-functions #'infill--window-change t)
    (infill-dismiss)))

(defun infill--window-change (&rest _)
  "Dismiss when the buffer's window loses the selection."
  (infill-dismiss))

;;; Registration

(defun infill-language-id (&optional mode)
  "The LSP languageId of MODE (default: this buffer's major mode)."
  (let ((mode (or mode major-mode)))
    (or (cdr (assq mode infill-language-ids))
        (let ((parent (get mode 'derived-mode-parent)))
          (and parent (cdr (assq parent infill-language-ids))))
        (string-remove-suffix "-mode" (string-remove-suffix "-ts-mode" (symbol-name mode))))))

(defun infill--eglot-document-item (item)
  "ITEM (a TextDocumentItem plist) with this buffer's own languageId.
eglot 1.9 keeps one languageId per server, the first buffer's, and infill
serves every mode in `infill-major-modes' from one server: without this a
C buffer opened after a Python one reaches the server as Python."
  (if (and (fboundp 'eglot-current-server)
           (eq (type-of (eglot-current-server)) 'infill-eglot-server))
      (plist-put (copy-sequence item) :languageId (infill-language-id))
    item))

(defun infill--grew (uri position)
  "The server's infill/suggestionGrew: the suggestion at POSITION of URI grew.
POSITION is a plist (eglot) or a hash table (lsp-mode) with line and
character. Asked again there, the server answers at once with the longer
text, drawn in place; only while point is still there in that buffer.
Notifications arrive in the connection's own buffer: the file's buffer is
found by its name."
  (let* ((file (and uri (string-prefix-p "file://" uri)
                    (url-unhex-string (string-remove-prefix "file://" uri))))
         (buf (and file position (find-buffer-visiting file))))
    (when buf
      (with-current-buffer buf
        (when (and infill-mode
                   (eql (infill--get position "line") (1- (line-number-at-pos)))
                   (eql (infill--get position "character")
                        (infill--utf16-length
                         (buffer-substring-no-properties (line-beginning-position) (point)))))
          (infill-complete nil))))))

(with-eval-after-load 'eglot
  (cl-defmethod eglot-handle-notification
    ((_server eglot-lsp-server) (_method (eql infill/suggestionGrew)) &key uri position
     &allow-other-keys)
    (infill--grew uri position))
  (defclass infill-eglot-server (eglot-lsp-server) ()
    :documentation "The infill server, as eglot knows it.")
  (cl-defmethod eglot-handle-notification
    ((_server infill-eglot-server) (_method (eql window/showMessage)) &key type message)
    (infill--note-message type message)
    (cl-call-next-method))
  (cl-defmethod eglot-initialization-options ((_server infill-eglot-server))
    (or (infill-settings-plist) (make-hash-table)))
  (when (fboundp 'eglot--TextDocumentItem)
    (advice-add 'eglot--TextDocumentItem :filter-return #'infill--eglot-document-item)))

;;;###autoload
(defun infill-eglot-setup ()
  "Register infill in `eglot-server-programs' for `infill-major-modes'."
  (require 'eglot)
  (add-to-list 'eglot-server-programs
               (cons infill-major-modes
                     (lambda (&optional _interactive)
                       (cons 'infill-eglot-server infill-command)))))

;;;###autoload
(defun infill-eglot-hooks ()
  "Start eglot in every mode of `infill-major-modes' and show suggestions
in the buffers it manages: `eglot-ensure' on each mode's hook (C, JavaScript,
Go... as well as Python), `infill-mode' on `eglot-managed-mode-hook'."
  (dolist (mode infill-major-modes)
    (add-hook (intern (format "%s-hook" mode)) #'eglot-ensure))
  (add-hook 'eglot-managed-mode-hook #'infill-mode))

;;;###autoload
(defun infill-lsp-setup ()
  "Register infill with lsp-mode as an add-on client for `infill-major-modes'."
  (require 'lsp-mode)
  (lsp-register-client
   (make-lsp-client
    :new-connection (lsp-stdio-connection (lambda () infill-command))
    :major-modes infill-major-modes
    :server-id 'infill
    :add-on? t
    :priority -1
    :initialization-options (lambda () (or (infill-settings-plist) (make-hash-table)))
    :notification-handlers
    (let ((h (make-hash-table :test #'equal)))
      (puthash "infill/suggestionGrew"
               (lambda (_workspace params)
                 (infill--grew (gethash "uri" params) (gethash "position" params)))
               h)
      (puthash "window/showMessage"
               (lambda (workspace params)
                 (infill--note-message (gethash "type" params) (gethash "message" params))
                 (when (fboundp 'lsp--window-show-message)
                   (funcall 'lsp--window-show-message workspace params)))
               h)
      h))))

;;; Models by name

(defvar infill--pull-lines nil
  "Lines the last `infill-pull' printed, newest first (for tests).")

(defun infill--pull-line (name line)
  "Show LINE of `infill pull NAME' in the echo area and keep it."
  (let ((line (string-trim (replace-regexp-in-string "\\`infill pull: " "" line))))
    (unless (string-empty-p line)
      (push line infill--pull-lines)
      (let ((message-log-max (and (not (string-match-p "%" line)) message-log-max)))
        (message "infill pull %s: %s" name line)))))

;;;###autoload
(defun infill-pull (name &optional on-done)
  "Download the model NAME with `infill pull NAME' (see `infill models').
Its progress lines show in the echo area as they come; the file goes to
the cache folder, and \"model\" set to NAME then uses it.  ON-DONE, when
given, is called with t or nil and the last line."
  (interactive (list (read-string "infill: model to download: " nil nil "qwen2.5-coder:1.5b")))
  (setq infill--pull-lines nil)
  (let ((pending ""))
    (make-process
     :name "infill-pull"
     :command (list (car infill-command) "pull" name)
     :connection-type 'pipe
     :noquery t
     :filter (lambda (_proc out)
               ;; progress lines end in \r, the others in \n: whole ones only
               (let* ((all (concat pending out))
                      (parts (split-string all "[\r\n]")))
                 (setq pending (car (last parts)))
                 (dolist (l (butlast parts)) (infill--pull-line name l))))
     :sentinel (lambda (proc _event)
                 (unless (process-live-p proc)
                   (infill--pull-line name pending)
                   (let ((ok (eq (process-exit-status proc) 0))
                         (last (car infill--pull-lines)))
                     (if ok
                         (message "infill: %s downloaded; set \"model\": \"%s\" to use it" name name)
                       (message "infill: pull %s failed: %s %s" name
                                (or (cadr infill--pull-lines) "") (or last "")))
                     (when on-done (funcall on-done ok last))))))))

(provide 'infill)
;; next edits (infill/nextEdit), shown with `infill-mode'
(require 'infill-nextedit)
;;; infill.el ends here
