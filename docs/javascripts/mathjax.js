// MathJax settings for the `pymdownx.arithmatex` generic output: \( \) inline, \[ \] display.
window.MathJax = {
  tex: { inlineMath: [["\\(", "\\)"]], displayMath: [["\\[", "\\]"]], processEscapes: true },
  options: { ignoreHtmlClass: ".*", processHtmlClass: "arithmatex" },
};
document$.subscribe(() => { MathJax.typesetPromise && MathJax.typesetPromise(); });
