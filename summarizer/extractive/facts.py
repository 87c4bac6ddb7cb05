"""What the offline summarizer needs to know about a line: its signal, its outcome, what the agent later
referred to, how to name a finding, and which identifiers are noise.

Pure and deterministic (regex scans, linear in the input). Kept apart from summarizer.extractive.briefing so the
briefing logic there reads as layout and selection only.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from summarizer.identifiers import (
    CACHED_LINE_CHARS,
    Finding,
    extract_findings,
    extract_identifiers,
    has_finding,
    is_case_insensitive_id,
)

__all__ = ["score", "is_strong", "reports_success", "is_error", "is_negative", "is_plan", "is_decision",
           "is_constraint", "finding_label", "typed_findings", "stated_values", "STATED_VALUES_MAX", "SETTING_LABEL",
           "SERVICE_VERSION_LABEL", "reference_terms", "terms_of", "noise_identifiers",
           "is_noise_class", "original_spelling", "clip", "squash", "byte_size", "ELLIPSIS"]

ELLIPSIS = "…"
_STRONG_RE = re.compile(r"\b(?:open|(?<!not )found|success\w*|succeeded|valid|pwn3d|password|credentials?|cracked|flag|"
                        r"vulnerab\w+|exploit\w*|admin\w*|root|shell|uid=\d+|authenticated|logged in|dumped|"
                        r"hash(?:es)?|secret|token|granted|discovered|confirmed|result|compromised|obtained|findings?|"
                        r"kerberoast\w*|as-?rep\w*)\b|\[\+\]|CVE-",
                        re.IGNORECASE)
# Of the result words, those that say something worked; the rest ("credentials", "hash", "admin") only name a
# topic: "[*] Dumping domain credentials" followed by two "[-]" errors is a failure, not a success.
_SUCCESS_RE = re.compile(r"\b(?:open|(?<!not )found|success\w*|succeeded|valid|pwn3d|cracked|vulnerable|"
                         r"uid=\d+|authenticated|logged in|dumped|granted|discovered|confirmed|compromised|"
                         r"obtained)\b|\[\+\]", re.IGNORECASE)
_ERROR_RE = re.compile(r"\b(?:error|failed|failure|denied|refused|time[d ]?out|not found|invalid|unable|cannot|"
                       r"can't|exception|traceback|forbidden|unauthori[sz]ed|status_[a-z_]+)\b|\[-\]|\[!\]",
                       re.IGNORECASE)
# The agent's own words for a dead end: "no X found", "did not work", "not vulnerable", "X failed because Y".
_NEGATIVE_RE = re.compile(r"\b(?:no\s+(?:\w+\s+){0,3}(?:found|detected|returned|available|results?|luck|access|"
                          r"success)|nothing|not\s+(?:vulnerable|found|possible|exploitable|accessible|reachable|"
                          r"allowed|working|valid|successful|cracked)|did(?:n't| not)|does(?:n't| not)|"
                          r"could(?:n't| not)|wasn't|isn't|failed|fails|unsuccessful|dead end|blocked|denied|unable|"
                          r"impossible|doesn't work|no longer|"
                          r"(?:is|are|was|were)\s+(?:\w+\s+)?(?:limited|restricted|disabled|filtered|patched))\b|"
                          r"^no\s+\w", re.IGNORECASE)
_POSITIVE_RE = re.compile(r"(?<!not )\b(?:excellent|great|success\w*|succeeded|worked|works|got|obtained|cracked|pwn3d|"
                          r"compromised|dumped)\b", re.IGNORECASE)
_VERSION_RE = re.compile(r"\bversion\b|\bv\d+\.\d+|\b[A-Za-z][\w-]+/\d+\.\d+", re.IGNORECASE)
# A service and its version as banners print them: "vsftpd 2.3.4", "OpenSSH 7.2p2", "Apache httpd 2.4.49".
# An address is no version: "22/tcp on 10.0.0.5" names no service.
_SERVICE_VERSION_RE = re.compile(r"\b[A-Za-z][\w.-]{2,}(?: [A-Za-z][\w.-]+)? (?!\d+\.\d+\.\d+\.\d+)"
                                 r"v?\d+\.\d+(?:\.\d+|p\d+)+\b")
# A policy or configuration value, one `key = value` (or `key: value`) a line, the key one token:
# "MinimumPasswordLength = 5", "LockoutBadCount: 0", "ms-DS-MachineAccountQuota = 10".
_SETTING_RE = re.compile(r"^\s*[A-Za-z][\w.-]{2,60}\s*(?:=|:)\s*[^\s=:][^=]{0,60}$")
_CONSTRAINT_RE = re.compile(r"\b(?:must|never|do not|don't|only|avoid|ignore|scope|not allowed|forbidden|rule|"
                            r"should not|prefer\w*)\b", re.IGNORECASE)
_DECISION_RE = re.compile(r"\b(?:decid\w+|chose|choose|instead|because|plan\w*|switch\w*|focus\w*|approach|"
                          r"strategy|conclu\w+)\b", re.IGNORECASE)
_PLAN_RE = re.compile(r"\b(?:next|todo|then|remaining|need to|should|will|let me|let's|i'll|continue|now|try|"
                      r"going to|plan)\b", re.IGNORECASE)
# An option synopsis ("usage: nxc [-p PASSWORD] [-H HASH]") names result words without reporting any result.
_OPTION_SYNOPSIS_RE = re.compile(r"\[-{1,2}\w[^\[\]]*\]")
# Technical tokens an agent quotes when it refers back to something: values with digits or punctuation
# (hosts, paths, versions, hashes, user@domain) and anything it put in quotes or backticks.
_TOKEN_RE = re.compile(r"[A-Za-z0-9_$@\\/.:+-]{4,}")
_QUOTED_RE = re.compile(r"[`'\"]([^`'\"\s]{3,80})[`'\"]")
_TECHNICAL_RE = re.compile(r"[0-9_$@\\/.:]")
# A CamelCase name (a share, an account, a class: "CertEnroll", "WinRM") is as distinctive as a path.
_CAMEL_RE = re.compile(r"\b[A-Z]?[a-z]+[A-Z][A-Za-z]*\b")
_TOKEN_TRIM = ".,:;!?()[]{}'\"`"

# Identifier classes that are tool chatter rather than something to carry forward (issue 11): hexdump offsets,
# bare numbers (SID sub-authorities, counters), interpreter and package-manager paths, installer warning URLs.
_OFFSET_RE = re.compile(r"0{4}[0-9A-Fa-f]{4}")
_LIBRARY_PATH_RE = re.compile(r"^/(?:usr/(?:local/)?(?:lib|lib64|include|share/(?:doc|man|locale|perl\d*|"
                              r"python\d*))|lib|lib64|proc/self)/|/(?:site|dist)-packages/|/node_modules/|"
                              r"/\.cache/|/__pycache__/")
_INSTALLER_URL_RE = re.compile(r"^https?://(?:[\w-]+\.)*(?:pip\.pypa\.io|pypa\.io|python\.org|npmjs\.(?:com|org)|"
                               r"nodejs\.org|rubygems\.org|crates\.io|debian\.org|ubuntu\.com|kali\.org|"
                               r"golang\.org|go\.dev)(?:[/:?#]|$)", re.IGNORECASE)
LISTING_PATHS = 30  # a tool result naming more paths than this is a listing (wordlist, directory tree)
LISTING_HEX_RUNS = 30  # ... and more bare hex runs than this a dump (service banners, hexdumps, nonces)
_HEX_RUN_RE = re.compile(r"[0-9A-Fa-f]{8,}")


def byte_size(text: str) -> int:
    return len(text.encode("utf-8"))


def squash(line: str) -> str:
    """Runs of whitespace as one space, none at the ends (str.split's whitespace is the regex's \\s; faster)."""
    return " ".join(line.split())


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, at a word boundary when one is near, marked with an ellipsis.

    Never mid-value: a cut lands on a space, so "password: x" is never left as "password:" and a hash is
    either whole or gone from the line."""
    if byte_size(text) <= limit:
        return text
    room = max(limit - byte_size(ELLIPSIS), 0)
    head = text.encode("utf-8")[:room].decode("utf-8", "ignore")
    space = head.rfind(" ")
    if space >= room // 2:
        head = head[:space].rstrip(" :,;-")
    return head + (ELLIPSIS if limit >= byte_size(ELLIPSIS) else "")


