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
ReduceLROnPlateau scheduler on the max gradient (patience 100,000), the energy's and the entropy's gradients by two backward passes,
stopping when max |∂(S/n)/∂U| < 1e-5 or after 50,000 steps; their script's bookkeeping (histories every 500
steps, prints every 50) is left out. One torch thread, as ours uses one BLAS thread.

Ours: ``solve_paths(dict(C=C, y=y), heads=(2, 2), width=N, temperature=0.01, tolerance=1e-7)`` (the public call,
its input checks included), and the same solve on an energy prepared once (``solve_energy``: their loop takes its
input as given). At the engine's tolerance of 1e-7 on max |∂(S/N)/∂u| their own gradient at our answer is below
their 1e-5 (checked by their code at every turn; at 1e-5 it is not at N = 10, where U_a, which they eliminate in
closed form, enters their gradient). The solvers take turns, ``--repeats`` times, and the least CPU time of each is
kept: the process's CPU time (all its threads), their cost without the time other jobs of a shared machine take.
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
from record import code_that_runs, write_record  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors-lib", type=Path, required=True, help="their LIB_convergent_summation_heads.py")
    parser.add_argument("--repeats", type=int, default=5, help="turns each solver takes (default 5)")
    parser.add_argument("--json", type=Path, default=None, help="the record (default benchmarks/results/"
                        "authors_solver.json)")
    args = parser.parse_args()
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be ≥ 1, got {args.repeats}")

    import torch

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
        theirs, calls, solves, gradients = [], [], [], []
        for _ in range(args.repeats):
            steps, seconds, residual, U1 = their_solve(lib, X, y, N)
            theirs.append(seconds)
            start = time.process_time()
            solution = ours(N)
            calls.append(time.process_time() - start)
            start = time.process_time()
            solve_alone()
            solves.append(time.process_time() - start)
            gradients.append(their_gradient_at(lib, X, y, N, solution))
        gap = float(np.max(np.abs(U1 - solution.matrix("U1"))))
        row = dict(width=N, their_seconds=min(theirs), their_steps=steps, their_final_gradient=residual,
                   call_ms=1e3 * min(calls), call_ratio=min(theirs) / min(calls),
                   solve_ms=1e3 * min(solves), solve_ratio=min(theirs) / min(solves),
                   their_gradient_at_ours=max(gradients), max_U1_difference=gap,
                   our_newton_iterations=solution.iterations)
        rows.append(row)
        print(f"{N:>6} {row['their_seconds']:>9.3g} {steps:>6} {row['call_ms']:>8.3g} {row['call_ratio']:>6.0f}x "
              f"{row['solve_ms']:>9.3g} {row['solve_ratio']:>6.0f}x {row['their_gradient_at_ours']:>18.2e} "
              f"{gap:>9.1e}", flush=True)
    write_record("authors_solver", rows, path=args.json, timed=code_that_runs(lambda: ours(WIDTHS[1])),
                 columns=[("width", "N", "{:d}"), ("their_seconds", "their solver, CPU s", "{:.3g}"),
                          ("their_steps", "their Adam steps", "{:,d}"),
                          ("call_ms", "solve_paths, checks included, CPU ms", "{:.3g}"), ("call_ratio", "ratio", "{:,.0f}×"),
                          ("solve_ms", "the solve on prepared data, CPU ms", "{:.3g}"),
                          ("solve_ratio", "ratio", "{:,.0f}×"),
                          ("their_gradient_at_ours", "their max abs gradient at our U", "{:.1e}"),
                          ("our_newton_iterations", "our Newton iterations", "{:d}"),
                          ("max_U1_difference", "max abs difference of U₁", "{:.1e}")],
                 settings=dict(repeats=args.repeats, our_tolerance=OUR_TOLERANCE, their_tolerance=THEIR_TOLERANCE,
                               temperature=TEMPERATURE, authors_md5=AUTHORS_MD5, torch=torch.__version__,
                               torch_threads=torch.get_num_threads()))

if __name__ == "__main__":
    main()
