"""The report as a LaTeX document (``report --latex``): ``report.tex`` beside ``index.html``, for a paper's appendix.

Derivations are numbered steps, each an ``align*`` (an equation's sides aligned at =) with its check below it;
claims are a ``longtable``; figures are the PDF that `save_figure` writes beside
each PNG. It compiles with pdflatex from Debian's texlive (``texlive-latex-recommended`` and
``texlive-latex-extra``): text is escaped, and every character outside Latin-1 is written as a LaTeX command (Greek
letters, the relations and operators a report uses, script capitals) or, failing that, as a visible ``[U+XXXX]``,
so the document never stops on an unknown character.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from ..checks.story import ClaimStory, format_value
from .printer import CLAIM_COLUMNS, ReportPrinter, section_title
from .section import Figure, Table, TheoryOutcome

_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#", "^": r"\^{}",
            "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}", "<": r"\textless{}", ">": r"\textgreater{}",
            "|": r"\textbar{}"}

_SYMBOLS = {
    "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "∼": r"\sim", "≪": r"\ll", "≫": r"\gg",
    "∝": r"\propto", "≡": r"\equiv", "−": "-", "·": r"\cdot", "×": r"\times", "±": r"\pm", "∓": r"\mp",
    "→": r"\to", "←": r"\leftarrow", "↔": r"\leftrightarrow", "⇒": r"\Rightarrow", "⇔": r"\Leftrightarrow",
    "∞": r"\infty", "√": r"\surd", "∑": r"\sum", "Σ": r"\Sigma", "∏": r"\prod", "∫": r"\int", "∂": r"\partial",
    "∇": r"\nabla", "∈": r"\in", "∉": r"\notin", "⊂": r"\subset", "⊆": r"\subseteq", "∪": r"\cup", "∩": r"\cap",
    "∀": r"\forall", "∃": r"\exists", "∅": r"\emptyset", "′": r"'", "″": r"''", "‖": r"\|", "∣": r"|",
    "⟨": r"\langle", "⟩": r"\rangle", "⌈": r"\lceil", "⌉": r"\rceil", "⌊": r"\lfloor", "⌋": r"\rfloor",
    "ℓ": r"\ell", "ℛ": r"\mathcal{R}", "ℒ": r"\mathcal{L}", "ℋ": r"\mathcal{H}", "ℰ": r"\mathcal{E}",
    "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "ℤ": r"\mathbb{Z}", "⊤": r"\top", "ᵀ": r"^{\mathsf{T}}",
    "✓": r"\checkmark", "✗": r"\times", "•": r"\bullet", "∘": r"\circ", "⊗": r"\otimes", "⊕": r"\oplus",
    "†": r"\dagger", "°": r"^{\circ}", "…": r"\dots", "⋯": r"\cdots", "ϵ": r"\epsilon", "ϑ": r"\vartheta",
    "ϕ": r"\phi", "ϱ": r"\varrho", "⁻": r"^{-}", "⁺": r"^{+}", "⁽": r"^{(}", "⁾": r"^{)}", "≳": r"\gtrsim",
    "≲": r"\lesssim", "⊥": r"\perp", "∥": r"\parallel", "⊙": r"\odot", "⋅": r"\cdot", "∗": r"\ast",
    "≔": r"\mathrel{:=}", "⟶": r"\longrightarrow", "↦": r"\mapsto", "∖": r"\setminus", "ℏ": r"\hbar",
}
_TEXT = {"–": "--", "—": "---", "‘": "`", "’": "'", "“": "``", "”": "''", "\u00a0": "~", "\u2009": r"\,",
         "\u202f": r"\,", "\u2060": ""}
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹ⁿⁱ", "0123456789ni"))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉ₐₑₒₓₖₗₘₙₚₛₜ", "0123456789aeoxklmnpst"))
_GREEK_CAPITALS = {"GAMMA", "DELTA", "THETA", "LAMBDA", "XI", "PI", "SIGMA", "UPSILON", "PHI", "PSI", "OMEGA"}


def _character(c: str) -> str:
    """One character outside what pdflatex's T1/utf8 reads, as a LaTeX command (math ones in ``\\ensuremath``)."""
    if c in _TEXT:
        return _TEXT[c]
    if c in _SYMBOLS:
        return r"\ensuremath{" + _SYMBOLS[c] + "}"
    if c in _SUPERSCRIPTS:
        return r"\ensuremath{^{" + _SUPERSCRIPTS[c] + "}}"
    if c in _SUBSCRIPTS:
        return r"\ensuremath{_{" + _SUBSCRIPTS[c] + "}}"
    name = unicodedata.name(c, "")
    greek = re.fullmatch(r"(?:MATHEMATICAL (?:BOLD |ITALIC |BOLD ITALIC )*)?GREEK (SMALL|CAPITAL) LETTER (\w+)", name)
    if greek:
        case, letter = greek.groups()
        letter = "LAMBDA" if letter == "LAMDA" else letter
        if case == "SMALL":
            return "\\ensuremath{\\" + letter.lower() + "}" if letter != "OMICRON" else "o"
        if letter in _GREEK_CAPITALS:
            return "\\ensuremath{\\" + letter.capitalize() + "}"
        return unicodedata.lookup(f"LATIN CAPITAL LETTER {letter[0]}") if letter[0].isalpha() else "?"
    script = re.fullmatch(r"MATHEMATICAL (?:BOLD )?SCRIPT CAPITAL (\w)", name)
    if script:
        return r"\ensuremath{\mathcal{" + script.group(1) + "}}"
    letter = re.fullmatch(r"MATHEMATICAL (?:BOLD |ITALIC |BOLD ITALIC |DOUBLE-STRUCK )*(SMALL|CAPITAL) (\w)", name)
    if letter:
        return letter.group(2).lower() if letter.group(1) == "SMALL" else letter.group(2)
    if unicodedata.category(c) == "Mn":  # a combining mark (a hat or a bar): dropped
        return ""
    return r"\textit{[U+" + f"{ord(c):04X}" + "]}"


