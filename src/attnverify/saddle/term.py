"""A sympy term of a declared action (its entropy 𝓛, a measure's log-density m), generated once and evaluated with
its derivatives over the independent entries u, exactly: the value and gradient (one point, and a batch of chains),
the Hessian the solver's Newton steps use, and the third derivatives the next order of the Laplace expansion needs.

The term is a sympy expression in the entries u and in the Cholesky atoms a(u) of the matrix order parameters
(ln det U, entries of W = U⁻¹; `matrix_functions`). sympy differentiates it over
v = (u, a) as if the atoms were free; the map u ↦ v(u) = (u, a(u)) has the derivatives, for U = Σ_k u_k B_k
(B_k = E_ij + E_ji, E_ii on the diagonal) and X_k = W B_k (Magnus & Neudecker, Matrix Differential Calculus, ch. 8),

    ln det U:  ∂_k = tr X_k,   ∂_kl = −tr(X_k X_l),   ∂_klm = tr(X_k X_l X_m) + tr(X_k X_m X_l),
    W_ij:      ∂_k = −(X_k W)_ij,   ∂_kl = (X_k X_l W + X_l X_k W)_ij,   ∂_klm = −Σ_{σ ∈ S₃} (X_σ1 X_σ2 X_σ3 W)_ij,

and the chain rule to third order (Faà di Bruno) gives, with 𝓛_p, 𝓛_pq, 𝓛_pqr the generated derivatives over v,

    ∂³𝓛/∂u_i∂u_j∂u_k = 𝓛_pqr v_p,i v_q,j v_r,k + 𝓛_pq (v_p,ij v_q,k + v_p,ik v_q,j + v_p,jk v_q,i) + 𝓛_p v_p,ijk,

where only the atoms' rows of v_,ij and v_,ijk are nonzero (to second order: `MatrixAtoms.curvature`). No finite
differences anywhere.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import sympy

from ..derivations.codegen import evaluator
from ..numerics.symmetric import symmetric_basis
from .matrix_functions import InverseEntry, LogDet, MatrixAtoms


def finite_outputs(values: tuple, what: str) -> np.ndarray:
    """The generated function's outputs as a float64 vector; ValueError where one is undefined (NaN: 𝓛 outside its
    domain, which the solver treats as a rejected step)."""
    with np.errstate(all="ignore"):
        out = np.array(values, dtype=float)
    if np.isnan(out).any():
        raise ValueError(f"{what} is undefined (NaN) at these entries: outside the entropy's domain")
    return out


def entry_slices(order_parameters: tuple) -> dict[str, slice]:
    """Each order parameter's slice of the flat entries u (its count of them, in declaration order): the one layout
    the declaration, the solver's θ, the generated terms and HMC on the action all read."""
    slices, start = {}, 0
    for op in order_parameters:
        slices[op.name] = slice(start, start + op.count)
        start += op.count
    return slices


def entropy_atoms(entropy: sympy.Expr, order_parameters: tuple) -> tuple[sympy.Expr, tuple, tuple]:
    """The entropy with each [`log_det`][attnverify.saddle.log_det] and [`inverse`][attnverify.saddle.inverse] atom
    replaced by an auxiliary symbol, those symbols, and (order parameter, MatrixAtoms) for each matrix order parameter
    that has atoms."""
    found = sorted(entropy.atoms(LogDet, InverseEntry), key=sympy.default_sort_key)
    by_name = {op.name: op for op in order_parameters}
    replacements, auxiliaries, atoms = {}, [], []
    for op in order_parameters:
        mine = [f for f in found if tuple(f.entries) == op.symbols]
        if not mine:
            continue
        log_det_used = any(isinstance(f, LogDet) for f in mine)
        inverse_entries = sorted({f.index for f in mine if isinstance(f, InverseEntry)})
        if log_det_used:
            symbol = sympy.Symbol(f"_logdet_{op.name}", real=True)
            auxiliaries.append(symbol)
            replacements.update({f: symbol for f in mine if isinstance(f, LogDet)})
        for i, j in inverse_entries:
            symbol = sympy.Symbol(f"_inverse_{op.name}_{i}_{j}", real=True)
            auxiliaries.append(symbol)
            replacements.update({f: symbol for f in mine if isinstance(f, InverseEntry) and f.index == (i, j)})
        atoms.append((op, MatrixAtoms(op.size, log_det_used, tuple(inverse_entries))))
    stray = [f for f in found if f not in replacements]
    if stray:
        raise ValueError(f"log_det / inverse of {stray[0].matrix_name} in the entropy: it must be one of the declared "
                         f"matrix order parameters ({', '.join(n for n, op in by_name.items() if op.size) or 'none'})")
    return entropy.xreplace(replacements), tuple(auxiliaries), tuple(atoms)


