// Inline code on a phone: a short code word with a hyphen (`--dataset-module`, `-p`,
// `test-slow`) stays on one line instead of breaking at its hyphen, where a reader sees "-" and
// "p dataset_module" on two lines. A longer name (`rank_correlation_test`, a module path) may
// break only after an underscore, a dot or a slash (an invisible <wbr>), not in the middle of a
// word ("wilcoxon_exac" / "t"); the CSS still breaks anywhere when no such place fits. The text
// is untouched, so copying a command or a name still gives it as written.
document.addEventListener("DOMContentLoaded", () => {
  for (const word of document.querySelectorAll("article.bd-article code span.pre")) {
    const text = word.textContent;
    if (text.includes("-") && text.length <= 28) {
      word.classList.add("code-word-whole");
    } else if (text.length > 12 && /[_./]/.test(text) && word.children.length === 0) {
      word.textContent = "";
      for (const part of text.split(/(?<=[_./])/)) {
        word.append(part, document.createElement("wbr"));
      }
      word.lastChild.remove();
    }
  }
});
