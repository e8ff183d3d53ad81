"""The attention-path saddle point: the authors' own solver against ours, interleaved, on the authors' Markov inputs.

    python benchmarks/bench_authors_solver.py --authors-lib PATH [--repeats 5] [--json FILE]

Their solver is their code: ``LIB_convergent_summation_heads.py`` of tiberilor/attention-paths-interplay (commit
915ca41), the copy their all-paths Markov runs use. It is not part of this project; fetch it yourself:

    curl -L -o LIB_convergent_summation_heads.py https://raw.githubusercontent.com/tiberilor/\
attention-paths-interplay/915ca41/hidden_markov_chain_classification/4paths/data/all_paths/without_samples/\
LIB_convergent_summation_heads.py

Its md5 is checked (``AUTHORS_MD5``). It needs torch and einops (``pip install torch einops``); the plotting and
sampling modules it imports at the top (torchvision, matplotlib, jax, numpyro, arviz) are not used by the theory
and are replaced by empty stand-ins where they are not installed.

Their run, as their TRAIN script and LOOP_RUN settings do it: ``ConvergentSummationHeads`` with heads (2, 2),
widths N, unit variances, last-token readout, T = 0.01, the order parameters at the GP point, the path features
given as its ``attentioned_input`` (the authors' own, ``markov_4paths_authors.npz``), then Adam (lr 0.1) with a
ReduceLROnPlateau scheduler on the max gradient (patience 100,000), the energy's and the entropy's gradients by two
backward passes, stopping when max |∂(S/n)/∂U| < 1e-5 or after 50,000 steps; their script's bookkeeping
(histories every 500 steps, prints every 50) is left out. One torch thread, as ours uses one BLAS thread.

Ours: ``solve_paths(dict(C=C, y=y), heads=(2, 2), width=N, temperature=0.01, tolerance=1e-7)`` (the public call,
its input checks included) right after their loop, the same solve on an energy prepared once (``solve_energy``:
their loop takes its input as given), and the public call once more (what a call costs in a sequence of calls, its
arrays still in the caches; the first call after their loop finds them evicted). At the engine's tolerance of 1e-7
on max |∂(S/N)/∂e| their own gradient at our answer is below their 1e-5 (checked by their code at every turn; at
1e-5 it is not at N = 10, where U_a, which they eliminate in closed form, enters their gradient). The solvers take
turns, ``--repeats`` times, and the least CPU time of each is kept: the process's CPU time (all its threads), their
cost without the time other jobs of a shared machine take.

The arithmetic of one call (``arithmetic_floor``): the exact Hessians and factorisations the call makes, counted as
it runs, their flops, and the time of that work alone as bare numpy/scipy calls on the call's own matrices; the
call's time over it is what the rest of the call adds.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from record import code_that_runs, record_options, write_record  # noqa: E402

AUTHORS_MD5 = "0dc4236f9c56d9f9f02e94598d3b05bc"
STAND_INS = ("torchvision", "matplotlib", "mpl_toolkits", "jax", "numpyro", "arviz")
WIDTHS = (10, 100, 1000)
TEMPERATURE = 0.01
THEIR_TOLERANCE = 1e-5
OUR_TOLERANCE = 1e-7


class _Anything(types.ModuleType):
    """An imported name the theory never uses: any attribute is another stand-in, calling one fails loudly."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(f"{self.__name__}.{name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a stand-in: the benchmark runs only the authors' theory")


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STAND_INS and importlib.machinery.PathFinder.find_spec(name.split(".")[0]) is None:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Anything(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def load_authors(path: Path):
    """The authors' module from ``path``, after its md5 is checked."""
    if not path.is_file():
        raise SystemExit(f"--authors-lib: no file at {path}; fetch it as this script's docstring says")
    digest = hashlib.md5(path.read_bytes()).hexdigest()
    if digest != AUTHORS_MD5:
        raise SystemExit(f"--authors-lib: {path} has md5 {digest}, expected {AUTHORS_MD5} (commit 915ca41's copy "
                         "under hidden_markov_chain_classification/4paths/data/all_paths/without_samples/)")
    sys.meta_path.insert(0, _StandInFinder())
    spec = importlib.util.spec_from_file_location("authors_lib", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def their_model(lib, X: np.ndarray, width: float):
    import torch

    with contextlib.redirect_stdout(io.StringIO()):  # their constructor prints the architecture
        model = lib.ConvergentSummationHeads([2, 2], [width, width], 2, X.shape[1], [1.0, 1.0, 1.0, 1.0],
                                             attention_nonlinearity="softmax", temperature=TEMPERATURE,
                                             token_readout_style="last_token")
    model.set_order_parameters_gp()
    model.load_after_checkpoint(torch.as_tensor(X))
    return model


def their_gradient(model, labels) -> float:
    """max |∂(S/n)/∂U| over their order parameters, by their two backward passes (the energy's, the entropy's)."""
    import torch

    for p in model.parameters():
        p.grad = None
    energy, entropy = model.compute_loss_action(labels, return_energy_entropy=True)
    energy.backward(retain_graph=True)
    # a parameter the energy does not depend on (U_L) has no gradient: zeros, as their script does
    energy_gradients = [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    entropy.backward()
    for p, g in zip(model.parameters(), energy_gradients):
        p.grad = g if p.grad is None else p.grad + g
    return max(float(p.grad.abs().max()) for p in model.parameters())


def their_solve(lib, X, y, width, max_steps: int = 50_000):
    """Their training loop: (steps, seconds, final max |∂(S/n)/∂U|, U_1)."""
    import torch

    model = their_model(lib, X, width)
    labels = torch.as_tensor(y)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimiser, factor=0.1, patience=100_000, min_lr=0.001)
    start = time.process_time()
    for step in range(1, max_steps + 1):
        optimiser.zero_grad()
        residual = their_gradient(model, labels)
        if residual < THEIR_TOLERANCE:
            break
        optimiser.step()
        scheduler.step(residual)
    seconds = time.process_time() - start
    U1 = model.compute_symmetrized_order_parameter_largest().detach().numpy()
    return step, seconds, residual, U1


def their_gradient_at(lib, X, y, width, solution) -> float:
    """Their max |∂(S/n)/∂U| at our order parameters (their list is [U_L, …, U_1])."""
    import torch

    model = their_model(lib, X, width)
    with torch.no_grad():
        model.order_parameters[0].copy_(torch.as_tensor(solution.matrix("U2")))
        model.order_parameters[1].copy_(torch.as_tensor(solution.matrix("U1")))
    return their_gradient(model, torch.as_tensor(y))


def counted_call(call):
    """``call()`` once, counting the kernel-space energy's exact Hessians and its factorisations (the work that grows
    as P³: one at each new point, and the solution's reordered one that samples the gradient's round-off): (its
    result, Hessians, factorisations)."""
    from attnverify.numerics.kernel_energy import KernelEnergy

    counts = dict(hessian=0, factorise=0)
    hessian, factorise = KernelEnergy.hessian, KernelEnergy._factorise

    def counted_hessian(self, R):
        counts["hessian"] += 1
        return hessian(self, R)

    def counted_factorise(self, R, order=None):
        counts["factorise"] += 1
        return factorise(self, R, order)

    KernelEnergy.hessian, KernelEnergy._factorise = counted_hessian, counted_factorise
    try:
        result = call()
    finally:
        KernelEnergy.hessian, KernelEnergy._factorise = hessian, factorise
    return result, counts["hessian"], counts["factorise"]


def least_seconds(work, calls: int = 20, turns: int = 7) -> float:
    """The least CPU seconds of one ``work()`` over ``turns`` batches of ``calls`` (one BLAS thread)."""
    best = float("inf")
    for _ in range(turns):
        start = time.process_time()
        for _ in range(calls):
            work()
        best = min(best, (time.process_time() - start) / calls)
    return best


def arithmetic_floor(C: np.ndarray, y: np.ndarray, solution, hessians: int, factorisations: int) -> dict:
    """The floating-point work of one public call and its time at this machine's BLAS/LAPACK speed, nothing else.

    The call's P³-sized work, counted by `counted_call`, on the kernel space's m = 𝓗(𝓗+1)/2 symmetric kernels S_k:
    per exact Hessian the products A S_k (2mP³ flops) and the trace Gram matrix Σ (A S_k)∘(A S_l)ᵀ (2m²P²); per
    factorisation K = Σ w_k u_k S_k (2mP²), its Cholesky factor (P³/3), r by triangular solves (2P²),
    A = (K + T·I)⁻¹ from the factor (⅔P³) and the gradient ⟨S_k, A − r rᵀ⟩ (2mP²); once per call the check of C,
    the Cholesky factor of the (𝓗P × 𝓗P) Gram matrix ((𝓗P)³/3; shifted by its round-off allowance, as the check
    does). Each is timed as the bare numpy/scipy
    calls on the call's own matrices (at the solution), least of several turns; the floor is their counts times
    their times."""
    from scipy.linalg import cho_solve, cholesky

    from attnverify.base.backend import get_backend

    backend = get_backend("numpy")
    paths, P = C.shape[0], C.shape[2]
    rows, cols = np.triu_indices(paths)
    m = rows.size
    S = 0.5 * (C[rows, cols] + C[cols, rows])
    flat = S.reshape(m, P * P)
    U = solution.matrix("U1")
    weights = np.where(rows == cols, 1.0, 2.0) * U[rows, cols]
    G = (weights @ flat).reshape(P, P) + TEMPERATURE * np.eye(P)
    L = cholesky(G, lower=True)
    A = cho_solve((L, True), np.eye(P))
    gram = C.transpose(0, 2, 1, 3).reshape(paths * P, paths * P)
    gram = 0.5 * (gram + gram.T)
    gram[np.diag_indices(paths * P)] += 2e-10 * np.sum(np.clip(np.diag(gram), 0.0, None))  # the check's round-off

    def hessian():
        AS = A @ S
        return AS.reshape(m, -1) @ AS.transpose(0, 2, 1).reshape(m, -1).T

    def factorise():
        K = (weights @ flat).reshape(P, P)
        K[np.diag_indices(P)] += TEMPERATURE
        factor = cholesky(K, lower=True, overwrite_a=True, check_finite=False)
        r = cho_solve((factor, True), y, check_finite=False)
        inverse = backend.cholesky_inverse(factor[None])[0]
        return flat @ (inverse - np.outer(r, r)).ravel()

    def check():
        return cholesky(gram, lower=True, check_finite=False)

    flops = (hessians * (2 * m * P**3 + 2 * m * m * P * P)
             + factorisations * (4 * m * P * P + P**3 / 3 + 2 * P * P + 2 * P**3 / 3) + (paths * P) ** 3 / 3)
    seconds = (hessians * least_seconds(hessian) + factorisations * least_seconds(factorise)
               + least_seconds(check, calls=5))
    return dict(hessians=hessians, factorisations=factorisations, gigaflops=flops / 1e9, floor_ms=1e3 * seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors-lib", type=Path, required=True, help="their LIB_convergent_summation_heads.py")
    record_options(parser, "authors_solver", repeats=5, what="solver")
    args = parser.parse_args()

    import torch

    from attnverify.base import blas
    from attnverify.numerics.kernel_energy import energy_for
    from attnverify.saddle.solve import solve_energy
    from attnverify.theories.attention_paths.action import ActionConfig, solve_paths
    from attnverify.theories.attention_paths.theory_points import authors_markov_data

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    lib = load_authors(args.authors_lib)
    data = authors_markov_data()
    if data is None:
        raise SystemExit("the authors' Markov features (markov_4paths_authors.npz) are not installed")
    X, y = data[0], data[1]
    C = np.einsum("pia,qib->abpq", X, X)

    def ours(N):
        return solve_paths(dict(C=C, y=y), heads=(2, 2), width=N, temperature=TEMPERATURE, tolerance=OUR_TOLERANCE)

    def prepared(N):
        """The solve alone, on an energy prepared once (C checked once, as their loop takes its input as given)."""
        config = ActionConfig.build((2, 2), N, TEMPERATURE)
        values = config.action.parameter_values(config.parameters())
        energy = energy_for(C=C, y=y, temperature=TEMPERATURE)
        return lambda: solve_energy(config.action, energy, values, temperature=TEMPERATURE, tolerance=OUR_TOLERANCE)

    ours(WIDTHS[0])  # the process's first call derives and generates the action's derivatives, once
    rows = []
    print(f"Markov task, 4 paths, P = {len(y)}, T = {TEMPERATURE}; their code against solve_paths, "
          f"{args.repeats} turns each, least CPU time kept")
    print(f"{'N':>6} {'theirs s':>9} {'steps':>6} {'call ms':>8} {'ratio':>7} {'solve ms':>9} {'ratio':>7} "
          f"{'their |∇| at ours':>18} {'max|ΔU1|':>9}")
    for N in WIDTHS:
        solve_alone = prepared(N)
        theirs, calls, solves, again, gradients = [], [], [], [], []
        for _ in range(args.repeats):
            steps, seconds, residual, U1 = their_solve(lib, X, y, N)
            theirs.append(seconds)
            start = time.process_time()
            solution = ours(N)
            calls.append(time.process_time() - start)
            start = time.process_time()
            solve_alone()
            solves.append(time.process_time() - start)
            start = time.process_time()
            ours(N)
            again.append(time.process_time() - start)
            gradients.append(their_gradient_at(lib, X, y, N, solution))
        gap = float(np.max(np.abs(U1 - solution.matrix("U1"))))
        _, hessians, factorisations = counted_call(lambda: ours(N))
        with blas.threads(1):
            floor = arithmetic_floor(C, y, solution, hessians, factorisations)
        row = dict(width=N, their_seconds=min(theirs), their_steps=steps, their_final_gradient=residual,
                   call_ms=1e3 * min(calls), call_ratio=min(theirs) / min(calls),
                   call_again_ms=1e3 * min(again), call_again_ratio=min(theirs) / min(again),
                   solve_ms=1e3 * min(solves), solve_ratio=min(theirs) / min(solves),
                   their_gradient_at_ours=max(gradients), max_U1_difference=gap,
                   our_newton_iterations=solution.iterations, **floor,
                   call_over_floor=1e3 * min(calls) / floor["floor_ms"],
                   floor_ratio=1e3 * min(theirs) / floor["floor_ms"])
        rows.append(row)
        print(f"{N:>6} {row['their_seconds']:>9.3g} {steps:>6} {row['call_ms']:>8.3g} {row['call_ratio']:>6.0f}x "
              f"{row['solve_ms']:>9.3g} {row['solve_ratio']:>6.0f}x {row['their_gradient_at_ours']:>18.2e} "
              f"{gap:>9.1e}", flush=True)
        print(f"{'':>6} arithmetic of one call: {hessians} exact Hessians, {factorisations} factorisations, "
              f"{floor['gigaflops']:.3f} Gflop, {floor['floor_ms']:.3g} ms at this BLAS's speed; the call takes "
              f"{row['call_over_floor']:.2g}× that; their time is {row['floor_ratio']:,.0f}× it", flush=True)
    write_record("authors_solver", rows, path=args.json, timed=code_that_runs(lambda: ours(WIDTHS[1])),
                 columns=[("width", "N", "{:d}"), ("their_seconds", "their solver, CPU s", "{:.3g}"),
                          ("their_steps", "their Adam steps", "{:,d}"),
                          ("call_ms", "solve_paths, checks included, CPU ms", "{:.3g}"),
                          ("call_ratio", "ratio", "{:,.0f}×"),
                          ("call_again_ms", "the same call again, CPU ms", "{:.3g}"),
                          ("call_again_ratio", "ratio", "{:,.0f}×"),
                          ("solve_ms", "the solve on prepared data, CPU ms", "{:.3g}"),
                          ("solve_ratio", "ratio", "{:,.0f}×"),
                          ("their_gradient_at_ours", "their max abs gradient at our U", "{:.1e}"),
                          ("our_newton_iterations", "our Newton iterations", "{:d}"),
                          ("max_U1_difference", "max abs difference of U₁", "{:.1e}"),
                          ("hessians", "exact Hessians per call", "{:d}"),
                          ("gigaflops", "the call's arithmetic, Gflop", "{:.3f}"),
                          ("floor_ms", "its time at this BLAS's speed, ms", "{:.3g}"),
                          ("call_over_floor", "call / arithmetic", "{:.2g}×"),
                          ("floor_ratio", "their time / arithmetic", "{:,.0f}×")],
                 settings=dict(repeats=args.repeats, our_tolerance=OUR_TOLERANCE, their_tolerance=THEIR_TOLERANCE,
                               temperature=TEMPERATURE, authors_md5=AUTHORS_MD5, torch=torch.__version__,
                               torch_threads=torch.get_num_threads()))

if __name__ == "__main__":
    main()
