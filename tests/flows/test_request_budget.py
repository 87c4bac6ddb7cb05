"""The room a request leaves its messages: window minus tools, schema and the output it reserves, scaled by the
provider's learned token ratio; the max output clamped, never below the floor."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flows.pipeline import MIN_OUTPUT_TOKENS, RequestNeeds, fit_budget


def test_without_an_output_cap_the_settings_reserve_is_kept() -> None:
    budget = fit_budget(6000, 1200, RequestNeeds(tools=800))
    assert budget.reserve == 1200 and budget.view_target == 6000 - 1200 - 800
    assert budget.output_cap(100) is None


def test_a_cap_that_fits_is_the_reserve_and_is_sent_unchanged() -> None:
    budget = fit_budget(128_000, 4000, RequestNeeds(tools=3000, max_output=4000))
    assert budget.reserve == 4000 and budget.output_cap(50_000) == 4000


def test_a_cap_too_large_for_the_window_is_halved_for_the_fit_then_clamped_to_what_is_left() -> None:
    budget = fit_budget(6000, 1200, RequestNeeds(tools=4300, max_output=4000))  # the measured case
    assert budget.reserve == (6000 - 4300) // 2
    view = budget.view_target
    assert budget.fits(view) and budget.output_cap(view) == 6000 - 4300 - view


def test_the_learned_ratio_scales_messages_and_extras() -> None:
    budget = fit_budget(10_000, 1000, RequestNeeds(tools=1000, ratio=1.25))
    assert budget.view_target == int(9000 / 1.25) - 1000
    assert budget.prompt(budget.view_target) <= 9000


def test_a_request_that_cannot_keep_the_floor_does_not_fit() -> None:
    budget = fit_budget(6000, 1200, RequestNeeds(tools=5900, max_output=1000))
    assert not budget.fits(0)
    assert budget.floor == MIN_OUTPUT_TOKENS


@given(window=st.integers(2048, 400_000), tools=st.integers(0, 50_000), schema=st.integers(0, 5000),
       asked=st.one_of(st.none(), st.integers(1, 10_000_000)), ratio=st.floats(0.5, 4.0),
       reserve=st.integers(0, 100_000))
def test_a_view_within_the_target_always_fits_and_its_cap_respects_the_floor(
        window: int, tools: int, schema: int, asked: int | None, ratio: float, reserve: int) -> None:
    reserve = min(reserve, window // 2)
    budget = fit_budget(window, reserve, RequestNeeds(tools=tools, schema=schema, max_output=asked, ratio=ratio))
    view = budget.view_target
    if view < 0:
        return  # the extras alone do not fit: the gateway refuses such a request
    assert budget.prompt(view) + budget.reserve <= window + 1  # rounding of the ratio: at most one token
    cap = budget.output_cap(view)
    if asked is not None and budget.fits(view):
        assert cap is not None and min(asked, MIN_OUTPUT_TOKENS) <= cap <= asked
        assert budget.prompt(view) + cap <= window