def escape(text: str) -> str:
    """Plain text (Unicode) as LaTeX text that pdflatex reads (``--`` stays two hyphens, as in ``--only``)."""
    out = []
    for c in str(text):
        if c == "-" and out and out[-1] == "-":
            out.append("{}-")
        elif c in _SPECIAL:
            out.append(_SPECIAL[c])
        elif ord(c) < 0x180 and c != "\u00a0":
            out.append(c)
        else:
            out.append(_character(c))
    return "".join(out)


def _math_safe(latex: str) -> str:
    """sympy's LaTeX with any non-ASCII character (a symbol's name such as ``E[Z_L]`` or ``θ``) made a command."""
    return "".join(c if ord(c) < 0x80 else _character(c).replace(r"\ensuremath", "") for c in latex)


def prose(text: str) -> str:
    """Markdown-ish prose (``$…$`` math, ``code``, **bold**, *emphasis*) as LaTeX; the math passes through."""
    parts = re.split(r"(\$\$.+?\$\$|\$[^$\n]+\$|`[^`\n]+`)", str(text), flags=re.S)
    out = []
    for part in parts:
        if part.startswith("$$") and part.endswith("$$") and len(part) > 4:
            out.append(r"\[" + _math_safe(part[2:-2]) + r"\]")
        elif part.startswith("$") and part.endswith("$") and len(part) > 2:
            out.append("$" + _math_safe(part[1:-1]) + "$")
        elif part.startswith("`") and part.endswith("`") and len(part) > 2:
            out.append(r"\texttt{" + escape(part[1:-1]) + "}")
        else:
            piece = escape(part)
            piece = re.sub(r"\*\*(.+?)\*\*", r"\\textbf{\1}", piece)
            piece = re.sub(r"(?<![\\\w])\*(?!\s)(.+?)(?<!\s)\*", r"\\emph{\1}", piece)
            out.append(piece)
    return "".join(out)


def equation(expression) -> str:
    """A step's expression as a display: an ``Eq`` aligned at its =, anything else as one line."""
    import sympy

    from .equations import equation_latex

    if isinstance(expression, sympy.Eq):
        return ("\\begin{align*}\n" + _math_safe(equation_latex(expression.lhs)) + " &= "
                + _math_safe(equation_latex(expression.rhs)) + "\n\\end{align*}")
    return "\\begin{equation*}\n" + _math_safe(equation_latex(expression)) + "\n\\end{equation*}"


PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage[utf8]{inputenc}
\usepackage[T1]{fontenc}
\usepackage{lmodern}
\usepackage[margin=2cm]{geometry}
\usepackage{amsmath,amssymb}
\usepackage{graphicx}
\usepackage{longtable}
\usepackage{array}
\usepackage{xcolor}
\usepackage{float}
\usepackage[hidelinks]{hyperref}
\allowdisplaybreaks
\setlength{\parindent}{0pt}
\setlength{\parskip}{0.5em}
\sloppy
"""



def _name(name: str) -> str:
    """A claim's dotted name in typewriter type, breakable after its dots and underscores."""
    return r"\texttt{" + escape(name).replace(".", r".\allowbreak{}").replace(r"\_", r"\_\allowbreak{}") + "}"


def _cell(value) -> str:
    return format_value(value) if isinstance(value, float) else str(value)


