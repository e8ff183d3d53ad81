"""In-context one-shot image classification: the task of the paper's figure 3 on any labelled images.

Spec: ``docs/papers/attention_paths.md`` §4.2. A sequence is [support image of class A + label
embedding 0, support image of class B + label embedding 1, query image + label embedding 2
("unknown")]; the target is y = 2·label(query) − 1 = ±1 with label(query) = 0 for class A.
Each image is resized to 32 × 32, cut into 8 × 8 patches (16 tokens per image, S = 48 tokens per
sequence), and each patch is layer-normalised (dimension N0 = 64). A token is its patch plus a
normalised sinusoidal positional encoding of the patch's place in the image plus a frozen random
label embedding. Classes are split so that test episodes use only classes never seen in training.

The paper used Omniglot; here `load_digits` gives scikit-learn's handwritten digits (shipped
with the package, no download) and `load_image_folder` any folder with one sub-folder per class.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.ndimage import zoom

from ....base import arguments
from ....base.arguments import Checked, checked
from ....base.arguments import integer, real

IMAGE_SIZE = 32
PATCH_SIZE = 8
LABEL_EMBEDDINGS = 3  # class A, class B, unknown
LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff")


@dataclass(frozen=True, eq=False)
class LabelledImages(Checked):
    """Grayscale ``images`` (n, H, W) in float64 with integer class ``labels`` (n,)."""

    images: np.ndarray = checked(arguments.array, ndim=3)
    labels: np.ndarray = checked(lambda name, value: np.asarray(value))

    def _check_fields(self) -> None:
        images, labels = self.images, self.labels
        if images.shape[1] < 2 or images.shape[2] < 2:
            raise ValueError(f"images must have shape (n, H, W) with H, W ≥ 2, got {images.shape}")
        if labels.shape != (images.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"labels must be integers of shape ({images.shape[0]},), got {labels.dtype} {labels.shape}")

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.labels)

    def subset(self, indices: Any) -> "LabelledImages":
        """The images at ``indices`` (and their labels)."""
        indices = np.asarray(indices, dtype=np.int64)
        return LabelledImages(self.images[indices], self.labels[indices])


def _check_data(data: Any) -> "LabelledImages":
    if not isinstance(data, LabelledImages):
        raise TypeError(f"data must be LabelledImages (load_digits, load_image_folder), got {type(data).__name__}")
    return data


def load_digits() -> LabelledImages:
    """scikit-learn's handwritten digits: 1,797 images of 8 × 8 pixels, classes 0–9."""
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    return LabelledImages(digits.images, digits.target.astype(np.int64))


