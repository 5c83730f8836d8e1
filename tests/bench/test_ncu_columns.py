"""benchmarks/ncu_columns.py: Nsight Compute's per-kernel metric blocks turned into one column per kernel."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ncu_columns", ROOT / "benchmarks" / "ncu_columns.py")
ncu_columns = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ncu_columns)

TEXT = """\
cfg0: sm90_128x128x64_s6_c2
cfg1: sm90_128x128x64_s6_c2_cl2x1
==PROF== Profiling "nvjet" - 0: 0%....50%....100% - 1 pass
  nvjet_sm90_tst_256x128 (128, 1, 1)x(384, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
    Section: Command line profiler metrics
    gpu__time_duration.sum                                   us       175.74
    lrc__lrc2xbar_sectors_op_read.sum                    sector   26,937,502
    sm__cycles_elapsed.max                                cycle      285,200
  kernel (132, 1, 1)x(384, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
    gpu__time_duration.sum                                   us       179.46
    lrc__lrc2xbar_sectors_op_read.sum                    sector   38,831,574
    sm__cycles_elapsed.max                                cycle      285,791
  kernel (132, 1, 1)x(384, 1, 1), Context 1, Stream 7, Device 0, CC 9.0
    gpu__time_duration.sum                                   us       231.84
    lrc__lrc2xbar_sectors_op_read.sum                    sector   54,277,294
    sm__cycles_elapsed.max                                cycle      363,239
"""


def test_one_column_per_kernel_in_profiling_order():
    names, values = ncu_columns.columns(TEXT.splitlines())
    assert names == ["cfg0: sm90_128x128x64_s6_c2", "cfg1: sm90_128x128x64_s6_c2_cl2x1"]
    assert values == {"time": ["175.74", "179.46", "231.84"], "cycles": ["285,200", "285,791", "363,239"],
                      "to L2": ["26,937,502", "38,831,574", "54,277,294"]}


def test_metrics_list_names_every_row():
    assert ncu_columns.NCU_METRICS.split(",") == list(ncu_columns.METRICS.values())
    assert ncu_columns.main([]) == 2