def atom_derivatives(atoms: MatrixAtoms, U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, J, A2, A3): the atoms' values a (count,) and their first, second and third derivatives over the
    entries of U, (count, k), (count, k, k), (count, k, k, k) for k = d(d+1)/2 (the module docstring's formulas),
    in the order of ``atoms`` (ln det U, then the inverse's entries). LinAlgError where U has no Cholesky factor."""
    a, J, W = atoms.evaluate(U)
    _, _, B = symmetric_basis(atoms.size)
    X = W @ B  # X_k = W B_k
    XX = np.einsum("kab,lbc->klac", X, X)  # X_k X_l
    A2, A3 = [], []
    if atoms.log_det:
        A2.append(-np.einsum("kab,lba->kl", X, X))
        triple = np.einsum("klac,mca->klm", XX, X)  # tr(X_k X_l X_m)
        A3.append(triple + triple.transpose(0, 2, 1))
    Y = X @ W  # X_k W = W B_k W
    for i, j in atoms.inverse:
        pair = np.einsum("klp,p->kl", XX[:, :, i, :], W[:, j])  # (X_k X_l W)_ij
        A2.append(pair + pair.T)
        chain = np.einsum("abp,cp->abc", XX[:, :, i, :], Y[:, :, j])  # (X_a X_b X_c W)_ij
        A3.append(-sum(chain.transpose(order) for order in itertools.permutations(range(3))))
    return a, J, np.array(A2).reshape(atoms.count, *(X.shape[0],) * 2), \
        np.array(A3).reshape(atoms.count, *(X.shape[0],) * 3)


def _nonzero(expression: sympy.Expr, variables: tuple, third: bool = True):
    """(positions, expressions) of the nonzero second and (with ``third``) of the nonzero third derivatives of
    ``expression`` over ``variables``, positions sorted (i ≤ j, i ≤ j ≤ k): the symmetric tensors' independent entries.
    Each derivative is taken only along the variables still present in the one before (an entropy is linear in most
    entries)."""
    index = {s: k for k, s in enumerate(variables)}
    second, thirds = ([], []), ([], [])
    for i, s in enumerate(variables):
        first = sympy.diff(expression, s)
        for j in sorted(index[t] for t in first.free_symbols if t in index and index[t] >= i):
            h = sympy.diff(first, variables[j])
            if h == 0:
                continue
            second[0].append((i, j))
            second[1].append(h)
            if not third:
                continue
            for k in sorted(index[t] for t in h.free_symbols if t in index and index[t] >= j):
                t = sympy.diff(h, variables[k])
                if t != 0:
                    thirds[0].append((i, j, k))
                    thirds[1].append(t)
    return second, thirds


def _symmetric(positions: list, values: np.ndarray, size: int, order: int) -> np.ndarray:
    """The symmetric tensor of ``order`` whose entries at the sorted ``positions`` (and every permutation) are
    ``values``."""
    out = np.zeros((size,) * order)
    for index, value in zip(positions, values):
        for permuted in set(itertools.permutations(index)):
            out[permuted] = value
    return out


class Term:
    """A sympy term over the order parameters' entries (and their Cholesky atoms) and the named ``parameters``:
    ``value_and_gradient(u, p)``, ``hessian(u, p)``, ``third(u, p)`` = ∂³/∂u_i∂u_j∂u_k (the module docstring's chain
    rule), ``values_and_gradients(u, factors, p)`` for a batch of chains, and ``values(columns, p)``, the value on
    arrays of entries (a grid) where the term has no matrix atoms. ``what`` names it in a refusal ("the entropy")."""

    def __init__(self, expression: sympy.Expr, order_parameters: tuple, parameters: tuple | None = None,
                 what: str = "the term"):
        self.order_parameters, self.what = order_parameters, what
        self.entries = tuple(s for op in order_parameters for s in op.symbols)
        self.expanded, self.auxiliaries, self.atoms = entropy_atoms(sympy.sympify(expression), order_parameters)
        if parameters is None:  # every other symbol, by name (a declaration's entropy: N, σ², …)
            free = self.expanded.free_symbols - set(self.auxiliaries) - set(self.entries)
            parameters = sorted(free, key=lambda s: s.name)
        self.parameters = tuple(parameters)
        self.variables = self.entries + self.auxiliaries
        self.n, self.m = len(self.entries), len(self.auxiliaries)

    @functools.cached_property
    def _generated(self):
        """One evaluator of [value, gradient over v, nonzero second and third derivatives over v], and the
        positions of the last two."""
        v = self.variables
        gradient = [sympy.diff(self.expanded, s) for s in v]
        (second, second_expressions), (third, third_expressions) = _nonzero(self.expanded, v)
        expressions = [self.expanded] + gradient + second_expressions + third_expressions
        function = evaluator(expressions, list(v) + list(self.parameters), rounding=False).function
        return function, second, third

    @functools.cached_property
    def _first(self):
        """One evaluator of [value, gradient over v] (what a batch of chains needs)."""
        v = self.variables
        expressions = [self.expanded] + [sympy.diff(self.expanded, s) for s in v]
        return evaluator(expressions, list(v) + list(self.parameters), rounding=False).function

    def values_and_gradients(self, u: np.ndarray, factors: dict, parameters: tuple = ()):
        """(values (C,), ∂/∂u (C, n)) at a batch of entries u (C, n), the matrix order parameters' lower Cholesky
        factors given by name (``factors``: the atoms are read from them); NaN where the term is undefined or
        overflows (the caller's chain has no weight there)."""
        chains, slices = u.shape[0], entry_slices(self.order_parameters)
        atoms, blocks = [], []
        for op, matrix_atoms in self.atoms:
            a, J = matrix_atoms.evaluate_each(factors[op.name])
            atoms.append(a)
            blocks.append((slices[op.name], J))
        a = np.concatenate(atoms, axis=1) if atoms else np.zeros((chains, 0))
        with np.errstate(all="ignore"):
            values = self._first(*u.T, *a.T, *parameters)
            out = np.empty((len(values), chains))
            for row, value in zip(out, values):  # a constant derivative fills its row
                row[...] = value
        gradient, start = out[1:1 + self.n].T.copy(), 1 + self.n
        for part, J in blocks:
            gradient[:, part] += np.einsum("cmk,cm->ck", J, out[start:start + J.shape[1]].T)
            start += J.shape[1]
        return out[0], gradient

    @functools.cached_property
    def _value(self):
        return evaluator([self.expanded], list(self.variables) + list(self.parameters), rounding=False).function

    def _atoms_at(self, u: np.ndarray):
        """(a, [(slice of u, J, A2, A3)]) at the entries u."""
        values, blocks, slices = [], [], entry_slices(self.order_parameters)
        for op, atoms in self.atoms:
            part = slices[op.name]
            a, J, A2, A3 = atom_derivatives(atoms, op.value(u[part]))
            values.append(a)
            blocks.append((part, J, A2, A3))
        return (np.concatenate(values) if values else np.zeros(0)), blocks

    def _derivatives(self, u: np.ndarray, parameters: tuple):
        """(value, 𝓛_p, 𝓛_pq, 𝓛_pqr over v, atom blocks) at u."""
        function, second, third = self._generated
        a, blocks = self._atoms_at(np.asarray(u, dtype=float))
        with np.errstate(all="ignore"):
            out = finite_outputs(function(*u, *a, *parameters), f"{self.what} or its derivatives")
        size = self.n + self.m
        first = out[1:1 + size]
        H = _symmetric(second, out[1 + size:1 + size + len(second)], size, 2)
        T = _symmetric(third, out[1 + size + len(second):], size, 3)
        return float(out[0]), first, H, T, blocks

    @functools.cached_property
    def _second(self):
        """The nonzero second derivatives over v (i ≤ j) and their positions; None for the function where there
        are none."""
        positions, expressions = _nonzero(self.expanded, self.variables, third=False)[0]
        if not expressions:
            return np.zeros((0, 2), dtype=int), None
        return np.array(positions), evaluator(expressions, list(self.variables) + list(self.parameters),
                                              rounding=False).function

    def _atom_values(self, u: np.ndarray):
        """(a, [(slice of u, J, W, MatrixAtoms)]) at the entries u; LinAlgError outside the domain. The last entries'
        are kept (the solver asks for the gradient and the Hessian at one point)."""
        last = self.__dict__.get("_last_atoms")
        if last is not None and np.array_equal(last[0], u):
            return last[1]
        values, blocks, slices = [], [], entry_slices(self.order_parameters)
        for op, atoms in self.atoms:
            part = slices[op.name]
            a, J, W = atoms.evaluate(op.value(u[part]))
            values.append(a)
            blocks.append((part, J, W, atoms))
        result = (np.concatenate(values) if values else np.zeros(0)), blocks
        self.__dict__["_last_atoms"] = (np.array(u, dtype=float), result)
        return result

    def _first_at(self, u: np.ndarray, a: np.ndarray, parameters: tuple, what: str) -> np.ndarray:
        with np.errstate(all="ignore"):
            return finite_outputs(self._first(*u, *a, *parameters), what)

    def value_and_gradient(self, u: np.ndarray, parameters: tuple = ()) -> tuple[float, np.ndarray]:
        """The term and ∂/∂u at the entries u (𝓛_u + Jᵀ𝓛_a)."""
        a, blocks = self._atom_values(u)
        out = self._first_at(u, a, parameters, f"{self.what} or its gradient")
        g = out[1:]
        gradient, start = g[:self.n].copy(), self.n
        for part, J, _, atoms in blocks:
            gradient[part] += J.T @ g[start:start + atoms.count]
            start += atoms.count
        return float(out[0]), gradient

    def hessian(self, u: np.ndarray, parameters: tuple = ()) -> np.ndarray:
        """∂²/∂u∂u' at the entries u: 𝓛_uu + 𝓛_ua J + Jᵀ𝓛_au + Jᵀ𝓛_aa J and the atoms' curvature weighted by 𝓛_a."""
        a, blocks = self._atom_values(u)
        n, m = self.n, self.m
        positions, generated = self._second
        H = np.zeros((n + m, n + m))
        if generated is not None:
            with np.errstate(all="ignore"):
                values = finite_outputs(generated(*u, *a, *parameters), f"{self.what}'s Hessian")
            H[positions[:, 0], positions[:, 1]] = values
            H[positions[:, 1], positions[:, 0]] = values
        if not blocks:
            return H
        J = np.zeros((m, n))
        start = 0
        for part, block, _, atoms in blocks:
            J[start:start + atoms.count, part] = block
            start += atoms.count
        cross = H[:n, n:] @ J
        out = H[:n, :n] + cross + cross.T + J.T @ H[n:, n:] @ J
        coefficients = self._first_at(u, a, parameters, f"{self.what}'s gradient")[n + 1:]
        start = 0
        for part, _, W, atoms in blocks:
            out[part, part] += atoms.curvature(W, coefficients[start:start + atoms.count])
            start += atoms.count
        return 0.5 * (out + out.T)

    def third(self, u: np.ndarray, parameters: tuple = ()) -> np.ndarray:
        """∂³/∂u_i∂u_j∂u_k at the entries u (n, n, n): the module docstring's chain rule, exact."""
        _, first, second, third, blocks = self._derivatives(u, parameters)
        n = self.n
        Dv = np.zeros((n + self.m, n))  # ∂v/∂u
        Dv[:n] = np.eye(n)
        D2 = np.zeros((self.m, n, n))  # ∂²a/∂u∂u' (the entries' own rows are zero)
        out = np.zeros((n, n, n))
        start = 0
        for part, J, A2, A3 in blocks:
            rows = slice(start, start + J.shape[0])
            Dv[n + start:n + start + J.shape[0], part] = J
            D2[rows, part, part] = A2
            out[part, part, part] += np.einsum("c,cijk->ijk", first[n + start:n + start + J.shape[0]], A3)
            start += J.shape[0]
        # 𝓛_pqr v_p,i v_q,j v_r,k
        T = np.tensordot(third, Dv, axes=([0], [0]))  # (q, r, i)
        T = np.tensordot(T, Dv, axes=([0], [0]))  # (r, i, j)
        out += np.tensordot(T, Dv, axes=([0], [0]))  # (i, j, k)
        if self.m:
            mixed = second[n:] @ Dv  # 𝓛_pq v_q,k for the atoms' p: (m, n)
            X = np.einsum("pij,pk->ijk", D2, mixed)
            out += X + X.transpose(0, 2, 1) + X.transpose(2, 0, 1)
        return out

    def values(self, columns: list, parameters: tuple = ()) -> np.ndarray:
        """The term on arrays of entries (broadcast together: an open mesh gives the grid), for a term without
        matrix atoms (scalar order parameters); +inf where float64 overflows, ValueError where it is NaN at finite
        positive entries (outside the term's domain)."""
        if self.m:
            raise ValueError("values on a grid are for scalar order parameters only (this term has matrix atoms)")
        with np.errstate(all="ignore"):
            out = np.asarray(self._value(*columns, *parameters)[0], dtype=float)
        shape = np.broadcast_shapes(*(np.shape(c) for c in columns)) if columns else ()
        out = np.broadcast_to(out, shape).copy() if out.shape != shape else out
        bad = np.isnan(out)
        if bad.any():
            finite = np.ones(shape, dtype=bool)
            for c in columns:
                finite &= np.isfinite(c) & (np.asarray(c) > 0)
            if (bad & finite).any():
                raise ValueError("the term is undefined (NaN) at finite positive entries: outside its domain")
            out[bad] = np.inf  # overflowed entries: the integrand is zero there
        return out