_READABLE_CHARS = 8_000
_BLOB_RUN_RE = re.compile(r"\S{200,}")


def readable(line: str) -> str:
    """What a classifier reads of a line: all of it, or for a long line (a 5 MB dump, a base64 blob) its
    words without the blob runs, at most _READABLE_CHARS, so one line never costs seconds (issue 23)."""
    if len(line) <= _READABLE_CHARS:
        return line
    return _BLOB_RUN_RE.sub(" ", line[:16 * _READABLE_CHARS])[:_READABLE_CHARS]


def is_strong(line: str) -> bool:
    return _line_is_strong(line) if len(line) <= CACHED_LINE_CHARS else _is_strong(line)


def _is_strong(line: str) -> bool:
    return bool(_STRONG_RE.search(_OPTION_SYNOPSIS_RE.sub("", readable(line))))


def reports_success(line: str) -> bool:
    """A line that says something worked: a finding, a success marker or word (not a topic word alone)."""
    line = _OPTION_SYNOPSIS_RE.sub("", readable(line))
    return bool(_SUCCESS_RE.search(line) or has_finding(line))


def is_error(line: str) -> bool:
    """An error line; option names in a usage synopsis ("[--timeout TIMEOUT]") are not errors."""
    return _line_is_error(line) if len(line) <= CACHED_LINE_CHARS else _is_error(line)


