"""Corpus cache: deterministic, reused, and rebuilt when corrupt or partial."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.engine


def test_cache_is_reused(corpus_dir):
    from engine import corpus

    assert corpus.ensure(corpus_dir) is False
    data = corpus.load(corpus_dir)
    assert data.images.shape[1:] == (corpus.IMAGE_SIZE, corpus.IMAGE_SIZE, 3)
    assert data.actions.shape[1:] == (corpus.CHUNK, corpus.MOTORS)
    assert set(np.unique(data.dataset)) == {0, 1}
    ev = data.eval_draw(0)
    assert len(ev) == 256 and np.array_equal(ev, data.eval_draw(0))
    assert not np.array_equal(ev, data.eval_draw(1))
    assert set(data.split[ev]) == {1} and set(data.split[data.train_slice(0)]) == {0}
    assert not set(data.episode[ev]) & set(data.episode[data.train_index])


def test_datasets_differ_visibly(corpus_dir):
    from engine import corpus

    data = corpus.load(corpus_dir)
    demos = data.images[data.dataset == 0][:500].reshape(-1, 3).mean(0)
    rig = data.images[data.dataset == 1][:500].reshape(-1, 3).mean(0)
    assert np.abs(demos - rig).max() > 40  # mean colour differs by > 40/255


def test_corrupt_and_partial_cache_is_detected_and_rebuilt(tmp_path, corpus_dir):
    from engine import corpus

    root = tmp_path / "corpus-v1"
    shutil.copytree(corpus_dir, root)
    with open(root / "actions.npy", "r+b") as f:  # flip one byte in the payload
        f.seek(-7, 2)
        byte = f.read(1)
        f.seek(-7, 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert corpus.ensure(root) is True
    assert corpus.ensure(root) is False
    fresh, ref = corpus.load(root), corpus.load(corpus_dir)
    assert np.array_equal(fresh.actions, ref.actions) and np.array_equal(fresh.images, ref.images)
    (root / "images.npy").unlink()  # partial
    assert corpus._manifest_ok(root, 0) is False
    (root / "manifest.json").write_text("{trunc")
    assert corpus._manifest_ok(root, 0) is False
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