def load_image_folder(path: str | Path) -> LabelledImages:
    """Images under ``path/<class name>/*.png`` (or another common format), converted to grayscale
    and resized to 32 × 32; classes are numbered in sorted order of their folder names.

    A file with an image suffix that is not a readable image (another kind of file, truncated or
    corrupt data) is a ValueError naming that file."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a folder path (str or pathlib.Path), got {path!r}")
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"path must be a folder with one sub-folder per class, got {str(root)!r}")
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    images, labels = [], []
    for label, folder in enumerate(folders):
        for file in sorted(f for f in folder.iterdir() if f.suffix.lower() in IMAGE_SUFFIXES):
            images.append(_read_image(file))
            labels.append(label)
    if len({*labels}) < 4:
        raise ValueError(f"path must hold at least 4 classes with images (2 for training, 2 for testing), found {len({*labels})}")
    return LabelledImages(np.stack(images), np.asarray(labels, dtype=np.int64))


def _read_image(file: Path) -> np.ndarray:
    """One image file as a grayscale 32 × 32 float64 array; ValueError naming the file if it is none."""
    from PIL import Image

    try:
        with Image.open(file) as image:
            gray = image.convert("L").resize((IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR)
            return np.asarray(gray, dtype=np.float64)
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as error:
        # PIL signals unreadable, truncated and corrupt files by these (UnidentifiedImageError is an OSError)
        raise ValueError(f"path holds {str(file)!r}, which is not a readable image ({type(error).__name__}: "
                         f"{error}); remove or replace it") from None


def image_patches(images: Any) -> np.ndarray:
    """(n, 16, 64): images resized to 32 × 32 (bilinear), cut into 8 × 8 patches in row-major order,
    each patch layer-normalised to zero mean and unit variance (ε = 1e-5 as in torch)."""
    images = arguments.array("images", images, ndim=3)
    n, h, w = images.shape
    if (h, w) != (IMAGE_SIZE, IMAGE_SIZE):
        images = zoom(images, (1, IMAGE_SIZE / h, IMAGE_SIZE / w), order=1, grid_mode=True, mode="nearest")
    side = IMAGE_SIZE // PATCH_SIZE
    patches = images.reshape(n, side, PATCH_SIZE, side, PATCH_SIZE).transpose(0, 1, 3, 2, 4).reshape(n, side * side, -1)
    centred = patches - patches.mean(axis=-1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + LAYER_NORM_EPS)


def sinusoidal_positions(count: int, dim: int) -> np.ndarray:
    """(count, dim) sinusoidal positional encodings (Vaswani et al. 2017), each row of unit norm."""
    count, dim = integer("count", count, 1), integer("dim", dim, 2)
    if dim % 2:
        raise ValueError(f"dim must be even (sine and cosine pairs), got {dim}")
    # per position: the angles (dim/2), their sines and cosines (dim), the encoding and its normalised copy (2·dim)
    arguments.fits_in_memory("dim", 8 * 4 * dim, "one position's encoding (float64, with temporaries)", value=dim)
    arguments.fits_in_memory("count", 8 * 4 * count * dim, f"{count} encodings of dim = {dim} (float64, with "
                             "temporaries)", value=count)
    frequencies = 1.0 / 10_000 ** (np.arange(0, dim, 2) / dim)
    angles = np.arange(count)[:, None] * frequencies[None, :]
    encoding = np.empty((count, dim))
    encoding[:, 0::2], encoding[:, 1::2] = np.sin(angles), np.cos(angles)
    return encoding / np.linalg.norm(encoding, axis=1, keepdims=True)


def label_embeddings(seed: int, dim: int = PATCH_SIZE**2) -> np.ndarray:
    """(3, dim) frozen random label embeddings (A, B, unknown), N(0, 1) entries like nn.Embedding."""
    return np.random.default_rng(integer("seed", seed, 0)).standard_normal((LABEL_EMBEDDINGS, dim))


#: Digit classes that are rotations of each other (a 6 turned by 180° is a 9): with rotated training
#: classes they must sit on the same side of the class split, or a test class would be seen in training.
DIGIT_ROTATION_PAIRS = ((6, 9),)


def split_classes(data: LabelledImages, test_fraction: float, seed: int, *,
                  together: Any = ()) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint (train classes, test classes), at least 2 of each, drawn by ``seed``: about
    ``test_fraction`` of the classes go to test. Each group in ``together`` goes to one side whole."""
    data = _check_data(data)
    fraction = real("test_fraction", test_fraction, low=0.0, high=1.0, open_low=True)
    grouped = {int(c) for group in together for c in group}
    units = [tuple(int(c) for c in group) for group in together] + [(int(c),) for c in data.classes if int(c) not in grouped]
    order = np.random.default_rng(integer("seed", seed, 0)).permutation(len(units))
    wanted = max(2, int(round(fraction * data.classes.size)))
    test: list[int] = []
    for i in order:
        if len(test) >= wanted:
            break
        test.extend(units[i])
    train = sorted(set(map(int, data.classes)) - set(test))
    if len(train) < 2:
        raise ValueError(f"test_fraction={test_fraction} leaves fewer than 2 training classes out of {data.classes.size}")
    return np.array(train), np.array(sorted(test))


def rotated_classes(data: LabelledImages, classes: Any) -> LabelledImages:
    """The images of ``classes`` turned by 0°, 90°, 180° and 270°, each turn a class of its own (label
    c + k·(max label + 1) for k quarter turns): the class augmentation of the usual Omniglot episodes
    (torchmeta's ``Rotation([90, 180, 270])``), which multiplies the training classes by four."""
    data = _check_data(data)
    keep = np.isin(data.labels, _class_labels(classes))
    images, labels = data.images[keep], data.labels[keep]
    if images.shape[1] != images.shape[2]:
        raise ValueError(f"images must be square to be rotated into new classes, got {images.shape[1:]}")
    stride = int(data.labels.max()) + 1
    return LabelledImages(np.concatenate([np.rot90(images, k, axes=(1, 2)) for k in range(4)]),
                          np.concatenate([labels + k * stride for k in range(4)]))


