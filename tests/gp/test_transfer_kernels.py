"""The transfer kernels: definitions, positive semi-definiteness, gradients."""

import numpy as np
import pytest

from skbayes_search.gp import GaussianProcess
from skbayes_search.gp.transfer_kernels import (
    DatasetKernel,
    NeighbourKernel,
    SquaredExponential,
    mkl_kernel,
    sqe_kernel,
)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------
def _small_case():
    # current dataset (0, in the group), one neighbour (1, in the group), one
    # dataset outside the group (2); collinear points make the paper's
    # distance kernel indefinite
    x = np.array(
        [
            [0.0, 0.0],
            [0.5, 0.5],
            [1.0, 1.0],
            [0.2, 0.9],
            [0.0, 0.0],
            [0.5, 0.5],
            [1.0, 1.0],
            [0.7, 0.1],
            [0.3, 0.3],
            [0.9, 0.2],
        ]
    )
    dataset = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2], dtype=float)
    group = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0], dtype=float)
    return x, dataset, group, np.column_stack([x, dataset, group])


def test_mkl_kernel_equals_its_definition_and_is_psd():
    x, dataset, group, X = _small_case()
    w0, w1 = 0.3, 0.7
    lengths = np.array([0.4, 1.5])
    kernel = mkl_kernel(2, (w0, w1))
    K = kernel(np.log(lengths), X)
    n, B = len(X), np.sqrt(2.0)
    expected = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            d = np.sqrt(np.sum((x[i] - x[j]) ** 2))
            se = np.exp(-0.5 * np.sum(((x[i] - x[j]) / lengths) ** 2))
            a_i = np.sqrt(np.sum((x[i] - 0.5) ** 2)) / B
            a_j = np.sqrt(np.sum((x[j] - 0.5) ** 2)) / B
            nn = 1.0 - d / B + a_i * a_j
            same = dataset[i] == dataset[j]
            both = group[i] == 1 and group[j] == 1
            expected[i, j] = w0 * se * same + w1 * nn * both
    np.testing.assert_allclose(K, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-12
    np.testing.assert_allclose(kernel.diag(np.log(lengths), X), np.diag(K))

    # The group relation as the paper writes it (the distance kernel on pairs
    # involving a neighbour dataset) is indefinite on this very case: the
    # product of group flags is needed.
    literal = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            d = np.sqrt(np.sum((x[i] - x[j]) ** 2))
            se = np.exp(-0.5 * np.sum(((x[i] - x[j]) / lengths) ** 2))
            involves = dataset[i] == 1 or dataset[j] == 1
            literal[i, j] = (
                w0 * se * (dataset[i] == dataset[j]) + w1 * (1.0 - d / B) * involves
            )
    assert np.linalg.eigvalsh(literal).min() < -1e-3


def test_sqe_kernel_reads_hyperparameters_and_dataset_features():
    rng = np.random.default_rng(4)
    n, p, q = 9, 2, 3
    x, z = rng.uniform(size=(n, p)), rng.normal(size=(n, q))
    X = np.column_stack([x, z, rng.integers(0, 3, n), rng.integers(0, 2, n)])
    lengths = np.array([0.3, 0.8, 0.5, 2.0, 1.0])
    kernel = sqe_kernel(p, q)
    assert kernel.n_params == p + q
    K = kernel(np.log(lengths), X)
    xz = np.column_stack([x, z])
    d2 = (((xz[:, None, :] - xz[None, :, :]) / lengths) ** 2).sum(-1)
    np.testing.assert_allclose(K, np.exp(-0.5 * d2), rtol=1e-12)
    # the dataset index and group columns play no part
    X_other = X.copy()
    X_other[:, -2:] = rng.integers(0, 5, size=(n, 2))
    np.testing.assert_array_equal(kernel(np.log(lengths), X_other), K)
    # the same configuration correlates less on a dataset less alike
    a = np.r_[0.5, 0.5, 0.0, 0.0, 0.0, 0, 1]
    near, far = a.copy(), a.copy()
    near[2], far[2] = 0.2, 1.5
    k = kernel(np.log(lengths), a[None, :], np.vstack([near, far]))[0]
    assert 1.0 > k[0] > k[1] > 0.0
    # without features: the pooled kernel over the hyperparameters alone
    assert sqe_kernel(p).n_params == p


@pytest.mark.parametrize("seed", range(5))
def test_transfer_kernels_are_psd_on_random_inputs(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, 5))
    n = 60
    X = np.column_stack(
        [rng.uniform(size=(n, p)), rng.integers(0, 6, n), rng.integers(0, 2, n)]
    )
    for kernel in (mkl_kernel(p, (0.5, 0.5)), sqe_kernel(p), sqe_kernel(p, 1)):
        theta = rng.uniform(np.log(0.05), np.log(3.0), size=kernel.n_params)
        K = kernel(theta, X)
        assert np.linalg.eigvalsh(K).min() > -1e-10
        # a GP factorises it without jitter
        gp = GaussianProcess(kernel).fit(
            X, rng.normal(size=n), np.r_[0.0, 0.0, np.log(1e-4), theta]
        )
        assert gp.jitter_ == 0.0
    # the neighbour kernel alone: one minus the normalised Euclidean
    # distance, plus the rank-one term that makes it PSD everywhere
    nk = NeighbourKernel(range(p))
    Kn = nk(np.empty(0), X)
    assert np.linalg.eigvalsh(Kn).min() > -1e-10
    x = X[:, :p]
    d = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    a = np.sqrt(((x - 0.5) ** 2).sum(1) / p)
    np.testing.assert_allclose(Kn, 1.0 - d / np.sqrt(p) + np.outer(a, a), atol=1e-12)
    # the term is at most 1/4 on the unit cube (two corners)
    assert np.outer(a, a).max() <= 0.25 + 1e-12
    np.testing.assert_array_equal(Kn, Kn.T)
    np.testing.assert_array_equal(nk.diag(np.empty(0), X), np.diag(Kn))
    np.testing.assert_allclose(nk(np.empty(0), X, X[:7]), Kn[:, :7], atol=1e-12)


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 10])
def test_neighbour_kernel_is_psd_where_the_paper_s_form_is_not(p):
    # the cube's corners with its centre and a smaller cube inside: the
    # paper's 1 - d / B is indefinite on them from p = 8 on
    corners = np.array(np.meshgrid(*[[0.0, 1.0]] * p)).reshape(p, -1).T
    centre = np.full((1, p), 0.5)
    X = np.vstack([corners, centre, 0.5 * corners + 0.25])
    K = NeighbourKernel(range(p))(np.empty(0), X)
    assert K.min() >= -1e-12
    assert np.linalg.eigvalsh(K).min() > -1e-10
    d = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    literal = np.linalg.eigvalsh(1.0 - d / np.sqrt(p)).min()
    assert (literal < -1e-3) == (p >= 8)


