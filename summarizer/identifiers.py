"""Opaque identifiers and security findings in free text.

`extract_identifiers` implements the identifier policy of compaction.md §6: the strings a summary must keep
byte for byte (hex runs of 8+ characters, URLs, absolute paths, host:port, IPv4 addresses, integers of 6+ digits,
CVE ids). `extract_findings` recognises what pentest tools print when something is won: credentials, hashes,
valid user names, flags. Both are regex scans, linear in the input, and deterministic (order of first appearance).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["extract_identifiers", "missing_identifiers", "extract_findings", "has_finding", "Finding",
           "is_case_insensitive_id", "extract_names", "CACHED_LINE_CHARS"]

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_HOSTNAME_RE = re.compile(r"localhost|(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*")
_SEGMENT = r"[\w.~+@%-]+"
# Alternatives are tried left to right at each position, so a URL swallows the path and port inside it and a
# host:port wins over the bare address it starts with. A hex run needs a letter unless it follows "0x" (then
# it is hex by declaration: 0x80070005); the prefix itself is not part of the identifier.
_IDENTIFIER_RE = re.compile(
    rf"""
    (?P<url>\b[A-Za-z][A-Za-z0-9+.-]{{1,15}}://[^\s<>"'`]+)
  | (?P<cve>\bCVE-\d{{4}}-\d{{4,}}\b)
  | (?P<uuid>(?<![\w-])[0-9A-Fa-f]{{8}}-[0-9A-Fa-f]{{4}}-[0-9A-Fa-f]{{4}}-[0-9A-Fa-f]{{4}}-[0-9A-Fa-f]{{12}}(?![\w-]))
  | (?P<hostport>(?<![\w.-])(?P<host>[A-Za-z0-9.-]{{1,253}}):(?P<port>\d{{1,5}})(?![\w:]|\.\d))
  | (?P<ipv4>(?<![\w.]){_IPV4}(?:/\d{{1,2}}(?!\d))?(?!\w|\.\d))
  | (?P<hex>(?:(?<=(?<![A-Za-z0-9_])0[xX])|(?<![A-Za-z0-9_])(?=\d*[A-Fa-f]))[0-9A-Fa-f]{{8,}}(?![A-Za-z0-9_]))
  | (?P<winpath>(?<![\w])[A-Za-z]:\\(?:[\w.$-]+\\?)+)
  | (?P<unc>\\\\[\w.-]+\\[\w.$-]+(?:\\[\w.$-]+)*)
  | (?P<path>(?<![\w.:/\\-])(?:/{_SEGMENT}){{2,}}/?|(?<![\w.:/\\-])/[\w~+@%-]*\.[\w.~+@%-]+)
  | (?P<int>(?<![\w.])(?<!\d\.)\d{{6,}}(?!\w|\.\d))
    """,
    re.VERBOSE | re.IGNORECASE,
)
_IPV4_RE = re.compile(_IPV4)
_TRAILING_PUNCT = ".,;:!?'\""
_HEXISH_RE = re.compile(r"[0-9A-Fa-f]+(?:-[0-9A-Fa-f]+)*")
_MAX_PORT = 65535


def is_case_insensitive_id(identifier: str) -> bool:
    """Hex runs, UUIDs and CVE ids compare case-insensitively (fact 44: lower-case hex satisfies upper-case)."""
    return bool(_HEXISH_RE.fullmatch(identifier)) or identifier.upper().startswith("CVE-")


def _strip_url(url: str) -> str:
    url = url.rstrip(_TRAILING_PUNCT)
    for close, open_ in ((")", "("), ("]", "["), ("}", "{")):
        while url.endswith(close) and url.count(close) > url.count(open_):
            url = url[:-1].rstrip(_TRAILING_PUNCT)
    return url


def _values(match: re.Match[str]) -> list[str]:
    kind = match.lastgroup if match.lastgroup not in ("host", "port") else "hostport"
    text = match.group(0)
    if kind == "url":
        return [_strip_url(text)]
    if kind in ("cve", "hex", "uuid"):
        return [text.upper()]
    if kind == "hostport":
        host = match.group("host")
        if int(match.group("port")) > _MAX_PORT:
            return []
        if _IPV4_RE.fullmatch(host):
            return [text, host]
        return [text] if _HOSTNAME_RE.fullmatch(host) else []
    if kind in ("path", "winpath"):
        stripped = text.rstrip(_TRAILING_PUNCT)
        return [stripped] if len(stripped) > 2 else []
    return [text]


def extract_identifiers(text: str, *, limit: int | None = None) -> list[str]:
    """Every opaque identifier in `text`, unique, in order of first appearance.

    Hex runs and CVE ids are reported upper-case and de-duplicated case-insensitively; an IPv4 host:port also
    yields the bare address. `limit` keeps only the first N (None = all).
    """
    seen: dict[str, str] = {}
    for line in (text or "").split("\n"):  # no identifier spans a line break, so lines are scanned alone
        for key, value in _line_identifiers(line) if len(line) <= CACHED_LINE_CHARS else _scan_keyed(line):
            if key not in seen:
                seen[key] = value
                if limit is not None and len(seen) >= limit:
                    return list(seen.values())
    return list(seen.values())


def _scan_identifiers(line: str) -> tuple[str, ...]:
    return tuple(value for match in _IDENTIFIER_RE.finditer(line) for value in _values(match) if value)


def _scan_keyed(line: str) -> tuple[tuple[str, str], ...]:
    """(de-duplication key, identifier) of each identifier of `line`: the key folds case where it does not matter."""
    return tuple((value.upper() if is_case_insensitive_id(value) else value, value)
                 for value in _scan_identifiers(line))


# A summarizer reads the same lines again and again (a chain is re-summarized every turn, an earlier summary
# is merged into the next), so the scan of a line is remembered with each identifier's key (the key check was
# a quarter of the scan's calls); long lines (dumps) are scanned every time.
_line_identifiers = functools.lru_cache(maxsize=8_192)(_scan_keyed)
CACHED_LINE_CHARS = 1_000  # longer lines are scanned every time (summarizer.extractive.facts too)


def missing_identifiers(identifiers: list[str], text: str) -> list[str]:
    """The identifiers that do not occur in `text` (hex/UUID/CVE compared case-insensitively), input order."""
    text = text or ""
    upper = text.upper()
    missing = []
    for identifier in identifiers:
        found = identifier.upper() in upper if is_case_insensitive_id(identifier) else identifier in text
        if not found:
            missing.append(identifier)
    return missing


@dataclass(frozen=True)
class Finding:
    """One thing a tool reported as won: `kind` is credential | hash | password | user | flag."""

    kind: str
    value: str
    line: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.value}"


_LINE_CAP_CHARS = 240
_HASH_CAP_CHARS = 160
_Q = r"""['"`]?"""
_FINDING_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # netexec / crackmapexec success line: "[+] essos.local\missandei:fr3edom (Pwn3d!)"
    ("credential", re.compile(r"\[\+\]\s+(?P<value>[\w.-]+\\[\w.$-]+:\S*)")),
    # kerbrute: "[+] VALID LOGIN:  user@domain:password" / "[+] VALID USERNAME:  user@domain"
    ("credential", re.compile(r"VALID LOGIN:\s+(?P<value>\S+:\S+)", re.IGNORECASE)),
    ("user", re.compile(r"VALID USERNAME:\s+(?P<value>\S+)", re.IGNORECASE)),
    # an announced crack or a stated pair: "Password cracked: jorah:fr3edom", "credentials: corp\\bob:S3cret!"
    # (not a format legend: "Dumping credentials (domain\\uid:rid:lmhash:nthash)" opens a bracket first)
    ("credential", re.compile(
        r"(?i:\bcracked|\bcred(?:ential)?s?|\bfound|\bvalid|\bworking|\bpwned|\bcompromised)\b[^:(\n]{0,40}?[:=]\s*"
        r"[`'\"*]*(?P<value>(?:[\w.-]+\\)?[\w.@$-]+:[^\s`'\"*,;]+)")),
    # "DOMAIN\\user:pass" anywhere on a line that also says it worked: "[+] ... (Pwn3d!)", "success", "valid"
    ("credential", re.compile(r"(?<![\w\\])(?P<value>[A-Za-z][\w.-]*\\[\w.$-]+:[^\s`'\"*,;()]+)"
                              r"(?=.*(?:\(Pwn3d!\)|\b(?i:success\w*|valid|authenticated|works?|worked)\b))")),
    # hydra / medusa: "login: root   password: toor"
    ("credential", re.compile(r"\blogin:\s*(?P<user>\S+)\s+password:\s*(?P<secret>\S+)", re.IGNORECASE)),
    # command lines: "-u 'missandei' -p 'fr3edom'", "--username x --password y"
    ("credential", re.compile(
        rf"(?:\s-u|--user(?:name)?)[ =]{_Q}(?P<user>[^\s'\"`]+){_Q}"
        rf"\s+(?:-p|--pass(?:word)?)[ =]{_Q}(?P<secret>[^\s'\"`]+){_Q}")),
    # prose: "Password for `missandei` is `fr3edom`"
    ("credential", re.compile(
        rf"password (?:for|of) (?:user |account )?{_Q}(?P<user>[\w.@\\$-]+){_Q}"
        rf" (?:is|=|:) {_Q}(?P<secret>[^\s'\"`]+){_Q}",
        re.IGNORECASE)),
    # prose that quotes a pair: "cleartext password: **robb.stark : sexywolfy**"
    ("credential", re.compile(
        r"password:\s*[*`'\"]*(?P<user>[\w.@\\$-]+)\s+:\s+(?P<secret>[^\s*`'\"]+)", re.IGNORECASE)),
    # secretsdump / pwdump: "Administrator:500:aad3b435...:31d6cfe0...:::"
    ("hash", re.compile(r"(?<![\w.\\$-])(?P<value>[\w.\\$-]+:\d+:[0-9a-fA-F]{32}:[0-9a-fA-F]{32}):::")),
    # bare "LM:NT" pairs as passed to -H
    ("hash", re.compile(r"(?<![\w:])(?P<value>[0-9a-fA-F]{32}:[0-9a-fA-F]{32})(?![\w:])")),
    # kerberos / crypt style hashes: $krb5asrep$, $krb5tgs$, $6$, $2y$, NetNTLMv2 "user::DOMAIN:chal:resp:blob"
    ("hash", re.compile(r"(?P<value>\$(?:krb5(?:asrep|tgs|pa)|[0-9][a-z]?|[a-z0-9-]{2,12})\$\S{16,})")),
    ("hash", re.compile(r"(?<![\w.$-])(?P<value>[\w.$-]+::[\w.-]+:[0-9a-fA-F]{16}:[0-9a-fA-F]{32}:[0-9a-fA-F]{32,})")),
    # "Password: x", "password=x", "pwd: x", "api_key=x", "token: x" (labels only, not "Password history length")
    ("password", re.compile(
        rf"(?<![\w-])(?:[A-Za-z0-9]+[_-])*(?P<label>password|passwd|pass|pwd|secret|api[_-]?key|token)\s*[:=]\s*{_Q}(?P<value>[^\s'\"`,;]+)",
        re.IGNORECASE)),
    ("flag", re.compile(r"(?P<value>\b(?:flag|htb|thm|ctf|picoctf)\{[^}\s]{1,200}\})", re.IGNORECASE)),
    # an agent announcing what it cracked: "John cracked another hash for north: `345ertdfg`"
    ("password", re.compile(r"\bcracked\b[^`*\n]{0,80}?[:=]\s*(?:`|\*\*)(?P<value>[^`*\s]{3,})(?:`|\*\*)",
                            re.IGNORECASE)),
]
# Every finding pattern needs one of these: "[+]", "valid", "login:", "-u", a password label, "crack", a hash's "$",
# "::" or 32 hex digits and a colon, a flag's "{". Most lines have none and skip the thirteen patterns.
_FINDING_HINT_RE = re.compile(r"\[\+\]|valid|login:|-u|pass|pwd|secret|api|token|crack|\$|::|[0-9a-f]{32}:|\{|"
                              r"cred|found|working|pwn|compromised|\\", re.IGNORECASE)
_PLACEHOLDER_SECRETS = {"", "''", '""', "<password>", "password", "pass", "none", "null", "******", "xxx", "$password"}
# "-u users.txt -p /tmp/passwords.txt" sprays lists and "-p \" continues a shell line: neither names a secret.
_NOT_A_PAIR_RE = re.compile(r"[\w.-]*:\d+|[\w.+-]+:/.*|.*:(?:true|false|yes|no|none|null)", re.IGNORECASE)
_NOT_A_LOGIN_RE = re.compile(r"^(?:~?/|\./)|\.(?:txt|lst|list|dic)$|\\$")


def _finding_value(kind: str, match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    if "user" in groups and "secret" in groups:
        user, secret = groups["user"], groups["secret"]
        if secret.lower() in _PLACEHOLDER_SECRETS or not user or any(map(_NOT_A_LOGIN_RE.search, (user, secret))):
            return None
        return f"{user}:{secret}"
    value = groups["value"]
    if kind == "credential" and value.split("\\", 1)[-1].startswith(":"):
        return None  # "[+] essos.local\:" is an anonymous (null) session, not a credential
    if kind == "credential" and _NOT_A_PAIR_RE.fullmatch(value):
        return None  # "found: 10.0.0.5:445", "valid: 12:30" are an address and a time, not user:password
    value = value.strip("*") if kind == "password" else value  # Markdown bold around a quoted secret
    if kind == "password" and (value.lower() in _PLACEHOLDER_SECRETS or any(c in value for c in "[](){}")):
        return None  # "password = args[++i]" is code reading a password, not a password
    if kind == "hash" and len(value) > _HASH_CAP_CHARS:
        return value[:_HASH_CAP_CHARS] + "…"
    return value


def extract_findings(text: str) -> list[Finding]:
    """Credentials, hashes, valid users and flags printed by common pentest tools, unique, in text order."""
    found: dict[tuple[str, str], Finding] = {}
    ordered: list[tuple[int, tuple[str, str]]] = []
    for line_start, line in _lines_with_offsets(text or ""):
        scanned = _line_findings(line) if len(line) <= CACHED_LINE_CHARS else _scan_long_line(line)
        for start, finding in scanned:
            key = (finding.kind, finding.value)
            if key not in found:
                found[key] = finding
                ordered.append((line_start + start, key))
    ordered.sort(key=lambda item: item[0])
    return [found[key] for _, key in ordered]


def has_finding(line: str) -> bool:
    """True when one line (no line break) holds a finding: extract_findings' remembered scan, without its
    ordering work, for the classifiers that ask it of every line."""
    return bool(_line_findings(line) if len(line) <= CACHED_LINE_CHARS else _scan_long_line(line))


def _scan_findings(line: str) -> tuple[tuple[int, Finding], ...]:
    """(offset, finding) of one line, in pattern order; a line none of whose patterns can match is skipped."""
    if not _FINDING_HINT_RE.search(line):
        return ()
    out: list[tuple[int, Finding]] = []
    for kind, pattern in _FINDING_PATTERNS:
        for match in pattern.finditer(line):
            value = _finding_value(kind, match)
            if value is not None:
                out.append((match.start(), Finding(kind, value, line.strip()[:_LINE_CAP_CHARS])))
    return tuple(out)


_line_findings = functools.lru_cache(maxsize=8_192)(_scan_findings)
# A blob token (base64, a binary dump, a 5 MB run) holds no finding a person reads, and scanning it with the
# seventeen patterns costs seconds per megabyte: long lines are scanned in word-aligned windows without them.
_BLOB_TOKEN_RE = re.compile(r"\S{4000,}")
_WINDOW_CHARS = 4_000


def _scan_long_line(line: str) -> tuple[tuple[int, Finding], ...]:
    out: list[tuple[int, Finding]] = []
    position = 0
    for piece_start, piece in _readable_pieces(line):
        while position < piece_start + len(piece):
            offset = max(position - piece_start, 0)
            end = min(offset + _WINDOW_CHARS, len(piece))
            if end < len(piece):
                space = piece.rfind(" ", offset + _WINDOW_CHARS // 2, end)
                end = space if space > offset else end
            out.extend((piece_start + offset + start, f) for start, f in _scan_findings(piece[offset:end]))
            position = piece_start + end
    return tuple(out)


def _readable_pieces(line: str) -> list[tuple[int, str]]:
    """(start, text) of the stretches of `line` between blob tokens."""
    pieces, start = [], 0
    for blob in _BLOB_TOKEN_RE.finditer(line):
        if blob.start() > start:
            pieces.append((start, line[start:blob.start()]))
        start = blob.end()
    if start < len(line):
        pieces.append((start, line[start:]))
    return pieces


def _lines_with_offsets(text: str) -> list[tuple[int, str]]:
    out, offset = [], 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line))
        offset += len(line)
    return out


# Names a pentester carries forward that are not opaque identifiers (compaction.md §6 leaves them out, so the
# audit never enforces them): fully qualified host and domain names, machine accounts, DOMAIN\\user and
# user@domain principals, certificate authorities, and a value labelled as a user, host or CA name. One
# detector feeds both the offline summarizer's list and the ledger appended to a model's summary (issue 23).
_NAME_TLDS = ("local|lan|corp|internal|intranet|home|test|htb|thm|ctf|domain|ad|com|org|net|edu|gov|io|dev|"
              "cloud|int|mil|uk|de|fr|ru|cn|jp|us|eu|nl|au|ch|it|es|se|pl|br|in")
_FILE_SUFFIX_RE = re.compile(r"\.(?:txt|log|json|xml|csv|py|sh|ps1|exe|dll|sys|bat|cmd|conf|cfg|ini|yml|yaml|"
                             r"pol|inf|zip|gz|tar|kirbi|ccache|pfx|pem|crt|key|kdbx|html?|php|aspx?|js|md|bin|"
                             r"out|nmap|gnmap|db|sql|bak|old|tmp|cmt|jpg|png|pdf|docx?|xlsx?)$", re.IGNORECASE)
# Each pattern beside a string every match of it contains: a line without that string skips the pattern (most lines
# hold no "\\", "@", "$" or "-CA", and a substring test costs a fraction of a regex pass over the line).
_NAME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # FQDNs: "dc01.essos.local", "castelblack.north.sevenkingdoms.local", "essos.local"
    (".", re.compile(rf"(?<![\w.@/\\-])(?:[A-Za-z][A-Za-z0-9-]{{0,62}}\.)+(?i:{_NAME_TLDS})(?![\w.-]|\.\w)")),
    # principals: "ESSOS\\missandei", "essos.local\\Administrator", "jon.snow@north.sevenkingdoms.local"
    ("\\", re.compile(r"(?<![\w\\])[A-Za-z][\w.-]{1,62}\\[A-Za-z][\w.$-]{0,63}(?![\w\\])")),
    ("@", re.compile(r"(?<![\w.@-])[A-Za-z][\w.-]{0,63}@(?:[A-Za-z][A-Za-z0-9-]*\.)+[A-Za-z]{2,}(?![\w.-])")),
    # machine accounts ("MEEREEN$") and CA names in the AD CS convention ("ESSOS-CA", "corp-DC01-CA")
    ("$", re.compile(r"(?<![\w$-])[A-Za-z][A-Za-z0-9-]{2,14}\$(?![\w$])")),
    ("-CA", re.compile(r"(?<![\w-])[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*-CA(?![\w-])")),
)
# "user: jorah", "Username ... : sql_svc", "hostname = MEEREEN", "CA Name: ESSOS-CA", "(name:WINTERFELL)"; a label
# ending a sentence is no label ("... domain. Previously had ..." names nothing)
_LABELLED_NAME_RE = re.compile(
    r"(?i:\b(?:user(?:name)?|account|login|samaccountname|host(?:name)?|computer(?:name)?|netbios(?:[ _]name)?|"
    r"dns(?:[ _]host)?(?:[ _]?name)?|ca(?:[ _]name)?|domain(?:[ _]name)?|name))(?:[.\s]*[:=]+|\s*\.{2,})\s*[`'\"]?"
    r"(?P<value>[A-Za-z][\w.$-]{2,63})")
