"""One-shot episodes on labelled images: token layout, layer norm, labels, class split, loaders."""

import numpy as np
import pytest

from attnverify.theories.attention_paths.one_shot import task as one_shot
from seeds import seeded


@pytest.fixture(scope="module")
def digits():
    return one_shot.load_digits()


def test_digits_are_the_sklearn_set(digits):
    assert digits.images.shape == (1797, 8, 8) and set(digits.classes) == set(range(10))


def test_patches_are_layer_normalised_and_in_row_major_order():
    image = np.arange(32 * 32, dtype=float).reshape(1, 32, 32)
    patches = one_shot.image_patches(image)
    assert patches.shape == (1, 16, 64)
    np.testing.assert_allclose(patches.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(patches.var(axis=-1), 1.0, rtol=1e-6)  # ε = 1e-5 against variances ~10²
    # patch 1 is the second 8 × 8 block of the first block row: it starts at column 8
    raw = image[0, :8, 8:16].ravel()
    np.testing.assert_allclose(patches[0, 1], (raw - raw.mean()) / np.sqrt(raw.var() + 1e-5), rtol=1e-12)


def test_constant_patches_become_zero_not_nan():
    patches = one_shot.image_patches(np.zeros((2, 8, 8)))
    assert np.all(patches == 0.0)


def test_positions_are_unit_rows_and_distinct():
    pe = one_shot.sinusoidal_positions(16, 64)
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), 1.0, rtol=1e-14)
    assert np.linalg.matrix_rank(pe) == 16


def test_episodes_follow_the_paper_layout(digits):
    train, test = one_shot.split_classes(digits, 0.4, seed=seeded(0))
    assert set(train).isdisjoint(test) and len(test) == 4 and len(train) == 6
    episodes = one_shot.draw_episodes(digits, test, 200, seed=seeded(1))
    assert episodes.tokens.shape == (200, 48, 64) and set(np.unique(episodes.y)) == {-1.0, 1.0}
    labels = digits.labels[episodes.indices]
    assert np.all(np.isin(labels, test))
    assert np.all(labels[:, 0] != labels[:, 1])
    # y = +1 exactly when the query has the class of the second support image (label embedding 1)
    np.testing.assert_array_equal(episodes.y == 1.0, labels[:, 2] == labels[:, 1])
    assert np.all(episodes.indices[:, 2] != episodes.indices[:, 0]) and np.all(episodes.indices[:, 2] != episodes.indices[:, 1])
    # tokens = patch + position + label embedding, token block by token block
    patches = one_shot.image_patches(digits.images[episodes.indices[0]])
    expected = patches + one_shot.sinusoidal_positions(16, 64) + one_shot.label_embeddings(0)[:, None, :]
    np.testing.assert_allclose(episodes.tokens[0], expected.reshape(48, 64), rtol=1e-12)


def test_episodes_replay_from_their_seed(digits):
    first = one_shot.draw_episodes(digits, [0, 1, 2], 20, seed=seeded(5))
    second = one_shot.draw_episodes(digits, [0, 1, 2], 20, seed=seeded(5))
    np.testing.assert_array_equal(first.tokens, second.tokens)
    assert abs(first.y.mean()) < 1.0


def test_image_folder_loader(tmp_path):
    import matplotlib.image

    rng = np.random.default_rng(seeded(0))
    for name in ("alpha", "beta", "gamma", "delta"):
        (tmp_path / name).mkdir()
        for i in range(3):
            matplotlib.image.imsave(tmp_path / name / f"{i}.png", rng.uniform(size=(20, 20)), cmap="gray")
    data = one_shot.load_image_folder(tmp_path)
    assert data.images.shape == (12, 32, 32)
    np.testing.assert_array_equal(data.labels, np.repeat(np.arange(4), 3))
    episodes = one_shot.draw_episodes(data, [2, 3], 5, seed=seeded(0))
    assert episodes.tokens.shape == (5, 48, 64)


def test_bad_inputs_are_named(digits, tmp_path):
    with pytest.raises(ValueError, match="classes"):
        one_shot.draw_episodes(digits, [3], 5, seed=0)
    with pytest.raises(ValueError, match="test_fraction"):
        one_shot.split_classes(digits, 0.95, seed=0)
    with pytest.raises(ValueError, match="path"):
        one_shot.load_image_folder(tmp_path / "missing")
    with pytest.raises(ValueError, match="labels"):
        one_shot.LabelledImages(np.zeros((3, 8, 8)), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="dim"):
        one_shot.sinusoidal_positions(4, 7)


