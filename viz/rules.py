"""An op's backward rule as `step_backward` prints it: the maths of its docstring, written
with the operands' own labels (`d t4 = g * t5`) in place of the docstring's `a`, `b`, `x`.

Every primitive's docstring opens with its maths (`out = a * b;  da = g * b, db = g * a`),
naming its operands by its `forward` parameters (`a`, `b`, `x`) or by their first letter
(`w` or `W` for `weight`, `b` for `bias`, `t` for `target`). `g` stays: it is the gradient
arriving at the op's output.
"""

from __future__ import annotations

import inspect
import re

from tinygrad_ops.opdocs import first_paragraph

# Names a docstring uses for an operand that its `forward` parameter does not suggest.
_ALIASES = {"logits": ("z",)}
# A letter that is not part of a longer name: not after a letter, digit or _, not before a
# letter, digit or a combining hat (x̂ is its own symbol); a trailing _ (z_ic) is kept.
_BEFORE = r"(?<![A-Za-z0-9_])"
_AFTER = r"(?![A-Za-z0-9\u0302])"
# Words after which a lone `a` is the operand ("sum of a over axes"), not the article.
_OPERAND_AFTER = ("of", "to")


def op_class(op):
    """The class that defines the op: the user's `tg.Function` subclass for a custom op."""
    return getattr(op, "function", None) or type(op)


def rule(op) -> str:
    """The maths of an op's docstring: its first paragraph, on one line, as `opdocs` reads
    it for docs/ops.md ('' if the docstring states no rule: no `=` in it).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0], requires_grad=True)
    >>> rule((x * x)._ctx)
    'out = a * b;  da = g * b, db = g * a'
    """
    first = " ".join((first_paragraph(op_class(op)) or "").split())
    return first.replace("; ", ";  ") if "=" in first else ""


def missing_rule(op) -> str:
    """What is shown for an op whose docstring states no rule: where to write one."""
    name = op_class(op).__name__
    return f"(none: {name}'s docstring could state it, as 'out = ...;  dx = g * ...')"


def _symbols(op, count):
    """The docstring's names of the op's first `count` operands, in order: from the
    parameters of its `forward` after the first (`self` of an Op, `ctx` of a Function)."""
    try:
        parameters = list(inspect.signature(op_class(op).forward).parameters)[1:]
    except (TypeError, ValueError):  # a forward without a signature to read
        parameters = []
    if not parameters or parameters[0] in ("arrays", "args"):
        parameters = ["a", "b", "c"]  # forward(*arrays): the generic names
    symbols = []
    for name in parameters[:count]:
        symbols.append({name, name[0], name[0].upper(), *_ALIASES.get(name, ())})
    return symbols


def _is_article(text, start, end):
    """Whether the lone `a` at text[start:end] is the English article ("with a new shape")."""
    before = text[:start].rstrip().split(" ")[-1] if text[:start].strip() else ""
    after = text[end:]
    follows_word = bool(re.match(r" [a-z]{2,}", after))
    return before.isalpha() and before not in _OPERAND_AFTER and follows_word


def labelled_rule(op, labels, output=None) -> str:
    """`rule(op)` with each operand written as its label (`labels`, in operand order: a
    tensor's id, a number's value, or None to leave it as written), and a tensor's
    derivative `da` as `d label` (`d(label)` for a label of several words). `output`, when
    given, is written in place of `out` in a rule that names its output so (`out = ...`).

    >>> import tinygrad_ops as tg
    >>> x = tg.Tensor([1.0], requires_grad=True)
    >>> labelled_rule((x * 2.0)._ctx, ["t0", "2"])
    'out = t0 * 2;  d t0 = g * 2, db = g * t0'
    >>> labelled_rule((x * 2.0)._ctx, ["t0 x", "2"], output="t1")
    't1 = t0 x * 2;  d(t0 x) = g * 2, db = g * t0 x'
    """
    text = rule(op)
    if not text:
        return ""
    # A rule that opens with `out =` names the output `out` (elsewhere `out` may be a dim:
    # Linear's "(out, in)"); the label is held aside so that no operand's letter is read in it.
    if output is not None and text.startswith("out ="):
        text = re.sub(rf"{_BEFORE}out{_AFTER}", "\0", text)
    for symbols, label in zip(_symbols(op, len(labels)), labels):
        if label is None:
            continue
        names = "|".join(re.escape(symbol) for symbol in sorted(symbols, key=len, reverse=True))
        pattern = re.compile(rf"{_BEFORE}(d?)({names}){_AFTER}")

        is_number = bool(re.fullmatch(r"[-+0-9.e]+", label))
        derivative = f"d({label})" if " " in label else f"d {label}"

        def replace(match, label=label, is_number=is_number, derivative=derivative):
            lone_a = match.group(2) == "a" and not match.group(1)
            if lone_a and _is_article(match.string, match.start(), match.end()):
                return match.group(0)
            if match.group(1):  # a derivative: of a tensor, `d t5`; of a number, as written
                return match.group(0) if is_number else derivative
            return label

        text = pattern.sub(replace, text)
    return text if output is None else text.replace("\0", output)
