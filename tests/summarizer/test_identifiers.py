"""Identifier extraction and audit (compaction.md §6, acceptance facts 43-44) and pentest findings."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer.identifiers import (
    Finding,
    _scan_identifiers,
    extract_findings,
    extract_identifiers,
    is_case_insensitive_id,
    missing_identifiers,
)

FACT_43_TEXT = (
    "Year 2026 count 42 port 18789 ticket 123456 URL https://example.com/a, path /tmp/x.log, tiny /a, on/off."
)


def test_it_reports_one_upper_case_hex_for_both_cases():
    assert extract_identifiers("a1b2c3d4e5f6 then later A1B2C3D4E5F6") == ["A1B2C3D4E5F6"]


def test_it_keeps_long_numbers_urls_and_paths_of_fact_43():
    found = extract_identifiers(FACT_43_TEXT)
    assert {"123456", "https://example.com/a", "/tmp/x.log"} <= set(found)


@pytest.mark.parametrize("excluded", ["2026", "42", "18789", "/a", "/off", "on/off"])
def test_it_ignores_short_numbers_and_path_fragments_of_fact_43(excluded):
    assert excluded not in extract_identifiers(FACT_43_TEXT)


def test_it_reports_repeated_identifiers_once():
    unique = [f"/srv/data/file{i:02d}.bin" for i in range(12)]
    text = " ".join([unique[0]] * 10 + unique)
    assert extract_identifiers(text) == unique


def test_the_limit_keeps_the_first_identifiers():
    text = " ".join(f"ticket {100000 + i}" for i in range(30))
    assert extract_identifiers(text, limit=12) == [str(100000 + i) for i in range(12)]


def test_it_keeps_order_of_first_appearance():
    text = "see https://a.example/x then 10.0.0.5 then /etc/passwd then CVE-2021-44228"
    assert extract_identifiers(text) == ["https://a.example/x", "10.0.0.5", "/etc/passwd", "CVE-2021-44228"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SMB 192.168.122.10:445 MEEREEN", ["192.168.122.10:445", "192.168.122.10"]),
        ("listening on web01.acme.local:8443.", ["web01.acme.local:8443"]),
        ("scope 192.168.122.0/24 only", ["192.168.122.0/24"]),
        ("target is 10.10.5.23.", ["10.10.5.23"]),
        ("cve-2019-0708 (BlueKeep)", ["CVE-2019-0708"]),
        ("(see http://10.0.0.5:8080/admin?id=1).", ["http://10.0.0.5:8080/admin?id=1"]),
        ("smb://fileserver/share and ldap://dc01.corp.local", ["smb://fileserver/share", "ldap://dc01.corp.local"]),
        ("cat /osint_users.txt", ["/osint_users.txt"]),
        ("ls /usr/share/wordlists/rockyou.txt;", ["/usr/share/wordlists/rockyou.txt"]),
        ("copy C:\\Windows\\Temp\\x.exe now", ["C:\\Windows\\Temp\\x.exe"]),
        ("mount \\\\braavos\\all here", ["\\\\braavos\\all"]),
        ("id 550e8400-e29b-41d4-a716-446655440000", ["550E8400-E29B-41D4-A716-446655440000"]),
        ("NT hash 31d6cfe0d16ae931b73c59d7e0c089c0", ["31D6CFE0D16AE931B73C59D7E0C089C0"]),
        ("commit deadbeefcafe1234 merged", ["DEADBEEFCAFE1234"]),
        ("Passwords.: 14344385 tried", ["14344385"]),
    ],
)
def test_it_extracts_common_identifier_shapes(text, expected):
    assert extract_identifiers(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Windows Server 2016 build 17763",   # short numbers
        "pi is 3.14159265 roughly",           # a decimal is not an integer id
        "tool call call_da04cee15df349efbcbc6b43",  # hex glued to a word is part of that word
        "net user /domain and dir /s",        # command switches are not paths
        "TCP/IP and and/or and 80/443",       # slash fragments
        "meet at 12:30:45",                   # a clock is not host:port
        "nmap -p 1-65535 --min-rate 2000",
    ],
)
def test_it_does_not_invent_identifiers(text):
    assert extract_identifiers(text) == []


def test_a_port_above_65535_is_not_host_port():
    assert extract_identifiers("db.example.com:99999") == []


def test_missing_reports_identifiers_absent_from_the_summary_in_order():
    ids = ["10.0.0.5", "/etc/passwd", "https://x.example/a"]
    assert missing_identifiers(ids, "found /etc/passwd readable") == ["10.0.0.5", "https://x.example/a"]


def test_lower_case_hex_in_the_summary_satisfies_an_upper_case_identifier():
    assert missing_identifiers(["A1B2C3D4E5F6"], "hash a1b2c3d4e5f6 cracked") == []


def test_other_identifiers_are_compared_exactly():
    assert missing_identifiers(["/tmp/X.log"], "wrote /tmp/x.log") == ["/tmp/X.log"]


@given(st.lists(st.sampled_from(["10.0.0.5", "/etc/passwd", "ABCDEF12", "123456", "CVE-2020-1472"]), min_size=1))
def test_extracted_identifiers_are_never_missing_from_their_own_text(values):
    text = " and ".join(values)
    assert missing_identifiers(extract_identifiers(text), text) == []


@given(st.text(max_size=300))
def test_extraction_is_unique_and_deterministic(text):
    first = extract_identifiers(text)
    assert first == extract_identifiers(text)
    assert len({v.upper() for v in first}) == len(first)


def _values(text: str, kind: str | None = None) -> list[str]:
    return [f.value for f in extract_findings(text) if kind is None or f.kind == kind]


@pytest.mark.parametrize(
    ("line", "kind", "value"),
    [
        ("SMB  192.168.122.12 445 MEEREEN [+] essos.local\\missandei:fr3edom",
         "credential", "essos.local\\missandei:fr3edom"),
        ("SMB  10.0.0.9 445 DC01 [+] corp.local\\admin:Winter2022! (Pwn3d!)",
         "credential", "corp.local\\admin:Winter2022!"),
        ("[22][ssh] host: 10.0.0.5   login: root   password: toor", "credential", "root:toor"),
        ("nxc smb 10.0.0.9 -u 'missandei' -p 'fr3edom' --shares", "credential", "missandei:fr3edom"),
        ("impacket --username svc_sql --password 'P@ss w0rd'", "credential", "svc_sql:P@ss"),
        ("Password for `missandei` is `fr3edom`.", "credential", "missandei:fr3edom"),
        ("2026/01/01 [+] VALID LOGIN:\t jon.snow@north.local:iknownothing",
         "credential", "jon.snow@north.local:iknownothing"),
        ("2026/01/01 [+] VALID USERNAME:\t arya.stark@north.local", "user", "arya.stark@north.local"),
        ("Administrator:500:aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0:::", "hash",
         "Administrator:500:aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0"),
        ("use -H aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0", "hash",
         "aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0"),
        ("$krb5asrep$23$missandei@ESSOS.LOCAL:53d5db198c7db3342f77f55471759587$dd01be24", "hash",
         "$krb5asrep$23$missandei@ESSOS.LOCAL:53d5db198c7db3342f77f55471759587$dd01be24"),
        ("Password: Summer2024", "password", "Summer2024"),
        ("DB_PASSWORD=hunter2 in .env", "password", "hunter2"),
        ("api_key = sk-test-123", "password", "sk-test-123"),
        ("cat /root/flag.txt -> HTB{r00t_0wn3d}", "flag", "HTB{r00t_0wn3d}"),
    ],
)
def test_it_finds_what_pentest_tools_report(line, kind, value):
    assert value in _values(line, kind)


@pytest.mark.parametrize(
    "line",
    [
        "SMB 192.168.122.12 445 MEEREEN [+] essos.local\\:",   # anonymous null session
        "Minimum password length: 5",
        "Password history length: 24",
        "* Passwords.: 14344385",
        "nxc smb 10.0.0.9 -u '' -p ''",
        "Password: ******",
        "const password = args[++i];",
    ],
)
def test_it_ignores_policy_lines_and_empty_secrets(line):
    assert extract_findings(line) == []


def test_a_long_hash_is_capped_with_a_visible_marker():
    line = "$krb5tgs$23$*sql_svc$ESSOS.LOCAL$essos.local/sql_svc*$" + "ab" * 500
    (finding,) = extract_findings(line)
    assert finding.kind == "hash" and finding.value.endswith("…") and len(finding.value) < 200


def test_findings_are_unique_and_in_text_order():
    text = "Password: first1\n[+] corp\\bob:pw2\nPassword: first1\n[+] corp\\bob:pw2"
    assert [str(f) for f in extract_findings(text)] == ["password: first1", "credential: corp\\bob:pw2"]


def test_a_finding_remembers_its_source_line():
    (finding,) = extract_findings("noise\n   [+] corp\\bob:pw2 (Pwn3d!)  \nmore")
    assert finding == Finding("credential", "corp\\bob:pw2", "[+] corp\\bob:pw2 (Pwn3d!)")


@pytest.mark.parametrize("text,expected", [
    ("NTSTATUS 0xC0000022 (STATUS_ACCESS_DENIED)", "C0000022"),
    ("rip = 0x7ffde4a0c2b0 at crash", "7FFDE4A0C2B0"),
    ("HRESULT 0x80070005", "80070005"),
])
def test_a_0x_prefixed_hex_run_is_an_identifier(text, expected):
    """§6: hex runs of 8+ chars are audited; a "0x" prefix (addresses, NTSTATUS/HRESULT codes) does not hide
    the run. The run is reported without the prefix, so "0xc0000022" in a summary satisfies it."""
    assert extract_identifiers(text) == [expected]
    assert missing_identifiers([expected], "error 0xc0000022 / 0x7FFDE4A0C2B0 / 0x80070005") == []


def test_a_short_0x_value_is_not_an_identifier():
    assert extract_identifiers("flags 0x1f and 0xdeadbee") == []


def _extract_reference(text: str, limit: int | None = None) -> list[str]:
    """extract_identifiers as it was before the line cache held each identifier's key: the key computed per value."""
    seen: dict[str, str] = {}
    for line in text.split("\n"):
        for value in _scan_identifiers(line):
            key = value.upper() if is_case_insensitive_id(value) else value
            if key not in seen:
                seen[key] = value
                if limit is not None and len(seen) >= limit:
                    return list(seen.values())
    return list(seen.values())


_PIECES = st.sampled_from(["deadBEEF01", "DEADbeef01", "cve-2021-44228", "CVE-2021-44228", "10.0.0.5:8080", "10.0.0.5",
                           "/etc/passwd", "http://x.test/a?b=1", "123456789", "word", " ", "\n", "a" * 1200])


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=20), limit=st.none() | st.integers(1, 4))
def test_cached_keys_find_what_keying_each_value_found(pieces, limit):
    """Hex runs and CVE ids keep folding case across lines and repeats, on cached and long (uncached) lines."""
    text = "".join(pieces)
    assert extract_identifiers(text, limit=limit) == _extract_reference(text, limit)