def test_kernel_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    X = np.column_stack(
        [rng.uniform(size=(12, 3)), rng.integers(0, 3, 12), rng.integers(0, 2, 12)]
    )
    X2 = X[:5] + 0.01
    for kernel in (
        mkl_kernel(3),
        sqe_kernel(3),
        sqe_kernel(2, 1),
        SquaredExponential(),
    ):
        kernel.set_n_dims(X.shape[1])
        theta = rng.uniform(-1.5, 0.5, size=kernel.n_params)
        for pre in (kernel.precompute(X), kernel.precompute(X, X2)):
            g = kernel.gradient(theta, pre)
            h = 1e-6
            for k in range(theta.size):
                tp, tm = theta.copy(), theta.copy()
                tp[k] += h
                tm[k] -= h
                fd = (kernel.evaluate(tp, pre) - kernel.evaluate(tm, pre)) / (2 * h)
                np.testing.assert_allclose(g[k], fd, atol=1e-7)


def test_dataset_kernel_relations():
    X = np.array([[0.1, 0, 1], [0.2, 1, 1], [0.3, 1, 0]])
    same = DatasetKernel(1, "same", 0.5)(np.empty(0), X)
    np.testing.assert_array_equal(
        same, 0.5 * np.array([[1, 0, 0], [0, 1, 1], [0, 1, 1]])
    )
    both = DatasetKernel(2, "product", 2.0)(np.empty(0), X)
    np.testing.assert_array_equal(
        both, 2.0 * np.array([[1, 1, 0], [1, 1, 0], [0, 0, 0]])
    )
    with pytest.raises(ValueError, match="relation"):
        DatasetKernel(1, "either")
    with pytest.raises(ValueError, match="weight"):
        DatasetKernel(1, "same", -1.0)


def test_mkl_predictions_use_neighbours_only():
    """Non-neighbour datasets inform hyperparameters, not the current surface."""
    _, dataset, _, X = _small_case()
    keep = dataset > 0  # prior data only
    Xp = X[keep]
    kernel = mkl_kernel(2)
    theta = np.r_[0.0, 0.0, np.log(1e-3), np.log([0.3, 0.3])]
    y = np.linspace(-1.0, 1.0, keep.sum())
    y_other = y.copy()
    y_other[Xp[:, 2] == 2] += 5.0  # change the outside dataset only
    query = np.column_stack(
        [np.random.default_rng(0).uniform(size=(7, 2)), np.zeros(7), np.ones(7)]
    )
    m1, _ = GaussianProcess(kernel).fit(Xp, y, theta).predict(query)
    m2, _ = GaussianProcess(kernel).fit(Xp, y_other, theta).predict(query)
    np.testing.assert_allclose(m1, m2, atol=1e-10)
    y_nb = y.copy()
    y_nb[Xp[:, 2] == 1] += 1.0  # changing the neighbour moves the prediction
    m3, _ = GaussianProcess(kernel).fit(Xp, y_nb, theta).predict(query)
    assert np.abs(m3 - m1).max() > 1e-2
