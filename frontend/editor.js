// The code editor: CodeMirror 6 over each <textarea data-editor>, bundled by esbuild into
// static/build/editor.js (npm run build, run by scripts/setup.sh).
//
// Progressive enhancement: the textarea stays in the form and receives the editor's text on
// every change, so the page's own submit script and a plain form post both send it. If this
// bundle does not load, the textarea is simply left as it is.
import { EditorState, Compartment } from "@codemirror/state";
import { EditorView, keymap, lineNumbers, highlightSpecialChars, highlightActiveLineGutter } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { LanguageSupport, bracketMatching, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { pythonLanguage } from "@codemirror/lang-python";
// The Markdown language alone (CommonMark plus GFM tables, as lessons are written): no
// completion and no HTML or code-block languages inside it, which keeps the bundle small.
import { markdownLanguage } from "@codemirror/lang-markdown";
import { classHighlighter } from "@lezer/highlight";

// CodeMirror injects <style> elements; the page's CSP accepts them only with the nonce the
// server put on this script tag (document.currentScript works for classic deferred scripts).
const nonce = (document.currentScript && document.currentScript.nonce) || "";

// The site's colours come from static/css/site.css; CodeMirror only needs to know whether the
// page is dark so its own caret and selection colours fit.
const darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

// Typing over a selection: Chrome's editing code would carry the deleted text's colours over
// in a style attribute, which the CSP refuses (a console error). Replace the selection here.
const typeOverSelection = EditorView.domEventHandlers({
  beforeinput(event, view) {
    if (event.inputType !== "insertText" || !event.data || view.composing || view.state.selection.main.empty) return false;
    event.preventDefault();
    view.dispatch({ ...view.state.replaceSelection(event.data), userEvent: "input.type", scrollIntoView: true });
    return true;
  },
});

function enhance(textarea) {
  const label = textarea.labels && textarea.labels[0];
  if (label && !label.id) label.id = textarea.id + "-label";
  // tabindex: the content is focusable anyway (contenteditable); saying so lets checkers such as
  // axe see that the scrolling area around it is reachable by keyboard.
  const contentAttributes = { "aria-multiline": "true", tabindex: "0" };
  if (label) contentAttributes["aria-labelledby"] = label.id;
  const describedBy = textarea.getAttribute("aria-describedby");
  if (describedBy) contentAttributes["aria-describedby"] = describedBy;

  // data-editor="text" (TOML and other course files) and "markdown" (lesson.md): no Python
  // highlighting over prose, and long lines wrap as paragraphs do. "" or "python": Python.
  const mode = textarea.dataset.editor || "python";
  const language =
    mode === "markdown" ? [new LanguageSupport(markdownLanguage), EditorView.lineWrapping]
    : mode === "text" ? EditorView.lineWrapping
    : new LanguageSupport(pythonLanguage);
  const theme = new Compartment();
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        lineNumbers(),
        highlightActiveLineGutter(),
        highlightSpecialChars(),
        history(),
        indentOnInput(),
        bracketMatching(),
        // The language alone: no completion sources (and no autocomplete package in the bundle).
        language,
        syntaxHighlighting(classHighlighter),
        indentUnit.of("    "),
        EditorState.tabSize.of(4),
        EditorState.readOnly.of(textarea.readOnly || textarea.disabled),
        // Tab indents; Escape then Tab leaves the editor (CodeMirror's documented escape hatch).
        keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
        EditorView.cspNonce.of(nonce),
        typeOverSelection,
        EditorView.contentAttributes.of(contentAttributes),
        theme.of(EditorView.darkTheme.of(Boolean(darkQuery && darkQuery.matches))),
        EditorView.updateListener.of(function (update) {
          if (update.docChanged) textarea.value = update.state.doc.toString();
        }),
      ],
    }),
  });
  if (darkQuery && darkQuery.addEventListener) {
    darkQuery.addEventListener("change", function (event) {
      view.dispatch({ effects: theme.reconfigure(EditorView.darkTheme.of(event.matches)) });
    });
  }

  textarea.insertAdjacentElement("afterend", view.dom);
  textarea.hidden = true;
  textarea.removeAttribute("data-editor");
  // The label still points at the (hidden) textarea: clicking it should reach the editor.
  if (label) label.addEventListener("click", function (event) { event.preventDefault(); view.focus(); });
  textarea.codeEditor = view;
}

document.querySelectorAll("textarea[data-editor]").forEach(enhance);