def _is_error(line: str) -> bool:
    return bool(_ERROR_RE.search(_OPTION_SYNOPSIS_RE.sub("", readable(line))))


def is_negative(line: str) -> bool:
    """A dead end in the agent's words; a sentence that also reports a win ("got X where Y failed") is a win."""
    line = readable(line)
    return bool(_NEGATIVE_RE.search(line)) and not _POSITIVE_RE.search(line) and not has_finding(line)


def is_plan(line: str) -> bool:
    return bool(_PLAN_RE.search(line))


def is_decision(line: str) -> bool:
    return bool(_DECISION_RE.search(line))


def is_constraint(line: str) -> bool:
    return bool(_CONSTRAINT_RE.search(line))


def score(line: str) -> int:
    """What a line carries: findings, identifiers, result words, errors, versions."""
    return _line_score(line) if len(line) <= CACHED_LINE_CHARS else _score(line)


def _score(line: str) -> int:
    line = readable(line)
    value = 20 if has_finding(line) else 0
    value += 10 if any(not is_noise_class(i) for i in extract_identifiers(line, limit=3)) else 0
    value += 15 if is_strong(line) else 0
    value += 12 if is_error(line) else 0
    value += 10 if _SERVICE_VERSION_RE.search(line) or _SETTING_RE.match(line) else 0  # what a host runs and is set to
    return value + (5 if _VERSION_RE.search(line) else 0)



# The classifiers are asked of every line of every prompt, and a chain's lines come back in every later prompt
# (PentAGI re-summarizes each turn, an earlier summary is merged into the next): short lines' answers are
# remembered, as summarizer.identifiers remembers a line's scan, up to the same CACHED_LINE_CHARS; a long line
# (a dump) is read every time.
_line_score = functools.lru_cache(maxsize=8_192)(_score)
_line_is_error = functools.lru_cache(maxsize=8_192)(_is_error)
_line_is_strong = functools.lru_cache(maxsize=8_192)(_is_strong)

