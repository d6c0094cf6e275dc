# SPDX-License-Identifier: Apache-2.0
"""Bytes -> text for evidence from anywhere: UTF-8 (the norm), UTF-16 (a log copied through
a Windows editor or PowerShell's ``>``), gzip-compressed files. Decoding never fails: an
undecodable byte becomes U+FFFD, so a bad byte cannot hide the Xid beside it."""

import codecs
import errno
import os
import re
import stat
import zlib

_READ = 64 * 1024  # compressed bytes per read: a corrupt block loses at most this much before it

# "utf-16" (not -le/-be) reads the BOM and drops it
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


# glibc mallopt(3) parameters
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_memory(trim=128 << 20, mmap=32 << 20):
    """Let this process keep up to ``trim`` bytes of freed heap instead of handing it back to the
    kernel, and take buffers below ``mmap`` bytes from the heap. A log is read in blocks of
    ~256 KiB, each a fresh bytes, str and lines; glibc's defaults give that memory back after
    every block and fault it in again for the next: 600 MB of job logs took ~285,000 page
    faults and ~1 CPU-s of the kernel's time (a 2-core machine's ~20%), ~4,000 with these.
    Memory stays flat: what is kept is reused by the next block. Process-wide, so only the
    CLI's ``analyze`` calls it: not a module on a node, and not the report step inside
    ansible-playbook. -> whether glibc took both (False without glibc: musl, macOS)."""
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError):
        return False
    return bool(mallopt(_M_TRIM_THRESHOLD, int(trim))) and bool(mallopt(_M_MMAP_THRESHOLD, int(mmap)))


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


class NotRegularFile(OSError):
    """A path that is not a plain file: a FIFO, device, socket, directory, or a link where
    none is followed. ``strerror`` says which (callers print it as any OSError's)."""

    def __init__(self, what):
        OSError.__init__(self, errno.EINVAL, "skipped: %s, not a regular file" % what)


def _kind(mode):
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return what
    return "a special file"