class LatexPrinter(ReportPrinter):
    """The report as a LaTeX document for pdflatex: derivations as numbered ``align*`` steps, claims as a
    ``longtable`` with each claim's replay command below it, figures as the PDFs beside their PNGs."""

    def __init__(self, out_dir: str | Path | None = None):
        self.out_dir = out_dir

    def document(self, parts: list[str]) -> str:
        return "\n".join([PREAMBLE, *parts, r"\end{document}"]) + "\n"

    def title(self, text: str) -> str:
        return "\n".join([r"\title{" + escape(text) + "}", r"\date{}", r"\begin{document}", r"\maketitle"])

    def settings(self, rows: list[list]) -> str:
        return "\n".join([r"\begin{tabular}{ll}", *[escape(k) + " & " + escape(v) + r" \\" for k, v in rows],
                          r"\end{tabular}"])

    def summary(self, text: str, state: str) -> str:
        return "\n" + escape(text)  # a paragraph of its own

    def section_heading(self, outcome: TheoryOutcome) -> str:
        return r"\section{" + escape(section_title(outcome)) + "}"

    def build_error(self, error: str) -> str:
        return (r"\textbf{Part of this section could not be built:} "
                + escape(error.strip().splitlines()[-1] if error.strip() else error))

    def warning(self, text: str) -> str:
        return r"\textbf{Warning:} " + escape(text)

    def introduction(self, text: str) -> str:
        return "\n\n".join(prose(p) for p in text.strip().split("\n\n")) if text.strip() else ""

    def heading(self, text: str) -> str:
        return r"\subsection*{" + escape(text) + "}"

    def derivation_block(self, derivation, checked: str, steps: list[str]) -> str:
        lines = [r"\subsection*{" + escape(derivation.title) + "}"]
        if derivation.source:
            lines.append(r"\textit{Source: " + escape(derivation.source) + r".}\par")
        lines += [r"\textit{Steps checked: " + escape(checked) + r".}", r"\begin{enumerate}", *steps,
                  r"\end{enumerate}"]
        return "\n".join(lines)

    def step(self, number: int, step, check) -> str:
        result = r" (result \texttt{" + escape(step.name) + "})" if step.name else ""
        label = escape(f"Check: {check.label()}")
        check_line = (r"\textbf{\textcolor{red}{" + r"\ensuremath{\times} " + label + "}}" if check.failed
                      else r"\textit{" + label + "}")
        return "\n".join([r"\item " + escape(step.description) + result, equation(step.expression),
                          r"\nopagebreak" + "\n" + r"{\small " + check_line + r"}"])

    def figure(self, figure: Figure, number: int) -> str:
        name = Path(figure.filename)
        pdf = name.with_suffix(".pdf").name
        shown = pdf if self.out_dir is None or (Path(self.out_dir) / pdf).is_file() else name.name
        return "\n".join([r"\begin{figure}[H]\centering", r"\includegraphics[width=0.7\linewidth]{" + shown + "}",
                          r"\caption{" + prose(figure.caption) + "}", r"\end{figure}"])

    def table(self, table: Table) -> str:
        columns = "|" + "l|" * len(table.header)
        return "\n".join([r"\begin{center}{\small " + prose(table.caption) + r"}\par",
                          r"{\small\begin{longtable}{" + columns + r"}\hline",
                          " & ".join(r"\textbf{" + escape(h) + "}" for h in table.header) + r" \\ \hline",
                          *[" & ".join(escape(_cell(v)) for v in row) + r" \\" for row in table.rows],
                          r"\hline\end{longtable}}\end{center}"])

    def claims_table(self, stories: list[ClaimStory]) -> str:
        """Name, statement, expected, status, verdict and key figures of each claim (the seconds left out)."""
        header = " & ".join(r"\textbf{" + escape(h) + "}" for h in CLAIM_COLUMNS[:-1])
        return "\n".join([
            r"{\small\begin{longtable}{|" + "|".join(r">{\raggedright\arraybackslash}p{" + w + "}" for w in
                                                    ("3.2cm", "4.6cm", "1.2cm", "1.4cm", "1.5cm", "3.6cm")) + "|}",
            r"\hline " + header + r" \\ \hline \endhead", *[story_latex(s) for s in stories], r"\end{longtable}}"])

    def stories(self, parts: list[str]) -> str:
        return "\n".join([r"\begin{itemize}\raggedright", *parts, r"\end{itemize}"])

    def story(self, story: ClaimStory) -> str:
        """A claim's story in the appendix: the claims table tells it (`story_latex`); below the table, its replay
        command."""
        return r"\item " + _name(story.name) + r": replay with\\ \texttt{" + escape(story.replay) + "}"


def derivation_latex(derivation) -> str:
    """A derivation: its title, source, the count of its steps' checks, then each step with its check."""
    return LatexPrinter().derivation(derivation)


def story_latex(story: ClaimStory) -> str:
    """A claim's story as a row of the claims table: name, statement, expected, status, verdict, key figures."""
    return " & ".join([_name(story.name), prose(story.statement), escape(story.expect), escape(story.status),
                       escape(story.verdict), escape(story.key_figures)]) + r" \\ \hline"


def render_latex(outcomes: list[TheoryOutcome], metadata: dict, out_dir: str | Path | None = None) -> str:
    """The whole report as a LaTeX document (figures included as ``NAME.pdf`` where ``out_dir`` has them, else
    the PNG)."""
    return LatexPrinter(out_dir).doprint(outcomes, metadata)