_CRYPT_LABELS = {"1": "md5crypt hash", "2a": "bcrypt hash", "2b": "bcrypt hash", "2y": "bcrypt hash",
                 "5": "sha256crypt hash", "6": "sha512crypt hash", "y": "yescrypt hash"}
_HEX32_RE = re.compile(r"[0-9A-Fa-f]{32}")


def finding_label(finding: Finding) -> str:
    """A finding's type as an operator would name it: a password is not an NT hash is not a Kerberos ticket."""
    value, kind = finding.value, finding.kind
    if value.lower().startswith("$krb5tgs$"):
        return "Kerberos TGS ticket hash (kerberoast)"
    if value.lower().startswith("$krb5asrep$"):
        return "Kerberos AS-REP hash"
    if value.lower().startswith("$krb5pa$"):
        return "Kerberos pre-auth hash"
    if value.startswith("$"):
        return _CRYPT_LABELS.get(value[1:].split("$", 1)[0], "crypt hash")
    if "::" in value and kind == "hash":
        return "NetNTLMv2 hash"
    if re.fullmatch(r"[0-9A-Fa-f]{32}:[0-9A-Fa-f]{32}", value):
        return "LM:NT hash pair"
    if re.fullmatch(r"[^:]+:\d+:[0-9A-Fa-f]{32}:[0-9A-Fa-f]{32}", value):
        return "NTLM hash (SAM/NTDS dump)"
    secret = value.rsplit(":", 1)[-1]
    if kind == "hash" or _HEX32_RE.fullmatch(secret):
        return "NT hash" if kind != "credential" else "NT hash login (pass-the-hash)"
    if kind == "password":
        label = re.search(r"(?i)(api[_-]?key|token|secret)\s*[:=]", finding.line)
        return {"secret": "secret"}.get(label.group(1).lower(), label.group(1)) if label else "password"
    if kind == "credential" and value.endswith(":"):
        return "login with an empty password"
    return {"credential": "credential (user:password)", "user": "valid user", "flag": "flag"}.get(kind, kind)


def typed_findings(text: str) -> list[str]:
    """"- <type>: <value>" lines, values verbatim, one per distinct value (the most specific type wins)."""
    by_value: dict[str, str] = {}
    for finding in extract_findings(text):
        if ELLIPSIS in finding.value.rstrip(ELLIPSIS):
            continue  # a copy an earlier summary already cut short: the line itself carries over
        label = finding_label(finding)
        known = by_value.get(finding.value)
        if known is None or (known in ("password", "credential (user:password)") and label != known):
            by_value[finding.value] = label
    # a bare secret already shown inside a user:secret pair is the same finding twice, and so is a user:secret
    # pair already shown with its domain ("corp\\user:secret")
    paired = [v for v in by_value if ":" in v]
    return [f"- {label}: {value}" for value, label in by_value.items()
            if not any(p != value and _same_finding(value, p) for p in paired)]


SETTING_LABEL, SERVICE_VERSION_LABEL = "- setting", "- service version"
STATED_VALUES_MAX = 12  # of each kind a ledger restores: a 300-line registry dump is not 300 findings


def stated_values(text: str) -> list[str]:
    """"- setting: key = value" and "- service version: name x.y.z" lines for what a tool reported a host is
    set to and runs, the values the offline summarizer ranks like an identifier (`score`), verbatim, at most
    STATED_VALUES_MAX of each kind in order of appearance. A setting needs `key = value`, or `Key: value` with a
    CamelCase key ("LockoutBadCount: 0"): "Status: 200" and prose with a colon are not settings."""
    settings: dict[str, None] = {}
    versions: dict[str, None] = {}
    for line in text.splitlines():
        line = squash(line)
        if len(line) > _READABLE_CHARS:
            continue
        if _SETTING_RE.match(line) and ("=" in line or _CAMEL_RE.fullmatch(line.split(":", 1)[0].strip())):
            if len(settings) < STATED_VALUES_MAX:
                settings.setdefault(line, None)
            continue
        for match in _SERVICE_VERSION_RE.finditer(line):
            if len(versions) < STATED_VALUES_MAX:
                versions.setdefault(match.group(0), None)
    return [f"{SETTING_LABEL}: {s}" for s in settings] + [f"{SERVICE_VERSION_LABEL}: {v}" for v in versions]


