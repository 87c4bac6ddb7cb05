"""How close our count of tool schemas is to what a provider reports.

Sends one short request three times to an OpenAI-compatible endpoint: without tools, with one tool and with the
20 pentest-style tools of the gateway tests (tests/gateway/tool_schemas.py), and compares the growth of the
reported `usage.prompt_tokens` with our count of the same tools (summarizer.tools_tokens: the schemas as OpenAI
renders them) and with the JSON of the schemas. Needs a reachable endpoint; nothing is stored.
Usage: OPENAI_API_KEY=... .venv/bin/python bench/tools_tokens.py [--base-url https://api.openai.com/v1]
[--model gpt-4o-mini]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from summarizer import text_tokens, tools_tokens  # noqa: E402
from tests.gateway.tool_schemas import tool_schemas  # noqa: E402

MESSAGES = [{"role": "system", "content": "You are a penetration tester."},
            {"role": "user", "content": "Say ok."}]


def prompt_tokens(client: openai.OpenAI, model: str, tools: list[dict[str, Any]] | None) -> int:
    extra: dict[str, Any] = {"tools": tools} if tools else {}
    answer = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=1, **extra)  # type: ignore
    if answer.usage is None:
        raise SystemExit("the endpoint reports no usage: nothing to compare with")
    return answer.usage.prompt_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
                           max_retries=1, timeout=60)
    base = prompt_tokens(client, args.model, None)
    print("| tools | provider's extra prompt tokens | our count | ours / provider | JSON | JSON / provider |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, tools in (("1", tool_schemas()[:1]), ("20", tool_schemas())):
        reported = prompt_tokens(client, args.model, tools) - base
        ours = tools_tokens(tools, model=args.model)
        as_json = text_tokens(json.dumps(tools), model=args.model)
        print(f"| {label} | {reported:,} | {ours:,} | {ours / reported:.3f} | {as_json:,} | {as_json / reported:.3f} |")


if __name__ == "__main__":
    main()
