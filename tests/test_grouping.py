"""The suite's own scheduling (tests/conftest.py): a test that uses a module-scoped fixture
runs in its module's xdist group, so the fixture is made on one worker only; a test that
names its own group keeps it, and one without a module-scoped fixture is handed out alone."""

from __future__ import annotations

import pytest

MADE: list[str] = []


@pytest.fixture(scope="module")
def shared() -> list[str]:
    MADE.append("made")
    return MADE


def _group(request: pytest.FixtureRequest) -> str | None:
    mark = request.node.get_closest_marker("xdist_group")
    return None if mark is None else mark.args[0]


def _handed_out_in(request: pytest.FixtureRequest, group: str | None) -> None:
    """Under `--dist loadgroup`, pytest-xdist read the group into the test's id."""
    if request.config.getoption("dist", "no") != "loadgroup":
        return
    if group is None:
        assert "@" not in request.node.nodeid, request.node.nodeid
    else:
        assert request.node.nodeid.endswith(f"@{group}"), request.node.nodeid


def test_a_test_with_a_module_fixture_is_in_its_modules_group(shared, request) -> None:
    assert _group(request) == __name__
    _handed_out_in(request, __name__)


def test_the_next_one_shares_the_group_and_the_fixture(shared, request) -> None:
    assert _group(request) == __name__ and shared == ["made"]
    _handed_out_in(request, __name__)


@pytest.mark.xdist_group("its_own")
def test_a_named_group_is_kept(shared, request) -> None:
    assert _group(request) == "its_own"
    _handed_out_in(request, "its_own")


def test_a_test_without_one_is_handed_out_alone(request) -> None:
    assert _group(request) is None
    _handed_out_in(request, None)
