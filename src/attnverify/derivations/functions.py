"""Functions whose plain sympy form overflows when printed as array code: log-sum-exp and softmax.

``log(exp(a) + exp(b))`` printed as ``xp.log(xp.exp(a) + xp.exp(b))`` is ``inf`` at a = 10³, and
``exp(a)/(exp(a) + exp(b))`` is ``inf/inf = NaN``. [`LogSumExp`][attnverify.derivations.functions.LogSumExp] is one
sympy function with an overflow-safe array implementation (the largest argument taken out first), an exact derivative
(the softmax weights) and arbitrary-precision evaluation; [`softmax`][attnverify.derivations.functions.softmax] is
``exp(aᵢ − LogSumExp(a))``, whose printed form is bounded by 1. A derivation that uses them keeps its exact symbolic
meaning (``LogSumExp(a, b).rewrite(sympy.log)`` is ``log(exp(a) + exp(b))``) and its evaluators stay finite.
"""

from __future__ import annotations

import mpmath
import sympy


class LogSumExp(sympy.Function):
    r"""$\log \sum_i \exp(a_i)$ of two or more arguments."""

    nargs = None  # any number ≥ 2 (checked in eval)

    @classmethod
    def eval(cls, *args):
        if len(args) < 2:
            raise ValueError(f"LogSumExp takes at least 2 arguments, got {len(args)}")
        return None

    def fdiff(self, argindex: int = 1):
        r"""$\partial/\partial a_k \log \sum \exp(a_i) = \exp(a_k - \operatorname{LogSumExp}(a))$: the softmax weight
        of $a_k$."""
        if not 1 <= argindex <= len(self.args):
            raise sympy.ArgumentIndexError(self, argindex)
        return sympy.exp(self.args[argindex - 1] - self)

    def _eval_rewrite_as_log(self, *args, **kwargs):
        return sympy.log(sympy.Add(*(sympy.exp(a) for a in args)))

    def _eval_is_real(self):
        return all(a.is_real for a in self.args) or None

    def _eval_evalf(self, prec):
        values = [a.evalf(prec) for a in self.args]
        if not all(v.is_number and v.is_real for v in values):
            return None
        with mpmath.workprec(prec + 20):
            numbers = [mpmath.mpf(str(v)) for v in values]
            top = max(numbers)
            value = top + mpmath.log(mpmath.fsum(mpmath.exp(x - top) for x in numbers))
        return sympy.Float(value, prec)

    def _latex(self, printer):
        return r"\operatorname{LSE}\left(%s\right)" % ", ".join(printer._print(a) for a in self.args)

    @staticmethod
    def array_implementation(backend, *args):
        r"""$m + \log \sum \exp(a_i - m)$ with $m$ the elementwise largest argument (finite wherever the result is)."""
        xp = backend.xp
        arrays = xp.broadcast_arrays(*(xp.asarray(a, dtype=xp.float64) for a in args))
        top = arrays[0]
        for a in arrays[1:]:
            top = xp.maximum(top, a)
        shift = xp.where(xp.isfinite(top), top, 0.0)  # all −∞: log 0 = −∞, not NaN
        total = sum(xp.exp(a - shift) for a in arrays)
        return shift + xp.log(total)


def softmax(index: int, *scores: sympy.Expr) -> sympy.Expr:
    r"""The softmax weight $\exp(s_{\text{index}} - \operatorname{LogSumExp}(s))$ of ``scores[index]`` (bounded by 1
    when printed)."""
    if len(scores) < 2:
        raise ValueError(f"softmax takes at least 2 scores, got {len(scores)}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(scores):
        raise ValueError(f"index must be an integer in [0, {len(scores) - 1}], got {index!r}")
    return sympy.exp(scores[index] - LogSumExp(*scores))
