"""Timing a callable on the GPU: CUDA events around every call, warm-up, many repetitions, order statistics.

How a call is timed, and why:

* Each call gets its own pair of CUDA events, so the result is a distribution (median, p10/p90, IQR),
  not one average that hides a bimodal clock or a slow first pass.
* Work that must not be timed (an L2 flush, the rotation's bookkeeping) happens outside the event pair.
* A short kernel launched from Python can finish before the next launch arrives, and then the event
  pair measures the host's launch gap, not the kernel. When the warm-up shows the host is the slower
  side, each batch of timed calls is queued behind a GPU spin (``torch.cuda._sleep``) long enough for
  the whole batch to be enqueued first, so the events see back-to-back kernels.
* ``arg_sets`` rotates the calls among several copies of the inputs (see :mod:`tilecraft.bench.rotation`)
  so a bandwidth figure is not an L2 figure.
* ``calls_per_sample`` > 1 puts that many back-to-back calls between one event pair (a sample is their
  time over their count): the time per call of a stream of kernels with no event between them, as a
  decoding step's layers or a CUDA graph run them, where one kernel's start may overlap the previous
  one's end (launch processing, programmatic dependent launches). The GPU spin covers the host's
  enqueue time of every call of a batch, so host launch overhead stays out of it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from tilecraft.bench.stats import Stats, summarize

__all__ = ["TimingResult", "Timer", "bench", "in_turn", "against", "calls_in_turn", "Sustained", "sustain"]

# Calls enqueued behind one GPU spin: enough to amortise the spin, few enough that the launch queue
# (about a thousand entries) never fills while three entries (event, kernel, event) go in per call.
_BATCH = 64
_MAX_SLEEP_MS = 50.0
_sleep_cycles_per_ms: float | None = None


@dataclass(frozen=True)
class TimingResult:
    """Times of repeated calls of one callable, in milliseconds."""

    stats: Stats
    samples_ms: tuple[float, ...]
    method: str  # "cuda-events" or "host-clock"
    n_arg_sets: int = 1
    flush_l2: bool = False
    warmup_calls: int = 0
    gpu_sleep: bool = False
    calls_per_sample: int = 1

    @property
    def median_ms(self) -> float:
        """Median time per call."""
        return self.stats.median

    @property
    def min_ms(self) -> float:
        """Fastest call."""
        return self.stats.min

    @property
    def max_ms(self) -> float:
        """Slowest call."""
        return self.stats.max

    @property
    def p10_ms(self) -> float:
        """10th percentile."""
        return self.stats.p10

    @property
    def p90_ms(self) -> float:
        """90th percentile."""
        return self.stats.p90

    @property
    def iqr_ms(self) -> float:
        """Interquartile range."""
        return self.stats.iqr

    @property
    def n(self) -> int:
        """Number of timed calls."""
        return self.stats.n

    def to_dict(self, include_samples: bool = False) -> dict[str, Any]:
        """JSON-ready summary; the raw samples only on request (they can be thousands)."""
        d: dict[str, Any] = {
            "unit": "ms",
            **self.stats.to_dict(),
            "method": self.method,
            "n_arg_sets": self.n_arg_sets,
            "flush_l2": self.flush_l2,
            "warmup_calls": self.warmup_calls,
            "gpu_sleep": self.gpu_sleep,
            "calls_per_sample": self.calls_per_sample,
        }
        if include_samples:
            d["samples_ms"] = list(self.samples_ms)
        return d

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float], method: str = "given", **meta: Any) -> "TimingResult":
        """Build a result from known times (used for fake timings in tests and for re-loading JSON)."""
        return cls(stats=summarize(samples_ms), samples_ms=tuple(float(s) for s in samples_ms), method=method, **meta)


def _normalize_arg_sets(arg_sets: Sequence[Any] | None) -> list[tuple]:
    if arg_sets is None:
        return [()]
    sets = [a if isinstance(a, tuple) else tuple(a) if isinstance(a, list) else (a,) for a in arg_sets]
    if not sets:
        raise ValueError("arg_sets is empty: give at least one set of arguments (or None for a no-arg callable)")
    return sets


@dataclass
class Timer:
    """Configuration of a timing run; call it with ``(fn, arg_sets)``.

    ``fn(*arg_sets[i % len(arg_sets)])`` is the i-th call. Warm-up calls every arg set at least once (so
    compilation, autotuning and allocator growth are out of the way) and then runs for ``warmup_ms``.
    The number of timed calls is ``reps`` when given, else enough to fill ``rep_ms``, clamped to
    ``[min_reps, max_reps]``.

    ``device``: ``"cuda"`` times with CUDA events on the current stream, ``"cpu"`` with the host clock
    (for host-side callables and tests), ``None`` picks CUDA when available.
    ``flush_l2``: before every timed call (outside its events) overwrite a buffer of twice the L2 size,
    an alternative to rotating copies when copies do not fit in memory.
    ``calls_per_sample``: calls between one pair of events (or host-clock readings; see the module
    docstring); the result's times are per call.
    """

    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 10
    max_reps: int = 2000
    reps: int | None = None
    flush_l2: bool = False
    device: str | None = None
    gpu_sleep: bool = True
    calls_per_sample: int = 1

    def __call__(self, fn: Callable[..., Any], arg_sets: Sequence[Any] | None = None) -> TimingResult:
        sets = _normalize_arg_sets(arg_sets)
        device = self.device
        if device is None:
            device = "cuda" if _cuda_available() else "cpu"
        if device.startswith("cuda"):
            return self._time_cuda(fn, sets)
        return self._time_host(fn, sets)

    def _n_reps(self, est_ms: float) -> int:
        if self.reps is not None:
            return max(1, int(self.reps))
        want = math.ceil(self.rep_ms / max(est_ms, 1e-6))
        return int(min(max(want, self.min_reps), self.max_reps))

    def _n_warmup(self, est_ms: float) -> int:
        return int(min(max(math.ceil(self.warmup_ms / max(est_ms, 1e-6)), 1), self.max_reps))

    def _time_host(self, fn: Callable[..., Any], sets: list[tuple]) -> TimingResult:
        n = len(sets)
        i = 0
        for _ in range(n):
            fn(*sets[i % n])
            i += 1
        n_est = max(3, min(n, 10))
        t0 = time.perf_counter()
        for _ in range(n_est):
            fn(*sets[i % n])
            i += 1
        est_ms = (time.perf_counter() - t0) * 1e3 / n_est
        warm = self._n_warmup(est_ms)
        for _ in range(warm):
            fn(*sets[i % n])
            i += 1
        per = _calls_per_sample(self.calls_per_sample)
        samples = []
        for _ in range(max(1, self._n_reps(est_ms) // per)):
            t0 = time.perf_counter_ns()
            for _ in range(per):
                fn(*sets[i % n])
                i += 1
            samples.append((time.perf_counter_ns() - t0) / 1e6 / per)
        return TimingResult.from_samples(
            samples, method="host-clock", n_arg_sets=n, flush_l2=False, warmup_calls=n + n_est + warm,
            calls_per_sample=per,
        )

    def _time_cuda(self, fn: Callable[..., Any], sets: list[tuple]) -> TimingResult:
        import torch

        n = len(sets)
        i = 0
        for _ in range(n):
            fn(*sets[i % n])
            i += 1
        torch.cuda.synchronize()

        # Estimate GPU time per call and host time per launch from a short back-to-back run.
        n_est = max(5, min(n, 20))
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        e0.record()
        for _ in range(n_est):
            fn(*sets[i % n])
            i += 1
        e1.record()
        host_ms = (time.perf_counter() - t0) * 1e3 / n_est
        e1.synchronize()
        est_ms = e0.elapsed_time(e1) / n_est

        warm = self._n_warmup(est_ms)
        for _ in range(warm):
            fn(*sets[i % n])
            i += 1

        flush_buf = None
        if self.flush_l2:
            from tilecraft.bench.rotation import l2_cache_bytes

            flush_buf = torch.empty(2 * l2_cache_bytes() // 4, dtype=torch.int32, device="cuda")

        per = _calls_per_sample(self.calls_per_sample)
        reps = max(1, self._n_reps(est_ms) // per)
        use_sleep = self.gpu_sleep and hasattr(torch.cuda, "_sleep") and host_ms > 0.5 * est_ms
        cycles_per_ms = _calibrate_sleep() if use_sleep else 0.0
        use_sleep = use_sleep and cycles_per_ms > 0
        # samples per GPU spin: the spin (at most _MAX_SLEEP_MS) must outlast the enqueue of all their calls
        batch = _BATCH if per == 1 else max(1, min(_BATCH, int(_MAX_SLEEP_MS / (2.0 * host_ms * per))))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        torch.cuda.synchronize()
        for b0 in range(0, reps, batch):
            b1 = min(b0 + batch, reps)
            if use_sleep:
                # Cover the host's enqueue time for the batch (flush launches included) with margin.
                calls = (b1 - b0) * per
                sleep_ms = min(_MAX_SLEEP_MS, calls * host_ms * (3.0 if flush_buf is not None else 2.0) + 0.05)
                torch.cuda._sleep(int(sleep_ms * cycles_per_ms))
            for r in range(b0, b1):
                if flush_buf is not None:
                    flush_buf.zero_()
                starts[r].record()
                for _ in range(per):
                    fn(*sets[i % n])
                    i += 1
                ends[r].record()
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) / per for s, e in zip(starts, ends)]
        return TimingResult.from_samples(
            samples,
            method="cuda-events",
            n_arg_sets=n,
            flush_l2=flush_buf is not None,
            warmup_calls=n + n_est + warm,
            gpu_sleep=use_sleep,
            calls_per_sample=per,
        )


def _calls_per_sample(per: Any) -> int:
    if not isinstance(per, int) or isinstance(per, bool) or per < 1:
        raise ValueError(f"calls_per_sample must be a positive int, got {per!r}")
    return per


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _calibrate_sleep() -> float:
    """GPU clock cycles per millisecond of ``torch.cuda._sleep`` (0 when it cannot be measured)."""
    global _sleep_cycles_per_ms
    if _sleep_cycles_per_ms is None:
        import torch

        try:
            cycles = 2_000_000
            torch.cuda._sleep(cycles // 10)  # first launch pays module load
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.cuda._sleep(cycles)
            e1.record()
            e1.synchronize()
            ms = e0.elapsed_time(e1)
            _sleep_cycles_per_ms = cycles / ms if ms > 0 else 0.0
        except Exception:
            _sleep_cycles_per_ms = 0.0
    return _sleep_cycles_per_ms


def bench(
    fn: Callable[..., Any],
    arg_sets: Sequence[Any] | None = None,
    **timer_options: Any,
) -> TimingResult:
    """Time ``fn`` (rotating over ``arg_sets`` when given); keyword options are :class:`Timer`'s fields.

    >>> r = bench(torch.matmul, [(a0, b0), (a1, b1)], rep_ms=200)   # doctest: +SKIP
    >>> r.median_ms, r.p10_ms, r.p90_ms                             # doctest: +SKIP
    """
    return Timer(**timer_options)(fn, arg_sets)


def in_turn(timers: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each timer's results over `rounds` rounds, every round calling the timers one after another, in
    order in even rounds and in reverse order in odd ones. Comparing contenders by their medians over
    rounds: the GPU's clock drifts with its temperature and power over seconds, and a contender timed once,
    after another, inherits that drift; alternating the order keeps any one contender from always following
    the same one (session 27 measured one configuration 11% apart from itself in one round order)."""
    times: dict[str, list[float]] = {name: [] for name in timers}
    names = list(timers)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            times[name].append(timers[name]())
    return times