def test_balanced_episodes_have_equal_classes(digits):
    episodes = one_shot.draw_episodes(digits, [0, 1, 2], 600, seed=seeded(3), balanced=True)
    assert np.sum(episodes.y == 1) == 300 and np.sum(episodes.y == -1) == 300


def test_image_split_is_disjoint_and_covers_the_classes(digits):
    kept, held = one_shot.split_images(digits, [3, 5], 0.2, seed=seeded(1))
    assert not set(kept) & set(held)
    assert set(kept) | set(held) == set(np.flatnonzero(np.isin(digits.labels, [3, 5])))
    assert abs(held.size / (kept.size + held.size) - 0.2) < 0.01
    with pytest.raises(ValueError, match="fraction"):
        one_shot.split_images(digits, [3, 5], 0.001, seed=1)


@pytest.mark.parametrize("seed", range(6))
def test_grouped_classes_land_on_one_side_of_the_split(digits, seed):
    train, test = one_shot.split_classes(digits, 0.4, seed=seeded(seed), together=one_shot.DIGIT_ROTATION_PAIRS)
    assert not set(train) & set(test) and len(train) >= 2 and len(test) >= 2
    assert ({6, 9} <= set(train)) or ({6, 9} <= set(test))


def test_rotated_classes_are_quarter_turns_with_new_labels(digits):
    rotated = one_shot.rotated_classes(digits, [3])
    threes = digits.images[digits.labels == 3]
    assert set(rotated.classes) == {3, 13, 23, 33}
    np.testing.assert_array_equal(rotated.images[rotated.labels == 3], threes)
    np.testing.assert_array_equal(rotated.images[rotated.labels == 23], threes[:, ::-1, ::-1])


def _four_classes(root, rng):
    from PIL import Image

    for name in ("alpha", "beta", "gamma", "delta"):
        (root / name).mkdir()
        for i in range(2):
            Image.fromarray(rng.integers(0, 255, size=(12, 12), dtype=np.uint8)).save(root / name / f"{i}.png")


@pytest.mark.parametrize("kind", ["text_named_png", "truncated_png", "corrupt_png", "empty_jpg"])
def test_unreadable_image_files_are_named(tmp_path, kind):
    """A file with an image suffix that is not a readable image gives a ValueError naming the
    file, not a PIL traceback."""
    rng = np.random.default_rng(seeded(1))
    _four_classes(tmp_path, rng)
    good = (tmp_path / "beta" / "0.png").read_bytes()
    bad = {"text_named_png": ("notes.png", b"this is not an image"),
           "truncated_png": ("cut.png", good[: len(good) // 2]),
           "corrupt_png": ("noise.png", good[:40] + bytes(rng.integers(0, 255, size=len(good) - 40, dtype=np.uint8))),
           "empty_jpg": ("empty.jpg", b"")}[kind]
    (tmp_path / "gamma" / bad[0]).write_bytes(bad[1])
    with pytest.raises(ValueError, match=rf"path holds '.*gamma/{bad[0]}', which is not a readable image"):
        one_shot.load_image_folder(tmp_path)
    (tmp_path / "gamma" / bad[0]).unlink()
    assert one_shot.load_image_folder(str(tmp_path)).images.shape == (8, 32, 32)


def test_episode_arguments_are_named(digits):
    with pytest.raises(TypeError, match="data"):
        one_shot.draw_episodes(digits.images, [0, 1], 2, seed=0)
    with pytest.raises(ValueError, match="label_seed"):
        one_shot.draw_episodes(digits, [0, 1], 2, seed=0, label_seed=-1)
    with pytest.raises(TypeError, match="balanced"):
        one_shot.draw_episodes(digits, [0, 1], 2, seed=0, balanced="yes")
    with pytest.raises(TypeError, match="path"):
        one_shot.load_image_folder(None)
    with pytest.raises(ValueError, match="images"):
        one_shot.image_patches(np.full((1, 8, 8), np.nan))
