"""Statistics of timing samples, against hand-computed and numpy values."""
import math

import pytest

from tilecraft.bench.stats import Stats, percentile, summarize


def test_percentile_linear_interpolation():
    xs = [1.0, 2.0, 3.0, 4.0]
    assert percentile(xs, 0) == 1.0
    assert percentile(xs, 100) == 4.0
    assert percentile(xs, 50) == 2.5
    # rank 0.1 * 3 = 0.3 -> 1 + 0.3
    assert percentile(xs, 10) == pytest.approx(1.3)
    assert percentile(xs, 90) == pytest.approx(3.7)
    assert percentile([7.0], 37) == 7.0


def test_percentile_matches_numpy():
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(0)
    xs = sorted(rng.lognormal(size=101).tolist())
    for q in (0, 5, 10, 25, 50, 75, 90, 99, 100):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-12)


def test_percentile_rejects_bad_input():
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summarize_known_sample():
    s = summarize([5, 1, 4, 2, 3])  # unsorted on purpose
    assert s.n == 5
    assert s.median == 3
    assert s.mean == 3
    assert s.min == 1 and s.max == 5
    assert s.p25 == 2 and s.p75 == 4
    assert s.iqr == 2
    assert s.p10 == pytest.approx(1.4) and s.p90 == pytest.approx(4.6)
    assert s.stdev == pytest.approx(math.sqrt(2.5))  # sample (n-1) standard deviation
    assert s.rel_spread == pytest.approx((4.6 - 1.4) / 3)


def test_summarize_even_count_median_and_outlier_robustness():
    s = summarize([1.0, 1.0, 1.1, 1.0, 50.0, 1.0])
    assert s.median == 1.0  # one slow call does not move the median
    assert s.max == 50.0
    assert s.mean > 9


def test_summarize_single_and_errors():
    s = summarize([2.5])
    assert (s.median, s.min, s.max, s.stdev, s.iqr) == (2.5, 2.5, 2.5, 0.0, 0.0)
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        summarize([1.0, float("nan")])


def test_stats_dict_round_trip():
    s = summarize([3.0, 1.0, 2.0])
    d = s.to_dict()
    assert d["iqr"] == s.iqr
    assert Stats.from_dict(d) == s
