"""The verdicts the papers' tests use (docs/metrics.md: masking verdict with a factor k, stability with
the recurrent-fault paper's cap, fault-tolerance overhead), on synthetic runs with known answers."""

import math

import numpy as np
import pytest
from synthetic import Outage, Spike, stateless_trace

from pytest_streamchaos.analysis.metrics import NOT_RECOVERED, stability
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.versus import fault_verdicts, latency_band, overhead


def _run(latency: float = 0.2, spike: float = 0.0, outage: float = 0.0, faults: tuple[float, ...] = (20.0,),
         rate: float = 100, outages: tuple[Outage, ...] = ()) -> ChaosRun:
    trace = stateless_trace(rate=rate, duration=60, batch_interval=None, latency=latency, faults=list(faults),
                            spikes=[Spike(20.0, 6.0, spike)] if spike else [],
                            outages=[Outage(20.0, outage, catch_up_rate=400)] if outage else list(outages))
    return ChaosRun.from_trace(trace, guarantee="at-least-once")


# -- masking: p99 within k x the fault-free band ---------------------------------------------------
def test_masking_factor_moves_the_band_by_exactly_k() -> None:
    calm = _run(faults=())
    band = latency_band(calm)
    assert band == pytest.approx(0.2, abs=1e-6)  # constant latency: the band is it
    spiked = _run(spike=0.2)  # p99 peaks near 0.4 s: 2x the band
    peak = fault_verdicts(spiked, band)[0].peak_latency
    assert 0.35 < peak < 0.41
    assert fault_verdicts(spiked, band)[0].verdict == "degraded"
    assert fault_verdicts(spiked, band, factor=peak / band - 0.01)[0].verdict == "degraded"
    assert fault_verdicts(spiked, band, factor=peak / band + 0.01)[0].verdict == "masked"
    assert spiked.versus(calm, factor=2.5).verdicts == ["masked"]
    # an outage stays an outage whatever k
    assert _run(outage=4.0).versus(calm, factor=100).verdicts == ["outage"]
    with pytest.raises(ValueError, match="factor"):
        fault_verdicts(spiked, band, factor=0)


def test_a_run_slower_before_its_fault_is_judged_against_its_own_fault_free_stretch() -> None:
    calm = _run(faults=())  # A: 0.2 s throughout
    slower = _run(latency=0.3)  # B: 0.3 s from the start, the fault changes nothing
    assert latency_band(slower, before_faults=True) == pytest.approx(0.3, abs=1e-6)
    assert slower.versus(calm).verdicts == ["masked"]
    assert slower.versus(calm).faults[0].band == pytest.approx(0.3, abs=1e-6)
    # against A's band alone, B's own slowness would be blamed on the fault
    assert fault_verdicts(slower, latency_band(calm))[0].verdict == "degraded"
    # a rise above B's own fault-free stretch is still the fault's
    assert _run(latency=0.3, spike=0.2).versus(calm).verdicts == ["degraded"]


# -- stability with the paper's cap ------------------------------------------------------------------
def test_stability_counts_not_recovered_as_the_interval_when_capped() -> None:
    s = stability([2.0, 4.0, NOT_RECOVERED])
    assert (s.mean, s.min, s.max, s.not_recovered) == (3.0, 2.0, 4.0, 1) and s.std == pytest.approx(1.0)
    assert not s.is_stable(max_cv=10)  # one did not recover
    c = stability([2.0, 4.0, NOT_RECOVERED, 30.0], cap=12.0)  # 12 = the interval between kills
    assert c.mean == pytest.approx((2 + 4 + 12 + 12) / 4) and c.max == 12.0 and c.not_recovered == 1
    ok = stability([3.0, 3.0, 5.0])
    assert ok.cv == pytest.approx(np.std([3, 3, 5]) / np.mean([3, 3, 5]))
    assert ok.is_stable(max_cv=0.3) and not ok.is_stable(max_cv=0.2)
    assert not stability([]).is_stable() and math.isnan(stability([None]).mean)


def test_stability_of_a_run_with_recurrent_outages() -> None:
    # three kills 15 s apart, each an outage of 2, 2 and 4 s: recovery grows with the outage
    outs = (Outage(15.0, 2.0, catch_up_rate=400), Outage(30.0, 2.0, catch_up_rate=400),
            Outage(45.0, 4.0, catch_up_rate=400))
    run = _run(faults=(15.0, 30.0, 45.0), outages=outs)
    st = run.metrics.stability
    rts = [float(f.recovery_time) for f in run.faults]
    assert st.recovery_times == [f.recovery_time for f in run.faults] and st.not_recovered == 0
    assert rts[0] == pytest.approx(rts[1], abs=0.5) and rts[2] > rts[0] + 1.5
    assert st.mean == pytest.approx(np.mean(rts)) and st.cv == pytest.approx(np.std(rts) / np.mean(rts))


# -- overhead: steady-state ratios and time back to normal ------------------------------------------
def test_overhead_ratios_of_the_baselines_and_back_to_normal() -> None:
    local = _run(latency=0.2, faults=())
    slower = _run(latency=0.5, outage=4.0)  # 2.5x latency before its fault, then an outage
    o = overhead(slower, local)
    assert o.latency_p50 == pytest.approx(2.5, rel=0.02) and o.latency_p99 == pytest.approx(2.5, rel=0.02)
    assert o.throughput == pytest.approx(1.0, abs=0.03)  # both keep up with the same load
    assert o.back_to_normal == slower.recovery_time and float(o.back_to_normal) > 4.0
    assert o.within(max_latency_ratio=3.0) and not o.within(max_latency_ratio=2.0)
    assert overhead(local, local).back_to_normal is None and local.overhead(local).latency_p99 == 1.0
    assert "p99 x2.5" in o.describe() and "back to normal after a fault in" in o.describe()