def against(times: dict[str, list[float]], base: str) -> dict[str, tuple[float, float, float]]:
    """``in_turn``'s times compared with contender `base`'s: per contender (its median, base's median over
    it, and its spread over the rounds, (max - min) / median). With times per call, the ratio is the
    speedup over `base`."""
    import statistics

    ref = statistics.median(times[base])
    out = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        out[name] = (med, ref / med, (max(ts) - min(ts)) / med)
    return out


def calls_in_turn(timer: Callable[..., Any], calls: dict[str, Callable[..., Any]], arg_sets: Any, rounds: int,
                  base: str) -> dict[str, tuple[float, float, float]]:
    """``against(base)`` of the contenders `calls` (name -> fn), each timed ``timer(fn, arg_sets).median_ms`` (a
    ``Timer`` over rotating operands) ``in_turn`` for `rounds` rounds: the probes' side-by-side comparison."""
    return against(in_turn({name: lambda fn=fn: timer(fn, arg_sets).median_ms for name, fn in calls.items()}, rounds),
                   base)


@dataclass(frozen=True)
class Sustained:
    """One callable run back to back: ms per call, and the SM clock (MHz, median and minimum) and board
    power (W, median) sampled over the last two thirds of the run."""

    ms: float
    clock_mhz: float
    min_clock_mhz: float
    watts: float


