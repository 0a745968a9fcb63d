#!/usr/bin/env python3
"""Checks requests caldera sent against the official SDKs' own request types.

Input: a JSON Lines file, one request a line:
  {"api": "anthropic" | "anthropic-count" | "anthropic-batch" | "openai"
          | "openai-batch" | "openai-batch-create",
   "headers": {name: value}, "body": {...}}

Each body is checked strictly against the SDK's TypedDict for that call (no key the type
does not declare, every required key, the right literals and types, nested types too);
Anthropic requests must carry the SDK's `anthropic-version`. An `openai-batch` record is
one line of a Batch API input file: its envelope must be exactly `{custom_id, method:
"POST", url: "/v1/chat/completions", body}` (the SDK has no type for it; the Batch API's
documentation gives it) and its `body` is checked as a chat completion request. Prints one line per problem
and a closing `N passed, N failed` line; exits 1 when any request fails, 2 when the SDKs
are missing.

Needs the SDK versions the project checks against:
  python3 -m pip install anthropic==2.14.0 openai==3.57.0
"""

from __future__ import annotations

import collections.abc
import json
import sys
import typing

try:
    import anthropic
    import openai
    from anthropic._constants import ANTHROPIC_API_VERSION
    from anthropic.types.message_count_tokens_params import MessageCountTokensParams
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from anthropic.types.messages.batch_create_params import Request as BatchRequest
    from openai.types.batch_create_params import BatchCreateParams
    from openai.types.chat.completion_create_params import (
        CompletionCreateParamsNonStreaming,
    )
except ImportError as e:  # pragma: no cover - reported, not tested
    print(f"the SDKs are not installed ({e}); pip install anthropic==2.14.0 openai==3.57.0")
    sys.exit(2)

from typing_extensions import is_typeddict

TYPES = {
    "anthropic": MessageCreateParamsNonStreaming,
    "anthropic-count": MessageCountTokensParams,
    "anthropic-batch": BatchRequest,
    "openai": CompletionCreateParamsNonStreaming,
    "openai-batch": CompletionCreateParamsNonStreaming,
    "openai-batch-create": BatchCreateParams,
}

BATCH_LINE_KEYS = ["custom_id", "method", "url", "body"]


def check_batch_line(line, errors: list[str]) -> object:
    """Checks an OpenAI batch input line's envelope; returns its body for the type check."""
    if not isinstance(line, dict):
        errors.append(f"body: expected a batch line object, found {type(line).__name__}")
        return None
    if sorted(line) != sorted(BATCH_LINE_KEYS):
        errors.append(f"body: the keys are {sorted(line)}, a batch line has {BATCH_LINE_KEYS}")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 64:
        errors.append(f"body.custom_id: expected a string of 1 to 64 characters, found {custom_id!r:.80}")
    if line.get("method") != "POST":
        errors.append(f"body.method: {line.get('method')!r}, a batch line has 'POST'")
    if line.get("url") != "/v1/chat/completions":
        errors.append(f"body.url: {line.get('url')!r}, the batch endpoint is '/v1/chat/completions'")
    return line.get("body")

SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence, typing.Iterable, typing.Sequence}
MAPPINGS = {dict, collections.abc.Mapping, typing.Mapping, typing.Dict}


def unwrap(tp):
    """Strips Required/NotRequired/Annotated/ReadOnly wrappers."""
    while True:
        origin = typing.get_origin(tp)
        name = getattr(origin, "_name", None) or getattr(origin, "__name__", "")
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif name in ("Required", "NotRequired", "ReadOnly"):
            tp = typing.get_args(tp)[0]
        else:
            return tp


def check(value, tp, path: str, errors: list[str]) -> None:
    tp = unwrap(tp)
    if tp is typing.Any or tp is object:
        return
    if isinstance(tp, typing.TypeVar):
        return
    if isinstance(tp, typing.TypeAliasType if hasattr(typing, "TypeAliasType") else ()):
        tp = tp.__value__
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if is_typeddict(tp):
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object ({tp.__name__}), found {type(value).__name__}")
            return
        hints = typing.get_type_hints(tp, include_extras=True)
        for key in value:
            if key not in hints:
                errors.append(f"{path}.{key}: not declared by {tp.__name__}")
        for key in getattr(tp, "__required_keys__", ()):
            if key not in value:
                errors.append(f"{path}.{key}: required by {tp.__name__}")
        for key, item in value.items():
            if key in hints:
                check(item, hints[key], f"{path}.{key}", errors)
        return
    if origin is typing.Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        attempts = []
        for arg in args:
            sub: list[str] = []
            check(value, arg, path, sub)
            if not sub:
                return
            attempts.append(sub)
        best = min(attempts, key=len)
        errors.extend(best)
        return
    if origin is typing.Literal:
        if value not in args:
            errors.append(f"{path}: {value!r} is not one of {list(args)}")
        return
    if tp is type(None):
        if value is not None:
            errors.append(f"{path}: expected null")
        return
    if tp is str:
        if not isinstance(value, str):
            errors.append(f"{path}: expected a string, found {value!r:.60}")
        return
    if tp is bool:
        if not isinstance(value, bool):
            errors.append(f"{path}: expected a boolean, found {value!r:.60}")
        return
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            errors.append(f"{path}: expected an integer, found {value!r:.60}")
        return
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            errors.append(f"{path}: expected a number, found {value!r:.60}")
        return
    if origin in SEQUENCES or getattr(tp, "__name__", "") == "SequenceNotStr" or (
        origin is not None and getattr(origin, "__name__", "") == "SequenceNotStr"
    ):
        if not isinstance(value, list):
            errors.append(f"{path}: expected an array, found {type(value).__name__}")
            return
        item = args[0] if args else typing.Any
        for i, v in enumerate(value):
            check(v, item, f"{path}[{i}]", errors)
        return
    if origin in MAPPINGS or tp in MAPPINGS:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object, found {type(value).__name__}")
            return
        if len(args) == 2:
            for k, v in value.items():
                check(v, args[1], f"{path}.{k}", errors)
        return
    # A type this checker does not model is accepted, and said so once per run.
    UNMODELLED.add(repr(tp))


UNMODELLED: set[str] = set()


def main(path: str) -> int:
    passed = failed = 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            api = record["api"]
            errors: list[str] = []
            if api == "openai-batch":
                check(check_batch_line(record["body"], errors), TYPES[api], "body.body", errors)
            else:
                check(record["body"], TYPES[api], "body", errors)
            headers = {k.lower(): v for k, v in (record.get("headers") or {}).items()}
            if api.startswith("anthropic") and headers.get("anthropic-version") != ANTHROPIC_API_VERSION:
                errors.append(
                    f"header anthropic-version: {headers.get('anthropic-version')!r}, "
                    f"the SDK sends {ANTHROPIC_API_VERSION!r}"
                )
            if errors:
                failed += 1
                for e in errors:
                    print(f"line {n} ({api}, {record.get('mode', '')}): {e}")
            else:
                passed += 1
    for t in sorted(UNMODELLED):
        print(f"note: values of type {t} were not checked")
    print(f"anthropic {anthropic.__version__}, openai {openai.__version__}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
