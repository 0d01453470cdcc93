"""PD<TO / PD>TO: the governing timeout per link and the check's messages."""

import pytest

from pytest_streamchaos.faults.timeouts import DelayClassError, check_delay_class, governing_timeout, spark_seconds


@pytest.mark.parametrize("v, s", [("20s", 20.0), ("500ms", 0.5), ("2min", 120.0), ("15", 15.0), (3, 3.0)])
def test_spark_durations(v, s) -> None:
    assert spark_seconds(v) == s


def test_governing_timeout_per_link() -> None:
    cluster = {"spark.worker.timeout": "10"}
    job = {"spark.network.timeout": "20s"}
    assert governing_timeout("worker-1", cluster, job).setting == "spark.worker.timeout"
    assert governing_timeout("driver", cluster, job).seconds == 20.0
    kt = governing_timeout("kafka", cluster, job)
    assert (kt.setting, kt.seconds) == ("kafka.request.timeout.ms", 30.0)


def test_check_names_setting_and_value() -> None:
    to = governing_timeout("driver", {}, {"spark.network.timeout": "5s"})
    check_delay_class(6000, True, to, "driver")
    check_delay_class(200, False, to, "driver")
    check_delay_class(200, None, to, "driver")
    with pytest.raises(DelayClassError, match=r"not PD>TO.*spark.network.timeout is 5000 ms.*use ms > 5000"):
        check_delay_class(500, True, to, "driver")
    with pytest.raises(DelayClassError, match=r"not PD<TO.*use ms < 5000"):
        check_delay_class(5000, False, to, "driver")