def open_regular(path, nofollow=False):
    """-> (fd, stat) of ``path`` opened read-only, or NotRegularFile / OSError. Never blocks
    and never opens a device: the path is stat'ed first (opening /dev/watchdog or a tape has
    effects), opened non-blocking (a FIFO would wait for a writer; /proc/kmsg then answers
    EAGAIN instead of waiting for the next kernel message) and fstat'ed again (it may have been
    swapped since). ``nofollow``: a path someone else could have made -- its last component
    must not be a link."""
    st = os.lstat(path) if nofollow else os.stat(path)
    if stat.S_ISLNK(st.st_mode):
        raise NotRegularFile("a symlink (not followed)")
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(_kind(st.st_mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and nofollow:
            raise NotRegularFile("a symlink (not followed)")
        if exc.errno == errno.ENXIO:  # a socket
            raise NotRegularFile("a socket")
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(_kind(st.st_mode))
    return fd, st


_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
_pseudo_devs = None


def pseudo_file(path):
    """What a "regular" file of a pseudo filesystem is ("a /proc pseudo file, not a capture"),
    or None for a file of a real one. /proc/kmsg reads as a regular file of size 0: reading it
    drains the kernel's ring buffer (as root) and then blocks; /sys and /dev files are live
    state, not captures. Told by the device the path lives on (links followed)."""
    global _pseudo_devs
    if _pseudo_devs is None:
        devs = {}
        try:
            real = {os.stat("/").st_dev, os.stat(os.path.expanduser("~")).st_dev}
        except OSError:
            real = set()
        for root in _PSEUDO_ROOTS:
            try:
                dev = os.stat(root).st_dev
            except OSError:
                continue
            if dev not in real:  # a /dev that is a directory of the root filesystem is not one
                devs[dev] = root
        _pseudo_devs = devs
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    root = _pseudo_devs.get(dev)
    return "a %s pseudo file, not a capture" % root if root else None


def read_tail_bytes(path, limit, nofollow=False):
    """The last ``limit`` bytes of a regular file (open_regular's rules), never more: a /proc
    file that reports size 0 and keeps producing stops at ``limit`` too."""
    fd, st = open_regular(path, nofollow)
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > limit:
            fh.seek(st.st_size - limit)
        return fh.read(limit)


def _groups(uid):
    try:
        import pwd
        entry = pwd.getpwuid(uid)
        return set(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except (ImportError, KeyError, OSError):
        return set()  # a uid with no passwd entry: owner and other bits only


def _grants(st, uid, gids, owner, group, other):
    if st.st_uid == uid:
        return bool(st.st_mode & owner)
    if st.st_gid in gids:
        return bool(st.st_mode & group)
    return bool(st.st_mode & other)


def why_not_readable_by(path, uid):
    """None when user ``uid`` could read ``path`` itself -- every directory on its real path
    searchable, the file readable (owner, group or other bits; ACLs are not consulted) --
    else why not. Root reads what another user's job named only as that user could."""
    if uid == 0:
        return None
    real = os.path.realpath(path)
    gids = _groups(uid)
    parents, d = [], os.path.dirname(real)
    while True:
        parents.append(d)
        if os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    for d in reversed(parents):
        if not _grants(os.stat(d), uid, gids, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
            return "skipped: uid %d cannot enter %s" % (uid, d)
    if not _grants(os.stat(real), uid, gids, stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH):
        return "skipped: uid %d may not read %s" % (uid, real)
    return None


# what a terminal acts on instead of showing: every C0 control but newline and tab (ESC starts
# CSI/OSC 8 links/DCS/ESC c, SO/SI switch charsets, CR and BS overwrite), DEL, the C1 controls
# (U+009B is a CSI on its own), and the bidirectional overrides that reorder a line on screen
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text):
    """Text from logs made safe to print: each control character written as its escape
    (ESC -> \\x1b), so it is seen, never acted on."""
    return _UNPRINTABLE.sub(_escape, text)


def printable_json(text):
    """JSON text with what json.dumps(ensure_ascii=False) leaves raw (C1 controls, bidi
    overrides) escaped as \\uXXXX: still the same JSON."""
    return _UNPRINTABLE.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def _escape(m):
    code = ord(m.group())
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


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
        fd, _st = open_regular(self.path)  # a FIFO or device: NotRegularFile, never a hang
        with os.fdopen(fd, "rb") as raw:
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


class TextLines(TextChunks):
    """A regular file's lines (split on \\n only: a \\r stays for tqdm), decoded as they stream
    (gzip and UTF-16 as TextChunks), memory flat in the file's size. Never raises: a file that
    cannot be opened or ends early yields what it had and says why in ``problems``.

    ``max_line``: a longer line keeps its last ``max_line`` characters (the end of a tqdm
    ``\\r`` chain is the newest) and is counted in ``cut``. ``tail``: read at most the file's
    last ``tail`` bytes (after decompression), the partial first line dropped; ``skipped``
    says how many were not read (the head). ``lines``: lines yielded by the last iteration.
    ``nofollow``: the path's last component must not be a link."""

    def __init__(self, path, max_line=1 << 20, tail=None, nofollow=False, size=256 << 10):
        TextChunks.__init__(self, path, size)
        self.max_line, self.tail, self.nofollow = max_line, tail, nofollow
        self.lines = self.cut = self.skipped = 0
        self.problems = []
        self._drop_first = False

    def __iter__(self):
        for block in self.blocks():
            for line in block.split("\n"):
                yield line

    def nbytes(self):
        """The file's size on disk (0 when it cannot be stat'ed): what reading it will cost."""
        try:
            return os.stat(self.path).st_size
        except (OSError, TypeError, ValueError):
            return 0

    def blocks(self, count=True):
        """The same lines, in blocks of whole lines: ``block.split("\\n")`` is the next run of
        lines (about ``size`` characters of them; a block holds one line at least). What a
        reader of many lines uses: splitting, cutting and counting happen per block, in C.
        ``count=False``: ``lines`` is left to the reader (who splits the blocks anyway)."""
        self.lines = self.cut = self.skipped = 0
        self.problems, self.error, self._drop_first = [], None, False
        try:
            for block in self._blocks():
                if count:
                    self.lines += block.count("\n") + 1
                yield block
        except OSError as exc:
            self.error = exc.strerror or str(exc)
        if self.error:
            self.problems.append("%s: %s; it was read as far as it goes" % (self.path, self.error))
        if self.skipped:
            self.problems.append("%s: only its last %d MiB were read; the first %.1f MiB (the job's start) "
                                 "were skipped" % (self.path, self.tail >> 20, self.skipped / 1048576.0))

    def _blocks(self):
        pending, cut, limit = "", False, self.max_line
        for text in self._text():
            nl = text.rfind("\n")
            if nl < 0:  # no end of line in this chunk: a long line grows, kept bounded
                pending += text
                if len(pending) > limit:
                    pending, cut = pending[-limit:], True
                continue
            block = pending + text[:nl] if pending else text[:nl]
            first = block.find("\n")
            if cut or (first if first >= 0 else len(block)) > limit or len(text) > limit + 2:
                # a line to cut (the first one, grown from pending; one inside a chunk longer than it)
                block = self._cut(block, cut)
                first = block.find("\n")
            if self._drop_first:  # started inside a line: its head is not the line
                self._drop_first = False
                block = None if first < 0 else block[first + 1:]
            if block is not None:
                yield block
            pending, cut = text[nl + 1:], False
            if len(pending) > limit:
                pending, cut = pending[-limit:], True
        if pending and not self._drop_first:
            if cut:
                self.cut += 1
            yield pending

    def _cut(self, block, cut):
        """``block`` with each line longer than max_line cut to its last max_line characters
        (the first one also when it was cut as it grew), each counted in ``cut``."""
        limit = self.max_line
        parts = block.split("\n")
        for i, line in enumerate(parts):
            if len(line) > limit or (cut and i == 0):
                self.cut += 1
                parts[i] = line[-limit:]
        return "\n".join(parts)

    def _text(self):
        """Decoded text chunks from the first byte that is read: the whole file, or its tail."""
        fd, st = open_regular(self.path, self.nofollow)  # a FIFO or device: NotRegularFile, never a hang
        with os.fdopen(fd, "rb") as raw:
            head = raw.read(4096)
            self.compressed = is_gzip(head)
            skip = 0
            if self.tail is not None and self.compressed:
                raw.seek(0)
                total = sum(len(b) for b in self._raw_chunks(raw))  # one pass to learn the size, nothing kept
                self.error = None
                skip = max(0, total - self.tail)
            elif self.tail is not None:
                skip = max(0, st.st_size - self.tail)
            if self.compressed:
                raw.seek(0)
                head = next(iter(self._raw_chunks(raw)), b"")[:4096]
                raw.seek(0)
            encoding = sniff_encoding(head)
            if encoding == "utf-16":  # the BOM says which; past the head there is none to read
                encoding = "utf-16-le" if head.startswith(codecs.BOM_UTF16_LE) else "utf-16-be"
                skip = max(skip, 2)
            elif encoding == "utf-8-sig":
                encoding, skip = "utf-8", max(skip, 3)
            if encoding.startswith("utf-16"):
                skip += skip % 2
            self.encoding = encoding
            self._drop_first = skip > 3  # started inside a line: its head is not the line
            self.skipped = skip if skip > 3 else 0
            dec = codecs.getincrementaldecoder(encoding)("replace")
            if not self.compressed:
                raw.seek(skip)
                skip = 0
            for data in self._raw_chunks(raw):
                if skip:
                    n = min(skip, len(data))
                    data, skip = data[n:], skip - n
                    if not data:
                        continue
                text = dec.decode(data)
                if text:
                    yield text
            tail = dec.decode(b"", final=True)
            if tail:
                yield tail