def sustain(call: Callable[..., Any], arg_sets: Sequence[Sequence[Any]], seconds: float,
            cool_s: float = 1.0) -> Sustained:
    """`call` back to back for about `seconds` (rotating `arg_sets`), after `cool_s` seconds idle so that
    every contender starts from a GPU that has cooled for the same time, while a thread samples
    ``torch.cuda.clock_rate`` and ``power_draw`` every 20 ms. An H100 at its 700 W limit lowers its clock
    within such a run by as much as the kernel draws: the clock and power a kernel sustains, and its
    joules per operation (watts x ms), say whether its speed is bound by power."""
    import statistics
    import threading

    import torch
    call(*arg_sets[0])
    torch.cuda.synchronize()
    time.sleep(cool_s)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    call(*arg_sets[-1])
    torch.cuda.synchronize()
    reps = max(1, int(seconds / (time.perf_counter() - t0)))
    stop, samples = threading.Event(), []

    def sample() -> None:
        while not stop.is_set():
            samples.append((time.perf_counter(), torch.cuda.clock_rate(), torch.cuda.power_draw() / 1e3))
            time.sleep(0.02)

    thread = threading.Thread(target=sample)
    thread.start()
    t0 = time.perf_counter()
    start.record()
    for i in range(reps):
        call(*arg_sets[i % len(arg_sets)])
    end.record()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    stop.set()
    thread.join()
    late = [s for s in samples if s[0] >= t0 + (t1 - t0) / 3] or samples
    return Sustained(start.elapsed_time(end) / reps, statistics.median(c for _, c, _ in late),
                     min(c for _, c, _ in late), statistics.median(w for _, _, w in late))
