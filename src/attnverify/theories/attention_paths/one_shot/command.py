"""``attnverify train-one-shot``: the attention-paths theory's own command, its options and its run. The command line
lists it (`attnverify.cli.THEORY_COMMANDS`) and hands it the arguments after its name, so that ``attnverify --help``
imports no theory; this module is imported only to run it (or to say its options)."""

from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    """The command's options."""
    made = argparse.ArgumentParser(
        prog="attnverify train-one-shot",
        description="Train the figure-3 attention networks of the attention-paths theory by gradient descent and "
                    "cache them (needs the [train] extra: PyTorch and tqdm).")
    made.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], metavar="SEED",
                      help="training seeds (default 0 1 2 3 4); seeds already in the file are kept")
    target = made.add_mutually_exclusive_group()
    target.add_argument("--out", metavar="FILE", default="one_shot_digits.npz",
                        help="the .npz to write (default: one_shot_digits.npz in the current directory)")
    target.add_argument("--update-package-data", action="store_true",
                        help="write the networks the claims and the report read, inside the installed package")
    return made


def main(argv: list[str]) -> int:
    """Run the command on ``argv`` (the arguments after its name); the exit status (2 for a usage error)."""
    options = parser()
    try:
        args = options.parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else 0
    if any(seed < 0 for seed in args.seeds):
        print(f"attnverify: error: --seeds must be integers ≥ 0, got {args.seeds}", file=sys.stderr)
        return 2
    try:  # the [train] extra: checked before any work
        import torch  # noqa: F401
        import tqdm  # noqa: F401

        from .training import train_and_cache
    except ImportError:
        print("attnverify: error: train-one-shot needs PyTorch and tqdm: pip install -e '.[train]'", file=sys.stderr)
        return 2
    from .analysis import CACHE

    train_and_cache(CACHE if args.update_package_data else args.out, args.seeds,
                    progress=lambda message: print(message, file=sys.stderr))
    return 0
