"""What summarizing a chain cost, and what the window-aware strategy would have spent on the same history.

The chain page's cost card and the flow page's per-chain cost table read it: the chain's summarize calls (its
events), the model calls they made with their input tokens (as reported, else our estimate) and USD, in two
aggregate queries for any number of chains, beside `pipeline.window_replay` (a replay of the chain's raw
history through the window strategy with the offline summarizer, cached and extended as the chain grows).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, Sum

from flows.models import Chain, Flow, LLMCall, SummaryEvent
from flows.pipeline import SYNC_MESSAGES, WindowEstimate, window_estimate

__all__ = ["ChainCost", "ChainCostRow", "chain_cost", "chain_costs", "flow_chain_costs", "COST_CHAINS_SHOWN"]

COST_CHAINS_SHOWN = 20  # the flow page's cost table: its newest chains (each may cost a replay on a cold cache)


@dataclass(frozen=True)
class ChainCost:
    """What summarizing a chain has cost so far: summarize calls of its events, the model calls they made with
    their prompt tokens (as reported, else our estimate) and USD."""

    calls: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    usd: float = 0.0

    @property
    def usd_per_input_token(self) -> float | None:
        """The chain's blended rate: what its model calls cost per input token (None without a priced call)."""
        return self.usd / self.input_tokens if self.usd and self.input_tokens else None


def chain_costs(*, chain_ids: list[int]) -> dict[int, ChainCost]:
    """Each chain's summarizer cost in two aggregate queries (events, then their model calls), by chain id."""
    calls = dict(SummaryEvent.objects.filter(chain_id__in=chain_ids).values("chain_id").annotate(n=Sum("calls"))
                 .values_list("chain_id", "n"))
    rows = (LLMCall.objects.filter(event__chain_id__in=chain_ids).values("event__chain_id").annotate(
        n=Count("id"), usd=Sum("cost_usd"), reported=Sum("prompt_tokens"),
        estimated=Sum("estimated_prompt_tokens", filter=Q(prompt_tokens__isnull=True))))
    llm = {r["event__chain_id"]: r for r in rows}
    out = {}
    for chain_id in chain_ids:
        r = llm.get(chain_id, {})
        out[chain_id] = ChainCost(calls=calls.get(chain_id) or 0, llm_calls=r.get("n") or 0,
                                  input_tokens=(r.get("reported") or 0) + (r.get("estimated") or 0),
                                  usd=r.get("usd") or 0.0)
    return out


def chain_cost(*, chain: Chain) -> ChainCost:
    """The chain's summarizer cost (`chain_costs` of one chain)."""
    return chain_costs(chain_ids=[chain.pk])[chain.pk]


@dataclass(frozen=True)
class ChainCostRow:
    """One chain of the flow page's cost table."""

    chain: Chain
    cost: ChainCost
    window: WindowEstimate


def flow_chain_costs(*, flow: Flow) -> list[ChainCostRow]:
    """The flow's newest `COST_CHAINS_SHOWN` chains with their cost and the window strategy's estimate."""
    chains = list(Chain.objects.filter(agent__flow=flow).select_related("agent__flow").order_by("-id")
                  [:COST_CHAINS_SHOWN])
    costs = chain_costs(chain_ids=[c.pk for c in chains])
    rows, budget = [], SYNC_MESSAGES  # the page replays at most this many messages on the request, in all
    for chain in chains:
        estimate = window_estimate(chain=chain, usd_per_input_token=costs[chain.pk].usd_per_input_token,
                                   sync_messages=budget)
        budget = max(budget - estimate.replayed, 0)
        rows.append(ChainCostRow(chain, costs[chain.pk], estimate))
    return rows
