"""Zips that cannot be read, made the way real uploads break (tests of app/upload.py and the batch).

Each starts as a good zip (``zipfile``) and is spoiled in its bytes: the general purpose flag's
encryption bits set (what ``zip -e`` and 7-Zip's ZipCrypto/AES set; zipfile then asks for a
password), the deflate stream overwritten, a CRC changed, a compression method no Python
unpacks, a stored member whose sizes run past the end of the file.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"
KINDS = (
    "encrypted",
    "strong-encryption",
    "corrupt-deflate",
    "bad-crc",
    "unknown-method",
    "truncated",
    "corrupt-bzip2",
    "corrupt-lzma",
)


def good(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _central_entries(data: bytes) -> list[int]:
    """Offsets of the central directory entries, walked from the end record (never searched for)."""
    end = data.rindex(b"PK\x05\x06")
    count, _size, start = struct.unpack_from("<HII", data, end + 10)
    out, at = [], start
    for _ in range(count):
        assert data[at : at + 4] == CENTRAL
        out.append(at)
        n, m, k = struct.unpack_from("<HHH", data, at + 28)
        at += 46 + n + m + k
    return out


def spoiled(members: dict[str, bytes], kind: str, only: str | None = None) -> bytes:
    """A zip of ``members`` made unreadable as ``kind`` says — every member, or just ``only``."""
    compression = {
        "bad-crc": zipfile.ZIP_STORED,
        "truncated": zipfile.ZIP_STORED,
        "corrupt-bzip2": zipfile.ZIP_BZIP2,
        "corrupt-lzma": zipfile.ZIP_LZMA,
    }.get(kind, zipfile.ZIP_DEFLATED)
    z = bytearray(good(members, compression))
    for central in _central_entries(bytes(z)):
        n = struct.unpack_from("<H", z, central + 28)[0]
        name = bytes(z[central + 46 : central + 46 + n]).decode()
        if only is not None and name != only:
            continue
        local = struct.unpack_from("<I", z, central + 42)[0]
        assert z[local : local + 4] == LOCAL
        ln, lm = struct.unpack_from("<HH", z, local + 26)
        start = local + 30 + ln + lm
        if kind in ("encrypted", "strong-encryption"):
            bits = 0x1 | (0x40 if kind == "strong-encryption" else 0)
            for at in (local + 6, central + 8):
                struct.pack_into("<H", z, at, struct.unpack_from("<H", z, at)[0] | bits)
        elif kind in ("corrupt-deflate", "corrupt-bzip2", "corrupt-lzma"):
            skip = {"corrupt-deflate": 0, "corrupt-bzip2": 10, "corrupt-lzma": 12}[kind]  # past the bz2/lzma stream header
            for i in range(start + skip, start + skip + 12):
                z[i] ^= 0xA5
        elif kind == "bad-crc":
            for at in (local + 14, central + 16):
                z[at] ^= 0xFF
        elif kind == "unknown-method":
            for at in (local + 8, central + 10):
                struct.pack_into("<H", z, at, 99)  # AES/WinZip's marker: no Python unpacks it
        elif kind == "truncated":
            for at in (local + 18, local + 22, central + 20, central + 24):
                struct.pack_into("<I", z, at, 1 << 20)  # a 1 MiB member in a zip of a few KiB
        else:
            raise ValueError(kind)
    return bytes(z)


def long_listing(entries: int, zip64: bool) -> bytes:
    """A zip with one member's data and a central directory listing ``entries`` small files
    (``d0000000/n.txt`` …), its end records stating them — with ZIP64's records where
    ``zip64``, as a directory too large for the classic one needs (blind tester R-CO's two
    million entries took 30 s and 1 GB to parse)."""
    data = b"x = 1\n"
    crc = zlib.crc32(data)
    local = struct.pack("<4sHHHHHIIIHH", LOCAL, 20, 0, 0, 0, 0, crc, len(data), len(data), 6, 0) + b"qkv.py" + data
    directory = b"".join(
        struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), len(data), 14, 0, 0, 0, 0, 0, 0)
        + b"d%07d/n.txt" % i
        for i in range(entries)
    )
    start, size = len(local), len(directory)
    if not zip64:
        end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, entries, entries, size, start, 0)
        return local + directory + end
    record = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, start)
    locator = struct.pack("<4sIQI", b"PK\x06\x07", 0, start + size, 1)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return local + directory + record + locator + end
