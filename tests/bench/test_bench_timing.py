"""The timer's control flow (rotation, warm-up, repetition count) on the host clock."""
import pytest

from tilecraft.bench.timing import Timer, TimingResult, bench


def test_rotation_visits_every_arg_set_in_order():
    seen = []
    res = bench(lambda x: seen.append(x), [0, 1, 2], device="cpu", reps=9, warmup_ms=0)
    assert res.n == 9
    assert res.method == "host-clock"
    assert res.n_arg_sets == 3
    # Warm-up calls every set at least once, and consecutive calls never repeat a set.
    assert set(seen) == {0, 1, 2}
    assert all(a != b for a, b in zip(seen, seen[1:]))
    assert seen[-9:] == [seen[-9 + i] for i in range(9)]
    assert len(seen) == res.warmup_calls + 9


def test_arg_sets_tuples_are_unpacked():
    calls = []
    bench(lambda a, b: calls.append(a + b), [(1, 2), (3, 4)], device="cpu", reps=2, warmup_ms=0)
    assert set(calls) == {3, 7}


def test_no_arg_callable_and_rep_budget_clamps():
    n = [0]

    def f():
        n[0] += 1

    res = Timer(device="cpu", rep_ms=0.0, min_reps=7, max_reps=100, warmup_ms=0)(f)
    assert res.n == 7  # rep_ms=0 asks for nothing; min_reps wins
    res = Timer(device="cpu", rep_ms=1e9, min_reps=1, max_reps=13, warmup_ms=0)(f)
    assert res.n == 13  # a huge budget is capped


def test_empty_arg_sets_rejected():
    with pytest.raises(ValueError):
        bench(lambda: None, [], device="cpu")


def test_timing_result_from_samples():
    r = TimingResult.from_samples([1.0, 2.0, 3.0, 4.0, 5.0], n_arg_sets=4)
    assert r.median_ms == 3.0 and r.min_ms == 1.0 and r.max_ms == 5.0
    assert r.p10_ms == pytest.approx(1.4) and r.p90_ms == pytest.approx(4.6)
    assert r.iqr_ms == 2.0 and r.n == 5
    d = r.to_dict()
    assert d["unit"] == "ms" and d["median"] == 3.0 and "samples_ms" not in d
    assert r.to_dict(include_samples=True)["samples_ms"] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_in_turn_calls_every_timer_once_per_round_in_alternating_order() -> None:
    from tilecraft.bench.timing import in_turn

    calls: list[str] = []

    def timer(name: str, value: float):
        def call() -> float:
            calls.append(name)
            return value + len(calls)
        return call

    times = in_turn({"a": timer("a", 10.0), "b": timer("b", 20.0)}, 3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert times == {"a": [11.0, 14.0, 15.0], "b": [22.0, 23.0, 26.0]}
    assert in_turn({"a": timer("a", 0.0)}, 0) == {"a": []}


def test_against_compares_medians_with_the_base() -> None:
    from tilecraft.bench.timing import against

    stats = against({"base": [2.0, 4.0, 3.0], "fast": [1.0, 1.5, 2.0]}, "base")
    assert stats["base"] == (3.0, 1.0, 2.0 / 3.0)
    assert stats["fast"] == (1.5, 2.0, 1.0 / 1.5)


def test_calls_in_turn_times_each_call_on_the_arg_sets_and_compares() -> None:
    from types import SimpleNamespace

    from tilecraft.bench.timing import calls_in_turn

    seen: list[tuple] = []

    def timer(fn, arg_sets):
        seen.append((fn(), arg_sets))
        return SimpleNamespace(median_ms={"slow": 4.0, "fast": 1.0}[fn()])

    stats = calls_in_turn(timer, {"slow": lambda: "slow", "fast": lambda: "fast"}, ["ops"], 2, "slow")
    assert seen == [("slow", ["ops"]), ("fast", ["ops"]), ("fast", ["ops"]), ("slow", ["ops"])]
    assert stats == {"slow": (4.0, 1.0, 0.0), "fast": (1.0, 4.0, 0.0)}
