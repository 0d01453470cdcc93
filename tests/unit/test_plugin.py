"""The plugin as pytest sees it: entry point, options group, ini keys, markers, bad option values."""

from __future__ import annotations

import pytest


def test_registered_through_entry_point(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--trace-config", "--co", "-q")
    result.stdout.fnmatch_lines(["*streamchaos*pytest_streamchaos*plugin*"])


def test_help_shows_options_group_and_ini_keys(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*chaos testing of PySpark Structured Streaming jobs*",
            "*--chaos-backend=*",
            "*--chaos-workers=*",
            "*--chaos-report=*",
        ]
    )
    result.stdout.fnmatch_lines(["*streamchaos_workers*", "*streamchaos_kafka_brokers*"])


def test_chaos_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.chaos(ha=False, repeat=1, backend=None, spark=None, sequence=False):*"])
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.chaos
        def test_a(): pass
        def test_b(): pass
        """
    )
    result = pytester.runpytest("--strict-markers", "-m", "chaos")
    result.assert_outcomes(passed=1, deselected=1)


def test_bad_option_value_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--chaos-workers=two")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-workers*streamchaos_workers*'two' is not a valid int*"])


def test_ini_value_is_used_and_option_wins(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nstreamchaos_workers = 3\nstreamchaos_kafka_brokers = 1\n")
    pytester.makepyfile(
        """
        def test_settings(streamchaos_settings, request):
            expected = int(request.config.getoption("expected"))
            assert streamchaos_settings.workers == expected
            assert streamchaos_settings.kafka_brokers == 1
        """
    )
    pytester.makeconftest(
        "def pytest_addoption(parser):\n    parser.addoption('--expected')\n"
    )
    pytester.runpytest("--expected=3").assert_outcomes(passed=1)
    pytester.runpytest("--expected=4", "--chaos-workers=4").assert_outcomes(passed=1)


def test_checkpoint_dir_is_fresh_per_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        seen = []
        def test_one(checkpoint_dir):
            assert checkpoint_dir.is_dir() and not any(checkpoint_dir.iterdir())
            (checkpoint_dir / "x").write_text("1")
            seen.append(checkpoint_dir)
        def test_two(checkpoint_dir):
            assert not any(checkpoint_dir.iterdir()) and checkpoint_dir not in seen
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)


@pytest.mark.parametrize("args, ini, message", [
    (["--chaos-backend=kubernetes"], None, "unknown backend 'kubernetes'"),
    ([], "streamchaos_backend = nomad", "unknown backend 'nomad'"),
])
def test_unknown_backend_fails_at_start(pytester: pytest.Pytester, args, ini, message) -> None:
    """Before any test runs, with one line that names the flag, the ini key and the valid backends."""
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_never_runs(): raise AssertionError('ran')\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if "backend" in line]
    valid = "valid backends: 'local', 'docker'"
    assert lines == [f"ERROR: --chaos-backend / ini streamchaos_backend: {message}; {valid}"], result.stderr.lines
    assert "ran" not in result.stdout.str()


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_known_backends_are_accepted(pytester: pytest.Pytester, backend: str) -> None:
    """A backend is only started by the fixtures that need it: a test without them runs anywhere the
    backend can run (for docker: where a daemon answers; without one the session stops at once, which
    ``test_docker_stack.py::test_no_daemon_is_one_line_naming_the_fix`` asserts)."""
    if backend == "docker":
        from pytest_streamchaos.stack.base import StackError
        from pytest_streamchaos.stack.docker.engine import connect

        try:
            connect(timeout=3).close()
        except StackError as exc:
            pytest.skip(str(exc))
    pytester.makepyfile("def test_ok(): pass\n")
    pytester.runpytest(f"--chaos-backend={backend}").assert_outcomes(passed=1)
