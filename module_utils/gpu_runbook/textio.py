"""Bytes -> text for evidence from anywhere: UTF-8 (the norm), UTF-16 (a log copied through
a Windows editor or PowerShell's ``>``), gzip-compressed files. Decoding never fails: an
undecodable byte becomes U+FFFD, so a bad byte cannot hide the Xid beside it."""

import codecs
import zlib

_READ = 64 * 1024  # compressed bytes per read: a corrupt block loses at most this much before it

# "utf-16" (not -le/-be) reads the BOM and drops it
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def sniff_encoding(head):
    """The encoding of a text from its first bytes: a BOM, or the NUL pattern of UTF-16
    without one (ASCII text in UTF-16 has a NUL in every other byte)."""
    for bom, enc in _BOMS:
        if head.startswith(bom):
            return enc
    sample = head[:4096]
    if len(sample) >= 8:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be"
    return "utf-8"


def decode(data, encoding=None):
    """Whole bytes -> str (BOM dropped, bad bytes replaced)."""
    enc = encoding or sniff_encoding(data[:4096])
    text = data.decode(enc, "replace")
    return text[1:] if text.startswith("\ufeff") else text


def is_gzip(head):
    return head[:2] == b"\x1f\x8b"


class TextChunks(object):
    """Iterate a file as decoded text chunks of about ``size`` bytes, memory flat in its size:
    gzip (by magic, whatever the name) and UTF-16 are handled here. A truncated or corrupt
    compressed stream ends the iteration early and leaves the reason in ``self.error``
    (what was read before it is still yielded)."""

    def __init__(self, path, size=16 * 1024 * 1024):
        self.path, self.size = path, size
        self.error = None
        self.compressed = False
        self.encoding = None

    def _raw_chunks(self, raw):
        """The file's bytes, decompressed as they stream when it is gzip (all members)."""
        if not self.compressed:
            for data in iter(lambda: raw.read(self.size), b""):
                yield data
            return
        z = zlib.decompressobj(wbits=31)
        data, full = b"", False
        while True:
            if not data and not full:
                data = raw.read(_READ)
                if not data:
                    if not z.eof:
                        self.error = "compressed stream ends early (truncated file)"
                    return
            try:
                # bounded output: memory stays flat whatever the compression ratio (a log of
                # repeated lines deflates ~1000:1)
                out = z.decompress(data, self.size)
            except zlib.error as exc:
                self.error = "corrupt compressed data: %s" % exc
                return
            full = len(out) >= self.size  # zlib may hold more output for the same input
            data = z.unconsumed_tail
            if out:
                yield out
            if z.eof:
                data, full = z.unused_data, False
                if not data.strip(b"\0"):
                    data = raw.read(_READ)
                    if not data:
                        return
                z = zlib.decompressobj(wbits=31)  # the next gzip member

    def __iter__(self):
        with open(self.path, "rb") as raw:
            self.compressed = is_gzip(raw.read(2))
            raw.seek(0)
            dec = None
            for data in self._raw_chunks(raw):
                if dec is None:
                    self.encoding = sniff_encoding(data[:4096])
                    dec = codecs.getincrementaldecoder(self.encoding)("replace")
                text = dec.decode(data)
                if text:
                    yield text
            if dec is not None:
                tail = dec.decode(b"", final=True)
                if tail:
                    yield tail