def split_images(data: LabelledImages, classes: Any, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (kept, held out) of the images of ``classes``: ``fraction`` of each class held out (at
    least 2 per class on each side), drawn by ``seed``. Used to keep validation episodes on images that
    neither training nor the theory's episodes use."""
    data = _check_data(data)
    fraction = real("fraction", fraction, low=0.0, high=1.0, open_low=True)
    rng = np.random.default_rng(integer("seed", seed, 0))
    kept, held = [], []
    for c in np.unique(_class_labels(classes)):
        members = rng.permutation(np.flatnonzero(data.labels == c))
        count = int(round(fraction * members.size))
        if count < 2 or members.size - count < 2:
            raise ValueError(f"fraction={fraction} leaves fewer than 2 images on one side for class {c} ({members.size} images)")
        held.append(members[:count])
        kept.append(members[count:])
    return np.sort(np.concatenate(kept)), np.sort(np.concatenate(held))


def _class_labels(classes: Any) -> np.ndarray:
    """``classes`` as a 1-D array of integer class labels."""
    if isinstance(classes, (str, bytes)) or classes is None:
        raise TypeError(f"classes must be a sequence of integer class labels, got {classes!r}")
    labels = np.asarray(classes)
    if labels.ndim != 1 or labels.size == 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"classes must be a non-empty sequence of integer class labels, got {classes!r}"[:300])
    return labels


@dataclass(frozen=True, eq=False)
class Episodes:
    """P one-shot sequences: ``tokens`` (P, 48, 64), targets ``y`` (P,) = ±1, and the classes
    (P, 2) and image indices (P, 3) = (support A, support B, query) they were built from."""

    tokens: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    indices: np.ndarray


def draw_episodes(data: LabelledImages, classes: Any, count: int, seed: int, *, label_seed: int = 0,
                  balanced: bool = False) -> Episodes:
    """``count`` episodes from the given ``classes``: two distinct classes A, B, one support image of
    each, and a query image of A or B (each with probability 1/2) distinct from the support images.
    ``balanced``: exactly ⌊count/2⌋ queries of class B, in random order (the paper's P = 600 is 300 per class)."""
    data = _check_data(data)
    count = integer("count", count, 1)
    tokens_each = 3 * (IMAGE_SIZE // PATCH_SIZE) ** 2 * PATCH_SIZE**2
    arguments.fits_in_memory("count", 8 * 3 * count * tokens_each, f"the tokens of {count:,} episodes (3 images of "
                             f"{tokens_each // 3:,} float64 each, with the patches and their sum)", value=count)
    label_seed = integer("label_seed", label_seed, 0)
    balanced = arguments.flag("balanced", balanced)
    classes = np.unique(_class_labels(classes))
    members = {int(c): np.flatnonzero(data.labels == c) for c in classes}
    too_small = [c for c, idx in members.items() if idx.size < 2]
    if classes.size < 2 or too_small:
        raise ValueError(f"classes must name at least 2 classes with ≥ 2 images each; too small or absent: {too_small or list(classes)}")
    rng = np.random.default_rng(integer("seed", seed, 0))
    pairs = np.stack([rng.choice(classes, size=2, replace=False) for _ in range(count)])
    query_label = rng.permutation(np.arange(count) < count // 2).astype(np.int64) if balanced else rng.integers(0, 2, size=count)
    indices = np.empty((count, 3), dtype=np.int64)
    for p, ((a, b), q) in enumerate(zip(pairs, query_label)):
        support_a, query_a = rng.choice(members[int(a)], size=2, replace=False)
        support_b, query_b = rng.choice(members[int(b)], size=2, replace=False)
        indices[p] = (support_a, support_b, query_b if q else query_a)
    used, where = np.unique(indices, return_inverse=True)  # each image used is resized and patched once
    patches = image_patches(data.images[used])[where.reshape(indices.shape)]  # (P, 3, 16, 64)
    position = sinusoidal_positions(IMAGE_SIZE // PATCH_SIZE * (IMAGE_SIZE // PATCH_SIZE), PATCH_SIZE**2)
    labels = label_embeddings(label_seed)
    per_image = patches + position
    tokens = (per_image + labels[None, :, None, :]).reshape(count, -1, PATCH_SIZE**2)
    return Episodes(tokens, 2.0 * query_label - 1.0, pairs, indices)