# "host MEEREEN", "on server WEB01": a host label followed by an upper-case NetBIOS name
_HOST_WORD_RE = re.compile(r"(?i:\b(?:host|computer|server|machine|dc|workstation))\s+"
                           r"(?P<value>[A-Z][A-Z0-9-]{2,14})\b")
_NAME_STOPWORDS = frozenset({"none", "null", "true", "false", "unknown", "n/a", "the", "and", "for", "with", "not",
                             "yes", "no", "default", "guest", "anonymous", "password", "user", "users", "name"})


def extract_names(text: str) -> list[str]:
    """Host, domain, user and CA names in `text`, unique, in order of first appearance (case kept)."""
    seen: dict[str, str] = {}
    for line in (text or "").split("\n"):
        if len(line) > _NAME_LINE_CHARS:
            continue  # a 5 MB blob line names nothing an agent reads; scanning it would cost seconds
        for name in _line_names(line):
            seen.setdefault(name.lower(), name)
    return list(seen.values())


@functools.lru_cache(maxsize=8_192)
def _line_names(line: str) -> tuple[str, ...]:
    found: list[tuple[int, str]] = []
    for needed, pattern in _NAME_PATTERNS:
        if needed in line:
            found.extend((m.start(), m.group(0)) for m in pattern.finditer(line))
    labelled_patterns = (_LABELLED_NAME_RE, _HOST_WORD_RE) if _may_hold_label(line) else (_HOST_WORD_RE,)
    for labelled in labelled_patterns:
        found.extend((m.start("value"), m.group("value").rstrip(".-")) for m in labelled.finditer(line))
    found.sort()
    return tuple(n for _, n in found if _is_name(n))


def _may_hold_label(line: str) -> bool:
    """Whether `_LABELLED_NAME_RE` can match: its label is followed by ":", "=" or a run of dots."""
    return ":" in line or "=" in line or ".." in line


def _is_name(name: str) -> bool:
    if len(name) < 3 or name.lower() in _NAME_STOPWORDS or _FILE_SUFFIX_RE.search(name):
        return False
    if _IPV4_RE.fullmatch(name) or name.replace(".", "").isdigit():
        return False
    return not name.lower().startswith(("www.", "http"))


_NAME_LINE_CHARS = 4_000
