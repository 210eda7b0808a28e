"""Which addresses a local TCP port listens on, from the kernel's tables (Linux): a test checks
that a server it started is reachable from this machine only with
`assert listening_addresses(port) == {"127.0.0.1"}`."""

import ipaddress
from pathlib import Path

LISTEN = "0A"
"""The state column's value for a listening socket in /proc/net/tcp{,6}."""


def listeners() -> list[tuple[str, int, str]]:
    """Every listening TCP socket (IPv4 and IPv6): its local address, port and socket inode."""
    found = []
    for table, width in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != LISTEN:
                continue
            address, port_hex = fields[1].split(":")
            raw = bytes.fromhex(address)
            # the kernel writes each 32-bit word in host (little-endian) order
            words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            found.append((str(ipaddress.ip_address(words[:width])), int(port_hex, 16),
                          fields[9]))
    return found


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a socket listening on PORT (IPv4 and IPv6)."""
    return {host for host, at, _ in listeners() if at == port}