def _same_finding(value: str, fuller: str) -> bool:
    """True when `fuller` states `value` with more context: the pair around a bare secret, the domain before
    a user:secret pair ("corp.local\\user:secret")."""
    if ":" not in value:
        return fuller.endswith(":" + value) or fuller.startswith(value + ":")
    return fuller.endswith(("\\" + value, "/" + value))


@functools.lru_cache(maxsize=8_192)
def terms_of(text: str) -> frozenset[str]:
    """The technical tokens of `text` (see _TOKEN_RE), trimmed of punctuation, case kept. Remembered: a chain
    is summarized again every turn, so the same messages and lines are read again and again."""
    found = {t.strip(_TOKEN_TRIM) for t in _TOKEN_RE.findall(text)}
    terms = {t for t in found if len(t) >= 4 and _TECHNICAL_RE.search(t)}
    return frozenset(terms | set(_QUOTED_RE.findall(text)) | {c for c in _CAMEL_RE.findall(text) if len(c) >= 4})


def reference_terms(texts: Iterable[tuple[int, str]]) -> dict[str, int]:
    """term -> the last position at which the agent (its notes or tool calls) used it."""
    last: dict[str, int] = {}
    for position, text in texts:
        for term in terms_of(text):
            last[term] = position
    return last


def is_noise_class(identifier: str) -> bool:
    """Bare numbers, hexdump offsets, interpreter/library paths and installer warning URLs."""
    if identifier.isdigit():
        return True
    if len(identifier) == 8 and _OFFSET_RE.fullmatch(identifier):
        return True
    return bool(_LIBRARY_PATH_RE.search(identifier) or _INSTALLER_URL_RE.match(identifier))


def noise_identifiers(identifiers: Iterable[str], agent_text: str, results: Iterable[str]) -> set[str]:
    """Identifiers of a noise class, paths from a listing or hex runs from a dump, that the agent never wrote."""
    listed: set[str] = set()
    for result in results:
        found = extract_identifiers(result)
        paths = [i for i in found if i.startswith("/")]
        if len(paths) > LISTING_PATHS:
            listed.update(paths)
        banners = [i for i in found if _HEX_RUN_RE.fullmatch(i)]
        if len(banners) > LISTING_HEX_RUNS:  # a dump of banner hex (issue 23): runs inside a finding stay
            secrets = "\n".join(f.value for f in extract_findings(result)).upper()
            listed.update(i.upper() for i in banners if i.upper() not in secrets)
    upper = agent_text.upper()
    noise = set()
    for identifier in identifiers:
        said = (identifier.upper() in upper) if is_case_insensitive_id(identifier) else identifier in agent_text
        key = identifier.upper() if is_case_insensitive_id(identifier) else identifier
        if not said and (key in listed or is_noise_class(identifier)):
            noise.add(identifier)
    return noise


def original_spelling(identifiers: list[str], source: str) -> list[str]:
    """Identifiers as the source wrote them: extract_identifiers upper-cases hex, a summary must not."""
    out = []
    for identifier in identifiers:
        out.append(_spelled_as_in(identifier, source) if is_case_insensitive_id(identifier) else identifier)
    return out


_SPELLING_SEARCH_CHARS = 256  # a longer run (a 5 MB hex blob) is looked up as written: no regex of its size


def _spelled_as_in(identifier: str, source: str) -> str:
    for spelling in (identifier, identifier.lower()):
        if spelling in source:
            return spelling
    if len(identifier) > _SPELLING_SEARCH_CHARS:
        return identifier
    match = re.search(re.escape(identifier), source, re.IGNORECASE)
    return match.group(0) if match else identifier
