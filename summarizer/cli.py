"""`python -m summarizer`: summarize a chain file, inspect its structure, count its tokens.

    python -m summarizer summarize --profile agent|assistant|restore --input FILE [--set key=value]...
                                   [--backend extractive|openai] [--json]
    python -m summarizer inspect FILE [--model M] [--json]
    python -m summarizer tokens FILE [--model M] [--json]

Input: a JSON list of OpenAI messages, {"messages": [...]}, a PentAGI msgchain or OpenClaw JSONL (whatever
summarizer.import_chain reads). `inspect` and `summarize` read a chain the same way: a malformed one the engine can
repair (two user messages in a row) is repaired by both with a warning naming what was merged, anything
else is refused by both. Bad input exits 2 with one line on stderr; a failed summarization exits 1 (the
chain is then printed unchanged, PentAGI semantics). The openai backend speaks the OpenAI-compatible
/chat/completions protocol with the standard library only: the pure package imports no HTTP client.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from summarizer.settings.spec import parse_bool, parse_int

__all__ = ["main", "CliError", "BackendError", "load_messages", "parse_repairing", "config_with_overrides",
           "openai_summarizer"]

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
HTTP_TIMEOUT_SECONDS = 120.0
ERROR_BODY_CHARS = 300
PREVIEW_CHARS = 160


class CliError(Exception):
    """Bad input: the message is printed as one line and the exit status is 2."""


class BackendError(RuntimeError):
    """The LLM endpoint failed (unreachable, HTTP error, empty answer)."""


def _read_json_fallback(raw: str) -> list[dict[str, Any]]:
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"malformed JSON: {exc.msg} (line {exc.lineno})") from None
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        doc = doc["messages"]
    if not isinstance(doc, list):
        raise CliError("expected a JSON list of messages or an object with a 'messages' list")
    return doc


def load_messages(path: str) -> list[dict[str, Any]]:
    """Messages of a chain file, validated; CliError (one line) for anything unusable."""
    file = Path(path)
    if not file.is_file():
        raise CliError(f"input file not found: {path}")
    try:
        raw = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from None
    try:
        from summarizer.formats.convert import FormatError, import_chain
    except ImportError:  # formats is optional for the CLI: plain JSON shapes still work
        messages = _read_json_fallback(raw)
    else:
        try:
            messages = import_chain(raw)
        except FormatError as exc:
            raise CliError(f"unreadable chain: {exc}") from None
    from summarizer.chain.messages import MessageError, validate_messages

    try:
        validate_messages(messages)
    except MessageError as exc:
        raise CliError(f"invalid chain: {exc}") from None
    return messages


def _parse_value(name: str, raw: str, current: Any) -> bool | int:
    """The same parsers as `SummarizerConfig.from_env` (Go's ParseBool set for switches)."""
    try:
        return parse_bool(raw.strip()) if isinstance(current, bool) else parse_int(raw)
    except ValueError as exc:
        raise CliError(f"--set {name}: {exc}, got {raw!r}") from None


def config_with_overrides(profile: str, overrides: Sequence[str]) -> Any:
    """The profile's SummarizerConfig with `key=value` overrides applied (CliError on a bad key or value)."""
    from summarizer.settings.config import SummarizerConfig

    config = getattr(SummarizerConfig, profile)()
    names = {f.name for f in dataclasses.fields(config)}
    changes: dict[str, Any] = {}
    for item in overrides:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CliError(f"--set expects key=value, got {item!r}")
        if name not in names:
            raise CliError(f"--set {name}: unknown setting (one of {', '.join(sorted(names))})")
        changes[name] = _parse_value(name, raw, getattr(config, name))
    try:
        return config.replace(**changes) if changes else config
    except (TypeError, ValueError) as exc:
        raise CliError(f"--set: {exc}") from None


def _post_json(url: str, body: dict[str, Any], api_key: str, timeout: float) -> Any:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:ERROR_BODY_CHARS]
        raise BackendError(f"LLM server at {url} answered HTTP {exc.code}: {detail}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BackendError(f"LLM server at {url} is unreachable: {reason}") from None
    except ValueError as exc:
        raise BackendError(f"LLM server at {url} sent a non-JSON answer: {exc}") from None


def openai_summarizer(environ: Mapping[str, str] | None = None, *,
                      timeout_seconds: float = HTTP_TIMEOUT_SECONDS) -> Callable[[str], str]:
    """A summarize callable for an OpenAI-compatible endpoint: OPENAI_API_KEY, LLM_SERVER_URL, LLM_SERVER_MODEL."""
    env = os.environ if environ is None else environ
    base_url = (env.get("LLM_SERVER_URL") or "").strip()
    api_key = (env.get("OPENAI_API_KEY") or "").strip()
    if not base_url and not api_key:
        raise CliError("--backend openai needs OPENAI_API_KEY (or LLM_SERVER_URL for a local server)")
    url = (base_url or DEFAULT_OPENAI_BASE_URL).rstrip("/") + "/chat/completions"
    model = (env.get("LLM_SERVER_MODEL") or "").strip() or DEFAULT_OPENAI_MODEL
    from summarizer.extractive.ledger import with_ledger
    from summarizer.passes.prompts import SUMMARY_SYSTEM_PROMPT

    def summarize(prompt: str) -> str:
        body = {"model": model, "messages": [{"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
                                             {"role": "user", "content": prompt}]}
        payload = _post_json(url, body, api_key, timeout_seconds)
        choices = payload.get("choices") if isinstance(payload, dict) else None
        texts = [str(((c or {}).get("message") or {}).get("content") or "") for c in choices or []]
        text = "\n\n".join(t for t in texts if t.strip())  # several choices are joined, as PentAGI does
        if not text.strip():
            raise BackendError(f"LLM server at {url} returned an empty summary")
        return with_ledger(prompt, text)  # what the model forgot of the audited findings and identifiers

    return summarize


def _summarizer_for(backend: str) -> Callable[[str], str]:
    from summarizer.passes.handler import with_cap_and_cache

    if backend == "openai":
        return with_cap_and_cache(openai_summarizer())
    from summarizer.extractive.briefing import make_extractive

    return with_cap_and_cache(make_extractive())


def _size(message: Mapping[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode("utf-8"))


def _preview(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text", "[image]")) for p in content if isinstance(p, dict))
    text = " ".join(str(content or "").split())
    calls = [c.get("function", {}).get("name", "?") for c in message.get("tool_calls") or []]
    if calls:
        text = f"{text} [calls: {', '.join(calls)}]".strip()
    return text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")


def _user_runs(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(first, last) index of every run of two or more user messages in a row."""
    runs, start = [], None
    for index, message in enumerate([*messages, {"role": ""}]):
        if message.get("role") == "user":
            start = index if start is None else start
        else:
            if start is not None and index - 1 > start:
                runs.append((start, index - 1))
            start = None
    return runs


def parse_repairing(messages: list[dict[str, Any]], err: TextIO) -> Any:
    """The chain's AST, as both `inspect` and `summarize` read it: strictly when it is well formed, else
    repaired the way the engine repairs it (force mode) with a warning naming what was merged; CliError when
    even the repair cannot read it, so the two commands accept and refuse the same files."""
    from summarizer.chain.parse import ChainError, parse_chain

    try:
        return parse_chain(messages)
    except ChainError as strict:
        try:
            ast = parse_chain(messages, force=True)
        except ChainError as exc:
            raise CliError(f"invalid chain: {exc}") from None
        merged = [f"merged user messages {first}-{last} into one" for first, last in _user_runs(messages)]
        err.write(f"warning: repaired the chain ({'; '.join(merged) or strict})\n")
        return ast


def _cmd_summarize(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    messages = load_messages(args.input)
    parse_repairing(messages, err)
    config = config_with_overrides(args.profile, args.set or [])
    from summarizer.passes.summarize import summarize_chain

    result = summarize_chain(messages, config, _summarizer_for(args.backend))
    if args.json:
        json.dump({"messages": result.messages, "calls": result.calls, "lineage": result.lineage,
                   "stats": result.stats, "error": result.error, "config": dataclasses.asdict(config)},
                  out, ensure_ascii=False, indent=2, default=str)
        out.write("\n")
    else:
        for index, message in enumerate(result.messages):
            out.write(f"[{index}] {message.get('role')}: {_preview(message)}\n")
        out.write(f"\nmessages: {len(messages)} -> {len(result.messages)}; summarize calls: {result.calls}\n")
        for key, value in sorted((result.stats or {}).items()):
            out.write(f"{key}: {value}\n")
    if result.error:
        err.write(f"summarization failed, chain left unchanged: {result.error}\n")
        return EXIT_FAILED
    return EXIT_OK


def _cmd_inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    messages = load_messages(args.file)
    from summarizer.tokens.count import count_tokens

    ast = parse_repairing(messages, err)
    sections: list[dict[str, Any]] = []
    for section in ast.sections:
        header = section.header
        pairs = [{"kind": p.kind, "messages": len(p.messages()), "bytes": p.size,
                  "tokens": count_tokens(p.messages(), model=args.model)} for p in section.body]
        sections.append({"bytes": section.size, "tokens": count_tokens(section.messages(), model=args.model),
                         "system_bytes": _node_size(header.system), "human_bytes": _node_size(header.human),
                         "pairs": pairs})
    report = {"messages": len(messages), "sections": sections, "bytes": ast.size,
              "tokens": count_tokens(messages, model=args.model), "model": args.model}
    if args.json:
        json.dump(report, out, indent=2)
        out.write("\n")
        return EXIT_OK
    out.write(f"chain: {len(messages)} messages, {len(sections)} sections, {ast.size} bytes, "
              f"{report['tokens']} tokens\n")
    for i, row in enumerate(sections):
        out.write(f"section {i}: {row['bytes']} bytes, {row['tokens']} tokens "
                  f"(system {row['system_bytes']} B, human {row['human_bytes']} B)\n")
        for j, pair in enumerate(row["pairs"]):
            out.write(f"  pair {j}: {pair['kind']}, {pair['messages']} messages, {pair['bytes']} bytes, "
                      f"{pair['tokens']} tokens\n")
    return EXIT_OK


def _node_size(message: Mapping[str, Any] | None) -> int:
    from summarizer.chain.messages import message_size

    return 0 if message is None else message_size(dict(message))


def _cmd_tokens(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    messages = load_messages(args.file)
    from summarizer.tokens.count import count_tokens, encoding_name_for, is_estimate, message_tokens

    per_message = [message_tokens(m, model=args.model) for m in messages]
    report = {"tokens": count_tokens(messages, model=args.model), "messages": per_message,
              "encoding": encoding_name_for(args.model), "estimate": is_estimate(args.model), "model": args.model}
    if args.json:
        json.dump(report, out, indent=2)
        out.write("\n")
        return EXIT_OK
    for index, (message, tokens) in enumerate(zip(messages, per_message, strict=True)):
        out.write(f"[{index}] {message.get('role')}: {tokens} tokens, {_size(message)} bytes\n")
    label = "estimated " if report["estimate"] else ""
    out.write(f"total: {report['tokens']} {label}tokens ({report['encoding']}, model {args.model or 'unset'})\n")
    return EXIT_OK


class _ArgumentParser(argparse.ArgumentParser):
    """Usage errors become CliError: one line on stderr, exit 2 (argparse would print the whole usage)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliError(f"{self.prog}: {message}")


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="python -m summarizer", description="PentAGI-style chain summarizer")
    sub = parser.add_subparsers(dest="command", required=True)
    summarize = sub.add_parser("summarize", help="summarize a chain and print the new chain and stats")
    summarize.add_argument("--profile", choices=("agent", "assistant", "restore"), default="agent")
    summarize.add_argument("--input", required=True, help="chain file (JSON, PentAGI msgchain, OpenClaw JSONL)")
    summarize.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one config field")
    summarize.add_argument("--backend", choices=("extractive", "openai"), default="extractive")
    summarize.add_argument("--json", action="store_true", help="machine-readable output")
    for name, text in (("inspect", "show sections and pairs with sizes and tokens"), ("tokens", "count tokens")):
        command = sub.add_parser(name, help=text)
        command.add_argument("file")
        command.add_argument("--model", default=None)
        command.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 summarization failed, 2 bad input)."""
    out, err = out or sys.stdout, err or sys.stderr
    handlers = {"summarize": _cmd_summarize, "inspect": _cmd_inspect, "tokens": _cmd_tokens}
    try:
        args = _parser().parse_args(argv)
        return handlers[args.command](args, out, err)
    except CliError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_BAD_INPUT
